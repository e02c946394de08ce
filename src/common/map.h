/* map.h: hashing, and the library's two open-addressing hash tables.
 *
 * Before writing a hash table, use one of these:
 *  - tbe__map: integer keys (uint64_t, any value) to uint32_t values, with
 *    removal.  For ids, correlation keys, (id, kind) pairs packed into 64
 *    bits, to an id or an index (wider values: an index into the caller's
 *    array of them).
 *  - tbe__index: the keys live in the caller's own array and the table
 *    holds indexes into it.  The caller hashes its key (tbe__hash_*) and
 *    compares the candidates the table gives back; nothing is copied.  For
 *    compound keys that are already stored (tracks, labels, tag triples).
 *  - byte strings, or any fixed-size binary key that should get a dense id
 *    in order of first appearance (pairs such as (device, inode)): the
 *    interner of common/intern.h, which is a tbe__index over its own arena.
 *
 * Layout and cost.  Both tables are a power-of-two array of slots probed
 * linearly from the hash's low bits.  The load factor is at most 1/2: a
 * table grows (doubles, all at once) before an insertion would fill more
 * than half of it, so a successful lookup reads 1.5 slots and a miss 2.5
 * on average, and growth costs O(1) amortized per insertion; there is no
 * incremental rehashing and no per-operation cost beyond the probe.  A
 * tbe__map slot is 12 bytes (keys and values in two arrays, so a probe
 * reads 8 keys per cache line; 12 rather than 16 bytes because inserting
 * into a growing table is bound by memory: measured by bench_toolbox,
 * 16-byte slots cost a third more); a tbe__index slot is 8 bytes
 * (32 bits of the key's hash, index + 1), so growing an index never
 * touches the caller's keys and a probe compares hashes before it calls
 * for a key comparison.  tbe__map_del shifts the following entries back
 * (no tombstones): a table that sees many removals stays as fast as a
 * fresh one.  Memory: n entries take between 2n and 4n slots (16 at
 * least), plus the old table for the moment it doubles; tbe__*_reserve
 * with a known count avoids the doublings (and their cost, most of an
 * insertion's).
 *
 * The hash.  tbe__hash_bytes reads 16 bytes per 64x64->128-bit multiply
 * (two overlapping 8-byte reads for the last 16; only strings under 4
 * bytes are read a byte at a time); tbe__hash_u64 is two multiplies.  Both
 * are keyed by a 64-bit seed, and every multiply has a seed-derived
 * operand on both sides, so keys chosen without knowing the seed spread
 * as random keys do.  This is what a hostile trace is: kernel names, ids
 * or correlation numbers picked so that an unkeyed hash (FNV-1a, a public
 * mixer, the low bits) sends them all to one slot make every insertion
 * walk all the others, which is quadratic (bench_toolbox: 20,000 ids
 * picked against the unkeyed mixer of the importers' old maps take 0.24 s
 * there and 1.2 ms here; issue 12's 80,000 distinct device ids took 106 s
 * when they were scanned linearly).  The seed is a per-process secret
 * (tbe__hash_seed: the kernel's AT_RANDOM bytes) unless a table is given
 * one (tests).  It is not a cryptographic MAC: it resists input that does
 * not know the seed, which never leaves the process.  Speed on short
 * names (bench_toolbox, in one run with the twins): an importer's
 * interning of trace names, hashing included, costs about 21 ns a lookup
 * against 33 ns with the model's old FNV-1a interner.
 *
 * Determinism.  Iteration order (tbe__map_next, slot order) depends on the
 * seed and changes from run to run: nothing that reaches an output may
 * depend on it.  Sort, or keep insertion order in the caller's array (the
 * interner's ids are insertion order).
 *
 * Errors.  Allocation goes through the caller's tbe_allocator only.  The
 * first failure is sticky (tbe__map_error, tbe__index_error): the table
 * keeps every entry it had, later insertions fail with it, lookups keep
 * working.  Sizes are limited to 2^31 entries (TBE_ETOOBIG).
 *
 * Thread safety: none inside.  Lookups on a table nobody modifies may run
 * on any number of threads at once; a modification needs the caller's
 * exclusion. */
#ifndef TBE_COMMON_MAP_H
#define TBE_COMMON_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tbexport/common.h"

/* "no entry": the value tbe__index_first/next and tbe__intern_find return
 * when there is no (further) candidate. */
#define TBE__NOIDX UINT32_MAX

/* Pass as a seed for the process's secret seed. */
#define TBE__SEED_PROCESS 0

/* ---- hashing ---- */

/* The per-process secret seed (never 0; the same for the whole process). */
uint64_t tbe__hash_seed(void);

