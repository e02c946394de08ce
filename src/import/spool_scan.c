/* spool_scan.c: the scanning phase of spool -> trace (spool_int.h):
 * each spool item copied into the scan's array of its type, string and
 * note items interned into the trace as they come. */
#include "import/spool_int.h"

#include <string.h>

#define TAKE(vec, T)                     \
  do {                                   \
    T x_;                                \
    if (len < sizeof x_) return 0;       \
    memcpy(&x_, body, sizeof x_);        \
    rc = PUSH(vec, &x_);                 \
  } while (0)

int tbe__convert_on_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  scan *s = ctx;
  int rc = 0;
  switch (type) {
    case TBE__SP_INFO:
      if (len >= sizeof s->info) {
        memcpy(&s->info, body, sizeof s->info);
        s->have_info = 1;
      }
      break;
    case TBE__SP_HOST:
      if (len >= sizeof s->host) len = sizeof s->host - 1;
      memcpy(s->host, body, len);
      s->host[len] = '\0';
      break;
    case TBE__SP_CMD:
      if (len >= sizeof s->cmd) len = sizeof s->cmd - 1;
      memcpy(s->cmd, body, len);
      s->cmd[len] = '\0';
      break;
    case TBE__SP_STR: {
      if (len < 4) return 0;
      uint32_t id;
      memcpy(&id, body, 4);
      if (id == 0 || id > (1u << 26)) return 0; /* ids are dense from 1 */
      while (s->strs.n <= id) {
        tbe_str z = 0;
        if ((rc = PUSH(s->strs, &z))) return rc;
      }
      const char *p = (const char *)body + 4;
      size_t n = len - 4;
      /* The model rejects embedded NULs: cut there. */
      const char *nul = memchr(p, '\0', n);
      if (nul) n = (size_t)(nul - p);
      tbe_str st;
      if ((rc = tbe_trace_intern(s->t, p, n, &st))) return rc;
      s->strs.v[id] = st;
      break;
    }
    case TBE__SP_NOTE: {
      const char *p = (const char *)body;
      size_t n = len;
      const char *nul = memchr(p, '\0', n);
      if (nul) n = (size_t)(nul - p);
      tbe_str st;
      if ((rc = tbe_trace_intern(s->t, p, n, &st))) return rc;
      rc = PUSH(s->notes, &st);
      break;
    }
    case TBE__SP_KERNEL: TAKE(s->kernels, tbe__sp_kernel); break;
    case TBE__SP_MEMCPY: TAKE(s->memcpys, tbe__sp_memcpy); break;
    case TBE__SP_MEMSET: TAKE(s->memsets, tbe__sp_memset); break;
    case TBE__SP_API: TAKE(s->apis, tbe__sp_api); break;
    case TBE__SP_SYNC: TAKE(s->syncs, tbe__sp_sync); break;
    case TBE__SP_MARKER: TAKE(s->markers, tbe__sp_marker); break;
    case TBE__SP_MARKER_DATA: TAKE(s->mdata, tbe__sp_marker_data); break;
    case TBE__SP_OVERHEAD: TAKE(s->overheads, tbe__sp_overhead); break;
    case TBE__SP_DEVICE: TAKE(s->devices, tbe__sp_device); break;
    case TBE__SP_CONTEXT: TAKE(s->contexts, tbe__sp_context); break;
    case TBE__SP_MEMORY: TAKE(s->memory, tbe__sp_memory); break;
    case TBE__SP_THREAD_NAME: TAKE(s->tnames, tbe__sp_thread_name); break;
    case TBE__SP_WINDOW: TAKE(s->windows, tbe__sp_window); break;
    case TBE__SP_STEP: TAKE(s->steps, tbe__sp_step); break;
    case TBE__SP_RANK: {
      /* The first valid one counts (the collector writes one); a rank that
       * contradicts its world size is no rank. */
      tbe__sp_rank r;
      if (len < sizeof r || s->have_rank) break;
      memcpy(&r, body, sizeof r);
      if (r.rank < 0 || r.world_size < 0 || (r.world_size > 0 && r.rank >= r.world_size)) break;
      if (r.local_rank < -1 || (r.world_size > 0 && r.local_rank >= r.world_size))
        r.local_rank = -1;
      s->rank = r;
      s->have_rank = 1;
      size_t jl = len - sizeof r;
      if (jl >= sizeof s->job) jl = sizeof s->job - 1;
      memcpy(s->job, body + sizeof r, jl);
      s->job[jl] = '\0';
      break;
    }
    case TBE__SP_SIGNAL:
      if (len >= sizeof s->signal && !s->have_signal) {
        memcpy(&s->signal, body, sizeof s->signal);
        s->have_signal = 1;
      }
      break;
    case TBE__SP_STATS:
      if (len >= sizeof s->stats) memcpy(&s->stats, body, sizeof s->stats);
      break;
    case TBE__SP_END:
      if (len >= sizeof s->end) {
        memcpy(&s->end, body, sizeof s->end);
        s->have_end = 1;
      }
      break;
    default: break; /* unknown item: skipped */
  }
  return rc;
}

void tbe__convert_scan_free(scan *s) {
  free(s->strs.v);
  free(s->kernels.v);
  free(s->memcpys.v);
  free(s->memsets.v);
  free(s->apis.v);
  free(s->syncs.v);
  free(s->markers.v);
  free(s->mdata.v);
  free(s->overheads.v);
  free(s->devices.v);
  free(s->contexts.v);
  free(s->memory.v);
  free(s->tnames.v);
  free(s->windows.v);
  free(s->steps.v);
  free(s->notes.v);
}
