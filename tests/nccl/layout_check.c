/*
 * tests/nccl/layout_check.c: pins include/nccl.h to the ABI of NCCL 2.28.3's nccl.h (and the
 * ncclCommRevoke of 2.28.9) on x86-64 Linux (LP64). The expected numbers below were read off
 * NVIDIA's header compiled with gcc; tests/nccl/header_agree.sh compares against that header
 * itself where it is installed.
 *
 * Built as C11, C++11, C++17 and CUDA C++ by tests/nccl/layout.sh. Compile time: every size,
 * offset, enum value and integer macro (static asserts and #if), the struct tags behind the
 * typedefs, the initializers (C++), and every function's exact prototype (a function-pointer
 * table initialized without casts, so a drift is a compile error). Run time: the same facts as a
 * table, printed when one fails or with VERBOSE=1, plus the initializers' contents and the C++
 * names of the types. The functions are referenced weakly, so the program links without a
 * library; linked against one (with -Wl,--no-as-needed), LAYOUT_REQUIRE_SYMBOLS=1 fails on each
 * function it does not export.
 */
#include <nccl.h>

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>
#define STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define SAME_TYPE(a, b) (std::is_same<a, b>::value)
#define FIELD_IS(t, f, type) (std::is_same<decltype(((t*)0)->f), type>::value)
#else
#define STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define SAME_TYPE(a, b) _Generic((a*)0, b*: 1, default: 0)
#define FIELD_IS(t, f, type) _Generic(((t*)0)->f, type: 1, default: 0)
#endif

/* The integer macros must work in #if too (programs test NCCL_VERSION_CODE there). */
#if NCCL_MAJOR != 2 || NCCL_MINOR != 28 || NCCL_PATCH != 3 || NCCL_VERSION_CODE != 22803
#error "NCCL version macros differ from 2.28.3"
#endif
#if NCCL_VERSION(2, 28, 3) != 22803 || NCCL_VERSION(2, 8, 0) != 2800 || NCCL_VERSION(2, 9, 1) != 20901
#error "NCCL_VERSION differs from NCCL's formula"
#endif
#if NCCL_VERSION_CODE != NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)
#error "NCCL_VERSION_CODE is not NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)"
#endif
#if NCCL_UNIQUE_ID_BYTES != 128 || NCCL_SPLIT_NOCOLOR != -1 || NCCL_CONFIG_UNDEF_INT != INT_MIN
#error "NCCL_UNIQUE_ID_BYTES, NCCL_SPLIT_NOCOLOR or NCCL_CONFIG_UNDEF_INT differs"
#endif
#if NCCL_WIN_DEFAULT != 0 || NCCL_WIN_COLL_SYMMETRIC != 1 || NCCL_WIN_REQUIRED_ALIGNMENT != 4096
#error "NCCL_WIN_* differs"
#endif
#if NCCL_CTA_POLICY_DEFAULT != 0 || NCCL_CTA_POLICY_EFFICIENCY != 1 || NCCL_CTA_POLICY_ZERO != 2
#error "NCCL_CTA_POLICY_* differs"
#endif
#if NCCL_SHRINK_DEFAULT != 0 || NCCL_SHRINK_ABORT != 1 || NCCL_REVOKE_DEFAULT != 0
#error "NCCL_SHRINK_* or NCCL_REVOKE_DEFAULT differs"
#endif