static inline uint64_t tbe__hash_fold(uint64_t a, uint64_t b) {
  unsigned __int128 r = (unsigned __int128)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* The seed a table uses for `seed` (TBE__SEED_PROCESS: the process's). */
static inline uint64_t tbe__hash_seed_of(uint64_t seed) { return seed ? seed : tbe__hash_seed(); }

/* Hash of n bytes at p (n may be 0, p then may be NULL). */
uint64_t tbe__hash_bytes(const void *p, size_t n, uint64_t seed);

/* FNV-1a (64 and 32 bits), unkeyed: for what must hash the same on every
 * machine and in every release (tag names, file names, a lock's byte),
 * never for a table's slots (see "The hash" above).  Start with
 * TBE__FNV64_BASIS / TBE__FNV32_BASIS; chain calls to hash pieces. */
#define TBE__FNV64_BASIS 1469598103934665603ULL
#define TBE__FNV32_BASIS 2166136261u
static inline uint64_t tbe__fnv1a64(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}
static inline uint32_t tbe__fnv1a32(const void *p, size_t n, uint32_t h) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

/* Hash of an integer: two folded multiplies.  One was not enough: keys
 * that differ only in their high half (i << 32, the pid/tid packing of
 * the importers) clustered under one seed in 18 (a mean probe run of up
 * to 140 at 200k keys); the second round spreads the high product into
 * the low bits the table indexes with. */
static inline uint64_t tbe__hash_u64(uint64_t k, uint64_t seed) {
  return tbe__hash_fold(tbe__hash_fold(k ^ seed, (seed >> 32 | seed << 32) ^ 0x9e3779b97f4a7c15ull),
                        seed ^ 0xbf58476d1ce4e5b9ull);
}

/* ---- tbe__map: uint64_t -> uint32_t ---- */

typedef struct tbe__map {
  uint64_t *key;       /* cap keys; TBE__MAP_EMPTY = a free slot */
  uint32_t *val;       /* cap values */
  size_t cap, n;       /* n counts the entries, the aside one included */
  uint64_t seed;
  uint32_t aside_val;  /* the value of key TBE__MAP_EMPTY, kept outside */
  int aside;
  int err;
  const tbe_allocator *a;
} tbe__map;

/* The key that marks a free slot; it is still a valid key (kept aside). */
#define TBE__MAP_EMPTY UINT64_MAX

/* An empty map (no allocation yet).  `a` must outlive the map. */
void tbe__map_init(tbe__map *m, const tbe_allocator *a, uint64_t seed);
void tbe__map_deinit(tbe__map *m);
/* Forgets every entry, keeps the memory (and the sticky error). */
void tbe__map_clear(tbe__map *m);
/* Room for `n` entries in all without growing.  0 or an error. */
int tbe__map_reserve(tbe__map *m, size_t n);

/* The value of `key`, or NULL.  The pointer is valid until the next
 * insertion or removal. */
static inline uint32_t *tbe__map_get(const tbe__map *m, uint64_t key) {
  tbe__map *mm = (tbe__map *)m; /* the value is the caller's to change */
  if (key == TBE__MAP_EMPTY) return m->aside ? &mm->aside_val : NULL;
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)tbe__hash_u64(key, m->seed) & mask;; i = (i + 1) & mask) {
    if (m->key[i] == key) return &mm->val[i];
    if (m->key[i] == TBE__MAP_EMPTY) return NULL;
  }
}
/* The value of `key`, adding it with value 0 when absent (*added = 1 then;
 * `added` may be NULL).  NULL after an allocation failure (sticky).  The
 * pointer is valid until the next insertion or removal. */
uint32_t *tbe__map_put(tbe__map *m, uint64_t key, int *added);
/* Sets key -> val, replacing.  0 or the sticky error. */
int tbe__map_set(tbe__map *m, uint64_t key, uint32_t val);
/* Removes `key`: 1 when it was there, 0 when not. */
int tbe__map_del(tbe__map *m, uint64_t key);
/* Walks the entries in an order that depends on the seed: start with
 * *it = 0; each call gives one entry and returns 1, then 0 at the end.
 * The table must not change during the walk. */
int tbe__map_next(const tbe__map *m, size_t *it, uint64_t *key, uint32_t *val);

static inline size_t tbe__map_count(const tbe__map *m) { return m->n; }
static inline int tbe__map_error(const tbe__map *m) { return m->err; }

/* ---- tbe__index: indexes into the caller's array ---- */

typedef struct tbe__index {
  uint64_t *slot; /* (hash32 << 32) | (index + 1); 0 = free */
  size_t cap, n;
  uint64_t seed;
  int err;
  const tbe_allocator *a;
} tbe__index;

/* A probe in progress (tbe__index_first/next). */
typedef struct tbe__iprobe {
  size_t i;
  uint32_t h;
} tbe__iprobe;

void tbe__index_init(tbe__index *x, const tbe_allocator *a, uint64_t seed);
void tbe__index_deinit(tbe__index *x);
void tbe__index_clear(tbe__index *x);
int tbe__index_reserve(tbe__index *x, size_t n);

/* The first index stored under `hash` (its low 32 bits), or TBE__NOIDX;
 * then tbe__index_next gives the others, until TBE__NOIDX.  Candidates
 * share the hash's low 32 bits: the caller compares its keys.  The probe
 * is valid until the next insertion. */
static inline uint32_t tbe__index_next(const tbe__index *x, tbe__iprobe *p) {
  if (!x->cap) return TBE__NOIDX;
  size_t mask = x->cap - 1;
  for (uint64_t s; (s = x->slot[p->i]) != 0;) {
    p->i = (p->i + 1) & mask;
    if ((uint32_t)(s >> 32) == p->h) return (uint32_t)s - 1;
  }
  return TBE__NOIDX;
}

static inline uint32_t tbe__index_first(const tbe__index *x, uint64_t hash, tbe__iprobe *p) {
  p->h = (uint32_t)hash;
  p->i = x->cap ? (size_t)p->h & (x->cap - 1) : 0;
  return tbe__index_next(x, p);
}

/* Adds `idx` (< 2^31 - 1) under `hash`; the caller has checked that its
 * key is not there.  0, or the sticky error (TBE_ENOMEM, TBE_ETOOBIG). */
int tbe__index_add(tbe__index *x, uint64_t hash, uint32_t idx);

static inline size_t tbe__index_count(const tbe__index *x) { return x->n; }
static inline int tbe__index_error(const tbe__index *x) { return x->err; }

/* Test hooks: the longest distance of an entry from its home slot, and
 * the sum of the distances (a lookup of every entry reads n + sum slots). */
void tbe__index_probe_stats(const tbe__index *x, size_t *max, size_t *sum);
void tbe__map_probe_stats(const tbe__map *m, size_t *max, size_t *sum);

#endif
