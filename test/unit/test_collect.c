/* test_collect.c: the CUPTI collector against a fake CUPTI.
 *
 * The fake implements the collector's function table: it keeps the buffer
 * callbacks, gives each application thread a buffer of its own from the
 * collector (fake_cupti.h), fills them with real CUPTI record structs
 * (Kernel10, Memcpy6, MemcpyPtoP4, Memset4, API,
 * Synchronization2, Marker2, MarkerData2, Overhead3, Device5, Context3,
 * Name), completes them like CUPTI does (full buffers at once or at the
 * next flush, partly filled ones on a flush), walks them in get_next_record
 * by record kind, and counts records it had to drop when a buffer request
 * was declined.  Each test then converts the spool and checks the trace
 * model holds exactly what the records say.
 *
 * Memory: 32 threads holding buffers at once drop nothing under the
 * defaults; a tiny cap drops, and counts exactly what it dropped; the
 * buffers never hold more than the cap (the collector's count, the fake's
 * and the pages resident).  Crashes: forked children collect on three
 * threads, then die of SIGSEGV (a real fault, a stack overflow), SIGABRT,
 * SIGTERM or SIGKILL; their spools must hold every record and say the
 * capture ended early, the child must die of its signal, a handler the
 * program installed before must run after the flush (SA_SIGINFO with its
 * arguments, SA_RESETHAND honoured) and one that carries on must keep the
 * program running and collecting; a second signal during the flush gets
 * the default action.
 *
 * CUDA memory: MEMORY2 on by default and off without `memory`; every
 * kind's bytes, address and device as recorded, host memory on the host,
 * a pool's type in the spool.  Device memory in use: the collector's
 * thread samples the fake NVML (collect_fake_nvml.c) onto the CUDA
 * ordinal of the GPU's UUID; a missing or refusing NVML is a warning.
 *
 * Needs no GPU and no CUDA toolkit: the record structs come from
 * <cupti.h> where the toolkit is, from collect/cupti_abi.h (checked
 * against it) elsewhere. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tbexport.h"
#include "tbexport/profiler.h"
#include "testutil.h"

#include "collect/collector.h"
#include "import/spool.h"
#include "common/iofault.h"
#include "fake_cupti.h"

#define T0 1700000000000000000ull /* epoch ns */

/* ---- the fake ---- */

static struct {
  int enabled[64];
  int runtime_off[1024];
  int zeroed_attr;
  int refuse_kind; /* a kind that fails to enable, or -1 */
  uint64_t late;   /* get_timestamp's offset from T0 (see fake_stop) */
} F;

/* (atomic: the collector's timers switch kinds on its own thread) */
static CUptiResult f_enable(CUpti_ActivityKind k) {
  if ((int)k == F.refuse_kind) return CUPTI_ERROR_NOT_COMPATIBLE;
  if ((unsigned)k < 64) __atomic_store_n(&F.enabled[k], 1, __ATOMIC_SEQ_CST);
  return CUPTI_SUCCESS;
}
static CUptiResult f_disable(CUpti_ActivityKind k) {
  if ((unsigned)k < 64) __atomic_store_n(&F.enabled[k], 0, __ATOMIC_SEQ_CST);
  return CUPTI_SUCCESS;
}
static int enabled(CUpti_ActivityKind k) { return __atomic_load_n(&F.enabled[k], __ATOMIC_SEQ_CST); }
static CUptiResult f_attr(CUpti_ActivityAttribute a, size_t *size, void *v) {
  if (a == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size == 1)
    F.zeroed_attr = *(uint8_t *)v;
  return CUPTI_SUCCESS;
}

static CUptiResult f_runtime_api(CUpti_CallbackId cbid, uint8_t on) {
  if (cbid < 1024) F.runtime_off[cbid] = !on;
  return CUPTI_SUCCESS;
}

static CUptiResult f_cbname(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: *name = "cudaLaunchKernel_v7000"; return 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020: *name = "cudaGetDevice_v3020"; return 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        *name = "cudaStreamSynchronize_v3020";
        return 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: *name = "cudaMemcpy_v3020"; return 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000: *name = "cudaProfilerStart_v4000"; return 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000: *name = "cudaProfilerStop_v4000"; return 0;
      default: break;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult f_version(uint32_t *v) {
  *v = 130001;
  return CUPTI_SUCCESS;
}

/* CUPTI's clock: T0 while the test emits records (at T0 + a few us), one
 * second later once it stops the collector (fake_stop), so that the
 * collection window the collector records brackets the records, as with
 * the real clock. */
static CUptiResult f_ts(uint64_t *ts) {
  *ts = T0 + __atomic_load_n(&F.late, __ATOMIC_SEQ_CST);
  return CUPTI_SUCCESS;
}

static void fake_stop(void) { __atomic_store_n(&F.late, 1000000000ull, __ATOMIC_SEQ_CST); }

static const tbe__cupti_api fake_api = {
    .activity_enable = f_enable,
    .activity_disable = f_disable,
    .register_callbacks = tf_register,
    .get_next_record = tf_next_record,
    .get_num_dropped = tf_get_num_dropped,
    .flush_all = tf_flush,
    .set_attribute = f_attr,
    .enable_runtime_api = f_runtime_api,
    .get_callback_name = f_cbname,
    .get_version = f_version,
    .get_timestamp = f_ts,
};

/* Puts one record in this thread's buffer (fake_cupti.h). */
static void emit(const void *rec, size_t size) { tf_emit(rec, size); }

static void kernel(uint32_t corr, const char *name, uint64_t s, uint64_t e, uint32_t stream) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = s;
  k.end = e;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 4, k.gridY = 2, k.gridZ = 1;
  k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.registersPerThread = 32;
  k.correlationId = corr;
  k.name = name;
  emit(&k, sizeof k);
}

static void api(uint32_t cbid, uint32_t corr, uint64_t s, uint64_t e, uint32_t tid) {
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = s;
  a.end = e;
  a.processId = 4242;
  a.threadId = tid;
  a.correlationId = corr;
  emit(&a, sizeof a);
}

static void marker(uint32_t flags, uint32_t id, uint64_t ts, uint32_t tid, const char *name,
                   const char *domain) {
  CUpti_ActivityMarker2 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = (CUpti_ActivityFlag)flags;
  m.timestamp = ts;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 4242;
  m.objectId.pt.threadId = tid;
  m.name = name;
  m.domain = domain;
  emit(&m, sizeof m);
}

/* ---- harness ---- */

typedef struct fixture {
  char *dir;
  char *spool;
} fixture;

static int setup(void **state) {
  memset(&F, 0, sizeof F);
  F.refuse_kind = -1;
  tf_reset();
  fixture *f = calloc(1, sizeof *f);
  f->dir = tu_mkdtemp();
  f->spool = tu_join(f->dir, "4242.spool");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  tu_rmrf(f->dir);
  free(f->dir);
  free(f->spool);
  free(f);
  return 0;
}

static void start(fixture *f, unsigned trace, size_t cap, size_t bufsize) {
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = trace;
  c.buffer_cap = cap;
  c.buffer_size = bufsize;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
  assert_true(tbe__collector_running());
  assert_int_equal(F.zeroed_attr, 1);
}

static tbe_trace *stop_and_convert(fixture *f, const tbe__convert_opts *o, tbe__convert_info *info,
                                   tbe__sp_stats *st) {
  fake_stop();
  assert_int_equal(tbe__collector_stop(st), 0);
  assert_false(tbe__collector_running());
  assert_int_equal(atomic_load(&tf.bad), 0);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, o, t, info), 0);
  return t;
}

static size_t count_kind(const tbe_trace *t, tbe_event_kind k) {
  size_t n = 0;
  for (size_t i = 0; i < t->nevents; i++) n += t->events[i].kind == k;
  return n;
}

static const tbe_event *find(const tbe_trace *t, tbe_event_kind k, const char *name) {
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == k && strcmp(tbe_trace_str(t, t->events[i].name), name) == 0)
      return &t->events[i];
  return NULL;
}

static int has_warning(const tbe_trace *t, const char *needle) {
  for (size_t i = 0; i < t->nwarnings; i++)
    if (strstr(tbe_trace_str(t, t->warnings[i]), needle)) return 1;
  return 0;
}

/* ---- tests ---- */

