package collectives

import (
	"fmt"
	"runtime"
	"sync"
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
	Float16:  halfOps(halfprec.HalvesToFloats, halfprec.FloatsToHalves),
	BFloat16: halfOps(halfprec.BfloatsToFloats, halfprec.FloatsToBfloats),
}

func numericOps[T number]() hostOps {
	return hostOps{
		combine: func(dst, src []byte, op Op) { combine(elems[T](dst), elems[T](src), op) },
		divide:  func(b []byte, n int) { divide(elems[T](b), n) },
	}
}

// halfBlock is how many 16-bit elements halfOps converts to float32 at a time.
const halfBlock = 1024

// halfOps: a 16-bit floating type, combined and divided in float32 and rounded once, a block of
// elements at a time (converted in bulk, then float32's loops).
func halfOps(toFloats func([]float32, []uint16), fromFloats func([]uint16, []float32)) hostOps {
	return hostOps{
		combine: func(dst, src []byte, op Op) {
			d, s := elems[uint16](dst), elems[uint16](src)
			var a, b [halfBlock]float32
			for off := 0; off < len(d); off += halfBlock {
				n := min(halfBlock, len(d)-off)
				toFloats(a[:n], d[off:off+n])
				toFloats(b[:n], s[off:off+n])
				combine(a[:n], b[:n], op)
				fromFloats(d[off:off+n], a[:n])
			}
		},
		divide: func(b []byte, n int) {
			e := elems[uint16](b)
			var a [halfBlock]float32
			for off := 0; off < len(e); off += halfBlock {
				k := min(halfBlock, len(e)-off)
				toFloats(a[:k], e[off:off+k])
				divide(a[:k], n)
				fromFloats(e[off:off+k], a[:k])
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
	inParts(len(dst), func(lo, hi int) { ops.combine(dst[lo:hi], src[lo:hi], op) })
	return nil
}

// combining is the operator that partial results of op combine with: avg sums (and divides once
// at the end, reduceHosts).
func combining(op Op) Op {
	if op == Avg {
		return Sum
	}
	return op
}

// reduceHosts reduces the hosts' contributions part(1) to part(nHosts-1) into part(0), in host
// order, so that every rank computes the same bits; avg sums them, then divides by nRanks.
func reduceHosts(dt DataType, op Op, nHosts int, part func(h int) []byte, nRanks int) error {
	acc := part(0)
	for h := 1; h < nHosts; h++ {
		if err := reduceInto(dt, combining(op), acc, part(h)); err != nil {
			return err
		}
	}
	if op == Avg {
		return divideBy(dt, acc, nRanks)
	}
	return nil
}

// divideBy finishes an average: every element of type dt in b divided by n, integers truncated
// toward zero, float16 and bfloat16 divided in float32 and rounded once.
func divideBy(dt DataType, b []byte, n int) error {
	ops, ok := hostReductions[dt]
	if !ok {
		return fmt.Errorf("host average of %s: %w", dt, errs.ErrInvalidArgument)
	}
	inParts(len(b), func(lo, hi int) { ops.divide(b[lo:hi], n) })
	return nil
}

// A host reduction of many bytes runs on up to hostReduceWorkers goroutines (and no more than
// GOMAXPROCS), each taking at least hostReducePartBytes: the operations are element by element,
// so the parts give the same bits as one pass. Ranks across hosts reduce up to a whole AllReduce
// result on the CPU (a 128 MiB float32 sum took 25 ms on one core of the development VM).
const (
	hostReduceWorkers   = 8
	hostReducePartBytes = 1 << 20
)

// inParts calls f on parts [lo, hi) covering [0, n), each but the last a multiple of 8 bytes
// (whole elements of every type), at once on several goroutines when n is large, and returns
// when all are done.
func inParts(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), hostReduceWorkers, n/hostReducePartBytes)
	if workers <= 1 {
		f(0, n)
		return
	}
	part := (n/workers + 7) &^ 7
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += part {
		wg.Go(func() { f(lo, min(lo+part, n)) })
	}
	wg.Wait()
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

func divide[T number](b []T, n int) {
	for i := range b {
		b[i] /= T(n)
	}
}
