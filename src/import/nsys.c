/* nsys.c: the Nsight Systems SQLite importer behind tbe_import_file.
 *
 * Reads a database written by `nsys export --type sqlite` (export schema
 * 2.x without ENUM_* tables and 3.x with them) into the trace model, through
 * the SQLite library, strictly read-only: the file is opened as an
 * `immutable=1` URI with SQLITE_OPEN_READONLY, so nothing (journal, WAL,
 * shm) is ever written next to it.
 *
 * Tables read when present (absent tables are fine; each table's columns
 * are checked with PRAGMA table_info and selected by name, so unknown
 * columns are ignored and missing optional ones read as NULL):
 *   StringIds                      names, looked up lazily and cached
 *   TARGET_INFO_SESSION_START_TIME wall clock: epoch = utcEpochNs +
 *                                  (t - systemClockNs); old schemas have no
 *                                  systemClockNs and count t from the
 *                                  session start; with neither, times stay
 *                                  relative and a warning says so
 *   ENUM_CUDA_MEM_KIND, ENUM_CUDA_MEMCPY_OPER, ENUM_NSYS_EVENT_CLASS
 *                                  nsys's own numbering, mapped by label;
 *                                  without them (schema 2.x) the numbering
 *                                  of those schemas is built in.  nsys
 *                                  memory kinds are CUPTI's minus one
 *                                  (0 pageable ... 7 unknown)
 *   PROCESSES, ThreadNames, TARGET_INFO_SYSTEM_ENV (Hostname)
 *   TARGET_INFO_GPU / TARGET_INFO_CUDA_DEVICE   device properties
 *   CUPTI_ACTIVITY_KIND_RUNTIME    runtime (eventClass "CUDA runtime") and
 *                                  driver calls; CUDA backtrace rows
 *                                  (duplicates of calls) are skipped; the
 *                                  "_v<digits>" suffix of names is dropped
 *   CUPTI_ACTIVITY_KIND_DRIVER     driver calls, if an export has it
 *   CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET, _SYNCHRONIZATION
 *                                  on GPU stream tracks (device, stream);
 *                                  kernels named from mangledName as
 *                                  c++filt demangles it (kernel_name)
 *   CUDA_GPU_MEMORY_USAGE_EVENTS   CUDA allocations and frees (CUPTI's
 *                                  memory activity): "[memory]" events of
 *                                  the CUDA driver (source CUDA) on their
 *                                  stream's track, bytes negative for a
 *                                  free (ENUM_CUDA_DEV_MEM_EVENT_OPER by
 *                                  label, else 0 allocation, 1
 *                                  deallocation), address, memory kind;
 *                                  totals left to tbe_trace_finish
 *   CUPTI_ACTIVITY_KIND_OVERHEAD, PROFILER_OVERHEAD   overhead events
 *   NVTX_EVENTS                    push/pop and start/end ranges (already
 *                                  paired), marks, domains (eventType 75),
 *                                  thread names (39), registered strings
 *                                  (textId), payloads, colors
 * Process and thread ids come from globalTid: pid = bits 24..47, tid =
 * bits 0..23.  Host API calls and NVTX go on TBE_TRACK_THREAD tracks.
 * CUDA correlation ids are per process: when API calls come from several
 * processes the model's correlation is (pid << 40) | correlationId, so
 * calls and GPU work of different processes never link (the 2-GPU fixture
 * has colliding ids across its two processes).
 *
 * Times: start + the session offset and end + the offset must lie in the
 * model's range (common/checked.h), else the row is refused naming the
 * column; max_events counts the rows that become events.  Device ordinals
 * (deviceId 0..65535; a copy's srcDeviceId/dstDeviceId and the TARGET_INFO
 * ordinals, where -1 is none) are checked before they are narrowed
 * (importer.h), refused likewise.
 *
 * Errors: a file that is SQLite but not an nsys export is TBE_EFORMAT; an
 * unreadable database, a required column missing or a value of the wrong
 * type is TBE_ECORRUPT with "<path>: table T row R: ..." (no byte offset).
 *
 * Files: this one knows the tables' meaning (enums, session, names,
 * devices, a row handler per activity table, the order they run in);
 * nsys_sql.{h,c} hold the state and the SQL access (column discovery,
 * row loop, errors, device checks), which never call back here. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "import/importer.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "trace/model/ops.h"
#include "common/torchnvtx.h"
#include "import/nsys_sql.h"

/* ---- progress ---- */

static void progress(ns_state *s) {
  if (s->opts && s->opts->progress && (++s->rows_done & 4095) == 0)
    s->opts->progress(s->opts->progress_ctx, s->rows_done, s->rows_total);
}

/* ---- strings ---- */

/* The interned text of StringIds `id` (0 for NULL/unknown ids). */
static tbe_str str_of(ns_state *s, int64_t id, int *rc) {
  uint32_t v = nmap_get(&s->strs, id);
  if (v != TBE_NONE) return v;
  tbe_str out = 0;
  if (s->str_stmt) {
    sqlite3_reset(s->str_stmt);
    sqlite3_bind_int64(s->str_stmt, 1, id);
    int r = sqlite3_step(s->str_stmt);
    if (r == SQLITE_ROW) {
      const unsigned char *txt = sqlite3_column_text(s->str_stmt, 0);
      int n = sqlite3_column_bytes(s->str_stmt, 0);
      if (txt && n > 0) {
        const unsigned char *nul = memchr(txt, 0, (size_t)n);
        if (tbe_trace_intern(s->t, (const char *)txt, nul ? (size_t)(nul - txt) : (size_t)n, &out))
          out = 0;
      }
    } else if (r != SQLITE_DONE) {
      *rc = tbe__ns_sql_error(s, "StringIds", r);
      return 0;
    }
  }
  if (nmap_put(&s->strs, id, out)) *rc = TBE_ENOMEM;
  return out;
}

/* API names without nsys's "_v<digits>" suffix ("cudaLaunchKernel_v7000"). */
static tbe_str api_str_of(ns_state *s, int64_t id, int *rc) {
  uint32_t v = nmap_get(&s->api_strs, id);
  if (v != TBE_NONE) return v;
  tbe_str full = str_of(s, id, rc);
  tbe_str out = full;
  const char *txt = tbe_trace_str(s->t, full);
  size_t n = tbe_trace_strlen(s->t, full);
  size_t i = n;
  while (i > 0 && txt[i - 1] >= '0' && txt[i - 1] <= '9') i--;
  if (i < n && i >= 3 && txt[i - 1] == 'v' && txt[i - 2] == '_')
    if (tbe_trace_intern(s->t, txt, i - 2, &out)) out = full;
  if (nmap_put(&s->api_strs, id, out)) *rc = TBE_ENOMEM;
  return out;
}

static tbe_str text_id(ns_state *s, const char *txt) {
  tbe_str id = 0;
  if (txt && *txt) tbe_trace_intern(s->t, txt, strlen(txt), &id);
  return id;
}

/* ---- ids ---- */

static int64_t gt_pid(int64_t g) { return (g >> 24) & 0xFFFFFF; }
static int64_t gt_tid(int64_t g) { return g & 0xFFFFFF; }

