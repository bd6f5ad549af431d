package core

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// GPU memory over libfabric, staged through host buffers. The providers this library meets
// first (tcp, shm) cannot reach GPU memory, so a connection of GPU endpoints over them moves its
// bytes through page-locked host memory on both sides:
//
//   - The sender copies each chunk of its GPU memory into a slot of its send ring and writes it
//     with the provider's RMA writes (cut into posts as host memory's writes are) into the same
//     slot of a landing ring that the receiver keeps for this link, then sends a small "landed"
//     message naming the slot and where the bytes go. The provider orders the message after the
//     writes (FI_ORDER_SAW), so the bytes are there when the message is handled.
//   - The receiver's message handler starts the copy from the landing slot into the GPU memory;
//     once the copy has completed it gives the slot back by writing the count of slots freed into
//     the sender's control words. The sender waits for a free slot only when all are in flight,
//     so the network streams while the copy engines work at both ends.
//   - A signal (writeValue) is a message too, applied after the landed data before it (messages
//     are handled in the order sent, and the copies run in that order).
//   - The first write of a link sends a "hello" message with the sender's address and control
//     words; the receiver allocates the landing ring, registers it and writes its address and key
//     into the control words.
//
// A peer's GPU memory is named by a key of the receiver's table of staged memory
// (fabricNet.staged), never by an address, and every message is checked against that table, and
// against the landing ring it names, before a byte is copied.

// A staged message: a header, little-endian, then a payload that depends on the kind.
//
//	magic uint32 | op uint32 | key uint64 | offset uint64 | arg uint64
//
// stagedLanded: key and offset name where the bytes go, arg is how many; the payload is the ring
// id and the slot (uint64 each). stagedValue: the 8-byte value arg is stored at offset of key's
// memory; no payload. stagedHello: key is the ring id the sender chose, arg the length of the
// sender's address; the payload is the control words' address and key (uint64 each), then the
// address.
const (
	stagedMagic       = 0x5347534d // "MSGS"
	stagedHeaderBytes = 32
	stagedLanded      = 1
	stagedValue       = 2
	stagedHello       = 3
	// stagedChunkBytes: the most one landing slot carries.
	stagedChunkBytes = 1 << 20
	// stagedRingSlots: the landing ring of a link, chunks in flight from sender to receiver.
	stagedRingSlots = 8
	stagedMsgBytes  = stagedHeaderBytes + 16 + maxAddressBytes
	// stagedMaxLandings bounds the landing rings one endpoint makes for its peers' links (a
	// hello costs the receiver a ring), so that a stranger's hellos cannot exhaust its memory.
	stagedMaxLandings = 1024
	stagedRecvSlots   = 64 // messages a receiver takes at once
	stagedSendSlots   = 32 // messages a sender has in flight
	// stagedHandleMark, in byte 16 of a RegisteredMemory's handle, tells staged GPU memory (a key
	// of the owner's staged table) from host memory registered with the provider (its key).
	stagedHandleMark = 0x53
)

// The sender's control words, which the receiver writes: the landing slots it has freed so far,
// and its landing ring's address and key, then ringReady = the ring id.
const (
	controlFreed = iota * 8
	controlRingAddr
	controlRingKey
	controlRingReady
	controlBytes
)

// stagingCopier copies between GPU memory and host buffers for the staged path: gpuCopier on
// the GPUs of a Context; the tests on a machine without a GPU stand in host memory for it.
type stagingCopier interface {
	// toHost copies len(dst) bytes from src, memory of GPU device, into dst.
	toHost(dst []byte, src cuda.DevicePtr, device int) error
	// fromHost starts copying src into dst, memory of GPU device, after every copy it started
	// before (on any device); done reports whether this copy has completed, and src may change
	// only then. A nil done means the copy has completed already.
	fromHost(dst cuda.DevicePtr, src []byte, device int) (done func() (bool, error), err error)
}

// stagedRegion is GPU memory of this process that peers write into through the staged path.
type stagedRegion struct {
	addr   cuda.DevicePtr
	size   uint64
	device int
}

// hostBuffers allocates and frees page-locked host memory for the staged path: on the GPU that
// enabled it (cuMemHostAlloc, portable: the copy engine reads and writes it directly, where
// pageable memory costs the driver a second copy through buffers of its own), or anonymous
// mappings in the tests without a GPU.
type hostBuffers struct {
	alloc func(n uint64) (unsafe.Pointer, error)
	free  func(p unsafe.Pointer, n uint64) error
}

