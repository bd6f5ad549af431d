package channels

import (
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestProxyTriggerLayout(t *testing.T) {
	var tr ProxyTrigger
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppProxyTrigger)", GoValue: uint64(unsafe.Sizeof(tr))},
		{CName: "offsetof(mscclppProxyTrigger, fst)", GoValue: uint64(unsafe.Offsetof(tr.Fst))},
		{CName: "offsetof(mscclppProxyTrigger, snd)", GoValue: uint64(unsafe.Offsetof(tr.Snd))},
	})
	// Go cannot express alignas(16); C allocations of triggers honour it, and a Go ProxyTrigger
	// must never be the storage the GPU stores into.
	const triggerAlignC = 16
	if got, _ := abi.Lookup("alignof(mscclppProxyTrigger)"); got != triggerAlignC {
		t.Errorf("alignof(mscclppProxyTrigger) = %d in C, want %d", got, triggerAlignC)
	}
	if goAlign := uint64(unsafe.Alignof(tr)); triggerAlignC%goAlign != 0 {
		t.Errorf("Go alignment %d of ProxyTrigger does not divide the C alignment %d", goAlign, triggerAlignC)
	}
}

func TestFifoDeviceHandleLayout(t *testing.T) {
	var f FifoDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppFifoDeviceHandle)", GoValue: uint64(unsafe.Sizeof(f))},
		{CName: "alignof(mscclppFifoDeviceHandle)", GoValue: uint64(unsafe.Alignof(f))},
		{CName: "offsetof(mscclppFifoDeviceHandle, triggers)", GoValue: uint64(unsafe.Offsetof(f.Triggers))},
		{CName: "offsetof(mscclppFifoDeviceHandle, tailReplica)", GoValue: uint64(unsafe.Offsetof(f.TailReplica))},
		{CName: "offsetof(mscclppFifoDeviceHandle, head)", GoValue: uint64(unsafe.Offsetof(f.Head))},
		{CName: "offsetof(mscclppFifoDeviceHandle, size)", GoValue: uint64(unsafe.Offsetof(f.Size))},
		{CName: "offsetof(mscclppFifoDeviceHandle, reserved)", GoValue: uint64(unsafe.Offsetof(f.Reserved))},
	})
}

// TestTriggerConstantsMatchLegacy checks the new header's trigger macros against core/fifo, whose
// own tests pin it to the legacy header's MSCCLPP_BITS_* and mscclppTriggerType_t.
func TestTriggerConstantsMatchLegacy(t *testing.T) {
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "MSCCLPP_TRIGGER_BITS_SIZE", GoValue: fifo.BitsSize},
		{CName: "MSCCLPP_TRIGGER_BITS_OFFSET", GoValue: fifo.BitsOffset},
		{CName: "MSCCLPP_TRIGGER_BITS_CONNID", GoValue: fifo.BitsConnID},
		{CName: "MSCCLPP_TRIGGER_BITS_TYPE", GoValue: fifo.BitsType},
		{CName: "MSCCLPP_TRIGGER_DATA", GoValue: uint64(fifo.Data)},
		{CName: "MSCCLPP_TRIGGER_FLAG", GoValue: uint64(fifo.Flag)},
		{CName: "MSCCLPP_TRIGGER_SYNC", GoValue: uint64(fifo.Sync)},
		// Field positions as the legacy union lays them out.
		{CName: "MSCCLPP_TRIGGER_SHIFT_SIZE", GoValue: mustLookup(t, "bitshift(mscclppTrigger.fields.dataSize)")},
		{CName: "MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET", GoValue: mustLookup(t, "bitshift(mscclppTrigger.fields.srcDataOffset)")},
		{CName: "MSCCLPP_TRIGGER_SHIFT_DST_OFFSET", GoValue: mustLookup(t, "bitshift(mscclppTrigger.fields.dstDataOffset)")},
		{CName: "MSCCLPP_TRIGGER_SHIFT_CONNID", GoValue: mustLookup(t, "bitshift(mscclppTrigger.fields.connId)")},
		{CName: "MSCCLPP_TRIGGER_SHIFT_TYPE", GoValue: mustLookup(t, "bitshift(mscclppTrigger.fields.type)")},
		// A request that moves no data keeps its first word non-zero.
		{CName: "MSCCLPP_TRIGGER_NO_DATA_SIZE", GoValue: 1},
	})
}

func mustLookup(t *testing.T, name string) uint64 {
	t.Helper()
	v, ok := abi.Lookup(name)
	if !ok {
		t.Fatalf("internal/abi has no entry %q", name)
	}
	return v
}
