package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// requireErr requires err to match both sentinel and class and, if given, to mention each of words.
func requireErr(t *testing.T, err, sentinel, class error, words ...string) {
	t.Helper()
	require.ErrorIs(t, err, sentinel)
	require.ErrorIs(t, err, class)
	for _, w := range words {
		require.Contains(t, err.Error(), w)
	}
}

// rawDial connects to addr the way a stray program would.
func rawDial(t *testing.T, addr netip.AddrPort) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// requireClosedByPeer requires the other end to close c soon: a read ends with EOF, or with a
// reset when the other end closed with our bytes unread.
func requireClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was not closed by the other end")
	}
}

func TestRootUnreachable(t *testing.T) {
	addr := hostPort("127.0.0.1", freePort(t, "127.0.0.1"))
	id := encodeUniqueID(netip.MustParseAddrPort(addr), 42)
	start := time.Now()
	_, err := Join(context.Background(), id, 1, 2, quiet(300*time.Millisecond))
	requireErr(t, err, ErrUnreachable, errs.ErrSystem, addr)
	t.Logf("gave up after %v: %v", time.Since(start), err)

	// JoinAddr: rank 1 dials a root that rank 0 never starts.
	_, err = JoinAddr(context.Background(), addr, 1, 2, quiet(300*time.Millisecond))
	requireErr(t, err, ErrUnreachable, errs.ErrSystem, addr)
}

func TestRootTimeoutNamesMissingRanks(t *testing.T) {
	root, err := NewRoot(quiet(300 * time.Millisecond))
	require.NoError(t, err)
	defer root.Close()
	const n = 6
	_, joinErrs := joinAll(t, 3, func(i int) (*TCP, error) {
		rank := []int{0, 2, 3}[i]
		return Join(context.Background(), root.ID(), rank, n, quiet(5*time.Second))
	})
	err = root.Wait()
	requireErr(t, err, ErrTimeout, errs.ErrSystem, "ranks 1,4-5 of 6 never joined")
	t.Log("root:", err)
	for _, err := range joinErrs {
		requireErr(t, err, ErrTimeout, errs.ErrSystem, "ranks 1,4-5 of 6 never joined")
	}
	t.Log("rank:", joinErrs[0])
}

func TestRootTimeoutNoRankJoined(t *testing.T) {
	root, err := NewRoot(quiet(100 * time.Millisecond))
	require.NoError(t, err)
	defer root.Close()
	requireErr(t, root.Wait(), ErrTimeout, errs.ErrSystem, "no rank joined")
}

func TestJoinAddrTimeoutNamesMissingRanks(t *testing.T) {
	addr := hostPort("127.0.0.1", freePort(t, "127.0.0.1"))
	_, joinErrs := joinAll(t, 2, func(rank int) (*TCP, error) {
		return JoinAddr(context.Background(), addr, rank, 3, quiet(time.Second))
	})
	for rank, err := range joinErrs {
		requireErr(t, err, ErrTimeout, errs.ErrSystem, "ranks 2 of 3 never joined")
		t.Logf("rank %d: %v", rank, err)
	}
}

func TestRecvTimeoutNamesPeerAndTag(t *testing.T) {
	ranks := bootJob(t, 2, quiet(200*time.Millisecond))
	start := time.Now()
	_, err := ranks[1].Recv(context.Background(), 0, 5)
	requireErr(t, err, ErrTimeout, errs.ErrSystem, "peer 0", "tag 5")
	t.Logf("after %v: %v", time.Since(start), err)

	// The context's deadline counts too when it is the earlier one.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = ranks[0].RecvInto(ctx, 1, 6, make([]byte, 1))
	requireErr(t, err, ErrTimeout, errs.ErrSystem, "peer 1", "tag 6")
}

