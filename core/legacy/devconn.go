package legacy

import (
	"structs"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// The mirrors below describe memory shared with C and CUDA code. Their pointer fields hold device
// (or device-mapped host) addresses, never Go pointers.

// SignalEpochID mirrors struct mscclppDevConnSignalEpochId of include/mscclpp.h. The C type is
// alignas(16), which Go cannot express: the layout matches (16 bytes), and memory the GPU uses
// for it must come from a 16-byte-aligned allocation (cudaMalloc and friends are), not from Go.
type SignalEpochID struct {
	_      structs.HostLayout
	Device uint64
	Proxy  uint64
}

// BaseConn mirrors struct mscclppBaseConn of include/mscclpp.h.
type BaseConn struct {
	_                   structs.HostLayout
	RemoteRank          int32
	Tag                 int32
	LocalBuff           uintptr
	LocalSignalEpochID  uintptr // *SignalEpochID in device memory
	RemoteSignalEpochID uintptr // *SignalEpochID in device memory
	WaitEpochID         uintptr // *uint64 in device memory
	RemoteBuff          uintptr
}

// DevConn mirrors struct mscclppDevConn (mscclppDevConn_t) of include/mscclpp.h: the fields of
// mscclppBaseConn, then the FIFO.
type DevConn struct {
	_ structs.HostLayout
	BaseConn
	Fifo fifo.ConcurrentFifo
}

// Sizes of the per-connection device objects (see include/mscclpp.h).
const (
	signalPairBytes = int(unsafe.Sizeof(SignalEpochID{})) // mscclppDevConnSignalEpochId
	waitEpochBytes  = 8                                   // uint64_t waitEpochId
	proxyFieldShift = uint64(unsafe.Offsetof(SignalEpochID{}.Proxy))
)
