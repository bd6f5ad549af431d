/*
 * The CUDA driver entry points this package uses: one line each, and nothing else.
 *
 * This is an X-macro list. shim.h and shim.c include it several times with different definitions
 * of CU_FN to generate, from each line, the function-pointer storage, the row of the table that
 * the loader resolves with dlsym, and the trampoline mscclpp_<name> that Go calls.
 *
 *   CU_FN(name, need, min_version, params, args)
 *
 *   name         the function as the CUDA documentation spells it (cuMemAlloc, not cuMemAlloc_v2).
 *                The symbol resolved is whatever cuda.h maps the name to (cuMemAlloc_v2), which is
 *                the ABI a program compiled against the same cuda.h would bind.
 *   need         CU_REQUIRED: loading fails without it. CU_OPTIONAL: a missing symbol is logged and
 *                the trampoline returns CUDA_ERROR_NOT_SUPPORTED.
 *   min_version  the lowest cuDriverGetVersion value that has it (e.g. 12000); 0 for any driver.
 *                Older drivers are not searched for it.
 *   params       the parameter list, exactly as in cuda.h; shim.c checks it against cuda.h's
 *                prototype at compile time.
 *   args         the parameter names, in order, to forward the call.
 *
 * Never add cuMulticast*: it is forbidden on the target GPU hosts.
 */

CU_FN(cuGetErrorName,       CU_REQUIRED, 0, (CUresult error, const char **pStr), (error, pStr))
CU_FN(cuGetErrorString,     CU_REQUIRED, 0, (CUresult error, const char **pStr), (error, pStr))
CU_FN(cuDriverGetVersion,   CU_REQUIRED, 0, (int *driverVersion), (driverVersion))
CU_FN(cuInit,               CU_REQUIRED, 0, (unsigned int Flags), (Flags))

CU_FN(cuDeviceGetCount,     CU_REQUIRED, 0, (int *count), (count))
CU_FN(cuDeviceGet,          CU_REQUIRED, 0, (CUdevice *device, int ordinal), (device, ordinal))
CU_FN(cuDeviceGetName,      CU_REQUIRED, 0, (char *name, int len, CUdevice dev), (name, len, dev))
CU_FN(cuDeviceGetPCIBusId,  CU_REQUIRED, 0, (char *pciBusId, int len, CUdevice dev), (pciBusId, len, dev))
CU_FN(cuDeviceGetAttribute, CU_REQUIRED, 0, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev))
CU_FN(cuDeviceCanAccessPeer, CU_REQUIRED, 0, (int *canAccessPeer, CUdevice dev, CUdevice peerDev), (canAccessPeer, dev, peerDev))
CU_FN(cuDeviceGetP2PAttribute, CU_REQUIRED, 0, (int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice), (value, attrib, srcDevice, dstDevice))

CU_FN(cuDevicePrimaryCtxRetain,  CU_REQUIRED, 0, (CUcontext *pctx, CUdevice dev), (pctx, dev))
CU_FN(cuDevicePrimaryCtxRelease, CU_REQUIRED, 0, (CUdevice dev), (dev))
CU_FN(cuCtxSetCurrent,           CU_REQUIRED, 0, (CUcontext ctx), (ctx))
CU_FN(cuCtxPushCurrent,          CU_REQUIRED, 0, (CUcontext ctx), (ctx))
CU_FN(cuCtxPopCurrent,           CU_REQUIRED, 0, (CUcontext *pctx), (pctx))
CU_FN(cuCtxGetCurrent,           CU_REQUIRED, 0, (CUcontext *pctx), (pctx))
CU_FN(cuCtxGetDevice,            CU_REQUIRED, 0, (CUdevice *device), (device))
CU_FN(cuCtxEnablePeerAccess,     CU_REQUIRED, 0, (CUcontext peerContext, unsigned int Flags), (peerContext, Flags))

CU_FN(cuMemAlloc,                CU_REQUIRED, 0, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize))
CU_FN(cuMemFree,                 CU_REQUIRED, 0, (CUdeviceptr dptr), (dptr))
CU_FN(cuMemHostAlloc,            CU_REQUIRED, 0, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))
CU_FN(cuMemFreeHost,             CU_REQUIRED, 0, (void *p), (p))
CU_FN(cuMemHostGetDevicePointer, CU_REQUIRED, 0, (CUdeviceptr *pdptr, void *p, unsigned int Flags), (pdptr, p, Flags))
CU_FN(cuMemGetAddressRange,      CU_REQUIRED, 0, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr), (pbase, psize, dptr))
CU_FN(cuPointerGetAttribute,     CU_REQUIRED, 0, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr), (data, attribute, ptr))