static void test_decode_kinds(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA | TBE_TRACE_NVTX, 0, 0);
  assert_true(F.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
  assert_true(F.enabled[CUPTI_ACTIVITY_KIND_MARKER]);
  assert_false(F.enabled[CUPTI_ACTIVITY_KIND_DRIVER]);
  assert_false(F.enabled[CUPTI_ACTIVITY_KIND_KERNEL]); /* serializing kind never used */
  assert_true(F.runtime_off[CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020]);
  assert_false(F.runtime_off[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000]);

  CUpti_ActivityDevice5 d;
  memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.numMultiprocessors = 132;
  d.computeCapabilityMajor = 9;
  d.globalMemorySize = 150000000000ull;
  d.globalMemoryBandwidth = 4800000000ull; /* KB/s */
  d.numThreadsPerWarp = 32;
  d.maxWarpsPerMultiprocessor = 64;
  emit(&d, sizeof d);
  CUpti_ActivityContext3 cx;
  memset(&cx, 0, sizeof cx);
  cx.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  cx.contextId = 1;
  cx.deviceId = 0;
  emit(&cx, sizeof cx);

  /* Three launches: the same kernel name twice (interned once). */
  char name_a[] = "void add<float>(float*, int)";
  const char *name_b = "gemm_kernel";
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, T0 + 1000, T0 + 1500, 77);
  kernel(10, name_a, T0 + 2000, T0 + 3000, 7);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 11, T0 + 1600, T0 + 1700, 77); /* noisy */
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 12, T0 + 1800, T0 + 1900, 77);
  kernel(12, name_b, T0 + 3000, T0 + 5000, 7);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 13, T0 + 2000, T0 + 2100, 77);
  kernel(13, name_a, T0 + 5000, T0 + 5500, 8);

  CUpti_ActivityMemcpy6 mc;
  memset(&mc, 0, sizeof mc);
  mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  mc.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mc.bytes = 4096;
  mc.start = T0 + 6000;
  mc.end = T0 + 7000;
  mc.contextId = 1;
  mc.streamId = 7;
  mc.correlationId = 14;
  api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 14, T0 + 5900, T0 + 7100, 77);
  emit(&mc, sizeof mc);
  CUpti_ActivityMemcpyPtoP4 p2p;
  memset(&p2p, 0, sizeof p2p);
  p2p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  p2p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p2p.srcKind = p2p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  p2p.bytes = 1 << 20;
  p2p.start = T0 + 8000;
  p2p.end = T0 + 9000;
  p2p.deviceId = 0;
  p2p.srcDeviceId = 0;
  p2p.dstDeviceId = 1;
  p2p.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  p2p.streamId = 7;
  emit(&p2p, sizeof p2p);
  CUpti_ActivityMemset4 ms;
  memset(&ms, 0, sizeof ms);
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.value = 0;
  ms.bytes = 512;
  ms.start = T0 + 9500;
  ms.end = T0 + 9600;
  ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  ms.streamId = 7;
  emit(&ms, sizeof ms);

  api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 15, T0 + 9700, T0 + 9990, 77);
  CUpti_ActivitySynchronization2 sy;
  memset(&sy, 0, sizeof sy);
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = T0 + 9710;
  sy.end = T0 + 9980;
  sy.correlationId = 15;
  sy.contextId = 1;
  sy.streamId = 7;
  sy.cudaEventId = 0xFFFFFFFFu;
  emit(&sy, sizeof sy);

  CUpti_ActivityOverhead3 ov;
  memset(&ov, 0, sizeof ov);
  ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  ov.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  ov.objectId.pt.processId = 4242;
  ov.objectId.pt.threadId = 77;
  ov.start = T0 + 10000;
  ov.end = T0 + 10250;
  emit(&ov, sizeof ov);
  CUpti_ActivityName nm;
  memset(&nm, 0, sizeof nm);
  nm.kind = CUPTI_ACTIVITY_KIND_NAME;
  nm.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  nm.objectId.pt.processId = 4242;
  nm.objectId.pt.threadId = 77;
  nm.name = "main thread";
  emit(&nm, sizeof nm);

  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  assert_int_equal(st.records, 17); /* every record decoded, cudaGetDevice filtered after */
  assert_int_equal(t->source, TBE_SRC_CUPTI);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 3);
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME), 5); /* 3 launches, memcpy, sync */
  assert_null(find(t, TBE_EV_RUNTIME, "cudaGetDevice"));
  assert_int_equal(count_kind(t, TBE_EV_MEMCPY), 2);
  assert_int_equal(count_kind(t, TBE_EV_MEMSET), 1);
  assert_int_equal(count_kind(t, TBE_EV_SYNC), 1);
  assert_int_equal(count_kind(t, TBE_EV_OVERHEAD), 1);
  assert_int_equal(t->nevents, 13);
  assert_int_equal(info.r.kernels, 3);
  assert_int_equal(info.r.copies, 2);
  assert_int_equal(info.r.memsets, 1);
  assert_int_equal(info.r.api_calls, 5);
  assert_int_equal(t->overhead_ns, 250);
  assert_int_equal(t->dropped_records, 0);
  assert_int_equal(t->dropped_out_of_range, 0);
  assert_false(t->ended_early);
  assert_false(info.ended_early);

  /* Kernels: names, details, stream tracks, links to their launches. */
  const tbe_event *ka = find(t, TBE_EV_KERNEL, "void add<float>(float*, int)");
  assert_non_null(ka);
  assert_int_equal(ka->dur_ns, 1000);
  const tbe_kernel *kd = tbe_trace_kernel(t, ka);
  assert_non_null(kd);
  assert_int_equal(kd->grid[0], 4);
  assert_int_equal(kd->grid[1], 2);
  assert_int_equal(kd->block[0], 128);
  assert_int_equal(kd->registers, 32);
  assert_int_equal(kd->static_shared, 1024);
  assert_int_equal(kd->dynamic_shared, 2048);
  const tbe_track *tr = &t->tracks[ka->track];
  assert_int_equal(tr->type, TBE_TRACK_STREAM);
  assert_int_equal(tr->tid, 7);
  assert_int_equal(tr->device, 0);
  assert_int_not_equal(ka->link, TBE_NONE);
  const tbe_event *launch = &t->events[ka->link];
  assert_int_equal(launch->kind, TBE_EV_RUNTIME);
  assert_string_equal(tbe_trace_str(t, launch->name), "cudaLaunchKernel");
  assert_int_equal(launch->correlation, ka->correlation);
  assert_int_equal(t->tracks[launch->track].tid, 77);
  assert_int_equal(t->tracks[launch->track].pid, 4242);
  assert_string_equal(tbe_trace_str(t, t->tracks[launch->track].name), "main thread");
  assert_non_null(find(t, TBE_EV_KERNEL, "gemm_kernel"));

  const tbe_event *cp = find(t, TBE_EV_MEMCPY, "Memcpy HtoD (Pageable -> Device)");
  assert_non_null(cp);
  assert_int_equal(tbe_trace_memcpy(t, cp)->bytes, 4096);
  assert_int_equal(tbe_trace_memcpy(t, cp)->copy_kind, TBE_COPY_HTOD);
  assert_int_equal(tbe_trace_memcpy(t, cp)->src_kind, TBE_MEM_PAGEABLE);
  assert_int_not_equal(cp->link, TBE_NONE);
  const tbe_event *pp = find(t, TBE_EV_MEMCPY, "Memcpy PtoP (Device -> Device)");
  assert_non_null(pp);
  assert_int_equal(tbe_trace_memcpy(t, pp)->dst_device, 1);
  assert_int_equal(tbe_trace_memcpy(t, pp)->async, 1);
  const tbe_event *mse = find(t, TBE_EV_MEMSET, "Memset (Device)");
  assert_non_null(mse);
  assert_int_equal(tbe_trace_memset(t, mse)->bytes, 512);

  const tbe_event *se = find(t, TBE_EV_SYNC, "Stream Sync");
  assert_non_null(se);
  assert_int_equal(se->dur_ns, 270);
  /* on the stream it waited for, as Kineto and Nsight Systems place it */
  assert_int_equal(t->tracks[se->track].type, TBE_TRACK_STREAM);
  assert_int_equal(t->tracks[se->track].tid, 7);
  assert_int_equal(t->tracks[se->track].device, 0);
  assert_int_equal(tbe_trace_sync(t, se)->sync_kind, TBE_SYNC_STREAM);
  assert_int_equal(tbe_trace_sync(t, se)->cuda_event, 0);

  assert_int_equal(t->ndevices, 1);
  assert_string_equal(tbe_trace_str(t, t->devices[0].name), "NVIDIA H200");
  assert_int_equal(t->devices[0].sm_count, 132);
  assert_int_equal(t->devices[0].cc_major, 9);
  assert_int_equal(t->devices[0].max_threads_per_sm, 2048);
  assert_int_equal(t->devices[0].memory_bandwidth, 4800000000000ll);
  assert_non_null(find(t, TBE_EV_OVERHEAD, "CUPTI buffer flush"));
  tbe_trace_free(t);
}

