package core

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// ErrContextClosed: the context was closed.
var ErrContextClosed = errs.New(errs.ErrInvalidUsage, "context is closed")

// Context owns the resources of the host objects built in it: the primary contexts it retains
// on the GPUs it uses, one CUDA stream per connection, the device memory of semaphores, and the
// peer allocations it maps with CUDA IPC (each once per GPU). Close releases all of them, after
// which the connections, registered memories and semaphores made through the context must no
// longer be used, here or by peers. Memory the caller registers stays the caller's.
//
// A Context is safe for concurrent use. Driver calls run with the GPU's primary context pushed
// on the calling OS thread and popped afterwards, so a C caller's current context is left as it
// was.
type Context struct {
	// life is read-held by every operation that uses the context's driver resources and
	// write-held by Close, which therefore waits for them. It guards closed.
	life   sync.RWMutex
	closed bool

	mu       sync.Mutex // guards the fields below; taken with life read-held
	gpus     map[int]*contextGPU
	home     int                              // the first GPU the context used; -1 before
	exported map[allocation]cuda.IpcMemHandle // allocation -> its IPC handle
	opened   map[openKey]*mapping             // peer allocation mapped on a GPU -> its mapping
	peers    map[[2]int]bool                  // (from, to): from's context may access to's memory
	conns    []*Connection
	fabrics  map[Transport]*fabricNet // the libfabric endpoint of each libfabric transport used
	// netDomain, when set (UseNetDomain), is the libfabric domain of IB connections in place of
	// MSCCLPP_NET_DOMAIN's.
	netDomain string
}

// contextGPU is what a context holds on one GPU.
type contextGPU struct {
	dev    cuda.Device
	pctx   cuda.Context // retained primary context
	stream cuda.Stream  // for setup-time memsets
	allocs []cuda.DevicePtr
	tokens tokenPool
}

// allocation names a device allocation: its base and the driver's buffer id, which differs for
// a buffer freed and allocated again at the same base (whose old IPC handle is stale).
type allocation struct {
	base cuda.DevicePtr
	id   uint64
}

// mapping is a peer allocation mapped into one GPU's context.
type mapping struct {
	addr      cuda.DevicePtr
	transport transport // the one that mapped it
	refs      int       // RegisteredMemory values mapped from it and not released with UnmapMemory
}

type openKey struct {
	handle cuda.IpcMemHandle
	device int
}

// NewContext returns an empty context; it touches no GPU until asked to.
func NewContext() *Context {
	return &Context{
		gpus:     map[int]*contextGPU{},
		home:     -1,
		exported: map[allocation]cuda.IpcMemHandle{},
		opened:   map[openKey]*mapping{},
		peers:    map[[2]int]bool{},
		fabrics:  map[Transport]*fabricNet{},
	}
}

// CreateEndpoint returns an endpoint for cfg in this process. A GPU endpoint's device must
// exist. IB (the network) and SHM (shared memory) go through libfabric and take host memory
// (CPU endpoints); the first such endpoint opens the context's libfabric endpoint for the
// transport, whose address the Endpoint carries. They are refused with ErrTransportUnavailable
// for GPU endpoints, and where libfabric is missing.
func (c *Context) CreateEndpoint(cfg EndpointConfig) (Endpoint, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return Endpoint{}, fmt.Errorf("create endpoint: %w", ErrContextClosed)
	}
	if err := checkEndpointConfig(cfg); err != nil {
		return Endpoint{}, fmt.Errorf("create endpoint for %v: %w", cfg.Device, err)
	}
	if err := CheckTransport(cfg.Transport, "create endpoint for "+cfg.Device.String()); err != nil {
		return Endpoint{}, err
	}
	tr, err := transportOf(cfg.Transport, "create endpoint")
	if err != nil {
		return Endpoint{}, err
	}
	ep := Endpoint{config: cfg, origin: thisProcess(), id: rand.Uint64()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.Device.Type == DeviceGPU {
		if _, err := c.gpu(cfg.Device.ID); err != nil {
			return Endpoint{}, fmt.Errorf("create endpoint for %v: %w", cfg.Device, err)
		}
	}
	if ep.address, err = tr.address(c, cfg); err != nil {
		return Endpoint{}, fmt.Errorf("create endpoint for %v over %v: %w", cfg.Device, cfg.Transport, err)
	}
	return ep, nil
}

