package main

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestHandleTable(t *testing.T) {
	tab := newHandleTable[string]("thing")
	h1, h2 := tab.register("a"), tab.register("b")
	if h1 == nil || h2 == nil || h1 == h2 {
		t.Fatalf("handles %p, %p: want distinct non-NULL", h1, h2)
	}
	if v, err := tab.lookup(h2); err != nil || v != "b" {
		t.Fatalf("lookup: %q, %v", v, err)
	}
	if v, err := tab.release(h1); err != nil || v != "a" {
		t.Fatalf("release: %q, %v", v, err)
	}
	for _, c := range []struct {
		h    unsafe.Pointer
		want error
	}{{nil, errs.ErrInvalidArgument}, {h1, errs.ErrInvalidUsage}, {unsafe.Pointer(&c0), errs.ErrInvalidUsage}} {
		if _, err := tab.lookup(c.h); !errors.Is(err, c.want) {
			t.Errorf("lookup(%p): %v, want %v", c.h, err, c.want)
		}
		if _, err := tab.release(c.h); !errors.Is(err, c.want) {
			t.Errorf("release(%p): %v, want %v", c.h, err, c.want)
		}
	}
	// A released handle's address is not handed out again.
	for range 100 {
		if h := tab.register("c"); h == h1 {
			t.Fatal("a released handle was reused")
		}
	}
}

var c0 int
