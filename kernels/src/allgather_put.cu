// allgather_put.cu: AllGather over memory channels, for medium and large messages.
//
// Every rank sends: each rank's input goes, in rounds through the peers' scratch (putRounds,
// put.cuh), into its part of every rank's output.
#include "put.cuh"

namespace coll {

__device__ __forceinline__ void allgatherPut(const Args& a) {
  char* recv = static_cast<char*>(a.recv);
  putRounds(a, a.count, -1, [&](uint64_t r) { return recv + r * a.count; });
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_allgather_put(const coll::Args args) {
  coll::startWaits();
  coll::allgatherPut(args);
}
