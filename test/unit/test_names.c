/* test_names.c: kernel names as people read them.
 *
 *   - the demangler (demangle.c) against its oracle, the c++filt binary of
 *     GNU binutils: every name of the corpus test/data/names/ (real kernel
 *     names from CUDA libraries and Nsight Systems exports), one c++filt
 *     process per file, and a list of edge cases; any difference fails and
 *     the first few are printed.  A missing c++filt fails: it is a test
 *     dependency (binutils comes with build-essential), not an option;
 *   - tbe_demangle's buffer API and libiberty's bound on long names;
 *   - the pass of tbe_trace_finish that renames mangled kernels and keeps
 *     the mangled text as the "mangled name" arg: one demangling per
 *     distinct name, idempotent, only kernels, the collector's spools
 *     converted through it, and the arg surviving a Chrome JSON and an
 *     XSpace round trip;
 *   - kernel tags of the run-summary events (export_events.c): readable,
 *     unique within a run, the same for a kernel in every run whatever the
 *     other kernels, never merged by the cut.
 *
 * What must never happen: a name printed differently from c++filt, a
 * kernel whose mangled name is lost, a second finish that changes a name,
 * two kernels under one tag. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "import/spool.h"
#include "events/spool.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "testutil.h"

#include "tbexport.h"

extern char **environ;

/* ---- the oracle ---- */

/* Splits `len` bytes at '\n' in place; returns the lines (a malloc'd
 * array of pointers into `data`) and their number in *n.  A final line
 * without '\n' counts. */
static char **split_lines(char *data, size_t len, size_t *n) {
  size_t cap = 16, k = 0;
  char **v = malloc(cap * sizeof *v);
  assert_non_null(v);
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && data[i] != '\n') continue;
    if (i == len && i == start) break;
    if (k == cap) {
      cap *= 2;
      v = realloc(v, cap * sizeof *v);
      assert_non_null(v);
    }
    if (i < len) data[i] = '\0';
    v[k++] = data + start;
    start = i + 1;
  }
  *n = k;
  return v;
}

/* Runs c++filt once with `input` as its standard input and returns its
 * whole output (malloc'd, NUL-terminated; length in *len). */
