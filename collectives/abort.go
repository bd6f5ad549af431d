package collectives

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// The abort words of a Comm (kernels/src/wait.cuh): host memory mapped into the device, which
// every waiting kernel thread reads now and then. The host raises the request; the kernels
// report whether a wait gave up, and why.
const (
	abortRequest    = 0 // index of the request word: non-zero asks waiting kernels to give up
	abortReport     = 1 // index of the report word: what the kernels did
	reportNone      = 0 // no wait gave up
	reportAborted   = 1 // a wait gave up because the request was raised
	reportTimedOut  = 2 // a wait gave up after MSCCLPP_COLL_MAX_SPINS polls (and raised the request)
	abortWordsBytes = 64
)

var (
	// ErrAborted: Abort was called; the Comm's later calls fail with it.
	ErrAborted = errs.New(errs.ErrInvalidUsage, "collective communicator was aborted")
	// ErrPeerFailed: a peer's bootstrap link ended (its process died or closed its
	// communicator) while this Comm was open: a kernel waiting for the peer gave up, or a call
	// was made after it.
	ErrPeerFailed = errs.New(errs.ErrRemote, "a peer of the collective communicator failed")
	// ErrTimedOut: a kernel waited MSCCLPP_COLL_MAX_SPINS polls for a peer (a frozen one) and gave up.
	ErrTimedOut = errs.New(errs.ErrSystem, "a kernel waited MSCCLPP_COLL_MAX_SPINS polls for a peer and gave up")
)

// abortState is what a Comm keeps for ending waits that would never end.
type abortState struct {
	words unsafe.Pointer // the two abort words (abortWordsBytes of pinned host memory); nil before allocate
	dev   cuda.DevicePtr // their device address, in every kernel's arguments
	stop  chan struct{}  // closed by Close: the watchdog returns
	done  chan struct{}  // closed when the watchdog has returned

	failed   atomic.Bool   // failure is set (read without the lock on every launch)
	peerGone atomic.Bool   // peerErr is set (likewise)
	mu       sync.Mutex    // guards words (against freeAbortWords), failure and peerErr
	failure  error         // what Err returns and calls fail with; set once
	peerErr  error         // the first failure of a peer's link the watchdog saw
	lastCall atomic.Uint32 // the callKind of the last call queued, for error messages
}

// callKind names a call in error messages.
type callKind uint32

const (
	callNone callKind = iota
	callAllReduce
	callAllGather
	callReduceScatter
	callBroadcast
	callSendRecv
)

func (k callKind) String() string {
	return [...]string{"none", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "SendRecv/AlltoAll"}[k]
}

// word returns abort word i.
func (s *abortState) word(i int) *uint32 {
	return (*uint32)(unsafe.Add(s.words, 4*i))
}

// allocAbortWords allocates the zeroed abort words. The GPU's context is current.
func (c *Comm) allocAbortWords() error {
	p, err := cuda.MemHostAlloc(abortWordsBytes)
	if err != nil {
		return fmt.Errorf("abort words: %w", err)
	}
	clear(unsafe.Slice((*byte)(p), abortWordsBytes))
	c.abort.words = p
	if c.abort.dev, err = cuda.MemHostGetDevicePointer(p); err != nil {
		return fmt.Errorf("abort words: %w", err)
	}
	return nil
}

// freeAbortWords frees the abort words once no kernel can read them (release has freed the
// Comm's device memory, which waits for its kernels). The GPU's context is current.
func (c *Comm) freeAbortWords() error {
	c.abort.mu.Lock()
	defer c.abort.mu.Unlock()
	if c.abort.words == nil {
		return nil
	}
	err := cuda.MemFreeHost(c.abort.words)
	c.abort.words = nil
	return err
}

// peerWatcher is the part of a bootstrap the watchdog uses (*bootstrap.TCP is one).
type peerWatcher interface {
	PeerFailed() <-chan struct{}
	PeerErr() error
}

var _ peerWatcher = (*bootstrap.TCP)(nil)

// startWatchdog starts the goroutine that raises the abort request when a peer's bootstrap link
// fails (within milliseconds of its process dying), so that kernels waiting for that peer end
// instead of spinning. Close stops it.
func (c *Comm) startWatchdog(b peerWatcher) {
	c.abort.stop, c.abort.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.abort.done)
		select {
		case <-b.PeerFailed():
			c.notePeerFailure(b.PeerErr())
		case <-c.abort.stop:
		}
	}()
}

// stopWatchdog stops the watchdog, if it runs, and waits for it.
func (c *Comm) stopWatchdog() {
	if c.abort.stop != nil {
		close(c.abort.stop)
		<-c.abort.done
		c.abort.stop = nil
	}
}

