package cuda

import (
	_ "embed"
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

//go:embed testdata/fill.ptx
var fillPTX []byte

func TestVersionedSymbols(t *testing.T) {
	// What cuda.h maps these names to; the loader must resolve the same.
	want := map[string]string{
		"cuMemAlloc":                "cuMemAlloc_v2",
		"cuMemFree":                 "cuMemFree_v2",
		"cuMemGetAddressRange":      "cuMemGetAddressRange_v2",
		"cuMemHostGetDevicePointer": "cuMemHostGetDevicePointer_v2",
		"cuIpcOpenMemHandle":        "cuIpcOpenMemHandle_v2",
		"cuDevicePrimaryCtxRelease": "cuDevicePrimaryCtxRelease_v2",
		"cuStreamDestroy":           "cuStreamDestroy_v2",
		"cuEventDestroy":            "cuEventDestroy_v2",
		"cuMemcpyAsync":             "cuMemcpyAsync", // not the per-thread-stream _ptsz variant
		"cuLaunchKernel":            "cuLaunchKernel",
		"cuDeviceGetName":           "cuDeviceGetName",
	}
	got := map[string]string{}
	for _, e := range entryPoints() {
		got[e.name] = e.symbol
	}
	for name, symbol := range want {
		assert.Equal(t, symbol, got[name], name)
	}
}

// TestRuntimeWithoutDevice runs every call on a machine whose driver sees no device: each must
// return an error, never crash.
func TestRuntimeWithoutDevice(t *testing.T) {
	requireDriver(t)
	if n, err := DeviceCount(); err == nil {
		t.Skipf("this machine has %d GPU(s)", n)
	}
	calls := map[string]func() error{
		"RetainPrimaryContext": func() error { _, err := Device(0).RetainPrimaryContext(); return err },
		"Release":              func() error { return Context{}.Release() },
		"SetCurrent":           func() error { return Context{}.SetCurrent() },
		"Push":                 func() error { return Context{}.Push() },
		"PopContext":           PopContext,
		"EnablePeerAccess":     func() error { return Context{}.EnablePeerAccess() },
		"CanAccessPeer":        func() error { _, err := Device(0).CanAccessPeer(1); return err },
		"NativeAtomicsWith":    func() error { _, err := Device(0).NativeAtomicsWith(1); return err },
		"MemAlloc":             func() error { _, err := MemAlloc(1); return err },
		"MemFree":              func() error { return MemFree(1) },
		"MemHostAlloc":         func() error { _, err := MemHostAlloc(1); return err },
		"MemFreeHost":          func() error { return MemFreeHost(nil) },
		"MemHostGetDevicePointer": func() error {
			_, err := MemHostGetDevicePointer(nil)
			return err
		},
		"MemGetAddressRange":   func() error { _, _, err := MemGetAddressRange(1); return err },
		"PointerMemoryType":    func() error { _, err := PointerMemoryType(1); return err },
		"PointerDeviceOrdinal": func() error { _, err := PointerDeviceOrdinal(1); return err },
		"IpcGetMemHandle":      func() error { _, err := IpcGetMemHandle(1); return err },
		"IpcOpenMemHandle":     func() error { _, err := IpcOpenMemHandle(IpcMemHandle{}); return err },
		"IpcCloseMemHandle":    func() error { return IpcCloseMemHandle(1) },
		"MemcpyAsync":          func() error { return MemcpyAsync(1, 2, 1, Stream{}) },
		"MemsetD8Async":        func() error { return MemsetD8Async(1, 0, 1, Stream{}) },
		"NewStream":            func() error { _, err := NewStream(); return err },
		"Stream.Destroy":       func() error { return Stream{}.Destroy() },
		"Stream.Synchronize":   func() error { return Stream{}.Synchronize() },
		"Stream.Done":          func() error { _, err := Stream{}.Done(); return err },
		"Stream.WaitEvent":     func() error { return Stream{}.WaitEvent(Event{}) },
		"NewEvent":             func() error { _, err := NewEvent(); return err },
		"Event.Destroy":        func() error { return Event{}.Destroy() },
		"Event.Record":         func() error { return Event{}.Record(Stream{}) },
		"Event.Synchronize":    func() error { return Event{}.Synchronize() },
		"Event.Done":           func() error { _, err := Event{}.Done(); return err },
		"NewTimingEvent":       func() error { _, err := NewTimingEvent(); return err },
		"ElapsedTime":          func() error { _, err := ElapsedTime(Event{}, Event{}); return err },
		"LoadModule":           func() error { _, err := LoadModule(fillPTX); return err },
		"Module.Unload":        func() error { return Module{}.Unload() },
		"Module.Function":      func() error { _, err := Module{}.Function("fill"); return err },
		"LaunchKernel":         func() error { return LaunchKernel(Function{}, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, Stream{}) },
		"LaunchKernelInContext": func() error {
			return LaunchKernelInContext(Context{}, Function{}, 1, 1, Stream{}, []byte{0})
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, call(), ErrNoDevice)
		})
	}
}

