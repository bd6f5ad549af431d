package bootstrap

import (
	"net"
	"sync"
)

// A connGroup tracks open connections and the goroutines serving them, so that their owner can
// close every connection (which unblocks every goroutine reading or writing one) and then wait
// for every goroutine to end. Once closed it refuses new connections and goroutines, which makes
// starting one from any goroutine safe against a concurrent close.
type connGroup struct {
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// add tracks c. If the group is closed it closes c and returns false.
func (g *connGroup) add(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return false
	}
	if g.conns == nil {
		g.conns = make(map[net.Conn]struct{})
	}
	g.conns[c] = struct{}{}
	return true
}

// drop closes c and stops tracking it.
func (g *connGroup) drop(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	c.Close()
}

// start runs f in a new goroutine that wait waits for. If the group is closed it returns false
// and runs nothing.
func (g *connGroup) start(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// close closes every tracked connection and refuses new connections and goroutines.
func (g *connGroup) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// wait waits for the goroutines started by start to end.
func (g *connGroup) wait() { g.wg.Wait() }
