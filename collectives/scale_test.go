package collectives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/cuda/cudatest"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// TestScaleArgsLayout: five 8-byte fields at 8*i, as coll::ScaleArgs declares them (the C++ side
// static_asserts its size).
func TestScaleArgsLayout(t *testing.T) {
	var a scaleArgs
	assert.Equal(t, uintptr(scaleArgsBytes), unsafe.Sizeof(a))
	assert.Len(t, a.bytes(), scaleArgsBytes)
	assert.Equal(t, uintptr(0), unsafe.Offsetof(a.Src))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(a.Dst))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(a.Count))
	assert.Equal(t, uintptr(24), unsafe.Offsetof(a.Scalar))
	assert.Equal(t, uintptr(32), unsafe.Offsetof(a.ScalarPtr))
}

// TestScaleKernels: one entry point per reducible type, named with its suffix, resolved with the
// collectives' (kernelNames, whose every entry TestEveryKernelIsInItsModule finds in its module).
func TestScaleKernels(t *testing.T) {
	assert.Equal(t, "mscclpp_scale_f32", scaleKernel(Float32))
	assert.Equal(t, "mscclpp_scale_bf16", scaleKernel(BFloat16))
	assert.Equal(t, "mscclpp_scale_i8", scaleKernel(Int8))
	for dt := range dataTypes {
		if dt.Reducible() {
			assert.Contains(t, kernelNames(), scaleKernel(dt), dt.String())
		}
	}
}

func TestScaleBlocks(t *testing.T) {
	assert.Equal(t, 1, scaleBlocks(1, maxBlocks))
	assert.Equal(t, 1, scaleBlocks(16*scaleThreads, maxBlocks))
	assert.Equal(t, 2, scaleBlocks(16*scaleThreads+1, maxBlocks))
	assert.Equal(t, maxBlocks, scaleBlocks(1<<30, maxBlocks))
	assert.Equal(t, 40, scaleBlocks(1<<30, 40))
	assert.Equal(t, 1, scaleBlocks(1<<30, 0), "a Comm without a grid still launches a block")
}

func TestScalarString(t *testing.T) {
	assert.Equal(t, "the scalar of bits 0x3f000000", ScalarBits(uint64(math.Float32bits(0.5))).String())
	assert.Equal(t, "the scalar at 0x10000", ScalarAt(0x10000).String())
}

