// Host-memory ring across hosts: every rank connects to the next rank over the network
// (mscclppTransportIB: libfabric's verbs, efa, cxi or tcp, whichever MSCCLPP_NET_PROVIDER names or
// the machine offers best), writes a buffer and then a signal into the next rank's memory, waits
// for the previous rank's, and checks every byte; ten rounds.
//
//   mpirun -np 2 -H hostA,hostB ./hostmem_ring                  # two hosts
//   mpirun -np 4 ./hostmem_ring --separate-hosts                # one machine, each rank a "host"
//   mpirun -np 2 -x MSCCLPP_NET_PROVIDER=tcp ./hostmem_ring 4   # 4 MiB per round (default 1)
//
// --separate-hosts sets MSCCLPP_HOSTID to the rank before the library reads it, so that ranks of
// one machine take the network path as ranks on different hosts do. Written against
// mscclpp/core.h; no GPU is used.
#include <mpi.h>
#include <mscclpp/core.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(mscclppResult_t result, const char* what, int rank) {
  if (result == mscclppSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s (%d)\n", rank, what, mscclppGetErrorString(result), result);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

uint8_t pattern(int owner, uint64_t round, size_t i) { return static_cast<uint8_t>(owner * 31 + round * 7 + i * 13); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t mib = 1;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--separate-hosts") == 0) {
      setenv("MSCCLPP_HOSTID", ("example-host-" + std::to_string(rank)).c_str(), 1);
    } else {
      mib = std::strtoul(argv[i], nullptr, 10);
    }
  }
  const size_t bytes = mib << 20;
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

  mscclppUniqueId id;
  if (rank == 0) check(mscclppBootstrapCreateUniqueId(&id), "mscclppBootstrapCreateUniqueId", rank);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t bootstrap = nullptr;
  mscclppContext_t context = nullptr;
  mscclppCommunicator_t comm = nullptr;
  check(mscclppBootstrapCreateFromId(&bootstrap, rank, nranks, id), "mscclppBootstrapCreateFromId", rank);
  check(mscclppContextCreate(&context), "mscclppContextCreate", rank);
  check(mscclppCommunicatorCreate(bootstrap, context, &comm), "mscclppCommunicatorCreate", rank);

  // Connect to both neighbours (each pair makes mirror calls), register this rank's buffers and
  // give the previous rank the one it writes into.
  mscclppFuture_t toNext = nullptr, fromPrev = nullptr, sent = nullptr, received = nullptr;
  check(mscclppCommunicatorConnect(comm, mscclppTransportIB, MSCCLPP_DEVICE_ID_CPU, next, 0, &toNext), "connect", rank);
  check(mscclppCommunicatorConnect(comm, mscclppTransportIB, MSCCLPP_DEVICE_ID_CPU, prev, 0, &fromPrev), "connect", rank);
  mscclppConnection_t conn = nullptr, back = nullptr;
  check(mscclppFutureGetConnection(toNext, &conn), "connection to the next rank", rank);
  check(mscclppFutureGetConnection(fromPrev, &back), "connection from the previous rank", rank);
  std::vector<uint8_t> out(bytes), in(bytes + 64);
  volatile uint64_t* signal = reinterpret_cast<volatile uint64_t*>(in.data() + bytes);
  mscclppRegMem_t src = nullptr, dst = nullptr, nextDst = nullptr;
  check(mscclppRegisterMemory(context, out.data(), bytes, mscclppTransportIB, &src), "register", rank);
  check(mscclppRegisterMemory(context, in.data(), bytes + 64, mscclppTransportIB, &dst), "register", rank);
  check(mscclppCommunicatorSendMemory(comm, dst, prev, 1, &sent), "send memory", rank);
  check(mscclppCommunicatorRecvMemory(comm, next, 1, &received), "receive memory", rank);
  check(mscclppFutureWait(sent), "send memory", rank);
  check(mscclppFutureGetMemory(received, &nextDst), "receive memory", rank);

  size_t wrong = 0;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t round = 1; round <= 10; round++) {
    for (size_t i = 0; i < bytes; i++) out[i] = pattern(rank, round, i);
    check(mscclppConnectionWrite(conn, nextDst, 0, src, 0, bytes), "write", rank);
    check(mscclppConnectionUpdateAndSync(conn, nextDst, bytes, round), "signal", rank);
    while (*signal != round) check(mscclppContextProgress(context, mscclppTransportIB), "progress", rank);
    for (size_t i = 0; i < bytes; i++) wrong += in[i] != pattern(prev, round, i);
    check(mscclppConnectionFlush(conn, 30000), "flush", rank);
    check(mscclppBootstrapBarrierAll(bootstrap), "barrier", rank);  // all read round k before k+1 lands
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t wrongAll = 0;
  MPI_Allreduce(&wrong, &wrongAll, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%s hostmem_ring: %d ranks, 10 rounds of %zu MiB each over the network, %zu bytes wrong, %.3f s\n",
                wrongAll == 0 ? "PASS" : "FAIL", nranks, mib, wrongAll, seconds);
  }
  for (mscclppFuture_t f : {toNext, fromPrev, sent, received}) mscclppFutureDestroy(f);
  for (mscclppRegMem_t m : {src, dst, nextDst}) mscclppMemoryRelease(m);
  mscclppConnectionRelease(conn);
  mscclppConnectionRelease(back);
  mscclppCommunicatorDestroy(comm);
  mscclppContextDestroy(context);
  mscclppBootstrapDestroy(bootstrap);
  MPI_Finalize();
  return wrongAll == 0 ? 0 : 1;
}
