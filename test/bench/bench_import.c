/* bench_import.c: Chrome/Kineto JSON import rate and peak memory.
 *
 * Generates Kineto-like traces (object form, baseTimeNanoseconds, the
 * categories and args torch.profiler writes: cpu_op with shapes, launches
 * with ac2g flows, kernels with their launch args, memcpy/memset, [memory]
 * instants, fwdbwd flows, ProfilerStep annotations) into a temporary
 * directory, then imports each file in a child process (so peak RSS, from
 * getrusage, is per case) and prints events/s, MB/s and peak RSS.  The
 * baseline is Python's json.load of the same file, timed in the same run:
 * it only builds Python objects, no analysis at all.
 *
 * Cases: 250k events (plain and gzip) always; 5M events (~1.5 GB) only with
 * TBE_BENCH_LARGE=1 (disk and time), and Python on it only with
 * TBE_BENCH_PYTHON_LARGE=1 (it needs ~10x the file size in memory).
 * TBE_BENCH_EVENTS=N overrides the small case's size.  The plain JSON case
 * runs the importer on one thread, then threaded (boundary scan, N parse
 * workers, model building on the calling thread) with N = 1, 2, 4, 8 and all
 * CPUs (at most 16; those up to the CPU count), each against the same json.load time; with
 * TBE_IMPORT_THREADS=N set it runs only the importer's own choice for it
 * (0 = one thread).  `bench_import FILE...`
 * measures the given traces instead (events = model events; MB/s per file
 * byte, compressed for .gz), e.g. a real torch.profiler trace.
 * `bench_import --generate EVENTS OUT.json[.gz]` only writes the generated
 * trace.  TBE_IMPORT_PROFILE=1 makes each import print its phase times
 * (serial model building, parse workers, driver, end) to stderr.  Goals (issue 3):
 * import >= 5x json.load; peak RSS <= half the file size for files >= 50 MB. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "import/importer.h"
#include "tbexport/error.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

/* The importer's thread switch (-1 auto, 0 one thread, 1 two threads);
 * the bench sets it from TBE_IMPORT_THREADS to compare. */
extern int tbe__chrome_json_threads;
/* Parse workers when threaded (0: TBE_IMPORT_THREADS or the online CPUs,
 * at most 16). */
extern int tbe__chrome_json_workers;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- generator ---- */

typedef struct gen {
  FILE *f;
  gzFile gz;
  uint64_t events;
  int first;
} gen;