static void test_nvtx(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_NVTX, 0, 0);
  assert_true(F.enabled[CUPTI_ACTIVITY_KIND_MARKER]);
  assert_true(F.enabled[CUPTI_ACTIVITY_KIND_MARKER_DATA]);
  assert_false(F.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
  const uint32_t S = CUPTI_ACTIVITY_FLAG_MARKER_START, E = CUPTI_ACTIVITY_FLAG_MARKER_END,
                 I = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  /* Nested push/pop: ends arrive innermost first, with no name. */
  marker(S, 1, T0 + 100, 1, "outer", NULL);
  CUpti_ActivityMarkerData2 md;
  memset(&md, 0, sizeof md);
  md.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  md.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  md.id = 1;
  md.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
  md.payload.metricValueUint64 = 42;
  md.color = 0xff00ff00u;
  md.category = 7;
  emit(&md, sizeof md);
  marker(S, 2, T0 + 110, 1, "inner", NULL);
  marker(E, 2, T0 + 120, 1, NULL, NULL);
  marker(E, 1, T0 + 200, 1, NULL, NULL);
  /* Interleaved start/end ranges on one thread: B does not nest in A. */
  marker(S, 3, T0 + 300, 1, "A", NULL);
  marker(S, 4, T0 + 310, 1, "B", NULL);
  marker(E, 3, T0 + 320, 1, NULL, NULL);
  marker(E, 4, T0 + 330, 1, NULL, NULL);
  /* A mark, a domain range with a registered string, a double payload. */
  marker(I, 5, T0 + 400, 1, "checkpoint", NULL);
  marker(S, 6, T0 + 500, 1, "regstr", "dom");
  memset(&md, 0, sizeof md);
  md.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  md.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE;
  md.id = 6;
  md.payloadKind = CUPTI_METRIC_VALUE_KIND_DOUBLE;
  md.payload.metricValueDouble = 2.5;
  emit(&md, sizeof md);
  marker(E, 6, T0 + 510, 1, NULL, NULL);
  /* Started on thread 1, ended on thread 2. */
  marker(S, 8, T0 + 700, 1, "handoff", NULL);
  marker(E, 8, T0 + 710, 2, NULL, NULL);
  /* An end whose start is not in the capture; a start that never ends. */
  marker(E, 99, T0 + 720, 1, NULL, NULL);
  marker(S, 7, T0 + 800, 1, "open", NULL);
  /* A zero timestamp is out of range. */
  marker(I, 9, 0, 1, "zero", NULL);

  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, NULL, &info, NULL);
  /* outer, inner, A, B, regstr, handoff, open */
  assert_int_equal(count_kind(t, TBE_EV_NVTX_RANGE), 7);
  assert_int_equal(count_kind(t, TBE_EV_NVTX_MARK), 1);
  assert_int_equal(t->nevents, 8);
  assert_int_equal(info.r.nvtx_ranges, 7);
  assert_int_equal(info.r.nvtx_marks, 1);
  assert_int_equal(info.nvtx_unclosed, 1);
  assert_int_equal(info.nvtx_orphan_ends, 1);
  assert_int_equal(t->dropped_out_of_range, 1);
  assert_true(has_warning(t, "never ended"));
  assert_true(has_warning(t, "had no start"));

  const tbe_event *outer = find(t, TBE_EV_NVTX_RANGE, "outer");
  const tbe_event *inner = find(t, TBE_EV_NVTX_RANGE, "inner");
  assert_non_null(outer);
  assert_non_null(inner);
  assert_int_equal(outer->start_ns, (int64_t)(T0 + 100));
  assert_int_equal(outer->dur_ns, 100);
  assert_int_equal(inner->dur_ns, 10);
  assert_false(outer->flags & TBE_EVF_ASYNC);
  assert_false(inner->flags & TBE_EVF_ASYNC);
  assert_int_equal(outer->track, inner->track);
  assert_int_equal(t->tracks[outer->track].tid, 1);
  const tbe_nvtx *nv = tbe_trace_nvtx(t, outer);
  assert_non_null(nv);
  assert_int_equal(nv->color, 0xff00ff00u);
  assert_int_equal(nv->category, 7);
  assert_int_equal(nv->payload_type, TBE_PAYLOAD_UINT64);
  assert_int_equal(nv->payload.u, 42);
  assert_int_equal(nv->domain, 0);
  assert_int_equal(tbe_trace_nvtx(t, inner)->payload_type, TBE_PAYLOAD_NONE);

  const tbe_event *a = find(t, TBE_EV_NVTX_RANGE, "A");
  const tbe_event *b = find(t, TBE_EV_NVTX_RANGE, "B");
  assert_false(a->flags & TBE_EVF_ASYNC);
  assert_true(b->flags & TBE_EVF_ASYNC);
  assert_int_equal(b->dur_ns, 20);

  const tbe_event *mk = find(t, TBE_EV_NVTX_MARK, "checkpoint");
  assert_non_null(mk);
  assert_int_equal(mk->dur_ns, 0);
  const tbe_event *rg = find(t, TBE_EV_NVTX_RANGE, "regstr");
  assert_non_null(rg);
  assert_string_equal(tbe_trace_str(t, tbe_trace_nvtx(t, rg)->domain), "dom");
  assert_int_equal(tbe_trace_nvtx(t, rg)->color, 0); /* COLOR_NONE */
  assert_int_equal(tbe_trace_nvtx(t, rg)->payload_type, TBE_PAYLOAD_DOUBLE);
  assert_true(tbe_trace_nvtx(t, rg)->payload.d == 2.5);
  const tbe_event *h = find(t, TBE_EV_NVTX_RANGE, "handoff");
  assert_true(h->flags & TBE_EVF_ASYNC);
  const tbe_event *op = find(t, TBE_EV_NVTX_RANGE, "open");
  assert_non_null(op);
  assert_true(op->start_ns + op->dur_ns >= (int64_t)(T0 + 800));
  assert_int_equal(op->start_ns + op->dur_ns, t->stop_ns);
  assert_null(find(t, TBE_EV_NVTX_MARK, "zero"));
  tbe_trace_free(t);
}

static void test_zero_timestamps(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "zero", 0, 0, 7);                 /* start = end = 0 */
  kernel(2, "inverted", T0 + 500, T0 + 400, 7); /* start > end */
  kernel(3, "good", T0 + 500, T0 + 600, 7);
  kernel(4, "instant", T0 + 700, T0 + 700, 7); /* zero duration is fine */
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 3, 0, T0 + 10, 77); /* start 0 */
  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, NULL, &info, NULL);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 2);
  assert_non_null(find(t, TBE_EV_KERNEL, "good"));
  assert_non_null(find(t, TBE_EV_KERNEL, "instant"));
  assert_null(find(t, TBE_EV_KERNEL, "zero"));
  assert_null(find(t, TBE_EV_KERNEL, "inverted"));
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME), 0);
  assert_int_equal(t->dropped_out_of_range, 3);
  assert_int_equal(info.r.dropped_out_of_range, 3);
  assert_true(has_warning(t, "zero or inverted timestamps"));
  tbe_trace_free(t);
}

static void test_buffer_cap_drops(void **state) {
  fixture *f = *state;
  /* Two 4 KiB buffers at most; the fake holds full buffers until a flush,
   * as CUPTI does while the GPU runs, so the third request is declined. */
  tf.hold_full = 1;
  start(f, TBE_TRACE_CUDA, 8192, 4096);
  const int n = 200;
  for (int i = 0; i < n; i++) kernel((uint32_t)i + 1, "k", T0 + 1000 * (uint64_t)i + 1,
                                     T0 + 1000 * (uint64_t)i + 500, 7);
  size_t per_buffer = 4096 / sizeof(CUpti_ActivityKernel10);
  size_t kept = 2 * per_buffer;
  assert_int_equal(atomic_load(&tf.dropped_total), n - kept);
  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), kept);
  assert_int_equal(t->dropped_records, n - kept);
  assert_int_equal(info.r.dropped_records, n - kept);
  assert_int_equal(st.cupti_dropped, n - kept);
  assert_true(st.buffers_declined > 0);
  assert_int_equal(st.buffer_bytes, 8192);
  assert_true(has_warning(t, "dropped"));
  /* The kept ones are exactly the first records, with their timestamps. */
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    assert_int_equal(e->start_ns, (int64_t)(T0 + 1000 * (e->correlation - 1) + 1));
    assert_true(e->correlation <= kept);
  }
  tbe_trace_free(t);
}

static void test_unwalkable_record(void **state) {
  fixture *f = *state;
  /* A record the (fake) CUPTI cannot size ends the walk of its buffer: the
   * kernels before it are kept, the loss is said in the run. */
  start(f, TBE_TRACE_CUDA, 1 << 20, 1 << 16);
  kernel(1, "before", T0 + 100, T0 + 200, 7);
  CUpti_Activity odd[8];
  memset(odd, 0, sizeof odd);
  odd[0].kind = CUPTI_ACTIVITY_KIND_PCIE; /* no size known to the fake */
  emit(odd, sizeof odd);
  kernel(2, "after", T0 + 300, T0 + 400, 7);
  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  assert_non_null(find(t, TBE_EV_KERNEL, "before"));
  assert_true(has_warning(t, "could not walk an activity buffer"));
  tbe_trace_free(t);
}

