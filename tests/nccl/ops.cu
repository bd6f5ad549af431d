// tests/nccl/ops.cu: every NCCL call with data, checked against results computed on the host,
// written against nccl.h only (it builds against NCCL's header and links the real libnccl.so.2,
// then runs on this library under LD_PRELOAD; or builds against include/nccl.h and links
// -lmscclpp_nccl).
//
//   AllReduce, ReduceScatter and Reduce with sum, prod, max, min and avg, and with PreMulSum
//   operators (a scalar per rank, in host memory or in device memory, in place and not; a device
//   scalar changed between calls and between replays of a CUDA graph); AllGather, Broadcast,
//   AlltoAll and Send/Recv (a ring, inside one group); every NCCL type but fp8; counts from 0 to
//   about 4 Mi elements; in place and out of place; roots 0 and the last rank;
//   a CUDA graph of one AllReduce captured and replayed 100 times;
//   ncclCommSplit (even and odd ranks), a nonblocking ncclCommInitRankConfig, and ncclCommInitAll
//   of two ranks on each process's GPU.
//
// Inputs are small integers, exact in every type, and so are their sums and products over up to
// 8 ranks, so results are compared exactly (avg within a rounding step). A call refused with
// ncclInvalidUsage (MSCCLPP_NCCL_FALLBACK=off and no native path) counts as skipped, unless
// OPS_NO_SKIP=1. OPS_SKIP="a;b" skips the cases whose names contain a or b (for the real NCCL's
// own wrong results; gpu-test says which). Rank 0 prints a line per operation and "nccl ops: N passed, M failed, K skipped".
//
//   mpirun -np N ./ops [quick]      rank r uses GPU r % deviceCount
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0, g_nranks = 1;
int g_passed = 0, g_failed = 0, g_skipped = 0;
bool g_noSkip = false;

#define CUDA(call)                                                                                   \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "[rank %d] %s:%d %s: %s\n", g_rank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                                  \
    }                                                                                                \
  } while (0)

#define NCCL(call)                                                                                   \
  do {                                                                                               \
    ncclResult_t r_ = (call);                                                                        \
    if (r_ != ncclSuccess) {                                                                         \
      std::fprintf(stderr, "[rank %d] %s:%d %s: %s (%s)\n", g_rank, __FILE__, __LINE__, #call,      \
                   ncclGetErrorString(r_), ncclGetLastError(nullptr));                               \
      MPI_Abort(MPI_COMM_WORLD, 2);                                                                  \
    }                                                                                                \
  } while (0)

struct TypeInfo {
  ncclDataType_t type;
  const char* name;
  size_t size;
  bool isFloat, isSigned;
};
const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, false, true},       {ncclUint8, "uint8", 1, false, false},
    {ncclInt32, "int32", 4, false, true},     {ncclUint32, "uint32", 4, false, false},
    {ncclInt64, "int64", 8, false, true},     {ncclUint64, "uint64", 8, false, false},
    {ncclFloat16, "float16", 2, true, true},  {ncclFloat32, "float32", 4, true, true},
    {ncclFloat64, "float64", 8, true, true},  {ncclBfloat16, "bfloat16", 2, true, true},
};

struct OpInfo {
  ncclRedOp_t op;
  const char* name;
};
const OpInfo kOps[] = {{ncclSum, "sum"}, {ncclProd, "prod"}, {ncclMax, "max"}, {ncclMin, "min"}, {ncclAvg, "avg"}};

// Host values are doubles; these write and read one element of a type.
void put(const TypeInfo& t, void* p, size_t i, double v) {
  switch (t.type) {
    case ncclInt8: static_cast<int8_t*>(p)[i] = (int8_t)v; break;
    case ncclUint8: static_cast<uint8_t*>(p)[i] = (uint8_t)v; break;
    case ncclInt32: static_cast<int32_t*>(p)[i] = (int32_t)v; break;
    case ncclUint32: static_cast<uint32_t*>(p)[i] = (uint32_t)v; break;
    case ncclInt64: static_cast<int64_t*>(p)[i] = (int64_t)v; break;
    case ncclUint64: static_cast<uint64_t*>(p)[i] = (uint64_t)v; break;
    case ncclFloat16: static_cast<__half*>(p)[i] = __double2half(v); break;
    case ncclFloat32: static_cast<float*>(p)[i] = (float)v; break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    case ncclBfloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16((float)v); break;
    default: break;
  }
}