// gpuOrdinal is d's GPU ordinal, or -1 for a CPU device.
func gpuOrdinal(d Device) int {
	if d.Type == DeviceGPU {
		return d.ID
	}
	return -1
}

// UseNetDomain makes domain (a NIC as libfabric names it, e.g. mlx5_0) the one the context's IB
// connections use, in place of MSCCLPP_NET_DOMAIN's. It must come before the first IB endpoint;
// naming the domain already in use again is allowed.
func (c *Context) UseNetDomain(domain string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, open := c.fabrics[TransportIB]; open {
		if n.ep.Domain() == domain {
			return nil
		}
		return fmt.Errorf("use network domain %q: the context's IB endpoint is already open on %q (one NIC per context): %w",
			domain, n.ep.Domain(), errs.ErrInvalidUsage)
	}
	c.netDomain = domain
	return nil
}

// fabric returns the context's libfabric endpoint for t, opening it on first use; gpu is the
// GPU ordinal of the memory or endpoint that asks (-1 for host memory), whose nearest RDMA device
// an IB endpoint opens on unless UseNetDomain or MSCCLPP_NET_DOMAIN names one (nic.go). c.mu is
// held.
func (c *Context) fabric(t Transport, gpu int) (*fabricNet, error) {
	if n, ok := c.fabrics[t]; ok {
		return n, nil
	}
	domain := ""
	if t == TransportIB {
		domain = c.networkDomain(gpu)
	}
	n, err := openFabric(t, domain, &gpuCopier{c: c})
	if err != nil {
		return nil, err
	}
	c.fabrics[t] = n
	return n, nil
}

// Connect returns this side of a connection from local, an endpoint this process created, to
// remote, the peer's endpoint (possibly the same GPU, or local itself). Both must use the same
// transport; CUDA IPC needs GPU endpoints on one host. When remote belongs to this process and
// another GPU, Connect enables peer access from local's GPU to it. A connection is one-sided:
// the peer makes its own with the endpoints swapped.
func (c *Context) Connect(local, remote Endpoint) (*Connection, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return nil, fmt.Errorf("connect %v to %v: %w", local, remote, ErrContextClosed)
	}
	here := thisProcess()
	if err := checkConnect(local, remote, here); err != nil {
		return nil, err
	}
	tr, err := transportOf(local.config.Transport, "connect")
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	conn := &Connection{ctx: c, local: local, remote: remote}
	if local.config.Device.Type == DeviceGPU { // the connection's host calls run on its GPU's context
		if conn.gpu, err = c.gpu(local.config.Device.ID); err != nil {
			return nil, fmt.Errorf("connect %v to %v: %w", local, remote, err)
		}
	}
	if conn.link, err = tr.connect(c, local, remote); err != nil {
		return nil, fmt.Errorf("connect %v to %v: %w", local, remote, err)
	}
	c.conns = append(c.conns, conn)
	return conn, nil
}

