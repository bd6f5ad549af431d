/*
 * mscclpp.h: the MSCCL++ 0.1 legacy interface, as implemented by this Go library (libmscclpp.so).
 *
 * Programs built against the original 0.1 header run unchanged on this library: every type,
 * layout, enumerator, macro and function signature below is binary-compatible with it. The header
 * is C++ (alignas, inheritance, std::vector, a default argument); the functions have C linkage.
 *
 * How the pieces fit together:
 *   1. One rank makes a mscclppUniqueId (or all agree on an "ip:port"); every rank creates its
 *      communicator with it (mscclppCommInitRankFromId / mscclppCommInitRank).
 *   2. Each rank declares its connections with mscclppConnect; a connection from rank i to rank j
 *      with a given tag needs the mirror call on rank j. mscclppConnectionSetup then wires them all.
 *   3. mscclppGetAllDeviceConnections / mscclppGetDeviceConnection hand out the mscclppDevConn
 *      structs; copy them to the GPU and use their device functions inside kernels.
 *   4. mscclppProxyLaunch starts the CPU proxy that serves the kernels' requests; mscclppProxyStop
 *      and mscclppCommDestroy end it all.
 *
 * Device-side model: transfers are one-sided. The sender issues put() requests and a signal(); the
 * receiver only calls wait(). The sender may reuse a source buffer only after flush() returns; the
 * receiver may read the data only after wait() returns. Both ends may use one connection at once
 * as long as they write to disjoint parts of the registered buffers.
 *
 * Every function returns mscclppSuccess or an error code unless stated otherwise. "Collective"
 * means every rank of the communicator must make the call (in the same order relative to other
 * collective calls); "local" means a rank may call it alone.
 */
#ifndef MSCCLPP_H_
#define MSCCLPP_H_

/* Version of the interface this header describes. */
#define MSCCLPP_MAJOR 0 /* major version */
#define MSCCLPP_MINOR 1 /* minor version */
#define MSCCLPP_PATCH 0 /* patch version */
/* The version as one integer: major * 10000 + minor * 100 + patch (100 for 0.1.0). */
#define MSCCLPP_VERSION (MSCCLPP_MAJOR * 10000 + MSCCLPP_MINOR * 100 + MSCCLPP_PATCH)

/* Slots in each proxy's trigger ring (see mscclppfifo.h). A GPU thread only has to wait for a
 * slot when this many requests are outstanding. */
#define MSCCLPP_PROXY_FIFO_SIZE 128
/* The proxy copies its tail to device memory once per this many consumed triggers; in between the
 * GPU sees a stale tail, which costs nothing while the ring is far from full. */
#define MSCCLPP_PROXY_FIFO_FLUSH_COUNTER 4

#include <mscclpp/types.h>
#include <mscclppfifo.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <vector>