// TestTimeoutChangedAfterJoin: a rank joined without Options.Timeout bounds each later operation
// by the configuration's timeout as it is when the operation starts, so that
// mscclppSetBootstrapConnTimeout (config.BootstrapTimeout.Set) applies to a bootstrap that exists
// already, as core.h says; an Options.Timeout given at join wins over it.
func TestTimeoutChangedAfterJoin(t *testing.T) {
	tests := []struct {
		name          string
		opts          time.Duration // Options.Timeout; 0: the configuration's
		atJoin, later time.Duration // the configuration's timeout at join and after it
		min, max      time.Duration // how long the unanswered Recv may take
	}{
		{"shortened", 0, 10 * time.Second, 300 * time.Millisecond, 250 * time.Millisecond, 3 * time.Second},
		{"lengthened", 0, 300 * time.Millisecond, 1500 * time.Millisecond, 1400 * time.Millisecond, 5 * time.Second},
		{"Options.Timeout wins", 300 * time.Millisecond, 10 * time.Second, time.Hour, 250 * time.Millisecond, 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(config.BootstrapTimeout.Reset)
			config.BootstrapTimeout.Set(tc.atJoin)
			ranks := bootJob(t, 2, quiet(tc.opts))
			config.BootstrapTimeout.Set(tc.later)

			start := time.Now()
			_, err := ranks[1].Recv(context.Background(), 0, 5) // nobody sends it
			elapsed := time.Since(start)
			requireErr(t, err, ErrTimeout, errs.ErrSystem, "peer 0", "tag 5")
			assert.GreaterOrEqual(t, elapsed, tc.min)
			assert.Less(t, elapsed, tc.max)
		})
	}
}

