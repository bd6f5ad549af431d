package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/mscclpp-go/mscclpp/channels"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The semaphores and proxy services of the primitive API (core.h).
var (
	semaphores    = newHandleTable[*core.Semaphore]("semaphore")
	proxyServices = newHandleTable[*channels.ProxyService]("proxy service")
)

//export mscclppSemaphoreStubCreate
func mscclppSemaphoreStubCreate(conn C.mscclppConnection_t, stub *C.mscclppSemaphoreStub) C.mscclppResult_t {
	return call("mscclppSemaphoreStubCreate", func() error {
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		if stub == nil {
			return invalidArg("stub is NULL")
		}
		s, err := core.NewSemaphoreStub(cn)
		if err != nil {
			return err
		}
		return marshalInto(unsafe.Pointer(stub), cSemaphoreStubBytes, stubWireBytes, "semaphore stub", s)
	})
}

//export mscclppSemaphoreCreate
func mscclppSemaphoreCreate(conn C.mscclppConnection_t, local, remote *C.mscclppSemaphoreStub,
	sema *C.mscclppSemaphore_t) C.mscclppResult_t {
	return call("mscclppSemaphoreCreate", func() error {
		if sema == nil {
			return invalidArg("semaphore is NULL")
		}
		*sema = nil
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		if local == nil || remote == nil {
			return invalidArg("local or remote stub is NULL")
		}
		// The stubs are decoded with the connection's context, which maps the peer's token.
		l, err := core.UnmarshalSemaphoreStub(cn.Context(), wireBytes(unsafe.Pointer(local), stubWireBytes))
		if err != nil {
			return err
		}
		r, err := core.UnmarshalSemaphoreStub(cn.Context(), wireBytes(unsafe.Pointer(remote), stubWireBytes))
		if err != nil {
			return err
		}
		s, err := core.NewSemaphoreOn(cn, l, r)
		if err != nil {
			return err
		}
		*sema = C.mscclppSemaphore_t(semaphores.register(s))
		return nil
	})
}

//export mscclppSemaphoreDestroy
func mscclppSemaphoreDestroy(sema C.mscclppSemaphore_t) C.mscclppResult_t {
	return call("mscclppSemaphoreDestroy", func() error {
		s, err := semaphores.release(unsafe.Pointer(sema))
		if err != nil {
			return err
		}
		return s.Close()
	})
}

//export mscclppBaseMemoryChannelGetDeviceHandle
func mscclppBaseMemoryChannelGetDeviceHandle(sema C.mscclppSemaphore_t,
	handle *C.mscclppBaseMemoryChannelDeviceHandle) C.mscclppResult_t {
	return call("mscclppBaseMemoryChannelGetDeviceHandle", func() error {
		s, err := semaphores.lookup(unsafe.Pointer(sema))
		if err != nil {
			return err
		}
		if handle == nil {
			return invalidArg("handle is NULL")
		}
		ch, err := channels.NewBaseMemoryChannel(s)
		if err != nil {
			return err
		}
		*(*channels.BaseMemoryChannelDeviceHandle)(unsafe.Pointer(handle)) = ch.DeviceHandle()
		return nil
	})
}

//export mscclppMemoryChannelGetDeviceHandle
func mscclppMemoryChannelGetDeviceHandle(sema C.mscclppSemaphore_t, dst, src C.mscclppRegMem_t,
	packetBuffer unsafe.Pointer, handle *C.mscclppMemoryChannelDeviceHandle) C.mscclppResult_t {
	return call("mscclppMemoryChannelGetDeviceHandle", func() error {
		s, err := semaphores.lookup(unsafe.Pointer(sema))
		if err != nil {
			return err
		}
		m, err := lookupMemories(dst, src)
		if err != nil {
			return err
		}
		if handle == nil {
			return invalidArg("handle is NULL")
		}
		ch, err := channels.NewMemoryChannel(s, m[0], m[1], cuda.DevicePtr(uintptr(packetBuffer)))
		if err != nil {
			return err
		}
		*(*channels.MemoryChannelDeviceHandle)(unsafe.Pointer(handle)) = ch.DeviceHandle()
		return nil
	})
}

//export mscclppProxyServiceCreate
func mscclppProxyServiceCreate(fifoSize C.int, service *C.mscclppProxyService_t) C.mscclppResult_t {
	return call("mscclppProxyServiceCreate", func() error {
		if service == nil {
			return invalidArg("service is NULL")
		}
		*service = nil
		s, err := channels.NewProxyService(int(fifoSize))
		if err != nil {
			return err
		}
		*service = C.mscclppProxyService_t(proxyServices.register(s))
		return nil
	})
}

//export mscclppProxyServiceAddSemaphore
func mscclppProxyServiceAddSemaphore(service C.mscclppProxyService_t, sema C.mscclppSemaphore_t,
	id *C.uint32_t) C.mscclppResult_t {
	return call("mscclppProxyServiceAddSemaphore", func() error {
		s, err := proxyServices.lookup(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		sm, err := semaphores.lookup(unsafe.Pointer(sema))
		if err != nil {
			return err
		}
		if id == nil {
			return invalidArg("semaphoreId is NULL")
		}
		*id = C.uint32_t(s.AddSemaphore(sm))
		return nil
	})
}

//export mscclppProxyServiceAddMemory
func mscclppProxyServiceAddMemory(service C.mscclppProxyService_t, mem C.mscclppRegMem_t,
	id *C.uint32_t) C.mscclppResult_t {
	return call("mscclppProxyServiceAddMemory", func() error {
		s, err := proxyServices.lookup(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		m, err := memories.lookup(unsafe.Pointer(mem))
		if err != nil {
			return err
		}
		if id == nil {
			return invalidArg("memoryId is NULL")
		}
		*id = C.uint32_t(s.AddMemory(m))
		return nil
	})
}

//export mscclppProxyServicePortChannel
func mscclppProxyServicePortChannel(service C.mscclppProxyService_t, semaID, dst, src C.uint32_t,
	handle *C.mscclppPortChannelDeviceHandle) C.mscclppResult_t {
	return call("mscclppProxyServicePortChannel", func() error {
		s, err := proxyServices.lookup(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		if handle == nil {
			return invalidArg("handle is NULL")
		}
		ch, err := s.PortChannel(channels.SemaphoreID(semaID), channels.MemoryID(dst), channels.MemoryID(src))
		if err != nil {
			return err
		}
		*(*channels.PortChannelDeviceHandle)(unsafe.Pointer(handle)) = ch.DeviceHandle()
		return nil
	})
}

//export mscclppProxyServiceStart
func mscclppProxyServiceStart(service C.mscclppProxyService_t) C.mscclppResult_t {
	return call("mscclppProxyServiceStart", func() error {
		s, err := proxyServices.lookup(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		return s.Start()
	})
}

//export mscclppProxyServiceStop
func mscclppProxyServiceStop(service C.mscclppProxyService_t) C.mscclppResult_t {
	return call("mscclppProxyServiceStop", func() error {
		s, err := proxyServices.lookup(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		return s.Stop()
	})
}

//export mscclppProxyServiceDestroy
func mscclppProxyServiceDestroy(service C.mscclppProxyService_t) C.mscclppResult_t {
	return call("mscclppProxyServiceDestroy", func() error {
		s, err := proxyServices.release(unsafe.Pointer(service))
		if err != nil {
			return err
		}
		return s.Close()
	})
}
