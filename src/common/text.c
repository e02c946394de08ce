/* text.c: the forms of text.h.
 *
 * Everything is built from one step, term_unit: the terminal form of the
 * character (or stray byte) at the front of the input.  The Markdown and
 * CSV forms escape what term_unit gives further, so no form can let through
 * what the terminal form stops.  Nothing here allocates except through the
 * caller's tbe__buf, and tbe_text_escape (the public forms), through malloc. */
#include "common/text.h"

#include <string.h>

#include "common/alloc.h"
#include "tbexport/text.h"

static const char hex[] = "0123456789abcdef";

/* ---- invisible characters ---- */

int tbe__text_invisible(uint32_t c) {
  if (c >= 0x80 && c <= 0x9f) return 1; /* C1 controls (0x9b is a one-byte CSI) */
  switch (c) {
    case 0x00ad: /* soft hyphen */
    case 0x061c: /* Arabic letter mark */
    case 0x115f: case 0x1160: case 0x3164: case 0xffa0: /* Hangul fillers: blank */
    case 0x180e: /* Mongolian vowel separator */
    case 0x2028: case 0x2029: /* line and paragraph separators */
    case 0xfeff: /* BOM, zero-width no-break space */
      return 1;
    default: break;
  }
  if (c >= 0x200b && c <= 0x200f) return 1;   /* zero-width space/joiners, LRM, RLM */
  if (c >= 0x202a && c <= 0x202e) return 1;   /* bidi embeddings and overrides */
  if (c >= 0x2060 && c <= 0x206f) return 1;   /* word joiner, invisible operators, isolates */
  if (c >= 0xfff9 && c <= 0xfffb) return 1;   /* interlinear annotation */
  if (c >= 0xe0000 && c <= 0xe007f) return 1; /* tag characters */
  return 0;
}

/* ---- the terminal form, one unit at a time ---- */

/* The terminal (or line) form of the character or stray byte at the front
 * of s[0..n), n >= 1: its text in out (at most 10 bytes), its length as
 * the result, the input bytes it stands for in *used. */
static size_t term_unit(const uint8_t *s, size_t n, int line, char out[10], size_t *used) {
  uint8_t c = s[0];
  *used = 1;
  if (c >= 0x20 && c < 0x7f) {
    out[0] = (char)c;
    if (c != '\\' || line) return 1;
    out[1] = '\\';
    return 2;
  }
  out[0] = '\\';
  if (c == '\n' || c == '\r' || c == '\t') {
    out[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
    return 2;
  }
  uint32_t cp = 0;
  size_t k = c < 0x80 ? 0 : tbe__utf8_decode(s, n, &cp);
  if (k == 0) { /* C0, DEL, or a byte that starts no valid sequence */
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 15];
    return 4;
  }
  *used = k;
  if (!tbe__text_invisible(cp)) {
    memcpy(out, s, k);
    return k;
  }
  int digits = cp > 0xffff ? 8 : 4;
  out[1] = digits == 8 ? 'U' : 'u';
  for (int i = 0; i < digits; i++) out[2 + i] = hex[(cp >> (4 * (digits - 1 - i))) & 15];
  return (size_t)(2 + digits);
}

static void term(tbe__buf *b, const char *s, size_t n, int line) {
  const uint8_t *p = (const uint8_t *)s;
  char u[10];
  size_t used;
  /* Runs of characters that pass unchanged are appended whole. */
  while (n) {
    size_t run = 0;
    while (run < n && p[run] >= 0x20 && p[run] < 0x7f && (p[run] != '\\' || line)) run++;
    if (run) {
      tbe__buf_append(b, p, run);
      p += run;
      n -= run;
      continue;
    }
    size_t len = term_unit(p, n, line, u, &used);
    tbe__buf_append(b, u, len);
    p += used;
    n -= used;
  }
}

void tbe__text_term(tbe__buf *b, const char *s, size_t n) { term(b, s, n, 0); }
void tbe__text_line(tbe__buf *b, const char *s, size_t n) { term(b, s, n, 1); }

size_t tbe__text_term_z(char *out, size_t size, const char *s, int line) {
  if (!size) return 0;
  const uint8_t *p = (const uint8_t *)(s ? s : "");
  size_t n = strlen((const char *)p), o = 0, used;
  char u[10];
  while (n) {
    size_t len = term_unit(p, n, line, u, &used);
    if (o + len >= size) break;
    memcpy(out + o, u, len);
    o += len;
    p += used;
    n -= used;
  }
  out[o] = '\0';
  return o;
}

