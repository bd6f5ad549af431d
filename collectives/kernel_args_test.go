package collectives

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestKernelArgsLayout: every field of the mirror is 8 bytes at 8*i, as coll::Args declares
// them (the C++ side static_asserts sizeof(Args) == 160 and offsetof(abort) == 152).
func TestKernelArgsLayout(t *testing.T) {
	var a kernelArgs
	assert.Equal(t, uintptr(kernelArgsBytes), unsafe.Sizeof(a))
	typ := reflect.TypeOf(a)
	off := uintptr(0)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "_" {
			continue
		}
		assert.Equal(t, off, f.Offset, f.Name)
		assert.Equal(t, uintptr(8), f.Type.Size(), f.Name)
		off += 8
	}
	assert.Equal(t, "Abort", typ.Field(typ.NumField()-1).Name)
	assert.Len(t, a.bytes(), kernelArgsBytes)
}
