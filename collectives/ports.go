package collectives

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/mscclpp-go/mscclpp/channels"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/core/proxy"
)

// The copy-engine path: port channels between the ranks' registered buffers. A kernel pushes
// put and signal requests into this rank's proxy FIFO; the proxy executes them with the GPU's
// copy engines (cuMemcpyAsync between the buffers, then a store into the peer's semaphore).
//
// The channels are fixed at New, two per (registration k, peer p): the gather channel (k, p)
// copies from this rank's buffer of registration k to peer p's buffer of registration k, the
// scatter channel (rows + k, p) from this rank's buffer of registration k into peer p's scratch.
// All of them signal the peer through one semaphore per peer. A channel's proxy connection holds
// no memory until Register binds registration k to it (a request on an unbound channel is
// refused by the proxy, and the waiting peer traps at its spin bound); Close unbinds it.
const (
	// portFifoSize is the proxy FIFO's size: a call pushes a request per (block, peer) and a
	// signal per peer (the port AllReduce: two requests per wave and peer); when the FIFO is
	// full, the GPU waits for the proxy to make room.
	portFifoSize = 512
	// portSemaphoreTag is the semaphore tag of the port channels (the memory channels use tags
	// [0, maxBlocks)).
	portSemaphoreTag = maxBlocks
)

// ports is a Comm's copy-engine path.
type ports struct {
	fifo    *core.ProxyFifo
	sems    []*core.Semaphore // by peer index, signalled by the peers' proxies
	rows    int               // registrations [0, rows) have port channels
	peers   []int             // the peers' ranks, by peer index
	scratch []span            // the peers' scratch buffers, mapped here, by peer index
	rank    int               // this rank
	table   cuda.DevicePtr    // mscclppPortChannelDeviceHandle [2*rows][nPeers]
}

// portRows is how many registrations get port channels: a trigger names one of 2^10 proxy
// connections, two per registration and peer.
func portRows(nPeers int) int {
	return min(maxRegistrations, (1<<fifo.BitsConnID)/(2*nPeers))
}

// connectPorts builds the semaphores and the proxy FIFO with unbound gather and scatter channels
// per (row, peer) and uploads the device handles; the proxy starts when Register first binds a
// registration. conns are the connections to the peers and scratch their scratch buffers
// (mapped here), by peer index.
func (c *Comm) connectPorts(ctx context.Context, peers []int, conns []*core.Connection, scratch []span) error {
	pt := &ports{peers: peers, scratch: scratch, rank: c.rank, rows: portRows(len(peers))}
	c.ports = pt
	futures := make([]core.Future[*core.Semaphore], len(peers))
	for i, r := range peers {
		futures[i] = c.comm.BuildSemaphore(conns[i], r, portSemaphoreTag)
	}
	for i, f := range futures {
		sem, err := f.Get(ctx)
		if err != nil {
			return fmt.Errorf("port semaphore with rank %d: %w", peers[i], err)
		}
		pt.sems = append(pt.sems, sem)
	}
	var err error
	if pt.fifo, err = core.NewProxyFifo(cuda.Device(c.device), portFifoSize, c.log); err != nil {
		return fmt.Errorf("port channels: %w", err)
	}
	unbound := make([]proxy.Conn, 0, 2*pt.rows*len(peers))
	for k := range 2 * pt.rows {
		for p := range peers {
			unbound = append(unbound, pt.conn(k, p, 0, 0, 0, 0))
		}
	}
	// The proxy starts at the first bind (rebind): until a registration has port channels, no
	// kernel queues a request, and a communicator that never registers a buffer keeps no proxy
	// thread polling.
	if err := pt.fifo.AddConns(unbound...); err != nil {
		return fmt.Errorf("port channels: %w", err)
	}
	handles := make([]channels.PortChannelDeviceHandle, 0, 2*pt.rows*len(peers))
	for k := range 2 * pt.rows {
		for p := range peers {
			handles = append(handles, channels.PortChannelDeviceHandle{
				ChannelID: uint32(k*len(peers) + p),
				Semaphore: channels.HostSemaphoreDeviceHandle{
					InboundToken:         uintptr(pt.sems[p].InboundToken()),
					ExpectedInboundToken: uintptr(pt.sems[p].ExpectedInboundToken()),
				},
				Fifo: channels.FifoDeviceHandle{
					Triggers: uintptr(pt.fifo.Ring()), TailReplica: uintptr(pt.fifo.TailReplica()),
					Head: uintptr(pt.fifo.Head()), Size: uint32(pt.fifo.Size()),
				},
			})
		}
	}
	if pt.table, err = uploadNew(c, handles); err != nil {
		return fmt.Errorf("port channel handles: %w", err)
	}
	return nil
}