static int thread_track(ns_state *s, int64_t gtid, uint32_t *track) {
  return tbe_trace_track(s->t, TBE_TRACK_THREAD, gt_pid(gtid), gt_tid(gtid), -1, track);
}

static int stream_track(ns_state *s, int64_t gpid, int64_t stream, int64_t dev, uint32_t *track) {
  if (dev < 0 || dev > INT32_MAX) return TBE_ECORRUPT; /* callers check first */
  int32_t d = (int32_t)dev;
  if (d != s->last_dev) {
    uint32_t di;
    int rc = tbe_trace_device(s->t, d, &di);
    if (rc) return rc;
    s->last_dev = d;
  }
  return tbe_trace_track(s->t, TBE_TRACK_STREAM, gpid >= 0 ? gt_pid(gpid) : -1, stream, d, track);
}

static int64_t corr_key(int64_t pid, int64_t corr) { return (int64_t)((uint64_t)pid << 40 ^ (uint64_t)corr); }

/* CUDA correlation ids are per process.  When several processes made API
 * calls, the model's correlation is (pid << 40) | id so that calls and GPU
 * work of different processes never link; otherwise it is the id itself. */
static uint64_t model_corr(const ns_state *s, int64_t pid, int64_t corr) {
  if (corr <= 0) return 0;
  if (!s->multi_proc) return (uint64_t)corr;
  return (uint64_t)pid << 40 | ((uint64_t)corr & (((uint64_t)1 << 40) - 1));
}

/* ---- enums ---- */

static void default_enums(ns_state *s) {
  for (int i = 0; i < NS_MAXENUM; i++) {
    s->mem_kind[i] = TBE_MEM_UNKNOWN;
    s->copy_kind[i] = TBE_COPY_UNKNOWN;
    s->copy_uvm[i] = 0;
  }
  /* nsys memory kinds: 0 pageable, 1 pinned, 2 device, 3 array, 4 managed,
   * 5 device static, 6 managed static, 7 unknown. */
  for (int i = 0; i <= 6; i++) s->mem_kind[i] = (uint8_t)(i + 1);
  /* Copy kinds 0..10 are CUPTI's; 11..13 are unified-memory HtoD/DtoH/DtoD. */
  for (int i = 0; i <= 10; i++) s->copy_kind[i] = (uint8_t)i;
  s->copy_kind[11] = TBE_COPY_HTOD;
  s->copy_kind[12] = TBE_COPY_DTOH;
  s->copy_kind[13] = TBE_COPY_DTOD;
  s->copy_uvm[11] = s->copy_uvm[12] = s->copy_uvm[13] = 1;
  /* Memory operations: 0 allocation, 1 deallocation. */
  for (int i = 0; i < NS_MAXENUM; i++) s->mem_free[i] = i == 1;
  s->ev_runtime = 0;
  s->ev_driver = 1;
  s->ev_backtrace = 67;
}

static int load_enum(ns_state *s, const char *table, void (*fn)(ns_state *, int64_t, const char *)) {
  static const char *const cols[] = {"!id", "!name"};
  int have[2];
  sqlite3_stmt *st;
  int rc = tbe__ns_select_cols(s, table, cols, 2, NULL, &st, have);
  if (rc || !st) return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 2);
    if (sqlite3_column_type(st, 1) == SQLITE_INTEGER && name)
      fn(s, sqlite3_column_int64(st, 1), name);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : tbe__ns_sql_error(s, table, rc);
}

static const char *suffix_after(const char *name, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(name, prefix, n) == 0 ? name + n : NULL;
}

static void enum_mem(ns_state *s, int64_t id, const char *name) {
  static const struct {
    const char *n;
    tbe_mem_kind k;
  } tab[] = {{"PAGEABLE", TBE_MEM_PAGEABLE}, {"PINNED", TBE_MEM_PINNED}, {"DEVICE", TBE_MEM_DEVICE},
             {"ARRAY", TBE_MEM_ARRAY}, {"MANAGED", TBE_MEM_MANAGED},
             {"DEVICE_STATIC", TBE_MEM_DEVICE_STATIC}, {"MANAGED_STATIC", TBE_MEM_MANAGED_STATIC},
             {"UNKNOWN", TBE_MEM_UNKNOWN}};
  const char *k = suffix_after(name, "CUDA_MEMOPR_MEMORY_KIND_");
  if (!k || id < 0 || id >= NS_MAXENUM) return;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(k, tab[i].n) == 0) s->mem_kind[id] = (uint8_t)tab[i].k;
}

static void enum_copy(ns_state *s, int64_t id, const char *name) {
  static const struct {
    const char *n;
    tbe_copy_kind k;
    uint8_t uvm;
  } tab[] = {{"UNKNOWN", TBE_COPY_UNKNOWN, 0}, {"HTOD", TBE_COPY_HTOD, 0}, {"DTOH", TBE_COPY_DTOH, 0},
             {"HTOA", TBE_COPY_HTOA, 0}, {"ATOH", TBE_COPY_ATOH, 0}, {"ATOA", TBE_COPY_ATOA, 0},
             {"ATOD", TBE_COPY_ATOD, 0}, {"DTOA", TBE_COPY_DTOA, 0}, {"DTOD", TBE_COPY_DTOD, 0},
             {"HTOH", TBE_COPY_HTOH, 0}, {"PTOP", TBE_COPY_PTOP, 0}, {"UVM_HTOD", TBE_COPY_HTOD, 1},
             {"UVM_DTOH", TBE_COPY_DTOH, 1}, {"UVM_DTOD", TBE_COPY_DTOD, 1}};
  const char *k = suffix_after(name, "CUDA_MEMCPY_KIND_");
  if (!k || id < 0 || id >= NS_MAXENUM) return;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(k, tab[i].n) == 0) {
      s->copy_kind[id] = (uint8_t)tab[i].k;
      s->copy_uvm[id] = tab[i].uvm;
    }
}

static void enum_mem_oper(ns_state *s, int64_t id, const char *name) {
  const char *k = suffix_after(name, "CUDA_DEV_MEM_EVENT_OPR_");
  if (!k || id < 0 || id >= NS_MAXENUM) return;
  if (strcmp(k, "ALLOCATION") == 0) s->mem_free[id] = 0;
  else if (strcmp(k, "DEALLOCATION") == 0) s->mem_free[id] = 1;
}

static void enum_class(ns_state *s, int64_t id, const char *name) {
  if (strcmp(name, "TRACE_PROCESS_EVENT_CUDA_RUNTIME") == 0) s->ev_runtime = id;
  else if (strcmp(name, "TRACE_PROCESS_EVENT_CUDA_DRIVER") == 0) s->ev_driver = id;
  else if (strcmp(name, "TRACE_PROCESS_EVENT_CUDABACKTRACE") == 0) s->ev_backtrace = id;
}

static uint8_t map_mem(const ns_state *s, int64_t k, int present) {
  return present && k >= 0 && k < NS_MAXENUM ? s->mem_kind[k] : TBE_MEM_UNKNOWN;
}

/* ---- session, processes, devices ---- */

