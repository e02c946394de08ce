/* bench_export.c: speed of the outputs (Chrome JSON plain and gzip, XSpace)
 * on generated models, with baselines measured in the same run.
 *
 * The model is built in memory with the public model API and looks like a
 * PyTorch training loop: for every launch, a CPU operator (with an "Input
 * Dims" arg), a cudaLaunchKernel/cudaMemcpyAsync call with a correlation id,
 * and the kernel (80%) or copy (20%) on one of four streams; 60 distinct
 * long kernel names.
 *
 * Baselines, same machine, same run:
 *  - JSON: a straightforward exporter (one fprintf per event, timestamps as
 *    "%.3f" doubles): what a simple implementation costs.
 *  - gzip: zlib alone compressing our plain output at levels 1 and 6 (the
 *    floor for the compressed output, and why level 1 is used).
 *  - XSpace: protobuf-c's generic packer on the same XSpace (our file,
 *    unpacked, then packed again; the small model only).
 *  - PyTorch's export_chrome_trace: 426k events/s (250,076 events, 69.5 MB in
 *    0.587 s on the H200 host; figure from the issue, not measured here;
 *    scripts/bench_torch_export.py measures it side by side on that host).
 * usage: bench_export [SMALL_EVENTS [LARGE_EVENTS]]   (default 250000 5000000;
 * LARGE_EVENTS 0 skips the large model)
 * Rows: "-> /dev/null" is the formatting alone (the internal writer into
 * /dev/null, on 1 thread and on the default thread count): the exporter's
 * own speed.  "-> file" is tbe_export_chrome_json, what a user gets: the
 * files go under $TMPDIR (default /tmp) and are removed; on a slow disk the
 * disk dominates these rows (TMPDIR=/dev/shm takes it out).
 * TBE_EXPORT_THREADS=N sets the formatting threads (default: online CPUs,
 * at most 32). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "profiler/xplane.pb-c.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"
#include "trace/export/export_json.h"

#define PYTORCH_EVENTS_PER_S 426000.0

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

static long long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench_export: %s: %s\n", what, tbe_strerror(rc));
  exit(1);
}

static tbe_trace *build(size_t target) {
  tbe_trace *t;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) die("create", rc);
  uint32_t host, streams[4], dev;
  tbe_trace_track(t, TBE_TRACK_THREAD, 4242, 4242, -1, &host);
  for (int s = 0; s < 4; s++) tbe_trace_track(t, TBE_TRACK_STREAM, 4242, 7 + s, 0, &streams[s]);
  tbe_trace_device(t, 0, &dev);
  t->devices[dev].name = tbe_trace_str_id(t, "NVIDIA H200");
  t->devices[dev].sm_count = 132;
  tbe_str knames[60], opnames[12];
  char buf[256];
  for (int i = 0; i < 60; i++) {
    snprintf(buf, sizeof buf,
             "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
             "float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char*, %d>>(int)",
             i + 1);
    knames[i] = tbe_trace_str_id(t, buf);
  }
  for (int i = 0; i < 12; i++) {
    snprintf(buf, sizeof buf, "aten::op_%d", i);
    opnames[i] = tbe_trace_str_id(t, buf);
  }
  tbe_str launch = tbe_trace_str_id(t, "cudaLaunchKernel");
  tbe_str mcpy = tbe_trace_str_id(t, "cudaMemcpyAsync");
  tbe_str dims_key = tbe_trace_str_id(t, "Input Dims");
  tbe_str dims_val = tbe_trace_str_id(t, "[[1024], [], []]");
  tbe_str copy_name = tbe_trace_str_id(t, "Memcpy HtoD (Pinned -> Device)");
  int64_t ts = 1796205406099314589LL;
  uint64_t corr = 1;
  size_t groups = target / 3;
  unsigned rnd = 12345;
  for (size_t g = 0; g < groups; g++) {
    rnd = rnd * 1103515245u + 12345u;
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_CPU_OP;
    e.track = host;
    e.name = opnames[g % 12];
    e.start_ns = ts;
    e.dur_ns = 9000 + (rnd >> 20) % 2000;
    e.external_id = g + 1;
    tbe_arg arg = {dims_key, TBE_ARG_JSON, {.s = dims_val}};
    tbe_trace_add_event(t, &e, NULL, &arg, 1, NULL);
    int is_copy = (rnd >> 8) % 5 == 0;
    e.kind = TBE_EV_RUNTIME;
    e.name = is_copy ? mcpy : launch;
    e.start_ns = ts + 1000;
    e.dur_ns = 4000 + (rnd >> 12) % 1000;
    e.correlation = corr;
    tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL);
    e.track = streams[g % 4];
    e.start_ns = ts + 6000;
    e.dur_ns = 1000 + (rnd >> 4) % 5000;
    if (is_copy) {
      e.kind = TBE_EV_MEMCPY;
      e.name = copy_name;
      tbe_memcpy m;
      memset(&m, 0, sizeof m);
      m.bytes = 4096u << (g % 8);
      m.copy_kind = TBE_COPY_HTOD;
      m.src_kind = TBE_MEM_PINNED;
      m.dst_kind = TBE_MEM_DEVICE;
      m.src_device = -1;
      m.dst_device = 0;
      m.async = 1;
      m.context = 1;
      tbe_trace_add_event(t, &e, &m, NULL, 0, NULL);
    } else {
      e.kind = TBE_EV_KERNEL;
      e.name = knames[(rnd >> 16) % 60];
      tbe_kernel k;
      memset(&k, 0, sizeof k);
      k.grid[0] = 1 + (uint32_t)(g % 16);
      k.grid[1] = k.grid[2] = 1;
      k.block[0] = 128;
      k.block[1] = k.block[2] = 1;
      k.registers = 32;
      k.context = 1;
      k.queued_ns = 0;
      k.blocks_per_sm = (float)k.grid[0] / 132.0f;
      k.warps_per_sm = k.blocks_per_sm * 4;
      k.occupancy_pct = 100;
      tbe_trace_add_event(t, &e, &k, NULL, 0, NULL);
    }
    corr++;
    ts += 12000;
  }
  rc = tbe_trace_error(t);
  if (!rc) rc = tbe_trace_finish(t);
  if (rc) die("build", rc);
  return t;
}

/* The naive baseline: fprintf per event, double timestamps. */
static void naive_json(const tbe_trace *t, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) die("fopen", TBE_EIO);
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    const tbe_track *tr = &t->tracks[e->track];
    fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":%llu",
            i ? ",\n" : "", tbe_event_kind_name((tbe_event_kind)e->kind), tbe_trace_str(t, e->name),
            (long long)tr->pid, (long long)tr->tid, (double)e->start_ns / 1000.0,
            (double)e->dur_ns / 1000.0, (unsigned long long)e->correlation);
    const tbe_kernel *k = tbe_trace_kernel(t, e);
    if (k)
      fprintf(f, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"blocks per SM\":%g", k->grid[0],
              k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], (double)k->blocks_per_sm);
    fputs("}}", f);
  }
  fputs("\n]}\n", f);
  fclose(f);
}

