/* fsutil.h: the file-system rules every output follows.
 *
 * - Names we create come from validated run/host names, never from text
 *   inside a trace (tbe__name_check).
 * - The symlink rule.  A directory we are given (the log dir) is the
 *   caller's: symlinks in it are followed.  Below it, no component we
 *   create, open or write through is ever a symbolic link: directories are
 *   opened one component at a time with O_NOFOLLOW and held open
 *   (tbe__dir_open), files are created with O_EXCL|O_NOFOLLOW in such a
 *   directory, and a final name is replaced by rename(), which replaces a
 *   planted link itself, never what it points to.  A refusal names the
 *   component (-ELOOP: a symlink; -ENOTDIR: not a directory).
 * - Final files appear atomically: written under a hidden temporary name
 *   (TBE__TMP_PREFIX) in the same directory, then renamed into place
 *   without replacing an existing file unless asked to (tbe__afile_*).  A
 *   crash leaves at most a hidden temporary file, never a half-written
 *   file under a final name.
 * - Placing files below the log dir is one mechanism, the stage
 *   (tbe__stage_*): every file of one replacement is staged, then all are
 *   committed together or none is; the files they replace stay until the
 *   last new one is in place, and come back when the commit fails.
 * - Temporary files are flock'ed by their writer from creation to commit,
 *   so a writer that died (SIGKILL, power loss) is told from a live one by
 *   the lock alone: the next stage in that directory removes the unlocked
 *   ones (tbe__dir_clean).
 * - Writes retry on EINTR and short writes (tbe__write_all). */
#ifndef TBE_COMMON_FSUTIL_H
#define TBE_COMMON_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/utf8.h"
#include "tbexport/common.h" /* TBE_NAME_MAX */

struct stat; /* <sys/stat.h>, which callers include where they use it */

/* Creates `path` and its missing parents with `mode` (0755).  Returns 0 if
 * it exists as a directory afterwards, else -errno. */
int tbe__mkdir_p(const char *path, mode_t mode);

/* How tbe__dir_open treats missing directories. */
#define TBE__DIR_CREATE 0x1 /* create `base` (as tbe__mkdir_p) and missing components */
#define TBE__DIR_EXCL 0x2   /* the last component must be made by this call (-EEXIST) */

/* Opens the directory `base`/`rel` under the symlink rule: `base` is the
 * caller's (symlinks in it are followed); `rel` is walked one component at
 * a time from a descriptor, never following a symlink: a component that
 * exists as a symlink (to a directory or anything else) gives -ELOOP, one
 * that is something else -ENOTDIR.  `rel` may be "" (base itself); it must
 * not be absolute nor hold empty, "." or ".." components (TBE_EINVAL).
 * Missing components are made with `mode` when `flags` has
 * TBE__DIR_CREATE, else -ENOENT.  Returns a directory descriptor
 * (O_CLOEXEC), or a negative code; then, when `where` is not NULL, it
 * holds the path of the component concerned (`wsize` bytes, cut to fit). */
int tbe__dir_open(const char *base, const char *rel, unsigned flags, mode_t mode, char *where,
                  size_t wsize);

/* tbe__dir_open with TBE__DIR_CREATE, closing the directory again.
 * Returns 0 or a negative code. */
int tbe__mkdir_under(const char *base, const char *rel, mode_t mode);

/* fsyncs the directory `path`.  Returns 0 or -errno. */
int tbe__fsync_dir(const char *path);

/* Checks a run or host name: 1..TBE_NAME_MAX bytes, valid UTF-8, no '/',
 * no NUL or other control characters, not "." or "..", no leading dot.
 * Returns 0 or TBE_ENAME and, when `why` is given, a static reason. */
int tbe__name_check(const char *name, const char **why);

/* tbe__utf8_valid lives in common/utf8.h, included above for the callers
 * that still find it here. */

/* Writes this machine's host name into `buf` (`:` and '/' replaced by '_',
 * "localhost" if unknown).  Always NUL-terminates. */
