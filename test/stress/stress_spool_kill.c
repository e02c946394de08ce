/* stress_spool_kill.c: SIGKILL at random moments while a fake collector
 * writes a spool (issue 6, "SIGKILL", the CI half of the profiled-program
 * case; test/stress/gpu_kill.sh does it with a real CUDA program).
 *
 * For each of N kills (default 50; argv[1] or $TBE_STRESS_KILLS) the parent
 * forks a child that plays the collector's background thread: it creates
 * <spooldir>/<pid>.spool like the injection library (O_EXCL, O_APPEND),
 * writes the header, a first frame with the process info, host, command and
 * string definitions, then frames of synthetic decoded records as fast as
 * it can: kernels (the i-th has correlation id i+1 and starts at T0 + i us)
 * each with its cudaLaunchKernel API record, a memcpy every 16 kernels, new
 * kernel names defined now and then, and a cumulative stats item closing
 * each frame, all through the spool writer the collector uses
 * (tbe__spool_write_frame).  After each frame's write returned it reports
 * the kernel count through a pipe.  The parent kills it after a random
 * 0-20 ms ($TBE_STRESS_MAX_DELAY_MS; at full speed the fake writes about
 * 10 million records a second, far beyond a real collector, so longer
 * delays only make the conversions slower) from the moment the spool
 * exists (seeded; the seed is printed, $TBE_STRESS_SEED replays), then:
 *   - scans the spool: every complete frame's kernels are 0, 1, ... k-1 in
 *     order, k >= the acknowledged count, and what follows the last complete
 *     frame (if anything) is an incomplete frame, never a bad one;
 *   - converts it (tbe__spool_file_to_trace): the trace holds exactly those
 *     k kernels and k API calls and says it ended early;
 *   - writes the run the way `tbexport -- CMD` does after the program ended
 *     (tbe_session_convert on the spool directory): it succeeds, removes
 *     the spool and its directory, and the run's summary events say
 *     profiler/ended_early = 1 and summary/kernel_count = k.
 * Prints kills, kernels acknowledged and recovered, and torn frames seen. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "import/spool.h"
#include "events/spool.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "stress_util.h"
#include "tbexport.h"
#include "tbexport/error.h"
#include "tbexport/reader.h"

#define T0 1700000000000000000ll
#define PID_BASE 4000000u /* pids in the spool (the file name carries the real one) */

/* ---- the child: a fake collector ---- */

static void add_kernel(tbe__buf *p, uint64_t i, uint32_t name) {
  tbe__sp_kernel k;
  memset(&k, 0, sizeof k);
  k.start = T0 + (int64_t)i * 1000;
  k.end = k.start + 600;
  k.corr = (uint32_t)(i + 1);
  k.device = 0;
  k.context = 1;
  k.stream = 7 + (uint32_t)(i % 3);
  k.name = name;
  k.grid[0] = 128;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = k.block[2] = 1;
  k.registers = 32;
  tbe__spool_item(p, TBE__SP_KERNEL, &k, sizeof k);
  tbe__sp_api a;
  memset(&a, 0, sizeof a);
  a.start = k.start - 300;
  a.end = k.start - 100;
  a.corr = k.corr;
  a.pid = PID_BASE;
  a.tid = PID_BASE + 1;
  a.cbid = 211;
  a.name = 2; /* cudaLaunchKernel */
  a.domain = TBE__API_RUNTIME;
  tbe__spool_item(p, TBE__SP_API, &a, sizeof a);
}

static void add_memcpy(tbe__buf *p, uint64_t i) {
  tbe__sp_memcpy m;
  memset(&m, 0, sizeof m);
  m.start = T0 + (int64_t)i * 1000 + 650;
  m.end = m.start + 200;
  m.bytes = 4096;
  m.corr = 0x80000000u + (uint32_t)i;
  m.context = 1;
  m.stream = 7;
  m.src_device = m.dst_device = -1;
  m.copy_kind = 1; /* HtoD */
  m.src_kind = 1;
  m.dst_kind = 3;
  tbe__spool_item(p, TBE__SP_MEMCPY, &m, sizeof m);
}

