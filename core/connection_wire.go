package core

import (
	"encoding/binary"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// connInfo is what one end of a connection tells the other during setup: where its buffer and
// its signal pair live, as CUDA IPC handles plus offsets into the allocations they name.
type connInfo struct {
	tag       int32
	size      uint64            // bytes of the registered buffer
	buf       cuda.IpcMemHandle // the allocation holding the buffer
	bufOffset uint64            // the buffer's offset in that allocation
	sig       cuda.IpcMemHandle // the allocation holding the signal pair
	sigOffset uint64            // the pair's offset in that allocation
}

// Wire format of one rank's connection list for one peer, little-endian:
//
//	magic uint32 | version uint32 | count uint32 | count × (tag int32, size, bufOffset,
//	sigOffset uint64, buf [64]byte, sig [64]byte)
const (
	connListMagic    = 0x4e43534d // "MSCN"
	connListVersion  = 1
	connListHeader   = 12
	connInfoBytes    = 4 + 3*8 + 2*cuda.IpcMemHandleSize
	maxConnListBytes = connListHeader + MaxConnections*connInfoBytes
)

// ErrBadConnList: a peer sent a connection list this version cannot read.
var ErrBadConnList = errs.New(errs.ErrRemote, "malformed connection list")

func encodeConnList(infos []connInfo) []byte {
	b := make([]byte, 0, connListHeader+len(infos)*connInfoBytes)
	b = binary.LittleEndian.AppendUint32(b, connListMagic)
	b = binary.LittleEndian.AppendUint32(b, connListVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(infos)))
	for _, in := range infos {
		b = binary.LittleEndian.AppendUint32(b, uint32(in.tag))
		b = binary.LittleEndian.AppendUint64(b, in.size)
		b = binary.LittleEndian.AppendUint64(b, in.bufOffset)
		b = binary.LittleEndian.AppendUint64(b, in.sigOffset)
		b = append(b, in.buf[:]...)
		b = append(b, in.sig[:]...)
	}
	return b
}

func decodeConnList(b []byte) ([]connInfo, error) {
	if len(b) < connListHeader || len(b) > maxConnListBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadConnList, len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != connListMagic {
		return nil, fmt.Errorf("%w: magic %#x", ErrBadConnList, m)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != connListVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadConnList, v, connListVersion)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if uint64(len(b)) != connListHeader+uint64(n)*connInfoBytes {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrBadConnList, n, len(b))
	}
	infos := make([]connInfo, n)
	p := b[connListHeader:]
	for i := range infos {
		in := &infos[i]
		in.tag = int32(binary.LittleEndian.Uint32(p))
		in.size = binary.LittleEndian.Uint64(p[4:])
		in.bufOffset = binary.LittleEndian.Uint64(p[12:])
		in.sigOffset = binary.LittleEndian.Uint64(p[20:])
		copy(in.buf[:], p[28:])
		copy(in.sig[:], p[28+cuda.IpcMemHandleSize:])
		p = p[connInfoBytes:]
	}
	return infos, nil
}

// matchConnections pairs this rank's connections to peer (their tags, in declaration order)
// with the list the peer sent, and returns the peer's entry for each of ours. Every connection
// must have exactly one counterpart, on both sides.
func matchConnections(rank, peer int, tags []int, theirs []connInfo) ([]connInfo, error) {
	byTag := make(map[int]connInfo, len(theirs))
	for _, in := range theirs {
		if _, dup := byTag[int(in.tag)]; dup {
			return nil, fmt.Errorf("%w: rank %d listed tag %d twice", ErrBadConnList, peer, in.tag)
		}
		byTag[int(in.tag)] = in
	}
	matched := make([]connInfo, len(tags))
	for i, tag := range tags {
		in, ok := byTag[tag]
		if !ok {
			return nil, fmt.Errorf("rank %d declared a connection (remote rank %d, tag %d) but rank %d declared none to rank %d with tag %d: %w",
				rank, peer, tag, peer, rank, tag, ErrNoCounterpart)
		}
		matched[i] = in
		delete(byTag, tag)
	}
	for tag := range byTag {
		return nil, fmt.Errorf("rank %d declared a connection (remote rank %d, tag %d) but rank %d declared none to rank %d with tag %d: %w",
			peer, rank, tag, rank, peer, tag, ErrNoCounterpart)
	}
	return matched, nil
}
