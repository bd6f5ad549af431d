package collectives

import "fmt"

// DataType is an element type. The values are NCCL's (ncclDataType_t), so that an NCCL
// program's constants mean the same here.
type DataType int

// The supported element types.
const (
	Int32    DataType = 2
	Uint32   DataType = 3
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
)

var dataTypes = map[DataType]struct {
	name   string
	size   int
	suffix string // of the reducing kernels' entry points (kernels/src/common.cuh)
}{
	Int32:    {"int32", 4, "i32"},
	Uint32:   {"uint32", 4, "u32"},
	Float16:  {"float16", 2, "f16"},
	Float32:  {"float32", 4, "f32"},
	Float64:  {"float64", 8, "f64"},
	BFloat16: {"bfloat16", 2, "bf16"},
}

// Valid reports whether t is a supported type.
func (t DataType) Valid() bool { _, ok := dataTypes[t]; return ok }

// Size is the size of one element in bytes (0 for an unsupported type).
func (t DataType) Size() int { return dataTypes[t].size }

func (t DataType) String() string {
	if d, ok := dataTypes[t]; ok {
		return d.name
	}
	return fmt.Sprintf("DataType(%d)", int(t))
}

// Op is a reduction operator, numbered as NCCL's ncclRedOp_t.
type Op int

// The supported operators.
const (
	Sum Op = 0
	Max Op = 2
	Min Op = 3
)

// Valid reports whether op is supported.
func (op Op) Valid() bool { return op == Sum || op == Max || op == Min }

func (op Op) String() string {
	switch op {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}