static char *run_cxxfilt(const char *input, size_t *len) {
  int out[2];
  assert_int_equal(pipe(out), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, input, O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, out[1]);
  char *argv[] = {"c++filt", NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "c++filt", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    fail_msg("c++filt, the demangler's oracle, cannot be run (%s): install binutils", strerror(rc));
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  assert_non_null(buf);
  for (;;) {
    if (n + 4096 > cap) {
      cap *= 2;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
    ssize_t r = read(out[0], buf + n, cap - n - 1);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(out[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("c++filt < %s failed (status %d): install binutils", input, status);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* tbe_demangle's text for `name` (malloc'd): the demangled form, or the
 * name itself when it returns -1. */
static char *ours(const char *name, int *rc) {
  int n = tbe_demangle(name, NULL, 0);
  *rc = n;
  if (n < 0) return strdup(name);
  char *b = malloc((size_t)n + 1);
  assert_non_null(b);
  assert_int_equal(tbe_demangle(name, b, (size_t)n + 1), n);
  assert_int_equal(strlen(b), (size_t)n);
  return b;
}

/* Compares every line of file `path` through tbe_demangle and c++filt.
 * Returns the number of differences (printing the first few through
 * *shown); adds the names to *names and the demangled ones to *dem. */
static size_t compare_file(const char *path, size_t *names, size_t *dem, int *shown) {
  size_t len, olen, n, on;
  char *data = (char *)tu_read_file(path, &len);
  assert_non_null(data);
  char *out = run_cxxfilt(path, &olen);
  char **in = split_lines(data, len, &n);
  char **want = split_lines(out, olen, &on);
  if (on != n) fail_msg("%s: %zu names but %zu lines from c++filt", path, n, on);
  size_t diffs = 0;
  for (size_t i = 0; i < n; i++) {
    int rc;
    char *got = ours(in[i], &rc);
    if (rc >= 0) (*dem)++;
    if (strcmp(got, want[i]) != 0) {
      diffs++;
      if ((*shown)++ < 5)
        printf("DIFF %s:%zu\n  name:    %s\n  ours:    %s\n  c++filt: %s\n", path, i + 1, in[i], got,
               want[i]);
    }
    free(got);
  }
  *names += n;
  free(in);
  free(want);
  free(data);
  free(out);
  return diffs;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_corpus(void **state) {
  (void)state;
  const char *dir = tu_data("names");
  DIR *d = opendir(dir);
  if (!d) fail_msg("%s: %s", dir, strerror(errno));
  char *files[256];
  size_t nfiles = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (l > 4 && strcmp(de->d_name + l - 4, ".txt") == 0 && nfiles < 256)
      files[nfiles++] = tu_join(dir, de->d_name);
  }
  closedir(d);
  qsort(files, nfiles, sizeof *files, cmp_str);
  size_t names = 0, dem = 0, diffs = 0;
  int shown = 0;
  for (size_t i = 0; i < nfiles; i++) {
    size_t before = names;
    diffs += compare_file(files[i], &names, &dem, &shown);
    assert_true(names > before); /* no empty file */
    free(files[i]);
  }
  printf("corpus: %zu names in %zu files, %zu demangled, %zu different from c++filt\n", names,
         nfiles, dem, diffs);
  assert_true(nfiles >= 2);
  assert_true(names >= 1000);
  /* The corpus holds names c++filt demangles: all of them must demangle. */
  assert_int_equal(dem, names);
  assert_int_equal(diffs, 0);
}

/* Names beyond the corpus: other manglings c++filt accepts (Rust, global
 * constructors, clones), what it refuses, and c++filt's verbose spellings. */
static const char *const edge[] = {
    "_ZN4core3fmt5write17h0123456789abcdefE",  /* legacy Rust: c++filt tries Rust first */
    "_RNvCs1234_7mycrate3foo",                 /* Rust v0 */
    "_GLOBAL__sub_I_kernel.cu",
    "_GLOBAL__I__Z3foov",
    "_GLOBAL__D_x",
    "__Z3foov", /* Mach-O spelling: not demangled on Linux */
    "_Z6kernelv.cold",
    "_Z6kernelv.constprop.0.isra.0",
    "_ZZ4mainE1x",
    "_ZZN2at6native4funcEvENKUlvE_clEv",
    "_ZN12_GLOBAL__N_18myKernelEv",
    "_ZN7cutlass6KernelI53cutlass_80_tensorop_s1688gemm_64x64_16x3_tn_align4EEvNT_6ParamsE",
    "_ZNSsC1Ev",
    "_Z1fSs", /* DMGL_VERBOSE: std::basic_string<…>, not std::string */
    "_ZNSt6vectorIiSaIiEE9push_backERKi",
    "_Z3fooIJifEEvDpT_",
    "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb",
    "_Z10add_kernelPfPKfi",
    "_Z1aIXadL_Z1bvEEEvv",
    "_Z",
    "_Z3fo",
    "_ZN3fooE_junk",
    "_Z1fS5_",
    "_Z1fT_",
    "_",
    "plain_name",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
    "$_Z3foov",
    "._Z3foov",
    "_Z3foov$",
};

static void test_edge_cases(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "edge.txt");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) fprintf(f, "%s\n", edge[i]);
  /* Deep nesting: libiberty stops at its recursion limit. */
  fputs("_Z1fI", f);
  for (int i = 0; i < 3000; i++) fputc('P', f);
  fputs("iEvv\n", f);
  /* libiberty's length guard: 1,024 bytes are demangled, 1,025 are not. */
  fprintf(f, "_Z1017%1017sv\n_Z1018%1018sv\n", "", "");
  assert_int_equal(fclose(f), 0);
  /* (the %s above wrote spaces: make them letters) */
  size_t len;
  char *data = (char *)tu_read_file(path, &len);
  for (size_t i = 0; i < len; i++)
    if (data[i] == ' ') data[i] = 'a';
  assert_int_equal(tu_write_file(path, data, len), 0);
  free(data);
  size_t names = 0, dem = 0;
  int shown = 0;
  assert_int_equal(compare_file(path, &names, &dem, &shown), 0);
  assert_int_equal(names, sizeof edge / sizeof edge[0] + 3);
  assert_true(dem >= 15);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* ---- the buffer API ---- */

static void test_api(void **state) {
  (void)state;
  const char *m = "_Z10add_kernelPfPKfi";
  const char *full = "add_kernel(float*, float const*, int)";
  char buf[64];
  assert_int_equal(tbe_demangle(m, buf, sizeof buf), (int)strlen(full));
  assert_string_equal(buf, full);
  /* Too small: the full length back, the start of the text, terminated. */
  assert_int_equal(tbe_demangle(m, buf, 8), (int)strlen(full));
  assert_string_equal(buf, "add_ker");
  /* No buffer: the length alone. */
  assert_int_equal(tbe_demangle(m, NULL, 0), (int)strlen(full));
  assert_int_equal(tbe_demangle(m, NULL, 5), -1);
  assert_int_equal(tbe_demangle(NULL, buf, sizeof buf), -1);
  assert_string_equal(buf, "");
  /* Not demangled: -1 and the input, truncated to the buffer. */
  assert_int_equal(tbe_demangle("plain_kernel_name", buf, 6), -1);
  assert_string_equal(buf, "plain");
  assert_int_equal(tbe_demangle("_Z3fo", buf, sizeof buf), -1);
  assert_string_equal(buf, "_Z3fo");

  /* The bound: 1,024 bytes of name are demangled, 1,025 are not. */
  char name[1100];
  snprintf(name, sizeof name, "_Z1017%01017dv", 0);
  for (size_t i = 6; i < 6 + 1017; i++) name[i] = 'k';
  assert_int_equal(strlen(name), 1024);
  assert_int_equal(tbe_demangle(name, NULL, 0), 1017 + 2);
  snprintf(name, sizeof name, "_Z1018%01018dv", 0);
  for (size_t i = 6; i < 6 + 1018; i++) name[i] = 'k';
  assert_int_equal(tbe_demangle(name, buf, sizeof buf), -1);
  assert_memory_equal(buf, name, sizeof buf - 1);
  /* c++filt's leading '.' and '$'. */
  assert_int_equal(tbe_demangle("._Z3foov", buf, sizeof buf), 6);
  assert_string_equal(buf, ".foo()");
  assert_int_equal(tbe_demangle("._Z3foov", buf, 4), 6);
  assert_string_equal(buf, ".fo");
  assert_int_equal(tbe_demangle("$_Z3foov", buf, sizeof buf), 5);
  assert_string_equal(buf, "foo()");
}

/* ---- the trace pass ---- */

#define GATHER_M "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb"
#define GATHER_D                                                                             \
  "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, " \
  "long, long, bool)"
#define ADD_M "_Z10add_kernelPfPKfi"
#define ADD_D "add_kernel(float*, float const*, int)"

static uint32_t add_ev(tbe_trace *t, uint32_t track, tbe_event_kind kind, const char *name,
                       int64_t start, const tbe_arg *args, size_t nargs) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = (uint8_t)kind;
  e.track = track;
  e.start_ns = start;
  e.dur_ns = 10;
  e.name = tbe_trace_str_id(t, name);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.grid[0] = k.grid[1] = k.grid[2] = k.block[0] = k.block[1] = k.block[2] = 1;
  k.queued_ns = -1;
  k.occupancy_pct = k.blocks_per_sm = k.warps_per_sm = -1;
  uint32_t idx;
  assert_int_equal(
      tbe_trace_add_event(t, &e, kind == TBE_EV_KERNEL ? &k : NULL, args, nargs, &idx), 0);
  return idx;
}

/* The arg `key` of event `e` as a string, or NULL. */
static const char *arg_str(const tbe_trace *t, const tbe_event *e, const char *key) {
  const char *found = NULL;
  for (uint32_t i = 0; i < e->nargs; i++) {
    const tbe_arg *a = &t->args[e->args + i];
    if (strcmp(tbe_trace_str(t, a->key), key) == 0) {
      assert_null(found); /* at most once */
      assert_int_equal(a->type, TBE_ARG_STR);
      found = tbe_trace_str(t, a->v.s);
    }
  }
  return found;
}

static const tbe_event *at_time(const tbe_trace *t, int64_t start, tbe_event_kind kind) {
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].start_ns == start && t->events[i].kind == kind) return &t->events[i];
  fail_msg("no event at %lld", (long long)start);
  return NULL;
}

/* A trace with mangled kernels (with and without args), a plain one, one
 * libiberty refuses, one already renamed, and a CPU op with a mangled
 * name.  Times are 1000 + 100 * i. */
static tbe_trace *names_trace(void) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t gpu, cpu;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &gpu), 0);
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_THREAD, 1, 1, -1, &cpu), 0);
  tbe_arg args[2] = {{.key = tbe_trace_str_id(t, "grid"), .type = TBE_ARG_INT, .v.i = 4},
                     {.key = tbe_trace_str_id(t, "note"), .type = TBE_ARG_STR,
                      .v.s = tbe_trace_str_id(t, "x")}};
  for (int i = 0; i < 3; i++) add_ev(t, gpu, TBE_EV_KERNEL, GATHER_M, 1000 + 100 * i, NULL, 0);
  add_ev(t, gpu, TBE_EV_KERNEL, GATHER_M, 1300, args, 2);
  add_ev(t, gpu, TBE_EV_KERNEL, ADD_M, 1400, args, 1);
  add_ev(t, gpu, TBE_EV_KERNEL, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas", 1500, NULL, 0);
  add_ev(t, gpu, TBE_EV_KERNEL, "_Z3fo", 1600, NULL, 0);
  tbe_arg kept = {.key = tbe_trace_str_id(t, "mangled name"), .type = TBE_ARG_STR,
                  .v.s = tbe_trace_str_id(t, "_Z6kernelv")};
  add_ev(t, gpu, TBE_EV_KERNEL, "kernel()", 1700, &kept, 1);
  add_ev(t, cpu, TBE_EV_CPU_OP, ADD_M, 1800, NULL, 0);
  return t;
}

