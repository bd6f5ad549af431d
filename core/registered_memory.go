package core

import (
	"encoding/binary"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// ErrBadRegisteredMemory: bytes given to UnmarshalRegisteredMemory are not a registered memory
// this version reads.
var ErrBadRegisteredMemory = errs.New(errs.ErrInvalidArgument, "malformed registered memory")

// notMapped is RegisteredMemory.mappedOn for memory used at its own address.
const notMapped = -1

// RegisteredMemory is a range of GPU memory that peers can reach: made by Context.RegisterMemory
// in the process that owns the memory, or by UnmarshalRegisteredMemory in a process that maps it.
// It is a plain value; Data is valid in this process until the context that registered or mapped
// it is closed.
type RegisteredMemory struct {
	data      cuda.DevicePtr // the memory's address in this process
	size      uint64
	transport Transport

	// Where the memory lives, as its owner registered it.
	origin   origin
	device   int               // the owner's GPU ordinal, in the owner's numbering
	addr     cuda.DevicePtr    // the memory's address in the owner's process
	handle   cuda.IpcMemHandle // the IPC handle of the allocation holding it
	offset   uint64            // addr's offset in that allocation
	mappedOn int               // the GPU whose context maps it here, or notMapped
}

// Data returns the memory's address in this process: the registered pointer in the owner's
// process (and in any other user of the same process), the mapping elsewhere.
func (m RegisteredMemory) Data() cuda.DevicePtr { return m.data }

// Size returns the memory's size in bytes.
func (m RegisteredMemory) Size() uint64 { return m.size }

// Transports returns the transport the memory is registered for.
func (m RegisteredMemory) Transports() Transport { return m.transport }

func (m RegisteredMemory) String() string {
	if isStaged(m) {
		return fmt.Sprintf("%d bytes at %#x on GPU %d of pid %d (staged over %v)", m.size, uint64(m.addr), m.device, m.origin.pid, m.transport)
	}
	if isFabric(m.transport) {
		return fmt.Sprintf("%d bytes at %#x in host memory of pid %d (%v)", m.size, uint64(m.addr), m.origin.pid, m.transport)
	}
	return fmt.Sprintf("%d bytes at %#x on GPU %d of pid %d", m.size, uint64(m.addr), m.device, m.origin.pid)
}

// Wire format of a registered memory, little-endian, 128 bytes:
//
//	magic uint32 | version uint32 | transport uint32 | device int32 | pid uint32 | reserved uint32 |
//	host uint64 | process uint64 | addr uint64 | offset uint64 | size uint64 | handle [64]byte
const (
	memoryMagic   = 0x4d52534d // "MSRM"
	memoryVersion = 1
	memoryBytes   = 6*4 + 5*8 + cuda.IpcMemHandleSize
)

// RegisteredMemoryBytes is the length of RegisteredMemory.MarshalBinary's encoding.
const RegisteredMemoryBytes = memoryBytes

// MarshalBinary encodes the memory for UnmarshalRegisteredMemory in a peer. Memory that was
// itself unmarshaled encodes its owner's registration, so it can be passed on.
func (m RegisteredMemory) MarshalBinary() ([]byte, error) {
	if m.size == 0 {
		return nil, fmt.Errorf("marshal registered memory: the zero RegisteredMemory: %w", errs.ErrInvalidArgument)
	}
	return appendRegisteredMemory(make([]byte, 0, memoryBytes), m), nil
}

func appendRegisteredMemory(b []byte, m RegisteredMemory) []byte {
	b = binary.LittleEndian.AppendUint32(b, memoryMagic)
	b = binary.LittleEndian.AppendUint32(b, memoryVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.transport))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(m.device)))
	b = binary.LittleEndian.AppendUint32(b, m.origin.pid)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, m.origin.host)
	b = binary.LittleEndian.AppendUint64(b, m.origin.process)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.addr))
	b = binary.LittleEndian.AppendUint64(b, m.offset)
	b = binary.LittleEndian.AppendUint64(b, m.size)
	return append(b, m.handle[:]...)
}

