package legacy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// ConnectionSetup sets up every connection declared since the last setup. It is collective
// between connected ranks: each rank sends each peer it has new connections with the location of
// its buffers and signal counters (CUDA IPC handles plus offsets), receives the peer's, checks
// that every connection has its counterpart, and maps the peer's memory here. It blocks until
// every peer answered or the bootstrap timeout passed; a connection whose peer declared no
// counterpart is an error that names the pair.
//
// All buffers must be device memory of one GPU, which becomes the communicator's GPU. The proxy
// must not be running.
func (c *Comm) ConnectionSetup(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.proxyRunning() {
		return fmt.Errorf("connection setup: the proxy is running; stop it first: %w", errs.ErrInvalidUsage)
	}
	var pending []int
	for i, conn := range c.conns {
		if !conn.setUp {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	dev, err := c.bufferDevice(pending)
	if err != nil {
		return err
	}
	if c.gpu == nil {
		g, err := newGPUState(dev, c.log)
		if err != nil {
			return fmt.Errorf("connection setup on rank %d: %w", c.Rank(), err)
		}
		c.gpu = g
	}
	if err := c.setUp(ctx, pending); err != nil {
		return fmt.Errorf("connection setup on rank %d: %w", c.Rank(), err)
	}
	c.setups++
	c.log.Info("connections set up", "new", len(pending), "total", len(c.conns), "gpu", int(dev))
	return nil
}

// bufferDevice checks that the buffers of the given connections are device memory of one GPU,
// the communicator's if it has one, and returns that GPU.
func (c *Comm) bufferDevice(indices []int) (cuda.Device, error) {
	dev := cuda.Device(-1)
	if c.gpu != nil {
		dev = c.gpu.device
	}
	for _, i := range indices {
		conn := c.conns[i]
		what := fmt.Sprintf("connection to rank %d tag %d", conn.remoteRank, conn.tag)
		d, err := deviceOf(conn.localBuf, dev, what)
		if err != nil {
			return 0, err
		}
		dev = d
	}
	return dev, nil
}

// deviceOf returns the GPU that owns p, refusing host memory and, when want >= 0, memory of
// another GPU (one GPU per rank). what names the buffer in errors.
func deviceOf(p cuda.DevicePtr, want cuda.Device, what string) (cuda.Device, error) {
	typ, err := cuda.PointerMemoryType(p)
	if errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverNotFound) {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if err != nil || typ != cuda.MemoryTypeDevice {
		return 0, fmt.Errorf("%s: buffer %#x is not CUDA device memory (P2P needs a cudaMalloc'd buffer): %w",
			what, uint64(p), errs.ErrInvalidArgument)
	}
	ordinal, err := cuda.PointerDeviceOrdinal(p)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if want >= 0 && cuda.Device(ordinal) != want {
		return 0, fmt.Errorf("%s: buffer is on GPU %d but this rank uses GPU %d (one GPU per rank): %w",
			what, ordinal, want, errs.ErrInvalidArgument)
	}
	return cuda.Device(ordinal), nil
}

// setUp allocates the counters of the pending connections, registers each connection's buffer
// and signal pair, exchanges the registrations with the peers and maps the peers'. c.mu is held.
func (c *Comm) setUp(ctx context.Context, pending []int) error {
	g := c.gpu
	sigs, err := g.ctx.Alloc(int(g.device), len(pending)*signalPairBytes)
	if err != nil {
		return fmt.Errorf("signal counters: %w", err)
	}
	waits, err := g.ctx.Alloc(int(g.device), len(pending)*waitEpochBytes)
	if err != nil {
		return fmt.Errorf("wait counters: %w", err)
	}

	// What this rank tells each peer, and the order of its own connections to that peer.
	lists := map[int][]connInfo{}
	order := map[int][]int{} // peer -> indices into c.conns
	for k, i := range pending {
		conn := c.conns[i]
		conn.localSig = sigs + cuda.DevicePtr(k*signalPairBytes)
		conn.waitEpoch = waits + cuda.DevicePtr(k*waitEpochBytes)
		info := connInfo{tag: int32(conn.tag), transport: conn.transport}
		if conn.transport == core.TransportIB {
			if err := g.exportIB(&info, conn); err != nil {
				return fmt.Errorf("connection to rank %d tag %d over IB: %w", conn.remoteRank, conn.tag, err)
			}
		} else {
			if _, err := g.export(&info.buf, conn.localBuf, conn.size, core.TransportP2P); err != nil {
				return fmt.Errorf("connection to rank %d tag %d: %w", conn.remoteRank, conn.tag, err)
			}
			if _, err := g.export(&info.sig, conn.localSig, uint64(signalPairBytes), core.TransportP2P); err != nil {
				return fmt.Errorf("connection to rank %d tag %d: signal pair: %w", conn.remoteRank, conn.tag, err)
			}
		}
		lists[conn.remoteRank] = append(lists[conn.remoteRank], info)
		order[conn.remoteRank] = append(order[conn.remoteRank], i)
	}
	peers := make([]int, 0, len(lists))
	for peer := range lists {
		peers = append(peers, peer)
	}
	slices.Sort(peers)

	tag := core.LegacySetupTagBase + c.setups
	for _, peer := range peers {
		if err := c.bootstrap.Send(ctx, peer, tag, encodeConnList(lists[peer])); err != nil {
			return fmt.Errorf("send connection list to rank %d: %w", peer, err)
		}
	}
	for _, peer := range peers {
		tags := make([]int, len(order[peer]))
		for k, i := range order[peer] {
			tags[k] = c.conns[i].tag
		}
		msg, err := c.bootstrap.Recv(ctx, peer, tag)
		if err != nil {
			return fmt.Errorf("waiting for rank %d's side of connections with tags %v (does rank %d call mscclppConnect for them, then mscclppConnectionSetup?): %w",
				peer, tags, peer, err)
		}
		theirs, err := decodeConnList(msg)
		if err != nil {
			return fmt.Errorf("connection list from rank %d: %w", peer, err)
		}
		matched, err := matchConnections(c.Rank(), peer, tags, theirs)
		if err != nil {
			return err
		}
		for k, i := range order[peer] {
			conn := c.conns[i]
			if matched[k].transport != conn.transport {
				return fmt.Errorf("connection with rank %d tag %d: this rank declared it over %v, rank %d over %v: %w",
					peer, conn.tag, conn.transport, peer, matched[k].transport, errs.ErrInvalidUsage)
			}
			attach := c.attach
			if conn.transport == core.TransportIB {
				attach = c.attachIB
			}
			if err := attach(conn, matched[k]); err != nil {
				return err
			}
		}
	}
	for _, i := range pending {
		c.conns[i].setUp = true
	}
	return nil
}

// attach maps the peer's side of conn here.
func (c *Comm) attach(conn *connection, peer connInfo) error {
	buf, err := c.gpu.open(peer.buf[:])
	if err != nil {
		return fmt.Errorf("map rank %d's buffer (tag %d): %w", conn.remoteRank, conn.tag, err)
	}
	sig, err := c.gpu.open(peer.sig[:])
	if err != nil {
		return fmt.Errorf("map rank %d's signal counters (tag %d): %w", conn.remoteRank, conn.tag, err)
	}
	if sig.Size() < uint64(signalPairBytes) {
		return fmt.Errorf("rank %d's signal pair (tag %d) has %d bytes, want %d: %w",
			conn.remoteRank, conn.tag, sig.Size(), signalPairBytes, ErrBadConnList)
	}
	conn.remoteBuf = buf.Data()
	conn.remoteSize = buf.Size()
	conn.remoteSig = sig.Data()
	return nil
}

// export registers size bytes at p in the communicator's context for transport t and writes
// the registration's wire form to out.
func (g *gpuState) export(out *[core.RegisteredMemoryBytes]byte, p cuda.DevicePtr, size uint64, t core.Transport) (core.RegisteredMemory, error) {
	m, err := g.ctx.RegisterMemory(p, size, t)
	if err != nil {
		return core.RegisteredMemory{}, err
	}
	b, err := m.MarshalBinary()
	if err != nil {
		return core.RegisteredMemory{}, err
	}
	copy(out[:], b)
	return m, nil
}

// exportIB registers conn's buffer and signal pair for the network and fills info with them and
// this rank's libfabric endpoint, made with the first IB connection on the NIC conn names (when
// MSCCLPP_NET_PROVIDER leaves the choice to verbs).
func (g *gpuState) exportIB(info *connInfo, conn *connection) error {
	if conn.device != "" && config.NetProvider.Get() == "" {
		if err := g.ctx.UseNetDomain(conn.device); err != nil { // one NIC per communicator
			return err
		}
	}
	if g.ib == (core.Endpoint{}) {
		ep, err := g.ctx.CreateEndpoint(core.EndpointConfig{Transport: core.TransportIB,
			Device: core.Device{Type: core.DeviceGPU, ID: int(g.device)}})
		if err != nil {
			return err
		}
		g.ib, g.ibConns = ep, map[int]*core.Connection{}
	}
	b, err := g.ib.MarshalBinary()
	if err != nil {
		return err
	}
	copy(info.endpoint[:], b)
	if conn.localReg, err = g.export(&info.buf, conn.localBuf, conn.size, core.TransportIB); err != nil {
		return err
	}
	if _, err := g.export(&info.sig, conn.localSig, uint64(signalPairBytes), core.TransportIB); err != nil {
		return fmt.Errorf("signal pair: %w", err)
	}
	return nil
}

// attachIB connects conn to the peer's libfabric endpoint (one core connection per peer) and
// builds the proxy route that carries conn's puts into the peer's buffer and its signals into the
// peer's signal pair. Nothing of the peer is mapped here: the device connection's remote
// pointers stay NULL.
func (c *Comm) attachIB(conn *connection, peer connInfo) error {
	g := c.gpu
	what := fmt.Sprintf("connection to rank %d tag %d over IB", conn.remoteRank, conn.tag)
	cc := g.ibConns[conn.remoteRank]
	if cc == nil {
		ep, err := core.UnmarshalEndpoint(peer.endpoint[:])
		if err != nil {
			return fmt.Errorf("%s: rank %d's endpoint: %w: %w", what, conn.remoteRank, ErrBadConnList, err)
		}
		if cc, err = g.ctx.Connect(g.ib, ep); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		g.ibConns[conn.remoteRank] = cc
	}
	buf, err := g.open(peer.buf[:])
	if err != nil {
		return fmt.Errorf("%s: rank %d's buffer: %w", what, conn.remoteRank, err)
	}
	sig, err := g.open(peer.sig[:])
	if err != nil {
		return fmt.Errorf("%s: rank %d's signal counters: %w", what, conn.remoteRank, err)
	}
	if conn.route, err = core.NewConnectionRoute(cc, buf, conn.localReg, sig, proxyFieldShift); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	conn.remoteSize = buf.Size()
	return nil
}

// open maps a peer's registered memory, given in its wire form, into the communicator's context.
// A description that does not decode is the peer's fault.
func (g *gpuState) open(b []byte) (core.RegisteredMemory, error) {
	m, err := core.UnmarshalRegisteredMemory(g.ctx, b)
	if errors.Is(err, core.ErrBadRegisteredMemory) {
		return core.RegisteredMemory{}, fmt.Errorf("%w: %w", ErrBadConnList, err)
	}
	return m, err
}
