/* testutil.h: small helpers shared by the unit tests. */
#ifndef TBE_TESTUTIL_H
#define TBE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

/* Creates a fresh temporary directory (removed by tu_rmrf); returns a
 * malloc'd path. */
char *tu_mkdtemp(void);
/* Removes a directory tree. */
void tu_rmrf(const char *path);
/* Reads a whole file; returns malloc'd bytes (NUL-terminated) or NULL. */
uint8_t *tu_read_file(const char *path, size_t *len);
/* Writes a whole file; returns 0 or -1. */
int tu_write_file(const char *path, const void *data, size_t len);
/* Path of a file under test/data (static buffer, valid until the next call). */
const char *tu_data(const char *rel);
/* Joins two path parts into a malloc'd string. */
char *tu_join(const char *a, const char *b);
/* Number of non-directories below `dir` (symlinks not followed). */
long tu_count_files(const char *dir);

/* A test allocator for allocation-failure sweeps: the first `left`
 * allocations (and reallocations) succeed, every later one fails; `live`
 * counts the blocks outstanding, so a sweep can check that nothing leaked. */
typedef struct tu_failalloc {
  long left;
  long live;
  size_t biggest; /* largest single request seen (for memory-bound tests) */
} tu_failalloc;

/* Resets `f` to let `succeed` allocations through and returns an allocator
 * that draws on it. */
tbe_allocator tu_failalloc_init(tu_failalloc *f, long succeed);

/* A counting allocator for memory-bound tests: each block carries its
 * size in a header, so `bytes` is what is allocated now and `peak` the
 * most it ever was (updated atomically: the library allocates from worker
 * threads too).  Never fails. */
typedef struct tu_countalloc {
  size_t bytes, peak;
  long live;
} tu_countalloc;

/* Resets `c` and returns an allocator that counts into it. */
tbe_allocator tu_countalloc_init(tu_countalloc *c);

/* Imports `path` with allocation number n failing, for n = 0, 1, ... (every
 * n up to `dense`, then with a stride of n/64, at least 7, so that an
 * import of 50,000 allocations takes hundreds of attempts, not thousands,
 * and every phase of it still fails somewhere) until an import succeeds.  Each failed
 * attempt must return TBE_ENOMEM with a message saying "out of memory", and
 * no attempt may leave a block allocated.  Fails the running CMocka test
 * otherwise.  Returns the number of attempts that failed. */
long tu_import_alloc_sweep(const char *path, long dense);

/* The same sweep over any operation: run(a, ctx) is called with
 * allocation n failing, for n = 0, 1, ... (every n up to `dense`, then
 * every 7th) until it returns 0.  Each failed run must return TBE_ENOMEM
 * and free everything it allocated (checked).  Fails the running CMocka
 * test otherwise, or when no run failed at all (the operation did not
 * allocate: the sweep measured nothing).  Returns the failed runs. */
long tu_alloc_sweep(int (*run)(const tbe_allocator *a, void *ctx), void *ctx, long dense);

#endif