#ifdef __cplusplus
extern "C" {
#endif

/* The pair of signal counters of one connection end, in device memory (16-byte aligned). */
struct alignas(16) mscclppDevConnSignalEpochId {
  uint64_t device; /* bumped by every signal() of this end; the proxy forwards it to the peer's proxy counter */
  uint64_t proxy;  /* written by the peer's proxy: the latest epoch the peer has signalled to this end */
};

/* The plain-data part of a device connection; every pointer is a device address. */
struct mscclppBaseConn {
  int remoteRank;                                           /* rank at the other end of the connection */
  int tag;                                                  /* the tag given to mscclppConnect */
  void* localBuff;                                          /* this end's registered data buffer */
  struct mscclppDevConnSignalEpochId* localSignalEpochId;   /* this end's signal counters */
  struct mscclppDevConnSignalEpochId* remoteSignalEpochId;  /* the peer's counters when the GPU can reach them, else NULL */
  uint64_t* waitEpochId;                                    /* epochs this end has waited for; wait() bumps it first */
  void* remoteBuff;                                         /* the peer's data buffer when the GPU can reach it, else NULL */
};

/*
 * One end of a connection as a GPU kernel sees it. Requests go to the CPU proxy through `fifo`; the
 * proxy moves the data (DMA over NVLink/PCIe, or RDMA over InfiniBand) and updates the counters.
 * Offsets are byte offsets: source offsets into localBuff, destination offsets into the peer's buffer.
 * All functions are device-only, may be called by any number of threads at once, and those that
 * push a request spin while the proxy's ring is full.
 */
struct mscclppDevConn : mscclppBaseConn {
#ifdef __CUDACC__
  /* Asks the proxy to copy dataSize bytes from localBuff + srcDataOffset to the peer's buffer at
   * dstDataOffset. Returns once the request is queued; the source is in use until flush(). */
  __forceinline__ __device__ void put(uint64_t dstDataOffset, uint64_t srcDataOffset, uint64_t dataSize) {
    fifo.push(mscclppData, dstDataOffset, srcDataOffset, dataSize);
  }

  /* put() with the same offset on both sides. */
  __forceinline__ __device__ void put(uint64_t dataOffset, uint64_t dataSize) {
    put(dataOffset, dataOffset, dataSize);
  }

  /* Tells the peer that every earlier put() of this connection is ready to read. Returns once queued. */
  __forceinline__ __device__ void signal() {
    epochIncrement();
    fifo.push(mscclppFlag, 0, 0, kNonEmptyDataSize);
  }

  /* put() followed by signal(), as one request. */
  __forceinline__ __device__ void putWithSignal(uint64_t dstDataOffset, uint64_t srcDataOffset, uint64_t dataSize) {
    epochIncrement();
    fifo.push(mscclppData | mscclppFlag, dstDataOffset, srcDataOffset, dataSize);
  }

  /* putWithSignal() with the same offset on both sides. */
  __forceinline__ __device__ void putWithSignal(uint64_t dataOffset, uint64_t dataSize) {
    putWithSignal(dataOffset, dataOffset, dataSize);
  }

  /* putWithSignal() followed by flush(), as one request; blocks until the proxy has completed it. */
  __forceinline__ __device__ void putWithSignalAndFlush(uint64_t dstDataOffset, uint64_t srcDataOffset,
                                                        uint64_t dataSize) {
    epochIncrement();
    uint64_t slotNumber =
        fifo.push(mscclppData | mscclppFlag | mscclppSync, dstDataOffset, srcDataOffset, dataSize);
    waitUntilConsumed(slotNumber);
  }

  /* putWithSignalAndFlush() with the same offset on both sides. */
  __forceinline__ __device__ void putWithSignalAndFlush(uint64_t dataOffset, uint64_t dataSize) {
    putWithSignalAndFlush(dataOffset, dataOffset, dataSize);
  }

  /* Blocks until every earlier request of this connection has completed; then source buffers may be reused. */
  __forceinline__ __device__ void flush() {
    uint64_t slotNumber = fifo.push(mscclppSync, 0, 0, kNonEmptyDataSize);
    waitUntilConsumed(slotNumber);
  }

  /* Blocks until the peer has signalled once more than this end has waited so far; then the data is readable. */
  __forceinline__ __device__ void wait() {
    (*waitEpochId) += 1;
    while (*reinterpret_cast<volatile uint64_t*>(&localSignalEpochId->proxy) < (*waitEpochId))
      ;
  }

  /* Advances this end's signal epoch (part of signal(); exposed for kernels that signal by hand). */
  __forceinline__ __device__ void epochIncrement() {
    *reinterpret_cast<volatile uint64_t*>(&localSignalEpochId->device) += 1;
  }

 private:
  /* dataSize of requests that move no data: keeps the trigger's first word non-zero (zero means an empty slot). */
  static constexpr uint64_t kNonEmptyDataSize = 1;

  /* Spins until the proxy has cleared slot slotNumber, or (as a safety net) its tail has passed it. */
  __forceinline__ __device__ void waitUntilConsumed(uint64_t slotNumber) {
    while (*reinterpret_cast<volatile uint64_t*>(&fifo.triggerFifo[slotNumber % MSCCLPP_PROXY_FIFO_SIZE]) != 0 &&
           *reinterpret_cast<volatile uint64_t*>(fifo.triggerFifoTail) <= slotNumber)
      ;
  }

 public:
#endif
  struct mscclppConcurrentFifo fifo; /* this connection's request queue to its proxy (many GPU producers, one consumer) */
};

/* Opaque handle of a communicator. */
typedef struct mscclppComm* mscclppComm_t;
/* A device connection; note that this names the struct itself, not a pointer to it. */
typedef struct mscclppDevConn mscclppDevConn_t;

/* What a peer needs to address an InfiniBand memory region remotely. */
struct mscclppIbMrInfo {
  uint64_t addr; /* start address of the region in the owner's address space */
  uint32_t rkey; /* remote access key of the region */
};

/* An InfiniBand memory region registered by this process. */
struct mscclppIbMr {
  struct ibv_mr* mr;           /* the verbs memory region */
  void* buff;                  /* the registered buffer */
  struct mscclppIbMrInfo info; /* the part shared with peers */
};

/* How to reach a peer's copy of a registered buffer. */
struct mscclppRegisteredMemoryP2P {
  void* remoteBuff;  /* the peer's buffer mapped into this process (P2P transport), else NULL */
  mscclppIbMr* IbMr; /* the local memory region used for writes (IB transport), else NULL */
};

/* A buffer registered with mscclppRegisterBuffer. */
struct mscclppRegisteredMemory {
  std::vector<mscclppRegisteredMemoryP2P> p2p; /* one entry per connection, in mscclppConnect order */
};

/* Makes a fresh rendezvous id. Local: one rank calls it and sends the id to all others out of band.
 * Does not block on other ranks. uniqueId: receives the id. */
mscclppResult_t mscclppGetUniqueId(mscclppUniqueId* uniqueId);

/* Creates the communicator of rank `rank` among `nranks`, meeting at ipPortPair ("ip:port", where rank 0
 * listens). Collective; blocks until all ranks have joined or the bootstrap timeout expires.
 * nranks and ipPortPair must match on all ranks; ranks must be distinct in [0, nranks). comm: receives it.
 * Where others can reach the address, set MSCCLPP_BOOTSTRAP_KEY alike on every rank (docs/CONFIG.md). */
mscclppResult_t mscclppCommInitRank(mscclppComm_t* comm, int nranks, const char* ipPortPair, int rank);

/* Like mscclppCommInitRank, but meets through an id from mscclppGetUniqueId. Collective; blocks until all
 * ranks have joined or the bootstrap timeout expires. nranks and id must match on all ranks. */
mscclppResult_t mscclppCommInitRankFromId(mscclppComm_t* comm, int nranks, mscclppUniqueId id, int rank);

/* mscclppBootstrapAllGather and mscclppBootstrapBarrier must not overlap on one communicator (two
 * threads at once): one made while the other is in progress fails at once with
 * mscclppInvalidUsage, its log naming the call in progress. */
/* Gathers `size` bytes from every rank over the bootstrap network: rank r's input and output part is
 * data[r*size, (r+1)*size). Collective; blocks until done. size must match on all ranks and be at
 * most 2^30 (1 GiB), else mscclppInvalidArgument. */
mscclppResult_t mscclppBootstrapAllGather(mscclppComm_t comm, void* data, int size);

/* Returns once every rank has reached it (an all-gather of nothing). Collective; blocks. */
mscclppResult_t mscclppBootstrapBarrier(mscclppComm_t comm);

/* Releases the communicator and all its connections and buffers. Local; stop the proxy first, and make
 * sure no kernel still uses its connections. comm is invalid afterwards. */
mscclppResult_t mscclppCommDestroy(mscclppComm_t comm);

/* Returns a static, human-readable description of result. Local; never fails, never blocks. */
const char* mscclppGetErrorString(mscclppResult_t result);

/* Declares a connection to remoteRank, identified on this rank by (remoteRank, tag), tag 0 or more
 * (a negative tag is mscclppInvalidArgument); nothing is exchanged until mscclppConnectionSetup. Local; does not block. The peer must declare the mirror
 * connection (this rank, same tag, same transport), and both ends should register buffers of the
 * same size. localBuff/buffSize: the device buffer the peer may write into and this end reads from.
 * ibDev: InfiniBand device name (e.g. "mlx5_0") for mscclppTransportIB, NULL for P2P.
 * mscclppTransportIB goes over libfabric: its verbs provider on ibDev (NULL: the provider's choice),
 * or the provider MSCCLPP_NET_PROVIDER names (e.g. tcp, where there is no RDMA NIC; ibDev is then
 * not checked); a device verbs does not offer is mscclppInvalidUsage naming the ones it does. GPU
 * memory goes staged through host buffers; the device connection's remote pointers are NULL (the
 * proxy carries every put and signal), and mscclppRegisterBuffer is refused on such a communicator.
 * A buffSize that runs past the end of localBuff's allocation is refused by mscclppConnectionSetup
 * (mscclppInvalidArgument). */
mscclppResult_t mscclppConnect(mscclppComm_t comm, int remoteRank, int tag, void* localBuff, uint64_t buffSize,
                               mscclppTransport_t transportType, const char* ibDev = 0);

/* Wires every connection declared so far with its peer and returns once all ranks are ready.
 * Collective; blocks (it ends with a barrier). Call after all mscclppConnect calls. */
mscclppResult_t mscclppConnectionSetup(mscclppComm_t comm);

/* Returns the array of this rank's device connections, in mscclppConnect order, and its length.
 * Local; does not block. The array is host memory owned by comm (valid until mscclppCommDestroy);
 * its pointer fields are device addresses, so copy the structs to the GPU for kernels. */
mscclppResult_t mscclppGetAllDeviceConnections(mscclppComm_t comm, mscclppDevConn_t** devConns, int* nConns);

/* Returns the device connection declared with (remoteRank, tag), in the same memory as
 * mscclppGetAllDeviceConnections. Local; does not block. */
mscclppResult_t mscclppGetDeviceConnection(mscclppComm_t comm, int remoteRank, int tag, mscclppDevConn_t** devConn);

/* Starts the proxy threads that serve this rank's connections (at most one per transport and IB
 * device). Local; returns once they run. Call after mscclppConnectionSetup and before any kernel
 * that uses a connection. */
mscclppResult_t mscclppProxyLaunch(mscclppComm_t comm);

/* Stops the proxy threads. Collective: it first waits for all ranks (a barrier), then returns once
 * this rank's proxies have exited. Kernels using the connections must have finished. Returns
 * mscclppInvalidArgument if the proxy refused a kernel's request to read or write outside a
 * connection's buffers (nothing of it was copied, that connection's later requests were refused
 * too, and the log names the connection and the request). */
mscclppResult_t mscclppProxyStop(mscclppComm_t comm);

/* Stores the calling process's rank in *rank. Local; does not block. */
mscclppResult_t mscclppCommRank(mscclppComm_t comm, int* rank);

/* Stores the number of ranks in *size. Local; does not block. */
mscclppResult_t mscclppCommSize(mscclppComm_t comm, int* size);

/* Sets, for this process, how many seconds each later blocking bootstrap step may take before
 * failing, 1 to 86400 (else mscclppInvalidArgument); applies to existing communicators too (a
 * step already waiting keeps its deadline). Local; does not block. */
mscclppResult_t mscclppSetBootstrapConnTimeout(int timeout);

/* A log sink: receives each formatted log line. */
typedef void (*mscclppLogHandler_t)(const char* msg);

/* The built-in log sink: writes msg to standard output. Local; does not block. */
void mscclppDefaultLogHandler(const char* msg);

/* Sends all later log lines of this process to handler instead. Local; does not block. */
mscclppResult_t mscclppSetLogHandler(mscclppLogHandler_t handler);

/* Registers local_memory (size bytes of device memory) with every connection's peer and fills
 * regMem->p2p with one entry per connection, in mscclppConnect order (a peer reached only over IB:
 * remoteBuff NULL; IbMr is always NULL). Collective among connected peers: each peer must register
 * a buffer in the same sequence; blocks until the peers have answered. Call after
 * mscclppConnectionSetup. */
mscclppResult_t mscclppRegisterBuffer(mscclppComm_t comm, void* local_memory, size_t size,
                                      mscclppRegisteredMemory* regMem);

/* Copies size bytes from srcBuff + srcOffset into every connected peer's registered buffer at
 * dstOffset, queued on the CUDA stream `stream` (a cudaStream_t passed as an integer). Local; returns
 * once queued. When a peer is reached only over IB it blocks instead: srcBuff must then be device
 * memory of the communicator's GPU; the call waits for the stream (the P2P peers' copies included),
 * writes over the network and returns once the bytes are in those peers' buffers (at most
 * MSCCLPP_NET_TIMEOUT), holding the communicator meanwhile. Note: the original 0.1 library served
 * only P2P connections here, and ignored both offsets, copying srcBuff to the start of each peer's
 * buffer. */
mscclppResult_t mscclppRegisteredBufferWrite(mscclppComm_t comm, mscclppRegisteredMemory* regMem, void* srcBuff,
                                             size_t size, uint32_t srcOffset, uint32_t dstOffset, int64_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MSCCLPP_H_ */
