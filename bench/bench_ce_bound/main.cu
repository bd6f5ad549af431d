// bench_ce_bound: how fast could an AllReduce be whose NVLink traffic all goes through the copy
// engines (docs/design/allreduce-copy-engines.md)? One rank per GPU under mpirun; the GPUs map
// each other's buffers through CUDA IPC; no MSCCL++ call. For a buffer of S bytes per rank and n
// ranks (piece = S / n) it times, each after a warm-up:
//
//   copies   what each rank of such an AllReduce sends over NVLink, as cudaMemcpyAsync: to every
//            peer one piece into the peer's scratch (reduce-scatter) and one into its output
//            (all-gather), 2(n-1) pieces; from one stream, then from one stream per peer;
//   reduce   the local reduction on the SMs: this rank's piece of its input and the n-1 pieces in
//            its scratch, summed as float32 into its output;
//   both     the copies (a stream per peer) and the reduction at once, as a pipeline would
//            overlap them (on different waves; here on the same buffers: timing only, the data
//            is not checked);
//   waves    the copies cut into kWaves waves, one stream, peer after peer in every wave (the
//            request pattern of the port AllReduce: does switching destinations cost?), then
//            the same waves with a stream per peer (do copies of different streams overlap?);
//   ring     the same number of bytes, all to the next rank around the ring (what a ring
//            AllReduce sends), so every GPU has exactly one sender whatever the ranks' drift:
//            as copies (whole pieces, then cut into kRingCuts copies each) and as SM stores;
//   SM       the same 2(n-1) pieces moved by SM stores into the peers' memory instead, every
//            peer at once (what the SM AllReduce kernels are capped by);
//   split    a share of every piece on the copy engines (a stream per peer) and the rest by SM
//            stores at once: does the link carry more than either engine alone?
//   timeline one run of the copies with a stream per peer (whole pieces, then waves), each
//            copy timed on its stream: rank 0 prints when each starts and ends, which says
//            whether one GPU's copies on different streams run at the same time or one after
//            the other;
//   TMA      the SM rows again, but each block moves its tiles with the Hopper bulk-copy engine
//            (cp.async.bulk: local memory into shared memory, shared memory into the peer's):
//            do bulk stores carry more over NVLink than 16-byte SM stores? (CUDA 12 or later;
//            built with an older nvcc the rows are left out)
//
// Each figure is the slowest rank's time per run, averaged over kRuns runs that start together
// (MPI_Barrier), and the bus bandwidth an AllReduce of S bytes taking that long would have,
// 2(n-1)/n * S / t, which is what each GPU sends over NVLink per second.
//
//   mpirun -np 4 ./bench_ce_bound [MiB [shift KiB [pad KiB]]]
//
// MiB: S (default 1024). shift: where the scratch starts in its allocation; pad: bytes allocated
// after it (both default 0). The port AllReduce's scatters into the library's scratch ran at
// 233-308 GB/s against 383-386 for its gathers into the receive buffers (the measurement log that docs/PERFORMANCE.md was before 3078f58)
// while the scratch's data banks started 16 KiB (2 ranks) or 32 KiB (4 ranks) past a 2 MiB
// boundary and its size was 16 or 32 KiB over a multiple of 2 MiB; one build with both aligned
// ran them at full speed. Does a copy's destination offset, or its allocation's size, matter?
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../common.cuh"

using benchmpi::check;
using benchmpi::checkCuda;
using benchmpi::g_rank;

namespace {

constexpr uint64_t kDefaultMiB = 1024;
constexpr uint64_t kPieceAlign = 256;  // bytes: every piece starts 16-byte (and cache-line) aligned
constexpr int kWarmupRuns = 2;
constexpr int kRuns = 5;
constexpr int kMaxRanks = 8;
constexpr int kReduceBlocksPerSM = 1;
constexpr int kReduceThreads = 512;
constexpr double kBytesPerGB = 1e9;
constexpr int kWaves = 4;                  // "waves": the port AllReduce's fewest waves
constexpr int kRingCuts = 8;               // "ring": copies per piece in the cut variant
constexpr int kCopyThreads = 1024;         // SM copy kernel: threads per block
constexpr int kCopyUnroll = 4;             // SM copy kernel: 16-byte words in flight per thread
constexpr double kSplitShares[] = {0.25, 0.5};  // "split": the copy engines' share of each piece

// The reduction's inputs: n pieces of `words` 16-byte words each, summed as float32 into out.
struct ReduceArgs {
  const float4* in[kMaxRanks];
  float4* out;
  int n;
  uint64_t words;
};

__global__ void reduceKernel(ReduceArgs a) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.words; i += stride) {
    float4 acc = a.in[0][i];
    for (int r = 1; r < a.n; ++r) {
      const float4 x = a.in[r][i];
      acc.x += x.x, acc.y += x.y, acc.z += x.z, acc.w += x.w;
    }
    a.out[i] = acc;
  }
}

