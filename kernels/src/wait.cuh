// wait.cuh: how a kernel waits for a peer, and how a wait that would never end ends.
//
// Every wait polls, and calls spinCheck after each poll that failed. Two words of host memory per
// communicator, mapped into the device (Args::abort, P2PArgs::abort), let a waiting thread give
// up without a trap (which would kill the process's CUDA context):
//   abort[kAbortRequest]: the host sets it when the communicator is aborted or a peer's bootstrap
//     link fails; a waiting thread reads it every kAbortPollEvery failed polls and, once it is
//     set, records kReportAborted and exits;
//   abort[kAbortReport]: what the kernels did about it; a thread that has polled maxSpins times
//     (a frozen peer) records kReportTimedOut, sets the request so that the grid's other waiting
//     threads give up too, and exits.
// Exited threads release the barriers of their block (PTX `exit`), so the kernel ends and the
// stream carries no error; its results are undefined and the host reports why (collectives.Comm.Err
// reads the report). The words are mirrored by collectives/abort.go.
//
// A thread that gives up also raises its block's blockGaveUp, and the barrier after a wait is
// syncAfterWaits, which ends the block's other threads there too: without it they would go on
// with what the wait should have brought (a peer's buffer address never received: a stray write
// that kills the context) and signal the peers that a step is done (a peer that runs another
// algorithm, because the ranks disagree about the call, then completes with wrong bytes and no
// error). Entry points that wait call startWaits first.
#ifndef MSCCLPP_KERNELS_WAIT_CUH_
#define MSCCLPP_KERNELS_WAIT_CUH_

#include <stdint.h>

namespace coll {

// Indices of the two abort words; must equal collectives.abortRequest and abortReport.
enum AbortWord : uint32_t { kAbortRequest = 0, kAbortReport = 1 };
// Values of abort[kAbortReport]; must equal collectives.reportAborted and reportTimedOut.
enum AbortReport : uint32_t { kReportNone = 0, kReportAborted = 1, kReportTimedOut = 2 };
// How many failed polls a waiting thread makes between two reads of the request (a read crosses
// PCIe, about a microsecond; a poll of device or peer memory is a fraction of that).
constexpr int64_t kAbortPollEvery = 1024;

// Ends the calling thread (nothing after it runs, which the compiler is told).
__device__ __forceinline__ void exitThread() {
  asm volatile("exit;" ::: "memory");
  __builtin_unreachable();
}

// Set by a thread of the block that gave up a wait; cleared by startWaits, read by syncAfterWaits.
__shared__ uint32_t blockGaveUp;

// Gives up a wait: records why (kReportAborted only when no earlier report says more; for
// kReportTimedOut, also raises the request for the grid's other waiting threads) and exits.
// Out of line, so that the waits it ends keep their registers for the work around them.
__device__ __noinline__ void giveUp(uint32_t* abort, uint32_t report) {
  volatile uint32_t* w = abort;
  *static_cast<volatile uint32_t*>(&blockGaveUp) = 1;
  if (report == kReportTimedOut) {
    w[kAbortReport] = kReportTimedOut;
    __threadfence_system();
    w[kAbortRequest] = 1;
  } else if (w[kAbortReport] == kReportNone) {
    w[kAbortReport] = report;
  }
  exitThread();
}

// Called after failed poll number `spins` (counting from 0) of a wait: gives up when the host
// asked the kernels to (read every kAbortPollEvery polls), or after maxSpins failed polls
// (maxSpins < 0: no bound).
__device__ __forceinline__ void spinCheck(uint32_t* abort, int64_t maxSpins, int64_t spins) {
  if ((spins & (kAbortPollEvery - 1)) == kAbortPollEvery - 1 &&
      reinterpret_cast<volatile uint32_t*>(abort)[kAbortRequest] != 0) {
    giveUp(abort, kReportAborted);
  }
  if (maxSpins >= 0 && spins >= maxSpins) giveUp(abort, kReportTimedOut);
}

// Polls ready() until it returns true, calling spinCheck after each failed poll.
template <typename Ready>
__device__ __forceinline__ void spinUntil(uint32_t* abort, int64_t maxSpins, Ready ready) {
  for (int64_t spins = 0; !ready(); ++spins) spinCheck(abort, maxSpins, spins);
}

// The first step of an entry point whose threads wait: no thread of the block has given up yet.
__device__ __forceinline__ void startWaits() {
  if (threadIdx.x == 0) blockGaveUp = 0;
  __syncthreads();
}

// The barrier after a wait of some of the block's threads: if one of them gave up, every thread
// ends here (see the top of this file).
__device__ __forceinline__ void syncAfterWaits() {
  __syncthreads();
  if (blockGaveUp != 0) exitThread();
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_WAIT_CUH_
