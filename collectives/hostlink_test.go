package collectives

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// linkPattern is byte i of the k-th message from rank `from` to rank `to` (the i/1000 term makes
// chunks at multiples of 256 bytes apart differ, so a chunk out of place shows).
func linkPattern(from, to, k, i int) byte { return byte(i*7 + i/1000*3 + from*31 + to*13 + k*5) }

// joinHostLinks links rank b.Rank() with every other rank over the real libfabric tcp provider
// (loopback), on an endpoint of its own.
func joinHostLinks(ctx context.Context, b *bootstrap.TCP) (*hostLinks, error) {
	var peers []int
	for r := range b.Size() {
		if r != b.Rank() {
			peers = append(peers, r)
		}
	}
	return newHostLinks(ctx, b, peers)
}

func requireTCP(t *testing.T) { requireProvider(t, "tcp") }

// requireProvider makes the links use the libfabric provider name, or skips the test where
// libfabric does not offer it.
func requireProvider(t *testing.T, name string) {
	t.Helper()
	if !fabric.Has(name) {
		t.Skipf("libfabric offers no %s provider here", name)
	}
	testutil.Override(t, config.NetProvider, name)
}

// inProcessProviders are the providers the links' tests run on with the ranks in this process,
// where libfabric offers them: tcp (a write's source copied when posted) and udp (libfabric's rxd:
// its own reliable protocol over datagrams, as efa's RDM is). shm (a write's source read when the
// peer takes it) runs with each rank a process of its own (runLinkedProcesses).
var inProcessProviders = []string{"tcp", "udp"}

// runLinked runs f on n in-process ranks, each linked with the others (joinHostLinks; the links
// closed after f), and fails the test for every rank whose f failed. In a process that runs as one
// rank of runLinkedProcesses it runs f on that rank only, over the process's links.
func runLinked(t *testing.T, n int, f func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error) {
	t.Helper()
	if rank, size, _, ok := testutil.ProcessRank(); ok {
		require.Equal(t, size, n, "ranks of the processes")
		b, h := linkProcess(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		assert.NoError(t, f(ctx, rank, b, h), "rank %d", rank)
		return
	}
	runLinkedOwned(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		defer h.close()
		return f(ctx, rank, b, h)
	})
}

// runLinkedProcesses runs the tests that pattern matches (-test.run) in n processes of this test
// binary (testutil.StartRanks), one rank each, as ranks of real jobs are (libfabric's shm provider
// shares the memory of endpoints of one process, and crashed, in 1.17, when one of them closed
// while another still moved bytes with it), and fails t for every process that fails or runs past
// two minutes.
func runLinkedProcesses(t *testing.T, n int, pattern string) {
	t.Helper()
	root, err := bootstrap.NewRoot(bootstrap.Options{Timeout: time.Minute})
	require.NoError(t, err)
	defer root.Close()
	id := root.ID()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	cmds := testutil.StartRanks(t, ctx, pattern, n, id[:], func(r int, cmd *exec.Cmd) {
		cmd.Args = append(cmd.Args, "-test.v")
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
	})
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d's process: %v; its output:\n%s", r, err, outs[r].String())
		} else if !bytes.Contains(outs[r].Bytes(), []byte("--- PASS")) {
			t.Errorf("rank %d's process ran no test matching %q; its output:\n%s", r, pattern, outs[r].String())
		}
	}
}

// linkedProcess is the rank of this process of runLinkedProcesses: joined and linked with the
// others on first use, closed by closeLinkProcess.
var linkedProcess struct {
	once sync.Once
	b    *bootstrap.TCP
	h    *hostLinks
	err  error
}

// linkProcess returns this process's bootstrap and links (runLinkedProcesses), joining and
// linking on first use.
func linkProcess(t *testing.T) (*bootstrap.TCP, *hostLinks) {
	t.Helper()
	lp := &linkedProcess
	lp.once.Do(func() {
		rank, n, raw, _ := testutil.ProcessRank()
		var id bootstrap.UniqueID
		if len(raw) != len(id) {
			lp.err = fmt.Errorf("%s: %x is no bootstrap id", testutil.JobIDVar, raw)
			return
		}
		copy(id[:], raw)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if lp.b, lp.err = bootstrap.Join(ctx, id, rank, n, bootstrap.Options{}); lp.err == nil {
			lp.h, lp.err = joinHostLinks(ctx, lp.b)
		}
	})
	require.NoError(t, lp.err)
	return lp.b, lp.h
}

