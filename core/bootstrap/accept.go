package bootstrap

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Backoff of an accept loop after a transient error: from acceptRetryFirst, doubling, to
// acceptRetryMax.
const (
	acceptRetryFirst = time.Millisecond
	acceptRetryMax   = 100 * time.Millisecond
)

// transientAccept reports whether an accept error may go away by itself: the process or the
// system out of file descriptors (a burst of connections under a low `ulimit -n`), out of buffer
// memory, or a connection aborted before it was accepted.
func transientAccept(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// acceptFailure holds the accept error that last held a loop back (transient or final), for the
// errors that a job reports when a peer never arrived.
type acceptFailure struct {
	mu  sync.Mutex
	err error
}

func (f *acceptFailure) set(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// get returns the last accept error, or nil.
func (f *acceptFailure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// acceptConns hands each connection accepted on ln to handle until the listener is closed, or
// handle returns false. Transient errors (transientAccept) are retried with backoff, logged at WARN
// once per burst and recorded in failure; any other error ends the loop, logged (unless the
// listener was closed) and recorded.
func acceptConns(ln *net.TCPListener, log *slog.Logger, failure *acceptFailure, handle func(*net.TCPConn) bool) {
	delay := time.Duration(0)
	for {
		c, err := ln.AcceptTCP()
		if err == nil {
			if delay != 0 {
				log.Info("bootstrap accepts connections again")
				failure.set(nil)
				delay = 0
			}
			if !handle(c) {
				return
			}
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
		failure.set(err)
		if !transientAccept(err) {
			log.Warn("bootstrap stopped accepting connections", "err", err)
			return
		}
		if delay == 0 {
			log.Warn("bootstrap cannot accept a connection for now; retrying", "err", err)
			delay = acceptRetryFirst
		} else {
			delay = min(2*delay, acceptRetryMax)
		}
		time.Sleep(delay)
	}
}
