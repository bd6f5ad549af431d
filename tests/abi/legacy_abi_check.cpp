// legacy_abi_check pins the binary layout of include/mscclpp.h and include/mscclppfifo.h to the
// numbers of the original MSCCL++ 0.1 header (x86-64 / aarch64 Linux, LP64). It fails to compile
// when any of them drifts, and prints them when run.
#include <mscclpp.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

// mscclppDevConn derives from mscclppBaseConn and adds a member, so it is not standard-layout and
// offsetof on it is only conditionally supported; GCC and Clang support it and warn.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#endif

#define CHECK_EQ(expr, want) static_assert((expr) == (want), #expr " must be " #want)

// Signal counters.
CHECK_EQ(sizeof(mscclppDevConnSignalEpochId), 16);
CHECK_EQ(alignof(mscclppDevConnSignalEpochId), 16);
CHECK_EQ(offsetof(mscclppDevConnSignalEpochId, device), 0);
CHECK_EQ(offsetof(mscclppDevConnSignalEpochId, proxy), 8);

// Plain-data part of a connection.
CHECK_EQ(sizeof(mscclppBaseConn), 48);
CHECK_EQ(alignof(mscclppBaseConn), 8);
CHECK_EQ(offsetof(mscclppBaseConn, remoteRank), 0);
CHECK_EQ(offsetof(mscclppBaseConn, tag), 4);
CHECK_EQ(offsetof(mscclppBaseConn, localBuff), 8);
CHECK_EQ(offsetof(mscclppBaseConn, localSignalEpochId), 16);
CHECK_EQ(offsetof(mscclppBaseConn, remoteSignalEpochId), 24);
CHECK_EQ(offsetof(mscclppBaseConn, waitEpochId), 32);
CHECK_EQ(offsetof(mscclppBaseConn, remoteBuff), 40);

// Device connection: the base, then the FIFO.
CHECK_EQ(sizeof(mscclppDevConn), 80);
CHECK_EQ(alignof(mscclppDevConn), 8);
CHECK_EQ(offsetof(mscclppDevConn, remoteRank), 0);
CHECK_EQ(offsetof(mscclppDevConn, remoteBuff), 40);
CHECK_EQ(offsetof(mscclppDevConn, fifo), 48);
CHECK_EQ(sizeof(mscclppDevConn_t), sizeof(mscclppDevConn));

// FIFO producer state.
CHECK_EQ(sizeof(mscclppConcurrentFifo), 32);
CHECK_EQ(alignof(mscclppConcurrentFifo), 8);
CHECK_EQ(offsetof(mscclppConcurrentFifo, triggerFifo), 0);
CHECK_EQ(offsetof(mscclppConcurrentFifo, triggerFifoTail), 8);
CHECK_EQ(offsetof(mscclppConcurrentFifo, triggerFifoHead), 16);
CHECK_EQ(offsetof(mscclppConcurrentFifo, connId), 24);

// Trigger.
CHECK_EQ(sizeof(mscclppTrigger), 16);
CHECK_EQ(alignof(mscclppTrigger), 16);
CHECK_EQ(sizeof(mscclppTrigger_t), sizeof(void*));
static_assert(std::is_same<std::underlying_type<mscclppTriggerType_t>::type, uint64_t>::value,
              "mscclppTriggerType_t must be a uint64_t enum");

// Host-side structs.
CHECK_EQ(sizeof(mscclppUniqueId), 128);
CHECK_EQ(sizeof(mscclppIbMrInfo), 16);
CHECK_EQ(offsetof(mscclppIbMrInfo, addr), 0);
CHECK_EQ(offsetof(mscclppIbMrInfo, rkey), 8);
CHECK_EQ(sizeof(mscclppIbMr), 32);
CHECK_EQ(offsetof(mscclppIbMr, mr), 0);
CHECK_EQ(offsetof(mscclppIbMr, buff), 8);
CHECK_EQ(offsetof(mscclppIbMr, info), 16);
CHECK_EQ(sizeof(mscclppRegisteredMemoryP2P), 16);
CHECK_EQ(offsetof(mscclppRegisteredMemoryP2P, remoteBuff), 0);
CHECK_EQ(offsetof(mscclppRegisteredMemoryP2P, IbMr), 8);
CHECK_EQ(sizeof(mscclppRegisteredMemory), sizeof(std::vector<mscclppRegisteredMemoryP2P>));
CHECK_EQ(offsetof(mscclppRegisteredMemory, p2p), 0);

