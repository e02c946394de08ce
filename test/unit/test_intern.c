/* test_intern.c: the string interner of common/intern.h.
 *
 * What must never happen:
 *  - two ids for one byte string, or one id for two (NUL bytes inside,
 *    prefixes, the empty string included), or ids out of first-appearance
 *    order (the property test against a list);
 *  - a pointer from tbe__intern_str that moves, or loses its NUL, while
 *    strings are added (long ones with blocks of their own included);
 *  - a string lost by a failed allocation, or a block leaked (sweep);
 *  - strings chosen to collide under an unkeyed hash piling up (probe
 *    counts of anagrams and of names differing only at their end). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/intern.h"
#include "tbexport/error.h"
#include "testutil.h"

static tbe_allocator g_malloc;
static int setup(void **state) {
  (void)state;
  tbe__allocator_init(&g_malloc, NULL);
  return 0;
}

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t add(tbe__intern *in, const void *s, size_t n, int *added) {
  uint32_t id = 12345;
  assert_int_equal(tbe__intern_add(in, s, n, &id, added), 0);
  return id;
}

static void test_basics(void **state) {
  (void)state;
  tbe__intern in;
  tbe__intern_init(&in, &g_malloc, 42);
  int added;
  assert_int_equal(tbe__intern_find(&in, "", 0), TBE__NOIDX);
  assert_int_equal(add(&in, NULL, 0, &added), 0); /* the empty string, from NULL */
  assert_int_equal(added, 1);
  assert_int_equal(add(&in, "", 0, &added), 0);
  assert_int_equal(added, 0);
  assert_int_equal(add(&in, "ab", 2, NULL), 1);
  assert_int_equal(add(&in, "a", 1, NULL), 2);      /* a prefix is its own string */
  assert_int_equal(add(&in, "a\0b", 3, NULL), 3);   /* NUL inside */
  assert_int_equal(add(&in, "a\0", 2, NULL), 4);
  assert_int_equal(add(&in, "ab", 2, &added), 1);
  assert_int_equal(added, 0);
  assert_int_equal(tbe__intern_count(&in), 5);
  assert_string_equal(tbe__intern_str(&in, 1), "ab");
  assert_int_equal(tbe__intern_len(&in, 3), 3);
  assert_memory_equal(tbe__intern_str(&in, 3), "a\0b\0", 4); /* NUL-terminated copy */
  assert_int_equal(tbe__intern_find(&in, "a\0b", 3), 3);
  assert_int_equal(tbe__intern_find(&in, "a\0c", 3), TBE__NOIDX);
  /* The _hashed forms are the same lookups. */
  uint64_t h = tbe__intern_hash(&in, "ab", 2);
  assert_int_equal(tbe__intern_find_hashed(&in, "ab", 2, h), 1);
  uint32_t id;
  assert_int_equal(tbe__intern_add_hashed(&in, "ab", 2, h, &id, &added), 0);
  assert_int_equal(id, 1);
  assert_int_equal(added, 0);
  assert_int_equal(tbe__intern_error(&in), 0);
  /* clear: ids start again, the memory is reused */
  tbe__intern_clear(&in);
  assert_int_equal(tbe__intern_count(&in), 0);
  assert_int_equal(tbe__intern_find(&in, "ab", 2), TBE__NOIDX);
  assert_int_equal(add(&in, "zz", 2, NULL), 0);
  assert_string_equal(tbe__intern_str(&in, 0), "zz");
  tbe__intern_deinit(&in);
}

/* Pointers stay put while the arena grows, long strings included. */
static void test_stable_pointers(void **state) {
  (void)state;
  enum { N = 50000 };
  tbe__intern in;
  tbe__intern_init(&in, &g_malloc, 7);
  const char **ptr = malloc(N * sizeof *ptr);
  char *big = malloc(200000);
  assert_true(ptr && big);
  memset(big, 'k', 200000);
  for (int i = 0; i < N; i++) {
    char s[32];
    uint32_t id;
    if (i % 10000 == 5000) { /* a long one: a block of its own */
      big[0] = (char)('A' + i / 10000);
      id = add(&in, big, 100000 + (size_t)i, NULL);
    } else {
      int n = snprintf(s, sizeof s, "name %d", i);
      id = add(&in, s, (size_t)n, NULL);
    }
    assert_int_equal(id, i);
    ptr[i] = tbe__intern_str(&in, id);
  }
  for (int i = 0; i < N; i++) {
    assert_ptr_equal(tbe__intern_str(&in, (uint32_t)i), ptr[i]);
    if (i % 10000 == 5000) {
      assert_int_equal(tbe__intern_len(&in, (uint32_t)i), 100000 + (size_t)i);
      assert_int_equal(ptr[i][0], 'A' + i / 10000);
      assert_int_equal(ptr[i][100000 + i], '\0');
    } else {
      char s[32];
      snprintf(s, sizeof s, "name %d", i);
      assert_string_equal(ptr[i], s);
    }
  }
  /* clear after long strings, then again: nothing leaks (ASan) */
  tbe__intern_clear(&in);
  assert_int_equal(add(&in, big, 70000, NULL), 0);
  assert_int_equal(add(&in, "x", 1, NULL), 1);
  tbe__intern_clear(&in);
  tbe__intern_deinit(&in);
  free(ptr);
  free(big);
}

