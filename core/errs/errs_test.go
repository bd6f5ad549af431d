package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClass(t *testing.T) {
	errPeerGone := New(ErrRemote, "peer closed")
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"sentinel", errPeerGone, ErrRemote},
		{"wrapped in OpError", &OpError{Op: "recv", Rank: 1, Peer: 2, Err: errPeerGone}, ErrRemote},
		{"wrapped with %w", fmt.Errorf("all-gather: %w", New(ErrInvalidArgument, "size < 0")), ErrInvalidArgument},
		{"class itself", ErrCUDA, ErrCUDA},
		{"unclassified", context.Canceled, ErrInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Class(tc.err))
		})
	}
}

func TestOpErrorMessage(t *testing.T) {
	cause := New(ErrSystem, "timed out")
	tests := []struct {
		err  *OpError
		want string
	}{
		{&OpError{Op: "bootstrap recv", Rank: 1, Peer: 3, Err: cause}, "bootstrap recv (rank 1, peer 3): timed out"},
		{&OpError{Op: "join", Rank: 2, Peer: NoRank, Err: cause}, "join (rank 2): timed out"},
		{&OpError{Op: "accept", Rank: NoRank, Peer: 4, Err: cause}, "accept (peer 4): timed out"},
		{&OpError{Op: "root", Rank: NoRank, Peer: NoRank, Err: cause}, "root: timed out"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.err.Error())
		assert.True(t, errors.Is(tc.err, cause))
	}
}
