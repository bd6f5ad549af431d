/*
 * nccl/group.c: ncclGroupStart/End. Groups nest per thread, as in NCCL. This library's calls
 * inside a group are queued at once (each is one kernel on its stream, with nothing to fuse);
 * sends and receives wait for the group's end, when they run together (p2p.c); the calls sent
 * to the real NCCL inside a group form one group there, opened before the first
 * of them and closed by the outermost ncclGroupEnd. The first error of a call inside a group is
 * returned by that call and again by the outermost ncclGroupEnd.
 */
#include "shim.h"

static _Thread_local int depth;                    /* ncclGroupStart calls not yet ended */
static _Thread_local const shimRealNccl* realGroup; /* the real NCCL whose group is open, or NULL */
static _Thread_local ncclResult_t groupError;       /* the first error inside the group */

bool shimInGroup(void) { return depth > 0; }

ncclResult_t shimGroupError(ncclResult_t res) {
  if (depth > 0 && res != ncclSuccess && res != ncclInProgress && groupError == ncclSuccess) groupError = res;
  return res;
}

ncclResult_t shimJoinRealGroup(const shimRealNccl* nccl) {
  if (realGroup != NULL) return ncclSuccess;
  ncclResult_t res = nccl->ncclGroupStart();
  if (res == ncclSuccess) realGroup = nccl;
  return res;
}

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  depth++;
  return ncclSuccess;
}

/* Ends one level; at the outermost, closes the real NCCL's group (simulated or not) and returns
 * the group's first error. */
static ncclResult_t groupEnd(ncclSimInfo_t* sim, const char* call) {
  if (depth == 0) return shimFail(ncclInvalidUsage, NULL, call, "no group is open on this thread (ncclGroupStart first)");
  if (--depth > 0) return ncclSuccess;
  ncclResult_t res = groupError, real = ncclSuccess, p2p = shimP2PFlush();
  groupError = ncclSuccess;
  if (res == ncclSuccess) res = p2p;
  if (realGroup != NULL) {
    if (sim != NULL && realGroup->ncclGroupSimulateEnd != NULL) real = realGroup->ncclGroupSimulateEnd(sim);
    else real = realGroup->ncclGroupEnd();
    realGroup = NULL;
  }
  return res != ncclSuccess ? res : real;
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) { return groupEnd(NULL, "ncclGroupEnd"); }

/* This library's calls in the group have been queued already: only the real NCCL's part, if
 * any, is simulated, and the estimate is its alone (NCCL_UNDEF_FLOAT when it has none). */
NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  if (simInfo == NULL) return shimFail(ncclInvalidArgument, NULL, "ncclGroupSimulateEnd", "simInfo is NULL");
  simInfo->estimatedTime = NCCL_UNDEF_FLOAT;
  return groupEnd(simInfo, "ncclGroupSimulateEnd");
}
