/* tbexport/common.h: definitions every public header shares: the export
 * macro, the allocator hook and the version query. */
#ifndef TBEXPORT_COMMON_H
#define TBEXPORT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/version.h"

#if defined(TBE_STATIC_DEFINE)
#define TBE_API
#elif defined(__GNUC__)
#define TBE_API __attribute__((visibility("default")))
#else
#define TBE_API
#endif

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

/* Returns TBE_VERSION_NUMBER of the library actually linked. */
TBE_API unsigned tbe_version_number(void);
/* Returns TBE_VERSION_STRING of the library actually linked (static). */
TBE_API const char *tbe_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
