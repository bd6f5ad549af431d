package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The point-to-point calls of collectives.h: Send/Recv and AlltoAll.

//export mscclppSendRecv
func mscclppSendRecv(ops *C.mscclppP2POp, nops C.int, comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return call("mscclppSendRecv", func() error {
		c, err := collComms.lookup(unsafe.Pointer(comm))
		if err != nil {
			return err
		}
		switch {
		case nops < 0:
			return invalidArg("nops %d is negative", int(nops))
		case nops > 0 && ops == nil:
			return invalidArg("ops is NULL")
		}
		in := unsafe.Slice(ops, int(nops))
		p2p := make([]collectives.P2POp, len(in))
		for i, op := range in {
			if op.count > maxCount {
				return invalidArg("operation %d: count %d is too large", i, uint64(op.count))
			}
			p2p[i] = collectives.P2POp{Peer: int(op.peer), Send: op.isSend != 0, Buf: cuda.DevicePtr(uintptr(op.buff)),
				Count: int(op.count), Type: collectives.DataType(op.datatype)}
		}
		return c.SendRecv(p2p, cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}

//export mscclppAlltoAll
func mscclppAlltoAll(send, recv unsafe.Pointer, count C.size_t, dt C.mscclppDataType_t,
	comm C.mscclppCollComm_t, stream C.mscclppStream_t) C.mscclppResult_t {
	return collCall("mscclppAlltoAll", comm, count, func(c *collectives.Comm, n int) error {
		return c.AlltoAll(cuda.DevicePtr(uintptr(send)), cuda.DevicePtr(uintptr(recv)), n,
			collectives.DataType(dt), cuda.StreamFromHandle(unsafe.Pointer(stream)))
	})
}