static void check_names(const tbe_trace *t) {
  for (int i = 0; i < 4; i++) {
    const tbe_event *e = at_time(t, 1000 + 100 * i, TBE_EV_KERNEL);
    assert_string_equal(tbe_trace_str(t, e->name), GATHER_D);
    assert_string_equal(arg_str(t, e, "mangled name"), GATHER_M);
  }
  const tbe_event *e = at_time(t, 1300, TBE_EV_KERNEL);
  assert_int_equal(e->nargs, 3); /* its own two kept, in order, then the new one */
  assert_string_equal(tbe_trace_str(t, t->args[e->args].key), "grid");
  assert_int_equal(t->args[e->args].v.i, 4);
  assert_string_equal(arg_str(t, e, "note"), "x");
  e = at_time(t, 1400, TBE_EV_KERNEL);
  assert_string_equal(tbe_trace_str(t, e->name), ADD_D);
  assert_int_equal(e->nargs, 2);
  assert_string_equal(arg_str(t, e, "mangled name"), ADD_M);
  e = at_time(t, 1500, TBE_EV_KERNEL);
  assert_string_equal(tbe_trace_str(t, e->name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_cublas");
  assert_int_equal(e->nargs, 0);
  e = at_time(t, 1600, TBE_EV_KERNEL); /* refused: stays */
  assert_string_equal(tbe_trace_str(t, e->name), "_Z3fo");
  assert_int_equal(e->nargs, 0);
  e = at_time(t, 1700, TBE_EV_KERNEL); /* renamed before: left alone */
  assert_string_equal(tbe_trace_str(t, e->name), "kernel()");
  assert_string_equal(arg_str(t, e, "mangled name"), "_Z6kernelv");
  e = at_time(t, 1800, TBE_EV_CPU_OP); /* only kernels are renamed */
  assert_string_equal(tbe_trace_str(t, e->name), ADD_M);
  assert_int_equal(e->nargs, 0);
}

static void test_trace_pass(void **state) {
  (void)state;
  tbe_trace *t = names_trace();
  size_t nargs = t->nargs, nstr = tbe_trace_nstrings(t);
  assert_int_equal(tbe_trace_finish(t), 0);
  check_names(t);
  /* Once per distinct name: two new strings (the demangled names; "mangled
   * name" was there), and the four gather kernels without args share one
   * arg entry; the two with args got copies (2 + 1, 1 + 1). */
  assert_int_equal(tbe_trace_nstrings(t), nstr + 2);
  assert_int_equal(t->nargs, nargs + 1 + 3 + 2);
  assert_int_equal(at_time(t, 1000, TBE_EV_KERNEL)->args, at_time(t, 1200, TBE_EV_KERNEL)->args);

  /* Idempotent: a second finish changes nothing... */
  size_t ne = t->nevents;
  tbe_event *copy = malloc(ne * sizeof *copy);
  memcpy(copy, t->events, ne * sizeof *copy);
  nargs = t->nargs;
  nstr = tbe_trace_nstrings(t);
  assert_int_equal(tbe_trace_finish(t), 0);
  assert_memory_equal(copy, t->events, ne * sizeof *copy);
  assert_int_equal(t->nargs, nargs);
  /* ... and neither does a pass over the renamed events after more were
   * added (a finish after the trace grew runs the pass again). */
  add_ev(t, t->events[0].track, TBE_EV_KERNEL, ADD_M, 5000, NULL, 0);
  assert_int_equal(tbe_trace_finish(t), 0);
  check_names(t);
  const tbe_event *e = at_time(t, 5000, TBE_EV_KERNEL);
  assert_string_equal(tbe_trace_str(t, e->name), ADD_D);
  assert_string_equal(arg_str(t, e, "mangled name"), ADD_M);
  assert_int_equal(tbe_trace_nstrings(t), nstr); /* ADD_D was interned already */
  free(copy);
  tbe_trace_free(t);
}

/* Allocation failures anywhere in the pass: TBE_ENOMEM, nothing leaked. */
static void test_trace_pass_alloc(void **state) {
  (void)state;
  int succeeded = 0;
  for (long n = 0; n < 2000 && !succeeded; n++) {
    tu_failalloc f;
    tbe_allocator a = tu_failalloc_init(&f, n);
    tbe_trace *t = NULL;
    int rc = tbe_trace_create(&t, &a);
    if (rc == 0) {
      uint32_t gpu;
      rc = tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &gpu);
      const char *names[] = {GATHER_M, ADD_M, GATHER_M, "_Z3fo", ADD_M};
      for (int i = 0; i < 5 && !rc; i++) {
        tbe_event e;
        memset(&e, 0, sizeof e);
        e.kind = TBE_EV_KERNEL;
        e.track = gpu;
        e.start_ns = 100 * i;
        e.dur_ns = 10;
        if ((rc = tbe_trace_intern(t, names[i], strlen(names[i]), &e.name))) break;
        tbe_arg g = {.key = e.name, .type = TBE_ARG_INT, .v.i = i};
        rc = tbe_trace_add_event(t, &e, NULL, &g, (size_t)(i & 1), NULL);
      }
      if (!rc) rc = tbe_trace_finish(t);
      if (rc == 0) {
        succeeded = 1;
        assert_string_equal(tbe_trace_str(t, t->events[0].name), GATHER_D);
      } else {
        assert_int_equal(rc, TBE_ENOMEM);
      }
      tbe_trace_free(t);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
    }
    assert_int_equal(f.live, 0);
  }
  assert_true(succeeded);
}

/* The names and the arg through our own outputs and back: Chrome JSON and
 * XSpace write "mangled name" like any arg, the importers read it back, and
 * the pass leaves the result alone. */
static void test_round_trip(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  tbe_trace *t = names_trace();
  assert_int_equal(tbe_trace_finish(t), 0);
  const char *files[] = {"t.trace.json", "t.xplane.pb"};
  for (int k = 0; k < 2; k++) {
    char *path = tu_join(dir, files[k]);
    if (k == 0) assert_int_equal(tbe_export_chrome_json(t, path, 0, 0), 0);
    else assert_int_equal(tbe_export_xplane(t, path, 0), 0);
    tbe_trace *b;
    assert_int_equal(tbe_trace_create(&b, NULL), 0);
    tbe_import_error err;
    int rc = tbe_import_file(b, path, NULL, &err);
    if (rc) fail_msg("%s: %s", path, err.message);
    assert_int_equal(tbe_trace_finish(b), 0);
    size_t gather = 0, add = 0, other = 0;
    for (size_t i = 0; i < b->nevents; i++) {
      const tbe_event *e = &b->events[i];
      if (e->kind != TBE_EV_KERNEL) continue;
      const char *name = tbe_trace_str(b, e->name), *m = arg_str(b, e, "mangled name");
      if (strcmp(name, GATHER_D) == 0) {
        assert_non_null(m);
        assert_string_equal(m, GATHER_M);
        gather++;
      } else if (strcmp(name, ADD_D) == 0) {
        assert_non_null(m);
        assert_string_equal(m, ADD_M);
        add++;
      } else if (strcmp(name, "kernel()") == 0) {
        assert_non_null(m);
        assert_string_equal(m, "_Z6kernelv");
        other++;
      } else {
        assert_null(m);
      }
    }
    printf("%s: %zu gather, %zu add, %zu other\n", files[k], gather, add, other);
    assert_int_equal(gather, 4);
    assert_int_equal(add, 1);
    assert_int_equal(other, 1);
    tbe_trace_free(b);
    free(path);
  }
  tbe_trace_free(t);
  tu_rmrf(dir);
  free(dir);
}

/* The collector's path: a spool with CUPTI's mangled names converts into
 * kernels named as c++filt prints them, with the mangled text as the arg. */
static void test_spool_names(void **state) {
  (void)state;
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  char *dir = tu_mkdtemp();
  char *path = tu_join(dir, "42.spool");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  uint8_t head[TBE__SPOOL_HEADER];
  tbe__spool_header(head, 1700000000000000000LL);
  assert_int_equal(write(fd, head, sizeof head), (ssize_t)sizeof head);
  tbe__buf p;
  tbe__buf_init(&p, &al);
  tbe__sp_info info;
  memset(&info, 0, sizeof info);
  info.start_ns = 1700000000000000000LL;
  info.pid = 42;
  info.trace = 3;
  tbe__spool_item(&p, TBE__SP_INFO, &info, sizeof info);
  tbe__spool_str(&p, 1, GATHER_M, strlen(GATHER_M));
  tbe__spool_str(&p, 2, "triton_poi_fused_add_0", 22);
  for (int i = 0; i < 3; i++) {
    tbe__sp_kernel k;
    memset(&k, 0, sizeof k);
    k.start = info.start_ns + 100 * (i + 1);
    k.end = k.start + 50;
    k.stream = 7;
    k.name = i == 2 ? 2 : 1;
    k.grid[0] = k.block[0] = 1;
    tbe__spool_item(&p, TBE__SP_KERNEL, &k, sizeof k);
  }
  tbe__sp_end end = {info.start_ns + 1000};
  tbe__spool_item(&p, TBE__SP_END, &end, sizeof end);
  assert_int_equal(tbe__buf_error(&p), 0);
  assert_int_equal(tbe__spool_write_frame(fd, p.data, p.len), 0);
  assert_int_equal(close(fd), 0);
  tbe__buf_deinit(&p);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info ci;
  assert_int_equal(tbe__spool_file_to_trace(path, NULL, t, &ci), 0);
  size_t gather = 0, triton = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL) continue;
    const char *name = tbe_trace_str(t, e->name);
    if (strcmp(name, GATHER_D) == 0) {
      assert_string_equal(arg_str(t, e, "mangled name"), GATHER_M);
      gather++;
    } else {
      assert_string_equal(name, "triton_poi_fused_add_0");
      assert_null(arg_str(t, e, "mangled name"));
      triton++;
    }
  }
  assert_int_equal(gather, 2);
  assert_int_equal(triton, 1);
  tbe_trace_free(t);
  free(path);
  tu_rmrf(dir);
  free(dir);
}

