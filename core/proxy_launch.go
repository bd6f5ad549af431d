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
// after ProxyStop starts it again where it left off.
func (c *Comm) ProxyLaunch() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if c.proxy != nil {
		return fmt.Errorf("proxy launch: the proxy is already running: %w", errs.ErrInvalidUsage)
	}
	if err := c.requireSetUp("proxy launch"); err != nil {
		return err
	}
	if len(c.conns) == 0 {
		return fmt.Errorf("proxy launch: no connections (call mscclppConnect and mscclppConnectionSetup first): %w", ErrNotSetUp)
	}
	g := c.gpu
	conns := make([]proxy.Conn, len(c.conns))
	for i, conn := range c.conns {
		conns[i] = proxy.Conn{
			LocalBuf: uint64(conn.localBuf), LocalSize: conn.size,
			RemoteBuf: uint64(conn.remoteBuf), RemoteSize: conn.remoteSize,
			LocalSignal:  uint64(conn.localSig),                    // localSignalEpochId->device
			RemoteSignal: uint64(conn.remoteSig) + proxyFieldShift, // &remoteSignalEpochId->proxy
			Peer:         conn.remoteRank, Tag: conn.tag,
		}
	}

	unlock := lockThreadWithContext(g)
	defer unlock()
	engine, err := newCopyEngine(g.fifoTail)
	if err != nil {
		return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), err)
	}
	p, err := proxy.New(proxy.Config{
		Slots:  g.slots(),
		Conns:  conns,
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
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		return fmt.Errorf("proxy launch on rank %d: %w", c.Rank(), errors.Join(err, engine.close()))
	}
	c.proxy, c.engine = p, engine
	c.log.Info("proxy launched", "connections", len(conns), "gpu", int(g.device))
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

// stopProxy stops a running proxy and releases its engine. c.mu is held.
func (c *Comm) stopProxy() error {
	if c.proxy == nil {
		return nil
	}
	c.collectProxyFailure()
	stopErr := c.proxy.Stop()
	c.proxyStats = c.proxy.Stats()
	unlock := lockThreadWithContext(c.gpu)
	closeErr := c.engine.close()
	unlock()
	c.proxy, c.engine = nil, nil
	c.log.Info("proxy stopped", "triggers", c.proxyStats.Executed, "refused", c.proxyStats.Refused)
	if err := errors.Join(stopErr, closeErr); err != nil {
		return fmt.Errorf("proxy stop on rank %d: %w", c.Rank(), err)
	}
	return nil
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
