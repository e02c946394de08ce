/* torchnvtx.c: PyTorch's operator messages read back (torchnvtx.h).
 *
 * The reader is a cursor over the text with one function per field of
 * the grammar; each returns 0 and leaves the cursor where it was when its
 * field is not next.  The name ends at the first ", seq = " or
 * ", op_id = ": PyTorch's names (aten::..., autograd::engine::
 * evaluate_function: MmBackward0, a record_function label) hold no such
 * text. */
#include "common/torchnvtx.h"

#include <string.h>

typedef struct cur {
  const char *p, *end;
} cur;

/* Consumes the literal `lit` when it is next. */
static int lit(cur *c, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0) return 0;
  c->p += n;
  return 1;
}

/* A decimal integer (optionally negative) of at most 19 digits. */
static int integer(cur *c, int neg_ok, int64_t *v) {
  const char *p = c->p;
  int neg = 0;
  if (neg_ok && p < c->end && *p == '-') neg = 1, p++;
  const char *d = p;
  uint64_t x = 0;
  while (p < c->end && *p >= '0' && *p <= '9' && p - d < 19) x = x * 10 + (uint64_t)(*p++ - '0');
  if (p == d || (p < c->end && *p >= '0' && *p <= '9')) return 0;
  c->p = p;
  *v = neg ? -(int64_t)x : (int64_t)x;
  return 1;
}

/* "[" [int (", " int)*] "]": one input's shape. */
static int shape(cur *c) {
  cur s = *c;
  int64_t v;
  if (!lit(&s, "[")) return 0;
  if (lit(&s, "]")) return *c = s, 1;
  do {
    if (!integer(&s, 1, &v)) return 0;
  } while (lit(&s, ", "));
  if (!lit(&s, "]")) return 0;
  *c = s;
  return 1;
}

/* ", sizes = [" [shape (", " shape)*] "]". */
static int sizes(cur *c, tbe__torch_op_text *o) {
  cur s = *c;
  if (!lit(&s, ", sizes = ")) return 0;
  const char *begin = s.p;
  uint32_t n = 0;
  if (!lit(&s, "[")) return 0;
  if (!lit(&s, "]")) {
    do {
      if (!shape(&s)) return 0;
      n++;
    } while (lit(&s, ", "));
    if (!lit(&s, "]")) return 0;
  }
  o->sizes = begin;
  o->sizes_len = (size_t)(s.p - begin);
  o->ninputs = n;
  *c = s;
  return 1;
}

/* ", input_op_ids = [" [(int "," int) (", " ...)*] "]". */
static int input_op_ids(cur *c) {
  cur s = *c;
  int64_t v;
  if (!lit(&s, ", input_op_ids = [")) return 0;
  if (!lit(&s, "]")) {
    do {
      if (!lit(&s, "(") || !integer(&s, 1, &v) || !lit(&s, ",") || !integer(&s, 1, &v) ||
          !lit(&s, ")"))
        return 0;
    } while (lit(&s, ", "));
    if (!lit(&s, "]")) return 0;
  }
  *c = s;
  return 1;
}

/* Where the name ends: the first ", seq = " or ", op_id = ". */
static const char *name_end(const char *s, size_t len) {
  for (const char *p = memchr(s, ',', len); p; p = memchr(p + 1, ',', (size_t)(s + len - p - 1))) {
    size_t left = (size_t)(s + len - p);
    if ((left >= 8 && memcmp(p, ", seq = ", 8) == 0) ||
        (left >= 10 && memcmp(p, ", op_id = ", 10) == 0))
      return p;
    if (left < 2) break;
  }
  return NULL;
}

int tbe__torch_nvtx_parse(const char *text, size_t len, tbe__torch_op_text *out) {
  if (!text || !len) return 0;
  const char *ne = name_end(text, len);
  if (!ne || ne == text) return 0;
  tbe__torch_op_text o = {(size_t)(ne - text), -1, 0, NULL, 0, 0};
  cur c = {ne, text + len};
  int64_t v;
  int fields = 0;
  if (lit(&c, ", seq = ")) {
    if (!integer(&c, 0, &v)) return 0;
    o.seq = v, fields++;
  }
  if (lit(&c, ", op_id = ")) {
    if (!integer(&c, 0, &v)) return 0;
    o.op_id = (uint64_t)v, fields++;
  }
  if (!fields) return 0;
  sizes(&c, &o);
  input_op_ids(&c);
  if (c.p != c.end) return 0;
  *out = o;
  return 1;
}

size_t tbe__shapes_canon(const char *in, size_t len, char *out, size_t size) {
  size_t n = 0;
#define PUT(ch)                        \
  do {                                 \
    if (n < size) out[n] = (char)(ch); \
    n++;                               \
  } while (0)
  for (size_t i = 0; i < len; i++) {
    char ch = in[i];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') continue;
    PUT(ch);
    if (ch == ',') PUT(' ');
  }
#undef PUT
  return n;
}
