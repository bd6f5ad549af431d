package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func testStub(o origin, id uint64) SemaphoreStub {
	return SemaphoreStub{endpoint: testEndpoint(o, TransportP2P, gpu0, id), token: testMemory(o, 0x7f0000000040, tokenBytes)}
}

func TestSemaphoreStubRoundTrip(t *testing.T) {
	for _, s := range []SemaphoreStub{testStub(thisProcess(), 1), testStub(otherHost(), 2)} {
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		require.Len(t, b, stubBytes)
		got, err := decodeSemaphoreStub(b)
		require.NoError(t, err)
		assert.Equal(t, s.Endpoint(), got.Endpoint())
		assert.Equal(t, s.token.addr, got.token.addr)
		assert.Equal(t, s.token.handle, got.token.handle)
		assert.Nil(t, got.conn)
	}
	_, err := SemaphoreStub{}.MarshalBinary()
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
}

func TestDecodeSemaphoreStubRefuses(t *testing.T) {
	valid, _ := testStub(otherProcess(), 1).MarshalBinary()
	corrupt := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), valid...)) }
	big := testStub(otherProcess(), 1)
	big.token.size = 16
	bigBytes, _ := big.MarshalBinary()
	odd := testStub(otherProcess(), 1)
	odd.token.addr += 4
	oddBytes, _ := odd.MarshalBinary()
	tests := map[string][]byte{
		"empty":           nil,
		"truncated":       valid[:len(valid)-1],
		"wrong magic":     corrupt(func(b []byte) []byte { b[0] = 0; return b }),
		"wrong version":   corrupt(func(b []byte) []byte { b[4] = 7; return b }),
		"bad endpoint":    corrupt(func(b []byte) []byte { b[8] ^= 1; return b }),
		"bad memory":      corrupt(func(b []byte) []byte { b[8+endpointBytes] ^= 1; return b }),
		"token not 8 B":   bigBytes,
		"unaligned token": oddBytes,
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := decodeSemaphoreStub(b)
			assert.ErrorIs(t, err, ErrBadSemaphoreStub)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	}
}

func FuzzDecodeSemaphoreStub(f *testing.F) {
	for _, s := range []SemaphoreStub{testStub(thisProcess(), 1), testStub(otherHost(), 1<<40)} {
		b, _ := s.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte("MSSS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSemaphoreStub(b)
		if err != nil {
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			return
		}
		again, err := s.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, b, again)
	})
}

func TestUnmarshalSemaphoreStub(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()
	_, err := UnmarshalSemaphoreStub(nil, nil)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	b, _ := testStub(otherHost(), 1).MarshalBinary()
	_, err = UnmarshalSemaphoreStub(ctx, b)
	assert.ErrorIs(t, err, ErrDifferentHost)
	b, _ = testStub(otherProcess(), 1).MarshalBinary()
	s, err := UnmarshalSemaphoreStub(ctx, b)
	require.NoError(t, err, "the token is mapped by NewSemaphore")
	assert.Equal(t, uint64(1), s.Endpoint().ID())
}

func TestNewSemaphoreRefusals(t *testing.T) {
	conn := testConnection(t)
	conn.remote = testEndpoint(otherProcess(), TransportP2P, gpu0, 42)
	local := testStub(thisProcess(), 1)
	local.conn = conn

	_, err := NewSemaphoreStub(nil)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = NewSemaphore(testStub(thisProcess(), 1), testStub(otherProcess(), 42))
	assert.ErrorIs(t, err, errs.ErrInvalidArgument, "a local stub without a connection")
	_, err = NewSemaphore(local, SemaphoreStub{})
	assert.ErrorIs(t, err, errs.ErrInvalidArgument, "the zero remote stub")
	_, err = NewSemaphore(local, testStub(otherProcess(), 43))
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.ErrorContains(t, err, "but the connection's peer is")
}

func TestNewSemaphoreWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	conn := testConnection(t)
	conn.remote = testEndpoint(otherProcess(), TransportP2P, gpu0, 42)
	local := testStub(thisProcess(), 1)
	local.conn = conn
	_, err := NewSemaphore(local, testStub(otherProcess(), 42))
	assertNoGPUError(t, err)
}

func TestNewSemaphoreOnRefusals(t *testing.T) {
	_, err := NewSemaphoreOn(nil, SemaphoreStub{}, SemaphoreStub{})
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)

	conn := &Connection{local: Endpoint{id: 1}, remote: Endpoint{id: 2}}
	other := &Connection{local: Endpoint{id: 3}}
	tests := []struct {
		name  string
		local SemaphoreStub
		want  string
	}{
		{"made for another connection", SemaphoreStub{conn: other}, "the local stub was made for"},
		{"another endpoint", SemaphoreStub{endpoint: Endpoint{id: 9}}, "not to the connection's local end"},
		{"another process", SemaphoreStub{endpoint: Endpoint{id: 1}, token: RegisteredMemory{origin: origin{process: 2}}}, "made by another process"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSemaphoreOn(conn, tc.local, SemaphoreStub{})
			require.Error(t, err)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
