/* map.c: the hash function and the two tables of map.h.
 *
 * Invariants of both tables: cap is 0 or a power of two; at most cap / 2
 * slots are used; every entry sits at or after its home slot (hash &
 * (cap - 1)) with no free slot between the two, wrapping around, which is
 * what lets a probe stop at the first free slot and what tbe__map_del
 * restores when it shifts entries back. */
#include "common/map.h"

#include <sys/auxv.h>

#include "common/alloc.h"
#include "tbexport/error.h"

/* Odd constants with no structure (digits of pi and e, and the golden
 * ratio's), only so that the seed's derived keys differ from one another. */
#define K_PI 0x243f6a8885a308d3ull
#define K_E 0xb7e151628aed2a6bull
#define K_PHI 0x9e3779b97f4a7c15ull

/* Entries per table: ids are 32 bits and an index slot packs index + 1. */
#define MAX_ENTRIES ((size_t)1 << 31)

/* ---- the seed ---- */

static uint64_t process_seed;

uint64_t tbe__hash_seed(void) {
  uint64_t s = __atomic_load_n(&process_seed, __ATOMIC_RELAXED);
  if (s) return s;
  /* 16 random bytes the kernel puts in every process's auxiliary vector:
   * no system call, no failure, different in every process.  The address
   * of a local mixes in the stack's randomisation should it be missing. */
  uint64_t r[2] = {0, 0};
  const void *at = (const void *)getauxval(AT_RANDOM);
  if (at) memcpy(r, at, sizeof r);
  uint64_t local = (uint64_t)(uintptr_t)&r;
  s = tbe__hash_fold(r[0] ^ K_PI, r[1] ^ K_E) ^ tbe__hash_fold(local ^ K_PHI, K_E);
  if (!s) s = K_PHI;
  /* Every thread computes the same value: a race only stores it twice. */
  __atomic_store_n(&process_seed, s, __ATOMIC_RELAXED);
  return s;
}

/* ---- the byte hash ---- */

static inline uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint64_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Each 16 bytes (a, b) go through fold(a ^ k1, b ^ h): the seed-derived k1
 * on one side and the running state (which starts from the seed) on the
 * other, so no chosen block can zero a factor without knowing the seed.
 * Lengths up to 16 bytes (most names and keys) take one multiply for the
 * bytes and one to finish; the length is mixed in first, so strings that
 * are prefixes of one another (padded with zeros by the short reads)
 * differ. */
uint64_t tbe__hash_bytes(const void *p, size_t n, uint64_t seed) {
  const uint8_t *s = p;
  uint64_t k1 = seed ^ K_PI, k2 = seed ^ K_E;
  uint64_t h = tbe__hash_fold(seed ^ K_PHI, (uint64_t)n ^ k2);
  uint64_t a, b;
  if (n <= 16) {
    if (n >= 8) {
      a = rd64(s);
      b = rd64(s + n - 8);
    } else if (n >= 4) {
      a = rd32(s);
      b = rd32(s + n - 4);
    } else if (n > 0) {
      a = (uint64_t)s[0] << 16 | (uint64_t)s[n >> 1] << 8 | s[n - 1];
      b = 0;
    } else {
      a = b = 0;
    }
  } else {
    /* Two independent lanes over 32-byte blocks keep two multiplies in
     * flight; the last 1..32 bytes are read as two overlapping 16-byte
     * blocks ending at the end. */
    if (n > 32) {
      uint64_t h2 = h ^ k2;
      do {
        h = tbe__hash_fold(rd64(s) ^ k1, rd64(s + 8) ^ h);
        h2 = tbe__hash_fold(rd64(s + 16) ^ k2, rd64(s + 24) ^ h2);
        s += 32;
        n -= 32;
      } while (n > 32);
      h ^= h2; /* two products of the data: they cannot cancel by chance */
    }
    if (n > 16) h = tbe__hash_fold(rd64(s) ^ k1, rd64(s + 8) ^ h);
    a = rd64(s + n - 16);
    b = rd64(s + n - 8);
  }
  h = tbe__hash_fold(a ^ k1, b ^ h);
  return tbe__hash_fold(h ^ k2, K_PHI ^ seed);
}

/* ---- tbe__map ---- */

static inline size_t map_home(const tbe__map *m, uint64_t key) {
  return (size_t)tbe__hash_u64(key, m->seed) & (m->cap - 1);
}

