package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// libfabric is the transport of TransportIB and TransportSHM: each context opens one libfabric
// endpoint per transport (fabricNet) on first use; host memory is registered with it and peers
// write into it by its key; GPU memory goes staged through host buffers (transport_staged.go).
type libfabric struct{ t Transport }

func (l libfabric) address(c *Context, cfg EndpointConfig) (string, error) {
	n, err := c.fabric(l.t, gpuOrdinal(cfg.Device))
	if err != nil {
		return "", err
	}
	addr, err := n.ep.Address()
	if err != nil {
		return "", err
	}
	if len(addr) > maxAddressBytes {
		return "", fmt.Errorf("the %s address has %d bytes, endpoints carry %d: %w", n.ep.Provider(), len(addr), maxAddressBytes, ErrTransportUnavailable)
	}
	return string(addr), nil
}

func (l libfabric) register(c *Context, ptr cuda.DevicePtr, size uint64, ordinal int) (RegisteredMemory, error) {
	if ordinal >= 0 {
		return l.registerStaged(c, ptr, size, ordinal)
	}
	n, err := c.fabric(l.t, -1)
	if err != nil {
		return RegisteredMemory{}, err
	}
	h, err := n.register(ptr, size)
	if err != nil {
		return RegisteredMemory{}, err
	}
	return RegisteredMemory{
		data: ptr, size: size, transport: l.t, origin: thisProcess(),
		addr: ptr, handle: h, mappedOn: notMapped,
	}, nil
}

func (l libfabric) deregister(c *Context, m RegisteredMemory) error {
	if isStaged(m) {
		return fmt.Errorf("GPU memory staged over %v stays registered until the context closes: %w", l.t, errs.ErrInvalidArgument)
	}
	n := c.fabrics[l.t]
	if n == nil {
		return fmt.Errorf("not registered by this context: %w", errs.ErrInvalidUsage)
	}
	return n.deregister(m)
}

func (l libfabric) open(cuda.IpcMemHandle) (cuda.DevicePtr, error) {
	return 0, fmt.Errorf("memory over %v is reached through the connection by its key, never mapped: %w", l.t, ErrTransportUnavailable)
}

func (l libfabric) unmap(cuda.DevicePtr) error {
	return fmt.Errorf("memory over %v is never mapped: %w", l.t, errs.ErrInternal)
}

func (l libfabric) checkPeers(local, remote Endpoint, here origin) error {
	switch {
	case local.config.Device.Type != remote.config.Device.Type:
		return fmt.Errorf("%v connects two CPU endpoints (host memory) or two GPU endpoints (GPU memory, staged through host buffers), not %v to %v: %w",
			l.t, local.config.Device.Type, remote.config.Device.Type, errs.ErrInvalidArgument)
	case remote.address == "":
		return fmt.Errorf("the remote endpoint has no address: %w", errs.ErrInvalidArgument)
	case l.t == TransportSHM && !remote.origin.sameHost(here):
		return fmt.Errorf("shared memory needs both ends on one host; the remote endpoint is on host %016x, this is host %016x: %w", remote.origin.host, here.host, ErrDifferentHost)
	}
	return nil
}

// connect adds the remote endpoint's address to the context's endpoint; GPU endpoints get a
// staged data path.
func (l libfabric) connect(c *Context, local, remote Endpoint) (link, error) {
	n, err := c.fabric(l.t, gpuOrdinal(local.config.Device))
	if err != nil {
		return nil, err
	}
	if local.config.Device.Type == DeviceGPU {
		g, err := c.gpu(local.config.Device.ID)
		if err != nil {
			return nil, err
		}
		return n.connectStaged(remote, g)
	}
	return n.connect(remote)
}

// fabricNet is a context's libfabric endpoint for one transport: the endpoint its Endpoints name,
// the memory registered with it, and the goroutine that keeps it progressing (providers with
// manual progress move a peer's writes into this process only while it reads its completions).
type fabricNet struct {
	transport Transport
	ep        *fabric.Endpoint
	log       *slog.Logger

	mu      sync.Mutex
	regions map[uint64]*fabric.Region // host memory registered with the provider, by key
	peers   map[string]*remotePeer    // the address vector's entries, by address (peer)

	// GPU memory, staged through host buffers (transport_staged.go).
	copier     stagingCopier
	stagedOnce sync.Once
	stagedErr  error                   // why staged messages could not be enabled
	staged     map[uint64]stagedRegion // by key (mu)
	nextStaged uint64                  // the next key (mu)
	rejected   error                   // the first staged message refused (mu)
	bufs       hostBuffers             // allocates the staged path's host memory (enableStaged)
	landings   map[uint64]*landing     // landing rings for peers' staged links, by ring id (mu)
	retired    []*hostRing             // rings of closed staged links, released at close (mu)

	// Signals of host-memory links as remote CQ data (transport_fabric_signals.go); nil where the
	// provider cannot carry them, and the signals are writes of the signal word.
	sig *signals

	// The polls of callers outside the progress goroutine (poll), counted rather than timed so
	// that a caller's poll reads no clock: the goroutine notes when the count last moved, and
	// while callers poll it does not spin beside them.
	polls atomic.Uint64

	stop chan struct{}
	done chan struct{}
}

