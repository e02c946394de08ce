/* alloc.h: allocation through an optional per-object tbe_allocator.
 *
 * Every object that owns memory keeps a copy of its allocator (or the
 * default one) and allocates only through these helpers, so a test
 * allocator can fail the n-th allocation anywhere in the library. */
#ifndef TBE_COMMON_ALLOC_H
#define TBE_COMMON_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

/* Copies `a` (or the malloc-based default when `a` is NULL) into `dst`. */
void tbe__allocator_init(tbe_allocator *dst, const tbe_allocator *a);

void *tbe__alloc(const tbe_allocator *a, size_t size);
void *tbe__calloc(const tbe_allocator *a, size_t n, size_t size);
/* Returns NULL (leaving `p` valid) on failure or on n*size overflow. */
void *tbe__realloc(const tbe_allocator *a, void *p, size_t old_size, size_t new_size);
void tbe__free(const tbe_allocator *a, void *p);
char *tbe__strdup(const tbe_allocator *a, const char *s);

/* The one growth rule of the library (buffers, vectors, tables' arrays):
 * grows an array `*pp` of `*cap` elements of `elem` (> 0) bytes so that it
 * holds at least `need`, doubling the capacity, starting from `first`
 * elements when it is empty.  Every size is checked: a capacity whose
 * bytes would overflow size_t is TBE_ENOMEM, as is a failed reallocation
 * (then `*pp` and `*cap` are unchanged).  Amortized O(1) per element. */
int tbe__grow_from(const tbe_allocator *a, void **pp, size_t *cap, size_t need, size_t elem,
                   size_t first);
/* tbe__grow_from with `first` 16.  Returns 0 or TBE_ENOMEM. */
int tbe__grow(const tbe_allocator *a, void **pp, size_t *cap, size_t need, size_t elem);

#endif
