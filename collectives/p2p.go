package collectives

import (
	"context"
	"fmt"
	"structs"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/channels"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Point-to-point transfers (SendRecv, AlltoAll) run on state of their own, apart from the
// collectives': a p2p scratch buffer per rank and one memory-channel semaphore pair per (ordered
// pair of ranks, lane), built by New (connectP2P). Every ordered pair (sender s, receiver r) is a
// stream of p2pLanes lanes; lane l owns two chunk slots of p2pChunkBytes in r's p2p scratch (the
// region of sender s) and one semaphore pair, through which s says "chunk in slot" and r "slot
// free". The semaphores' counters, in device memory, count the chunks of each lane over every
// call, so chunk k goes to slot k&1 and waits for chunk k-2 to be freed: the sequencing is per
// pair and lane, kept on the GPU (right in graph replays too), and needs no call counter. Both
// sides cut a transfer into lanes and chunks from its byte count alone (p2pLanes), so the k-th
// send from s to r meets the k-th receive of r from s, whatever other calls either made.
//
// The collectives never read or write the p2p scratch or its semaphores, and the p2p kernel never
// touches theirs nor coll::State (ticks, rounds): a collective after p2p calls sees exactly the
// state it left, and no stale p2p data can be read as a collective's (their flags and semaphores
// live elsewhere). A p2p sender may write into a receiver's p2p scratch while the receiver still
// runs an earlier collective: the regions are disjoint, so that is harmless.
const (
	// maxP2PPeers is the most peers (this rank included) one launch serves: coll::kMaxP2PPeers.
	maxP2PPeers = 16
	// p2pLanes, p2pBaseLanes, p2pChunkBytes, p2pLaneBytes, p2pSmallLanes, p2pLaneMinBytes:
	// coll::kP2PLanes, kP2PBaseLanes, kP2PChunkBytes, kP2PLaneBytes, kP2PSmallLanes,
	// kP2PLaneMinBytes (laneCount).
	p2pLanes        = 64
	p2pBaseLanes    = 32
	p2pChunkBytes   = 256 << 10
	p2pLaneBytes    = 128 << 10
	p2pSmallLanes   = 8
	p2pLaneMinBytes = 16 << 10
	// p2pThreads is coll::kP2PThreads.
	p2pThreads = 1024
	// p2pStreamBytes is one stream's region of the receiver's p2p scratch (coll::kP2PStreamBytes).
	p2pStreamBytes = p2pLanes * 2 * p2pChunkBytes
	// p2pSemaphoreTag is the first semaphore tag of the p2p lanes (the memory channels of the
	// collectives use [0, maxBlocks), the port channels maxBlocks): lane l of the stream from
	// the lower rank of a pair uses p2pSemaphoreTag + 2l, the other p2pSemaphoreTag + 2l + 1.
	p2pSemaphoreTag = maxBlocks + 1
	// p2pMemoryTag is the memory tag of the p2p scratch (the scratch uses 0, the registrations
	// [registrationTag, registrationTag + maxRegistrations)).
	p2pMemoryTag = registrationTag + maxRegistrations
	// p2pKernel is the entry point of kernels/src/sendrecv.cu.
	p2pKernel = "mscclpp_sendrecv"
	// p2pLinesKernel is the entry point of kernels/src/sendrecv_ll128.cu: the transfers of at most
	// p2pLinesMaxBytes where lines are on (Comm.lines).
	p2pLinesKernel = "mscclpp_sendrecv_ll128"
	// p2pLineSlotBytes is coll::kP2PLineSlotBytes: each sending rank has two line slots in a
	// receiver's p2p scratch. 4.5 MiB: on 2 x H200 a 4 MiB transfer in lines took 19.5-19.8 us,
	// on the lanes 27.3-27.8 (NCCL 28.5-29.2); 2 MiB 12.4-12.6 against 18.7-19.2 (19.1-19.5).
	p2pLineSlotBytes = 9 << 19
	// p2pLinePieceBytes is coll::kP2PLinePieceBytes: a line slot's worth of data, the piece in
	// which a transfer in lines goes.
	p2pLinePieceBytes = p2pLineSlotBytes / lineBytes * lineDataWords * 8
	// p2pLinesMaxBytes is the most bytes of a transfer in lines, streamed in pieces past the
	// first (graph, us, a ring, lines in pieces / lanes / NCCL: 4 ranks on 4 x H200, 8 MiB
	// 35.6-36.2 / 42.0-42.4 / 60.8-63.9, 16 MiB 64.5-66.1 / 65.3-66.3 / 111-125; 2 ranks on 2 x
	// H200, 8 MiB 35.8-36.2 / 42.0-42.8 / 46.8-50.6, 16 MiB 65.3-66.2 / 65.3-66.8 / 76.6-81.4).
	p2pLinesMaxBytes = 16 << 20
)

// P2POp is one send or receive of SendRecv: Count elements of type Type from Buf to rank Peer
// (Send) or from rank Peer into Buf. Peer may be this rank.
type P2POp struct {
	Peer  int
	Send  bool
	Buf   cuda.DevicePtr
	Count int
	Type  DataType
}

// p2pEntry mirrors coll::P2PEntry of kernels/src/sendrecv.cuh.
type p2pEntry struct {
	_         structs.HostLayout
	Peer      uint64
	Send      uintptr
	Recv      uintptr
	SendBytes uint64
	RecvBytes uint64
}

// p2pArgs mirrors coll::P2PArgs, the one parameter of mscclpp_sendrecv: 8-byte fields, then
// the entries (p2p_test.go checks the layout; the C++ side static_asserts it).
type p2pArgs struct {
	_        structs.HostLayout
	Channels uintptr // MemoryChannelDeviceHandle [peer index][2 directions][p2pLanes]
	Scratch  uintptr // this rank's p2p scratch
	Rank     uint64
	NRanks   uint64
	MaxSpins int64
	Abort    uintptr // the Comm's abort words (abort.go)
	NEntries uint64
	MaxLanes uint64 // p2pLanes: the kernel's lane rule takes its bound from here
	Entries  [maxP2PPeers]p2pEntry
}

const p2pArgsBytes = 64 + 40*maxP2PPeers

func (a *p2pArgs) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(a)), unsafe.Sizeof(*a))
}

