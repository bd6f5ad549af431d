package bootstrap

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// checkJob checks that every rank knows the same address table and that an all-gather and a
// barrier work.
func checkJob(t *testing.T, ranks []*TCP) {
	t.Helper()
	n := len(ranks)
	for r, b := range ranks {
		require.Equal(t, r, b.Rank())
		require.Equal(t, n, b.Size())
		require.Equal(t, ranks[0].peers, b.peers, "rank %d's address table", r)
		require.Equal(t, b.addr, b.peers[r])
	}
	const k = 8
	onEveryRank(t, ranks, func(b *TCP) error {
		buf := make([]byte, n*k)
		copy(buf[b.Rank()*k:], fmt.Sprintf("rank%04d", b.Rank()))
		if err := b.AllGather(context.Background(), buf, k); err != nil {
			return err
		}
		for r := range n {
			if got, want := string(buf[r*k:(r+1)*k]), fmt.Sprintf("rank%04d", r); got != want {
				return fmt.Errorf("block %d is %q, want %q", r, got, want)
			}
		}
		return b.Barrier(context.Background())
	})
}

func TestBootstrap(t *testing.T) {
	forms := []struct {
		name string
		host string // for JoinAddr; empty means the UniqueID form
		addr func(port int) string
	}{
		{name: "UniqueID"},
		{name: "ip:port", host: "127.0.0.1", addr: func(p int) string { return hostPort("127.0.0.1", p) }},
		{name: "if:ip:port", host: "127.0.0.1", addr: func(p int) string { return "lo:" + hostPort("127.0.0.1", p) }},
		{name: "[ip6]:port", host: "::1", addr: func(p int) string { return hostPort("::1", p) }},
	}
	for _, form := range forms {
		for _, n := range []int{1, 2, 8, 64} {
			t.Run(fmt.Sprintf("%s/%d", form.name, n), func(t *testing.T) {
				if form.host == "::1" && !haveIPv6Loopback() {
					t.Skip("::1 is not available")
				}
				opts := quiet(10 * time.Second)
				start := time.Now()
				var ranks []*TCP
				if form.addr == nil {
					ranks = bootJob(t, n, opts)
				} else {
					addr := form.addr(freePort(t, form.host))
					ranks = mustJoinAll(t, n, func(r int) (*TCP, error) {
						return JoinAddr(context.Background(), addr, r, n, opts)
					})
				}
				checkJob(t, ranks)
				elapsed := time.Since(start)
				t.Logf("%d ranks bootstrapped and all-gathered in %v", n, elapsed)
				assert.Less(t, elapsed, 5*time.Second)
			})
		}
	}
}

func TestJoinAddrLoopbackListens(t *testing.T) {
	addr := hostPort("127.0.0.1", freePort(t, "127.0.0.1"))
	ranks := mustJoinAll(t, 2, func(r int) (*TCP, error) {
		return JoinAddr(context.Background(), addr, r, 2, quiet(5*time.Second))
	})
	for _, b := range ranks {
		assert.True(t, b.addr.Addr().IsLoopback(), "rank %d listens on %s", b.Rank(), b.addr)
	}
}

func TestSendRecvAnyOrder(t *testing.T) {
	const n, tags, perTag = 4, 5, 3
	ranks := bootJob(t, n, quiet(10*time.Second))
	msg := func(src, dst, tag, seq int) []byte { return fmt.Appendf(nil, "%d->%d tag %d #%d", src, dst, tag, seq) }
	onEveryRank(t, ranks, func(b *TCP) error {
		ctx := context.Background()
		// Send to every peer (self included) on every tag, peers and tags shuffled; a tag's
		// messages keep their order.
		type dest struct{ peer, tag int }
		var dests []dest
		for p := range n {
			for tag := range tags {
				dests = append(dests, dest{p, tag})
			}
		}
		rand.Shuffle(len(dests), func(i, j int) { dests[i], dests[j] = dests[j], dests[i] })
		buf := make([]byte, 0, 64)
		for _, d := range dests {
			for seq := range perTag {
				buf = append(buf[:0], msg(b.Rank(), d.peer, d.tag, seq)...)
				if err := b.Send(ctx, d.peer, d.tag*1000, buf); err != nil {
					return err
				}
				clear(buf[:cap(buf)]) // the caller may reuse data once Send returns
			}
		}
		// Receive in the opposite order.
		for i := len(dests) - 1; i >= 0; i-- {
			src, tag := dests[i].peer, dests[i].tag
			for seq := range perTag {
				got, err := b.Recv(ctx, src, tag*1000)
				if err != nil {
					return err
				}
				if want := msg(src, b.Rank(), tag, seq); !bytes.Equal(got, want) {
					return fmt.Errorf("got %q, want %q", got, want)
				}
			}
		}
		return nil
	})
}

func TestConcurrentSendersToOnePeer(t *testing.T) {
	const senders, msgs = 8, 50
	ranks := bootJob(t, 2, quiet(10*time.Second))
	ctx := context.Background()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range msgs {
				assert.NoError(t, ranks[0].Send(ctx, 1, s, []byte{byte(i)}))
			}
		})
	}
	for s := range senders {
		for i := range msgs {
			got, err := ranks[1].Recv(ctx, 0, s)
			require.NoError(t, err)
			require.Equal(t, []byte{byte(i)}, got)
		}
	}
	wg.Wait()
}

