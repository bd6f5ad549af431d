package channels

// The basic-concepts tutorial through the Go API: one process, two GPUs, a base memory channel
// each way; GPU 0 waits, spins and signals, GPU 1 signals and waits. Skips without two GPUs.
// testdata/ping_pong.ptx is generated from testdata/ping_pong.cu:
//
//	nvcc -ptx -arch=compute_80 -std=c++17 -Iinclude channels/testdata/ping_pong.cu -o channels/testdata/ping_pong.ptx

import (
	_ "embed"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/cuda/cudatest"
)

//go:embed testdata/ping_pong.ptx
var pingPongPTX []byte

const (
	pingPongIterations = 20
	pingPongSpinCycles = 2_000_000 // about 1 ms on an H100/H200
	pingPongDeadline   = 30 * time.Second
)

// gpuRunner launches one kernel on one GPU, with the GPU's primary context pushed around each call.
type gpuRunner struct {
	ctx    cuda.Context
	stream cuda.Stream
	fn     cuda.Function
	module cuda.Module
}

func (g *gpuRunner) do(t *testing.T, fn func() error) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, g.ctx.Push())
	err := fn()
	require.NoError(t, cuda.PopContext())
	require.NoError(t, err)
}

func newGPURunner(t *testing.T, dev int, kernel string) *gpuRunner {
	d, err := cuda.GetDevice(dev)
	require.NoError(t, err)
	g := &gpuRunner{}
	g.ctx, err = d.RetainPrimaryContext()
	require.NoError(t, err)
	g.do(t, func() (err error) {
		if g.module, err = cuda.LoadModule(pingPongPTX); err != nil {
			return err
		}
		if g.fn, err = g.module.Function(kernel); err != nil {
			return err
		}
		g.stream, err = cuda.NewStream()
		return err
	})
	t.Cleanup(func() {
		g.do(t, func() error { return errors.Join(g.stream.Destroy(), g.module.Unload()) })
		assert.NoError(t, g.ctx.Release())
	})
	return g
}

func bytesOf[T any](v *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)) }

func TestPingPongGPU(t *testing.T) {
	cudatest.RequireGPUs(t, 2)
	ctx := core.NewContext()
	t.Cleanup(func() { assert.NoError(t, ctx.Close()) })

	ep0, err := ctx.CreateEndpoint(core.EndpointConfig{Transport: core.TransportP2P, Device: core.Device{Type: core.DeviceGPU, ID: 0}})
	require.NoError(t, err)
	ep1, err := ctx.CreateEndpoint(core.EndpointConfig{Transport: core.TransportP2P, Device: core.Device{Type: core.DeviceGPU, ID: 1}})
	require.NoError(t, err)
	conn0, err := ctx.Connect(ep0, ep1)
	require.NoError(t, err)
	conn1, err := ctx.Connect(ep1, ep0)
	require.NoError(t, err)
	stub0, err := core.NewSemaphoreStub(conn0)
	require.NoError(t, err)
	stub1, err := core.NewSemaphoreStub(conn1)
	require.NoError(t, err)
	sema0, err := core.NewSemaphore(stub0, stub1)
	require.NoError(t, err)
	sema1, err := core.NewSemaphore(stub1, stub0)
	require.NoError(t, err)
	base0, err := NewBaseMemoryChannel(sema0)
	require.NoError(t, err)
	base1, err := NewBaseMemoryChannel(sema1)
	require.NoError(t, err)
	channel0, channel1 := base0.DeviceHandle(), base1.DeviceHandle()

	waiter := newGPURunner(t, 0, "pingPongWaiter")
	signaller := newGPURunner(t, 1, "pingPongSignaller")

	// Results of GPU 1 in host-pinned memory it writes directly: rounds (int32) at 0, cycles at 8.
	var results unsafe.Pointer
	var resultsDev cuda.DevicePtr
	signaller.do(t, func() (err error) {
		if results, err = cuda.MemHostAlloc(16); err != nil {
			return err
		}
		clear(unsafe.Slice((*byte)(results), 16))
		resultsDev, err = cuda.MemHostGetDevicePointer(results)
		return err
	})
	t.Cleanup(func() { signaller.do(t, func() error { return cuda.MemFreeHost(results) }) })
	roundsPtr, cyclesPtr := uint64(resultsDev), uint64(resultsDev)+8
	iterations, spinCycles := int32(pingPongIterations), int64(pingPongSpinCycles)
	start := time.Now()
	waiter.do(t, func() error {
		return cuda.LaunchKernel(waiter.fn, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 1, Y: 1, Z: 1}, 0, waiter.stream,
			bytesOf(&channel0), bytesOf(&iterations), bytesOf(&spinCycles))
	})
	signaller.do(t, func() error {
		return cuda.LaunchKernel(signaller.fn, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 1, Y: 1, Z: 1}, 0, signaller.stream,
			bytesOf(&channel1), bytesOf(&iterations), bytesOf(&roundsPtr), bytesOf(&cyclesPtr))
	})
	for _, g := range []*gpuRunner{waiter, signaller} {
		for done := false; !done; {
			g.do(t, func() (err error) { done, err = g.stream.Done(); return err })
			require.Less(t, time.Since(start), pingPongDeadline, "the ping-pong did not finish: a signal was lost")
		}
	}
	elapsed := time.Since(start)

	rounds := *(*int32)(results)
	cycles := *(*int64)(unsafe.Add(results, 8))
	assert.Equal(t, iterations, rounds)
	assert.Greater(t, cycles/int64(rounds), spinCycles, "each round on GPU 1 waited for GPU 0's spin")
	t.Logf("Elapsed %.3f ms per iteration (%d), %d cycles per round on GPU 1", float64(elapsed.Microseconds())/1e3/float64(rounds), rounds, cycles/int64(rounds))
}
