/* gen_run.c: writes a synthetic run of R ranks through the library, for
 * the benchmarks (bench_summary) and the tests (test/cli/test_rank_reports.sh).
 * Not a benchmark itself: scripts/bench runs bench_* only.
 *
 *   gen_run --logdir DIR --run NAME [--ranks R] [--events-per-rank E |
 *           --events E] [--steps S] [--kernels K] [--seed N]
 *           [--slow-rank N] [--slow-pct P] [--host NAME] [--outputs LIST]
 *           [--force]
 *
 * What it writes: for each rank r of R, one trace built with the public
 * (experimental) model API and written by tbe_export_run into
 * DIR/plugins/profile/NAME/ as host "<host><m>.rank<r>", rank r on GPU
 * r % 8 of machine m = r / 8 (8 GPUs a machine; just "<host>" on GPU 0
 * when R is 1), with t->rank = r and t->world_size = R (so the Chrome JSON
 * carries distributedInfo and the run is read rank by rank), backend
 * "nccl".  Each rank has S steps (default 20); its E events (default
 * 2,000; --events is the same for --ranks 1) are E/2 kernel launches,
 * each a cudaLaunchKernel call on one host thread and its kernel.  Of a
 * step's kernels the last is an NCCL all-reduce and every 16th an NCCL
 * all-gather (their own stream, kernel class comm); the rest cycle over
 * K - 2 compute kernels (default K = 8).
 *
 * Durations are deterministic from the seed (splitmix64): each kernel name
 * has a base time, each launch +-3% of jitter, each rank a speed of its
 * own within +-1%, and one slow rank (default R / 3; --slow-rank) runs its
 * compute kernels --slow-pct % slower (default 30), so its median step
 * time is the run's largest and an outlier (analysis.h's rule).  Ranks do
 * not wait for one another, as a real synchronous job's would in its
 * collectives: the spread shows in the step times, where the report
 * looks first.  The same arguments write the same traces.
 *
 * Prints one line: what it wrote and which rank is slow.  Exit status 0,
 * 1 when writing fails, 2 on bad arguments. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TBE_EXPERIMENTAL
#include "tbexport.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"

#define T0 1700000000000000000ll
#define KERNEL_MIN_NS 5000   /* kernels at least this long: host calls never overlap */
#define LAUNCH_LEAD_NS 3000  /* the host calls a launch this long before the kernel starts */
#define GAP_NS 500           /* idle GPU time between kernels */
#define GPUS_PER_HOST 8      /* ranks of one machine, one GPU each */

typedef struct gen_opts {
  const char *logdir, *run, *host;
  unsigned long ranks, steps, kernels, slow_rank;
  unsigned long long events, seed;
  double slow_pct;
  unsigned outputs;
  int force, slow_given;
} gen_opts;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) / 4503599627370496.0 - 1.0; }

static int fail(const char *what, int rc) {
  fprintf(stderr, "gen_run: %s: %s\n", what, tbe_strerror(rc));
  return 1;
}

/* ---- one rank ---- */

static int add_kernel(tbe_trace *t, uint32_t host_track, uint32_t stream, tbe_str launch,
                      tbe_str name, uint64_t corr, int64_t start, int64_t dur) {
  tbe_event api;
  memset(&api, 0, sizeof api);
  api.start_ns = start - LAUNCH_LEAD_NS;
  api.dur_ns = 2000;
  api.correlation = corr;
  api.name = launch;
  api.track = host_track;
  api.kind = TBE_EV_RUNTIME;
  api.detail = api.link = TBE_NONE;
  int rc = tbe_trace_add_event(t, &api, NULL, NULL, 0, NULL);
  if (rc) return rc;
  tbe_event k = api;
  k.start_ns = start;
  k.dur_ns = dur;
  k.name = name;
  k.track = stream;
  k.kind = TBE_EV_KERNEL;
  tbe_kernel kd;
  memset(&kd, 0, sizeof kd);
  kd.grid[0] = 132;
  kd.grid[1] = kd.grid[2] = 1;
  kd.block[0] = 256;
  kd.block[1] = kd.block[2] = 1;
  kd.registers = 64;
  kd.queued_ns = -1;
  kd.occupancy_pct = kd.blocks_per_sm = kd.warps_per_sm = -1;
  return tbe_trace_add_event(t, &k, &kd, NULL, 0, NULL);
}