/* ---- kernel tags ---- */

/* Kernels whose short forms collide in every way but their full names: the
 * cut (elementwise_kernel<…> instantiations that differ past 100 bytes),
 * namespaces, '*' against '&', overloads; plus a plain name and one with a
 * space. */
static const char *const tag_kernels[] = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_cublas",
    "void a::k<int>(int*)",
    "void b::k<int>(int*)",
    "void k<int*>(int)",
    "void k<int&>(int)",
    "f(int)",
    "f(float)",
    "my kernel",
};
#define ELEMENTWISE                                                                         \
  "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::" \
  "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::"   \
  "TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, at::native::"            \
  "binary_internal::MulFunctor<float> > const&)::{lambda(int)#%d}>(int, float)"
#define NELEM 12

static char *kernel_name(int i) {
  static char buf[NELEM + 8][600];
  if (i < 8) return (char *)tag_kernels[i];
  snprintf(buf[i], sizeof buf[i], ELEMENTWISE, i);
  return buf[i];
}

/* A run with kernels `which` (indexes into kernel_name), kernel i lasting
 * 1000 * (i + 1) ns. */
static tbe_trace *tag_trace(const int *which, int n) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  uint32_t gpu;
  assert_int_equal(tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &gpu), 0);
  int64_t at = 1000000;
  for (int j = 0; j < n; j++) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.kind = TBE_EV_KERNEL;
    e.track = gpu;
    e.start_ns = at;
    e.dur_ns = 1000 * (which[j] + 1);
    at += e.dur_ns + 10;
    e.name = tbe_trace_str_id(t, kernel_name(which[j]));
    assert_int_equal(tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL), 0);
  }
  assert_int_equal(tbe_trace_finish(t), 0);
  return t;
}

