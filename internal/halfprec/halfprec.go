package halfprec

import (
	"math"
	"sync"
)

// FromHalf converts an IEEE binary16 to float32 (exactly).
func FromHalf(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: frac * 2^-24.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// ToHalf rounds a float32 to the nearest binary16, ties to even (overflow to inf, NaN kept).
func ToHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int32(bits>>23) & 0xff
	frac := bits & 0x7fffff
	if exp == 0xff {
		if frac != 0 {
			return sign | 0x7e00 // a quiet NaN
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the binary16 exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal or zero: the value in units of 2^-24, rounded to nearest even.
		if e < -10 {
			return sign
		}
		m := frac | 0x800000    // 24 significant bits
		shift := uint32(14 - e) // 13 for the mantissa, plus 1 - e
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | frac>>13
	rem := frac & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && q&1 == 1 {
		q++ // may carry into the exponent, up to inf: still correct
	}
	return sign | uint16(q)
}

// FromBfloat converts a bfloat16 to float32 (exactly).
func FromBfloat(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// ToBfloat rounds a float32 to the nearest bfloat16, ties to even (NaN kept quiet).
func ToBfloat(f float32) uint16 {
	bits := math.Float32bits(f)
	if bits&0x7fffffff > 0x7f800000 {
		return uint16(bits>>16) | 0x40
	}
	bits += 0x7fff + (bits>>16)&1
	return uint16(bits >> 16)
}

// halfTable holds the float32 value of every binary16 bit pattern, built on first use.
var halfTable = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = FromHalf(uint16(h))
	}
	return &t
})

// HalvesToFloats converts the binary16 values of src into dst (at least as long), exactly.
func HalvesToFloats(dst []float32, src []uint16) {
	t := halfTable()
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = t[h]
	}
}

// FloatsToHalves rounds the values of src into binary16 in dst (at least as long), as ToHalf:
// values that round to a normal binary16 inline, the others through ToHalf.
func FloatsToHalves(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		bits := math.Float32bits(f)
		e := int32(bits>>23&0xff) - 127 + 15
		if e <= 0 || e >= 0x1f {
			dst[i] = ToHalf(f)
			continue
		}
		q := uint32(e)<<10 | bits&0x7fffff>>13
		if rem := bits & 0x1fff; rem > 0x1000 || rem == 0x1000 && q&1 == 1 {
			q++ // may carry into the exponent, up to inf, as in ToHalf
		}
		dst[i] = uint16(bits>>16)&0x8000 | uint16(q)
	}
}

// BfloatsToFloats converts the bfloat16 values of src into dst (at least as long), exactly.
func BfloatsToFloats(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = FromBfloat(b)
	}
}

// FloatsToBfloats rounds the values of src into bfloat16 in dst (at least as long), as ToBfloat.
func FloatsToBfloats(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = ToBfloat(f)
	}
}
