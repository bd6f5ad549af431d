package collectives

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// The network step of the calls across hosts (spanning.go): byte streams between this rank and
// the other ranks over core connections on TransportIB (libfabric: MSCCLPP_NET_PROVIDER, tcp
// where nothing faster is offered), host memory to host memory.
//
// Every ordered pair of ranks (sender, receiver) has linkStreams streams (one for the collectives,
// one for SendRecv and AlltoAll, whose sends may wait in the receiver's inbox while collectives
// run). A stream moves chunks of at most linkChunkBytes through linkSlots slots of the receiver's
// inbox, a window of host memory registered with the network: the sender copies a chunk into the
// same slot of its outbox (registered too; a send that lies in the source memory, useSource, is
// written from there without the copy), writes it into the receiver's slot and then its count of
// chunks sent into the receiver's arrived word (core.Connection.WriteWithSignal: the count lands
// after the data, and both go as one operation where the provider carries signals as remote CQ
// data). The receiver copies the chunk out and writes its count of chunks taken into the sender's
// freed word; the sender reuses a slot only once the chunk that held it was taken. The counts run
// over every call, so a stream needs no per-call handshake: both sides cut a transfer into chunks
// from its byte count alone.
//
// One call's transfers with all peers progress together in one loop (exchange), sends and
// receives interleaved, so that two ranks sending each other more than the slots hold cannot
// deadlock. A call ends when its bytes are in and its writes flushed; its last chunks (up to the
// slots) may wait in the peer's inbox for the peer's next call, so a send that fits the slots
// completes without its receive, as on the one-host kernel.
const (
	linkChunkBytes = 512 << 10
	linkSlots      = 4
	// linkWindowBytes is the inbox and the outbox of one peer: the slots, then in the inbox the
	// arrived word (the peer's chunks written here) and the freed word (this rank's chunks the
	// peer has taken).
	linkWindowBytes = linkSlots*linkChunkBytes + 16
	linkArrivedOff  = linkSlots * linkChunkBytes
	linkFreedOff    = linkArrivedOff + 8
)

// The streams of a pair of ranks.
const (
	streamCollective = iota // the collectives' exchanges
	streamP2P               // SendRecv and AlltoAll
	linkStreams
)

// ErrNetTimedOut: a call across hosts saw nothing move with a peer for MSCCLPP_NET_TIMEOUT.
var ErrNetTimedOut = errs.New(errs.ErrSystem, "across hosts, nothing moved with a peer for MSCCLPP_NET_TIMEOUT")

// linkStream is this rank's end of one stream with another rank, both directions.
type linkStream struct {
	peer          int
	conn          *core.Connection // the pair's connection, shared by its streams
	inbox, outbox []byte
	outboxMem     core.RegisteredMemory // registered, local
	peerInbox     core.RegisteredMemory // the peer's inbox
	sent, taken   uint64                // chunks written to the peer, chunks of the peer copied out
}

func (l *linkStream) word(off int) *uint64 { return (*uint64)(unsafe.Pointer(&l.inbox[off])) }

// hostLinks are a rank's links with other ranks: streams[k][r] is stream k with rank r (nil for a
// rank it has none with). They have a libfabric endpoint of their own (a core.Context of their
// own): close closes it before it unmaps the windows, so that no late write of a peer can land in
// freed memory.
type hostLinks struct {
	comm    *core.Communicator
	streams [linkStreams][]*linkStream
	windows [][]byte // mmap'd: freed by close
	// source is memory registered with the links' endpoint that sends are written from directly,
	// without the copy into the outbox (useSource: the Comm's staging buffer).
	source    core.RegisteredMemory
	sourceBuf []byte
}

// useSource registers b (nil: none) as the memory sends may be written from directly, ending the
// registration of the one before. b must stay in place until the next useSource or close.
func (h *hostLinks) useSource(b []byte) error {
	if h.sourceBuf != nil {
		m := h.source
		h.source, h.sourceBuf = core.RegisteredMemory{}, nil
		if err := h.comm.Context().DeregisterMemory(m); err != nil {
			return fmt.Errorf("links: %w", err)
		}
	}
	if len(b) == 0 {
		return nil
	}
	m, err := h.comm.Context().RegisterMemory(hostAddr(b), uint64(len(b)), core.TransportIB)
	if err != nil {
		return fmt.Errorf("links: register %d bytes to send from: %w", len(b), err)
	}
	h.source, h.sourceBuf = m, b
	return nil
}