static void fake_collector(const char *spool_dir, uint64_t seed, int ack_fd) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%ld.spool", spool_dir, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    perror(path);
    _exit(3);
  }
  st_ack(ack_fd, 0); /* the spool exists: the parent starts its clock */
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, T0);
  if (tbe__write_all(fd, head, sizeof head) != 0) _exit(3);
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = T0;
  info.pid = PID_BASE;
  info.ppid = 1;
  info.trace = TBE_TRACE_CUDA | TBE_TRACE_NVTX;
  info.flags = TBE__SPF_INJECTED;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_item(&p, TBE__SP_HOST, "stresshost", 10);
  tbe__spool_item(&p, TBE__SP_CMD, "./fake_training --steps 1000", 28);
  tbe__spool_str(&p, 1, "stress_kernel_0", 15);
  tbe__spool_str(&p, 2, "cudaLaunchKernel", 16);
  tbe__sp_context c = {1, 0};
  tbe__spool_item(&p, TBE__SP_CONTEXT, &c, sizeof c);
  st_rng rng = {seed};
  tbe__sp_stats stats;
  memset(&stats, 0, sizeof stats);
  uint64_t i = 0;
  uint32_t name = 1, next_id = 3;
  for (uint64_t frame = 0;; frame++) {
    if (frame % 64 == 63) {
      char nm[32];
      int l = snprintf(nm, sizeof nm, "stress_kernel_%u", next_id);
      tbe__spool_str(&p, next_id, nm, (size_t)l);
      name = next_id++;
    }
    uint64_t n = 64 + st_below(&rng, 2048);
    for (uint64_t j = 0; j < n; j++, i++) {
      add_kernel(&p, i, name);
      if (i % 16 == 15) add_memcpy(&p, i);
    }
    stats.records += n * 2 + n / 16;
    stats.buffers++;
    tbe__spool_item(&p, TBE__SP_STATS, &stats, sizeof stats);
    if (tbe__buf_error(&p)) _exit(3);
    int rc = tbe__spool_write_frame(fd, p.data, p.len);
    if (rc) {
      fprintf(stderr, "child: spool write: %s\n", tbe_strerror(rc));
      _exit(3);
    }
    tbe__buf_clear(&p);
    st_ack(ack_fd, i);
  }
}

typedef struct collector_args {
  const char *spool_dir;
  uint64_t seed;
} collector_args;

static void collector_main(void *ctx, int ack_fd) {
  const collector_args *a = ctx;
  fake_collector(a->spool_dir, a->seed, ack_fd);
}

/* ---- the parent's checks ---- */

typedef struct scan_ctx {
  uint64_t kernels, apis;
  int out_of_order;
} scan_ctx;

static int on_item(void *vctx, unsigned type, const uint8_t *body, size_t len) {
  scan_ctx *c = vctx;
  if (type == TBE__SP_KERNEL && len == sizeof(tbe__sp_kernel)) {
    tbe__sp_kernel k;
    memcpy(&k, body, sizeof k);
    if (k.corr != (uint32_t)(c->kernels + 1) || k.start != T0 + (int64_t)c->kernels * 1000)
      c->out_of_order = 1;
    c->kernels++;
  } else if (type == TBE__SP_API) {
    c->apis++;
  }
  return 0;
}

static size_t count_kind(const tbe_trace *t, tbe_event_kind k) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == k;
  return n;
}

/* Reads the run's summary events: profiler/ended_early and
 * summary/kernel_count.  Returns 0 when both were found. */
