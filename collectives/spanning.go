package collectives

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Collectives whose ranks span hosts. When the ranks of a Comm are on more than one host
// (core.HostHash; MSCCLPP_HOSTID makes ranks of one machine separate hosts), New builds a spanning
// path instead of the one-host channels:
//
//   - a local Comm over the ranks of this rank's host (a bootstrap of their own, whose root the
//     host's first rank runs, and CUDA IPC between them), which runs the usual kernels;
//   - the step across hosts over libfabric (hostlink.go: links with every other rank on an
//     endpoint of their own, TransportIB, host memory to host memory), with the bytes staged
//     through pinned host memory and reduced on the CPU.
//
// AllReduce is hierarchical: the local Comm reduces inside the host (NVLink); when every host has
// the same number m of ranks (and the count is at least m), rank i of a host then exchanges shard
// i of its host's result (a 1/m of the elements) with rank i of every other host, reduces the
// hosts' shards in host order, and the local Comm all-gathers the shards: each rank moves 1/m of
// the data across hosts, the host's ranks in parallel. Otherwise every rank exchanges its host's
// whole result with one rank of every other host (the rank with its local index, modulo that
// host's size). Either way the hosts' results are reduced in host order, so every rank computes
// the same bits; avg sums and divides once at the end. ReduceScatter reduce-scatters inside the
// host first, so that each rank sends only the blocks of its local index across (hosts of equal
// size; else it is an AllReduce into a temporary buffer). AllGather swaps parts between ranks of
// the same local index, then gathers inside the host (hosts of equal size; else every part goes
// to every rank); Broadcast goes from
// the root to one relay per host, then inside each host. SendRecv and
// AlltoAll move the transfers with peers of this host on the local Comm's kernel and those with
// peers on other hosts over the links, whose streams keep a pair's bytes in order.
//
// A call waits for its stream, moves the data through the host and returns when done (so it
// cannot be captured in a CUDA graph: the capture is refused by the driver and the call fails
// naming it). It moves its bytes in pieces (inPieces): every piece's copy out of GPU memory is
// queued at once, each followed by an event; a piece crosses once its event is done, is reduced
// (AllReduce, ReduceScatter) and queued back into GPU memory, so that the copy engines move
// pieces while the network moves others. The moves (AllGather, Broadcast, SendRecv, AlltoAll)
// go in pieces of acrossPieceBytes, the reductions in one piece (reductionPieces says why).
// Register is refused across hosts (ErrAcrossHosts).

// ErrAcrossHosts: an operation this version does not run when the ranks span hosts.
var ErrAcrossHosts = errs.New(errs.ErrInvalidUsage, "not supported when the ranks span hosts")

// spanSetupTag is the bootstrap tag of newSpanning's exchange (the host's bootstrap id).
const spanSetupTag = core.CollectivesTagBase

// spanning is a Comm's path when its ranks span hosts.
type spanning struct {
	boot     *bootstrap.TCP // the job's bootstrap
	rank     int
	nRanks   int
	hostOf   []int   // host index of every rank (hosts numbered in the order of their first rank)
	hosts    [][]int // the ranks of every host, ascending
	local    *Comm   // the ranks of this host
	localB   *bootstrap.TCP
	localCom *core.Communicator
	pctx     cuda.Context
	links    *hostLinks // with every other rank, over libfabric
	staged   staging    // pinned host memory of the calls (stage)
	// scratch is device memory of the sharded AllReduce and the hierarchical AllGather, grown
	// on demand.
	scratch      cuda.DevicePtr
	scratchBytes uint64
	events       []cuda.Event // the copies out of GPU memory's, one per piece (eventsOf, copyOut)
}

// hostsOf groups ranks by host from every rank's host hash, hosts numbered in the order of their
// first rank.
func hostsOf(hashes []uint64) (hostOf []int, hosts [][]int) {
	index := map[uint64]int{}
	hostOf = make([]int, len(hashes))
	for r, h := range hashes {
		i, ok := index[h]
		if !ok {
			i = len(hosts)
			index[h] = i
			hosts = append(hosts, nil)
		}
		hostOf[r] = i
		hosts[i] = append(hosts[i], r)
	}
	return hostOf, hosts
}

// crossHostPeers says with whom rank swaps its host's AllReduce result: rank (host g, local
// index i) takes host h's result from h's rank i mod |h|, so rank (local index j on its host m)
// sends it to every rank i of every other host with i mod |m| == j. recvFrom[h] is the rank it
// takes host h's result from (itself for its own host).
func crossHostPeers(hosts [][]int, hostOf []int, rank int) (sendTo, recvFrom []int) {
	me := hostOf[rank]
	myIndex := slices.Index(hosts[me], rank)
	recvFrom = make([]int, len(hosts))
	for h, ranks := range hosts {
		recvFrom[h] = ranks[myIndex%len(ranks)]
		if h == me {
			continue
		}
		for i, r := range ranks {
			if i%len(hosts[me]) == myIndex {
				sendTo = append(sendTo, r)
			}
		}
	}
	return sendTo, recvFrom
}

