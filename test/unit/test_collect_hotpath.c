/* test_collect_hotpath.c: what the collector does on the program's own
 * launching thread (issue 31's audit), counted, against the fake CUPTI
 * (fake_cupti.h), no GPU.
 *
 * A launch of the fake is CUPTI's work on the launching thread: its API
 * and kernel records go into the thread's activity buffer, and a full
 * buffer is handed back and a new one asked for there (buffer_completed,
 * buffer_requested: the collector's code on the program's thread), with
 * PM sampling on (its context callback came before the launches), and
 * the launch inside an NVTX range (PyTorch's emit_nvtx: a push and a pop
 * through the collector's NVTX handlers, nvtxhook.c).  This
 * file replaces pthread_mutex_lock, malloc, calloc, realloc, getpid,
 * sem_post, write and madvise with counters of the calls made on the
 * counted thread, outside the fake's own work (its per-thread lock), and
 * asserts, for 2,000 and 40,000 launches:
 *   - no allocation: the same count (none) for both;
 *   - the locks, getpid and sem_post calls bounded by the buffers: at
 *     most two locks, two getpid and one sem_post per activity buffer and
 *     one lock per NVTX block, none per launch (the counts grow with the
 *     buffers, 60 times fewer than the launches here, never with the
 *     launches);
 *   - no write or madvise (the spool and recycling are the background
 *     thread's).
 * A counting property, not a speed.  Sanitizer builds (which replace
 * these functions themselves) run the launches without the counters:
 * ThreadSanitizer then checks the hot path's races. */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "tbexport.h"
#include "testutil.h"

#include "collect/collector.h"
#include "collect/nvtxhook.h"
#include "fake_cupti.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HP_COUNT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HP_COUNT 0
#endif
#endif
#ifndef HP_COUNT
#define HP_COUNT 1
#endif

#define T0 1700000000000000000ull

/* ---- the counters (the counted thread's calls) ---- */

enum { C_LOCK, C_ALLOC, C_GETPID, C_SEMPOST, C_WRITE, C_MADVISE, C_N };
static __thread int counting;
static __thread unsigned long counts[C_N];

#if HP_COUNT
static int fake_lock(const pthread_mutex_t *m) {
  return (const void *)m >= (const void *)&tf.th[0] &&
         (const void *)m < (const void *)&tf.th[TF_MAX_THREADS];
}

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t k);
extern void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n) {
  if (counting) counts[C_ALLOC]++;
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t k) {
  if (counting) counts[C_ALLOC]++;
  return __libc_calloc(n, k);
}
void *realloc(void *p, size_t n) {
  if (counting) counts[C_ALLOC]++;
  return __libc_realloc(p, n);
}

typedef int (*lock_fn)(pthread_mutex_t *);
typedef pid_t (*getpid_fn)(void);
typedef int (*sem_fn)(sem_t *);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*madvise_fn)(void *, size_t, int);

/* The real function named, found once (dlsym may allocate: not counted). */
#define REAL(type, name)               \
  static type real_;                   \
  if (!real_) {                        \
    int was_ = counting;               \
    counting = 0;                      \
    void *p_ = dlsym(RTLD_NEXT, name); \
    memcpy(&real_, &p_, sizeof p_);    \
    counting = was_;                   \
  }

int pthread_mutex_lock(pthread_mutex_t *m) {
  REAL(lock_fn, "pthread_mutex_lock");
  if (counting && !fake_lock(m)) counts[C_LOCK]++;
  return real_(m);
}
pid_t getpid(void) {
  REAL(getpid_fn, "getpid");
  if (counting) counts[C_GETPID]++;
  return real_();
}
int sem_post(sem_t *s) {
  REAL(sem_fn, "sem_post");
  if (counting) counts[C_SEMPOST]++;
  return real_(s);
}
ssize_t write(int fd, const void *b, size_t n) {
  REAL(write_fn, "write");
  if (counting) counts[C_WRITE]++;
  return real_(fd, b, n);
}
int madvise(void *a, size_t n, int advice) {
  REAL(madvise_fn, "madvise");
  if (counting) counts[C_MADVISE]++;
  return real_(a, n, advice);
}
#endif