static int build_rank(tbe_trace *t, const gen_opts *g, unsigned long rank, uint64_t per_rank) {
  static const char *const compute[] = {
      "void gemm_bf16_tn_kernel<128, 128, 64>(float const*, float*, int)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)",
      "void layer_norm_fwd_kernel<float>(float const*, float*, int)",
      "void softmax_warp_forward<float, float, 10>(float*, float const*, int)",
      "void flash_fwd_kernel<Flash_fwd_params>(Flash_fwd_params)",
      "void reduce_kernel<512, 1>(float const*, float*, int)",
  };
  static const char *const comm[2] = {
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
      "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
  };
  const int64_t pid = 1000 + (int64_t)rank;
  uint32_t pi, dev, host_track, s_compute, s_comm;
  int rc = tbe_trace_process(t, pid, &pi);
  const int32_t gpu_ord = (int32_t)(rank % GPUS_PER_HOST);
  if (!rc) rc = tbe_trace_device(t, gpu_ord, &dev);
  if (!rc) rc = tbe_trace_track(t, TBE_TRACK_THREAD, pid, pid, -1, &host_track);
  if (!rc) rc = tbe_trace_track(t, TBE_TRACK_STREAM, pid, 7, gpu_ord, &s_compute);
  if (!rc) rc = tbe_trace_track(t, TBE_TRACK_STREAM, pid, 13, gpu_ord, &s_comm);
  if (rc) return rc;
  char host[256];
  if (g->ranks > 1) snprintf(host, sizeof host, "%s%lu.rank%lu", g->host, rank / GPUS_PER_HOST, rank);
  else snprintf(host, sizeof host, "%s", g->host);
  t->host = tbe_trace_str_id(t, host);
  t->processes[pi].host = t->host;
  t->processes[pi].name = tbe_trace_str_id(t, "python train.py");
  t->devices[dev].name = tbe_trace_str_id(t, "NVIDIA H200");
  t->devices[dev].sm_count = 132;
  t->source = TBE_SRC_CUPTI;
  t->rank = g->ranks > 1 ? (int32_t)rank : -1;
  t->world_size = g->ranks > 1 ? (int32_t)g->ranks : 0;
  t->dist_backend = tbe_trace_str_id(t, "nccl");

  size_t ncompute = g->kernels - 2;
  if (ncompute > sizeof compute / sizeof compute[0]) ncompute = sizeof compute / sizeof compute[0];
  tbe_str cnames[16], comm_names[2], launch = tbe_trace_str_id(t, "cudaLaunchKernel");
  for (size_t i = 0; i < ncompute; i++) cnames[i] = tbe_trace_str_id(t, compute[i]);
  for (int i = 0; i < 2; i++) comm_names[i] = tbe_trace_str_id(t, comm[i]);
  if ((rc = tbe_trace_error(t))) return rc;

  uint64_t seed = g->seed * 0x100000001B3ull + rank;
  double speed = 1.0 + 0.01 * unit(&seed);
  if (g->ranks > 1 && rank == g->slow_rank) speed *= 1.0 + g->slow_pct / 100.0;
  uint64_t launches = per_rank / 2, corr = 1, done = 0;
  int64_t gpu = T0 + LAUNCH_LEAD_NS;
  for (unsigned long s = 0; s < g->steps; s++) {
    /* this step's share of the launches, spread evenly */
    uint64_t upto = launches * (s + 1) / g->steps, k = upto - done;
    int64_t step_start = gpu - LAUNCH_LEAD_NS;
    for (uint64_t i = 0; i < k; i++) {
      double jitter = 1.0 + 0.03 * unit(&seed);
      int is_reduce = i == k - 1, is_gather = !is_reduce && i % 16 == 15;
      int64_t base;
      tbe_str name;
      uint32_t stream;
      if (is_reduce || is_gather) {
        base = is_reduce ? 400000 : 60000;
        name = comm_names[is_reduce ? 0 : 1];
        stream = s_comm;
      } else {
        size_t c = (size_t)(i % ncompute);
        base = (int64_t)((double)(20000 + 10000 * (int64_t)c) * speed);
        name = cnames[c];
        stream = s_compute;
      }
      int64_t dur = (int64_t)((double)base * jitter);
      if (dur < KERNEL_MIN_NS) dur = KERNEL_MIN_NS;
      if ((rc = add_kernel(t, host_track, stream, launch, name, corr++, gpu, dur))) return rc;
      gpu += dur + GAP_NS;
    }
    done = upto;
    char sn[48];
    snprintf(sn, sizeof sn, "ProfilerStep#%lu", s);
    if ((rc = tbe_trace_add_step(t, (int64_t)s, step_start, gpu - GAP_NS, tbe_trace_str_id(t, sn))))
      return rc;
  }
  return tbe_trace_finish(t);
}

/* ---- arguments ---- */