func TestCanceledContext(t *testing.T) {
	ranks := bootJob(t, 2, quiet(10*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := ranks[0].Recv(ctx, 1, 0)
	requireErr(t, err, ErrCanceled, errs.ErrSystem)
	require.ErrorIs(t, err, context.Canceled)
}

func TestBadMagicRefusedByRoot(t *testing.T) {
	var logs testutil.LogBuffer
	opts := quiet(5 * time.Second)
	opts.Logger = logs.Logger(slog.LevelWarn)
	root, join := newJob(t, opts)
	rootAddr := root.addr

	garbage := rawDial(t, rootAddr)
	_, err := garbage.Write([]byte("GET / HTTP/1.0\r\n\r\nand then some more bytes"))
	require.NoError(t, err)

	wrongMagic := rawDial(t, rootAddr)
	_, err = wrongMagic.Write(encodeHello(hello{magic: root.magic + 1, version: protocolVersion, rank: 0, nranks: 2,
		addr: netip.MustParseAddrPort("127.0.0.1:1")}))
	require.NoError(t, err)

	silent := rawDial(t, rootAddr) // never writes; must not hold up the job

	requireClosedByPeer(t, garbage)
	requireClosedByPeer(t, wrongMagic)
	ranks := mustJoinAll(t, 2, func(r int) (*TCP, error) { return join(r, 2) })
	require.NoError(t, root.Wait())
	checkJob(t, ranks)
	requireClosedByPeer(t, silent)
	assert.Contains(t, logs.String(), ErrBadMagic.Error())
}

func TestBadMagicRefusedByRank(t *testing.T) {
	var logs testutil.LogBuffer
	opts := quiet(5 * time.Second)
	opts.Logger = logs.Logger(slog.LevelWarn)
	ranks := bootJob(t, 3, opts)

	for _, msg := range [][]byte{
		[]byte("garbage that is long enough to be a handshake"),
		encodeHandshake(handshake{magic: ranks[0].magic ^ 1, version: protocolVersion, rank: 1, nranks: 3}),
		encodeHandshake(handshake{magic: ranks[0].magic, version: protocolVersion + 1, rank: 1, nranks: 3}),
	} {
		c := rawDial(t, ranks[0].addr)
		_, err := c.Write(msg)
		require.NoError(t, err)
		requireClosedByPeer(t, c)
	}
	assert.Contains(t, logs.String(), ErrBadMagic.Error())

	// The job still works, including the link from rank 1 to rank 0, which the strays claimed.
	ctx := context.Background()
	require.NoError(t, ranks[1].Send(ctx, 0, 9, []byte("still here")))
	got, err := ranks[0].Recv(ctx, 1, 9)
	require.NoError(t, err)
	require.Equal(t, "still here", string(got))
	checkJob(t, ranks)
}

func TestNranksMismatch(t *testing.T) {
	root, join := newJob(t, quiet(5*time.Second))
	_, joinErrs := joinAll(t, 2, func(r int) (*TCP, error) { return join(r, 2+r) }) // rank 0 says 2, rank 1 says 3
	for r, err := range joinErrs {
		requireErr(t, err, ErrNranksMismatch, errs.ErrRemote, "nranks=2", "nranks=3")
		t.Logf("rank %d: %v", r, err)
	}
	requireErr(t, root.Wait(), ErrNranksMismatch, errs.ErrRemote, "nranks=2", "nranks=3")

	// A peer link whose handshake disagrees is refused too.
	var logs testutil.LogBuffer
	opts := quiet(5 * time.Second)
	opts.Logger = logs.Logger(slog.LevelWarn)
	ranks := bootJob(t, 2, opts)
	c := rawDial(t, ranks[0].addr)
	_, err := c.Write(encodeHandshake(handshake{magic: ranks[0].magic, version: protocolVersion, rank: 1, nranks: 5}))
	require.NoError(t, err)
	requireClosedByPeer(t, c)
	assert.Contains(t, logs.String(), ErrNranksMismatch.Error())
}

func TestDuplicateRank(t *testing.T) {
	root, join := newJob(t, quiet(time.Second))
	// Two ranks claim rank 1 of 3; rank 0 may join before the root aborts, or find it gone.
	_, joinErrs := joinAll(t, 3, func(i int) (*TCP, error) { return join(min(i, 1), 3) })
	for _, err := range joinErrs[1:] {
		requireErr(t, err, ErrDuplicateRank, errs.ErrRemote, "rank 1")
	}
	require.Error(t, joinErrs[0])
	t.Logf("duplicates: %v; rank 0: %v", joinErrs[1], joinErrs[0])
	requireErr(t, root.Wait(), ErrDuplicateRank, errs.ErrRemote, "rank 1")
}

func TestRankOutOfRange(t *testing.T) {
	// Checked locally, before any network: the id names no root, so a dial would time out.
	for _, c := range []struct{ rank, nranks int }{{-1, 4}, {4, 4}, {100, 4}} {
		_, err := Join(context.Background(), UniqueID{}, c.rank, c.nranks, quiet(time.Hour))
		requireErr(t, err, ErrRankOutOfRange, errs.ErrInvalidArgument)
		_, err = JoinAddr(context.Background(), "127.0.0.1:1", c.rank, c.nranks, quiet(time.Hour))
		requireErr(t, err, ErrRankOutOfRange, errs.ErrInvalidArgument)
	}

	// Peers out of range.
	ranks := bootJob(t, 2, quiet(5*time.Second))
	ctx := context.Background()
	for _, peer := range []int{-1, 2} {
		requireErr(t, ranks[0].Send(ctx, peer, 0, nil), ErrRankOutOfRange, errs.ErrInvalidArgument)
		_, err := ranks[0].Recv(ctx, peer, 0)
		requireErr(t, err, ErrRankOutOfRange, errs.ErrInvalidArgument)
		requireErr(t, ranks[0].RecvInto(ctx, peer, 0, nil), ErrRankOutOfRange, errs.ErrInvalidArgument)
	}

	// Checked by the root: clients with the right magic claim rank 5 of 4, and (once the job's
	// size is known) rank 3 of a job of 2. Each costs only its own connection, which gets the
	// error; the real ranks then join and the job runs (before, one such hello aborted the job).
	logs := &testutil.LogBuffer{}
	opts := Options{Timeout: 10 * time.Second, Logger: logs.Logger(slog.LevelDebug)}
	root, join := newJob(t, opts)
	joined := make(chan error, 1)
	go func() { // rank 0 first, so that the root knows the job's size
		b, err := join(0, 2)
		if err == nil {
			t.Cleanup(func() { b.Close() })
		}
		joined <- err
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "bootstrap rank joined") }, 5*time.Second, time.Millisecond)
	for _, claim := range []struct{ rank, nranks int }{{5, 4}, {3, 2}} {
		c := rawDial(t, root.addr)
		_, err := c.Write(encodeHello(hello{magic: root.magic, version: protocolVersion, rank: claim.rank, nranks: claim.nranks,
			addr: netip.MustParseAddrPort("127.0.0.1:1")}))
		require.NoError(t, err)
		reply, err := io.ReadAll(c)
		require.NoError(t, err)
		h, err := decodeReplyHeader(reply[:replyHeaderBytes])
		require.NoError(t, err)
		require.Equal(t, codeRankOutOfRange, h.code)
		assert.Contains(t, string(reply[replyHeaderBytes:]), fmt.Sprintf("claims rank %d of %d", claim.rank, claim.nranks))
	}
	b1, err := join(1, 2)
	require.NoError(t, err, "the job goes on")
	defer b1.Close()
	require.NoError(t, <-joined)
	require.NoError(t, root.Wait())
	assert.Contains(t, logs.String(), "refused a connection")
}