// openFabric opens the libfabric endpoint of transport t (on domain, for IB; empty lets the
// provider choose) and starts its progress goroutine; copier moves staged GPU memory.
func openFabric(t Transport, domain string, copier stagingCopier) (*fabricNet, error) {
	provider := "shm"
	if t == TransportIB {
		var err error
		if provider, err = fabric.NetworkProvider(); err != nil {
			return nil, err
		}
	} else {
		domain = ""
	}
	ep, err := fabric.Open(provider, domain)
	if err != nil {
		return nil, err
	}
	n := &fabricNet{
		transport: t, ep: ep, log: logging.Logger(), copier: copier,
		regions: map[uint64]*fabric.Region{}, peers: map[string]*remotePeer{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	signalsBy := "writes of the signal word"
	if ep.RemoteData() {
		n.sig = newSignals(n.log)
		if err := ep.SetDataHandler(n.sig.apply); err != nil {
			return nil, errors.Join(err, ep.Close())
		}
		signalsBy = "remote CQ data"
	}
	major, minor, _ := fabric.Version()
	memory := "host memory registered with the provider; GPU memory staged through host buffers"
	if ep.HMEM() {
		memory += " (the provider offers FI_HMEM; this transport does not register GPU memory with it yet)"
	}
	n.log.Info("libfabric transport", "transport", t, "provider", ep.Provider(), "domain", ep.Domain(),
		"libfabric", fmt.Sprintf("%d.%d", major, minor), "memory", memory, "signals", signalsBy)
	go n.progress()
	return n, nil
}

// Progress pacing: while a caller polls (poll: the goroutine saw the callers' count of polls move
// within progressCallerPoll) the goroutine leaves the endpoint to it and only looks again every
// progressNap; otherwise it polls again at once while things move (a write posted or a message
// delivered within progressSpin), every progressNap while the endpoint is in use (a write pending,
// or one posted within progressWarm), and every progressIdleNap once it has been idle longer, so
// that a process with many idle endpoints costs little CPU. A rank that waits for a peer's
// host-memory data calls Context.Progress itself, and Flush polls, so neither waits on the
// goroutine, and the goroutine stays out of their way: on the H200 host, spinning beside a polling
// caller doubled the 8-byte ping-pong's time, and on the development VM even its polls every
// progressNap beside a polling caller took tcp 8 B to 8.3-10.3 us one way from 6.2-8.0 without them
// (session 24; why one poll from another thread costs that much is not profiled). Staged messages
// into GPU memory, whose waiter is a kernel, are moved by the goroutine alone (or by a caller's
// polls, which deliver messages too); a nap between two messages costs each message a nap (a large
// message takes several round trips of the provider, and a nap of 20 us lasts about 0.5 ms on those
// hosts), so it spins for 5 ms after the last movement. On the 2 x H200 host (tcp,
// fabric_pingpong), against spinning 200 us beside the callers: 8 B 13 us instead of 28-29, GPU
// memory staged 3.8-4.2 GB/s instead of 3.2-3.8 from 4 MiB (docs/PERFORMANCE.md).
const (
	progressNap        = 20 * time.Microsecond
	progressIdleNap    = time.Millisecond
	progressWarm       = 100 * time.Millisecond
	progressSpin       = 5 * time.Millisecond
	progressCallerPoll = 100 * time.Microsecond
)

// poll makes the endpoint progress once on behalf of a caller outside the progress goroutine.
func (n *fabricNet) poll() error {
	n.polls.Add(1)
	return n.ep.Progress()
}

// drained polls once and reports whether every write posted on the endpoint has completed.
func (n *fabricNet) drained() (bool, error) {
	if err := n.poll(); err != nil {
		return false, err
	}
	return n.ep.Pending() == 0, nil
}

// progress reads the endpoint's completions, and so moves the peers' writes into this process,
// until close.
func (n *fabricNet) progress() {
	defer close(n.done)
	lastPosted, lastDelivered, lastBusy := n.ep.Posted(), n.ep.Delivered(), time.Now()
	lastPolls, lastCallerPoll := n.polls.Load(), time.Time{} // the callers' polls, as last seen
	timer := time.NewTimer(progressNap)
	defer timer.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-timer.C:
		}
		if p := n.polls.Load(); p != lastPolls {
			lastPolls, lastCallerPoll = p, time.Now()
		}
		if time.Since(lastCallerPoll) < progressCallerPoll {
			timer.Reset(progressNap) // a caller polls: the endpoint moves without this goroutine
			continue
		}
		if err := n.ep.Progress(); err != nil && !errors.Is(err, errs.ErrRemote) { // a refused message is logged where refused
			n.log.Warn("libfabric progress stopped", "transport", n.transport, "err", err)
			return
		}
		moved := false
		if p, d := n.ep.Posted(), n.ep.Delivered(); p != lastPosted || d != lastDelivered || n.ep.Pending() > 0 {
			moved = p != lastPosted || d != lastDelivered
			lastPosted, lastDelivered, lastBusy = p, d, time.Now()
		}
		switch idle := time.Since(lastBusy); {
		case moved || idle < progressSpin:
			timer.Reset(0)
		case idle < progressWarm:
			timer.Reset(progressNap)
		default:
			timer.Reset(progressIdleNap)
		}
	}
}