// The SM copy kernel's jobs: `words` 16-byte words from src to dst each. The blocks are dealt
// out to the jobs in turn, so every job (and so every peer) is served at once.
struct CopyJob {
  const uint4* src;
  uint4* dst;
  uint64_t words;
};
struct CopyArgs {
  CopyJob job[2 * kMaxRanks];
  int jobs;
};

__global__ void smCopyKernel(CopyArgs a) {
  const int j = blockIdx.x % a.jobs;
  const uint64_t blocks = (gridDim.x - j + a.jobs - 1) / a.jobs;  // blocks serving job j
  const uint64_t stride = blocks * blockDim.x;
  const CopyJob c = a.job[j];
  uint64_t i = (blockIdx.x / a.jobs) * blockDim.x + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < c.words; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) v[k] = c.src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) c.dst[i + k * stride] = v[k];
  }
  for (; i < c.words; i += stride) c.dst[i] = c.src[i];
}

#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12 && !defined(BENCH_NO_TMA)
#define BENCH_HAVE_TMA 1
constexpr uint32_t kTmaTileBytes = 16384;  // bytes per bulk copy (a multiple of 16)
constexpr int kTmaStages = 4;              // tiles in flight per block
constexpr int kTmaThreads = 32;            // one warp per block; its first thread issues everything
constexpr size_t kTmaSharedBytes = size_t(kTmaTileBytes) * kTmaStages;

__device__ __forceinline__ uint32_t sharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The jobs of smCopyKernel moved by bulk copies: job blockIdx.x % jobs, its tiles dealt out to
// the blocks serving it. Each tile is loaded into a shared-memory stage (completion counted on
// the stage's mbarrier) and stored from there to dst; a stage is reloaded once the store that
// read it has finished reading.
__global__ void tmaCopyKernel(CopyArgs a) {
  extern __shared__ __align__(128) unsigned char stage[];
  __shared__ __align__(8) uint64_t loaded[kTmaStages];
  if (threadIdx.x != 0) return;
  const int j = blockIdx.x % a.jobs;
  const uint64_t blocks = (gridDim.x - j + a.jobs - 1) / a.jobs;
  const uint64_t first = blockIdx.x / a.jobs;
  const char* src = reinterpret_cast<const char*>(a.job[j].src);
  char* dst = reinterpret_cast<char*>(a.job[j].dst);
  const uint64_t bytes = a.job[j].words * sizeof(uint4);
  const uint64_t tiles = (bytes + kTmaTileBytes - 1) / kTmaTileBytes;
  const uint64_t mine = first < tiles ? (tiles - first + blocks - 1) / blocks : 0;
  for (int s = 0; s < kTmaStages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sharedAddress(&loaded[s])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  auto offset = [&](uint64_t k) { return (first + k * blocks) * kTmaTileBytes; };
  auto length = [&](uint64_t k) { return uint32_t(bytes - offset(k) < kTmaTileBytes ? bytes - offset(k) : kTmaTileBytes); };
  auto load = [&](uint64_t k) {
    const int s = k % kTmaStages;
    const uint32_t bar = sharedAddress(&loaded[s]);
    asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(bar), "r"(length(k))
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     sharedAddress(stage + s * kTmaTileBytes)),
                 "l"(src + offset(k)), "r"(length(k)), "r"(bar)
                 : "memory");
  };
  for (uint64_t k = 0; k < mine && k < kTmaStages; ++k) load(k);
  for (uint64_t k = 0; k < mine; ++k) {
    const int s = k % kTmaStages;
    const uint32_t parity = (k / kTmaStages) & 1;
    uint32_t ready = 0;
    do {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(ready)
                   : "r"(sharedAddress(&loaded[s])), "r"(parity)
                   : "memory");
    } while (!ready);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + offset(k)),
                 "r"(sharedAddress(stage + s * kTmaTileBytes)), "r"(length(k))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (k >= 1 && k - 1 + kTmaStages < mine) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");  // the store of tile k-1 has read its stage
      load(k - 1 + kTmaStages);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