// conn is the proxy connection of port channel (k, p), k in [0, 2*rows): from [src, src+srcSize)
// here to [dst, dst+dstSize) on peer index p, mapped here; all zero: unbound.
func (pt *ports) conn(k, p int, src, srcSize, dst, dstSize uint64) proxy.Conn {
	return proxy.Conn{
		LocalBuf: src, LocalSize: srcSize, RemoteBuf: dst, RemoteSize: dstSize,
		RemoteSignal: uint64(pt.sems[p].RemoteInboundToken()), SignalID: p,
		Peer: pt.peers[p], Tag: k,
	}
}

// bind points registration r's port channels at its buffers (row: the registration table's
// row, by rank) and the peers' scratch buffers, so that copy-engine calls may use it; a
// registration beyond the port rows, or one whose buffer on some rank is too large for the
// requests' 32-bit offsets, stays unbound. It stops the proxy for the change (requests already
// queued wait). c.mu is held.
func (pt *ports) bind(r *Registration, row []registrationEntry) error {
	if pt == nil || r.index >= pt.rows {
		return nil
	}
	for _, e := range row {
		if e.Size > math.MaxUint32 {
			return nil
		}
	}
	mine := row[pt.rank]
	err := pt.rebind(r.index, func(k, p int) proxy.Conn {
		if k == r.index {
			theirs := row[pt.peers[p]]
			return pt.conn(k, p, mine.Base, mine.Size, theirs.Base, theirs.Size)
		}
		return pt.conn(k, p, mine.Base, mine.Size, uint64(pt.scratch[p].ptr), pt.scratch[p].size)
	})
	if err == nil {
		r.copyEngine = true
	}
	return err
}

// unbind takes registration r's buffers out of its port channels. c.mu is held.
func (pt *ports) unbind(r *Registration) error {
	if pt == nil || !r.copyEngine {
		return nil
	}
	r.copyEngine = false
	return pt.rebind(r.index, func(k, p int) proxy.Conn { return pt.conn(k, p, 0, 0, 0, 0) })
}

// rebind replaces the connections of registration index's channels, gather row index and
// scatter row rows + index, with conn(row, p) while the proxy is stopped, then (re)starts it.
func (pt *ports) rebind(index int, conn func(k, p int) proxy.Conn) error {
	if err := pt.fifo.Stop(); err != nil {
		return fmt.Errorf("stop the port proxy: %w", err)
	}
	var errList []error
	for _, k := range []int{index, pt.rows + index} {
		for p := range pt.peers {
			errList = append(errList, pt.fifo.SetConn(k*len(pt.peers)+p, conn(k, p)))
		}
	}
	return errors.Join(errors.Join(errList...), pt.fifo.Start())
}

// close stops the proxy and frees the FIFO and the semaphores (the table is one of c.allocs).
func (pt *ports) close() error {
	if pt == nil {
		return nil
	}
	var errList []error
	if pt.fifo != nil {
		errList = append(errList, pt.fifo.Close())
	}
	for _, s := range pt.sems {
		errList = append(errList, s.Close())
	}
	return errors.Join(errList...)
}
