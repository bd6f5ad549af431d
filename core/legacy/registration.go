package legacy

import (
	"context"
	"fmt"
	"slices"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Registration is a buffer registered with every connected peer by RegisterBuffer: Remote has
// one entry per connection, in connection order, naming the peer's registered buffer.
type Registration struct {
	comm   *Comm
	Local  cuda.DevicePtr
	Size   uint64
	Remote []RemoteBuffer
}

// RemoteBuffer is a peer's registered buffer: mapped here (Addr) when this rank has a P2P
// connection with the peer, else reached over the network (Addr is 0).
type RemoteBuffer struct {
	Peer int
	Addr cuda.DevicePtr
	Size uint64

	net core.RegisteredMemory // over IB: the peer's buffer as the network reaches it
}

// RegisterBuffer registers size bytes of device memory at buf with every peer this rank has a
// connection with, and maps each peer's registered buffer here (P2P) or records how the network
// reaches it (a peer this rank has only IB connections with). It is collective between connected
// ranks (each must register once per call, in the same order) and needs ConnectionSetup to have
// run.
func (c *Comm) RegisterBuffer(ctx context.Context, buf cuda.DevicePtr, size uint64) (*Registration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if buf == 0 || size == 0 {
		return nil, fmt.Errorf("register buffer: NULL buffer or size 0: %w", errs.ErrInvalidArgument)
	}
	if err := c.requireSetUp("register buffer"); err != nil {
		return nil, err
	}
	if len(c.conns) == 0 {
		return nil, fmt.Errorf("register buffer: no connections to register it with: %w", ErrNotSetUp)
	}
	if _, err := deviceOf(buf, c.gpu.device, "register buffer"); err != nil {
		return nil, err
	}
	peers := c.connectedPeers()
	// The buffer in the wire form each transport needs: both ends of a connection agree on its
	// transport, so both pick the same one for a pair of ranks.
	msgs := map[core.Transport]*[core.RegisteredMemoryBytes]byte{}
	for _, peer := range peers {
		t := c.peerTransport(peer)
		if msgs[t] != nil {
			continue
		}
		msgs[t] = new([core.RegisteredMemoryBytes]byte)
		if _, err := c.gpu.export(msgs[t], buf, size, t); err != nil {
			return nil, fmt.Errorf("register buffer for %v: %w", t, err)
		}
	}

	tag := core.LegacyRegisterTagBase + c.registrations
	for _, peer := range peers {
		msg := msgs[c.peerTransport(peer)]
		if err := c.bootstrap.Send(ctx, peer, tag, msg[:]); err != nil {
			return nil, fmt.Errorf("register buffer: send to rank %d: %w", peer, err)
		}
	}
	remote := map[int]RemoteBuffer{}
	for _, peer := range peers {
		in, err := c.bootstrap.Recv(ctx, peer, tag)
		if err != nil {
			return nil, fmt.Errorf("register buffer: waiting for rank %d's buffer: %w", peer, err)
		}
		m, err := c.gpu.open(in)
		if err != nil {
			return nil, fmt.Errorf("register buffer: rank %d's buffer: %w", peer, err)
		}
		t := c.peerTransport(peer)
		if m.Transports() != t {
			return nil, fmt.Errorf("register buffer: rank %d sent its buffer registered for %v, not for %v as their connections need: %w",
				peer, m.Transports(), t, ErrBadConnList)
		}
		if t == core.TransportIB {
			remote[peer] = RemoteBuffer{Peer: peer, Size: m.Size(), net: m}
		} else {
			remote[peer] = RemoteBuffer{Peer: peer, Addr: m.Data(), Size: m.Size()}
		}
	}
	c.registrations++
	r := &Registration{comm: c, Local: buf, Size: size}
	for _, conn := range c.conns {
		r.Remote = append(r.Remote, remote[conn.remoteRank])
	}
	return r, nil
}

// peerTransport is how this rank reaches peer's registered buffers: P2P when it has a P2P
// connection with the peer, else IB. c.mu is held.
func (c *Comm) peerTransport(peer int) core.Transport {
	for _, conn := range c.conns {
		if conn.remoteRank == peer && conn.transport != core.TransportIB {
			return conn.transport
		}
	}
	return core.TransportIB
}

// connectedPeers lists the ranks this rank has connections with, in ascending order. c.mu is held.
func (c *Comm) connectedPeers() []int {
	seen := make([]bool, c.Size())
	var peers []int
	for _, conn := range c.conns {
		if !seen[conn.remoteRank] {
			seen[conn.remoteRank] = true
			peers = append(peers, conn.remoteRank)
		}
	}
	slices.Sort(peers)
	return peers
}

// Write copies size bytes from src+srcOffset into every connected peer's registered buffer at
// dstOffset, each peer once. Into mapped buffers (P2P) it queues the copies on stream and
// returns; a peer reached over the network is written once the work already on stream has
// completed, and Write returns when the bytes are in that peer's buffer (at most
// MSCCLPP_NET_TIMEOUT). It refuses writes past a peer's buffer.
func (r *Registration) Write(src cuda.DevicePtr, size, srcOffset, dstOffset uint64, stream cuda.Stream) error {
	c := r.comm
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if src == 0 {
		return fmt.Errorf("registered buffer write: source is NULL: %w", errs.ErrInvalidArgument)
	}
	if size == 0 {
		return nil
	}
	// Each peer once, even when several connections lead to it.
	var mapped, overNet []RemoteBuffer
	seen := map[int]bool{}
	for _, remote := range r.Remote {
		if seen[remote.Peer] {
			continue
		}
		seen[remote.Peer] = true
		if dstOffset > remote.Size || size > remote.Size-dstOffset {
			return fmt.Errorf("registered buffer write: %d bytes at offset %d do not fit rank %d's %d-byte buffer: %w",
				size, dstOffset, remote.Peer, remote.Size, errs.ErrInvalidArgument)
		}
		if remote.Addr == 0 {
			overNet = append(overNet, remote)
		} else {
			mapped = append(mapped, remote)
		}
	}
	// Everything that can refuse the write is checked before the first copy is queued.
	var local core.RegisteredMemory
	var localOff uint64
	if len(overNet) > 0 {
		var err error
		if local, localOff, err = c.gpu.networkSource(src+cuda.DevicePtr(srcOffset), size); err != nil {
			return fmt.Errorf("registered buffer write: %w", err)
		}
		for _, t := range overNet {
			if c.gpu.ibConns[t.Peer] == nil {
				return fmt.Errorf("registered buffer write to rank %d: no IB connection with it: %w", t.Peer, errs.ErrInternal)
			}
		}
	}
	if err := c.gpu.pctx.Do(func() error {
		for _, t := range mapped {
			if err := cuda.MemcpyAsync(t.Addr+cuda.DevicePtr(dstOffset), src+cuda.DevicePtr(srcOffset), int(size), stream); err != nil {
				return fmt.Errorf("registered buffer write to rank %d: %w", t.Peer, err)
			}
		}
		if len(overNet) > 0 {
			return stream.Synchronize() // the source is ready once the stream's work is done
		}
		return nil
	}); err != nil {
		return err
	}
	if len(overNet) == 0 {
		return nil
	}
	return c.writeOverNet(overNet, local, localOff, size, dstOffset)
}

// writeOverNet writes size bytes at srcOff of local (registered for the network) into each
// target's buffer at dstOffset over its peer's IB connection and waits until they have landed.
// c.mu is held.
func (c *Comm) writeOverNet(targets []RemoteBuffer, local core.RegisteredMemory, srcOff, size, dstOffset uint64) error {
	for _, t := range targets {
		if err := c.gpu.ibConns[t.Peer].Write(t.net, dstOffset, local, srcOff, size); err != nil {
			return fmt.Errorf("registered buffer write to rank %d: %w", t.Peer, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), config.NetTimeout.Get())
	defer cancel()
	for _, t := range targets {
		if err := c.gpu.ibConns[t.Peer].WaitLanded(ctx); err != nil {
			return fmt.Errorf("registered buffer write to rank %d: %w", t.Peer, err)
		}
	}
	return nil
}

// networkSource returns the network registration of the whole allocation that holds the size
// bytes at src, and src's offset in it. Each allocation is registered once: GPU memory registered
// for the network (an entry of the context's staged table, nothing pinned) stays registered until
// the communicator is destroyed, so every allocation ever used as a source adds one entry.
func (g *gpuState) networkSource(src cuda.DevicePtr, size uint64) (core.RegisteredMemory, uint64, error) {
	if _, err := deviceOf(src, g.device, "source"); err != nil {
		return core.RegisteredMemory{}, 0, err
	}
	var base cuda.DevicePtr
	var allocBytes int
	if err := g.pctx.Do(func() error {
		var err error
		base, allocBytes, err = cuda.MemGetAddressRange(src)
		return err
	}); err != nil {
		return core.RegisteredMemory{}, 0, fmt.Errorf("source %#x: %w", uint64(src), err)
	}
	off := uint64(src - base)
	if size > uint64(allocBytes)-off {
		return core.RegisteredMemory{}, 0, fmt.Errorf("source: %d bytes at %#x run past the end of its %d-byte allocation: %w",
			size, uint64(src), allocBytes, errs.ErrInvalidArgument)
	}
	if m, ok := g.netSources[base]; ok && m.Size() == uint64(allocBytes) {
		return m, off, nil
	}
	m, err := g.ctx.RegisterMemory(base, uint64(allocBytes), core.TransportIB)
	if err != nil {
		return core.RegisteredMemory{}, 0, fmt.Errorf("register the source for the network: %w", err)
	}
	if g.netSources == nil {
		g.netSources = map[cuda.DevicePtr]core.RegisteredMemory{}
	}
	g.netSources[base] = m
	return m, off, nil
}
