// Kernels of the Go ping-pong test (channels/pingpong_test.go), after the basic-concepts
// tutorial: GPU 0 waits, spins, signals; GPU 1 signals, waits; both through a base memory channel.
// `make -C channels/testdata` (or the command in pingpong_test.go) regenerates ping_pong.ptx.
#include <mscclpp/memory_channel_device.h>

// Spins about `cycles` clock cycles.
__device__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

extern "C" __global__ void pingPongWaiter(mscclppBaseMemoryChannelDeviceHandle channel, int iterations,
                                          long long spinCycles) {
  for (int i = 0; i < iterations; i++) {
    channel.relaxedWait();
    spin(spinCycles);
    channel.relaxedSignal();
  }
}

// rounds counts the completed rounds and cycles sums their clock cycles, for the host to check.
extern "C" __global__ void pingPongSignaller(mscclppBaseMemoryChannelDeviceHandle channel, int iterations,
                                            int* rounds, long long* cycles) {
  for (int i = 0; i < iterations; i++) {
    long long start = clock64();
    channel.relaxedSignal();
    channel.relaxedWait();
    *cycles += clock64() - start;
    *rounds += 1;
  }
}
