/* chrome_json_guard.c: the main yajl handle's feed and its token guard.
 *
 * Everything the main handle parses goes through feed_main: the guard
 * hands yajl whole tokens only and refuses long tokens and deep nesting
 * before yajl reads them (the section essay below says why); yajl_feed
 * turns yajl's errors into one message and offset and accepts a bare
 * array's trailing comma. */
#include "import/chrome_json_int.h"

/* Feeds bytes at file offset `off` to the main yajl handle.  Returns 0, or
 * -1 when the parse is over (c->rc says why).  Only through tbe__cj_feed_main,
 * which hands it whole tokens. */
static int yajl_feed(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  if (!n) return 0;
  if (c->tail_ok) {
    if (tbe__cj_only_space(d, n)) return 0;
    c->rc = TBE_EPARSE;
    c->err_off = c->tail_bracket;
    snprintf(c->emsg, sizeof c->emsg, "malformed JSON: text after the closing bracket");
    return -1;
  }
  c->chunk_start = off;
  c->wbuf = d; /* for a key's offset (chrome_json_parse.c, duplicate keys) */
  yajl_status st = yajl_parse(c->h, d, n);
  if (c->ynomem) {
    tbe__cj_fail_at(c, off, TBE_ENOMEM, "out of memory");
    return -1;
  }
  if (st == yajl_status_ok) return 0;
  if (c->rc || __atomic_load_n(&c->stop, __ATOMIC_RELAXED)) return -1; /* described already */
  size_t used = yajl_get_bytes_consumed(c->h);
  /* "[..., ]": a trailing comma before the closing bracket of a bare
   * array; accept it when only whitespace follows (checked from here on,
   * so the message does not depend on where the input's pieces end). */
  if (c->form == 2 && c->depth == 1 && !c->skip && !c->cap && used > 0 && used <= n &&
      d[used - 1] == ']') {
    c->tail_ok = 1;
    c->tail_bracket = off + used - 1;
    return yajl_feed(c, d + used, n - used, off + used);
  }
  unsigned char *msg = yajl_get_error(c->h, 0, d, n);
  char text[200];
  snprintf(text, sizeof text, "%s", msg ? (const char *)msg : "malformed JSON");
  if (msg) yajl_free_error(c->h, msg);
  size_t l = strlen(text);
  while (l && (text[l - 1] == '\n' || text[l - 1] == ' ' || text[l - 1] == '.')) text[--l] = 0;
  /* yajl stops just past a bad token; point at its first byte where that
   * is one character (a structural token or an invalid char). */
  uint64_t eoff = off + used;
  if (used > 0 && used <= n) {
    unsigned char b = d[used - 1];
    if (strchr("{}[],:", b) || strstr(text, "invalid char in json text")) eoff--;
  }
  c->rc = TBE_EPARSE;
  c->err_off = eoff;
  snprintf(c->emsg, sizeof c->emsg, "malformed JSON: %s", text);
  return -1;
}

/* ---- token guard ----
 *
 * yajl keeps a token that a piece of input cuts in a buffer of its own
 * and, with every later piece, lexes that buffer again from its first
 * byte: one string, key or number spanning k pieces costs k^2/2 pieces of
 * lexing (a 256 MiB string in 256 KiB reads: 70-90 s; 2 MB of gzip holding
 * a 1 GB one: over 10 minutes).  So yajl is only ever given whole tokens:
 * the guard scans what goes to the main handle (strings with their
 * escapes, nesting, and the run of number/literal bytes at a piece's end),
 * feeds everything up to the last token boundary, and keeps the cut token
 * in `carry`, each byte appended once, until it ends; then the whole token
 * goes to yajl in one call.  Linear whatever the input.
 *
 * The same scan enforces max_token_bytes on strings and keys (measured in
 * the file's text, quotes included) and on a carried number, and
 * max_depth, before yajl reads the bytes: a bomb is refused with at most
 * one token's worth of memory.  Bytes before a refused byte are fed
 * first, so an earlier syntax error is still the one reported. */

/* Number and literal bytes (a token ends at anything else). */
static const uint8_t bare_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1, ['a'] = 1,
    ['l'] = 1, ['s'] = 1, ['r'] = 1, ['u'] = 1, ['t'] = 1, ['f'] = 1, ['n'] = 1};

enum { GV_NONE, GV_TOKEN, GV_DEPTH };

/* One byte of the guard's scan at d[i]; returns 1 when it stops there. */
static inline int guard_byte(cj *c, const uint8_t *d, size_t i, uint64_t off, int *viol) {
  uint8_t ch = d[i];
  if (c->g_in_str) {
    if (c->g_esc) c->g_esc = 0;
    else if (ch == '\\') c->g_esc = 1;
    else if (ch == '"') {
      c->g_in_str = 0;
      if (off + i - c->g_str_start + 1 > c->o->max_token_bytes) {
        *viol = GV_TOKEN;
        return 1;
      }
    }
    return 0;
  }
  if (ch == '"') {
    c->g_in_str = 1;
    c->g_str_start = off + i;
  } else if (ch == '{' || ch == '[') {
    if (++c->g_depth > c->o->max_depth) {
      *viol = GV_DEPTH;
      return 1;
    }
  } else if ((ch == '}' || ch == ']') && c->g_depth) {
    c->g_depth--;
  }
  return 0;
}

