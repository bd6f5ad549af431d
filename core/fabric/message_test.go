package fabric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// inbox collects the messages an endpoint's handler is given, checking that each is the one
// expected next: message i is i (8 bytes, little-endian) followed by len-8 bytes of i's pattern.
type inbox struct {
	mu   sync.Mutex
	next uint64
	bad  []string
}

func (in *inbox) handle(msg []byte) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(msg) < 8 {
		in.bad = append(in.bad, fmt.Sprintf("message of %d bytes", len(msg)))
		return nil
	}
	i := binary.LittleEndian.Uint64(msg)
	if i != in.next {
		in.bad = append(in.bad, fmt.Sprintf("message %d came when %d was due", i, in.next))
	}
	for k, c := range msg[8:] {
		if c != pattern(i, k) {
			in.bad = append(in.bad, fmt.Sprintf("message %d: byte %d is %d, want %d", i, k, c, pattern(i, k)))
			break
		}
	}
	in.next = i + 1
	return nil
}

func (in *inbox) count() uint64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.next
}

// await flushes the sender's messages, progressing it, until total messages have come in (for
// at most 30 s), then checks that they all came whole and in order.
func (in *inbox) await(t *testing.T, sender *Endpoint, total uint64) {
	t.Helper()
	require.NoError(t, sender.Flush(t.Context()))
	deadline := time.Now().Add(30 * time.Second)
	for in.count() < total && time.Now().Before(deadline) {
		require.NoError(t, sender.Progress())
		time.Sleep(10 * time.Microsecond)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	assert.Empty(t, in.bad)
	assert.Equal(t, total, in.next, "messages delivered")
}

// handledNow makes f a handler that is done with each message's buffer when it returns.
func handledNow(f func([]byte) error) func([]byte) (func() (bool, error), error) {
	return func(msg []byte) (func() (bool, error), error) { return nil, f(msg) }
}

// ignore is a handler that drops every message.
var ignore = handledNow(func([]byte) error { return nil })

func pattern(i uint64, k int) byte { return byte(i*31 + uint64(k)*7) }

// message fills buf with message i of n bytes.
func message(i uint64, n int) func(buf []byte) (int, error) {
	return func(buf []byte) (int, error) {
		if n > len(buf) {
			return n, nil // too long: Send must refuse it
		}
		binary.LittleEndian.PutUint64(buf, i)
		for k := range n - 8 {
			buf[8+k] = pattern(i, k)
		}
		return n, nil
	}
}

// TestMessagesInOrder: more messages than receive and send buffers, of every size from 8 bytes
// to a whole slot, arrive whole and in order on tcp and shm, while the receiver progresses in the
// background as a rank's progress goroutine does.
func TestMessagesInOrder(t *testing.T) {
	for _, provider := range []string{"tcp", "shm"} {
		t.Run(provider, func(t *testing.T) {
			a, b, ab, _ := pair(t, provider, "")
			assert.True(t, a.SendsAfterWrites(), "messages ordered after writes (staged GPU memory relies on it)")
			const slot = 64 << 10
			var got inbox
			require.NoError(t, a.EnableMessages(MessageConfig{SlotBytes: slot, RecvSlots: 4, SendSlots: 3, Handle: ignore}))
			require.NoError(t, b.EnableMessages(MessageConfig{SlotBytes: slot, RecvSlots: 4, SendSlots: 3, Handle: handledNow(got.handle), HandlerLabel: "test inbox"}))
			progressInBackground(t, b)
			sizes := []int{8, 9, 100, 4096, 16 << 10, slot - 1, slot}
			const total = 200
			for i := range uint64(total) {
				require.NoError(t, a.Send(ab, message(i, sizes[i%uint64(len(sizes))])))
			}
			got.await(t, a, total)
		})
	}
}

// mmapBuffers is a MessageConfig allocator over anonymous mappings that records what it gives
// and what comes back.
type mmapBuffers struct {
	mu    sync.Mutex
	live  map[uintptr][]byte
	freed int
}

func (m *mmapBuffers) alloc(n uint64) (unsafe.Pointer, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live == nil {
		m.live = map[uintptr][]byte{}
	}
	m.live[uintptr(unsafe.Pointer(&b[0]))] = b
	return unsafe.Pointer(&b[0]), nil
}

func (m *mmapBuffers) free(p unsafe.Pointer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.live[uintptr(p)]
	if !ok {
		return fmt.Errorf("free of %p, which alloc did not give", p)
	}
	delete(m.live, uintptr(p))
	m.freed++
	return syscall.Munmap(b)
}

// TestMessagesInOwnBuffers: with an allocator configured (the library's is page-locked memory
// for staged GPU copies), messages go through its buffers, and closing the endpoint gives back
// both buffers (receive and send) and nothing else.
func TestMessagesInOwnBuffers(t *testing.T) {
	var bufs mmapBuffers
	t.Cleanup(func() { // after pair's cleanups, which close the endpoints
		bufs.mu.Lock()
		defer bufs.mu.Unlock()
		assert.Empty(t, bufs.live, "buffers not freed")
		assert.Equal(t, 4, bufs.freed, "buffers freed: a receive and a send buffer per endpoint")
	})
	a, b, ab, _ := pair(t, "tcp", "")
	var got inbox
	const slot = 4096
	require.NoError(t, a.EnableMessages(MessageConfig{SlotBytes: slot, RecvSlots: 2, SendSlots: 2, Handle: ignore,
		Alloc: bufs.alloc, Free: bufs.free}))
	require.NoError(t, b.EnableMessages(MessageConfig{SlotBytes: slot, RecvSlots: 2, SendSlots: 2, Handle: handledNow(got.handle),
		Alloc: bufs.alloc, Free: bufs.free}))
	bufs.mu.Lock()
	assert.Len(t, bufs.live, 4, "buffers allocated")
	bufs.mu.Unlock()
	progressInBackground(t, b)
	const total = 20
	for i := range uint64(total) {
		require.NoError(t, a.Send(ab, message(i, slot)))
	}
	got.await(t, a, total)
}

// TestMessagesHandledLater: a receive buffer whose handler returned a done is posted again only
// once done says the handler has finished with it: with 2 receive buffers both held, a third
// message waits at the provider, and comes once one buffer is given back; the messages still come
// in order.
func TestMessagesHandledLater(t *testing.T) {
	for _, provider := range []string{"tcp", "shm"} {
		t.Run(provider, func(t *testing.T) {
			a, b, ab, _ := pair(t, provider, "")
			var got inbox
			var released atomic.Int64 // how many of the held messages the test has let go
			require.NoError(t, a.EnableMessages(MessageConfig{SlotBytes: 256, RecvSlots: 2, SendSlots: 4, Handle: ignore}))
			require.NoError(t, b.EnableMessages(MessageConfig{SlotBytes: 256, RecvSlots: 2, SendSlots: 4, HandlerLabel: "test inbox",
				Handle: func(msg []byte) (func() (bool, error), error) {
					i := int64(got.count())
					if err := got.handle(msg); err != nil {
						return nil, err
					}
					return func() (bool, error) { return released.Load() > i, nil }, nil
				}}))
			const total = 5
			sent := make(chan error, 1)
			go func() { // Send waits while the peer has no buffer for the message
				var err error
				for i := range uint64(total) {
					if err = a.Send(ab, message(i, 200)); err != nil {
						break
					}
				}
				sent <- err
			}()
			progressInBackground(t, a) // a's Send holds its lock while it waits: only b is progressed here
			settle := func(want uint64) {
				deadline := time.Now().Add(30 * time.Second)
				for got.count() < want && time.Now().Before(deadline) {
					require.NoError(t, b.Progress())
				}
				for range 2000 { // and nothing more comes
					require.NoError(t, b.Progress())
				}
				assert.Equal(t, want, got.count(), "messages delivered with %d buffers given back", released.Load())
			}
			settle(2)
			for r := int64(1); r <= total; r++ {
				released.Store(r)
				settle(uint64(min(r+2, total)))
			}
			require.NoError(t, <-sent)
			got.mu.Lock()
			defer got.mu.Unlock()
			assert.Empty(t, got.bad)
		})
	}
}

// TestMessagesRefused: bad configurations and messages are refused with errors that say why,
// and a handler's error comes back from Progress naming the handler.
func TestMessagesRefused(t *testing.T) {
	a, b, ab, _ := pair(t, "tcp", "")
	err := a.Send(ab, message(0, 8))
	require.ErrorIs(t, err, errs.ErrInvalidUsage)
	assert.Contains(t, err.Error(), "not enabled")

	for _, cfg := range []MessageConfig{
		{SlotBytes: 0, RecvSlots: 1, SendSlots: 1, Handle: ignore},
		{SlotBytes: 64, RecvSlots: 0, SendSlots: 1, Handle: ignore},
		{SlotBytes: 64, RecvSlots: 1, SendSlots: 0, Handle: ignore},
		{SlotBytes: 64, RecvSlots: 1, SendSlots: 1},
		{SlotBytes: 64, RecvSlots: 1, SendSlots: 1, Handle: ignore, Alloc: func(uint64) (unsafe.Pointer, error) { return nil, nil }},
	} {
		assert.ErrorIs(t, a.EnableMessages(cfg), errs.ErrInvalidArgument, "%+v", cfg)
	}
	require.NoError(t, a.EnableMessages(MessageConfig{SlotBytes: 64, RecvSlots: 2, SendSlots: 2, Handle: ignore}))
	assert.ErrorIs(t, a.EnableMessages(MessageConfig{SlotBytes: 64, RecvSlots: 2, SendSlots: 2, Handle: ignore}), errs.ErrInvalidUsage)

	err = a.Send(ab, message(0, 65))
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "1 to 64")
	fillErr := errors.New("the copy into the send buffer failed")
	require.ErrorIs(t, a.Send(ab, func([]byte) (int, error) { return 0, fillErr }), fillErr)

	bad := errors.New("not a message this side understands")
	require.NoError(t, b.EnableMessages(MessageConfig{SlotBytes: 64, RecvSlots: 2, SendSlots: 2,
		Handle: handledNow(func([]byte) error { return bad }), HandlerLabel: "strict handler"}))
	sent := make(chan error, 1)
	go func() { sent <- a.Send(ab, message(0, 8)) }() // on tcp the connection forms only while b progresses
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = b.Progress()
		if err != nil || time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, <-sent)
	require.ErrorIs(t, err, bad)
	assert.Contains(t, err.Error(), "strict handler")
}