static int run_scalars(const char *rundir, double *ended, double *kernels) {
  tbe_reader *r;
  if (tbe_reader_open(&r, rundir, 0, NULL) != 0) return -1;
  int found = 0;
  const tbe_tb_event *ev;
  int rc;
  while ((rc = tbe_reader_next(r, &ev)) != 0) {
    if (rc < 0) {
      tbe_reader_close(r);
      return -1;
    }
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      double val = v->type == TBE_VALUE_SIMPLE             ? v->simple_value
                   : v->tensor.nfloats == 1                ? v->tensor.floats[0]
                   : v->tensor.ndoubles == 1               ? v->tensor.doubles[0]
                                                           : -1;
      if (!strcmp(v->tag, "profiler/ended_early")) *ended = val, found |= 1;
      if (!strcmp(v->tag, "summary/kernel_count")) *kernels = val, found |= 2;
    }
  }
  tbe_reader_close(r);
  return found == 3 ? 0 : -1;
}

static int read_file(const char *path, uint8_t **data, size_t *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return -errno;
  }
  *n = (size_t)st.st_size;
  *data = malloc(*n ? *n : 1);
  size_t got = 0;
  while (*data && got < *n) {
    ssize_t r = read(fd, *data + got, *n - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!*data || got != *n) {
    free(*data);
    return TBE_EIO;
  }
  return 0;
}

