package proxy

// unsafe is needed here to look at addresses and to build a deliberately misaligned ring.

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// misalignedSlots returns n slots whose first one is 8 bytes off a 16-byte boundary.
func misalignedSlots(n int) []fifo.Trigger {
	words := make([]uint64, 2*n+2)
	skip := 0
	for uintptr(unsafe.Pointer(&words[skip]))%SlotAlign != wordBytes {
		skip++
	}
	return unsafe.Slice((*fifo.Trigger)(unsafe.Pointer(&words[skip])), n)
}

func TestAlignedSlots(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 64, fifo.FifoSize, 1000} {
		s := AlignedSlots(n)
		require.Len(t, s, n)
		assert.Zero(t, uintptr(unsafe.Pointer(&s[0]))%SlotAlign, "AlignedSlots(%d)", n)
		assert.True(t, slotsAligned(s))
		for i := range s {
			assert.True(t, s[i].Empty())
		}
	}
	assert.False(t, slotsAligned(misalignedSlots(4)))
}

func TestLoadTrigger(t *testing.T) {
	s := AlignedSlots(4)
	want, err := fifo.Encode(fifo.Data|fifo.Flag, 0x1234, 0x5678, 0x9abc, 7)
	require.NoError(t, err)
	s[2] = want
	lo, hi := loadTrigger(&s[2])
	assert.Equal(t, want.Value, [2]uint64{lo, hi})
	lo, hi = loadTrigger(&s[1])
	assert.Zero(t, lo, "an empty slot")
	_ = hi
	t.Logf("16-byte loads documented atomic on this CPU: %v", atomic16Guaranteed)
}