double get(const TypeInfo& t, const void* p, size_t i) {
  switch (t.type) {
    case ncclInt8: return static_cast<const int8_t*>(p)[i];
    case ncclUint8: return static_cast<const uint8_t*>(p)[i];
    case ncclInt32: return static_cast<const int32_t*>(p)[i];
    case ncclUint32: return static_cast<const uint32_t*>(p)[i];
    case ncclInt64: return (double)static_cast<const int64_t*>(p)[i];
    case ncclUint64: return (double)static_cast<const uint64_t*>(p)[i];
    case ncclFloat16: return __half2float(static_cast<const __half*>(p)[i]);
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat64: return static_cast<const double*>(p)[i];
    case ncclBfloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return NAN;
  }
}

// Rank r's input element i: 1 or 2 for products (2^8 fits every type), else 1..5, so that sums
// over 8 ranks stay exact in every type.
double input(int rank, size_t i, ncclRedOp_t op) {
  if (op == ncclProd) return 1 + (double)((rank + i) % 3 == 0);
  return 1 + (double)((rank * 7 + i * 3) % 5);
}

double reduce(ncclRedOp_t op, size_t i, const TypeInfo& t) {
  double acc = input(0, i, op);
  for (int r = 1; r < g_nranks; r++) {
    double v = input(r, i, op);
    switch (op) {
      case ncclSum: case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = std::fmax(acc, v); break;
      case ncclMin: acc = std::fmin(acc, v); break;
      default: break;
    }
  }
  if (op == ncclAvg) acc = t.isFloat ? acc / g_nranks : std::floor(acc / g_nranks);
  return acc;
}

// A device buffer of n elements of t, with its host copy.
struct Buffer {
  const TypeInfo& t;
  size_t n;
  void* dev = nullptr;
  std::vector<unsigned char> host;
  Buffer(const TypeInfo& type, size_t count) : t(type), n(count), host(count * type.size + 1) {
    CUDA(cudaMalloc(&dev, n * t.size + 16));
  }
  ~Buffer() { cudaFree(dev); }
  void fill(double v) {
    for (size_t i = 0; i < n; i++) put(t, host.data(), i, v);
    upload();
  }
  // A copy from pageable memory may still be in flight when cudaMemcpy returns, and the calls run
  // on a non-blocking stream: wait for it.
  void upload() {
    CUDA(cudaMemcpy(dev, host.data(), n * t.size, cudaMemcpyHostToDevice));
    CUDA(cudaDeviceSynchronize());
  }
  void download() { CUDA(cudaMemcpy(host.data(), dev, n * t.size, cudaMemcpyDeviceToHost)); }
  void* at(size_t i) const { return static_cast<char*>(dev) + i * t.size; }
  double operator[](size_t i) const { return get(t, host.data(), i); }
};

// One checked case: rank 0 reports failures (each rank's first mismatch is printed by it).
struct Case {
  std::string what;
  int bad = 0;
  size_t firstBad = 0;
  double got = 0, want = 0;
  void expect(size_t i, double g, double w, double tol = 0) {
    if (std::fabs(g - w) <= tol || (std::isnan(g) && std::isnan(w))) return;
    if (bad++ == 0) firstBad = i, got = g, want = w;
  }
};