/* Random strings from a small alphabet (many repeats, prefixes, NULs)
 * against a list of the distinct ones in order of first appearance. */
static void test_property(void **state) {
  (void)state;
  rng_state = 3;
  enum { OPS = 60000, MAXLEN = 40 };
  char (*list)[MAXLEN] = malloc(OPS * MAXLEN);
  size_t *len = malloc(OPS * sizeof *len);
  assert_true(list && len);
  size_t nl = 0;
  tbe__intern in;
  tbe__intern_init(&in, &g_malloc, TBE__SEED_PROCESS);
  for (int op = 0; op < OPS; op++) {
    char s[MAXLEN];
    size_t n = rnd() % 6 ? rnd() % 5 : rnd() % MAXLEN;
    for (size_t k = 0; k < n; k++) s[k] = "ab\0\xff"[rnd() % 4];
    size_t want = 0;
    while (want < nl && !(len[want] == n && memcmp(list[want], s, n) == 0)) want++;
    if (rnd() % 4 == 0) { /* a lookup only */
      uint32_t f = tbe__intern_find(&in, s, n);
      assert_int_equal(f, want < nl ? (uint32_t)want : TBE__NOIDX);
      continue;
    }
    int added;
    uint32_t id = add(&in, s, n, &added);
    assert_int_equal(id, want);
    assert_int_equal(added, want == nl);
    if (want == nl) {
      memcpy(list[nl], s, n);
      len[nl++] = n;
    }
  }
  assert_int_equal(tbe__intern_count(&in), nl);
  for (size_t i = 0; i < nl; i++) {
    assert_int_equal(tbe__intern_len(&in, (uint32_t)i), len[i]);
    assert_memory_equal(tbe__intern_str(&in, (uint32_t)i), list[i], len[i]);
  }
  tbe__intern_deinit(&in);
  free(list);
  free(len);
}

/* Anagrams (one key under additive and xor hashes) and names that differ
 * only in their last bytes after a 150-byte kernel-like prefix. */
static void test_hostile(void **state) {
  (void)state;
  for (int fam = 0; fam < 2; fam++) {
    tbe__intern in;
    tbe__intern_init(&in, &g_malloc, TBE__SEED_PROCESS);
    char p[9] = "abcdefgh";
    int c[8] = {0};
    size_t n = 0;
    char key[200];
    memset(key, 'v', 150);
    for (int i = 0;;) {
      size_t len = fam ? 158 : 8;
      memcpy(fam ? key + 150 : key, p, 8);
      int added;
      uint32_t id = add(&in, key, len, &added);
      assert_int_equal(added, 1);
      assert_int_equal(id, n);
      n++;
      /* the next permutation (Heap's algorithm) */
      while (i < 8 && c[i] >= i) c[i++] = 0;
      if (i == 8) break;
      int j = i % 2 ? c[i] : 0;
      char t = p[j];
      p[j] = p[i];
      p[i] = t;
      c[i]++;
      i = 0;
    }
    assert_int_equal(n, 40320);
    size_t max, sum;
    tbe__index_probe_stats(&in.ix, &max, &sum);
    assert_true(sum < 2 * n);
    assert_true(max < 100);
    tbe__intern_deinit(&in);
  }
}

static int intern_run(const tbe_allocator *a, void *ctx) {
  (void)ctx;
  tbe__intern in;
  tbe__intern_init(&in, a, 9);
  static char big[70000];
  int rc = 0, i;
  for (i = 0; i < 3000 && !rc; i++) {
    char s[32];
    int n = snprintf(s, sizeof s, "str%d", i);
    uint32_t id;
    if (i == 1500) rc = tbe__intern_add(&in, big, sizeof big, &id, NULL);
    else rc = tbe__intern_add(&in, s, (size_t)n, &id, NULL);
    if (!rc) assert_int_equal(id, i);
  }
  if (rc) {
    assert_int_equal(rc, TBE_ENOMEM);
    assert_int_equal(tbe__intern_error(&in), TBE_ENOMEM);
    uint32_t id;
    assert_int_equal(tbe__intern_add(&in, "new", 3, &id, NULL), TBE_ENOMEM);
    assert_int_equal(id, TBE__NOIDX);
    /* everything added before the failure is there, with its id */
    assert_int_equal(tbe__intern_count(&in), (size_t)(i - 1));
    for (int j = 0; j < i - 1; j++) {
      char s[32];
      int n = snprintf(s, sizeof s, "str%d", j);
      if (j != 1500) assert_int_equal(tbe__intern_find(&in, s, (size_t)n), j);
    }
  }
  tbe__intern_deinit(&in);
  return rc;
}

static void test_alloc_sweep(void **state) {
  (void)state;
  assert_true(tu_alloc_sweep(intern_run, NULL, 64) > 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basics),  cmocka_unit_test(test_stable_pointers),
      cmocka_unit_test(test_property), cmocka_unit_test(test_hostile),
      cmocka_unit_test(test_alloc_sweep),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