static void out(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(gen *g, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
  if (g->f) fwrite(buf, 1, (size_t)n, g->f);
  if (g->gz) gzwrite(g->gz, buf, (unsigned)n);
}

/* Kineto prints µs with exactly three decimals. */
#define US(ns) (long long)((ns) / 1000), (long long)((ns) % 1000)

static void sep(gen *g) {
  out(g, g->first ? "\n  " : ",\n  ");
  g->first = 0;
  g->events++;
}

static const char *const kernel_names[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
    "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)"
    "::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> "
    ">(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_"
    "off_kernel__5x_cublas",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
    "(cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, float const*, "
    "float*)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::"
    "(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
    "float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::"
    "MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
};
static const char *const op_names[] = {"aten::add_", "aten::mm", "aten::convolution", "aten::fill_",
                                       "aten::_log_softmax", "aten::mean"};

static uint64_t generate(const char *path, const char *gzpath, uint64_t target) {
  gen g = {0};
  g.f = fopen(path, "wb");
  if (!g.f) return 0;
  static char fbuf[1 << 20];
  setvbuf(g.f, fbuf, _IOFBF, sizeof fbuf);
  if (gzpath) g.gz = gzopen(gzpath, "wb1");
  g.first = 1;
  const long long base = 1790857026000000000LL;
  out(&g,
      "\n  {\n    \"schemaVersion\": 1,\n    \"deviceProperties\": [\n    {\n      \"id\": 0, "
      "\"name\": \"NVIDIA H200\", \"totalGlobalMem\": 150109880320,\n      \"computeMajor\": 9, "
      "\"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": "
      "2048,\n      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, "
      "\"numSms\": 132\n    }\n    ],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": "
      "%lld,\n  \"traceEvents\": [",
      base);
  int64_t ts = 5348360166511960LL; /* ns relative to the base */
  uint64_t op = 0, corr = 600, ext = 500, evidx = 0, step = 1;
  int64_t step_start = ts;
  while (g.events < target) {
    int k = (int)(op % 6);
    int64_t t0 = ts;
    /* CPU operator with shapes */
    sep(&g);
    out(&g,
        "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 580, \"tid\": 609,\n"
        "    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      \"External id\": "
        "%llu,\"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\", \"1\"], \"Input type\": "
        "[\"float\", \"float\", \"Scalar\"], \"Input Strides\": [[%d, 1], [%d, 1], []], \"Input "
        "Dims\": [[32, %d], [32, %d], []], \"Ev Idx\": %llu\n    }\n  }",
        op_names[k], US(t0), US(30000 + (int64_t)(op % 7) * 1000), (unsigned long long)ext,
        10 + k, 10 + k, 10 + k, 10 + k, (unsigned long long)evidx++);
    /* the launch */
    int64_t tl = t0 + 5000;
    sep(&g);
    out(&g,
        "{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
        "580, \"tid\": 609,\n    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      "
        "\"External id\": %llu, \"cbid\": 211, \"correlation\": %llu\n    }\n  }",
        US(tl), US(20811), (unsigned long long)ext, (unsigned long long)corr);
    sep(&g);
    out(&g,
        "{\n    \"ph\": \"s\", \"id\": %llu, \"pid\": 580, \"tid\": 609, \"ts\": %lld.%03lld,\n    "
        "\"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }",
        (unsigned long long)corr, US(tl));
    /* the GPU work */
    int64_t tg = tl + 15000;
    sep(&g);
    if (op % 8 == 3) {
      out(&g,
          "{\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> "
          "Device)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    "
          "\"args\": {\n      \"External id\": %llu, \"device\": 0, \"context\": 1, \"stream\": 7, "
          "\"correlation\": %llu, \"bytes\": %llu, \"memory bandwidth (GB/s)\": 12.5\n    }\n  }",
          US(tg), US(2100), (unsigned long long)ext, (unsigned long long)corr,
          (unsigned long long)(4096 << (op % 5)));
    } else if (op % 8 == 6) {
      out(&g,
          "{\n    \"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, "
          "\"tid\": 7,\n    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      "
          "\"External id\": %llu, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": "
          "%llu, \"bytes\": 4015255, \"memory bandwidth (GB/s)\": 2091.2786458333335\n    }\n  }",
          US(tg), US(1920), (unsigned long long)ext, (unsigned long long)corr);
    } else {
      out(&g,
          "{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7,\n    "
          "\"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      \"External id\": %llu, "
          "\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": %llu, "
          "\"registers per thread\": %d, \"shared memory\": 0, \"blocks per SM\": 0.007576, "
          "\"warps per SM\": 0.030303, \"grid\": [%d, 1, 1], \"block\": [128, 1, 1], \"est. "
          "achieved occupancy %%\": 0\n    }\n  }",
          kernel_names[k], US(tg), US(768 + (int64_t)(op % 13) * 100), (unsigned long long)ext,
          (unsigned long long)corr, 16 + 8 * k, 1 + (int)(op % 64));
    }
    sep(&g);
    out(&g,
        "{\n    \"ph\": \"f\", \"id\": %llu, \"pid\": 0, \"tid\": 7, \"ts\": %lld.%03lld,\n    "
        "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }",
        (unsigned long long)corr, US(tg));
    if (op % 4 == 1) {
      sep(&g);
      out(&g,
          "{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": "
          "\"[memory]\",\n    \"pid\": 580, \"tid\": 609,\n    \"ts\": %lld.%03lld,\n    \"args\": "
          "{\n      \"Total Reserved\": 297795584, \"Total Allocated\": %llu, \"Bytes\": 1536, "
          "\"Device Id\": 0, \"Device Type\": 1, \"Addr\": %llu, \"Ev Idx\": %llu\n    }\n  }",
          US(t0 + 2000), (unsigned long long)(115061248 + (op % 100) * 1536),
          (unsigned long long)(139861145247744ULL + (op % 1000) * 2048),
          (unsigned long long)evidx++);
    }
    if (op % 20 == 10) {
      sep(&g);
      out(&g,
          "{\n    \"ph\": \"s\", \"id\": %llu, \"pid\": 580, \"tid\": 580, \"ts\": %lld.%03lld,\n  "
          "  \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"\n  }",
          (unsigned long long)op, US(t0));
      sep(&g);
      out(&g,
          "{\n    \"ph\": \"f\", \"id\": %llu, \"pid\": 580, \"tid\": 609, \"ts\": %lld.%03lld,\n  "
          "  \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"\n  }",
          (unsigned long long)op, US(t0 + 1000));
    }
    ts += 40000;
    op++, corr++, ext++;
    if (op % 2000 == 0) {
      sep(&g);
      out(&g,
          "{\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%llu\", "
          "\"pid\": 580, \"tid\": 580,\n    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    "
          "\"args\": {\n      \"External id\": %llu, \"Record function id\": 0, \"Ev Idx\": %llu\n"
          "    }\n  }",
          (unsigned long long)step++, US(step_start), US(ts - step_start),
          (unsigned long long)ext++, (unsigned long long)evidx++);
      step_start = ts;
    }
  }
  out(&g,
      "\n  ],\n  \"traceName\": \"bench.pt.trace.json\"\n}\n");
  int bad = ferror(g.f);
  if (fclose(g.f) != 0) bad = 1;
  if (g.gz && gzclose(g.gz) != Z_OK) bad = 1;
  return bad ? 0 : g.events;
}