static void test_failed_spool_write(void **state) {
  fixture *f = *state;
  /* The frame of the first buffer fails to write (EIO, once): its records
   * are lost and counted, and the kernel name it defined is defined again,
   * so the next buffer's kernels of that name keep it. */
  start(f, TBE_TRACE_CUDA, 1 << 20, 4096);
  size_t per_buffer = 4096 / sizeof(CUpti_ActivityKernel10);
  tbe__io_fault_arm(TBE__IO_WRITE, 1, TBE__IOF_EIO);
  uint32_t corr = 1;
  for (size_t i = 0; i < per_buffer; i++, corr++)
    kernel(corr, "gemm_kernel", T0 + 1000 * corr, T0 + 1000 * corr + 500, 7);
  kernel(corr, "gemm_kernel", T0 + 1000 * corr, T0 + 1000 * corr + 500, 7); /* completes #1 */
  corr++;
  for (int i = 0; i < 5; i++, corr++)
    kernel(corr, "gemm_kernel", T0 + 1000 * corr, T0 + 1000 * corr + 500, 7);
  tbe__sp_stats st;
  fake_stop();
  assert_int_equal(tbe__collector_stop(&st), TBE_EIO); /* the error is reported */
  assert_int_equal(tbe__io_fault_disarm(), 1);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_int_equal(st.spool_dropped, per_buffer);
  assert_int_equal(t->dropped_records, per_buffer);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 6);
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_KERNEL)
      assert_string_equal(tbe_trace_str(t, t->events[i].name), "gemm_kernel");
  tbe_trace_free(t);
}

/* A frame that cannot be written loses its records, not the other threads'
 * items it held: a step mark (like a collection window, a note or a
 * signal) queued before the failed frame is in the next one. */
static void test_failed_frame_keeps_side_items(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA, 1 << 20, 4096);
  size_t per_buffer = 4096 / sizeof(CUpti_ActivityKernel10);
  assert_int_equal(tbe__collector_step(), 0); /* queued for the first frame */
  tbe__io_fault_arm(TBE__IO_WRITE, 1, TBE__IOF_EIO);
  uint32_t corr = 1;
  for (size_t i = 0; i <= per_buffer; i++, corr++) /* completes buffer #1: its frame fails */
    kernel(corr, "k", T0 + 1000 * corr, T0 + 1000 * corr + 500, 7);
  for (int i = 0; i < 5; i++, corr++)
    kernel(corr, "k", T0 + 1000 * corr, T0 + 1000 * corr + 500, 7);
  tbe__sp_stats st;
  fake_stop();
  assert_int_equal(tbe__collector_stop(&st), TBE_EIO);
  assert_int_equal(tbe__io_fault_disarm(), 1);
  assert_int_equal(st.spool_dropped, per_buffer);
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  tbe__convert_info info;
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_int_equal(info.steps_marked, 1);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 6);
  tbe_trace_free(t);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits up to 10 s for kind K to be switched to ON; returns the time. */
static double wait_kind(CUpti_ActivityKind k, int on) {
  double t0 = now_s();
  while (enabled(k) != on && now_s() - t0 < 10) usleep(2000);
  assert_int_equal(enabled(k), on);
  return now_s();
}

static void test_delay_and_duration(void **state) {
  fixture *f = *state;
  /* --delay 0.2 --duration 0.3: nothing is switched on at start; the
   * background thread switches the kinds on after the delay and off after
   * the duration, and records both moments in the spool. */
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA | TBE_TRACE_NVTX;
  c.spool_path = f->spool;
  c.delay_s = 0.2;
  c.duration_s = 0.3;
  double t0 = now_s();
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
  assert_int_equal(enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
  double on = wait_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1);
  assert_true(on - t0 >= 0.19);
  assert_int_equal(enabled(CUPTI_ACTIVITY_KIND_MARKER), 1);
  /* (no records from this thread meanwhile: the fake's buffers are not
   * locked, and closing the window flushes them from the collector's) */
  double off = wait_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0);
  assert_true(off - t0 >= 0.49);
  assert_int_equal(enabled(CUPTI_ACTIVITY_KIND_MARKER), 0);
  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  assert_int_equal(t->nevents, 0);
  assert_false(t->ended_early);
  tbe_trace_free(t);
}

static void test_capture_nvtx(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA | TBE_TRACE_NVTX, 0, 0);
  const uint32_t S = CUPTI_ACTIVITY_FLAG_MARKER_START, E = CUPTI_ACTIVITY_FLAG_MARKER_END;
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, T0 + 100, T0 + 110, 77);
  kernel(1, "before", T0 + 120, T0 + 130, 7);
  marker(S, 1, T0 + 200, 77, "capture", "train");
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 2, T0 + 210, T0 + 220, 77);
  marker(E, 1, T0 + 300, 77, NULL, NULL);
  /* launched inside the range, ran after it: kept (its launch is inside) */
  kernel(2, "inside", T0 + 310, T0 + 320, 7);
  marker(S, 2, T0 + 400, 77, "capture", "other"); /* other domain: not a window */
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 3, T0 + 410, T0 + 420, 77);
  kernel(3, "after", T0 + 430, T0 + 440, 7);
  marker(E, 2, T0 + 500, 77, NULL, NULL);
  tbe__convert_opts o = {.capture = TBE_CAPTURE_NVTX, .capture_name = "capture",
                        .capture_domain = "train"};
  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, &o, &info, NULL);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  assert_non_null(find(t, TBE_EV_KERNEL, "inside"));
  assert_int_equal(count_kind(t, TBE_EV_RUNTIME), 1);
  assert_int_equal(count_kind(t, TBE_EV_NVTX_RANGE), 1);
  assert_int_equal(info.outside_capture, 5);
  assert_true(has_warning(t, "outside the capture range"));
  /* the trace spans the window and the kernel launched in it, so GPU busy
   * % is 10 ns of 120 */
  assert_int_equal(t->start_ns, (int64_t)(T0 + 200));
  assert_int_equal(t->stop_ns, (int64_t)(T0 + 320));
  assert_true(info.r.gpu_busy_pct > 8.33 && info.r.gpu_busy_pct < 8.34);
  tbe_trace_free(t);
}

static void test_capture_profiler_api(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA, 0, 0);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, T0 + 100, T0 + 110, 77);
  kernel(1, "before", T0 + 120, T0 + 130, 7);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 2, T0 + 150, T0 + 160, 77);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 3, T0 + 200, T0 + 210, 77);
  kernel(3, "inside", T0 + 220, T0 + 230, 7);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 4, T0 + 300, T0 + 310, 77);
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, T0 + 400, T0 + 410, 77);
  kernel(5, "after", T0 + 420, T0 + 430, 7);
  tbe__convert_opts o = {.capture = TBE_CAPTURE_PROFILER_API};
  tbe_trace *t = stop_and_convert(f, &o, NULL, NULL);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  assert_non_null(find(t, TBE_EV_KERNEL, "inside"));
  assert_non_null(find(t, TBE_EV_RUNTIME, "cudaLaunchKernel"));
  tbe_trace_free(t);
}

/* tbe_profiler_step's collector side: marks from several threads (and
 * from the test's own) become the run's steps, numbered in time order, on
 * the threads that marked them, the last ending when collection stops; no
 * mark goes through CUPTI's buffers. */
static void *mark_steps(void *arg) {
  for (int i = 0; i < 50; i++) assert_int_equal(tbe__collector_step(), 0);
  (void)arg;
  return NULL;
}

/* ---- CUDA memory (MEMORY2) and device memory in use (NVML) ---- */

static void memory_rec(uint32_t op, uint32_t kind, uint64_t addr, uint64_t bytes, uint32_t dev,
                       uint64_t ts, uint32_t corr, uint32_t pool) {
  CUpti_ActivityMemory4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
  m.memoryKind = (CUpti_ActivityMemoryKind)kind;
  m.address = addr;
  m.bytes = bytes;
  m.timestamp = ts;
  m.processId = 4242;
  m.deviceId = dev;
  m.contextId = dev + 1;
  m.streamId = 7;
  m.correlationId = corr;
  m.isAsync = pool != 0;
  m.memoryPoolConfig.memoryPoolType = (CUpti_ActivityMemoryPoolType)pool;
  emit(&m, sizeof m);
}

/* The spool's memory items, as the collector wrote them. */
typedef struct mem_items {
  tbe__sp_memory v[8];
  size_t n;
} mem_items;
static int take_memory(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  mem_items *m = ctx;
  if (type == TBE__SP_MEMORY && len == sizeof m->v[0] && m->n < 8) memcpy(&m->v[m->n++], body, len);
  return 0;
}

