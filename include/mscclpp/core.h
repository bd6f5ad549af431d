/*
 * mscclpp/core.h: the primitive API in C: bootstrap, context, endpoints, connections, registered
 * memory, semaphores, memory and port channels, proxy service and communicator. C-compatible;
 * exported by libmscclpp.so next to the legacy API of mscclpp.h.
 *
 * Handles (mscclppContext_t, ...) are opaque, created by the library, released by the matching
 * Destroy/Release call; a released handle is refused with mscclppInvalidUsage. Serializable objects
 * (endpoints, semaphore stubs, memory descriptors) are fixed-size byte structs that may be copied
 * and sent through any channel (MPI, files, sockets).
 *
 * Every function returns mscclppSuccess or an error code; the reason of a failure is logged.
 *
 * Lifetimes: destroy in the reverse order of creation: stop and destroy proxy services, then
 * semaphores, memories, connections, communicators, contexts, bootstraps. A context owns the GPU
 * memory it allocated (semaphore stubs' counters included) and the peer memory it mapped; after
 * mscclppContextDestroy the handles made through it must still be released, and any other use of
 * them fails with mscclppInvalidUsage. A semaphore serves memory channels (GPU threads signal the
 * peer) or port channels (the peer's proxy signals), not both.
 * "Collective" marks calls that the peer(s) must match; they block until matched or the bootstrap
 * timeout (MSCCLPP_BOOTSTRAP_TIMEOUT, mscclppSetBootstrapConnTimeout) expires.
 */
#ifndef MSCCLPP_CORE_H_
#define MSCCLPP_CORE_H_

#include <stddef.h>
#include <stdint.h>

#include <mscclpp/memory_channel_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Shared with the legacy API (also declared, identically, in mscclpp.h) ----------------- */

/* The text of a result code (static storage). */
const char* mscclppGetErrorString(mscclppResult_t result);
/* Sets the bootstrap timeout in seconds, 1 to 86400, for every later blocking step, of existing
 * bootstraps too (default 30, or MSCCLPP_BOOTSTRAP_TIMEOUT; a step already waiting keeps its
 * deadline); another value is refused with mscclppInvalidArgument. */
mscclppResult_t mscclppSetBootstrapConnTimeout(int timeout);
/* Sends the library's log lines to handler (each line ends with a newline). */
typedef void (*mscclppLogHandler_t)(const char* msg);
mscclppResult_t mscclppSetLogHandler(mscclppLogHandler_t handler);

/* ---- Bootstrap ---------------------------------------------------------------------------- */

/* A TCP bootstrap: one per rank, out-of-band messages between the ranks of a job. */
typedef struct mscclppBootstrap_s* mscclppBootstrap_t;

/* Makes a rendezvous id and starts its root in the background (rank 0 calls it; share the id).
 * The root serves until every rank has joined, or for the bootstrap timeout. */
mscclppResult_t mscclppBootstrapCreateUniqueId(mscclppUniqueId* id);
/* Joins the job of `nranks` ranks through `id` as `rank`. Collective; blocks until all joined. */
mscclppResult_t mscclppBootstrapCreateFromId(mscclppBootstrap_t* bootstrap, int rank, int nranks, mscclppUniqueId id);
/* Joins through "ip:port", "if:ip:port" or "[ipv6]:port"; rank 0 listens there. Collective. Where others
 * can reach the address, set MSCCLPP_BOOTSTRAP_KEY alike on every rank (docs/CONFIG.md). */
mscclppResult_t mscclppBootstrapCreate(mscclppBootstrap_t* bootstrap, int rank, int nranks, const char* ifIpPort);
/* This rank's index and the number of ranks. */
mscclppResult_t mscclppBootstrapRank(mscclppBootstrap_t bootstrap, int* rank);
mscclppResult_t mscclppBootstrapSize(mscclppBootstrap_t bootstrap, int* nranks);
/* A bootstrap message (Send, Recv, each rank's part of AllGatherBytes) is at most 2^30 bytes (1 GiB);
 * a larger size is refused at once with mscclppInvalidArgument. Send and Recv may be called from
 * several threads at once (concurrent Sends to one peer each deliver their message whole). The
 * collective calls on one bootstrap, mscclppBootstrapAllGatherBytes, mscclppBootstrapBarrierAll
 * and mscclppCollCommCreate on a communicator over it, must not overlap: one made while another
 * is in progress fails at once with mscclppInvalidUsage, its log naming the call in progress. */
