/* spool_pymem.h: the Python hook's memory file (<spool dir>/<pid>.pymem)
 * -> trace model, read by the spool conversion before the trace is
 * finished (spool.c).
 *
 * The file (written by src/collect/python/sitecustomize.py at the exit of
 * a process that initialized CUDA through PyTorch, or that imported JAX;
 * to a temporary name, then renamed) is text, one item a line, fields cut
 * by one space, numbers in decimal:
 *
 *   tbexport-pymem 1                      first line: the format, version 1
 *   clock WALL_NS COLLECTOR_NS            time.time_ns() and the collector's
 *                                         clock (tbexport_now_ns) at one instant
 *   torch VERSION                         (informational)
 *   peak-reset 0|1                        the program reset torch's peaks
 *   device D ALLOCATED RESERVED MAX_ALLOCATED MAX_RESERVED MAX_ENTRIES
 *                                         the caching allocator of GPU D at exit:
 *                                         the end state from its segments, torch's
 *                                         own peaks, the history's ring size
 *   b ADDR SIZE                           a block of D allocated at exit
 *   e ACTION TIME_US ADDR SIZE STREAM     one entry of D's history, oldest first;
 *                                         ACTION as torch names it (alloc,
 *                                         free_requested, free_completed,
 *                                         segment_alloc, segment_free,
 *                                         segment_map, segment_unmap, oom, ...)
 *   jax D TIME_NS IN_USE PEAK RESERVED LIMIT
 *                                         one sample of JAX's device D (-1: absent)
 *   end                                   last line: the file is whole
 *
 * Lines of other keywords, and entries of other actions, are skipped (a
 * later version may add them).  A file that breaks these rules (a bad
 * number, a line too long, no `end`) is left out whole, with one warning
 * in the trace naming the file and the byte offset.  Nothing read is
 * trusted: every number is checked, and memory grows with the file's
 * lines only (never by a count read from it).
 *
 * What becomes of it: for each device, `alloc` and `free_requested`
 * become TBE_EV_MEMORY events ("[memory]", source TBE_MEMSRC_ALLOCATOR,
 * device type 1) on the main thread's track of the process, +/- the
 * block's size, with the totals after each computed backward from the end
 * state (see spool_pymem.c); JAX's samples become counter tracks of the
 * GPU ("JAX bytes in use", ...); torch's own peaks counter tracks
 * ("torch max_memory_allocated", "torch max_memory_reserved", one sample
 * at exit) and, when the history's peak differs from torch's by more
 * than 1%, a warning. */
#ifndef TBE_IMPORT_SPOOL_PYMEM_H
#define TBE_IMPORT_SPOOL_PYMEM_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/trace.h"

/* Reads the n bytes of a .pymem file (`label` names it in warnings) for
 * process `pid` into trace t (not finished), keeping events within
 * [t->start_ns, t->stop_ns] when the trace has a span; `a` the scratch
 * (NULL: the trace's allocator).  A bad file is a warning in t.  Returns 0 or TBE_ENOMEM (then t's sticky error). */
int tbe__pymem_to_trace(const char *data, size_t n, const char *label, int64_t pid, tbe_trace *t,
                        const tbe_allocator *a);

/* DIR/<pid>.pymem, when there is one (none: 0, nothing done), as above;
 * a file that cannot be read is a warning. */
int tbe__pymem_file_to_trace(const char *dir, int64_t pid, tbe_trace *t, const tbe_allocator *a);

#endif