#endif

// One device buffer of this rank, and the same buffer of every peer mapped here.
struct Shared {
  char* mine = nullptr;
  std::vector<char*> byRank;  // byRank[r]: rank r's buffer (byRank[g_rank] == mine)

  // bytes usable bytes on every rank, starting `shift` bytes into an allocation of
  // shift + bytes + pad bytes.
  Shared(uint64_t bytes, int nranks, uint64_t shift = 0, uint64_t pad = 0) : byRank(nranks) {
    checkCuda(cudaMalloc(&mine, shift + bytes + pad), "cudaMalloc");
    checkCuda(cudaMemset(mine, 0, shift + bytes + pad), "cudaMemset");
    cudaIpcMemHandle_t h;
    checkCuda(cudaIpcGetMemHandle(&h, mine), "cudaIpcGetMemHandle");
    mine += shift;
    std::vector<cudaIpcMemHandle_t> all(nranks);
    MPI_Allgather(&h, sizeof(h), MPI_BYTE, all.data(), sizeof(h), MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < nranks; ++r) {
      if (r == g_rank) {
        byRank[r] = mine;
      } else {
        void* p = nullptr;
        checkCuda(cudaIpcOpenMemHandle(&p, all[r], cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
        byRank[r] = static_cast<char*>(p) + shift;
      }
    }
  }
};

struct Bench {
  int n = 0;
  uint64_t bytes = 0, piece = 0;
  Shared *send = nullptr, *out = nullptr, *scratch = nullptr;  // scratch: n-1 pieces, one per peer
  std::vector<cudaStream_t> peerStreams;                          // [i]: the i-th peer around the ring
  cudaStream_t mainStream = nullptr, reduceStream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<cudaEvent_t> done;
  int reduceBlocks = 0;

  int peer(int i) const { return (g_rank + 1 + i) % n; }
  // Where rank `from` lands in rank `to`'s scratch: the peers in rank order, `to` itself left out.
  uint64_t slot(int from, int to) const { return uint64_t(from < to ? from : from - 1) * piece; }

  // One piece of this rank's traffic: `piece` bytes from src here to dst on a peer.
  struct Piece {
    const char* src;
    char* dst;
  };

  // The AllReduce pattern: to every peer around the ring, one piece into its scratch
  // (reduce-scatter) and one into its output (all-gather); pieces 2i and 2i+1 go to the i-th peer.
  std::vector<Piece> peerPieces() const {
    std::vector<Piece> pieces;
    for (int i = 0; i < n - 1; ++i) {
      const int p = peer(i);
      pieces.push_back({send->mine + p * piece, scratch->byRank[p] + slot(g_rank, p)});
      pieces.push_back({out->mine + g_rank * piece, out->byRank[p] + g_rank * piece});
    }
    return pieces;
  }

  // The ring pattern: as many pieces, all to the next rank: n-1 into its scratch and n-1 into the
  // slots of its output other than its own. Timing only: the data is not meaningful.
  std::vector<Piece> ringPieces() const {
    const int next = (g_rank + 1) % n;
    std::vector<Piece> pieces;
    for (int i = 0; i < n - 1; ++i) {
      pieces.push_back({send->mine + i * piece, scratch->byRank[next] + i * piece});
      const int slotRank = (next + 1 + i) % n;
      pieces.push_back({out->mine + slotRank * piece, out->byRank[next] + slotRank * piece});
    }
    return pieces;
  }

  // Queues bytes [from, from + len) of p as a copy on s.
  static void queueCopy(const Piece& p, uint64_t from, uint64_t len, cudaStream_t s) {
    checkCuda(cudaMemcpyAsync(p.dst + from, p.src + from, len, cudaMemcpyDeviceToDevice, s), "copy");
  }

  // The bytes of a piece in each of kWaves waves.
  uint64_t waveBytes() const { return piece / kWaves / kPieceAlign * kPieceAlign; }

  // Calls copy(piece, from, len, i) for bytes [0, bytes) of each of the AllReduce pattern's
  // pieces, cut into copies of at most `wave` bytes, wave by wave (in each wave, that wave's share
  // of every piece); i is the index of the piece's peer.
  template <typename CopyFn>
  void forEachCopy(uint64_t bytes, uint64_t wave, CopyFn copy) const {
    const std::vector<Piece> pieces = peerPieces();
    for (uint64_t from = 0; from < bytes; from += wave) {
      for (size_t k = 0; k < pieces.size(); ++k) copy(pieces[k], from, std::min(wave, bytes - from), k / 2);
    }
  }

  // Queues forEachCopy's copies, the i-th peer's on streams[i % streams.size()].
  void queueCopies(const std::vector<cudaStream_t>& streams, uint64_t bytes, uint64_t wave) const {
    forEachCopy(bytes, wave, [&](const Piece& p, uint64_t from, uint64_t len, size_t i) {
      queueCopy(p, from, len, streams[i % streams.size()]);
    });
  }
  // Every piece whole.
  void queueCopies(const std::vector<cudaStream_t>& streams) const { queueCopies(streams, piece, piece); }
  // Every piece in kWaves waves.
  void queueCopyWaves(const std::vector<cudaStream_t>& streams) const { queueCopies(streams, piece, waveBytes()); }

  // The ring pattern as copies on s, each piece cut into `cuts` copies.
  void queueRingCopies(cudaStream_t s, int cuts) {
    const uint64_t cut = piece / cuts / kPieceAlign * kPieceAlign;
    for (const Piece& p : ringPieces()) {
      for (uint64_t from = 0; from < piece; from += cut) queueCopy(p, from, std::min(cut, piece - from), s);
    }
  }

  // The copy kernels' jobs: bytes [from, piece) of every one of pieces.
  CopyArgs copyJobs(const std::vector<Piece>& pieces, uint64_t from) const {
    CopyArgs a{};
    for (const Piece& p : pieces) {
      a.job[a.jobs++] = {reinterpret_cast<const uint4*>(p.src + from), reinterpret_cast<uint4*>(p.dst + from),
                         (piece - from) / 16};
    }
    return a;
  }

  // Queues bytes [from, piece) of every one of pieces as SM stores, every piece at once, on s.
  void queueSmCopies(cudaStream_t s, const std::vector<Piece>& pieces, uint64_t from) {
    smCopyKernel<<<reduceBlocks, kCopyThreads, 0, s>>>(copyJobs(pieces, from));
    checkCuda(cudaGetLastError(), "SM copy launch");
  }

#ifdef BENCH_HAVE_TMA
  // The same as queueSmCopies (from byte 0), by bulk copies.
  void queueTmaCopies(cudaStream_t s, const std::vector<Piece>& pieces) {
    tmaCopyKernel<<<reduceBlocks, kTmaThreads, kTmaSharedBytes, s>>>(copyJobs(pieces, 0));
    checkCuda(cudaGetLastError(), "TMA copy launch");
  }
#endif

  void queueReduce(cudaStream_t s) {
    ReduceArgs a{};
    a.n = n;
    a.words = piece / sizeof(float4);
    a.in[0] = reinterpret_cast<const float4*>(send->mine + g_rank * piece);
    for (int r = 0, k = 1; r < n; ++r) {
      if (r != g_rank) a.in[k++] = reinterpret_cast<const float4*>(scratch->mine + slot(r, g_rank));
    }
    a.out = reinterpret_cast<float4*>(out->mine + g_rank * piece);
    reduceKernel<<<reduceBlocks, kReduceThreads, 0, s>>>(a);
    checkCuda(cudaGetLastError(), "reduce launch");
  }

  // Times `body`, which queues work on the streams it names after they wait for `start`; returns
  // the slowest rank's milliseconds per run.
  template <typename Body>
  double time(const std::vector<cudaStream_t>& streams, Body body) {
    double total = 0;
    for (int run = -kWarmupRuns; run < kRuns; ++run) {
      checkCuda(cudaDeviceSynchronize(), "sync before a run");
      MPI_Barrier(MPI_COMM_WORLD);
      checkCuda(cudaEventRecord(start, mainStream), "record start");
      for (cudaStream_t s : streams) checkCuda(cudaStreamWaitEvent(s, start, 0), "wait start");
      body();
      for (size_t i = 0; i < streams.size(); ++i) {
        checkCuda(cudaEventRecord(done[i], streams[i]), "record done");
        checkCuda(cudaStreamWaitEvent(mainStream, done[i], 0), "wait done");
      }
      checkCuda(cudaEventRecord(stop, mainStream), "record stop");
      checkCuda(cudaEventSynchronize(stop), "sync stop");
      float ms = 0;
      checkCuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      double slowest = ms;
      MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (run >= 0) total += slowest;
    }
    return total / kRuns;
  }

  // Runs `body` once, after a warm-up run, with each copy it queues through `copy` timed on its
  // stream, and prints on rank 0 when each copy started and ended (us from the run's start), its
  // stream and its speed.
  template <typename Body>
  void timeline(const char* what, const std::vector<cudaStream_t>& streams, Body body) {
    struct Timed {
      int stream;
      uint64_t len;
      cudaEvent_t begin, end;
    };
    std::vector<Timed> timed;
    for (int run = 0; run < 2; ++run) {
      timed.clear();
      checkCuda(cudaDeviceSynchronize(), "sync before a run");
      MPI_Barrier(MPI_COMM_WORLD);
      checkCuda(cudaEventRecord(start, mainStream), "record start");
      for (cudaStream_t s : streams) checkCuda(cudaStreamWaitEvent(s, start, 0), "wait start");
      body([&](const Piece& p, uint64_t from, uint64_t len, size_t stream) {
        Timed t{int(stream), len, nullptr, nullptr};
        checkCuda(cudaEventCreate(&t.begin), "event");
        checkCuda(cudaEventCreate(&t.end), "event");
        checkCuda(cudaEventRecord(t.begin, streams[stream]), "record copy start");
        queueCopy(p, from, len, streams[stream]);
        checkCuda(cudaEventRecord(t.end, streams[stream]), "record copy end");
        timed.push_back(t);
      });
      checkCuda(cudaDeviceSynchronize(), "sync after a run");
      if (run == 0) {
        for (Timed& t : timed) checkCuda(cudaEventDestroy(t.begin), "event"), checkCuda(cudaEventDestroy(t.end), "event");
      }
    }
    if (g_rank == 0) std::printf("timeline, rank 0: %s\n", what);
    for (Timed& t : timed) {
      float b = 0, e = 0;
      checkCuda(cudaEventElapsedTime(&b, start, t.begin), "elapsed");
      checkCuda(cudaEventElapsedTime(&e, start, t.end), "elapsed");
      if (g_rank == 0) {
        std::printf("  stream %d  %8.1f .. %8.1f us  %6.1f MiB  %6.1f GB/s\n", t.stream, b * 1e3, e * 1e3,
                    double(t.len) / (1 << 20), double(t.len) / ((e - b) * 1e-3) / kBytesPerGB);
      }
      checkCuda(cudaEventDestroy(t.begin), "event");
      checkCuda(cudaEventDestroy(t.end), "event");
    }
  }

  void report(const char* what, double ms) const {
    const double busbw = 2.0 * (n - 1) / n * double(bytes) / (ms * 1e-3) / kBytesPerGB;
    if (g_rank == 0) std::printf("%-34s %10.1f us   busbw bound %6.1f GB/s\n", what, ms * 1e3, busbw);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmpi::BenchSetup setup;
  setup.program = "bench_ce_bound";
  setup.maxRanks = kMaxRanks;
  setup.gpuPerRank = true;
  const int nranks = benchmpi::startBench(&argc, &argv, setup).nranks;

  Bench b;
  b.n = nranks;
  const uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : kDefaultMiB;
  check(mib > 0, "size in MiB must be positive");
  const uint64_t shiftKiB = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const uint64_t padKiB = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  b.piece = (mib << 20) / nranks / kPieceAlign * kPieceAlign;
  b.bytes = b.piece * nranks;
  Shared send(b.bytes, nranks), out(b.bytes, nranks), scratch(b.piece * (nranks - 1), nranks, shiftKiB << 10, padKiB << 10);
  b.send = &send, b.out = &out, b.scratch = &scratch;
  int sms = 0;
  checkCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g_rank), "SM count");
  b.reduceBlocks = sms * kReduceBlocksPerSM;
  b.peerStreams.resize(nranks - 1);
  for (auto& s : b.peerStreams) checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  checkCuda(cudaStreamCreateWithFlags(&b.mainStream, cudaStreamNonBlocking), "stream");
  checkCuda(cudaStreamCreateWithFlags(&b.reduceStream, cudaStreamNonBlocking), "stream");
  checkCuda(cudaEventCreate(&b.start), "event");
  checkCuda(cudaEventCreate(&b.stop), "event");
  b.done.resize(nranks + 1);
  for (auto& e : b.done) checkCuda(cudaEventCreate(&e), "event");

  if (g_rank == 0) {
    std::printf("bench_ce_bound: %d ranks, AllReduce of %llu MiB per rank (pieces of %llu KiB), scratch %llu KiB into "
                "its allocation with %llu KiB after it, %d runs after %d warm-up\n",
                nranks, (unsigned long long)(b.bytes >> 20), (unsigned long long)(b.piece >> 10),
                (unsigned long long)shiftKiB, (unsigned long long)padKiB, kRuns, kWarmupRuns);
  }
  const std::vector<cudaStream_t> one{b.peerStreams[0]};
  b.report("copies, one stream", b.time(one, [&] { b.queueCopies(one); }));
  b.report("copies, a stream per peer", b.time(b.peerStreams, [&] { b.queueCopies(b.peerStreams); }));
  const std::vector<cudaStream_t> reduceOnly{b.reduceStream};
  b.report("reduce (SMs, local)", b.time(reduceOnly, [&] { b.queueReduce(b.reduceStream); }));
  std::vector<cudaStream_t> all = b.peerStreams;
  all.push_back(b.reduceStream);
  b.report("copies and reduce at once", b.time(all, [&] {
    b.queueCopies(b.peerStreams);
    b.queueReduce(b.reduceStream);
  }));
  b.report("copies in waves, one stream", b.time(one, [&] { b.queueCopyWaves(one); }));
  b.report("copies in waves, a stream per peer", b.time(b.peerStreams, [&] { b.queueCopyWaves(b.peerStreams); }));
  b.report("ring: copies, whole pieces", b.time(one, [&] { b.queueRingCopies(one[0], 1); }));
  {
    char what[64];
    std::snprintf(what, sizeof(what), "ring: copies, %d per piece", kRingCuts);
    b.report(what, b.time(one, [&] { b.queueRingCopies(one[0], kRingCuts); }));
  }
  b.report("ring: SM stores", b.time(reduceOnly, [&] { b.queueSmCopies(b.reduceStream, b.ringPieces(), 0); }));
  b.report("SM stores, every peer at once", b.time(reduceOnly, [&] { b.queueSmCopies(b.reduceStream, b.peerPieces(), 0); }));
  for (double share : kSplitShares) {
    const uint64_t ce = uint64_t(double(b.piece) * share) / kPieceAlign * kPieceAlign;
    char what[64];
    std::snprintf(what, sizeof(what), "split: %.0f %% copies, rest SM stores", share * 100);
    b.report(what, b.time(all, [&] {
      b.queueCopies(b.peerStreams, ce, ce);
      b.queueSmCopies(b.reduceStream, b.peerPieces(), ce);
    }));
  }
  // The i-th peer's pieces on the i-th stream, whole, then in kWaves waves.
  b.timeline("copies, a stream per peer", b.peerStreams, [&](auto copy) { b.forEachCopy(b.piece, b.piece, copy); });
  b.timeline("copies in waves, a stream per peer", b.peerStreams,
             [&](auto copy) { b.forEachCopy(b.piece, b.waveBytes(), copy); });
#ifdef BENCH_HAVE_TMA
  checkCuda(cudaFuncSetAttribute(tmaCopyKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kTmaSharedBytes)),
            "TMA kernel shared memory");
  b.report("ring: TMA stores", b.time(reduceOnly, [&] { b.queueTmaCopies(b.reduceStream, b.ringPieces()); }));
  b.report("TMA stores, every peer at once", b.time(reduceOnly, [&] { b.queueTmaCopies(b.reduceStream, b.peerPieces()); }));
#endif
  if (g_rank == 0) {
    std::printf("busbw bound: the bus bandwidth of an AllReduce that took this long (for comparison, 1.05x NCCL's\n"
                "1 GiB AllReduce on 4 x H200 is 372 GB/s)\n");
  }
  MPI_Finalize();
  return 0;
}
