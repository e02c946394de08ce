/* testutil.c: helpers shared by the unit tests (see testutil.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>

#include <cmocka.h>

#include "tbexport.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *tu_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  char *p;
  if (asprintf(&p, "%s/tbe-test-XXXXXX", base && *base ? base : "/tmp") < 0) return NULL;
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  return p;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void tu_rmrf(const char *path) {
  if (path) nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

uint8_t *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 65536, n = 0;
  uint8_t *buf = malloc(cap + 1);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      cap *= 2;
      uint8_t *nb = realloc(buf, cap + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
      } else {
        buf = nb;
      }
    }
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

int tu_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int rc = fwrite(data, 1, len, f) == len ? 0 : -1;
  if (fclose(f) != 0) rc = -1;
  return rc;
}

const char *tu_data(const char *rel) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", TBE_TEST_DATA, rel);
  return buf;
}

char *tu_join(const char *a, const char *b) {
  char *p;
  if (asprintf(&p, "%s/%s", a, b) < 0) return NULL;
  return p;
}

/* The counters are updated atomically: the library allocates from worker
 * threads too (parallel JSON export and import). */
static void fa_note_size(tu_failalloc *f, size_t n) {
  size_t b = __atomic_load_n(&f->biggest, __ATOMIC_RELAXED);
  while (n > b && !__atomic_compare_exchange_n(&f->biggest, &b, n, 0, __ATOMIC_RELAXED,
                                               __ATOMIC_RELAXED)) {
  }
}

static void *fa_alloc(void *o, size_t n) {
  tu_failalloc *f = o;
  fa_note_size(f, n);
  if (__atomic_fetch_sub(&f->left, 1, __ATOMIC_RELAXED) <= 0) return NULL;
  void *p = malloc(n ? n : 1);
  if (p) __atomic_fetch_add(&f->live, 1, __ATOMIC_RELAXED);
  return p;
}

static void *fa_realloc(void *o, void *p, size_t old, size_t n) {
  tu_failalloc *f = o;
  (void)old;
  fa_note_size(f, n);
  if (__atomic_fetch_sub(&f->left, 1, __ATOMIC_RELAXED) <= 0) return NULL;
  void *q = realloc(p, n ? n : 1);
  if (q && !p) __atomic_fetch_add(&f->live, 1, __ATOMIC_RELAXED);
  return q;
}

static void fa_free(void *o, void *p) {
  tu_failalloc *f = o;
  if (p) __atomic_fetch_sub(&f->live, 1, __ATOMIC_RELAXED);
  free(p);
}

tbe_allocator tu_failalloc_init(tu_failalloc *f, long succeed) {
  f->left = succeed;
  f->live = 0;
  f->biggest = 0;
  tbe_allocator a = {fa_alloc, fa_realloc, fa_free, f};
  return a;
}

/* The counting allocator: a 16-byte header (the alignment malloc gives)
 * holds the block's size. */
#define CA_HEAD 16

static void ca_add(tu_countalloc *c, size_t n) {
  size_t now = __atomic_add_fetch(&c->bytes, n, __ATOMIC_RELAXED);
  size_t p = __atomic_load_n(&c->peak, __ATOMIC_RELAXED);
  while (now > p &&
         !__atomic_compare_exchange_n(&c->peak, &p, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void *ca_alloc(void *o, size_t n) {
  tu_countalloc *c = o;
  if (n > SIZE_MAX - CA_HEAD) return NULL;
  unsigned char *p = malloc(CA_HEAD + n);
  if (!p) return NULL;
  memcpy(p, &n, sizeof n);
  ca_add(c, n);
  __atomic_fetch_add(&c->live, 1, __ATOMIC_RELAXED);
  return p + CA_HEAD;
}

static void ca_free(void *o, void *q) {
  tu_countalloc *c = o;
  if (!q) return;
  unsigned char *p = (unsigned char *)q - CA_HEAD;
  size_t n;
  memcpy(&n, p, sizeof n);
  __atomic_fetch_sub(&c->bytes, n, __ATOMIC_RELAXED);
  __atomic_fetch_sub(&c->live, 1, __ATOMIC_RELAXED);
  free(p);
}

/* As alloc + copy + free, so that the peak counts both blocks as a
 * moving realloc holds them. */
static void *ca_realloc(void *o, void *q, size_t old, size_t n) {
  (void)old;
  if (!q) return ca_alloc(o, n);
  size_t was;
  memcpy(&was, (unsigned char *)q - CA_HEAD, sizeof was);
  void *r = ca_alloc(o, n);
  if (!r) return NULL;
  memcpy(r, q, was < n ? was : n);
  ca_free(o, q);
  return r;
}

tbe_allocator tu_countalloc_init(tu_countalloc *c) {
  c->bytes = c->peak = 0;
  c->live = 0;
  tbe_allocator a = {ca_alloc, ca_realloc, ca_free, c};
  return a;
}

long tu_import_alloc_sweep(const char *path, long dense) {
  int succeeded = 0;
  long n, attempts = 0;
  for (n = 0; n < 200000 && !succeeded; n += n < dense ? 1 : n / 64 > 7 ? n / 64 : 7, attempts++) {
    tu_failalloc f;
    tbe_allocator a = tu_failalloc_init(&f, n);
    tbe_trace *t = NULL;
    int rc = tbe_trace_create(&t, &a);
    if (rc == 0) {
      tbe_import_error err;
      rc = tbe_import_file(t, path, NULL, &err);
      if (rc == 0) {
        succeeded = 1;
      } else {
        if (rc != TBE_ENOMEM) fprintf(stderr, "n=%ld: %s\n", n, err.message);
        assert_int_equal(rc, TBE_ENOMEM);
        assert_non_null(strstr(err.message, "out of memory"));
      }
      tbe_trace_free(t);
    } else {
      assert_int_equal(rc, TBE_ENOMEM);
    }
    assert_int_equal(f.live, 0);
  }
  assert_true(succeeded);
  assert_true(attempts > 10); /* the sweep did go through the importer */
  return attempts - 1;      /* all but the last attempt failed */
}

long tu_alloc_sweep(int (*run)(const tbe_allocator *a, void *ctx), void *ctx, long dense) {
  long failed = 0;
  int done = 0;
  for (long n = 0; n < 10000000 && !done; n += n < dense ? 1 : 7) {
    tu_failalloc f;
    tbe_allocator a = tu_failalloc_init(&f, n);
    int rc = run(&a, ctx);
    if (rc != 0 && rc != TBE_ENOMEM) fprintf(stderr, "sweep n=%ld: %s\n", n, tbe_strerror(rc));
    assert_true(rc == 0 || rc == TBE_ENOMEM);
    assert_int_equal(f.live, 0);
    if (rc == 0) done = 1;
    else failed++;
  }
  assert_true(done);
  assert_true(failed > 0);
  return failed;
}

static long tu_nfiles;
static int tu_count_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)p;
  (void)sb;
  (void)ftw;
  if (flag != FTW_D && flag != FTW_DP && flag != FTW_DNR) tu_nfiles++;
  return 0;
}

long tu_count_files(const char *dir) {
  tu_nfiles = 0;
  nftw(dir, tu_count_cb, 16, FTW_PHYS);
  return tu_nfiles;
}