/* name, value in this header, value in NCCL 2.28.3 (x86-64). */
#define LAYOUT_FACTS(X)                                                       \
  X(sizeof(ncclUniqueId), sizeof(ncclUniqueId), 128)                          \
  X(offsetof(ncclUniqueId, internal), offsetof(ncclUniqueId, internal), 0)    \
  X(sizeof(ncclUniqueId.internal), sizeof(((ncclUniqueId*)0)->internal), 128) \
  X(sizeof(ncclComm_t), sizeof(ncclComm_t), 8)                                \
  X(sizeof(ncclWindow_t), sizeof(ncclWindow_t), 8)                            \
  X(sizeof(ncclConfig_t), sizeof(ncclConfig_t), 80)                           \
  X(offsetof(ncclConfig_t, size), offsetof(ncclConfig_t, size), 0)            \
  X(offsetof(ncclConfig_t, magic), offsetof(ncclConfig_t, magic), 8)          \
  X(offsetof(ncclConfig_t, version), offsetof(ncclConfig_t, version), 12)     \
  X(offsetof(ncclConfig_t, blocking), offsetof(ncclConfig_t, blocking), 16)   \
  X(offsetof(ncclConfig_t, cgaClusterSize), offsetof(ncclConfig_t, cgaClusterSize), 20) \
  X(offsetof(ncclConfig_t, minCTAs), offsetof(ncclConfig_t, minCTAs), 24)     \
  X(offsetof(ncclConfig_t, maxCTAs), offsetof(ncclConfig_t, maxCTAs), 28)     \
  X(offsetof(ncclConfig_t, netName), offsetof(ncclConfig_t, netName), 32)     \
  X(offsetof(ncclConfig_t, splitShare), offsetof(ncclConfig_t, splitShare), 40) \
  X(offsetof(ncclConfig_t, trafficClass), offsetof(ncclConfig_t, trafficClass), 44) \
  X(offsetof(ncclConfig_t, commName), offsetof(ncclConfig_t, commName), 48)   \
  X(offsetof(ncclConfig_t, collnetEnable), offsetof(ncclConfig_t, collnetEnable), 56) \
  X(offsetof(ncclConfig_t, CTAPolicy), offsetof(ncclConfig_t, CTAPolicy), 60) \
  X(offsetof(ncclConfig_t, shrinkShare), offsetof(ncclConfig_t, shrinkShare), 64) \
  X(offsetof(ncclConfig_t, nvlsCTAs), offsetof(ncclConfig_t, nvlsCTAs), 68)   \
  X(offsetof(ncclConfig_t, nChannelsPerNetPeer), offsetof(ncclConfig_t, nChannelsPerNetPeer), 72) \
  X(offsetof(ncclConfig_t, nvlinkCentricSched), offsetof(ncclConfig_t, nvlinkCentricSched), 76) \
  X(sizeof(ncclSimInfo_t), sizeof(ncclSimInfo_t), 24)                         \
  X(offsetof(ncclSimInfo_t, size), offsetof(ncclSimInfo_t, size), 0)          \
  X(offsetof(ncclSimInfo_t, magic), offsetof(ncclSimInfo_t, magic), 8)        \
  X(offsetof(ncclSimInfo_t, version), offsetof(ncclSimInfo_t, version), 12)   \
  X(offsetof(ncclSimInfo_t, estimatedTime), offsetof(ncclSimInfo_t, estimatedTime), 16) \
  X(sizeof(ncclResult_t), sizeof(ncclResult_t), 4)                            \
  X(sizeof(ncclDataType_t), sizeof(ncclDataType_t), 4)                        \
  X(sizeof(ncclRedOp_t), sizeof(ncclRedOp_t), 4)                              \
  X(sizeof(ncclRedOp_dummy_t), sizeof(ncclRedOp_dummy_t), 4)                  \
  X(sizeof(ncclScalarResidence_t), sizeof(ncclScalarResidence_t), 4)          \
  X(ncclSuccess, ncclSuccess, 0)                                              \
  X(ncclUnhandledCudaError, ncclUnhandledCudaError, 1)                        \
  X(ncclSystemError, ncclSystemError, 2)                                      \
  X(ncclInternalError, ncclInternalError, 3)                                  \
  X(ncclInvalidArgument, ncclInvalidArgument, 4)                              \
  X(ncclInvalidUsage, ncclInvalidUsage, 5)                                    \
  X(ncclRemoteError, ncclRemoteError, 6)                                      \
  X(ncclInProgress, ncclInProgress, 7)                                        \
  X(ncclNumResults, ncclNumResults, 8)                                        \
  X(ncclNumOps_dummy, ncclNumOps_dummy, 5)                                    \
  X(ncclSum, ncclSum, 0)                                                      \
  X(ncclProd, ncclProd, 1)                                                    \
  X(ncclMax, ncclMax, 2)                                                      \
  X(ncclMin, ncclMin, 3)                                                      \
  X(ncclAvg, ncclAvg, 4)                                                      \
  X(ncclNumOps, ncclNumOps, 5)                                                \
  X(ncclMaxRedOp, ncclMaxRedOp, 0x7fffffff)                                   \
  X(ncclInt8, ncclInt8, 0)                                                    \
  X(ncclChar, ncclChar, 0)                                                    \
  X(ncclUint8, ncclUint8, 1)                                                  \
  X(ncclInt32, ncclInt32, 2)                                                  \
  X(ncclInt, ncclInt, 2)                                                      \
  X(ncclUint32, ncclUint32, 3)                                                \
  X(ncclInt64, ncclInt64, 4)                                                  \
  X(ncclUint64, ncclUint64, 5)                                                \
  X(ncclFloat16, ncclFloat16, 6)                                              \
  X(ncclHalf, ncclHalf, 6)                                                    \
  X(ncclFloat32, ncclFloat32, 7)                                              \
  X(ncclFloat, ncclFloat, 7)                                                  \
  X(ncclFloat64, ncclFloat64, 8)                                              \
  X(ncclDouble, ncclDouble, 8)                                                \
  X(ncclBfloat16, ncclBfloat16, 9)                                            \
  X(ncclFloat8e4m3, ncclFloat8e4m3, 10)                                       \
  X(ncclFloat8e5m2, ncclFloat8e5m2, 11)                                       \
  X(ncclNumTypes, ncclNumTypes, 12)                                           \
  X(ncclScalarDevice, ncclScalarDevice, 0)                                    \
  X(ncclScalarHostImmediate, ncclScalarHostImmediate, 1)                      \
  X(NCCL_MAJOR, NCCL_MAJOR, 2)                                                \
  X(NCCL_MINOR, NCCL_MINOR, 28)                                               \
  X(NCCL_PATCH, NCCL_PATCH, 3)                                                \
  X(sizeof(NCCL_SUFFIX), sizeof(NCCL_SUFFIX), 1)                              \
  X(NCCL_VERSION_CODE, NCCL_VERSION_CODE, 22803)                              \
  X(NCCL_VERSION(2,28,3), NCCL_VERSION(2, 28, 3), 22803)                      \
  X(NCCL_VERSION(2,8,0), NCCL_VERSION(2, 8, 0), 2800)                         \
  X(NCCL_VERSION(2,28,9), NCCL_VERSION(2, 28, 9), 22809)                      \
  X(NCCL_VERSION(3,0,0), NCCL_VERSION(3, 0, 0), 30000)                        \
  X(NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES, 128)                          \
  X(NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, INT_MIN)                    \
  X(NCCL_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR, -1)                               \
  X(sizeof(NCCL_UNDEF_FLOAT), sizeof(NCCL_UNDEF_FLOAT), sizeof(float))        \
  X(NCCL_WIN_DEFAULT, NCCL_WIN_DEFAULT, 0)                                    \
  X(NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_COLL_SYMMETRIC, 1)                      \
  X(NCCL_WIN_REQUIRED_ALIGNMENT, NCCL_WIN_REQUIRED_ALIGNMENT, 4096)           \
  X(NCCL_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_DEFAULT, 0)                      \
  X(NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_EFFICIENCY, 1)                \
  X(NCCL_CTA_POLICY_ZERO, NCCL_CTA_POLICY_ZERO, 2)                            \
  X(NCCL_SHRINK_DEFAULT, NCCL_SHRINK_DEFAULT, 0)                              \
  X(NCCL_SHRINK_ABORT, NCCL_SHRINK_ABORT, 1)                                  \
  X(NCCL_REVOKE_DEFAULT, NCCL_REVOKE_DEFAULT, 0)