func hostBuffersOn(g *contextGPU) hostBuffers {
	if g == nil {
		return hostBuffers{
			alloc: func(n uint64) (unsafe.Pointer, error) {
				b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					return nil, fmt.Errorf("map %d bytes of host memory: %w", n, err)
				}
				return unsafe.Pointer(&b[0]), nil
			},
			free: func(p unsafe.Pointer, n uint64) error { return syscall.Munmap(unsafe.Slice((*byte)(p), n)) },
		}
	}
	return hostBuffers{
		alloc: func(n uint64) (p unsafe.Pointer, err error) {
			err = g.do(func() error { p, err = cuda.MemHostAlloc(int(n)); return err })
			return p, err
		},
		free: func(p unsafe.Pointer, _ uint64) error { return g.do(func() error { return cuda.MemFreeHost(p) }) },
	}
}

// hostRing is page-locked host memory registered with the endpoint: a link's send ring or
// control words, a receiver's landing ring.
type hostRing struct {
	base   unsafe.Pointer
	size   uint64
	region *fabric.Region
	bufs   hostBuffers
}

func (n *fabricNet) newHostRing(size uint64) (*hostRing, error) {
	p, err := n.bufs.alloc(size)
	if err != nil {
		return nil, err
	}
	r := &hostRing{base: p, size: size, bufs: n.bufs}
	if r.region, err = n.ep.Register(uint64(uintptr(p)), size); err != nil {
		return nil, errors.Join(err, n.bufs.free(p, size))
	}
	return r, nil
}

func (r *hostRing) bytes(off, n uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(r.base, off)), n)
}

func (r *hostRing) word(off uint64) *uint64 { return (*uint64)(unsafe.Add(r.base, off)) }

// deregister ends the ring's registration (before the endpoint closes); free frees its memory
// (once the endpoint no longer reads or writes it).
func (r *hostRing) deregister() error { return r.region.Deregister() }

func (r *hostRing) free() error { return r.bufs.free(r.base, r.size) }

// enableStaged turns on the endpoint's messages for staged GPU memory, once, with its host
// buffers allocated on g (hostBuffersOn). n.mu is not held.
func (n *fabricNet) enableStaged(g *contextGPU) error {
	n.stagedOnce.Do(func() {
		if !n.ep.SendsAfterWrites() {
			n.stagedErr = fmt.Errorf("%v does not order messages after writes (FI_ORDER_SAW), which staged GPU memory needs: %w", n.ep, ErrTransportUnavailable)
			return
		}
		n.bufs = hostBuffersOn(g)
		cfg := fabric.MessageConfig{
			SlotBytes: stagedMsgBytes, RecvSlots: stagedRecvSlots, SendSlots: stagedSendSlots,
			Handle: n.handleStaged, HandlerLabel: "staged GPU memory",
		}
		if g != nil { // page-locked message buffers too (cuMemFreeHost needs no size)
			cfg.Alloc, cfg.Free = n.bufs.alloc, func(p unsafe.Pointer) error { return n.bufs.free(p, 0) }
		}
		n.stagedErr = n.ep.EnableMessages(cfg)
		if n.stagedErr == nil {
			n.log.Info("libfabric transport: GPU memory staged through host buffers", "transport", n.transport,
				"provider", n.ep.Provider(), "chunk", stagedChunkBytes, "ringSlots", stagedRingSlots)
		}
	})
	return n.stagedErr
}

