package testutil

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// HostMemory maps n bytes of anonymous memory, unmapped when the test ends: host memory that Go's
// collector does not move, for registering with a transport.
func HostMemory(t testing.TB, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}