#define ASSERT_FACT(name, got, want) STATIC_ASSERT((got) == (want), #name " differs from NCCL 2.28.3");
LAYOUT_FACTS(ASSERT_FACT)

/* The struct tags behind the typedefs: they are in C++ mangled names, so in the C++ ABI. */
STATIC_ASSERT(SAME_TYPE(ncclConfig_t, struct ncclConfig_v22800), "ncclConfig_t is not struct ncclConfig_v22800");
STATIC_ASSERT(SAME_TYPE(ncclSimInfo_t, struct ncclSimInfo_v22200), "ncclSimInfo_t is not struct ncclSimInfo_v22200");
STATIC_ASSERT(SAME_TYPE(ncclComm_t, struct ncclComm*), "ncclComm_t is not struct ncclComm*");
STATIC_ASSERT(SAME_TYPE(ncclWindow_t, struct ncclWindow_vidmem*), "ncclWindow_t is not struct ncclWindow_vidmem*");
STATIC_ASSERT(SAME_TYPE(ncclDevComm_t, struct ncclDevComm), "ncclDevComm_t is not struct ncclDevComm");
STATIC_ASSERT(SAME_TYPE(ncclDevCommRequirements_t, struct ncclDevCommRequirements),
              "ncclDevCommRequirements_t is not struct ncclDevCommRequirements");