// registerStaged adds size bytes of GPU memory at ptr on device (whose state is g) to the table
// peers write into, and returns the handle they name it by: its key and size, and the staged mark.
func (n *fabricNet) registerStaged(ptr cuda.DevicePtr, size uint64, device int, g *contextGPU) (cuda.IpcMemHandle, error) {
	if err := n.enableStaged(g); err != nil {
		return cuda.IpcMemHandle{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.staged == nil {
		n.staged = map[uint64]stagedRegion{}
		n.nextStaged = rand.Uint64() >> 1 // keys of one context differ from another's
	}
	key := n.nextStaged
	n.nextStaged++
	n.staged[key] = stagedRegion{addr: ptr, size: size, device: device}
	var h cuda.IpcMemHandle
	binary.LittleEndian.PutUint64(h[:], key)
	binary.LittleEndian.PutUint64(h[8:], size)
	h[16] = stagedHandleMark
	return h, nil
}

// isStaged reports whether m is GPU memory reached through the staged path.
func isStaged(m RegisteredMemory) bool {
	return isFabric(m.transport) && m.handle[16] == stagedHandleMark
}

// stagedKey returns the key m's owner names it by, or an error if m is not staged GPU memory.
func stagedKey(m RegisteredMemory) (uint64, error) {
	if !isStaged(m) {
		return 0, fmt.Errorf("%v is not GPU memory registered for %v: %w", m, m.transport, errs.ErrInvalidArgument)
	}
	return binary.LittleEndian.Uint64(m.handle[:]), nil
}

// landing is a receiver's landing ring for one sending link.
type landing struct {
	ring    *hostRing
	copying []*bool                  // per landed chunk still held, in landing order: whether its copy has completed
	freed   uint64                   // chunks given back to the sender
	tell    func(freed uint64) error // writes freed into the sender's control words
}

// hello is a sender's request for a landing ring.
type hello struct {
	id      uint64
	control fabric.Remote // the sender's control words
	address []byte        // the sender's endpoint
}

// decodeHello reads a hello's ring id, address length and payload.
func decodeHello(id, addrLen uint64, payload []byte) (hello, error) {
	if addrLen == 0 || addrLen > maxAddressBytes || uint64(len(payload)) != 16+addrLen {
		return hello{}, fmt.Errorf("a staged hello with a %d-byte address and %d bytes of payload: %w", addrLen, len(payload), errs.ErrRemote)
	}
	return hello{id: id, address: payload[16:],
		control: fabric.Remote{Addr: binary.LittleEndian.Uint64(payload), Key: binary.LittleEndian.Uint64(payload[8:]), Size: controlBytes}}, nil
}

// handleStaged applies one staged message from a peer: it checks the header, the key and the
// range against the staged table (and a landed chunk's slot against its ring), and starts the
// copy of the data (or of the value) into GPU memory after the copies of the messages before it;
// done reports when the copy has completed, and, for landed data, gives the slot back. A hello
// makes a landing ring. A message it refuses (an ErrRemote) is logged and recorded (rejected),
// and the endpoint goes on.
func (n *fabricNet) handleStaged(msg []byte) (done func() (bool, error), err error) {
	defer func() {
		if errors.Is(err, errs.ErrRemote) {
			n.log.Warn("libfabric transport: refused a staged message", "transport", n.transport, "err", err)
			n.mu.Lock()
			if n.rejected == nil {
				n.rejected = err
			}
			n.mu.Unlock()
		}
	}()
	if len(msg) < stagedHeaderBytes || binary.LittleEndian.Uint32(msg) != stagedMagic {
		return nil, fmt.Errorf("a message of %d bytes that is not a staged one: %w", len(msg), errs.ErrRemote)
	}
	op := binary.LittleEndian.Uint32(msg[4:])
	key := binary.LittleEndian.Uint64(msg[8:])
	off := binary.LittleEndian.Uint64(msg[16:])
	arg := binary.LittleEndian.Uint64(msg[24:])
	payload := msg[stagedHeaderBytes:]
	if op == stagedHello {
		return nil, n.openLanding(key, arg, payload)
	}
	n.mu.Lock()
	r, ok := n.staged[key]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("a staged message for key %#x, which names no GPU memory registered here: %w", key, errs.ErrRemote)
	}
	var src []byte
	var from *landing
	switch op {
	case stagedLanded:
		if len(payload) != 16 {
			return nil, fmt.Errorf("a landed chunk's message with %d bytes of payload, not 16: %w", len(payload), errs.ErrRemote)
		}
		id, slot := binary.LittleEndian.Uint64(payload), binary.LittleEndian.Uint64(payload[8:])
		n.mu.Lock()
		from = n.landings[id]
		n.mu.Unlock()
		switch {
		case from == nil:
			return nil, fmt.Errorf("a landed chunk for ring %#x, which is no landing ring here: %w", id, errs.ErrRemote)
		case slot >= stagedRingSlots || arg == 0 || arg > stagedChunkBytes:
			return nil, fmt.Errorf("a landed chunk of %d bytes in slot %d (rings have %d slots of %d bytes): %w", arg, slot, stagedRingSlots, stagedChunkBytes, errs.ErrRemote)
		}
		src = from.ring.bytes(slot*stagedChunkBytes, arg)
	case stagedValue:
		if len(payload) != 0 {
			return nil, fmt.Errorf("a staged value with %d bytes of data: %w", len(payload), errs.ErrRemote)
		}
		src = msg[24:32] // the value, little-endian as the GPU's words are; copied from the message's buffer
	default:
		return nil, fmt.Errorf("a staged message of unknown kind %d: %w", op, errs.ErrRemote)
	}
	if off > r.size || uint64(len(src)) > r.size-off {
		return nil, fmt.Errorf("a staged message writes %d bytes at offset %d of %d bytes of GPU memory: %w", len(src), off, r.size, errs.ErrRemote)
	}
	copied, err := n.copier.fromHost(r.addr+cuda.DevicePtr(off), src, r.device)
	if err != nil || from == nil {
		return copied, err
	}
	// A landed chunk: its slot goes back to the sender once its copy and those before it are done.
	complete := new(bool)
	n.mu.Lock()
	from.copying = append(from.copying, complete)
	n.mu.Unlock()
	if copied == nil {
		*complete = true
		return nil, n.giveBack(from)
	}
	return func() (bool, error) {
		if *complete {
			return true, nil
		}
		ok, err := copied()
		if err != nil || !ok {
			return false, err
		}
		*complete = true
		return true, n.giveBack(from)
	}, nil
}

// giveBack tells the sender of l how many of its chunks have been copied out of the landing ring:
// the leading run of completed copies, in landing order.
func (n *fabricNet) giveBack(l *landing) error {
	n.mu.Lock()
	k := 0
	for k < len(l.copying) && *l.copying[k] {
		k++
	}
	l.copying = l.copying[k:]
	l.freed += uint64(k)
	freed := l.freed
	n.mu.Unlock()
	if k == 0 {
		return nil
	}
	return l.tell(freed)
}

// openLanding answers a sender's hello (ring id, address length and payload): it makes the
// landing ring and writes the ring's address and key into the sender's control words.
func (n *fabricNet) openLanding(id, addrLen uint64, payload []byte) error {
	h, err := decodeHello(id, addrLen, payload)
	if err != nil {
		return err
	}
	n.mu.Lock()
	_, dup := n.landings[h.id]
	count := len(n.landings)
	n.mu.Unlock()
	switch {
	case dup:
		return fmt.Errorf("a staged hello for ring %#x, which exists: %w", h.id, errs.ErrRemote)
	case count >= stagedMaxLandings:
		return fmt.Errorf("a staged hello when %d landing rings (of %d MiB each) exist already: %w", count, stagedRingSlots*stagedChunkBytes>>20, errs.ErrRemote)
	}
	p, err := n.peer(string(h.address))
	if err != nil {
		return fmt.Errorf("a staged hello's address: %w: %w", errs.ErrRemote, err)
	}
	ring, err := n.newHostRing(stagedRingSlots * stagedChunkBytes)
	if err != nil {
		return fmt.Errorf("landing ring for a staged link: %w", err)
	}
	l := &landing{ring: ring, tell: func(freed uint64) error { return n.ep.WriteValue(p.peer, h.control, controlFreed, freed) }}
	n.mu.Lock()
	if n.landings == nil {
		n.landings = map[uint64]*landing{}
	}
	n.landings[h.id] = l
	n.mu.Unlock()
	at := ring.region.Remote()
	for _, w := range []struct{ off, value uint64 }{{controlRingAddr, at.Addr}, {controlRingKey, at.Key}, {controlRingReady, h.id}} {
		if err := n.ep.WriteValue(p.peer, h.control, w.off, w.value); err != nil {
			return fmt.Errorf("answer a staged hello: %w", err)
		}
	}
	return nil
}

// rejection returns the first staged message this endpoint refused, or nil.
func (n *fabricNet) rejection() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rejected
}