/* ---- the fake ---- */

static CUptiResult f_ok_kind(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
static CUptiResult f_attr(CUpti_ActivityAttribute a, size_t *size, void *v) {
  (void)a;
  (void)size;
  (void)v;
  return CUPTI_SUCCESS;
}
static CUptiResult f_cbname(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  (void)d;
  (void)cbid;
  *name = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}
static CUptiResult f_ts(uint64_t *ts) {
  *ts = T0;
  return CUPTI_SUCCESS;
}

/* ---- a fake NVTX copy (as test_nvtx_hook.c's): its slots ---- */

static tbe__nvtx_fn core_slots[TBE__NVTX_CORE_SIZE], core2_slots[TBE__NVTX_CORE2_SIZE];
static tbe__nvtx_fn *core_table[TBE__NVTX_CORE_SIZE], *core2_table[TBE__NVTX_CORE2_SIZE];
static void stub(void) {}
static int get_module(int module, tbe__nvtx_table *out, unsigned *size) {
  if (module == TBE__NVTX_MODULE_CORE) {
    *out = core_table;
    *size = TBE__NVTX_CORE_SIZE;
    return 1;
  }
  if (module == TBE__NVTX_MODULE_CORE2) {
    *out = core2_table;
    *size = TBE__NVTX_CORE2_SIZE;
    return 1;
  }
  return 0;
}
static void set_version(uint32_t v) { (void)v; }
static const tbe__nvtx_callbacks callbacks = {sizeof(tbe__nvtx_callbacks), get_module};
static const tbe__nvtx_version_info vinfo = {sizeof(tbe__nvtx_version_info), 3, 0, set_version};
static const void *get_table(uint32_t id) {
  if (id == TBE__NVTX_ETID_CALLBACKS) return &callbacks;
  if (id == TBE__NVTX_ETID_VERSIONINFO) return &vinfo;
  return NULL;
}
static void nvtx_copy(void) {
  for (unsigned i = 0; i < TBE__NVTX_CORE_SIZE; i++) {
    core_slots[i] = stub;
    core_table[i] = i ? &core_slots[i] : NULL;
  }
  for (unsigned i = 0; i < TBE__NVTX_CORE2_SIZE; i++) {
    core2_slots[i] = stub;
    core2_table[i] = i ? &core2_slots[i] : NULL;
  }
  assert_int_equal(tbe__nvtx_attach(get_table, NULL), 1);
}

/* A launch as CUPTI records it on the launching thread: the runtime
 * call's record and the kernel's, inside an operator's NVTX range. */
static void launch(uint32_t corr) {
  tbe__nvtx_push_a_fn push =
      (tbe__nvtx_push_a_fn)(void (*)(void))core_slots[TBE__NVTX_CORE_RangePushA];
  tbe__nvtx_pop_fn pop = (tbe__nvtx_pop_fn)(void (*)(void))core_slots[TBE__NVTX_CORE_RangePop];
  push("aten::add, seq = 7, op_id = 9, sizes = [[4, 8], [4, 8]], input_op_ids = [(1,0), (2,0)]");
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 211;
  a.start = T0 + corr * 1000ull;
  a.end = a.start + 300;
  a.correlationId = corr;
  tf_emit(&a, sizeof a);
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = a.start + 500;
  k.end = k.start + 400;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = corr;
  k.name = "k_tiny";
  tf_emit(&k, sizeof k);
  pop();
}

typedef struct run {
  uint32_t launches;
  unsigned long counts[C_N];
  size_t buffers;
  uint64_t nvtx_records, nvtx_dropped;
} run;

static void *launcher(void *arg) {
  run *r = arg;
  tfm_context_created(0); /* PM sampling's callback: set-up, before the count */
  launch(1);              /* the thread's first buffer */
  size_t before = atomic_load(&tf.requests);
  counting = 1;
  for (uint32_t i = 2; i <= r->launches + 1; i++) launch(i);
  counting = 0;
  r->buffers = atomic_load(&tf.requests) - before;
  memcpy(r->counts, counts, sizeof counts);
  return NULL;
}

static void one_run(run *r, const char *dir) {
  tf_reset();
  tfm_reset();
  tbe__cupti_api api;
  memset(&api, 0, sizeof api);
  api.activity_enable = f_ok_kind;
  api.activity_disable = f_ok_kind;
  api.register_callbacks = tf_register;
  api.get_next_record = tf_next_record;
  api.get_num_dropped = tf_get_num_dropped;
  api.flush_all = tf_flush;
  api.set_attribute = f_attr;
  api.get_callback_name = f_cbname;
  api.get_timestamp = f_ts;
  tfm_fill(&api.m);
  char *spool = tu_join(dir, "hot.spool");
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA | TBE_TRACE_NVTX;
  c.nvtx_hook = 1;
  c.spool_path = spool;
  c.buffer_size = 16384; /* ~60 launches a buffer */
  c.gpu_metrics_hz = 1000;
  assert_int_equal(tbe__collector_start(&api, &c), 0);
  nvtx_copy();
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, launcher, r), 0);
  pthread_join(th, NULL);
  assert_int_equal(tbe__collector_stop(NULL), 0);
  tbe__sp_nvtx_stats ns; /* the decoder's counts, final after the stop */
  tbe__nvtx_stats(&ns);
  assert_int_equal(atomic_load(&tf.dropped_total), 0); /* every record kept */
  r->nvtx_records = ns.records;
  r->nvtx_dropped = ns.dropped;
  unlink(spool);
  free(spool);
}