/* ---- measuring ---- */

typedef struct result {
  int rc;
  double seconds;
  uint64_t events, model_events;
  long maxrss_kb;
  long base_rss_kb;
  char msg[512];
} result;

/* TBE_IMPORT_PROFILE=1: the importer's phase times, on stderr. */
static void print_profile(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  (void)level;
  fprintf(stderr, "%s\n", line);
}

static void import_child(const char *path, int fd) {
  result r;
  memset(&r, 0, sizeof r);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  r.base_rss_kb = ru.ru_maxrss;
  tbe_trace *t = NULL;
  tbe_import_error err;
  double t0 = now();
  r.rc = tbe_trace_create(&t, NULL);
  /* the importer's own choice, or TBE_IMPORT_THREADS parse workers (as
   * the tbexport program reads it: 0 = the calling thread only) */
  tbe_import_options io;
  tbe_import_options_init(&io);
  const char *e = getenv("TBE_IMPORT_THREADS");
  if (e && *e) io.threads = atoi(e) <= 1 ? 1 : (unsigned)atoi(e);
  const char *prof = getenv("TBE_IMPORT_PROFILE");
  if (prof && *prof && strcmp(prof, "0") != 0) io.on_profile = print_profile;
  if (!r.rc) r.rc = tbe_import_file(t, path, &io, &err);
  r.seconds = now() - t0;
  getrusage(RUSAGE_SELF, &ru);
  r.maxrss_kb = ru.ru_maxrss;
  if (r.rc) snprintf(r.msg, sizeof r.msg, "%s", err.message);
  if (t) r.model_events = t->nevents;
  ssize_t w = write(fd, &r, sizeof r);
  (void)w;
  _exit(0);
}

static int run_import(const char *path, result *r) {
  int p[2];
  if (pipe(p)) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(p[0]);
    import_child(path, p[1]);
  }
  close(p[1]);
  ssize_t n = read(p[0], r, sizeof *r);
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  return n == (ssize_t)sizeof *r ? 0 : -1;
}