// sourceOffset returns where b lies in the source memory, if it does.
func (h *hostLinks) sourceOffset(b []byte) (uint64, bool) {
	if len(b) == 0 || len(h.sourceBuf) == 0 {
		return 0, false
	}
	base, p := uintptr(unsafe.Pointer(&h.sourceBuf[0])), uintptr(unsafe.Pointer(&b[0]))
	if p < base || p-base+uintptr(len(b)) > uintptr(len(h.sourceBuf)) {
		return 0, false
	}
	return uint64(p - base), true
}

// Tags of the links' exchanges on their own Communicator over the job's bootstrap: the last
// connection tag, and the last memory tags (stream k's inboxes on linkTag - k); New's
// documentation reserves them.
const linkTag = core.MaxUserTag - 1

// newHostLinks connects this rank with every rank in peers over TransportIB, on a context of its
// own over bootstrap b, and exchanges the inboxes; collective among those ranks (every rank names
// the others). The windows are anonymous mappings (host memory that never moves), 2 *
// linkStreams * linkWindowBytes per peer.
func newHostLinks(ctx context.Context, b *bootstrap.TCP, peers []int) (_ *hostLinks, err error) {
	comm := core.NewCommunicator(b, core.NewContext())
	h := &hostLinks{comm: comm}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.close())
		}
	}()
	cfg := core.EndpointConfig{Transport: core.TransportIB, Device: core.Device{Type: core.DeviceCPU}}
	conns := make([]core.Future[*core.Connection], len(peers))
	for i, r := range peers {
		conns[i] = comm.Connect(cfg, r, linkTag)
	}
	type inboxes struct {
		sent  core.Future[struct{}]
		recvd core.Future[core.RegisteredMemory]
	}
	swaps := make([][linkStreams]inboxes, len(peers))
	for k := range linkStreams {
		h.streams[k] = make([]*linkStream, b.Size())
		for i, r := range peers {
			l := &linkStream{peer: r}
			for _, w := range []*[]byte{&l.inbox, &l.outbox} {
				mem, err := syscall.Mmap(-1, 0, linkWindowBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					return nil, fmt.Errorf("window of %d bytes for rank %d: %w: %w", linkWindowBytes, r, errs.ErrSystem, err)
				}
				h.windows = append(h.windows, mem)
				*w = mem
			}
			in, err := comm.Context().RegisterMemory(hostAddr(l.inbox), linkWindowBytes, core.TransportIB)
			if err != nil {
				return nil, fmt.Errorf("register an inbox for rank %d: %w", r, err)
			}
			if l.outboxMem, err = comm.Context().RegisterMemory(hostAddr(l.outbox), linkWindowBytes, core.TransportIB); err != nil {
				return nil, fmt.Errorf("register an outbox for rank %d: %w", r, err)
			}
			swaps[i][k] = inboxes{comm.SendMemory(in, r, linkTag-k), comm.RecvMemory(r, linkTag-k)}
			h.streams[k][r] = l
		}
	}
	for i, r := range peers {
		conn, err := conns[i].Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("network connection with rank %d: %w", r, err)
		}
		for k := range linkStreams {
			l := h.streams[k][r]
			l.conn = conn
			if _, err := swaps[i][k].sent.Get(ctx); err != nil {
				return nil, fmt.Errorf("send an inbox to rank %d: %w", r, err)
			}
			if l.peerInbox, err = swaps[i][k].recvd.Get(ctx); err != nil {
				return nil, fmt.Errorf("receive an inbox of rank %d: %w", r, err)
			}
		}
	}
	return h, nil
}

func hostAddr(b []byte) cuda.DevicePtr { return cuda.DevicePtr(uintptr(unsafe.Pointer(&b[0]))) }

