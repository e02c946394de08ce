/* fuzz_demangle.c: libFuzzer target for kernel names (demangle.c, the
 * rename pass of tbe_trace_finish, tbe_name_shorten).
 *
 * Names come from the traces we read, so any bytes may arrive.  The input,
 * cut at its first NUL, is demangled three ways that must agree: length
 * only (no buffer), into a large buffer, into a 7-byte one (a prefix of the
 * large result, terminated); a refused name comes back unchanged.  It is
 * shortened to 40 bytes (at most 40 come back).  Then it names a kernel of
 * a one-event trace: after tbe_trace_finish the kernel has the demangled
 * name and the input as its "mangled name" arg, or keeps the input when it
 * is not demangled; a second finish after another event was added changes
 * neither.  Any disagreement aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tbexport.h"

static char big[1 << 16];

static tbe_str name_of(const tbe_trace *t, uint32_t ev) { return t->events[ev].name; }

static void check_trace(const char *s, int dn) {
  tbe_trace *t;
  if (tbe_trace_create(&t, NULL)) return;
  uint32_t gpu, idx;
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.kind = TBE_EV_KERNEL;
  e.start_ns = 100;
  e.dur_ns = 10;
  if (tbe_trace_track(t, TBE_TRACK_STREAM, 1, 7, 0, &gpu) ||
      tbe_trace_intern(t, s, strlen(s), &e.name)) {
    tbe_trace_free(t);
    return;
  }
  e.track = gpu;
  if (tbe_trace_add_event(t, &e, NULL, NULL, 0, &idx) || tbe_trace_finish(t)) abort();
  const tbe_event *k = &t->events[0];
  const char *name = tbe_trace_str(t, k->name);
  if (dn >= 0 && (size_t)dn < sizeof big) {
    if (strcmp(name, big) != 0 || k->nargs != 1) abort();
    const tbe_arg *a = &t->args[k->args];
    if (strcmp(tbe_trace_str(t, a->key), "mangled name") != 0 || a->type != TBE_ARG_STR ||
        strcmp(tbe_trace_str(t, a->v.s), s) != 0)
      abort();
  } else if (dn < 0) {
    if (strcmp(name, s) != 0 || k->nargs != 0) abort();
  }
  tbe_str before = name_of(t, 0);
  uint32_t nargs = k->nargs;
  e.start_ns = 200;
  if (tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL) || tbe_trace_finish(t)) abort();
  if (name_of(t, 0) != before || t->events[0].nargs != nargs) abort();
  if (name_of(t, 1) != before) abort(); /* the same name, renamed the same way */
  tbe_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  size_t len = strlen(s);

  int n0 = tbe_demangle(s, NULL, 0);
  int n1 = tbe_demangle(s, big, sizeof big);
  if (n0 != n1) abort();
  if (n1 < 0) {
    if (len < sizeof big && strcmp(big, s) != 0) abort();
  } else {
    size_t got = strlen(big);
    if (got != ((size_t)n1 < sizeof big ? (size_t)n1 : sizeof big - 1)) abort();
  }
  char small[7];
  int n2 = tbe_demangle(s, small, sizeof small);
  if (n2 != n1 || strlen(small) >= sizeof small) abort();
  if (strncmp(small, big, sizeof small - 1) != 0) abort();

  char sh[64];
  size_t w = tbe_name_shorten(s, 40, sh, sizeof sh);
  if (w > 40 || strlen(sh) != w) abort();

  if (len > 0) check_trace(s, n1);
  free(s);
  return 0;
}
