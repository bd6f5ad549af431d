package collectives

import (
	"structs"
	"unsafe"
)

// kernelArgs mirrors coll::Args of kernels/src/common.cuh, the one parameter of every kernel:
// 8-byte fields only, in the same order (the C++ side static_asserts its size and last offset;
// kernel_args_test.go checks this side).
type kernelArgs struct {
	_          structs.HostLayout
	Send       uintptr // the caller's send buffer
	Recv       uintptr // the caller's receive buffer
	Count      uint64  // AllReduce: elements; ReduceScatter: elements per rank; AllGather: bytes per rank; Broadcast: bytes
	Op         uint64  // Op (AllReduce, ReduceScatter); Broadcast: the root rank
	Channels   uintptr // device array of MemoryChannelDeviceHandle, [block][peer]
	Scratch    uintptr // this rank's scratch
	State      uintptr // this communicator's coll::State
	Rank       uint64
	NRanks     uint64
	SlotBytes  uint64  // bytes of one rank's packet slot
	ChunkBytes uint64  // bytes of one (rank, block) data slot
	DataOffset uint64  // where the data banks start in the scratch
	MaxSpins   int64   // bound of every device spin
	Regs       uintptr // zero-copy: the registration table (coll::Registration [maxRegistrations][nRanks])
	SendDesc   uint64  // zero-copy: where send is, descriptor(registration, offset)
	RecvDesc   uint64  // zero-copy: where recv is
	DescOffset uint64  // where the descriptor packets start in the scratch
	Ports      uintptr // copy engine: PortChannelDeviceHandle [2*PortRows][nRanks-1] (ports.go)
	PortRows   uint64  // registrations [0, PortRows) may have port channels
	Abort      uintptr // the Comm's abort words, host memory mapped into the device (abort.go)
}

const kernelArgsBytes = 160

// bytes is the parameter as the kernel receives it.
func (a *kernelArgs) bytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(a)), unsafe.Sizeof(*a))
}

// stateBytes is sizeof(coll::State): the call ticks (8 bytes), a round counter and a wave counter
// per block, and the port kernels' counters of landed waves and of blocks done.
const stateBytes = 16 + 8*maxBlocks