STATIC_ASSERT(SAME_TYPE(char, __typeof__(((ncclUniqueId*)0)->internal[0])), "ncclUniqueId.internal is not char[]");

/* The fields' types (the offsets above leave signedness and const open). */
#define FIELD_TYPES(X)                                                                                     \
  X(ncclConfig_t, size, size_t) X(ncclConfig_t, magic, unsigned int) X(ncclConfig_t, version, unsigned int) \
  X(ncclConfig_t, blocking, int) X(ncclConfig_t, cgaClusterSize, int) X(ncclConfig_t, minCTAs, int)        \
  X(ncclConfig_t, maxCTAs, int) X(ncclConfig_t, netName, const char*) X(ncclConfig_t, splitShare, int)     \
  X(ncclConfig_t, trafficClass, int) X(ncclConfig_t, commName, const char*) X(ncclConfig_t, collnetEnable, int) \
  X(ncclConfig_t, CTAPolicy, int) X(ncclConfig_t, shrinkShare, int) X(ncclConfig_t, nvlsCTAs, int)         \
  X(ncclConfig_t, nChannelsPerNetPeer, int) X(ncclConfig_t, nvlinkCentricSched, int)                      \
  X(ncclSimInfo_t, size, size_t) X(ncclSimInfo_t, magic, unsigned int) X(ncclSimInfo_t, version, unsigned int) \
  X(ncclSimInfo_t, estimatedTime, float)
#define ASSERT_FIELD(t, f, type) STATIC_ASSERT(FIELD_IS(t, f, type), #t "." #f " is not " #type);
FIELD_TYPES(ASSERT_FIELD)

#ifdef __cplusplus
/* The initializers, at compile time (C has no constexpr; main checks them at run time). */
constexpr ncclConfig_t kConstConfig = NCCL_CONFIG_INITIALIZER;
static_assert(kConstConfig.size == 80 && kConstConfig.magic == 0xcafebeef && kConstConfig.version == 22803,
              "NCCL_CONFIG_INITIALIZER's header fields differ");
static_assert(kConstConfig.blocking == INT_MIN && kConstConfig.nvlinkCentricSched == INT_MIN &&
                  kConstConfig.netName == nullptr && kConstConfig.commName == nullptr,
              "NCCL_CONFIG_INITIALIZER's options are not all unset");
constexpr ncclSimInfo_t kConstSimInfo = NCCL_SIM_INFO_INITIALIZER;
static_assert(kConstSimInfo.size == 24 && kConstSimInfo.magic == 0x74685283 && kConstSimInfo.version == 22803 &&
                  kConstSimInfo.estimatedTime == -1.0f,
              "NCCL_SIM_INFO_INITIALIZER differs");
