/* stress_collect_crash.c: `tbexport -- CMD` when CMD crashes or is killed,
 * end to end through the injection library, with a fake libcupti
 * (collect_fake_libcupti.c, named by TBEXPORT_CUPTI_LIB), no GPU needed.
 *
 * usage: stress_collect_crash TBEXPORT FAKE_LIBCUPTI
 *
 * For each way of ending (a normal exit, SIGSEGV from a real fault,
 * abort(), SIGTERM, SIGKILL once a periodic flush has spooled the
 * buffers) it runs
 *     tbexport --logdir D --run WAY --host h --flush-period 50 -- SELF --child WAY
 * where the child, like a program the CUDA driver injects, calls the
 * injection library's InitializeInjection, launches N "kernels" through
 * the fake CUPTI on three threads (each keeps a partly filled buffer of its
 * own), then ends that way.  Checks: tbexport exits with the child's status
 * (0, 139, 134, 143, 137); the run's Chrome trace holds every one of the N
 * kernels; it says the capture ended early (except after the normal exit)
 * and, for the caught signals, which signal arrived.  Built wherever the
 * collector is, with or without the CUDA toolkit (collect/cupti_abi.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>

#include "stress_util.h"
#include "tbexport.h"
#include "tbexport/import.h"

#define N 600 /* kernels per run: 200 on each of three threads */

static int (*launch)(uint32_t corr);

static void *launch_third(void *arg) {
  uint32_t first = (uint32_t)(uintptr_t)arg;
  for (uint32_t i = 0; i < N / 3; i++) launch(first + i);
  return NULL;
}

static void set_default(int sig) {
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  sigaction(sig, &d, NULL);
}

/* The profiled program.  Exit statuses 60-69 say what went wrong. */
static int child(const char *way) {
  /* The sanitizers' own SIGSEGV handlers would turn the fault into a
   * report and exit 1: start from the default, as an ordinary program. */
  set_default(SIGSEGV);
  set_default(SIGABRT);
  const char *inj = getenv("CUDA_INJECTION64_PATH"), *fake = getenv("TBEXPORT_CUPTI_LIB");
  if (!inj || !fake) return 60;
  void *h = dlopen(inj, RTLD_NOW | RTLD_LOCAL);
  if (!h) return 61;
  int (*init)(void);
  void *sym = dlsym(h, "InitializeInjection");
  memcpy(&init, &sym, sizeof sym);
  if (!init || init() != 1) return 62;
  void *fh = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
  sym = fh ? dlsym(fh, "fake_cupti_launch") : NULL;
  if (!sym) return 63; /* the collector did not load the fake */
  memcpy(&launch, &sym, sizeof sym);
  pthread_t a, b;
  if (pthread_create(&a, NULL, launch_third, (void *)(uintptr_t)1) ||
      pthread_create(&b, NULL, launch_third, (void *)(uintptr_t)(1 + N / 3)))
    return 64;
  launch_third((void *)(uintptr_t)(1 + 2 * N / 3));
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  if (strcmp(way, "exit") == 0) return 0;
  if (strcmp(way, "segv") == 0) {
    volatile int *guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard != MAP_FAILED) *guard = 1;
    return 65;
  }
  if (strcmp(way, "abort") == 0) abort();
  if (strcmp(way, "term") == 0) {
    kill(getpid(), SIGTERM); /* as from another process */
    st_sleep_us(5000000);
    return 66;
  }
  if (strcmp(way, "kill") == 0) {
    /* Until a periodic flush (every 50 ms) has spooled the buffers: the
     * spool grew since the launches and then stayed the same for 200 ms
     * (10 s at most). */
    char spool[4200];
    snprintf(spool, sizeof spool, "%s/%ld.spool", getenv("TBEXPORT_SPOOL_DIR"), (long)getpid());
    struct stat st;
    off_t first = stat(spool, &st) == 0 ? st.st_size : 0, last = first;
    for (int i = 0, still = 0; i < 1000 && still < 20; i++) {
      st_sleep_us(10000);
      off_t now = stat(spool, &st) == 0 ? st.st_size : 0;
      still = now > first && now == last ? still + 1 : 0;
      last = now;
    }
    kill(getpid(), SIGKILL);
    st_sleep_us(5000000);
    return 67;
  }
  return 69;
}

