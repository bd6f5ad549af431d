package bootstrap

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quiet returns Options with the given timeout and a logger that drops everything.
func quiet(timeout time.Duration) Options {
	return Options{Timeout: timeout, Logger: slog.New(slog.DiscardHandler)}
}

// joinAll runs join for ranks 0..n-1 concurrently and returns their results; the ranks that
// joined are closed when the test ends.
func joinAll(t *testing.T, n int, join func(rank int) (*TCP, error)) ([]*TCP, []error) {
	t.Helper()
	ranks := make([]*TCP, n)
	errors := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { ranks[r], errors[r] = join(r) })
	}
	wg.Wait()
	t.Cleanup(func() { closeAll(ranks) })
	return ranks, errors
}

// mustJoinAll is joinAll requiring every rank to join.
func mustJoinAll(t *testing.T, n int, join func(rank int) (*TCP, error)) []*TCP {
	t.Helper()
	ranks, errors := joinAll(t, n, join)
	for r, err := range errors {
		require.NoError(t, err, "rank %d", r)
	}
	return ranks
}

func closeAll(ranks []*TCP) {
	var wg sync.WaitGroup
	for _, b := range ranks {
		if b != nil {
			wg.Go(func() { b.Close() })
		}
	}
	wg.Wait()
}

// onEveryRank runs f on every rank concurrently and requires it to succeed everywhere.
func onEveryRank(t *testing.T, ranks []*TCP, f func(b *TCP) error) {
	t.Helper()
	errors := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, b := range ranks {
		wg.Go(func() { errors[i] = f(b) })
	}
	wg.Wait()
	for r, err := range errors {
		require.NoError(t, err, "rank %d", r)
	}
}

// newJob starts a root and returns a join function for its ranks.
func newJob(t *testing.T, opts Options) (*Root, func(rank, nranks int) (*TCP, error)) {
	t.Helper()
	root, err := NewRoot(opts)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return root, func(rank, nranks int) (*TCP, error) {
		return Join(context.Background(), root.ID(), rank, nranks, opts)
	}
}

// bootJob starts a root and n ranks joined to it.
func bootJob(t *testing.T, n int, opts Options) []*TCP {
	t.Helper()
	root, join := newJob(t, opts)
	ranks := mustJoinAll(t, n, func(r int) (*TCP, error) { return join(r, n) })
	require.NoError(t, root.Wait())
	return ranks
}

// freePort returns a TCP port that was free on host a moment ago.
func freePort(t *testing.T, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// haveIPv6Loopback reports whether ::1 can be listened on.
func haveIPv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