func TestPeerClosedMidRecv(t *testing.T) {
	ranks := bootJob(t, 2, quiet(10*time.Second))
	ctx := context.Background()
	// A message sent before the close is still delivered.
	require.NoError(t, ranks[0].Send(ctx, 1, 3, []byte("last words")))

	var wg sync.WaitGroup
	var recvErr error
	var elapsed time.Duration
	wg.Go(func() {
		start := time.Now()
		_, recvErr = ranks[1].Recv(ctx, 0, 7)
		elapsed = time.Since(start)
	})
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, ranks[0].Close())
	wg.Wait()
	requireErr(t, recvErr, ErrPeerClosed, errs.ErrRemote, "peer 0")
	assert.Less(t, elapsed, 5*time.Second, "Recv must fail when the peer closes, not at the deadline")
	t.Logf("after %v: %v", elapsed, recvErr)

	got, err := ranks[1].Recv(ctx, 0, 3)
	require.NoError(t, err)
	require.Equal(t, "last words", string(got))

	// Later receives fail at once; sends fail once the close is noticed.
	_, err = ranks[1].Recv(ctx, 0, 8)
	requireErr(t, err, ErrPeerClosed, errs.ErrRemote)
	require.Eventually(t, func() bool {
		return ranks[1].Send(ctx, 0, 1, []byte("anyone?")) != nil
	}, 5*time.Second, 10*time.Millisecond)
	requireErr(t, ranks[1].Send(ctx, 0, 1, nil), ErrPeerClosed, errs.ErrRemote)
}

func TestMessageSize(t *testing.T) {
	header := func(tag, size uint64) []byte {
		b := make([]byte, frameHeaderBytes)
		encodeFrameHeader(b, frameHeader{tag: int(tag), size: int(size)})
		return b
	}
	tests := []struct {
		name  string
		write []byte
		words []string
	}{
		{"truncated payload", append(header(4, 100), make([]byte, 10)...), []string{"announced 100 bytes, got 10"}},
		{"truncated header", header(4, 100)[:9], []string{"9 bytes into a frame header"}},
		{"over the limit", header(4, maxFrameBytes+1), []string{"exceeds"}},
		{"huge", header(4, 1<<63), []string{"exceeds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// In a ring of 3, rank 0 has an incoming link from rank 2 only, so a raw
			// connection may pose as rank 1.
			ranks := bootJob(t, 3, quiet(10*time.Second))
			c := rawDial(t, ranks[0].addr)
			_, err := c.Write(encodeHandshake(handshake{magic: ranks[0].magic, version: protocolVersion, rank: 1, nranks: 3}))
			require.NoError(t, err)
			_, err = c.Write(header(4, 3))
			require.NoError(t, err)
			_, err = c.Write([]byte("ok!"))
			require.NoError(t, err)
			_, err = c.Write(tt.write)
			require.NoError(t, err)
			require.NoError(t, c.Close())

			start := time.Now()
			got, err := ranks[0].Recv(context.Background(), 1, 4)
			require.NoError(t, err)
			require.Equal(t, "ok!", string(got))
			_, err = ranks[0].Recv(context.Background(), 1, 4)
			requireErr(t, err, ErrMessageSize, errs.ErrRemote, tt.words...)
			assert.Less(t, time.Since(start), 5*time.Second)
			t.Log(err)
		})
	}
}