#endif

/* Every function of the header with NCCL's prototype: X(return type, name, parameters); each has
 * a pnccl twin. */
#define NCCL_FUNCS(X)                                                                                     \
  X(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size))                                                \
  X(ncclResult_t, ncclMemFree, (void* ptr))                                                               \
  X(ncclResult_t, ncclGetVersion, (int* version))                                                         \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId))                                             \
  X(ncclResult_t, ncclCommInitRankConfig,                                                                 \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config))                 \
  X(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))       \
  X(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist))                     \
  X(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))                                                    \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))                                                     \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t comm))                                                       \
  X(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags))                                     \
  X(ncclResult_t, ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) \
  X(ncclResult_t, ncclCommShrink,                                                                         \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, \
     int shrinkFlags))                                                                                    \
  X(ncclResult_t, ncclCommInitRankScalable,                                                               \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config)) \
  X(const char*, ncclGetErrorString, (ncclResult_t result))                                               \
  X(const char*, ncclGetLastError, (ncclComm_t comm))                                                     \
  X(void, ncclResetDebugInit, (void))                                                                     \
  X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * asyncError))                    \
  X(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))                                     \
  X(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device))                                 \
  X(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))                                   \
  X(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle))      \
  X(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle))                              \
  X(ncclResult_t, ncclCommWindowRegister, (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags)) \
  X(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))                          \
  X(ncclResult_t, ncclRedOpCreatePreMulSum,                                                               \
    (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm)) \
  X(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm))                                    \
  X(ncclResult_t, ncclReduce,                                                                             \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, \
     ncclComm_t comm, cudaStream_t stream))                                                               \
  X(ncclResult_t, ncclBcast,                                                                              \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream))  \
  X(ncclResult_t, ncclBroadcast,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream))                                                                                \
  X(ncclResult_t, ncclAllReduce,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,         \
     ncclComm_t comm, cudaStream_t stream))                                                               \
  X(ncclResult_t, ncclReduceScatter,                                                                      \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,     \
     ncclComm_t comm, cudaStream_t stream))                                                               \
  X(ncclResult_t, ncclAllGather,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,    \
     cudaStream_t stream))                                                                                \
  X(ncclResult_t, ncclAlltoAll,                                                                           \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,        \
     cudaStream_t stream))                                                                                \
  X(ncclResult_t, ncclGather,                                                                             \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream))                                                                                \
  X(ncclResult_t, ncclScatter,                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream))                                                                                \
  X(ncclResult_t, ncclSend,                                                                               \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream)) \
  X(ncclResult_t, ncclRecv,                                                                               \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream)) \
  X(ncclResult_t, ncclGroupStart, (void))                                                                 \
  X(ncclResult_t, ncclGroupEnd, (void))                                                                   \
  X(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))

/* The device API's host functions, which have no pnccl twin in any header. */
#define NCCL_DEVICE_FUNCS(X)                                                                              \
  X(ncclResult_t, ncclDevCommCreate,                                                                      \
    (ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm))                  \
  X(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, ncclDevComm_t const* devComm))

/* Each function is declared by the header (the weak redeclarations below would hide a missing one). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* naming ncclResetDebugInit */
#define DECLARED_ONE(ret, name, params) STATIC_ASSERT(sizeof(&name) == sizeof(void (*)(void)), #name " is declared");
#define DECLARED_TWO(ret, name, params) DECLARED_ONE(ret, name, params) DECLARED_ONE(ret, p##name, params)
NCCL_FUNCS(DECLARED_TWO)
NCCL_DEVICE_FUNCS(DECLARED_ONE)
#pragma GCC diagnostic pop

/* Redeclared weak, so that the program links without a library (the addresses are then null).
 * A redeclaration with another prototype is itself an error. */
#ifdef __cplusplus
extern "C" {
#endif
#define WEAK_ONE(ret, name, params) ret name params __attribute__((weak));
#define WEAK_TWO(ret, name, params) WEAK_ONE(ret, name, params) WEAK_ONE(ret, p##name, params)
NCCL_FUNCS(WEAK_TWO)
NCCL_DEVICE_FUNCS(WEAK_ONE)
#ifdef __cplusplus
}
#endif

