/* tbexport/error.h: the one error space of the library.
 *
 * Every function that can fail returns an int: 0 on success, or a negative
 * code.  System errors are -errno (e.g. -ENOSPC); library errors live in
 * their own range below TBE__ERRNO_LIMIT so they never clash with errno
 * values.  Codes are pinned: they are never renumbered. */
#ifndef TBEXPORT_ERROR_H
#define TBEXPORT_ERROR_H

#include <errno.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(name, value, message).  The enum, tbe_strerror and tbe_err_name are all
 * generated from this list. */
#define TBE_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -EINVAL, "invalid argument")                                     \
  XX(ENOMEM, -ENOMEM, "out of memory")                                        \
  XX(ENOENT, -ENOENT, "no such file or directory")                            \
  XX(EEXIST, -EEXIST, "file already exists")                                  \
  XX(ENOSPC, -ENOSPC, "no space left on device")                              \
  XX(EIO, -EIO, "i/o error")                                                  \
  XX(EACCES, -EACCES, "permission denied")                                    \
  XX(ECORRUPT, -10001, "corrupt data")                                        \
  XX(ECHECKSUM, -10002, "checksum mismatch")                                  \
  XX(ETRUNCATED, -10003, "truncated data (more may follow)")                  \
  XX(EPARSE, -10004, "malformed input")                                       \
  XX(ECLOSED, -10005, "object is closed")                                     \
  XX(EUTF8, -10006, "invalid utf-8")                                          \
  XX(ETOOBIG, -10007, "value too large")                                      \
  XX(ENOCUPTI, -10008, "collector not available (built without CUDA/CUPTI)")  \
  XX(ECUPTI, -10009, "CUPTI call failed")                                     \
  XX(EFORMAT, -10010, "unrecognized file format")                             \
  XX(ENAME, -10011, "invalid name")                                           \
  XX(EBUSY, -10012, "resource busy")                                          \
  XX(ESTATE, -10013, "operation not valid in the current state")              \
  XX(EOF_, -10014, "end of input")                                            \
  XX(ENOTREG, -10015, "not a regular file")

#define TBE__ERRNO_LIMIT (-10000)

typedef enum tbe_errno {
  TBE_OK = 0,
#define TBE__ERR_ENUM(name, value, msg) TBE_##name = (value),
  TBE_ERRNO_MAP(TBE__ERR_ENUM)
#undef TBE__ERR_ENUM
} tbe_errno;

/* Returns a static, human-readable message for `err` (never NULL).  Any
 * negative errno gets strerror's text copied into a static table entry;
 * unknown codes get "unknown error". */
TBE_API const char *tbe_strerror(int err);

/* Returns the static symbolic name of `err`, e.g. "TBE_ECORRUPT" or
 * "ENOSPC" (never NULL). */
TBE_API const char *tbe_err_name(int err);

#ifdef __cplusplus
}
#endif

#endif
