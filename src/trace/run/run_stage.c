/* run_stage.c: writing into a run's folders (run_stage.h): the run lock,
 * staged events files and a comparison's events file.
 *
 * Invariants: a writer holds the run lock from before it reads a run's
 * folders to after its commit; a new events file is staged before the
 * files it replaces are staged for removal, so that a process killed in
 * the commit leaves the new file beside the old one, never neither. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/fsutil.h"
#include "tbexport/error.h"
#include "trace/export/sink.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_stage.h"

/* ---- the run lock and staged events ---- */

int tbe__run_lock(tbe__lock *l, const char *logdir, const char *run, char *where, size_t wsize) {
  return tbe__lock_take(l, logdir, run, where, wsize);
}

int tbe__stage_events(tbe__stage *s, const char *run, const char *who, const char *mark, int force,
                      int *fd, char *name, size_t size) {
  int dfd = tbe__stage_dir(s, run, 1);
  if (dfd < 0) return dfd;
  int rc = tbe__events_name(name, size, (long long)time(NULL), who, mark);
  if (rc) return rc;
  /* The new file first: the commit switches in stage order, so a process
   * killed inside it leaves the new file beside the old one, never
   * neither (when the old one's name is another second's). */
  int staged = 0;
  if (force) {
    if ((rc = tbe__stage_file(s, run, name, fd))) return rc;
    staged = 1;
  }
  int d2 = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = d2 < 0 ? NULL : fdopendir(d2);
  if (!d) {
    rc = -errno;
    if (d2 >= 0) close(d2);
    snprintf(s->where, sizeof s->where, "%s/%s", s->base, run);
    return rc;
  }
  struct dirent *de;
  while (!rc && (de = readdir(d)) != NULL) {
    if (!tbe__events_name_is(de->d_name, who, mark)) continue;
    if (!force) {
      snprintf(s->where, sizeof s->where, "%s/%s/%s", s->base, run, de->d_name);
      rc = TBE_EEXIST;
    } else if (strcmp(de->d_name, name) != 0) {
      rc = tbe__stage_remove(s, run, de->d_name); /* the same name is replaced by the new one */
    }
  }
  closedir(d);
  if (!rc && !staged) rc = tbe__stage_file(s, run, name, fd);
  return rc;
}

/* ---- a comparison's events file ---- */

int tbe__export_diff_file(const tbe_allocator *a, const char *run_dir, const char *base_label,
                          int (*write)(void *ctx, tbe__sink *out, const char *name), void *ctx,
                          char *path, size_t size) {
  /* run_dir = <logdir>/<run>: the log dir is the caller's, the run ours. */
  char *logdir;
  const char *rname;
  int rc = tbe__path_split(a, run_dir, &logdir, &rname);
  if (rc) return rc;
  if (tbe__name_check(rname, NULL) != 0) {
    tbe__free(a, logdir);
    return TBE_ENAME;
  }
  tbe__stage s;
  tbe__stage_init(&s, a, logdir);
  tbe__lock lock;
  rc = tbe__run_lock(&lock, logdir, rname, s.where, sizeof s.where);
  char name[TBE_NAME_MAX + 64];
  int fd = -1, locked = !rc;
  if (!rc) rc = tbe__stage_events(&s, rname, base_label, TBE__DIFF_MARK, 1, &fd, name, sizeof name);
  if (!rc) {
    tbe__sink out;
    tbe__sink_file(&out, fd);
    rc = write(ctx, &out, name);
    if (!rc) rc = tbe__sink_error(&out);
    if (rc) snprintf(s.where, sizeof s.where, "%s/%s/%s", logdir, rname, name);
  }
  if (!rc)
    rc = tbe__stage_commit(&s, 1, 0);
  else
    tbe__stage_abort(&s);
  if (locked) tbe__lock_release(&lock);
  if (path && size) {
    if (!rc)
      snprintf(path, size, "%s/%s/%s", logdir, rname, name);
    else
      snprintf(path, size, "%s", s.where);
  }
  tbe__stage_free(&s);
  tbe__free(a, logdir);
  return rc;
}
