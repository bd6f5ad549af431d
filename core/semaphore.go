package core

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// ErrBadSemaphoreStub: bytes given to UnmarshalSemaphoreStub are not a semaphore stub this
// version reads.
var ErrBadSemaphoreStub = errs.New(errs.ErrInvalidArgument, "malformed semaphore stub")

// SemaphoreStub is one side's half of a semaphore: its inbound token, 8 bytes of device memory
// on the connection's local GPU where the peer's signals land, registered for the peer to map,
// and the endpoint it belongs to. Exchange stubs with the peer (MarshalBinary,
// UnmarshalSemaphoreStub) and pass both to NewSemaphore. The token belongs to the connection's
// context and lives until the context is closed.
type SemaphoreStub struct {
	conn     *Connection // nil for a stub unmarshaled from the peer
	endpoint Endpoint    // the endpoint of the side that made the stub
	token    RegisteredMemory
}

// NewSemaphoreStub allocates a zeroed inbound token on conn's local GPU and registers it.
func NewSemaphoreStub(conn *Connection) (SemaphoreStub, error) {
	if conn == nil {
		return SemaphoreStub{}, fmt.Errorf("new semaphore stub: nil connection: %w", errs.ErrInvalidArgument)
	}
	c := conn.ctx
	what := fmt.Sprintf("new semaphore stub on %v", conn)
	t := conn.local.config.Transport
	if isFabric(t) && conn.local.config.Device.Type != DeviceGPU {
		return SemaphoreStub{}, fmt.Errorf("%s: semaphores over %v need GPU endpoints (host memory connections signal with UpdateAndSync): %w", what, t, errs.ErrInvalidArgument)
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return SemaphoreStub{}, fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dev := conn.local.config.Device.ID
	p, err := c.token(dev)
	if err != nil {
		return SemaphoreStub{}, fmt.Errorf("%s: %w", what, err)
	}
	tr, err := transportOf(t, what)
	if err != nil {
		return SemaphoreStub{}, err
	}
	m, err := tr.register(c, p, tokenBytes, dev) // over libfabric the peer signals it with staged messages
	if err != nil {
		return SemaphoreStub{}, fmt.Errorf("%s: %w", what, err)
	}
	return SemaphoreStub{conn: conn, endpoint: conn.local, token: m}, nil
}

// Endpoint returns the endpoint of the side that made the stub.
func (s SemaphoreStub) Endpoint() Endpoint { return s.endpoint }

// Wire format of a stub, little-endian: magic uint32 | version uint32 | endpoint (see
// Endpoint.MarshalBinary) | token (see RegisteredMemory.MarshalBinary).
const (
	stubMagic   = 0x5353534d // "MSSS"
	stubVersion = 1
	stubBytes   = 8 + endpointBytes + memoryBytes
)

// MarshalBinary encodes the stub for UnmarshalSemaphoreStub in the peer.
func (s SemaphoreStub) MarshalBinary() ([]byte, error) {
	if s.token.size == 0 {
		return nil, fmt.Errorf("marshal semaphore stub: the zero SemaphoreStub: %w", errs.ErrInvalidArgument)
	}
	b := make([]byte, 0, stubBytes)
	b = binary.LittleEndian.AppendUint32(b, stubMagic)
	b = binary.LittleEndian.AppendUint32(b, stubVersion)
	ep, _ := s.endpoint.MarshalBinary()
	b = append(b, ep...)
	return appendRegisteredMemory(b, s.token), nil
}

// decodeSemaphoreStub decodes a stub; its token is not mapped here.
func decodeSemaphoreStub(b []byte) (SemaphoreStub, error) {
	if len(b) != stubBytes {
		return SemaphoreStub{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadSemaphoreStub, len(b), stubBytes)
	}
	if v := binary.LittleEndian.Uint32(b); v != stubMagic {
		return SemaphoreStub{}, fmt.Errorf("%w: magic %#x", ErrBadSemaphoreStub, v)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != stubVersion {
		return SemaphoreStub{}, fmt.Errorf("%w: version %d, want %d", ErrBadSemaphoreStub, v, stubVersion)
	}
	ep, err := UnmarshalEndpoint(b[8 : 8+endpointBytes])
	if err != nil {
		return SemaphoreStub{}, fmt.Errorf("%w: %w", ErrBadSemaphoreStub, err)
	}
	m, err := decodeRegisteredMemory(b[8+endpointBytes:])
	if err != nil {
		return SemaphoreStub{}, fmt.Errorf("%w: %w", ErrBadSemaphoreStub, err)
	}
	if m.size != tokenBytes || m.addr%tokenBytes != 0 {
		return SemaphoreStub{}, fmt.Errorf("%w: token of %d bytes at %#x", ErrBadSemaphoreStub, m.size, uint64(m.addr))
	}
	return SemaphoreStub{endpoint: ep, token: m}, nil
}

// UnmarshalSemaphoreStub decodes the peer's stub. Its token is mapped by NewSemaphore, on the
// GPU of the connection it is paired with; ctx must be that connection's context.
func UnmarshalSemaphoreStub(ctx *Context, b []byte) (SemaphoreStub, error) {
	if ctx == nil {
		return SemaphoreStub{}, fmt.Errorf("unmarshal semaphore stub: nil context: %w", errs.ErrInvalidArgument)
	}
	s, err := decodeSemaphoreStub(b)
	if err != nil {
		return SemaphoreStub{}, err
	}
	if err := CheckTransport(s.token.transport, "unmarshal semaphore stub"); err != nil {
		return SemaphoreStub{}, err
	}
	if here := thisProcess(); !isFabric(s.token.transport) && !s.token.origin.sameHost(here) {
		return SemaphoreStub{}, fmt.Errorf("unmarshal semaphore stub of %v: it is on host %016x, this is host %016x: %w",
			s.endpoint, s.token.origin.host, here.host, ErrDifferentHost)
	}
	ctx.life.RLock()
	defer ctx.life.RUnlock()
	if ctx.closed {
		return SemaphoreStub{}, fmt.Errorf("unmarshal semaphore stub: %w", ErrContextClosed)
	}
	return s, nil
}

// Semaphore is one side of a semaphore between the two ends of a connection, built from this
// side's stub and the peer's. It holds four 8-byte device counters: this side's inbound token
// (the peer signals into it), the peer's inbound token mapped here (this side signals into it),
// and this side's outbound and expected-inbound counters. Memory channels use all four (GPU
// threads signal the peer directly); port channels use the inbound and expected counters, the
// peer's proxy signalling our inbound token through its RemoteInboundToken.
//
// The counters belong to the connection's context: Close returns the outbound and expected
// counters to it, and the context's Close frees everything. Nothing may use the semaphore's
// device handles after either.
type Semaphore struct {
	conn          *Connection
	local, remote SemaphoreStub
	remoteInbound cuda.DevicePtr
	outbound      cuda.DevicePtr
	expected      cuda.DevicePtr
	closeOnce     sync.Once
}

// NewSemaphore pairs local, made by NewSemaphoreStub in this process, with remote, the stub the
// peer made on the other end of local's connection, and maps the peer's inbound token here.
func NewSemaphore(local, remote SemaphoreStub) (*Semaphore, error) {
	if local.conn == nil {
		return nil, fmt.Errorf("new semaphore: the local stub must come from NewSemaphoreStub in this process: %w", errs.ErrInvalidArgument)
	}
	conn := local.conn
	what := fmt.Sprintf("new semaphore on %v", conn)
	if err := checkStubPair(conn, remote); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	c := conn.ctx
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return nil, fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dev := conn.local.config.Device.ID
	var remoteInbound cuda.DevicePtr // over libfabric the peer's token is signalled through the connection, not mapped
	if !isFabric(conn.local.config.Transport) {
		var err error
		if remoteInbound, err = c.usableOn(remote.token, dev); err != nil {
			return nil, fmt.Errorf("%s: map the peer's inbound token: %w", what, err)
		}
	}
	outbound, err := c.token(dev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	expected, err := c.token(dev)
	if err != nil {
		c.gpus[dev].tokens.put(outbound)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &Semaphore{conn: conn, local: local, remote: remote, remoteInbound: remoteInbound, outbound: outbound, expected: expected}, nil
}

// NewSemaphoreOn is NewSemaphore for a caller that kept its own stub in serialized form (the C
// API, where stubs are byte structs): local, decoded, is re-attached to conn after checking that
// it is conn's local end and was made by this process; a stub still attached must be conn's.
func NewSemaphoreOn(conn *Connection, local, remote SemaphoreStub) (*Semaphore, error) {
	if conn == nil {
		return nil, fmt.Errorf("new semaphore: nil connection: %w", errs.ErrInvalidArgument)
	}
	switch {
	case local.conn == conn:
	case local.conn != nil:
		return nil, fmt.Errorf("new semaphore on %v: the local stub was made for %v: %w", conn, local.conn, errs.ErrInvalidArgument)
	case local.endpoint.id != conn.local.id:
		return nil, fmt.Errorf("new semaphore on %v: the local stub belongs to %v, not to the connection's local end: %w",
			conn, local.endpoint, errs.ErrInvalidArgument)
	case !local.token.origin.sameProcess(thisProcess()):
		return nil, fmt.Errorf("new semaphore on %v: the local stub was made by another process: %w", conn, errs.ErrInvalidArgument)
	default:
		local.conn = conn
		local.token.data = local.token.addr // this process's own token
	}
	return NewSemaphore(local, remote)
}

// checkStubPair checks that remote was made by the peer of conn.
func checkStubPair(conn *Connection, remote SemaphoreStub) error {
	switch {
	case remote.token.size == 0:
		return fmt.Errorf("the remote stub is the zero SemaphoreStub: %w", errs.ErrInvalidArgument)
	case remote.endpoint.id != conn.remote.id:
		return fmt.Errorf("the remote stub belongs to %v, but the connection's peer is %v: %w", remote.endpoint, conn.remote, errs.ErrInvalidArgument)
	}
	return nil
}

// Connection returns the connection the semaphore belongs to.
func (s *Semaphore) Connection() *Connection { return s.conn }

// InboundToken returns this side's inbound token: the peer's signals land here.
func (s *Semaphore) InboundToken() cuda.DevicePtr { return s.local.token.data }

// RemoteInboundToken returns the peer's inbound token as mapped here: this side signals into it.
func (s *Semaphore) RemoteInboundToken() cuda.DevicePtr { return s.remoteInbound }

// OutboundToken returns this side's count of signals sent (local device memory).
func (s *Semaphore) OutboundToken() cuda.DevicePtr { return s.outbound }

// ExpectedInboundToken returns this side's count of signals waited for (local device memory).
func (s *Semaphore) ExpectedInboundToken() cuda.DevicePtr { return s.expected }

// Close returns the outbound and expected counters to the context for reuse; the inbound token
// stays, since the peer may still signal it, until the context is closed. It is idempotent.
func (s *Semaphore) Close() error {
	s.closeOnce.Do(func() {
		s.conn.ctx.releaseTokens(s.conn.local.config.Device.ID, s.outbound, s.expected)
	})
	return nil
}
