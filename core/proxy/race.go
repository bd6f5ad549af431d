//go:build race

package proxy

import (
	"sync/atomic"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// raceAcquire tells the race detector about the happens-before edge that the trigger load creates
// with the producer's store of value[0]. The assembly load is invisible to the detector, so
// under -race the same word is loaded once more through sync/atomic; the value is already known.
func raceAcquire(slot *fifo.Trigger) { _ = atomic.LoadUint64(&slot.Value[0]) }