func TestAllGatherRounds(t *testing.T) {
	const n = 4
	ranks := bootJob(t, n, quiet(10*time.Second))
	for _, size := range []int{0, 1, 1000, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			rounds := 5
			if size >= 1<<20 {
				rounds = 2
			}
			onEveryRank(t, ranks, func(b *TCP) error {
				ctx := context.Background()
				for round := range rounds {
					buf := make([]byte, n*size+7) // longer than needed: the tail is left alone
					for r := range n {
						if r == b.Rank() {
							fillBlock(buf[r*size:(r+1)*size], r, round)
						}
					}
					if err := b.AllGather(ctx, buf, size); err != nil {
						return err
					}
					for r := range n {
						want := make([]byte, size)
						fillBlock(want, r, round)
						if !bytes.Equal(buf[r*size:(r+1)*size], want) {
							return fmt.Errorf("round %d: block %d is wrong", round, r)
						}
					}
					if !bytes.Equal(buf[n*size:], make([]byte, 7)) {
						return fmt.Errorf("round %d: the tail was written", round)
					}
					if err := b.Barrier(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

func fillBlock(b []byte, rank, round int) {
	for i := range b {
		b[i] = byte(rank*31 + round*7 + i)
	}
}

func TestBarrierWaitsForEveryRank(t *testing.T) {
	const n = 4
	ranks := bootJob(t, n, quiet(10*time.Second))
	var mu sync.Mutex
	entered := 0
	onEveryRank(t, ranks, func(b *TCP) error {
		if b.Rank() == n-1 {
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		entered++
		mu.Unlock()
		if err := b.Barrier(context.Background()); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if entered != n {
			return fmt.Errorf("left the barrier with %d of %d ranks entered", entered, n)
		}
		return nil
	})
}

// TestOverlappingCollectivesRefused: a collective call (AllGather, Barrier) made on a rank while
// another is in progress there fails at once with an invalid-usage error naming the call in
// progress. Overlapping calls share tags, so they cannot be matched across ranks: they used to run
// both and take each other's messages. The call in progress still completes with the right bytes.
func TestOverlappingCollectivesRefused(t *testing.T) {
	const k = 1 << 16
	// allGather returns a collective call: an all-gather of k-byte blocks that checks them.
	allGather := func(b *TCP) error {
		buf := make([]byte, 2*k)
		fillBlock(buf[b.Rank()*k:(b.Rank()+1)*k], b.Rank(), 0)
		if err := b.AllGather(context.Background(), buf, k); err != nil {
			return err
		}
		for r := range 2 {
			want := make([]byte, k)
			fillBlock(want, r, 0)
			if !bytes.Equal(buf[r*k:(r+1)*k], want) {
				return fmt.Errorf("block %d is wrong", r)
			}
		}
		return nil
	}
	barrier := func(b *TCP) error { return b.Barrier(context.Background()) }
	allGatherInto := func(ctx context.Context, b *TCP) error { return b.AllGather(ctx, make([]byte, 2*k), k) }
	barrierCtx := func(ctx context.Context, b *TCP) error { return b.Barrier(ctx) }

	tests := []struct {
		name       string
		inProgress func(b *TCP) error
		overlap    func(ctx context.Context, b *TCP) error
		want       string // what the refusal names
	}{
		{"all-gather during all-gather", allGather, allGatherInto, "all-gather in progress"},
		{"barrier during all-gather", allGather, barrierCtx, "all-gather in progress"},
		{"all-gather during barrier", barrier, allGatherInto, "barrier in progress"},
		{"barrier during barrier", barrier, barrierCtx, "barrier in progress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ranks := bootJob(t, 2, quiet(10*time.Second))
			first := make(chan error, 1)
			go func() { first <- tc.inProgress(ranks[0]) }()
			time.Sleep(200 * time.Millisecond) // rank 0's call now waits for rank 1's

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err := tc.overlap(ctx, ranks[0])
			require.ErrorIs(t, err, ErrCollectiveInProgress)
			require.ErrorIs(t, err, errs.ErrInvalidUsage)
			assert.ErrorContains(t, err, tc.want)
			assert.Less(t, time.Since(start), time.Second, "refused at once")

			require.NoError(t, tc.inProgress(ranks[1]))
			require.NoError(t, <-first)
			// Once it returned, the next collective call runs.
			onEveryRank(t, ranks, allGather)
		})
	}
}

// TestConcurrentLargeSendsStayWhole: two goroutines sending many large messages to one peer with
// one tag at the same time never interleave their bytes: every message arrives whole (each word
// names its sender, its message and its place), and each sender's messages arrive in order.
func TestConcurrentLargeSendsStayWhole(t *testing.T) {
	const senders, msgs, words, tag = 2, 32, 64 << 10, 7 // 512 KiB messages
	ranks := bootJob(t, 2, quiet(20*time.Second))
	word := func(s, i, w int) uint64 { return uint64(s)<<56 | uint64(i)<<32 | uint64(w) }
	ctx := context.Background()
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			msg := make([]byte, 8*words)
			for i := range msgs {
				for w := range words {
					binary.LittleEndian.PutUint64(msg[8*w:], word(s, i, w))
				}
				if err := ranks[0].Send(ctx, 1, tag, msg); err != nil {
					t.Errorf("sender %d message %d: %v", s, i, err)
					return
				}
			}
		})
	}
	next := make([]int, senders) // the next message expected of each sender
	for range senders * msgs {
		got, err := ranks[1].Recv(ctx, 0, tag)
		require.NoError(t, err)
		require.Len(t, got, 8*words)
		first := binary.LittleEndian.Uint64(got)
		s, i := int(first>>56), int(first>>32&0xffffff)
		require.Less(t, s, senders, "first word %#x", first)
		require.Equal(t, next[s], i, "sender %d's messages out of order", s)
		next[s]++
		for w := range words {
			if v := binary.LittleEndian.Uint64(got[8*w:]); v != word(s, i, w) {
				t.Fatalf("message %d of sender %d: word %d is %#x, want %#x (messages interleaved)", i, s, w, v, word(s, i, w))
			}
		}
	}
	wg.Wait()
}
