package fifo

import (
	"fmt"
	"strings"
	"structs"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Legacy proxy FIFO parameters: MSCCLPP_PROXY_FIFO_SIZE and MSCCLPP_PROXY_FIFO_FLUSH_COUNTER in
// include/mscclpp.h.
const (
	FifoSize     = 128
	FlushCounter = 4
)

// Widths of the trigger bit-fields: MSCCLPP_BITS_* in include/mscclppfifo.h.
const (
	BitsSize   = 32
	BitsOffset = 32
	BitsType   = 3
	BitsConnID = 10
)

// Where each field sits in Trigger.Value; see union mscclppTrigger in include/mscclppfifo.h.
const (
	sizeShift      = 0 // in Value[0]
	srcOffsetShift = sizeShift + BitsSize
	dstOffsetShift = 0 // in Value[1]
	connIDShift    = dstOffsetShift + BitsOffset
	typeShift      = connIDShift + BitsConnID

	maxSize   = 1<<BitsSize - 1
	maxOffset = 1<<BitsOffset - 1
	maxType   = 1<<BitsType - 1
	maxConnID = 1<<BitsConnID - 1
)

// TriggerType mirrors mscclppTriggerType_t of include/mscclppfifo.h. Its values are bits that
// combine.
type TriggerType uint64

// The request kinds of mscclppTriggerType_t.
const (
	Data TriggerType = 0x1 // mscclppData
	Flag TriggerType = 0x2 // mscclppFlag
	Sync TriggerType = 0x4 // mscclppSync
)

// String returns the set bits joined by "|", such as "Data|Flag", "0" for none, and unknown bits in hex.
func (t TriggerType) String() string {
	if t == 0 {
		return "0"
	}
	var parts []string
	for _, k := range []struct {
		bit  TriggerType
		name string
	}{{Data, "Data"}, {Flag, "Flag"}, {Sync, "Sync"}} {
		if t&k.bit != 0 {
			parts = append(parts, k.name)
			t &^= k.bit
		}
	}
	if t != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint64(t)))
	}
	return strings.Join(parts, "|")
}

// Trigger mirrors union mscclppTrigger of include/mscclppfifo.h (16 bytes; the C side is
// 16-byte aligned).
type Trigger struct {
	_     structs.HostLayout
	Value [2]uint64
}

// Fields are the decoded bit-fields of a Trigger.
type Fields struct {
	Type      TriggerType
	DstOffset uint64
	SrcOffset uint64
	Size      uint64
	ConnID    int
}

// Errors returned by Encode; both are of class errs.ErrInvalidArgument.
var (
	// ErrFieldRange: a value does not fit its bit-field.
	ErrFieldRange = errs.New(errs.ErrInvalidArgument, "fifo: trigger field out of range")
	// ErrEmptyTrigger: size and source offset are both 0, so Value[0] would be 0 and the
	// trigger could not be told apart from an empty slot.
	ErrEmptyTrigger = errs.New(errs.ErrInvalidArgument, "fifo: trigger indistinguishable from an empty slot")
)

// Encode packs a request into a Trigger exactly as the C++ bit-fields lay it out. It refuses
// values that do not fit their fields (ErrFieldRange) and, because a slot whose Value[0] is 0 is
// empty, a request whose size and source offset are both 0 (ErrEmptyTrigger); requests that move
// no data therefore carry size 1, as the device functions do.
func Encode(typ TriggerType, dstOffset, srcOffset, size uint64, connID int) (Trigger, error) {
	switch {
	case typ > maxType:
		return Trigger{}, fmt.Errorf("%w: type %#x does not fit in %d bits", ErrFieldRange, uint64(typ), BitsType)
	case dstOffset > maxOffset:
		return Trigger{}, fmt.Errorf("%w: destination offset %#x does not fit in %d bits", ErrFieldRange, dstOffset, BitsOffset)
	case srcOffset > maxOffset:
		return Trigger{}, fmt.Errorf("%w: source offset %#x does not fit in %d bits", ErrFieldRange, srcOffset, BitsOffset)
	case size > maxSize:
		return Trigger{}, fmt.Errorf("%w: size %#x does not fit in %d bits", ErrFieldRange, size, BitsSize)
	case connID < 0 || connID > maxConnID:
		return Trigger{}, fmt.Errorf("%w: connection id %d is not in [0, %d]", ErrFieldRange, connID, maxConnID)
	case size == 0 && srcOffset == 0:
		return Trigger{}, ErrEmptyTrigger
	}
	var t Trigger
	t.Value[0] = size<<sizeShift | srcOffset<<srcOffsetShift
	t.Value[1] = dstOffset<<dstOffsetShift | uint64(connID)<<connIDShift | uint64(typ)<<typeShift
	return t, nil
}

// Decode unpacks the bit-fields of t; the reserved bits of Value[1] are ignored.
func (t Trigger) Decode() Fields {
	return Fields{
		Type:      TriggerType(t.Value[1] >> typeShift & maxType),
		DstOffset: t.Value[1] >> dstOffsetShift & maxOffset,
		SrcOffset: t.Value[0] >> srcOffsetShift & maxOffset,
		Size:      t.Value[0] >> sizeShift & maxSize,
		ConnID:    int(t.Value[1] >> connIDShift & maxConnID),
	}
}

// Empty reports whether t is an empty slot, that is, whether Value[0] is 0.
func (t Trigger) Empty() bool { return t.Value[0] == 0 }
