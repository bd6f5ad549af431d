// collectives: mscclppAllReduce and mscclppAllGather (mscclpp/collectives.h) from C++, one rank
// per GPU under mpirun, the second time through a CUDA graph.
//
//   mpirun -np 2 ./collectives
//
// Rank 0 creates the bootstrap's unique id and broadcasts it with MPI; every rank builds a
// bootstrap, a context, a communicator and, over it, a collective communicator on the GPU that
// cudaSetDevice chose. Every element of rank r's input is r + 1; the program checks the sum and
// the gathered inputs and prints one line per rank.
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp/collectives.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    if (!(call)) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);              \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
    }                                                                                     \
  } while (0)
#define CHECK_CUDA(call) CHECK((call) == cudaSuccess)
#define CHECK_MSCCLPP(call) CHECK((call) == mscclppSuccess)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks, devices;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(rank % devices));

  mscclppUniqueId id;
  if (rank == 0) CHECK_MSCCLPP(mscclppBootstrapCreateUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t bootstrap;
  mscclppContext_t context;
  mscclppCommunicator_t communicator;
  mscclppCollComm_t comm;
  CHECK_MSCCLPP(mscclppBootstrapCreateFromId(&bootstrap, rank, nranks, id));
  CHECK_MSCCLPP(mscclppContextCreate(&context));
  CHECK_MSCCLPP(mscclppCommunicatorCreate(bootstrap, context, &communicator));
  CHECK_MSCCLPP(mscclppCollCommCreate(communicator, -1, &comm));  // -1: the current device

  const size_t count = 1 << 20;
  std::vector<float> host(count * nranks, static_cast<float>(rank + 1));
  float *data, *gathered;
  cudaStream_t stream;
  CHECK_CUDA(cudaMalloc(&data, count * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&gathered, count * nranks * sizeof(float)));
  CHECK_CUDA(cudaStreamCreate(&stream));

  // Direct calls, then the same two calls captured in a graph and replayed.
  for (int pass = 0; pass < 2; ++pass) {
    CHECK_CUDA(cudaMemcpyAsync(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    if (pass == 1) CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK_MSCCLPP(mscclppAllGather(data, gathered, count, mscclppFloat32, comm, stream));
    CHECK_MSCCLPP(mscclppAllReduce(data, data, count, mscclppFloat32, mscclppSum, comm, stream));
    if (pass == 1) {
      CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
      CHECK_CUDA(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
      CHECK_CUDA(cudaGraphLaunch(exec, stream));
    }
    std::vector<float> sum(count), all(count * nranks);
    CHECK_CUDA(cudaMemcpyAsync(sum.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(all.data(), gathered, all.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    if (pass == 1) {
      CHECK_CUDA(cudaGraphExecDestroy(exec));
      CHECK_CUDA(cudaGraphDestroy(graph));
    }
    int wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += sum[i] != nranks * (nranks + 1) / 2.0f;
    for (size_t i = 0; i < all.size(); ++i) wrong += all[i] != static_cast<float>(i / count + 1);
    std::printf("rank %d: %s: allreduce and allgather of %zu floats: %s\n", rank, pass ? "CUDA graph" : "direct calls",
                count, wrong ? "WRONG" : "correct");
    CHECK(wrong == 0);
  }

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(data));
  CHECK_CUDA(cudaFree(gathered));
  CHECK_MSCCLPP(mscclppCollCommDestroy(comm));
  CHECK_MSCCLPP(mscclppCommunicatorDestroy(communicator));
  CHECK_MSCCLPP(mscclppContextDestroy(context));
  CHECK_MSCCLPP(mscclppBootstrapDestroy(bootstrap));
  MPI_Finalize();
  return 0;
}