static const tbe_memory *memory_at(const tbe_trace *t, uint64_t addr, int alloc) {
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memory *m = tbe_trace_memory(t, &t->events[i]);
    if (m && m->addr == addr && (m->bytes > 0) == alloc) return m;
  }
  return NULL;
}
static const tbe_event *memory_event_at(const tbe_trace *t, uint64_t addr) {
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_memory *m = tbe_trace_memory(t, &t->events[i]);
    if (m && m->addr == addr) return &t->events[i];
  }
  return NULL;
}

/* MEMORY2 is on by default; device, pinned host, managed and a pool's
 * allocations keep their bytes, address, kind and device; the pool's type
 * reaches the spool; host memory lands on the host (device -1), on the
 * thread of the call that made it. */
static void test_memory_records(void **state) {
  fixture *f = *state;
  assert_true(TBE_TRACE_DEFAULT & TBE_TRACE_MEMORY);
  start(f, TBE_TRACE_DEFAULT, 0, 0);
  assert_true(enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
  api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 21, T0 + 90, T0 + 200, 77);
  memory_rec(1, 3, 0x7f0000000000ull, (1u << 20) + 123, 1, T0 + 100, 20, 0);
  memory_rec(1, 2, 0x555500000000ull, 4u << 20, 0, T0 + 110, 21, 0); /* pinned, by tid 77 */
  memory_rec(1, 5, 0x7f2000000000ull, 2u << 20, 0, T0 + 120, 22, 0); /* managed */
  memory_rec(1, 3, 0x7f3000000400ull, 8u << 20, 0, T0 + 130, 23, 1); /* cudaMallocAsync */
  memory_rec(2, 3, 0x7f0000000000ull, (1u << 20) + 123, 1, T0 + 140, 24, 0);
  memory_rec(2, 1, 0x555600000000ull, 4096, 0, T0 + 150, 0, 0); /* pageable, no call */
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(count_kind(t, TBE_EV_MEMORY), 6);
  const tbe_memory *m = memory_at(t, 0x7f0000000000ull, 1);
  assert_non_null(m);
  assert_int_equal(m->bytes, (1 << 20) + 123);
  assert_int_equal(m->device, 1);
  assert_int_equal(m->mem_kind, TBE_MEM_DEVICE);
  assert_int_equal(m->source, TBE_MEMSRC_CUDA);
  m = memory_at(t, 0x7f0000000000ull, 0);
  assert_non_null(m);
  assert_int_equal(m->bytes, -((1 << 20) + 123));
  m = memory_at(t, 0x555500000000ull, 1);
  assert_non_null(m);
  assert_int_equal(m->device, -1);
  assert_int_equal(m->mem_kind, TBE_MEM_PINNED);
  const tbe_track *tr = &t->tracks[memory_event_at(t, 0x555500000000ull)->track];
  assert_int_equal(tr->type, TBE_TRACK_THREAD);
  assert_int_equal(tr->tid, 77);
  assert_int_equal(tr->device, -1);
  m = memory_at(t, 0x555600000000ull, 0);
  assert_non_null(m);
  assert_int_equal(m->device, -1);
  assert_int_equal(t->tracks[memory_event_at(t, 0x555600000000ull)->track].device, -1);
  m = memory_at(t, 0x7f2000000000ull, 1);
  assert_non_null(m);
  assert_int_equal(m->device, 0);
  assert_int_equal(m->mem_kind, TBE_MEM_MANAGED);
  tbe_trace_free(t);
  /* the pool's allocation, told apart in the spool */
  size_t n = 0;
  uint8_t *img = tu_read_file(f->spool, &n);
  assert_non_null(img);
  mem_items mi = {.n = 0};
  tbe__spool_tail tail;
  assert_int_equal(tbe__spool_scan(img, n, take_memory, &mi, &tail), 0);
  free(img);
  assert_int_equal(mi.n, 6);
  assert_int_equal(mi.v[3].addr, 0x7f3000000400ull);
  assert_int_equal(mi.v[3].is_async, 1);
  assert_int_equal(mi.v[3].pool_type, 1);
  assert_int_equal(mi.v[0].is_async, 0);
  assert_int_equal(mi.v[0].pool_type, 0);
}

/* --trace without memory: MEMORY2 stays off. */
static void test_memory_off(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA | TBE_TRACE_NVTX, 0, 0);
  assert_false(enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(count_kind(t, TBE_EV_MEMORY), 0);
  tbe_trace_free(t);
}

#ifdef TBE_FAKE_NVML
/* The fake NVML (test/stress/collect_fake_nvml.c), the copy the collector
 * loads. */
static void *fake_nvml(void) {
  void *h = dlopen(TBE_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  return h;
}

static void device_rec(uint32_t id) {
  CUpti_ActivityDevice5 d;
  memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = id;
  d.name = "NVIDIA H200";
  d.uuid.bytes[0] = (char)0xfa; /* the fake NVML's GPU UUID (NVML's GPU 1 is our 0) */
  d.uuid.bytes[1] = 0x6e;
  d.uuid.bytes[15] = (char)(id == 0 ? 1 : 0);
  emit(&d, sizeof d);
}

static void start_nvml(fixture *f) {
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA | TBE_TRACE_MEMORY;
  c.nvml = 1;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
}

static const tbe_track *nvml_track(const tbe_trace *t, const char *name, int32_t device) {
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (tbe_track_is_metric(tr) && tr->device == device &&
        strcmp(tbe_trace_str(t, tr->name), name) == 0)
      return tr;
  }
  return NULL;
}

/* NVML's per-process figure of a GPU, on the CUDA ordinal of its UUID
 * (NVML's order is not CUDA's here); the collector's thread samples it
 * while the program does nothing. */
static void test_nvml_samples(void **state) {
  fixture *f = *state;
  void *h = fake_nvml();
  void (*set)(unsigned, long long);
  int (*samples)(void), (*inits)(void);
  *(void **)&set = dlsym(h, "fake_nvml_set");
  *(void **)&samples = dlsym(h, "fake_nvml_samples");
  *(void **)&inits = dlsym(h, "fake_nvml_inits");
  assert_int_equal(setenv("TBEXPORT_NVML_LIB", TBE_FAKE_NVML, 1), 0);
  unsetenv("FAKE_NVML_MODE");
  set(1, 123456789);
  start_nvml(f);
  device_rec(0);
  device_rec(1);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  int n0 = samples();
  for (int i = 0; i < 500 && samples() < n0 + 6; i++) usleep(10000); /* 3 rounds of 2 GPUs */
  assert_true(samples() >= n0 + 6);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(inits(), 0); /* shut down at stop */
  const tbe_track *tr = nvml_track(t, "device memory used (NVML)", 0);
  assert_non_null(tr);
  size_t nv = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_COUNTER || &t->tracks[e->track] != tr) continue;
    assert_true(tbe_trace_counter(t, e)->value == 123456789.0);
    nv++;
  }
  assert_true(nv >= 1);
  /* NVML's GPU 0 (our 1) never listed this process: no track */
  assert_null(nvml_track(t, "device memory used (NVML)", 1));
  assert_null(nvml_track(t, "device memory used, all processes (NVML)", 0));
  assert_false(has_warning(t, "NVML"));
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  tbe_trace_free(t);
  set(1, -1);
  unsetenv("TBEXPORT_NVML_LIB");
  dlclose(h);
}

