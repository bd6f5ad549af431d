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
