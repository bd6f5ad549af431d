package proxy

// Engine moves bytes for the proxy. The library implements it with the CUDA driver (one stream,
// cuMemcpyAsync); tests implement it over host memory.
//
// Every call comes from the proxy's one goroutine, on its locked OS thread, after Config.InitThread
// has run there; an Engine needs no locking of its own for the proxy's sake. Copies are ordered:
// a copy or value write may start only after every earlier one has completed, as on one CUDA
// stream. The proxy relies on that order to publish a signal only after the data it announces.
//
// Once a call has returned an error the proxy makes no further Copy or Drain calls until it is
// discarded; it keeps calling PublishTail (ignoring its errors) so that GPU producers waiting for
// room in the ring can make progress while the failure is reported on the host.
type Engine interface {
	// Copy enqueues an asynchronous copy of n bytes from src to dst, both device addresses or host
	// addresses mapped into the device. n is never 0. The proxy has already checked both ranges
	// against the connection's registered memory.
	Copy(dst, src, n uint64) error

	// WriteValue enqueues, after every earlier copy, an 8-byte store of value at dst. The value is
	// the one given now, not read from memory when the store executes: that is what makes a signal
	// carry its own epoch (see Conn.RemoteSignal).
	WriteValue(dst, value uint64) error

	// Drain blocks until every copy enqueued so far has completed. It must return within a bounded
	// time: Stop waits for a Drain in progress, so an engine whose device may hang should poll for
	// completion with a deadline and return an error when it passes, rather than block forever.
	Drain() error

	// PublishTail makes the device-side triggerFifoTail read tail, the number of triggers the
	// proxy has consumed. It may be asynchronous; the values the proxy publishes only grow.
	PublishTail(tail uint64) error
}

// Route moves one connection's bytes in place of the Engine, for a peer whose memory is not
// mapped here (a connection over the network: core's libfabric transports). Its calls come from
// the proxy's goroutine in trigger order, and it keeps that order: a signal reaches the peer after
// the puts before it. An error fails the proxy, as an Engine error does.
type Route interface {
	// Put queues a copy of n bytes (n > 0) from offset srcOffset of the connection's local buffer
	// to offset dstOffset of the peer's buffer; the proxy has checked both ranges.
	Put(dstOffset, srcOffset, n uint64) error
	// Signal queues, after the puts before it, a store of value into the peer's signal word.
	Signal(value uint64) error
	// Drain returns once everything queued so far has left: the source bytes may be reused and
	// the peer will see the data before the signals after it. It must return within a bounded time.
	Drain() error
}
