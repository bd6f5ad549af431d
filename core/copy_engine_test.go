package core

import (
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/cuda/cudatest"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// TestCopyEngineTrace: with MSCCLPP_PROXY_TRACE=1 the engine logs each copy of its first flush,
// with its size, and nothing at the second. Needs a GPU.
func TestCopyEngineTrace(t *testing.T) {
	cudatest.RequireGPUs(t, 1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	ctx, err := dev.RetainPrimaryContext()
	require.NoError(t, err)
	defer ctx.Release()
	require.NoError(t, ctx.SetCurrent())

	testutil.Override(t, config.ProxyTrace, 1)
	const size = 1 << 20
	buf, err := cuda.MemAlloc(2*size + 8)
	require.NoError(t, err)
	defer cuda.MemFree(buf)
	var logs testutil.LogBuffer
	e, err := newCopyEngine(buf+2*size, logs.Logger(slog.LevelInfo))
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.close()) }()

	for range 2 {
		require.NoError(t, e.Copy(uint64(buf+size), uint64(buf), size))
	}
	require.NoError(t, e.Drain())
	assert.Equal(t, 2, strings.Count(logs.String(), "msg=\"proxy copy\""), logs.String())
	assert.Equal(t, 2, strings.Count(logs.String(), "bytes=1048576"), logs.String())

	require.NoError(t, e.Copy(uint64(buf+size), uint64(buf), size))
	require.NoError(t, e.Drain())
	assert.Equal(t, 2, strings.Count(logs.String(), "msg=\"proxy copy\""), "only the first flush is traced")
}