#ifdef __SSE2__
/* The quotes, backslashes, opening and closing brackets of p[0..64), one
 * bit per byte. */
static inline void masks64(const uint8_t *p, uint64_t *q, uint64_t *bs, uint64_t *op,
                           uint64_t *cl) {
  const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vo1 = _mm_set1_epi8('{');
  const __m128i vo2 = _mm_set1_epi8('['), vc1 = _mm_set1_epi8('}'), vc2 = _mm_set1_epi8(']');
  *q = *bs = *op = *cl = 0;
  for (int k = 0; k < 4; k++) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
    unsigned sh = 16u * (unsigned)k;
    *q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vq)) << sh;
    *bs |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vb)) << sh;
    *op |= (uint64_t)(unsigned)_mm_movemask_epi8(
               _mm_or_si128(_mm_cmpeq_epi8(x, vo1), _mm_cmpeq_epi8(x, vo2)))
           << sh;
    *cl |= (uint64_t)(unsigned)_mm_movemask_epi8(
               _mm_or_si128(_mm_cmpeq_epi8(x, vc1), _mm_cmpeq_epi8(x, vc2)))
           << sh;
  }
}
#endif

/* Bit i of the result is the xor of bits 0..i of x: 1 from an opening
 * quote up to (not including) its closing quote. */
static inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

/* The bytes escaped by a backslash: those right after an odd-length run
 * of backslashes.  *carry says the first byte is escaped (the previous
 * block ended in an odd run) and receives the same for the next block.
 * Runs are told odd from even by where they start: adding each run's
 * odd-position start to the run carries past its end exactly when the
 * run, counted from an odd start, has odd length. */
static inline uint64_t escaped_bytes(uint64_t bs, uint64_t *carry) {
  const uint64_t even = 0x5555555555555555ull;
  bs &= ~*carry;                       /* a backslash escaped itself is none */
  uint64_t follows = (bs << 1) | *carry;
  uint64_t odd_starts = bs & ~even & ~follows;
  uint64_t sum;
  *carry = __builtin_add_overflow(odd_starts, bs, &sum);
  return (even ^ (sum << 1)) & follows;
}

/* Scans d[0..n) at file offset `off` (no token carried in).  Returns n, or
 * the index of the byte at which a limit stops the parse (*viol).
 *
 * 64 bytes at a time (the common case: valid JSON, limits far away): the
 * escaped bytes, then the quotes that count and, by a prefix xor, which
 * bytes lie inside strings; brackets outside strings move the depth by
 * their counts.  A block where that could differ from the bytewise rule of
 * guard_byte (a backslash outside a string, the depth possibly reaching
 * the limit, more closing brackets than open ones, a string closing past
 * the token limit, a token limit under 64 bytes) is redone byte by byte
 * from the state it started with.  (A bracket closing below depth 0 inside
 * a block is invalid JSON that yajl refuses at that byte, before anything
 * the count could decide.) */
static size_t guard_scan(cj *c, const uint8_t *d, size_t n, uint64_t off, int *viol) {
  size_t i = 0;
#ifdef __SSE2__
  const uint64_t maxt = c->o->max_token_bytes;
  const uint32_t maxd = c->o->max_depth;
  for (; maxt >= 64 && i + 64 <= n; i += 64) {
    uint64_t q, bs, open, close;
    masks64(d + i, &q, &bs, &open, &close);
    uint64_t carry = (uint64_t)c->g_esc;
    uint64_t quotes = q & ~escaped_bytes(bs, &carry);
    uint64_t instr = prefix_xor(quotes) ^ (c->g_in_str ? ~0ull : 0);
    open &= ~instr;
    close &= ~instr;
    unsigned opens = (unsigned)__builtin_popcountll(open), closes = (unsigned)__builtin_popcountll(close);
    int slow = (bs & ~instr) != 0 || (uint64_t)c->g_depth + opens > maxd ||
               closes > (uint64_t)c->g_depth + opens;
    if (!slow && c->g_in_str && quotes) /* the string carried in closes here */
      slow = off + i + (unsigned)__builtin_ctzll(quotes) - c->g_str_start + 1 > maxt;
    if (slow) {
      for (size_t k = i; k < i + 64; k++)
        if (guard_byte(c, d, k, off, viol)) return k;
      continue;
    }
    c->g_depth = c->g_depth + opens - closes;
    c->g_in_str = (int)(instr >> 63);
    c->g_esc = c->g_in_str ? (int)carry : 0;
    if (c->g_in_str && quotes) c->g_str_start = off + i + 63 - (unsigned)__builtin_clzll(quotes);
  }
#endif
  for (; i < n; i++)
    if (guard_byte(c, d, i, off, viol)) return i;
  return n;
}

/* Carried token: scans d[0..n) for its end.  Returns the index just past
 * it, or n when it goes on. */