// TestScaleRefusals: what Scale refuses before it queues anything, with ErrInvalidArgument and a
// message naming the problem; count 0 is a no-op, and a closed Comm says ErrClosed.
func TestScaleRefusals(t *testing.T) {
	c := &Comm{rank: 1, nRanks: 2}
	const p = cuda.DevicePtr(0x10000)
	one := ScalarBits(1)
	tests := []struct {
		name     string
		src, dst cuda.DevicePtr
		count    int
		dt       DataType
		scalar   Scalar
		want     string
	}{
		{"fp8", p, p, 4, Float8E4M3, one, "float8e4m3 has no scale kernel"},
		{"bad type", p, p, 4, DataType(12), one, "unsupported data type"},
		{"negative count", p, p, -1, Float32, one, "negative count"},
		{"NULL src", 0, p, 4, Float32, one, "NULL buffer"},
		{"NULL dst", p, 0, 4, Float32, one, "NULL buffer"},
		{"misaligned", p + 2, p + 64, 4, Float32, one, "not aligned"},
		{"overlapping", p, p + 4, 4, Float32, one, "overlap"},
		{"NULL device scalar", p, p, 4, Float32, ScalarAt(0), "NULL or not aligned"},
		{"misaligned device scalar", p, p, 4, Float64, ScalarAt(p + 4), "NULL or not aligned"},
		{"NULL device scalar, count 0", 0, 0, 0, Float32, ScalarAt(0), "NULL or not aligned"},
	}
	for _, tt := range tests {
		err := c.Scale(tt.src, tt.dst, tt.count, tt.dt, tt.scalar, cuda.Stream{})
		require.Error(t, err, tt.name)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
		assert.Contains(t, err.Error(), "scale of", tt.name)
	}
	closed := &Comm{rank: 0, nRanks: 1, closed: true}
	assert.NoError(t, closed.Scale(0, 0, 0, Float32, one, cuda.Stream{}), "count 0 is a no-op")
	assert.ErrorIs(t, closed.Scale(p, p, 4, Int64, ScalarAt(p+64), cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, closed.Scale(p+1, p+1, 3, Uint8, one, cuda.Stream{}), ErrClosed, "bytes at any address")
	assert.ErrorIs(t, closed.Scale(p, p+16, 4, Float32, one, cuda.Stream{}), ErrClosed, "right after src")
}

// ---- On a GPU (the GPU host runs this package's test binary) -------------------------------------

// scaleType is what the GPU check knows of a type: its input element i, the factor, and the
// product as Scale must compute it, all as bits.
type scaleType struct {
	input  func(i int) uint64
	factor uint64
	mul    func(x, s uint64) uint64
}

// f16Bits rounds f to the nearest float16 (ties to even); f must be zero or in float16's normal range.
func f16Bits(t *testing.T, f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if b&0x7fffffff == 0 {
		return sign
	}
	exp := int(b>>23&0xff) - 127 + 15
	if exp <= 0 || exp >= 31 {
		t.Fatalf("%g is outside float16's normal range", f)
	}
	h := uint32(exp)<<10 | b&0x7fffff>>13
	if rest := b & 0x1fff; rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++ // a carry out of the mantissa increments the exponent, as it should
	}
	return sign | uint16(h)
}

func f16Value(h uint16) float32 {
	sign := float64(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	if exp == 0 {
		return float32(sign * math.Ldexp(mant, -24))
	}
	return float32(sign * math.Ldexp(1+mant/1024, exp-15))
}

// bf16Bits rounds f to the nearest bfloat16 (ties to even; f is finite).
func bf16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7fff + (b >> 16 & 1)) >> 16)
}