// newSpanning builds the spanning path of rank b.Rank(): a bootstrap among the ranks of its host
// (the host's first rank runs its root and sends its id to the others over b), a Communicator on
// ctxCore over it and a local Comm on device.
func newSpanning(ctx context.Context, b *bootstrap.TCP, ctxCore *core.Context, device int, hashes []uint64,
	pctx cuda.Context) (_ *spanning, err error) {
	s := &spanning{boot: b, rank: b.Rank(), nRanks: b.Size(), pctx: pctx}
	s.hostOf, s.hosts = hostsOf(hashes)
	mine := s.hosts[s.hostOf[s.rank]]
	localRank := slices.Index(mine, s.rank)
	defer func() {
		if err != nil { // s, not the result, which the failing return has set to nil
			err = errors.Join(err, s.close())
		}
	}()
	tag := spanSetupTag
	var id bootstrap.UniqueID
	var root *bootstrap.Root
	if localRank == 0 {
		if root, err = bootstrap.NewRoot(bootstrap.Options{}); err != nil {
			return nil, fmt.Errorf("root of host %d's ranks: %w", s.hostOf[s.rank], err)
		}
		defer root.Close()
		id = root.ID()
		for _, r := range mine[1:] {
			if err := b.Send(ctx, r, tag, id[:]); err != nil {
				return nil, fmt.Errorf("send host %d's bootstrap id to rank %d: %w", s.hostOf[s.rank], r, err)
			}
		}
	} else if err := b.RecvInto(ctx, mine[0], tag, id[:]); err != nil {
		return nil, fmt.Errorf("receive host %d's bootstrap id from rank %d: %w", s.hostOf[s.rank], mine[0], err)
	}
	if s.localB, err = bootstrap.Join(ctx, id, localRank, len(mine), bootstrap.Options{}); err != nil {
		return nil, fmt.Errorf("bootstrap of host %d's %d ranks: %w", s.hostOf[s.rank], len(mine), err)
	}
	s.localCom = core.NewCommunicator(s.localB, ctxCore)
	if s.local, err = New(ctx, s.localCom, device); err != nil {
		return nil, fmt.Errorf("collectives among host %d's %d ranks: %w", s.hostOf[s.rank], len(mine), err)
	}
	others := linkPeers(s.hosts, s.hostOf, s.rank)
	if s.links, err = newHostLinks(ctx, b, others); err != nil {
		return nil, fmt.Errorf("network links with %d ranks: %w", len(others), err)
	}
	return s, nil
}

// close releases the local Comm and bootstrap.
func (s *spanning) close() error {
	errList := []error{s.freeStaging(), s.freeScratch(), s.destroyEvents()}
	if s.links != nil {
		errList = append(errList, s.links.close())
	}
	if s.local != nil {
		errList = append(errList, s.local.Close())
	}
	if s.localB != nil {
		errList = append(errList, s.localB.Close())
	}
	s.local, s.localB, s.links = nil, nil, nil
	return errors.Join(errList...)
}

// staging is a view of the pinned host memory the calls stage their bytes through.
type staging struct {
	p unsafe.Pointer
	b []byte
}

// stagingQuantum rounds the staging buffer's size up, so that calls of growing sizes do not
// reallocate it each time.
const stagingQuantum = 1 << 20