// laneCount is coll::p2pLanes: the lanes of a transfer of `bytes` bytes (0 for none) in a launch
// of at most maxLanes per transfer: one per p2pLaneBytes up to p2pBaseLanes, past that one per two
// chunks (16 MiB takes 32 lanes, 32 MiB 64), but up to p2pSmallLanes of at least p2pLaneMinBytes.
func laneCount(bytes uint64, maxLanes int) int {
	n := (bytes + p2pLaneBytes - 1) / p2pLaneBytes
	if n < p2pSmallLanes {
		n = min(p2pSmallLanes, (bytes+p2pLaneMinBytes-1)/p2pLaneMinBytes)
	}
	n = max(min(n, p2pBaseLanes), (bytes+2*p2pChunkBytes-1)/(2*p2pChunkBytes))
	return int(min(uint64(maxLanes), n))
}

// p2pScratchBytes is the size of a rank's p2p scratch: a stream region per rank (its own unused,
// so that a region's offset is the sender's rank), two in-place counters per (rank, lane)
// (coll::p2pInPlaceCount), two line slots per rank (coll::p2pLineSlotOffset), five words of line
// counters per rank and the count of finished blocks (coll::P2PLineCounters).
func p2pScratchBytes(nRanks int) uint64 {
	return roundUp(uint64(nRanks)*(p2pStreamBytes+p2pLanes*2*8+2*p2pLineSlotBytes+5*8)+8, peerAllocAlign)
}

// p2pPeer is what one call does with one peer.
type p2pPeer struct {
	send, recv           cuda.DevicePtr
	sendBytes, recvBytes uint64
	hasSend, hasRecv     bool
}

// SendRecv queues the sends and receives of ops on stream s and returns once they are queued: the
// transfers of at most p2pLinesMaxBytes as LL128 lines where lines are on (one launch), the rest
// on the lanes (another; planP2P). NCCL's semantics: a call holds at most one send and one
// receive per peer (more are refused with ErrInvalidArgument); its transfers with different
// peers progress together, so a call may send to one peer and receive from another whose call
// does the same without deadlock; a send to this rank needs a receive from this rank of the same
// size in the same call (a copy). The k-th send from rank a to rank b meets the k-th receive of b
// from a, whatever other calls (point-to-point or collective) the two made in between; the
// receive's count must be the send's (in bytes). A call waits only for the peers it names, at
// most 16 (maxP2PPeers), this rank included. A send to a peer and a receive from it of the same
// size on the same buffer exchange it in place (sendrecv.cu and sendrecv_ll128.cu; across hosts
// every send is staged before any receive lands).
func (c *Comm) SendRecv(ops []P2POp, s cuda.Stream) error {
	fail := func(err error) error { return fmt.Errorf("sendrecv of %d operations: %w", len(ops), err) }
	peers, order, err := planSendRecv(ops, c.rank, c.nRanks)
	if err != nil {
		return fail(err)
	}
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.p2p(peers, order, s) }))
	}
	if err := c.launchP2P(peers, order, s); err != nil {
		return fail(err)
	}
	return nil
}

