package main

/*
#cgo CXXFLAGS: -I${SRCDIR}/../include -std=c++17
#include "capi.h"
void capiRegMemSetP2P(mscclppRegisteredMemory* regMem, size_t n, const uint64_t* remoteBuffs);
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/legacy"
)

// registrations maps the caller's mscclppRegisteredMemory structs to what they registered. An
// entry lives as long as its communicator.
var registrations = map[*C.mscclppRegisteredMemory]regEntry{}

type regEntry struct {
	comm C.mscclppComm_t
	reg  *legacy.Registration
}

// forgetRegistrations drops the entries of a destroyed communicator. legacyMu is held.
func forgetRegistrations(h C.mscclppComm_t) {
	for m, e := range registrations {
		if e.comm == h {
			delete(registrations, m)
		}
	}
}

//export mscclppRegisterBuffer
func mscclppRegisterBuffer(comm C.mscclppComm_t, localMemory unsafe.Pointer, size C.size_t, regMem *C.mscclppRegisteredMemory) C.mscclppResult_t {
	return callComm("mscclppRegisterBuffer", comm, func(c *legacy.Comm) error {
		if localMemory == nil || regMem == nil {
			return invalidArg("local_memory or regMem is NULL")
		}
		if size == 0 {
			return invalidArg("size is 0")
		}
		reg, err := c.RegisterBuffer(context.Background(), cuda.DevicePtr(uintptr(localMemory)), uint64(size))
		if err != nil {
			return err
		}
		addrs := make([]C.uint64_t, len(reg.Remote)) // device addresses; C++ stores them as void*
		for i, rb := range reg.Remote {
			addrs[i] = C.uint64_t(rb.Addr)
		}
		C.capiRegMemSetP2P(regMem, C.size_t(len(addrs)), &addrs[0])
		legacyMu.Lock()
		defer legacyMu.Unlock()
		registrations[regMem] = regEntry{comm: comm, reg: reg}
		return nil
	})
}

//export mscclppRegisteredBufferWrite
func mscclppRegisteredBufferWrite(comm C.mscclppComm_t, regMem *C.mscclppRegisteredMemory, srcBuff unsafe.Pointer,
	size C.size_t, srcOffset C.uint32_t, dstOffset C.uint32_t, stream C.int64_t) C.mscclppResult_t {
	return call("mscclppRegisteredBufferWrite", func() error {
		if regMem == nil || srcBuff == nil {
			return invalidArg("regMem or srcBuff is NULL")
		}
		legacyMu.Lock()
		if _, err := lookupComm(comm); err != nil {
			legacyMu.Unlock()
			return err
		}
		e, ok := registrations[regMem]
		legacyMu.Unlock()
		if !ok || e.comm != comm {
			return invalidUsage("regMem %p was not filled by mscclppRegisterBuffer on this communicator", unsafe.Pointer(regMem))
		}
		return e.reg.Write(cuda.DevicePtr(uintptr(srcBuff)), uint64(size), uint64(srcOffset), uint64(dstOffset),
			cuda.StreamFromHandle(C.capiStreamHandle(stream)))
	})
}
