/* optsize.h: option structs that grow (the rule of tbexport/common.h).
 *
 * Every public *_options struct begins with `size_t size`, the size of the
 * struct as the caller's header declared it: tbe_X_options_init(&o) is a
 * macro that passes sizeof(tbe_X_options) of the caller's compile to the
 * library's tbe_X_options_init_sized.  Two halves, one per side:
 *
 *   init  (TBE__OPTIONS_INIT_SIZED): writes at most `size` bytes of the
 *         caller's struct (never past what the caller has: an older caller
 *         has a shorter struct), the defaults of the fields it knows, zero
 *         past them, and `size` itself.  Nothing when size cannot even
 *         hold the size field.
 *   take  (TBE__OPTIONS_TAKE, at a public entry): copies the caller's
 *         struct over a defaulted one of this version, only its first
 *         `size` bytes: fields an older caller does not have keep their
 *         defaults.  A size of 0 (a struct never initialised: `= {0}`) or
 *         past this version's struct (a newer caller whose fields this
 *         library cannot honour) is refused: NULL, and the entry returns
 *         TBE_EINVAL.
 *
 * Invariant: after the entry's take, the body reads only the copy, which
 * is whole; no byte of the caller's struct past its `size` is ever read
 * or written. */
#ifndef TBE_COMMON_OPTSIZE_H
#define TBE_COMMON_OPTSIZE_H

#include <stddef.h>
#include <string.h>

/* Copies `user`'s first `size` bytes (its own field) over `copy`, which
 * holds this version's defaults; returns `copy`, or NULL when `size` is
 * 0, shorter than the size field or longer than `known`. */
static inline void *tbe__options_take(void *copy, size_t known, const void *user) {
  size_t size;
  memcpy(&size, user, sizeof size);
  if (size < sizeof size || size > known) return NULL;
  memcpy((char *)copy + sizeof size, (const char *)user + sizeof size, size - sizeof size);
  memcpy(copy, &known, sizeof known);
  return copy;
}

/* Writes `defaults` (of `known` bytes) into the caller's `size` bytes at
 * `o`, zero past `known`, and sets o's size field to `size`. */
static inline void tbe__options_init(void *o, size_t size, const void *defaults, size_t known) {
  if (!o || size < sizeof size) return;
  memset(o, 0, size);
  memcpy(o, defaults, size < known ? size : known);
  memcpy(o, &size, sizeof size);
}

/* Defines TYPE_init_sized from a function that fills a whole TYPE with
 * its defaults (`static void defaults(TYPE *o)`). */
#define TBE__OPTIONS_INIT_SIZED(type, defaults)  \
  void type##_init_sized(type *o, size_t size) { \
    type d_;                                     \
    defaults(&d_);                               \
    tbe__options_init(o, size, &d_, sizeof d_);  \
  }

/* At a public entry: `copy` (a TYPE of this version) completed from the
 * caller's `user`; NULL when its size is refused. */
#define TBE__OPTIONS_TAKE(type, copy, user)          \
  ((type *)(type##_init_sized((copy), sizeof(type)), \
            tbe__options_take((copy), sizeof(type), (user))))

#endif