static int load_session(ns_state *s) {
  static const char *const cols[] = {"utcEpochNs", "systemClockNs"};
  int have[2];
  sqlite3_stmt *st;
  int rc = tbe__ns_select_cols(s, "TARGET_INFO_SESSION_START_TIME", cols, 2, NULL, &st, have);
  if (rc) return rc;
  int found = 0;
  if (st) {
    if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t utc, sys = 0;
      if (col_i64(st, 1, &utc) == 1 && utc > 0) {
        if (col_i64(st, 2, &sys) != 1) sys = 0;
        if (tbe__sub_i64(utc, sys, &s->time_off) || !tbe__time_ok(s->time_off)) {
          sqlite3_finalize(st);
          return tbe__ns_fail_sql(s, TBE_ECORRUPT, "TARGET_INFO_SESSION_START_TIME",
                          "utcEpochNs - systemClockNs is out of range (more than 146 years from "
                          "1970)");
        }
        found = 1;
      }
    } else if (rc != SQLITE_DONE) {
      rc = tbe__ns_sql_error(s, "TARGET_INFO_SESSION_START_TIME", rc);
      sqlite3_finalize(st);
      return rc;
    }
    sqlite3_finalize(st);
  }
  if (!found)
    tbe_trace_warn(s->t, "nsys export has no session start time: times are nanoseconds from the "
                         "session start, not wall-clock");
  return 0;
}

static int load_names(ns_state *s) {
  int rc = 0;
  {
    static const char *const cols[] = {"!globalPid", "pid", "name"};
    int have[3];
    sqlite3_stmt *st;
    if ((rc = tbe__ns_select_cols(s, "PROCESSES", cols, 3, NULL, &st, have))) return rc;
    if (st) {
      int sr;
      while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t g, pid;
        const char *name = (const char *)sqlite3_column_text(st, 3);
        if (col_i64(st, 1, &g) != 1 || !name || !*name) continue;
        if (col_i64(st, 2, &pid) != 1) pid = gt_pid(g);
        if ((rc = nmap_put(&s->pnames, pid, text_id(s, name)))) break;
      }
      sqlite3_finalize(st);
      if (rc) return rc;
      if (sr != SQLITE_DONE) return tbe__ns_sql_error(s, "PROCESSES", sr);
    }
  }
  {
    static const char *const cols[] = {"name", "value"};
    int have[2];
    sqlite3_stmt *st;
    if ((rc = tbe__ns_select_cols(s, "TARGET_INFO_SYSTEM_ENV", cols, 2, " WHERE name = 'Hostname' LIMIT 1", &st,
                          have)))
      return rc;
    if (st && have[0] && have[1]) {
      if (sqlite3_step(st) == SQLITE_ROW && !s->t->host)
        s->t->host = text_id(s, (const char *)sqlite3_column_text(st, 2));
    }
    sqlite3_finalize(st);
  }
  return 0;
}

/* After the events: names for the processes and threads that were used. */
static int name_tracks(ns_state *s) {
  tbe_trace *t = s->t;
  nmap tnames;
  tbe__map_init(&tnames, s->a, TBE__SEED_PROCESS);
  static const char *const cols[] = {"!nameId", "!globalTid"};
  int have[2];
  sqlite3_stmt *st;
  int rc = tbe__ns_select_cols(s, "ThreadNames", cols, 2, NULL, &st, have);
  if (rc) return rc;
  if (st) {
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t nid, g;
      if (col_i64(st, 1, &nid) != 1 || col_i64(st, 2, &g) != 1) continue;
      tbe_str nm = str_of(s, nid, &rc);
      if (rc) break;
      if (nm && nmap_put(&tnames, g & 0xFFFFFFFFFFFFLL, nm)) rc = TBE_ENOMEM;
    }
    sqlite3_finalize(st);
    if (!rc && r != SQLITE_DONE) rc = tbe__ns_sql_error(s, "ThreadNames", r);
  }
  for (size_t i = 0; !rc && i < t->ntracks; i++) {
    tbe_track *tr = &t->tracks[i];
    if (tr->pid >= 0) {
      uint32_t pi;
      if ((rc = tbe_trace_process(t, tr->pid, &pi))) break;
      if (!t->processes[pi].name) {
        uint32_t nm = nmap_get(&s->pnames, tr->pid);
        if (nm != TBE_NONE) t->processes[pi].name = nm;
      }
      if (!t->processes[pi].host) t->processes[pi].host = t->host;
    }
    if (tr->type == TBE_TRACK_THREAD && !tr->name) {
      uint32_t nm = nmap_get(&tnames, (tr->pid << 24 | tr->tid) & 0xFFFFFFFFFFFFLL);
      if (nm != TBE_NONE) tr->name = nm;
    }
  }
  nmap_free(&tnames);
  return rc;
}

static int load_gpus(ns_state *s, const char *table) {
  static const char *const cols[] = {
      "cuDevice", "id", "name", "totalMemory", "memoryBandwidth", "clockRate", "smCount", "computeMajor",
      "computeMinor", "maxThreadsPerBlock", "maxWarpsPerSm", "maxRegistersPerBlock",
      "maxRegistersPerSm", "threadsPerWarp", "maxShmemPerBlock", "maxShmemPerSm",
      "maxShmemPerBlockOptin"};
  enum { NC = sizeof cols / sizeof cols[0] };
  int have[NC];
  sqlite3_stmt *st;
  int rc = tbe__ns_select_cols(s, table, cols, NC, NULL, &st, have);
  if (rc || !st) return rc;
  if (!have[0] && !have[1]) {
    sqlite3_finalize(st);
    return 0;
  }
  row r = {s, st, table, cols, 0, 0};
  int sr;
  while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
    r.rowid = sqlite3_column_int64(st, 0);
    int col = have[0] && !is_null(&r, 1) ? 1 : 2;
    int64_t id = get_i(&r, col, 0, 0);
    if (r.rc) break;
    if (id == -1) continue; /* a GPU that CUDA does not number: no device of ours */
    if (tbe__ns_check_device(&r, col, id, 1)) break;
    uint32_t di;
    if ((rc = tbe_trace_device(s->t, (int32_t)id, &di))) break;
    tbe_device *d = &s->t->devices[di];
    const char *name = (const char *)sqlite3_column_text(st, 3);
    if (name && *name) d->name = text_id(s, name);
    d->memory_bytes = get_i(&r, 4, d->memory_bytes, 0);
    d->memory_bandwidth = get_i(&r, 5, d->memory_bandwidth, 0);
    int64_t clk = get_i(&r, 6, 0, 0);
    if (clk > 0) d->clock_khz = (int32_t)(clk / 1000); /* nsys stores Hz */
    d->sm_count = (int32_t)get_i(&r, 7, d->sm_count, 0);
    d->cc_major = (int32_t)get_i(&r, 8, d->cc_major, 0);
    d->cc_minor = (int32_t)get_i(&r, 9, d->cc_minor, 0);
    d->max_threads_per_block = (int32_t)get_i(&r, 10, d->max_threads_per_block, 0);
    d->warp_size = (int32_t)get_i(&r, 14, d->warp_size, 0);
    int64_t warps = get_i(&r, 11, 0, 0);
    if (warps > 0 && d->warp_size > 0) d->max_threads_per_sm = (int32_t)(warps * d->warp_size);
    d->regs_per_block = (int32_t)get_i(&r, 12, d->regs_per_block, 0);
    d->regs_per_sm = (int32_t)get_i(&r, 13, d->regs_per_sm, 0);
    d->shared_per_block = get_i(&r, 15, d->shared_per_block, 0);
    d->shared_per_sm = get_i(&r, 16, d->shared_per_sm, 0);
    d->shared_per_block_optin = get_i(&r, 17, d->shared_per_block_optin, 0);
    if (r.rc) break;
  }
  sqlite3_finalize(st);
  if (r.rc) return r.rc;
  if (rc) return rc;
  return sr == SQLITE_DONE ? 0 : tbe__ns_sql_error(s, table, sr);
}