func TestRecvIntoSizeMismatch(t *testing.T) {
	ranks := bootJob(t, 2, quiet(5*time.Second))
	ctx := context.Background()
	require.NoError(t, ranks[0].Send(ctx, 1, 0, []byte("0123456789")))
	require.NoError(t, ranks[0].Send(ctx, 1, 0, []byte("abc")))
	err := ranks[1].RecvInto(ctx, 0, 0, make([]byte, 8))
	requireErr(t, err, ErrMessageSize, errs.ErrRemote, "got 10 bytes, want 8")
	// The mismatched message was consumed; the next one is next.
	buf := make([]byte, 3)
	require.NoError(t, ranks[1].RecvInto(ctx, 0, 0, buf))
	require.Equal(t, "abc", string(buf))
}

func TestClosed(t *testing.T) {
	ranks := bootJob(t, 2, quiet(10*time.Second))
	ctx := context.Background()

	// Close unblocks a blocked Recv with ErrClosed.
	var wg sync.WaitGroup
	var recvErr error
	wg.Go(func() { _, recvErr = ranks[0].Recv(ctx, 1, 0) })
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, ranks[0].Close())
	wg.Wait()
	requireErr(t, recvErr, ErrClosed, errs.ErrInvalidUsage)

	b := ranks[0]
	require.NoError(t, b.Close(), "Close is idempotent")
	_, err := b.Recv(ctx, 1, 0)
	requireErr(t, err, ErrClosed, errs.ErrInvalidUsage)
	requireErr(t, b.RecvInto(ctx, 1, 0, nil), ErrClosed, errs.ErrInvalidUsage)
	requireErr(t, b.Send(ctx, 1, 0, nil), ErrClosed, errs.ErrInvalidUsage)
	requireErr(t, b.AllGather(ctx, make([]byte, 2), 1), ErrClosed, errs.ErrInvalidUsage)
	requireErr(t, b.Barrier(ctx), ErrClosed, errs.ErrInvalidUsage)

	// A root too.
	root, err := NewRoot(quiet(10 * time.Second))
	require.NoError(t, err)
	require.NoError(t, root.Close())
	require.NoError(t, root.Close())
	requireErr(t, root.Wait(), ErrClosed, errs.ErrInvalidUsage)
}

func TestRootCloseAbortsJoinedRanks(t *testing.T) {
	root, join := newJob(t, quiet(10*time.Second))
	var wg sync.WaitGroup
	var joinErr error
	wg.Go(func() { _, joinErr = join(0, 2) })
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, root.Close())
	wg.Wait()
	requireErr(t, joinErr, ErrRootAborted, errs.ErrRemote, "root closed")
}

