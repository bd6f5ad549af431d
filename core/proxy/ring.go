package proxy

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// SlotAlign is the alignment every trigger slot needs: the C type is alignas(16), the GPU stores
// 16 bytes at once and the proxy loads them with one aligned 16-byte instruction.
const SlotAlign = 16

// checkRing validates the trigger ring the proxy will consume.
func checkRing(slots []fifo.Trigger) error {
	n := len(slots)
	switch {
	case n == 0:
		return fmt.Errorf("%w: the trigger ring has no slots", ErrConfig)
	case n&(n-1) != 0:
		return fmt.Errorf("%w: the trigger ring has %d slots, not a power of two", ErrConfig, n)
	case n < fifo.FlushCounter:
		// With fewer slots than the publication interval the device could wait for a tail that is
		// never published.
		return fmt.Errorf("%w: the trigger ring has %d slots, fewer than the tail publication interval %d",
			ErrConfig, n, fifo.FlushCounter)
	case !slotsAligned(slots):
		return fmt.Errorf("%w: the trigger ring is not %d-byte aligned", ErrConfig, SlotAlign)
	}
	return nil
}
