// mscclppRegisteredMemory holds a std::vector, which only C++ can fill; capi calls these two
// functions to do it. They are internal to the library (hidden from its exports).
#include <mscclpp.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// Makes regMem->p2p hold n entries whose remoteBuff are the device addresses remoteBuffs[0..n)
// and whose IbMr are NULL.
__attribute__((visibility("hidden"))) void capiRegMemSetP2P(mscclppRegisteredMemory* regMem, size_t n,
                                                            const uint64_t* remoteBuffs) {
  regMem->p2p.assign(n, mscclppRegisteredMemoryP2P{nullptr, nullptr});
  for (size_t i = 0; i < n; i++) regMem->p2p[i].remoteBuff = reinterpret_cast<void*>(remoteBuffs[i]);
}

}  // extern "C"
