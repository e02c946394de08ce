/* profile_api.c: collecting GPU activity in-process with tbe_profiler_start /
 * tbe_profiler_stop.
 *
 * The CUDA work here would be your program's; this sample has none of its
 * own (it is plain C and builds without CUDA), so run it with a CUDA
 * program's work in between, or see what an empty session writes: a run
 * with a note that no CUDA activity was recorded.  Built without CUDA, the
 * API returns TBE_ENOCUPTI and the sample says so.
 *
 * usage: profile_api [LOGDIR] */
#include <stdio.h>
#include <time.h>

#include "tbexport.h"
#include "tbexport/profiler.h"

int main(int argc, char **argv) {
  tbe_profiler_options o;
  tbe_profiler_options_init(&o);
  o.logdir = argc > 1 ? argv[1] : "log_dir";
  o.run = "profile_api";
  o.force = 1;
  int rc = tbe_profiler_start(&o);
  if (rc == TBE_ENOCUPTI) {
    fprintf(stderr, "profile_api: %s\n", tbe_strerror(rc));
    return 0; /* not an error for a sample: nothing to collect with */
  }
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_start: %s\n", tbe_strerror(rc));
    return 1;
  }
  /* ... CUDA kernels, copies and NVTX ranges would run here ... */
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  tbe_profiler_result r;
  rc = tbe_profiler_stop(&r);
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_stop: %s\n", tbe_strerror(rc));
    return 1;
  }
  printf("profile_api: kernels %llu, copies %llu, NVTX ranges %llu, dropped %llu, GPU busy %.1f%%\n",
         (unsigned long long)r.kernels, (unsigned long long)r.copies,
         (unsigned long long)r.nvtx_ranges, (unsigned long long)r.dropped_records,
         r.gpu_busy_pct);
  return 0;
}
