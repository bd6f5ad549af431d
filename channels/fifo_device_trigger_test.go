package channels

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/internal/abi"
)

const (
	maxTriggerSize   = 1<<fifo.BitsSize - 1
	maxTriggerOffset = 1<<fifo.BitsOffset - 1
	maxTriggerType   = 1<<fifo.BitsType - 1
	maxTriggerConnID = 1<<fifo.BitsConnID - 1
)

// TestTriggerEncodingsAgree checks, bit for bit, that EncodeTrigger (channels), fifo.Encode
// (legacy Go), the legacy header's bit-field union and the new header's mscclppProxyTriggerEncode
// build the same trigger, and that Decode reads it back.
func TestTriggerEncodingsAgree(t *testing.T) {
	tests := []fifo.Fields{
		{Type: fifo.Data, DstOffset: 0x100, SrcOffset: 0x200, Size: 0x300, ConnID: 3},
		{Type: fifo.Flag, Size: 1},
		{Type: fifo.Sync, Size: 1, ConnID: 1},
		{Type: fifo.Data | fifo.Flag, DstOffset: 1, SrcOffset: 2, Size: 3, ConnID: 4},
		{Type: fifo.Data | fifo.Flag | fifo.Sync, DstOffset: 0xdeadbeef, SrcOffset: 0xcafef00d, Size: 0x12345678, ConnID: 0x2aa},
		{Type: maxTriggerType, DstOffset: maxTriggerOffset, SrcOffset: maxTriggerOffset, Size: maxTriggerSize, ConnID: maxTriggerConnID},
		{Type: fifo.Data, DstOffset: maxTriggerOffset, Size: 1},
		{Type: fifo.Data, SrcOffset: maxTriggerOffset, ConnID: maxTriggerConnID},
		{Size: maxTriggerSize},
		{Type: fifo.Flag | fifo.Sync, Size: 1, ConnID: maxTriggerConnID},
	}
	for _, in := range tests {
		name := fmt.Sprintf("%v/dst=%#x/src=%#x/size=%#x/conn=%d", in.Type, in.DstOffset, in.SrcOffset, in.Size, in.ConnID)
		t.Run(name, func(t *testing.T) {
			got, err := EncodeTrigger(in.Type, in.DstOffset, in.SrcOffset, in.Size, in.ConnID)
			if err != nil {
				t.Fatalf("EncodeTrigger: %v", err)
			}
			legacyGo, err := fifo.Encode(in.Type, in.DstOffset, in.SrcOffset, in.Size, in.ConnID)
			if err != nil {
				t.Fatalf("fifo.Encode: %v", err)
			}
			f := abi.TriggerFields{Type: uint64(in.Type), DstDataOffset: in.DstOffset, SrcDataOffset: in.SrcOffset,
				DataSize: in.Size, ConnID: uint64(in.ConnID)}
			legacyCxx := abi.EncodeTrigger(f)
			header := abi.EncodeProxyTrigger(f)
			words := [2]uint64{got.Fst, got.Snd}
			t.Logf("{fst, snd} = {%#016x, %#016x}", words[0], words[1])
			if words != legacyGo.Value || words != legacyCxx || words != header {
				t.Errorf("channels %#x, fifo.Encode %#x, legacy union %#x, mscclppProxyTriggerEncode %#x",
					words, legacyGo.Value, legacyCxx, header)
			}
			if back := got.Decode(); back != in {
				t.Errorf("Decode = %+v, want %+v", back, in)
			}
		})
	}
}

// TestProxyTriggerEncodeTruncates checks that the header's encoder masks over-wide values to their
// fields, exactly as assignment to the legacy union's bit-fields does.
func TestProxyTriggerEncodeTruncates(t *testing.T) {
	all := ^uint64(0)
	tests := []abi.TriggerFields{
		{Type: all, DstDataOffset: all, SrcDataOffset: all, DataSize: all, ConnID: all},
		{Type: 1 << fifo.BitsType, DataSize: 1 << fifo.BitsSize, ConnID: 1 << fifo.BitsConnID},
		{Type: 0xf, DstDataOffset: 1<<32 | 5, SrcDataOffset: 1<<40 | 7, DataSize: 3, ConnID: 0x7ff},
	}
	for _, f := range tests {
		if got, want := abi.EncodeProxyTrigger(f), abi.EncodeTrigger(f); got != want {
			t.Errorf("%+v: mscclppProxyTriggerEncode %#x, legacy union %#x", f, got, want)
		}
	}
}

func TestEncodeTriggerRefuses(t *testing.T) {
	if _, err := EncodeTrigger(fifo.Flag, 0, 0, 0, 0); !errors.Is(err, fifo.ErrEmptyTrigger) {
		t.Errorf("empty trigger: err = %v, want fifo.ErrEmptyTrigger", err)
	}
	if _, err := EncodeTrigger(fifo.Data, 0, 0, 1, maxTriggerConnID+1); !errors.Is(err, fifo.ErrFieldRange) {
		t.Errorf("connId out of range: err = %v, want fifo.ErrFieldRange", err)
	}
}