static double gzip_file(const char *path, int level, long long *out_bytes) {
  /* returns wall seconds */
  FILE *f = fopen(path, "rb");
  if (!f) die("fopen", TBE_EIO);
  static unsigned char in[1 << 20], out[1 << 20];
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  long long total = 0;
  double t0 = now();
  size_t n;
  int flush;
  do {
    n = fread(in, 1, sizeof in, f);
    flush = n < sizeof in ? Z_FINISH : Z_NO_FLUSH;
    z.next_in = in;
    z.avail_in = (uInt)n;
    do {
      z.next_out = out;
      z.avail_out = sizeof out;
      deflate(&z, flush);
      total += (long long)(sizeof out - z.avail_out);
    } while (z.avail_out == 0);
  } while (flush != Z_FINISH);
  double dt = now() - t0;
  deflateEnd(&z);
  fclose(f);
  *out_bytes = total;
  return dt;
}

/* One table row: wall-clock rate, CPU-time rate (less sensitive to other
 * load on a shared machine), output MB/s and size, ratio to a baseline. */
static void row(const char *what, size_t events, double secs, double cpu, long long bytes,
                double base_eps) {
  double eps = (double)events / secs;
  if (bytes > 0)
    printf("  %-36s %8.3f s %7.2f M ev/s (cpu %7.2f) %8.1f MB/s %8.1f MB", what, secs, eps / 1e6,
           (double)events / cpu / 1e6, (double)bytes / secs / 1e6, (double)bytes / 1e6);
  else
    printf("  %-36s %8.3f s %7.2f M ev/s (cpu %7.2f) %8s      %8s   ", what, secs, eps / 1e6,
           (double)events / cpu / 1e6, "", "");
  if (base_eps > 0) printf("  x%.1f", eps / base_eps);
  printf("\n");
}

