package proxy

// This file holds the package's only uses of unsafe. Go cannot declare a 16-byte aligned type,
// so checking the alignment of a ring, and carving an aligned ring out of Go memory for tests and
// host-only use, need the address of the memory. No Go pointer is ever handed to C or the GPU.

import (
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// wordBytes is the size of one uint64, the unit in which AlignedSlots over-allocates.
const wordBytes = 8

// slotsAligned reports whether slots[0] lies on a SlotAlign boundary.
func slotsAligned(slots []fifo.Trigger) bool {
	return uintptr(unsafe.Pointer(&slots[0]))%SlotAlign == 0
}

// AlignedSlots returns n zeroed trigger slots in Go memory whose first slot is 16-byte aligned,
// for rings that live in host memory only (tests and CPU benchmarks). A GPU cannot write to it:
// the library builds its real ring over cuMemHostAlloc'd memory instead.
func AlignedSlots(n int) []fifo.Trigger {
	triggerWords := int(unsafe.Sizeof(fifo.Trigger{}) / wordBytes)
	slack := SlotAlign/wordBytes - 1
	// Trigger holds only uint64 words, so a []uint64 backing store has the same GC shape.
	words := make([]uint64, n*triggerWords+slack)
	skip := 0
	for uintptr(unsafe.Pointer(&words[skip]))%SlotAlign != 0 {
		skip++
	}
	return unsafe.Slice((*fifo.Trigger)(unsafe.Pointer(&words[skip])), n)
}