// checkConnect checks that a connection from local to remote can be made from the process here.
func checkConnect(local, remote Endpoint, here origin) error {
	what := fmt.Sprintf("connect %v to %v", local, remote)
	switch {
	case !local.origin.sameProcess(here):
		return fmt.Errorf("%s: the local endpoint was created by another process (pid %d): %w", what, local.origin.pid, errs.ErrInvalidArgument)
	case local.config.Transport != remote.config.Transport:
		return fmt.Errorf("%s: transports differ (%v and %v): %w", what, local.config.Transport, remote.config.Transport, errs.ErrInvalidArgument)
	}
	if err := CheckTransport(local.config.Transport, what); err != nil {
		return err
	}
	tr, err := transportOf(local.config.Transport, what)
	if err != nil {
		return err
	}
	if err := tr.checkPeers(local, remote, here); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RegisterMemory registers size bytes at ptr for the given transport, so that its MarshalBinary
// can be sent to peers: device memory for TransportP2P (CUDA IPC); host memory (registered with
// the provider) or device memory (staged through host buffers) for TransportIB and TransportSHM.
// The memory stays the caller's and must outlive every peer's use of it.
func (c *Context) RegisterMemory(ptr cuda.DevicePtr, size uint64, transports Transport) (RegisteredMemory, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	what := fmt.Sprintf("register %d bytes at %#x", size, uint64(ptr))
	if c.closed {
		return RegisteredMemory{}, fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	if ptr == 0 || size == 0 {
		return RegisteredMemory{}, fmt.Errorf("%s: NULL pointer or size 0: %w", what, errs.ErrInvalidArgument)
	}
	if err := CheckTransport(transports, what); err != nil {
		return RegisteredMemory{}, err
	}
	tr, err := transportOf(transports, what)
	if err != nil {
		return RegisteredMemory{}, err
	}
	ordinal := -1 // host memory, or memory the driver does not know
	if typ, err := cuda.PointerMemoryType(ptr); err == nil && typ == cuda.MemoryTypeDevice {
		if ordinal, err = cuda.PointerDeviceOrdinal(ptr); err != nil {
			return RegisteredMemory{}, fmt.Errorf("%s: %w", what, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := tr.register(c, ptr, size, ordinal)
	if err != nil {
		return RegisteredMemory{}, fmt.Errorf("%s for %v: %w", what, transports, err)
	}
	return m, nil
}

// allocationBase returns the base of the allocation that holds [ptr, ptr+size), refusing a range
// that runs past it. The GPU's context is current.
func allocationBase(ptr cuda.DevicePtr, size uint64) (cuda.DevicePtr, error) {
	base, allocSize, err := cuda.MemGetAddressRange(ptr)
	if err != nil {
		return 0, err
	}
	return base, checkWithin(ptr, size, base, uint64(allocSize))
}

// checkWithin refuses [ptr, ptr+size) outside the allocation [base, base+allocSize).
func checkWithin(ptr cuda.DevicePtr, size uint64, base cuda.DevicePtr, allocSize uint64) error {
	if ptr < base || uint64(ptr-base) > allocSize || size > allocSize-uint64(ptr-base) {
		return fmt.Errorf("%d bytes at %#x run past the allocation of %d bytes at %#x: %w",
			size, uint64(ptr), allocSize, uint64(base), errs.ErrInvalidArgument)
	}
	return nil
}

// Close releases everything the context holds: connection streams, semaphore memory, peer
// memory it mapped, and its retained primary contexts. It waits for operations in progress.
// Peer access it enabled stays enabled (it belongs to the primary contexts, which others may
// share). A second Close returns ErrContextClosed.
func (c *Context) Close() error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.closed {
		return ErrContextClosed
	}
	c.closed = true
	var errList []error
	for t, n := range c.fabrics {
		if err := n.close(); err != nil {
			errList = append(errList, fmt.Errorf("%v: %w", t, err))
		}
	}
	c.fabrics = nil
	for dev, g := range c.gpus {
		err := g.do(func() error {
			var errList []error
			for _, conn := range c.conns {
				if conn.gpu == g {
					errList = append(errList, conn.link.close())
				}
			}
			for k, m := range c.opened {
				if k.device == dev {
					errList = append(errList, m.transport.unmap(m.addr))
				}
			}
			for _, p := range g.allocs {
				errList = append(errList, cuda.MemFree(p))
			}
			errList = append(errList, g.stream.Destroy())
			return errors.Join(errList...)
		})
		if err != nil {
			errList = append(errList, fmt.Errorf("GPU %d: %w", dev, err))
		}
		if err := g.pctx.Release(); err != nil {
			errList = append(errList, err)
		}
	}
	c.gpus, c.opened, c.conns = nil, nil, nil
	if err := errors.Join(errList...); err != nil {
		return fmt.Errorf("close context: %w", err)
	}
	return nil
}

// gpu returns the context's state on GPU ordinal, retaining its primary context on first use.
// c.mu is held.
func (c *Context) gpu(ordinal int) (*contextGPU, error) {
	if g, ok := c.gpus[ordinal]; ok {
		return g, nil
	}
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return nil, err
	}
	pctx, err := dev.RetainPrimaryContext()
	if err != nil {
		return nil, err
	}
	g := &contextGPU{dev: dev, pctx: pctx}
	g.tokens.newChunk = g.allocChunk
	if err := g.do(func() error {
		var err error
		g.stream, err = cuda.NewStream()
		return err
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("GPU %d: %w", ordinal, err), pctx.Release())
	}
	c.gpus[ordinal] = g
	if c.home < 0 {
		c.home = ordinal
	}
	return g, nil
}

// do runs f with g's primary context current on the calling thread, then restores the thread's
// previous context.
func (g *contextGPU) do(f func() error) error { return g.pctx.Do(f) }

// enablePeerAccess lets GPU from access GPU to's memory; from == to needs nothing. c.mu is held.
func (c *Context) enablePeerAccess(from, to int) error {
	if from == to || c.peers[[2]int{from, to}] {
		return nil
	}
	gFrom, err := c.gpu(from)
	if err != nil {
		return err
	}
	gTo, err := c.gpu(to)
	if err != nil {
		return err
	}
	ok, err := gFrom.dev.CanAccessPeer(gTo.dev)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("GPU %d cannot access GPU %d (no peer-to-peer path): %w", from, to, errs.ErrInvalidUsage)
	}
	if err := gFrom.do(gTo.pctx.EnablePeerAccess); err != nil {
		return fmt.Errorf("GPU %d to GPU %d: %w", from, to, err)
	}
	c.peers[[2]int{from, to}] = true
	return nil
}

// open maps the peer allocation h into GPU dev's context through transport t, once per
// (allocation, GPU), and returns its address; every call takes a reference that UnmapMemory
// drops. c.mu is held.
func (c *Context) open(t Transport, h cuda.IpcMemHandle, dev int) (cuda.DevicePtr, error) {
	key := openKey{h, dev}
	if m, ok := c.opened[key]; ok {
		m.refs++
		return m.addr, nil
	}
	tr, err := transportOf(t, "map")
	if err != nil {
		return 0, err
	}
	g, err := c.gpu(dev)
	if err != nil {
		return 0, err
	}
	var p cuda.DevicePtr
	if err := g.do(func() error {
		var err error
		p, err = tr.open(h)
		return err
	}); err != nil {
		return 0, fmt.Errorf("map on GPU %d: %w", dev, err)
	}
	c.opened[key] = &mapping{addr: p, transport: tr, refs: 1}
	return p, nil
}

// UnmapMemory releases this context's mapping of m, memory of another process that
// UnmarshalRegisteredMemory (or Communicator.RecvMemory) mapped here: the allocation is unmapped
// once every RegisteredMemory mapped from it is released, or when the context closes. m's Data
// must not be used afterwards. Memory of this process, which is not mapped, is left alone.
func (c *Context) UnmapMemory(m RegisteredMemory) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return fmt.Errorf("unmap %v: %w", m, ErrContextClosed)
	}
	if m.mappedOn == notMapped {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := openKey{m.handle, m.mappedOn}
	mp, ok := c.opened[key]
	if !ok {
		return fmt.Errorf("unmap %v: not mapped by this context (or unmapped already): %w", m, errs.ErrInvalidUsage)
	}
	if mp.refs--; mp.refs > 0 {
		return nil
	}
	delete(c.opened, key)
	g, err := c.gpu(m.mappedOn)
	if err != nil {
		return fmt.Errorf("unmap %v: %w", m, err)
	}
	if err := g.do(func() error { return mp.transport.unmap(mp.addr) }); err != nil {
		return fmt.Errorf("unmap %v: %w", m, err)
	}
	return nil
}

// DeregisterMemory ends the libfabric registration of m, host memory this context registered for
// TransportIB or TransportSHM (RegisterMemory), so that the memory may be freed: every write
// from or into it must have completed (Connection.Flush on this side; the peers done with it).
// Other memory is refused with ErrInvalidArgument; a second call fails with ErrInvalidUsage.
func (c *Context) DeregisterMemory(m RegisteredMemory) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return fmt.Errorf("deregister %v: %w", m, ErrContextClosed)
	}
	if !m.origin.sameProcess(thisProcess()) {
		return fmt.Errorf("deregister %v: memory of another process: %w", m, errs.ErrInvalidArgument)
	}
	tr, err := transportOf(m.transport, "deregister")
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := tr.deregister(c, m); err != nil {
		return fmt.Errorf("deregister %v: %w", m, err)
	}
	return nil
}