#define TIMED(dt, dc, stmt)  \
  do {                       \
    double w0_ = now();      \
    double c0_ = cpu_now();  \
    stmt;                    \
    dt = now() - w0_;        \
    dc = cpu_now() - c0_;    \
  } while (0)

static int threads;

static void run(size_t target, int with_baselines, const char *dir) {
  double dt, dc;
  tbe_trace *t;
  TIMED(dt, dc, t = build(target));
  printf("\nmodel: %zu events (%zu kernels, %zu memcpys), %zu strings; built in %.2f s; peak RSS %.0f MB\n",
         t->nevents, t->nkernels, t->nmemcpys, tbe_trace_nstrings(t), dt, peak_rss_mb());
  char plain[4200], gz[4200], xp[4200], naive[4200];
  snprintf(plain, sizeof plain, "%s/b.trace.json", dir);
  snprintf(gz, sizeof gz, "%s/b.trace.json.gz", dir);
  snprintf(xp, sizeof xp, "%s/b.xplane.pb", dir);
  snprintf(naive, sizeof naive, "%s/naive.json", dir);
  printf("  %-36s %10s %7.2f M ev/s\n", "reference: PyTorch export (issue)", "", PYTORCH_EVENTS_PER_S / 1e6);

  double naive_eps = 0;
  if (with_baselines) {
    TIMED(dt, dc, naive_json(t, naive));
    naive_eps = (double)t->nevents / dt;
    row("baseline: fprintf JSON", t->nevents, dt, dc, file_size(naive), PYTORCH_EVENTS_PER_S);
    unlink(naive);
  }
  int rc;
  /* Formatting alone: the same writer into /dev/null (no file system), on
   * one thread and on the default number of threads. */
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) die("open /dev/null", TBE_EIO);
  char label[96];
  TIMED(dt, dc, rc = tbe__json_write_fd(t, devnull, 0, 1, "b"));
  if (rc) die("json /dev/null", rc);
  row("JSON plain -> /dev/null, 1 thread", t->nevents, dt, dc, 0, PYTORCH_EVENTS_PER_S);
  TIMED(dt, dc, rc = tbe__json_write_fd(t, devnull, 0, 0, "b"));
  if (rc) die("json /dev/null", rc);
  snprintf(label, sizeof label, "JSON plain -> /dev/null, %d threads", threads);
  row(label, t->nevents, dt, dc, 0, PYTORCH_EVENTS_PER_S);
  close(devnull);
  /* What a user gets: tbe_export_chrome_json to a file under $TMPDIR
   * (atomic file: temporary name, then rename). */
  TIMED(dt, dc, rc = tbe_export_chrome_json(t, plain, 0, 1));
  if (rc) die("json", rc);
  snprintf(label, sizeof label, "JSON plain -> file, %d threads", threads);
  row(label, t->nevents, dt, dc, file_size(plain), PYTORCH_EVENTS_PER_S);
  if (naive_eps > 0) printf("  %-36s x%.1f vs the fprintf baseline (wall)\n", "", (double)t->nevents / dt / naive_eps);

  TIMED(dt, dc, rc = tbe_export_chrome_json(t, gz, 1, 1));
  if (rc) die("json gz", rc);
  snprintf(label, sizeof label, "JSON gzip -> file, %d threads", threads);
  row(label, t->nevents, dt, dc, file_size(gz), PYTORCH_EVENTS_PER_S);
  if (with_baselines) {
    long long zb;
    for (int level = 1; level <= 6; level += 5) {
      double c0 = cpu_now();
      double zt = gzip_file(plain, level, &zb);
      snprintf(label, sizeof label, "baseline: zlib alone, level %d", level);
      row(label, t->nevents, zt, cpu_now() - c0, zb, 0);
    }
  }
  unlink(plain);
  unlink(gz);

  TIMED(dt, dc, rc = tbe_export_xplane(t, xp, 1));
  if (rc) die("xplane", rc);
  double xeps = (double)t->nevents / dt;
  row("XSpace", t->nevents, dt, dc, file_size(xp), 0);
  if (with_baselines) {
    FILE *f = fopen(xp, "rb");
    long long n = file_size(xp);
    uint8_t *b = malloc((size_t)n);
    if (!f || !b || fread(b, 1, (size_t)n, f) != (size_t)n) die("read xplane", TBE_EIO);
    fclose(f);
    Tensorflow__Profiler__XSpace *xs = tensorflow__profiler__xspace__unpack(NULL, (size_t)n, b);
    if (!xs) die("unpack", TBE_ECORRUPT);
    size_t sz = 0;
    uint8_t *out = NULL;
    TIMED(dt, dc, sz = tensorflow__profiler__xspace__get_packed_size(xs); out = malloc(sz);
          tensorflow__profiler__xspace__pack(xs, out));
    row("baseline: protobuf-c pack (same msg)", t->nevents, dt, dc, (long long)sz, 0);
    printf("  %-36s x%.1f vs protobuf-c packing alone (wall)\n", "", xeps / ((double)t->nevents / dt));
    free(out);
    tensorflow__profiler__xspace__free_unpacked(xs, NULL);
    free(b);
  }
  unlink(xp);
  printf("  peak RSS after %zu events: %.0f MB (%.0f bytes/event incl. strings)\n", t->nevents,
         peak_rss_mb(), peak_rss_mb() * 1048576.0 / (double)t->nevents);
  tbe_trace_free(t);
}