/* The decompressed text of a .gz file (malloc'd), or NULL. */
static char *gunzip(const char *path) {
  gzFile g = gzopen(path, "rb");
  if (!g) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap + 1);
  int r;
  while (s && (r = gzread(g, s + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)r;
    if (n == cap) {
      char *t = realloc(s, cap * 2 + 1);
      if (!t) {
        free(s);
        s = NULL;
        break;
      }
      s = t;
      cap *= 2;
    }
  }
  gzclose(g);
  if (s) s[n] = '\0';
  return s;
}

typedef struct way {
  const char *name;
  int status;         /* tbexport's exit status */
  const char *signal; /* what the run must say arrived, or NULL */
} way;

static void run_way(const char *tb, const char *self, const char *dir, const way *w) {
  char ld[4200];
  snprintf(ld, sizeof ld, "%s/ld", dir);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    st_fail("fork: %s", strerror(errno));
    return;
  }
  if (pid == 0) {
    execl(tb, tb, "--logdir", ld, "--run", w->name, "--host", "h", "--flush-period", "50",
          "--quiet", "--", self, "--child", w->name, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != w->status) {
    st_fail("%s: tbexport exited with %d, want %d", w->name, code, w->status);
    return;
  }
  char path[4400];
  snprintf(path, sizeof path, "%s/plugins/profile/%s/h.trace.json.gz", ld, w->name);
  tbe_trace *t;
  if (tbe_trace_create(&t, NULL) != 0) exit(2);
  tbe_import_error err;
  int rc = tbe_import_file(t, path, NULL, &err);
  size_t kernels = 0, bad = 0;
  if (rc) {
    st_fail("%s: cannot read the run: %s", w->name, err.message);
  } else {
    uint8_t seen[N + 1];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < t->nevents; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind != TBE_EV_KERNEL) continue;
      if (e->correlation < 1 || e->correlation > N || seen[e->correlation]++) bad++;
      kernels++;
    }
    if (kernels != N || bad)
      st_fail("%s: the run holds %zu kernels (%zu unknown or repeated), want %d", w->name,
              kernels, bad, N);
  }
  tbe_trace_free(t);
  char *json = gunzip(path);
  if (!json) {
    st_fail("%s: cannot read %s", w->name, path);
    return;
  }
  int early = strstr(json, "ended early") != NULL;
  if (early != (w->status != 0))
    st_fail("%s: the run %s the capture ended early", w->name, early ? "says" : "does not say");
  if (w->signal && !strstr(json, w->signal))
    st_fail("%s: the run does not say that %s arrived", w->name, w->signal);
  free(json);
  printf("%-6s tbexport exited %3d; the run holds %zu of %d kernels%s\n", w->name, code, kernels,
         N, early ? ", ended early" : "");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(argv[2]);
  if (argc != 3) {
    fprintf(stderr, "usage: stress_collect_crash TBEXPORT FAKE_LIBCUPTI\n");
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';
  char *fake = realpath(argv[2], NULL);
  if (!fake) {
    perror(argv[2]);
    return 2;
  }
  setenv("TBEXPORT_CUPTI_LIB", fake, 1);
  char *dir = st_mkdtemp("tbe-collect-crash");
  static const way ways[] = {
      {"exit", 0, NULL},
      {"segv", 128 + SIGSEGV, "signal 11 (SIGSEGV)"},
      {"abort", 128 + SIGABRT, "(SIGABRT)"},
      {"term", 128 + SIGTERM, "signal 15 (SIGTERM)"},
      {"kill", 128 + SIGKILL, NULL},
  };
  for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) run_way(argv[1], self, dir, &ways[i]);
  printf("failures: %lu\n", st_failures);
  st_rmtree(dir);
  free(dir);
  free(fake);
  return st_failures ? 1 : 0;
}