/* The function-pointer table: each entry is initialized from the function with no cast, into a
 * pointer of NCCL's prototype; a mismatch is an error in C++ and, with -Werror, in C. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* taking ncclResetDebugInit's address */
#define TYPED_ONE(ret, name, params) static ret(*const typed_##name) params = name;
#define TYPED_TWO(ret, name, params) TYPED_ONE(ret, name, params) TYPED_ONE(ret, p##name, params)
NCCL_FUNCS(TYPED_TWO)
NCCL_DEVICE_FUNCS(TYPED_ONE)
#pragma GCC diagnostic pop

typedef void (*any_fn)(void);
struct fn_entry {
  const char* name;
  any_fn addr;
};
#define ENTRY_ONE(ret, name, params) {#name, (any_fn)typed_##name},
#define ENTRY_TWO(ret, name, params) ENTRY_ONE(ret, name, params) ENTRY_ONE(ret, p##name, params)
#define COUNT_TWO(ret, name, params) +2
#define COUNT_ONE(ret, name, params) +1
STATIC_ASSERT(0 NCCL_FUNCS(COUNT_TWO) == 82, "NCCL 2.28.3 has 40 functions, 2.28.9 adds ncclCommRevoke: 41 pairs");
STATIC_ASSERT(0 NCCL_DEVICE_FUNCS(COUNT_ONE) == 2, "two host functions of the device API");

struct fact {
  const char* name;
  long long got, want;
};
#define ROW(name, got, want) {#name, (long long)(got), (long long)(want)},
static const struct fact facts[] = {LAYOUT_FACTS(ROW)};