// stagedLink is the data path of a connection of GPU endpoints over libfabric: chunks written
// through a send ring into the peer's landing ring for this link, and staged messages, on the
// context's endpoint.
type stagedLink struct {
	net  *fabricNet
	peer fabric.Peer

	mu      sync.Mutex
	id      uint64        // the ring id the peer knows this link's landing ring by
	send    *hostRing     // stagedRingSlots chunks: what the GPU's bytes are copied into
	control *hostRing     // the words the peer writes (controlFreed, ...)
	landing fabric.Remote // the peer's landing ring, once opened
	opened  bool          // the peer has answered the hello
	openErr error         // why the hello failed: the link is unusable (a late answer could name another ring)
	sent    uint64        // chunks written so far
}

// registerStaged registers size bytes of device memory at ptr on GPU ordinal: peers write into
// it through the staged path. c.mu is held.
func (l libfabric) registerStaged(c *Context, ptr cuda.DevicePtr, size uint64, ordinal int) (RegisteredMemory, error) {
	g, err := c.gpu(ordinal)
	if err != nil {
		return RegisteredMemory{}, err
	}
	var base cuda.DevicePtr
	if err := g.do(func() error {
		var err error
		base, err = allocationBase(ptr, size)
		return err
	}); err != nil {
		return RegisteredMemory{}, fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	n, err := c.fabric(l.t, ordinal)
	if err != nil {
		return RegisteredMemory{}, err
	}
	h, err := n.registerStaged(ptr, size, ordinal, g)
	if err != nil {
		return RegisteredMemory{}, err
	}
	return RegisteredMemory{
		data: ptr, size: size, transport: l.t, origin: thisProcess(), device: ordinal,
		addr: ptr, handle: h, offset: uint64(ptr - base), mappedOn: notMapped,
	}, nil
}

// connectStaged adds the remote endpoint's address and returns a staged data path to it from
// this process's GPU whose state is g.
func (n *fabricNet) connectStaged(remote Endpoint, g *contextGPU) (link, error) {
	if err := n.enableStaged(g); err != nil {
		return nil, err
	}
	p, err := n.peer(remote.address)
	if err != nil {
		return nil, err
	}
	return &stagedLink{net: n, peer: p.peer}, nil
}

func putStagedHeader(buf []byte, op uint32, key, off, arg uint64) {
	binary.LittleEndian.PutUint32(buf, stagedMagic)
	binary.LittleEndian.PutUint32(buf[4:], op)
	binary.LittleEndian.PutUint64(buf[8:], key)
	binary.LittleEndian.PutUint64(buf[16:], off)
	binary.LittleEndian.PutUint64(buf[24:], arg)
}

// open makes the link's rings and has the peer make its landing ring (the hello), waiting for
// its answer for at most MSCCLPP_NET_TIMEOUT. l.mu is held.
func (l *stagedLink) open() error {
	n := l.net
	addr, err := n.ep.Address()
	if err != nil {
		return err
	}
	if l.control == nil {
		if l.control, err = n.newHostRing(controlBytes); err != nil {
			return err
		}
		for off := uint64(0); off < controlBytes; off += 8 {
			atomic.StoreUint64(l.control.word(off), 0)
		}
	}
	if l.send == nil {
		if l.send, err = n.newHostRing(stagedRingSlots * stagedChunkBytes); err != nil {
			return err
		}
	}
	l.id = rand.Uint64() | 1 // never 0, which ringReady holds until the answer
	at := l.control.region.Remote()
	if err := n.ep.Send(l.peer, func(buf []byte) (int, error) {
		putStagedHeader(buf, stagedHello, l.id, 0, uint64(len(addr)))
		binary.LittleEndian.PutUint64(buf[stagedHeaderBytes:], at.Addr)
		binary.LittleEndian.PutUint64(buf[stagedHeaderBytes+8:], at.Key)
		return stagedHeaderBytes + 16 + copy(buf[stagedHeaderBytes+16:], addr), nil
	}); err != nil {
		return fmt.Errorf("staged link: hello: %w", err)
	}
	if err := l.await(func() bool { return atomic.LoadUint64(l.control.word(controlRingReady)) == l.id }, "the peer's landing ring"); err != nil {
		return err
	}
	l.landing = fabric.Remote{Addr: atomic.LoadUint64(l.control.word(controlRingAddr)), Key: atomic.LoadUint64(l.control.word(controlRingKey)),
		Size: stagedRingSlots * stagedChunkBytes}
	return nil
}

// await progresses the endpoint until ready() holds, for at most MSCCLPP_NET_TIMEOUT.
func (l *stagedLink) await(ready func() bool, what string) error {
	deadline := time.Now().Add(config.NetTimeout.Get())
	for !ready() {
		if err := l.net.poll(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("staged link: waited %v (MSCCLPP_NET_TIMEOUT) for %s; does the peer still progress?: %w",
				config.NetTimeout.Get(), what, fabric.ErrTimedOut)
		}
	}
	return nil
}

func (l *stagedLink) write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error {
	key, err := stagedKey(dst)
	if err != nil {
		return err
	}
	if !isStaged(src) || !src.origin.sameProcess(thisProcess()) {
		return fmt.Errorf("source %v is not GPU memory of this process registered for %v: %w", src, l.net.transport, errs.ErrInvalidArgument)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		if l.openErr == nil {
			l.openErr = l.open()
		}
		if l.openErr != nil {
			return l.openErr
		}
		l.opened = true
	}
	ep := l.net.ep
	for done := uint64(0); done < n; {
		chunk := min(n-done, stagedChunkBytes)
		if err := l.await(func() bool { return l.sent-atomic.LoadUint64(l.control.word(controlFreed)) < stagedRingSlots }, "a free landing slot"); err != nil {
			return err
		}
		slot := l.sent % stagedRingSlots
		if err := l.net.copier.toHost(l.send.bytes(slot*stagedChunkBytes, chunk), src.data+cuda.DevicePtr(srcOff+done), src.device); err != nil {
			return err
		}
		if err := ep.Write(l.peer, l.send.region, slot*stagedChunkBytes, l.landing, slot*stagedChunkBytes, chunk); err != nil {
			return err
		}
		if err := ep.Send(l.peer, func(buf []byte) (int, error) {
			putStagedHeader(buf, stagedLanded, key, dstOff+done, chunk)
			binary.LittleEndian.PutUint64(buf[stagedHeaderBytes:], l.id)
			binary.LittleEndian.PutUint64(buf[stagedHeaderBytes+8:], slot)
			return stagedHeaderBytes + 16, nil
		}); err != nil {
			return err
		}
		l.sent++
		done += chunk
	}
	return nil
}

func (l *stagedLink) writeValue(dst RegisteredMemory, dstOff, value uint64) error {
	key, err := stagedKey(dst)
	if err != nil {
		return err
	}
	return l.net.ep.Send(l.peer, func(buf []byte) (int, error) {
		putStagedHeader(buf, stagedValue, key, dstOff, value)
		return stagedHeaderBytes, nil
	})
}

// flushed reports whether every write and message has left: the source bytes were copied into
// the send ring when they were queued, so the source may be reused once write returns, and the
// peer applies the data before any later signal.
func (l *stagedLink) flushed() (bool, error) { return l.net.drained() }

// landingMark is the count of chunks written so far.
func (l *stagedLink) landingMark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// landed reports whether the first mark chunks are in the peer's GPU memory: the peer gives a
// landing slot back only once its copy out of the slot has completed, and in order.
func (l *stagedLink) landed(mark uint64) (bool, error) {
	if err := l.net.poll(); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.opened || l.control == nil || atomic.LoadUint64(l.control.word(controlFreed)) >= mark, nil
}

// close gives the link's rings back to the endpoint's owner: they are released when the
// endpoint closes (a write of the ring may still be in flight now).
func (l *stagedLink) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.net.retire(l.send, l.control)
	l.send, l.control = nil, nil
	return nil
}

