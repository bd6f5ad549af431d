package bootstrap

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// This file holds the encodings of everything sent on the wire. Every encoding has a fixed size
// or a fixed-size header whose length field is checked against a limit before anything is read
// or allocated. The decoders are pure functions of their input so they can be fuzzed.
// All integers are little-endian.

// protocolVersion is carried by the unique id, the hello and the peer handshake. Peers with
// another version are refused like peers with a wrong magic.
const protocolVersion = 1

// Address families as encoded on the wire.
const (
	familyIPv4 = 4
	familyIPv6 = 6
)

// addrBytes is the size of an encoded address:
//
//	byte  0     family: 4 or 6
//	bytes 1-2   port, nonzero
//	bytes 3-18  IP address; an IPv4 address is stored IPv4-mapped (::ffff:a.b.c.d)
const addrBytes = 19

func encodeAddr(b []byte, a netip.AddrPort) {
	ip := a.Addr().Unmap()
	if ip.Is4() {
		b[0] = familyIPv4
	} else {
		b[0] = familyIPv6
	}
	binary.LittleEndian.PutUint16(b[1:3], a.Port())
	ip16 := ip.As16()
	copy(b[3:19], ip16[:])
}

func decodeAddr(b []byte) (netip.AddrPort, error) {
	if len(b) != addrBytes {
		return netip.AddrPort{}, fmt.Errorf("%w: address is %d bytes, want %d", errCorrupt, len(b), addrBytes)
	}
	port := binary.LittleEndian.Uint16(b[1:3])
	if port == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w: address has port 0", errCorrupt)
	}
	ip := netip.AddrFrom16([16]byte(b[3:19]))
	switch b[0] {
	case familyIPv4:
		if !ip.Is4In6() {
			return netip.AddrPort{}, fmt.Errorf("%w: IPv4 address %s is not IPv4-mapped", errCorrupt, ip)
		}
		ip = ip.Unmap()
	case familyIPv6:
		if ip.Is4In6() {
			return netip.AddrPort{}, fmt.Errorf("%w: IPv6 address %s is IPv4-mapped", errCorrupt, ip)
		}
	default:
		return netip.AddrPort{}, fmt.Errorf("%w: address family %d", errCorrupt, b[0])
	}
	return netip.AddrPortFrom(ip, port), nil
}

// hello is what a rank sends the root first:
//
//	bytes  0-7   magic
//	byte   8     protocol version
//	bytes  9-12  rank, uint32
//	bytes 13-16  nranks, uint32
//	bytes 17-35  the rank's listening address (see addrBytes)
type hello struct {
	magic   uint64
	version byte
	rank    int
	nranks  int
	addr    netip.AddrPort
}

const helloBytes = 8 + 1 + 4 + 4 + addrBytes

func encodeHello(h hello) []byte {
	b := make([]byte, helloBytes)
	binary.LittleEndian.PutUint64(b[0:8], h.magic)
	b[8] = h.version
	binary.LittleEndian.PutUint32(b[9:13], uint32(h.rank))
	binary.LittleEndian.PutUint32(b[13:17], uint32(h.nranks))
	encodeAddr(b[17:], h.addr)
	return b
}

// decodeHello decodes b. It checks the encoding only; the caller checks magic, version and ranks.
func decodeHello(b []byte) (hello, error) {
	if len(b) != helloBytes {
		return hello{}, fmt.Errorf("%w: hello is %d bytes, want %d", errCorrupt, len(b), helloBytes)
	}
	h := hello{
		magic:   binary.LittleEndian.Uint64(b[0:8]),
		version: b[8],
		rank:    int(binary.LittleEndian.Uint32(b[9:13])),
		nranks:  int(binary.LittleEndian.Uint32(b[13:17])),
	}
	addr, err := decodeAddr(b[17:])
	if err != nil {
		return hello{}, fmt.Errorf("hello: %w", err)
	}
	h.addr = addr
	return h, nil
}

// handshake is what the dialing rank of a peer link sends first:
//
//	bytes  0-7   magic
//	byte   8     protocol version
//	bytes  9-12  the dialing rank, uint32
//	bytes 13-16  nranks, uint32
type handshake struct {
	magic   uint64
	version byte
	rank    int
	nranks  int
}

const handshakeBytes = 8 + 1 + 4 + 4

func encodeHandshake(h handshake) []byte {
	b := make([]byte, handshakeBytes)
	binary.LittleEndian.PutUint64(b[0:8], h.magic)
	b[8] = h.version
	binary.LittleEndian.PutUint32(b[9:13], uint32(h.rank))
	binary.LittleEndian.PutUint32(b[13:17], uint32(h.nranks))
	return b
}

