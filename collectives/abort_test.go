package collectives

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// hostAbortComm returns a Comm with only what the abort logic uses: a logger and abort words in
// ordinary memory (a kernel would see them mapped), returned for the test to play the kernels.
func hostAbortComm(t *testing.T) (*Comm, []uint32) {
	t.Helper()
	words := make([]uint32, abortWordsBytes/4)
	c := &Comm{log: slog.New(slog.DiscardHandler)}
	c.abort.words = unsafe.Pointer(&words[0])
	return c, words
}

var errLink = errors.New("peer closed: connection closed")

func TestAbortStates(t *testing.T) {
	for _, tc := range []struct {
		name       string
		act        func(c *Comm, words []uint32)
		request    uint32
		errNow     []error // what Err wraps; nil: no error
		errOnCall  []error // what a later call gets
		wantInText string
	}{
		{name: "nothing", act: func(*Comm, []uint32) {}},
		{name: "abort", act: func(c *Comm, _ []uint32) { c.Abort() }, request: 1,
			errNow: []error{ErrAborted, errs.ErrInvalidUsage}, errOnCall: []error{ErrAborted}},
		{name: "peer left, no kernel waited", act: func(c *Comm, _ []uint32) { c.notePeerFailure(errLink) }, request: 1,
			errOnCall: []error{ErrPeerFailed, errs.ErrRemote, errLink}, wantInText: "a call was made after it"},
		{name: "peer died under a waiting kernel", act: func(c *Comm, words []uint32) {
			c.abort.lastCall.Store(uint32(callAllReduce))
			c.notePeerFailure(errLink)
			words[abortReport] = reportAborted // what a kernel thread does when it gives up
		}, request: 1, errNow: []error{ErrPeerFailed, errs.ErrRemote, errLink},
			errOnCall: []error{ErrPeerFailed}, wantInText: "a kernel gave up waiting for a peer (last call queued: AllReduce)"},
		{name: "frozen peer", act: func(c *Comm, words []uint32) {
			c.abort.lastCall.Store(uint32(callSendRecv))
			words[abortReport], words[abortRequest] = reportTimedOut, 1
		}, request: 1, errNow: []error{ErrTimedOut, errs.ErrSystem}, errOnCall: []error{ErrTimedOut},
			wantInText: "SendRecv/AlltoAll"},
		{name: "abort after a peer failure stays the peer failure", act: func(c *Comm, words []uint32) {
			c.notePeerFailure(errLink)
			words[abortReport] = reportAborted
			require.Error(t, c.Err())
			c.Abort()
		}, request: 1, errNow: []error{ErrPeerFailed}, errOnCall: []error{ErrPeerFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, words := hostAbortComm(t)
			tc.act(c, words)
			assert.Equal(t, tc.request, atomic.LoadUint32(&words[abortRequest]), "request word")
			err := c.Err()
			if tc.errNow == nil {
				assert.NoError(t, err)
			}
			for _, want := range tc.errNow {
				assert.ErrorIs(t, err, want)
			}
			callErr := c.checkUsable()
			if tc.errOnCall == nil {
				assert.NoError(t, callErr)
			}
			for _, want := range tc.errOnCall {
				assert.ErrorIs(t, callErr, want)
			}
			if tc.wantInText != "" {
				require.Error(t, callErr)
				assert.Contains(t, callErr.Error(), tc.wantInText)
			}
			assert.Equal(t, callErr, c.Err(), "the failure, once set, is what Err returns")
		})
	}
}

// TestWatchdogSeesPeerClose runs the watchdog on real bootstrap links: when rank 1 closes its
// bootstrap, rank 0's abort request is raised within a second, and closing rank 0's Comm first
// stops its watchdog without raising anything.
func TestWatchdogSeesPeerClose(t *testing.T) {
	opts := bootstrap.Options{Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	root, err := bootstrap.NewRoot(opts)
	require.NoError(t, err)
	defer root.Close()
	ranks := make([]*bootstrap.TCP, 2)
	errList := make([]error, 2)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Go(func() { ranks[r], errList[r] = bootstrap.Join(context.Background(), root.ID(), r, 2, opts) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errList...))
	defer ranks[0].Close()
	for r := range ranks { // links both ways
		wg.Go(func() { errList[r] = ranks[r].Barrier(context.Background()) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errList...))

	c, words := hostAbortComm(t)
	c.startWatchdog(ranks[0])
	start := time.Now()
	require.NoError(t, ranks[1].Close())
	require.Eventually(t, func() bool { return atomic.LoadUint32(&words[abortRequest]) == 1 }, time.Second, time.Millisecond)
	t.Logf("abort request raised %v after the peer closed", time.Since(start))
	c.stopWatchdog()
	assert.ErrorIs(t, c.checkUsable(), ErrPeerFailed)

	quiet, quietWords := hostAbortComm(t)
	quiet.startWatchdog(ranks[0]) // already failed: raises at once
	require.Eventually(t, func() bool { return atomic.LoadUint32(&quietWords[abortRequest]) == 1 }, time.Second, time.Millisecond)
	quiet.stopWatchdog()

	stopped, stoppedWords := hostAbortComm(t)
	stopped.startWatchdog(fakeWatcher{})
	stopped.stopWatchdog()
	assert.Zero(t, stoppedWords[abortRequest], "a stopped watchdog raises nothing")
}

// fakeWatcher is a bootstrap whose peers never fail.
type fakeWatcher struct{}

func (fakeWatcher) PeerFailed() <-chan struct{} { return nil }
func (fakeWatcher) PeerErr() error              { return nil }

// TestAbortWithoutWords: a Comm whose abort words are gone (closed, or never allocated) can
// still be aborted and asked for its error.
func TestAbortWithoutWords(t *testing.T) {
	c := &Comm{log: slog.New(slog.DiscardHandler)}
	require.NoError(t, c.Err())
	c.notePeerFailure(errLink)
	require.NoError(t, c.Err(), "no kernel reported")
	c.Abort()
	assert.ErrorIs(t, c.Err(), ErrAborted)
}