void tbe__hostname(char *buf, size_t size);

/* Writes all `n` bytes, retrying on EINTR and short writes.  Returns 0 or
 * -errno (a short write that makes no progress is -EIO). */
int tbe__write_all(int fd, const void *p, size_t n);

/* Like tbe__write_all at offset `off` (pwrite: the file offset does not
 * move).  Returns 0 or -errno (no progress: TBE_EIO). */
int tbe__pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/* Like tbe__pwrite_all, reading: `n` bytes at offset `off` (pread: the
 * file offset does not move), retrying on EINTR and short reads.
 * Returns 0, TBE_ETRUNCATED when the file ends first, or -errno. */
int tbe__pread_all(int fd, void *p, size_t n, uint64_t off);

/* Splits `path` into a newly allocated directory part (`.` when there is
 * none, `/` for a file in the root) and a pointer to its last component,
 * inside `path`.  Returns 0, TBE_EINVAL when the last component is empty,
 * or TBE_ENOMEM. */
int tbe__path_split(const tbe_allocator *a, const char *path, char **dir, const char **name);

/* ---- reading under the same rules ----
 * Every file we read below a directory we were given (the persisted
 * analysis, the head and tail of a trace it describes, the cache's
 * entries) is opened by tbe__read_open, which applies to reads what the
 * rules above apply to writes:
 *   - the symlink rule: `base` is the caller's (symlinks in it are
 *     followed); each component of `rel`, the file's own name included, is
 *     opened without following a symlink (-ELOOP names it in `where`);
 *   - nothing blocks: the file is opened O_NONBLOCK and anything but a
 *     regular file (a FIFO, a device, a socket) is refused on the
 *     descriptor, TBE_ENOTREG (-EISDIR for a directory), before a byte is
 *     read, so a FIFO planted at the name cannot hang the reader;
 *   - bounded: tbe__read_file refuses a file larger than `max` at its size,
 *     TBE_ETOOBIG, before reading a byte (a sparse 4 GiB file costs one
 *     fstat), and never reads more than the size it saw.
 * O_NONBLOCK stays on the descriptor: reads of a regular file ignore it. */

/* Opens base/rel for reading under the rules above; `rel` NULL or "":
 * `base` itself is the file (the caller's: a symlink is followed, the
 * other rules hold).  `rel` must not be absolute nor hold empty, "." or
 * ".." components (TBE_EINVAL).  Fills *st (fstat of the descriptor).
 * Returns the descriptor (O_CLOEXEC) or a negative code; then `where`
 * (when not NULL) names the path concerned. */
int tbe__read_open(const char *base, const char *rel, struct stat *st, char *where, size_t wsize);

/* Reads the whole file base/rel (tbe__read_open) into a new block of `a`
 * (*buf, *len; freed with tbe__free), refusing it with TBE_ETOOBIG when it
 * is larger than `max` bytes.  *size (when not NULL) gets the size fstat
 * gave, also on TBE_ETOOBIG.  A file that shrinks while read gives the
 * bytes it had.  Returns 0 or a negative code, `where` as above. */
int tbe__read_file(const tbe_allocator *a, const char *base, const char *rel, uint64_t max,
                   void **buf, size_t *len, uint64_t *size, char *where, size_t wsize);

/* ---- temporary files ----
 * Every temporary file we create is named TBE__TMP_PREFIX<pid>-<n>
 * (nothing of the final name: TensorBoard reads any file whose name holds
 * "tfevents", and a long final name must not make a too long temporary
 * one), is created with O_EXCL|O_NOFOLLOW and is flock'ed (LOCK_EX) by
 * its writer before anyone can see it unlocked: a cleaner that locks a
 * file first and only then removes it, and a writer that finds its new
 * file removed (no link left) after taking the lock, never step on each
 * other. */
#define TBE__TMP_PREFIX ".tbexport-tmp-"
#define TBE__TMP_NAME_MAX 64

