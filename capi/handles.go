package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include "core_capi.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Handle magics, for whoever reads a core dump; lookups go through the tables, never the magic.
const (
	handleLiveMagic     = 0x6d7363636c70686c // "mscclphl"
	handleReleasedMagic = 0xdeadc0de68646c00
)

// handleTable maps the handles of one type of the primitive API (core.h) to their Go objects.
// A handle is a small C allocation whose address keys the table, so C never holds a Go pointer.
// A released handle leaves the table but its allocation is kept, so that the address is never
// handed out again and a call with the stale handle is refused rather than misdirected.
type handleTable[T any] struct {
	name string // what the handle is, for messages: "context", "connection", ...
	mu   sync.Mutex
	m    map[unsafe.Pointer]T
}

func newHandleTable[T any](name string) *handleTable[T] {
	return &handleTable[T]{name: name, m: map[unsafe.Pointer]T{}}
}

// register returns a new handle for v.
func (t *handleTable[T]) register(v T) unsafe.Pointer {
	h := (*C.capiHandle)(C.calloc(1, C.sizeof_capiHandle))
	if h == nil {
		panic("calloc of a " + t.name + " handle failed")
	}
	h.magic = handleLiveMagic
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[unsafe.Pointer(h)] = v
	return unsafe.Pointer(h)
}

// lookup returns the object of h; NULL is an invalid argument, an unknown or released handle an
// invalid usage.
func (t *handleTable[T]) lookup(h unsafe.Pointer) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookupLocked(h)
}

func (t *handleTable[T]) lookupLocked(h unsafe.Pointer) (T, error) {
	var zero T
	if h == nil {
		return zero, invalidArg("%s is NULL", t.name)
	}
	v, ok := t.m[h]
	if !ok {
		return zero, invalidUsage("%s %p is unknown (destroyed?): released or not created by this library", t.name, h)
	}
	return v, nil
}

// release removes h from the table and returns its object, which the caller closes if needed.
func (t *handleTable[T]) release(h unsafe.Pointer) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, err := t.lookupLocked(h)
	if err != nil {
		return v, err
	}
	delete(t.m, h)
	(*C.capiHandle)(h).magic = handleReleasedMagic
	return v, nil
}
