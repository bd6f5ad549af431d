/* The library reads its variables from the C environment when they are first used, so a setenv
 * the program makes after the library loaded (as programs do before creating a communicator)
 * counts: MSCCLPP_DEBUG=INFO set here must show in the log handler as the INFO line that
 * announces an override. One process, no MPI, no GPU. Prints "env after load: ok" or the reason,
 * and exits non-zero on failure. */
#include <mscclpp/core.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_override_logged = 0;

static void capture(const char* msg) {
  if (strstr(msg, " INFO ") != NULL && strstr(msg, "MSCCLPP_DEBUG") != NULL) g_override_logged = 1;
}

int main(void) {
  /* The library was loaded, and its Go runtime started, before main. */
  if (setenv("MSCCLPP_DEBUG", "INFO", 1) != 0) {
    perror("setenv");
    return 2;
  }
  if (mscclppSetLogHandler(capture) != mscclppSuccess) {
    printf("env after load: FAIL: mscclppSetLogHandler refused a handler\n");
    return 1;
  }
  /* A refused call logs a warning, which reads MSCCLPP_DEBUG for the first time. */
  if (mscclppBootstrapCreate(NULL, 0, 2, "127.0.0.1:1") == mscclppSuccess) {
    printf("env after load: FAIL: mscclppBootstrapCreate accepted a NULL bootstrap pointer\n");
    return 1;
  }
  if (!g_override_logged) {
    printf("env after load: FAIL: MSCCLPP_DEBUG=INFO, set after the library loaded, was not seen\n");
    return 1;
  }
  printf("env after load: ok\n");
  return 0;
}
