// Trigger loads and the spin hint for amd64. See load_amd64.go for why these are in assembly.

#include "textflag.h"

// func loadTrigger(slot *fifo.Trigger) (lo, hi uint64)
//
// One MOVDQA (Go's MOVO) reads both words of the 16-byte aligned slot in a single access. On CPUs
// that enumerate AVX, Intel (SDM vol. 3A, "Guaranteed Atomic Operations") and AMD (APM vol. 2,
// "Access Atomicity") guarantee that an aligned 16-byte SSE load is atomic, so the proxy never
// sees half of the GPU's 128-bit store.
// MOVDQA faults on a misaligned address; New checks the ring's alignment.
TEXT ·loadTrigger(SB), NOSPLIT, $0-24
	MOVQ   slot+0(FP), AX
	MOVO   (AX), X0
	MOVQ   X0, lo+8(FP)
	MOVHPS X0, hi+16(FP)
	RET

// func cpuRelax()
//
// PAUSE tells the core this is a spin-wait loop: it saves power, yields pipeline resources to a
// sibling hyper-thread and avoids the memory-order mis-speculation penalty when the awaited store
// finally arrives.
TEXT ·cpuRelax(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func cpuHasAVX() bool
//
// CPUID leaf 1, ECX bit 28: the processor supports AVX, the condition under which the 16-byte
// atomicity guarantee above holds.
TEXT ·cpuHasAVX(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $28, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET
