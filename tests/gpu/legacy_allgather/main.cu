// legacy_allgather: all-to-all AllGather over legacy MSCCL++ 0.1 device connections, in the
// style of the original 0.1 tests.
//
// Every rank holds one buffer of nranks chunks and owns chunk `rank`. It opens one connection per
// peer (tag 0, P2P, or IB with LEGACY_TRANSPORT=ib), all registering that same whole buffer, so the offsets of a put mean the same
// thing at both ends. One kernel runs a warp per peer: lane 0 of warp w calls
// putWithSignal(rank * chunk, rank * chunk, chunk) on connection w, then flush(), then wait() for
// the peer's chunk. Afterwards the GPU checks every chunk of the buffer (own one included) against
// the owner's pattern for this chunk size and iteration, and a guard past the last chunk against
// the poison all foreign chunks were filled with beforehand.
//
// Chunk sizes: 1 KiB .. 64 MiB per rank (x4), plus 1000003 bytes so that chunk offsets are odd.
// Each size runs kIterations times: the first with the header's own flush()/wait(), the others
// with the bounded versions (see ../legacy_util.cuh).
//
//   mpirun -np <GPUs> ./legacy_allgather
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../legacy_util.cuh"

using namespace legacytest;

namespace {

constexpr const char* kTestName = "legacy_allgather";
constexpr int kTag = 0;

constexpr uint64_t kMinChunkBytes = 1024;
constexpr uint64_t kMaxChunkBytes = 64ull << 20;
constexpr uint64_t kChunkFactor = 4;
// A chunk size that is odd and prime, so every chunk but the first starts at an unaligned offset.
constexpr uint64_t kOddChunkBytes = 1000003;
static_assert(kOddChunkBytes <= kMaxChunkBytes, "the odd size must fit the buffer");
constexpr unsigned int kIterations = 3;

// Bytes past the last chunk that must stay poison (the buffer is allocated with room for them).
constexpr uint64_t kGuardBytes = 256;

constexpr int kWarpSize = 32;
constexpr int kMaxWarpsPerBlock = 32;
// Seed "mode" of this program's data (see makeSeed).
constexpr uint32_t kSeedMode = 0x41;

// Warp w (counted over the grid) serves connection w; lane 0 does the work, as in the original
// tests (one thread per peer is all the proxy interface needs).
__global__ void allGatherKernel(mscclppDevConn_t* conns, int numConns, int myRank, uint64_t chunkBytes,
                                SyncFlavor flavor, DeviceStatus* status, unsigned int iteration) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (warp >= numConns || lane != 0) return;
  mscclppDevConn_t& conn = conns[warp];
  DeviceStatus* st = &status[conn.remoteRank];
  const uint64_t myChunk = static_cast<uint64_t>(myRank) * chunkBytes;
  conn.putWithSignal(myChunk, myChunk, chunkBytes);
  if (!flushWith(flavor, conn, st, iteration)) return;
  waitWith(flavor, conn, st, kStepWaitData, iteration);
}

struct Result {
  bool pass;
  unsigned long long checked;  // over all ranks
};

class AllGatherTest {
 public:
  AllGatherTest(uint8_t* buffer, mscclppDevConn_t* conns, int numConns, cudaStream_t stream, DeviceStatus* status)
      : buf_(buffer), conns_(conns), numConns_(numConns), stream_(stream), status_(status), rank_(g_proc.rank),
        nranks_(g_proc.nranks) {}

  // Runs all iterations of one chunk size and prints its line on rank 0.
  Result runSize(uint64_t chunkBytes) {
    unsigned long long wrong = 0;
    for (unsigned int it = 0; it < kIterations; it++) {
      const SyncFlavor flavor = it == 0 ? kHeaderSync : kBoundedSync;
      const std::string what = strf("allgather %s iteration %u (%s)", sizeText(chunkBytes).c_str(), it, syncFlavorName(flavor));
      prepare(chunkBytes, it);
      const int warpsPerBlock = numConns_ < kMaxWarpsPerBlock ? numConns_ : kMaxWarpsPerBlock;
      const int blocks = (numConns_ + warpsPerBlock - 1) / warpsPerBlock;
      allGatherKernel<<<blocks, warpsPerBlock * kWarpSize, 0, stream_>>>(conns_, numConns_, rank_, chunkBytes, flavor,
                                                                         status_, it);
      CHECK_LAUNCH();
      syncWithWatchdog(stream_, what);
      abortOnTimeouts(readStatus(status_, statusSlots(), stream_), what);
      wrong += verify(chunkBytes, it, what);
    }
    const unsigned long long totalWrong = sumOverRanks(wrong);
    const unsigned long long checked =
        static_cast<unsigned long long>(nranks_) * nranks_ * chunkBytes * kIterations;  // every rank checks every chunk
    if (rank_ == 0) {
      std::fprintf(stdout, "%-4s allgather chunk %12s (%llu B): %u iterations, %llu bytes checked, %llu wrong\n",
                   totalWrong == 0 ? "ok" : "FAIL", sizeText(chunkBytes).c_str(),
                   static_cast<unsigned long long>(chunkBytes), kIterations, checked, totalWrong);
      std::fflush(stdout);
    }
    return Result{totalWrong == 0, checked};
  }

 private:
  uint8_t* chunk(int owner, uint64_t chunkBytes) const { return buf_ + static_cast<uint64_t>(owner) * chunkBytes; }
  uint32_t seed(int owner, uint64_t chunkBytes, unsigned int it) const { return makeSeed(kSeedMode, owner, chunkBytes, it); }
  int guardSlot() const { return nranks_; }
  int statusSlots() const { return nranks_ + 1; }

  // Poisons the whole used buffer plus the guard, writes this rank's chunk, and lines all ranks
  // up: the previous iteration's kernels are done everywhere (their flushes returned, so no put
  // is still in flight) before anybody poisons, and all poisoning is done before anybody sends.
  void prepare(uint64_t chunkBytes, unsigned int it) {
    MPI_Barrier(MPI_COMM_WORLD);
    poison(buf_, nranks_ * chunkBytes + kGuardBytes, stream_);
    launchFillPattern(chunk(rank_, chunkBytes), chunkBytes, seed(rank_, chunkBytes, it), stream_);
    resetStatus(status_, statusSlots(), stream_);  // also waits for the poison and fill
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // Checks every chunk and the guard; prints details of wrong data; returns the wrong bytes.
  // status_[owner] collects chunk `owner`, status_[guardSlot()] the guard.
  unsigned long long verify(uint64_t chunkBytes, unsigned int it, const std::string& what) {
    for (int owner = 0; owner < nranks_; owner++)
      launchCheckPattern(chunk(owner, chunkBytes), chunkBytes, seed(owner, chunkBytes, it), &status_[owner], it, stream_);
    launchCheckPoison(chunk(nranks_, chunkBytes), kGuardBytes, &status_[guardSlot()], it, stream_);
    syncWithWatchdog(stream_, what + " (check)");
    const std::vector<DeviceStatus> st = readStatus(status_, statusSlots(), stream_);
    unsigned long long wrong = 0;
    for (int owner = 0; owner < nranks_; owner++) {
      if (st[owner].mismatches == 0) continue;
      wrong += st[owner].mismatches;
      std::fprintf(stdout, "rank %d: %s: chunk of rank %d%s: %llu wrong bytes, first at %s, %s\n", rank_, what.c_str(),
                   owner, owner == rank_ ? " (this rank's own, overwritten)" : "", st[owner].mismatches,
                   firstBadText(st[owner]).c_str(),
                   firstBadBytes(st[owner], chunk(owner, chunkBytes), seed(owner, chunkBytes, it)).c_str());
    }
    const DeviceStatus& guard = st[guardSlot()];
    if (guard.mismatches != 0) {
      wrong += guard.mismatches;
      std::fprintf(stdout, "rank %d: %s: %llu bytes written past the last chunk, first at guard %s\n", rank_,
                   what.c_str(), guard.mismatches, firstBadText(guard).c_str());
    }
    std::fflush(stdout);
    return wrong;
  }

  uint8_t* buf_;
  mscclppDevConn_t* conns_;
  int numConns_;
  cudaStream_t stream_;
  DeviceStatus* status_;
  int rank_;
  int nranks_;
};

}  // namespace

int main(int argc, char** argv) {
  mscclppComm_t comm = initProcess(&argc, &argv, kTestName);
  const int rank = g_proc.rank;
  const int nranks = g_proc.nranks;

  // One buffer for all chunks (and the guard), registered whole with every peer.
  const uint64_t bufferBytes = static_cast<uint64_t>(nranks) * kMaxChunkBytes + kGuardBytes;
  uint8_t* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, bufferBytes));
  CHECK_CUDA(cudaMemset(buffer, 0, bufferBytes));
  const std::vector<int> peers = otherRanks();
  for (int peer : peers) CHECK_MSCCLPP(mscclppConnect(comm, peer, kTag, buffer, bufferBytes, transportUnderTest()));
  CHECK_MSCCLPP(mscclppConnectionSetup(comm));
  mscclppDevConn_t* conns = deviceConnections(comm, peers, kTag, std::vector<void*>(peers.size(), buffer));

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceStatus* status = nullptr;  // one per chunk owner, plus one for the guard
  CHECK_CUDA(cudaMalloc(&status, sizeof(DeviceStatus) * (nranks + 1)));
  CHECK_CUDA(cudaDeviceSynchronize());

  CHECK_MSCCLPP(mscclppProxyLaunch(comm));
  if (rank == 0)
    std::fprintf(stdout, "%s: %d ranks, %s buffer per rank, %u iterations per chunk size\n", kTestName, nranks,
                 sizeText(bufferBytes).c_str(), kIterations);

  std::vector<uint64_t> sizes;
  for (uint64_t s = kMinChunkBytes; s <= kMaxChunkBytes; s *= kChunkFactor) sizes.push_back(s);
  sizes.push_back(kOddChunkBytes);

  AllGatherTest test(buffer, conns, static_cast<int>(peers.size()), stream, status);
  int passed = 0, failed = 0;
  unsigned long long checked = 0;
  for (uint64_t s : sizes) {
    const Result r = test.runSize(s);
    (r.pass ? passed : failed)++;
    checked += r.checked;
  }

  CHECK_MSCCLPP(mscclppProxyStop(comm));
  CHECK_CUDA(cudaFree(status));
  CHECK_CUDA(cudaFree(conns));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_MSCCLPP(mscclppCommDestroy(comm));
  CHECK_CUDA(cudaFree(buffer));

  if (rank == 0) {
    std::fprintf(stdout, "%s %s: %d ranks, %d chunk sizes passed, %d failed, %llu bytes checked\n",
                 failed == 0 ? "PASS" : "FAIL", kTestName, nranks, passed, failed, checked);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
