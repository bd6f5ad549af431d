package collectives

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// DataType is an element type. The values are NCCL's (ncclDataType_t), so that an NCCL
// program's constants mean the same here.
type DataType int

// The supported element types. Every one moves (AllGather, Broadcast); those with a reduction
// kernel (Reducible) also reduce (AllReduce, ReduceScatter).
const (
	Int8       DataType = 0
	Uint8      DataType = 1
	Int32      DataType = 2
	Uint32     DataType = 3
	Int64      DataType = 4
	Uint64     DataType = 5
	Float16    DataType = 6
	Float32    DataType = 7
	Float64    DataType = 8
	BFloat16   DataType = 9
	Float8E4M3 DataType = 10 // fp8, 4 exponent and 3 mantissa bits (__nv_fp8_e4m3)
	Float8E5M2 DataType = 11 // fp8, 5 exponent and 2 mantissa bits (__nv_fp8_e5m2)
)

var dataTypes = map[DataType]struct {
	name   string
	size   int
	suffix string // of the reducing kernels' entry points (kernels/src/common.cuh); "": none
	// sumSuffix: of the entry points with sum compiled in. An unsigned type adds as the signed
	// type of its width (two's complement: the same bits), which has no kernel of its own.
	sumSuffix string
}{
	Int8:       {"int8", 1, "i8", "i8"},
	Uint8:      {"uint8", 1, "u8", "i8"},
	Int32:      {"int32", 4, "i32", "i32"},
	Uint32:     {"uint32", 4, "u32", "i32"},
	Int64:      {"int64", 8, "i64", "i64"},
	Uint64:     {"uint64", 8, "u64", "i64"},
	Float16:    {"float16", 2, "f16", "f16"},
	Float32:    {"float32", 4, "f32", "f32"},
	Float64:    {"float64", 8, "f64", "f64"},
	BFloat16:   {"bfloat16", 2, "bf16", "bf16"},
	Float8E4M3: {"float8e4m3", 1, "", ""},
	Float8E5M2: {"float8e5m2", 1, "", ""},
}

// Valid reports whether t is a supported type.
func (t DataType) Valid() bool { _, ok := dataTypes[t]; return ok }

// Reducible reports whether the reducing collectives (AllReduce, ReduceScatter) have a kernel
// for t.
func (t DataType) Reducible() bool { return dataTypes[t].suffix != "" }

// Size is the size of one element in bytes (0 for an unsupported type).
func (t DataType) Size() int { return dataTypes[t].size }

func (t DataType) String() string {
	if d, ok := dataTypes[t]; ok {
		return d.name
	}
	return fmt.Sprintf("DataType(%d)", int(t))
}

// checkReduction refuses what the reducing collectives cannot reduce: a type with no reduction
// kernel, or an unsupported operator. dt is valid.
func checkReduction(dt DataType, op Op) error {
	if !dt.Reducible() {
		return fmt.Errorf("%s has no reduction kernel; int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "+
			"float32 and float64 reduce: %w", dt, errs.ErrInvalidArgument)
	}
	if !op.Valid() {
		return fmt.Errorf("unsupported operator %s (sum, prod, max, min and avg are): %w", op, errs.ErrInvalidArgument)
	}
	return nil
}

// Op is a reduction operator, numbered as NCCL's ncclRedOp_t.
type Op int

// The supported operators. Avg is NCCL's ncclAvg: the sum divided once, at the end, by the
// number of ranks (integer types truncate the quotient toward zero; floating types divide with
// IEEE round to nearest, float16 and bfloat16 their sum as the type holds it, rounded once).
// Integer sums and products wrap around.
const (
	Sum  Op = 0
	Prod Op = 1
	Max  Op = 2
	Min  Op = 3
	Avg  Op = 4
)

// Valid reports whether op is supported.
func (op Op) Valid() bool { return op >= Sum && op <= Avg }

func (op Op) String() string {
	switch op {
	case Sum:
		return "sum"
	case Prod:
		return "prod"
	case Max:
		return "max"
	case Min:
		return "min"
	case Avg:
		return "avg"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}