// closeLinkProcess closes this process's links and bootstrap, if made, once every rank is done.
func closeLinkProcess(t *testing.T) {
	lp := &linkedProcess
	if lp.b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	assert.NoError(t, lp.b.Barrier(ctx))
	if lp.h != nil {
		assert.NoError(t, lp.h.close())
	}
	assert.NoError(t, lp.b.Close())
}

// runLinkedOwned is runLinked for an f that closes the links itself (when, is what it tests).
func runLinkedOwned(t *testing.T, n int, f func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error) {
	t.Helper()
	failed := runRanks(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP) error {
		h, err := joinHostLinks(ctx, b)
		if err != nil {
			return err
		}
		return f(ctx, rank, b, h)
	})
	for r, err := range failed {
		assert.NoError(t, err, "rank %d", r)
	}
}

// waitUntil polls cond every millisecond until it holds, or fails naming what did not happen
// when ctx ends.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		if ctx.Err() != nil {
			return fmt.Errorf("%s did not happen: %w", what, ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// TestHostLinksExchange: 4 ranks (over tcp, then udp) exchange messages with every other rank,
// all at once, sizes from 0 bytes to several times the slots (so that sends wait for the peer to
// take chunks while it is itself sending), one call after another (the chunk counts carry over),
// every byte checked.
func TestHostLinksExchange(t *testing.T) {
	for _, provider := range inProcessProviders {
		t.Run(provider, func(t *testing.T) { testHostLinksExchange(t, provider) })
	}
}

func testHostLinksExchange(t *testing.T, provider string) {
	requireProvider(t, provider)
	sizes := []int{0, 1, 8, linkChunkBytes - 1, linkChunkBytes, linkSlots*linkChunkBytes + 3, 3*linkSlots*linkChunkBytes + 4097}
	const n = 4
	runLinked(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		for k, size := range sizes {
			ts := make([]transfer, 0, n-1)
			for r := range n {
				if r == rank {
					continue
				}
				tr := transfer{peer: r, send: make([]byte, size), recv: make([]byte, size)}
				for i := range tr.send {
					tr.send[i] = linkPattern(rank, r, k, i)
				}
				ts = append(ts, tr)
			}
			if err := h.exchange(ctx, ts); err != nil {
				return fmt.Errorf("message %d (%d bytes): %w", k, size, err)
			}
			for _, tr := range ts {
				for i, v := range tr.recv {
					if want := linkPattern(tr.peer, rank, k, i); v != want {
						return fmt.Errorf("message %d (%d bytes) from rank %d: byte %d is %d, want %d", k, size, tr.peer, i, v, want)
					}
				}
			}
		}
		return nil
	})
}

// TestHostLinksOneWay: transfers that only send or only receive, of different sizes per peer, in
// one call: rank 0 sends to ranks 1 and 2, which only receive.
func TestHostLinksOneWay(t *testing.T) {
	requireTCP(t)
	sizes := map[int]int{1: 3*linkChunkBytes + 5, 2: 77}
	runLinked(t, 3, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		var ts []transfer
		if rank == 0 {
			for r, size := range sizes {
				tr := transfer{peer: r, send: make([]byte, size)}
				for i := range tr.send {
					tr.send[i] = linkPattern(0, r, 0, i)
				}
				ts = append(ts, tr)
			}
		} else {
			ts = []transfer{{peer: 0, recv: make([]byte, sizes[rank])}}
		}
		if err := h.exchange(ctx, ts); err != nil {
			return err
		}
		if rank != 0 {
			for i, v := range ts[0].recv {
				if want := linkPattern(0, rank, 0, i); v != want {
					return fmt.Errorf("byte %d is %d, want %d", i, v, want)
				}
			}
		}
		return b.Barrier(ctx)
	})
}