// register registers size bytes of host memory at ptr and returns the handle a peer writes into
// it by: the key and the size, little-endian, in the first 16 bytes.
func (n *fabricNet) register(ptr cuda.DevicePtr, size uint64) (cuda.IpcMemHandle, error) {
	r, err := n.ep.Register(uint64(ptr), size)
	if err != nil {
		return cuda.IpcMemHandle{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, dup := n.regions[r.Key]; dup {
		_ = r.Deregister()
		return cuda.IpcMemHandle{}, fmt.Errorf("%w: the provider gave key %#x twice (%#x and %#x)", errs.ErrInternal, r.Key, old.Addr, r.Addr)
	}
	n.regions[r.Key] = r
	if n.sig != nil {
		n.sig.addTarget(r.Key, hostRange{addr: r.Addr, size: r.Size})
	}
	var h cuda.IpcMemHandle
	binary.LittleEndian.PutUint64(h[:], r.Key)
	binary.LittleEndian.PutUint64(h[8:], size)
	return h, nil
}

// region returns this process's registration of m.
func (n *fabricNet) region(m RegisteredMemory) (*fabric.Region, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.regions[binary.LittleEndian.Uint64(m.handle[:])]
	if !ok || r.Addr != uint64(m.addr) {
		return nil, fmt.Errorf("%v is not registered with this context's %v endpoint: %w", m, n.transport, errs.ErrInvalidArgument)
	}
	return r, nil
}

// deregister ends this process's registration of m (fabricNet.register's), refusing memory it
// does not hold.
func (n *fabricNet) deregister(m RegisteredMemory) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := binary.LittleEndian.Uint64(m.handle[:])
	r, ok := n.regions[key]
	if !ok || r.Addr != uint64(m.addr) {
		return fmt.Errorf("not registered with this context's %v endpoint (or deregistered already): %w", n.transport, errs.ErrInvalidUsage)
	}
	delete(n.regions, key)
	if n.sig != nil {
		n.sig.removeTarget(key)
	}
	return r.Deregister()
}

// remote describes m, memory of a peer, for writes into it.
func remoteOf(m RegisteredMemory) fabric.Remote {
	return fabric.Remote{Addr: uint64(m.addr), Size: m.size, Key: binary.LittleEndian.Uint64(m.handle[:])}
}

// connect returns the connection's data path to the remote endpoint.
func (n *fabricNet) connect(remote Endpoint) (link, error) {
	p, err := n.peer(remote.address)
	if err != nil {
		return nil, err
	}
	l := &fabricLink{net: n, peer: p.peer}
	if n.sig != nil {
		return &signalLink{fabricLink: l, names: &p.names}, nil
	}
	return l, nil
}

// remotePeer is a remote endpoint this one writes to: its address-vector entry, and what this
// endpoint's signals as remote CQ data have sent to its words.
type remotePeer struct {
	peer  fabric.Peer
	names signalNames
}

// peer returns the remote endpoint at address, added to the endpoint's address vector on first
// use: every connection to one remote endpoint goes through one entry, so that the provider keeps
// their operations in one order (the signals of two links to one peer step one word in turn).
func (n *fabricNet) peer(address string) (*remotePeer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.peers[address]; ok {
		return p, nil
	}
	fp, err := n.ep.AddPeer([]byte(address))
	if err != nil {
		return nil, err
	}
	p := &remotePeer{peer: fp}
	n.peers[address] = p
	return p, nil
}

// Progress makes the context's libfabric endpoint of transport t progress once: it reads its
// completions and, on providers with manual progress (tcp, shm, verbs through rxm), moves the
// peers' writes into this process. A rank that waits for a peer's data in host memory calls it
// while it waits; without it, a progress goroutine does the same every few tens of
// microseconds. Transports without an endpoint in this context have nothing to do.
func (c *Context) Progress(t Transport) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return ErrContextClosed
	}
	c.mu.Lock()
	n := c.fabrics[t]
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	return n.poll()
}

