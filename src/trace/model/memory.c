/* memory.c: the memory curve of a trace (tbe__trace_memory_curve, a pass
 * of tbe_trace_finish).
 *
 * A TBE_EV_MEMORY event is one allocation (bytes > 0) or free (bytes < 0)
 * reported by a source (tbe_memory.source): the CUDA driver (CUPTI's
 * memory activity, nsys; TBE_MEMSRC_UNKNOWN counts as the driver) or a
 * framework's allocator (PyTorch's caching allocator, Kineto's [memory]).
 * This pass makes one curve per (process, device) out of them:
 *
 *   - Where they count.  Device memory (device, device static, managed,
 *     array, unknown kinds) counts on its device; pinned and pageable host
 *     allocations of the driver on the host (the event's device becomes
 *     -1 and its device_type 0, as Kineto numbers the CPU).  An
 *     allocator's events count where the allocator said.
 *   - Which source is the curve.  A process's allocator events for a
 *     device, when it has any; else its driver events.  The events of the
 *     other source stay in the trace, renamed "[cuda memory]", so that
 *     Kineto's clients (the PyTorch plugin's Memory view, HTA), which read
 *     every "[memory]" instant as one curve, read one curve, not two; a
 *     curve's own events named "[cuda memory]" (by an earlier pass) are
 *     named "[memory]" again.  An event named "[cuda memory]" is read as
 *     the driver's whatever its source says: the name is the mark a trace
 *     read back from our own outputs keeps.
 *   - Totals.  Each source's events of a (process, device) get running
 *     totals in time order (start, then track, then position), the
 *     source's own where it gave them (total_allocated, total_reserved >=
 *     0): for the driver, allocated = reserved = the live bytes of the
 *     allocations seen (a free subtracts the size of the allocation at its
 *     address; without an address, its own bytes); for an allocator, a
 *     missing allocated total is the last total plus the event's bytes and
 *     a missing reserved total the larger of the last reserved and the
 *     allocated (a lower bound: the caching allocator never holds less
 *     than it hands out).  No total goes below 0.
 *   - A free whose allocation was not seen (it was made before the profile
 *     began) subtracts nothing: the curve counts what was allocated inside
 *     the window, from 0.  Such frees are counted and the trace gets one
 *     warning saying how many.  An allocation at an address already live
 *     replaces the earlier one (its size is subtracted first: the free was
 *     lost).
 *
 * Invariants: the pass only fills totals left at -1, renames, and moves
 * host allocations to the host, all by rules of the events alone, so a
 * second run changes nothing (idempotent), and a trace written to Chrome
 * JSON and read back, totals included, gets the same totals.  Cost: one
 * sort of the memory events, O(n log n), and one address map per curve.
 *
 * Layering: a pass of finish.c; reaches the storage only through the
 * public tbe_trace_* calls and model_int.h. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/model/model_int.h"

/* ---- the events, grouped ---- */

/* One memory event, with the keys that group and order it. */
typedef struct mem_ref {
  int64_t pid;   /* the process of its track */
  int64_t start; /* the event's start */
  int32_t dev;   /* the device it counts on (-1: the host) */
  uint32_t cuda; /* 1: the driver's, 0: an allocator's */
  uint32_t track;
  uint32_t ev; /* index in t->events */
} mem_ref;

static int cmp_ref(const void *x, const void *y) {
  const mem_ref *a = x, *b = y;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
  if (a->cuda != b->cuda) return a->cuda < b->cuda ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->track != b->track) return a->track < b->track ? -1 : 1;
  return (a->ev > b->ev) - (a->ev < b->ev);
}

static int host_kind(uint8_t k) { return k == TBE_MEM_PINNED || k == TBE_MEM_PAGEABLE; }

/* ---- running totals ---- */

/* The driver's curve of refs r[0..n): live bytes by address.  Adds the
 * frees of unseen allocations to *unseen.  0 or TBE_ENOMEM. */
static int fill_cuda(tbe_trace *t, const mem_ref *r, size_t n, uint64_t *unseen) {
  tbe__map live; /* address -> index in r of its allocation */
  tbe__map_init(&live, tbe__trace_allocator(t), TBE__SEED_PROCESS);
  int64_t cur = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    tbe_memory *m = &t->memory[t->events[r[i].ev].detail];
    int64_t b = m->bytes;
    if (m->addr && b > 0) {
      int added;
      uint32_t *v = tbe__map_put(&live, m->addr, &added);
      if (!v) {
        rc = tbe__map_error(&live);
        break;
      }
      if (!added)
        cur = tbe__sat_sub(cur, t->memory[t->events[r[*v].ev].detail].bytes); /* free lost */
      *v = (uint32_t)i;
      cur = tbe__sat_add(cur, b);
    } else if (m->addr && b < 0) {
      const uint32_t *v = tbe__map_get(&live, m->addr);
      if (v) {
        cur = tbe__sat_sub(cur, t->memory[t->events[r[*v].ev].detail].bytes);
        tbe__map_del(&live, m->addr);
      } else {
        ++*unseen;
      }
    } else {
      cur = tbe__sat_add(cur, b); /* no address: the event's own bytes */
    }
    if (cur < 0) cur = 0;
    if (m->total_allocated >= 0)
      cur = m->total_allocated; /* the source's word */
    else
      m->total_allocated = cur;
    if (m->total_reserved < 0) m->total_reserved = m->total_allocated;
  }
  tbe__map_deinit(&live);
  return rc;
}