/* ---- activity tables ---- */

/* Event times from the row's start and end (nanoseconds of the session
 * clock) and the session's offset.  Outside the model's range they are
 * refused, naming the column (common/checked.h): r->rc is set. */
static void set_times(ns_state *s, row *r, tbe_event *ev, int64_t start, int64_t end) {
  int64_t a, b;
  const char *bad = NULL;
  if (tbe__add_i64(start, s->time_off, &a) || !tbe__time_ok(a)) bad = "start";
  else if (tbe__add_i64(end, s->time_off, &b) || !tbe__time_ok(b)) bad = "end";
  if (bad) {
    if (!r->rc)
      r->rc = tbe__ns_fail_row(s, r->table, r->rowid,
                       "column %s is out of range (more than 146 years from 1970)", bad);
    return;
  }
  ev->start_ns = a;
  ev->dur_ns = b - a; /* negative: the model clamps and flags it */
}

static int add_event(ns_state *s, row *r, const tbe_event *ev, const void *detail,
                     const tbe_arg *args, size_t n) {
  if (r->rc) return r->rc;
  if (s->t->nevents - s->ev_first >= s->opts->max_events) {
    char what[160];
    snprintf(what, sizeof what, "table %s row %" PRId64 ": more events than the limit", r->table,
             r->rowid);
    return tbe__import_limit(s->err, s->path, UINT64_MAX, TBE__LIM_EVENTS, s->opts, what);
  }
  progress(s);
  return tbe_trace_add_event(s->t, ev, detail, args, n, NULL);
}

enum { API_START = 1, API_END, API_CLASS, API_TID, API_CORR, API_NAME, API_RET };
static const char *const api_cols[] = {"!start", "!end", "eventClass", "globalTid",
                                       "correlationId", "!nameId", "returnValue"};

static int api_row(ns_state *s, row *r) {
  int rc = 0;
  int64_t cls = get_i(r, API_CLASS, s->ev_runtime, 0);
  if (cls == s->ev_backtrace && !s->driver_table) {
    s->skipped_backtrace++;
    return 0;
  }
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, API_START, 0, 1), end = get_i(r, API_END, 0, 1);
  int64_t gtid = get_i(r, API_TID, 0, 0);
  int64_t corr = get_i(r, API_CORR, 0, 0);
  int64_t nid = get_i(r, API_NAME, 0, 1);
  int64_t ret = get_i(r, API_RET, 0, 0);
  if (r->rc) return r->rc;
  set_times(s, r, &ev, start, end);
  ev.name = api_str_of(s, nid, &rc);
  if (rc) return rc;
  const char *nm = tbe_trace_str(s->t, ev.name);
  if (s->driver_table || cls == s->ev_driver)
    ev.kind = TBE_EV_DRIVER;
  else if (cls == s->ev_runtime)
    ev.kind = strncmp(nm, "cu", 2) == 0 && strncmp(nm, "cuda", 4) != 0 ? TBE_EV_DRIVER : TBE_EV_RUNTIME;
  else
    ev.kind = strncmp(nm, "cuda", 4) == 0 ? TBE_EV_RUNTIME : strncmp(nm, "cu", 2) == 0 ? TBE_EV_DRIVER
                                                                                       : TBE_EV_GENERIC;
  ev.correlation = model_corr(s, gt_pid(gtid), corr);
  if ((rc = thread_track(s, gtid, &ev.track))) return rc;
  if (corr > 0 && (rc = nmap_put(&s->corr_api, corr_key(gt_pid(gtid), corr), ev.name))) return rc;
  tbe_arg a;
  size_t na = 0;
  if (ret) {
    a.key = tbe_trace_str_id(s->t, "return");
    a.type = TBE_ARG_INT;
    a.v.i = ret;
    na = 1;
  }
  return add_event(s, r, &ev, NULL, &a, na);
}

/* 1 if the API call with this correlation has "Async" in its name. */
static uint8_t async_of(ns_state *s, int64_t gpid, int64_t corr) {
  uint32_t nm = nmap_get(&s->corr_api, corr_key(gt_pid(gpid), corr));
  return nm != TBE_NONE && strstr(tbe_trace_str(s->t, nm), "Async") != NULL;
}

enum { K_START = 1, K_END, K_DEV, K_CTX, K_STREAM, K_CORR, K_PID, K_DNAME, K_SNAME, K_MNAME, K_REGS,
       K_GX, K_GY, K_GZ, K_BX, K_BY, K_BZ, K_SSMEM, K_DSMEM, K_GRAPH };
static const char *const kernel_cols[] = {
    "!start", "!end", "!deviceId", "contextId", "!streamId", "correlationId", "globalPid",
    "demangledName", "shortName", "mangledName", "registersPerThread", "gridX", "gridY", "gridZ",
    "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory", "graphNodeId"};

/* A kernel's name, as Kineto and c++filt spell it.  nsys's demangledName
 * has NVIDIA's own spelling ("<(int)16, long>(char *, …, T2 *, …)") and
 * shortName drops the template arguments, so the name is mangledName when
 * libiberty demangles it: tbe_trace_finish then demangles it like every
 * other source's and keeps the mangled text as the "mangled name" arg.
 * Otherwise (a plain C name, or a form libiberty refuses) demangledName,
 * then shortName, then mangledName, whichever the row has; when that is
 * not mangledName, *arg carries mangledName (*na = 1). */
static int kernel_name(ns_state *s, row *r, tbe_str *name, tbe_arg *arg, size_t *na) {
  int rc = 0;
  tbe_str id[3] = {0, 0, 0}; /* demangledName, shortName, mangledName */
  for (int c = K_DNAME; c <= K_MNAME && !r->rc && !rc; c++) {
    int64_t nid = get_i(r, c, 0, 0);
    if (nid) id[c - K_DNAME] = str_of(s, nid, &rc);
  }
  if (rc || r->rc) return rc;
  tbe_str m = id[2];
  *name = 0;
  if (m) {
    uint32_t ok = nmap_get(&s->demangles, m);
    if (ok == TBE_NONE) {
      ok = tbe_demangle(tbe_trace_str(s->t, m), NULL, 0) >= 0;
      if (nmap_put(&s->demangles, m, ok)) return TBE_ENOMEM;
    }
    if (ok) *name = m;
  }
  if (!*name) *name = id[0] ? id[0] : id[1] ? id[1] : m;
  if (m && *name != m) {
    arg->key = text_id(s, "mangled name");
    arg->type = TBE_ARG_STR;
    arg->v.s = m;
    *na = 1;
  }
  return tbe_trace_error(s->t);
}