// TestHostLinksTimeout: a peer that never sends leaves its receiver waiting: the call fails with
// ErrNetTimedOut naming it, with the stream's counts, after MSCCLPP_NET_TIMEOUT (1 s here) instead
// of hanging.
func TestHostLinksTimeout(t *testing.T) {
	requireTCP(t)
	testutil.Override(t, config.NetTimeout, time.Second)
	runLinked(t, 2, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		if rank == 1 {
			start := time.Now()
			err := h.exchange(ctx, []transfer{{peer: 0, recv: make([]byte, 100)}})
			if !errors.Is(err, ErrNetTimedOut) {
				return fmt.Errorf("got %v, want ErrNetTimedOut", err)
			}
			if took := time.Since(start); took < time.Second || took > 10*time.Second {
				return fmt.Errorf("gave up after %v, want about 1 s", took)
			}
			assert.ErrorContains(t, err, "ranks [0]")
			assert.ErrorContains(t, err, "rank 0 stream 0: sent 0 of 0 bytes, received 0 of 100; chunks sent 0, freed 0, arrived 0, taken 0",
				"the error gives the stream's counts")
		}
		return b.Barrier(ctx)
	})
}

// TestHostLinksSendAhead: sends that fit the slots complete before their receives are made: every
// rank sends two messages to each other rank on the p2p stream in calls of their own, then runs an
// exchange with everyone on the collectives' stream, then receives the messages in calls of their
// own, peers in another order (the chunks wait in the inboxes, in order, apart from the
// collectives' stream: on one stream the exchange would take them).
func TestHostLinksSendAhead(t *testing.T) {
	requireTCP(t)
	sizes := []int{linkChunkBytes + 1, 2*linkChunkBytes - 5} // 4 chunks: the slots
	const n = 3
	runLinked(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		for k, size := range sizes {
			for d := 1; d < n; d++ {
				to := (rank + d) % n
				msg := make([]byte, size)
				for i := range msg {
					msg[i] = linkPattern(rank, to, k, i)
				}
				if err := h.exchange(ctx, []transfer{{peer: to, stream: streamP2P, send: msg}}); err != nil {
					return fmt.Errorf("send %d to rank %d: %w", k, to, err)
				}
			}
		}
		coll := transferSet{stream: streamCollective}
		for r := range n {
			if r != rank {
				coll.send(r, []byte{byte(rank)})
				coll.recv(r, make([]byte, 1))
			}
		}
		if err := h.exchange(ctx, coll.list); err != nil {
			return fmt.Errorf("collective exchange: %w", err)
		}
		for _, tr := range coll.list {
			if tr.recv[0] != byte(tr.peer) {
				return fmt.Errorf("collective exchange: got %d from rank %d", tr.recv[0], tr.peer)
			}
		}
		for k, size := range sizes {
			for d := n - 1; d >= 1; d-- {
				from := (rank + d) % n
				got := make([]byte, size)
				if err := h.exchange(ctx, []transfer{{peer: from, stream: streamP2P, recv: got}}); err != nil {
					return fmt.Errorf("receive %d from rank %d: %w", k, from, err)
				}
				for i, v := range got {
					if want := linkPattern(from, rank, k, i); v != want {
						return fmt.Errorf("message %d from rank %d: byte %d is %d, want %d", k, from, i, v, want)
					}
				}
			}
		}
		return nil
	})
}

// TestHostLinksFromSource: sends that lie in the registered source memory are written from it
// directly, others through the outbox, in one call; the source replaced by a larger one, then
// dropped; every byte checked.
func TestHostLinksFromSource(t *testing.T) {
	requireTCP(t)
	const n = 3
	runLinked(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		for k, size := range []int{3*linkChunkBytes + 7, 5*linkSlots*linkChunkBytes + 1, 100} {
			source := make([]byte, (n-1)*size+64)
			if k < 2 {
				if err := h.useSource(source); err != nil {
					return err
				}
			} else if err := h.useSource(nil); err != nil {
				return err
			}
			var ts transferSet
			d := 0
			for r := range n {
				if r == rank {
					continue
				}
				msg := source[32+d*size : 32+(d+1)*size]
				if d == 1 {
					msg = make([]byte, size) // not in the source: through the outbox
				}
				for i := range msg {
					msg[i] = linkPattern(rank, r, k, i)
				}
				ts.send(r, msg)
				ts.recv(r, make([]byte, size))
				d++
			}
			if err := h.exchange(ctx, ts.list); err != nil {
				return fmt.Errorf("call %d: %w", k, err)
			}
			for _, tr := range ts.list {
				for i, v := range tr.recv {
					if want := linkPattern(tr.peer, rank, k, i); v != want {
						return fmt.Errorf("call %d from rank %d: byte %d is %d, want %d", k, tr.peer, i, v, want)
					}
				}
			}
		}
		return nil
	})
}

