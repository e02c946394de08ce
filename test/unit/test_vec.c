/* test_vec.c: the vector of common/vec.h and tbe__grow under it.
 *
 * What must never happen: an element lost, moved or changed by growth or
 * by a failed growth; a size that overflows size_t reaching the
 * allocator; a failure that is not sticky; a block leaked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "testutil.h"

typedef struct item {
  uint64_t a;
  uint32_t b;
  char c[13];
} item;

static tbe_allocator g_malloc;
static int setup(void **state) {
  (void)state;
  tbe__allocator_init(&g_malloc, NULL);
  return 0;
}

/* Pushes, appends and resizes against a plain array. */
static void test_property(void **state) {
  (void)state;
  enum { MAX = 100000 };
  item *ref = calloc(MAX, sizeof *ref);
  assert_non_null(ref);
  size_t nref = 0;
  tbe__vec v;
  tbe__vec_init(&v, &g_malloc, sizeof(item));
  uint32_t x = 1;
  for (int op = 0; op < 50000; op++) {
    x = x * 1103515245u + 12345u;
    unsigned what = (x >> 16) % 10;
    if (what < 6 && nref < MAX) {
      item *it = op % 2 ? tbe__vec_push(&v) : TBE__VEC_PUSH(&v, item);
      assert_non_null(it);
      item zero;
      memset(&zero, 0, sizeof zero);
      assert_memory_equal(it, &zero, sizeof zero); /* pushed zeroed */
      it->a = (uint64_t)op * 3;
      it->b = x;
      memcpy(it->c, "abcdefghijkl", 13);
      ref[nref++] = *it;
    } else if (what < 8) {
      size_t k = (x >> 8) % 5;
      if (nref + k > MAX) continue;
      item src[5];
      for (size_t i = 0; i < k; i++) {
        memset(&src[i], (int)i, sizeof src[i]);
        src[i].a = (uint64_t)op;
      }
      assert_int_equal(tbe__vec_append(&v, src, k), 0);
      memcpy(ref + nref, src, k * sizeof *src);
      nref += k;
    } else if (what == 8) {
      size_t n = nref > 10 ? nref - (x >> 4) % 10 : nref + (x >> 4) % 10;
      assert_int_equal(tbe__vec_resize(&v, n), 0);
      if (n > nref) memset(ref + nref, 0, (n - nref) * sizeof *ref);
      nref = n;
    } else {
      assert_int_equal(tbe__vec_reserve(&v, nref + 1000), 0);
      assert_true(v.cap >= nref + 1000);
    }
    assert_int_equal(tbe__vec_len(&v), nref);
  }
  for (size_t i = 0; i < nref; i++) {
    assert_memory_equal(tbe__vec_at(&v, i), &ref[i], sizeof(item));
    assert_true(TBE__VEC_AT(&v, item, i).a == ref[i].a);
  }
  tbe__vec_clear(&v);
  assert_int_equal(tbe__vec_len(&v), 0);
  assert_true(v.cap > 0); /* memory kept */
  size_t n;
  item *arr = tbe__vec_take(&v, &n);
  assert_non_null(arr);
  assert_int_equal(n, 0);
  tbe__free(&g_malloc, arr);
  assert_null(v.data);
  tbe__vec_deinit(&v);
  free(ref);
}

static void test_take(void **state) {
  (void)state;
  tbe__vec v;
  tbe__vec_init(&v, &g_malloc, sizeof(int));
  size_t n;
  assert_null(tbe__vec_take(&v, &n)); /* nothing allocated */
  assert_int_equal(n, 0);
  for (int i = 0; i < 100; i++) *(int *)tbe__vec_push(&v) = i;
  int *a = tbe__vec_take(&v, &n);
  assert_int_equal(n, 100);
  for (int i = 0; i < 100; i++) assert_int_equal(a[i], i);
  tbe__free(&g_malloc, a);
  assert_int_equal(tbe__vec_len(&v), 0);
  tbe__vec_deinit(&v);
}

/* Sizes whose bytes overflow size_t fail before reaching the allocator,
 * and stick. */
static void test_overflow(void **state) {
  (void)state;
  tu_failalloc f;
  tbe_allocator a = tu_failalloc_init(&f, 1000);
  tbe__vec v;
  tbe__vec_init(&v, &a, 1 << 20);
  assert_int_equal(tbe__vec_reserve(&v, SIZE_MAX / 1000), TBE_ENOMEM);
  assert_true(f.biggest < ((size_t)1 << 62)); /* no absurd request was made */
  assert_null(tbe__vec_push(&v));              /* sticky */
  assert_int_equal(tbe__vec_error(&v), TBE_ENOMEM);
  tbe__vec_deinit(&v);
  tbe__vec_init(&v, &a, 8);
  *(uint64_t *)tbe__vec_push(&v) = 5;
  assert_int_equal(tbe__vec_append(&v, "", SIZE_MAX), TBE_ENOMEM);
  assert_int_equal(tbe__vec_len(&v), 1);
  assert_true(TBE__VEC_AT(&v, uint64_t, 0) == 5);
  tbe__vec_deinit(&v);
  assert_int_equal(f.live, 0);
  /* tbe__grow itself: checked the same way */
  void *p = NULL;
  size_t cap = 0;
  assert_int_equal(tbe__grow(&a, &p, &cap, SIZE_MAX / 2, 4), TBE_ENOMEM);
  assert_null(p);
  assert_int_equal(tbe__grow_from(&a, &p, &cap, 3, 8, 0), 0); /* first 0: from 1 */
  assert_int_equal(cap, 4);
  tbe__free(&a, p);
}

static int vec_run(const tbe_allocator *a, void *ctx) {
  (void)ctx;
  tbe__vec v;
  tbe__vec_init(&v, a, sizeof(item));
  int i;
  for (i = 0; i < 5000; i++) {
    item *it = tbe__vec_push(&v);
    if (!it) break;
    it->a = (uint64_t)i;
  }
  int rc = tbe__vec_error(&v);
  if (rc) {
    assert_int_equal(tbe__vec_len(&v), (size_t)i);
    for (int j = 0; j < i; j++) assert_true(TBE__VEC_AT(&v, item, j).a == (uint64_t)j);
    item one = {0};
    assert_int_equal(tbe__vec_append(&v, &one, 1), rc); /* sticky */
    assert_int_equal(tbe__vec_len(&v), (size_t)i);
  }
  tbe__vec_deinit(&v);
  return rc;
}

static void test_alloc_sweep(void **state) {
  (void)state;
  assert_true(tu_alloc_sweep(vec_run, NULL, 64) > 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_property),
      cmocka_unit_test(test_take),
      cmocka_unit_test(test_overflow),
      cmocka_unit_test(test_alloc_sweep),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
