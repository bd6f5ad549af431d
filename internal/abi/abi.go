package abi

/*
#cgo CXXFLAGS: -I${SRCDIR}/../../include -std=c++17 -Wall -Wextra
#include "layout.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Entry is one number derived by the C++ compiler from the headers.
type Entry struct {
	Name  string // the C expression that yields Value, e.g. "offsetof(mscclppDevConn, fifo)"
	Value uint64
}

// LegacyLayout returns every entry, in a fixed order: the legacy structs, enumerations and macros,
// then the device handles of include/mscclpp/ and their trigger macros, then the legacy trigger bit
// positions. The caller may modify the returned slice.
func LegacyLayout() []Entry {
	return append([]Entry(nil), legacyLayout()...)
}

// Lookup returns the value of the entry called name, and whether there is one.
func Lookup(name string) (uint64, bool) {
	v, ok := legacyIndex()[name]
	return v, ok
}

var legacyLayout = sync.OnceValue(func() []Entry {
	n := int(C.mscclppabi_entry_count())
	entries := make([]Entry, 0, n)
	for i := range n {
		var name *C.char
		var value C.uint64_t
		if C.mscclppabi_entry(C.size_t(i), &name, &value) == 0 {
			break
		}
		entries = append(entries, Entry{Name: C.GoString(name), Value: uint64(value)})
	}
	return entries
})

var legacyIndex = sync.OnceValue(func() map[string]uint64 {
	index := make(map[string]uint64)
	for _, e := range legacyLayout() {
		index[e.Name] = e.Value
	}
	return index
})

// TriggerFields holds the bit-fields of a mscclppTrigger, each as the C++ union stores it.
type TriggerFields struct {
	Type, DstDataOffset, SrcDataOffset, DataSize, ConnID uint64
}

// EncodeTrigger builds a mscclppTrigger by assigning the union's bit-fields in C++ and returns its
// two words. Values wider than their fields are truncated, as C++ assignment to a bit-field does.
func EncodeTrigger(f TriggerFields) [2]uint64 {
	var words [2]C.uint64_t
	C.mscclppabi_trigger_encode(C.uint64_t(f.Type), C.uint64_t(f.DstDataOffset), C.uint64_t(f.SrcDataOffset),
		C.uint64_t(f.DataSize), C.uint64_t(f.ConnID), (*C.uint64_t)(unsafe.Pointer(&words[0])))
	return [2]uint64{uint64(words[0]), uint64(words[1])}
}

// EncodeProxyTrigger builds a mscclppProxyTrigger with mscclppProxyTriggerEncode of
// include/mscclpp/fifo_device.h (named shifts and masks, no bit-fields) and returns {fst, snd}.
// Values wider than their fields are truncated, as the header's encoder masks them.
func EncodeProxyTrigger(f TriggerFields) [2]uint64 {
	var words [2]C.uint64_t
	C.mscclppabi_proxy_trigger_encode(C.uint64_t(f.Type), C.uint64_t(f.DstDataOffset), C.uint64_t(f.SrcDataOffset),
		C.uint64_t(f.DataSize), C.uint64_t(f.ConnID), (*C.uint64_t)(unsafe.Pointer(&words[0])))
	return [2]uint64{uint64(words[0]), uint64(words[1])}
}

// DecodeTrigger reads the bit-fields of the mscclppTrigger whose two words are value, in C++.
func DecodeTrigger(value [2]uint64) TriggerFields {
	words := [2]C.uint64_t{C.uint64_t(value[0]), C.uint64_t(value[1])}
	var typ, dst, src, size, conn C.uint64_t
	C.mscclppabi_trigger_decode((*C.uint64_t)(unsafe.Pointer(&words[0])), &typ, &dst, &src, &size, &conn)
	return TriggerFields{
		Type:          uint64(typ),
		DstDataOffset: uint64(dst),
		SrcDataOffset: uint64(src),
		DataSize:      uint64(size),
		ConnID:        uint64(conn),
	}
}