// planSendRecv checks ops and gathers them by peer: peers[r] is what the call does with rank r,
// order the peers named, in the order of their first operation.
func planSendRecv(ops []P2POp, rank, nRanks int) (map[int]*p2pPeer, []int, error) {
	peers := map[int]*p2pPeer{}
	var order []int
	for i, op := range ops {
		what := "receive from"
		if op.Send {
			what = "send to"
		}
		where := fmt.Sprintf("operation %d (%s rank %d, %d %s)", i, what, op.Peer, op.Count, op.Type)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: %s: %w", where, fmt.Sprintf(format, args...), errs.ErrInvalidArgument)
		}
		if op.Peer < 0 || op.Peer >= nRanks {
			return nil, nil, bad("peer out of range [0, %d)", nRanks)
		}
		if err := checkCall(op.Buf, op.Buf, op.Count, op.Type); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		bytes := uint64(op.Count) * uint64(op.Type.Size())
		p := peers[op.Peer]
		if p == nil {
			p = &p2pPeer{}
			peers[op.Peer] = p
			order = append(order, op.Peer)
		}
		if op.Send {
			if p.hasSend {
				return nil, nil, bad("a second send to the same peer in one call")
			}
			p.hasSend, p.send, p.sendBytes = true, op.Buf, bytes
		} else {
			if p.hasRecv {
				return nil, nil, bad("a second receive from the same peer in one call")
			}
			p.hasRecv, p.recv, p.recvBytes = true, op.Buf, bytes
		}
	}
	if len(order) > maxP2PPeers {
		return nil, nil, fmt.Errorf("%d peers in one call, at most %d: %w", len(order), maxP2PPeers, errs.ErrInvalidArgument)
	}
	if self := peers[rank]; self != nil {
		switch {
		case self.hasSend != self.hasRecv:
			return nil, nil, fmt.Errorf("a send to this rank needs a receive from it in the same call, and the reverse: %w",
				errs.ErrInvalidArgument)
		case self.sendBytes != self.recvBytes:
			return nil, nil, fmt.Errorf("send to this rank of %d bytes, receive of %d: %w", self.sendBytes, self.recvBytes,
				errs.ErrInvalidArgument)
		case self.send != self.recv && overlap(self.send, self.recv, self.sendBytes, self.recvBytes):
			return nil, nil, fmt.Errorf("send and receive buffers of this rank overlap without being the same: %w",
				errs.ErrInvalidArgument)
		}
	}
	return peers, order, nil
}

// AlltoAll sends block j of send (count elements of type dt at element j*count) to rank j and
// receives block i of recv from rank i (the block of rank i's send for this rank), on every rank:
// NCCL's ncclAlltoAll. In place when send == recv; buffers that overlap otherwise are refused.
// Queued on stream s; returns once queued. On one host it is one collective kernel (chooseAlltoAll):
// blocks of up to alltoAllLL128MaxBytes in LL128 lines where the GPUs are joined by NVLink, else
// in rounds through the peers' scratch (alltoall_put.cu). Across hosts it is a SendRecv of every
// rank (spanning.go), every block for another host staged before any block lands; on one rank, a
// copy on the p2p lanes.
func (c *Comm) AlltoAll(send, recv cuda.DevicePtr, count int, dt DataType, s cuda.Stream) error {
	fail := func(err error) error { return fmt.Errorf("alltoall of %d %s per rank: %w", count, dt, err) }
	if err := checkCall(send, recv, count, dt); err != nil {
		return fail(err)
	}
	bytes := uint64(count) * uint64(dt.Size())
	total := bytes * uint64(c.nRanks)
	if count > 0 && send != recv && overlap(send, recv, total, total) {
		return fail(fmt.Errorf("send and receive buffers overlap without being the same: %w", errs.ErrInvalidArgument))
	}
	if count == 0 {
		return nil
	}
	if p, ok := chooseAlltoAll(bytes, c.nRanks, c.maxGrid, c.lines); ok && c.span == nil {
		x := call{kind: callSendRecv, args: c.args, local: recv, bytes: bytes, choose: func(registered) plan { return p }}
		x.args.Send, x.args.Recv, x.args.Count = uintptr(send), uintptr(recv), bytes
		if err := c.launch(&x, s); err != nil {
			return fail(err)
		}
		return nil
	}
	// Every distance in one call: the path across hosts takes any number of peers; on one rank
	// (chooseAlltoAll takes two or more) it is the one block, copied on the p2p lanes.
	peers, order := alltoAllPeers(ringSteps(c.rank, c.nRanks, 0, c.nRanks), send, recv, bytes)
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.p2p(peers, order, s) }))
	}
	if err := c.launchP2P(peers, order, s); err != nil {
		return fail(err)
	}
	return nil
}

