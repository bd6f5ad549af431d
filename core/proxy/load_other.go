//go:build !amd64

package proxy

import (
	"sync/atomic"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// Portable fallback for architectures without the assembly load (arm64 among them, where LDP is
// 16-byte atomic only with FEAT_LSE2; adding it is future work). value[0] is loaded first with
// acquire semantics and value[1] only when value[0] says the slot is full. This is exact when the
// producer publishes value[1] before value[0] (as the Go test device does) or when the GPU's
// 128-bit store lands in host memory as one unit; it is not guaranteed for a store that lands in
// two halves in the wrong order.

// atomic16Guaranteed reports whether loadTrigger reads both words in one atomic access.
const atomic16Guaranteed = false

// loadTrigger reads value[0] and, when it is non-zero, value[1].
func loadTrigger(slot *fifo.Trigger) (lo, hi uint64) {
	lo = atomic.LoadUint64(&slot.Value[0])
	if lo == 0 {
		return 0, 0
	}
	return lo, atomic.LoadUint64(&slot.Value[1])
}

// cpuRelax is the spin-wait hint; without a portable pause instruction it does nothing, which
// keeps the latency of the next poll minimal.
func cpuRelax() {}
