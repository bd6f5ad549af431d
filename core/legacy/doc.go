// Package legacy is the communicator of the MSCCL++ 0.1 C API (include/mscclpp.h): a Comm per
// rank, connections declared with Connect and made real by ConnectionSetup, device connections
// (DevConn, the mscclppDevConn_t mirror) that kernels use to put and signal through the proxy,
// and buffers registered with every connected peer (RegisterBuffer).
//
// It is a thin layer over package core: the memory a connection exposes is registered in a
// core.Context (the library's one registry of exported and mapped GPU memory) and reaches the
// peer as core.RegisteredMemory; the proxy that serves the device connections' triggers is a
// core.ProxyFifo, the same FIFO and proxy that channels.ProxyService runs port channels on. What
// stays here is what the 0.1 API defines: the (remote rank, tag) pairing of connections, the
// per-connection signal pairs (mscclppDevConnSignalEpochId) and wait counters, and the device
// struct layouts, which do not change.
//
// Driver calls run with the GPU's primary context pushed on the calling thread and popped after
// (cuda.Context.Do), so a C caller's current context is left as it was.
package legacy
