package fifo

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

// mirrorCase pairs a number of the C headers, named as internal/abi names it, with the Go value
// that must equal it.
type mirrorCase struct {
	cName   string
	goValue uint64
}

func checkMirror(t *testing.T, cases []mirrorCase) {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-56s %8s %8s\n", "C", "C value", "Go value")
	for _, mc := range cases {
		cValue, ok := abi.Lookup(mc.cName)
		if !ok {
			t.Errorf("internal/abi has no entry %q", mc.cName)
			continue
		}
		fmt.Fprintf(&table, "%-56s %8d %8d\n", mc.cName, cValue, mc.goValue)
		if cValue != mc.goValue {
			t.Errorf("%s = %d in C, %d in Go", mc.cName, cValue, mc.goValue)
		}
	}
	t.Log(table.String())
}

func TestTriggerLayout(t *testing.T) {
	var tr Trigger
	checkMirror(t, []mirrorCase{
		{"sizeof(mscclppTrigger)", uint64(unsafe.Sizeof(tr))},
		{"offsetof(mscclppTrigger, value)", uint64(unsafe.Offsetof(tr.Value))},
		{"sizeof(mscclppTriggerType_t)", uint64(unsafe.Sizeof(TriggerType(0)))},
		{"bitword(mscclppTrigger.fields.dataSize)", 0},
		{"bitshift(mscclppTrigger.fields.dataSize)", sizeShift},
		{"bitwidth(mscclppTrigger.fields.dataSize)", BitsSize},
		{"bitword(mscclppTrigger.fields.srcDataOffset)", 0},
		{"bitshift(mscclppTrigger.fields.srcDataOffset)", srcOffsetShift},
		{"bitwidth(mscclppTrigger.fields.srcDataOffset)", BitsOffset},
		{"bitword(mscclppTrigger.fields.dstDataOffset)", 1},
		{"bitshift(mscclppTrigger.fields.dstDataOffset)", dstOffsetShift},
		{"bitwidth(mscclppTrigger.fields.dstDataOffset)", BitsOffset},
		{"bitword(mscclppTrigger.fields.connId)", 1},
		{"bitshift(mscclppTrigger.fields.connId)", connIDShift},
		{"bitwidth(mscclppTrigger.fields.connId)", BitsConnID},
		{"bitword(mscclppTrigger.fields.type)", 1},
		{"bitshift(mscclppTrigger.fields.type)", typeShift},
		{"bitwidth(mscclppTrigger.fields.type)", BitsType},
	})
	// Go cannot express alignas(16): the C side is 16-aligned and every C allocation of a
	// trigger honours that, so a Go Trigger must never be the storage the GPU stores into.
	const triggerAlignC = 16
	if got, _ := abi.Lookup("alignof(mscclppTrigger)"); got != triggerAlignC {
		t.Errorf("alignof(mscclppTrigger) = %d in C, want %d", got, triggerAlignC)
	}
	if goAlign := uint64(unsafe.Alignof(tr)); triggerAlignC%goAlign != 0 {
		t.Errorf("Go alignment %d of Trigger does not divide the C alignment %d", goAlign, triggerAlignC)
	}
}

func TestConcurrentFifoLayout(t *testing.T) {
	var f ConcurrentFifo
	checkMirror(t, []mirrorCase{
		{"sizeof(mscclppConcurrentFifo)", uint64(unsafe.Sizeof(f))},
		{"alignof(mscclppConcurrentFifo)", uint64(unsafe.Alignof(f))},
		{"offsetof(mscclppConcurrentFifo, triggerFifo)", uint64(unsafe.Offsetof(f.TriggerFifo))},
		{"offsetof(mscclppConcurrentFifo, triggerFifoTail)", uint64(unsafe.Offsetof(f.TriggerFifoTail))},
		{"offsetof(mscclppConcurrentFifo, triggerFifoHead)", uint64(unsafe.Offsetof(f.TriggerFifoHead))},
		{"offsetof(mscclppConcurrentFifo, connId)", uint64(unsafe.Offsetof(f.ConnID))},
	})
}

func TestConstantsMatchHeaders(t *testing.T) {
	checkMirror(t, []mirrorCase{
		{"mscclppData", uint64(Data)},
		{"mscclppFlag", uint64(Flag)},
		{"mscclppSync", uint64(Sync)},
		{"MSCCLPP_BITS_SIZE", BitsSize},
		{"MSCCLPP_BITS_OFFSET", BitsOffset},
		{"MSCCLPP_BITS_TYPE", BitsType},
		{"MSCCLPP_BITS_CONNID", BitsConnID},
		{"MSCCLPP_PROXY_FIFO_SIZE", FifoSize},
		{"MSCCLPP_PROXY_FIFO_FLUSH_COUNTER", FlushCounter},
	})
}

// TestEncodeMatchesCxxBitFields checks that Encode produces exactly the words that assigning the
// bit-fields of the C++ union produces, and that Decode reads back what the C++ union reads.
func TestEncodeMatchesCxxBitFields(t *testing.T) {
	tests := []Fields{
		{Type: Data, DstOffset: 0x100, SrcOffset: 0x200, Size: 0x300, ConnID: 3},
		{Type: Flag, Size: 1},
		{Type: Sync, Size: 1, ConnID: 1},
		{Type: Data | Flag, DstOffset: 1, SrcOffset: 2, Size: 3, ConnID: 4},
		{Type: Data | Flag | Sync, DstOffset: 0xdeadbeef, SrcOffset: 0xcafef00d, Size: 0x12345678, ConnID: 0x2aa},
		{Type: maxType, DstOffset: maxOffset, SrcOffset: maxOffset, Size: maxSize, ConnID: maxConnID},
		{Type: Data, DstOffset: maxOffset, SrcOffset: 0, Size: 1, ConnID: 0},
		{Type: Data, DstOffset: 0, SrcOffset: maxOffset, Size: 0, ConnID: maxConnID},
		{Type: 0, DstOffset: 0, SrcOffset: 0, Size: maxSize, ConnID: 0},
	}
	for _, in := range tests {
		got, err := Encode(in.Type, in.DstOffset, in.SrcOffset, in.Size, in.ConnID)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", in, err)
		}
		cxxFields := abi.TriggerFields{
			Type:          uint64(in.Type),
			DstDataOffset: in.DstOffset,
			SrcDataOffset: in.SrcOffset,
			DataSize:      in.Size,
			ConnID:        uint64(in.ConnID),
		}
		want := abi.EncodeTrigger(cxxFields)
		t.Logf("%-90s value = {%#016x, %#016x}", fmt.Sprintf("%+v", in), want[0], want[1])
		if got.Value != want {
			t.Errorf("Encode(%+v) = %#x, C++ bit-fields give %#x", in, got.Value, want)
		}
		if back := abi.DecodeTrigger(got.Value); back != cxxFields {
			t.Errorf("C++ reads Encode(%+v) as %+v", in, back)
		}
		if back := got.Decode(); back != in {
			t.Errorf("Decode(Encode(%+v)) = %+v", in, back)
		}
	}
}
