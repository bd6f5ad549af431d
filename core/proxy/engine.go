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
