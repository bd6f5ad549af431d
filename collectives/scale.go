package collectives

import (
	"fmt"
	"structs"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// scaleThreads is coll::kScaleThreads of kernels/src/scale.cu.
const scaleThreads = 512

// scaleArgs mirrors coll::ScaleArgs, the one parameter of the scale kernels: 8-byte fields only,
// in the same order (the C++ side static_asserts its size; scale_test.go checks this side).
type scaleArgs struct {
	_         structs.HostLayout
	Src       uintptr // count elements
	Dst       uintptr // count elements; may be Src
	Count     uint64  // elements
	Scalar    uint64  // the factor's bits, when ScalarPtr is 0
	ScalarPtr uintptr // the factor in device memory; 0: Scalar holds it
}

const scaleArgsBytes = 40

func (a *scaleArgs) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(a)), unsafe.Sizeof(*a))
}

// scaleKernel is the entry point of Scale for dt (kernels/src/scale.cu); dt is reducible.
func scaleKernel(dt DataType) string { return "mscclpp_scale_" + dataTypes[dt].suffix }

// Scalar is Scale's factor: one element of the call's type, given by value (ScalarBits) or read
// from device memory when the kernel runs (ScalarAt).
type Scalar struct {
	bits     uint64         // by value: the element in the low bytes
	ptr      cuda.DevicePtr // on the device: where the element is
	onDevice bool           // which of the two it is
}

// ScalarBits is a factor given by value: one element of the call's type in the low bytes of bits
// (math.Float32bits(x) for a float32, uint64(uint8(v)) for an int8, ...); the other bytes are
// ignored.
func ScalarBits(bits uint64) Scalar { return Scalar{bits: bits} }

// ScalarAt is a factor in device memory: the element of the call's type at p, read when the
// kernel runs, so that a CUDA graph replay reads the value p holds then.
func ScalarAt(p cuda.DevicePtr) Scalar { return Scalar{ptr: p, onDevice: true} }

func (s Scalar) String() string {
	if s.onDevice {
		return fmt.Sprintf("the scalar at %#x", uint64(s.ptr))
	}
	return fmt.Sprintf("the scalar of bits %#x", s.bits)
}

// Scale writes src[i] * scalar to dst[i] for count elements of type dt (src == dst: in place),
// on this rank's GPU: a local kernel queued on stream s, not a collective. No peer takes part, it
// changes none of the collectives' sequencing, and it may be captured in a CUDA graph. Every
// reducible type (all but fp8); the product is NCCL's PreMulSum's: integers wrap, float16 and
// bfloat16 are rounded once from the exact product, float32 and float64 multiply in their own
// precision. Queued on stream s; returns once queued.
func (c *Comm) Scale(src, dst cuda.DevicePtr, count int, dt DataType, scalar Scalar, s cuda.Stream) error {
	fail := func(err error) error { return fmt.Errorf("scale of %d %s by %s: %w", count, dt, scalar, err) }
	if c.span != nil { // a local kernel: the local Comm has it loaded
		return c.span.local.Scale(src, dst, count, dt, scalar, s)
	}
	if _, err := checkSameSized(src, dst, count, dt); err != nil {
		return fail(err)
	}
	if !dt.Reducible() {
		return fail(fmt.Errorf("%s has no scale kernel; int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "+
			"float32 and float64 scale: %w", dt, errs.ErrInvalidArgument))
	}
	if scalar.onDevice && (scalar.ptr == 0 || uint64(scalar.ptr)%uint64(dt.Size()) != 0) {
		return fail(fmt.Errorf("the scalar's device address is NULL or not aligned to the %d-byte element: %w",
			dt.Size(), errs.ErrInvalidArgument))
	}
	if count == 0 {
		return nil
	}
	a := scaleArgs{Src: uintptr(src), Dst: uintptr(dst), Count: uint64(count), Scalar: scalar.bits,
		ScalarPtr: uintptr(scalar.ptr)}
	if err := c.launchScale(scaleKernel(dt), scaleBlocks(uint64(count)*uint64(dt.Size()), c.maxGrid), &a, s); err != nil {
		return fail(err)
	}
	return nil
}

// scaleBlocks: a 16-byte word per thread until limit blocks, then several per thread.
func scaleBlocks(bytes uint64, limit int) int {
	words := (bytes + 15) / 16
	return clampBlocks((words+scaleThreads-1)/scaleThreads, limit)
}

// launchScale queues kernel with the argument a on stream s.
func (c *Comm) launchScale(kernel string, blocks int, a *scaleArgs, s cuda.Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return c.launchKernel(kernel, uint32(blocks), scaleThreads, s, a.bytes())
}