// close waits (at most MSCCLPP_NET_TIMEOUT, and not for a peer whose bootstrap link has ended)
// for the peers to take the chunks this rank sent, so that their last writes to it (the freed
// counts) have landed, closes the links' context (their endpoint: nothing lands in the windows
// after it), then unmaps the windows.
func (h *hostLinks) close() error {
	deadline := time.Now().Add(config.NetTimeout.Get())
	b := h.comm.Bootstrap()
	nap := linkNapMin // a closing rank has nothing else to do: it naps from the start
	for _, l := range slices.Concat(h.streams[:]...) {
		for l != nil && l.conn != nil && atomic.LoadUint64(l.word(linkFreedOff)) < l.sent && time.Now().Before(deadline) &&
			b.PeerGone(l.peer) == nil {
			if h.comm.Context().Progress(core.TransportIB) != nil {
				break
			}
			time.Sleep(nap)
			nap = min(2*nap, linkNapMax)
		}
	}
	errList := []error{h.comm.Context().Close()}
	for _, w := range h.windows {
		errList = append(errList, syscall.Munmap(w))
	}
	h.windows = nil
	return errors.Join(errList...)
}

// transfer is one call's traffic with one peer on one stream: send goes to it, recv is filled
// from it (either may be empty: nothing moves that way).
type transfer struct {
	peer, stream int
	send, recv   []byte
}

// A call that waits naps once nothing has moved for linkNapAfter: linkNapMin, doubling up to
// linkNapMax, so that a rank waiting for a late peer does not hold a core (docs/PERFORMANCE.md,
// "Calls across hosts nap"). Progress goes on meanwhile in the endpoint's own goroutine. A nap
// lasts far longer than asked (on the H200 hosts time.Sleep of 16 us took 0.5 ms, of 100 us 1 ms),
// so a call naps only after a pause that no transfer in flight has between its chunks: napping
// after 200 us cut the bus bandwidth of nccl-tests across 2 hosts x 2 GPUs by a third to a half.
const (
	linkNapAfter = 10 * time.Millisecond
	linkNapMin   = 2 * time.Microsecond
	linkNapMax   = 100 * time.Microsecond
)

// exchange moves every transfer's bytes, all progressing together, and returns when every
// receive is complete and every write flushed, or fails naming the peers still owed bytes when
// the bootstrap link of one of them ends or nothing moves for MSCCLPP_NET_TIMEOUT. The link of a
// peer this call no longer waits for may end meanwhile (that peer finished and closed): the call
// goes on.
func (h *hostLinks) exchange(ctx context.Context, ts []transfer) error {
	if err := h.move(ctx, ts); err != nil {
		return err
	}
	return h.flush(ctx, ts)
}

// move is exchange without the flush: it returns when every receive is complete and every send
// posted.
func (h *hostLinks) move(ctx context.Context, ts []transfer) error {
	at := make([]transferProgress, len(ts))
	for _, t := range ts {
		if t.stream < 0 || t.stream >= linkStreams || t.peer < 0 || t.peer >= len(h.streams[t.stream]) ||
			h.streams[t.stream][t.peer] == nil {
			return fmt.Errorf("no stream %d with rank %d: %w", t.stream, t.peer, errs.ErrInternal)
		}
	}
	from := make([]int64, len(ts)) // where a transfer's send lies in the source memory (-1: not)
	for i, t := range ts {
		from[i] = -1
		if off, ok := h.sourceOffset(t.send); ok {
			from[i] = int64(off)
		}
	}
	timeout := config.NetTimeout.Get()
	lastMove, nap := time.Now(), linkNapMin
	b := h.comm.Bootstrap()
	for spins := 0; ; spins++ {
		moved, pending := false, false
		for i, t := range ts {
			l, p := h.streams[t.stream][t.peer], &at[i]
			for p.sent < len(t.send) && l.sent-atomic.LoadUint64(l.word(linkFreedOff)) < linkSlots {
				n := min(linkChunkBytes, len(t.send)-p.sent)
				slot := uint64(l.sent%linkSlots) * linkChunkBytes
				src, srcOff := l.outboxMem, slot
				if from[i] >= 0 {
					src, srcOff = h.source, uint64(from[i])+uint64(p.sent)
				} else {
					copy(l.outbox[slot:], t.send[p.sent:p.sent+n])
				}
				if err := l.conn.WriteWithSignal(l.peerInbox, slot, src, srcOff, uint64(n), l.peerInbox, linkArrivedOff, l.sent+1); err != nil {
					return fmt.Errorf("write to rank %d: %w", t.peer, err)
				}
				l.sent++
				p.sent += n
				moved = true
			}
			for p.taken < len(t.recv) && atomic.LoadUint64(l.word(linkArrivedOff)) > l.taken {
				n := min(linkChunkBytes, len(t.recv)-p.taken)
				slot := (l.taken % linkSlots) * linkChunkBytes
				copy(t.recv[p.taken:p.taken+n], l.inbox[slot:])
				l.taken++
				if err := l.conn.UpdateAndSync(l.peerInbox, linkFreedOff, l.taken); err != nil {
					return fmt.Errorf("free a slot of rank %d: %w", t.peer, err)
				}
				p.taken += n
				moved = true
			}
			pending = pending || owes(t, *p)
		}
		if !pending {
			break
		}
		if moved {
			lastMove, nap = time.Now(), linkNapMin
			continue
		}
		if err := h.comm.Context().Progress(core.TransportIB); err != nil {
			return fmt.Errorf("network progress: %w", err)
		}
		if time.Since(lastMove) > linkNapAfter {
			time.Sleep(nap)
			nap = min(2*nap, linkNapMax)
		}
		if spins%64 == 0 {
			// Only the peers this call still waits for: a rank done with this one may close first.
			for i, t := range ts {
				if err := b.PeerGone(t.peer); err != nil && owes(t, at[i]) {
					return fmt.Errorf("across hosts, waiting for ranks %v (%s): %w: %w", h.owed(ts, at), h.counts(ts, at), ErrPeerFailed, err)
				}
			}
			if time.Since(lastMove) > timeout {
				return fmt.Errorf("ranks %v, for %v (%s): %w", h.owed(ts, at), timeout, h.counts(ts, at), ErrNetTimedOut)
			}
			runtime.Gosched()
		}
	}
	return nil
}