/* Removes from the directory `dfd` every temporary file (TBE__TMP_PREFIX)
 * whose writer is gone: those nobody holds a flock on (symlinks and other
 * non-regular entries with that prefix too: we never make such).  Best
 * effort; returns the number removed. */
size_t tbe__dir_clean(int dfd);

/* A file being written under a temporary name. */
typedef struct tbe__afile {
  int fd;
  int lockfd;      /* a duplicate of fd: holds the temporary file's flock to the end */
  int dfd;         /* the directory, open from tbe__afile_open to the end */
  char *dir;
  char tmp_name[TBE__TMP_NAME_MAX]; /* basename of the temporary file */
  char *name;      /* final basename */
  const tbe_allocator *a;
} tbe__afile;

/* Creates a hidden temporary file in `dir` (which must exist; it is the
 * caller's path, symlinks in it are followed) that will become `name`.
 * Fails with TBE_EEXIST when `name` already exists and `force` is 0.
 * Returns 0 or a negative code. */
int tbe__afile_open(tbe__afile *f, const tbe_allocator *a, const char *dir, const char *name,
                    int force);
/* The same in the directory open as `dfd` (duplicated: the caller keeps
 * its descriptor), whose path is `dir` (for messages only). */
int tbe__afile_openat(tbe__afile *f, const tbe_allocator *a, int dfd, const char *dir,
                      const char *name, int force);
/* fsyncs (when `durable`), closes and renames the file into place; with
 * `force` 0 an existing file is never replaced (TBE_EEXIST).  On failure
 * the temporary file is removed, and so is the final name when only the
 * directory fsync failed: a failed commit leaves no file behind.  Always
 * releases `f`. */
int tbe__afile_commit(tbe__afile *f, int durable, int force);
/* Removes the temporary file and releases `f`.  Safe after a failed open. */
void tbe__afile_abort(tbe__afile *f);

/* ---- the stage: placing files below a base directory ----
 * The one way our commands put files below the log dir.  A stage holds
 * the directories it opened (tbe__dir_open: the symlink rule), the new
 * files staged under temporary names and the old files to remove; commit
 * puts every new file in place and removes the old ones together:
 *   1. every new file is closed, and fsync'ed first when the commit
 *      replaces or removes anything (or `durable`), so that a full disk or
 *      an I/O error shows before anything old is touched;
 *   2. every old file the commit replaces or removes gets a second,
 *      hidden name (a hard link, flock'ed like a temporary file);
 *   3. each new file is renamed into place (with `force` 0 linked, which
 *      fails on an existing name), each removed file unlinked;
 *   4. with `durable`, each directory is fsync'ed;
 *   5. the hidden old names are removed.
 * A failure in 1 or 2 changes nothing; one in 3 or 4 puts back what 3 had
 * changed from the hidden names.  So the outputs are all new or all old.
 * Not covered: a crash (or SIGKILL) inside steps 3–5, a few renames long;
 * it can leave some new and some old files, and hidden old names that the
 * next stage in that directory removes.  Stages over the same directories
 * must be serialized by the caller (export_run.c: the run lock). */
typedef struct tbe__stage_folder {
  char *rel;
  int fd;
} tbe__stage_folder;

typedef struct tbe__stage_entry {
  size_t dir;         /* index in dirs */
  char *name;         /* final basename (the removed file's for a removal) */
  int remove;         /* an old file to remove, not a new one */
  int fd, lockfd;     /* the new file (fd open until step 1), its lock to the end */
  char tmp[TBE__TMP_NAME_MAX]; /* its temporary name; "" once renamed */
  int oldfd;          /* the old file's lock while it has a hidden name */
  char old[TBE__TMP_NAME_MAX]; /* the old file's hidden name; "" none */
  int done;           /* step 3 happened for this entry */
} tbe__stage_entry;

