package halfprec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHalfConversions(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"largest", 65504, 0x7bff},
		{"smallest normal", 1.0 / (1 << 14), 0x0400},
		{"smallest subnormal", 1.0 / (1 << 24), 0x0001},
		{"largest subnormal", 1023.0 / (1 << 24), 0x03ff},
		{"zero", 0, 0x0000},
		{"infinity", float32(math.Inf(1)), 0x7c00},
		{"minus infinity", float32(math.Inf(-1)), 0xfc00},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.h, ToHalf(tc.f), "to half")
			assert.Equal(t, tc.f, FromHalf(tc.h), "from half")
		})
	}
	rounding := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"tie to even, down", 1 + 1.0/2048, 0x3c00}, // halfway between 1 and 1+2^-10
		{"tie to even, up", 1 + 3.0/2048, 0x3c02},   // halfway between 1+2^-10 and 1+2^-9
		{"above the tie", 1 + 1.0/2048 + 1.0/(1<<20), 0x3c01},
		{"overflow", 65520, 0x7c00}, // rounds past the largest
		{"below overflow", 65519, 0x7bff},
		{"subnormal tie to even", 1.5 / (1 << 24), 0x0002}, // 1.5 units: up to 2
		{"subnormal tie to zero", 0.5 / (1 << 24), 0x0000},
		{"minus subnormal", -3.0 / (1 << 24), 0x8003},
	}
	for _, tc := range rounding {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.h, ToHalf(tc.f)) })
	}
	assert.True(t, math.IsNaN(float64(FromHalf(ToHalf(float32(math.NaN()))))), "NaN stays NaN")
	// Every finite half converts to float and back to itself.
	for h := range uint32(1 << 16) {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		require.Equal(t, uint16(h), ToHalf(FromHalf(uint16(h))), "half %#04x", h)
	}
}

func TestBfloatConversions(t *testing.T) {
	assert.Equal(t, uint16(0x3f80), ToBfloat(1))
	assert.Equal(t, float32(1), FromBfloat(0x3f80))
	assert.Equal(t, uint16(0x3f80), ToBfloat(math.Float32frombits(0x3f808000)), "tie to even, down")
	assert.Equal(t, uint16(0x3f82), ToBfloat(math.Float32frombits(0x3f818000)), "tie to even, up")
	assert.Equal(t, uint16(0x3f81), ToBfloat(math.Float32frombits(0x3f808001)), "above the tie")
	assert.Equal(t, uint16(0x7f80), ToBfloat(float32(math.Inf(1))))
	assert.True(t, math.IsNaN(float64(FromBfloat(ToBfloat(float32(math.NaN()))))), "NaN stays NaN")
}

func TestSmallIntegersExact(t *testing.T) {
	for v := float32(0); v <= 256; v++ {
		require.Equal(t, v, FromHalf(ToHalf(v)))
		require.Equal(t, v, FromBfloat(ToBfloat(v)))
		require.Equal(t, -v, FromHalf(ToHalf(-v)))
	}
}

// TestBulkConversions: the bulk conversions give the scalar ones' bits: every binary16 and
// bfloat16 to float32, and to binary16 and bfloat16 every float32 whose top 19 bits take every
// value and whose low 13 bits are on, around and between the rounding boundaries (ties, carries
// into the exponent, overflow, subnormals, NaN and infinities).
func TestBulkConversions(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	got := make([]float32, len(all))
	HalvesToFloats(got, all)
	for i, h := range all {
		if math.Float32bits(FromHalf(h)) != math.Float32bits(got[i]) {
			t.Fatalf("half %#04x: bulk %v, scalar %v", h, got[i], FromHalf(h))
		}
	}
	BfloatsToFloats(got, all)
	for i, b := range all {
		if math.Float32bits(FromBfloat(b)) != math.Float32bits(got[i]) {
			t.Fatalf("bfloat %#04x: bulk %v, scalar %v", b, got[i], FromBfloat(b))
		}
	}
	lows := []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x7fff, 0x8000, 0x8001, 0xffff}
	fs := make([]float32, 0, (1<<19)*len(lows))
	for high := range uint32(1 << 19) {
		for _, low := range lows {
			fs = append(fs, math.Float32frombits(high<<13|low&0x1fff|(low&^0x1fff)))
		}
	}
	out := make([]uint16, len(fs))
	FloatsToHalves(out, fs)
	for i, f := range fs {
		if want := ToHalf(f); out[i] != want {
			t.Fatalf("float32 %#08x to half: bulk %#04x, scalar %#04x", math.Float32bits(f), out[i], want)
		}
	}
	FloatsToBfloats(out, fs)
	for i, f := range fs {
		if want := ToBfloat(f); out[i] != want {
			t.Fatalf("float32 %#08x to bfloat: bulk %#04x, scalar %#04x", math.Float32bits(f), out[i], want)
		}
	}
}
