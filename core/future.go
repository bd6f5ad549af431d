package core

import (
	"context"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Future is the result of an operation that runs in its own goroutine, started when the future
// was made (Communicator.Connect, BuildSemaphore, SendMemory, RecvMemory). The operation ends by
// itself: each of its bootstrap steps is bounded by the bootstrap timeout, so no goroutine
// outlives it, whether or not anyone calls Get. A Future is a small value, safe to copy and to
// use from several goroutines.
type Future[T any] struct {
	s *futureState[T]
}

type futureState[T any] struct {
	done chan struct{} // closed when val and err are set
	val  T
	err  error
}

// goFuture runs op in a new goroutine and returns its future.
func goFuture[T any](op func() (T, error)) Future[T] {
	s := &futureState[T]{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.val, s.err = op()
	}()
	return Future[T]{s: s}
}

// failedFuture returns a future that is already done with err.
func failedFuture[T any](err error) Future[T] {
	s := &futureState[T]{done: make(chan struct{}), err: err}
	close(s.done)
	return Future[T]{s: s}
}

// Get waits for the operation and returns its result; every call returns the same result. If
// ctx ends first, Get returns an error matching ErrWaitCanceled and ctx's error, and the
// operation goes on: a later Get can still collect it.
func (f Future[T]) Get(ctx context.Context) (T, error) {
	var zero T
	if f.s == nil {
		return zero, fmt.Errorf("get: the zero Future has no operation: %w", errs.ErrInvalidUsage)
	}
	select {
	case <-f.s.done:
		return f.s.val, f.s.err
	default:
	}
	select {
	case <-f.s.done:
		return f.s.val, f.s.err
	case <-ctx.Done():
		return zero, fmt.Errorf("get: %w: %w", ErrWaitCanceled, ctx.Err())
	}
}

// Ready reports whether the operation has finished, without waiting.
func (f Future[T]) Ready() bool {
	if f.s == nil {
		return false
	}
	select {
	case <-f.s.done:
		return true
	default:
		return false
	}
}
