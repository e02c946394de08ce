/* buf.c: growable byte buffer (see buf.h). */
#include "common/buf.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"

void tbe__buf_init(tbe__buf *b, const tbe_allocator *a) {
  memset(b, 0, sizeof *b);
  b->a = a;
}

void tbe__buf_deinit(tbe__buf *b) {
  tbe__free(b->a, b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

uint8_t *tbe__buf_reserve(tbe__buf *b, size_t n) {
  if (b->err) return NULL;
  if (n > SIZE_MAX - b->len) {
    b->err = TBE_ENOMEM;
    return NULL;
  }
  if (b->len + n > b->cap || !b->data) { /* never hand out NULL + 0 */
    void *p = b->data;
    size_t need = b->len + n ? b->len + n : 1;
    if (tbe__grow_from(b->a, &p, &b->cap, need, 1, 256)) {
      b->err = TBE_ENOMEM;
      return NULL;
    }
    b->data = p;
  }
  return b->data + b->len;
}

void tbe__buf_append(tbe__buf *b, const void *p, size_t n) {
  uint8_t *d = tbe__buf_reserve(b, n);
  if (!d) return;
  if (n) memcpy(d, p, n);
  b->len += n;
}

void tbe__buf_putc(tbe__buf *b, char c) {
  uint8_t *d = tbe__buf_reserve(b, 1);
  if (!d) return;
  *d = (uint8_t)c;
  b->len++;
}

void tbe__buf_puts(tbe__buf *b, const char *s) { tbe__buf_append(b, s, strlen(s)); }

void tbe__buf_vprintf(tbe__buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if ((size_t)n < sizeof small) {
    tbe__buf_append(b, small, (size_t)n);
  } else {
    uint8_t *d = tbe__buf_reserve(b, (size_t)n + 1);
    if (d) {
      vsnprintf((char *)d, (size_t)n + 1, fmt, ap2);
      b->len += (size_t)n;
    }
  }
  va_end(ap2);
}

void tbe__buf_printf(tbe__buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tbe__buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void tbe__buf_put_u64(tbe__buf *b, uint64_t v) {
  char tmp[24];
  int i = (int)sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  tbe__buf_append(b, tmp + i, sizeof tmp - (size_t)i);
}

void tbe__buf_put_i64(tbe__buf *b, int64_t v) {
  if (v < 0) {
    tbe__buf_putc(b, '-');
    tbe__buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    tbe__buf_put_u64(b, (uint64_t)v);
  }
}