func bf16Value(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// scaleTypes: integers get inputs across their range and a negative factor, so that products wrap;
// floating types get small values and a factor near 0.1, so that products round.
func scaleTypes(t *testing.T) map[DataType]scaleType {
	minus37 := int64(-37)
	negative37 := uint64(minus37) // two's complement: the factor -37 of every signed size, wrapped in the unsigned ones
	floatIn := func(i int) float32 { return float32(i%23-11) * 1.25 }
	ints := func(size int) scaleType {
		mask := uint64(math.MaxUint64) >> (64 - 8*size)
		return scaleType{
			input:  func(i int) uint64 { return uint64(int64(i*7919%100003)-50000) & mask },
			factor: negative37 & mask,
			mul:    func(x, s uint64) uint64 { return x * s & mask },
		}
	}
	return map[DataType]scaleType{
		Int8: ints(1), Uint8: ints(1), Int32: ints(4), Uint32: ints(4), Int64: ints(8), Uint64: ints(8),
		Float32: {
			input:  func(i int) uint64 { return uint64(math.Float32bits(floatIn(i))) },
			factor: uint64(math.Float32bits(0.1)),
			mul: func(x, s uint64) uint64 {
				return uint64(math.Float32bits(math.Float32frombits(uint32(x)) * math.Float32frombits(uint32(s))))
			},
		},
		Float64: {
			input:  func(i int) uint64 { return math.Float64bits(float64(floatIn(i))) },
			factor: math.Float64bits(0.1),
			mul:    func(x, s uint64) uint64 { return math.Float64bits(math.Float64frombits(x) * math.Float64frombits(s)) },
		},
		Float16: {
			input:  func(i int) uint64 { return uint64(f16Bits(t, floatIn(i))) },
			factor: uint64(f16Bits(t, 0.1)),
			mul: func(x, s uint64) uint64 {
				return uint64(f16Bits(t, f16Value(uint16(x))*f16Value(uint16(s)))) // exact in float32, rounded once
			},
		},
		BFloat16: {
			input:  func(i int) uint64 { return uint64(bf16Bits(floatIn(i))) },
			factor: uint64(bf16Bits(0.1)),
			mul: func(x, s uint64) uint64 {
				return uint64(bf16Bits(bf16Value(uint16(x)) * bf16Value(uint16(s))))
			},
		},
	}
}

// gpuComm is a Comm of one rank on GPU 0, with its context current on the test's (locked) thread.
func gpuComm(t *testing.T) *Comm {
	t.Helper()
	pctx := cudatest.PrimaryContext(t, 0)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	require.NoError(t, pctx.SetCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	b, err := bootstrap.Join(ctx, root.ID(), 0, 1, bootstrap.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	cctx := core.NewContext()
	t.Cleanup(func() { cctx.Close() })
	c, err := New(ctx, core.NewCommunicator(b, cctx), 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// pinned is host memory the GPU reaches (for uploads and downloads), freed by free.
func pinned(t *testing.T, n int) (b []byte, d cuda.DevicePtr, free func()) {
	t.Helper()
	h, err := cuda.MemHostAlloc(n)
	require.NoError(t, err)
	d, err = cuda.MemHostGetDevicePointer(h)
	require.NoError(t, err)
	return unsafe.Slice((*byte)(h), n), d, func() { assert.NoError(t, cuda.MemFreeHost(h)) }
}

// deviceAlloc is n bytes of device memory, freed by free.
func deviceAlloc(t *testing.T, n int) (p cuda.DevicePtr, free func()) {
	t.Helper()
	p, err := cuda.MemAlloc(n)
	require.NoError(t, err)
	return p, func() { assert.NoError(t, cuda.MemFree(p)) }
}

func putBits(b []byte, size int, i int, v uint64) {
	for k := range size {
		b[i*size+k] = byte(v >> (8 * k))
	}
}

func getBits(b []byte, size int, i int) uint64 {
	var v uint64
	for k := range size {
		v |= uint64(b[i*size+k]) << (8 * k)
	}
	return v
}

// TestScaleOnGPU: every reducible type, the factor by value and in device memory, in place and
// out of place, aligned buffers and buffers one element off, against products computed here bit
// for bit; the elements around the output stay untouched.
func TestScaleOnGPU(t *testing.T) {
	c := gpuComm(t)
	s, err := cuda.NewStream()
	require.NoError(t, err)
	defer s.Destroy()
	for dt, st := range scaleTypes(t) {
		size := dt.Size()
		for _, n := range []int{1, 7, 1031, 1<<20 + 3} {
			for _, offset := range []int{0, 1} {
				for _, inPlace := range []bool{false, true} {
					for _, onDevice := range []bool{false, true} {
						name := fmt.Sprintf("%s n=%d offset=%d inPlace=%v onDevice=%v", dt, n, offset, inPlace, onDevice)
						checkScale(t, c, s, dt, st, size, n, offset, inPlace, onDevice, name)
					}
				}
			}
		}
	}
}

// checkScale runs one Scale of n elements of dt into a buffer with a guard element on each side.
func checkScale(t *testing.T, c *Comm, s cuda.Stream, dt DataType, st scaleType, size, n, offset int, inPlace,
	onDevice bool, name string) {
	const guard = 0x5a
	total := (n + 2 + offset) * size // guard, elements, guard (offset elements first)
	host, hostDev, freeHost := pinned(t, 2*total+8)
	defer freeHost()
	src, freeSrc := deviceAlloc(t, total)
	defer freeSrc()
	dst := src
	if !inPlace {
		var freeDst func()
		dst, freeDst = deviceAlloc(t, total)
		defer freeDst()
	}
	at := func(p cuda.DevicePtr) cuda.DevicePtr { return p + cuda.DevicePtr((offset+1)*size) }
	for i := range host[:total] {
		host[i] = guard
	}
	for i := range n {
		putBits(host[(offset+1)*size:], size, i, st.input(i))
	}
	putBits(host[2*total:], size, 0, st.factor)
	scalar := ScalarBits(st.factor)
	if onDevice {
		p, freeScalar := deviceAlloc(t, 8)
		defer freeScalar()
		scalar = ScalarAt(p)
		require.NoError(t, cuda.MemcpyAsync(scalar.ptr, hostDev+cuda.DevicePtr(2*total), size, s))
	}
	require.NoError(t, cuda.MemcpyAsync(src, hostDev, total, s))
	if !inPlace {
		require.NoError(t, cuda.MemsetD8Async(dst, guard, total, s))
	}
	require.NoError(t, c.Scale(at(src), at(dst), n, dt, scalar, s), name)
	require.NoError(t, cuda.MemcpyAsync(hostDev+cuda.DevicePtr(total), dst, total, s))
	require.NoError(t, s.Synchronize(), name)
	got := host[total : 2*total]
	for i := 0; i < (offset+1)*size; i++ {
		require.Equal(t, byte(guard), got[i], "%s: guard byte %d before the output", name, i)
	}
	for i := (offset + 1 + n) * size; i < total; i++ {
		require.Equal(t, byte(guard), got[i], "%s: guard byte after the output", name)
	}
	out := got[(offset+1)*size:]
	for i := range n {
		want := st.mul(st.input(i), st.factor)
		if g := getBits(out, size, i); g != want {
			t.Fatalf("%s: element %d is %#x, want %#x (input %#x, factor %#x)", name, i, g, want, st.input(i), st.factor)
		}
	}
}

// TestScaleGraphReplay: a Scale by a factor in device memory captured in a CUDA graph reads the
// factor when each replay runs; one by value keeps the value it was captured with.
func TestScaleGraphReplay(t *testing.T) {
	c := gpuComm(t)
	s, err := cuda.NewStream()
	require.NoError(t, err)
	defer s.Destroy()
	const n = 65537
	host, hostDev, freeHost := pinned(t, 3*n*4+4)
	defer freeHost()
	var bufs [4]cuda.DevicePtr // the input, the outputs by device factor and by value, the factor
	for i := range bufs {
		var free func()
		bufs[i], free = deviceAlloc(t, n*4)
		defer free()
	}
	in, byDevice, byValue, factor := bufs[0], bufs[1], bufs[2], bufs[3]
	vals := unsafe.Slice((*float32)(unsafe.Pointer(&host[0])), 3*n+1)
	for i := range n {
		vals[i] = float32(i%100 - 50)
	}
	require.NoError(t, cuda.MemcpyAsync(in, hostDev, n*4, s))
	require.NoError(t, s.Synchronize())

	require.NoError(t, s.BeginCapture())
	errDevice := c.Scale(in, byDevice, n, Float32, ScalarAt(factor), s)
	errValue := c.Scale(in, byValue, n, Float32, ScalarBits(uint64(math.Float32bits(-2))), s)
	graph, err := s.EndCapture()
	require.NoError(t, errors.Join(errDevice, errValue, err))
	defer graph.Destroy()
	exec, err := graph.Instantiate()
	require.NoError(t, err)
	defer exec.Destroy()
	for k, f := range []float32{3, 0.5, -7} {
		vals[3*n] = f
		require.NoError(t, cuda.MemcpyAsync(factor, hostDev+3*n*4, 4, s))
		require.NoError(t, exec.Launch(s))
		require.NoError(t, cuda.MemcpyAsync(hostDev+n*4, byDevice, n*4, s))
		require.NoError(t, cuda.MemcpyAsync(hostDev+2*n*4, byValue, n*4, s))
		require.NoError(t, s.Synchronize())
		for i := range n {
			require.Equal(t, vals[i]*f, vals[n+i], "replay %d, factor %g, element %d", k, f, i)
			require.Equal(t, vals[i]*-2, vals[2*n+i], "replay %d, by value, element %d", k, i)
		}
	}
}