// alltoAllPeers is what AlltoAll does with each peer at the distances of steps: block `to` of send
// to rank to, block `from` of recv from rank from (bytes each), the peers in the order first named.
func alltoAllPeers(steps []ringStep, send, recv cuda.DevicePtr, bytes uint64) (map[int]*p2pPeer, []int) {
	peers := map[int]*p2pPeer{}
	var order []int
	at := func(base cuda.DevicePtr, r int) cuda.DevicePtr { return base + cuda.DevicePtr(uint64(r)*bytes) }
	peer := func(r int) *p2pPeer {
		if peers[r] == nil {
			peers[r], order = &p2pPeer{}, append(order, r)
		}
		return peers[r]
	}
	for _, g := range steps {
		to := peer(g.to)
		to.hasSend, to.send, to.sendBytes = true, at(send, g.to), bytes
		from := peer(g.from)
		from.hasRecv, from.recv, from.recvBytes = true, at(recv, g.from), bytes
	}
	return peers, order
}

// ringStep is one distance d of AlltoAll: send to rank + d, receive from rank - d.
type ringStep struct{ to, from int }

// ringSteps are the distances [d0, d1) of AlltoAll around the ring from rank.
func ringSteps(rank, nRanks, d0, d1 int) []ringStep {
	var steps []ringStep
	for d := d0; d < d1; d++ {
		steps = append(steps, ringStep{to: (rank + d) % nRanks, from: (rank - d + nRanks) % nRanks})
	}
	return steps
}

// p2pLaunches are the arguments of a call's launches: the lines kernel's for the transfers of at
// most p2pLinesMaxBytes (where lines are on; lineBytes, the larger of their bytes sent and
// received, sizes its grid, 0 for no launch), then the lanes kernel's for the rest (items, its
// (peer, direction, lane) items: a block each up to the Comm's maxGrid, 0 for no launch).
type p2pLaunches struct {
	lines, lanes p2pArgs
	lineBytes    uint64
	items        int
}

// planP2P splits the transfers with the peers (in order) between the launches: by its size alone,
// so that a transfer's sender and receiver agree.
// A copy to this rank goes with the lines when that small and a peer's transfer goes there too
// (no peer has to agree; and the lines kernel keeps counters in the p2p scratch, which a
// communicator of one rank does not have).
func planP2P(base p2pArgs, peers map[int]*p2pPeer, order []int, rank int, lines bool) p2pLaunches {
	l := p2pLaunches{lines: base, lanes: base}
	l.lanes.MaxLanes = p2pLanes
	small := func(bytes uint64) bool { return lines && bytes > 0 && bytes <= p2pLinesMaxBytes }
	peerLines := false
	for _, r := range order {
		if p := peers[r]; r != rank && (small(p.sendBytes) || small(p.recvBytes)) {
			peerLines = true
		}
	}
	var lineSent, lineReceived uint64
	for _, r := range order {
		p := peers[r]
		inLines := small
		if r == rank {
			p.recvBytes = p.sendBytes // checked equal; the copy is counted once
			inLines = func(bytes uint64) bool { return peerLines && small(bytes) }
		}
		if p.sendBytes == 0 && p.recvBytes == 0 || r == rank && p.send == p.recv {
			// Nothing moves: a zero-count transfer changes no state, on either side, and a copy to
			// this rank in place is already where it goes.
			continue
		}
		line := p2pEntry{Peer: uint64(r), Send: uintptr(p.send), Recv: uintptr(p.recv)}
		lane := line
		if inLines(p.sendBytes) {
			line.SendBytes, lineSent = p.sendBytes, lineSent+p.sendBytes
		} else {
			lane.SendBytes = p.sendBytes
		}
		if inLines(p.recvBytes) {
			line.RecvBytes, lineReceived = p.recvBytes, lineReceived+p.recvBytes
		} else {
			lane.RecvBytes = p.recvBytes
		}
		if line.SendBytes > 0 || line.RecvBytes > 0 {
			l.lines.Entries[l.lines.NEntries] = line
			l.lines.NEntries++
		}
		if lane.SendBytes > 0 || lane.RecvBytes > 0 {
			l.lanes.Entries[l.lanes.NEntries] = lane
			l.lanes.NEntries++
			l.items += laneCount(lane.SendBytes, p2pLanes)
			if r != rank {
				l.items += laneCount(lane.RecvBytes, p2pLanes)
			}
		}
	}
	l.lineBytes = max(lineSent, lineReceived)
	return l
}

