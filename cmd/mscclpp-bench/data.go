package main

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/internal/halfprec"
)

// dataType is a datatype the benchmark supports, named as nccl-tests names it, with its value
// in NCCL and in package collectives (the same numbers).
type dataType struct {
	name string
	size int
	nccl ncclDataType
	coll collectives.DataType
}

var dataTypes = []dataType{
	{"float", 4, ncclFloat32, collectives.Float32},
	{"half", 2, ncclFloat16, collectives.Float16},
	{"bfloat16", 2, ncclBfloat16, collectives.BFloat16},
	{"int32", 4, ncclInt32, collectives.Int32},
	{"uint32", 4, ncclUint32, collectives.Uint32},
	{"double", 8, ncclFloat64, collectives.Float64},
}

func parseDataType(s string) (dataType, error) {
	for _, d := range dataTypes {
		if d.name == s {
			return d, nil
		}
	}
	return dataType{}, fmt.Errorf("-d %q: want float, half, bfloat16, int32, uint32 or double", s)
}

// redOp is a reduction the benchmark supports, with its value in NCCL and in package
// collectives (the same numbers).
type redOp struct {
	name string
	nccl ncclRedOp
	coll collectives.Op
}

var redOps = []redOp{{"sum", ncclSum, collectives.Sum}, {"min", ncclMin, collectives.Min}, {"max", ncclMax, collectives.Max}}

func parseRedOp(s string) (redOp, error) {
	for _, o := range redOps {
		if o.name == s {
			return o, nil
		}
	}
	return redOp{}, fmt.Errorf("-o %q: want sum, min or max", s)
}

// inputValue is element i of rank r's input: a small positive integer (1..11), so that every
// datatype holds it exactly and a sum over up to 23 ranks stays exact even in bfloat16 (exact
// integers up to 256) and half (up to 2048). Ranks differ, so min and max are meaningful.
func inputValue(rank, i int) float64 { return float64((i+3*rank)%11 + 1) }

// expectedAllReduce is element i of the AllReduce of every rank's input.
func expectedAllReduce(op redOp, nranks, i int) float64 {
	acc := inputValue(0, i)
	for r := 1; r < nranks; r++ {
		v := inputValue(r, i)
		switch op.nccl {
		case ncclSum:
			acc += v
		case ncclMin:
			acc = math.Min(acc, v)
		case ncclMax:
			acc = math.Max(acc, v)
		}
	}
	return acc
}

// expectedAllGather is element i of the AllGather of every rank's perRank-element input.
func expectedAllGather(perRank, i int) float64 { return inputValue(i/perRank, i%perRank) }

// expectedAlltoAll is element i of rank's AlltoAll result with perRank elements per peer: block
// i/perRank came from that rank, which sent its block for this rank (rank*perRank onwards).
func expectedAlltoAll(perRank, rank, i int) float64 {
	return inputValue(i/perRank, rank*perRank+i%perRank)
}

// encode writes v as element i of buf in datatype d (little-endian, as the GPU stores it).
func encode(d dataType, buf []byte, i int, v float64) {
	b := buf[i*d.size:]
	switch d.nccl {
	case ncclFloat32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case ncclFloat16:
		binary.LittleEndian.PutUint16(b, halfprec.ToHalf(float32(v)))
	case ncclBfloat16:
		binary.LittleEndian.PutUint16(b, halfprec.ToBfloat(float32(v)))
	case ncclInt32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case ncclUint32:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case ncclFloat64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	default:
		panic("encode: unsupported datatype " + d.name)
	}
}

// decode reads element i of buf in datatype d.
func decode(d dataType, buf []byte, i int) float64 {
	b := buf[i*d.size:]
	switch d.nccl {
	case ncclFloat32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case ncclFloat16:
		return float64(halfprec.FromHalf(binary.LittleEndian.Uint16(b)))
	case ncclBfloat16:
		return float64(halfprec.FromBfloat(binary.LittleEndian.Uint16(b)))
	case ncclInt32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case ncclUint32:
		return float64(binary.LittleEndian.Uint32(b))
	case ncclFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	default:
		panic("decode: unsupported datatype " + d.name)
	}
}

// fillInput writes rank's first count input elements into buf.
func fillInput(d dataType, buf []byte, rank, count int) {
	for i := range count {
		encode(d, buf, i, inputValue(rank, i))
	}
}

// countWrong compares the first count elements of buf with want(i), exactly, and returns how
// many differ.
func countWrong(d dataType, buf []byte, count int, want func(i int) float64) int64 {
	var wrong int64
	for i := range count {
		if decode(d, buf, i) != want(i) {
			wrong++
		}
	}
	return wrong
}
