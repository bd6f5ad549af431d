package core

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// TestSignalEntries: the entries a sender names a value with, applied in order by a receiver,
// store the value into the word, in one entry where it can (small values, small steps up) and in
// parts otherwise; entries for memory outside the receiver's registrations store nothing and are
// counted.
func TestSignalEntries(t *testing.T) {
	mem := testutil.HostMemory(t, 64)
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	word := func(i int) uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[8*i]))) }
	rx := newSignals(slog.New(slog.DiscardHandler))
	rx.addTarget(1, hostRange{addr: base, size: 64})
	var tx signalNames

	for _, tc := range []struct {
		name    string
		word    int
		value   uint64
		entries int
	}{
		{"small", 0, 1, 1},
		{"small, largest", 0, 1<<smallBits - 1, 1},
		{"first large value: parts", 0, 1<<40 + 1<<stepBits - 10, partLast + 1},
		{"step up", 0, 1<<40 + 1<<stepBits - 7, 1},
		{"step across the low bits' wrap", 0, 1<<40 + 1<<stepBits + 5, 1},
		{"step of the largest gap", 0, 1<<40 + 1<<stepBits + 5 + stepMaxGap - 1, 1},
		{"gap too large: parts", 0, 1<<41 + 7, partLast + 1},
		{"down: parts", 0, 1<<41 + 6, partLast + 1},
		{"same value: parts", 0, 1<<41 + 6, partLast + 1},
		{"small again", 0, 9, 1},
		{"all bits", 0, ^uint64(0), partLast + 1},
		{"another word", 7, 1<<63 | 1, partLast + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := tx.name(base+uint64(8*tc.word), tc.value)
			require.NoError(t, err)
			assert.Len(t, entries, tc.entries)
			for _, d := range entries {
				rx.apply(d)
			}
			assert.Equal(t, tc.value, word(tc.word))
		})
	}
	rx.mu.Lock()
	assert.Zero(t, rx.rejected, "first: %v", rx.firstBad)
	rx.mu.Unlock()

	t.Run("refused", func(t *testing.T) {
		rx.apply(smallEntry(base+64, 5))         // past the registration
		rx.apply(partEntry(base+8, 5, partLast)) // its first part never came
		rx.removeTarget(1)                       // deregistered
		rx.apply(smallEntry(base, 5))
		rx.mu.Lock()
		defer rx.mu.Unlock()
		assert.EqualValues(t, 3, rx.rejected)
		assert.ErrorContains(t, rx.firstBad, "outside the host memory registered here")
		assert.Equal(t, ^uint64(0), word(0), "untouched")
		assert.Zero(t, word(1))
	})

	t.Run("unaligned or high words", func(t *testing.T) {
		_, err := tx.name(base+4, 1)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		_, err = tx.name(maxSignalAddr, 1)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	})
}

// FuzzSignalApply: whatever entries a peer sends (remote CQ data are bytes from the network), the
// receiver stores only into the memory registered with it.
func FuzzSignalApply(f *testing.F) {
	mem := testutil.HostMemory(f, 192)
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	f.Add(smallEntry(base+64, 5), stepEntry(base+64, 1<<20), partEntry(base+120, 1<<50, 0))
	f.Add(partEntry(base+128, 1, 0), partEntry(base+128, 1, partLast), uint64(0))
	f.Add(stepEntry(base+56, 7), smallEntry(base+184, 1), partEntry(base+64, ^uint64(0), partLast))
	f.Fuzz(func(t *testing.T, a, b, c uint64) {
		clear(mem)
		rx := newSignals(slog.New(slog.DiscardHandler))
		rx.addTarget(1, hostRange{addr: base + 64, size: 64})
		for _, d := range []uint64{a, b, c, a, b, c} {
			rx.apply(d)
		}
		for i, v := range mem {
			if (i < 64 || i >= 128) && v != 0 {
				t.Fatalf("byte %d outside the registration was written (%#x)", i, v)
			}
		}
	})
}
