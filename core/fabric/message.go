package fabric

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Messages are the endpoint's second way to move bytes, beside RMA writes: a message carries its
// bytes into a receive buffer of the peer, whose handler (MessageConfig.Handle) then acts on
// them, for transfers the peer must take part in (into memory the NIC cannot reach, such as GPU
// memory staged through host buffers). Messages from one endpoint to one peer are handled in the
// order they were sent; the endpoint must say that its provider keeps that order
// (MessagesOrdered).

// MessageConfig sizes an endpoint's message buffers and names what handles the messages that
// arrive.
type MessageConfig struct {
	SlotBytes uint64 // the largest message
	RecvSlots int    // receive buffers posted at once
	SendSlots int    // messages in flight at once from this endpoint
	// Handle handles one message. It may still read the message's buffer after it returns (a
	// copy engine copying out of it): done reports whether it has finished with the buffer, which
	// is posted for a new message only then (a nil done: at once). Messages are handed over in
	// order, without waiting for the earlier ones' done.
	Handle       func(msg []byte) (done func() (bool, error), err error)
	HandlerLabel string // names the handler in errors
	// Alloc, when set, allocates the message buffers (n bytes; they need not be zeroed) in place
	// of C memory: page-locked memory, say, which a GPU's copy engine reads and writes directly.
	// Free releases what Alloc returned, once the endpoint no longer uses it; both or neither.
	Alloc func(n uint64) (unsafe.Pointer, error)
	Free  func(p unsafe.Pointer) error
}

// Receive buffers are matched with messages in the order they were posted, but a provider may
// complete them out of that order (rxm completes a large message, which it fetches with a
// rendezvous, after a small one sent later): messages are delivered in posting order, the
// oldest posted buffer first, once it has arrived.

// messages is an endpoint's message buffers: C memory registered with the endpoint, RecvSlots
// receive buffers and SendSlots send buffers of SlotBytes each.
type messages struct {
	cfg       MessageConfig
	recvBase  unsafe.Pointer
	sendBase  unsafe.Pointer
	recv      *Region
	send      *Region
	posted    []uint64 // receive slots in the order they were posted, the oldest first (e.mu)
	arrived   []int64  // per receive slot: the bytes received, or -1 while it waits (e.mu)
	sendBusy  []bool   // send slot whose message has not completed (e.mu)
	sendNext  uint64   // the send slot tried next (e.mu)
	delivered uint64   // messages handed to the handler (e.deliver)
	held      []held   // receive slots whose messages the handler still reads (e.deliver)
}

