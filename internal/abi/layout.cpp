// The C++ side of package abi: what the compiler makes of include/mscclpp.h and mscclppfifo.h,
// and of the device handle headers include/mscclpp/*_device.h.
#include <mscclpp.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/memory_channel_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/semaphore_device.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "layout.h"

// mscclppDevConn derives from mscclppBaseConn and adds a member, so it is not standard-layout and
// offsetof on it is only conditionally supported; GCC and Clang support it and warn.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#endif

namespace {

// One number the compiler derived from the headers, named by the C expression (or pseudo-expression)
// that yields it.
struct Entry {
  std::string name;
  uint64_t value;
};

#define SIZEOF(T) {"sizeof(" #T ")", sizeof(T)}
#define ALIGNOF(T) {"alignof(" #T ")", alignof(T)}
#define OFFSETOF(T, field) {"offsetof(" #T ", " #field ")", offsetof(T, field)}
#define VALUE(x) {#x, static_cast<uint64_t>(x)}

const Entry kEntries[] = {
    SIZEOF(mscclppDevConnSignalEpochId),
    ALIGNOF(mscclppDevConnSignalEpochId),
    OFFSETOF(mscclppDevConnSignalEpochId, device),
    OFFSETOF(mscclppDevConnSignalEpochId, proxy),

    SIZEOF(mscclppBaseConn),
    ALIGNOF(mscclppBaseConn),
    OFFSETOF(mscclppBaseConn, remoteRank),
    OFFSETOF(mscclppBaseConn, tag),
    OFFSETOF(mscclppBaseConn, localBuff),
    OFFSETOF(mscclppBaseConn, localSignalEpochId),
    OFFSETOF(mscclppBaseConn, remoteSignalEpochId),
    OFFSETOF(mscclppBaseConn, waitEpochId),
    OFFSETOF(mscclppBaseConn, remoteBuff),

    SIZEOF(mscclppDevConn),
    ALIGNOF(mscclppDevConn),
    OFFSETOF(mscclppDevConn, remoteRank),
    OFFSETOF(mscclppDevConn, tag),
    OFFSETOF(mscclppDevConn, localBuff),
    OFFSETOF(mscclppDevConn, localSignalEpochId),
    OFFSETOF(mscclppDevConn, remoteSignalEpochId),
    OFFSETOF(mscclppDevConn, waitEpochId),
    OFFSETOF(mscclppDevConn, remoteBuff),
    OFFSETOF(mscclppDevConn, fifo),

    SIZEOF(mscclppConcurrentFifo),
    ALIGNOF(mscclppConcurrentFifo),
    OFFSETOF(mscclppConcurrentFifo, triggerFifo),
    OFFSETOF(mscclppConcurrentFifo, triggerFifoTail),
    OFFSETOF(mscclppConcurrentFifo, triggerFifoHead),
    OFFSETOF(mscclppConcurrentFifo, connId),

    SIZEOF(mscclppTrigger),
    ALIGNOF(mscclppTrigger),
    OFFSETOF(mscclppTrigger, value),

    SIZEOF(mscclppUniqueId),
    ALIGNOF(mscclppUniqueId),

    SIZEOF(mscclppIbMrInfo),
    ALIGNOF(mscclppIbMrInfo),
    OFFSETOF(mscclppIbMrInfo, addr),
    OFFSETOF(mscclppIbMrInfo, rkey),

    SIZEOF(mscclppIbMr),
    ALIGNOF(mscclppIbMr),
    OFFSETOF(mscclppIbMr, mr),
    OFFSETOF(mscclppIbMr, buff),
    OFFSETOF(mscclppIbMr, info),

    SIZEOF(mscclppRegisteredMemoryP2P),
    ALIGNOF(mscclppRegisteredMemoryP2P),
    OFFSETOF(mscclppRegisteredMemoryP2P, remoteBuff),
    OFFSETOF(mscclppRegisteredMemoryP2P, IbMr),

    SIZEOF(mscclppRegisteredMemory),
    ALIGNOF(mscclppRegisteredMemory),
    OFFSETOF(mscclppRegisteredMemory, p2p),

    SIZEOF(mscclppResult_t),
    VALUE(mscclppSuccess),
    VALUE(mscclppUnhandledCudaError),
    VALUE(mscclppSystemError),
    VALUE(mscclppInternalError),
    VALUE(mscclppInvalidArgument),
    VALUE(mscclppInvalidUsage),
    VALUE(mscclppRemoteError),
    VALUE(mscclppInProgress),
    VALUE(mscclppNumResults),

    SIZEOF(mscclppTransport_t),
    VALUE(mscclppTransportP2P),
    VALUE(mscclppTransportSHM),
    VALUE(mscclppTransportIB),

    SIZEOF(mscclppTriggerType_t),
    VALUE(mscclppData),
    VALUE(mscclppFlag),
    VALUE(mscclppSync),

    VALUE(MSCCLPP_MAJOR),
    VALUE(MSCCLPP_MINOR),
    VALUE(MSCCLPP_PATCH),
    VALUE(MSCCLPP_VERSION),
    VALUE(MSCCLPP_PROXY_FIFO_SIZE),
    VALUE(MSCCLPP_PROXY_FIFO_FLUSH_COUNTER),
    VALUE(MSCCLPP_UNIQUE_ID_BYTES),
    VALUE(MSCCLPP_BITS_SIZE),
    VALUE(MSCCLPP_BITS_OFFSET),
    VALUE(MSCCLPP_BITS_TYPE),
    VALUE(MSCCLPP_BITS_CONNID),

    // Device handles (include/mscclpp/*_device.h).
    SIZEOF(mscclppProxyTrigger),
    ALIGNOF(mscclppProxyTrigger),
    OFFSETOF(mscclppProxyTrigger, fst),
    OFFSETOF(mscclppProxyTrigger, snd),

    SIZEOF(mscclppFifoDeviceHandle),
    ALIGNOF(mscclppFifoDeviceHandle),
    OFFSETOF(mscclppFifoDeviceHandle, triggers),
    OFFSETOF(mscclppFifoDeviceHandle, tailReplica),
    OFFSETOF(mscclppFifoDeviceHandle, head),
    OFFSETOF(mscclppFifoDeviceHandle, size),
    OFFSETOF(mscclppFifoDeviceHandle, reserved),

    SIZEOF(mscclppMemorySemaphoreDeviceHandle),
    ALIGNOF(mscclppMemorySemaphoreDeviceHandle),
    OFFSETOF(mscclppMemorySemaphoreDeviceHandle, inboundToken),
    OFFSETOF(mscclppMemorySemaphoreDeviceHandle, outboundToken),
    OFFSETOF(mscclppMemorySemaphoreDeviceHandle, remoteInboundToken),
    OFFSETOF(mscclppMemorySemaphoreDeviceHandle, expectedInboundToken),

    SIZEOF(mscclppHostSemaphoreDeviceHandle),
    ALIGNOF(mscclppHostSemaphoreDeviceHandle),
    OFFSETOF(mscclppHostSemaphoreDeviceHandle, inboundToken),
    OFFSETOF(mscclppHostSemaphoreDeviceHandle, expectedInboundToken),

    SIZEOF(mscclppBaseMemoryChannelDeviceHandle),
    ALIGNOF(mscclppBaseMemoryChannelDeviceHandle),
    OFFSETOF(mscclppBaseMemoryChannelDeviceHandle, semaphore),

    SIZEOF(mscclppMemoryChannelDeviceHandle),
    ALIGNOF(mscclppMemoryChannelDeviceHandle),
    OFFSETOF(mscclppMemoryChannelDeviceHandle, semaphore),
    OFFSETOF(mscclppMemoryChannelDeviceHandle, dst),
    OFFSETOF(mscclppMemoryChannelDeviceHandle, src),
    OFFSETOF(mscclppMemoryChannelDeviceHandle, packetBuffer),

    SIZEOF(mscclppPortChannelDeviceHandle),
    ALIGNOF(mscclppPortChannelDeviceHandle),
    OFFSETOF(mscclppPortChannelDeviceHandle, channelId),
    OFFSETOF(mscclppPortChannelDeviceHandle, reserved),
    OFFSETOF(mscclppPortChannelDeviceHandle, semaphore),
    OFFSETOF(mscclppPortChannelDeviceHandle, fifo),

    VALUE(MSCCLPP_TRIGGER_BITS_SIZE),
    VALUE(MSCCLPP_TRIGGER_BITS_OFFSET),
    VALUE(MSCCLPP_TRIGGER_BITS_CONNID),
    VALUE(MSCCLPP_TRIGGER_BITS_TYPE),
    VALUE(MSCCLPP_TRIGGER_SHIFT_SIZE),
    VALUE(MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET),
    VALUE(MSCCLPP_TRIGGER_SHIFT_DST_OFFSET),
    VALUE(MSCCLPP_TRIGGER_SHIFT_CONNID),
    VALUE(MSCCLPP_TRIGGER_SHIFT_TYPE),
    VALUE(MSCCLPP_TRIGGER_DATA),
    VALUE(MSCCLPP_TRIGGER_FLAG),
    VALUE(MSCCLPP_TRIGGER_SYNC),
    VALUE(MSCCLPP_TRIGGER_NO_DATA_SIZE),
};

// A trigger bit-field: its name and how to set it to all ones.
struct TriggerField {
  const char* name;
  void (*setAllOnes)(mscclppTrigger*);
};

// The values are exactly as wide as the field, so the assignments do not overflow.
constexpr uint64_t kAllOnes = ~uint64_t(0);
constexpr int kWordBits = 64;

const TriggerField kTriggerFields[] = {
    {"mscclppTrigger.fields.dataSize",
     [](mscclppTrigger* t) { t->fields.dataSize = kAllOnes >> (kWordBits - MSCCLPP_BITS_SIZE); }},
    {"mscclppTrigger.fields.srcDataOffset",
     [](mscclppTrigger* t) { t->fields.srcDataOffset = kAllOnes >> (kWordBits - MSCCLPP_BITS_OFFSET); }},
    {"mscclppTrigger.fields.dstDataOffset",
     [](mscclppTrigger* t) { t->fields.dstDataOffset = kAllOnes >> (kWordBits - MSCCLPP_BITS_OFFSET); }},
    {"mscclppTrigger.fields.connId",
     [](mscclppTrigger* t) { t->fields.connId = kAllOnes >> (kWordBits - MSCCLPP_BITS_CONNID); }},
    {"mscclppTrigger.fields.type",
     [](mscclppTrigger* t) { t->fields.type = kAllOnes >> (kWordBits - MSCCLPP_BITS_TYPE); }},
};

constexpr size_t kNumWords = sizeof(mscclppTrigger::value) / sizeof(mscclppTrigger::value[0]);

// Marks a bit position that no bit of the field occupies.
constexpr uint64_t kNoBit = ~uint64_t(0);

// appendBitPlace adds where a trigger field lives: the index of the word of value[] that holds its
// lowest bit, that bit's position in the word, and the number of bits the field occupies in total.
void appendBitPlace(std::vector<Entry>* out, const TriggerField& f) {
  mscclppTrigger t;
  for (size_t w = 0; w < kNumWords; ++w) t.value[w] = 0;
  f.setAllOnes(&t);
  uint64_t word = kNoBit, shift = kNoBit, width = 0;
  for (size_t w = 0; w < kNumWords; ++w) {
    for (int bit = 0; bit < kWordBits; ++bit) {
      if (((t.value[w] >> bit) & 1) == 0) continue;
      if (width == 0) {
        word = w;
        shift = bit;
      }
      ++width;
    }
  }
  out->push_back({std::string("bitword(") + f.name + ")", word});
  out->push_back({std::string("bitshift(") + f.name + ")", shift});
  out->push_back({std::string("bitwidth(") + f.name + ")", width});
}

const std::vector<Entry>& allEntries() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> v(std::begin(kEntries), std::end(kEntries));
    for (const TriggerField& f : kTriggerFields) appendBitPlace(&v, f);
    return v;
  }();
  return entries;
}

}  // namespace

