package cuda

import "unsafe"

// Graph is a CUDA graph (CUgraph): work captured from a stream, not yet executable. Instantiate
// turns it into a GraphExec; the Graph can be destroyed right after that.
type Graph struct{ h unsafe.Pointer }

// GraphExec is an executable graph (CUgraphExec), launched on a stream as one unit.
type GraphExec struct{ h unsafe.Pointer }

// BeginCapture puts s in capture mode: from now until EndCapture, work queued on s (kernel
// launches, asynchronous copies and memsets, and calls of other libraries on the same stream,
// NCCL's for instance) is recorded into a graph instead of being run. s must be a stream of
// NewStream, not the legacy default stream (the zero Stream), which cannot be captured.
//
// The capture mode is CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: while the capture is under way, the
// calling OS thread may not make calls that could synchronize with the captured work implicitly
// (cuMemAlloc, a synchronous copy, synchronizing a captured stream; they fail and invalidate
// the capture), but other threads of the process may. GLOBAL mode would make those calls fail on
// every thread of the process too, which would break whatever runs beside the capture: the Go
// runtime's other threads, this library's proxies, NCCL's own threads. RELAXED mode would lift
// the check on this thread as well, so an unsafe call here would go through unnoticed instead
// of failing.
//
// In this mode EndCapture must be called from the same OS thread: hold the goroutine on its
// thread (runtime.LockOSThread) from BeginCapture to EndCapture.
func (s Stream) BeginCapture() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuStreamBeginCapture(s)
}

// EndCapture ends the capture BeginCapture started on s and returns the captured work as a
// Graph, which the caller destroys. If a call failed during the capture, the capture is
// invalidated: EndCapture still ends it (s can be used again) and returns an error
// (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) and no graph.
func (s Stream) EndCapture() (Graph, error) {
	if err := initDriver(); err != nil {
		return Graph{}, err
	}
	return cuStreamEndCapture(s)
}

// Instantiate makes an executable graph of g, without flags (cuGraphInstantiateWithFlags with
// 0). g can be destroyed afterwards; the GraphExec does not depend on it.
func (g Graph) Instantiate() (GraphExec, error) {
	if err := initDriver(); err != nil {
		return GraphExec{}, err
	}
	return cuGraphInstantiateWithFlags(g)
}

// Destroy destroys g. Executable graphs instantiated from it are not affected.
func (g Graph) Destroy() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuGraphDestroy(g)
}

// Launch queues the whole graph on s, after the work already queued there; it returns once
// queued. A GraphExec runs one launch at a time: launches on different streams are ordered
// as if on one.
func (e GraphExec) Launch(s Stream) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuGraphLaunch(e, s)
}

// Destroy destroys e. A launch still running completes first; its resources are then freed
// asynchronously.
func (e GraphExec) Destroy() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuGraphExecDestroy(e)
}