typedef struct tagval {
  char tag[256];
  double value;
} tagval;

/* Exports the run's events and reads back the "<prefix>…" scalar tags. */
static int read_tags(const char *dir, const char *prefix, tagval *out, int max) {
  tbe_reader *r;
  assert_int_equal(tbe_reader_open(&r, dir, 0, NULL), 0);
  const tbe_tb_event *ev;
  int n = 0, rc;
  while ((rc = tbe_reader_next(r, &ev)) == 1) {
    if (ev->kind != TBE_TB_SUMMARY) continue;
    for (size_t i = 0; i < ev->nvalues; i++) {
      const tbe_summary_value *v = &ev->values[i];
      if (strncmp(v->tag, prefix, strlen(prefix)) != 0 || v->type != TBE_VALUE_SIMPLE) continue;
      assert_true(n < max);
      snprintf(out[n].tag, sizeof out[n].tag, "%s", v->tag + strlen(prefix));
      out[n].value = v->simple_value;
      n++;
    }
  }
  assert_int_equal(rc, 0);
  tbe_reader_close(r);
  return n;
}

static int run_tags(const char *logdir, const char *run, const tbe_trace *t, tagval *out, int max) {
  tbe_export_options o;
  tbe_export_options_init(&o);
  o.logdir = logdir;
  o.run = run;
  o.host = "h";
  o.outputs = TBE_OUT_EVENTS;
  assert_int_equal(tbe_export_run(t, &o), 0);
  char *dir = tu_join(logdir, run);
  int n = read_tags(dir, "kernels/", out, max);
  free(dir);
  return n;
}