/* A decimal count >= min into *out; 0 if `s` is anything else. */
static int parse_count(const char *s, size_t min, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || *s == '-' || v < min) return 0;
  *out = (size_t)v;
  return 1;
}

int main(int argc, char **argv) {
  const char *td = getenv("TMPDIR");
  size_t small = 250000, large = 5000000;
  /* Counts only: a path or a word is a mistake, not 0 events. */
  if (argc > 3 || (argc > 1 && !parse_count(argv[1], 1000, &small)) ||
      (argc > 2 && !parse_count(argv[2], 0, &large)) || (large && large < 1000)) {
    fprintf(stderr, "usage: bench_export [SMALL_EVENTS >= 1000 [LARGE_EVENTS: 0 or >= 1000]]\n");
    return 2;
  }
  /* Output files go to $TMPDIR (default /tmp): point it at a tmpfs such
   * as /dev/shm to measure the exporters without the disk. */
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/bench_export.XXXXXX", td && *td ? td : "/tmp");
  const char *dir = mkdtemp(tmpl);
  if (!dir) die("mkdtemp", TBE_EIO);
  const char *te = getenv("TBE_EXPORT_THREADS");
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  threads = te && atoi(te) > 0 ? atoi(te) : cpus < 1 ? 1 : cpus > 32 ? 32 : (int)cpus;
  if (threads > 32) threads = 32;
  printf("bench_export: rates are events per second of wall time (cpu: per CPU second, all\n"
         "threads); MB/s is output bytes; x = ratio to the baseline named on the line\n"
         "(PyTorch: 426k events/s, issue figure).  '-> /dev/null' rows time the formatting\n"
         "alone; '-> file' rows write %s/ (set TMPDIR; a slow disk dominates them).\n"
         "Formatting threads: %d (TBE_EXPORT_THREADS, else the online CPUs, at most 32).\n",
         td && *td ? td : "/tmp", threads);
  run(small, 1, dir);
  if (large) run(large, 0, dir);
  rmdir(dir);
  return 0;
}
