/* demangle.c: kernel names as c++filt prints them.
 *
 * CUPTI reports kernel names mangled ("_ZN2at6native24vectorized_gather_
 * kernelILi16ElEEvPcS2_PT0_illllb"); PyTorch, Nsight and people read them
 * demangled ("void at::native::vectorized_gather_kernel<16, long>(char*,
 * char*, long*, int, long, long, long, long, bool)").  The engine is
 * libiberty's, the demangler of c++filt, gdb and libstdc++, so a name
 * reads the same here as in every GNU tool.  tbe_demangle makes the calls
 * binutils' c++filt makes through cplus_demangle in its default ("auto")
 * style: the Rust demangler first (legacy Rust symbols look like Itanium
 * names), then the Itanium C++ one, both with c++filt's options
 * DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE, but through their callback forms,
 * which write the text in pieces and allocate nothing; like c++filt it
 * skips a leading '.' or '$' (assembler spellings) and keeps the '.'.
 *
 * Invariants:
 *   - the output is exactly c++filt's (test_names checks a corpus of real
 *     kernel names against the c++filt binary);
 *   - reentrant and allocation-free: the text goes straight into the
 *     caller's buffer, and libiberty keeps its parse tree on the stack;
 *   - bounded: libiberty refuses names longer than 1,024 bytes (its guard
 *     against running out of stack, GCC PR 87675) and nesting deeper than
 *     2,048 levels, so the stack it uses stays under about 100 KB.  Those
 *     names stay mangled, as c++filt and libstdc++'s __cxa_demangle (which
 *     Kineto uses) leave them; c++filt's -r would lift the guard and is not
 *     copied.
 *
 * libiberty's demangler (cp-demangle.c, rust-demangle.c) is licensed under
 * the GPL with a linking exception that allows linking it into any program
 * (docs/design.md, Dependencies). */
#include <limits.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "tbexport/trace.h"

/* c++filt's options (binutils/cxxfilt.c), with the style bit that
 * cplus_demangle adds from its default style. */
#define CXXFILT_OPTIONS (DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE | DMGL_AUTO)

/* Where the pieces go: the caller's buffer, always NUL-terminated; `len`
 * counts every byte produced, including those that did not fit. */
typedef struct sink {
  char *buf;
  size_t size;
  size_t len;
} sink;

static void put(const char *s, size_t n, void *opaque) {
  sink *k = opaque;
  if (k->size && k->len < k->size - 1) {
    size_t room = k->size - 1 - k->len;
    memcpy(k->buf + k->len, s, n < room ? n : room);
    k->buf[k->len + (n < room ? n : room)] = '\0';
  }
  k->len += n;
}

int tbe_demangle(const char *mangled, char *buf, size_t size) {
  if (!buf && size) return -1;
  if (size) buf[0] = '\0';
  if (!mangled) return -1;
  /* c++filt skips a leading '.' or '$' (assembler spellings) and gives
   * the '.' back. */
  const char *name = mangled + (mangled[0] == '.' || mangled[0] == '$');
  /* Every name libiberty demangles starts with '_' ("_Z…", "_GLOBAL_…",
   * Rust's "_R…"): the test costs nothing for the names it is not. */
  if (name[0] == '_') {
    sink k = {buf, size, 0};
    int ok = rust_demangle_callback(name, CXXFILT_OPTIONS, put, &k);
    if (!ok) {
      k.len = 0;
      if (size) buf[0] = '\0';
      ok = cplus_demangle_v3_callback(name, CXXFILT_OPTIONS, put, &k);
    }
    if (ok && k.len > 0 && k.len < INT_MAX) {
      if (mangled[0] != '.') return (int)k.len;
      /* Put the '.' in front: shift what fits by one. */
      if (size > 1) {
        size_t w = k.len < size - 1 ? k.len : size - 2;
        memmove(buf + 1, buf, w);
        buf[0] = '.';
        buf[w + 1] = '\0';
      }
      return (int)k.len + 1;
    }
  }
  /* Not a name libiberty demangles: the input, as c++filt echoes it. */
  if (size) {
    size_t m = strnlen(mangled, size - 1);
    memcpy(buf, mangled, m);
    buf[m] = '\0';
  }
  return -1;
}