/* An allocator's curve of refs r[0..n): its own totals, the gaps filled. */
static void fill_allocator(tbe_trace *t, const mem_ref *r, size_t n) {
  int64_t alloc = 0, res = 0;
  for (size_t i = 0; i < n; i++) {
    tbe_memory *m = &t->memory[t->events[r[i].ev].detail];
    if (m->total_allocated >= 0) {
      alloc = m->total_allocated;
    } else {
      alloc = tbe__sat_add(alloc, m->bytes);
      if (alloc < 0) alloc = 0;
      m->total_allocated = alloc;
    }
    if (m->total_reserved >= 0)
      res = m->total_reserved;
    else
      m->total_reserved = res = res > alloc ? res : alloc;
  }
}

/* ---- the pass ---- */

/* The process of the trace's host threads when they are of one process,
 * else -1. */
static int64_t single_process(const tbe_trace *t) {
  int64_t one = -1;
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (tr->type != TBE_TRACK_THREAD) continue;
    if (one >= 0 && tr->pid != one) return -1;
    one = tr->pid;
  }
  return one;
}

/* The refs of every memory event with its detail, hosts moved to the
 * host; *out (freed by the caller) holds *n of them.  A stream track
 * without a process (pid -1: a GPU row of Chrome JSON, which names none)
 * counts as the process of the host threads when they are of one, so a
 * trace read back from our Chrome JSON keeps one curve per process. */
static int collect(tbe_trace *t, tbe_str cuda_name, mem_ref **out, size_t *n) {
  int64_t one = single_process(t);
  size_t k = 0;
  for (size_t i = 0; i < t->nevents; i++)
    if (t->events[i].kind == TBE_EV_MEMORY && tbe_trace_memory(t, &t->events[i])) k++;
  *n = k;
  *out = NULL;
  if (!k) return 0;
  mem_ref *r = tbe__alloc(tbe__trace_allocator(t), k * sizeof *r);
  if (!r) return tbe__trace_fail(t, TBE_ENOMEM);
  k = 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_MEMORY) continue;
    tbe_memory *m = (tbe_memory *)tbe_trace_memory(t, e);
    if (!m) continue;
    int cuda = m->source != TBE_MEMSRC_ALLOCATOR || (cuda_name != TBE_NONE && e->name == cuda_name);
    if (cuda && host_kind(m->mem_kind)) {
      m->device = -1;
      m->device_type = 0;
    }
    int64_t pid = e->track < t->ntracks ? t->tracks[e->track].pid : 0;
    if (pid == -1 && e->track < t->ntracks && t->tracks[e->track].type == TBE_TRACK_STREAM) pid = one;
    r[k++] = (mem_ref){pid, e->start_ns, m->device, (uint32_t)cuda, e->track, (uint32_t)i};
  }
  qsort(r, k, sizeof *r, cmp_ref);
  *out = r;
  return 0;
}

int tbe__trace_memory_curve(tbe_trace *t) {
  if (!t->nmemory) return 0;
  tbe_str cuda_name = tbe_trace_find_str(t, "[cuda memory]", 13);
  mem_ref *r;
  size_t n;
  int rc = collect(t, cuda_name, &r, &n);
  if (rc || !n) return rc;
  uint64_t unseen = 0;
  tbe_str mem_name = TBE_NONE;
  for (size_t i = 0; i < n && !rc;) {
    /* one (process, device): [i, j) the allocator's, [j, k) the driver's */
    size_t j = i, k;
    while (j < n && r[j].pid == r[i].pid && r[j].dev == r[i].dev && !r[j].cuda) j++;
    k = j;
    while (k < n && r[k].pid == r[i].pid && r[k].dev == r[i].dev) k++;
    fill_allocator(t, r + i, j - i);
    rc = fill_cuda(t, r + j, k - j, &unseen);
    /* the curve's events named as Kineto names them, the other's apart */
    int other = j > i;
    for (size_t x = other ? j : i; x < k && !rc; x++) {
      tbe_event *e = &t->events[r[x].ev];
      if (other && e->name != cuda_name) {
        if (cuda_name == TBE_NONE) rc = tbe_trace_intern(t, "[cuda memory]", 13, &cuda_name);
        if (!rc) e->name = cuda_name;
      } else if (!other && cuda_name != TBE_NONE && e->name == cuda_name) {
        if (mem_name == TBE_NONE) rc = tbe_trace_intern(t, "[memory]", 8, &mem_name);
        if (!rc) e->name = mem_name;
      }
    }
    i = k;
  }
  tbe__free(tbe__trace_allocator(t), r);
  if (rc) return tbe__trace_fail(t, rc);
  if (unseen)
    rc = tbe_trace_warn(t,
                        "memory: %llu free%s of memory allocated before the profile began: not "
                        "counted (the curve counts what was allocated inside the profile, from 0)",
                        (unsigned long long)unseen, unseen == 1 ? "" : "s");
  return rc;
}