typedef struct tbe__stage {
  const tbe_allocator *a;
  const char *base;
  tbe__stage_folder *dirs;
  size_t ndirs, capdirs;
  tbe__stage_entry *e;
  size_t n, cap;
  char where[4096]; /* after a failure: the path it concerns, or "" */
} tbe__stage;

/* Starts an empty stage below `base` (kept by pointer until the end). */
void tbe__stage_init(tbe__stage *s, const tbe_allocator *a, const char *base);
/* Opens (with `create`, makes) base/rel under the symlink rule and, the
 * first time, removes the temporary files of dead writers there
 * (tbe__dir_clean).  Returns the directory's descriptor (owned by the
 * stage) or a negative code, with s->where naming the path concerned. */
int tbe__stage_dir(tbe__stage *s, const char *rel, int create);
/* Places a file: stages a new file that becomes base/rel/name at commit,
 * making base/rel as needed (tbe__stage_dir).  *fd is the file to write
 * (owned by the stage; leave it open).  Returns 0 or a negative code. */
int tbe__stage_file(tbe__stage *s, const char *rel, const char *name, int *fd);
/* Places a second name for a staged file: base/rel/name becomes, at
 * commit, a hard link to the file staged with descriptor `src_fd` (same
 * bytes, no extra disk; whatever is written to src_fd before the commit
 * is in both).  Where the file system has no hard links and
 * `symlink_target` is not NULL, a symbolic link to symlink_target
 * (relative to base/rel) instead.  Replaces and conflicts like
 * tbe__stage_file.  Returns 0 or a negative code. */
int tbe__stage_link(tbe__stage *s, int src_fd, const char *rel, const char *name,
                    const char *symlink_target);
/* Removes base/rel/name at commit (an older file the new ones replace); a
 * name that is gone by then is fine.  Returns 0 or a negative code. */
int tbe__stage_remove(tbe__stage *s, const char *rel, const char *name);
/* Commits (see above).  With `force` 0 an existing final name fails it
 * with TBE_EEXIST.  Returns 0 or a negative code (s->where names the path
 * concerned).  Always releases the staged files; tbe__stage_free after. */
int tbe__stage_commit(tbe__stage *s, int force, int durable);
/* Takes back the entry staged last (a file not yet committed, or a
 * removal): its temporary file removed, the rest of the stage unchanged
 * (export_run.c: an optional file whose writing failed).  No allocation. */
void tbe__stage_drop_last(tbe__stage *s);
/* Removes every staged file and releases them.  No allocation. */
void tbe__stage_abort(tbe__stage *s);
/* Closes the directories and frees the stage (after commit or abort). */
void tbe__stage_free(tbe__stage *s);

/* ---- locks ----
 * A named exclusive lock among the writers of a directory `base`: an
 * open-file-description lock (F_OFD_SETLKW: held by the descriptor,
 * released when it closes, also by process death, and between threads of
 * one process too) on one byte, at an offset hashed from the name, of the
 * hidden file base/.tbexport.lock (opened without following a symlink;
 * never written).  Two names may share a byte: they then also take turns.
 * The file exists only while someone holds or waits for a lock: the last
 * one out (the whole file lockable) removes it, and one that got its lock
 * on a removed file tries again on the new one.  A file system without
 * locks (ENOLCK, EOPNOTSUPP) gives no lock, and no error. */
#define TBE__LOCK_FILE ".tbexport.lock"
typedef struct tbe__lock {
  int fd;  /* the lock file */
  int dfd; /* base */
} tbe__lock;

/* Waits for the lock `key` of directory `base` (made as needed).  Returns
 * 0, or a negative code with `where` naming the path concerned (-ELOOP:
 * the lock file is a symlink). */
int tbe__lock_take(tbe__lock *l, const char *base, const char *key, char *where, size_t wsize);
/* Releases it (and removes the lock file when no one else holds a byte
 * of it).  Safe after a failed take. */
void tbe__lock_release(tbe__lock *l);

#endif