/* Python's json.load of the same file; returns seconds or < 0. */
static double run_python(const char *path) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys,time; t=time.perf_counter(); f=open(sys.argv[1],\"rb\"); "
           "d=json.load(f); print(time.perf_counter()-t)' '%s' 2>/dev/null",
           path);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  double s = -1;
  if (fscanf(p, "%lf", &s) != 1) s = -1;
  pclose(p);
  return s;
}

static uint64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* json.load's time for the current file, measured once (< 0: not yet). */
static double py_seconds = -1;

/* One row; returns 0, or 1 when the import failed or read no event. */
static int report(const char *label, const char *path, uint64_t events, uint64_t json_bytes,
                  int with_python) {
  result r;
  memset(&r, 0, sizeof r);
  if (run_import(path, &r) || r.rc) {
    printf("%-18s import failed: %s\n", label, r.msg[0] ? r.msg : "the child died");
    return 1;
  }
  if (!r.model_events) {
    printf("%-18s imported no event: nothing measured\n", label);
    return 1;
  }
  if (!events) events = r.model_events;
  if (!json_bytes) json_bytes = file_size(path);
  double mb = (double)file_size(path) / 1e6;
  double json_mb = (double)json_bytes / 1e6;
  double rss_mb = (double)r.maxrss_kb * 1024 / 1e6;
  printf("%-18s %10" PRIu64 " %9.1f %8.3f %12.0f %9.1f %9.1f %8.2f", label, events, mb, r.seconds,
         (double)events / r.seconds, json_mb / r.seconds, rss_mb, rss_mb / json_mb);
  if (with_python) {
    if (py_seconds < 0) py_seconds = run_python(path);
    double py = py_seconds;
    if (py > 0) printf(" %9.3f %7.1fx", py, py / r.seconds);
    else printf(" %9s %8s", "n/a", "n/a");
  }
  printf("\n");
  fflush(stdout);
  return 0;
}

/* A plain JSON file: with TBE_IMPORT_THREADS set, the importer's own
 * choice only; else one thread, then threaded with 1, 2 and all CPUs'
 * parse workers (1, 2, 4, 8 and all CPUs, at most 16), then the default
 * choice of `tbexport import` ("default"), all against one json.load time. */
static int report_all(const char *label0, const char *path, uint64_t events, uint64_t json_bytes,
                      int with_python) {
  char label[96];
  if (getenv("TBE_IMPORT_THREADS")) return report(label0, path, events, json_bytes, with_python);
  int bad = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int all = cpus > 16 ? 16 : cpus < 1 ? 1 : (int)cpus;
  int ns[5] = {1, 2, 4, 8, all};
  tbe__chrome_json_threads = 0;
  snprintf(label, sizeof label, "%.60s 1thr", label0);
  bad |= report(label, path, events, json_bytes, with_python);
  for (int k = 0; k < 5; k++) {
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= ns[j] == ns[k];
    if (ns[k] > all || dup) continue;
    tbe__chrome_json_threads = 1;
    tbe__chrome_json_workers = ns[k];
    snprintf(label, sizeof label, "%.60s N=%d", label0, ns[k]);
    bad |= report(label, path, events, json_bytes, with_python);
  }
  /* what `tbexport import` does on this machine */
  tbe__chrome_json_threads = -1;
  tbe__chrome_json_workers = 0;
  snprintf(label, sizeof label, "%.60s default", label0);
  bad |= report(label, path, events, json_bytes, with_python);
  return bad;
}

