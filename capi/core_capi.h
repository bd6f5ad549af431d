// Private to capi/: the types of include/mscclpp/core.h for the exports of the primitive API.
//
// cgo writes its own prototype for every export, without const. The functions of core.h that take
// or return const pointers are renamed while core.h is read, so that their declarations there do
// not conflict with cgo's (mscclppGetErrorString among them, which core.h shares with mscclpp.h); every other prototype of core.h is checked by the C compiler against the
// Go signature. tests/capi/core_refusals.c compiles against core.h itself.
#ifndef MSCCLPP_CAPI_CORE_H_
#define MSCCLPP_CAPI_CORE_H_

#include "capi.h"

#define mscclppBootstrapCreate capiConstDecl_mscclppBootstrapCreate
#define mscclppBootstrapSend capiConstDecl_mscclppBootstrapSend
#define mscclppContextConnect capiConstDecl_mscclppContextConnect
#define mscclppMemoryOpen capiConstDecl_mscclppMemoryOpen
#define mscclppSemaphoreCreate capiConstDecl_mscclppSemaphoreCreate
#define mscclppGetErrorString capiConstDecl_mscclppGetErrorString
#define mscclppAllReduce capiConstDecl_mscclppAllReduce
#define mscclppAllGather capiConstDecl_mscclppAllGather
#define mscclppReduceScatter capiConstDecl_mscclppReduceScatter
#define mscclppBroadcast capiConstDecl_mscclppBroadcast
#define mscclppSendRecv capiConstDecl_mscclppSendRecv
#define mscclppAlltoAll capiConstDecl_mscclppAlltoAll
#define mscclppScale capiConstDecl_mscclppScale
#include <mscclpp/core.h>
#include <mscclpp/collectives.h>
#undef mscclppAllReduce
#undef mscclppAllGather
#undef mscclppReduceScatter
#undef mscclppBroadcast
#undef mscclppSendRecv
#undef mscclppAlltoAll
#undef mscclppScale
#undef mscclppBootstrapCreate
#undef mscclppBootstrapSend
#undef mscclppContextConnect
#undef mscclppMemoryOpen
#undef mscclppSemaphoreCreate
#undef mscclppGetErrorString

// A handle as the library allocates it: C memory, never dereferenced by C, looked up by address
// in a Go table (handles.go). The magic only helps someone reading a core dump.
typedef struct {
  uint64_t magic;
} capiHandle;

#endif  // MSCCLPP_CAPI_CORE_H_
