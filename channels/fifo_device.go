package channels

import (
	"structs"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// ProxyTrigger mirrors mscclppProxyTrigger of include/mscclpp/fifo_device.h (16 bytes; the C side
// is 16-byte aligned). Its bit layout is the legacy trigger's, so core/fifo encodes and decodes it.
type ProxyTrigger struct {
	_   structs.HostLayout
	Fst uint64
	Snd uint64
}

// EncodeTrigger is fifo.Encode returning a ProxyTrigger, with the same range checks.
func EncodeTrigger(typ fifo.TriggerType, dstOffset, srcOffset, size uint64, connID int) (ProxyTrigger, error) {
	t, err := fifo.Encode(typ, dstOffset, srcOffset, size, connID)
	if err != nil {
		return ProxyTrigger{}, err
	}
	return ProxyTrigger{Fst: t.Value[0], Snd: t.Value[1]}, nil
}

// Decode unpacks t as fifo.Trigger.Decode does.
func (t ProxyTrigger) Decode() fifo.Fields {
	return fifo.Trigger{Value: [2]uint64{t.Fst, t.Snd}}.Decode()
}

// FifoDeviceHandle mirrors mscclppFifoDeviceHandle of include/mscclpp/fifo_device.h.
type FifoDeviceHandle struct {
	_           structs.HostLayout
	Triggers    uintptr
	TailReplica uintptr
	Head        uintptr
	Size        uint32
	Reserved    uint32
}