static int kernel_row(ns_state *s, row *r) {
  int rc = 0;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, K_START, 0, 1), end = get_i(r, K_END, 0, 1);
  int64_t dev = get_i(r, K_DEV, 0, 1), stream = get_i(r, K_STREAM, 0, 1);
  if (tbe__ns_check_device(r, K_DEV, dev, 0)) return r->rc;
  int64_t gpid = get_i(r, K_PID, -1, 0), corr = get_i(r, K_CORR, 0, 0);
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.context = (uint16_t)get_i(r, K_CTX, 0, 0);
  k.registers = (uint16_t)get_i(r, K_REGS, 0, 0);
  k.grid[0] = (uint32_t)get_i(r, K_GX, 1, 0);
  k.grid[1] = (uint32_t)get_i(r, K_GY, 1, 0);
  k.grid[2] = (uint32_t)get_i(r, K_GZ, 1, 0);
  k.block[0] = (uint32_t)get_i(r, K_BX, 1, 0);
  k.block[1] = (uint32_t)get_i(r, K_BY, 1, 0);
  k.block[2] = (uint32_t)get_i(r, K_BZ, 1, 0);
  k.static_shared = (uint32_t)get_i(r, K_SSMEM, 0, 0);
  k.dynamic_shared = (uint32_t)get_i(r, K_DSMEM, 0, 0);
  k.queued_ns = -1;
  k.occupancy_pct = -1;
  k.blocks_per_sm = -1;
  k.warps_per_sm = -1;
  int64_t graph = get_i(r, K_GRAPH, 0, 0);
  tbe_arg mangled;
  size_t na = 0;
  if ((rc = kernel_name(s, r, &ev.name, &mangled, &na))) return rc;
  if (r->rc) return r->rc;
  set_times(s, r, &ev, start, end);
  ev.kind = TBE_EV_KERNEL;
  ev.correlation = model_corr(s, gpid >= 0 ? gt_pid(gpid) : 0, corr);
  if (graph) ev.flags |= TBE_EVF_GRAPH;
  if ((rc = stream_track(s, gpid, stream, dev, &ev.track))) return rc;
  return add_event(s, r, &ev, &k, &mangled, na);
}

enum { C_START = 1, C_END, C_DEV, C_CTX, C_STREAM, C_CORR, C_PID, C_BYTES, C_KIND, C_SRC, C_DST,
       C_SRCDEV, C_DSTDEV, C_GRAPH };
static const char *const memcpy_cols[] = {"!start", "!end", "!deviceId", "contextId", "!streamId",
                                          "correlationId", "globalPid", "!bytes", "!copyKind",
                                          "srcKind", "dstKind", "srcDeviceId", "dstDeviceId",
                                          "graphNodeId"};

static int memcpy_row(ns_state *s, row *r) {
  int rc;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, C_START, 0, 1), end = get_i(r, C_END, 0, 1);
  int64_t dev = get_i(r, C_DEV, 0, 1), stream = get_i(r, C_STREAM, 0, 1);
  if (tbe__ns_check_device(r, C_DEV, dev, 0)) return r->rc;
  int64_t gpid = get_i(r, C_PID, -1, 0), corr = get_i(r, C_CORR, 0, 0);
  tbe_memcpy m;
  memset(&m, 0, sizeof m);
  m.bytes = (uint64_t)get_i(r, C_BYTES, 0, 1);
  int64_t kind = get_i(r, C_KIND, 0, 1);
  m.copy_kind = kind >= 0 && kind < NS_MAXENUM ? s->copy_kind[kind] : TBE_COPY_UNKNOWN;
  m.src_kind = map_mem(s, get_i(r, C_SRC, -1, 0), !is_null(r, C_SRC));
  m.dst_kind = map_mem(s, get_i(r, C_DST, -1, 0), !is_null(r, C_DST));
  m.context = (uint16_t)get_i(r, C_CTX, 0, 0);
  int src_dev = m.src_kind == TBE_MEM_DEVICE || m.src_kind == TBE_MEM_DEVICE_STATIC ||
                m.src_kind == TBE_MEM_ARRAY;
  int dst_dev = m.dst_kind == TBE_MEM_DEVICE || m.dst_kind == TBE_MEM_DEVICE_STATIC ||
                m.dst_kind == TBE_MEM_ARRAY;
  int64_t sdev = get_i(r, C_SRCDEV, src_dev ? dev : -1, 0), ddev = get_i(r, C_DSTDEV, dst_dev ? dev : -1, 0);
  if (tbe__ns_check_device(r, C_SRCDEV, sdev, 1) || tbe__ns_check_device(r, C_DSTDEV, ddev, 1)) return r->rc;
  m.src_device = (int32_t)sdev;
  m.dst_device = (int32_t)ddev;
  int64_t graph = get_i(r, C_GRAPH, 0, 0);
  if (r->rc) return r->rc;
  m.async = corr > 0 ? async_of(s, gpid, corr) : 0;
  set_times(s, r, &ev, start, end);
  ev.kind = TBE_EV_MEMCPY;
  ev.correlation = model_corr(s, gpid >= 0 ? gt_pid(gpid) : 0, corr);
  if (graph) ev.flags |= TBE_EVF_GRAPH;
  char name[64];
  snprintf(name, sizeof name, "Memcpy %s", tbe_copy_kind_name((tbe_copy_kind)m.copy_kind));
  ev.name = tbe_trace_str_id(s->t, name);
  if ((rc = stream_track(s, gpid, stream, dev, &ev.track))) return rc;
  tbe_arg a;
  size_t na = 0;
  if (kind >= 0 && kind < NS_MAXENUM && s->copy_uvm[kind]) {
    a.key = tbe_trace_str_id(s->t, "unified memory");
    a.type = TBE_ARG_INT;
    a.v.i = 1;
    na = 1;
  }
  return add_event(s, r, &ev, &m, &a, na);
}

enum { M_START = 1, M_END, M_DEV, M_CTX, M_STREAM, M_CORR, M_PID, M_VALUE, M_BYTES, M_KIND, M_GRAPH };
static const char *const memset_cols[] = {"!start", "!end", "!deviceId", "contextId", "!streamId",
                                          "correlationId", "globalPid", "value", "!bytes",
                                          "memKind", "graphNodeId"};

static int memset_row(ns_state *s, row *r) {
  int rc;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, M_START, 0, 1), end = get_i(r, M_END, 0, 1);
  int64_t dev = get_i(r, M_DEV, 0, 1), stream = get_i(r, M_STREAM, 0, 1);
  if (tbe__ns_check_device(r, M_DEV, dev, 0)) return r->rc;
  int64_t gpid = get_i(r, M_PID, -1, 0), corr = get_i(r, M_CORR, 0, 0);
  tbe_memset m;
  memset(&m, 0, sizeof m);
  m.value = (uint32_t)get_i(r, M_VALUE, 0, 0);
  m.bytes = (uint64_t)get_i(r, M_BYTES, 0, 1);
  m.mem_kind = map_mem(s, get_i(r, M_KIND, -1, 0), !is_null(r, M_KIND));
  m.context = (uint16_t)get_i(r, M_CTX, 0, 0);
  int64_t graph = get_i(r, M_GRAPH, 0, 0);
  if (r->rc) return r->rc;
  m.async = corr > 0 ? async_of(s, gpid, corr) : 0;
  set_times(s, r, &ev, start, end);
  ev.kind = TBE_EV_MEMSET;
  ev.correlation = model_corr(s, gpid >= 0 ? gt_pid(gpid) : 0, corr);
  if (graph) ev.flags |= TBE_EVF_GRAPH;
  char name[64];
  snprintf(name, sizeof name, "Memset (%s)", tbe_mem_kind_name((tbe_mem_kind)m.mem_kind));
  ev.name = tbe_trace_str_id(s->t, name);
  if ((rc = stream_track(s, gpid, stream, dev, &ev.track))) return rc;
  return add_event(s, r, &ev, &m, NULL, 0);
}

