package collectives

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"structs"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Zero-copy limits, mirrored by kernels/src/common.cuh.
const (
	maxRegistrations = 256 // coll::kMaxRegistrations: the registration table's rows
	maxZeroCopyPeers = 63  // coll::kMaxZeroCopyPeers: more peers run through the scratch
	descShift        = 48  // coll::kDescShift: descriptor = (registration + 1) << descShift | offset
	descWords        = 2   // coll::kDescWords: a send and a receive descriptor per rank and block
	// registrationTag is the first memory tag the registrations use on the core.Communicator
	// (registration k uses registrationTag + k; the scratch uses tag 0).
	registrationTag = 1
)

// Registration is a buffer registered for zero-copy collectives by (*Comm).Register.
type Registration struct {
	c      *Comm
	index  int // its row in the registration table: the same on every rank
	ptr    cuda.DevicePtr
	size   uint64
	buffer uint64                  // the driver's buffer id of ptr's allocation when it was registered
	peers  []core.RegisteredMemory // the peers' buffers, mapped here
	closed bool                    // guarded by c.mu
	// copyEngine: the registration's port channels are bound to its buffers (ports.go), so
	// AllGather and AllReduce may run through the copy engines. Guarded by c.mu.
	copyEngine bool
}

// registrationEntry mirrors coll::Registration: one rank's buffer of a registration as this rank
// reaches it.
type registrationEntry struct {
	_    structs.HostLayout
	Base uint64 // its address in this process
	Size uint64 // its bytes; 0 for a free row
}

