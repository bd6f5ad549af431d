package bootstrap

import (
	"context"
	"sync"
)

// mailKey addresses one FIFO of a mailbox: the messages one peer sent with one tag.
type mailKey struct {
	peer, tag int
}

// A mailbox holds the messages the link readers received and not yet taken by Recv, one FIFO
// per (peer, tag), and remembers which peers' links failed.
type mailbox struct {
	mu      sync.Mutex
	queues  map[mailKey][][]byte
	waiters map[mailKey]chan struct{} // closed and removed when the key's state changes
	failed  map[int]error             // peer -> why its link ended
	pending map[int]int64             // peer -> bytes delivered and not yet taken
	closed  bool
}

func newMailbox() *mailbox {
	return &mailbox{
		queues:  make(map[mailKey][][]byte),
		waiters: make(map[mailKey]chan struct{}),
		failed:  make(map[int]error),
		pending: make(map[int]int64),
	}
}

// deliver appends msg to the FIFO of (peer, tag) and wakes its waiters.
func (m *mailbox) deliver(peer, tag int, msg []byte) {
	k := mailKey{peer, tag}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.queues[k] = append(m.queues[k], msg)
	m.pending[peer] += int64(len(msg))
	if ch, ok := m.waiters[k]; ok {
		close(ch)
		delete(m.waiters, k)
	}
}

// admits reports whether n more bytes from peer stay within limit bytes not yet taken.
func (m *mailbox) admits(peer int, n, limit int64) (pending int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pending = m.pending[peer]
	return pending, n <= limit-pending
}

// fail records that no more messages will come from peer, and wakes everyone waiting on it.
// Messages already delivered can still be taken. Only the first failure is kept.
func (m *mailbox) fail(peer int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.failed[peer]; ok {
		return
	}
	m.failed[peer] = err
	for k, ch := range m.waiters {
		if k.peer == peer {
			close(ch)
			delete(m.waiters, k)
		}
	}
}

// close wakes every waiter; later takes return ErrClosed.
func (m *mailbox) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.queues = nil
	for k, ch := range m.waiters {
		close(ch)
		delete(m.waiters, k)
	}
}

// take removes and returns the oldest message of (peer, tag), waiting until one arrives, the
// peer's link fails (its error), the mailbox closes (ErrClosed) or ctx is done (ctx's error).
func (m *mailbox) take(ctx context.Context, peer, tag int) ([]byte, error) {
	k := mailKey{peer, tag}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if q := m.queues[k]; len(q) > 0 {
			msg := q[0]
			q[0] = nil
			m.pending[peer] -= int64(len(msg))
			if len(q) == 1 {
				delete(m.queues, k)
			} else {
				m.queues[k] = q[1:]
			}
			m.mu.Unlock()
			return msg, nil
		}
		if err := m.failed[peer]; err != nil {
			m.mu.Unlock()
			return nil, err
		}
		ch, ok := m.waiters[k]
		if !ok {
			ch = make(chan struct{})
			m.waiters[k] = ch
		}
		m.mu.Unlock()

		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