// Enumerations.
CHECK_EQ(mscclppSuccess, 0);
CHECK_EQ(mscclppUnhandledCudaError, 1);
CHECK_EQ(mscclppSystemError, 2);
CHECK_EQ(mscclppInternalError, 3);
CHECK_EQ(mscclppInvalidArgument, 4);
CHECK_EQ(mscclppInvalidUsage, 5);
CHECK_EQ(mscclppRemoteError, 6);
CHECK_EQ(mscclppInProgress, 7);
CHECK_EQ(mscclppNumResults, 8);
CHECK_EQ(sizeof(mscclppResult_t), sizeof(int));
CHECK_EQ(mscclppTransportP2P, 0);
CHECK_EQ(mscclppTransportSHM, 1);
CHECK_EQ(mscclppTransportIB, 2);
CHECK_EQ(sizeof(mscclppTransport_t), sizeof(int));
CHECK_EQ(mscclppData, 1);
CHECK_EQ(mscclppFlag, 2);
CHECK_EQ(mscclppSync, 4);

// Macros.
CHECK_EQ(MSCCLPP_MAJOR, 0);
CHECK_EQ(MSCCLPP_MINOR, 1);
CHECK_EQ(MSCCLPP_PATCH, 0);
CHECK_EQ(MSCCLPP_VERSION, 100);
CHECK_EQ(MSCCLPP_PROXY_FIFO_SIZE, 128);
CHECK_EQ(MSCCLPP_PROXY_FIFO_FLUSH_COUNTER, 4);
CHECK_EQ(MSCCLPP_UNIQUE_ID_BYTES, 128);
CHECK_EQ(MSCCLPP_BITS_SIZE, 32);
CHECK_EQ(MSCCLPP_BITS_OFFSET, 32);
CHECK_EQ(MSCCLPP_BITS_TYPE, 3);
CHECK_EQ(MSCCLPP_BITS_CONNID, 10);

// Function signatures, including the default argument of mscclppConnect.
static_assert(std::is_same<decltype(&mscclppGetUniqueId), mscclppResult_t (*)(mscclppUniqueId*)>::value,
              "mscclppGetUniqueId signature");
static_assert(std::is_same<decltype(&mscclppCommInitRank),
                           mscclppResult_t (*)(mscclppComm_t*, int, const char*, int)>::value,
              "mscclppCommInitRank signature");
static_assert(std::is_same<decltype(&mscclppCommInitRankFromId),
                           mscclppResult_t (*)(mscclppComm_t*, int, mscclppUniqueId, int)>::value,
              "mscclppCommInitRankFromId signature");
static_assert(std::is_same<decltype(&mscclppBootstrapAllGather), mscclppResult_t (*)(mscclppComm_t, void*, int)>::value,
              "mscclppBootstrapAllGather signature");
static_assert(std::is_same<decltype(&mscclppBootstrapBarrier), mscclppResult_t (*)(mscclppComm_t)>::value,
              "mscclppBootstrapBarrier signature");
static_assert(std::is_same<decltype(&mscclppCommDestroy), mscclppResult_t (*)(mscclppComm_t)>::value,
              "mscclppCommDestroy signature");
static_assert(std::is_same<decltype(&mscclppGetErrorString), const char* (*)(mscclppResult_t)>::value,
              "mscclppGetErrorString signature");
static_assert(std::is_same<decltype(&mscclppConnect), mscclppResult_t (*)(mscclppComm_t, int, int, void*, uint64_t,
                                                                          mscclppTransport_t, const char*)>::value,
              "mscclppConnect signature");