// EnableMessages allocates and registers the endpoint's message buffers, posts the receive
// buffers, and from then on hands every message that arrives to cfg.Handle, in the order sent,
// from Progress and Flush (never from two goroutines at once). It may be called once.
func (e *Endpoint) EnableMessages(cfg MessageConfig) error {
	switch {
	case cfg.SlotBytes == 0 || cfg.RecvSlots <= 0 || cfg.SendSlots <= 0 || cfg.Handle == nil || (cfg.Alloc == nil) != (cfg.Free == nil):
		return fmt.Errorf("enable messages: %d-byte slots, %d receive and %d send slots, handler set %v, allocator %v, free %v: %w",
			cfg.SlotBytes, cfg.RecvSlots, cfg.SendSlots, cfg.Handle != nil, cfg.Alloc != nil, cfg.Free != nil, errs.ErrInvalidArgument)
	case cfg.SlotBytes > e.maxMsg:
		return fmt.Errorf("enable messages: %d-byte slots, but %v carries at most %d bytes a message: %w",
			cfg.SlotBytes, e, e.maxMsg, errs.ErrInvalidArgument)
	case !e.MessagesOrdered():
		return fmt.Errorf("enable messages: %v does not keep messages to a peer in order: %w", e, ErrUnavailable)
	}
	m := &messages{cfg: cfg, sendBusy: make([]bool, cfg.SendSlots), arrived: make([]int64, cfg.RecvSlots)}
	var err error
	if m.recvBase, err = m.alloc(uint64(cfg.RecvSlots) * cfg.SlotBytes); err == nil {
		m.sendBase, err = m.alloc(uint64(cfg.SendSlots) * cfg.SlotBytes)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("enable messages: allocate %d x %d bytes: %w", cfg.RecvSlots+cfg.SendSlots, cfg.SlotBytes, err), m.free())
	}
	if m.recv, err = e.Register(uint64(uintptr(m.recvBase)), uint64(cfg.RecvSlots)*cfg.SlotBytes); err != nil {
		return errors.Join(fmt.Errorf("enable messages: %w", err), m.free())
	}
	if m.send, err = e.Register(uint64(uintptr(m.sendBase)), uint64(cfg.SendSlots)*cfg.SlotBytes); err != nil {
		return errors.Join(fmt.Errorf("enable messages: %w", err), m.recv.Deregister(), m.free())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.c == nil:
		err = ErrClosed
	case e.msgs != nil:
		err = fmt.Errorf("enable messages on %v: enabled already: %w", e, errs.ErrInvalidUsage)
	}
	if err != nil {
		return errors.Join(err, m.release(), m.free())
	}
	e.msgs = m
	for slot := range uint64(cfg.RecvSlots) {
		if err := e.postRecv(slot); err != nil {
			return err
		}
	}
	return nil
}

// Delivered is the number of messages handed to the handler so far; it changes whenever a
// message arrives (a progress loop may use it to tell a busy endpoint from an idle one).
func (e *Endpoint) Delivered() uint64 {
	e.deliver.Lock() // before e.mu, as deliverMessages takes them
	defer e.deliver.Unlock()
	e.mu.Lock()
	m := e.msgs
	e.mu.Unlock()
	if m == nil {
		return 0
	}
	return m.delivered
}

// SendsAfterWrites reports whether a message reaches a peer after the writes posted to it before
// (the provider's FI_ORDER_SAW): a message may then announce data those writes carried.
func (e *Endpoint) SendsAfterWrites() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c != nil && C.mscclpp_fab_send_after_write(e.c) != 0
}

// MessagesOrdered reports whether the provider hands messages from one endpoint to one peer over
// in the order they were sent, which messages need.
func (e *Endpoint) MessagesOrdered() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c != nil && C.mscclpp_fab_msg_ordered(e.c) != 0
}

// release deregisters the message buffers.
func (m *messages) release() error {
	var errList []error
	for _, r := range []*Region{m.recv, m.send} {
		if r != nil {
			errList = append(errList, r.Deregister())
		}
	}
	return errors.Join(errList...)
}

// alloc allocates n bytes of message buffers: with the configured allocator, or zeroed C memory.
func (m *messages) alloc(n uint64) (unsafe.Pointer, error) {
	if m.cfg.Alloc != nil {
		return m.cfg.Alloc(n)
	}
	if p := C.calloc(1, C.size_t(n)); p != nil {
		return p, nil
	}
	return nil, ErrFabric
}

// free frees the message buffers' memory (after release, or once the endpoint is closed).
func (m *messages) free() error {
	var errList []error
	for _, p := range []unsafe.Pointer{m.recvBase, m.sendBase} {
		switch {
		case p == nil:
		case m.cfg.Free != nil:
			errList = append(errList, m.cfg.Free(p))
		default:
			C.free(p)
		}
	}
	m.recvBase, m.sendBase = nil, nil
	return errors.Join(errList...)
}

// postRecv posts receive slot `slot`. e.mu is held.
func (e *Endpoint) postRecv(slot uint64) error {
	m := e.msgs
	addr := m.recv.Addr + slot*m.cfg.SlotBytes
	if err := e.retry("fi_recv", func() string { return "a receive buffer" }, func() C.ssize_t {
		return C.mscclpp_fab_recv(e.c, C.uint64_t(addr), C.size_t(m.cfg.SlotBytes), m.recv.mr, C.uint64_t(recvContext|slot))
	}); err != nil {
		return err
	}
	m.arrived[slot] = -1
	m.posted = append(m.posted, slot)
	return nil
}

