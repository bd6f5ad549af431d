package legacy

import (
	"encoding/binary"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// connInfo is what one end of a connection tells the other during setup: the transport, its
// buffer and its signal pair, each as a core.RegisteredMemory in its wire form (which the peer
// opens with core.UnmarshalRegisteredMemory), and for IB the libfabric endpoint the peer connects
// to (zero for P2P).
type connInfo struct {
	tag       int32
	transport core.Transport
	buf       [core.RegisteredMemoryBytes]byte
	sig       [core.RegisteredMemoryBytes]byte
	endpoint  [core.EndpointBytes]byte
}

// Wire format of one rank's connection list for one peer, little-endian:
//
//	magic uint32 | version uint32 | count uint32 | count × (tag int32, transport uint32, buf, sig, endpoint)
//
// where buf and sig are RegisteredMemory.MarshalBinary's bytes and endpoint
// Endpoint.MarshalBinary's. Version 2 had neither transport nor endpoint (CUDA IPC only), version
// 1 carried raw CUDA IPC handles and offsets.
const (
	connListMagic    = 0x4e43534d // "MSCN"
	connListVersion  = 3
	connListHeader   = 12
	connInfoBytes    = 4 + 4 + 2*core.RegisteredMemoryBytes + core.EndpointBytes
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
		b = binary.LittleEndian.AppendUint32(b, uint32(in.transport))
		b = append(b, in.buf[:]...)
		b = append(b, in.sig[:]...)
		b = append(b, in.endpoint[:]...)
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
		in.transport = core.Transport(binary.LittleEndian.Uint32(p[4:]))
		if in.transport != core.TransportP2P && in.transport != core.TransportIB {
			return nil, fmt.Errorf("%w: entry %d: transport %d", ErrBadConnList, i, uint32(in.transport))
		}
		q := p[8:]
		q = q[copy(in.buf[:], q):]
		q = q[copy(in.sig[:], q):]
		copy(in.endpoint[:], q)
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