// BenchmarkHostLinks: the links' bandwidth between two ranks of this process on the tcp provider
// (loopback), one way and both ways at once, sends copied through the outbox or written from the
// registered source memory; bench/fabric_pingpong gives the transport's own
// figure beside it.
func BenchmarkHostLinks(b *testing.B) {
	if !fabric.Has("tcp") {
		b.Skip("libfabric offers no tcp provider here")
	}
	testutil.Override(b, config.NetProvider, "tcp")
	for _, size := range []int{4 << 20, 64 << 20} {
		for _, c := range []struct{ both, source bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			both := c.both
			name := fmt.Sprintf("%dMiB/one-way", size>>20)
			if both {
				name = fmt.Sprintf("%dMiB/both-ways", size>>20)
			}
			if c.source {
				name += "/from-source"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(size))
				benchLinked(b, func(ctx context.Context, rank int, h *hostLinks) (func() error, error) {
					tr := transfer{peer: 1 - rank}
					if rank == 0 || both {
						tr.send = make([]byte, size)
						if c.source {
							if err := h.useSource(tr.send); err != nil {
								return nil, err
							}
						}
					}
					if rank == 1 || both {
						tr.recv = make([]byte, size)
					}
					return func() error { return h.exchange(ctx, []transfer{tr}) }, nil
				})
			})
		}
	}
}

// benchLinked runs a benchmark on two in-process ranks linked over tcp (joinHostLinks): each
// prepares its iteration, then, after a barrier (rank 0 resetting the timer), runs it b.N times.
func benchLinked(b *testing.B, prepare func(ctx context.Context, rank int, h *hostLinks) (func() error, error)) {
	ready := make(chan struct{})
	errc := make(chan error, 2)
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	require.NoError(b, err)
	defer root.Close()
	for rank := range 2 {
		go func() {
			errc <- func() error {
				ctx := context.Background()
				bt, err := bootstrap.Join(ctx, root.ID(), rank, 2, bootstrap.Options{})
				if err != nil {
					return err
				}
				defer bt.Close()
				h, err := joinHostLinks(ctx, bt)
				if err != nil {
					return err
				}
				defer h.close()
				iteration, err := prepare(ctx, rank, h)
				if err != nil {
					return err
				}
				if err := bt.Barrier(ctx); err != nil {
					return err
				}
				if rank == 0 {
					b.ResetTimer()
					close(ready)
				}
				<-ready
				for range b.N {
					if err := iteration(); err != nil {
						return err
					}
				}
				return bt.Barrier(ctx)
			}()
		}()
	}
	require.NoError(b, <-errc)
	require.NoError(b, <-errc)
}

// TestHostLinksOtherPeerLeaves: a rank that is done closes its links and its bootstrap while
// another rank still waits for a third one's bytes; the waiting call is not failed by the link
// that ended, only by the links of the peers it waits for (TestHostLinksPeerGone). Rank 1 sends
// only once rank 0's link has ended, so rank 2 is inside its call when that happens.
func TestHostLinksOtherPeerLeaves(t *testing.T) {
	requireTCP(t)
	runLinkedOwned(t, 3, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		switch rank {
		case 0:
			return errors.Join(h.close(), b.Close())
		case 1:
			defer h.close()
			if err := waitUntil(ctx, "the end of rank 0's link", func() bool { return b.PeerGone(0) != nil }); err != nil {
				return err
			}
			// Rank 2 notices it too: its call looks at the links every 64 idle polls, which naps space out.
			time.Sleep(200 * time.Millisecond)
			return h.exchange(ctx, []transfer{{peer: 2, send: []byte("late but fine")}})
		}
		defer h.close()
		got := make([]byte, len("late but fine"))
		if err := h.exchange(ctx, []transfer{{peer: 1, recv: got}}); err != nil {
			return err
		}
		if b.PeerGone(0) == nil {
			return errors.New("rank 0's link is still up: the check proved nothing")
		}
		assert.Equal(t, "late but fine", string(got))
		return nil
	})
}

