package bootstrap

import (
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// The errors this package returns. Each is a sentinel of one class of package errs, so
// errors.Is holds both for the sentinel and for its class. Returned errors wrap a sentinel with
// context (an *errs.OpError naming the rank and peer, plus the tag or address where it helps).
var (
	// ErrUnreachable: the root or a peer could not be dialed before the deadline.
	ErrUnreachable = errs.New(errs.ErrSystem, "unreachable")
	// ErrTimeout: the deadline passed while waiting for a peer, the root or the ranks of a job.
	ErrTimeout = errs.New(errs.ErrSystem, "timed out")
	// ErrBadMagic: a connection did not carry this job's magic or protocol version. Such
	// connections are logged at WARN and closed; the listener keeps waiting for the right ones.
	ErrBadMagic = errs.New(errs.ErrRemote, "bad magic")
	// ErrNranksMismatch: ranks of one job disagree on the number of ranks.
	ErrNranksMismatch = errs.New(errs.ErrRemote, "nranks mismatch")
	// ErrDuplicateRank: two ranks of one job claim the same rank.
	ErrDuplicateRank = errs.New(errs.ErrRemote, "duplicate rank")
	// ErrRankOutOfRange: a rank or peer is outside [0, nranks).
	ErrRankOutOfRange = errs.New(errs.ErrInvalidArgument, "rank out of range")
	// ErrPeerClosed: a peer's connection closed or failed in the middle of the job.
	ErrPeerClosed = errs.New(errs.ErrRemote, "peer closed")
	// ErrMessageSize: a message is truncated, larger than the frame limit, or not the size RecvInto asked for.
	ErrMessageSize = errs.New(errs.ErrRemote, "message size mismatch")
	// ErrPendingLimit: a peer sent more bytes ahead of their receives than
	// MSCCLPP_BOOTSTRAP_MAX_PENDING allows; its connection is failed.
	ErrPendingLimit = errs.New(errs.ErrRemote, "too many bytes sent ahead of their receives")
	// ErrClosed: the bootstrap or root was closed.
	ErrClosed = errs.New(errs.ErrInvalidUsage, "bootstrap closed")
	// ErrRootAborted: the root stopped serving the job for a reason other than those above.
	ErrRootAborted = errs.New(errs.ErrRemote, "root aborted")
	// ErrCanceled: the caller's context was canceled.
	ErrCanceled = errs.New(errs.ErrSystem, "canceled")
	// ErrCollectiveInProgress: a collective call (AllGather, Barrier) was made on a rank while
	// another was in progress there. Overlapping collective calls cannot be matched across ranks.
	ErrCollectiveInProgress = errs.New(errs.ErrInvalidUsage, "collective call in progress")
)

// Argument errors that carry no more meaning than their class.
var (
	errBadNranks  = errs.New(errs.ErrInvalidArgument, "bad nranks")
	errBadTag     = errs.New(errs.ErrInvalidArgument, "tag must not be negative")
	errBadSize    = errs.New(errs.ErrInvalidArgument, "bad size")
	errBadAddress = errs.New(errs.ErrInvalidArgument, "bad address")
	errBadID      = errs.New(errs.ErrInvalidArgument, "corrupt unique id")
	errInterface  = errs.New(errs.ErrInvalidArgument, "no usable interface address")
	errCorrupt    = errs.New(errs.ErrRemote, "corrupt message")
	errListen     = errs.New(errs.ErrSystem, "listen failed")
)
