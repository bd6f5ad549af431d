/* call_log.h: the record of calls a fake library keeps for tests/nccl/routing.c to read: one
 * line per call ("name args"), in one buffer per library that includes it (fake_nccl.c,
 * fake_native.c). */
#ifndef MSCCLPP_TESTS_NCCL_CALL_LOG_H_
#define MSCCLPP_TESTS_NCCL_CALL_LOG_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static char calls[1 << 16];
static size_t used;

/* Appends one line, formatted as printf does; a line that does not fit is dropped. */
static void record(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(calls + used, sizeof(calls) - used, fmt, ap);
  va_end(ap);
  if (n > 0 && used + (size_t)n + 1 < sizeof(calls)) {
    used += (size_t)n;
    calls[used++] = '\n';
    calls[used] = '\0';
  }
}

#endif /* MSCCLPP_TESTS_NCCL_CALL_LOG_H_ */
