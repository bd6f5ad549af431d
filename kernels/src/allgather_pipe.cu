// allgather_pipe.cu: AllGather over memory channels with the grid split into senders and copiers,
// for large messages (forced only, for measuring).
//
// The moves of allgather_put.cu, overlapped: half the blocks store each rank's input in rounds
// into the peers' scratch while the other half copy the rounds that have landed out into the
// output (pipeRounds, put.cuh).
#include "put.cuh"

namespace coll {

__device__ __forceinline__ void allgatherPipe(const Args& a) {
  pipeRounds(a, a.count);
  finishCall(a.state);
}

}  // namespace coll

// Blocks of kRsagThreads (512) threads, one per SM: with 1024 threads (64 registers each), or
// with the register budget left to ptxas, it spilled.
extern "C" __global__ void __launch_bounds__(coll::kRsagThreads, COLL_ONE_BLOCK_PER_SM) mscclpp_allgather_pipe(const coll::Args args) {
  coll::startWaits();
  coll::allgatherPipe(args);
}
