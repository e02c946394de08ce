/* intern.h: the string interner: one dense id per distinct byte string.
 *
 * tbe__intern_add gives each distinct string of n bytes (any bytes, NUL
 * included; the caller's text need not be NUL-terminated) the id
 * 0, 1, 2, ... in order of first appearance, and keeps one copy of it.
 * The ids are insertion order, never the hash's order, so anything built
 * from them is the same in every run whatever the seed.  Besides text
 * (names, keys), any fixed-size binary key that wants a dense id, or only
 * a "seen before?" answer, goes through here: a (device, inode) pair, a
 * packed (id, category).  Pack such keys without padding bytes.
 *
 * Storage: the copies live in an arena of blocks (4 KB, doubling up to
 * 64 KB; a longer string gets a block of its own), each NUL-terminated, so tbe__intern_str gives
 * a C string whose pointer stays valid until tbe__intern_clear or
 * tbe__intern_deinit, however many strings are added later.  Per id:
 * 16 bytes (pointer, length, 32 bits of hash); the lookup table is a
 * tbe__index (map.h), 8 bytes per slot at a load of at most 1/2.
 *
 * Cost: a lookup hashes the bytes once (tbe__hash_bytes: about 1 ns per
 * 8 bytes after the first 16), reads 1.5 table slots on average, compares
 * 32 bits of hash and then the bytes of the one candidate that matches.
 * Growing the table never reads the strings again.  Callers that hash
 * elsewhere (a parser thread, ahead of the thread that interns) pass the
 * hash to the _hashed forms; it must be tbe__intern_hash of the same
 * bytes.
 *
 * Limits and errors: strings up to UINT32_MAX - 1 bytes (a longer one is
 * refused with TBE_ETOOBIG, and only it) and 2^31 - 1 ids; allocation only
 * through the caller's tbe_allocator.  The first allocation failure, and
 * running out of ids, are sticky (tbe__intern_error): every string
 * already added stays, lookups work, new strings are refused with it.
 *
 * Thread safety: none inside.  Lookups and tbe__intern_str on an interner
 * nobody adds to may run on any number of threads. */
#ifndef TBE_COMMON_INTERN_H
#define TBE_COMMON_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "common/map.h"

typedef struct tbe__istr {
  const char *s;  /* NUL-terminated copy */
  uint32_t len;
  uint32_t hash;  /* low 32 bits of tbe__intern_hash */
} tbe__istr;

struct tbe__iblock;

typedef struct tbe__intern {
  tbe__index ix;
  tbe__istr *ent;
  size_t n, cap;
  struct tbe__iblock *blocks; /* the arena; the head is being filled */
  int err;
  const tbe_allocator *a;
} tbe__intern;

/* An empty interner (no allocation yet).  `a` must outlive it; `seed` as
 * in map.h (TBE__SEED_PROCESS: the process's secret). */
void tbe__intern_init(tbe__intern *in, const tbe_allocator *a, uint64_t seed);
void tbe__intern_deinit(tbe__intern *in);
/* Forgets every string (ids start again at 0); keeps the table, the id
 * array and one arena block for reuse.  Pointers from tbe__intern_str
 * become invalid. */
void tbe__intern_clear(tbe__intern *in);

static inline uint64_t tbe__intern_hash(const tbe__intern *in, const void *s, size_t n) {
  return tbe__hash_bytes(s, n, in->ix.seed);
}

/* The id of s[0..n), adding a copy when it is new (*added = 1 then;
 * `added` may be NULL).  s may be NULL when n is 0.  Returns 0, or
 * TBE_ENOMEM / TBE_ETOOBIG (sticky: *id is then TBE__NOIDX). */
int tbe__intern_add(tbe__intern *in, const void *s, size_t n, uint32_t *id, int *added);
int tbe__intern_add_hashed(tbe__intern *in, const void *s, size_t n, uint64_t hash, uint32_t *id,
                           int *added);

/* The id of s[0..n), or TBE__NOIDX when it was never added. */
uint32_t tbe__intern_find(const tbe__intern *in, const void *s, size_t n);
uint32_t tbe__intern_find_hashed(const tbe__intern *in, const void *s, size_t n, uint64_t hash);

/* The string of `id` (< tbe__intern_count), NUL-terminated. */
static inline const char *tbe__intern_str(const tbe__intern *in, uint32_t id) {
  return in->ent[id].s;
}
static inline size_t tbe__intern_len(const tbe__intern *in, uint32_t id) { return in->ent[id].len; }
static inline size_t tbe__intern_count(const tbe__intern *in) { return in->n; }
static inline int tbe__intern_error(const tbe__intern *in) { return in->err; }

#endif
