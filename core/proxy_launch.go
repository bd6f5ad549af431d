package core

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
	if c.proxyRunning {
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
	if c.proxy == nil {
		if err := c.newProxy(); err != nil {
			return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
		}
	} else if len(c.conns) > c.proxyConns {
		if err := c.proxy.AddConns(c.proxyConnTable(c.proxyConns)...); err != nil {
			return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
		}
	}
	c.proxyConns = len(c.conns)
	if err := c.proxy.Start(); err != nil {
		return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
	}
	c.proxyRunning = true
	c.log.Info("proxy launched", "connections", len(c.conns), "gpu", int(c.gpu.device))
	return nil
}

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
		})
	}
	return table
}

// newProxy creates the proxy and its copy engine, stopped. c.mu is held.
func (c *Comm) newProxy() error {
	g := c.gpu
	unlock := lockThreadWithContext(g)
	defer unlock()
	engine, err := newCopyEngine(g.fifoTail)
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{
		Slots:  g.slots(),
		Conns:  c.proxyConnTable(0),
		Engine: engine,
		InitThread: func() error {
			if err := g.ctx.SetCurrent(); err != nil {
				return err
			}
			pinThreadToGPU(g.device, c.log)
			return nil
		},
		Logger: c.log,
	})
	if err != nil {
		return errors.Join(err, engine.close())
	}
	c.proxy, c.engine = p, engine
	return nil
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
	if !c.proxyRunning {
		return nil
	}
	c.collectProxyFailure()
	err := c.proxy.Stop()
	c.proxyRunning = false
	stats := c.proxy.Stats()
	c.log.Info("proxy stopped", "triggers", stats.Executed, "refused", stats.Refused)
	if err != nil {
		return fmt.Errorf("proxy stop on rank %d: %w", c.Rank(), err)
	}
	return nil
}

// closeProxy stops the proxy and releases its engine, for Close. c.mu is held.
func (c *Comm) closeProxy() error {
	if c.proxy == nil {
		return nil
	}
	stopErr := c.stopProxy()
	unlock := lockThreadWithContext(c.gpu)
	closeErr := c.engine.close()
	unlock()
	c.proxy, c.engine = nil, nil
	return errors.Join(stopErr, closeErr)
}

// collectProxyFailure records the proxy's first CUDA error as the communicator's failure. c.mu
// is held.
func (c *Comm) collectProxyFailure() {
	if c.proxy == nil || c.failure != nil {
		return
	}
	if err := c.proxy.Err(); err != nil {
		c.failure = fmt.Errorf("proxy: %w", err)
		c.log.Error("proxy failed; the communicator is unusable", "err", err)
	}
}