func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	for _, nranks := range []int{0, -1, maxRanks + 1} {
		_, err := Join(ctx, UniqueID{}, 0, nranks, quiet(time.Hour))
		require.ErrorIs(t, err, errs.ErrInvalidArgument, "nranks %d", nranks)
		_, err = JoinAddr(ctx, "127.0.0.1:1", 0, nranks, quiet(time.Hour))
		require.ErrorIs(t, err, errs.ErrInvalidArgument, "nranks %d", nranks)
	}
	_, err := Join(ctx, UniqueID{}, 0, 1, quiet(time.Hour))
	require.ErrorIs(t, err, errs.ErrInvalidArgument, "corrupt id")
	_, err = JoinAddr(ctx, "not an address", 0, 1, quiet(time.Hour))
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = Join(ctx, encodeUniqueID(netip.MustParseAddrPort("127.0.0.1:1"), 1), 0, 1,
		Options{Timeout: time.Hour, Interface: "no-such-interface0"})
	require.ErrorIs(t, err, errs.ErrInvalidArgument, "unknown interface")

	ranks := bootJob(t, 2, quiet(5*time.Second))
	b := ranks[0]
	require.ErrorIs(t, b.Send(ctx, 1, -1, nil), errs.ErrInvalidArgument)
	_, err = b.Recv(ctx, 1, -2)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	require.ErrorIs(t, b.RecvInto(ctx, 1, tagAllGather, nil), errs.ErrInvalidArgument)
	require.ErrorIs(t, b.AllGather(ctx, make([]byte, 10), -1), errs.ErrInvalidArgument)
	require.ErrorIs(t, b.AllGather(ctx, make([]byte, 7), 4), errs.ErrInvalidArgument)
	require.ErrorIs(t, b.AllGather(ctx, nil, 1), errs.ErrInvalidArgument)
}

// TestSizeLimits: a size beyond what a frame carries, and an nranks beyond maxRanks, are refused
// at once with an invalid-argument error that states the limit and the value given. A RecvInto
// of such a size used to wait out the whole timeout first.
func TestSizeLimits(t *testing.T) {
	ranks := bootJob(t, 2, quiet(5*time.Second))
	b, ctx := ranks[0], context.Background()
	big := make([]byte, maxFrameBytes+1) // never written: its pages stay untouched
	tests := []struct {
		name  string
		call  func() error
		words []string
	}{
		{"send", func() error { return b.Send(ctx, 1, 0, big) }, []string{"1073741825", "1073741824"}},
		{"recv into", func() error { return b.RecvInto(ctx, 1, 0, big) }, []string{"1073741825", "1073741824"}},
		{"recv into from itself", func() error { return b.RecvInto(ctx, 0, 0, big) }, []string{"1073741825", "1073741824"}},
		{"all-gather", func() error { return b.AllGather(ctx, big, maxFrameBytes+1) }, []string{"1073741825", "1073741824"}},
		{"join", func() error {
			_, err := Join(ctx, UniqueID{}, 0, maxRanks+1, quiet(time.Hour))
			return err
		}, []string{"nranks is 1048577, want 1 to 1048576"}},
		{"join addr", func() error {
			_, err := JoinAddr(ctx, "127.0.0.1:1", 0, maxRanks+1, quiet(time.Hour))
			return err
		}, []string{"nranks is 1048577, want 1 to 1048576"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			require.ErrorIs(t, err, errs.ErrInvalidArgument)
			for _, w := range tc.words {
				assert.ErrorContains(t, err, w)
			}
			assert.NotContains(t, err.Error(), "at least 1")
			assert.Less(t, time.Since(start), time.Second, "refused at once")
		})
	}
}

func TestPeerFailed(t *testing.T) {
	ranks := bootJob(t, 2, quiet(10*time.Second))
	ctx := context.Background()
	require.NoError(t, ranks[0].Send(ctx, 1, 3, []byte("a")))
	require.NoError(t, ranks[1].Send(ctx, 0, 3, []byte("b")))
	for _, b := range ranks {
		require.NoError(t, b.PeerErr(), "rank %d before any failure", b.Rank())
	}

	start := time.Now()
	require.NoError(t, ranks[1].Close())
	select {
	case <-ranks[0].PeerFailed():
	case <-time.After(5 * time.Second):
		t.Fatal("rank 0 did not see rank 1's links end")
	}
	t.Logf("rank 0 saw it after %v: %v", time.Since(start), ranks[0].PeerErr())
	requireErr(t, ranks[0].PeerErr(), ErrPeerClosed, errs.ErrRemote, "peer 1")
	var op *errs.OpError
	require.ErrorAs(t, ranks[0].PeerErr(), &op)
	assert.Equal(t, 1, op.Peer)
	// PeerGone tells the same per peer.
	requireErr(t, ranks[0].PeerGone(1), ErrPeerClosed, errs.ErrRemote, "peer 1")
	assert.NoError(t, ranks[0].PeerGone(0), "no link with itself")

	// Messages delivered before the failure can still be taken.
	got, err := ranks[0].Recv(ctx, 1, 3)
	require.NoError(t, err)
	assert.Equal(t, "b", string(got))

	// A rank that closed its own bootstrap notes nothing when its peers go.
	require.NoError(t, ranks[0].Close())
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, ranks[1].PeerErr())
}

