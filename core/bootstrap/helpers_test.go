package bootstrap

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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

// Where freePort looks for a port: below the kernel's ephemeral range (Linux's default starts at
// defaultEphemeralLow), where no socket that binds port 0 is given one.
const (
	lowestTestPort      = 10000
	defaultEphemeralLow = 32768
	freePortAttempts    = 100
)

// freePort returns a TCP port that was free on host a moment ago. It is taken below the
// ephemeral range: a port of that range, once closed, can be handed to any socket that binds
// port 0 (another rank's listener in the same test, a test of another package) before the test
// binds it, which made the ip:port subtests fail now and then with "address already in use".
func freePort(t *testing.T, host string) int {
	t.Helper()
	hi := ephemeralLow()
	if hi-lowestTestPort < freePortAttempts { // an unusual ephemeral range: fall back to port 0
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		return port
	}
	for range freePortAttempts {
		port := lowestTestPort + rand.IntN(hi-lowestTestPort)
		ln, err := net.Listen("tcp", hostPort(host, port))
		if err != nil {
			continue // taken
		}
		require.NoError(t, ln.Close())
		return port
	}
	t.Fatalf("no free port on %s below %d after %d attempts", host, hi, freePortAttempts)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux), or
// defaultEphemeralLow where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return defaultEphemeralLow
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return defaultEphemeralLow
	}
	return low
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