int main(int argc, char **argv) {
  long kills = argc > 1 ? atol(argv[1]) : st_env_long("TBE_STRESS_KILLS", 50);
  if (kills <= 0) kills = 50;
  long max_delay_ms = st_env_long("TBE_STRESS_MAX_DELAY_MS", 20);
  uint64_t seed = st_seed();
  st_rng rng = {seed};
  printf("stress_spool_kill: %ld kills after 0-%ld ms, seed %llu (TBE_STRESS_SEED=%llu replays)\n",
         kills, max_delay_ms, (unsigned long long)seed, (unsigned long long)seed);
  fflush(stdout);
  char *root = st_mkdtemp("tbe-spool-kill");
  char logdir[4096];
  snprintf(logdir, sizeof logdir, "%s/log_dir", root);
  unsigned long torn = 0, converted = 0;
  unsigned long long acked_total = 0, recovered_total = 0, spool_bytes = 0;
  double t0 = st_now(), conv_s = 0;
  for (long k = 0; k < kills; k++) {
    uint64_t delay_us = st_below(&rng, (uint64_t)max_delay_ms * 1000 + 1);
    if (k < 3) delay_us = (uint64_t)k * 50; /* around the header and the first frame */
    uint64_t child_seed = st_next(&rng);
    char sdir[3000];
    snprintf(sdir, sizeof sdir, "%s/.tbexport-spool-%ld", root, k);
    if (mkdir(sdir, 0700) != 0) {
      st_fail("mkdir %s: %s", sdir, strerror(errno));
      break;
    }
    collector_args ca = {sdir, child_seed};
    int ack_fd;
    pid_t pid = st_spawn(collector_main, &ca, &ack_fd);
    if (pid < 0) break;
    uint64_t ready;
    ssize_t got;
    do got = read(ack_fd, &ready, sizeof ready);
    while (got < 0 && errno == EINTR);
    st_sleep_us(delay_us);
    int status;
    uint64_t acked;
    int killed = st_kill_reap(pid, ack_fd, &acked, &status);
    if (got != (ssize_t)sizeof ready || !killed) {
      st_fail("kill %ld: the fake collector failed by itself (status 0x%x)", k, status);
      continue;
    }
    char spool[4200];
    snprintf(spool, sizeof spool, "%s/%ld.spool", sdir, (long)pid);

    /* 1. the spool's complete frames */
    uint8_t *data = NULL;
    size_t n = 0;
    int rc = read_file(spool, &data, &n);
    if (rc) {
      st_fail("kill %ld: %s: %s", k, spool, tbe_strerror(rc));
      continue;
    }
    spool_bytes += n;
    scan_ctx sc = {0, 0, 0};
    tbe__spool_tail tail;
    rc = tbe__spool_scan(data, n, on_item, &sc, &tail);
    free(data);
    if (rc) {
      st_fail("kill %ld: the spool does not scan: %s", k, tbe_strerror(rc));
      continue;
    }
    if (sc.out_of_order) st_fail("kill %ld: kernels out of order or duplicated in the spool", k);
    if (sc.kernels < acked)
      st_fail("kill %ld: %llu kernels in complete frames, %llu were written before the kill", k,
              (unsigned long long)sc.kernels, (unsigned long long)acked);
    if (tail.bytes) {
      torn++;
      if (!tail.why || strncmp(tail.why, "truncated", 9) != 0)
        st_fail("kill %ld: the spool's tail is '%s', not an incomplete frame", k,
                tail.why ? tail.why : "?");
    }

    /* 2. conversion into the trace model */
    double c0 = st_now();
    tbe_trace *t = NULL;
    tbe__convert_info info;
    memset(&info, 0, sizeof info);
    if (tbe_trace_create(&t, NULL) != 0) {
      st_fail("out of memory");
      break;
    }
    rc = tbe__spool_file_to_trace(spool, NULL, t, &info);
    if (rc) {
      st_fail("kill %ld: conversion failed: %s", k, tbe_strerror(rc));
    } else {
      size_t nk = count_kind(t, TBE_EV_KERNEL), na = count_kind(t, TBE_EV_RUNTIME);
      if (nk != sc.kernels || na != sc.kernels)
        st_fail("kill %ld: the trace holds %zu kernels and %zu API calls; the spool's complete "
                "frames %llu",
                k, nk, na, (unsigned long long)sc.kernels);
      if (!info.ended_early || !t->ended_early)
        st_fail("kill %ld: the trace does not say it ended early", k);
    }
    tbe_trace_free(t);

    /* 3. the run, as `tbexport -- CMD` writes it after the program ended */
    char run[32];
    snprintf(run, sizeof run, "k%ld", k);
    tbe_export_options eo;
    tbe_export_options_init(&eo);
    eo.logdir = logdir;
    eo.run = run;
    eo.host = "stresshost";
    tbe_session_options s;
    tbe_session_options_init(&s);
    s.spool_dir = sdir;
    s.export_options = &eo;
    s.capture = TBE_CAPTURE_ALL;
    s.program_pid = pid;
    s.program_cmd = "fake";
    tbe_session_result sres;
    rc = tbe_session_convert(&s, &sres);
    tbe_profiler_result res = sres.total;
    size_t nprocs = sres.processes;
    conv_s += st_now() - c0;
    struct stat st;
    if (rc) {
      st_fail("kill %ld: writing the run failed: %s", k, tbe_strerror(rc));
    } else {
      if (nprocs != 1) st_fail("kill %ld: %zu processes converted, want 1", k, nprocs);
      if (lstat(sdir, &st) == 0) st_fail("kill %ld: the spool directory was left behind", k);
      if (res.kernels != sc.kernels)
        st_fail("kill %ld: the run's result counts %llu kernels, want %llu", k,
                (unsigned long long)res.kernels, (unsigned long long)sc.kernels);
      char rundir[4200];
      snprintf(rundir, sizeof rundir, "%s/%s", logdir, run);
      double ended = -1, kc = -1;
      if (run_scalars(rundir, &ended, &kc) != 0)
        st_fail("kill %ld: the run's summary events cannot be read", k);
      else if (ended != 1.0 || kc != (double)(float)sc.kernels)
        st_fail("kill %ld: the run says ended_early=%g kernel_count=%g, want 1 and %llu", k, ended,
                kc, (unsigned long long)sc.kernels);
      else
        converted++;
    }
    acked_total += acked;
    recovered_total += sc.kernels;
    st_rmtree(logdir);
    st_rmtree(sdir);
  }
  double dt = st_now() - t0;
  st_rmtree(root);
  free(root);
  printf("kills: %ld in %.1f s (conversion %.1f s), seed %llu\n", kills, dt, conv_s,
         (unsigned long long)seed);
  printf("spools converted into runs that say they ended early: %lu of %ld (%.1f MB of spool)\n",
         converted, kills, (double)spool_bytes / 1e6);
  printf("kernels acknowledged (frame written before the kill): %llu; recovered: %llu\n",
         acked_total, recovered_total);
  printf("torn final frames seen: %lu\n", torn);
  printf("failures: %lu\n", st_failures);
  return st_failures ? 1 : 0;
}