// notePeerFailure records a peer's failure and raises the abort request. The Comm fails only
// when a kernel actually gave up waiting (Err reads the kernels' report) or a later call is
// made: a peer that closed its communicator after the last common call is no failure, which is
// why this logs at INFO (every job's teardown has a first rank to close); a failure the Comm
// then reports comes back as an error from its calls, which the C API logs at WARN.
func (c *Comm) notePeerFailure(err error) {
	c.abort.mu.Lock()
	if c.abort.peerErr == nil {
		c.abort.peerErr = err
		c.abort.peerGone.Store(true)
	}
	c.abort.mu.Unlock()
	c.log.Info("a peer's bootstrap link ended (its process exited or closed its communicator): kernels of this collective communicator that wait for a peer give up, and later calls fail",
		"err", err)
	c.raiseAbort()
}

// raiseAbort sets the request word that every waiting kernel thread reads (nothing once Close
// has freed it: no kernel runs then).
func (c *Comm) raiseAbort() {
	c.abort.mu.Lock()
	defer c.abort.mu.Unlock()
	if c.abort.words != nil {
		atomic.StoreUint32(c.abort.word(abortRequest), 1)
	}
}

// Abort makes the Comm's kernels that wait for a peer give up within milliseconds (their results
// are undefined) and every later call fail with ErrAborted. Close is still needed to release the
// Comm. Local, safe to call from any goroutine, at any time, more than once.
func (c *Comm) Abort() {
	c.raiseAbort()
	c.fail(ErrAborted)
}

// fail records err as the Comm's failure unless it has one.
func (c *Comm) fail(err error) error {
	c.abort.mu.Lock()
	defer c.abort.mu.Unlock()
	if c.abort.failure == nil {
		c.abort.failure = err
		c.abort.failed.Store(true)
	}
	return c.abort.failure
}

// Err returns why the Comm can no longer be used, or nil: ErrAborted after Abort; ErrPeerFailed
// (with the peer and the link's error) once a kernel gave up waiting because a peer's link ended,
// or a call was made after that; ErrTimedOut once a kernel gave up after MSCCLPP_COLL_MAX_SPINS
// polls. Asynchronous, like NCCL's ncclCommGetAsyncError: a kernel reports when it gives up,
// which is after the call that queued it returned. Safe to call from any goroutine.
func (c *Comm) Err() error {
	if c.abort.failed.Load() {
		return c.failureErr()
	}
	switch c.report() {
	case reportAborted:
		return c.fail(c.peerFailure("a kernel gave up waiting for a peer"))
	case reportTimedOut:
		return c.fail(fmt.Errorf("%w (last call queued: %s)", ErrTimedOut, c.lastOp()))
	}
	return nil
}

// report reads the kernels' report word (reportNone once Close has freed it).
func (c *Comm) report() uint32 {
	c.abort.mu.Lock()
	defer c.abort.mu.Unlock()
	if c.abort.words == nil {
		return reportNone
	}
	return atomic.LoadUint32(c.abort.word(abortReport))
}

// checkUsable is what a call about to be queued checks, with c.mu held (so Close cannot free the
// abort words meanwhile): ErrClosed, or Err, or, after a peer's failure, ErrPeerFailed. On the
// latency path: three atomic loads and no lock while all is well.
func (c *Comm) checkUsable() error {
	if c.closed {
		return ErrClosed
	}
	if !c.abort.failed.Load() && !c.abort.peerGone.Load() &&
		(c.abort.words == nil || atomic.LoadUint32(c.abort.word(abortReport)) == reportNone) {
		return nil
	}
	if err := c.Err(); err != nil {
		return err
	}
	return c.fail(c.peerFailure("a call was made after it"))
}

// peerFailure is ErrPeerFailed with the peer's link error and what happened.
func (c *Comm) peerFailure(what string) error {
	c.abort.mu.Lock()
	peerErr := c.abort.peerErr
	c.abort.mu.Unlock()
	if peerErr == nil { // only an abort request with no peer failure: Abort
		return ErrAborted
	}
	return fmt.Errorf("%w: %s (last call queued: %s): %w", ErrPeerFailed, what, c.lastOp(), peerErr)
}

// failureErr returns the recorded failure.
func (c *Comm) failureErr() error {
	c.abort.mu.Lock()
	defer c.abort.mu.Unlock()
	return c.abort.failure
}

// lastOp returns the name of the last call queued.
func (c *Comm) lastOp() string { return callKind(c.abort.lastCall.Load()).String() }
