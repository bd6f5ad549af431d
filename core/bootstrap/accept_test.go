package bootstrap

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// Variables of the helper process of TestRootAcceptsAfterRunningOutOfFiles.
const (
	idleDialerAddrVar  = "MSCCLPP_TEST_IDLE_DIALER_ADDR"
	idleDialerCountVar = "MSCCLPP_TEST_IDLE_DIALER_COUNT"
)

// TestIdleDialer is not a test of its own: run by TestRootAcceptsAfterRunningOutOfFiles as a
// separate process, it opens idle connections to an address, says so on stdout, and holds them
// until its stdin closes.
func TestIdleDialer(t *testing.T) {
	addr := os.Getenv(idleDialerAddrVar)
	if addr == "" {
		t.Skip("run by TestRootAcceptsAfterRunningOutOfFiles")
	}
	n, _ := strconv.Atoi(os.Getenv(idleDialerCountVar))
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	os.Stdout.WriteString("dialed\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	for _, c := range conns {
		c.Close()
	}
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestRootAcceptsAfterRunningOutOfFiles: a burst of idle connections to the root while the
// process may open only a few more files makes the root's accepts fail with EMFILE; the root
// logs it and keeps trying, so the job's real rank still joins once the burst is gone (before,
// the accept loop ended at the first error and the job failed after its timeout, saying the rank
// "never joined").
func TestRootAcceptsAfterRunningOutOfFiles(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd to count open files")
	}
	logs := &testutil.LogBuffer{}
	root, err := NewRoot(Options{Timeout: 30 * time.Second, Logger: logs.Logger(slog.LevelDebug)})
	require.NoError(t, err)
	defer root.Close()

	dialer := exec.Command(os.Args[0], "-test.run=^TestIdleDialer$", "-test.count=1")
	dialer.Env = append(os.Environ(), idleDialerAddrVar+"="+root.addr.String(), idleDialerCountVar+"=60")
	stdin, err := dialer.StdinPipe()
	require.NoError(t, err)
	stdout, err := dialer.StdoutPipe()
	require.NoError(t, err)
	var limit syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit))
	require.NoError(t, dialer.Start())
	defer func() { stdin.Close(); _ = dialer.Wait() }()

	// Only a few more files for this process from now on: the root runs out after a few
	// accepts of the burst.
	low := limit
	low.Cur = uint64(openFiles(t) + 8)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	restored := false
	restore := func() {
		if !restored {
			require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit))
			restored = true
		}
	}
	defer restore()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "dialed\n", line)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "cannot accept a connection for now") },
		10*time.Second, time.Millisecond, "the root never ran out of files")

	stdin.Close() // the burst goes away
	require.NoError(t, dialer.Wait())
	restore()
	b, err := Join(context.Background(), root.ID(), 0, 1, Options{Timeout: 20 * time.Second})
	require.NoError(t, err, "the real rank must still join")
	assert.NoError(t, b.Close())
	assert.NoError(t, root.Wait())
	assert.Contains(t, logs.String(), "too many open files")
	assert.Contains(t, logs.String(), "accepts connections again")
}