// TestHostLinksClosePeerGone: close does not wait MSCCLPP_NET_TIMEOUT (a minute here) for a peer
// whose bootstrap link has ended to free the chunks sent to it: rank 1 leaves without taking
// rank 0's chunk.
func TestHostLinksClosePeerGone(t *testing.T) {
	requireTCP(t)
	testutil.Override(t, config.NetTimeout, time.Minute)
	runLinkedOwned(t, 2, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		if rank == 1 {
			landed := func() bool { return atomic.LoadUint64(h.streams[0][0].word(linkArrivedOff)) != 0 }
			if err := waitUntil(ctx, "rank 0's chunk landing", landed); err != nil { // landed, never taken
				return errors.Join(err, h.close())
			}
			return errors.Join(h.close(), b.Close())
		}
		if err := h.exchange(ctx, []transfer{{peer: 1, send: []byte{7}}}); err != nil {
			return errors.Join(err, h.close())
		}
		if err := waitUntil(ctx, "the end of rank 1's link", func() bool { return b.PeerGone(1) != nil }); err != nil {
			return errors.Join(err, h.close())
		}
		start := time.Now()
		err := h.close()
		if took := time.Since(start); took > 10*time.Second {
			return fmt.Errorf("close waited %v for a peer that had left", took)
		}
		return err
	})
}

// TestHostLinksPeerGone: a peer that closes its end (its process ending does the same to the
// bootstrap link) while this rank waits for its bytes: the call fails with ErrPeerFailed naming
// it, long before MSCCLPP_NET_TIMEOUT (60 s here).
func TestHostLinksPeerGone(t *testing.T) {
	requireTCP(t)
	testutil.Override(t, config.NetTimeout, time.Minute)
	runLinkedOwned(t, 2, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		if rank == 1 {
			// Take part in one exchange, so that the bootstrap link with rank 0 is watched, then leave.
			if err := h.exchange(ctx, []transfer{{peer: 0, send: []byte{1}}}); err != nil {
				return err
			}
			return errors.Join(h.close(), b.Close())
		}
		defer h.close()
		if err := h.exchange(ctx, []transfer{{peer: 1, recv: make([]byte, 1)}}); err != nil {
			return err
		}
		start := time.Now()
		err := h.exchange(ctx, []transfer{{peer: 1, recv: make([]byte, 100)}})
		if !errors.Is(err, ErrPeerFailed) {
			return fmt.Errorf("got %v, want ErrPeerFailed", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			return fmt.Errorf("gave up after %v", took)
		}
		assert.ErrorContains(t, err, "ranks [1]")
		return nil
	})
}

// TestHostReductionRun: three ranks, each its own host, reduce their parts in pieces over the
// real links (hostReduction.run, reduceAcross's host side): tcp and udp with the ranks in this
// process, shm with each rank a process of its own (runLinkedProcesses) over one set of links for
// every case.
// Every rank ends with the hosts' parts reduced in host order; ready and done see every piece
// once, in turn (ready(j), then done(j) with piece j reduced); and a done that fails on one rank
// is returned there while the pieces go on moving, so the other ranks finish.
func TestHostReductionRun(t *testing.T) {
	for _, provider := range inProcessProviders {
		t.Run(provider, func(t *testing.T) { testHostReductionRun(t, provider, 3) })
	}
	t.Run("shm", func(t *testing.T) {
		if _, _, _, ok := testutil.ProcessRank(); !ok {
			requireProvider(t, "shm")
			runLinkedProcesses(t, 3, "^TestHostReductionRun$/^shm$")
			return
		}
		defer closeLinkProcess(t)
		testHostReductionRun(t, "shm", 3)
	})
}

