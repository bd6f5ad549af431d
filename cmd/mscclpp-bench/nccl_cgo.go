// This file and ncclshim.c are the benchmark's only C: NCCL is a C library loaded at run time,
// and Go cannot call a C function pointer, so each NCCL function gets a C trampoline that calls
// the pointer dlsym resolved. Only thin typed wrappers live here; see nccl.go.

package main

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include <string.h>
#include "ncclshim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

const (
	dlErrorLen   = 1024
	uniqueIDSize = C.sizeof_ncclUniqueId
)

// ncclUniqueID is NCCL's ncclUniqueId: plain bytes, broadcast as is.
type ncclUniqueID [uniqueIDSize]byte

// ncclComm is an NCCL communicator (ncclComm_t).
type ncclComm struct{ h C.ncclComm_t }

// ncclOpen dlopens path and resolves every entry point. code is 0, -1 (dlopen failed) or -2 (a
// symbol is missing); msg is dlerror's message.
func ncclOpen(path string) (code int, msg string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	buf := (*C.char)(C.malloc(dlErrorLen))
	defer C.free(unsafe.Pointer(buf))
	*buf = 0
	r := C.bench_nccl_open(cpath, buf, dlErrorLen)
	return int(r), C.GoString(buf)
}

// ncclHas reports whether the loaded library defines the optional entry point name
// (ncclAlltoAll, ncclSend, ncclRecv, ncclGroupStart, ncclGroupEnd).
func ncclHas(name string) bool {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.bench_nccl_has(cname) != 0
}

func ncclErrorString(r C.ncclResult_t) string { return C.GoString(C.bench_ncclGetErrorString(r)) }

func ncclCheck(op string, r C.ncclResult_t) error {
	switch r {
	case 0:
		return nil
	case C.BENCH_NCCL_MISSING:
		return fmt.Errorf("%w %s", errNCCLLacks, op)
	}
	return &ncclError{op: op, code: int(r), msg: ncclErrorString(r)}
}

func ncclGetVersion() (int, error) {
	var v C.int
	err := ncclCheck("ncclGetVersion", C.bench_ncclGetVersion(&v))
	return int(v), err
}

func ncclGetUniqueID() (ncclUniqueID, error) {
	var id C.ncclUniqueId
	err := ncclCheck("ncclGetUniqueId", C.bench_ncclGetUniqueId(&id))
	var out ncclUniqueID
	copy(out[:], C.GoBytes(unsafe.Pointer(&id), uniqueIDSize))
	return out, err
}

func ncclCommInitRank(nranks int, id ncclUniqueID, rank int) (ncclComm, error) {
	var cid C.ncclUniqueId
	C.memcpy(unsafe.Pointer(&cid), unsafe.Pointer(&id[0]), uniqueIDSize)
	var c C.ncclComm_t
	err := ncclCheck("ncclCommInitRank", C.bench_ncclCommInitRank(&c, C.int(nranks), cid, C.int(rank)))
	return ncclComm{h: c}, err
}

func (c ncclComm) destroy() error {
	return ncclCheck("ncclCommDestroy", C.bench_ncclCommDestroy(c.h))
}

func (c ncclComm) allReduce(send, recv cuda.DevicePtr, count int, dt ncclDataType, op ncclRedOp, s cuda.Stream) error {
	return ncclCheck("ncclAllReduce", C.bench_ncclAllReduce(C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(count), C.ncclDataType_t(dt), C.ncclRedOp_t(op), c.h, C.cudaStream_t(s.Handle())))
}

func (c ncclComm) allGather(send, recv cuda.DevicePtr, sendCount int, dt ncclDataType, s cuda.Stream) error {
	return ncclCheck("ncclAllGather", C.bench_ncclAllGather(C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(sendCount), C.ncclDataType_t(dt), c.h, C.cudaStream_t(s.Handle())))
}

func (c ncclComm) reduceScatter(send, recv cuda.DevicePtr, recvCount int, dt ncclDataType, op ncclRedOp, s cuda.Stream) error {
	return ncclCheck("ncclReduceScatter", C.bench_ncclReduceScatter(C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(recvCount), C.ncclDataType_t(dt), C.ncclRedOp_t(op), c.h, C.cudaStream_t(s.Handle())))
}

func (c ncclComm) broadcast(send, recv cuda.DevicePtr, count int, dt ncclDataType, root int, s cuda.Stream) error {
	return ncclCheck("ncclBroadcast", C.bench_ncclBroadcast(C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(count), C.ncclDataType_t(dt), C.int(root), c.h, C.cudaStream_t(s.Handle())))
}

func (c ncclComm) alltoAll(send, recv cuda.DevicePtr, count int, dt ncclDataType, s cuda.Stream) error {
	return ncclCheck("ncclAlltoAll", C.bench_ncclAlltoAll(C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(count), C.ncclDataType_t(dt), c.h, C.cudaStream_t(s.Handle())))
}

// sendRecv is one group of an ncclSend to sendPeer and an ncclRecv from recvPeer, in one cgo call.
func (c ncclComm) sendRecv(send, recv cuda.DevicePtr, count int, dt ncclDataType, sendPeer, recvPeer int, s cuda.Stream) error {
	var failed *C.char
	r := C.bench_ncclSendRecv(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.ncclDataType_t(dt),
		C.int(sendPeer), C.int(recvPeer), c.h, C.cudaStream_t(s.Handle()), &failed)
	if r == 0 {
		return nil
	}
	return ncclCheck(C.GoString(failed), r)
}