/* Sends `size` bytes to `peer` under `tag` (>= 0); returns once queued (data may be reused). */
mscclppResult_t mscclppBootstrapSend(mscclppBootstrap_t bootstrap, const void* data, size_t size, int peer, int tag);
/* Receives exactly `size` bytes from `peer` under `tag` (matched by peer and tag, any order). Blocks. */
mscclppResult_t mscclppBootstrapRecv(mscclppBootstrap_t bootstrap, void* data, size_t size, int peer, int tag);
/* All-gathers `size` bytes per rank in `data` (rank r's at r*size). Collective. */
mscclppResult_t mscclppBootstrapAllGatherBytes(mscclppBootstrap_t bootstrap, void* data, size_t size);
/* Waits until every rank has called it. Collective. */
mscclppResult_t mscclppBootstrapBarrierAll(mscclppBootstrap_t bootstrap);
/* Closes the bootstrap (local). */
mscclppResult_t mscclppBootstrapDestroy(mscclppBootstrap_t bootstrap);

/* ---- Context, endpoints, connections ---------------------------------------------------------- */

typedef struct mscclppContext_s* mscclppContext_t;        /* owns connections, memory mappings */
typedef struct mscclppConnection_s* mscclppConnection_t;  /* one end of a connection */
typedef struct mscclppRegMem_s* mscclppRegMem_t;          /* registered memory, local or mapped */
typedef struct mscclppSemaphore_s* mscclppSemaphore_t;    /* a pair of signal counters */

/* Where an endpoint lives. */
typedef enum { mscclppDeviceCPU = 0, mscclppDeviceGPU = 1 } mscclppDeviceType_t;

#define MSCCLPP_ENDPOINT_BYTES 256
#define MSCCLPP_SEMAPHORE_STUB_BYTES 384
#define MSCCLPP_MEMORY_DESC_BYTES 128

/* A serialized endpoint (transport, device, host and process identity, network address). */
typedef struct { char internal[MSCCLPP_ENDPOINT_BYTES]; } mscclppEndpoint;
/* A serialized semaphore stub: one side's inbound counter, for the peer to reach. */
typedef struct { char internal[MSCCLPP_SEMAPHORE_STUB_BYTES]; } mscclppSemaphoreStub;
/* A serialized registered memory: for the peer to map with mscclppMemoryOpen. */
typedef struct { char internal[MSCCLPP_MEMORY_DESC_BYTES]; } mscclppMemoryDesc;

/* Creates and destroys a context. Destroy releases everything created through it. Local. */
mscclppResult_t mscclppContextCreate(mscclppContext_t* context);
mscclppResult_t mscclppContextDestroy(mscclppContext_t context);
/* Describes an endpoint of this process on `transport` and device (type, id). Local. */
mscclppResult_t mscclppEndpointCreate(mscclppContext_t context, mscclppTransport_t transport,
                                      mscclppDeviceType_t deviceType, int deviceId, mscclppEndpoint* endpoint);
/* Connects the local endpoint to the remote one (both ends call it, each with its own pair). Local. */
mscclppResult_t mscclppContextConnect(mscclppContext_t context, const mscclppEndpoint* local,
                                      const mscclppEndpoint* remote, mscclppConnection_t* connection);
/* Releases a connection (local). */
mscclppResult_t mscclppConnectionRelease(mscclppConnection_t connection);
/* Queues a copy of `size` bytes from `src` at `srcOffset` (memory of this process) into `dst` at
 * `dstOffset` (the peer's memory, from mscclppMemoryOpen or a communicator), in order with the
 * connection's other operations; returns without waiting. Over IB and SHM (libfabric: host
 * memory, CPU endpoints) the peer's memory is reached by its key and needs no mapping. */
mscclppResult_t mscclppConnectionWrite(mscclppConnection_t connection, mscclppRegMem_t dst, uint64_t dstOffset,
                                       mscclppRegMem_t src, uint64_t srcOffset, uint64_t size);
/* Queues, after the data of earlier writes, an 8-byte store of `value` at `dst` + `dstOffset`
 * (8-byte aligned): the signal that tells the peer the data has landed. Does not wait. Over IB
 * and SHM to host memory (tcp, shm) the peer stores it when it progresses, as a step from the
 * word's value where it can: a word that holds 2^18 or more is signalled by one connection only. */