enum { U_START = 1, U_PID, U_DEV, U_ADDR, U_BYTES, U_KIND, U_OPER, U_STREAM, U_CORR };
static const char *const memuse_cols[] = {"!start", "globalPid", "!deviceId", "address", "!bytes",
                                          "memKind", "!memoryOperationType", "streamId",
                                          "correlationId"};

/* An allocation or free of the CUDA driver (CUPTI's memory activity, as
 * nsys exports it). */
static int memuse_row(ns_state *s, row *r) {
  int rc;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, U_START, 0, 1), dev = get_i(r, U_DEV, 0, 1);
  if (tbe__ns_check_device(r, U_DEV, dev, 0)) return r->rc;
  int64_t gpid = get_i(r, U_PID, -1, 0), corr = get_i(r, U_CORR, 0, 0);
  int64_t stream = get_i(r, U_STREAM, -1, 0), bytes = get_i(r, U_BYTES, 0, 1);
  int64_t oper = get_i(r, U_OPER, 0, 1);
  tbe_memory m;
  memset(&m, 0, sizeof m);
  m.addr = (uint64_t)get_i(r, U_ADDR, 0, 0);
  m.mem_kind = map_mem(s, get_i(r, U_KIND, -1, 0), !is_null(r, U_KIND));
  if (r->rc) return r->rc;
  if (bytes < 0) return tbe__ns_fail_row(s, r->table, r->rowid, "column %s is negative", "bytes");
  int is_free = oper >= 0 && oper < NS_MAXENUM && s->mem_free[oper];
  m.bytes = is_free ? -bytes : bytes;
  m.total_allocated = m.total_reserved = -1;
  m.device = (int32_t)dev;
  m.device_type = 1; /* Kineto's CUDA */
  m.source = TBE_MEMSRC_CUDA;
  set_times(s, r, &ev, start, start);
  ev.kind = TBE_EV_MEMORY;
  ev.correlation = model_corr(s, gpid >= 0 ? gt_pid(gpid) : 0, corr);
  ev.name = tbe_trace_str_id(s->t, "[memory]");
  if ((rc = stream_track(s, gpid, stream, dev, &ev.track))) return rc;
  return add_event(s, r, &ev, &m, NULL, 0);
}

enum { Y_START = 1, Y_END, Y_DEV, Y_STREAM, Y_CORR, Y_PID, Y_TYPE, Y_OLDTYPE, Y_EVENT };
static const char *const sync_cols[] = {"!start", "!end", "!deviceId", "!streamId", "correlationId",
                                        "globalPid", "syncType", "deprecatedSyncType", "eventId"};

static int sync_row(ns_state *s, row *r) {
  int rc;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, Y_START, 0, 1), end = get_i(r, Y_END, 0, 1);
  int64_t dev = get_i(r, Y_DEV, 0, 1), stream = get_i(r, Y_STREAM, 0, 1);
  if (tbe__ns_check_device(r, Y_DEV, dev, 0)) return r->rc;
  int64_t gpid = get_i(r, Y_PID, -1, 0), corr = get_i(r, Y_CORR, 0, 0);
  int64_t type = is_null(r, Y_TYPE) ? get_i(r, Y_OLDTYPE, 0, 0) : get_i(r, Y_TYPE, 0, 0);
  int64_t cev = get_i(r, Y_EVENT, 0, 0);
  if (r->rc) return r->rc;
  /* A stream belongs to one device.  Exports have been seen to give sync
   * rows another process's device ordinal (device 0 for the process that
   * ran everything on device 1): trust the device of the stream's (or the
   * process's only) GPU work over the row. */
  int64_t pid = gpid >= 0 ? gt_pid(gpid) : -1;
  uint32_t known = nmap_get(&s->stream_dev, corr_key(pid, stream));
  if (known == TBE_NONE) known = nmap_get(&s->pid_dev, pid);
  if (known < TBE_NONE - 1 && (int64_t)known != dev) {
    dev = known;
    s->sync_moved++;
  }
  /* ENUM_CUPTI_SYNC_TYPE is CUPTI's numbering (0..4). */
  static const char *const names[] = {"Synchronization", "Event Sync", "Stream Wait Event", "Stream Sync",
                                      "Context Sync"};
  tbe_sync y;
  memset(&y, 0, sizeof y);
  y.sync_kind = type >= 0 && type <= 4 ? (uint8_t)type : TBE_SYNC_UNKNOWN;
  y.stream = stream;
  /* CUPTI uses 0xFFFFFFFF for "no event". */
  y.cuda_event = cev > 0 && cev != 0xFFFFFFFFLL ? (uint64_t)cev : 0;
  set_times(s, r, &ev, start, end);
  ev.kind = TBE_EV_SYNC;
  ev.correlation = model_corr(s, gpid >= 0 ? gt_pid(gpid) : 0, corr);
  ev.name = tbe_trace_str_id(s->t, names[y.sync_kind]);
  if ((rc = stream_track(s, gpid, stream, dev, &ev.track))) return rc;
  return add_event(s, r, &ev, &y, NULL, 0);
}

enum { O_START = 1, O_END, O_TID, O_NAME, O_TYPE };
static const char *const ovh_cols[] = {"!start", "!end", "globalTid", "nameId", "overheadType"};

static int overhead_row(ns_state *s, row *r) {
  int rc = 0;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  int64_t start = get_i(r, O_START, 0, 1), end = get_i(r, O_END, 0, 1);
  int64_t gtid = get_i(r, O_TID, 0, 0), nid = get_i(r, O_NAME, 0, 0);
  if (r->rc) return r->rc;
  set_times(s, r, &ev, start, end);
  ev.kind = TBE_EV_OVERHEAD;
  ev.name = nid ? str_of(s, nid, &rc) : 0;
  if (rc) return rc;
  if (!ev.name) ev.name = tbe_trace_str_id(s->t, "Profiler overhead");
  if (!r->rc && end > start) s->t->overhead_ns += (uint64_t)(end - start); /* in range: fits */
  if ((rc = thread_track(s, gtid, &ev.track))) return rc;
  return add_event(s, r, &ev, NULL, NULL, 0);
}

enum { N_START = 1, N_END, N_TYPE, N_CAT, N_COLOR, N_TEXT, N_TID, N_ENDTID, N_TEXTID, N_DOMAIN, N_U64,
       N_I64, N_DBL, N_U32, N_I32, N_FLT };
