package fifo

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Fields
		want Trigger
	}{
		{
			name: "put",
			in:   Fields{Type: Data, DstOffset: 0x100, SrcOffset: 0x200, Size: 0x300, ConnID: 3},
			want: Trigger{Value: [2]uint64{0x200<<32 | 0x300, uint64(Data)<<42 | 3<<32 | 0x100}},
		},
		{
			name: "signal",
			in:   Fields{Type: Flag, Size: 1},
			want: Trigger{Value: [2]uint64{1, uint64(Flag) << 42}},
		},
		{
			name: "flush",
			in:   Fields{Type: Sync, Size: 1, ConnID: 1},
			want: Trigger{Value: [2]uint64{1, uint64(Sync)<<42 | 1<<32}},
		},
		{
			name: "putWithSignalAndFlush",
			in:   Fields{Type: Data | Flag | Sync, DstOffset: 8, SrcOffset: 16, Size: 24, ConnID: 7},
			want: Trigger{Value: [2]uint64{16<<32 | 24, 7<<42 | 7<<32 | 8}},
		},
		{
			name: "zero size with a source offset",
			in:   Fields{Type: Data, SrcOffset: 1},
			want: Trigger{Value: [2]uint64{1 << 32, uint64(Data) << 42}},
		},
		{
			name: "type zero",
			in:   Fields{Size: 1},
			want: Trigger{Value: [2]uint64{1, 0}},
		},
		{
			name: "every field at its maximum",
			in:   Fields{Type: maxType, DstOffset: maxOffset, SrcOffset: maxOffset, Size: maxSize, ConnID: maxConnID},
			want: Trigger{Value: [2]uint64{^uint64(0), 1<<45 - 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in.Type, tt.in.DstOffset, tt.in.SrcOffset, tt.in.Size, tt.in.ConnID)
			if err != nil {
				t.Fatalf("Encode(%+v): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Encode(%+v) = %#x, want %#x", tt.in, got.Value, tt.want.Value)
			}
			if got.Empty() {
				t.Errorf("Encode(%+v) is Empty", tt.in)
			}
			if back := got.Decode(); back != tt.in {
				t.Errorf("Decode(Encode(%+v)) = %+v", tt.in, back)
			}
		})
	}
}

func TestEncodeDecodeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		in := Fields{
			Type:      TriggerType(rng.Uint64N(maxType + 1)),
			DstOffset: rng.Uint64N(maxOffset + 1),
			SrcOffset: rng.Uint64N(maxOffset + 1),
			Size:      rng.Uint64N(maxSize + 1),
			ConnID:    rng.IntN(maxConnID + 1),
		}
		got, err := Encode(in.Type, in.DstOffset, in.SrcOffset, in.Size, in.ConnID)
		if in.Size == 0 && in.SrcOffset == 0 {
			if !errors.Is(err, ErrEmptyTrigger) {
				t.Fatalf("Encode(%+v) error = %v, want ErrEmptyTrigger", in, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Encode(%+v): %v", in, err)
		}
		if back := got.Decode(); back != in {
			t.Fatalf("Decode(Encode(%+v)) = %+v", in, back)
		}
		if got.Value[1]>>(typeShift+BitsType) != 0 {
			t.Fatalf("Encode(%+v) set reserved bits: %#x", in, got.Value[1])
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   Fields
		want error
	}{
		{"type too wide", Fields{Type: maxType + 1, Size: 1}, ErrFieldRange},
		{"destination offset too large", Fields{Type: Data, DstOffset: maxOffset + 1, Size: 1}, ErrFieldRange},
		{"source offset too large", Fields{Type: Data, SrcOffset: maxOffset + 1, Size: 1}, ErrFieldRange},
		{"size too large", Fields{Type: Data, Size: maxSize + 1}, ErrFieldRange},
		{"connection id too large", Fields{Type: Data, Size: 1, ConnID: maxConnID + 1}, ErrFieldRange},
		{"negative connection id", Fields{Type: Data, Size: 1, ConnID: -1}, ErrFieldRange},
		{"empty data", Fields{Type: Data, DstOffset: 64}, ErrEmptyTrigger},
		{"empty flag", Fields{Type: Flag}, ErrEmptyTrigger},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in.Type, tt.in.DstOffset, tt.in.SrcOffset, tt.in.Size, tt.in.ConnID)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Encode(%+v) error = %v, want %v", tt.in, err, tt.want)
			}
			if !errors.Is(err, errs.ErrInvalidArgument) {
				t.Errorf("Encode(%+v) error %v is not of class ErrInvalidArgument", tt.in, err)
			}
			if got != (Trigger{}) {
				t.Errorf("Encode(%+v) returned %#x with an error, want the zero Trigger", tt.in, got.Value)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	if !(Trigger{}).Empty() {
		t.Error("the zero Trigger is not Empty")
	}
	if !(Trigger{Value: [2]uint64{0, ^uint64(0)}}).Empty() {
		t.Error("a Trigger with Value[0] == 0 is not Empty")
	}
	if (Trigger{Value: [2]uint64{1, 0}}).Empty() {
		t.Error("a Trigger with Value[0] != 0 is Empty")
	}
}

func TestDecodeIgnoresReservedBits(t *testing.T) {
	tr := Trigger{Value: [2]uint64{1, ^uint64(0)}}
	want := Fields{Type: maxType, DstOffset: maxOffset, Size: 1, ConnID: maxConnID}
	if got := tr.Decode(); got != want {
		t.Errorf("Decode(%#x) = %+v, want %+v", tr.Value, got, want)
	}
}

func TestTriggerTypeString(t *testing.T) {
	tests := []struct {
		in   TriggerType
		want string
	}{
		{0, "0"},
		{Data, "Data"},
		{Data | Flag, "Data|Flag"},
		{Data | Flag | Sync, "Data|Flag|Sync"},
		{Sync | 0x10, "Sync|0x10"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("TriggerType(%#x).String() = %q, want %q", uint64(tt.in), got, tt.want)
		}
	}
}