// close stops the progress goroutine, deregisters the memory and closes the endpoint.
func (n *fabricNet) close() error {
	close(n.stop)
	<-n.done
	var errList []error
	n.mu.Lock()
	for _, r := range n.regions {
		errList = append(errList, r.Deregister())
	}
	n.regions = nil
	rings := n.retired
	for _, l := range n.landings {
		rings = append(rings, l.ring)
	}
	n.retired, n.landings = nil, nil
	n.mu.Unlock()
	for _, r := range rings {
		errList = append(errList, r.deregister())
	}
	errList = append(errList, n.ep.Close())
	for _, r := range rings { // after the endpoint: nothing reads or writes them any more
		errList = append(errList, r.free())
	}
	return errors.Join(errList...)
}

// retire keeps rings of a closed staged link until the endpoint closes.
func (n *fabricNet) retire(rings ...*hostRing) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range rings {
		if r != nil {
			n.retired = append(n.retired, r)
		}
	}
}

// fabricLink is a libfabric connection's data path: writes from this process's registered host
// memory into the peer's, in order, on the context's endpoint; a signal is a write of the value.
type fabricLink struct {
	net  *fabricNet
	peer fabric.Peer
}

func (l *fabricLink) write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error {
	r, err := l.net.region(src)
	if err != nil {
		return err
	}
	return l.net.ep.Write(l.peer, r, srcOff, remoteOf(dst), dstOff, n)
}

func (l *fabricLink) writeValue(dst RegisteredMemory, dstOff, value uint64) error {
	return l.net.ep.WriteValue(l.peer, remoteOf(dst), dstOff, value)
}

func (l *fabricLink) flushed() (bool, error) { return l.net.drained() }

func (l *fabricLink) close() error { return nil }

// signalLink is a fabricLink whose signals ride on writes as remote CQ data
// (transport_fabric_signals.go): a signal alone is a write of no bytes, and a write with its
// signal (a signalledWriter) one write.
type signalLink struct {
	*fabricLink
	names *signalNames // what this endpoint has sent to the peer's words
}

func (l *signalLink) writeValue(dst RegisteredMemory, dstOff, value uint64) error {
	return l.signal(dst, dstOff, value, nil)
}

func (l *signalLink) writeWithSignal(w pendingWrite, sig RegisteredMemory, sigOff, value uint64) error {
	return l.signal(sig, sigOff, value, &w)
}

// signal queues value for the peer's word at sig+sigOff: on the write w, or on writes of no
// bytes when w is nil.
func (l *signalLink) signal(sig RegisteredMemory, sigOff, value uint64, w *pendingWrite) error {
	n, names := l.net, l.names
	names.mu.Lock()
	defer names.mu.Unlock()
	entries, err := names.name(uint64(sig.addr)+sigOff, value)
	if err != nil {
		return err
	}
	err = func() error {
		remote := remoteOf(sig)
		last := len(entries) - 1
		for _, d := range entries[:last] {
			if err := n.ep.WriteData(l.peer, nil, 0, remote, sigOff, 0, d); err != nil {
				return err
			}
		}
		if w == nil {
			return n.ep.WriteData(l.peer, nil, 0, remote, sigOff, 0, entries[last])
		}
		r, err := n.region(w.src)
		if err != nil {
			return err
		}
		return n.ep.WriteData(l.peer, r, w.srcOff, remoteOf(w.dst), w.dstOff, w.n, entries[last])
	}()
	if err != nil {
		names.forget() // what the peer's words hold is unknown now: send whole values
	}
	return err
}
