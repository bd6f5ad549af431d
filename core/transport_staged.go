package core

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// GPU memory over libfabric, staged through host buffers. The providers this library meets
// first (tcp, shm) cannot reach GPU memory, so a connection of GPU endpoints over them moves
// bytes as messages (fabric.Endpoint.Send): the sender copies each chunk of its GPU memory into
// a message buffer (host memory) and sends it, the receiver's message handler copies it into
// the destination GPU memory, and a signal (writeValue) is a message too, applied after the data
// before it, since messages are handled in the order sent. The copy into the next chunk's
// buffer overlaps the network's work on the chunks before it. A peer's GPU memory is named by a
// key of the receiver's table of staged memory (fabricNet.staged), never by an address, and every
// message is checked against that table before a byte is copied.

// A staged message: a header, little-endian, then for stagedData the chunk's bytes.
//
//	magic uint32 | op uint32 | key uint64 | offset uint64 | n (stagedData) or value (stagedValue) uint64
const (
	stagedMagic       = 0x5347534d // "MSGS"
	stagedHeaderBytes = 32
	stagedData        = 1 // n bytes for offset of key's memory follow
	stagedValue       = 2 // store the 8-byte value at offset of key's memory
	// stagedChunkBytes: the most data one message carries.
	stagedChunkBytes = 1 << 20
	stagedRecvSlots  = 8 // chunks a receiver takes at once
	stagedSendSlots  = 4 // chunks a sender has in flight
	// stagedHandleMark, in byte 16 of a RegisteredMemory's handle, tells staged GPU memory (a key
	// of the owner's staged table) from host memory registered with the provider (its key).
	stagedHandleMark = 0x53
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

// stagedRegion is GPU memory of this process that peers write into through staged messages.
type stagedRegion struct {
	addr   cuda.DevicePtr
	size   uint64
	device int
}

// enableStaged turns on the endpoint's messages for staged GPU memory, once, with message
// buffers in page-locked memory allocated on g (C memory when g is nil, as in the tests without
// a GPU): the copy engine reads and writes page-locked memory directly, where pageable memory
// costs the driver a second copy through buffers of its own. n.mu is not held.
func (n *fabricNet) enableStaged(g *contextGPU) error {
	n.stagedOnce.Do(func() {
		cfg := fabric.MessageConfig{
			SlotBytes: stagedHeaderBytes + stagedChunkBytes, RecvSlots: stagedRecvSlots, SendSlots: stagedSendSlots,
			HandleLater: n.handleStaged, HandlerLabel: "staged GPU memory",
		}
		if g != nil {
			cfg.Alloc = func(size uint64) (p unsafe.Pointer, err error) {
				err = g.do(func() error { p, err = cuda.MemHostAlloc(int(size)); return err })
				return p, err
			}
			cfg.Free = func(p unsafe.Pointer) error { return g.do(func() error { return cuda.MemFreeHost(p) }) }
		}
		n.stagedErr = n.ep.EnableMessages(cfg)
		if n.stagedErr == nil {
			n.log.Info("libfabric transport: GPU memory staged through host buffers", "transport", n.transport,
				"provider", n.ep.Provider(), "chunk", stagedChunkBytes)
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

// isStaged reports whether m is GPU memory reached through staged messages.
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

// handleStaged applies one staged message from a peer: it checks the header, the key and the
// range against the staged table, and starts the copy of the data (or of the value) into GPU
// memory, after the copies of the messages before it; done reports when the copy has read msg. A
// message it refuses (an ErrRemote) is logged and recorded (rejected), and the endpoint goes on.
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
	n.mu.Lock()
	r, ok := n.staged[key]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("a staged message for key %#x, which names no GPU memory registered here: %w", key, errs.ErrRemote)
	}
	var src []byte
	switch op {
	case stagedData:
		if arg != uint64(len(payload)) {
			return nil, fmt.Errorf("a staged message says %d bytes and carries %d: %w", arg, len(payload), errs.ErrRemote)
		}
		src = payload
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
	return n.copier.fromHost(r.addr+cuda.DevicePtr(off), src, r.device)
}

// rejection returns the first staged message this endpoint refused, or nil.
func (n *fabricNet) rejection() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rejected
}

// stagedLink is the data path of a connection of GPU endpoints over libfabric: staged messages
// to the peer on the context's endpoint.
type stagedLink struct {
	net  *fabricNet
	peer fabric.Peer
}

// registerStaged registers size bytes of device memory at ptr on GPU ordinal: peers write into
// it through staged messages. c.mu is held.
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
	peer, err := n.ep.AddPeer([]byte(remote.address))
	if err != nil {
		return nil, err
	}
	return &stagedLink{net: n, peer: peer}, nil
}

func putStagedHeader(buf []byte, op uint32, key, off, arg uint64) {
	binary.LittleEndian.PutUint32(buf, stagedMagic)
	binary.LittleEndian.PutUint32(buf[4:], op)
	binary.LittleEndian.PutUint64(buf[8:], key)
	binary.LittleEndian.PutUint64(buf[16:], off)
	binary.LittleEndian.PutUint64(buf[24:], arg)
}

func (l *stagedLink) write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error {
	key, err := stagedKey(dst)
	if err != nil {
		return err
	}
	if !isStaged(src) || !src.origin.sameProcess(thisProcess()) {
		return fmt.Errorf("source %v is not GPU memory of this process registered for %v: %w", src, l.net.transport, errs.ErrInvalidArgument)
	}
	for done := uint64(0); done < n; {
		chunk := min(n-done, stagedChunkBytes)
		err := l.net.ep.Send(l.peer, func(buf []byte) (int, error) {
			putStagedHeader(buf, stagedData, key, dstOff+done, chunk)
			if err := l.net.copier.toHost(buf[stagedHeaderBytes:stagedHeaderBytes+chunk], src.data+cuda.DevicePtr(srcOff+done), src.device); err != nil {
				return 0, err
			}
			return int(stagedHeaderBytes + chunk), nil
		})
		if err != nil {
			return err
		}
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

// flushed reports whether every message has left: the source bytes were copied into message
// buffers when they were queued, so the source may be reused once write returns, and the peer
// applies the data before any later signal.
func (l *stagedLink) flushed() (bool, error) {
	if err := l.net.ep.Progress(); err != nil {
		return false, err
	}
	return l.net.ep.Pending() == 0, nil
}

func (l *stagedLink) close() error { return nil }

// gpuCopier is the stagingCopier of a Context: driver copies on the GPU's stream, with its
// context current. A copy out of GPU memory completes before toHost returns (the message is sent
// next); a copy into GPU memory only starts (fromHost), so that the receiver's network work goes on
// while the copy engine works, and the message's buffer is given back once the copy's event has
// completed.
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