CU_FN(cuIpcGetMemHandle,   CU_REQUIRED, 0, (CUipcMemHandle *pHandle, CUdeviceptr dptr), (pHandle, dptr))
CU_FN(cuIpcOpenMemHandle,  CU_REQUIRED, 0, (CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags))
CU_FN(cuIpcCloseMemHandle, CU_REQUIRED, 0, (CUdeviceptr dptr), (dptr))

CU_FN(cuStreamCreate,      CU_REQUIRED, 0, (CUstream *phStream, unsigned int Flags), (phStream, Flags))
CU_FN(cuStreamDestroy,     CU_REQUIRED, 0, (CUstream hStream), (hStream))
CU_FN(cuStreamSynchronize, CU_REQUIRED, 0, (CUstream hStream), (hStream))
CU_FN(cuStreamQuery,       CU_REQUIRED, 0, (CUstream hStream), (hStream))
CU_FN(cuStreamWaitEvent,   CU_REQUIRED, 0, (CUstream hStream, CUevent hEvent, unsigned int Flags), (hStream, hEvent, Flags))

CU_FN(cuEventCreate,      CU_REQUIRED, 0, (CUevent *phEvent, unsigned int Flags), (phEvent, Flags))
CU_FN(cuEventDestroy,     CU_REQUIRED, 0, (CUevent hEvent), (hEvent))
CU_FN(cuEventRecord,      CU_REQUIRED, 0, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
CU_FN(cuEventSynchronize, CU_REQUIRED, 0, (CUevent hEvent), (hEvent))
CU_FN(cuEventQuery,       CU_REQUIRED, 0, (CUevent hEvent), (hEvent))
CU_FN(cuEventElapsedTime, CU_REQUIRED, 0, (float *pMilliseconds, CUevent hStart, CUevent hEnd), (pMilliseconds, hStart, hEnd))

CU_FN(cuMemcpyAsync,   CU_REQUIRED, 0, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream))
CU_FN(cuMemsetD8Async, CU_REQUIRED, 0, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream))
/* The _v2 stream memory operations (CUDA 11.7) need no opt-in; cuda.h 11.8 still maps the plain name to v1. */
CU_FN(cuStreamWriteValue64_v2, CU_REQUIRED, 11070, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), (stream, addr, value, flags))

/*
 * CUDA graphs, for capturing work queued on a stream and replaying it. cuda.h 11.8 maps
 * cuStreamBeginCapture to cuStreamBeginCapture_v2 (CUDA 10.1), which takes the capture mode;
 * cuGraphInstantiate is instantiated through cuGraphInstantiateWithFlags (CUDA 11.4), whose
 * signature did not change in CUDA 12, unlike cuGraphInstantiate's.
 */
CU_FN(cuStreamBeginCapture,        CU_REQUIRED, 10010, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
CU_FN(cuStreamEndCapture,          CU_REQUIRED, 0, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))
CU_FN(cuGraphInstantiateWithFlags, CU_REQUIRED, 11040, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags), (phGraphExec, hGraph, flags))
CU_FN(cuGraphLaunch,               CU_REQUIRED, 0, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
CU_FN(cuGraphExecDestroy,          CU_REQUIRED, 0, (CUgraphExec hGraphExec), (hGraphExec))
CU_FN(cuGraphDestroy,              CU_REQUIRED, 0, (CUgraph hGraph), (hGraph))

CU_FN(cuModuleLoadData,    CU_REQUIRED, 0, (CUmodule *module, const void *image), (module, image))
CU_FN(cuModuleUnload,      CU_REQUIRED, 0, (CUmodule hmod), (hmod))
CU_FN(cuModuleGetFunction, CU_REQUIRED, 0, (CUfunction *hfunc, CUmodule hmod, const char *name), (hfunc, hmod, name))
CU_FN(cuLaunchKernel, CU_REQUIRED, 0,
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra))
