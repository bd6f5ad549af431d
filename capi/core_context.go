package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The contexts, connections and registered memories of the primitive API (core.h). Destroying a
// context closes it: the connections and memories made through it stay in their tables until
// released, but the calls that use them fail (core.ErrContextClosed).
var (
	contexts    = newHandleTable[*core.Context]("context")
	connections = newHandleTable[*core.Connection]("connection")
	memories    = newHandleTable[core.RegisteredMemory]("registered memory")
)

// lookupMemories looks up the registered memories a call names, in order; the first handle that
// is not one fails the call.
func lookupMemories(hs ...C.mscclppRegMem_t) ([]core.RegisteredMemory, error) {
	ms := make([]core.RegisteredMemory, len(hs))
	for i, h := range hs {
		m, err := memories.lookup(unsafe.Pointer(h))
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

//export mscclppContextCreate
func mscclppContextCreate(ctx *C.mscclppContext_t) C.mscclppResult_t {
	return call("mscclppContextCreate", func() error {
		if ctx == nil {
			return invalidArg("context is NULL")
		}
		*ctx = C.mscclppContext_t(contexts.register(core.NewContext()))
		return nil
	})
}

//export mscclppContextDestroy
func mscclppContextDestroy(ctx C.mscclppContext_t) C.mscclppResult_t {
	return call("mscclppContextDestroy", func() error {
		c, err := contexts.release(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		return c.Close()
	})
}

//export mscclppEndpointCreate
func mscclppEndpointCreate(ctx C.mscclppContext_t, transport C.mscclppTransport_t, deviceType C.mscclppDeviceType_t,
	deviceID C.int, endpoint *C.mscclppEndpoint) C.mscclppResult_t {
	return call("mscclppEndpointCreate", func() error {
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		if endpoint == nil {
			return invalidArg("endpoint is NULL")
		}
		var devType core.DeviceType
		switch deviceType {
		case C.mscclppDeviceCPU:
			devType = core.DeviceCPU
		case C.mscclppDeviceGPU:
			devType = core.DeviceGPU
		default:
			return invalidArg("device type %d is neither mscclppDeviceCPU nor mscclppDeviceGPU", int(deviceType))
		}
		ep, err := c.CreateEndpoint(core.EndpointConfig{
			Transport: core.Transport(transport),
			Device:    core.Device{Type: devType, ID: int(deviceID)},
		})
		if err != nil {
			return err
		}
		return marshalInto(unsafe.Pointer(endpoint), cEndpointBytes, endpointWireBytes, "endpoint", ep)
	})
}

//export mscclppContextConnect
func mscclppContextConnect(ctx C.mscclppContext_t, local, remote *C.mscclppEndpoint,
	conn *C.mscclppConnection_t) C.mscclppResult_t {
	return call("mscclppContextConnect", func() error {
		if conn == nil {
			return invalidArg("connection is NULL")
		}
		*conn = nil
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		if local == nil || remote == nil {
			return invalidArg("local or remote endpoint is NULL")
		}
		l, err := core.UnmarshalEndpoint(wireBytes(unsafe.Pointer(local), endpointWireBytes))
		if err != nil {
			return err
		}
		r, err := core.UnmarshalEndpoint(wireBytes(unsafe.Pointer(remote), endpointWireBytes))
		if err != nil {
			return err
		}
		cn, err := c.Connect(l, r)
		if err != nil {
			return err
		}
		*conn = C.mscclppConnection_t(connections.register(cn))
		return nil
	})
}

//export mscclppConnectionRelease
func mscclppConnectionRelease(conn C.mscclppConnection_t) C.mscclppResult_t {
	return call("mscclppConnectionRelease", func() error {
		// A connection has nothing of its own to close: its stream belongs to its context.
		_, err := connections.release(unsafe.Pointer(conn))
		return err
	})
}

//export mscclppConnectionWrite
func mscclppConnectionWrite(conn C.mscclppConnection_t, dst C.mscclppRegMem_t, dstOffset C.uint64_t,
	src C.mscclppRegMem_t, srcOffset, size C.uint64_t) C.mscclppResult_t {
	return call("mscclppConnectionWrite", func() error {
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		m, err := lookupMemories(dst, src)
		if err != nil {
			return err
		}
		return cn.Write(m[0], uint64(dstOffset), m[1], uint64(srcOffset), uint64(size))
	})
}

//export mscclppConnectionUpdateAndSync
func mscclppConnectionUpdateAndSync(conn C.mscclppConnection_t, dst C.mscclppRegMem_t, dstOffset, value C.uint64_t) C.mscclppResult_t {
	return call("mscclppConnectionUpdateAndSync", func() error {
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		d, err := memories.lookup(unsafe.Pointer(dst))
		if err != nil {
			return err
		}
		return cn.UpdateAndSync(d, uint64(dstOffset), uint64(value))
	})
}

//export mscclppConnectionWriteWithSignal
func mscclppConnectionWriteWithSignal(conn C.mscclppConnection_t, dst C.mscclppRegMem_t, dstOffset C.uint64_t,
	src C.mscclppRegMem_t, srcOffset, size C.uint64_t, signal C.mscclppRegMem_t, signalOffset, value C.uint64_t) C.mscclppResult_t {
	return call("mscclppConnectionWriteWithSignal", func() error {
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		m, err := lookupMemories(dst, src, signal)
		if err != nil {
			return err
		}
		return cn.WriteWithSignal(m[0], uint64(dstOffset), m[1], uint64(srcOffset), uint64(size), m[2], uint64(signalOffset), uint64(value))
	})
}

//export mscclppConnectionFlush
func mscclppConnectionFlush(conn C.mscclppConnection_t, timeoutMs C.int64_t) C.mscclppResult_t {
	return call("mscclppConnectionFlush", func() error {
		cn, err := connections.lookup(unsafe.Pointer(conn))
		if err != nil {
			return err
		}
		ctx := context.Background()
		if timeoutMs >= 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
			defer cancel()
		}
		return cn.Flush(ctx)
	})
}

//export mscclppContextProgress
func mscclppContextProgress(ctx C.mscclppContext_t, transport C.mscclppTransport_t) C.mscclppResult_t {
	return call("mscclppContextProgress", func() error {
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		return c.Progress(core.Transport(transport))
	})
}

//export mscclppRegisterMemory
func mscclppRegisterMemory(ctx C.mscclppContext_t, ptr unsafe.Pointer, size C.size_t, transport C.mscclppTransport_t,
	mem *C.mscclppRegMem_t) C.mscclppResult_t {
	return call("mscclppRegisterMemory", func() error {
		if mem == nil {
			return invalidArg("memory is NULL")
		}
		*mem = nil
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		if ptr == nil {
			return invalidArg("ptr is NULL")
		}
		m, err := c.RegisterMemory(cuda.DevicePtr(uintptr(ptr)), uint64(size), core.Transport(transport))
		if err != nil {
			return err
		}
		*mem = C.mscclppRegMem_t(memories.register(m))
		return nil
	})
}

//export mscclppMemorySerialize
func mscclppMemorySerialize(mem C.mscclppRegMem_t, desc *C.mscclppMemoryDesc) C.mscclppResult_t {
	return call("mscclppMemorySerialize", func() error {
		m, err := memories.lookup(unsafe.Pointer(mem))
		if err != nil {
			return err
		}
		if desc == nil {
			return invalidArg("desc is NULL")
		}
		return marshalInto(unsafe.Pointer(desc), cMemoryDescBytes, memoryWireBytes, "registered memory", m)
	})
}

//export mscclppMemoryOpen
func mscclppMemoryOpen(ctx C.mscclppContext_t, desc *C.mscclppMemoryDesc, mem *C.mscclppRegMem_t) C.mscclppResult_t {
	return call("mscclppMemoryOpen", func() error {
		if mem == nil {
			return invalidArg("memory is NULL")
		}
		*mem = nil
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		if desc == nil {
			return invalidArg("desc is NULL")
		}
		m, err := core.UnmarshalRegisteredMemory(c, wireBytes(unsafe.Pointer(desc), memoryWireBytes))
		if err != nil {
			return err
		}
		*mem = C.mscclppRegMem_t(memories.register(m))
		return nil
	})
}

//export mscclppMemoryData
func mscclppMemoryData(mem C.mscclppRegMem_t, ptr *unsafe.Pointer, size *C.size_t) C.mscclppResult_t {
	return call("mscclppMemoryData", func() error {
		m, err := memories.lookup(unsafe.Pointer(mem))
		if err != nil {
			return err
		}
		if ptr == nil || size == nil {
			return invalidArg("ptr or size is NULL")
		}
		// A device address: written as an integer, never made a Go pointer.
		*(*uintptr)(unsafe.Pointer(ptr)) = uintptr(m.Data())
		*size = C.size_t(m.Size())
		return nil
	})
}

//export mscclppMemoryRelease
func mscclppMemoryRelease(mem C.mscclppRegMem_t) C.mscclppResult_t {
	return call("mscclppMemoryRelease", func() error {
		_, err := memories.release(unsafe.Pointer(mem))
		return err
	})
}
