/*
 * tests/nccl/header_agree.c: prints the ABI facts of whichever nccl.h it is compiled against, one
 * "name=value" line each, so that tests/nccl/header_agree.sh can build it against NVIDIA's header
 * and against include/nccl.h and diff the two outputs. Uses only the NCCL API.
 *
 * As C: sizes, alignments, offsets and sizes of every field, enum values, the initializers'
 * contents. As C++ it adds the mangled names of the types, of each field's type, of each enum's
 * underlying type and of every function's type (its exact prototype). With AGREE_DEVICE it adds
 * the device API's two host functions; with AGREE_DEVICE_HEADER it takes them from NVIDIA's
 * nccl_device/core.h, which NVIDIA's nccl.h does not include.
 */
#include <nccl.h>
#if defined(AGREE_DEVICE_HEADER) && defined(__cplusplus) /* core.h is for C++ */
#include <nccl_device/core.h>
#endif

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
#include <type_traits>
#include <typeinfo>
#define ALIGNOF(t) alignof(t)
#define TYPE_NAME(t) printf("typeid(%s)=%s\n", #t, typeid(t).name());
#define FIELD_TYPE(t, f) printf("typeid(%s.%s)=%s\n", #t, #f, typeid(((t*)0)->f).name());
#define ENUM_BASE(t) printf("underlying(%s)=%s\n", #t, typeid(std::underlying_type<t>::type).name());
#define FN_TYPE(f) printf("typeid(&%s)=%s\n", #f, typeid(decltype(&f)).name());
#else
#define ALIGNOF(t) _Alignof(t)
#define TYPE_NAME(t)
#define FIELD_TYPE(t, f)
#define ENUM_BASE(t)
#define FN_TYPE(f)
#endif

