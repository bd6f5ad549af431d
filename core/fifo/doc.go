// Package fifo mirrors the legacy proxy FIFO of include/mscclppfifo.h: the trigger that GPU
// threads push and the proxy pops, and the per-connection producer state kept in device memory.
// The header documents the types and the protocol; this package adds encoding and decoding of
// triggers with range checks, for the proxy and for tests.
package fifo
