// One-way traffic over the legacy device connection: rank 0 putWithSignal+flush()es a buffer to
// rank 1 many times while rank 1 only wait()s, then rank 1 checks the data. (The other legacy
// tests move data both ways at once; this one leaves the receiver's proxy idle.) Written only
// against mscclpp.h. Ranks other than 0 and 1 join the communicator and idle.
#include <mpi.h>
#include <mscclpp.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr int kSender = 0;
constexpr int kReceiver = 1;
constexpr int kTag = 0;
constexpr size_t kBytes = 1 << 20;
constexpr int kRounds = 20;
constexpr unsigned kWatchdogMs = 20000;

void check(bool ok, const char* what, int rank) {
  if (ok) return;
  std::fprintf(stderr, "FAIL legacy_oneway: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

__global__ void sendKernel(mscclppDevConn_t* conn, int rounds) {
  for (int i = 0; i < rounds; i++) {
    conn->putWithSignal(0, 0, kBytes);
    conn->flush();
  }
}

__global__ void receiveKernel(mscclppDevConn_t* conn, int rounds) {
  for (int i = 0; i < rounds; i++) conn->wait();
}

__global__ void fill(unsigned char* p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = (i * 7 + 3) & 0xff;
}

// Waits for the stream with a deadline, so a stuck proxy is a failure, not a hang.
void syncOrAbort(cudaStream_t s, int rank) {
  for (unsigned ms = 0; ms < kWatchdogMs; ms++) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    check(e == cudaErrorNotReady, cudaGetErrorString(e), rank);
    struct timespec t = {0, 1000000};
    nanosleep(&t, nullptr);
  }
  check(false, "timeout: the transfer did not complete (proxy stuck?)", rank);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0, ndev = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  check(cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, "no GPU", rank);
  check(cudaSetDevice(rank % ndev) == cudaSuccess, "cudaSetDevice", rank);

  mscclppUniqueId id;
  if (rank == 0) check(mscclppGetUniqueId(&id) == mscclppSuccess, "mscclppGetUniqueId", rank);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppComm_t comm;
  check(mscclppCommInitRankFromId(&comm, nranks, id, rank) == mscclppSuccess, "mscclppCommInitRankFromId", rank);

  const bool active = rank == kSender || rank == kReceiver;
  unsigned char* buf = nullptr;
  if (active) {
    check(cudaMalloc(&buf, kBytes) == cudaSuccess, "cudaMalloc", rank);
    check(cudaMemset(buf, 0, kBytes) == cudaSuccess, "cudaMemset", rank);
    const char* t = std::getenv("LEGACY_TRANSPORT");  // "ib": over the network (see ../legacy_util.cuh)
    const mscclppTransport_t transport = t != nullptr && std::string(t) == "ib" ? mscclppTransportIB : mscclppTransportP2P;
    check(mscclppConnect(comm, rank == kSender ? kReceiver : kSender, kTag, buf, kBytes, transport) ==
              mscclppSuccess,
          "mscclppConnect", rank);
  }
  check(mscclppConnectionSetup(comm) == mscclppSuccess, "mscclppConnectionSetup", rank);
  mscclppDevConn_t* conn = nullptr;
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate", rank);
  if (active) {
    mscclppDevConn_t* hostConn = nullptr;
    check(mscclppGetDeviceConnection(comm, rank == kSender ? kReceiver : kSender, kTag, &hostConn) == mscclppSuccess,
          "mscclppGetDeviceConnection", rank);
    check(cudaMalloc(&conn, sizeof(*conn)) == cudaSuccess, "cudaMalloc conn", rank);
    check(cudaMemcpy(conn, hostConn, sizeof(*conn), cudaMemcpyHostToDevice) == cudaSuccess, "copy conn", rank);
    if (rank == kSender) fill<<<64, 256, 0, stream>>>(buf, kBytes);
    check(cudaStreamSynchronize(stream) == cudaSuccess, "fill", rank);
  }
  check(mscclppProxyLaunch(comm) == mscclppSuccess, "mscclppProxyLaunch", rank);
  MPI_Barrier(MPI_COMM_WORLD);

  long wrong = 0;
  if (rank == kSender) sendKernel<<<1, 1, 0, stream>>>(conn, kRounds);
  if (rank == kReceiver) receiveKernel<<<1, 1, 0, stream>>>(conn, kRounds);
  if (active) syncOrAbort(stream, rank);
  if (rank == kReceiver) {
    std::vector<unsigned char> host(kBytes);
    check(cudaMemcpy(host.data(), buf, kBytes, cudaMemcpyDeviceToHost) == cudaSuccess, "copy back", rank);
    for (size_t i = 0; i < kBytes; i++) wrong += host[i] != ((i * 7 + 3) & 0xff);
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  check(mscclppProxyStop(comm) == mscclppSuccess, "mscclppProxyStop", rank);
  check(mscclppCommDestroy(comm) == mscclppSuccess, "mscclppCommDestroy", rank);
  if (rank == 0)
    std::printf("%s legacy_oneway: %d rounds of %zu bytes, %ld wrong\n", wrong == 0 ? "PASS" : "FAIL", kRounds, kBytes,
                wrong);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