func testHostReductionRun(t *testing.T, provider string, n int) {
	requireProvider(t, provider)
	value := func(host, i int) int64 { return int64((i*7+host*13)%1000 - 300) }
	tests := []struct {
		name       string
		dt         DataType
		op         Op
		elems      int
		pieceBytes int
		failOn     int // the piece whose done fails on rank 0 (-1: none)
	}{
		{"float32 sum in pieces of 64 KiB", Float32, Sum, 100003, 64 << 10, -1},
		{"int32 max in one piece", Int32, Max, 1000, acrossPieceBytes, -1},
		{"float32 avg, pieces not a multiple of the element", Float32, Avg, 50001, 40001, -1},
		{"int64 sum of nothing", Int64, Sum, 0, 4096, -1},
		{"a failed done on rank 0", Int32, Sum, 30000, 16 << 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := tt.dt.Size()
			bytes := tt.elems * size
			want := make([]int64, tt.elems) // in host order
			for i := range want {
				want[i] = value(0, i)
				for h := 1; h < n; h++ {
					switch tt.op {
					case Max:
						want[i] = max(want[i], value(h, i))
					default:
						want[i] += value(h, i)
					}
				}
			}
			wantAt := func(b []byte, lo, hi int) error {
				for i := lo / size; i < hi/size; i++ {
					var got, w float64
					switch tt.dt {
					case Float32:
						got, w = float64(elems[float32](b)[i]), float64(float32(want[i]))
						if tt.op == Avg {
							w = float64(float32(want[i]) / float32(n))
						}
					case Int32:
						got, w = float64(elems[int32](b)[i]), float64(want[i])
					case Int64:
						got, w = float64(elems[int64](b)[i]), float64(want[i])
					}
					if got != w {
						return fmt.Errorf("element %d is %v, want %v", i, got, w)
					}
				}
				return nil
			}
			runLinked(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
				staging := make([]byte, n*bytes+1)[:n*bytes]
				if bytes > 0 {
					if err := h.useSource(staging); err != nil { // as reduceAcross's staging memory
						return err
					}
				}
				r := hostReduction{dt: tt.dt, op: tt.op, nHosts: n, me: rank, nRanks: n,
					part: func(host int) []byte { return staging[host*bytes : (host+1)*bytes] }}
				for to := range n {
					if to != rank {
						r.sendTo = append(r.sendTo, to)
					}
					r.recvFrom = append(r.recvFrom, to)
				}
				mine := r.part(rank)
				for i := range tt.elems {
					switch tt.dt {
					case Float32:
						elems[float32](mine)[i] = float32(value(rank, i))
					case Int32:
						elems[int32](mine)[i] = int32(value(rank, i))
					case Int64:
						elems[int64](mine)[i] = value(rank, i)
					}
				}
				pieces := piecesOf(bytes, size, tt.pieceBytes)
				if want := (bytes + tt.pieceBytes/size*size - 1) / (tt.pieceBytes / size * size); len(pieces) != want {
					return fmt.Errorf("%d pieces, want %d", len(pieces), want)
				}
				var calls []string
				failed := errors.New("done failed on purpose")
				ready := func(j int) error {
					calls = append(calls, fmt.Sprintf("ready %d", j))
					return nil
				}
				done := func(j int, p piece) error {
					calls = append(calls, fmt.Sprintf("done %d %v", j, p))
					if j == tt.failOn && rank == 0 {
						return failed
					}
					return wantAt(r.part(0), p.lo, p.hi)
				}
				err := r.run(ctx, h, pieces, ready, done)
				if tt.failOn >= 0 && rank == 0 {
					if !errors.Is(err, failed) {
						return fmt.Errorf("run returned %v, want the failed done", err)
					}
					return nil
				}
				if err != nil {
					return err
				}
				var want []string
				for j, p := range pieces {
					want = append(want, fmt.Sprintf("ready %d", j), fmt.Sprintf("done %d %v", j, p))
				}
				if !slices.Equal(calls, want) {
					return fmt.Errorf("calls %v, want %v", calls, want)
				}
				return wantAt(r.part(0), 0, bytes)
			})
		})
	}
}

// BenchmarkHostReduction: two ranks, each its own host, sum 64 MiB of float32 over the tcp links
// (hostReduction.run, reduceAcross's host side, host memory only): in one piece (each step waits
// for the whole message, as before exp-across-pieces) and in pieces of acrossPieceBytes.
func BenchmarkHostReduction(b *testing.B) {
	if !fabric.Has("tcp") {
		b.Skip("libfabric offers no tcp provider here")
	}
	testutil.Override(b, config.NetProvider, "tcp")
	const size = 64 << 20
	for _, c := range []struct {
		pieceBytes int
		reduce     bool
	}{{size, true}, {acrossPieceBytes, true}, {size, false}, {acrossPieceBytes, false}} {
		pieceBytes := c.pieceBytes
		name := fmt.Sprintf("pieces-of-%dMiB", pieceBytes>>20)
		if !c.reduce {
			name += "/exchange-only"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			benchLinked(b, func(ctx context.Context, rank int, h *hostLinks) (func() error, error) {
				staging := make([]byte, 2*size)
				if err := h.useSource(staging); err != nil {
					return nil, err
				}
				r := hostReduction{dt: Float32, op: Sum, nHosts: 2, me: rank, nRanks: 2, sendTo: []int{1 - rank},
					recvFrom: []int{0, 1}, part: func(host int) []byte { return staging[host*size : (host+1)*size] }}
				pieces := piecesOf(size, 4, pieceBytes)
				if !c.reduce { // the pieces' moves alone
					return func() error {
						return h.inPieces(ctx, len(pieces), nil, func(j int) []transfer {
							p := pieces[j]
							return []transfer{{peer: 1 - rank, send: r.part(rank)[p.lo:p.hi], recv: r.part(1 - rank)[p.lo:p.hi]}}
						}, nil)
					}, nil
				}
				return func() error { return r.run(ctx, h, pieces, nil, func(int, piece) error { return nil }) }, nil
			})
		})
	}
}

