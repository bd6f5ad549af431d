// Bootstrap example: every rank joins a communicator, all-gathers its own data through the
// bootstrap, checks every byte, meets the others at a barrier and leaves.
//
//   mpirun -np 4 ./bootstrap                  # rank 0 makes a unique id, MPI_Bcast shares it
//   mpirun -np 4 ./bootstrap 127.0.0.1:50505  # rank 0 listens on ip:port, the others connect
//
// Written only against the legacy MSCCL++ 0.1 header, mscclpp.h.
#include <mpi.h>
#include <mscclpp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

// The byte rank `owner` contributes at position i of its slice.
uint8_t pattern(int owner, size_t i) { return static_cast<uint8_t>((owner * 131 + i * 7 + (i >> 8)) & 0xff); }

const uint8_t kPoison = 0xEE;  // fills the other ranks' slices before the all-gather

void check(mscclppResult_t result, const char* what, int rank) {
  if (result == mscclppSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s (%d)\n", rank, what, mscclppGetErrorString(result), result);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  const char* mode = argc > 1 ? "ip:port" : "unique id";
  mscclppComm_t comm = nullptr;
  if (argc > 1) {
    check(mscclppCommInitRank(&comm, nranks, argv[1], rank), "mscclppCommInitRank", rank);
  } else {
    mscclppUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank == 0) check(mscclppGetUniqueId(&id), "mscclppGetUniqueId", rank);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    check(mscclppCommInitRankFromId(&comm, nranks, id, rank), "mscclppCommInitRankFromId", rank);
  }

  long wrong = 0;
  int commRank = -1, commSize = -1;
  check(mscclppCommRank(comm, &commRank), "mscclppCommRank", rank);
  check(mscclppCommSize(comm, &commSize), "mscclppCommSize", rank);
  if (commRank != rank || commSize != nranks) {
    std::fprintf(stderr, "rank %d: communicator says rank %d of %d, MPI says %d of %d\n", rank, commRank, commSize,
                 rank, nranks);
    wrong++;
  }

  long checked = 0;
  for (size_t bytes : {size_t(0), size_t(1), size_t(7), size_t(4096), size_t(1) << 20}) {
    std::vector<uint8_t> buf(bytes * nranks, kPoison);
    for (size_t i = 0; i < bytes; i++) buf[rank * bytes + i] = pattern(rank, i);
    check(mscclppBootstrapAllGather(comm, buf.data(), static_cast<int>(bytes)), "mscclppBootstrapAllGather", rank);
    for (int r = 0; r < nranks; r++) {
      for (size_t i = 0; i < bytes; i++) {
        if (buf[r * bytes + i] != pattern(r, i)) {
          if (wrong < 5)
            std::fprintf(stderr, "rank %d: %zu-byte all-gather: byte %zu of rank %d is %u, want %u\n", rank, bytes, i,
                         r, buf[r * bytes + i], pattern(r, i));
          wrong++;
        }
      }
      checked += bytes;
    }
    check(mscclppBootstrapBarrier(comm), "mscclppBootstrapBarrier", rank);
  }
  check(mscclppCommDestroy(comm), "mscclppCommDestroy", rank);

  long totalWrong = 0, totalChecked = 0;
  MPI_Reduce(&wrong, &totalWrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checked, &totalChecked, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("%s bootstrap (%s): %d ranks, %ld bytes checked, %ld wrong\n", totalWrong == 0 ? "PASS" : "FAIL", mode,
                nranks, totalChecked, totalWrong);
  }
  MPI_Finalize();
  return totalWrong == 0 ? 0 : 1;
}