func TestRuntimeInvalidArguments(t *testing.T) {
	calls := map[string]func() error{
		"MemAlloc 0":           func() error { _, err := MemAlloc(0); return err },
		"MemHostAlloc -1":      func() error { _, err := MemHostAlloc(-1); return err },
		"MemcpyAsync 0":        func() error { return MemcpyAsync(1, 2, 0, Stream{}) },
		"MemsetD8Async 0":      func() error { return MemsetD8Async(1, 0, 0, Stream{}) },
		"LoadModule empty":     func() error { _, err := LoadModule(nil); return err },
		"LaunchKernel shmem":   func() error { return LaunchKernel(Function{}, Dim3{1, 1, 1}, Dim3{1, 1, 1}, -1, Stream{}) },
		"LaunchKernel arg nil": func() error { return LaunchKernel(Function{}, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, Stream{}, nil) },
		"LaunchKernelInContext no parameter": func() error {
			return LaunchKernelInContext(Context{}, Function{}, 1, 1, Stream{}, nil)
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, call(), errs.ErrInvalidArgument)
		})
	}
}

// The tests below need GPUs; they run on the GPU host.

// withContext locks the test's goroutine to its thread and makes device 0's primary context
// current there until the test ends.
func withContext(t *testing.T) Device {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d, err := GetDevice(0)
	require.NoError(t, err)
	ctx, err := d.RetainPrimaryContext()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ctx.Release()) })
	require.NoError(t, ctx.SetCurrent())
	assert.Equal(t, d, ctx.Device())
	return d
}

func TestMemory(t *testing.T) {
	requireGPU(t, 1)
	withContext(t)
	const size = 1 << 20

	p, err := MemAlloc(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, MemFree(p)) }()

	base, n, err := MemGetAddressRange(p + 100)
	require.NoError(t, err)
	assert.Equal(t, p, base)
	assert.GreaterOrEqual(t, n, size)

	typ, err := PointerMemoryType(p)
	require.NoError(t, err)
	assert.Equal(t, MemoryTypeDevice, typ)
	ordinal, err := PointerDeviceOrdinal(p)
	require.NoError(t, err)
	assert.Equal(t, 0, ordinal)

	h, err := IpcGetMemHandle(p)
	require.NoError(t, err)
	assert.NotEqual(t, IpcMemHandle{}, h)

	host, err := MemHostAlloc(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, MemFreeHost(host)) }()
	hostDev, err := MemHostGetDevicePointer(host)
	require.NoError(t, err)

	s, err := NewStream()
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Destroy()) }()
	e, err := NewEvent()
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.Destroy()) }()

	const value = 0x5a
	require.NoError(t, MemsetD8Async(p, value, size, s))
	require.NoError(t, MemcpyAsync(hostDev, p, size, s))
	require.NoError(t, e.Record(s))
	require.NoError(t, e.Synchronize())
	done, err := e.Done()
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, s.WaitEvent(e))
	require.NoError(t, s.Synchronize())
	done, err = s.Done()
	require.NoError(t, err)
	assert.True(t, done)

	got := unsafe.Slice((*byte)(host), size)
	for i, b := range got {
		if b != value {
			t.Fatalf("byte %d = %#x, want %#x", i, b, value)
		}
	}
}