// TestInPiecesUneven: three ranks send each other messages of sizes per ordered pair (none, less
// than a piece, several pieces) in one inPieces call over the real tcp links, each message cut
// into pieces from its own size as spanning.p2p cuts them, so that later pieces name fewer peers;
// every message arrives whole, and done sees the pieces in order.
func TestInPiecesUneven(t *testing.T) {
	requireTCP(t)
	const n, pieceBytes = 3, 64 << 10
	sizes := map[[2]int]int{ // per ordered pair (from, to)
		{0, 1}: 1000, {0, 2}: 10 * pieceBytes, {1, 0}: 3*pieceBytes + 7, {1, 2}: 0, {2, 0}: pieceBytes, {2, 1}: 10*pieceBytes + 5,
	}
	sizeOf := func(from, to int) int { return sizes[[2]int{from, to}] }
	runLinked(t, n, func(ctx context.Context, rank int, b *bootstrap.TCP, h *hostLinks) error {
		sends, recvs := map[int][]byte{}, map[int][]byte{}
		sendPieces, recvPieces := map[int][]piece{}, map[int][]piece{}
		var peers []int
		count := 0
		for p := range n {
			if p == rank {
				continue
			}
			peers = append(peers, p)
			sends[p], recvs[p] = make([]byte, sizeOf(rank, p)), make([]byte, sizeOf(p, rank))
			for i := range sends[p] {
				sends[p][i] = linkPattern(rank, p, 7, i)
			}
			sendPieces[p], recvPieces[p] = piecesOf(len(sends[p]), 1, pieceBytes), piecesOf(len(recvs[p]), 1, pieceBytes)
			count = max(count, len(sendPieces[p]), len(recvPieces[p]))
		}
		var done []int
		err := h.inPieces(ctx, count, nil, func(j int) []transfer {
			ts := transferSet{stream: streamP2P}
			for _, p := range peers {
				if j < len(sendPieces[p]) {
					ts.send(p, sends[p][sendPieces[p][j].lo:sendPieces[p][j].hi])
				}
				if j < len(recvPieces[p]) {
					ts.recv(p, recvs[p][recvPieces[p][j].lo:recvPieces[p][j].hi])
				}
			}
			return ts.list
		}, func(j int) error { done = append(done, j); return nil })
		if err != nil {
			return err
		}
		if len(done) != count {
			return fmt.Errorf("done saw pieces %v, want %d in order", done, count)
		}
		for i, j := range done {
			if i != j {
				return fmt.Errorf("done saw pieces %v, want 0 to %d in order", done, count-1)
			}
		}
		for _, p := range peers {
			for i, v := range recvs[p] {
				if want := linkPattern(p, rank, 7, i); v != want {
					return fmt.Errorf("from rank %d (%d bytes): byte %d is %d, want %d", p, len(recvs[p]), i, v, want)
				}
			}
		}
		return nil
	})
}

// TestPiecesOf: the cuts of the calls across hosts, whole elements in each piece; reductions in
// one piece.
func TestPiecesOf(t *testing.T) {
	tests := []struct {
		name  string
		got   []piece
		wants []piece
	}{
		{"nothing", piecesOf(0, 4, 16), nil},
		{"one short piece", piecesOf(12, 4, 16), []piece{{0, 12}}},
		{"limit not a multiple of the element", piecesOf(40, 8, 20), []piece{{0, 16}, {16, 32}, {32, 40}}},
		{"limit below the element", piecesOf(6, 2, 1), []piece{{0, 2}, {2, 4}, {4, 6}}},
		{"a reduction of 64 MiB", reductionPieces(64<<20, 4), []piece{{0, 64 << 20}}},
		{"a reduction of nothing", reductionPieces(0, 2), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.wants, tt.got) })
	}
}
