package cuda

import (
	"time"
	"unsafe"
)

// Stream is a CUDA stream (CUstream). The zero Stream is the legacy default stream.
type Stream struct{ h unsafe.Pointer }

// Event is a CUDA event (CUevent).
type Event struct{ h unsafe.Pointer }

// NewStream creates a stream in the current context that does not synchronize with the default
// stream (CU_STREAM_NON_BLOCKING).
func NewStream() (Stream, error) {
	if err := initDriver(); err != nil {
		return Stream{}, err
	}
	return cuStreamCreate(streamNonBlocking)
}

// Destroy destroys s once its queued work completes.
func (s Stream) Destroy() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuStreamDestroy(s)
}

// Synchronize waits until all work queued on s has completed.
func (s Stream) Synchronize() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuStreamSynchronize(s)
}

// Done reports whether all work queued on s has completed, without waiting.
func (s Stream) Done() (bool, error) {
	if err := initDriver(); err != nil {
		return false, err
	}
	return queryResult("cuStreamQuery", cuStreamQuery(s))
}

// WaitEvent makes later work on s wait until e completes.
func (s Stream) WaitEvent(e Event) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuStreamWaitEvent(s, e)
}

// NewEvent creates an event in the current context, without timing (CU_EVENT_DISABLE_TIMING).
func NewEvent() (Event, error) {
	if err := initDriver(); err != nil {
		return Event{}, err
	}
	return cuEventCreate(eventDisableTiming)
}

// NewTimingEvent creates an event in the current context that records when the work before it
// completed, for ElapsedTime.
func NewTimingEvent() (Event, error) {
	if err := initDriver(); err != nil {
		return Event{}, err
	}
	return cuEventCreate(0)
}

// ElapsedTime is the GPU time from start to end, two completed timing events (NewTimingEvent),
// with about half a microsecond of resolution.
func ElapsedTime(start, end Event) (time.Duration, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	ms, err := cuEventElapsedTime(start, end)
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Destroy destroys e.
func (e Event) Destroy() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuEventDestroy(e)
}

// Record captures in e the work queued on s so far.
func (e Event) Record(s Stream) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuEventRecord(e, s)
}

// Synchronize waits until the work e captured has completed.
func (e Event) Synchronize() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuEventSynchronize(e)
}

// Done reports whether the work e captured has completed, without waiting.
func (e Event) Done() (bool, error) {
	if err := initDriver(); err != nil {
		return false, err
	}
	return queryResult("cuEventQuery", cuEventQuery(e))
}

// StreamFromHandle wraps a stream created elsewhere in the process (a cudaStream_t or CUstream
// handed in through the C API; nil is the legacy default stream). The caller keeps owning it.
func StreamFromHandle(h unsafe.Pointer) Stream { return Stream{h: h} }

// Handle returns s's raw CUstream, which is also a valid cudaStream_t, for handing to another
// library in the process (NCCL, for instance). nil is the legacy default stream.
func (s Stream) Handle() unsafe.Pointer { return s.h }