// Register registers size bytes of device memory at ptr (on the Comm's GPU, allocated with
// cuMemAlloc / cudaMalloc) for zero-copy collectives: from then on, a large AllReduce whose send
// and receive buffers lie in registered buffers, or a large AllGather whose receive buffer does,
// moves data straight between the ranks' buffers instead of through the scratch buffers.
//
// Collective: every rank registers its own buffer, in the same order, and the k-th registration
// of every rank is one logical buffer (sizes and offsets may differ between ranks). A call uses
// registered buffers only where every rank's are registered; a rank that thinks otherwise makes
// the call fail on the GPU (the kernel traps), never write astray. Registrations must not
// overlap. Close the registration before freeing the buffer; a call that finds the buffer freed
// and allocated again returns an error.
//
// Allocate buffers for the copy-engine algorithms in multiples of 2 MiB: the copy engines write
// into a peer's allocation of any other size at about four fifths of their speed (Register logs
// it at level info).
func (c *Comm) Register(ctx context.Context, ptr cuda.DevicePtr, size uint64) (*Registration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	what := fmt.Sprintf("register %d bytes at %#x for collectives", size, uint64(ptr))
	if c.closed {
		return nil, fmt.Errorf("%s: %w", what, ErrClosed)
	}
	if c.span != nil {
		return nil, fmt.Errorf("%s: %w", what, ErrAcrossHosts)
	}
	if ptr == 0 || size == 0 {
		return nil, fmt.Errorf("%s: NULL pointer or size 0: %w", what, errs.ErrInvalidArgument)
	}
	if r := c.registrationOverlapping(ptr, size); r != nil {
		return nil, fmt.Errorf("%s: overlaps registration %d (%d bytes at %#x): %w",
			what, r.index, r.size, uint64(r.ptr), errs.ErrInvalidArgument)
	}
	index := -1
	for k, r := range c.regSlots {
		if r == nil {
			index = k
			break
		}
	}
	if index < 0 {
		return nil, fmt.Errorf("%s: all %d registrations are in use: %w", what, maxRegistrations, errs.ErrInvalidUsage)
	}
	r := &Registration{c: c, index: index, ptr: ptr, size: size}
	var err error
	var allocBytes int
	err = c.onGPU(func() (err error) {
		if r.buffer, err = cuda.PointerBufferID(ptr); err != nil {
			return err
		}
		_, allocBytes, err = cuda.MemGetAddressRange(ptr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	row, err := c.exchangeRegistration(ctx, r)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s (registration %d): %w", what, index, err), r.unmapPeers())
	}
	err = c.onGPU(func() error {
		if c.regTable == 0 {
			n := maxRegistrations * c.nRanks * int(unsafe.Sizeof(registrationEntry{}))
			var err error
			if c.regTable, err = c.alloc(n); err != nil {
				return fmt.Errorf("registration table: %w", err)
			}
			c.args.Regs = uintptr(c.regTable)
		}
		return c.writeRegistrationRow(index, row)
	})
	if err == nil {
		if err = c.ports.bind(r, row); err != nil {
			free := make([]registrationEntry, c.nRanks)
			err = errors.Join(err, c.onGPU(func() error { return c.writeRegistrationRow(index, free) }))
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", what, err), r.unmapPeers())
	}
	c.regSlots[index] = r
	c.regs = append(c.regs, r)
	sort.Slice(c.regs, func(i, j int) bool { return c.regs[i].ptr < c.regs[j].ptr })
	c.log.Debug("registered buffer", "registration", index, "ptr", fmt.Sprintf("%#x", uint64(ptr)), "bytes", size)
	if c.ports != nil && allocBytes%peerAllocAlign != 0 {
		c.log.Info("registered buffer's allocation is not a multiple of 2 MiB: the copy engines write into it at about four fifths of their speed",
			"registration", index, "allocationBytes", allocBytes)
	}
	return r, nil
}

// exchangeRegistration sends r to every peer and receives theirs (mapped here): the row of the
// registration table, indexed by rank. A peer that registers under another index uses another
// tag, so the exchange fails at ctx's end instead of pairing different registrations. c.mu is held.
func (c *Comm) exchangeRegistration(ctx context.Context, r *Registration) ([]registrationEntry, error) {
	mine, err := c.comm.Context().RegisterMemory(r.ptr, r.size, core.TransportP2P)
	if err != nil {
		return nil, err
	}
	theirs, err := c.exchangeMemory(ctx, mine, registrationTag+r.index)
	for peer, m := range theirs {
		if peer != c.rank && m.Size() > 0 {
			r.peers = append(r.peers, m)
		}
	}
	if err != nil {
		return nil, err
	}
	row := make([]registrationEntry, c.nRanks)
	for peer, m := range theirs {
		row[peer] = registrationEntry{Base: uint64(m.Data()), Size: m.Size()}
	}
	row[c.rank] = registrationEntry{Base: uint64(r.ptr), Size: r.size}
	return row, nil
}

// writeRegistrationRow uploads row as registration index's row of the table. The GPU's
// context is current and c.mu is held.
func (c *Comm) writeRegistrationRow(index int, row []registrationEntry) error {
	n := len(row) * int(unsafe.Sizeof(registrationEntry{}))
	at := c.regTable + cuda.DevicePtr(index*n)
	return upload(at, unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), n))
}

// Close drops the registration on this rank and unmaps the peers' buffers here: later calls
// move this buffer through the scratch. Like freeing the buffer, call it once the collectives
// that use it have finished (synchronize their streams). Local, but every rank should close its
// part between the same two calls (a call in which the ranks disagree fails on the GPU). A
// second Close returns an error.
func (r *Registration) Close() error {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	what := fmt.Sprintf("close registration %d (%d bytes at %#x)", r.index, r.size, uint64(r.ptr))
	if r.closed {
		return fmt.Errorf("%s: already closed: %w", what, errs.ErrInvalidUsage)
	}
	if c.closed {
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	r.closed = true
	c.regSlots[r.index] = nil
	for i, x := range c.regs {
		if x == r {
			c.regs = append(c.regs[:i], c.regs[i+1:]...)
			break
		}
	}
	// A zeroed row makes a kernel that still names this registration trap.
	row := make([]registrationEntry, c.nRanks)
	err := c.onGPU(func() error { return c.writeRegistrationRow(r.index, row) })
	if err = errors.Join(err, c.ports.unbind(r), r.unmapPeers()); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// unmapPeers releases the mappings of the peers' buffers.
func (r *Registration) unmapPeers() error {
	var errList []error
	for _, m := range r.peers {
		errList = append(errList, r.c.comm.Context().UnmapMemory(m))
	}
	r.peers = nil
	return errors.Join(errList...)
}

// Comm is the communicator the buffer is registered with.
func (r *Registration) Comm() *Comm { return r.c }

// Ptr and Size are the registered buffer.
func (r *Registration) Ptr() cuda.DevicePtr { return r.ptr }
func (r *Registration) Size() uint64        { return r.size }

// registrationOverlapping returns a registration sharing a byte with [ptr, ptr+size), or nil.
// c.mu is held.
func (c *Comm) registrationOverlapping(ptr cuda.DevicePtr, size uint64) *Registration {
	for _, r := range c.regs {
		if overlap(ptr, r.ptr, size, r.size) {
			return r
		}
	}
	return nil
}

// registrationHolding returns the registration holding [ptr, ptr+size), or nil: a binary search
// of the registrations, sorted by address and disjoint. c.mu is held.
func (c *Comm) registrationHolding(ptr cuda.DevicePtr, size uint64) *Registration {
	i := sort.Search(len(c.regs), func(i int) bool { return c.regs[i].ptr > ptr }) - 1
	if i < 0 {
		return nil
	}
	r := c.regs[i]
	if uint64(ptr-r.ptr) > r.size || size > r.size-uint64(ptr-r.ptr) {
		return nil
	}
	return r
}

// descriptor names the buffer at ptr for the kernels: (registration + 1) << descShift | offset
// (never 0, which the kernels refuse as "not set"). It
// checks first that the registered buffer was not freed (and allocated again) since: the
// driver's buffer id of the address must be the one registered. The GPU's context is current.
func (r *Registration) descriptor(ptr cuda.DevicePtr) (uint64, error) {
	id, err := cuda.PointerBufferID(r.ptr)
	if err != nil || id != r.buffer {
		return 0, fmt.Errorf("registration %d (%d bytes at %#x) outlived its buffer (freed, or freed and allocated again): close it before freeing: %w",
			r.index, r.size, uint64(r.ptr), errs.ErrInvalidUsage)
	}
	return uint64(r.index+1)<<descShift | uint64(ptr-r.ptr), nil
}
