package bootstrap

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// UniqueIDBytes is the size of a UniqueID (mscclppUniqueId).
const UniqueIDBytes = 128

// UniqueID is the opaque id a job shares out of band: it tells every rank where the root listens
// and which magic the job's connections carry. Its layout is:
//
//	byte  0       format version (protocolVersion, 1)
//	byte  1       address family: 4 or 6
//	bytes 2-3     the root's port, little-endian, nonzero
//	bytes 4-19    the root's IP address; an IPv4 address is stored IPv4-mapped (::ffff:a.b.c.d)
//	bytes 20-27   magic, little-endian: a random 64-bit number that identifies the job
//	bytes 28-127  zero
//
// Bytes 1-19 are the address encoding of wire.go.
type UniqueID [UniqueIDBytes]byte

const (
	idAddrOffset  = 1
	idMagicOffset = idAddrOffset + addrBytes
	idUsedBytes   = idMagicOffset + 8
)

func encodeUniqueID(root netip.AddrPort, magic uint64) UniqueID {
	var id UniqueID
	id[0] = protocolVersion
	encodeAddr(id[idAddrOffset:idMagicOffset], root)
	binary.LittleEndian.PutUint64(id[idMagicOffset:idUsedBytes], magic)
	return id
}

// decodeUniqueID returns the root address and magic id carries, or an ErrInvalidArgument-class
// error when id is corrupt: a wrong version, family or IP form, port 0, or nonzero padding.
func decodeUniqueID(id UniqueID) (root netip.AddrPort, magic uint64, err error) {
	if id[0] != protocolVersion {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: version %d, want %d", errBadID, id[0], protocolVersion)
	}
	root, err = decodeAddr(id[idAddrOffset:idMagicOffset])
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", errBadID, err)
	}
	for i := idUsedBytes; i < UniqueIDBytes; i++ {
		if id[i] != 0 {
			return netip.AddrPort{}, 0, fmt.Errorf("%w: nonzero byte %d in padding", errBadID, i)
		}
	}
	return root, binary.LittleEndian.Uint64(id[idMagicOffset:idUsedBytes]), nil
}
