/* fsutil.h: the file-system rules every output follows.
 *
 * - Names we create come from validated run/host names, never from text
 *   inside a trace (tbe__name_check).
 * - Final files appear atomically: written under a hidden temporary name in
 *   the same directory, then renamed into place without replacing an
 *   existing file unless asked to (tbe__afile_*).  A crash leaves at most a
 *   hidden temporary file, never a half-written file under a final name.
 * - Writes retry on EINTR and short writes (tbe__write_all). */
#ifndef TBE_COMMON_FSUTIL_H
#define TBE_COMMON_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tbexport/common.h"

#define TBE_NAME_MAX 200

/* Creates `path` and its missing parents with `mode` (0755).  Returns 0 if
 * it exists as a directory afterwards, else -errno. */
int tbe__mkdir_p(const char *path, mode_t mode);

/* Creates `base` like tbe__mkdir_p (it is the caller's: symlinks in it are
 * followed), then the relative path `rel` below it one component at a
 * time, never following a symlink: a component that exists as a symlink
 * (to a directory or anything else) gives -ELOOP, one that is a file
 * -ENOTDIR.  `rel` must not be absolute nor hold "." or ".." components
 * (TBE_EINVAL).  Returns 0 or a negative code. */
int tbe__mkdir_under(const char *base, const char *rel, mode_t mode);

/* fsyncs the directory `path`.  Returns 0 or -errno. */
int tbe__fsync_dir(const char *path);

/* Checks a run or host name: 1..TBE_NAME_MAX bytes, valid UTF-8, no '/',
 * no NUL or other control characters, not "." or "..", no leading dot.
 * Returns 0 or TBE_ENAME and, when `why` is given, a static reason. */
int tbe__name_check(const char *name, const char **why);

/* Returns 1 if [s, s+n) is valid UTF-8 (no overlongs, no surrogates). */
int tbe__utf8_valid(const char *s, size_t n);

/* Writes this machine's host name into `buf` (`:` and '/' replaced by '_',
 * "localhost" if unknown).  Always NUL-terminates. */
void tbe__hostname(char *buf, size_t size);

/* Writes all `n` bytes, retrying on EINTR and short writes.  Returns 0 or
 * -errno (a short write that makes no progress is -EIO). */
int tbe__write_all(int fd, const void *p, size_t n);

/* Like tbe__write_all at offset `off` (pwrite: the file offset does not
 * move).  Returns 0 or -errno (no progress: TBE_EIO). */
int tbe__pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/* Splits `path` into a newly allocated directory part (`.` when there is
 * none, `/` for a file in the root) and a pointer to its last component,
 * inside `path`.  Returns 0, TBE_EINVAL when the last component is empty,
 * or TBE_ENOMEM. */
int tbe__path_split(const tbe_allocator *a, const char *path, char **dir, const char **name);

/* A file being written under a temporary name. */
typedef struct tbe__afile {
  int fd;
  int dfd;         /* the directory, open from tbe__afile_open to the end */
  char *dir;
  char *tmp_name;  /* basename of the temporary file */
  char *name;      /* final basename */
  const tbe_allocator *a;
} tbe__afile;

/* Creates a hidden temporary file in `dir` (which must exist) that will
 * become `name`.  Fails with TBE_EEXIST when `name` already exists and
 * `force` is 0.  Returns 0 or a negative code. */
int tbe__afile_open(tbe__afile *f, const tbe_allocator *a, const char *dir, const char *name,
                    int force);
/* fsyncs (when `durable`), closes and renames the file into place; with
 * `force` 0 an existing file is never replaced (TBE_EEXIST).  On failure
 * the temporary file is removed, and so is the final name when only the
 * directory fsync failed: a failed commit leaves no file behind.  Always
 * releases `f`. */
int tbe__afile_commit(tbe__afile *f, int durable, int force);
/* Removes the temporary file and releases `f`.  Safe after a failed open. */
void tbe__afile_abort(tbe__afile *f);

#endif