func TestLaunchKernel(t *testing.T) {
	requireGPU(t, 1)
	withContext(t)
	const (
		n         = 1000
		threads   = 128
		baseValue = 7
	)
	mod, err := LoadModule(fillPTX)
	require.NoError(t, err)
	defer func() { assert.NoError(t, mod.Unload()) }()
	fill, err := mod.Function("fill")
	require.NoError(t, err)
	_, err = mod.Function("no_such_kernel")
	assert.ErrorIs(t, err, errs.ErrCUDA)

	got, dev, s := fillTarget(t, n)
	grid := Dim3{(n + threads - 1) / threads, 1, 1}
	require.NoError(t, LaunchKernel(fill, grid, Dim3{threads, 1, 1}, 0, s,
		binary.NativeEndian.AppendUint64(nil, uint64(dev)),
		binary.NativeEndian.AppendUint32(nil, baseValue),
		binary.NativeEndian.AppendUint32(nil, n)))
	require.NoError(t, s.Synchronize())
	checkFilled(t, got, baseValue)
}

// fillTarget allocates n words of mapped host memory for the fill kernels to write (as the host
// sees them and as the device does) and a stream to launch them on, both freed when the test ends.
func fillTarget(t *testing.T, n int) ([]uint32, DevicePtr, Stream) {
	t.Helper()
	host, err := MemHostAlloc(n * 4)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, MemFreeHost(host)) })
	dev, err := MemHostGetDevicePointer(host)
	require.NoError(t, err)
	s, err := NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Destroy()) })
	return unsafe.Slice((*uint32)(host), n), dev, s
}

// checkFilled fails the test unless got[i] is base + i for every i, as the fill kernels write.
func checkFilled(t *testing.T, got []uint32, base uint32) {
	t.Helper()
	for i, v := range got {
		if v != base+uint32(i) {
			t.Fatalf("element %d = %d, want %d", i, v, base+uint32(i))
		}
	}
}

// TestLaunchKernelInContext launches with the context current and with no context current on the
// thread: both run the kernel, and the thread is left as it was.
func TestLaunchKernelInContext(t *testing.T) {
	requireGPU(t, 1)
	withContext(t)
	const (
		n       = 1000
		threads = 128
	)
	d, err := GetDevice(0)
	require.NoError(t, err)
	ctx, err := d.RetainPrimaryContext()
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Release()) }()
	mod, err := LoadModule(fillPTX)
	require.NoError(t, err)
	defer func() { assert.NoError(t, mod.Unload()) }()
	fill, err := mod.Function("fill_struct")
	require.NoError(t, err)
	got, dev, s := fillTarget(t, n)

	for _, tt := range []struct {
		name    string
		current bool // ctx current on the thread at the launch, else none
		base    uint32
	}{{"context current", true, 7}, {"no context current", false, 1000}} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, ctx.SetCurrent())
			if !tt.current {
				require.NoError(t, Context{}.SetCurrent())
			}
			// struct fill_args of testdata/fill.cu: a pointer, two 32-bit values.
			param := binary.NativeEndian.AppendUint64(nil, uint64(dev))
			param = binary.NativeEndian.AppendUint32(param, tt.base)
			param = binary.NativeEndian.AppendUint32(param, n)
			require.NoError(t, LaunchKernelInContext(ctx, fill, (n+threads-1)/threads, threads, s, param))
			_, err := CurrentDevice()
			if tt.current {
				assert.NoError(t, err, "the context stays current")
			} else {
				assert.Error(t, err, "the thread is left with no context")
			}
			require.NoError(t, ctx.SetCurrent())
			require.NoError(t, s.Synchronize())
			checkFilled(t, got, tt.base)
		})
	}
}

func TestCanAccessPeer(t *testing.T) {
	requireGPU(t, 2)
	d0, err := GetDevice(0)
	require.NoError(t, err)
	d1, err := GetDevice(1)
	require.NoError(t, err)
	ok, err := d0.CanAccessPeer(d1)
	require.NoError(t, err)
	t.Logf("device 0 can access device 1: %v", ok)
}