void tbe__map_init(tbe__map *m, const tbe_allocator *a, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->a = a;
  m->seed = tbe__hash_seed_of(seed);
}

void tbe__map_deinit(tbe__map *m) {
  tbe__free(m->a, m->key);
  tbe__free(m->a, m->val);
  m->key = NULL;
  m->val = NULL;
  m->cap = m->n = 0;
  m->aside = 0;
}

void tbe__map_clear(tbe__map *m) {
  if (m->cap) memset(m->key, 0xff, m->cap * sizeof *m->key);
  m->n = 0;
  m->aside = 0;
}

/* Moves every entry into fresh arrays of `cap` slots. */
static int map_rebuild(tbe__map *m, size_t cap) {
  uint64_t *nk = tbe__alloc(m->a, cap * sizeof *nk);
  uint32_t *nv = nk ? tbe__alloc(m->a, cap * sizeof *nv) : NULL;
  if (!nv) {
    tbe__free(m->a, nk);
    return m->err = TBE_ENOMEM;
  }
  memset(nk, 0xff, cap * sizeof *nk); /* every key TBE__MAP_EMPTY */
  uint64_t *ok = m->key;
  uint32_t *ov = m->val;
  size_t ocap = m->cap;
  m->key = nk;
  m->val = nv;
  m->cap = cap;
  for (size_t i = 0; i < ocap; i++) {
    if (ok[i] == TBE__MAP_EMPTY) continue;
    size_t j = map_home(m, ok[i]);
    while (nk[j] != TBE__MAP_EMPTY) j = (j + 1) & (cap - 1);
    nk[j] = ok[i];
    nv[j] = ov[i];
  }
  tbe__free(m->a, ok);
  tbe__free(m->a, ov);
  return 0;
}

/* Slots for `n` entries at a load of at most 1/2. */
static int cap_for(size_t n, size_t *cap) {
  if (n >= MAX_ENTRIES) return TBE_ETOOBIG;
  size_t c = 16;
  while (c < 2 * n) c *= 2;
  *cap = c;
  return 0;
}

int tbe__map_reserve(tbe__map *m, size_t n) {
  if (m->err) return m->err;
  if (2 * n <= m->cap) return 0;
  size_t cap;
  int rc = cap_for(n, &cap);
  if (rc) return m->err = rc;
  return cap > m->cap ? map_rebuild(m, cap) : 0;
}

uint32_t *tbe__map_put(tbe__map *m, uint64_t key, int *added) {
  if (added) *added = 0;
  if (key == TBE__MAP_EMPTY) {
    if (!m->aside) {
      if (m->err) return NULL;
      m->aside = 1;
      m->aside_val = 0;
      m->n++;
      if (added) *added = 1;
    }
    return &m->aside_val;
  }
  /* Room first, so that one probe finds the key or its free slot; when
   * growing fails, an existing key is still found. */
  if (2 * (m->n + 1) > m->cap && !m->err) {
    if (m->n + 1 >= MAX_ENTRIES) m->err = TBE_ETOOBIG;
    else map_rebuild(m, m->cap ? 2 * m->cap : 16);
  }
  if (m->err && 2 * (m->n + 1) > m->cap) return tbe__map_get(m, key);
  size_t mask = m->cap - 1, i = map_home(m, key);
  for (; m->key[i] != TBE__MAP_EMPTY; i = (i + 1) & mask)
    if (m->key[i] == key) return &m->val[i];
  if (m->err) return NULL;
  m->key[i] = key;
  m->val[i] = 0;
  m->n++;
  if (added) *added = 1;
  return &m->val[i];
}

int tbe__map_set(tbe__map *m, uint64_t key, uint32_t val) {
  uint32_t *v = tbe__map_put(m, key, NULL);
  if (!v) return m->err;
  *v = val;
  return 0;
}

