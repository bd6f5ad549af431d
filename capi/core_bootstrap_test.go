package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// TestCheckMessageSize: the sizes of mscclppBootstrapSend, Recv and AllGather(Bytes) beyond what
// a message carries are refused as invalid arguments before a slice is made (SIZE_MAX, as an
// int, is -1: the slice used to panic).
func TestCheckMessageSize(t *testing.T) {
	tests := []struct {
		size uint64
		ok   bool
	}{
		{0, true},
		{1, true},
		{bootstrap.MaxMessageBytes, true},
		{bootstrap.MaxMessageBytes + 1, false},
		{math.MaxInt64 + 1, false},
		{math.MaxUint64, false},
	}
	for _, tc := range tests {
		err := checkMessageSize(tc.size)
		if tc.ok {
			assert.NoError(t, err, "size %d", tc.size)
			continue
		}
		require.ErrorIs(t, err, errs.ErrInvalidArgument, "size %d", tc.size)
		assert.ErrorContains(t, err, "a bootstrap message carries")
	}
}