static const char *const nvtx_cols[] = {"!start", "end", "!eventType", "category", "color", "text",
                                        "globalTid", "endGlobalTid", "textId", "domainId",
                                        "uint64Value", "int64Value", "doubleValue", "uint32Value",
                                        "int32Value", "floatValue"};

static int nvtx_domain_row(ns_state *s, row *r) {
  int64_t type = get_i(r, N_TYPE, 0, 1), dom = get_i(r, N_DOMAIN, 0, 0);
  if (r->rc || type != 75 || !dom) return r->rc;
  int rc = 0;
  tbe_str name = text_id(s, (const char *)sqlite3_column_text(r->st, N_TEXT));
  if (!name && !is_null(r, N_TEXTID)) name = str_of(s, get_i(r, N_TEXTID, 0, 0), &rc);
  if (rc) return rc;
  return nmap_put(&s->domains, dom, name);
}

/* One of PyTorch's operator ranges as the operator it stands for
 * (trace/model/ops.h), its shapes and sequence number read from the
 * text, which is not kept (every one differs: op_id). */
static int torch_op(ns_state *s, row *r, int64_t gtid, int64_t start,
                    const tbe__torch_op_text *op, const char *raw) {
  uint32_t track;
  int rc = thread_track(s, gtid, &track);
  if (rc) return rc;
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  set_times(s, r, &ev, start, get_i(r, N_END, start, 0));
  if (r->rc) return r->rc;
  if (s->t->nevents - s->ev_first >= s->opts->max_events) return add_event(s, r, &ev, NULL, NULL, 0);
  progress(s);
  return tbe__trace_add_torch_op(s->t, track, ev.start_ns, ev.dur_ns, raw, op->name_len, op->sizes,
                                 op->sizes_len, op->seq, 0, NULL);
}

static int nvtx_row(ns_state *s, row *r) {
  int rc = 0;
  int64_t type = get_i(r, N_TYPE, 0, 1);
  int64_t start = get_i(r, N_START, 0, 1);
  int64_t gtid = get_i(r, N_TID, 0, 0);
  if (r->rc) return r->rc;
  /* 34 mark, 59 push/pop, 60 start/end, 70/71 NVTXT ranges, 39 thread name. */
  if (type != 34 && type != 59 && type != 60 && type != 70 && type != 71 && type != 39) return 0;
  const char *raw = (const char *)sqlite3_column_text(r->st, N_TEXT);
  /* PyTorch's operator ranges (--pytorch=autograd-nvtx): operators. */
  tbe__torch_op_text op;
  if (type == 59 && raw && !get_i(r, N_DOMAIN, 0, 0) && !is_null(r, N_END) &&
      tbe__torch_nvtx_parse(raw, strlen(raw), &op))
    return torch_op(s, r, gtid, start, &op, raw);
  tbe_str text = text_id(s, raw);
  if (!text && !is_null(r, N_TEXTID)) {
    text = str_of(s, get_i(r, N_TEXTID, 0, 0), &rc);
    if (rc || r->rc) return rc ? rc : r->rc;
  }
  uint32_t track;
  if ((rc = thread_track(s, gtid, &track))) return rc;
  if (type == 39) {
    if (text) s->t->tracks[track].name = text;
    return 0;
  }
  tbe_event ev;
  memset(&ev, 0, sizeof ev);
  ev.track = track;
  ev.name = text;
  tbe_nvtx nv;
  memset(&nv, 0, sizeof nv);
  int64_t dom = get_i(r, N_DOMAIN, 0, 0);
  if (dom) {
    uint32_t d = nmap_get(&s->domains, dom);
    nv.domain = d != TBE_NONE ? d : 0;
  }
  nv.color = (uint32_t)get_i(r, N_COLOR, 0, 0);
  nv.category = (uint32_t)get_i(r, N_CAT, 0, 0);
  if (!is_null(r, N_U64) || !is_null(r, N_U32)) {
    nv.payload_type = TBE_PAYLOAD_UINT64;
    nv.payload.u = (uint64_t)get_i(r, is_null(r, N_U64) ? N_U32 : N_U64, 0, 0);
  } else if (!is_null(r, N_I64) || !is_null(r, N_I32)) {
    nv.payload_type = TBE_PAYLOAD_INT64;
    nv.payload.i = get_i(r, is_null(r, N_I64) ? N_I32 : N_I64, 0, 0);
  } else if (!is_null(r, N_DBL) || !is_null(r, N_FLT)) {
    nv.payload_type = TBE_PAYLOAD_DOUBLE;
    nv.payload.d = sqlite3_column_double(r->st, is_null(r, N_DBL) ? N_FLT : N_DBL);
  }
  if (r->rc) return r->rc;
  tbe_arg a;
  size_t na = 0;
  if (type == 34) {
    ev.kind = TBE_EV_NVTX_MARK;
    set_times(s, r, &ev, start, start);
  } else {
    ev.kind = TBE_EV_NVTX_RANGE;
    if (is_null(r, N_END)) {
      s->nvtx_open++; /* never closed in the capture */
      set_times(s, r, &ev, start, start);
    } else {
      set_times(s, r, &ev, start, get_i(r, N_END, start, 0));
    }
    if (type == 60) {
      ev.flags |= TBE_EVF_ASYNC;
      int64_t etid = get_i(r, N_ENDTID, gtid, 0);
      if (etid != gtid) {
        a.key = tbe_trace_str_id(s->t, "end tid");
        a.type = TBE_ARG_INT;
        a.v.i = gt_tid(etid);
        na = 1;
      }
    }
  }
  if (r->rc) return r->rc;
  return add_event(s, r, &ev, &nv, &a, na);
}

/* ---- driver ---- */

static const char *const tables_read[] = {
    "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER", "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_OVERHEAD", "PROFILER_OVERHEAD", "NVTX_EVENTS",
    "CUDA_GPU_MEMORY_USAGE_EVENTS"};

