/* The C entry points of layout.cpp, shared by the cgo preamble (C) and layout.cpp (C++). */
#ifndef MSCCLPP_INTERNAL_ABI_LAYOUT_H_
#define MSCCLPP_INTERNAL_ABI_LAYOUT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of layout entries. */
size_t mscclppabi_entry_count(void);

/* Stores entry i's name (static storage) and value; returns 0 when i is out of range, else 1. */
int mscclppabi_entry(size_t i, const char** name, uint64_t* value);

/* Builds a trigger by assigning the union's bit-fields and stores its two words in value. */
void mscclppabi_trigger_encode(uint64_t type, uint64_t dstDataOffset, uint64_t srcDataOffset, uint64_t dataSize,
                               uint64_t connId, uint64_t value[2]);

/* Builds a trigger with mscclppProxyTriggerEncode of mscclpp/fifo_device.h and stores its two words in value. */
void mscclppabi_proxy_trigger_encode(uint64_t type, uint64_t dstOffset, uint64_t srcOffset, uint64_t size,
                                     uint64_t connId, uint64_t value[2]);

/* Reads the union's bit-fields of the trigger whose two words are value. */
void mscclppabi_trigger_decode(const uint64_t value[2], uint64_t* type, uint64_t* dstDataOffset,
                               uint64_t* srcDataOffset, uint64_t* dataSize, uint64_t* connId);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_INTERNAL_ABI_LAYOUT_H_ */
