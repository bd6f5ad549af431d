package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// testConnection is a connection whose GPU state is empty: every driver call it makes fails.
func testConnection(t *testing.T) *Connection {
	ctx := NewContext()
	t.Cleanup(func() { ctx.Close() })
	ep := testEndpoint(thisProcess(), TransportP2P, gpu0, 1)
	return &Connection{ctx: ctx, local: ep, remote: ep, gpu: &contextGPU{}}
}

func TestWriteRangeChecks(t *testing.T) {
	conn := testConnection(t)
	dst := testMemory(thisProcess(), 0x10000, 64)
	src := testMemory(thisProcess(), 0x20000, 32)
	tests := []struct {
		name                 string
		dstOff, srcOff, size uint64
		dst                  RegisteredMemory
		words                string
	}{
		{"past the destination", 60, 0, 8, dst, "destination: 8 bytes at offset 60 do not fit 64 bytes"},
		{"past the source", 0, 30, 4, dst, "source: 4 bytes at offset 30 do not fit 32 bytes"},
		{"offset past the end", 65, 0, 0, dst, "destination"},
		{"overflowing size", 1, 0, ^uint64(0), dst, "destination"},
		{"unmapped destination", 0, 0, 8, RegisteredMemory{size: 64}, "not registered or mapped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := conn.Write(tc.dst, tc.dstOff, src, tc.srcOff, tc.size)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.words)
		})
	}
	assert.NoError(t, conn.Write(dst, 64, src, 32, 0), "an empty write at the end is nothing to do")
}

func TestUpdateAndSyncChecks(t *testing.T) {
	conn := testConnection(t)
	dst := testMemory(thisProcess(), 0x10000, 64)
	assert.ErrorIs(t, conn.UpdateAndSync(dst, 60, 1), errs.ErrInvalidArgument, "past the end")
	err := conn.UpdateAndSync(dst, 4, 1)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.ErrorContains(t, err, "not 8-byte aligned")
}

func TestConnectionWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	conn := testConnection(t)
	m := testMemory(thisProcess(), 0x10000, 64)
	assertNoGPUError(t, conn.Write(m, 0, m, 32, 32))
	assertNoGPUError(t, conn.UpdateAndSync(m, 8, 1))
	assertNoGPUError(t, conn.Flush(t.Context()))
	_, err := NewSemaphoreStub(conn)
	assertNoGPUError(t, err)
	require.NotEmpty(t, conn.String())
}