mscclppResult_t mscclppConnectionUpdateAndSync(mscclppConnection_t connection, mscclppRegMem_t dst,
                                               uint64_t dstOffset, uint64_t value);
/* mscclppConnectionWrite and then mscclppConnectionUpdateAndSync(signal, signalOffset, value): on
 * IB and SHM links whose provider carries signals as remote CQ data (tcp, shm), one operation of
 * the provider instead of two, about half a small message's latency. Does not wait. */
mscclppResult_t mscclppConnectionWriteWithSignal(mscclppConnection_t connection, mscclppRegMem_t dst, uint64_t dstOffset,
                                                 mscclppRegMem_t src, uint64_t srcOffset, uint64_t size,
                                                 mscclppRegMem_t signal, uint64_t signalOffset, uint64_t value);
/* Waits until everything queued on the connection has completed, or `timeoutMs` milliseconds
 * pass (mscclppSystemError; negative: no limit). */
mscclppResult_t mscclppConnectionFlush(mscclppConnection_t connection, int64_t timeoutMs);
/* Makes the context's libfabric endpoint of `transport` progress once. A rank that waits in host
 * memory for a peer's IB or SHM writes calls it while it waits, for the lowest latency (a
 * background thread does the same every few tens of microseconds otherwise). Nothing to do
 * for P2P. Local. */
mscclppResult_t mscclppContextProgress(mscclppContext_t context, mscclppTransport_t transport);

/* ---- Registered memory ------------------------------------------------------------------------ */

/* Registers `size` bytes at `ptr` (device memory for P2P) for `transport`. Local. */
mscclppResult_t mscclppRegisterMemory(mscclppContext_t context, void* ptr, size_t size, mscclppTransport_t transport,
                                      mscclppRegMem_t* memory);
/* Serializes a registered memory for a peer. Local. */
mscclppResult_t mscclppMemorySerialize(mscclppRegMem_t memory, mscclppMemoryDesc* desc);
/* Maps a peer's registered memory into this process (CUDA IPC, or peer access in one process). Local. */
mscclppResult_t mscclppMemoryOpen(mscclppContext_t context, const mscclppMemoryDesc* desc, mscclppRegMem_t* memory);
/* The memory's address here and its size. */
mscclppResult_t mscclppMemoryData(mscclppRegMem_t memory, void** ptr, size_t* size);
/* Releases the handle (a mapping stays until its context is destroyed). Local. */
mscclppResult_t mscclppMemoryRelease(mscclppRegMem_t memory);

/* ---- Semaphores and memory channels ------------------------------------------------------------ */

/* Allocates this side's inbound counter for a semaphore over `connection` (owned by the context;
 * one stub per semaphore). Send the stub to the peer. Local. */
mscclppResult_t mscclppSemaphoreStubCreate(mscclppConnection_t connection, mscclppSemaphoreStub* stub);
/* Builds this side's semaphore from its own stub and the peer's. Local. */
mscclppResult_t mscclppSemaphoreCreate(mscclppConnection_t connection, const mscclppSemaphoreStub* local,
                                       const mscclppSemaphoreStub* remote, mscclppSemaphore_t* semaphore);
mscclppResult_t mscclppSemaphoreDestroy(mscclppSemaphore_t semaphore);
/* Device handles for GPU kernels: copy them to device or constant memory. Local. */
mscclppResult_t mscclppBaseMemoryChannelGetDeviceHandle(mscclppSemaphore_t semaphore,
                                                        mscclppBaseMemoryChannelDeviceHandle* handle);
/* dst: the peer's memory (opened here); src: this side's; packetBuffer: this side's scratch for
 * incoming packets, or NULL. putPackets writes into dst, so for packets dst must be the peer's
 * packet scratch (a second channel over the same semaphore serves when data and packets differ). */
mscclppResult_t mscclppMemoryChannelGetDeviceHandle(mscclppSemaphore_t semaphore, mscclppRegMem_t dst,
                                                    mscclppRegMem_t src, void* packetBuffer,
                                                    mscclppMemoryChannelDeviceHandle* handle);

/* ---- Proxy service and port channels ------------------------------------------------------------ */

typedef struct mscclppProxyService_s* mscclppProxyService_t;

/* A proxy service with a FIFO of `fifoSize` triggers (0: 512; otherwise a power of two >= 4, else
 * mscclppInvalidArgument). Local. */
