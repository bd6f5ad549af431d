// Package fabric is the libfabric driver layer: libfabric.so.1 (MSCCLPP_FABRIC_LIBRARY) loaded
// with dlopen on first use, so that the library loads and runs CUDA IPC on machines without it,
// and one reliable-datagram (RDM) endpoint type with what the network transport needs of it:
// addresses to exchange, memory registration, RMA writes ordered write after write (so a signal
// written after data lands after it), writes whose completion at the peer carries 8 bytes of
// remote CQ data (WriteData, handed to the peer's data handler), messages (message.go), and
// completion polling.
//
// Only six functions are exported by libfabric (fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric,
// fi_strerror, fi_version); they are called through pointers. Everything else in its API is an
// inline call through the ops table of the object it acts on, compiled in from the headers
// (libfabric-dev) with nothing to link.
//
// Providers with manual data progress (tcp, shm, verbs through rxm) move incoming writes only
// while the target reads its completion queue: a process that waits for data written into its
// memory calls Progress while it waits (the proxy does in the library).
package fabric
