package legacy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// memBytes is a registered memory's wire form filled with a pattern from seed, for tests of the
// list's framing (the entries themselves are core's to decode).
func memBytes(seed byte) (b [core.RegisteredMemoryBytes]byte) {
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

func TestConnListRoundTrip(t *testing.T) {
	h1, h2 := memBytes(0), memBytes(99)
	var ep [core.EndpointBytes]byte
	for i := range ep {
		ep[i] = byte(3 * i)
	}
	tests := [][]connInfo{
		nil,
		{{tag: 0, buf: h1, sig: h2}},
		{{tag: -5, buf: h2, sig: h1}, {tag: 7, transport: core.TransportIB, buf: h1, sig: h1, endpoint: ep}},
	}
	for _, infos := range tests {
		got, err := decodeConnList(encodeConnList(infos))
		require.NoError(t, err)
		assert.Equal(t, len(infos), len(got))
		for i := range infos {
			assert.Equal(t, infos[i], got[i])
		}
	}
}

func TestDecodeConnListRefuses(t *testing.T) {
	valid := encodeConnList([]connInfo{{tag: 1, buf: memBytes(8)}})
	corrupt := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), valid...)) }
	tests := map[string][]byte{
		"empty":         nil,
		"short header":  valid[:8],
		"wrong magic":   corrupt(func(b []byte) []byte { b[0] ^= 0xff; return b }),
		"wrong version": corrupt(func(b []byte) []byte { b[4] = 99; return b }),
		"count too big": corrupt(func(b []byte) []byte { b[8] = 2; return b }),
		"truncated":     valid[:len(valid)-1],
		"trailing byte": append(append([]byte(nil), valid...), 0),
		"SHM transport": corrupt(func(b []byte) []byte { b[connListHeader+4] = byte(core.TransportSHM); return b }),
		"transport 9":   corrupt(func(b []byte) []byte { b[connListHeader+4] = 9; return b }),
	}
	for name, msg := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := decodeConnList(msg)
			assert.ErrorIs(t, err, ErrBadConnList)
			assert.ErrorIs(t, err, errs.ErrRemote)
		})
	}
}

func FuzzDecodeConnList(f *testing.F) {
	f.Add(encodeConnList(nil))
	f.Add(encodeConnList([]connInfo{{tag: 3, buf: memBytes(99), sig: memBytes(5)}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		infos, err := decodeConnList(b)
		if err == nil {
			assert.Equal(t, b, encodeConnList(infos))
		}
	})
}

func TestMatchConnections(t *testing.T) {
	theirs := []connInfo{{tag: 2, buf: memBytes(20)}, {tag: 1, buf: memBytes(10)}}
	got, err := matchConnections(0, 1, []int{1, 2}, theirs)
	require.NoError(t, err)
	assert.Equal(t, []byte{10, 20}, []byte{got[0].buf[0], got[1].buf[0]}, "matched by tag, in our order")

	tests := []struct {
		name   string
		tags   []int
		theirs []connInfo
		want   string
	}{
		{"ours missing on peer", []int{1, 3}, theirs[1:], "rank 0 declared a connection (remote rank 1, tag 3) but rank 1 declared none to rank 0 with tag 3"},
		{"theirs missing here", []int{1}, theirs, "rank 1 declared a connection (remote rank 0, tag 2) but rank 0 declared none to rank 1 with tag 2"},
		{"peer lists a tag twice", []int{1}, []connInfo{{tag: 1}, {tag: 1}}, "rank 1 listed tag 1 twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := matchConnections(0, 1, tc.tags, tc.theirs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, errors.Is(err, errs.ErrRemote))
		})
	}
}
