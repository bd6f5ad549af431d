package channels

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestNewProxyServiceFifoSize(t *testing.T) {
	tests := []struct {
		size int
		ok   bool
	}{{0, true}, {4, true}, {128, true}, {512, true}, {3, false}, {100, false}, {-8, false}}
	for _, tc := range tests {
		s, err := NewProxyService(tc.size)
		if !tc.ok {
			assert.ErrorIs(t, err, core.ErrBadFifoSize, "size %d", tc.size)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			continue
		}
		require.NoError(t, err, "size %d", tc.size)
		want := tc.size
		if want == 0 {
			want = DefaultFifoSize
		}
		assert.Equal(t, want, s.fifoSize)
		require.NoError(t, s.Close())
	}
}

func TestProxyServiceRefusals(t *testing.T) {
	s, err := NewProxyService(0)
	require.NoError(t, err)
	mem := s.AddMemory(core.RegisteredMemory{})
	assert.Equal(t, MemoryID(0), mem)

	_, err = s.PortChannel(0, mem, mem)
	assert.ErrorIs(t, err, ErrUnknownID, "no semaphore added")
	_, err = s.PortChannel(0, 5, mem)
	assert.ErrorIs(t, err, ErrUnknownID)

	// Without port channels there is nothing to start or stop.
	require.NoError(t, s.Start())
	require.NoError(t, s.Stop())
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.ErrorIs(t, s.Start(), ErrServiceClosed)
	_, err = s.PortChannel(0, mem, mem)
	assert.ErrorIs(t, err, ErrServiceClosed)
}