int main(void) {
  const int verbose = getenv("VERBOSE") != NULL && strcmp(getenv("VERBOSE"), "1") == 0;
  const int requireSymbols =
      getenv("LAYOUT_REQUIRE_SYMBOLS") != NULL && strcmp(getenv("LAYOUT_REQUIRE_SYMBOLS"), "1") == 0;
  int failed = 0;

  /* What C cannot check at compile time: the initializers' contents and the null macros. */
  const ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  const ncclSimInfo_t simInfo = NCCL_SIM_INFO_INITIALIZER;
  const ncclComm_t nullComm = NCCL_COMM_NULL;
  const char* const undefPtr = NCCL_CONFIG_UNDEF_PTR;
#define CONFIG_FACTS(X)                                                                 \
  X(config.size, config.size, 80)                                                       \
  X(config.magic, config.magic, 0xcafebeef)                                             \
  X(config.version, config.version, 22803)                                              \
  X(config.blocking, config.blocking, INT_MIN)                                          \
  X(config.cgaClusterSize, config.cgaClusterSize, INT_MIN)                              \
  X(config.minCTAs, config.minCTAs, INT_MIN)                                            \
  X(config.maxCTAs, config.maxCTAs, INT_MIN)                                            \
  X(config.netName == NULL, config.netName == NULL, 1)                                  \
  X(config.splitShare, config.splitShare, INT_MIN)                                      \
  X(config.trafficClass, config.trafficClass, INT_MIN)                                  \
  X(config.commName == NULL, config.commName == NULL, 1)                                \
  X(config.collnetEnable, config.collnetEnable, INT_MIN)                                \
  X(config.CTAPolicy, config.CTAPolicy, INT_MIN)                                        \
  X(config.shrinkShare, config.shrinkShare, INT_MIN)                                    \
  X(config.nvlsCTAs, config.nvlsCTAs, INT_MIN)                                          \
  X(config.nChannelsPerNetPeer, config.nChannelsPerNetPeer, INT_MIN)                    \
  X(config.nvlinkCentricSched, config.nvlinkCentricSched, INT_MIN)                      \
  X(simInfo.size, simInfo.size, 24)                                                     \
  X(simInfo.magic, simInfo.magic, 0x74685283)                                           \
  X(simInfo.version, simInfo.version, 22803)                                            \
  X(simInfo.estimatedTime == -1.0f, simInfo.estimatedTime == -1.0f, 1)                  \
  X(NCCL_UNDEF_FLOAT == -1.0f, NCCL_UNDEF_FLOAT == -1.0f, 1)                    \
  X(NCCL_COMM_NULL == NULL, nullComm == NULL, 1)                                        \
  X(NCCL_CONFIG_UNDEF_PTR == NULL, undefPtr == NULL, 1)                                 \
  X(strcmp(NCCL_SUFFIX, ""), strcmp(NCCL_SUFFIX, ""), 0)
  const struct fact initFacts[] = {CONFIG_FACTS(ROW)};

  const struct fact* tables[] = {facts, initFacts};
  const size_t counts[] = {sizeof(facts) / sizeof(facts[0]), sizeof(initFacts) / sizeof(initFacts[0])};
  size_t nfacts = 0;
  for (size_t t = 0; t < 2; t++) {
    for (size_t i = 0; i < counts[t]; i++) {
      const struct fact* f = &tables[t][i];
      const int ok = f->got == f->want;
      failed += !ok;
      nfacts++;
      if (verbose || !ok) printf("%-4s %-60s %lld (NCCL 2.28.3: %lld)\n", ok ? "ok" : "FAIL", f->name, f->got, f->want);
    }
  }

#if defined(__cplusplus) && defined(__GXX_ABI_VERSION)
  /* Itanium C++ ABI names of the types, as C++ programs mangle them into their own symbols. */
  const struct {
    const char *name, *got, *want;
  } names[] = {
      {"ncclUniqueId", typeid(ncclUniqueId).name(), "12ncclUniqueId"},
      {"ncclResult_t", typeid(ncclResult_t).name(), "12ncclResult_t"},
      {"ncclDataType_t", typeid(ncclDataType_t).name(), "14ncclDataType_t"},
      {"ncclRedOp_t", typeid(ncclRedOp_t).name(), "11ncclRedOp_t"},
      {"ncclScalarResidence_t", typeid(ncclScalarResidence_t).name(), "21ncclScalarResidence_t"},
      {"ncclConfig_t", typeid(ncclConfig_t).name(), "17ncclConfig_v22800"},
      {"ncclSimInfo_t", typeid(ncclSimInfo_t).name(), "18ncclSimInfo_v22200"},
      {"ncclComm_t", typeid(ncclComm_t).name(), "P8ncclComm"},
      {"ncclWindow_t", typeid(ncclWindow_t).name(), "P17ncclWindow_vidmem"},
      {"ncclAllReduce", typeid(decltype(&ncclAllReduce)).name(),
       "PF12ncclResult_tPKvPvm14ncclDataType_t11ncclRedOp_tP8ncclCommP11CUstream_stE"},
  };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const int ok = strcmp(names[i].got, names[i].want) == 0;
    failed += !ok;
    nfacts++;
    if (verbose || !ok) {
      printf("%-4s typeid(%s) %s (NCCL 2.28.3: %s)\n", ok ? "ok" : "FAIL", names[i].name, names[i].got, names[i].want);
    }
  }
#endif

  const struct fn_entry functions[] = {NCCL_FUNCS(ENTRY_TWO) NCCL_DEVICE_FUNCS(ENTRY_ONE)};
  const size_t nfunctions = sizeof(functions) / sizeof(functions[0]);
  size_t resolved = 0;
  for (size_t i = 0; i < nfunctions; i++) {
    if (functions[i].addr != NULL) {
      resolved++;
    } else if (requireSymbols) {
      printf("FAIL %s is not exported by the library linked\n", functions[i].name);
      failed++;
    }
  }
  if (verbose || failed) {
    printf("%zu facts, %zu functions with NCCL's prototypes (%zu resolved at link time), %d failures\n", nfacts,
           nfunctions, resolved, failed);
  }
  return failed ? 1 : 0;
}
