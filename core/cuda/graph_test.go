package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestGraphSymbols(t *testing.T) {
	want := map[string]string{
		"cuStreamBeginCapture":        "cuStreamBeginCapture_v2", // the _v2 that takes the mode
		"cuStreamEndCapture":          "cuStreamEndCapture",
		"cuGraphInstantiateWithFlags": "cuGraphInstantiateWithFlags",
		"cuGraphLaunch":               "cuGraphLaunch", // not the per-thread-stream _ptsz variant
		"cuGraphExecDestroy":          "cuGraphExecDestroy",
		"cuGraphDestroy":              "cuGraphDestroy",
	}
	got := map[string]entryPoint{}
	for _, e := range entryPoints() {
		got[e.name] = e
	}
	for name, symbol := range want {
		e, ok := got[name]
		require.True(t, ok, "%s is not in entrypoints.h", name)
		assert.Equal(t, symbol, e.symbol, name)
		assert.True(t, e.required, name)
	}
	assert.Equal(t, 11040, got["cuGraphInstantiateWithFlags"].minVersion)
	assert.Equal(t, 10010, got["cuStreamBeginCapture"].minVersion)
}

// TestGraphWithoutDevice: on a machine whose driver sees no device, every graph call returns
// ErrNoDevice, and none crashes.
func TestGraphWithoutDevice(t *testing.T) {
	requireDriver(t)
	if n, err := DeviceCount(); err == nil {
		t.Skipf("this machine has %d GPU(s)", n)
	}
	for name, call := range map[string]func() error{
		"Stream.BeginCapture": func() error { return Stream{}.BeginCapture() },
		"Stream.EndCapture":   func() error { _, err := Stream{}.EndCapture(); return err },
		"Graph.Instantiate":   func() error { _, err := Graph{}.Instantiate(); return err },
		"Graph.Destroy":       func() error { return Graph{}.Destroy() },
		"GraphExec.Launch":    func() error { return GraphExec{}.Launch(Stream{}) },
		"GraphExec.Destroy":   func() error { return GraphExec{}.Destroy() },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			assert.ErrorIs(t, err, ErrNoDevice)
			assert.ErrorIs(t, err, errs.ErrCUDA)
		})
	}
}

// TestGraphCaptureReplay captures a memset and a copy into mapped host memory, checks that the
// capture ran nothing, then replays the graph and checks the data after each launch.
func TestGraphCaptureReplay(t *testing.T) {
	requireGPU(t, 1)
	withContext(t) // also holds the goroutine on its thread, as capture needs
	const (
		size  = 1 << 16
		value = 0x3c
	)
	dev, err := MemAlloc(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, MemFree(dev)) }()
	host, err := MemHostAlloc(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, MemFreeHost(host)) }()
	hostDev, err := MemHostGetDevicePointer(host)
	require.NoError(t, err)
	got := unsafe.Slice((*byte)(host), size)
	clear(got)

	s, err := NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Destroy()) }()

	// The legacy default stream cannot be captured.
	assert.ErrorIs(t, Stream{}.BeginCapture(), errs.ErrCUDA)

	require.NoError(t, MemsetD8Async(dev, 0, size, s))
	require.NoError(t, s.Synchronize())
	require.NoError(t, s.BeginCapture())
	require.NoError(t, MemsetD8Async(dev, value, size, s))
	require.NoError(t, MemcpyAsync(hostDev, dev, size, s))
	g, err := s.EndCapture()
	require.NoError(t, err)
	exec, err := g.Instantiate()
	require.NoError(t, err)
	require.NoError(t, g.Destroy()) // the executable graph does not need it
	defer func() { assert.NoError(t, exec.Destroy()) }()
	require.NoError(t, s.Synchronize())
	assert.Equal(t, make([]byte, size), got, "capturing ran the captured work")

	for launch := range 3 {
		clear(got)
		require.NoError(t, exec.Launch(s))
		require.NoError(t, s.Synchronize())
		for i, b := range got {
			if b != value {
				t.Fatalf("launch %d: byte %d = %#x, want %#x", launch, i, b, value)
			}
		}
	}
}

// TestGraphCaptureInvalidated: a call that fails during a capture invalidates it; EndCapture
// reports it and leaves the stream usable.
func TestGraphCaptureInvalidated(t *testing.T) {
	requireGPU(t, 1)
	withContext(t)
	s, err := NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Destroy()) }()
	require.NoError(t, s.BeginCapture())
	// Synchronizing a stream under capture is not allowed and invalidates the capture.
	assert.Error(t, s.Synchronize())
	_, err = s.EndCapture()
	assert.ErrorIs(t, err, errs.ErrCUDA)
	require.NoError(t, s.Synchronize())
}
