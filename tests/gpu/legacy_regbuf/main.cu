// mscclppRegisterBuffer + mscclppRegisteredBufferWrite: every rank connects to every other rank,
// registers a second buffer, and writes a slice of its own data into every peer's registered
// buffer at an offset of its own (rank * slice) through the host API, on a stream. Each rank then
// checks that every peer's slice arrived, and that the bytes around them were not touched. With
// LEGACY_TRANSPORT=ib the connections are mscclppTransportIB (peers reached over the network: the
// write returns once the bytes have landed). Written only against mscclpp.h.
#include <mpi.h>
#include <mscclpp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kTag = 0;
constexpr size_t kConnBytes = 4096;        // the connections' own buffers (not written here)
constexpr size_t kSlice = (1 << 20) + 13;  // odd, so offsets are unaligned
constexpr uint32_t kSrcOffset = 7;         // where the slice starts in the source buffer
constexpr unsigned char kPoison = 0xEE;

int g_rank = 0;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "FAIL legacy_regbuf: rank %d: %s\n", g_rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

unsigned char pattern(int sender, size_t i) { return static_cast<unsigned char>(sender * 29 + i * 5 + (i >> 10)); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 0, ndev = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  check(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, "no GPU");
  check(cudaSetDevice(g_rank % ndev) == cudaSuccess, "cudaSetDevice");

  mscclppUniqueId id;
  if (g_rank == 0) check(mscclppGetUniqueId(&id) == mscclppSuccess, "mscclppGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppComm_t comm;
  check(mscclppCommInitRankFromId(&comm, nranks, id, g_rank) == mscclppSuccess, "init");

  const char* t = std::getenv("LEGACY_TRANSPORT");  // "ib": over the network
  const bool overIB = t != nullptr && std::string(t) == "ib";
  void* connBuf = nullptr;
  check(cudaMalloc(&connBuf, kConnBytes) == cudaSuccess, "cudaMalloc");
  for (int peer = 0; peer < nranks; peer++)
    if (peer != g_rank)
      check(mscclppConnect(comm, peer, kTag, connBuf, kConnBytes, overIB ? mscclppTransportIB : mscclppTransportP2P) ==
                mscclppSuccess,
            "connect");
  check(mscclppConnectionSetup(comm) == mscclppSuccess, "setup");

  // The registered buffer receives slice r at offset r * kSlice from every peer r.
  const size_t regBytes = kSlice * nranks;
  std::vector<unsigned char> host(regBytes, kPoison);
  unsigned char *reg = nullptr, *src = nullptr;
  check(cudaMalloc(&reg, regBytes) == cudaSuccess, "cudaMalloc");
  check(cudaMemcpy(reg, host.data(), regBytes, cudaMemcpyHostToDevice) == cudaSuccess, "poison");
  std::vector<unsigned char> mine(kSrcOffset + kSlice);
  for (size_t i = 0; i < kSlice; i++) mine[kSrcOffset + i] = pattern(g_rank, i);
  check(cudaMalloc(&src, mine.size()) == cudaSuccess, "cudaMalloc");
  check(cudaMemcpy(src, mine.data(), mine.size(), cudaMemcpyHostToDevice) == cudaSuccess, "fill");

  mscclppRegisteredMemory regMem;
  check(mscclppRegisterBuffer(comm, reg, regBytes, &regMem) == mscclppSuccess, "mscclppRegisterBuffer");
  check(regMem.p2p.size() == static_cast<size_t>(nranks - 1), "one p2p entry per connection");
  for (const auto& e : regMem.p2p)
    check((e.remoteBuff != nullptr) == !overIB && e.IbMr == nullptr, "p2p entry: remoteBuff mapped for P2P only");

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  check(mscclppRegisteredBufferWrite(comm, &regMem, src, kSlice, kSrcOffset, static_cast<uint32_t>(g_rank * kSlice),
                                     reinterpret_cast<int64_t>(stream)) == mscclppSuccess,
        "mscclppRegisteredBufferWrite");
  // Past the peers' buffers: refused.
  check(mscclppRegisteredBufferWrite(comm, &regMem, src, kSlice, 0, static_cast<uint32_t>(regBytes - 1),
                                     reinterpret_cast<int64_t>(stream)) == mscclppInvalidArgument,
        "a write past the peer's buffer is refused");
  check(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
  MPI_Barrier(MPI_COMM_WORLD);

  check(cudaMemcpy(host.data(), reg, regBytes, cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
  long wrong = 0;
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < kSlice; i++) {
      unsigned char want = r == g_rank ? kPoison : pattern(r, i);
      wrong += host[r * kSlice + i] != want;
    }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  check(mscclppCommDestroy(comm) == mscclppSuccess, "destroy");
  if (g_rank == 0)
    std::printf("%s legacy_regbuf: %d ranks, %s, %zu-byte slices, %ld wrong bytes\n", wrong ? "FAIL" : "PASS", nranks,
                overIB ? "IB" : "P2P", kSlice, wrong);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