static_assert(std::is_same<decltype(&mscclppConnectionSetup), mscclppResult_t (*)(mscclppComm_t)>::value,
              "mscclppConnectionSetup signature");
static_assert(std::is_same<decltype(&mscclppGetAllDeviceConnections),
                           mscclppResult_t (*)(mscclppComm_t, mscclppDevConn_t**, int*)>::value,
              "mscclppGetAllDeviceConnections signature");
static_assert(std::is_same<decltype(&mscclppGetDeviceConnection),
                           mscclppResult_t (*)(mscclppComm_t, int, int, mscclppDevConn_t**)>::value,
              "mscclppGetDeviceConnection signature");
static_assert(std::is_same<decltype(&mscclppProxyLaunch), mscclppResult_t (*)(mscclppComm_t)>::value,
              "mscclppProxyLaunch signature");
static_assert(std::is_same<decltype(&mscclppProxyStop), mscclppResult_t (*)(mscclppComm_t)>::value,
              "mscclppProxyStop signature");
static_assert(std::is_same<decltype(&mscclppCommRank), mscclppResult_t (*)(mscclppComm_t, int*)>::value,
              "mscclppCommRank signature");
static_assert(std::is_same<decltype(&mscclppCommSize), mscclppResult_t (*)(mscclppComm_t, int*)>::value,
              "mscclppCommSize signature");
static_assert(std::is_same<decltype(&mscclppSetBootstrapConnTimeout), mscclppResult_t (*)(int)>::value,
              "mscclppSetBootstrapConnTimeout signature");
static_assert(std::is_same<mscclppLogHandler_t, void (*)(const char*)>::value, "mscclppLogHandler_t");
static_assert(std::is_same<decltype(&mscclppDefaultLogHandler), void (*)(const char*)>::value,
              "mscclppDefaultLogHandler signature");
static_assert(std::is_same<decltype(&mscclppSetLogHandler), mscclppResult_t (*)(mscclppLogHandler_t)>::value,
              "mscclppSetLogHandler signature");
static_assert(std::is_same<decltype(&mscclppRegisterBuffer),
                           mscclppResult_t (*)(mscclppComm_t, void*, size_t, mscclppRegisteredMemory*)>::value,
              "mscclppRegisterBuffer signature");
static_assert(std::is_same<decltype(&mscclppRegisteredBufferWrite),
                           mscclppResult_t (*)(mscclppComm_t, mscclppRegisteredMemory*, void*, size_t, uint32_t,
                                               uint32_t, int64_t)>::value,
              "mscclppRegisteredBufferWrite signature");

// The default argument: a call without ibDev must compile. Never evaluated, so nothing is linked.
static_assert(std::is_same<decltype(mscclppConnect(nullptr, 0, 0, nullptr, 0, mscclppTransportP2P)),
                           mscclppResult_t>::value,
              "mscclppConnect must default ibDev");

// Where a bit-field lands: which word of value[] holds it, its lowest bit and its width.
struct BitPlace {
  int word;
  int shift;
  int width;
};

// locate finds the bits of a trigger whose only non-zero field is the one set by setAllOnes.
template <typename SetAllOnes>
static BitPlace locate(SetAllOnes setAllOnes) {
  mscclppTrigger t;
  t.value[0] = 0;
  t.value[1] = 0;
  setAllOnes(t);
  BitPlace p = {-1, -1, 0};
  for (int word = 0; word < 2; ++word) {
    for (int bit = 0; bit < 64; ++bit) {
      if ((t.value[word] >> bit) & 1) {
        if (p.word == -1) {
          p.word = word;
          p.shift = bit;
        }
        ++p.width;  // bits in the other word too, so a field that spills shows up as too wide
      }
    }
  }
  return p;
}

// lowBits returns a value with the low `width` bits set (width < 64).
static constexpr uint64_t lowBits(int width) { return (uint64_t(1) << width) - 1; }

static int failures = 0;

