/* xspace_int.h: the parts of the XSpace importer.
 *
 * One importer in three files sharing the state below (the essay of the
 * whole is at the top of xspace.c):
 *   xspace.c        the driver: the input read whole, the top-level fields
 *                   walked by hand, the host pid and the Task Environment,
 *                   warnings, one decoded plane at a time, steps; the
 *                   schema-aware wire walk that names a malformed field
 *   xspace_plane.c  one decoded plane into the model: lines to tracks,
 *                   events to kinds, details and args (XLA's conventions
 *                   and ours)
 *   xspace_meta.c   what a plane's events look up: stat and event metadata
 *                   by id, stats read as ints, strings or args, devices,
 *                   track pids, step candidates, NVTX lines by name
 * Per plane: the metadata caches (smd, emd) and the NVTX line order are
 * the decoded plane's and freed with it; the rest lives for the import. */
#ifndef TBE_IMPORT_XSPACE_INT_H
#define TBE_IMPORT_XSPACE_INT_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "import/importer.h"
#include "profiler/xplane.pb-c.h"
#include "tbexport/error.h"
#include "trace/model/vocab.h"

typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;
typedef Tensorflow__Profiler__XEventMetadata XEventMetadata;
typedef Tensorflow__Profiler__XStatMetadata XStatMetadata;

/* Line timestamps below this are relative to the session (1e17 ns is 1973). */
#define XS_EPOCH_MIN_NS 100000000000000000LL
/* Synthetic pids: far above any OS pid. */
#define XS_SYNTH_PID ((int64_t)1 << 40)
/* Our exporter's line of step markers (steps no host event carries). */
#define XS_STEP_LINE ((int64_t)3 << 32)

/* ---- stat names we act on ---- */

enum {
  S_OTHER = 0,
  S_CORRELATION,
  S_KERNEL_DETAILS,
  S_MEMCPY_DETAILS,
  S_MEMSET_DETAILS,
  S_CONTEXT,
  S_OCCUPANCY,
  S_STEP_NUM,
  S_GROUP_ID,
  S_STEP_NAME,
  S_ROOT,
  S_DEVICE_ID,
  S_EXTERNAL_ID,
  S_SYNC_KIND,
  S_SYNC_STREAM,
  S_CUDA_EVENT,
  S_NVTX_DOMAIN,
  S_NVTX_COLOR,
  S_NVTX_CATEGORY,
  S_NVTX_PAYLOAD,
  S_VALUE,
  S_ADDR,
  S_NUM_BYTES,
  S_TOTAL_ALLOC,
  S_TOTAL_RES,
  S_DEV_ORD,
  S_TBE_KIND,
  S_TBE_CAT,
  S_ASYNC,
  S_TF_OP,
  S_SRC_TF_OP,
  /* From here on, kinds past the 32 of the consumed mask (xs_stats): their
   * stats are always consumed (take_stat returns 1), never args. */
  S_MEMALLOC_DETAILS,
  S_MEMFREE_DETAILS,
  S_MEM_SOURCE,
  S_MEM_KIND,
  S_MEM_DEVTYPE
};

/* ---- importer state ---- */

/* P_GPU_BAD: "/device:GPU:<n>" with an integer n that is no ordinal
 * (importer.h): refused, never read as another plane. */
typedef enum { P_HOST, P_HOST_NVTX, P_HOST_PYTHON, P_GPU, P_TASKENV, P_OTHER, P_GPU_BAD } plane_class;

typedef struct smd_cache {
  const XStatMetadata *md;
  int kind;        /* S_* */
  tbe_str key;     /* interned name, TBE_NONE until first used */
} smd_cache;

typedef struct emd_cache {
  const XEventMetadata *md;
  tbe_str name;       /* TBE_NONE until first used */
  tbe_str long_name;  /* full name when display_name differs, else 0 */
} emd_cache;

typedef struct step_cand {
  int64_t num;
  int64_t start, end;
  tbe_str name;
  uint32_t track; /* the host track of the event that marks it, or TBE_NONE */
} step_cand;

