/* alloc.c: the default allocator and the helpers every module uses. */
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "tbexport/error.h"

static void *default_alloc(void *opaque, size_t size) {
  (void)opaque;
  return malloc(size ? size : 1);
}
static void *default_realloc(void *opaque, void *p, size_t old_size, size_t new_size) {
  (void)opaque;
  (void)old_size;
  return realloc(p, new_size ? new_size : 1);
}
static void default_free(void *opaque, void *p) {
  (void)opaque;
  free(p);
}

void tbe__allocator_init(tbe_allocator *dst, const tbe_allocator *a) {
  if (a && a->alloc && a->free) {
    *dst = *a;
  } else {
    dst->alloc = default_alloc;
    dst->realloc = default_realloc;
    dst->free = default_free;
    dst->opaque = NULL;
  }
}

void *tbe__alloc(const tbe_allocator *a, size_t size) { return a->alloc(a->opaque, size); }

void *tbe__calloc(const tbe_allocator *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = a->alloc(a->opaque, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void *tbe__realloc(const tbe_allocator *a, void *p, size_t old_size, size_t new_size) {
  if (a->realloc) return a->realloc(a->opaque, p, old_size, new_size);
  void *q = a->alloc(a->opaque, new_size);
  if (!q) return NULL;
  if (p) {
    memcpy(q, p, old_size < new_size ? old_size : new_size);
    a->free(a->opaque, p);
  }
  return q;
}

void tbe__free(const tbe_allocator *a, void *p) {
  if (p) a->free(a->opaque, p);
}

char *tbe__strdup(const tbe_allocator *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = tbe__alloc(a, n);
  if (d) memcpy(d, s, n);
  return d;
}

int tbe__grow_from(const tbe_allocator *a, void **pp, size_t *cap, size_t need, size_t elem,
                   size_t first) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : first ? first : 1;
  if (ncap > SIZE_MAX / elem) return TBE_ENOMEM;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / elem) return TBE_ENOMEM;
    ncap *= 2;
  }
  void *np = tbe__realloc(a, *pp, *cap * elem, ncap * elem);
  if (!np) return TBE_ENOMEM;
  *pp = np;
  *cap = ncap;
  return 0;
}

int tbe__grow(const tbe_allocator *a, void **pp, size_t *cap, size_t need, size_t elem) {
  return tbe__grow_from(a, pp, cap, need, elem, 16);
}