// launchP2P queues the launches of the p2p kernels for the peers (in order; at most maxP2PPeers):
// the lines kernel, then the lanes kernel.
func (c *Comm) launchP2P(peers map[int]*p2pPeer, order []int, s cuda.Stream) error {
	l := planP2P(c.p2pArgs, peers, order, c.rank, c.lines)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkUsable(); err != nil {
		return err
	}
	if l.lineBytes == 0 && l.items == 0 {
		return nil
	}
	c.abort.lastCall.Store(uint32(callSendRecv))
	if l.lineBytes > 0 {
		grid := uint32(lineBlocks(l.lineBytes, c.maxGrid))
		if err := c.launchKernel(p2pLinesKernel, grid, packetThreads, s, l.lines.bytes()); err != nil {
			return err
		}
	}
	if l.items == 0 {
		return nil
	}
	return c.launchKernel(p2pKernel, uint32(min(l.items, max(c.maxGrid, 1))), p2pThreads, s, l.lanes.bytes())
}

// connectP2P allocates and exchanges the p2p scratch, builds a semaphore per (peer, direction,
// lane) and uploads their channels' device handles; it fills c.p2pArgs' shared fields. peers and
// conns are the peers' ranks and connections, by peer index.
func (c *Comm) connectP2P(ctx context.Context, peers []int, conns []*core.Connection) error {
	size := p2pScratchBytes(c.nRanks)
	var scratch cuda.DevicePtr
	if err := c.onGPU(func() (err error) { scratch, err = c.alloc(int(size)); return err }); err != nil {
		return fmt.Errorf("p2p scratch of %d bytes: %w", size, err)
	}
	c.p2pArgs.Scratch = uintptr(scratch)
	mine, err := c.comm.Context().RegisterMemory(scratch, size, core.TransportP2P)
	if err != nil {
		return fmt.Errorf("register p2p scratch: %w", err)
	}
	theirs, err := c.exchangeMemory(ctx, mine, p2pMemoryTag)
	if err != nil {
		return fmt.Errorf("exchange p2p scratch: %w", err)
	}
	// Futures in [peer index][direction][lane] order, the order of the device handles.
	futures := make([]core.Future[*core.Semaphore], 0, len(peers)*2*p2pLanes)
	for i, r := range peers {
		for dir := range 2 { // 0: this rank sends to r; 1: r sends to this rank
			lowerSends := (dir == 0) == (c.rank < r)
			for lane := range p2pLanes {
				tag := p2pSemaphoreTag + 2*lane
				if !lowerSends {
					tag++
				}
				futures = append(futures, c.comm.BuildSemaphore(conns[i], r, tag))
			}
		}
	}
	handles := make([]channels.MemoryChannelDeviceHandle, len(futures))
	for k, f := range futures {
		p := k / (2 * p2pLanes)
		sem, err := f.Get(ctx)
		if err != nil {
			return fmt.Errorf("p2p semaphore of lane %d with rank %d: %w", k%p2pLanes, peers[p], err)
		}
		c.sems = append(c.sems, sem)
		ch, err := channels.NewMemoryChannel(sem, theirs[peers[p]], mine, scratch)
		if err != nil {
			return fmt.Errorf("p2p channel of lane %d with rank %d: %w", k%p2pLanes, peers[p], err)
		}
		handles[k] = ch.DeviceHandle()
	}
	ch, err := uploadNew(c, handles)
	if err != nil {
		return fmt.Errorf("p2p channel handles: %w", err)
	}
	c.p2pArgs.Channels = uintptr(ch)
	return nil
}
