// tutorial_mpi.h: how the tutorial programs run under mpirun start: MPI, the program's name in
// FAIL lines (which then end the whole job), and for the two-GPU tutorials the pair of ranks 0
// and 1. Programs include it as "../common/tutorial_mpi.h" instead of tutorial_util.h.
#ifndef EXAMPLES_TUTORIALS_COMMON_TUTORIAL_MPI_H_
#define EXAMPLES_TUTORIALS_COMMON_TUTORIAL_MPI_H_

#include <mpi.h>

#include "tutorial_util.h"

namespace tutorial {

// Ends every rank of the job (g_id.abortJob of the MPI programs).
inline void abortMpiJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

// Starts MPI and names the program for the FAIL lines; returns this rank and stores the number of
// ranks in *nranks.
inline int startMpi(int* argc, char*** argv, const char* program, int* nranks) {
  MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, nranks);
  g_id.program = program;
  g_id.rank = rank;
  g_id.abortJob = abortMpiJob;
  return rank;
}

// For the tutorials between two GPUs: the communicator of ranks 0 and 1 (fewer than two ranks is
// a failure). Further ranks, one per extra GPU, get MPI_COMM_NULL and only finalize and leave.
inline MPI_Comm pairOfRanks(int rank, int nranks) {
  if (nranks < 2) fail("run with 2 ranks (mpirun -np 2), got %d", nranks);
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  return pair;
}

}  // namespace tutorial

#endif  // EXAMPLES_TUTORIALS_COMMON_TUTORIAL_MPI_H_
