package bootstrap

import (
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every decoder. None may panic, and whatever one accepts
// must encode back to the same bytes (the encodings are canonical).
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= addrBytes {
			b := data[:addrBytes]
			if a, err := decodeAddr(b); err == nil {
				var again [addrBytes]byte
				encodeAddr(again[:], a)
				if !bytes.Equal(again[:], b) {
					t.Fatalf("address %x decodes to %s, which encodes to %x", b, a, again)
				}
			}
		}
		if len(data) >= UniqueIDBytes {
			id := UniqueID(data[:UniqueIDBytes])
			if root, magic, err := decodeUniqueID(id); err == nil {
				if again := encodeUniqueID(root, magic); again != id {
					t.Fatalf("unique id %x does not round-trip", id)
				}
			}
		}
		if len(data) >= helloBytes {
			if h, err := decodeHello(data[:helloBytes]); err == nil {
				if again := encodeHello(h); !bytes.Equal(again, data[:helloBytes]) {
					t.Fatalf("hello %x does not round-trip: %x", data[:helloBytes], again)
				}
			}
		}
		if len(data) >= handshakeBytes {
			if h, err := decodeHandshake(data[:handshakeBytes]); err == nil {
				if again := encodeHandshake(h); !bytes.Equal(again, data[:handshakeBytes]) {
					t.Fatalf("handshake %x does not round-trip: %x", data[:handshakeBytes], again)
				}
			}
		}
		if len(data) >= frameHeaderBytes {
			if h, err := decodeFrameHeader(data[:frameHeaderBytes]); err == nil {
				if h.size < 0 || h.size > maxFrameBytes {
					t.Fatalf("frame header %x accepted with size %d", data[:frameHeaderBytes], h.size)
				}
				var again [frameHeaderBytes]byte
				encodeFrameHeader(again[:], h)
				if !bytes.Equal(again[:], data[:frameHeaderBytes]) {
					t.Fatalf("frame header %x does not round-trip: %x", data[:frameHeaderBytes], again)
				}
			}
		}
		if len(data) >= replyHeaderBytes {
			if h, err := decodeReplyHeader(data[:replyHeaderBytes]); err == nil {
				if h.size < 0 || h.size > maxReplyPayload {
					t.Fatalf("reply header %x accepted with size %d", data[:replyHeaderBytes], h.size)
				}
			}
		}
		// Decoders given the wrong length must refuse, not panic.
		decodeHello(data)
		decodeHandshake(data)
		decodeFrameHeader(data)
		decodeReplyHeader(data)
		decodeAddr(data)
		ParseAddr(string(data))
	})
}