// TestJoinAddrKey: in ip:port mode with a key (Options.Key, MSCCLPP_BOOTSTRAP_KEY), a process
// that knows only the address computes the keyless magic; its hello claiming a real rank before
// that rank arrives is refused (its connection only), and the real rank, with the key, then joins.
// Without a key the same hello would take the rank's slot.
func TestJoinAddrKey(t *testing.T) {
	port := freePort(t, "127.0.0.1")
	addr := hostPort("127.0.0.1", port)
	logs := &testutil.LogBuffer{}
	opts := Options{Timeout: 10 * time.Second, Key: "s3cret", Logger: logs.Logger(slog.LevelDebug)}
	first := make(chan error, 1)
	go func() {
		b, err := JoinAddr(context.Background(), addr, 0, 2, opts)
		if err == nil {
			t.Cleanup(func() { b.Close() })
		}
		first <- err
	}()
	root := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	var c *net.TCPConn
	require.Eventually(t, func() bool {
		conn, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(root))
		c = conn
		return err == nil
	}, 5*time.Second, time.Millisecond, "rank 0's root never listened")
	defer c.Close()
	_, err := c.Write(encodeHello(hello{magic: magicForAddr(root, ""), version: protocolVersion, rank: 1, nranks: 2,
		addr: netip.MustParseAddrPort("127.0.0.1:1")}))
	require.NoError(t, err)
	_, _ = io.ReadAll(c) // the root closes the stranger's connection
	assert.Contains(t, logs.String(), "magic")

	b1, err := JoinAddr(context.Background(), addr, 1, 2, opts)
	require.NoError(t, err, "the real rank 1 joins: the stranger did not take its slot")
	defer b1.Close()
	require.NoError(t, <-first)
}

// TestPendingLimit: a peer that sends more bytes ahead of their receives than
// MSCCLPP_BOOTSTRAP_MAX_PENDING allows (64 MiB here) has its connection failed with a named error,
// which the receiver's next Recv from it reports; the bytes it sent before stay receivable, and
// the rank holds no more than the limit.
func TestPendingLimit(t *testing.T) {
	testutil.Override(t, config.BootstrapMaxPending, 64<<20)
	ranks := bootJob(t, 2, quiet(20*time.Second))
	ctx := context.Background()
	chunk := make([]byte, 1<<20)
	var sendErr error
	for i := 0; i < 80 && sendErr == nil; i++ { // tag 9, which rank 1 does not receive yet
		sendErr = ranks[0].Send(ctx, 1, 9, chunk)
	}
	_, err := ranks[1].Recv(ctx, 0, 10)
	requireErr(t, err, ErrPendingLimit, errs.ErrRemote, "MSCCLPP_BOOTSTRAP_MAX_PENDING=67108864")
	for range 64 { // what arrived within the limit is still there
		got, err := ranks[1].Recv(ctx, 0, 9)
		require.NoError(t, err)
		require.Len(t, got, len(chunk))
	}
	ranks[1].box.mu.Lock()
	assert.LessOrEqual(t, ranks[1].box.pending[0], int64(64<<20))
	ranks[1].box.mu.Unlock()
	t.Logf("sender: %v", sendErr)
}