static size_t guard_continue(cj *c, const uint8_t *d, size_t n) {
  size_t i = 0;
  if (!c->g_in_str) {
    /* Eight digits at a time (a long number is digits), then bytewise. */
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ull, zeros = 0x3030303030303030ull;
    while (i + 8 <= n) {
      uint64_t w = load64((const char *)d + i);
      if ((w & hi) != zeros || ((w + 0x0606060606060606ull) & hi) != zeros) break;
      i += 8;
    }
    while (i < n && bare_byte[d[i]]) i++;
    if (i < n) c->g_bare = 0;
    return i;
  }
  /* The next quote and backslash at or after i, found once each and
   * searched again only when passed (NULL: none up to n). */
  const uint8_t *qp = NULL, *bp = NULL;
  int qk = 0, bk = 0;
  for (; i < n; i++) {
    uint8_t ch = d[i];
    if (c->g_esc) {
      c->g_esc = 0;
    } else if (ch == '\\') {
      c->g_esc = 1;
    } else if (ch == '"') {
      c->g_in_str = 0;
      return i + 1;
    } else {
      /* The body of a long string: jump to the next quote or backslash. */
      if (!qk || (qp && qp < d + i)) qp = memchr(d + i, '"', n - i), qk = 1;
      if (!bk || (bp && bp < d + i)) bp = memchr(d + i, '\\', n - i), bk = 1;
      const uint8_t *nx = !qp ? bp : !bp ? qp : qp < bp ? qp : bp;
      if (!nx) return n;
      i = (size_t)(nx - d) - 1;
    }
  }
  return n;
}

static int guard_token_fail(cj *c, uint64_t at, int str) {
  tbe__cj_limit(c, at, TBE__LIM_TOKEN,
           str ? "a JSON string or key longer than the limit" : "a JSON number longer than the limit");
  return -1;
}

/* Feeds bytes at file offset `off` to the main yajl handle through the
 * guard.  Returns 0, or -1 when the parse is over (c->rc says why). */
int tbe__cj_feed_main(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  if (c->tail_ok) return yajl_feed(c, d, n, off); /* only blanks may follow */
  while (n) {
    if (c->carry.len) {
      int str = c->g_in_str;
      size_t p = guard_continue(c, d, n);
      if (c->carry.len + p > c->o->max_token_bytes) return guard_token_fail(c, c->carry_off, str);
      tbe__buf_append(&c->carry, d, p);
      if (tbe__buf_error(&c->carry)) {
        tbe__cj_fail_at(c, c->carry_off, TBE_ENOMEM, "out of memory");
        return -1;
      }
      if (p == n) return 0;
      /* The closing quote of a string may be too far, now that it came. */
      int r = yajl_feed(c, c->carry.data, c->carry.len, c->carry_off);
      tbe__buf_clear(&c->carry);
      if (r) return r;
      d += p, n -= p, off += p;
      continue;
    }
    int viol = GV_NONE;
    size_t stop = guard_scan(c, d, n, off, &viol);
    if (viol != GV_NONE) {
      /* Feed what precedes the refused token or bracket: an error there
       * comes first in the file. */
      size_t upto = viol == GV_TOKEN ? (size_t)(c->g_str_start - off) : stop;
      if (yajl_feed(c, d, upto, off)) return -1;
      if (viol == GV_TOKEN) return guard_token_fail(c, c->g_str_start, 1);
      tbe__cj_limit(c, off + stop, TBE__LIM_DEPTH, "JSON nested deeper than the limit");
      return -1;
    }
    /* Hold back the token the piece cuts: an open string, or a run of
     * number/literal bytes at its very end. */
    size_t hold = n;
    if (c->g_in_str) {
      if (off + n - c->g_str_start > c->o->max_token_bytes) {
        if (yajl_feed(c, d, (size_t)(c->g_str_start - off), off)) return -1;
        return guard_token_fail(c, c->g_str_start, 1);
      }
      hold = (size_t)(c->g_str_start - off);
    } else {
      while (hold > 0 && bare_byte[d[hold - 1]]) hold--;
      if (hold < n) c->g_bare = 1;
    }
    if (yajl_feed(c, d, hold, off)) return -1;
    if (hold < n) {
      if (n - hold > c->o->max_token_bytes) return guard_token_fail(c, off + hold, c->g_in_str);
      c->carry_off = off + hold;
      tbe__buf_append(&c->carry, d + hold, n - hold);
      if (tbe__buf_error(&c->carry)) {
        tbe__cj_fail_at(c, c->carry_off, TBE_ENOMEM, "out of memory");
        return -1;
      }
    }
    return 0;
  }
  return 0;
}

/* The end of the input: a token still carried goes to yajl as it is (a
 * number at the very end is whole; a string cut by the end is yajl's to
 * report).  Returns 0 or -1 as tbe__cj_feed_main. */
int tbe__cj_feed_main_end(cj *c) {
  if (!c->carry.len) return 0;
  int r = yajl_feed(c, c->carry.data, c->carry.len, c->carry_off);
  tbe__buf_clear(&c->carry);
  return r;
}