/* NVML missing or refusing: a warning, and the rest collected as ever. */
static void test_nvml_absent_is_noted(void **state) {
  fixture *f = *state;
  assert_int_equal(setenv("TBEXPORT_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1), 0);
  start_nvml(f);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_true(has_warning(t, "device memory in use is not sampled: cannot load NVML"));
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  tbe_trace_free(t);
  unlink(f->spool);
  __atomic_store_n(&F.late, 0, __ATOMIC_SEQ_CST); /* the clock back at T0 (fake_stop) */
  assert_int_equal(setenv("TBEXPORT_NVML_LIB", TBE_FAKE_NVML, 1), 0);
  assert_int_equal(setenv("FAKE_NVML_MODE", "noinit", 1), 0);
  start_nvml(f);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  t = stop_and_convert(f, NULL, NULL, NULL);
  assert_true(has_warning(t,
                          "device memory in use is not sampled: nvmlInit failed: "
                          "Insufficient Permissions"));
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  tbe_trace_free(t);
  unsetenv("FAKE_NVML_MODE");
  unsetenv("TBEXPORT_NVML_LIB");
}
#endif

static void test_steps_marked(void **state) {
  fixture *f = *state;
  assert_int_equal(tbe__collector_step(), TBE_ESTATE); /* not running */
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  __atomic_store_n(&F.late, 1000, __ATOMIC_SEQ_CST); /* marks at T0 + 1 us */
  pthread_t th[3];
  for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&th[i], NULL, mark_steps, NULL), 0);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  __atomic_store_n(&F.late, 2000, __ATOMIC_SEQ_CST);
  assert_int_equal(tbe_profiler_step(), 0); /* the public entry reaches it */
  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, NULL, &info, NULL);
  assert_int_equal(info.steps_marked, 151);
  assert_int_equal(t->nsteps, 151);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  for (size_t i = 0; i < t->nsteps; i++) {
    assert_int_equal(t->steps[i].num, (int64_t)i);
    assert_int_not_equal(t->steps[i].track, TBE_NONE);
    assert_int_equal(t->tracks[t->steps[i].track].type, TBE_TRACK_THREAD);
    if (i + 1 < t->nsteps) assert_int_equal(t->steps[i].end_ns, t->steps[i + 1].start_ns);
  }
  assert_int_equal(t->steps[0].start_ns, (int64_t)(T0 + 1000));
  assert_int_equal(t->steps[150].start_ns, (int64_t)(T0 + 2000));
  assert_int_equal(t->steps[150].end_ns, (int64_t)(T0 + 1000000000ull)); /* the stop */
  assert_int_equal(t->tracks[t->steps[150].track].tid, (int64_t)gettid());
  tbe_trace_free(t);
  assert_int_equal(tbe_profiler_step(), TBE_ESTATE);
}

/* The launcher's rank: written after the info item when the environment
 * has one (src/collect/launcher.h), none without, a note for a malformed
 * value. */
static void clear_launcher_env(void) {
  static const char *const vars[] = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_RANK", "PMIX_NAMESPACE",
      "OMPI_MCA_ess_base_jobid", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MV2_COMM_WORLD_RANK",
      "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
      "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void test_rank_item(void **state) {
  fixture *f = *state;
  clear_launcher_env();
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("TORCHELASTIC_RUN_ID", "abc", 1);
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, NULL, &info, NULL);
  clear_launcher_env();
  assert_int_equal(t->rank, 1);
  assert_int_equal(t->world_size, 2);
  assert_int_equal(info.rank, 1);
  assert_int_equal(info.world_size, 2);
  assert_int_equal(info.local_rank, 1);
  assert_int_equal(info.launcher, TBE__LAUNCHER_TORCH);
  assert_string_equal(info.job, "abc");
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  /* rank 1 of 2 without an NCCL kernel: the one line that says so
   * (src/trace/model/comm.h), nothing else */
  assert_int_equal(t->nwarnings, 1);
  assert_non_null(strstr(tbe_trace_str(t, t->warnings[0]), "no NCCL kernel in this rank's trace"));
  tbe_trace_free(t);
  int32_t r;
  assert_int_equal(tbe__spool_file_rank(f->spool, &r), 1);
  assert_int_equal(r, 1);
}

static void test_no_rank_item(void **state) {
  fixture *f = *state;
  clear_launcher_env();
  setenv("RANK", "one", 1); /* the user's own variable: no rank, a note */
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe__convert_info info;
  tbe_trace *t = stop_and_convert(f, NULL, &info, NULL);
  clear_launcher_env();
  assert_int_equal(t->rank, -1);
  assert_int_equal(t->world_size, 0);
  assert_int_equal(info.rank, -1);
  assert_string_equal(info.job, "");
  assert_true(has_warning(t, "launcher: RANK='one' is not a decimal number: ignored"));
  tbe_trace_free(t);
  int32_t r;
  assert_int_equal(tbe__spool_file_rank(f->spool, &r), 0);
  assert_int_equal(r, -1);
}

static void test_refused_kind_is_noted(void **state) {
  fixture *f = *state;
  F.refuse_kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_true(has_warning(t, "MEMCPY2"));
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  tbe_trace_free(t);
}

static void test_fork_child_is_not_collecting(void **state) {
  fixture *f = *state;
  start(f, TBE_TRACE_CUDA, 0, 0);
  kernel(1, "parent", T0 + 10, T0 + 20, 7);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int ok = !tbe__collector_running() && tbe__collector_stop(NULL) == TBE_ESTATE;
    _exit(ok ? 0 : 1);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_true(tbe__collector_running());
  kernel(2, "parent2", T0 + 30, T0 + 40, 7);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 2);
  tbe_trace_free(t);
}

static void test_start_twice_and_stop_idle(void **state) {
  fixture *f = *state;
  assert_int_equal(tbe__collector_stop(NULL), TBE_ESTATE);
  start(f, TBE_TRACE_CUDA, 0, 0);
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), TBE_EBUSY);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(t->nevents, 0);
  assert_false(t->ended_early);
  tbe_trace_free(t);
  /* The spool exists: a second session on the same path is refused. */
  memset(&F, 0, sizeof F);
  F.refuse_kind = -1;
  tf_reset();
  assert_int_equal(tbe__collector_start(&fake_api, &c), TBE_EEXIST);
  assert_false(tbe__collector_running());
}

static void test_public_api_without_session(void **state) {
  (void)state;
  assert_int_equal(tbe_profiler_stop(NULL), TBE_ESTATE);
  assert_int_equal(tbe_profiler_step(), TBE_ESTATE);
  assert_int_equal(tbe_profiler_start(NULL), TBE_EINVAL);
  tbe_profiler_options o;
  tbe_profiler_options_init(&o);
  assert_int_equal(o.flush_period_ms, 1000);
  assert_int_equal(o.buffer_mb, 64);
  assert_int_equal(tbe_profiler_start(&o), TBE_EINVAL); /* no logdir */
  unsigned m;
  size_t bad;
  assert_int_equal(tbe_profiler_parse_trace("cuda,nvtx,memory,driver", &m, &bad), 0);
  assert_int_equal(m, TBE_TRACE_CUDA | TBE_TRACE_NVTX | TBE_TRACE_MEMORY | TBE_TRACE_DRIVER);
  assert_int_equal(tbe_profiler_parse_trace("cuda,gpu", &m, &bad), TBE_EINVAL);
  assert_int_equal(bad, 5);
}

/* ---- many threads, the cap ---- */

/* Correlation ids of the threaded tests: thread in the top byte. */
#define TCORR(th, i) (((uint32_t)(th) << 24) | (uint32_t)((i) + 1))

typedef struct thr_arg {
  int id, pairs;
  pthread_barrier_t *all_hold; /* every thread holds a buffer, then all go on */
  uint64_t dropped;            /* records this thread's CUPTI dropped */
} thr_arg;

/* One application thread: a cudaLaunchKernel record and its kernel, PAIRS
 * times; after the first pair it waits at the barrier, if any. */
static void *launcher(void *p) {
  thr_arg *a = p;
  for (int i = 0; i < a->pairs; i++) {
    uint64_t ts = T0 + (uint64_t)i * 1000 + (uint64_t)a->id;
    CUpti_ActivityAPI r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    r.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    r.start = ts;
    r.end = ts + 100;
    r.processId = 4242;
    r.threadId = 5000 + (uint32_t)a->id;
    r.correlationId = TCORR(a->id, i);
    a->dropped += !tf_emit(&r, sizeof r);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = ts + 200;
    k.end = ts + 300;
    k.contextId = 1;
    k.streamId = 7 + (uint32_t)a->id;
    k.correlationId = TCORR(a->id, i);
    k.name = "threaded";
    a->dropped += !tf_emit(&k, sizeof k);
    if (i == 0 && a->all_hold) pthread_barrier_wait(a->all_hold);
  }
  return NULL;
}

/* Checks that T holds, for each of N threads, every pair not dropped
 * exactly once; returns the number of records (kernels + calls). */
static size_t check_pairs(const tbe_trace *t, int n, int pairs) {
  uint8_t *seen = calloc((size_t)n * (size_t)pairs * 2, 1);
  assert_non_null(seen);
  size_t count = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL && e->kind != TBE_EV_RUNTIME) continue;
    uint64_t th = e->correlation >> 24, s = (e->correlation & 0xffffff) - 1;
    assert_true(th < (uint64_t)n && s < (uint64_t)pairs);
    size_t at = ((size_t)th * (size_t)pairs + (size_t)s) * 2 + (e->kind == TBE_EV_KERNEL);
    assert_int_equal(seen[at], 0); /* no duplicates */
    seen[at] = 1;
    count++;
  }
  free(seen);
  return count;
}

