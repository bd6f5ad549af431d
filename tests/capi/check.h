/*
 * check.h: the pass/fail bookkeeping the C API tests share. Any thread may call expect; the tests
 * print "passed, failed" at the end from the two counters.
 */
#ifndef MSCCLPP_TESTS_CAPI_CHECK_H_
#define MSCCLPP_TESTS_CAPI_CHECK_H_

#include <mscclpp/core.h>

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards the counters (and a test's own state) */
static int passed, failed;

/* Counts a check; a failed one is printed with what it checked. */
static void expect(int ok, const char* what) {
  pthread_mutex_lock(&mu);
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL: %s\n", what);
  }
  pthread_mutex_unlock(&mu);
}

/* Checks a call's result, naming both results on failure. */
static void expectResult(mscclppResult_t got, mscclppResult_t want, const char* what) {
  char msg[512];
  snprintf(msg, sizeof(msg), "%s: got %d (%s), want %d", what, (int)got, mscclppGetErrorString(got), (int)want);
  expect(got == want, msg);
}

/* Seconds on the monotonic clock. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