/* ---- widths ---- */

typedef struct range {
  uint32_t lo, hi;
} range;

/* Combining marks of the common scripts (drawn over the previous
 * character) and variation selectors. */
static const range zero_width[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x05bf, 0x05bf}, {0x05c1, 0x05c2},
    {0x05c4, 0x05c5}, {0x05c7, 0x05c7}, {0x0610, 0x061a}, {0x064b, 0x065f}, {0x0670, 0x0670},
    {0x06d6, 0x06dc}, {0x06df, 0x06e4}, {0x06e7, 0x06e8}, {0x06ea, 0x06ed}, {0x0711, 0x0711},
    {0x0730, 0x074a}, {0x0900, 0x0902}, {0x093a, 0x093a}, {0x093c, 0x093c}, {0x0941, 0x0948},
    {0x094d, 0x094d}, {0x0951, 0x0957}, {0x0e31, 0x0e31}, {0x0e34, 0x0e3a}, {0x0e47, 0x0e4e},
    {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
    {0xe0100, 0xe01ef}};

/* East Asian wide and fullwidth blocks, and the emoji blocks terminals
 * draw two columns wide. */
static const range wide[] = {
    {0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},
    {0x4e00, 0x9fff},   {0xa000, 0xa4cf},   {0xac00, 0xd7a3},   {0xf900, 0xfaff},
    {0xfe30, 0xfe4f},   {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
    {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd}};

static int in(const range *r, size_t n, uint32_t c) {
  for (size_t i = 0; i < n; i++)
    if (c >= r[i].lo && c <= r[i].hi) return 1;
  return 0;
}

static size_t cp_width(uint32_t c) {
  if (c < 0x300) return 1;
  if (in(zero_width, sizeof zero_width / sizeof zero_width[0], c)) return 0;
  if (in(wide, sizeof wide / sizeof wide[0], c)) return 2;
  return 1;
}

size_t tbe__text_width(const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  size_t w = 0;
  while (n) {
    uint32_t cp;
    size_t k = p[0] < 0x80 ? 1 : tbe__utf8_decode(p, n, &cp);
    if (k <= 1) { /* ASCII; a stray byte (never in terminal form) counts 1 */
      w += p[0] >= 0x20 && p[0] != 0x7f;
      p++, n--;
      continue;
    }
    w += cp_width(cp);
    p += k;
    n -= k;
  }
  return w;
}

static size_t unit_width(const char *u, size_t len) { return tbe__text_width(u, len); }

size_t tbe__text_fit(char *out, size_t size, const char *s, size_t cols) {
  if (!size) return 0;
  const uint8_t *p0 = (const uint8_t *)(s ? s : "");
  size_t n0 = strlen((const char *)p0);
  /* First the whole form, to know whether it fits; then, when it does
   * not, again up to the room that leaves for the dots. */
  for (int pass = 0; pass < 2; pass++) {
    size_t limit = pass == 0 || cols == 0 ? cols : (cols > 3 ? cols - 3 : cols);
    const uint8_t *p = p0;
    size_t n = n0, o = 0, w = 0, used;
    int cut = 0;
    char u[10];
    while (n) {
      size_t len = term_unit(p, n, 0, u, &used), uw = unit_width(u, len);
      if ((limit && w + uw > limit) || o + len >= size) {
        cut = 1;
        break;
      }
      memcpy(out + o, u, len);
      o += len;
      w += uw;
      p += used;
      n -= used;
    }
    if (pass == 1 && cols > 3 && o + 3 < size) {
      memcpy(out + o, "...", 3);
      o += 3;
      w += 3;
    }
    out[o] = '\0';
    if (!cut || pass == 1 || cols == 0) return w;
  }
  return 0;
}

void tbe__text_cell(tbe__buf *b, const char *s, int w, int right) {
  size_t n = strlen(s);
  int sw = (int)tbe__text_width(s, n);
  if (right)
    for (int i = sw; i < w; i++) tbe__buf_putc(b, ' ');
  tbe__buf_append(b, s, n);
  if (!right)
    for (int i = sw; i < w; i++) tbe__buf_putc(b, ' ');
}

/* ---- Markdown ---- */

void tbe__text_md(tbe__buf *b, const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  char u[10];
  size_t used;
  int lead = 1; /* at the start, or after leading digits only */
  int digits = 0;
  while (n) {
    size_t len = term_unit(p, n, 0, u, &used);
    for (size_t i = 0; i < len; i++) {
      char c = u[i];
      int start = lead && !digits && i == 0;
      if (c == '<') {
        tbe__buf_puts(b, "&lt;");
      } else if (c == '>') {
        tbe__buf_puts(b, "&gt;");
      } else if (c == '&') {
        tbe__buf_puts(b, "&amp;");
      } else if (strchr("\\`*_[]|#", c) || (start && (c == '-' || c == '+')) ||
                 (lead && digits && (c == '.' || c == ')'))) {
        tbe__buf_putc(b, '\\');
        tbe__buf_putc(b, c);
      } else {
        tbe__buf_putc(b, c);
      }
      if (lead && c >= '0' && c <= '9' && len == 1) digits = 1;
      else lead = 0;
    }
    p += used;
    n -= used;
  }
}

/* ---- JSON and CSV ---- */

static void json_u(tbe__buf *b, uint32_t v) {
  char e[7] = {'\\', 'u', hex[(v >> 12) & 15], hex[(v >> 8) & 15], hex[(v >> 4) & 15],
               hex[v & 15], 0};
  tbe__buf_puts(b, e);
}

void tbe__text_json(tbe__buf *b, const char *s, size_t n) {
  const uint8_t *p = (const uint8_t *)s;
  tbe__buf_putc(b, '"');
  while (n) {
    uint8_t c = *p;
    if (c >= 0x20 && c < 0x7f) {
      if (c == '"' || c == '\\') tbe__buf_putc(b, '\\');
      tbe__buf_putc(b, (char)c);
      p++, n--;
      continue;
    }
    if (c < 0x80) {
      if (c == '\n') tbe__buf_puts(b, "\\n");
      else if (c == '\t') tbe__buf_puts(b, "\\t");
      else if (c == '\r') tbe__buf_puts(b, "\\r");
      else json_u(b, c);
      p++, n--;
      continue;
    }
    uint32_t cp;
    size_t k = tbe__utf8_decode(p, n, &cp);
    if (k == 0) {
      tbe__buf_puts(b, "\xef\xbf\xbd");
      p++, n--;
      continue;
    }
    if (!tbe__text_invisible(cp)) {
      tbe__buf_append(b, p, k);
    } else if (cp <= 0xffff) {
      json_u(b, cp);
    } else { /* a surrogate pair */
      json_u(b, 0xd800 + ((cp - 0x10000) >> 10));
      json_u(b, 0xdc00 + ((cp - 0x10000) & 0x3ff));
    }
    p += k;
    n -= k;
  }
  tbe__buf_putc(b, '"');
}

void tbe__text_csv(tbe__buf *b, const char *s, size_t n) {
  /* Escapes are letters, digits and backslashes: only the input's own
   * commas and quotes call for quoting. */
  int quote = n && (memchr(s, ',', n) || memchr(s, '"', n));
  const uint8_t *p = (const uint8_t *)s;
  char u[10];
  size_t used;
  if (quote) tbe__buf_putc(b, '"');
  while (n) {
    size_t len = term_unit(p, n, 0, u, &used);
    if (len == 1 && u[0] == '"') tbe__buf_putc(b, '"');
    tbe__buf_append(b, u, len);
    p += used;
    n -= used;
  }
  if (quote) tbe__buf_putc(b, '"');
}

/* ---- the public forms (tbexport/text.h) ---- */

size_t tbe_text_escape(tbe_text_form form, const char *s, size_t n, char *buf, size_t size) {
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  if (!s) n = 0;
  switch (form) {
    case TBE_TEXT_LINE: tbe__text_line(&b, s, n); break;
    case TBE_TEXT_MARKDOWN: tbe__text_md(&b, s, n); break;
    case TBE_TEXT_JSON: tbe__text_json(&b, s, n); break;
    case TBE_TEXT_CSV: tbe__text_csv(&b, s, n); break;
    default: tbe__text_term(&b, s, n); break;
  }
  size_t len = tbe__buf_error(&b) ? 0 : b.len;
  if (size) {
    size_t k = len < size ? len : size - 1;
    /* back to the start of a character: the cut never splits one */
    if (k < len)
      while (k > 0 && ((unsigned char)b.data[k] & 0xC0) == 0x80) k--;
    if (k) memcpy(buf, b.data, k);
    buf[k] = '\0';
  }
  tbe__buf_deinit(&b);
  return len;
}

size_t tbe_text_width(const char *s, size_t n) { return s ? tbe__text_width(s, n) : 0; }
