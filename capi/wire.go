package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"encoding"
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/channels"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// The sizes of the serialized structs of core.h.
const (
	cEndpointBytes      = C.MSCCLPP_ENDPOINT_BYTES
	cSemaphoreStubBytes = C.MSCCLPP_SEMAPHORE_STUB_BYTES
	cMemoryDescBytes    = C.MSCCLPP_MEMORY_DESC_BYTES
)

// The lengths of core's wire encodings, which its decoders require exactly: Endpoint
// (core/endpoint.go), RegisteredMemory (core/registered_memory.go) and SemaphoreStub
// (core/semaphore.go: magic, version, endpoint, token). A C struct holds the encoding followed by
// zeros. wire_test.go checks them against core and against the C sizes.
const (
	endpointWireBytes = 192
	memoryWireBytes   = 128
	stubWireBytes     = 8 + endpointWireBytes + memoryWireBytes
)

// The C structs of the serialized objects are large enough for core's encodings.
var (
	_ [cEndpointBytes - endpointWireBytes]byte
	_ [cSemaphoreStubBytes - stubWireBytes]byte
	_ [cMemoryDescBytes - memoryWireBytes]byte
)

// The device handles of core.h and their Go mirrors in channels have the same size (the layout
// tests of channels check the fields).
var (
	_ [unsafe.Sizeof(C.mscclppBaseMemoryChannelDeviceHandle{}) - unsafe.Sizeof(channels.BaseMemoryChannelDeviceHandle{})]byte
	_ [unsafe.Sizeof(channels.BaseMemoryChannelDeviceHandle{}) - unsafe.Sizeof(C.mscclppBaseMemoryChannelDeviceHandle{})]byte
	_ [unsafe.Sizeof(C.mscclppMemoryChannelDeviceHandle{}) - unsafe.Sizeof(channels.MemoryChannelDeviceHandle{})]byte
	_ [unsafe.Sizeof(channels.MemoryChannelDeviceHandle{}) - unsafe.Sizeof(C.mscclppMemoryChannelDeviceHandle{})]byte
	_ [unsafe.Sizeof(C.mscclppPortChannelDeviceHandle{}) - unsafe.Sizeof(channels.PortChannelDeviceHandle{})]byte
	_ [unsafe.Sizeof(channels.PortChannelDeviceHandle{}) - unsafe.Sizeof(C.mscclppPortChannelDeviceHandle{})]byte
)

// marshalInto writes v's encoding, which must be wire bytes long, at dst (cSize bytes) and zeros
// after it.
func marshalInto(dst unsafe.Pointer, cSize, wire int, what string, v encoding.BinaryMarshaler) error {
	b, err := v.MarshalBinary()
	if err != nil {
		return err
	}
	if len(b) > cSize || len(b) != wire {
		return fmt.Errorf("%w: the %s encoding is %d bytes, want %d (C struct of %d bytes)",
			errs.ErrInternal, what, len(b), wire, cSize)
	}
	out := unsafe.Slice((*byte)(dst), cSize)
	copy(out, b)
	clear(out[len(b):])
	return nil
}

// wireBytes returns a Go copy of the encoding at the start of a C struct.
func wireBytes(src unsafe.Pointer, wire int) []byte {
	return C.GoBytes(src, C.int(wire))
}
