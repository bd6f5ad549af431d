/*
 * mscclpp/types.h: the C types shared by the legacy API (mscclpp.h) and the primitive API
 * (mscclpp/core.h): result codes, the rendezvous id and transports. C-compatible.
 */
#ifndef MSCCLPP_TYPES_H_
#define MSCCLPP_TYPES_H_

/* Size in bytes of a mscclppUniqueId. */
#define MSCCLPP_UNIQUE_ID_BYTES 128

/* Rendezvous token that lets the ranks find each other; treat the bytes as opaque and pass them around unchanged. */
typedef struct {
  char internal[MSCCLPP_UNIQUE_ID_BYTES]; /* opaque contents, filled by mscclppGetUniqueId */
} mscclppUniqueId;

/* Result of every call. */
typedef enum {
  mscclppSuccess = 0,            /* the call succeeded */
  mscclppUnhandledCudaError = 1, /* the CUDA driver or runtime failed */
  mscclppSystemError = 2,        /* the operating system or the network failed */
  mscclppInternalError = 3,      /* a bug in the library */
  mscclppInvalidArgument = 4,    /* an argument is out of its domain */
  mscclppInvalidUsage = 5,       /* the call is not valid in the current state */
  mscclppRemoteError = 6,        /* a peer failed or misbehaved */
  mscclppInProgress = 7,         /* the operation has started but not finished */
  mscclppNumResults = 8          /* number of result codes; never returned */
} mscclppResult_t;

/* How a connection moves data. */
typedef enum {
  mscclppTransportP2P = 0, /* between GPUs of one host: CUDA IPC and copy engines over NVLink/PCIe */
  mscclppTransportSHM = 1, /* processes of one host through libfabric's shm provider (GPU memory staged) */
  mscclppTransportIB = 2,  /* the network through libfabric: verbs, efa, cxi or tcp (MSCCLPP_NET_PROVIDER) */
} mscclppTransport_t;

#endif  // MSCCLPP_TYPES_H_