extern "C" {

size_t mscclppabi_entry_count(void) { return allEntries().size(); }

int mscclppabi_entry(size_t i, const char** name, uint64_t* value) {
  const std::vector<Entry>& entries = allEntries();
  if (i >= entries.size()) return 0;
  *name = entries[i].name.c_str();
  *value = entries[i].value;
  return 1;
}

void mscclppabi_trigger_encode(uint64_t type, uint64_t dstDataOffset, uint64_t srcDataOffset, uint64_t dataSize,
                               uint64_t connId, uint64_t value[2]) {
  mscclppTrigger t;
  for (size_t w = 0; w < kNumWords; ++w) t.value[w] = 0;
  t.fields.type = type;
  t.fields.dstDataOffset = dstDataOffset;
  t.fields.srcDataOffset = srcDataOffset;
  t.fields.dataSize = dataSize;
  t.fields.connId = connId;
  for (size_t w = 0; w < kNumWords; ++w) value[w] = t.value[w];
}

void mscclppabi_proxy_trigger_encode(uint64_t type, uint64_t dstOffset, uint64_t srcOffset, uint64_t size,
                                     uint64_t connId, uint64_t value[2]) {
  const mscclppProxyTrigger t = mscclppProxyTriggerEncode(type, dstOffset, srcOffset, size, connId);
  value[0] = t.fst;
  value[1] = t.snd;
}

void mscclppabi_trigger_decode(const uint64_t value[2], uint64_t* type, uint64_t* dstDataOffset,
                               uint64_t* srcDataOffset, uint64_t* dataSize, uint64_t* connId) {
  mscclppTrigger t;
  for (size_t w = 0; w < kNumWords; ++w) t.value[w] = value[w];
  *type = t.fields.type;
  *dstDataOffset = t.fields.dstDataOffset;
  *srcDataOffset = t.fields.srcDataOffset;
  *dataSize = t.fields.dataSize;
  *connId = t.fields.connId;
}

}  // extern "C"