int main(int argc, char **argv) {
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tbe-bench-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  uint64_t small = 250000;
  if (getenv("TBE_BENCH_EVENTS")) small = strtoull(getenv("TBE_BENCH_EVENTS"), NULL, 10);
  int large = getenv("TBE_BENCH_LARGE") && !strcmp(getenv("TBE_BENCH_LARGE"), "1");
  int py_large = getenv("TBE_BENCH_PYTHON_LARGE") && !strcmp(getenv("TBE_BENCH_PYTHON_LARGE"), "1");

  if (argc == 4 && !strcmp(argv[1], "--generate")) {
    /* bench_import --generate EVENTS OUT.json: writes the generated trace
     * (e.g. to profile the importer on it, or to compare with json.load by
     * hand); OUT.json.gz too when OUT ends in .gz (plain then goes to OUT
     * without .gz). */
    rmdir(dir);
    uint64_t n = strtoull(argv[2], NULL, 10);
    size_t l = strlen(argv[3]);
    int gz = l > 3 && !strcmp(argv[3] + l - 3, ".gz");
    char plain[4200];
    snprintf(plain, sizeof plain, "%.*s", (int)(gz ? l - 3 : l), argv[3]);
    uint64_t ev = generate(plain, gz ? argv[3] : NULL, n);
    if (!ev) {
      fprintf(stderr, "bench_import: cannot write %s: %s\n", argv[3], strerror(errno));
      return 1;
    }
    printf("%s: %" PRIu64 " events, %.1f MB\n", plain, ev, (double)file_size(plain) / 1e6);
    return 0;
  }
  printf("bench_import: Kineto-like Chrome JSON import (child process per case)\n");
  printf("MB/s and RSS/JSON are per uncompressed JSON byte; x json.load = Python's time / ours\n\n");
  printf("%-18s %10s %9s %8s %12s %9s %9s %8s %9s %8s\n", "case", "events", "file MB", "seconds",
         "events/s", "MB/s", "peak RSS", "RSS/JSON", "json.load", "ratio");

  if (argc > 1) {
    /* bench_import FILE...: each file's import (a failure fails the run) */
    int bad = 0;
    for (int i = 1; i < argc; i++) {
      const char *b = strrchr(argv[i], '/');
      py_seconds = -1;
      bad |= report_all(b ? b + 1 : argv[i], argv[i], 0, 0, 1);
    }
    rmdir(dir);
    return bad;
  }
  if (small < 1000) {
    fprintf(stderr, "bench_import: TBE_BENCH_EVENTS must be at least 1000\n");
    return 2;
  }
  struct {
    uint64_t n;
    int gz, python;
  } cases[2] = {{small, 1, 1}, {5000000, 0, 0}};
  int ncases = large ? 2 : 1;
  cases[1].python = py_large;
  int rc = 0;
  for (int i = 0; i < ncases; i++) {
    char path[4200], gzpath[4200];
    snprintf(path, sizeof path, "%s/trace%d.json", dir, i);
    snprintf(gzpath, sizeof gzpath, "%s/trace%d.json.gz", dir, i);
    fflush(stdout);
    double g0 = now();
    uint64_t ev = generate(path, cases[i].gz ? gzpath : NULL, cases[i].n);
    if (!ev) {
      fprintf(stderr, "bench_import: cannot write %s: %s\n", path, strerror(errno));
      rc = 1;
      break;
    }
    uint64_t bytes = file_size(path);
    fprintf(stderr, "(generated %" PRIu64 " events, %.1f MB in %.1f s)\n", ev, (double)bytes / 1e6,
            now() - g0);
    char label[64];
    py_seconds = -1;
    snprintf(label, sizeof label, "json %" PRIu64 "k", ev / 1000);
    rc |= report_all(label, path, ev, bytes, cases[i].python);
    if (cases[i].gz) {
      snprintf(label, sizeof label, "json.gz %" PRIu64 "k", ev / 1000);
      rc |= report(label, gzpath, ev, bytes, 0);
      unlink(gzpath);
    }
    unlink(path);
  }
  if (!large) printf("\n(5M-event case skipped: set TBE_BENCH_LARGE=1; ~1.5 GB of temporary disk)\n");
  rmdir(dir);
  return rc;
}