typedef struct xs_state {
  tbe_trace *t;
  const tbe_allocator *a;   /* everything the import allocates */
  ProtobufCAllocator pa;    /* protobuf-c's decoding, through `a` */
  int pb_nomem;             /* `a` refused protobuf-c a block: a NULL from an
                               unpack is TBE_ENOMEM, not a corrupt message */
  const char *path;
  tbe_import_error *err;
  int64_t start_ns;    /* profile_start_time, 0 if unknown */
  int64_t stop_ns;
  int warned_relative;
  int64_t host_pid;    /* process_id of the host planes, or XS_SYNTH_PID */
  int have_host_pid;
  /* Per plane. */
  smd_cache *smd;
  size_t nsmd;
  tbe__map smap;
  emd_cache *emd;
  size_t nemd;
  tbe__map emap;
  /* Scratch for args. */
  tbe_arg *args;
  uint8_t *akind; /* S_* of each arg */
  size_t nargs, cap_args, cap_akind;
  /* Steps. */
  step_cand *steps;
  size_t nsteps, cap_steps;
  step_cand *groups;  /* by group_id (num = group id) */
  size_t ngroups, cap_groups;
  tbe__map gmap;
  uint64_t unknown_md;
  int ours;            /* written by our exporter (Task Environment: tbexport_source) */
  int64_t (*track_pids)[3]; /* dev (-1: host thread), id, pid: tbexport_track_pids */
  size_t ntrack_pids, cap_track_pids;
  int track_pids_sorted;
  /* Limits and where we are, for messages. */
  const tbe_import_options *o;
  size_t ev_first;     /* t->nevents before this import */
  size_t plane_off;    /* byte offset of the plane being imported */
  size_t plane_idx;
  uint32_t *lorder;    /* the plane's named lines sorted by (name, index) */
  size_t nlorder;
} xs_state;

/* ---- xspace_meta.c ---- */
int tbe__xs_add_group(xs_state *s, int64_t group, int64_t start, int64_t end);
int tbe__xs_add_step_cand(xs_state *s, step_cand **arr, size_t *n, size_t *cap, int64_t num, int64_t start,
                         int64_t end, tbe_str name, uint32_t track);
plane_class tbe__xs_classify_plane(const char *name, int32_t *gpu);
void tbe__xs_free_metadata(xs_state *s);
tbe_str tbe__xs_intern(xs_state *s, const char *str);
int64_t tbe__xs_line_named(xs_state *s, const XPlane *p, const char *name, size_t n, int64_t dflt);
int tbe__xs_load_metadata(xs_state *s, const XPlane *p);
int tbe__xs_parse_track_pids(xs_state *s, const char *p);
void tbe__xs_plane_device_info(xs_state *s, const XPlane *p, int32_t dev);
int64_t tbe__xs_plane_pid(xs_state *s, const XPlane *p, int64_t fallback);
int tbe__xs_push_arg(xs_state *s, smd_cache *c, const XStat *st, int kind);
int tbe__xs_push_raw_arg(xs_state *s, const tbe_arg *a);
int tbe__xs_push_str_arg(xs_state *s, const char *key, const char *val);
int64_t tbe__xs_track_pid(xs_state *s, int64_t dev, int64_t id, int64_t pid);

/* The state's allocator for protobuf-c (s->pa) and its maps. */
void tbe__xs_state_init(xs_state *s, const tbe_allocator *a);

/* ---- xspace_plane.c ---- */
/* Imports decoded plane `p` (the pidx-th) into s->t. */
int tbe__xs_import_plane(xs_state *s, const XPlane *p, size_t pidx);

/* ---- inline helpers of the per-event path ---- */

/* The value of id `k` in one of the state's maps, or TBE_NONE. */
static inline uint32_t tbe__xs_idmap_get(const tbe__map *m, int64_t k) {
  const uint32_t *v = tbe__map_get(m, (uint64_t)k);
  return v ? *v : TBE_NONE;
}

static inline const smd_cache *tbe__xs_stat_md(xs_state *s, int64_t id) {
  uint32_t i = tbe__xs_idmap_get(&s->smap, id);
  return i == TBE_NONE ? NULL : &s->smd[i];
}

/* The string value of a str or ref stat, or NULL. */
static inline const char *tbe__xs_stat_str(xs_state *s, const XStat *st) {
  if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE) return st->str_value;
  if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE) {
    const smd_cache *c = tbe__xs_stat_md(s, (int64_t)st->ref_value);
    return c ? c->md->name : NULL;
  }
  return NULL;
}

static inline int tbe__xs_stat_int(const XStat *st, int64_t *v) {
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE: *v = st->int64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE: *v = (int64_t)st->uint64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE: *v = (int64_t)st->double_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE: {
      char *end;
      errno = 0;
      long long x = strtoll(st->str_value, &end, 10);
      if (end == st->str_value || *end || errno) return 0;
      *v = x;
      return 1;
    }
    default: return 0;
  }
}

static inline int tbe__xs_stat_double(const XStat *st, double *v) {
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE: *v = (double)st->int64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE: *v = (double)st->uint64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE: *v = st->double_value; return 1;
    default: return 0;
  }
}

#endif
