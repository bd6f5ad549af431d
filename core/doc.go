// Package core holds the host objects every layer above builds on: the Context with the library's
// one registry of GPU memory (what it exported to peers and what it mapped of theirs), endpoints,
// connections, registered memory, semaphores, the Communicator that exchanges them over a
// bootstrap, and ProxyFifo, the trigger ring on one GPU with the copy engine and proxy
// (core/proxy) that serve it. The legacy communicator of include/mscclpp.h (package core/legacy)
// and channels.ProxyService are both built on these.
//
// # Transports
//
// A transport is one way bytes travel between endpoints, behind one interface (transport.go):
// make local memory reachable (export), reach a peer's (open, unmap), and a connection's data
// path (write, write of a signal value, flush, close). CUDA IPC (transport_cudaipc.go) moves GPU
// memory between processes of one host; the libfabric transports (IB, the network, and SHM) move
// host memory registered with the context's libfabric endpoint and reached by its key
// (transport_fabric.go), and GPU memory staged through host buffers as messages
// (transport_staged.go), semaphores and port channels included. Memory channels need the peer's
// memory mapped, so they stay on CUDA IPC. What a transport cannot do is refused with
// ErrTransportUnavailable.
//
// # Host objects of the channel API
//
// A Context owns what the channel API allocates and maps. Context.CreateEndpoint makes an
// Endpoint (a transport, a device, the creating process's identity); Context.Connect joins this
// process's endpoint to a peer's into a Connection (CUDA IPC: GPUs of one host, possibly the
// same GPU); Context.RegisterMemory makes a RegisteredMemory of caller-owned device memory that
// UnmarshalRegisteredMemory maps in a peer (cuIpcOpenMemHandle in another process, the pointer
// itself plus peer access in the same process). A SemaphoreStub per side, exchanged, gives each
// side its Semaphore. Endpoints, stubs and memories are plain values with a versioned binary
// encoding. A Communicator runs these exchanges over a bootstrap, each call returning a Future.
// Context.Close releases streams, semaphore memory, IPC mappings and retained primary contexts;
// nothing made through the context may be used afterwards, and the caller keeps owning the
// memory it registered.
package core