int tbe__map_del(tbe__map *m, uint64_t key) {
  if (key == TBE__MAP_EMPTY) {
    if (!m->aside) return 0;
    m->aside = 0;
    m->n--;
    return 1;
  }
  if (!m->cap) return 0;
  size_t mask = m->cap - 1, i = map_home(m, key);
  while (m->key[i] != key) {
    if (m->key[i] == TBE__MAP_EMPTY) return 0;
    i = (i + 1) & mask;
  }
  /* Backward shift: move up each later entry of the run whose home is not
   * between the hole and itself (cyclically), so none is left behind a
   * free slot. */
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (m->key[j] == TBE__MAP_EMPTY) break;
    size_t home = map_home(m, m->key[j]);
    /* Stays when home lies in (i, j]. */
    if (i <= j ? (home > i && home <= j) : (home > i || home <= j)) continue;
    m->key[i] = m->key[j];
    m->val[i] = m->val[j];
    i = j;
  }
  m->key[i] = TBE__MAP_EMPTY;
  m->n--;
  return 1;
}

int tbe__map_next(const tbe__map *m, size_t *it, uint64_t *key, uint32_t *val) {
  /* *it: 0 = the aside entry is next, then slot index + 1. */
  if (*it == 0) {
    *it = 1;
    if (m->aside) {
      *key = TBE__MAP_EMPTY;
      *val = m->aside_val;
      return 1;
    }
  }
  while (*it - 1 < m->cap) {
    size_t i = (*it)++ - 1;
    if (m->key[i] != TBE__MAP_EMPTY) {
      *key = m->key[i];
      *val = m->val[i];
      return 1;
    }
  }
  return 0;
}

void tbe__map_probe_stats(const tbe__map *m, size_t *max, size_t *sum) {
  *max = *sum = 0;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->key[i] == TBE__MAP_EMPTY) continue;
    size_t d = (i - map_home(m, m->key[i])) & (m->cap - 1);
    *sum += d;
    if (d > *max) *max = d;
  }
}

/* ---- tbe__index ---- */

void tbe__index_init(tbe__index *x, const tbe_allocator *a, uint64_t seed) {
  memset(x, 0, sizeof *x);
  x->a = a;
  x->seed = tbe__hash_seed_of(seed);
}

void tbe__index_deinit(tbe__index *x) {
  tbe__free(x->a, x->slot);
  x->slot = NULL;
  x->cap = x->n = 0;
}

void tbe__index_clear(tbe__index *x) {
  if (x->cap) memset(x->slot, 0, x->cap * sizeof *x->slot);
  x->n = 0;
}

/* The slot's hash bits are all a new home needs: growing never reads the
 * caller's keys. */
static int index_rebuild(tbe__index *x, size_t cap) {
  uint64_t *ns = tbe__calloc(x->a, cap, sizeof *ns);
  if (!ns) return x->err = TBE_ENOMEM;
  for (size_t i = 0; i < x->cap; i++) {
    uint64_t s = x->slot[i];
    if (!s) continue;
    size_t j = (size_t)(uint32_t)(s >> 32) & (cap - 1);
    while (ns[j]) j = (j + 1) & (cap - 1);
    ns[j] = s;
  }
  tbe__free(x->a, x->slot);
  x->slot = ns;
  x->cap = cap;
  return 0;
}

int tbe__index_reserve(tbe__index *x, size_t n) {
  if (x->err) return x->err;
  if (2 * n <= x->cap) return 0;
  size_t cap;
  int rc = cap_for(n, &cap);
  if (rc) return x->err = rc;
  return cap > x->cap ? index_rebuild(x, cap) : 0;
}

int tbe__index_add(tbe__index *x, uint64_t hash, uint32_t idx) {
  if (x->err) return x->err;
  if (idx >= MAX_ENTRIES - 1 || x->n + 1 >= MAX_ENTRIES) return x->err = TBE_ETOOBIG;
  if (2 * (x->n + 1) > x->cap && index_rebuild(x, x->cap ? 2 * x->cap : 16)) return x->err;
  uint32_t h = (uint32_t)hash;
  size_t mask = x->cap - 1, i = (size_t)h & mask;
  while (x->slot[i]) i = (i + 1) & mask;
  x->slot[i] = (uint64_t)h << 32 | ((uint64_t)idx + 1);
  x->n++;
  return 0;
}

void tbe__index_probe_stats(const tbe__index *x, size_t *max, size_t *sum) {
  *max = *sum = 0;
  for (size_t i = 0; i < x->cap; i++) {
    uint64_t s = x->slot[i];
    if (!s) continue;
    size_t d = (i - ((size_t)(uint32_t)(s >> 32) & (x->cap - 1))) & (x->cap - 1);
    *sum += d;
    if (d > *max) *max = d;
  }
}
