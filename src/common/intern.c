/* intern.c: the interner of intern.h.
 *
 * Invariants: ent[0..n) are the strings in id order; the index holds
 * exactly the ids 0..n-1, each under the low 32 bits of its hash; every
 * ent[i].s points into a block of the arena and is followed by a NUL.
 * Adding allocates in this order (index, id array, arena) and changes
 * nothing visible until all three succeeded, so a failure leaves the
 * interner as it was. */
#include "common/intern.h"

#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"

/* Arena blocks double from FIRST_BLOCK to BLOCK bytes: a small interner
 * (a reader's set of directories) stays small, a big one (a trace's
 * names) makes few allocations. */
#define FIRST_BLOCK 4096
#define BLOCK (64 * 1024)
#define MAX_IDS (((size_t)1 << 31) - 1)

typedef struct tbe__iblock {
  struct tbe__iblock *next;
  size_t used, cap;
  int big; /* one long string's block */
  char data[];
} tbe__iblock;

void tbe__intern_init(tbe__intern *in, const tbe_allocator *a, uint64_t seed) {
  memset(in, 0, sizeof *in);
  in->a = a;
  tbe__index_init(&in->ix, a, seed);
}

static void free_blocks(const tbe_allocator *a, tbe__iblock *b) {
  while (b) {
    tbe__iblock *n = b->next;
    tbe__free(a, b);
    b = n;
  }
}

void tbe__intern_deinit(tbe__intern *in) {
  tbe__index_deinit(&in->ix);
  tbe__free(in->a, in->ent);
  free_blocks(in->a, in->blocks);
  in->ent = NULL;
  in->blocks = NULL;
  in->n = in->cap = 0;
}

void tbe__intern_clear(tbe__intern *in) {
  tbe__index_clear(&in->ix);
  in->n = 0;
  /* Keep the newest regular block (the head unless a long string's block
   * sits there: those go second, see copy_in). */
  tbe__iblock *keep = in->blocks;
  if (keep && keep->big) keep = NULL;
  if (keep) {
    free_blocks(in->a, keep->next);
    keep->next = NULL;
    keep->used = 0;
  } else {
    free_blocks(in->a, in->blocks);
  }
  in->blocks = keep;
}

/* A NUL-terminated copy of s[0..n) in the arena, or NULL. */
static char *copy_in(tbe__intern *in, const void *s, size_t n) {
  tbe__iblock *b = in->blocks;
  char *d;
  if (b && b->cap - b->used > n) {
    d = b->data + b->used;
    b->used += n + 1;
  } else {
    size_t next = !b ? FIRST_BLOCK : b->big || b->cap >= BLOCK ? BLOCK : 2 * b->cap;
    int big = n + 1 > next;
    size_t cap = big ? n + 1 : next;
    if (cap > SIZE_MAX - sizeof(tbe__iblock)) return NULL;
    tbe__iblock *nb = tbe__alloc(in->a, sizeof *nb + cap);
    if (!nb) return NULL;
    nb->cap = cap;
    nb->used = n + 1;
    nb->big = big;
    d = nb->data;
    if (b && big) {
      /* A long string's block goes behind the head, which keeps filling
       * with the short ones. */
      nb->next = b->next;
      b->next = nb;
    } else {
      nb->next = b;
      in->blocks = nb;
    }
  }
  if (n) memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

uint32_t tbe__intern_find_hashed(const tbe__intern *in, const void *s, size_t n, uint64_t hash) {
  tbe__iprobe p;
  for (uint32_t id = tbe__index_first(&in->ix, hash, &p); id != TBE__NOIDX;
       id = tbe__index_next(&in->ix, &p)) {
    const tbe__istr *e = &in->ent[id];
    if (e->len == n && (n == 0 || memcmp(e->s, s, n) == 0)) return id;
  }
  return TBE__NOIDX;
}

uint32_t tbe__intern_find(const tbe__intern *in, const void *s, size_t n) {
  return tbe__intern_find_hashed(in, s, n, tbe__intern_hash(in, s, n));
}

int tbe__intern_add_hashed(tbe__intern *in, const void *s, size_t n, uint64_t hash, uint32_t *id,
                           int *added) {
  if (added) *added = 0;
  uint32_t found = tbe__intern_find_hashed(in, s, n, hash);
  if (found != TBE__NOIDX) {
    *id = found;
    return 0;
  }
  *id = TBE__NOIDX;
  if (in->err) return in->err;
  if (n > UINT32_MAX - 1) return TBE_ETOOBIG; /* this string's fault: not sticky */
  if (in->n >= MAX_IDS) return in->err = TBE_ETOOBIG;
  int rc = 2 * (in->n + 1) > in->ix.cap ? tbe__index_reserve(&in->ix, in->n + 1) : 0;
  if (!rc && in->n + 1 > in->cap) {
    void *p = in->ent;
    rc = tbe__grow(in->a, &p, &in->cap, in->n + 1, sizeof *in->ent);
    in->ent = p;
  }
  char *d = rc ? NULL : copy_in(in, s, n);
  if (!d) return in->err = rc ? rc : TBE_ENOMEM;
  uint32_t nid = (uint32_t)in->n;
  /* Cannot fail: the room was reserved above. */
  tbe__index_add(&in->ix, hash, nid);
  in->ent[nid].s = d;
  in->ent[nid].len = (uint32_t)n;
  in->ent[nid].hash = (uint32_t)hash;
  in->n++;
  *id = nid;
  if (added) *added = 1;
  return 0;
}

int tbe__intern_add(tbe__intern *in, const void *s, size_t n, uint32_t *id, int *added) {
  return tbe__intern_add_hashed(in, s, n, tbe__intern_hash(in, s, n), id, added);
}
