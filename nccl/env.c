/*
 * nccl/env.c: the NCCL layer's environment (MSCCLPP_NCCL_FALLBACK), its error messages and its
 * log lines, which look like the library's (docs/CONFIG.md).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shim.h"

static const char* const kindNames[shimNumKinds] = {
    [shimAllReduce] = "allreduce", [shimAllGather] = "allgather", [shimReduceScatter] = "reducescatter",
    [shimBroadcast] = "broadcast", [shimReduce] = "reduce",       [shimSendRecv] = "sendrecv",
    [shimAlltoAll] = "alltoall",   [shimGather] = "gather",       [shimScatter] = "scatter",
};

const char* shimKindName(shimKind kind) {
  return kind >= 0 && kind < shimNumKinds ? kindNames[kind] : "unknown";
}

ncclResult_t shimReadConfig(shimConfig* cfg, char* why, size_t whyLen) {
  memset(cfg, 0, sizeof(*cfg));
  const char* v = getenv("MSCCLPP_NCCL_FALLBACK");
  if (v == NULL || *v == '\0') return ncclSuccess;
  char buf[256];
  if (strlen(v) >= sizeof(buf)) {
    snprintf(why, whyLen, "MSCCLPP_NCCL_FALLBACK is too long");
    return ncclInvalidUsage;
  }
  strcpy(buf, v);
  bool sawAuto = false;
  char* save = NULL;
  for (char* tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
    if (strcasecmp(tok, "auto") == 0) {
      sawAuto = true;
      continue;
    }
    if (strcasecmp(tok, "off") == 0) {
      cfg->off = true;
      continue;
    }
    if (strcasecmp(tok, "eager") == 0) {
      cfg->eager = true;
      continue;
    }
    if (strcasecmp(tok, "all") == 0) {
      cfg->forced = (1u << shimNumKinds) - 1;
      continue;
    }
    int k;
    for (k = 0; k < shimNumKinds; k++) {
      if (strcasecmp(tok, kindNames[k]) == 0) break;
    }
    if (k == shimNumKinds) {
      snprintf(why, whyLen,
               "MSCCLPP_NCCL_FALLBACK: unknown word \"%s\" (want auto, off, eager, all or a comma list of "
               "allreduce, allgather, reducescatter, broadcast, reduce, sendrecv, alltoall, gather, scatter)",
               tok);
      return ncclInvalidUsage;
    }
    cfg->forced |= 1u << k;
  }
  if (cfg->off && (cfg->forced != 0 || cfg->eager || sawAuto)) {
    snprintf(why, whyLen, "MSCCLPP_NCCL_FALLBACK=\"%s\": off excludes every other word", v);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

/* ---- Logging -------------------------------------------------------------------------------- */

/* The level MSCCLPP_DEBUG asks for, read on each use (a setenv after load counts, as in the
 * library); WARN for anything else, as the library does. */
static shimLogLevel logLevel(void) {
  const char* v = getenv("MSCCLPP_DEBUG");
  if (v == NULL) return shimLogWarn;
  if (strcasecmp(v, "INFO") == 0) return shimLogInfo;
  if (strcasecmp(v, "TRACE") == 0) return shimLogTrace;
  return shimLogWarn;
}

void shimLog(shimLogLevel level, ncclComm_t comm, const char* fmt, ...) {
  if (level > logLevel()) return;
  static const char* const names[] = {"", "WARN", "INFO", "TRACE"};
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  char rank[16] = "-";
  if (shimIsOurs(comm)) snprintf(rank, sizeof(rank), "%d", comm->rank);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  /* One write per line, so that the lines of several threads do not interleave. */
  char line[1200];
  int n = snprintf(line, sizeof(line), "%s:%d [%s] MSCCLPP %s nccl: %s\n", host, (int)getpid(), rank,
                   names[level], msg);
  if (n > (int)sizeof(line) - 1) n = (int)sizeof(line) - 1;
  fwrite(line, 1, (size_t)n, stdout);
  fflush(stdout);
}

/* ---- Errors --------------------------------------------------------------------------------- */

static _Thread_local char lastError[1024];

ncclResult_t shimFail(ncclResult_t res, ncclComm_t comm, const char* call, const char* fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (shimIsOurs(comm)) {
    snprintf(lastError, sizeof(lastError), "rank %d of %d: %s: %s", comm->rank, comm->nranks, call, msg);
  } else {
    snprintf(lastError, sizeof(lastError), "%s: %s", call, msg);
  }
  shimLog(shimLogWarn, comm, "%s: %s (%s)", call, msg, ncclGetErrorString(res));
  return res;
}

ncclResult_t shimResult(mscclppResult_t res) {
  switch (res) {
    case mscclppSuccess: return ncclSuccess;
    case mscclppUnhandledCudaError: return ncclUnhandledCudaError;
    case mscclppSystemError: return ncclSystemError;
    case mscclppInternalError: return ncclInternalError;
    case mscclppInvalidArgument: return ncclInvalidArgument;
    case mscclppInvalidUsage: return ncclInvalidUsage;
    case mscclppRemoteError: return ncclRemoteError;
    case mscclppInProgress: return ncclInProgress;
    default: return ncclInternalError;
  }
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with MSCCLPP_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with MSCCLPP_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the MSCCL++ in Go developers";
    case ncclInvalidArgument: return "invalid argument (run with MSCCLPP_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with MSCCLPP_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  if (comm != NULL && !shimIsOurs(comm)) {
    char why[256];
    const shimRealNccl* nccl = shimReal(why, sizeof(why));
    if (nccl != NULL && nccl->ncclGetLastError != NULL) return nccl->ncclGetLastError(comm);
  }
  return lastError;
}

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == NULL) return shimFail(ncclInvalidArgument, NULL, "ncclGetVersion", "version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

/* Lets the layer recognise itself (real.c skips a libnccl.so.2 that has it): the version of the
 * NCCL ABI it follows. */
__attribute__((visibility("default"))) const int mscclppNcclLayer = NCCL_VERSION_CODE;
