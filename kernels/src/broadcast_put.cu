// broadcast_put.cu: Broadcast over memory channels, for medium and large messages.
//
// The root (args.op) alone sends: its input goes, in rounds through the peers' scratch
// (putRounds, put.cuh), into every rank's output. Every rank's blocks still exchange a signal per
// round with every peer, as in AllGather, so the semaphores of all pairs stay in step.
#include "put.cuh"

namespace coll {

__device__ __forceinline__ void broadcastPut(const Args& a) {
  char* recv = static_cast<char*>(a.recv);
  putRounds(a, a.count, int64_t(a.op), [&](uint64_t) { return recv; });
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_broadcast_put(const coll::Args args) {
  coll::startWaits();
  coll::broadcastPut(args);
}
