// Requests outside a connection's buffers, pushed by a kernel through the legacy device
// connection: the proxy must copy nothing for them, and mscclppProxyStop must name the failure
// (mscclppInvalidArgument). Before that, a connection whose size runs past its buffer's
// allocation must be refused by mscclppConnectionSetup. Written only against mscclpp.h.
//
// Ranks 0 (sender) and 1 (receiver) connect to each other over a kBytes buffer; other ranks join
// the communicators and idle. The sender's kernel asks for
//   1. a put whose destination runs past the receiver's buffer,
//   2. a put whose source runs past its own buffer,
//   3. a put of the whole buffer and a signal (refused too: the connection failed at 1),
// then flushes. The receiver's buffer must still hold its poison, and the sender's
// mscclppProxyStop must return mscclppInvalidArgument while the receiver's returns success.
#include <mpi.h>
#include <mscclpp.h>

#include "../legacy_util.cuh"

namespace {

using namespace legacytest;

constexpr int kSender = 0;
constexpr int kReceiver = 1;
constexpr int kTag = 0;
constexpr uint64_t kBytes = 64 << 10;

__global__ void badRequests(mscclppDevConn_t* conn) {
  conn->put(/*dst*/ kBytes - 8, /*src*/ 0, 64);  // destination past the peer's buffer
  conn->put(/*dst*/ 0, /*src*/ kBytes - 8, 64);  // source past this rank's buffer
  conn->putWithSignal(0, 0, kBytes);             // in range, but on a failed connection
  conn->flush();                                 // the proxy releases refused requests too
}

}  // namespace

int main(int argc, char** argv) {
  mscclppComm_t comm = initProcess(&argc, &argv, "legacy_badtrigger");
  const int rank = g_proc.rank;
  const bool active = rank == kSender || rank == kReceiver;
  const int peer = rank == kSender ? kReceiver : kSender;

  uint8_t* buf = nullptr;
  if (active) {
    CHECK_CUDA(cudaMalloc(&buf, kBytes));
    CHECK_CUDA(cudaMemset(buf, kPoison, kBytes));
  }

  // A size one byte past the allocation: refused by the setup, on each end before any exchange.
  {
    mscclppComm_t over = nullptr;
    mscclppUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank == 0) CHECK_MSCCLPP(mscclppGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK_MSCCLPP(mscclppCommInitRankFromId(&over, g_proc.nranks, id, rank));
    if (active) {
      CHECK_MSCCLPP(mscclppConnect(over, peer, kTag, buf, kBytes + 1, mscclppTransportP2P));
      const mscclppResult_t res = mscclppConnectionSetup(over);
      if (res != mscclppInvalidArgument)
        fatal("mscclppConnectionSetup with a buffer size past the allocation returned %s (%d), want mscclppInvalidArgument",
              mscclppGetErrorString(res), res);
    }
    CHECK_MSCCLPP(mscclppCommDestroy(over));
  }

  if (active) CHECK_MSCCLPP(mscclppConnect(comm, peer, kTag, buf, kBytes, mscclppTransportP2P));
  CHECK_MSCCLPP(mscclppConnectionSetup(comm));
  mscclppDevConn_t* conn = nullptr;
  if (active) conn = deviceConnections(comm, {peer}, kTag, {buf});
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_MSCCLPP(mscclppProxyLaunch(comm));
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == kSender) {
    badRequests<<<1, 1, 0, stream>>>(conn);
    CHECK_LAUNCH();
    syncWithWatchdog(stream, "the kernel with bad requests");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const mscclppResult_t stop = mscclppProxyStop(comm);
  const mscclppResult_t wantStop = rank == kSender ? mscclppInvalidArgument : mscclppSuccess;
  if (stop != wantStop)
    fatal("mscclppProxyStop returned %s (%d), want %s", mscclppGetErrorString(stop), stop, mscclppGetErrorString(wantStop));

  long wrong = 0;
  if (rank == kReceiver) {
    std::vector<uint8_t> host(kBytes);
    CHECK_CUDA(cudaMemcpy(host.data(), buf, kBytes, cudaMemcpyDeviceToHost));
    for (uint8_t b : host) wrong += b != kPoison;
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK_MSCCLPP(mscclppCommDestroy(comm));
  if (rank == 0)
    std::printf("%s legacy_badtrigger: requests outside the buffers refused and named by ProxyStop, %ld bytes written into the receiver\n",
                wrong == 0 ? "PASS" : "FAIL", wrong);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
