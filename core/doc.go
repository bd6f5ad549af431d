// Package core holds the communicators, connections and memory of the library and the proxy FIFO
// they share: the legacy Comm of include/mscclpp.h (Connect, ConnectionSetup, device connections
// mirrored by DevConn, ProxyLaunch) and the host objects of the channel API below. ProxyFifo is
// a trigger ring on one GPU with the copy engine and proxy (core/proxy) that serve it.
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