// held is a receive slot whose message the handler still reads, and how to ask whether it has
// finished.
type held struct {
	slot uint64
	done func() (bool, error)
}

// releaseHeld posts again the receive slots whose handler has finished with them. e.deliver is
// held, e.mu is not.
func (e *Endpoint) releaseHeld(m *messages) error {
	kept := m.held[:0]
	var errList []error
	for _, h := range m.held {
		ok, err := h.done()
		switch {
		case err != nil:
			errList = append(errList, fmt.Errorf("%v: %s: %w", e, m.cfg.HandlerLabel, err))
		case ok:
			e.mu.Lock()
			err = e.postRecv(h.slot)
			e.mu.Unlock()
			errList = append(errList, err)
			continue
		}
		kept = append(kept, h)
	}
	m.held = kept
	return errors.Join(errList...)
}

// awaitHeld waits, for at most MSCCLPP_NET_TIMEOUT, until the handler has finished with every
// receive slot it holds, so that their memory may be freed. e.deliver is held.
func (m *messages) awaitHeld() error {
	var wait patience
	for _, h := range m.held {
		for {
			ok, err := h.done()
			if err != nil || ok {
				break
			}
			if wait.exhausted() {
				return fmt.Errorf("%s: a message's buffer still in use after %v: %w", m.cfg.HandlerLabel, config.NetTimeout.Get(), ErrTimedOut)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	m.held = nil
	return nil
}

// received records that a message of n bytes arrived in receive slot `slot`. e.mu is held.
func (m *messages) received(slot, n uint64) { m.arrived[slot] = int64(n) }

// next removes and returns the oldest posted receive slot if its message has arrived. e.mu is
// held.
func (m *messages) next() (slot, n uint64, ok bool) {
	if len(m.posted) == 0 || m.arrived[m.posted[0]] < 0 {
		return 0, 0, false
	}
	slot = m.posted[0]
	m.posted = m.posted[1:]
	return slot, uint64(m.arrived[slot]), true
}

// patience is how long a wait for the provider or the peer may last: MSCCLPP_NET_TIMEOUT from
// the first time the wait had to go on.
type patience struct{ deadline time.Time }

// exhausted starts the clock on its first call and reports whether it has run out since.
func (p *patience) exhausted() bool {
	if p.deadline.IsZero() {
		p.deadline = time.Now().Add(config.NetTimeout.Get())
		return false
	}
	return time.Now().After(p.deadline)
}

// retry calls post, the libfabric call op posting what, until the provider takes it,
// progressing in between, for at most MSCCLPP_NET_TIMEOUT. e.mu is held.
func (e *Endpoint) retry(op string, what func() string, post func() C.ssize_t) error {
	var wait patience
	for {
		if e.c == nil {
			return ErrClosed
		}
		if e.failure != nil {
			return e.failure
		}
		r := post()
		if r == 0 {
			return nil
		}
		if r != -C.ssize_t(C.FI_EAGAIN) {
			return fabricError(op, C.int(r))
		}
		if err := e.poll(); err != nil {
			return err
		}
		if wait.exhausted() {
			return fmt.Errorf("%v: %s was not taken within %v (MSCCLPP_NET_TIMEOUT; does the peer still progress?): %w",
				e, what(), config.NetTimeout.Get(), ErrTimedOut)
		}
	}
}

// Send sends a message to peer: fill writes it into buf, a send buffer of SlotBytes bytes (C
// memory: a copy engine may write it), and returns its length. Send returns once the message is
// posted; Flush waits for it. It waits for a free send buffer for at most MSCCLPP_NET_TIMEOUT,
// delivering the messages that arrive meanwhile (the peer's sends may wait for this side's
// receive buffers as this one waits for the peer's), and holds the endpoint's lock only to take
// a buffer and to post: fill and the waits run without it.
func (e *Endpoint) Send(peer Peer, fill func(buf []byte) (int, error)) error {
	m, slot, err := e.takeSendSlot()
	if err != nil {
		return err
	}
	buf := unsafe.Slice((*byte)(unsafe.Add(m.sendBase, slot*m.cfg.SlotBytes)), m.cfg.SlotBytes)
	n, err := fill(buf)
	if err == nil && (n <= 0 || uint64(n) > m.cfg.SlotBytes) {
		err = fmt.Errorf("send on %v: a message of %d bytes (1 to %d): %w", e, n, m.cfg.SlotBytes, errs.ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		m.sendBusy[slot] = false
		return err
	}
	addr := m.send.Addr + slot*m.cfg.SlotBytes
	if err := e.retry("fi_send", func() string { return fmt.Sprintf("a message of %d bytes to peer %d", n, peer) }, func() C.ssize_t {
		return C.mscclpp_fab_send(e.c, C.uint64_t(addr), C.size_t(n), m.send.mr, C.uint64_t(peer), C.uint64_t(sendContext|slot))
	}); err != nil {
		m.sendBusy[slot] = false
		return err
	}
	e.posted++
	return nil
}

// takeSendSlot waits for the next send buffer to be free and takes it.
func (e *Endpoint) takeSendSlot() (*messages, uint64, error) {
	var wait patience
	for {
		e.mu.Lock()
		m := e.msgs
		switch {
		case e.c == nil:
			e.mu.Unlock()
			return nil, 0, ErrClosed
		case m == nil:
			e.mu.Unlock()
			return nil, 0, fmt.Errorf("send on %v: messages are not enabled: %w", e, errs.ErrInvalidUsage)
		}
		slot := m.sendNext % uint64(len(m.sendBusy))
		if !m.sendBusy[slot] {
			m.sendBusy[slot] = true
			m.sendNext++
			e.mu.Unlock()
			return m, slot, nil
		}
		err := e.poll()
		e.mu.Unlock()
		if err == nil {
			err = e.deliverMessages()
		}
		if err != nil {
			return nil, 0, err
		}
		if wait.exhausted() {
			return nil, 0, fmt.Errorf("%v: no send buffer came free within %v (MSCCLPP_NET_TIMEOUT; does the peer still progress?): %w",
				e, config.NetTimeout.Get(), ErrTimedOut)
		}
	}
}

// deliverMessages hands the messages received so far to the handler, in the order they were
// sent, and posts their buffers again (those the handler still reads once it has finished). Only one goroutine delivers at a time; the handler runs without
// e.mu, so it may send.
func (e *Endpoint) deliverMessages() error {
	e.deliver.Lock()
	defer e.deliver.Unlock()
	for {
		e.mu.Lock()
		m := e.msgs
		var slot, n uint64
		ok := m != nil && e.c != nil
		if ok {
			slot, n, ok = m.next()
		}
		e.mu.Unlock()
		if !ok {
			if m != nil && len(m.held) > 0 {
				return e.releaseHeld(m)
			}
			return nil
		}
		msg := unsafe.Slice((*byte)(unsafe.Add(m.recvBase, slot*m.cfg.SlotBytes)), n)
		done, handleErr := m.cfg.Handle(msg)
		var postErr error
		m.delivered++
		if done != nil {
			m.held = append(m.held, held{slot: slot, done: done})
		} else {
			e.mu.Lock()
			postErr = e.postRecv(slot)
			e.mu.Unlock()
		}
		if handleErr != nil {
			return fmt.Errorf("%v: %s: message %d: %w", e, m.cfg.HandlerLabel, m.delivered, handleErr)
		}
		if postErr != nil {
			return postErr
		}
	}
}
