/* buf.h: a growable byte buffer with a sticky error.
 *
 * Used to build records, JSON and protobuf output before it is written.
 * After the first allocation failure every append is a no-op and
 * tbe__buf_error() returns TBE_ENOMEM, so callers check once at the end. */
#ifndef TBE_COMMON_BUF_H
#define TBE_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

typedef struct tbe__buf {
  uint8_t *data;
  size_t len;
  size_t cap;
  int err;
  const tbe_allocator *a;
} tbe__buf;

void tbe__buf_init(tbe__buf *b, const tbe_allocator *a);
void tbe__buf_deinit(tbe__buf *b);
/* Makes room for `n` more bytes; returns a pointer to them or NULL. */
uint8_t *tbe__buf_reserve(tbe__buf *b, size_t n);
void tbe__buf_append(tbe__buf *b, const void *p, size_t n);
void tbe__buf_putc(tbe__buf *b, char c);
void tbe__buf_puts(tbe__buf *b, const char *s);
void tbe__buf_printf(tbe__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tbe__buf_vprintf(tbe__buf *b, const char *fmt, va_list ap);
/* Appends the decimal form of an integer (no printf). */
void tbe__buf_put_i64(tbe__buf *b, int64_t v);
void tbe__buf_put_u64(tbe__buf *b, uint64_t v);
static inline int tbe__buf_error(const tbe__buf *b) { return b->err; }
static inline void tbe__buf_clear(tbe__buf *b) { b->len = 0; }

#endif
