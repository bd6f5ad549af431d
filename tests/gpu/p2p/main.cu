// p2p: the correctness checks of mscclppSendRecv and mscclppAlltoAll (mscclpp/collectives.h) on
// real GPUs, one rank per GPU under mpirun (rank r uses GPU r % deviceCount: ranks may share one),
// against values computed on the host.
//
//   ring: every rank sends to its right and receives from its left in one call (0 elements to
//   21 MiB, several types, aligned and one element off; LL128 lines up to 16 MiB where the GPUs
//   are joined by NVLink, in pieces of 4.2 MiB, lanes above);
//   pairwise exchange: ranks 2k and 2k+1 send to and receive from each other in one call (a rank
//   without a partner copies to itself), out of place and in place (one buffer sent and received
//   into; up to 72 MiB);
//   self: a send to this rank and a receive from it in one call (a copy);
//   one way: a dozen messages from rank 2k to 2k + 1, one call each, in lines and on lanes;
//   all peers: one call per rank to and from every other rank, sizes per ordered pair from 1000
//   bytes to the lanes (streamed lines and single pieces in one launch);
//   matching per pair: every rank sends two messages to every peer, one call per send, the peers
//   in an order of its own, then an AllReduce, then receives them, one call per receive, in
//   another order of its own (the k-th send from a to b must meet the k-th receive of b from a);
//   AlltoAll of several sizes and types, out of place and in place (send == recv): the collective
//   LL128 lines kernel for blocks of up to 2.1 MiB where the GPUs are joined by NVLink, the
//   collective put kernel above (in place, a round's pieces are copied out of the scratch only
//   after this rank stored its own pieces of those offsets); up to 72 MiB, many rounds per block;
//   a CUDA graph of a SendRecv ring, an AlltoAll and an AllReduce, captured once, replayed with
//   new inputs;
//   refusals: bad arguments fail with mscclppInvalidArgument and queue nothing.
//
// Guard elements around every output must stay untouched. Rank 0 prints one line per group of
// checks and "p2p: N passed, M failed"; the exit status is 0 only if all passed.
//
// "hosts" is the run for ranks that span hosts (MSCCLPP_HOSTID, given by gpu-test): every check
// but the CUDA graph (calls across hosts wait for their stream and cannot be captured).
//
//   mpirun -np N ./p2p [hosts]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp/collectives.h>

#include "../common.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kGuard = 64;            // bytes of guard before and after every output
constexpr unsigned char kPoison = 0x5A;  // the guards' bytes (and the outputs' before a call)
constexpr int kGraphReplays = 5;

// Element i of the message from rank `from` to rank `to`; `salt` tells messages of one pair apart.
int value(int from, int to, size_t i, int salt) {
  return static_cast<int>((i * 7 + static_cast<size_t>(from) * 13 + static_cast<size_t>(to) * 5 + salt * 3) % 251 % 17 +
                          (salt % 8) * 17);
}

template <typename T>
std::vector<T> message(int from, int to, size_t n, int salt) {
  std::vector<T> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = Type<T>::from(value(from, to, i, salt));
  return h;
}

// ---- Checks ------------------------------------------------------------------------------------

