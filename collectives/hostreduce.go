package collectives

import (
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/halfprec"
)

// The host side of reductions across hosts (spanning.go): the operators of the kernels
// (kernels/src/common.cuh) on the CPU. Integers wrap; float16 and bfloat16 combine in float32
// and round once to their type per step, as the kernels' operators do.

// hostOps are one type's operations on the host: combine sets dst[i] = dst[i] op src[i] (avg
// as sum), divide divides every element by n.
type hostOps struct {
	combine func(dst, src []byte, op Op)
	divide  func(b []byte, n int)
}

// hostReductions has the host operations of every reducible type.
var hostReductions = map[DataType]hostOps{
	Int8: numericOps[int8](), Uint8: numericOps[uint8](), Int32: numericOps[int32](), Uint32: numericOps[uint32](),
	Int64: numericOps[int64](), Uint64: numericOps[uint64](), Float32: numericOps[float32](), Float64: numericOps[float64](),
	Float16:  halfOps(halfprec.FromHalf, halfprec.ToHalf),
	BFloat16: halfOps(halfprec.FromBfloat, halfprec.ToBfloat),
}

func numericOps[T number]() hostOps {
	return hostOps{
		combine: func(dst, src []byte, op Op) { combine(elems[T](dst), elems[T](src), op) },
		divide:  func(b []byte, n int) { divide(elems[T](b), n) },
	}
}

// halfOps: a 16-bit floating type, combined and divided in float32 and rounded once.
func halfOps(toFloat func(uint16) float32, fromFloat func(float32) uint16) hostOps {
	return hostOps{
		combine: func(dst, src []byte, op Op) {
			combine16(elems[uint16](dst), elems[uint16](src), op, toFloat, fromFloat)
		},
		divide: func(b []byte, n int) {
			e := elems[uint16](b)
			for i, v := range e {
				e[i] = fromFloat(toFloat(v) / float32(n))
			}
		},
	}
}

// reduceInto sets dst[i] = dst[i] op src[i] for the elements of type dt in dst and src (equal
// lengths, a multiple of dt's size). Avg combines as Sum (divideBy finishes it).
func reduceInto(dt DataType, op Op, dst, src []byte) error {
	if len(dst) != len(src) || len(dst)%max(dt.Size(), 1) != 0 {
		return fmt.Errorf("host reduction of %d and %d bytes of %s: %w", len(dst), len(src), dt, errs.ErrInternal)
	}
	ops, ok := hostReductions[dt]
	if !ok {
		return fmt.Errorf("host reduction of %s: %w", dt, errs.ErrInvalidArgument)
	}
	ops.combine(dst, src, op)
	return nil
}

// divideBy finishes an average: every element of type dt in b divided by n, integers truncated
// toward zero, float16 and bfloat16 divided in float32 and rounded once.
func divideBy(dt DataType, b []byte, n int) error {
	ops, ok := hostReductions[dt]
	if !ok {
		return fmt.Errorf("host average of %s: %w", dt, errs.ErrInvalidArgument)
	}
	ops.divide(b, n)
	return nil
}

type number interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// elems views b as elements of type T (b's length a multiple of T's size; x86 takes unaligned
// loads, and the buffers here are pinned allocations and Go slices of at least 8-byte alignment).
func elems[T number | uint16](b []byte) []T {
	var zero T
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(zero)))
}

func combine[T number](d, s []T, op Op) {
	switch op {
	case Prod:
		for i := range d {
			d[i] *= s[i]
		}
	case Max:
		for i := range d {
			if s[i] > d[i] {
				d[i] = s[i]
			}
		}
	case Min:
		for i := range d {
			if s[i] < d[i] {
				d[i] = s[i]
			}
		}
	default: // Sum, Avg
		for i := range d {
			d[i] += s[i]
		}
	}
}

func combine16(d, s []uint16, op Op, toFloat func(uint16) float32, fromFloat func(float32) uint16) {
	for i := range d {
		a, b := toFloat(d[i]), toFloat(s[i])
		var r float32
		switch op {
		case Prod:
			r = a * b
		case Max:
			r = a
			if b > a {
				r = b
			}
		case Min:
			r = a
			if b < a {
				r = b
			}
		default:
			r = a + b
		}
		d[i] = fromFloat(r)
	}
}

func divide[T number](b []T, n int) {
	for i := range b {
		b[i] /= T(n)
	}
}
