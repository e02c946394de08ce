/* checked.h: checked and saturating int64 arithmetic for times.
 *
 * Times in the model are int64 nanoseconds since the Unix epoch, and every
 * input we read is someone else's: a timestamp of 9.2e18 ns, a duration of
 * INT64_MAX or a line base near INT64_MIN are a few bytes of a hostile or
 * broken file.  Plain `a + b` on them is undefined behaviour (the sanitized
 * build aborts) and, in Release, wraps into a negative wall time.  Every
 * sum, difference and unit conversion of times goes through this header.
 *
 * The time range.  The model holds times within [TBE__TIME_MIN,
 * TBE__TIME_MAX] = +-(2^62 - 1) ns, about 146 years either side of 1970:
 * any real clock (epoch, relative, or a session-start offset) fits, and
 * the difference of two times in the range never overflows (it is below
 * 2^63).  Durations are >= 0 and keep the end in the range.
 *
 * Saturate or refuse, per place (each caller says which where it calls):
 *   - importers (Chrome JSON ts, dur, baseTimeNanoseconds; XSpace line
 *     timestamp_ns, offset_ps, duration_ps and the session start; nsys
 *     start, end and the session's clock offset): REFUSE.  A time outside
 *     the range, or an event ending outside it, is corrupt input: the
 *     import fails with the field named and its byte offset (or table and
 *     row), exit 2.  Nothing is guessed.
 *   - the model (tbe_trace_add_event, tbe_trace_add_step): SATURATE.  The
 *     backstop for the collector and for library users: a start outside the
 *     range is pulled to its edge and the duration cut so the end stays
 *     inside; the event is flagged TBE_EVF_CLAMPED.
 *   - the analysis, the run analysis and the reports: SATURATE.  Their
 *     inputs are public struct fields anyone can set (tbe_trace.start_ns,
 *     step times); sums of durations over millions of events and window
 *     arithmetic saturate at the int64 limits, so figures stay ordered and
 *     never wrap.
 *   - the XSpace exporter: SATURATE and COUNT.  ns -> ps (x1000) does not
 *     fit int64 beyond ~106 days of offset; such values are written as the
 *     largest representable and counted in the file's warnings.
 *
 * All functions are static inline and branch-light (the compiler's
 * overflow builtins); none allocates or fails. */
#ifndef TBE_COMMON_CHECKED_H
#define TBE_COMMON_CHECKED_H

#include <stdint.h>

#define TBE__TIME_MAX (((int64_t)1 << 62) - 1)
#define TBE__TIME_MIN (-TBE__TIME_MAX)

/* ---- checked: 0 and the result, or -1 on overflow (*r unspecified) ---- */

static inline int tbe__add_i64(int64_t a, int64_t b, int64_t *r) {
  return __builtin_add_overflow(a, b, r) ? -1 : 0;
}
static inline int tbe__sub_i64(int64_t a, int64_t b, int64_t *r) {
  return __builtin_sub_overflow(a, b, r) ? -1 : 0;
}
static inline int tbe__mul_i64(int64_t a, int64_t b, int64_t *r) {
  return __builtin_mul_overflow(a, b, r) ? -1 : 0;
}

/* ---- saturating at INT64_MIN / INT64_MAX ---- */

static inline int64_t tbe__sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN;
}
static inline int64_t tbe__sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN;
}
static inline int64_t tbe__sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}
static inline uint64_t tbe__sat_addu(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- the time range ---- */

/* 1 when `t` lies in [TBE__TIME_MIN, TBE__TIME_MAX]. */
static inline int tbe__time_ok(int64_t t) { return t >= TBE__TIME_MIN && t <= TBE__TIME_MAX; }

/* 1 when `start` is in the range, `dur` >= 0 and start + dur is in the
 * range too (computed without overflow). */
static inline int tbe__span_ok(int64_t start, int64_t dur) {
  return tbe__time_ok(start) && dur >= 0 && dur <= TBE__TIME_MAX - start;
}

/* `t` pulled into the range. */
static inline int64_t tbe__time_clamp(int64_t t) {
  return t < TBE__TIME_MIN ? TBE__TIME_MIN : t > TBE__TIME_MAX ? TBE__TIME_MAX : t;
}

/* start + dur, saturating (for ends of events that may not be in the
 * range: public fields, or a trace built by hand). */
static inline int64_t tbe__end_ns(int64_t start, int64_t dur) { return tbe__sat_add(start, dur); }

/* ---- unit conversions ---- */

/* Picoseconds to nanoseconds, rounded half up (toward +inf at .5), for any
 * int64: never overflows. */
static inline int64_t tbe__ps_to_ns(int64_t ps) {
  int64_t q = ps / 1000, r = ps % 1000;
  if (r < 0) q--, r += 1000; /* floor */
  return r >= 500 ? q + 1 : q;
}

/* Picoseconds to nanoseconds, floored (offsets: an event never moves
 * before the tick it was recorded in). */
static inline int64_t tbe__ps_floor_ns(int64_t ps) {
  int64_t q = ps / 1000;
  return (ps % 1000 < 0) ? q - 1 : q;
}

/* Nanoseconds to picoseconds: 0, or -1 when ns * 1000 does not fit. */
static inline int tbe__ns_to_ps(int64_t ns, int64_t *ps) { return tbe__mul_i64(ns, 1000, ps); }

/* Microseconds to nanoseconds: 0, or -1 when us * 1000 does not fit. */
static inline int tbe__us_to_ns(int64_t us, int64_t *ns) { return tbe__mul_i64(us, 1000, ns); }

#endif