func decodeHandshake(b []byte) (handshake, error) {
	if len(b) != handshakeBytes {
		return handshake{}, fmt.Errorf("%w: handshake is %d bytes, want %d", errCorrupt, len(b), handshakeBytes)
	}
	return handshake{
		magic:   binary.LittleEndian.Uint64(b[0:8]),
		version: b[8],
		rank:    int(binary.LittleEndian.Uint32(b[9:13])),
		nranks:  int(binary.LittleEndian.Uint32(b[13:17])),
	}, nil
}

// A reply is what the root sends each rank once, after which it closes the connection:
//
//	byte  0     kind: replyOK or replyError
//	byte  1     for replyError, which error (errorCode); 0 for replyOK
//	bytes 2-3   payload length, uint16, at most maxReplyPayload
//	then the payload: for replyOK the successor's address (addrBytes), for replyError a UTF-8 message.
const (
	replyOK    = 1
	replyError = 2

	replyHeaderBytes = 4
	maxReplyPayload  = 1024
)

// errorCode names, in a reply, the error the root reports.
type errorCode byte

const (
	codeTimeout errorCode = iota + 1
	codeNranksMismatch
	codeDuplicateRank
	codeRankOutOfRange
	codeAborted
)

// codeErrors maps error codes to the sentinels they stand for, in code order.
var codeErrors = []struct {
	code errorCode
	err  error
}{
	{codeTimeout, ErrTimeout},
	{codeNranksMismatch, ErrNranksMismatch},
	{codeDuplicateRank, ErrDuplicateRank},
	{codeRankOutOfRange, ErrRankOutOfRange},
	{codeAborted, ErrRootAborted},
}

func errorForCode(c errorCode) error {
	for _, e := range codeErrors {
		if e.code == c {
			return e.err
		}
	}
	return ErrRootAborted
}

type replyHeader struct {
	kind byte
	code errorCode
	size int
}

func encodeReply(kind byte, code errorCode, payload []byte) []byte {
	if len(payload) > maxReplyPayload {
		payload = payload[:maxReplyPayload]
	}
	b := make([]byte, replyHeaderBytes+len(payload))
	b[0] = kind
	b[1] = byte(code)
	binary.LittleEndian.PutUint16(b[2:4], uint16(len(payload)))
	copy(b[replyHeaderBytes:], payload)
	return b
}

func decodeReplyHeader(b []byte) (replyHeader, error) {
	if len(b) != replyHeaderBytes {
		return replyHeader{}, fmt.Errorf("%w: reply header is %d bytes, want %d", errCorrupt, len(b), replyHeaderBytes)
	}
	h := replyHeader{kind: b[0], code: errorCode(b[1]), size: int(binary.LittleEndian.Uint16(b[2:4]))}
	switch {
	case h.size > maxReplyPayload:
		return replyHeader{}, fmt.Errorf("%w: reply payload of %d bytes exceeds %d", ErrMessageSize, h.size, maxReplyPayload)
	case h.kind == replyOK && (h.code != 0 || h.size != addrBytes):
		return replyHeader{}, fmt.Errorf("%w: OK reply with code %d and %d bytes", errCorrupt, h.code, h.size)
	case h.kind != replyOK && h.kind != replyError:
		return replyHeader{}, fmt.Errorf("%w: reply kind %d", errCorrupt, h.kind)
	}
	return h, nil
}

// A frame carries one message on a peer link:
//
//	bytes 0-7    tag, int64
//	bytes 8-15   payload length, uint64, at most maxFrameBytes
//	then the payload.
const (
	frameHeaderBytes = 16
	maxFrameBytes    = 1 << 30
)

// MaxMessageBytes is the largest message Send and RecvInto carry, and the most bytes per rank
// of AllGather: what one frame can carry. Larger sizes are refused with an invalid-argument error.
const MaxMessageBytes = maxFrameBytes

type frameHeader struct {
	tag  int
	size int
}

func encodeFrameHeader(b []byte, h frameHeader) {
	binary.LittleEndian.PutUint64(b[0:8], uint64(int64(h.tag)))
	binary.LittleEndian.PutUint64(b[8:16], uint64(h.size))
}

func decodeFrameHeader(b []byte) (frameHeader, error) {
	if len(b) != frameHeaderBytes {
		return frameHeader{}, fmt.Errorf("%w: frame header is %d bytes, want %d", errCorrupt, len(b), frameHeaderBytes)
	}
	size := binary.LittleEndian.Uint64(b[8:16])
	if size > maxFrameBytes {
		return frameHeader{}, fmt.Errorf("%w: frame of %d bytes exceeds the %d-byte limit", ErrMessageSize, size, maxFrameBytes)
	}
	return frameHeader{tag: int(int64(binary.LittleEndian.Uint64(b[0:8]))), size: int(size)}, nil
}
