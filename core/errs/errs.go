package errs

import (
	"errors"
	"fmt"
	"strings"
)

// The error classes. Every error the library returns matches exactly one of them with errors.Is,
// except unclassified bugs, which the C ABI reports as an internal error.
var (
	// ErrInvalidArgument: a parameter is out of its domain (NULL pointer, negative count, bad address).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidUsage: the call is valid on its own but not now (after Close, out of order, unsupported here).
	ErrInvalidUsage = errors.New("invalid usage")
	// ErrSystem: the operating system or network failed (socket errors, timeouts, unreachable peers).
	ErrSystem = errors.New("system error")
	// ErrRemote: a peer misbehaved or went away (closed mid-operation, disagreed on the job, wrong magic).
	ErrRemote = errors.New("remote error")
	// ErrCUDA: the CUDA driver returned an error or is missing.
	ErrCUDA = errors.New("CUDA error")
	// ErrInternal: a bug in this library.
	ErrInternal = errors.New("internal error")
)

// New returns a sentinel of the given class: its message is msg and errors.Is(err, class) holds.
func New(class error, msg string) error { return &sentinel{class: class, msg: msg} }

type sentinel struct {
	class error
	msg   string
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.class }

// NoRank marks OpError.Rank or OpError.Peer as not applicable.
const NoRank = -1

// OpError records the operation that failed, on which rank and against which peer.
type OpError struct {
	Op   string // "bootstrap recv", "connect", "cuIpcOpenMemHandle", ...
	Rank int    // the local rank, or NoRank
	Peer int    // the remote rank, or NoRank
	Err  error
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	switch {
	case e.Rank != NoRank && e.Peer != NoRank:
		fmt.Fprintf(&b, " (rank %d, peer %d)", e.Rank, e.Peer)
	case e.Rank != NoRank:
		fmt.Fprintf(&b, " (rank %d)", e.Rank)
	case e.Peer != NoRank:
		fmt.Fprintf(&b, " (peer %d)", e.Peer)
	}
	b.WriteString(": ")
	if e.Err == nil {
		b.WriteString("<nil>")
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }

// Class returns the class err belongs to, or ErrInternal when it matches none.
func Class(err error) error {
	for _, c := range []error{ErrInvalidArgument, ErrInvalidUsage, ErrCUDA, ErrRemote, ErrSystem, ErrInternal} {
		if errors.Is(err, c) {
			return c
		}
	}
	return ErrInternal
}
