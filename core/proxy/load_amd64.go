package proxy

import "github.com/mscclpp-go/mscclpp/core/fifo"

// The GPU writes a trigger with one 128-bit store (st.volatile.global.v2.u64). The proxy must read
// it with one 128-bit load, or it could pair a new value[0] with a stale value[1] if the store
// reaches host memory in two halves. Go has no 16-byte atomic load, so it is a single SSE
// instruction in load_amd64.s; on CPUs with AVX that load is architecturally atomic.

// atomic16Guaranteed reports whether this CPU documents aligned 16-byte loads as atomic.
var atomic16Guaranteed = cpuHasAVX()

// loadTrigger reads both words of *slot with one aligned 16-byte load. slot must be 16-byte aligned.
//
//go:noescape
func loadTrigger(slot *fifo.Trigger) (lo, hi uint64)

// cpuRelax executes one PAUSE instruction, the spin-wait hint.
func cpuRelax()

// cpuHasAVX reports CPUID.01H:ECX.AVX[bit 28].
func cpuHasAVX() bool
