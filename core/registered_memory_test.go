package core

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestRegisteredMemoryRoundTrip(t *testing.T) {
	for _, m := range []RegisteredMemory{
		testMemory(thisProcess(), 0x7f0000001000, 1<<20),
		testMemory(otherProcess(), 0x10, 1),
		testMemory(otherHost(), 0xffff0000, 8),
	} {
		b, err := m.MarshalBinary()
		require.NoError(t, err)
		require.Len(t, b, memoryBytes)
		got, err := decodeRegisteredMemory(b)
		require.NoError(t, err)
		assert.Equal(t, m.size, got.Size())
		assert.Equal(t, m.Transports(), got.Transports())
		assert.Equal(t, m.origin, got.origin)
		assert.Equal(t, m.addr, got.addr)
		assert.Equal(t, m.offset, got.offset)
		assert.Equal(t, m.handle, got.handle)
		assert.Equal(t, m.device, got.device)
		assert.Zero(t, got.Data(), "decoding alone maps nothing")
	}
	_, err := RegisteredMemory{}.MarshalBinary()
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
}

func TestDecodeRegisteredMemoryRefuses(t *testing.T) {
	valid, _ := testMemory(otherProcess(), 0x2000, 64).MarshalBinary()
	corrupt := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), valid...)) }
	put64 := func(off int, v uint64) []byte {
		return corrupt(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b })
	}
	tests := map[string][]byte{
		"empty":             nil,
		"truncated":         valid[:len(valid)-1],
		"trailing byte":     append(append([]byte(nil), valid...), 0),
		"wrong magic":       corrupt(func(b []byte) []byte { b[1] ^= 0xff; return b }),
		"wrong version":     corrupt(func(b []byte) []byte { b[4] = 3; return b }),
		"unknown transport": corrupt(func(b []byte) []byte { b[8] = 4; return b }),
		"negative GPU":      corrupt(func(b []byte) []byte { b[15] = 0x80; return b }),
		"reserved set":      corrupt(func(b []byte) []byte { b[20] = 1; return b }),
		"NULL address":      put64(40, 0),
		"offset past addr":  put64(48, 0x3000),
		"size 0":            put64(56, 0),
		"wrapping size":     put64(56, ^uint64(0)),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := decodeRegisteredMemory(b)
			assert.ErrorIs(t, err, ErrBadRegisteredMemory)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			ctx := NewContext()
			defer ctx.Close()
			_, err = UnmarshalRegisteredMemory(ctx, b)
			assert.ErrorIs(t, err, ErrBadRegisteredMemory)
		})
	}
}

func FuzzDecodeRegisteredMemory(f *testing.F) {
	for _, m := range []RegisteredMemory{testMemory(thisProcess(), 0x1000, 8), testMemory(otherHost(), 0xabcdef, 1<<30)} {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte("MSRM"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeRegisteredMemory(b)
		if err != nil {
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			return
		}
		again, err := m.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, b, again)
	})
}

func TestUnmarshalRegisteredMemory(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()

	_, err := UnmarshalRegisteredMemory(nil, nil)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)

	b, _ := testMemory(otherHost(), 0x2000, 64).MarshalBinary()
	_, err = UnmarshalRegisteredMemory(ctx, b)
	assert.ErrorIs(t, err, ErrDifferentHost, "CUDA IPC stays on one host")

	// Memory of another host over the network is reached by its key: nothing to map, no address here.
	ib := testMemory(otherHost(), 0x2000, 64)
	ib.transport = TransportIB
	b, _ = ib.MarshalBinary()
	got, err := UnmarshalRegisteredMemory(ctx, b)
	require.NoError(t, err)
	assert.Zero(t, got.Data())
	shm := ib
	shm.transport = TransportSHM
	b, _ = shm.MarshalBinary()
	_, err = UnmarshalRegisteredMemory(ctx, b)
	assert.ErrorIs(t, err, ErrDifferentHost, "shared memory stays on one host")

	// The same process: the pointer itself, no driver call while the context uses no GPU.
	mine := testMemory(thisProcess(), 0x7f0000002010, 4096)
	b, _ = mine.MarshalBinary()
	got, err = UnmarshalRegisteredMemory(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, mine.addr, got.Data())
	assert.Equal(t, mine.size, got.Size())
	again, err := got.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, b, again, "unmarshaled memory marshals as its owner registered it")
}

func TestUnmarshalRegisteredMemoryWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	ctx := NewContext()
	defer ctx.Close()
	b, _ := testMemory(otherProcess(), 0x2000, 64).MarshalBinary()
	_, err := UnmarshalRegisteredMemory(ctx, b)
	assertNoGPUError(t, err)
}
