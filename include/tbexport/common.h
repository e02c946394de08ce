/* tbexport/common.h: definitions every public header shares: the export
 * macro, the allocator hook, messages for a person, the longest name and
 * the version query. */
#ifndef TBEXPORT_COMMON_H
#define TBEXPORT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/version.h"

/* The export macro, one per tier (tbexport.h).  The stable tier is what
 * the shared library exports.  The experimental tier is for static linking
 * only, as zstd keeps ZSTD_STATIC_LINKING_ONLY out of its .so: its
 * functions are hidden, so libtbexport.so does not export them and
 * libtbexport.a (CMake: tbexport::tbexport_static) has them all.  A
 * program that calls one and links the shared library fails to link, not
 * at run time.  A header switches TBE_API to TBE__API_EXPERIMENTAL around
 * its experimental declarations, after its includes, and back.
 * test/check_exports.sh lists both tiers from the headers and checks the
 * shared library's symbols against them. */
#if defined(TBE_STATIC_DEFINE)
#define TBE__API_STABLE
#define TBE__API_EXPERIMENTAL
#elif defined(__GNUC__)
#define TBE__API_STABLE __attribute__((visibility("default")))
#define TBE__API_EXPERIMENTAL __attribute__((visibility("hidden")))
#else
#define TBE__API_STABLE
#define TBE__API_EXPERIMENTAL
#endif
#define TBE_API TBE__API_STABLE

#ifdef __cplusplus
extern "C" {
#endif

/* An allocator for one object and everything it owns.  Pass NULL wherever
 * a `const tbe_allocator *` is taken to use malloc/realloc/free.  There is
 * no process-global hook on purpose: the collector runs inside other
 * people's programs.  `realloc` may be NULL, in which case the library
 * emulates it with alloc + copy + free (it then needs the old size, which
 * it always knows).  The functions must be thread-safe: the Chrome JSON
 * exporter and importer call them from their worker threads too. */
typedef struct tbe_allocator {
  void *(*alloc)(void *opaque, size_t size);
  void *(*realloc)(void *opaque, void *ptr, size_t old_size, size_t new_size);
  void (*free)(void *opaque, void *ptr);
  void *opaque;
} tbe_allocator;

/* Option structs that grow.  Every tbe_*_options struct begins with
 * `size_t size`, the struct's size as the caller's header declares it, and
 * new fields are only ever added at its end.  Initialise one with its
 * tbe_*_options_init(&o): a macro that passes sizeof(the struct) of your
 * compile to the library's tbe_*_options_init_sized, which writes the
 * defaults and `size`, never past your struct.  The library reads only the
 * fields within `size`: a program built against an older header (a
 * smaller size) gets the defaults for the fields it does not know.  A
 * size of 0 (a struct never initialised, `= {0}`) or larger than the
 * library's own struct (a program built against a newer header than the
 * library it runs with) is refused with TBE_EINVAL by every function
 * that takes the struct.  Copying an initialised struct (`b = a`) keeps
 * its size.  (For whoever adds a field: it must begin at or after the
 * struct's previous sizeof, not in its tail padding.) */

/* The longest run or host name, in bytes (tbe_name_check); buffers that
 * receive one hold TBE_NAME_MAX + 1. */
#define TBE_NAME_MAX 200

/* Messages for a person.  The library never prints: what a command line
 * would show on stderr (a spool left for later, a process that could not
 * collect, CUPTI refusing a call) goes to a callback the caller gives, and
 * nowhere when it gives none (the return codes still say what failed).
 * `line` is one line, without a newline, in the line form of text from
 * inputs (tbexport/text.h: controls, invalid UTF-8 and invisible
 * characters shown as escapes), valid during the call only.  Where a
 * callback may be called from another thread, its option says so. */
typedef enum tbe_message_level {
  TBE_MSG_NOTE = 0,    /* what happened, for the record */
  TBE_MSG_WARNING = 1, /* something was left out, or kept for later */
  TBE_MSG_ERROR = 2    /* something failed (the call's result says so too) */
} tbe_message_level;
typedef void (*tbe_message_fn)(void *ctx, tbe_message_level level, const char *line);

/* Returns TBE_VERSION_NUMBER of the library actually linked. */
TBE_API unsigned tbe_version_number(void);
/* Returns TBE_VERSION_STRING of the library actually linked (static). */
TBE_API const char *tbe_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
