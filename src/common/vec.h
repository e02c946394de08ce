/* vec.h: a growable array of fixed-size elements, with a sticky error.
 *
 * One vector type for every "array plus count plus capacity" of the
 * library: a tbe__vec knows its element size (set once at init) and grows
 * through tbe__grow (common/alloc.h: doubling from 16 elements, every
 * size overflow-checked, the caller's tbe_allocator only), so a push is
 * amortized O(1) and the array is always one contiguous block that may be
 * indexed, sorted or handed on (tbe__vec_take).
 *
 * Typed access without casts at every use:
 *     tbe__vec v;                      // of tbe_arg
 *     tbe__vec_init(&v, a, sizeof(tbe_arg));
 *     tbe_arg *x = TBE__VEC_PUSH(&v, tbe_arg);  // zeroed; NULL after a failure
 *     if (x) x->key = k;
 *     ... TBE__VEC_AT(&v, tbe_arg, i) ...
 *     if ((rc = tbe__vec_error(&v))) ...   // once, at the end
 *
 * Sticky error: after the first failed growth every push returns NULL and
 * every append/reserve returns the error, without changing the elements
 * already there; tbe__vec_error reports it, so a loop of pushes is checked
 * once.  tbe__vec_clear keeps the memory and the error.
 *
 * Pointers into the array (tbe__vec_at, a push's result) are valid until
 * the next call that may grow it (push, append, reserve, resize).
 *
 * Thread safety: none; reads of a vector nobody changes may be shared. */
#ifndef TBE_COMMON_VEC_H
#define TBE_COMMON_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tbexport/common.h"

typedef struct tbe__vec {
  void *data;
  size_t n, cap;
  size_t elem;
  int err;
  const tbe_allocator *a;
} tbe__vec;

/* An empty vector of `elem`-byte elements (no allocation yet).  `a` must
 * outlive it. */
void tbe__vec_init(tbe__vec *v, const tbe_allocator *a, size_t elem);
void tbe__vec_deinit(tbe__vec *v);
/* Room for `n` elements in all.  0 or the sticky error (TBE_ENOMEM). */
int tbe__vec_reserve(tbe__vec *v, size_t n);
/* Appends `count` elements copied from `src`.  0 or the sticky error. */
int tbe__vec_append(tbe__vec *v, const void *src, size_t count);
/* Sets the length to `n`; new elements are zeroed.  0 or the error. */
int tbe__vec_resize(tbe__vec *v, size_t n);
/* Hands the array over (the caller frees it with tbe__free on the same
 * allocator; NULL when none was ever allocated) and leaves the vector
 * empty; *n gets the length.  After an error: frees it, NULL, *n = 0. */
void *tbe__vec_take(tbe__vec *v, size_t *n);

/* The slow path of tbe__vec_push (grows, then pushes). */
void *tbe__vec_push_grow(tbe__vec *v);

/* A new zeroed element at the end, or NULL after a failure (sticky). */
static inline void *tbe__vec_push(tbe__vec *v) {
  if (v->n == v->cap) return tbe__vec_push_grow(v);
  void *p = (char *)v->data + v->n++ * v->elem;
  memset(p, 0, v->elem);
  return p;
}

/* The same for elements of type T (sizeof(T) must be the vector's element
 * size): the size is a constant, so the push compiles to a compare, a
 * multiply by a constant and the stores that zero it. */
#define TBE__VEC_PUSH(v, T) ((T *)tbe__vec_push_sized((v), sizeof(T)))
static inline void *tbe__vec_push_sized(tbe__vec *v, size_t elem) {
  if (v->n == v->cap) return tbe__vec_push_grow(v);
  void *p = (char *)v->data + v->n++ * elem;
  memset(p, 0, elem);
  return p;
}

static inline void *tbe__vec_at(const tbe__vec *v, size_t i) {
  return (char *)v->data + i * v->elem;
}
#define TBE__VEC_AT(v, T, i) (((T *)(v)->data)[i])

static inline size_t tbe__vec_len(const tbe__vec *v) { return v->n; }
static inline void tbe__vec_clear(tbe__vec *v) { v->n = 0; }
static inline int tbe__vec_error(const tbe__vec *v) { return v->err; }

#endif