// Alloc returns n bytes of zeroed device memory on GPU ordinal (aligned as cuMemAlloc aligns,
// 256 bytes at least), owned by the context: Close frees it. It is for the library's own
// objects (signal words, counters) that peers reach through RegisterMemory.
func (c *Context) Alloc(ordinal, n int) (cuda.DevicePtr, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	what := fmt.Sprintf("allocate %d bytes on GPU %d", n, ordinal)
	if c.closed {
		return 0, fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, err := c.gpu(ordinal)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	var p cuda.DevicePtr
	err = g.do(func() error {
		var err error
		p, err = cuda.MemAllocZeroed(n, g.stream)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	g.allocs = append(g.allocs, p)
	return p, nil
}

// token returns 8 zeroed bytes of device memory on GPU ordinal, owned by the context. c.mu is held.
func (c *Context) token(ordinal int) (cuda.DevicePtr, error) {
	g, err := c.gpu(ordinal)
	if err != nil {
		return 0, err
	}
	var p cuda.DevicePtr
	err = g.do(func() error {
		var reused bool
		var err error
		if p, reused, err = g.tokens.get(); err != nil || !reused {
			return err
		}
		return cuda.MemZero(p, tokenBytes, g.stream)
	})
	if err != nil {
		return 0, fmt.Errorf("semaphore token on GPU %d: %w", ordinal, err)
	}
	return p, nil
}

// allocChunk allocates one zeroed chunk of tokens. g's context is current.
func (g *contextGPU) allocChunk() (cuda.DevicePtr, error) {
	p, err := cuda.MemAllocZeroed(tokenChunkBytes, g.stream)
	if err != nil {
		return 0, err
	}
	g.allocs = append(g.allocs, p)
	return p, nil
}

// Semaphore counters are 8-byte words carved from chunks of device memory, so that a peer maps
// one chunk for many semaphores.
const (
	tokenBytes      = 8
	tokenChunkBytes = 4096
)

// tokenPool hands out 8-byte slots of chunks newChunk allocates zeroed, and takes slots back.
type tokenPool struct {
	newChunk  func() (cuda.DevicePtr, error)
	next, end cuda.DevicePtr
	free      []cuda.DevicePtr
}

// get returns a slot; reused says it was handed out before and must be zeroed again.
func (p *tokenPool) get() (slot cuda.DevicePtr, reused bool, err error) {
	if n := len(p.free); n > 0 {
		slot = p.free[n-1]
		p.free = p.free[:n-1]
		return slot, true, nil
	}
	if p.next == p.end {
		chunk, err := p.newChunk()
		if err != nil {
			return 0, false, err
		}
		p.next, p.end = chunk, chunk+tokenChunkBytes
	}
	slot = p.next
	p.next += tokenBytes
	return slot, false, nil
}

// put takes back a slot get returned.
func (p *tokenPool) put(slot cuda.DevicePtr) { p.free = append(p.free, slot) }

// releaseTokens returns semaphore counters to their GPU's pool, unless the context is closed.
func (c *Context) releaseTokens(ordinal int, slots ...cuda.DevicePtr) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.gpus[ordinal]; ok {
		for _, s := range slots {
			g.tokens.put(s)
		}
	}
}