static void test_many_threads_default_no_drop(void **state) {
  fixture *f = *state;
  /* 32 threads, each holding a buffer of its own at the same moment (the
   * barrier), with the injection library's defaults: nothing is dropped.
   * (A cap counted in whole 4 MiB buffers gave 16 threads one and dropped
   * the records of the others.)  The records (about 33 MB) fit the cap even
   * if the decoder never ran, so the test does not depend on its speed. */
  enum { N = 32, PAIRS = 4000 };
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.buffer_cap = (size_t)64 << 20;
  c.flush_ms = 1000;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, N);
  thr_arg args[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    args[i] = (thr_arg){i, PAIRS, &bar, 0};
    assert_int_equal(pthread_create(&th[i], NULL, launcher, &args[i]), 0);
  }
  /* The memory the buffers hold, sampled while they fill. */
  size_t worst = 0;
  for (int k = 0; k < 50; k++) {
    size_t held, resident;
    tbe__collector_memory(&held, NULL, &resident);
    assert_true(held <= c.buffer_cap);
    if (resident > worst) worst = resident;
    usleep(1000);
  }
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  size_t resident;
  tbe__collector_memory(NULL, NULL, &resident);
  if (resident > worst) worst = resident;
  assert_true(worst <= c.buffer_cap);
  for (int i = 0; i < N; i++) assert_int_equal(args[i].dropped, 0);
  assert_int_equal(atomic_load(&tf.dropped_total), 0);
  /* every thread had a buffer at once, smaller than the first */
  assert_true(atomic_load(&tf.smallest) < ((size_t)2 << 20));
  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  assert_int_equal(check_pairs(t, N, PAIRS), (size_t)N * PAIRS * 2);
  assert_int_equal(st.cupti_dropped, 0);
  assert_int_equal(st.buffers_declined, 0);
  assert_int_equal(t->dropped_records, 0);
  assert_true(st.buffer_bytes <= c.buffer_cap);
  assert_true(atomic_load(&tf.held_peak) <= c.buffer_cap);
  assert_false(has_warning(t, "dropped"));
  tbe_trace_free(t);
}

static void test_tiny_cap_counts_drops(void **state) {
  fixture *f = *state;
  /* A 256 KiB cap, 8 threads, full buffers kept by CUPTI until the final
   * flush (the GPU still running): most records are dropped; every one is
   * either in the trace or counted, by CUPTI and in every output. */
  enum { N = 8, PAIRS = 2000 };
  tf.hold_full = 1;
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.buffer_cap = 256 << 10;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
  thr_arg args[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    args[i] = (thr_arg){i, PAIRS, NULL, 0};
    assert_int_equal(pthread_create(&th[i], NULL, launcher, &args[i]), 0);
  }
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  size_t held, resident;
  tbe__collector_memory(&held, NULL, &resident);
  assert_true(held <= c.buffer_cap);
  assert_true(resident <= c.buffer_cap);
  uint64_t dropped = 0;
  for (int i = 0; i < N; i++) dropped += args[i].dropped;
  assert_true(dropped > 0);
  assert_int_equal(dropped, atomic_load(&tf.dropped_total));
  tbe__convert_info info;
  tbe__sp_stats st;
  tbe_trace *t = stop_and_convert(f, NULL, &info, &st);
  size_t kept = check_pairs(t, N, PAIRS);
  assert_true(kept > 0);
  assert_int_equal(kept + dropped, (size_t)N * PAIRS * 2);
  assert_int_equal(st.cupti_dropped, dropped);
  assert_int_equal(t->dropped_records, dropped);
  assert_int_equal(info.r.dropped_records, dropped);
  assert_true(st.buffers_declined > 0);
  assert_true(st.buffer_bytes <= c.buffer_cap);
  assert_true(atomic_load(&tf.held_peak) <= c.buffer_cap);
  assert_true(has_warning(t, "dropped"));
  tbe_trace_free(t);
}

/* ---- fatal signals (forked children) ---- */

#define CRASH_N 300 /* kernels per child, on three threads */

static void *emit_third(void *arg) {
  uint32_t first = (uint32_t)(uintptr_t)arg;
  for (uint32_t i = 0; i < CRASH_N / 3; i++)
    kernel(first + i, "before_the_end", T0 + 1000 * (uint64_t)(first + i),
           T0 + 1000 * (uint64_t)(first + i) + 500, 7);
  return NULL;
}

/* In a child: starts collecting (catch_signals, the given flush period)
 * and emits CRASH_N kernels (correlation ids 1..CRASH_N) on the main
 * thread and two others, whose partly filled buffers CUPTI keeps.  Exits
 * the child with 90 when that fails. */
static void child_collect(fixture *f, unsigned flush_ms, const tbe__cupti_api *api) {
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.flush_ms = flush_ms;
  c.catch_signals = 1;
  c.spool_path = f->spool;
  if (tbe__collector_start(api, &c) != 0) _exit(90);
  pthread_t a, b;
  if (pthread_create(&a, NULL, emit_third, (void *)(uintptr_t)1) ||
      pthread_create(&b, NULL, emit_third, (void *)(uintptr_t)(1 + CRASH_N / 3)))
    _exit(90);
  emit_third((void *)(uintptr_t)(1 + 2 * CRASH_N / 3));
  pthread_join(a, NULL);
  pthread_join(b, NULL);
}

static void child_set_default(int sig) {
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  sigaction(sig, &d, NULL);
}

/* Waits for PID and checks it died of SIG. */
static void expect_death(pid_t pid, int sig) {
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFEXITED(status)) fprintf(stderr, "child exited with %d\n", WEXITSTATUS(status));
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), sig);
}

/* Converts the spool at PATH; checks the kernels 1..CRASH_N are there. */
static tbe_trace *convert_crashed(const char *path, tbe__convert_info *info) {
  tbe_trace *t;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_file_to_trace(path, NULL, t, info), 0);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), CRASH_N);
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_KERNEL)
      assert_true(t->events[i].correlation >= 1 && t->events[i].correlation <= CRASH_N);
  return t;
}

static void test_crash_segv_flushes(void **state) {
  fixture *f = *state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_set_default(SIGSEGV);
    child_collect(f, 0, &fake_api);
    /* a real fault: a store to a page that allows no access */
    volatile int *guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED) _exit(90);
    *guard = 1;
    _exit(91);
  }
  expect_death(pid, SIGSEGV);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  /* one line that says what happened and what the flush kept */
  assert_true(has_warning(t, "the program died of signal 11 (SIGSEGV): the collector flushed at "
                             "the signal, so every record completed before it is here"));
  assert_false(has_warning(t, "activity of its last moments is missing"));
  tbe_trace_free(t);
}

static void test_crash_abort_flushes(void **state) {
  fixture *f = *state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_set_default(SIGABRT);
    child_collect(f, 0, &fake_api);
    abort();
  }
  expect_death(pid, SIGABRT);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  assert_true(has_warning(t, "(SIGABRT)"));
  tbe_trace_free(t);
}

static int overflow(volatile char *up, long depth) {
  volatile char frame[512];
  frame[0] = (char)depth;
  frame[511] = up ? up[0] : 0;
  if (depth == LONG_MAX) return frame[0];
  return overflow(frame, depth + 1) + frame[511];
}

static void test_crash_stack_overflow_flushes(void **state) {
  fixture *f = *state;
  /* SIGSEGV of a stack overflow on the thread that started the collector:
   * the handler runs on the alternate stack start gave that thread. */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_set_default(SIGSEGV);
    child_collect(f, 0, &fake_api);
    struct rlimit rl = {1 << 20, 1 << 20}; /* a 1 MiB stack overflows sooner */
    setrlimit(RLIMIT_STACK, &rl);
    _exit(overflow(NULL, 0) == 7 ? 92 : 93);
  }
  expect_death(pid, SIGSEGV);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  tbe_trace_free(t);
}

static void test_crash_sigterm_default(void **state) {
  fixture *f = *state;
  /* No handler of the program's own: SIGTERM from another process (as
   * tbexport forwards it) ends the program with SIGTERM, after the flush. */
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    child_set_default(SIGTERM);
    child_collect(f, 0, &fake_api);
    if (write(p[1], "r", 1) != 1) _exit(94);
    for (;;) pause();
  }
  close(p[1]);
  char ch;
  assert_int_equal(read(p[0], &ch, 1), 1);
  close(p[0]);
  assert_int_equal(kill(pid, SIGTERM), 0);
  expect_death(pid, SIGTERM);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  assert_true(has_warning(t, "signal 15 (SIGTERM)"));
  tbe_trace_free(t);
}

static const char *term_spool;
static volatile sig_atomic_t term_seen;
static volatile long long term_spool_size = -1;

static void on_term_own(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  struct stat st;
  if (stat(term_spool, &st) == 0) term_spool_size = (long long)st.st_size;
  term_seen = si && si->si_signo == sig ? sig : -1;
}

