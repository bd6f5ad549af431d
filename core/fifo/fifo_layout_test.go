package fifo

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestTriggerLayout(t *testing.T) {
	var tr Trigger
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppTrigger)", GoValue: uint64(unsafe.Sizeof(tr))},
		{CName: "offsetof(mscclppTrigger, value)", GoValue: uint64(unsafe.Offsetof(tr.Value))},
		{CName: "sizeof(mscclppTriggerType_t)", GoValue: uint64(unsafe.Sizeof(TriggerType(0)))},
		{CName: "bitword(mscclppTrigger.fields.dataSize)", GoValue: 0},
		{CName: "bitshift(mscclppTrigger.fields.dataSize)", GoValue: sizeShift},
		{CName: "bitwidth(mscclppTrigger.fields.dataSize)", GoValue: BitsSize},
		{CName: "bitword(mscclppTrigger.fields.srcDataOffset)", GoValue: 0},
		{CName: "bitshift(mscclppTrigger.fields.srcDataOffset)", GoValue: srcOffsetShift},
		{CName: "bitwidth(mscclppTrigger.fields.srcDataOffset)", GoValue: BitsOffset},
		{CName: "bitword(mscclppTrigger.fields.dstDataOffset)", GoValue: 1},
		{CName: "bitshift(mscclppTrigger.fields.dstDataOffset)", GoValue: dstOffsetShift},
		{CName: "bitwidth(mscclppTrigger.fields.dstDataOffset)", GoValue: BitsOffset},
		{CName: "bitword(mscclppTrigger.fields.connId)", GoValue: 1},
		{CName: "bitshift(mscclppTrigger.fields.connId)", GoValue: connIDShift},
		{CName: "bitwidth(mscclppTrigger.fields.connId)", GoValue: BitsConnID},
		{CName: "bitword(mscclppTrigger.fields.type)", GoValue: 1},
		{CName: "bitshift(mscclppTrigger.fields.type)", GoValue: typeShift},
		{CName: "bitwidth(mscclppTrigger.fields.type)", GoValue: BitsType},
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
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppConcurrentFifo)", GoValue: uint64(unsafe.Sizeof(f))},
		{CName: "alignof(mscclppConcurrentFifo)", GoValue: uint64(unsafe.Alignof(f))},
		{CName: "offsetof(mscclppConcurrentFifo, triggerFifo)", GoValue: uint64(unsafe.Offsetof(f.TriggerFifo))},
		{CName: "offsetof(mscclppConcurrentFifo, triggerFifoTail)", GoValue: uint64(unsafe.Offsetof(f.TriggerFifoTail))},
		{CName: "offsetof(mscclppConcurrentFifo, triggerFifoHead)", GoValue: uint64(unsafe.Offsetof(f.TriggerFifoHead))},
		{CName: "offsetof(mscclppConcurrentFifo, connId)", GoValue: uint64(unsafe.Offsetof(f.ConnID))},
	})
}

func TestConstantsMatchHeaders(t *testing.T) {
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "mscclppData", GoValue: uint64(Data)},
		{CName: "mscclppFlag", GoValue: uint64(Flag)},
		{CName: "mscclppSync", GoValue: uint64(Sync)},
		{CName: "MSCCLPP_BITS_SIZE", GoValue: BitsSize},
		{CName: "MSCCLPP_BITS_OFFSET", GoValue: BitsOffset},
		{CName: "MSCCLPP_BITS_TYPE", GoValue: BitsType},
		{CName: "MSCCLPP_BITS_CONNID", GoValue: BitsConnID},
		{CName: "MSCCLPP_PROXY_FIFO_SIZE", GoValue: FifoSize},
		{CName: "MSCCLPP_PROXY_FIFO_FLUSH_COUNTER", GoValue: FlushCounter},
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
