package core

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Signals as remote CQ data. Where the provider carries 8 bytes of remote CQ data
// (fabric.Endpoint.RemoteData: tcp and shm do), a host-memory link's signals (UpdateAndSync) do
// not write the signal word: they ride on a write's completion at the peer, as its remote data,
// and the peer's endpoint stores the value when it reads that completion (signals.apply). A write
// and the signal after it (Connection.WriteWithSignal) are then one operation of the provider
// instead of two, which is what a small message's latency is made of; a signal alone is a write
// of no bytes. Every signal of a link takes this path, so the peer stores a link's signals in the
// order they were queued, each after the data written before it.
//
// Each entry names its word by address (in the receiver's process, 8-byte aligned, below 2^48:
// bits 63-19 hold the address / 8), so the receiver needs no state per peer; the value takes the
// other 19 bits:
//
//	small: bit 18 = 0, bits 17-0 the value (below 2^18)
//	step:  bits 18-17 = 10, bits 16-0 the value's low 17 bits; the word becomes the least value
//	       at or above the one it holds with those low bits
//	part:  bits 18-17 = 11, bits 16-14 the part's index i (0-4), bits 13-0 the value's bits
//	       14i to 14i+13; part 4 stores the value its five parts make
//
// The sender sends a small entry for a value below 2^18, a step for a value above the one it
// last sent to that word by less than 2^16, and five parts otherwise. A step is exact while the
// word holds what this sender last stored in it, so a word that reaches 2^18 must be written by
// one sender only (a semaphore's word is). The receiver stores only into host memory registered
// with its endpoint, so a peer cannot store anywhere else.
const (
	entryAddrShift = 19
	maxSignalAddr  = 1 << 48
	smallBits      = 18
	stepBits       = 17
	stepMaxGap     = 1 << 16
	partBits       = 14
	partLast       = 4
	kindStep       = 0b10 << stepBits
	kindPart       = 0b11 << stepBits
	kindMask       = 0b11 << stepBits
)

func smallEntry(addr, value uint64) uint64 { return addr>>3<<entryAddrShift | value }

func stepEntry(addr, value uint64) uint64 {
	return addr>>3<<entryAddrShift | kindStep | value&(1<<stepBits-1)
}

func partEntry(addr, value uint64, i int) uint64 {
	return addr>>3<<entryAddrShift | kindPart | uint64(i)<<partBits | value>>(partBits*i)&(1<<partBits-1)
}

// maxSentWords bounds signalNames.sent: past it the sender forgets every word (its next signals
// to them go in parts).
const maxSentWords = 4096

// signalNames is a sender's side of one (endpoint, peer) pair (remotePeer.names): the value it
// last sent to each word. Its lock is held from naming a signal to posting it, so that the peer reads the entries
// of one word in the order the sender chose them.
type signalNames struct {
	mu      sync.Mutex
	sent    map[uint64]uint64 // word address at the peer -> the value last sent
	entries [partLast + 1]uint64
}

// name returns the entries that store value into the peer's word at addr, in order.
func (s *signalNames) name(addr, value uint64) ([]uint64, error) {
	if addr%8 != 0 || addr >= maxSignalAddr {
		return nil, fmt.Errorf("a signal word at %#x: remote CQ data name 8-byte aligned words below %#x: %w", addr, uint64(maxSignalAddr), errs.ErrInvalidArgument)
	}
	if s.sent == nil || len(s.sent) >= maxSentWords {
		s.sent = make(map[uint64]uint64)
	}
	last, known := s.sent[addr]
	s.sent[addr] = value
	switch {
	case value < 1<<smallBits:
		s.entries[0] = smallEntry(addr, value)
		return s.entries[:1], nil
	case known && value > last && value-last < stepMaxGap:
		s.entries[0] = stepEntry(addr, value)
		return s.entries[:1], nil
	}
	for i := range partLast + 1 {
		s.entries[i] = partEntry(addr, value, i)
	}
	return s.entries[:], nil
}

// forget drops what the sender knows of the peer's words.
func (s *signalNames) forget() { clear(s.sent) }

// hostRange is host memory registered with a fabricNet: where signals may be stored.
type hostRange struct{ addr, size uint64 }

// maxPartial bounds the words whose parts are in flight at once (signals.partial).
const maxPartial = 1024

// signals is a fabricNet's receiving side of signals as remote CQ data (each remotePeer holds
// the sending side); nil where the endpoint cannot carry them.
type signals struct {
	log      *slog.Logger
	mu       sync.Mutex
	targets  map[uint64]hostRange // registered host memory, by key (mu)
	last     hostRange            // the target of the previous entry (mu)
	partial  map[uint64]uint64    // word address -> the parts received so far (mu)
	rejected uint64               // entries refused (mu)
	firstBad error                // why the first was refused (mu)
}

func newSignals(log *slog.Logger) *signals {
	return &signals{log: log, targets: map[uint64]hostRange{}, partial: map[uint64]uint64{}}
}

// addTarget and removeTarget keep the registered host memory that signals may be stored into.
func (s *signals) addTarget(key uint64, r hostRange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.targets[key] = r
}

func (s *signals) removeTarget(key uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.targets, key)
	s.last = hostRange{}
}

// target reports whether the word at addr lies in registered host memory. s.mu is held.
func (s *signals) target(addr uint64) bool {
	in := func(r hostRange) bool { return r.size >= 8 && addr >= r.addr && addr-r.addr <= r.size-8 }
	if in(s.last) {
		return true
	}
	for _, r := range s.targets {
		if in(r) {
			s.last = r
			return true
		}
	}
	return false
}

// apply acts on one entry of remote CQ data (fabric.Endpoint's data handler: it runs with the
// endpoint's lock held and calls nothing of it).
func (s *signals) apply(data uint64) {
	addr := data >> entryAddrShift << 3
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.target(addr) {
		s.refuse(fmt.Errorf("a signal for the word at %#x, outside the host memory registered here", addr))
		return
	}
	switch data & kindMask {
	case kindStep:
		const m = 1<<stepBits - 1
		cur := loadSignal(uintptr(addr))
		storeSignal(uintptr(addr), cur+(data-cur)&m)
	case kindPart:
		i := int(data >> partBits & 0b111)
		bits := data & (1<<partBits - 1) << (partBits * i)
		switch {
		case i == 0 && len(s.partial) >= maxPartial:
			s.refuse(fmt.Errorf("a signal for the word at %#x in parts, with %d words' parts in flight already", addr, len(s.partial)))
		case i == 0:
			s.partial[addr] = bits
		case i == partLast:
			v, ok := s.partial[addr]
			delete(s.partial, addr)
			if !ok {
				s.refuse(fmt.Errorf("the last part of a signal for the word at %#x, whose first never came", addr))
				return
			}
			storeSignal(uintptr(addr), v|bits)
		case i < partLast:
			if _, ok := s.partial[addr]; ok {
				s.partial[addr] |= bits
			}
		default:
			s.refuse(fmt.Errorf("part %d of a signal for the word at %#x (parts are 0-%d)", i, addr, partLast))
		}
	default: // small
		storeSignal(uintptr(addr), data&(1<<smallBits-1))
	}
}

// refuse counts an entry refused and logs the first (a peer that sends such entries is broken or
// hostile, and may send many). s.mu is held.
func (s *signals) refuse(err error) {
	s.rejected++
	if s.firstBad == nil {
		s.firstBad = err
		s.log.Warn("libfabric: a signal refused (later ones are only counted)", "err", err)
	}
}