static void test_crash_sigterm_program_handler(void **state) {
  fixture *f = *state;
  /* The program catches SIGTERM itself (SA_SIGINFO) and carries on: its
   * handler runs, with the same arguments, after the flush (the spool it
   * sees already holds every record); the program keeps running and
   * collecting, and its spool ends cleanly. */
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    term_spool = f->spool;
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_term_own;
    a.sa_flags = SA_SIGINFO;
    sigaction(SIGTERM, &a, NULL);
    child_collect(f, 0, &fake_api);
    raise(SIGTERM);
    if (term_seen != SIGTERM) _exit(95);
    long long sz = term_spool_size;
    if (write(p[1], &sz, sizeof sz) != (ssize_t)sizeof sz) _exit(96);
    kernel(CRASH_N + 1, "after_the_signal", T0 + 5000000, T0 + 5000500, 7);
    struct sigaction now;
    sigaction(SIGTERM, NULL, &now);
    fake_stop();
    if (tbe__collector_stop(NULL) != 0) _exit(97);
    struct sigaction after;
    sigaction(SIGTERM, NULL, &after);
    /* while collecting ours was installed; stop put the program's back */
    _exit(now.sa_sigaction != on_term_own && after.sa_sigaction == on_term_own ? 0 : 98);
  }
  close(p[1]);
  long long sz = 0;
  assert_int_equal(read(p[0], &sz, sizeof sz), (ssize_t)sizeof sz);
  close(p[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* What the spool held when the program's handler ran. */
  size_t n;
  uint8_t *all = tu_read_file(f->spool, &n);
  assert_non_null(all);
  assert_true(sz > 0 && (size_t)sz <= n);
  char *prefix = tu_join(f->dir, "prefix.spool");
  assert_int_equal(tu_write_file(prefix, all, (size_t)sz), 0);
  free(all);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(prefix, &info);
  assert_true(has_warning(t, "signal 15 (SIGTERM)"));
  tbe_trace_free(t);
  free(prefix);
  /* The whole spool: the later kernel too, and a clean end. */
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), CRASH_N + 1);
  assert_false(info.ended_early);
  tbe_trace_free(t);
}

static int segv_pipe = -1;
static void on_segv_once(int sig) {
  char c = sig == SIGSEGV ? 'h' : '?';
  if (write(segv_pipe, &c, 1) != 1) _exit(99);
}

static void test_crash_chains_resethand(void **state) {
  fixture *f = *state;
  /* The previous handler is a plain one with SA_RESETHAND: it runs once,
   * after the flush, and the disposition is the default again after it, as
   * the kernel would have left it: the second SIGSEGV kills the program. */
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    segv_pipe = p[1];
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_segv_once;
    a.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &a, NULL);
    child_collect(f, 0, &fake_api);
    raise(SIGSEGV); /* handled: the program's handler returns */
    raise(SIGSEGV); /* the default now */
    _exit(100);
  }
  close(p[1]);
  expect_death(pid, SIGSEGV);
  char buf[4];
  assert_int_equal(read(p[0], buf, sizeof buf), 1);
  assert_int_equal(buf[0], 'h');
  close(p[0]);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  tbe_trace_free(t);
}

/* A flush that sends another thread SIGTERM while a fatal-signal flush is
 * under way (the thread that faulted is still in our SIGSEGV handler). */
static pthread_t bystander;
static CUptiResult flush_then_term(uint32_t flag) {
  if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) {
    pthread_kill(bystander, SIGTERM);
    usleep(1000 * 1000); /* (the program is dead long before) */
  }
  return tf_flush(flag);
}

static pthread_barrier_t bystander_ready;
static void *wait_forever(void *arg) {
  int fd = (int)(intptr_t)arg;
  char c;
  pthread_barrier_wait(&bystander_ready);
  while (read(fd, &c, 1) != 0) {
  }
  return NULL;
}

static void test_crash_second_signal_is_default(void **state) {
  fixture *f = *state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tbe__cupti_api api = fake_api;
    api.flush_all = flush_then_term;
    child_set_default(SIGSEGV);
    child_set_default(SIGTERM);
    child_collect(f, 0, &api);
    int p[2];
    pthread_barrier_init(&bystander_ready, NULL, 2);
    if (pipe(p) || pthread_create(&bystander, NULL, wait_forever, (void *)(intptr_t)p[0]))
      _exit(90);
    pthread_barrier_wait(&bystander_ready);
    usleep(20000); /* into its read() */
    raise(SIGSEGV);
    _exit(101);
  }
  /* SIGTERM killed it at once, in the middle of the flush: the spool has
   * the session's start and the SIGSEGV note, not the kernels. */
  expect_death(pid, SIGTERM);
  tbe_trace *t;
  tbe__convert_info info;
  assert_int_equal(tbe_trace_create(&t, NULL), 0);
  assert_int_equal(tbe__spool_file_to_trace(f->spool, NULL, t, &info), 0);
  assert_true(has_warning(t, "signal 11 (SIGSEGV)"));
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 0);
  assert_true(info.ended_early);
  tbe_trace_free(t);
}

static void test_sigkill_keeps_flushed(void **state) {
  fixture *f = *state;
  /* SIGKILL runs no handler: what the periodic flush (20 ms here) wrote
   * before it is kept. */
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    child_collect(f, 20, &fake_api);
    for (;;) pause();
  }
  /* Wait (10 s at most) until the spool holds the kernels. */
  size_t got = 0;
  for (int i = 0; i < 1000 && got < CRASH_N; i++) {
    usleep(10000);
    tbe_trace *t;
    assert_int_equal(tbe_trace_create(&t, NULL), 0);
    if (tbe__spool_file_to_trace(f->spool, NULL, t, NULL) == 0) got = count_kind(t, TBE_EV_KERNEL);
    tbe_trace_free(t);
  }
  assert_int_equal(kill(pid, SIGKILL), 0);
  expect_death(pid, SIGKILL);
  assert_int_equal(got, CRASH_N);
  tbe__convert_info info;
  tbe_trace *t = convert_crashed(f->spool, &info);
  assert_true(info.ended_early);
  tbe_trace_free(t);
}

static void on_usr_term(int sig) { (void)sig; }

static void test_handlers_installed_and_restored(void **state) {
  fixture *f = *state;
  /* start replaces the handlers of fatal signals (not an ignored one);
   * stop puts the previous ones back. */
  struct sigaction prev_term, prev_int, mine, ign, cur;
  memset(&mine, 0, sizeof mine);
  mine.sa_handler = on_usr_term;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &mine, &prev_term);
  sigaction(SIGINT, &ign, &prev_int);
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.catch_signals = 1;
  c.spool_path = f->spool;
  assert_int_equal(tbe__collector_start(&fake_api, &c), 0);
  sigaction(SIGTERM, NULL, &cur);
  assert_true(cur.sa_flags & SA_SIGINFO);
  assert_true(cur.sa_handler != on_usr_term);
  sigaction(SIGINT, NULL, &cur);
  assert_true(cur.sa_handler == SIG_IGN); /* ignored: left alone */
  stack_t ss;
  assert_int_equal(sigaltstack(NULL, &ss), 0);
  assert_false(ss.ss_flags & SS_DISABLE); /* this thread got a signal stack */
  kernel(1, "k", T0 + 10, T0 + 20, 7);
  tbe_trace *t = stop_and_convert(f, NULL, NULL, NULL);
  assert_int_equal(count_kind(t, TBE_EV_KERNEL), 1);
  tbe_trace_free(t);
  sigaction(SIGTERM, NULL, &cur);
  assert_true(cur.sa_handler == on_usr_term);
  sigaction(SIGTERM, &prev_term, NULL);
  sigaction(SIGINT, &prev_int, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_decode_kinds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rank_item, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memory_records, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memory_off, setup, teardown),
#ifdef TBE_FAKE_NVML
      cmocka_unit_test_setup_teardown(test_nvml_samples, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nvml_absent_is_noted, setup, teardown),
#endif
      cmocka_unit_test_setup_teardown(test_no_rank_item, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nvtx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zero_timestamps, setup, teardown),
      cmocka_unit_test_setup_teardown(test_buffer_cap_drops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_spool_write, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_frame_keeps_side_items, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwalkable_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delay_and_duration, setup, teardown),
      cmocka_unit_test_setup_teardown(test_capture_nvtx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_capture_profiler_api, setup, teardown),
      cmocka_unit_test_setup_teardown(test_steps_marked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_kind_is_noted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_child_is_not_collecting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_start_twice_and_stop_idle, setup, teardown),
      cmocka_unit_test(test_public_api_without_session),
      cmocka_unit_test_setup_teardown(test_many_threads_default_no_drop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tiny_cap_counts_drops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_handlers_installed_and_restored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_segv_flushes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_abort_flushes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_stack_overflow_flushes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_sigterm_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_sigterm_program_handler, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_chains_resethand, setup, teardown),
      cmocka_unit_test_setup_teardown(test_crash_second_signal_is_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sigkill_keeps_flushed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
