// alltoall_put.cu: AlltoAll over memory channels for blocks larger than a line slot (where the
// LL128 lines of alltoall_ll128.cu stop), or where lines are off.
//
// Every rank sends block r of its input (a.count bytes at send + r * a.count) to rank r in rounds
// through the peers' scratch (putRounds with a source per peer, put.cuh), and copies its own block
// into its output. In place (send == recv) needs no copy: a block of the grid copies round R's
// pieces out of its slots into the bytes at the same offsets of every block of the output only
// after the round's signals, that is after it stored its own pieces of those offsets to the peers
// (each block of the grid owns the same offsets of every rank's block), and the rank's own block
// stays put.
//
// Like alltoall_ll128.cu it runs on the collectives' scratch and State: an AlltoAll is a collective
// that every rank calls in the same order.
#include "put.cuh"

namespace coll {

__device__ __forceinline__ void alltoallPut(const Args& a) {
  const char* send = static_cast<const char*>(a.send);
  char* recv = static_cast<char*>(a.recv);
  putRounds<true>(
      a, a.count, -1, [&](uint64_t r) { return recv + r * a.count; }, [&](uint64_t r) { return send + r * a.count; });
  finishCall(a.state);
}

}  // namespace coll

extern "C" __global__ void __launch_bounds__(coll::kPutThreads) mscclpp_alltoall_put(const coll::Args args) {
  coll::startWaits();
  coll::alltoallPut(args);
}
