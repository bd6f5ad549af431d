package collectives

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// commWithRegistrations is a Comm of nRanks (no GPU) that holds registrations of the given
// [ptr, ptr+size) ranges, as Register leaves them: sorted by address.
func commWithRegistrations(nRanks int, ranges ...span) *Comm {
	c := &Comm{nRanks: nRanks}
	for i, r := range ranges {
		reg := &Registration{c: c, index: i, ptr: r.ptr, size: r.size}
		c.regSlots[i] = reg
		c.regs = append(c.regs, reg)
	}
	return c
}

func TestRegistrationHolding(t *testing.T) {
	c := commWithRegistrations(2, span{0x1000, 0x100}, span{0x2000, 0x1000}, span{0x3000, 0x10})
	tests := []struct {
		ptr   cuda.DevicePtr
		size  uint64
		index int // -1: none
	}{
		{0x1000, 0x100, 0},
		{0x1080, 0x80, 0},
		{0x1080, 0x81, -1}, // runs past the end
		{0x0fff, 0x2, -1},  // starts before
		{0x0800, 0x10, -1}, // before every registration
		{0x2fff, 1, 1},
		{0x3000, 0x10, 2},
		{0x3010, 1, -1}, // just past the last
		{0x1100, 0x10, -1},
	}
	for _, tt := range tests {
		r := c.registrationHolding(tt.ptr, tt.size)
		if tt.index < 0 {
			assert.Nil(t, r, "%+v", tt)
			continue
		}
		require.NotNil(t, r, "%+v", tt)
		assert.Equal(t, tt.index, r.index, "%+v", tt)
	}
}

// TestZeroCopyRegistrations: AllReduce needs send and recv registered, AllGather only recv;
// too many peers for the zero-copy kernels fall back to the scratch.
func TestZeroCopyRegistrations(t *testing.T) {
	c := commWithRegistrations(2, span{0x1000, 0x1000}, span{0x4000, 0x1000})
	allReduce := func(send, recv cuda.DevicePtr) *call {
		return &call{send: span{send, 0x100}, recv: span{recv, 0x100}}
	}
	sendReg, recvReg := c.zeroCopyRegistrations(allReduce(0x1000, 0x4000))
	require.NotNil(t, sendReg)
	require.NotNil(t, recvReg)
	assert.Equal(t, 0, sendReg.index)
	assert.Equal(t, 1, recvReg.index)

	_, recvReg = c.zeroCopyRegistrations(allReduce(0x8000, 0x4000))
	assert.Nil(t, recvReg, "send not registered")
	_, recvReg = c.zeroCopyRegistrations(allReduce(0x1000, 0x8000))
	assert.Nil(t, recvReg, "recv not registered")

	allGather := &call{recv: span{0x4000, 0x200}}
	sendReg, recvReg = c.zeroCopyRegistrations(allGather)
	assert.Nil(t, sendReg)
	require.NotNil(t, recvReg)
	assert.Equal(t, 1, recvReg.index)

	wide := commWithRegistrations(maxZeroCopyPeers+2, span{0x4000, 0x1000})
	_, recvReg = wide.zeroCopyRegistrations(allGather)
	assert.Nil(t, recvReg, "more peers than the zero-copy kernels take")
}

// TestRegisterRefusals: what Register refuses before touching a GPU or a peer.
func TestRegisterRefusals(t *testing.T) {
	c := commWithRegistrations(2, span{0x1000, 0x1000})
	_, err := c.Register(context.Background(), 0, 16)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = c.Register(context.Background(), 0x8000, 0)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = c.Register(context.Background(), 0x1fff, 16)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument, "overlaps registration 0")
	assert.ErrorContains(t, err, "overlaps registration 0")

	full := commWithRegistrations(2)
	for i := range full.regSlots {
		full.regSlots[i] = &Registration{c: full, index: i, ptr: cuda.DevicePtr(0x1000 * (i + 1)), size: 0x10}
	}
	_, err = full.Register(context.Background(), 0x10000000, 16)
	assert.ErrorIs(t, err, errs.ErrInvalidUsage)

	c.closed = true
	_, err = c.Register(context.Background(), 0x8000, 16)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, c.regs[0].Close(), ErrClosed)
}
