package core

// A signal that arrives as remote CQ data is stored by this process into host memory it
// registered (transport_fabric_signals.go), whose address is a number; this file turns it into
// a pointer.

import (
	"sync/atomic"
	"unsafe"
)

// storeSignal stores v, atomically, into the 8-byte aligned word at addr: host memory registered
// with a fabricNet, which waiters read with atomic loads.
func storeSignal(addr uintptr, v uint64) {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr)) // addr is C or mapped memory, never Go's
	atomic.StoreUint64((*uint64)(p), v)
}

// loadSignal loads, atomically, the 8-byte aligned word at addr (as storeSignal).
func loadSignal(addr uintptr) uint64 {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr)) // addr is C or mapped memory, never Go's
	return atomic.LoadUint64((*uint64)(p))
}