static int usage(const char *why) {
  if (why) fprintf(stderr, "gen_run: %s\n", why);
  fprintf(stderr,
          "usage: gen_run --logdir DIR --run NAME [--ranks R] [--events-per-rank E | --events E]\n"
          "               [--steps S] [--kernels K] [--seed N] [--slow-rank N] [--slow-pct P]\n"
          "               [--host NAME] [--outputs xplane,json,events] [--force]\n");
  return 2;
}

static int number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_outputs(const char *s, unsigned *out) {
  *out = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    if (!strcmp(w, "xplane")) *out |= TBE_OUT_XPLANE;
    else if (!strcmp(w, "json")) *out |= TBE_OUT_JSON;
    else if (!strcmp(w, "events")) *out |= TBE_OUT_EVENTS;
    else if (!strcmp(w, "all")) *out = 0;
    else return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  gen_opts g = {.host = "node", .ranks = 1, .steps = 20, .kernels = 8, .events = 2000,
                .seed = 1, .slow_pct = 30};
  static const struct option opts[] = {
      {"logdir", 1, 0, 'l'},  {"run", 1, 0, 'r'},      {"ranks", 1, 0, 'R'},
      {"events-per-rank", 1, 0, 'e'}, {"events", 1, 0, 'E'}, {"steps", 1, 0, 's'},
      {"kernels", 1, 0, 'k'}, {"seed", 1, 0, 'S'},     {"slow-rank", 1, 0, 'w'},
      {"slow-pct", 1, 0, 'p'}, {"host", 1, 0, 'h'},    {"outputs", 1, 0, 'o'},
      {"force", 0, 0, 'f'},   {0, 0, 0, 0}};
  int c, events_total = 0;
  unsigned long long v;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 'l': g.logdir = optarg; break;
      case 'r': g.run = optarg; break;
      case 'h': g.host = optarg; break;
      case 'f': g.force = 1; break;
      case 'o':
        if (parse_outputs(optarg, &g.outputs)) return usage("--outputs: xplane, json, events or all");
        break;
      case 'p': {
        char *end;
        g.slow_pct = strtod(optarg, &end);
        if (end == optarg || *end || !(g.slow_pct >= 0 && g.slow_pct <= 1000))
          return usage("--slow-pct: 0..1000");
        break;
      }
      case 'R': case 'e': case 'E': case 's': case 'k': case 'S': case 'w':
        if (number(optarg, c == 'R' || c == 's' ? 1 : c == 'k' ? 3 : 0,
                   c == 'R' ? 65536 : c == 'k' ? 8 : c == 's' ? 100000 : (1ull << 40), &v))
          return usage("a number out of range");
        if (c == 'R') g.ranks = (unsigned long)v;
        else if (c == 'e') g.events = v;
        else if (c == 'E') g.events = v, events_total = 1;
        else if (c == 's') g.steps = (unsigned long)v;
        else if (c == 'k') g.kernels = (unsigned long)v;
        else if (c == 'S') g.seed = v;
        else g.slow_rank = (unsigned long)v, g.slow_given = 1;
        break;
      default: return usage(NULL);
    }
  }
  if (optind != argc || !g.logdir || !g.run) return usage("--logdir and --run are required");
  if (events_total && g.ranks != 1) return usage("--events is for --ranks 1; else --events-per-rank");
  if (g.events / 2 < g.steps) return usage("fewer than one kernel launch per step");
  if (!g.slow_given) g.slow_rank = g.ranks / 3;
  if (g.slow_rank >= g.ranks) return usage("--slow-rank: not a rank of the run");

  for (unsigned long r = 0; r < g.ranks; r++) {
    tbe_trace *t;
    int rc = tbe_trace_create(&t, NULL);
    if (rc) return fail("trace", rc);
    rc = build_rank(t, &g, r, g.events);
    if (rc) {
      tbe_trace_free(t);
      return fail("building a rank", rc);
    }
    tbe_export_options eo;
    tbe_export_options_init(&eo);
    eo.logdir = g.logdir;
    eo.run = g.run;
    eo.outputs = g.outputs;
    eo.force = g.force;
    char path[1024] = "", msg[1200];
    eo.error_path = path;
    eo.error_path_size = sizeof path;
    rc = tbe_export_run(t, &eo);
    tbe_trace_free(t);
    if (rc) {
      fprintf(stderr, "gen_run: %s\n", tbe_export_strerror(rc, path, msg, sizeof msg));
      return 1;
    }
  }
  printf("gen_run: %lu rank%s x %llu events (%lu steps, %lu kernel names) in %s/plugins/profile/%s",
         g.ranks, g.ranks == 1 ? "" : "s", g.events, g.steps, g.kernels, g.logdir, g.run);
  if (g.ranks > 1) printf("; slow rank %lu (+%g%%)", g.slow_rank, g.slow_pct);
  printf("\n");
  return 0;
}
