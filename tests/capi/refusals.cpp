// The C ABI seen from C++: every bad input is refused with the documented result code and a
// logged reason, error strings exist for every code, the log handler receives the lines, and a
// destroyed or foreign communicator handle is refused. One process, no MPI, no GPU.
// Prints "capi refusals: N passed, M failed" and exits non-zero on any failure.
#include <mscclpp.h>

#include <chrono>
#include <climits>
#include <thread>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int passed = 0, failed = 0;
std::vector<std::string> logged;

void captureLog(const char* msg) { logged.push_back(msg); }

bool loggedContains(const std::string& needle) {
  for (const auto& line : logged)
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

void expect(bool ok, const std::string& what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

void expectResult(mscclppResult_t got, mscclppResult_t want, const std::string& what) {
  expect(got == want, what + ": got " + std::to_string(got) + " (" + mscclppGetErrorString(got) + "), want " +
                          std::to_string(want));
}

// A refused call must also say why in the log. The call is a lambda so that it runs after the
// captured log is cleared.
template <typename Call>
void expectRefused(Call call, mscclppResult_t want, const std::string& what, const std::string& reason) {
  logged.clear();
  expectResult(call(), want, what);
  expect(loggedContains(reason), what + ": log names the reason \"" + reason + "\"");
}

}  // namespace

int main() {
  // Error strings: one for every code, distinct, and a fallback for values outside the enum.
  for (int r = mscclppSuccess; r <= mscclppNumResults; r++) {
    const char* s = mscclppGetErrorString(static_cast<mscclppResult_t>(r));
    expect(s != nullptr && std::strlen(s) > 0, "error string for " + std::to_string(r));
  }
  expect(std::strcmp(mscclppGetErrorString(mscclppSuccess), mscclppGetErrorString(mscclppInvalidArgument)) != 0,
         "distinct error strings");
  expect(std::strstr(mscclppGetErrorString(static_cast<mscclppResult_t>(1234)), "unknown") != nullptr,
         "error string for an unknown code");

  expectResult(mscclppSetLogHandler(nullptr), mscclppInvalidArgument, "mscclppSetLogHandler(NULL)");
  expectResult(mscclppSetLogHandler(captureLog), mscclppSuccess, "mscclppSetLogHandler(capture)");

  mscclppComm_t comm = nullptr;
  expectRefused([&] { return mscclppGetUniqueId(nullptr); }, mscclppInvalidArgument, "mscclppGetUniqueId(NULL)", "uniqueId is NULL");
  expectRefused([&] { return mscclppCommInitRank(nullptr, 2, "127.0.0.1:1", 0); }, mscclppInvalidArgument, "InitRank(comm NULL)",
                "comm is NULL");
  expectRefused([&] { return mscclppCommInitRank(&comm, 0, "127.0.0.1:1", 0); }, mscclppInvalidArgument, "InitRank(nranks 0)",
                "nranks is 0");
  expectRefused([&] { return mscclppCommInitRank(&comm, 2, "127.0.0.1:1", 2); }, mscclppInvalidArgument, "InitRank(rank 2 of 2)",
                "rank 2 is out of range");
  expectRefused([&] { return mscclppCommInitRank(&comm, 2, "127.0.0.1:1", -1); }, mscclppInvalidArgument, "InitRank(rank -1)",
                "rank -1 is out of range");
  expectRefused([&] { return mscclppCommInitRank(&comm, 2, nullptr, 0); }, mscclppInvalidArgument, "InitRank(address NULL)",
                "ipPortPair is NULL");
  for (const char* bad : {"", "no-port", "1.2.3.4", "1.2.3.4:notaport", "1.2.3.4:99999", "::1:80"}) {
    logged.clear();
    expectResult(mscclppCommInitRank(&comm, 2, bad, 1), mscclppInvalidArgument,
                 std::string("InitRank(malformed address \"") + bad + "\")");
    expect(comm == nullptr, std::string("comm stays NULL after a refused InitRank(\"") + bad + "\")");
    expect(loggedContains(bad), std::string("log names the malformed address \"") + bad + "\"");
  }

  mscclppUniqueId id;
  expectRefused([&] { return mscclppCommInitRankFromId(&comm, 1, id, 1); }, mscclppInvalidArgument, "InitRankFromId(rank 1 of 1)",
                "out of range");
  expectRefused([&] { return mscclppSetBootstrapConnTimeout(0); }, mscclppInvalidArgument, "SetBootstrapConnTimeout(0)",
                "timeout is 0");
  expectRefused([&] { return mscclppSetBootstrapConnTimeout(86401); }, mscclppInvalidArgument,
                "SetBootstrapConnTimeout(86401)", "want 1 to 86400");
  expectRefused([&] { return mscclppSetBootstrapConnTimeout(INT_MAX); }, mscclppInvalidArgument,
                "SetBootstrapConnTimeout(INT_MAX)", "want 1 to 86400");

  // Nobody listens at the root's address: after retrying until the timeout, a system error that
  // names the address.
  expectResult(mscclppSetBootstrapConnTimeout(1), mscclppSuccess, "SetBootstrapConnTimeout(1)");
  logged.clear();
  auto start = std::chrono::steady_clock::now();
  expectResult(mscclppCommInitRank(&comm, 2, "127.0.0.1:9", 1), mscclppSystemError, "InitRank(unreachable root)");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect(secs >= 0.5 && secs < 10, "unreachable root: gave up after the 1 s timeout (took " + std::to_string(secs) +
                                       " s)");
  expect(loggedContains("127.0.0.1:9"), "unreachable root: log names the address");

  // A one-rank communicator, then every call on it, then on its destroyed handle.
  expectResult(mscclppSetBootstrapConnTimeout(10), mscclppSuccess, "SetBootstrapConnTimeout(10)");
  std::memset(&id, 0, sizeof(id));
  expectResult(mscclppGetUniqueId(&id), mscclppSuccess, "mscclppGetUniqueId");
  mscclppUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  expect(std::memcmp(&id, &zero, sizeof(id)) != 0, "unique id is not all zeros");
  expectResult(mscclppCommInitRankFromId(&comm, 1, id, 0), mscclppSuccess, "InitRankFromId(1 rank)");
  int rank = -1, size = -1;
  expectResult(mscclppCommRank(comm, &rank), mscclppSuccess, "CommRank");
  expectResult(mscclppCommSize(comm, &size), mscclppSuccess, "CommSize");
  expect(rank == 0 && size == 1, "rank 0 of 1");
  expectRefused([&] { return mscclppCommRank(comm, nullptr); }, mscclppInvalidArgument, "CommRank(rank NULL)", "rank is NULL");
  expectRefused([&] { return mscclppCommSize(comm, nullptr); }, mscclppInvalidArgument, "CommSize(size NULL)", "size is NULL");
  char data[8] = "abcdefg";
  expectResult(mscclppBootstrapAllGather(comm, data, sizeof(data)), mscclppSuccess, "AllGather(1 rank)");
  expect(std::strcmp(data, "abcdefg") == 0, "1-rank all-gather leaves the data as it was");
  expectResult(mscclppBootstrapAllGather(comm, nullptr, 0), mscclppSuccess, "AllGather(NULL, 0 bytes)");
  expectRefused([&] { return mscclppBootstrapAllGather(comm, nullptr, 4); }, mscclppInvalidArgument, "AllGather(data NULL)",
                "data is NULL");
  expectRefused([&] { return mscclppBootstrapAllGather(comm, data, -1); }, mscclppInvalidArgument, "AllGather(size -1)",
                "size is -1");
  expectResult(mscclppBootstrapBarrier(comm), mscclppSuccess, "Barrier(1 rank)");
  expectResult(mscclppCommDestroy(comm), mscclppSuccess, "CommDestroy");

  expectRefused([&] { return mscclppCommDestroy(comm); }, mscclppInvalidUsage, "CommDestroy(destroyed)", "destroyed");
  expectRefused([&] { return mscclppCommRank(comm, &rank); }, mscclppInvalidUsage, "CommRank(destroyed)", "destroyed");
  expectRefused([&] { return mscclppBootstrapBarrier(comm); }, mscclppInvalidUsage, "Barrier(destroyed)", "destroyed");
  expectRefused([&] { return mscclppBootstrapAllGather(comm, data, 1); }, mscclppInvalidUsage, "AllGather(destroyed)", "destroyed");
  long notAComm[4] = {0, 0, 0, 0};
  expectRefused([&] { return mscclppCommSize(reinterpret_cast<mscclppComm_t>(notAComm), &size); }, mscclppInvalidUsage,
                "CommSize(foreign handle)", "not created by this library");
  expectRefused([&] { return mscclppCommDestroy(nullptr); }, mscclppInvalidArgument, "CommDestroy(NULL)", "communicator is NULL");
  expectRefused([&] { return mscclppBootstrapBarrier(nullptr); }, mscclppInvalidArgument, "Barrier(NULL)", "communicator is NULL");

  // The connection calls on a two-rank communicator (both ranks in this process): everything
  // they refuse before touching a GPU.
  mscclppUniqueId id2;
  expectResult(mscclppGetUniqueId(&id2), mscclppSuccess, "mscclppGetUniqueId (2 ranks)");
  mscclppComm_t peer = nullptr;
  mscclppResult_t peerResult = mscclppInternalError;
  std::thread peerThread([&] { peerResult = mscclppCommInitRankFromId(&peer, 2, id2, 1); });
  expectResult(mscclppCommInitRankFromId(&comm, 2, id2, 0), mscclppSuccess, "InitRankFromId(rank 0 of 2)");
  peerThread.join();
  expectResult(peerResult, mscclppSuccess, "InitRankFromId(rank 1 of 2)");
  char fakeBuf[64];  // never set up, so never touched as device memory
  expectRefused([&] { return mscclppConnect(comm, 1, 0, nullptr, 64, mscclppTransportP2P); }, mscclppInvalidArgument,
                "Connect(buffer NULL)", "localBuff is NULL");
  expectRefused([&] { return mscclppConnect(comm, 1, 0, fakeBuf, 0, mscclppTransportP2P); }, mscclppInvalidArgument,
                "Connect(size 0)", "buffSize is 0");
  expectRefused([&] { return mscclppConnect(comm, 1, -1, fakeBuf, 64, mscclppTransportP2P); }, mscclppInvalidArgument,
                "Connect(tag -1)", "tag -1 is outside");
  expectRefused([&] { return mscclppConnect(comm, 0, 0, fakeBuf, 64, mscclppTransportP2P); }, mscclppInvalidArgument,
                "Connect(to itself)", "remote rank 0 is this rank");
  expectRefused([&] { return mscclppConnect(comm, 2, 0, fakeBuf, 64, mscclppTransportP2P); }, mscclppInvalidArgument,
                "Connect(rank out of range)", "remote rank 2 is out of range");
  expectRefused([&] { return mscclppConnect(comm, 1, 0, fakeBuf, 64, mscclppTransportIB, "mlx5_0"); },
                mscclppInvalidUsage, "Connect(IB)", "no RDMA device was found");
  expectRefused([&] { return mscclppConnect(comm, 1, 0, fakeBuf, 64, mscclppTransportSHM); }, mscclppInvalidUsage,
                "Connect(SHM)", "not implemented");
  expectRefused([&] { return mscclppConnect(comm, 1, 0, fakeBuf, 64, static_cast<mscclppTransport_t>(9)); },
                mscclppInvalidArgument, "Connect(unknown transport)", "unknown transport 9");
  expectResult(mscclppProxyLaunch(comm), mscclppSuccess, "ProxyLaunch(no connections) has nothing to serve");
  expectResult(mscclppProxyStop(comm), mscclppSuccess, "ProxyStop(no connections)");
  expectResult(mscclppConnect(comm, 1, 5, fakeBuf, 64, mscclppTransportP2P), mscclppSuccess, "Connect(rank 1, tag 5)");
  expectRefused([&] { return mscclppConnect(comm, 1, 5, fakeBuf, 64, mscclppTransportP2P); }, mscclppInvalidUsage,
                "Connect(duplicate)", "already exists");
  mscclppDevConn_t* devConns = nullptr;
  int nConns = -1;
  expectRefused([&] { return mscclppGetAllDeviceConnections(comm, &devConns, &nConns); }, mscclppInvalidUsage,
                "GetAllDeviceConnections(before setup)", "since the last mscclppConnectionSetup");
  expectRefused([&] { return mscclppGetAllDeviceConnections(comm, nullptr, &nConns); }, mscclppInvalidArgument,
                "GetAllDeviceConnections(NULL)", "is NULL");
  mscclppDevConn_t* one = nullptr;
  expectRefused([&] { return mscclppGetDeviceConnection(comm, 1, 5, &one); }, mscclppInvalidUsage,
                "GetDeviceConnection(before setup)", "since the last mscclppConnectionSetup");
  expectRefused([&] { return mscclppProxyLaunch(comm); }, mscclppInvalidUsage, "ProxyLaunch(before setup)",
                "since the last mscclppConnectionSetup");
  expectResult(mscclppProxyStop(comm), mscclppSuccess, "ProxyStop(never launched) is a no-op");
  // A host buffer is refused; without a GPU, the missing device is reported instead.
  logged.clear();
  mscclppResult_t setupResult = mscclppConnectionSetup(comm);
  expect((setupResult == mscclppInvalidArgument && loggedContains("not CUDA device memory")) ||
             (setupResult == mscclppUnhandledCudaError && loggedContains("no CUDA-capable device")),
         "ConnectionSetup(host buffer) refused: got " + std::to_string(setupResult));
  mscclppRegisteredMemory regMem;
  expectRefused([&] { return mscclppRegisterBuffer(comm, nullptr, 64, &regMem); }, mscclppInvalidArgument,
                "RegisterBuffer(NULL)", "is NULL");
  expectRefused([&] { return mscclppRegisteredBufferWrite(comm, &regMem, fakeBuf, 8, 0, 0, 0); }, mscclppInvalidUsage,
                "RegisteredBufferWrite(unregistered)", "was not filled by mscclppRegisterBuffer");
  expectResult(mscclppCommDestroy(comm), mscclppSuccess, "CommDestroy(rank 0 of 2)");
  expectResult(mscclppCommDestroy(peer), mscclppSuccess, "CommDestroy(rank 1 of 2)");
  expectRefused([&] { return mscclppConnect(comm, 1, 0, fakeBuf, 64, mscclppTransportP2P); }, mscclppInvalidUsage,
                "Connect(destroyed)", "destroyed");

  // Every log line carries host:pid and a rank field.
  bool formatted = !logged.empty();
  for (const auto& line : logged) formatted = formatted && line.find(" MSCCLPP ") != std::string::npos;
  expect(formatted, "log lines carry the MSCCLPP prefix");

  mscclppDefaultLogHandler("capi refusals: mscclppDefaultLogHandler wrote this line\n");
  std::printf("capi refusals: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