// stage returns n bytes of the Comm's staging buffer (pinned host memory, one per Comm, grown on
// demand and freed by close). A call uses it until it returns.
func (s *spanning) stage(n uint64) (*staging, error) {
	if uint64(len(s.staged.b)) < n {
		if err := s.freeStaging(); err != nil {
			return nil, err
		}
		size := roundUp(n, stagingQuantum)
		err := s.pctx.Do(func() error {
			var err error
			s.staged.p, err = cuda.MemHostAlloc(int(size))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("pinned host memory of %d bytes: %w", size, err)
		}
		s.staged.b = unsafe.Slice((*byte)(s.staged.p), size)
		if s.links != nil {
			if err := s.links.useSource(s.staged.b); err != nil { // sends go from it without a copy
				return nil, err
			}
		}
	}
	return &staging{p: s.staged.p, b: s.staged.b[:n]}, nil
}

// freeStaging frees the staging buffer, if any.
func (s *spanning) freeStaging() error {
	if s.staged.p == nil {
		return nil
	}
	p := s.staged.p
	s.staged = staging{}
	var unregister error
	if s.links != nil {
		unregister = s.links.useSource(nil) // before the memory goes
	}
	if err := s.pctx.Do(func() error { return cuda.MemFreeHost(p) }); err != nil {
		return errors.Join(unregister, fmt.Errorf("free pinned host memory: %w", err))
	}
	return unregister
}

// copyAndWait copies n bytes from src to dst (device or pinned host memory) on stream str and
// waits for the stream: everything queued before is done too.
func (s *spanning) copyAndWait(dst, src cuda.DevicePtr, n uint64, str cuda.Stream) error {
	return s.copiesAndWait([]hostCopy{{dst, src, n}}, str)
}

// hostCopy is one copy of copiesAndWait.
type hostCopy struct {
	dst, src cuda.DevicePtr
	n        uint64
}

// queueCopies queues the copies on stream str, in order, skipping those of no bytes; the Comm's
// context must be current (pctx.Do).
func queueCopies(copies []hostCopy, str cuda.Stream) error {
	for _, c := range copies {
		if c.n == 0 {
			continue
		}
		if err := cuda.MemcpyAsync(c.dst, c.src, int(c.n), str); err != nil {
			return err
		}
	}
	return nil
}

// copiesAndWait queues the copies on stream str, in order, and waits for the stream.
func (s *spanning) copiesAndWait(copies []hostCopy, str cuda.Stream) error {
	return s.pctx.Do(func() error {
		if err := queueCopies(copies, str); err != nil {
			return err
		}
		if err := str.Synchronize(); err != nil {
			return fmt.Errorf("%w (across hosts, a call waits for its stream: it cannot be captured in a CUDA graph)", err)
		}
		return nil
	})
}

func hostPtr(st *staging, off uint64) cuda.DevicePtr {
	return cuda.DevicePtr(uintptr(st.p) + uintptr(off))
}

// allReduce runs AllReduce across hosts (see the comment at the top of this file).
func (s *spanning) allReduce(send, recv cuda.DevicePtr, count int, dt DataType, op Op, str cuda.Stream) error {
	me := s.hostOf[s.rank]
	if err := s.local.AllReduce(send, recv, count, dt, combining(op), str); err != nil {
		return fmt.Errorf("inside host %d: %w", me, err)
	}
	m := len(s.hosts[me])
	if m == 1 || count < m || !equalHosts(s.hosts) {
		sendTo, recvFrom := crossHostPeers(s.hosts, s.hostOf, s.rank)
		return s.reduceAcross(recv, recv, count, dt, op, sendTo, recvFrom, str)
	}
	// Sharded: shard i is elements [i*shard, min((i+1)*shard, count)) (the last ones short or empty).
	es := uint64(dt.Size())
	shard := (count + m - 1) / m
	i := slices.Index(s.hosts[me], s.rank)
	lo := min(i*shard, count)
	sendTo, recvFrom := shardPeers(s.hosts, me, i)
	scratch, err := s.scratchOf(uint64(m*shard) * es)
	if err != nil {
		return err
	}
	mine := scratch + cuda.DevicePtr(uint64(i*shard)*es)
	if err := s.reduceAcross(recv+cuda.DevicePtr(uint64(lo)*es), mine, min(shard, count-lo), dt, op, sendTo, recvFrom, str); err != nil {
		return err
	}
	if err := s.local.AllGather(mine, scratch, shard, dt, str); err != nil {
		return fmt.Errorf("inside host %d: gather the shards: %w", me, err)
	}
	return s.copyAndWait(recv, scratch, uint64(count)*es, str)
}

// linkPeers lists the ranks that rank exchanges bytes with over the links, in rank order: on
// hosts of equal size the ranks of the other hosts (the collectives move everything inside a host
// on the local Comm), else every other rank (AllGather's flat path sends to every rank). Each
// link holds its buffers (a few MiB) for the Comm's life, so none is made that no call uses.
func linkPeers(hosts [][]int, hostOf []int, rank int) []int {
	var peers []int
	for r := range hostOf {
		if r != rank && (!equalHosts(hosts) || hostOf[r] != hostOf[rank]) {
			peers = append(peers, r)
		}
	}
	return peers
}

// equalHosts reports whether every host has as many ranks as the first.
func equalHosts(hosts [][]int) bool {
	return !slices.ContainsFunc(hosts, func(r []int) bool { return len(r) != len(hosts[0]) })
}

// shardPeers, for the sharded AllReduce on hosts of equal size: local index i of host me swaps
// its shard with local index i of every other host (sendTo), and takes host h's shard from
// recvFrom[h] (itself for host me).
func shardPeers(hosts [][]int, me, i int) (sendTo, recvFrom []int) {
	recvFrom = make([]int, len(hosts))
	for h, ranks := range hosts {
		recvFrom[h] = ranks[i]
		if h != me {
			sendTo = append(sendTo, ranks[i])
		}
	}
	return sendTo, recvFrom
}

// acrossPieceBytes: the calls across hosts move their bytes in pieces of at most this many, so
// that the copies out of GPU memory of the next pieces and back into it of the ones before run
// while a piece crosses the network.
const acrossPieceBytes = 4 << 20

// reductionPieces cuts the n bytes of a reduction across hosts (elements of size bytes) into
// its pieces: one. In pieces of acrossPieceBytes the reductions ran 0.87-0.95x as fast at 32-128
// MiB over tcp (2 x H200, each rank its own host, S32), level over shm: while a rank reduces a
// piece on the CPU nothing moves on the network (the providers progress only when called), and a
// rank of host 0 waits for a piece's sends before reducing into it (hostReduction.run), so the
// pieces only add steps.
func reductionPieces(n, size int) []piece { return piecesOf(n, size, n) }

// piece is the bytes [lo, hi) of a part that crosses hosts in pieces.
type piece struct{ lo, hi int }

// piecesOf cuts n bytes into pieces of at most limit bytes, whole elements of size bytes each.
func piecesOf(n, size, limit int) []piece {
	limit = max(limit/size*size, size)
	var ps []piece
	for lo := 0; lo < n; lo += limit {
		ps = append(ps, piece{lo, min(lo+limit, n)})
	}
	return ps
}

// inPieces moves pieces over the links in turn: ready(j) (piece j's bytes are in staging memory),
// the move of transfers(j) (exchange without its flush: the writes of every piece are flushed
// once, at the end), then done(j) (which queues the piece's copies back into GPU memory, after
// reducing it). The copies out of and into GPU memory run on the copy engines while the next
// pieces move; the host's work stays in order with the moves (so a reduction stops the network:
// reductionPieces). A failed ready or move
// ends the call (the peers then fail on MSCCLPP_NET_TIMEOUT, not on wrong bytes); after a failed
// done the pieces still move, for the peers, and the call returns that error at the end. ready
// and done may be nil.
func (h *hostLinks) inPieces(ctx context.Context, n int, ready func(j int) error, transfers func(j int) []transfer,
	done func(j int) error) error {
	var used []transfer // a transfer of each (stream, peer) that moved bytes: flushed once, at the end
	var failed error    // the first done that failed
	for j := range n {
		if ready != nil {
			if err := ready(j); err != nil {
				return err
			}
		}
		ts := transfers(j)
		if err := h.move(ctx, ts); err != nil {
			return err
		}
		for _, t := range ts {
			if (len(t.send) > 0 || len(t.recv) > 0) && !slices.ContainsFunc(used, func(u transfer) bool {
				return u.stream == t.stream && u.peer == t.peer
			}) {
				used = append(used, t)
			}
		}
		if done != nil && failed == nil {
			failed = done(j)
		}
	}
	return errors.Join(failed, h.flush(ctx, used))
}

// copyOut queues, on str, the copies of each of n pieces out of GPU memory into staging memory
// (copies(j)), each piece's followed by an event, and returns what waits for piece j's event:
// inPieces' ready.
func (s *spanning) copyOut(str cuda.Stream, n int, copies func(j int) []hostCopy) (func(j int) error, error) {
	events, err := s.eventsOf(n)
	if err != nil {
		return nil, err
	}
	err = s.pctx.Do(func() error {
		for j := range n {
			if err := queueCopies(copies(j), str); err != nil {
				return err
			}
			if err := events[j].Record(str); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("copy out of GPU memory: %w", err)
	}
	return func(j int) error {
		if err := s.pctx.Do(events[j].Synchronize); err != nil {
			return fmt.Errorf("%w (across hosts, a call waits for its copies: it cannot be captured in a CUDA graph)", err)
		}
		return nil
	}, nil
}

// pieceCopy is the copy of piece p of src to the same place in dst.
func pieceCopy(dst, src cuda.DevicePtr, p piece) hostCopy {
	return hostCopy{dst + cuda.DevicePtr(p.lo), src + cuda.DevicePtr(p.lo), uint64(p.hi - p.lo)}
}

// partCopies are the copies of piece p of each of n parts of partBytes bytes, laid end to end
// from src, to the same places from dst.
func partCopies(dst, src cuda.DevicePtr, partBytes uint64, n int, p piece) []hostCopy {
	copies := make([]hostCopy, n)
	for k := range copies {
		off := cuda.DevicePtr(uint64(k) * partBytes)
		copies[k] = pieceCopy(dst+off, src+off, p)
	}
	return copies
}

// copyIn queues copies from staging memory back to device memory on str (inPieces' done).
func (s *spanning) copyIn(str cuda.Stream, copies ...hostCopy) error {
	return s.pctx.Do(func() error { return queueCopies(copies, str) })
}

// reduceAcross reduces n elements of this host's result at src (on stream str) across hosts: it
// sends them to the ranks sendTo, takes host h's from rank recvFrom[h] (this rank for its own
// host), reduces the hosts' in host order (avg: then divides by the rank count), writes the
// result to dst and waits for the stream. It goes in the pieces of reductionPieces
// (hostReduction.run): each piece is copied into staging memory as soon as the stream gets there,
// crosses, is reduced and queued back to dst.
func (s *spanning) reduceAcross(src, dst cuda.DevicePtr, n int, dt DataType, op Op, sendTo, recvFrom []int, str cuda.Stream) error {
	bytes := n * dt.Size()
	st, err := s.stage(uint64(bytes) * uint64(len(s.hosts)))
	if err != nil {
		return err
	}
	me := s.hostOf[s.rank]
	r := hostReduction{dt: dt, op: op, nHosts: len(s.hosts), me: me, nRanks: s.nRanks, sendTo: sendTo, recvFrom: recvFrom,
		part: func(h int) []byte { return st.b[h*bytes : (h+1)*bytes] }}
	pieces := reductionPieces(bytes, dt.Size())
	ready, err := s.copyOut(str, len(pieces), func(j int) []hostCopy {
		return []hostCopy{pieceCopy(hostPtr(st, uint64(me*bytes)), src, pieces[j])}
	})
	if err != nil {
		return err
	}
	done := func(_ int, p piece) error {
		return s.copyIn(str, pieceCopy(dst, hostPtr(st, 0), p))
	}
	return errors.Join(r.run(context.Background(), s.links, pieces, ready, done), s.copiesAndWait(nil, str))
}

// hostReduction is the host side of reduceAcross: every host's part of the result in staging
// memory (part(h); this host's own in part(me)), exchanged over the links and reduced into
// part(0) in host order.
type hostReduction struct {
	dt       DataType
	op       Op
	nHosts   int
	me       int // this rank's host
	nRanks   int // avg divides by it
	part     func(h int) []byte
	sendTo   []int // the ranks this host's part goes to
	recvFrom []int // the rank host h's part comes from (this rank for host me)
}

// run moves the pieces over the links (inPieces, with ready): piece j of part(me) goes to
// sendTo, host h's comes from recvFrom[h]; once a piece has moved, the hosts' bytes of it are
// reduced into part(0) in host order and done(j, p) takes them.
func (r hostReduction) run(ctx context.Context, links *hostLinks, pieces []piece, ready func(j int) error,
	done func(j int, p piece) error) error {
	transfers := func(j int) []transfer {
		p := pieces[j]
		var ts transferSet
		for _, to := range r.sendTo {
			ts.send(to, r.part(r.me)[p.lo:p.hi])
		}
		for h, from := range r.recvFrom {
			if h != r.me {
				ts.recv(from, r.part(h)[p.lo:p.hi])
			}
		}
		return ts.list
	}
	reduce := func(j int) error {
		p := pieces[j]
		if r.me == 0 && len(r.sendTo) > 0 {
			// part(0), which the reduction overwrites, is this host's own part, whose piece j
			// the links may still be reading (shm reads a write's source when the peer takes
			// it): its writes must complete first.
			if err := links.flush(ctx, transfers(j)); err != nil {
				return err
			}
		}
		if err := reduceHosts(r.dt, r.op, r.nHosts, func(h int) []byte { return r.part(h)[p.lo:p.hi] }, r.nRanks); err != nil {
			return err
		}
		return done(j, p)
	}
	return links.inPieces(ctx, len(pieces), ready, transfers, reduce)
}

// eventsOf returns n of the Comm's events (made on demand, destroyed by close).
func (s *spanning) eventsOf(n int) ([]cuda.Event, error) {
	for len(s.events) < n {
		var e cuda.Event
		if err := s.pctx.Do(func() (err error) { e, err = cuda.NewEvent(); return err }); err != nil {
			return nil, fmt.Errorf("an event for the copies across hosts: %w", err)
		}
		s.events = append(s.events, e)
	}
	return s.events[:n], nil
}

// scratchOf returns the Comm's device scratch of at least n bytes, growing it.
func (s *spanning) scratchOf(n uint64) (cuda.DevicePtr, error) {
	if s.scratchBytes >= n {
		return s.scratch, nil
	}
	if err := s.freeScratch(); err != nil {
		return 0, err
	}
	size := roundUp(n, stagingQuantum)
	if err := s.pctx.Do(func() error {
		var err error
		s.scratch, err = cuda.MemAlloc(int(size))
		return err
	}); err != nil {
		return 0, fmt.Errorf("device scratch of %d bytes: %w", size, err)
	}
	s.scratchBytes = size
	return s.scratch, nil
}

// freeScratch frees the device scratch, if any.
func (s *spanning) freeScratch() error {
	if s.scratch == 0 {
		return nil
	}
	p := s.scratch
	s.scratch, s.scratchBytes = 0, 0
	return s.pctx.Do(func() error { return cuda.MemFree(p) })
}

// destroyEvents destroys the events of eventsOf.
func (s *spanning) destroyEvents() error {
	events := s.events
	s.events = nil
	if len(events) == 0 {
		return nil
	}
	return s.pctx.Do(func() error {
		var errList []error
		for _, e := range events {
			errList = append(errList, e.Destroy())
		}
		return errors.Join(errList...)
	})
}

// reduceScatter runs ReduceScatter across hosts. On hosts of equal size m it is hierarchical:
// the input's blocks are arranged by local index (group i: the blocks of the ranks with local
// index i, in host order), the local Comm reduce-scatters the groups (local rank i gets its
// host's sum of group i), local rank i sends block h of its group to local rank i of host h and
// takes block me from each of them, and the hosts' contributions are reduced in host order: each
// rank sends (hosts-1) blocks across hosts. On hosts of different sizes it is an AllReduce of the
// whole input into a temporary buffer, of which this rank keeps its part.
func (s *spanning) reduceScatter(send, recv cuda.DevicePtr, recvCount int, dt DataType, op Op, str cuda.Stream) error {
	me := s.hostOf[s.rank]
	m := len(s.hosts[me])
	if m == 1 || !equalHosts(s.hosts) {
		return s.reduceScatterFlat(send, recv, recvCount, dt, op, str)
	}
	bytes := uint64(recvCount) * uint64(dt.Size())
	nHosts := len(s.hosts)
	groupBytes := bytes * uint64(nHosts)
	i := slices.Index(s.hosts[me], s.rank)
	// scratch: the groups (m of them, group j at j*groupBytes), then this rank's reduced group.
	scratch, err := s.scratchOf(groupBytes*uint64(m) + groupBytes)
	if err != nil {
		return err
	}
	reduced := scratch + cuda.DevicePtr(groupBytes*uint64(m))
	copies := make([]hostCopy, s.nRanks)
	for p, r := range byLocalIndex(s.hosts) { // group j is positions j*nHosts to (j+1)*nHosts-1
		copies[p] = hostCopy{scratch + cuda.DevicePtr(uint64(p)*bytes), send + cuda.DevicePtr(uint64(r)*bytes), bytes}
	}
	if err := s.copiesAndWait(copies, str); err != nil {
		return err
	}
	if err := s.local.ReduceScatter(scratch, reduced, recvCount*nHosts, dt, combining(op), str); err != nil {
		return fmt.Errorf("inside host %d: %w", me, err)
	}
	// staging: the group's blocks for the other hosts, then one slot per host for the blocks
	// that make this rank's result (this host's own in slot me).
	st, err := s.stage(2 * groupBytes)
	if err != nil {
		return err
	}
	out := func(h int) []byte { return st.b[uint64(h)*bytes : uint64(h+1)*bytes] }
	in := func(h int) []byte { return st.b[groupBytes+uint64(h)*bytes : groupBytes+uint64(h+1)*bytes] }
	// In pieces of the block (reductionPieces): out of GPU memory the piece of every block of the
	// group and of this host's own, swapped with local index i of every other host, reduced and
	// copied back.
	pieces := reductionPieces(int(bytes), dt.Size())
	ready, err := s.copyOut(str, len(pieces), func(j int) []hostCopy {
		copies := partCopies(hostPtr(st, 0), reduced, bytes, nHosts, pieces[j])
		own := uint64(me) * bytes
		return append(copies, pieceCopy(hostPtr(st, groupBytes+own), reduced+cuda.DevicePtr(own), pieces[j]))
	})
	if err != nil {
		return err
	}
	transfers := func(j int) []transfer { return s.swapByIndex(i, pieces[j], out, in) }
	done := func(j int) error {
		p := pieces[j]
		if err := reduceHosts(dt, op, nHosts, func(h int) []byte { return in(h)[p.lo:p.hi] }, s.nRanks); err != nil {
			return err
		}
		return s.copyIn(str, pieceCopy(recv, hostPtr(st, groupBytes), p))
	}
	return errors.Join(s.links.inPieces(context.Background(), len(pieces), ready, transfers, done), s.copiesAndWait(nil, str))
}

// swapByIndex is the transfers of piece p that send out(h) to the rank of local index i on every
// other host h and receive in(h) from it.
func (s *spanning) swapByIndex(i int, p piece, out, in func(h int) []byte) []transfer {
	me := s.hostOf[s.rank]
	var ts transferSet
	for h, ranks := range s.hosts {
		if h != me {
			ts.send(ranks[i], out(h)[p.lo:p.hi])
			ts.recv(ranks[i], in(h)[p.lo:p.hi])
		}
	}
	return ts.list
}

// byLocalIndex lists the ranks of hosts of equal size by local index, then host: position
// j*len(hosts)+h holds rank j of host h. The hierarchical ReduceScatter arranges its input's blocks
// in this order (group j: the blocks of every host's rank j), and the hierarchical AllGather's
// local gather leaves the parts in it.
func byLocalIndex(hosts [][]int) []int {
	order := make([]int, 0, len(hosts)*len(hosts[0]))
	for j := range hosts[0] {
		for _, ranks := range hosts {
			order = append(order, ranks[j])
		}
	}
	return order
}

// reduceScatterFlat runs ReduceScatter across hosts of different sizes: an AllReduce of the whole
// input into a temporary buffer, of which this rank keeps its part.
func (s *spanning) reduceScatterFlat(send, recv cuda.DevicePtr, recvCount int, dt DataType, op Op, str cuda.Stream) error {
	bytes := uint64(recvCount) * uint64(dt.Size())
	var tmp cuda.DevicePtr
	if err := s.pctx.Do(func() error {
		var err error
		tmp, err = cuda.MemAlloc(int(bytes) * s.nRanks)
		return err
	}); err != nil {
		return fmt.Errorf("temporary buffer of %d bytes: %w", bytes*uint64(s.nRanks), err)
	}
	defer s.pctx.Do(func() error { return cuda.MemFree(tmp) })
	if err := s.allReduce(send, tmp, recvCount*s.nRanks, dt, op, str); err != nil {
		return err
	}
	return s.copyAndWait(recv, tmp+cuda.DevicePtr(uint64(s.rank)*bytes), bytes, str)
}

// allGather runs AllGather across hosts. On hosts of equal size m it is hierarchical: local rank
// i swaps its part with local rank i of every other host (each part crosses to every other host
// once), the local Comm all-gathers what each rank holds (its index's part of every host), and the
// parts are copied into rank order. On hosts of different sizes every rank sends its part to every
// other rank (allGatherFlat).
func (s *spanning) allGather(send, recv cuda.DevicePtr, sendCount int, dt DataType, str cuda.Stream) error {
	me := s.hostOf[s.rank]
	m := len(s.hosts[me])
	if m == 1 || !equalHosts(s.hosts) {
		return s.allGatherFlat(send, recv, sendCount, dt, str)
	}
	bytes := uint64(sendCount) * uint64(dt.Size())
	nHosts := uint64(len(s.hosts))
	i := slices.Index(s.hosts[me], s.rank)
	st, err := s.stage(bytes * nHosts)
	if err != nil {
		return err
	}
	// scratch holds, per local index j, the parts of local index j of every host, in host order.
	scratch, err := s.scratchOf(bytes * nHosts * uint64(m))
	if err != nil {
		return err
	}
	mine := scratch + cuda.DevicePtr(uint64(i)*nHosts*bytes)
	part := func(h int) []byte { return st.b[uint64(h)*bytes : uint64(h+1)*bytes] }
	// In pieces: this rank's part out of GPU memory, swapped with local index i of every other
	// host, every host's piece back into scratch.
	pieces := piecesOf(int(bytes), dt.Size(), acrossPieceBytes)
	ready, err := s.copyOut(str, len(pieces), func(j int) []hostCopy {
		return []hostCopy{pieceCopy(hostPtr(st, uint64(me)*bytes), send, pieces[j])}
	})
	if err != nil {
		return err
	}
	transfers := func(j int) []transfer {
		return s.swapByIndex(i, pieces[j], func(int) []byte { return part(me) }, part)
	}
	done := func(j int) error {
		return s.copyIn(str, partCopies(mine, hostPtr(st, 0), bytes, int(nHosts), pieces[j])...)
	}
	if err := s.links.inPieces(context.Background(), len(pieces), ready, transfers, done); err != nil {
		return err
	}
	if err := s.local.AllGather(mine, scratch, sendCount*len(s.hosts), dt, str); err != nil {
		return fmt.Errorf("inside host %d: %w", me, err)
	}
	copies := make([]hostCopy, s.nRanks)
	for p, r := range byLocalIndex(s.hosts) {
		copies[p] = hostCopy{recv + cuda.DevicePtr(uint64(r)*bytes), scratch + cuda.DevicePtr(uint64(p)*bytes), bytes}
	}
	return s.copiesAndWait(copies, str)
}

// allGatherFlat runs AllGather across hosts by sending every rank's part to every other rank.
func (s *spanning) allGatherFlat(send, recv cuda.DevicePtr, sendCount int, dt DataType, str cuda.Stream) error {
	bytes := uint64(sendCount) * uint64(dt.Size())
	st, err := s.stage(bytes * uint64(s.nRanks))
	if err != nil {
		return err
	}
	part := func(r int) []byte { return st.b[uint64(r)*bytes : uint64(r+1)*bytes] }
	pieces := piecesOf(int(bytes), dt.Size(), acrossPieceBytes)
	ready, err := s.copyOut(str, len(pieces), func(j int) []hostCopy {
		return []hostCopy{pieceCopy(hostPtr(st, uint64(s.rank)*bytes), send, pieces[j])}
	})
	if err != nil {
		return err
	}
	transfers := func(j int) []transfer {
		p := pieces[j]
		var ts transferSet
		for r := range s.nRanks {
			if r != s.rank {
				ts.send(r, part(s.rank)[p.lo:p.hi])
				ts.recv(r, part(r)[p.lo:p.hi])
			}
		}
		return ts.list
	}
	done := func(j int) error {
		return s.copyIn(str, partCopies(recv, hostPtr(st, 0), bytes, s.nRanks, pieces[j])...)
	}
	return errors.Join(s.links.inPieces(context.Background(), len(pieces), ready, transfers, done), s.copiesAndWait(nil, str))
}

// broadcast runs Broadcast across hosts: the root sends its bytes to one rank of every other
// host (the relay: the one with the root's local index, modulo the host's size), then the local
// Comm of every host broadcasts them from the root or the relay.
func (s *spanning) broadcast(send, recv cuda.DevicePtr, count int, dt DataType, root int, str cuda.Stream) error {
	bytes := uint64(count) * uint64(dt.Size())
	me, rootHost := s.hostOf[s.rank], s.hostOf[root]
	rootIndex := slices.Index(s.hosts[rootHost], root)
	relayIndex := func(h int) int { return rootIndex % len(s.hosts[h]) }
	relay := s.hosts[me][relayIndex(me)] // the root itself on its host
	src := recv                          // the local root's bytes: the root's send, the relay's recv
	switch s.rank {
	case root:
		st, err := s.stage(bytes)
		if err != nil {
			return err
		}
		pieces := piecesOf(int(bytes), dt.Size(), acrossPieceBytes)
		ready, err := s.copyOut(str, len(pieces), func(j int) []hostCopy {
			return []hostCopy{pieceCopy(hostPtr(st, 0), send, pieces[j])}
		})
		if err != nil {
			return err
		}
		transfers := func(j int) []transfer {
			p := pieces[j]
			var ts transferSet
			for h, ranks := range s.hosts {
				if h != me {
					ts.send(ranks[relayIndex(h)], st.b[p.lo:p.hi])
				}
			}
			return ts.list
		}
		if err := s.links.inPieces(context.Background(), len(pieces), ready, transfers, nil); err != nil {
			return err
		}
		src = send
	case relay:
		st, err := s.stage(bytes)
		if err != nil {
			return err
		}
		pieces := piecesOf(int(bytes), dt.Size(), acrossPieceBytes)
		transfers := func(j int) []transfer {
			return []transfer{{peer: root, recv: st.b[pieces[j].lo:pieces[j].hi]}}
		}
		done := func(j int) error {
			p := pieces[j]
			return s.copyIn(str, pieceCopy(recv, hostPtr(st, 0), p))
		}
		if err := s.links.inPieces(context.Background(), len(pieces), nil, transfers, done); err != nil {
			return err
		}
	}
	if err := s.local.Broadcast(src, recv, count, dt, relayIndex(me), str); err != nil {
		return fmt.Errorf("inside host %d: %w", me, err)
	}
	return s.copiesAndWait(nil, str)
}

// p2p runs the transfers of a SendRecv or AlltoAll call across hosts; peers and order are as
// planSendRecv returns them (order names every peer once). The transfers with ranks of this host
// (this rank included) go on the local Comm's kernel, queued first, so that both sides of a local
// pair are queued before either waits. Those with ranks of other hosts are staged through host
// memory over the links (whose streams keep a pair's bytes in order; a send that fits the slots
// completes without its receive). A transfer of 0 bytes moves nothing, on either side, as on the
// kernel.
func (s *spanning) p2p(peers map[int]*p2pPeer, order []int, str cuda.Stream) error {
	me := s.hostOf[s.rank]
	localPeers := map[int]*p2pPeer{}
	var localOrder, remote []int
	var stagedBytes uint64
	for _, r := range order {
		p := peers[r]
		if s.hostOf[r] == me {
			i := slices.Index(s.hosts[me], r)
			localPeers[i], localOrder = p, append(localOrder, i)
			continue
		}
		remote = append(remote, r)
		stagedBytes += p.sendBytes + p.recvBytes
	}
	if len(localOrder) > maxP2PPeers {
		return fmt.Errorf("%d peers on this host in one call, at most %d: %w", len(localOrder), maxP2PPeers,
			errs.ErrInvalidArgument)
	}
	if len(localOrder) > 0 {
		if err := s.local.launchP2P(localPeers, localOrder, str); err != nil {
			return fmt.Errorf("inside host %d: %w", me, err)
		}
	}
	if stagedBytes == 0 {
		return nil
	}
	st, err := s.stage(stagedBytes)
	if err != nil {
		return err
	}
	// The staging buffer holds, per remote peer in order, its send then its receive. Each goes
	// in pieces (inPieces), cut from its own byte count, so both sides of a pair cut alike.
	sendAt, recvAt := make(map[int]uint64, len(remote)), make(map[int]uint64, len(remote))
	sendPieces, recvPieces := make(map[int][]piece, len(remote)), make(map[int][]piece, len(remote))
	var off uint64
	n := 0
	for _, r := range remote {
		p := peers[r]
		sendAt[r], recvAt[r] = off, off+p.sendBytes
		off += p.sendBytes + p.recvBytes
		sendPieces[r] = piecesOf(int(p.sendBytes), 1, acrossPieceBytes)
		recvPieces[r] = piecesOf(int(p.recvBytes), 1, acrossPieceBytes)
		n = max(n, len(sendPieces[r]), len(recvPieces[r]))
	}
	ready, err := s.copyOut(str, n, func(j int) []hostCopy {
		var copies []hostCopy
		for _, r := range remote {
			if j < len(sendPieces[r]) {
				copies = append(copies, pieceCopy(hostPtr(st, sendAt[r]), peers[r].send, sendPieces[r][j]))
			}
		}
		return copies
	})
	if err != nil {
		return err
	}
	transfers := func(j int) []transfer {
		ts := transferSet{stream: streamP2P}
		for _, r := range remote {
			if j < len(sendPieces[r]) {
				p := sendPieces[r][j]
				ts.send(r, st.b[sendAt[r]+uint64(p.lo):sendAt[r]+uint64(p.hi)])
			}
			if j < len(recvPieces[r]) {
				p := recvPieces[r][j]
				ts.recv(r, st.b[recvAt[r]+uint64(p.lo):recvAt[r]+uint64(p.hi)])
			}
		}
		return ts.list
	}
	done := func(j int) error {
		var copies []hostCopy
		for _, r := range remote {
			if j < len(recvPieces[r]) {
				copies = append(copies, pieceCopy(peers[r].recv, hostPtr(st, recvAt[r]), recvPieces[r][j]))
			}
		}
		return s.copyIn(str, copies...)
	}
	return errors.Join(s.links.inPieces(context.Background(), n, ready, transfers, done), s.copiesAndWait(nil, str))
}