static int run(ns_state *s) {
  int rc;
  /* Is it an nsys export at all? */
  int has_strings = tbe__ns_table_exists(s, "StringIds");
  if (has_strings < 0) {
    int code = sqlite3_errcode(s->db) == SQLITE_NOMEM ? TBE_ENOMEM : TBE_ECORRUPT;
    return tbe__import_fail(s->err, code, s->path, UINT64_MAX, 0, 0,
                            "not a readable SQLite database: %s", sqlite3_errmsg(s->db));
  }
  int has_meta = tbe__ns_table_exists(s, "META_DATA_EXPORT") == 1 || tbe__ns_table_exists(s, "EXPORT_META_DATA") == 1;
  int has_data = 0;
  for (size_t i = 0; i < sizeof tables_read / sizeof tables_read[0]; i++)
    if (tbe__ns_table_exists(s, tables_read[i]) == 1) has_data = 1;
  if (!has_strings || (!has_meta && !has_data))
    return tbe__import_fail(s->err, TBE_EFORMAT, s->path, UINT64_MAX, 0, 0,
                            "SQLite database but not an Nsight Systems export (no StringIds%s table)",
                            has_strings ? " or export metadata" : "");
  if (sqlite3_prepare_v2(s->db, "SELECT value FROM StringIds WHERE id = ?1", -1, &s->str_stmt, NULL) !=
      SQLITE_OK)
    return tbe__ns_sql_error(s, "StringIds", sqlite3_errcode(s->db));

  s->t->source = TBE_SRC_NSYS;
  default_enums(s);
  if ((rc = load_enum(s, "ENUM_CUDA_MEM_KIND", enum_mem))) return rc;
  if ((rc = load_enum(s, "ENUM_CUDA_MEMCPY_OPER", enum_copy))) return rc;
  if ((rc = load_enum(s, "ENUM_NSYS_EVENT_CLASS", enum_class))) return rc;
  if ((rc = load_enum(s, "ENUM_CUDA_DEV_MEM_EVENT_OPER", enum_mem_oper))) return rc;
  if ((rc = load_session(s))) return rc;
  if ((rc = load_names(s))) return rc;
  if ((rc = load_gpus(s, "TARGET_INFO_GPU"))) return rc;
  if ((rc = load_gpus(s, "TARGET_INFO_CUDA_DEVICE"))) return rc;
  if (s->opts && s->opts->progress)
    for (size_t i = 0; i < sizeof tables_read / sizeof tables_read[0]; i++) tbe__ns_count_rows(s, tables_read[i]);

  {
    sqlite3_stmt *st;
    if (tbe__ns_table_exists(s, "CUPTI_ACTIVITY_KIND_RUNTIME") == 1 &&
        sqlite3_prepare_v2(s->db,
                           "SELECT count(DISTINCT (globalTid >> 24) & 16777215) FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME",
                           -1, &st, NULL) == SQLITE_OK) {
      if (sqlite3_step(st) == SQLITE_ROW) s->multi_proc = sqlite3_column_int64(st, 0) > 1;
      sqlite3_finalize(st);
    }
  }
  int have[32];
  s->driver_table = 0;
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_RUNTIME", api_cols, 7, NULL, have, api_row))) return rc;
  s->driver_table = 1;
  rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_DRIVER", api_cols, 7, NULL, have, api_row);
  s->driver_table = 0;
  if (rc) return rc;
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_KERNEL", kernel_cols, 20, NULL, have, kernel_row))) return rc;
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_MEMCPY", memcpy_cols, 14, NULL, have, memcpy_row))) return rc;
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_MEMSET", memset_cols, 11, NULL, have, memset_row))) return rc;
  for (size_t i = 0; i < s->t->ntracks; i++) {
    const tbe_track *tr = &s->t->tracks[i];
    if (tr->type != TBE_TRACK_STREAM || tr->device < 0) continue;
    if ((rc = nmap_put(&s->stream_dev, corr_key(tr->pid, tr->tid), (uint32_t)tr->device))) return rc;
    uint32_t pd = nmap_get(&s->pid_dev, tr->pid);
    if ((rc = nmap_put(&s->pid_dev, tr->pid,
                       pd == TBE_NONE || pd == (uint32_t)tr->device ? (uint32_t)tr->device : TBE_NONE - 1)))
      return rc;
  }
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", sync_cols, 9, NULL, have, sync_row)))
    return rc;
  if (s->sync_moved)
    tbe_trace_warn(s->t, "nsys: %" PRIu64 " synchronization rows named a device other than the one "
                   "their stream's work ran on; they were placed on the stream's device",
                   s->sync_moved);
  /* after the syncs: memory rows' tracks (stream -1 when none) say
   * nothing of where a stream's work ran */
  if ((rc = tbe__ns_each_row(s, "CUDA_GPU_MEMORY_USAGE_EVENTS", memuse_cols, 9, NULL, have,
                             memuse_row)))
    return rc;
  if ((rc = tbe__ns_each_row(s, "CUPTI_ACTIVITY_KIND_OVERHEAD", ovh_cols, 5, NULL, have, overhead_row))) return rc;
  if ((rc = tbe__ns_each_row(s, "PROFILER_OVERHEAD", ovh_cols, 4, NULL, have, overhead_row))) return rc;
  if ((rc = tbe__ns_each_row(s, "NVTX_EVENTS", nvtx_cols, 16, " WHERE eventType = 75", have, nvtx_domain_row)))
    return rc;
  if ((rc = tbe__ns_each_row(s, "NVTX_EVENTS", nvtx_cols, 16, " WHERE eventType <> 75", have, nvtx_row))) return rc;
  if ((rc = name_tracks(s))) return rc;
  if (s->nvtx_open)
    tbe_trace_warn(s->t, "nsys: %" PRIu64 " NVTX ranges were never closed (kept with zero duration)",
                   s->nvtx_open);
  if (s->opts && s->opts->progress) s->opts->progress(s->opts->progress_ctx, s->rows_done, s->rows_total);
  return tbe_trace_error(s->t);
}

static int import_nsys(tbe_trace *t, tbe__input *in, const char *path,
                       const tbe_import_options *o, tbe_import_error *err) {
  (void)in; /* closed: SQLite opens the file by its path (a regular file, checked) */
  ns_state s;
  memset(&s, 0, sizeof s);
  s.t = t;
  s.path = path;
  s.err = err;
  s.opts = o;
  s.a = o->allocator;
  nmap *maps[] = {&s.strs, &s.api_strs, &s.demangles, &s.corr_api, &s.domains, &s.pnames,
                  &s.stream_dev, &s.pid_dev};
  for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
    tbe__map_init(maps[i], s.a, TBE__SEED_PROCESS);
  s.last_dev = -1;
  s.ev_first = t->nevents;
  char *uri = tbe__ns_make_uri(s.a, path);
  if (!uri) return TBE_ENOMEM;
  int rc = sqlite3_open_v2(uri, &s.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  tbe__free(s.a, uri);
  if (rc != SQLITE_OK) {
    int code = rc == SQLITE_NOMEM ? TBE_ENOMEM : rc == SQLITE_CANTOPEN ? TBE_ENOENT : TBE_ECORRUPT;
    tbe__import_fail(err, code, path, UINT64_MAX, 0, 0, "cannot open as SQLite: %s",
                     s.db ? sqlite3_errmsg(s.db) : sqlite3_errstr(rc));
    sqlite3_close(s.db);
    return code;
  }
  rc = run(&s);
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  sqlite3_finalize(s.str_stmt);
  sqlite3_close(s.db);
  nmap_free(&s.strs);
  nmap_free(&s.api_strs);
  nmap_free(&s.demangles);
  nmap_free(&s.corr_api);
  nmap_free(&s.domains);
  nmap_free(&s.pnames);
  nmap_free(&s.stream_dev);
  nmap_free(&s.pid_dev);
  return rc;
}

/* ---- detection (the table's sniff test) ---- */

static int nsys_sniff(const tbe__sniff *s) {
  return !s->in->gzip && s->n >= 16 && memcmp(s->head, "SQLite format 3", 16) == 0
             ? TBE__SNIFF_SURE
             : TBE__SNIFF_NO;
}

const tbe__importer tbe__importer_nsys = {
    TBE_FORMAT_NSYS_SQLITE, "nsys-sqlite", nsys_sniff, import_nsys, 1,
    "an Nsight Systems SQLite export cannot be read from standard input (SQLite needs the file): "
    "give its path"};