// decodeRegisteredMemory decodes the owner's registration; the result is not mapped here.
func decodeRegisteredMemory(b []byte) (RegisteredMemory, error) {
	if len(b) != memoryBytes {
		return RegisteredMemory{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadRegisteredMemory, len(b), memoryBytes)
	}
	if v := binary.LittleEndian.Uint32(b); v != memoryMagic {
		return RegisteredMemory{}, fmt.Errorf("%w: magic %#x", ErrBadRegisteredMemory, v)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != memoryVersion {
		return RegisteredMemory{}, fmt.Errorf("%w: version %d, want %d", ErrBadRegisteredMemory, v, memoryVersion)
	}
	m := RegisteredMemory{
		transport: Transport(binary.LittleEndian.Uint32(b[8:])),
		device:    int(int32(binary.LittleEndian.Uint32(b[12:]))),
		origin: origin{
			pid:     binary.LittleEndian.Uint32(b[16:]),
			host:    binary.LittleEndian.Uint64(b[24:]),
			process: binary.LittleEndian.Uint64(b[32:]),
		},
		addr:     cuda.DevicePtr(binary.LittleEndian.Uint64(b[40:])),
		offset:   binary.LittleEndian.Uint64(b[48:]),
		size:     binary.LittleEndian.Uint64(b[56:]),
		mappedOn: notMapped,
	}
	copy(m.handle[:], b[64:])
	reserved := binary.LittleEndian.Uint32(b[20:])
	switch {
	case reserved != 0:
		return RegisteredMemory{}, fmt.Errorf("%w: reserved field %#x", ErrBadRegisteredMemory, reserved)
	case m.transport != TransportP2P && m.transport != TransportSHM && m.transport != TransportIB:
		return RegisteredMemory{}, fmt.Errorf("%w: unknown transport %d", ErrBadRegisteredMemory, int(m.transport))
	case m.device < 0 || m.device >= maxDeviceID:
		return RegisteredMemory{}, fmt.Errorf("%w: GPU %d", ErrBadRegisteredMemory, m.device)
	case m.size == 0 || m.addr == 0:
		return RegisteredMemory{}, fmt.Errorf("%w: %d bytes at %#x", ErrBadRegisteredMemory, m.size, uint64(m.addr))
	case uint64(m.addr)+m.size < uint64(m.addr):
		return RegisteredMemory{}, fmt.Errorf("%w: %d bytes at %#x wrap around", ErrBadRegisteredMemory, m.size, uint64(m.addr))
	case m.offset > uint64(m.addr):
		return RegisteredMemory{}, fmt.Errorf("%w: offset %d past address %#x", ErrBadRegisteredMemory, m.offset, uint64(m.addr))
	}
	return m, nil
}

// UnmarshalRegisteredMemory decodes memory a peer registered and makes it usable here. Memory of
// this very process is used at its own address, and every GPU ctx uses gains peer access to the
// memory's GPU where the hardware allows (cuIpcOpenMemHandle cannot open a process's own
// memory). Memory of another process on this host is mapped with cuIpcOpenMemHandle into the
// context of ctx's first GPU (or, if ctx has used none yet, the GPU with the owner's ordinal),
// once per allocation; ctx.Close unmaps it. Memory of another host, and transports other than
// CUDA IPC, are refused; corrupt input is refused with ErrBadRegisteredMemory.
func UnmarshalRegisteredMemory(ctx *Context, b []byte) (RegisteredMemory, error) {
	if ctx == nil {
		return RegisteredMemory{}, fmt.Errorf("unmarshal registered memory: nil context: %w", errs.ErrInvalidArgument)
	}
	m, err := decodeRegisteredMemory(b)
	if err != nil {
		return RegisteredMemory{}, err
	}
	what := "map registered memory (" + m.String() + ")"
	if err := CheckTransport(m.transport, what); err != nil {
		return RegisteredMemory{}, err
	}
	here := thisProcess()
	if m.transport == TransportIB || m.transport == TransportSHM && m.origin.sameHost(here) {
		// Reached by its key through the context's libfabric endpoint, never mapped: Data is
		// its address in this process only when this process owns it.
		if m.origin.sameProcess(here) {
			m.data = m.addr
		}
		return m, nil
	}
	if !m.origin.sameHost(here) {
		return RegisteredMemory{}, fmt.Errorf("%s: it is on host %016x, this is host %016x: %w", what, m.origin.host, here.host, ErrDifferentHost)
	}
	ctx.life.RLock()
	defer ctx.life.RUnlock()
	if ctx.closed {
		return RegisteredMemory{}, fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if m.origin.sameProcess(here) {
		m.data = m.addr
		ctx.reach(m.device)
		return m, nil
	}
	dev := ctx.home
	if dev < 0 {
		dev = m.device
	}
	if err := ctx.mapIPC(&m, dev); err != nil {
		return RegisteredMemory{}, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// mapIPC maps m, memory of another process, on GPU dev and sets its address. ctx.mu is held.
func (c *Context) mapIPC(m *RegisteredMemory, dev int) error {
	base, err := c.open(m.transport, m.handle, dev)
	if err != nil {
		return err
	}
	m.data = base + cuda.DevicePtr(m.offset)
	m.mappedOn = dev
	return nil
}

// reach gives every GPU the context uses peer access to GPU owner, where the hardware allows;
// the rest is left to the operations that need it (Connect, NewSemaphore) to report. c.mu is held.
func (c *Context) reach(owner int) {
	for dev, g := range c.gpus {
		if dev == owner {
			continue
		}
		if ok, err := g.dev.CanAccessPeer(cuda.Device(owner)); err == nil && ok {
			_ = c.enablePeerAccess(dev, owner)
		}
	}
}

// usableOn returns m's address for GPU dev of this context: m's own address (after enabling
// peer access from dev) for memory of this process, a mapping on dev otherwise. c.mu is held.
func (c *Context) usableOn(m RegisteredMemory, dev int) (cuda.DevicePtr, error) {
	here := thisProcess()
	if m.origin.sameProcess(here) {
		if err := c.enablePeerAccess(dev, m.device); err != nil {
			return 0, err
		}
		return m.addr, nil
	}
	if !m.origin.sameHost(here) {
		return 0, fmt.Errorf("%v is on host %016x, this is host %016x: %w", m, m.origin.host, here.host, ErrDifferentHost)
	}
	if m.mappedOn == dev {
		return m.data, nil
	}
	if err := c.mapIPC(&m, dev); err != nil {
		return 0, err
	}
	return m.data, nil
}