static void test_launching_thread(void **state) {
  (void)state;
  char *dir = tu_mkdtemp();
  run a = {2000, {0}, 0, 0, 0}, b = {40000, {0}, 0, 0, 0};
  one_run(&a, dir);
  one_run(&b, dir);
  tu_rmrf(dir);
  free(dir);
  assert_true(a.buffers > 10);
  assert_true(b.buffers > 15 * a.buffers);
  /* the NVTX calls went through the collector's handlers */
  assert_true(b.nvtx_records >= 2 * 40000);
  assert_int_equal(b.nvtx_dropped, 0);
  if (!HP_COUNT) return; /* sanitizers: the launches ran, uncounted */
  const run *rs[2] = {&a, &b};
  for (int i = 0; i < 2; i++) {
    const run *r = rs[i];
    printf(
        "%u launches, %zu buffers: %lu locks, %lu allocations, %lu getpid, %lu sem_post, "
        "%lu write, %lu madvise\n",
        r->launches, r->buffers, r->counts[C_LOCK], r->counts[C_ALLOC], r->counts[C_GETPID],
        r->counts[C_SEMPOST], r->counts[C_WRITE], r->counts[C_MADVISE]);
    /* an NVTX block (64 KiB) holds over 400 of these calls */
    assert_true(r->counts[C_LOCK] <= 2 * r->buffers + 2 * r->launches / 400 + 2);
    assert_true(r->counts[C_GETPID] <= 2 * r->buffers);
    assert_true(r->counts[C_SEMPOST] <= r->buffers);
    assert_int_equal(r->counts[C_WRITE], 0);
    assert_int_equal(r->counts[C_MADVISE], 0);
  }
  assert_int_equal(a.counts[C_ALLOC], 0);
  assert_int_equal(b.counts[C_ALLOC], 0);
  /* the counters count: each buffer came back and was asked for here */
  assert_true(b.counts[C_LOCK] >= b.buffers);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launching_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
