package bootstrap

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in       string
		ifname   string
		hostport string
		ok       bool
	}{
		{"127.0.0.1:50000", "", "127.0.0.1:50000", true},
		{"eth0:10.0.0.1:1", "eth0", "10.0.0.1:1", true},
		{"[::1]:50000", "", "[::1]:50000", true},
		{"ib0:[fd00::1]:65535", "ib0", "[fd00::1]:65535", true},
		{"[::ffff:10.0.0.1]:80", "", "10.0.0.1:80", true},
		{"", "", "", false},
		{"127.0.0.1", "", "", false},
		{"127.0.0.1:0", "", "", false},
		{"127.0.0.1:65536", "", "", false},
		{":127.0.0.1:5", "", "", false},
		{":[::1]:5", "", "", false},
		{"eth0[::1]:5", "", "", false},
		{"::1:5", "", "", false},
		{"localhost:5", "", "", false},
		{"a:b:c:d", "", "", false},
		{"[fe80::1%eth0]:5", "", "", false},
		{"eth0:127.0.0.1:port", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ifname, hostport, err := ParseAddr(tt.in)
			if !tt.ok {
				require.ErrorIs(t, err, errs.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.ifname, ifname)
			assert.Equal(t, tt.hostport, hostport)
		})
	}
}

func TestMagicForAddr(t *testing.T) {
	a := magicForAddr(netip.MustParseAddrPort("10.0.0.1:5000"), "")
	assert.Equal(t, a, magicForAddr(netip.MustParseAddrPort("10.0.0.1:5000"), ""), "deterministic")
	assert.NotEqual(t, a, magicForAddr(netip.MustParseAddrPort("10.0.0.1:5001"), ""))
	assert.NotEqual(t, a, magicForAddr(netip.MustParseAddrPort("10.0.0.2:5000"), ""))
	keyed := magicForAddr(netip.MustParseAddrPort("10.0.0.1:5000"), "s3cret")
	assert.NotEqual(t, a, keyed, "a key changes the magic")
	assert.NotEqual(t, keyed, magicForAddr(netip.MustParseAddrPort("10.0.0.1:5000"), "s3cres"))
}

func TestUniqueID(t *testing.T) {
	for _, s := range []string{"192.0.2.7:1234", "[fd00::2]:65535", "127.0.0.1:1"} {
		root := netip.MustParseAddrPort(s)
		id := encodeUniqueID(root, 0x0123456789abcdef)
		got, magic, err := decodeUniqueID(id)
		require.NoError(t, err)
		assert.Equal(t, root, got)
		assert.Equal(t, uint64(0x0123456789abcdef), magic)
	}

	// The documented layout.
	id := encodeUniqueID(netip.MustParseAddrPort("10.1.2.3:258"), 0x1122334455667788)
	want := []byte{protocolVersion, familyIPv4, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}
	assert.Equal(t, want, id[:len(want)])
	assert.Equal(t, make([]byte, UniqueIDBytes-len(want)), id[len(want):])

	corrupt := map[string]func(id *UniqueID){
		"zero":       func(id *UniqueID) { *id = UniqueID{} },
		"version":    func(id *UniqueID) { id[0] = 2 },
		"family":     func(id *UniqueID) { id[1] = 5 },
		"port 0":     func(id *UniqueID) { id[2], id[3] = 0, 0 },
		"ipv4 form":  func(id *UniqueID) { id[14] = 0 },
		"padding":    func(id *UniqueID) { id[UniqueIDBytes-1] = 1 },
		"v6 says v4": func(id *UniqueID) { id[1] = familyIPv6 },
	}
	for name, spoil := range corrupt {
		t.Run(name, func(t *testing.T) {
			bad := id
			spoil(&bad)
			_, _, err := decodeUniqueID(bad)
			require.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	}
}

func TestWireRoundTrip(t *testing.T) {
	h := hello{magic: 7, version: protocolVersion, rank: 3, nranks: 9, addr: netip.MustParseAddrPort("[fd00::2]:4242")}
	b := encodeHello(h)
	require.Len(t, b, helloBytes)
	got, err := decodeHello(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)

	hs := handshake{magic: 9, version: protocolVersion, rank: 1, nranks: 2}
	gotHS, err := decodeHandshake(encodeHandshake(hs))
	require.NoError(t, err)
	assert.Equal(t, hs, gotHS)

	var fh [frameHeaderBytes]byte
	encodeFrameHeader(fh[:], frameHeader{tag: tagBarrier, size: 12345})
	gotFH, err := decodeFrameHeader(fh[:])
	require.NoError(t, err)
	assert.Equal(t, frameHeader{tag: tagBarrier, size: 12345}, gotFH)

	r := encodeReply(replyError, codeDuplicateRank, bytes.Repeat([]byte("x"), 2*maxReplyPayload))
	require.Len(t, r, replyHeaderBytes+maxReplyPayload, "long messages are cut")
	rh, err := decodeReplyHeader(r[:replyHeaderBytes])
	require.NoError(t, err)
	assert.Equal(t, replyHeader{kind: replyError, code: codeDuplicateRank, size: maxReplyPayload}, rh)
	assert.ErrorIs(t, errorForCode(rh.code), ErrDuplicateRank)
	assert.ErrorIs(t, errorForCode(99), ErrRootAborted)

	for _, bad := range [][]byte{nil, {replyOK, 0, 5, 0}, {replyOK, 1, addrBytes, 0}, {9, 0, 0, 0}, {replyError, 1, 0xff, 0xff}} {
		_, err := decodeReplyHeader(bad)
		assert.Error(t, err, "%v", bad)
	}
}

func TestMissingRanks(t *testing.T) {
	joined := map[int]arrival{1: {}, 2: {}, 6: {}}
	assert.Equal(t, "0,3-5,7-9", missingRanks(joined, 10))
	assert.Equal(t, "0-3", missingRanks(nil, 4))
	assert.Equal(t, "0", missingRanks(joined, 3))
}