static void expectPlace(const char* field, BitPlace got, int word, int shift, int width) {
  std::printf("mscclppTrigger.fields.%-34s value[%d] bits %d-%d\n", field, got.word, got.shift,
              got.shift + got.width - 1);
  if (got.word != word || got.shift != shift || got.width != width) {
    std::printf("  FAIL: want value[%d] bits %d-%d\n", word, shift, shift + width - 1);
    ++failures;
  }
}

#define PRINT(expr) std::printf("%-58s %llu\n", #expr, static_cast<unsigned long long>(expr))

int main() {
  PRINT(sizeof(mscclppDevConnSignalEpochId));
  PRINT(alignof(mscclppDevConnSignalEpochId));
  PRINT(offsetof(mscclppDevConnSignalEpochId, device));
  PRINT(offsetof(mscclppDevConnSignalEpochId, proxy));
  PRINT(sizeof(mscclppBaseConn));
  PRINT(alignof(mscclppBaseConn));
  PRINT(offsetof(mscclppBaseConn, remoteRank));
  PRINT(offsetof(mscclppBaseConn, tag));
  PRINT(offsetof(mscclppBaseConn, localBuff));
  PRINT(offsetof(mscclppBaseConn, localSignalEpochId));
  PRINT(offsetof(mscclppBaseConn, remoteSignalEpochId));
  PRINT(offsetof(mscclppBaseConn, waitEpochId));
  PRINT(offsetof(mscclppBaseConn, remoteBuff));
  PRINT(sizeof(mscclppDevConn));
  PRINT(alignof(mscclppDevConn));
  PRINT(offsetof(mscclppDevConn, fifo));
  PRINT(sizeof(mscclppConcurrentFifo));
  PRINT(alignof(mscclppConcurrentFifo));
  PRINT(offsetof(mscclppConcurrentFifo, triggerFifo));
  PRINT(offsetof(mscclppConcurrentFifo, triggerFifoTail));
  PRINT(offsetof(mscclppConcurrentFifo, triggerFifoHead));
  PRINT(offsetof(mscclppConcurrentFifo, connId));
  PRINT(sizeof(mscclppTrigger));
  PRINT(alignof(mscclppTrigger));
  PRINT(sizeof(mscclppUniqueId));
  PRINT(sizeof(mscclppIbMrInfo));
  PRINT(sizeof(mscclppIbMr));
  PRINT(sizeof(mscclppRegisteredMemoryP2P));
  PRINT(sizeof(mscclppRegisteredMemory));
  PRINT(mscclppNumResults);
  PRINT(mscclppTransportIB);
  PRINT(MSCCLPP_VERSION);
  PRINT(MSCCLPP_PROXY_FIFO_SIZE);
  PRINT(MSCCLPP_PROXY_FIFO_FLUSH_COUNTER);
  PRINT(MSCCLPP_UNIQUE_ID_BYTES);

  expectPlace("dataSize", locate([&](mscclppTrigger& t) { t.fields.dataSize = lowBits(MSCCLPP_BITS_SIZE); }), 0, 0, MSCCLPP_BITS_SIZE);
  expectPlace("srcDataOffset", locate([&](mscclppTrigger& t) { t.fields.srcDataOffset = lowBits(MSCCLPP_BITS_OFFSET); }), 0,
              MSCCLPP_BITS_SIZE, MSCCLPP_BITS_OFFSET);
  expectPlace("dstDataOffset", locate([&](mscclppTrigger& t) { t.fields.dstDataOffset = lowBits(MSCCLPP_BITS_OFFSET); }), 1, 0,
              MSCCLPP_BITS_OFFSET);
  expectPlace("connId", locate([&](mscclppTrigger& t) { t.fields.connId = lowBits(MSCCLPP_BITS_CONNID); }), 1, MSCCLPP_BITS_OFFSET,
              MSCCLPP_BITS_CONNID);
  expectPlace("type", locate([&](mscclppTrigger& t) { t.fields.type = lowBits(MSCCLPP_BITS_TYPE); }), 1,
              MSCCLPP_BITS_OFFSET + MSCCLPP_BITS_CONNID, MSCCLPP_BITS_TYPE);
  return failures == 0 ? 0 : 1;
}