// Ends a case: a refused call (result ncclInvalidUsage) is skipped, anything else must pass on
// every rank.
// Whether OPS_SKIP names the case (a ';'-separated list of substrings of case names).
bool skippedByName(const std::string& what) {
  const char* env = std::getenv("OPS_SKIP");
  if (env == nullptr) return false;
  std::string list = env;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(';', start);
    if (end == std::string::npos) end = list.size();
    std::string part = list.substr(start, end - start);
    if (!part.empty() && what.find(part) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

void finish(Case& c, ncclResult_t res) {
  if (skippedByName(c.what)) {
    g_skipped++;
    return;
  }
  int refused = res == ncclInvalidUsage && !g_noSkip, failed = (res != ncclSuccess && !refused) || c.bad;
  if (res != ncclSuccess && !refused) {
    std::fprintf(stderr, "[rank %d] %s: %s (%s)\n", g_rank, c.what.c_str(), ncclGetErrorString(res), ncclGetLastError(nullptr));
  } else if (c.bad) {
    std::fprintf(stderr, "[rank %d] %s: %d wrong, first at %zu: got %g, want %g\n", g_rank, c.what.c_str(), c.bad,
                 c.firstBad, c.got, c.want);
  }
  int anyFailed = 0, anyRefused = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&refused, &anyRefused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anyFailed) g_failed++;
  else if (anyRefused) g_skipped++;
  else g_passed++;
}

std::vector<size_t> counts(bool quick) {
  std::vector<size_t> c = {0, 1, 7, 1031, 65539};
  if (!quick) c.push_back((size_t)4 << 20 | 3);
  return c;
}

struct Ctx {
  ncclComm_t comm;
  cudaStream_t stream;
  bool quick;
};

// Runs a call and waits for it.
ncclResult_t runCall(const Ctx& x, ncclResult_t res) {
  if (res == ncclSuccess) CUDA(cudaStreamSynchronize(x.stream));
  return res;
}

void allReduce(const Ctx& x, const TypeInfo& t, const OpInfo& o, size_t n, bool inPlace) {
  Case c{std::string("allreduce ") + o.name + " " + t.name + " n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, o.op));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.dev : recv.dev;
  ncclResult_t res = runCall(x, ncclAllReduce(send.dev, out, n, t.type, o.op, x.comm, x.stream));
  if (res == ncclSuccess) {
    Buffer& b = inPlace ? send : recv;
    b.download();
    for (size_t i = 0; i < n; i++) c.expect(i, b[i], reduce(o.op, i, t), o.op == ncclAvg ? 0.01 * reduce(o.op, i, t) : 0);
  }
  finish(c, res);
}

void reduceScatter(const Ctx& x, const TypeInfo& t, const OpInfo& o, size_t n, bool inPlace) {
  Case c{std::string("reducescatter ") + o.name + " " + t.name + " n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  size_t total = n * g_nranks;
  Buffer send(t, total), recv(t, n);
  for (size_t i = 0; i < total; i++) put(t, send.host.data(), i, input(g_rank, i, o.op));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.at(g_rank * n) : recv.dev;
  ncclResult_t res = runCall(x, ncclReduceScatter(send.dev, out, n, t.type, o.op, x.comm, x.stream));
  if (res == ncclSuccess) {
    send.download();
    recv.download();
    for (size_t i = 0; i < n; i++) {
      size_t gi = g_rank * n + i;
      double want = reduce(o.op, gi, t);
      c.expect(i, inPlace ? send[gi] : recv[i], want, o.op == ncclAvg ? 0.01 * want : 0);
    }
  }
  finish(c, res);
}

void reduceToRoot(const Ctx& x, const TypeInfo& t, const OpInfo& o, size_t n, int root) {
  Case c{std::string("reduce ") + o.name + " " + t.name + " n=" + std::to_string(n) + " root=" + std::to_string(root)};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, o.op));
  send.upload();
  recv.fill(0);
  ncclResult_t res = runCall(x, ncclReduce(send.dev, recv.dev, n, t.type, o.op, root, x.comm, x.stream));
  if (res == ncclSuccess && g_rank == root) {
    recv.download();
    for (size_t i = 0; i < n; i++) c.expect(i, recv[i], reduce(o.op, i, t), o.op == ncclAvg ? 0.01 * reduce(o.op, i, t) : 0);
  }
  finish(c, res);
}

void allGather(const Ctx& x, const TypeInfo& t, size_t n, bool inPlace) {
  Case c{std::string("allgather ") + t.name + " n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  Buffer send(t, n), recv(t, n * g_nranks);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  if (inPlace) {
    CUDA(cudaMemcpy(recv.at(g_rank * n), send.dev, n * t.size, cudaMemcpyDeviceToDevice));
    CUDA(cudaDeviceSynchronize());
  }
  const void* in = inPlace ? recv.at(g_rank * n) : send.dev;
  ncclResult_t res = runCall(x, ncclAllGather(in, recv.dev, n, t.type, x.comm, x.stream));
  if (res == ncclSuccess) {
    recv.download();
    for (int r = 0; r < g_nranks; r++)
      for (size_t i = 0; i < n; i++) c.expect(r * n + i, recv[r * n + i], input(r, i, ncclSum));
  }
  finish(c, res);
}

void broadcast(const Ctx& x, const TypeInfo& t, size_t n, int root, bool inPlace) {
  Case c{std::string("broadcast ") + t.name + " n=" + std::to_string(n) + " root=" + std::to_string(root) +
         (inPlace ? " in place" : "")};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.dev : recv.dev;
  ncclResult_t res = runCall(x, ncclBroadcast(send.dev, out, n, t.type, root, x.comm, x.stream));
  if (res == ncclSuccess) {
    Buffer& b = inPlace ? send : recv;
    b.download();
    for (size_t i = 0; i < n; i++) c.expect(i, b[i], input(root, i, ncclSum));
  }
  finish(c, res);
}

void allToAll(const Ctx& x, const TypeInfo& t, size_t n, bool inPlace) {
  Case c{std::string("alltoall ") + t.name + " n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  size_t total = n * g_nranks;
  Buffer send(t, total), recv(t, total);
  // Block j of rank r's input: what rank j receives from r.
  for (size_t i = 0; i < total; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  Buffer& out = inPlace ? send : recv;
  ncclResult_t res = runCall(x, ncclAlltoAll(send.dev, out.dev, n, t.type, x.comm, x.stream));
  if (res == ncclSuccess) {
    out.download();
    for (int r = 0; r < g_nranks; r++)
      for (size_t i = 0; i < n; i++) c.expect(r * n + i, out[r * n + i], input(r, g_rank * n + i, ncclSum));
  }
  finish(c, res);
}

void sendRecvRing(const Ctx& x, const TypeInfo& t, size_t n) {
  Case c{std::string("sendrecv ring ") + t.name + " n=" + std::to_string(n)};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  int next = (g_rank + 1) % g_nranks, prev = (g_rank + g_nranks - 1) % g_nranks;
  ncclResult_t res = ncclGroupStart();
  ncclResult_t r1 = ncclSend(send.dev, n, t.type, next, x.comm, x.stream);
  ncclResult_t r2 = ncclRecv(recv.dev, n, t.type, prev, x.comm, x.stream);
  ncclResult_t r3 = ncclGroupEnd();
  res = res != ncclSuccess ? res : r1 != ncclSuccess ? r1 : r2 != ncclSuccess ? r2 : r3;
  res = runCall(x, res);
  if (res == ncclSuccess) {
    recv.download();
    for (size_t i = 0; i < n; i++) c.expect(i, recv[i], input(prev, i, ncclSum));
  }
  finish(c, res);
}

// ---- PreMulSum operators ----------------------------------------------------------------------

// Rank r's PreMulSum scalar (salt varies it between calls): 0.5 to 2 for the floating types, 1 to
// 3 for the integers, so that every product and sum over 8 ranks stays exact (int8 included).
double preMulScalar(const TypeInfo& t, int rank, int salt) {
  return t.isFloat ? (1 + (rank + salt) % 4) / 2.0 : 1 + (rank + salt) % 3;
}

// Element i of the PreMulSum of every rank's input: sum over r of scalar_r * input(r, i).
double preMulSum(const TypeInfo& t, size_t i, int salt) {
  double acc = 0;
  for (int r = 0; r < g_nranks; r++) acc += preMulScalar(t, r, salt) * input(r, i, ncclSum);
  return acc;
}

// A PreMulSum operator of this rank's scalar, in host memory (read at creation) or in device
// memory (read by each call, and set again by set()), destroyed with the object.
struct PreMulOp {
  const Ctx& x;
  const TypeInfo& t;
  bool onDevice;
  ncclRedOp_t op = ncclSum;
  void* dev = nullptr;
  ncclResult_t res = ncclSuccess;
  PreMulOp(const Ctx& ctx, const TypeInfo& type, bool device, int salt) : x(ctx), t(type), onDevice(device) {
    unsigned char host[8] = {0};
    put(t, host, 0, preMulScalar(t, g_rank, salt));
    if (onDevice) {
      CUDA(cudaMalloc(&dev, 8));
      set(salt);
    }
    res = ncclRedOpCreatePreMulSum(&op, onDevice ? dev : host, t.type,
                                   onDevice ? ncclScalarDevice : ncclScalarHostImmediate, x.comm);
    std::memset(host, 0xff, sizeof(host));  // a host scalar is read at creation only
  }
  ~PreMulOp() {
    if (res == ncclSuccess) NCCL(ncclRedOpDestroy(op, x.comm));
    if (dev != nullptr) cudaFree(dev);
  }
  // A device scalar's new value (the calls queued after it read it).
  void set(int salt) {
    unsigned char host[8] = {0};
    put(t, host, 0, preMulScalar(t, g_rank, salt));
    CUDA(cudaMemcpy(dev, host, t.size, cudaMemcpyHostToDevice));
    CUDA(cudaDeviceSynchronize());
  }
  std::string name() const { return std::string("premulsum ") + (onDevice ? "device " : "host ") + t.name; }
};

void preMulAllReduce(const Ctx& x, const TypeInfo& t, bool onDevice, size_t n, bool inPlace) {
  PreMulOp o(x, t, onDevice, 0);
  Case c{o.name() + " allreduce n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.dev : recv.dev;
  ncclResult_t res = o.res != ncclSuccess ? o.res : runCall(x, ncclAllReduce(send.dev, out, n, t.type, o.op, x.comm, x.stream));
  if (res == ncclSuccess) {
    Buffer& b = inPlace ? send : recv;
    b.download();
    for (size_t i = 0; i < n; i++) c.expect(i, b[i], preMulSum(t, i, 0));
  }
  finish(c, res);
}

void preMulReduceScatter(const Ctx& x, const TypeInfo& t, bool onDevice, size_t n, bool inPlace) {
  PreMulOp o(x, t, onDevice, 0);
  Case c{o.name() + " reducescatter n=" + std::to_string(n) + (inPlace ? " in place" : "")};
  size_t total = n * g_nranks;
  Buffer send(t, total), recv(t, n);
  for (size_t i = 0; i < total; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.at(g_rank * n) : recv.dev;
  ncclResult_t res =
      o.res != ncclSuccess ? o.res : runCall(x, ncclReduceScatter(send.dev, out, n, t.type, o.op, x.comm, x.stream));
  if (res == ncclSuccess) {
    send.download();
    recv.download();
    for (size_t i = 0; i < total; i++) {
      bool mine = i / (n ? n : 1) == (size_t)g_rank;
      if (mine) {
        c.expect(i, inPlace ? send[i] : recv[i - g_rank * n], preMulSum(t, i, 0));
      } else {
        c.expect(i, send[i], input(g_rank, i, ncclSum));  // the other blocks of the input stay as they were
      }
    }
  }
  finish(c, res);
}

void preMulReduce(const Ctx& x, const TypeInfo& t, bool onDevice, size_t n, int root, bool inPlace) {
  PreMulOp o(x, t, onDevice, 0);
  Case c{o.name() + " reduce n=" + std::to_string(n) + " root=" + std::to_string(root) + (inPlace ? " in place" : "")};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  void* out = inPlace ? send.dev : recv.dev;
  ncclResult_t res =
      o.res != ncclSuccess ? o.res : runCall(x, ncclReduce(send.dev, out, n, t.type, o.op, root, x.comm, x.stream));
  if (res == ncclSuccess) {
    send.download();
    recv.download();
    for (size_t i = 0; i < n; i++) {
      if (g_rank == root) {
        c.expect(i, inPlace ? send[i] : recv[i], preMulSum(t, i, 0));
      } else {
        c.expect(i, send[i], input(g_rank, i, ncclSum));  // a non-root's input stays as it was
      }
    }
  }
  finish(c, res);
}

// One device-scalar operator for several calls, its scalar changed between them: directly, and
// in a CUDA graph of one AllReduce captured once and replayed with each new scalar.
void preMulScalarChanges(const Ctx& x) {
  const TypeInfo& t = kTypes[7];  // float32
  const size_t n = 65536;
  PreMulOp o(x, t, true, 0);
  Case c{"premulsum device float32 allreduce n=65536, the scalar changed between calls and graph replays"};
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  ncclResult_t res = o.res;
  for (int salt = 0; salt < 3 && res == ncclSuccess; salt++) {
    o.set(salt);
    recv.fill(0);
    res = runCall(x, ncclAllReduce(send.dev, recv.dev, n, t.type, o.op, x.comm, x.stream));
    if (res == ncclSuccess) {
      recv.download();
      for (size_t i = 0; i < n; i++) c.expect(i, recv[i], preMulSum(t, i, salt));
    }
  }
  if (res == ncclSuccess) {
    cudaGraph_t graph;
    CUDA(cudaStreamBeginCapture(x.stream, cudaStreamCaptureModeThreadLocal));
    res = ncclAllReduce(send.dev, recv.dev, n, t.type, o.op, x.comm, x.stream);
    CUDA(cudaStreamEndCapture(x.stream, &graph));
    if (res == ncclSuccess) {
      cudaGraphExec_t exec;
      CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
      for (int salt = 3; salt < 6; salt++) {
        o.set(salt);
        CUDA(cudaGraphLaunch(exec, x.stream));
        CUDA(cudaStreamSynchronize(x.stream));
        recv.download();
        for (size_t i = 0; i < n; i++) c.expect(i, recv[i], preMulSum(t, i, salt));
      }
      CUDA(cudaGraphExecDestroy(exec));
    }
    CUDA(cudaGraphDestroy(graph));
  }
  finish(c, res);
}

// One out-of-place float AllReduce captured in a CUDA graph and replayed 100 times.
void graphReplay(const Ctx& x) {
  Case c{"allreduce sum float32 n=65536, CUDA graph replayed 100 times"};
  const TypeInfo& t = kTypes[7];
  size_t n = 65536;
  Buffer send(t, n), recv(t, n);
  for (size_t i = 0; i < n; i++) put(t, send.host.data(), i, input(g_rank, i, ncclSum));
  send.upload();
  recv.fill(0);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA(cudaStreamBeginCapture(x.stream, cudaStreamCaptureModeThreadLocal));
  ncclResult_t res = ncclAllReduce(send.dev, recv.dev, n, t.type, ncclSum, x.comm, x.stream);
  CUDA(cudaStreamEndCapture(x.stream, &graph));
  if (res == ncclSuccess) {
    CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    for (int k = 0; k < 100; k++) CUDA(cudaGraphLaunch(exec, x.stream));
    CUDA(cudaStreamSynchronize(x.stream));
    recv.download();
    for (size_t i = 0; i < n; i++) c.expect(i, recv[i], reduce(ncclSum, i, t));
    CUDA(cudaGraphExecDestroy(exec));
  }
  CUDA(cudaGraphDestroy(graph));
  finish(c, res);
}

// ncclCommSplit into even and odd ranks, and an AllReduce on each half.
void split(const Ctx& x) {
  Case c{"ncclCommSplit even/odd + allreduce"};
  ncclComm_t half = nullptr;
  ncclResult_t res = ncclCommSplit(x.comm, g_rank % 2, g_rank, &half, nullptr);
  if (res == ncclSuccess) {
    int n = 0, r = -1;
    NCCL(ncclCommCount(half, &n));
    NCCL(ncclCommUserRank(half, &r));
    int want = (g_nranks + (g_rank % 2 ? 0 : 1)) / 2;
    c.expect(0, n, want);
    c.expect(1, r, g_rank / 2);
    const TypeInfo& t = kTypes[2];
    Buffer b(t, 1000);
    b.fill(g_rank);
    res = runCall(x, ncclAllReduce(b.dev, b.dev, 1000, t.type, ncclSum, half, x.stream));
    if (res == ncclSuccess) {
      b.download();
      double sum = 0;
      for (int q = g_rank % 2; q < g_nranks; q += 2) sum += q;
      for (size_t i = 0; i < 1000; i++) c.expect(i, b[i], sum);
    }
    NCCL(ncclCommDestroy(half));
  }
  finish(c, res);
}

// A nonblocking init: ncclInProgress, then ready through ncclCommGetAsyncError.
void nonblockingInit(const Ctx& x) {
  Case c{"nonblocking ncclCommInitRankConfig + allreduce"};
  ncclUniqueId id;
  if (g_rank == 0) NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRankConfig(&comm, g_nranks, id, g_rank, &config);
  if (res == ncclInProgress || res == ncclSuccess) {
    ncclResult_t state = ncclInProgress;
    do NCCL(ncclCommGetAsyncError(comm, &state));
    while (state == ncclInProgress);
    res = state;
  }
  if (res == ncclSuccess) {
    const TypeInfo& t = kTypes[7];
    Buffer b(t, 4096);
    b.fill(1);
    res = ncclAllReduce(b.dev, b.dev, 4096, t.type, ncclSum, comm, x.stream);
    // Nonblocking communicators may return ncclInProgress from a call; it is queued anyway.
    if (res == ncclInProgress) res = ncclSuccess;
    res = runCall(x, res);
    if (res == ncclSuccess) {
      b.download();
      for (size_t i = 0; i < 4096; i++) c.expect(i, b[i], g_nranks);
    }
  }
  if (comm != nullptr) ncclCommDestroy(comm);
  finish(c, res);
}

// ncclCommInitAll in each process: two ranks on this process's GPU, driven by one thread, their
// AllReduces in one group (NCCL would refuse the shared GPU; this library allows it).
void initAll(const Ctx& x) {
  Case c{"ncclCommInitAll (2 ranks on one GPU) + grouped allreduce"};
  int dev = 0;
  CUDA(cudaGetDevice(&dev));
  int devs[2] = {dev, dev};
  ncclComm_t comms[2] = {nullptr, nullptr};
  ncclResult_t res = ncclCommInitAll(comms, 2, devs);
  if (res == ncclSuccess) {
    const TypeInfo& t = kTypes[7];
    Buffer a(t, 5000), b(t, 5000);
    a.fill(1);
    b.fill(2);
    cudaStream_t s2;
    CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    NCCL(ncclGroupStart());
    ncclResult_t r0 = ncclAllReduce(a.dev, a.dev, 5000, t.type, ncclSum, comms[0], x.stream);
    ncclResult_t r1 = ncclAllReduce(b.dev, b.dev, 5000, t.type, ncclSum, comms[1], s2);
    ncclResult_t r2 = ncclGroupEnd();
    res = r0 != ncclSuccess ? r0 : r1 != ncclSuccess ? r1 : r2;
    if (res == ncclSuccess) {
      CUDA(cudaStreamSynchronize(x.stream));
      CUDA(cudaStreamSynchronize(s2));
      a.download();
      b.download();
      for (size_t i = 0; i < 5000; i++) c.expect(i, a[i], 3), c.expect(i, b[i], 3);
    }
    CUDA(cudaStreamDestroy(s2));
    for (ncclComm_t comm : comms) NCCL(ncclCommDestroy(comm));
  }
  finish(c, res);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  g_noSkip = std::getenv("OPS_NO_SKIP") && std::strcmp(std::getenv("OPS_NO_SKIP"), "1") == 0;
  int ndev = 0;
  CUDA(cudaGetDeviceCount(&ndev));
  CUDA(cudaSetDevice(g_rank % ndev));
  ncclUniqueId id;
  if (g_rank == 0) NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  Ctx x{};
  x.quick = quick;
  NCCL(ncclCommInitRank(&x.comm, g_nranks, id, g_rank));
  CUDA(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking));
  int version = 0;
  NCCL(ncclGetVersion(&version));
  if (g_rank == 0) std::printf("nccl ops: %d ranks, NCCL version %d\n", g_nranks, version);

  // report NAME: rank 0 prints the counts since the previous report.
  int lastP = 0, lastF = 0, lastS = 0;
  auto report = [&](const char* name) {
    if (g_rank == 0) {
      std::printf("  %-14s %3d passed, %d failed, %d skipped\n", name, g_passed - lastP, g_failed - lastF, g_skipped - lastS);
      std::fflush(stdout);
    }
    lastP = g_passed, lastF = g_failed, lastS = g_skipped;
  };
  std::vector<size_t> ns = counts(quick);
  int lastRoot = g_nranks - 1;
  for (const auto& o : kOps)
    for (const auto& t : kTypes)
      for (size_t n : ns)
        for (int inPlace = 0; inPlace < 2; inPlace++) allReduce(x, t, o, n, inPlace);
  report("allreduce");
  for (const auto& t : kTypes)
    for (size_t n : ns)
      for (int inPlace = 0; inPlace < 2; inPlace++) allGather(x, t, n, inPlace);
  report("allgather");
  for (const auto& o : kOps)
    for (const auto& t : kTypes)
      for (size_t n : ns)
        for (int inPlace = 0; inPlace < 2; inPlace++) reduceScatter(x, t, o, n, inPlace);
  report("reducescatter");
  for (const auto& t : kTypes)
    for (size_t n : ns)
      for (int root : {0, lastRoot})
        for (int inPlace = 0; inPlace < 2; inPlace++) broadcast(x, t, n, root, inPlace);
  report("broadcast");
  for (const auto& o : kOps)
    for (const auto& t : kTypes)
      for (size_t n : ns)
        for (int root : {0, lastRoot}) reduceToRoot(x, t, o, n, root);
  report("reduce");
  for (const auto& t : kTypes)
    for (size_t n : ns)
      for (int inPlace = 0; inPlace < 2; inPlace++) allToAll(x, t, n, inPlace);
  report("alltoall");
  for (const auto& t : kTypes)
    for (size_t n : ns) sendRecvRing(x, t, n);
  report("sendrecv");
  for (const auto& t : kTypes)
    for (bool onDevice : {false, true})
      for (size_t n : ns) {
        for (int inPlace = 0; inPlace < 2; inPlace++) {
          preMulAllReduce(x, t, onDevice, n, inPlace);
          preMulReduceScatter(x, t, onDevice, n, inPlace);
          for (int root : {0, lastRoot}) preMulReduce(x, t, onDevice, n, root, inPlace);
        }
      }
  preMulScalarChanges(x);
  report("premulsum");
  graphReplay(x);
  split(x);
  nonblockingInit(x);
  initAll(x);
  report("graph/split/nb/all");

  NCCL(ncclCommFinalize(x.comm));
  NCCL(ncclCommDestroy(x.comm));
  CUDA(cudaStreamDestroy(x.stream));
  if (g_rank == 0) std::printf("nccl ops: %d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
