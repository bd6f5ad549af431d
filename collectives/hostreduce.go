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

// reduceInto sets dst[i] = dst[i] op src[i] for the elements of type dt in dst and src (equal
// lengths, a multiple of dt's size). Avg combines as Sum (divideBy finishes it).
func reduceInto(dt DataType, op Op, dst, src []byte) error {
	if len(dst) != len(src) || len(dst)%max(dt.Size(), 1) != 0 {
		return fmt.Errorf("host reduction of %d and %d bytes of %s: %w", len(dst), len(src), dt, errs.ErrInternal)
	}
	switch dt {
	case Int8:
		combine(elems[int8](dst), elems[int8](src), op)
	case Uint8:
		combine(elems[uint8](dst), elems[uint8](src), op)
	case Int32:
		combine(elems[int32](dst), elems[int32](src), op)
	case Uint32:
		combine(elems[uint32](dst), elems[uint32](src), op)
	case Int64:
		combine(elems[int64](dst), elems[int64](src), op)
	case Uint64:
		combine(elems[uint64](dst), elems[uint64](src), op)
	case Float32:
		combine(elems[float32](dst), elems[float32](src), op)
	case Float64:
		combine(elems[float64](dst), elems[float64](src), op)
	case Float16:
		combine16(elems[uint16](dst), elems[uint16](src), op, halfprec.FromHalf, halfprec.ToHalf)
	case BFloat16:
		combine16(elems[uint16](dst), elems[uint16](src), op, halfprec.FromBfloat, halfprec.ToBfloat)
	default:
		return fmt.Errorf("host reduction of %s: %w", dt, errs.ErrInvalidArgument)
	}
	return nil
}

// divideBy finishes an average: every element of type dt in b divided by n, integers truncated
// toward zero, float16 and bfloat16 divided in float32 and rounded once.
func divideBy(dt DataType, b []byte, n int) error {
	switch dt {
	case Int8:
		divide(elems[int8](b), n)
	case Uint8:
		divide(elems[uint8](b), n)
	case Int32:
		divide(elems[int32](b), n)
	case Uint32:
		divide(elems[uint32](b), n)
	case Int64:
		divide(elems[int64](b), n)
	case Uint64:
		divide(elems[uint64](b), n)
	case Float32:
		divide(elems[float32](b), n)
	case Float64:
		divide(elems[float64](b), n)
	case Float16:
		for i, v := range elems[uint16](b) {
			elems[uint16](b)[i] = halfprec.ToHalf(halfprec.FromHalf(v) / float32(n))
		}
	case BFloat16:
		for i, v := range elems[uint16](b) {
			elems[uint16](b)[i] = halfprec.ToBfloat(halfprec.FromBfloat(v) / float32(n))
		}
	default:
		return fmt.Errorf("host average of %s: %w", dt, errs.ErrInvalidArgument)
	}
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