// flush waits until the writes to the peers of ts have completed (exchange's end), or fails
// after MSCCLPP_NET_TIMEOUT.
func (h *hostLinks) flush(ctx context.Context, ts []transfer) error {
	flushCtx, cancel := context.WithTimeout(ctx, config.NetTimeout.Get())
	defer cancel()
	for _, t := range ts {
		if len(t.send) > 0 || len(t.recv) > 0 {
			if err := h.streams[t.stream][t.peer].conn.Flush(flushCtx); err != nil {
				return fmt.Errorf("flush the writes to rank %d: %w", t.peer, err)
			}
		}
	}
	return nil
}

// transferSet gathers one call's transfers on one stream, one per peer, in the order peers were
// first named.
type transferSet struct {
	stream int
	list   []transfer
	index  map[int]int
}

func (ts *transferSet) at(peer int) *transfer {
	if ts.index == nil {
		ts.index = map[int]int{}
	}
	i, ok := ts.index[peer]
	if !ok {
		i = len(ts.list)
		ts.index[peer] = i
		ts.list = append(ts.list, transfer{peer: peer, stream: ts.stream})
	}
	return &ts.list[i]
}

// send sets the bytes that go to peer; recv the buffer filled from it.
func (ts *transferSet) send(peer int, b []byte) { ts.at(peer).send = b }
func (ts *transferSet) recv(peer int, b []byte) { ts.at(peer).recv = b }

// transferProgress is how far a transfer got: bytes sent, bytes received.
type transferProgress struct{ sent, taken int }

// counts describes, for the error of a call that waited too long, where each unfinished transfer
// stands: the call's bytes sent and received, and the stream's chunk counts (sent, and freed by
// the peer; arrived from the peer, and taken here).
func (h *hostLinks) counts(ts []transfer, at []transferProgress) string {
	var parts []string
	for i, t := range ts {
		if !owes(t, at[i]) {
			continue
		}
		l := h.streams[t.stream][t.peer]
		parts = append(parts, fmt.Sprintf("rank %d stream %d: sent %d of %d bytes, received %d of %d; chunks sent %d, freed %d, arrived %d, taken %d",
			t.peer, t.stream, at[i].sent, len(t.send), at[i].taken, len(t.recv),
			l.sent, atomic.LoadUint64(l.word(linkFreedOff)), atomic.LoadUint64(l.word(linkArrivedOff)), l.taken))
	}
	return strings.Join(parts, "; ")
}

// owes reports whether transfer t, at p, is not done: bytes to send or receive.
func owes(t transfer, p transferProgress) bool { return p.sent < len(t.send) || p.taken < len(t.recv) }

// owed lists the peers of ts whose transfers are not done.
func (h *hostLinks) owed(ts []transfer, at []transferProgress) []int {
	var peers []int
	for i, t := range ts {
		if owes(t, at[i]) {
			peers = append(peers, t.peer)
		}
	}
	return peers
}
