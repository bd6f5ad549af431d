package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The collective communicators (collectives.h).
var collComms = newHandleTable[*collectives.Comm]("collective communicator")

//export mscclppCollCommCreate
func mscclppCollCommCreate(comm C.mscclppCommunicator_t, deviceID C.int, out *C.mscclppCollComm_t) C.mscclppResult_t {
	return call("mscclppCollCommCreate", func() error {
		if out == nil {
			return invalidArg("collective communicator is NULL")
		}
		*out = nil
		c, err := communicators.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		device := int(deviceID)
		if device < 0 {
			d, err := cuda.CurrentDevice()
			if err != nil {
				return invalidUsage("deviceId < 0 asks for the current device, and there is none: %v", err)
			}
			device = int(d)
		}
		// The setup's exchanges end by themselves within the bootstrap timeout.
		cc, err := collectives.New(context.Background(), c, device)
		if err != nil {
			return err
		}
		*out = C.mscclppCollComm_t(collComms.register(cc))
		return nil
	})
}

//export mscclppCollCommDestroy
func mscclppCollCommDestroy(comm C.mscclppCollComm_t) C.mscclppResult_t {
	return call("mscclppCollCommDestroy", func() error {
		c, err := collComms.release(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// The zero-copy registrations (collectives.h).
var collRegistrations = newHandleTable[*collectives.Registration]("collective registration")

//export mscclppCollRegister
func mscclppCollRegister(comm C.mscclppCollComm_t, buff unsafe.Pointer, size C.size_t, out *C.mscclppCollRegistration_t) C.mscclppResult_t {
	return call("mscclppCollRegister", func() error {
		if out == nil {
			return invalidArg("registration is NULL")
		}
		*out = nil
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		// The exchange with the peers ends by itself within the bootstrap timeout.
		r, err := c.Register(context.Background(), cuda.DevicePtr(uintptr(buff)), uint64(size))
		if err != nil {
			return err
		}
		*out = C.mscclppCollRegistration_t(collRegistrations.register(r))
		return nil
	})
}

//export mscclppCollDeregister
func mscclppCollDeregister(comm C.mscclppCollComm_t, reg C.mscclppCollRegistration_t) C.mscclppResult_t {
	return call("mscclppCollDeregister", func() error {
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		r, err := collRegistrations.lookup(unsafe.Pointer(reg))
		if err != nil {
			return err
		}
		if r.Comm() != c {
			return invalidArg("the registration belongs to another collective communicator")
		}
		if _, err := collRegistrations.release(unsafe.Pointer(reg)); err != nil {
			return err
		}
		return r.Close()
	})
}

//export mscclppCollCommAbort
func mscclppCollCommAbort(comm C.mscclppCollComm_t) C.mscclppResult_t {
	return call("mscclppCollCommAbort", func() error {
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		c.Abort()
		return nil
	})
}

//export mscclppCollCommGetAsyncError
func mscclppCollCommGetAsyncError(comm C.mscclppCollComm_t, asyncError *C.mscclppResult_t, reason *C.char,
	reasonBytes C.size_t) C.mscclppResult_t {
	return call("mscclppCollCommGetAsyncError", func() error {
		if asyncError == nil {
			return invalidArg("asyncError is NULL")
		}
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		failure := c.Err()
		*asyncError = toResult(failure)
		if reason != nil && reasonBytes > 0 {
			msg := ""
			if failure != nil {
				msg = failure.Error()
			}
			dst := unsafe.Slice((*byte)(unsafe.Pointer(reason)), int(reasonBytes))
			dst[copy(dst[:len(dst)-1], msg)] = 0
		}
		return nil
	})
}

// collCommQuery writes one property of a collective communicator to *out.
func collCommQuery(op string, comm C.mscclppCollComm_t, out *C.int, get func(c *collectives.Comm) int) C.mscclppResult_t {
	return call(op, func() error {
		if out == nil {
			return invalidArg("output is NULL")
		}
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		*out = C.int(get(c))
		return nil
	})
}

//export mscclppCollCommRank
func mscclppCollCommRank(comm C.mscclppCollComm_t, rank *C.int) C.mscclppResult_t {
	return collCommQuery("mscclppCollCommRank", comm, rank, (*collectives.Comm).Rank)
}

//export mscclppCollCommSize
func mscclppCollCommSize(comm C.mscclppCollComm_t, nranks *C.int) C.mscclppResult_t {
	return collCommQuery("mscclppCollCommSize", comm, nranks, (*collectives.Comm).NRanks)
}

//export mscclppCollCommDevice
func mscclppCollCommDevice(comm C.mscclppCollComm_t, device *C.int) C.mscclppResult_t {
	return collCommQuery("mscclppCollCommDevice", comm, device, (*collectives.Comm).Device)
}

// maxCount is the largest element count the Go API takes (an int).
const maxCount = C.size_t(^uint(0) >> 1)

// collCall is the common part of the collectives' exports: the communicator's lookup and the
// count's range, then body with the count as an int.
func collCall(op string, comm C.mscclppCollComm_t, count C.size_t, body func(c *collectives.Comm, n int) error) C.mscclppResult_t {
	return call(op, func() error {
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		if count > maxCount {
			return invalidArg("count %d is too large", uint64(count))
		}
		return body(c, int(count))
	})
}

//export mscclppAllReduce
func mscclppAllReduce(send, recv unsafe.Pointer, count C.size_t, dt C.mscclppDataType_t, op C.mscclppRedOp_t,
	comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppAllReduce", comm, count, func(c *collectives.Comm, n int) error {
		return c.AllReduce(cuda.DevicePtr(uintptr(send)), cuda.DevicePtr(uintptr(recv)), n,
			collectives.DataType(dt), collectives.Op(op), cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}

//export mscclppAllGather
func mscclppAllGather(send, recv unsafe.Pointer, count C.size_t, dt C.mscclppDataType_t,
	comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppAllGather", comm, count, func(c *collectives.Comm, n int) error {
		return c.AllGather(cuda.DevicePtr(uintptr(send)), cuda.DevicePtr(uintptr(recv)), n,
			collectives.DataType(dt), cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}

//export mscclppReduceScatter
func mscclppReduceScatter(send, recv unsafe.Pointer, recvCount C.size_t, dt C.mscclppDataType_t, op C.mscclppRedOp_t,
	comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppReduceScatter", comm, recvCount, func(c *collectives.Comm, n int) error {
		return c.ReduceScatter(cuda.DevicePtr(uintptr(send)), cuda.DevicePtr(uintptr(recv)), n,
			collectives.DataType(dt), collectives.Op(op), cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}

//export mscclppBroadcast
func mscclppBroadcast(send, recv unsafe.Pointer, count C.size_t, dt C.mscclppDataType_t, root C.int,
	comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppBroadcast", comm, count, func(c *collectives.Comm, n int) error {
		return c.Broadcast(cuda.DevicePtr(uintptr(send)), cuda.DevicePtr(uintptr(recv)), n,
			collectives.DataType(dt), int(root), cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}

//export mscclppScale
func mscclppScale(src, dst unsafe.Pointer, count C.size_t, dt C.mscclppDataType_t, scalar unsafe.Pointer,
	scalarOnDevice C.int, comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppScale", comm, count, func(c *collectives.Comm, n int) error {
		if scalar == nil {
			return invalidArg("scalar is NULL")
		}
		d := collectives.DataType(dt)
		factor := collectives.ScalarAt(cuda.DevicePtr(uintptr(scalar)))
		if scalarOnDevice == 0 {
			// One element in host memory, read now (an unknown type has size 0: Scale refuses it).
			var bits [8]byte
			copy(bits[:], unsafe.Slice((*byte)(scalar), d.Size()))
			factor = collectives.ScalarBits(binary.LittleEndian.Uint64(bits[:]))
		}
		return c.Scale(cuda.DevicePtr(uintptr(src)), cuda.DevicePtr(uintptr(dst)), n, d, factor,
			cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}