// A device buffer of `bytes` bytes with kGuard poisoned bytes on each side, starting `offset`
// bytes after a 256-byte boundary.
struct Buffer {
  char* base = nullptr;
  size_t bytes = 0, offset = 0;
  Buffer(size_t b, size_t off) : bytes(b), offset(off) {
    CUDA(cudaMalloc(&base, total()));
    CUDA(cudaMemset(base, kPoison, total()));
    CUDA(cudaDeviceSynchronize());
  }
  ~Buffer() { cudaFree(base); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  size_t total() const { return kGuard * 2 + offset + bytes; }
  char* data() const { return base + kGuard + offset; }
  void upload(const void* h, size_t n, size_t at = 0) {
    CUDA(cudaMemcpy(data() + at, h, n, cudaMemcpyHostToDevice));
    CUDA(cudaDeviceSynchronize());
  }
  void poison() {
    CUDA(cudaMemset(data(), kPoison, bytes));
    CUDA(cudaDeviceSynchronize());
  }
  // Compares [at, at + n) with want; reports guard bytes that changed.
  void check(Group& g, const std::string& what, size_t at, const void* want, size_t n) const {
    ++g.checks;
    std::vector<unsigned char> all(total());
    CUDA(cudaMemcpy(all.data(), base, all.size(), cudaMemcpyDeviceToHost));
    const size_t lo = kGuard + offset, hi = lo + bytes;
    for (size_t b = 0; b < all.size(); ++b) {
      if ((b < lo || b >= hi) && all[b] != kPoison) {
        g.fail(what + ": guard byte " + std::to_string(static_cast<long>(b) - static_cast<long>(lo)) + " changed");
        return;
      }
    }
    const unsigned char* w = static_cast<const unsigned char*>(want);
    for (size_t b = 0; b < n; ++b) {
      if (all[lo + at + b] != w[b]) {
        size_t bad = 0;
        for (size_t k = b; k < n; ++k) bad += all[lo + at + k] != w[k];
        g.fail(what + ": byte " + std::to_string(b) + " of " + std::to_string(n) + " is " +
               std::to_string(all[lo + at + b]) + ", want " + std::to_string(w[b]) + " (" + std::to_string(bad) +
               " wrong)");
        return;
      }
    }
  }
};

bool called(Group& g, const std::string& what, mscclppResult_t r) {
  if (r == mscclppSuccess) return true;
  ++g.checks;
  g.fail(what + ": " + mscclppGetErrorString(r));
  return false;
}

mscclppP2POp op(int peer, bool send, void* buf, size_t count, mscclppDataType_t dt) {
  mscclppP2POp o;
  o.peer = peer;
  o.isSend = send ? 1 : 0;
  o.buff = buf;
  o.count = count;
  o.datatype = dt;
  return o;
}

// One call: send n elements to `to` and receive n from `from` (to == from == this rank: a copy).
// In place (to == from): one buffer is sent to the peer and received into, an exchange.
template <typename T>
void checkExchange(Group& g, mscclppCollComm_t comm, cudaStream_t s, int to, int from, size_t n, size_t offset,
                   int salt, bool inPlace = false) {
  const std::string what = std::string(Type<T>::name) + " count " + std::to_string(n) + " to " + std::to_string(to) +
                           " from " + std::to_string(from) + (offset ? " unaligned" : "") + (inPlace ? " in place" : "");
  const size_t bytes = n * sizeof(T);
  Buffer send(bytes, offset * sizeof(T)), recv(bytes, offset * sizeof(T));
  Buffer& input = inPlace ? recv : send;
  const std::vector<T> out = message<T>(g_rank, to, n, salt);
  input.upload(out.data(), bytes);
  mscclppP2POp ops[2] = {op(to, true, input.data(), n, Type<T>::id), op(from, false, recv.data(), n, Type<T>::id)};
  if (g_rank % 2) std::swap(ops[0], ops[1]);  // the order of a call's operations does not matter
  if (!called(g, what, mscclppSendRecv(ops, 2, comm, s))) return;
  CUDA(cudaStreamSynchronize(s));
  const std::vector<T> want = message<T>(from, g_rank, n, salt);
  recv.check(g, what, 0, want.data(), bytes);
  if (!inPlace) send.check(g, what + " (send buffer)", 0, out.data(), bytes);
}

// Up to kLinesMax a transfer goes as LL128 lines where the GPUs are joined by NVLink, in pieces of
// kPiece (one ack per launch for one piece, per piece past it), above on the lanes; from 32 MiB a
// transfer takes all 64 lanes; at 21 MiB + 13 each of 42 lanes has two chunks, the second partial.
constexpr size_t kLinesMax = size_t(16) << 20;
constexpr size_t kPiece = (size_t(9) << 19) / 128 * 120;
const std::vector<size_t> kBytes = {0,          1,          7,         16,          1000, 4099, 65536, 65537,
                                    200003,     (1u << 20) + 3,       kPiece,      kPiece + 16,
                                    3 * kPiece + 40,      kLinesMax, kLinesMax + 16, (5u << 20) + 11,
                                    (21u << 20) + 13};

template <typename T>
void ringSweep(mscclppCollComm_t comm, cudaStream_t s) {
  Group g(std::string("ring sendrecv ") + Type<T>::name);
  const int right = (g_rank + 1) % g_nranks, left = (g_rank + g_nranks - 1) % g_nranks;
  int salt = 0;
  for (size_t b : kBytes)
    for (size_t offset : {0, 1}) checkExchange<T>(g, comm, s, right, left, b / sizeof(T), offset, ++salt);
  g.finish();
}

template <typename T>
void pairSweep(mscclppCollComm_t comm, cudaStream_t s) {
  Group g(std::string("pairwise exchange ") + Type<T>::name);
  const int partner = (g_rank ^ 1) < g_nranks ? (g_rank ^ 1) : g_rank;
  int salt = 0;
  for (size_t b : kBytes) checkExchange<T>(g, comm, s, partner, partner, b / sizeof(T), 0, ++salt);
  // In place: a lane receives a chunk only once it has sent those bytes (up to 72 MiB: many
  // chunks per lane).
  for (size_t b : kBytes) checkExchange<T>(g, comm, s, partner, partner, b / sizeof(T), 0, ++salt, true);
  checkExchange<T>(g, comm, s, partner, partner, ((size_t(72) << 20) + 5) / sizeof(T), 0, ++salt, true);
  g.finish();
}

template <typename T>
void selfSweep(mscclppCollComm_t comm, cudaStream_t s) {
  Group g(std::string("send to self and receive from self ") + Type<T>::name);
  int salt = 0;
  for (size_t b : kBytes)
    for (size_t offset : {0, 1}) checkExchange<T>(g, comm, s, g_rank, g_rank, b / sizeof(T), offset, ++salt);
  g.finish();
}

// The ranks' orders of peers: a permutation of the other ranks that differs between ranks.
std::vector<int> peerOrder(int seed) {
  std::vector<int> peers;
  for (int r = 0; r < g_nranks; ++r)
    if (r != g_rank) peers.push_back(r);
  // A small deterministic shuffle (no std::shuffle: the same on every host).
  unsigned x = 2654435761u * static_cast<unsigned>(g_rank * 31 + seed + 1);
  for (size_t i = peers.size(); i > 1; --i) {
    x = x * 1103515245u + 12345u;
    std::swap(peers[i - 1], peers[(x >> 8) % i]);
  }
  return peers;
}

// Two messages per ordered pair, each fully buffered by the receiver's scratch (at most 64 KiB:
// one chunk, and a lane has two slots), so every send completes before any receive is queued:
// the sends go one call each, the peers in one order, then an AllReduce (which must see its own
// state undisturbed), then the receives one call each, in another order and with the two messages
// of a pair received in order (message 0, then 1) but interleaved with other peers differently.
void perPairMatching(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("matching per pair: one call per send and per receive, peers in orders that differ between ranks");
  if (g_nranks == 1) {
    g.finish();
    return;
  }
  const size_t sizes[2] = {4096 + 3, 65536};  // bytes of message 0 and 1 (uint8)
  std::vector<Buffer*> sends, recvs;          // [peer * 2 + k]
  for (int r = 0; r < g_nranks; ++r) {
    for (int k = 0; k < 2; ++k) {
      sends.push_back(new Buffer(sizes[k], 0));
      recvs.push_back(new Buffer(sizes[k], 0));
      const std::vector<uint8_t> m = message<uint8_t>(g_rank, r, sizes[k], 100 + k);
      sends.back()->upload(m.data(), m.size());
    }
  }
  constexpr size_t kAr = 100003;
  Buffer ar(kAr * sizeof(float), 0);
  std::vector<float> arIn(kAr);
  for (size_t i = 0; i < kAr; ++i) arIn[i] = static_cast<float>((i + g_rank) % 5);
  ar.upload(arIn.data(), arIn.size() * sizeof(float));

  bool ok = true;
  for (int k = 0; k < 2 && ok; ++k)
    for (int r : peerOrder(k)) {
      mscclppP2POp o = op(r, true, sends[r * 2 + k]->data(), sizes[k], mscclppUint8);
      ok = ok && called(g, "send " + std::to_string(k) + " to " + std::to_string(r), mscclppSendRecv(&o, 1, comm, s));
    }
  ok = ok && called(g, "allreduce", mscclppAllReduce(ar.data(), ar.data(), kAr, mscclppFloat32, mscclppSum, comm, s));
  // Receives: message 0 of every peer in one order, then message 1 in another.
  for (int k = 0; k < 2 && ok; ++k)
    for (int r : peerOrder(7 + k)) {
      mscclppP2POp o = op(r, false, recvs[r * 2 + k]->data(), sizes[k], mscclppUint8);
      ok = ok && called(g, "receive " + std::to_string(k) + " from " + std::to_string(r), mscclppSendRecv(&o, 1, comm, s));
    }
  CUDA(cudaStreamSynchronize(s));
  if (ok) {
    for (int r = 0; r < g_nranks; ++r) {
      if (r == g_rank) continue;
      for (int k = 0; k < 2; ++k) {
        const std::vector<uint8_t> want = message<uint8_t>(r, g_rank, sizes[k], 100 + k);
        recvs[r * 2 + k]->check(g, "message " + std::to_string(k) + " from " + std::to_string(r), 0, want.data(),
                                want.size());
      }
    }
    std::vector<float> want(kAr);
    for (size_t i = 0; i < kAr; ++i) {
      float sum = 0;
      for (int r = 0; r < g_nranks; ++r) sum += static_cast<float>((i + r) % 5);
      want[i] = sum;
    }
    ar.check(g, "allreduce between the sends and the receives", 0, want.data(), want.size() * sizeof(float));
  }
  for (Buffer* b : sends) delete b;
  for (Buffer* b : recvs) delete b;
  g.finish();
}

// One way: rank 2k sends rank 2k + 1 a dozen messages, one call each, lines and lanes mixed, and
// 2k + 1 receives them one call each: the sender's lines wait for the receiver to have read the
// transfer before last from the same slot, and the two kernels' transfers meet in order.
void oneWay(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("one way: a dozen messages, one call each, lines and lanes mixed");
  const int partner = g_rank ^ 1;
  if (partner >= g_nranks) {
    g.finish();
    return;
  }
  const bool sender = g_rank % 2 == 0;
  const std::vector<size_t> sizes = {1000, 65536, kLinesMax, kLinesMax + 16, 7, 200003, 1u << 20, 3, 4099, 2u << 20,
                                     12345, 100};
  std::vector<Buffer*> bufs;  // all allocated first: an allocation synchronizes the device
  for (size_t k = 0; k < sizes.size(); ++k) {
    bufs.push_back(new Buffer(sizes[k], 0));
    if (sender) {
      const std::vector<uint8_t> m = message<uint8_t>(g_rank, partner, sizes[k], 40 + static_cast<int>(k));
      bufs.back()->upload(m.data(), m.size());
    }
  }
  bool ok = true;
  for (size_t k = 0; k < sizes.size() && ok; ++k) {
    mscclppP2POp o = op(partner, sender, bufs[k]->data(), sizes[k], mscclppUint8);
    ok = called(g, (sender ? "send " : "receive ") + std::to_string(k), mscclppSendRecv(&o, 1, comm, s));
  }
  CUDA(cudaStreamSynchronize(s));
  for (size_t k = 0; k < bufs.size() && ok && !sender; ++k) {
    const std::vector<uint8_t> want = message<uint8_t>(partner, g_rank, sizes[k], 40 + static_cast<int>(k));
    bufs[k]->check(g, "message " + std::to_string(k) + " of " + std::to_string(sizes[k]) + " bytes", 0, want.data(),
                   want.size());
  }
  for (Buffer* b : bufs) delete b;
  g.finish();
}

// All peers: one call in which every rank sends to every other rank and receives from it, the
// size differing per ordered pair (less than a piece of lines, one piece, several, the lanes), so
// that one launch of the lines kernel streams some transfers and not others beside the lanes'.
void allPeersMixed(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("all peers in one call, sizes per pair from 1000 bytes to the lanes");
  const std::vector<size_t> sizes = {1000, kPiece - 8, kPiece, 2 * kPiece + 3, (9u << 20) + 5, kLinesMax + 16};
  const auto sizeOf = [&](int from, int to) { return sizes[static_cast<size_t>(from * 5 + to * 3) % sizes.size()]; };
  std::vector<Buffer*> sends, recvs;  // all allocated first: an allocation synchronizes the device
  std::vector<mscclppP2POp> ops;
  std::vector<int> peers;
  for (int p = 0; p < g_nranks; ++p) {
    if (p == g_rank) continue;
    const size_t out = sizeOf(g_rank, p), in = sizeOf(p, g_rank);
    sends.push_back(new Buffer(out, 0));
    recvs.push_back(new Buffer(in, 0));
    const std::vector<uint8_t> m = message<uint8_t>(g_rank, p, out, 50);
    sends.back()->upload(m.data(), out);
    ops.push_back(op(p, true, sends.back()->data(), out, mscclppUint8));
    ops.push_back(op(p, false, recvs.back()->data(), in, mscclppUint8));
    peers.push_back(p);
  }
  if (!ops.empty() && called(g, "sendrecv", mscclppSendRecv(ops.data(), static_cast<int>(ops.size()), comm, s))) {
    CUDA(cudaStreamSynchronize(s));
    for (size_t k = 0; k < peers.size(); ++k) {
      const size_t in = sizeOf(peers[k], g_rank);
      const std::vector<uint8_t> want = message<uint8_t>(peers[k], g_rank, in, 50);
      recvs[k]->check(g, "from " + std::to_string(peers[k]) + ", " + std::to_string(in) + " bytes", 0, want.data(), in);
    }
  }
  for (Buffer* b : sends) delete b;
  for (Buffer* b : recvs) delete b;
  g.finish();
}

// Rank r's send of AlltoAll: block j holds the message to j.
template <typename T>
void checkAlltoAll(Group& g, mscclppCollComm_t comm, cudaStream_t s, size_t n, int salt, bool inPlace) {
  const std::string what =
      std::string(Type<T>::name) + " count " + std::to_string(n) + " per rank" + (inPlace ? ", in place" : "");
  const size_t bytes = n * sizeof(T);
  Buffer send(bytes * g_nranks, 0), recv(bytes * g_nranks, 0);
  std::vector<T> in, want;
  for (int j = 0; j < g_nranks; ++j) {
    const std::vector<T> m = message<T>(g_rank, j, n, salt);
    in.insert(in.end(), m.begin(), m.end());
    const std::vector<T> w = message<T>(j, g_rank, n, salt);
    want.insert(want.end(), w.begin(), w.end());
  }
  Buffer& input = inPlace ? recv : send;
  input.upload(in.data(), in.size() * sizeof(T));
  if (!called(g, what, mscclppAlltoAll(input.data(), recv.data(), n, Type<T>::id, comm, s))) return;
  CUDA(cudaStreamSynchronize(s));
  recv.check(g, what, 0, want.data(), want.size() * sizeof(T));
}

template <typename T>
void alltoAllSweep(mscclppCollComm_t comm, cudaStream_t s) {
  Group g(std::string("alltoall ") + Type<T>::name);
  int salt = 0;
  for (size_t b : {size_t(0), size_t(1), size_t(33), size_t(4097), size_t(65537), size_t(1) << 20, (size_t(3) << 20) + 5,
                   size_t(16) << 20, (size_t(72) << 20) + 5}) {
    for (bool inPlace : {false, true}) {
      checkAlltoAll<T>(g, comm, s, b / sizeof(T) / static_cast<size_t>(g_nranks) + (b ? 1 : 0), ++salt, inPlace);
    }
  }
  g.finish();
}

// A graph of a ring SendRecv (1 MiB + 4 of float32), an AlltoAll (int32) and an AllReduce,
// captured once and replayed with new inputs each time.
void graph(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("CUDA graph of a sendrecv ring, an alltoall and an allreduce, replayed " + std::to_string(kGraphReplays) +
          " times");
  const int right = (g_rank + 1) % g_nranks, left = (g_rank + g_nranks - 1) % g_nranks;
  const size_t nRing = (1u << 18) + 1, nA2a = 3001, nAr = 5000;
  Buffer ringSend(nRing * 4, 0), ringRecv(nRing * 4, 0), a2aSend(nA2a * 4 * g_nranks, 0), a2aRecv(nA2a * 4 * g_nranks, 0),
      ar(nAr * 4, 0);
  cudaGraph_t graph;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  mscclppP2POp ops[2] = {op(right, true, ringSend.data(), nRing, mscclppFloat32),
                         op(left, false, ringRecv.data(), nRing, mscclppFloat32)};
  const bool ok = called(g, "sendrecv", mscclppSendRecv(ops, 2, comm, s)) &&
                  called(g, "alltoall", mscclppAlltoAll(a2aSend.data(), a2aRecv.data(), nA2a, mscclppInt32, comm, s)) &&
                  called(g, "allreduce", mscclppAllReduce(ar.data(), ar.data(), nAr, mscclppInt32, mscclppSum, comm, s));
  CUDA(cudaStreamEndCapture(s, &graph));
  if (ok) {
    cudaGraphExec_t exec;
    CUDA(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
    for (int k = 0; k < kGraphReplays; ++k) {
      const int salt = 50 + k;
      const std::vector<float> ringOut = message<float>(g_rank, right, nRing, salt);
      ringSend.upload(ringOut.data(), nRing * 4);
      std::vector<int32_t> a2aIn, a2aWant;
      for (int j = 0; j < g_nranks; ++j) {
        const std::vector<int32_t> m = message<int32_t>(g_rank, j, nA2a, salt), w = message<int32_t>(j, g_rank, nA2a, salt);
        a2aIn.insert(a2aIn.end(), m.begin(), m.end());
        a2aWant.insert(a2aWant.end(), w.begin(), w.end());
      }
      a2aSend.upload(a2aIn.data(), a2aIn.size() * 4);
      std::vector<int32_t> arIn(nAr), arWant(nAr, 0);
      for (size_t i = 0; i < nAr; ++i) {
        arIn[i] = value(g_rank, 0, i, salt);
        for (int r = 0; r < g_nranks; ++r) arWant[i] += value(r, 0, i, salt);
      }
      ar.upload(arIn.data(), nAr * 4);
      ringRecv.poison();
      a2aRecv.poison();
      CUDA(cudaGraphLaunch(exec, s));
      CUDA(cudaStreamSynchronize(s));
      const std::vector<float> ringWant = message<float>(left, g_rank, nRing, salt);
      const std::string at = " (replay " + std::to_string(k) + ")";
      ringRecv.check(g, "ring" + at, 0, ringWant.data(), nRing * 4);
      a2aRecv.check(g, "alltoall" + at, 0, a2aWant.data(), a2aWant.size() * 4);
      ar.check(g, "allreduce" + at, 0, arWant.data(), nAr * 4);
    }
    CUDA(cudaGraphExecDestroy(exec));
  }
  CUDA(cudaGraphDestroy(graph));
  g.finish();
}

void refusals(mscclppCollComm_t comm, cudaStream_t s) {
  Group g("refusals");
  Buffer buf(4096, 0);
  char* p = buf.data();
  const int peer = (g_rank + 1) % g_nranks;
  mscclppP2POp twoSends[2] = {op(peer, true, p, 4, mscclppFloat32), op(peer, true, p + 64, 4, mscclppFloat32)};
  mscclppP2POp twoRecvs[2] = {op(peer, false, p, 4, mscclppFloat32), op(peer, false, p + 64, 4, mscclppFloat32)};
  mscclppP2POp badPeer = op(g_nranks, true, p, 4, mscclppFloat32);
  mscclppP2POp negPeer = op(-1, false, p, 4, mscclppFloat32);
  mscclppP2POp badType = op(peer, true, p, 4, static_cast<mscclppDataType_t>(12));
  mscclppP2POp nullBuf = op(peer, true, nullptr, 4, mscclppFloat32);
  mscclppP2POp misaligned = op(peer, true, p + 2, 4, mscclppFloat32);
  mscclppP2POp selfAlone = op(g_rank, true, p, 4, mscclppFloat32);
  struct Case {
    const char* what;
    mscclppResult_t got;
  } cases[] = {
      {"two sends to one peer", mscclppSendRecv(twoSends, 2, comm, s)},
      {"two receives from one peer", mscclppSendRecv(twoRecvs, 2, comm, s)},
      {"peer too large", mscclppSendRecv(&badPeer, 1, comm, s)},
      {"negative peer", mscclppSendRecv(&negPeer, 1, comm, s)},
      {"bad datatype", mscclppSendRecv(&badType, 1, comm, s)},
      {"NULL buffer", mscclppSendRecv(&nullBuf, 1, comm, s)},
      {"misaligned buffer", mscclppSendRecv(&misaligned, 1, comm, s)},
      {"send to self without a receive", mscclppSendRecv(&selfAlone, 1, comm, s)},
      {"NULL ops", mscclppSendRecv(nullptr, 1, comm, s)},
      {"negative nops", mscclppSendRecv(twoSends, -1, comm, s)},
      {"NULL communicator", mscclppSendRecv(twoSends, 1, nullptr, s)},
      {"alltoall overlapping", mscclppAlltoAll(p, p + 4, 4, mscclppFloat32, comm, s)},
      {"alltoall bad datatype", mscclppAlltoAll(p, p + 2048, 4, static_cast<mscclppDataType_t>(-1), comm, s)},
  };
  for (const Case& c : cases) {
    ++g.checks;
    if (c.got != mscclppInvalidArgument && !(c.got == mscclppInvalidUsage && std::strcmp(c.what, "NULL communicator") == 0)) {
      g.fail(std::string(c.what) + ": " + mscclppGetErrorString(c.got) + ", want an invalid argument");
    }
  }
  ++g.checks;
  mscclppP2POp zero = op(peer, true, nullptr, 0, mscclppFloat32);
  if (mscclppSendRecv(nullptr, 0, comm, s) != mscclppSuccess || mscclppSendRecv(&zero, 1, comm, s) != mscclppSuccess ||
      mscclppAlltoAll(nullptr, nullptr, 0, mscclppFloat32, comm, s) != mscclppSuccess) {
    g.fail("an empty call or count 0 was refused");
  }
  CUDA(cudaStreamSynchronize(s));
  g.finish();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  const bool hosts = argc > 1 && std::strcmp(argv[1], "hosts") == 0;
  int devices = 0;
  CUDA(cudaGetDeviceCount(&devices));
  CUDA(cudaSetDevice(g_rank % devices));
  CUDA(cudaFree(nullptr));
  if (g_rank == 0) {
    std::printf("p2p: %d ranks on %d GPU(s)%s\n", g_nranks, std::min(devices, g_nranks), hosts ? ", ranks across hosts" : "");
  }
  {
    Comm c;
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    refusals(c.coll, s);
    ringSweep<float>(c.coll, s);
    ringSweep<uint8_t>(c.coll, s);
    ringSweep<__half>(c.coll, s);
    ringSweep<int64_t>(c.coll, s);
    pairSweep<__nv_bfloat16>(c.coll, s);
    pairSweep<double>(c.coll, s);
    selfSweep<float>(c.coll, s);
    selfSweep<uint8_t>(c.coll, s);
    perPairMatching(c.coll, s);
    oneWay(c.coll, s);
    allPeersMixed(c.coll, s);
    alltoAllSweep<float>(c.coll, s);
    alltoAllSweep<uint8_t>(c.coll, s);
    alltoAllSweep<__half>(c.coll, s);
    alltoAllSweep<int32_t>(c.coll, s);
    if (!hosts) graph(c.coll, s);
    perPairMatching(c.coll, s);  // once more, after the graph: the streams' counters carried on
    CUDA(cudaStreamDestroy(s));
  }
  if (g_rank == 0) std::printf("p2p: %d passed, %d failed\n", g_passed, g_failed);
  const int failed = g_failed;
  MPI_Finalize();
  return failed ? 1 : 0;
}