/* The tag a run gave the kernel of total time `ms`. */
static const char *tag_of(const tagval *v, int n, double ms) {
  for (int i = 0; i < n; i++)
    if (v[i].value > ms - 1e-9 && v[i].value < ms + 1e-9) return v[i].tag;
  fail_msg("no tag with %g ms", ms);
  return NULL;
}

static void test_tags(void **state) {
  (void)state;
  char *logdir = tu_mkdtemp();
  int all[8 + NELEM];
  for (int i = 0; i < 8 + NELEM; i++) all[i] = i;
  tbe_trace *t = tag_trace(all, 8 + NELEM);
  static tagval a[64], b[64];
  int na = run_tags(logdir, "all", t, a, 64);
  assert_int_equal(na, 20);
  for (int i = 0; i < na; i++) {
    /* Distinct, from the allowed characters, at most 100 bytes, never the
     * within-run fallback suffix. */
    for (int j = 0; j < i; j++) assert_string_not_equal(a[i].tag, a[j].tag);
    size_t l = strlen(a[i].tag);
    assert_true(l > 0 && l <= 100);
    assert_int_equal(strspn(a[i].tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_.:-"),
                     l);
    /* The hash, when there is one, ends the tag: ".xxxxxxxx". */
    if (l >= 9 && a[i].tag[l - 9] == '.')
      assert_int_equal(strspn(a[i].tag + l - 8, "0123456789abcdef"), 8);
    else
      assert_string_equal(a[i].tag, kernel_name(0));
  }
  /* A name that is a tag already is its own tag; the others are their
   * short form and the hash of the full name (FNV-1a, low 32 bits,
   * computed independently of the code under test). */
  assert_string_equal(tag_of(a, na, 0.001),
                      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
                      "cublas");
  assert_string_equal(tag_of(a, na, 0.002), "k_int.3dd0ccb4");
  assert_string_equal(tag_of(a, na, 0.008), "my_kernel.d69dcd22");
  assert_int_equal(strncmp(tag_of(a, na, 0.009), "elementwise_kernel_128_2_gpu_kernel_impl_nocast_", 48),
                   0);

  /* Stable: a run with some of the kernels, in another order, gives each
   * the same tag. */
  int some[] = {19, 3, 9, 0, 4};
  tbe_trace *t2 = tag_trace(some, 5);
  int nb = run_tags(logdir, "some", t2, b, 64);
  assert_int_equal(nb, 5);
  for (int j = 0; j < 5; j++) {
    double ms = 0.001 * (some[j] + 1);
    assert_string_equal(tag_of(b, nb, ms), tag_of(a, na, ms));
  }

  /* The diff writes the same components under diff/<base>/kernels/. */
  tbe_analysis *aa, *ab;
  assert_int_equal(tbe_analysis_create(&aa, t2, NULL), 0);
  assert_int_equal(tbe_analysis_create(&ab, t, NULL), 0);
  tbe_diff *d;
  assert_int_equal(tbe_diff_create(&d, aa, ab, NULL), 0);
  char *run = tu_join(logdir, "diffrun");
  assert_int_equal(tbe_diff_write_events(d, run, "some", "all", 0, "h", NULL, 0), 0);
  static tagval c[64];
  int nc = read_tags(run, "diff/some/kernels/", c, 64);
  assert_int_equal(nc, 5);
  for (int i = 0; i < nc; i++) {
    int found = 0;
    for (int j = 0; j < nb; j++) found |= strcmp(c[i].tag, b[j].tag) == 0;
    assert_true(found);
  }
  free(run);

  /* The two examples of the documentation (README, export_events.c). */
  tbe_trace *t3;
  assert_int_equal(tbe_trace_create(&t3, NULL), 0);
  uint32_t gpu;
  assert_int_equal(tbe_trace_track(t3, TBE_TRACK_STREAM, 1, 7, 0, &gpu), 0);
  add_ev(t3, gpu, TBE_EV_KERNEL, GATHER_M, 1000, NULL, 0);
  add_ev(t3, gpu, TBE_EV_KERNEL,
         "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
         3000, NULL, 0);
  assert_int_equal(tbe_trace_finish(t3), 0);
  int n3 = run_tags(logdir, "docs", t3, c, 64);
  assert_int_equal(n3, 2);
  /* (equal times: by name) */
  assert_string_equal(c[0].tag, "vectorized_elementwise_kernel_4_FillFunctor_float_array_char_1ul.1f392d55");
  assert_string_equal(c[1].tag, "vectorized_gather_kernel_16_long.6db173f3");
  tbe_trace_free(t3);
  tbe_diff_free(d);
  tbe_analysis_free(aa);
  tbe_analysis_free(ab);
  tbe_trace_free(t2);
  tbe_trace_free(t);
  tu_rmrf(logdir);
  free(logdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus),     cmocka_unit_test(test_edge_cases),
      cmocka_unit_test(test_api),        cmocka_unit_test(test_trace_pass),
      cmocka_unit_test(test_trace_pass_alloc), cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_spool_names),
      cmocka_unit_test(test_tags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
