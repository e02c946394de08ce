/* vec.c: the vector of vec.h.  Invariant: n <= cap; data is NULL exactly
 * when cap is 0; err, once set, stays. */
#include "common/vec.h"

#include "common/alloc.h"
#include "tbexport/error.h"

void tbe__vec_init(tbe__vec *v, const tbe_allocator *a, size_t elem) {
  memset(v, 0, sizeof *v);
  v->a = a;
  v->elem = elem ? elem : 1;
}

void tbe__vec_deinit(tbe__vec *v) {
  tbe__free(v->a, v->data);
  v->data = NULL;
  v->n = v->cap = 0;
}

int tbe__vec_reserve(tbe__vec *v, size_t n) {
  if (v->err) return v->err;
  if (n <= v->cap) return 0;
  void *p = v->data;
  if (tbe__grow(v->a, &p, &v->cap, n, v->elem)) return v->err = TBE_ENOMEM;
  v->data = p;
  return 0;
}

void *tbe__vec_push_grow(tbe__vec *v) {
  if (v->n == SIZE_MAX) v->err = TBE_ENOMEM;
  if (v->err || tbe__vec_reserve(v, v->n + 1)) return NULL;
  return tbe__vec_push(v);
}

int tbe__vec_append(tbe__vec *v, const void *src, size_t count) {
  if (v->err) return v->err;
  if (count > SIZE_MAX - v->n) return v->err = TBE_ENOMEM;
  if (tbe__vec_reserve(v, v->n + count)) return v->err;
  if (count) memcpy((char *)v->data + v->n * v->elem, src, count * v->elem);
  v->n += count;
  return 0;
}

int tbe__vec_resize(tbe__vec *v, size_t n) {
  if (v->err) return v->err;
  if (n > v->n) {
    if (tbe__vec_reserve(v, n)) return v->err;
    memset((char *)v->data + v->n * v->elem, 0, (n - v->n) * v->elem);
  }
  v->n = n;
  return 0;
}

void *tbe__vec_take(tbe__vec *v, size_t *n) {
  void *p = v->err ? NULL : v->data;
  *n = p ? v->n : 0;
  if (!p) tbe__free(v->a, v->data);
  v->data = NULL;
  v->n = v->cap = 0;
  return p;
}