// gpuCopier is the stagingCopier of a Context: driver copies on the GPU's stream, with its
// context current. A copy out of GPU memory completes before toHost returns (the chunk is written
// next); a copy into GPU memory only starts (fromHost), so that the receiver's network work goes on
// while the copy engine works, and the landing slot (or the value's message buffer) is given back
// once the copy's event has completed.
type gpuCopier struct {
	c *Context
	// last is the GPU of the latest copy into GPU memory (only the goroutine that delivers
	// messages copies into GPU memory, one at a time): a copy for another GPU first waits for
	// that one's stream, so that copies land in the order of their messages across GPUs too.
	last *contextGPU
}

func (k *gpuCopier) gpu(device int) (*contextGPU, error) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	return k.c.gpu(device)
}

func (k *gpuCopier) toHost(dst []byte, src cuda.DevicePtr, device int) error {
	g, err := k.gpu(device)
	if err != nil {
		return err
	}
	return g.do(func() error {
		if err := cuda.MemcpyAsync(hostPtr(dst), src, len(dst), g.stream); err != nil {
			return err
		}
		return g.stream.Synchronize()
	})
}

func (k *gpuCopier) fromHost(dst cuda.DevicePtr, src []byte, device int) (func() (bool, error), error) {
	g, err := k.gpu(device)
	if err != nil {
		return nil, err
	}
	if last := k.last; last != nil && last != g {
		if err := last.do(last.stream.Synchronize); err != nil {
			return nil, err
		}
	}
	k.last = g
	var ev cuda.Event
	err = g.do(func() error {
		if err := cuda.MemcpyAsync(dst, hostPtr(src), len(src), g.stream); err != nil {
			return err
		}
		var err error
		if ev, err = cuda.NewEvent(); err != nil {
			return err
		}
		if err := ev.Record(g.stream); err != nil {
			return errors.Join(err, ev.Destroy())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	finished := false
	return func() (bool, error) {
		if finished {
			return true, nil
		}
		err := g.do(func() error {
			ok, err := ev.Done()
			if err != nil || ok {
				finished = true
				return errors.Join(err, ev.Destroy())
			}
			return nil
		})
		return finished, err
	}, nil
}

// hostPtr is the address of b's first byte (host memory that does not move: C allocations).
func hostPtr(b []byte) cuda.DevicePtr { return cuda.DevicePtr(uintptr(unsafe.Pointer(&b[0]))) }

// proxyRoute carries one proxy connection's puts and signals over a libfabric connection of GPU
// endpoints (proxy.Route): puts from src into dst, signals into the 8-byte word at signalOffset of
// signal, all through the connection's staged link.
type proxyRoute struct {
	conn             *Connection
	dst, src, signal RegisteredMemory
	signalOffset     uint64
}

// NewProxyRoute returns the proxy route of a port channel on sema, whose connection is a
// libfabric one of GPU endpoints, from src (this side's memory) to dst (the peer's); its signals
// go into the peer's inbound token of sema.
func NewProxyRoute(sema *Semaphore, dst, src RegisteredMemory) (proxy.Route, error) {
	if sema == nil {
		return nil, fmt.Errorf("proxy route: nil semaphore: %w", errs.ErrInvalidArgument)
	}
	return NewConnectionRoute(sema.conn, dst, src, sema.remote.token, 0)
}

// NewConnectionRoute returns a proxy route over conn, a libfabric connection of GPU endpoints:
// puts from src (this side's memory; CUDA IPC registrations are registered again for the
// network) into dst (the peer's), and signals stored into the word at signalOffset of signal
// (the peer's memory). The legacy API's IB connections use it with the peer's signal counters.
func NewConnectionRoute(conn *Connection, dst, src, signal RegisteredMemory, signalOffset uint64) (proxy.Route, error) {
	if conn == nil {
		return nil, fmt.Errorf("proxy route: nil connection: %w", errs.ErrInvalidArgument)
	}
	if _, ok := conn.link.(*stagedLink); !ok {
		return nil, fmt.Errorf("proxy route on %v: only libfabric connections of GPU endpoints take one (CUDA IPC maps the peer's memory): %w",
			conn, errs.ErrInvalidArgument)
	}
	if !isStaged(src) && src.origin.sameProcess(thisProcess()) { // registered for CUDA IPC: stage it too
		var err error
		if src, err = conn.ctx.RegisterMemory(src.addr, src.size, conn.local.config.Transport); err != nil {
			return nil, fmt.Errorf("proxy route on %v: source: %w", conn, err)
		}
	}
	for _, m := range []RegisteredMemory{dst, src, signal} {
		if _, err := stagedKey(m); err != nil {
			return nil, fmt.Errorf("proxy route on %v: %w", conn, err)
		}
	}
	if signalOffset > signal.size || signal.size-signalOffset < 8 {
		return nil, fmt.Errorf("proxy route on %v: signal word at offset %d of %d bytes: %w", conn, signalOffset, signal.size, errs.ErrInvalidArgument)
	}
	return &proxyRoute{conn: conn, dst: dst, src: src, signal: signal, signalOffset: signalOffset}, nil
}

func (r *proxyRoute) Put(dstOffset, srcOffset, n uint64) error {
	return r.conn.Write(r.dst, dstOffset, r.src, srcOffset, n)
}

func (r *proxyRoute) Signal(value uint64) error {
	return r.conn.UpdateAndSync(r.signal, r.signalOffset, value)
}

func (r *proxyRoute) Drain() error {
	ctx, cancel := context.WithTimeout(context.Background(), config.NetTimeout.Get())
	defer cancel()
	return r.conn.Flush(ctx)
}