mscclppResult_t mscclppProxyServiceCreate(int fifoSize, mscclppProxyService_t* service);
/* Adds a semaphore or a memory; returns its id for mscclppProxyServicePortChannel. Local. */
mscclppResult_t mscclppProxyServiceAddSemaphore(mscclppProxyService_t service, mscclppSemaphore_t semaphore,
                                                uint32_t* semaphoreId);
mscclppResult_t mscclppProxyServiceAddMemory(mscclppProxyService_t service, mscclppRegMem_t memory,
                                             uint32_t* memoryId);
/* A port channel that copies from memory `src` to memory `dst` and signals through the semaphore. */
mscclppResult_t mscclppProxyServicePortChannel(mscclppProxyService_t service, uint32_t semaphoreId, uint32_t dst,
                                               uint32_t src, mscclppPortChannelDeviceHandle* handle);
/* Starts and stops the proxy thread (before and after kernels use the port channels). Local. */
mscclppResult_t mscclppProxyServiceStart(mscclppProxyService_t service);
mscclppResult_t mscclppProxyServiceStop(mscclppProxyService_t service);
mscclppResult_t mscclppProxyServiceDestroy(mscclppProxyService_t service);

/* ---- Communicator (bootstrap + context) and futures --------------------------------------------- */

typedef struct mscclppCommunicator_s* mscclppCommunicator_t;
/* mscclppCommunicatorConnect's deviceId for a host-memory (CPU) endpoint. */
#define MSCCLPP_DEVICE_ID_CPU (-1)
typedef struct mscclppFuture_s* mscclppFuture_t;  /* a pending result; get it, then destroy it */

/* A communicator over a bootstrap and a context (it does not take ownership of them). Local. */
mscclppResult_t mscclppCommunicatorCreate(mscclppBootstrap_t bootstrap, mscclppContext_t context,
                                          mscclppCommunicator_t* communicator);
mscclppResult_t mscclppCommunicatorDestroy(mscclppCommunicator_t communicator);
/* Tags are in [0, 2^24). Calls of one kind (connect, semaphore, memory) with the same peer and tag
 * are paired with the peer's mirror calls in call order; kinds never mix.
 * Starts connecting to `remoteRank` (which makes the mirror call with this rank and the same tag);
 * the endpoint is GPU deviceId of this process, or host memory (the CPU) for deviceId
 * MSCCLPP_DEVICE_ID_CPU, as IB and SHM connections take. */
mscclppResult_t mscclppCommunicatorConnect(mscclppCommunicator_t communicator, mscclppTransport_t transport,
                                           int deviceId, int remoteRank, int tag, mscclppFuture_t* future);
/* Starts building a semaphore over `connection` with `remoteRank` (mirror call there). */
mscclppResult_t mscclppCommunicatorBuildSemaphore(mscclppCommunicator_t communicator, mscclppConnection_t connection,
                                                  int remoteRank, int tag, mscclppFuture_t* future);
/* Starts sending a registered memory to `remoteRank`, which receives it with RecvMemory. */
mscclppResult_t mscclppCommunicatorSendMemory(mscclppCommunicator_t communicator, mscclppRegMem_t memory,
                                              int remoteRank, int tag, mscclppFuture_t* future);
mscclppResult_t mscclppCommunicatorRecvMemory(mscclppCommunicator_t communicator, int remoteRank, int tag,
                                              mscclppFuture_t* future);
/* Blocks until the future's operation finished (bootstrap timeout); returns its result. May be
 * called any number of times, before or after a Get; a SendMemory future has only this. */
mscclppResult_t mscclppFutureWait(mscclppFuture_t future);
/* Waits, then hands out the result as a new handle: once per future, of the future's kind (else
 * mscclppInvalidUsage); a failed operation returns its error on every call. The memory of
 * GetMemory is already mapped here. Destroy the future afterwards. */
mscclppResult_t mscclppFutureGetConnection(mscclppFuture_t future, mscclppConnection_t* connection);
mscclppResult_t mscclppFutureGetSemaphore(mscclppFuture_t future, mscclppSemaphore_t* semaphore);
mscclppResult_t mscclppFutureGetMemory(mscclppFuture_t future, mscclppRegMem_t* memory);
/* Releases the future; its operation, if still running, finishes in the background. */
mscclppResult_t mscclppFutureDestroy(mscclppFuture_t future);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MSCCLPP_CORE_H_
