package fifo

import "structs"

// ConcurrentFifo mirrors struct mscclppConcurrentFifo of include/mscclppfifo.h. The pointer fields
// hold device or mapped-host addresses, never Go pointers.
type ConcurrentFifo struct {
	_               structs.HostLayout
	TriggerFifo     uintptr
	TriggerFifoTail uintptr
	TriggerFifoHead uintptr
	ConnID          int32
	_               [4]byte // tail padding of the C struct
}
