package legacy

import (
	"context"
	"fmt"
	"slices"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Registration is a buffer registered with every connected peer by RegisterBuffer: Remote has
// one entry per connection, in connection order, naming the peer's registered buffer as mapped
// here.
type Registration struct {
	comm   *Comm
	Local  cuda.DevicePtr
	Size   uint64
	Remote []RemoteBuffer
}

// RemoteBuffer is a peer's registered buffer, mapped here.
type RemoteBuffer struct {
	Peer int
	Addr cuda.DevicePtr
	Size uint64
}

// RegisterBuffer registers size bytes of device memory at buf with every peer this rank has a
// connection with, and maps each peer's registered buffer here. It is collective between
// connected ranks (each must register once per call, in the same order) and needs
// ConnectionSetup to have run.
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
	for _, conn := range c.conns {
		if conn.transport == core.TransportIB {
			return nil, fmt.Errorf("register buffer: connection to rank %d tag %d is over IB, where registered buffers are not implemented (P2P connections only): %w",
				conn.remoteRank, conn.tag, core.ErrTransportUnavailable)
		}
	}
	if _, err := deviceOf(buf, c.gpu.device, "register buffer"); err != nil {
		return nil, err
	}
	var msg [core.RegisteredMemoryBytes]byte
	if _, err := c.gpu.export(&msg, buf, size, core.TransportP2P); err != nil {
		return nil, fmt.Errorf("register buffer: %w", err)
	}

	tag := core.LegacyRegisterTagBase + c.registrations
	peers := c.connectedPeers()
	for _, peer := range peers {
		if err := c.bootstrap.Send(ctx, peer, tag, msg[:]); err != nil {
			return nil, fmt.Errorf("register buffer: send to rank %d: %w", peer, err)
		}
	}
	mapped := map[int]RemoteBuffer{}
	for _, peer := range peers {
		in, err := c.bootstrap.Recv(ctx, peer, tag)
		if err != nil {
			return nil, fmt.Errorf("register buffer: waiting for rank %d's buffer: %w", peer, err)
		}
		m, err := c.gpu.open(in)
		if err != nil {
			return nil, fmt.Errorf("register buffer: map rank %d's buffer: %w", peer, err)
		}
		mapped[peer] = RemoteBuffer{Peer: peer, Addr: m.Data(), Size: m.Size()}
	}
	c.registrations++
	r := &Registration{comm: c, Local: buf, Size: size}
	for _, conn := range c.conns {
		r.Remote = append(r.Remote, mapped[conn.remoteRank])
	}
	return r, nil
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
// dstOffset, each peer once, asynchronously on stream. It refuses writes past a peer's buffer.
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
	var targets []RemoteBuffer
	for _, remote := range r.Remote {
		if slices.ContainsFunc(targets, func(t RemoteBuffer) bool { return t.Peer == remote.Peer }) {
			continue
		}
		if dstOffset > remote.Size || size > remote.Size-dstOffset {
			return fmt.Errorf("registered buffer write: %d bytes at offset %d do not fit rank %d's %d-byte buffer: %w",
				size, dstOffset, remote.Peer, remote.Size, errs.ErrInvalidArgument)
		}
		targets = append(targets, remote)
	}
	return c.gpu.pctx.Do(func() error {
		for _, t := range targets {
			if err := cuda.MemcpyAsync(t.Addr+cuda.DevicePtr(dstOffset), src+cuda.DevicePtr(srcOffset), int(size), stream); err != nil {
				return fmt.Errorf("registered buffer write to rank %d: %w", t.Peer, err)
			}
		}
		return nil
	})
}