#define TYPE(t) printf("sizeof(%s)=%zu alignof=%zu\n", #t, sizeof(t), (size_t)ALIGNOF(t)); TYPE_NAME(t)
#define FIELD(t, f) \
  printf("offsetof(%s,%s)=%zu size=%zu\n", #t, #f, offsetof(t, f), sizeof(((t*)0)->f)); FIELD_TYPE(t, f)
#define ENUM(t) TYPE(t) ENUM_BASE(t)
#define VALUE(v) printf("%s=%lld\n", #v, (long long)(v));
#define FN(f) FN_TYPE(f) FN_TYPE(p##f)

int main(void) {
  TYPE(ncclUniqueId) FIELD(ncclUniqueId, internal)
  TYPE(ncclComm_t) TYPE(ncclWindow_t)

  TYPE(ncclConfig_t)
  FIELD(ncclConfig_t, size) FIELD(ncclConfig_t, magic) FIELD(ncclConfig_t, version)
  FIELD(ncclConfig_t, blocking) FIELD(ncclConfig_t, cgaClusterSize) FIELD(ncclConfig_t, minCTAs)
  FIELD(ncclConfig_t, maxCTAs) FIELD(ncclConfig_t, netName) FIELD(ncclConfig_t, splitShare)
  FIELD(ncclConfig_t, trafficClass) FIELD(ncclConfig_t, commName) FIELD(ncclConfig_t, collnetEnable)
  FIELD(ncclConfig_t, CTAPolicy) FIELD(ncclConfig_t, shrinkShare) FIELD(ncclConfig_t, nvlsCTAs)
  FIELD(ncclConfig_t, nChannelsPerNetPeer) FIELD(ncclConfig_t, nvlinkCentricSched)

  TYPE(ncclSimInfo_t)
  FIELD(ncclSimInfo_t, size) FIELD(ncclSimInfo_t, magic) FIELD(ncclSimInfo_t, version)
  FIELD(ncclSimInfo_t, estimatedTime)

  ENUM(ncclResult_t)
  VALUE(ncclSuccess) VALUE(ncclUnhandledCudaError) VALUE(ncclSystemError) VALUE(ncclInternalError)
  VALUE(ncclInvalidArgument) VALUE(ncclInvalidUsage) VALUE(ncclRemoteError) VALUE(ncclInProgress)
  VALUE(ncclNumResults)
  ENUM(ncclRedOp_dummy_t) VALUE(ncclNumOps_dummy)
  ENUM(ncclRedOp_t)
  VALUE(ncclSum) VALUE(ncclProd) VALUE(ncclMax) VALUE(ncclMin) VALUE(ncclAvg) VALUE(ncclNumOps)
  VALUE(ncclMaxRedOp)
  ENUM(ncclDataType_t)
  VALUE(ncclInt8) VALUE(ncclChar) VALUE(ncclUint8) VALUE(ncclInt32) VALUE(ncclInt) VALUE(ncclUint32)
  VALUE(ncclInt64) VALUE(ncclUint64) VALUE(ncclFloat16) VALUE(ncclHalf) VALUE(ncclFloat32) VALUE(ncclFloat)
  VALUE(ncclFloat64) VALUE(ncclDouble) VALUE(ncclBfloat16) VALUE(ncclFloat8e4m3) VALUE(ncclFloat8e5m2)
  VALUE(ncclNumTypes)
  ENUM(ncclScalarResidence_t) VALUE(ncclScalarDevice) VALUE(ncclScalarHostImmediate)

  /* The macros' definitions are compared by the script (gcc -dM); here, what they evaluate to. */
  VALUE(NCCL_VERSION_CODE) VALUE(NCCL_VERSION(2, 28, 3)) VALUE(NCCL_VERSION(2, 8, 0))
  VALUE(sizeof(NCCL_UNDEF_FLOAT)) VALUE(NCCL_UNDEF_FLOAT == -1.0f) VALUE(sizeof(NCCL_SUFFIX))

  const ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  VALUE(config.size) VALUE(config.magic) VALUE(config.version) VALUE(config.blocking)
  VALUE(config.cgaClusterSize) VALUE(config.minCTAs) VALUE(config.maxCTAs) VALUE(config.netName == NULL)
  VALUE(config.splitShare) VALUE(config.trafficClass) VALUE(config.commName == NULL)
  VALUE(config.collnetEnable) VALUE(config.CTAPolicy) VALUE(config.shrinkShare) VALUE(config.nvlsCTAs)
  VALUE(config.nChannelsPerNetPeer) VALUE(config.nvlinkCentricSched)
  const ncclSimInfo_t simInfo = NCCL_SIM_INFO_INITIALIZER;
  VALUE(simInfo.size) VALUE(simInfo.magic) VALUE(simInfo.version) VALUE(simInfo.estimatedTime == -1.0f)

#ifdef __cplusplus
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* naming ncclResetDebugInit */
#endif
  FN(ncclMemAlloc) FN(ncclMemFree) FN(ncclGetVersion) FN(ncclGetUniqueId) FN(ncclCommInitRankConfig)
  FN(ncclCommInitRank) FN(ncclCommInitAll) FN(ncclCommFinalize) FN(ncclCommDestroy) FN(ncclCommAbort)
  FN(ncclCommSplit) FN(ncclCommShrink) FN(ncclCommInitRankScalable) FN(ncclGetErrorString)
  FN(ncclGetLastError) FN(ncclResetDebugInit) FN(ncclCommGetAsyncError) FN(ncclCommCount)
  FN(ncclCommCuDevice) FN(ncclCommUserRank) FN(ncclCommRegister) FN(ncclCommDeregister)
  FN(ncclCommWindowRegister) FN(ncclCommWindowDeregister) FN(ncclRedOpCreatePreMulSum) FN(ncclRedOpDestroy)
  FN(ncclReduce) FN(ncclBcast) FN(ncclBroadcast) FN(ncclAllReduce) FN(ncclReduceScatter) FN(ncclAllGather)
  FN(ncclAlltoAll) FN(ncclGather) FN(ncclScatter) FN(ncclSend) FN(ncclRecv) FN(ncclGroupStart)
  FN(ncclGroupEnd) FN(ncclGroupSimulateEnd)
#ifdef NCCL_REVOKE_DEFAULT /* NCCL 2.28.9 */
  FN(ncclCommRevoke)
#endif
#ifdef AGREE_DEVICE
  FN_TYPE(ncclDevCommCreate) FN_TYPE(ncclDevCommDestroy)
  TYPE_NAME(ncclDevComm_t*) TYPE_NAME(ncclDevCommRequirements_t*) /* incomplete types */
#endif
  return 0;
}
