// Private to capi/: the C types the exported functions take and return, so that cgo can read them
// (the public include/mscclpp.h is C++). The shared ones come from include/mscclpp/types.h; the
// rest are declared here as cgo needs them.
#ifndef MSCCLPP_CAPI_H_
#define MSCCLPP_CAPI_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// mscclppResult_t, mscclppUniqueId and mscclppTransport_t come from the public C header itself.
#include "../include/mscclpp/types.h"

// A communicator handle as C sees it: C-allocated (as a capiHandle, same layout), never
// dereferenced by C, looked up by address in a Go table (handles.go).
struct mscclppComm {
  uint64_t magic;
};
typedef struct mscclppComm* mscclppComm_t;

typedef void (*mscclppLogHandler_t)(const char* msg);


// The device connection is laid out by include/mscclpp.h; here it is opaque. capi fills arrays
// of it from the Go mirror core.DevConn, whose layout the tests check against the header.
struct mscclppDevConn;
typedef struct mscclppDevConn mscclppDevConn_t;

// The registered-memory struct holds a std::vector, so only C++ (regmem.cpp) touches it.
struct mscclppRegisteredMemory;
typedef struct mscclppRegisteredMemory mscclppRegisteredMemory;

// A cudaStream_t handed in as int64_t, as a pointer.
static inline void* capiStreamHandle(int64_t stream) { return (void*)(intptr_t)stream; }

// Go cannot call a C function pointer; these trampolines do.
static inline void capiCallLogHandler(mscclppLogHandler_t handler, const char* msg) { handler(msg); }

// Writes through C's stdout so that library lines interleave correctly with the program's printf.
static inline void capiWriteStdout(const char* msg) {
  fputs(msg, stdout);
  fflush(stdout);
}

#endif  // MSCCLPP_CAPI_H_
