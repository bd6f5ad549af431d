package legacy

import (
	"errors"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/proxy"
)

// ProxyLaunch starts the communicator's proxy: one goroutine on a locked OS thread, with the
// GPU's context current and the thread pinned to the GPU's CPUs, serving the triggers that the
// kernels push through the device connections. Launching a running proxy is an error; launching
// after ProxyStop resumes where it stopped (the FIFO tail and the signal counts carry on), with
// any connections set up in between added.
func (c *Comm) ProxyLaunch() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.proxyRunning() {
		return fmt.Errorf("proxy launch: the proxy is already running: %w", errs.ErrInvalidUsage)
	}
	if err := c.requireSetUp("proxy launch"); err != nil {
		return err
	}
	if len(c.conns) == 0 {
		// A rank without connections has nothing to serve (legacy programs launch on every rank).
		c.log.Info("proxy launch: no connections, nothing to serve")
		return nil
	}
	f := c.gpu.fifo
	if n := f.Conns(); len(c.conns) > n {
		if err := f.AddConns(c.proxyConnTable(n)...); err != nil {
			return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
		}
	}
	if err := f.Start(); err != nil {
		return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
	}
	c.log.Info("proxy launched", "connections", len(c.conns), "gpu", int(c.gpu.device))
	return nil
}

// proxyRunning reports whether the proxy runs. c.mu is held.
func (c *Comm) proxyRunning() bool { return c.gpu != nil && c.gpu.fifo.Running() }

// proxyConnTable describes connections from index first on as the proxy's table entries.
func (c *Comm) proxyConnTable(first int) []proxy.Conn {
	table := make([]proxy.Conn, 0, len(c.conns)-first)
	for k, conn := range c.conns[first:] {
		table = append(table, proxy.Conn{
			LocalBuf: uint64(conn.localBuf), LocalSize: conn.size,
			RemoteBuf: uint64(conn.remoteBuf), RemoteSize: conn.remoteSize,
			RemoteSignal: uint64(conn.remoteSig) + proxyFieldShift, // &remoteSignalEpochId->proxy
			SignalID:     first + k,                                // one signal count per legacy connection
			Peer:         conn.remoteRank, Tag: conn.tag,
			Route: conn.route, // IB: the puts and signals go over libfabric
		})
	}
	return table
}

// ProxyStop stops the proxy and waits for its goroutine and its copies to finish. Stopping a
// stopped proxy does nothing.
func (c *Comm) ProxyStop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCommClosed
	}
	return c.stopProxy()
}

// stopProxy stops a running proxy. c.mu is held.
func (c *Comm) stopProxy() error {
	if !c.proxyRunning() {
		return nil
	}
	c.collectProxyFailure()
	err := c.gpu.fifo.Stop()
	stats := c.gpu.fifo.Stats()
	c.log.Info("proxy stopped", "triggers", stats.Executed, "refused", stats.Refused)
	if err != nil {
		return fmt.Errorf("proxy stop on rank %d: %w", c.Rank(), err)
	}
	if err := c.refusedConnections(); err != nil {
		return fmt.Errorf("proxy stop on rank %d: %d triggers refused: %w", c.Rank(), stats.Refused, err)
	}
	return nil
}

// refusedConnections reports the connections that the proxy failed because a kernel asked it to
// read or write outside their registered buffers (proxy.ErrOutOfRange, an invalid argument),
// naming each connection and its first bad trigger. c.mu is held.
func (c *Comm) refusedConnections() error {
	var bad []error
	for id, conn := range c.conns {
		if err := c.gpu.fifo.ConnErr(id); err != nil {
			bad = append(bad, fmt.Errorf("connection to rank %d tag %d: %w", conn.remoteRank, conn.tag, err))
		}
	}
	return errors.Join(bad...)
}

// collectProxyFailure records the proxy's first CUDA error as the communicator's failure. c.mu
// is held.
func (c *Comm) collectProxyFailure() {
	if c.gpu == nil || c.failure != nil {
		return
	}
	if err := c.gpu.fifo.Err(); err != nil {
		c.failure = fmt.Errorf("proxy: %w", err)
		c.log.Error("proxy failed; the communicator is unusable", "err", err)
	}
}
