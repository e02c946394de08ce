/* writer.c: the core of the TensorBoard event writer
 * (include/tbexport/writer.h): the writer object, where its records go,
 * buffering, flushing, fork and the sticky error.  Its Summary encoders
 * live in writer_summary.c and writer_hparams.c (writer_core.h).
 *
 * A writer owns one file opened with O_EXCL, or writes into an output of
 * its caller's (tbe__writer_open_out: the exporter's sink); both sit
 * behind one backend, `out`, which a flush calls once.  Records are framed
 * (tfrecord.c) into `buf`, which only ever holds whole records; a flush
 * hands the whole buffer to the backend (the own file: one write(2)), so
 * a crash loses or tears at most the records of the last flush and the
 * file always ends at a record boundary or inside the last one.  A mutex
 * guards everything; the Event bytes are built before taking it (scalars
 * by hand, event_enc.c; the rest with protobuf-c), so threads only
 * serialize on the memcpy into `buf`.
 *
 * Bounded delay: `pending_since` is the monotonic time the oldest unflushed
 * record was added; each call that finds it older than flush_interval_s
 * flushes.  Errors: the first write error is stored in `err` and returned
 * by every later call (sticky), the buffer is dropped and the own file cut
 * back to its last whole record.  Running out of memory fails only the
 * call that met it.  After tbe_writer_finish (or close) calls return
 * TBE_ECLOSED.
 *
 * fork(): the buffer belongs to the process that opened the writer
 * (`owner`), and only it ever writes, truncates or flushes the file.  A
 * fork child inherits a copy of the buffer (the parent's records, which the
 * parent writes itself), perhaps a mutex some other parent thread held at
 * the fork, and no other thread; so a child never takes the mutex and
 * never touches the file: every call but finish and close returns
 * TBE_ESTATE, and those two only release the child's copy.  A child is
 * recognised without a system call on the hot path: a pthread_atfork
 * handler, registered once by the first open, bumps `fork_gen` in every
 * child, and a writer remembers the generation it was opened in (`gen`);
 * before any write(2) the pid is compared as well, for a child made by a
 * raw clone or fork system call that runs no atfork handler.  There is
 * no background thread to stop: flushing happens on the callers' calls. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/iofault.h"
#include "common/optsize.h"
#include "events/event_enc.h"
#include "events/tfrecord.h"
#include "events/writer_core.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/summary.pb-c.h"

#define DEFAULT_BUFFER (256 * 1024)
#define WRITER_NAME "tbexport"

struct tbe_writer {
  tbe_allocator a;
  pthread_mutex_t mu;
  pid_t owner;         /* the process that opened it: the only one that writes */
  unsigned gen;        /* fork_gen when it was opened */
  atomic_int refused;  /* a child used it (TBE_ESTATE given): what close returns */
  atomic_int released; /* a child closed its copy of fd */
  tbe__writer_out out; /* where a flush goes: the own file or the caller's output */
  int fd;              /* the own file; -1 on a caller's output */
  int err;             /* sticky */
  uint64_t written;    /* bytes of whole records in the own file */
  int closed; /* finished: no more records */
  tbe__buf buf;
  double pending_since; /* monotonic seconds; <0: nothing pending */
  double flush_interval;
  size_t buffer_size;
  int durable;
  char *path;
  char *dir;
  char *suffix;
  char *host;
  int version_fixed; /* the file_version record at version_wall, not now */
  double version_wall;
};

static atomic_uint file_counter;

/* ---- fork ---- */

/* Bumped in every child made by fork(): a writer opened in an earlier
 * generation belongs to an ancestor. */
static atomic_uint fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void in_child(void) { atomic_fetch_add_explicit(&fork_gen, 1u, memory_order_relaxed); }

static void register_atfork(void) { pthread_atfork(NULL, NULL, in_child); }

/* Whether this process is a child of the writer's owner (see the essay):
 * then the writer is not ours to lock, write or flush. */
static int in_child_of_owner(const tbe_writer *w) {
  return atomic_load_explicit(&fork_gen, memory_order_relaxed) != w->gen;
}

/* Takes the writer's mutex in its owner; in a child, takes nothing and
 * returns TBE_ESTATE, remembered for close. */
static int lock_owned(tbe_writer *w) {
  if (in_child_of_owner(w)) {
    atomic_store_explicit(&w->refused, TBE_ESTATE, memory_order_relaxed);
    return TBE_ESTATE;
  }
  pthread_mutex_lock(&w->mu);
  return 0;
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *pb_alloc(void *d, size_t n) {
  tbe__pbctx *c = d;
  void *p = tbe__alloc(c->a, n);
  if (!p) c->oom = 1;
  return p;
}
static void pb_free(void *d, void *p) { tbe__free(((tbe__pbctx *)d)->a, p); }

void tbe__pb_allocator(ProtobufCAllocator *out, tbe__pbctx *ctx) {
  ctx->oom = 0;
  out->alloc = pb_alloc;
  out->free = pb_free;
  out->allocator_data = ctx;
}

static void writer_defaults(tbe_writer_options *o) {
  memset(o, 0, sizeof *o);
  o->flush_interval_s = 1.0;
  o->buffer_size = DEFAULT_BUFFER;
}
TBE__OPTIONS_INIT_SIZED(tbe_writer_options, writer_defaults)

/* ---- the own file ----
 * The backend of tbe_writer_open: one write(2) per flush through the I/O
 * seam (common/iofault.h).  A failed write may have left part of the
 * buffer in the file: it is cut back to the last whole record (best
 * effort) so that the file stays a clean sequence of records; nothing is
 * written after a failure (the error is sticky). */

static int file_write(void *ctx, const void *p, size_t n) {
  tbe_writer *w = ctx;
  int rc = tbe__write_all(w->fd, p, n);
  if (rc == 0) {
    w->written += n;
  } else if (ftruncate(w->fd, (off_t)w->written) != 0) {
    /* a torn last record stays */
  }
  return rc;
}

static int file_sync(void *ctx) {
  tbe_writer *w = ctx;
  return tbe__io_fsync(w->fd) != 0 ? -errno : 0;
}

/* ---- the locked core ---- */

static int write_buffer_locked(tbe_writer *w) {
  if (w->buf.len == 0) {
    w->pending_since = -1;
    return 0;
  }
  /* A child of a raw clone or fork system call (no atfork handler ran)
   * still never writes the owner's records; getpid is paid per flush. */
  int rc = getpid() == w->owner ? w->out.write(w->out.ctx, w->buf.data, w->buf.len) : TBE_ESTATE;
  tbe__buf_clear(&w->buf);
  w->pending_since = -1;
  if (w->buf.cap > 4 * w->buffer_size + 65536) {
    tbe__buf_deinit(&w->buf);
    tbe__buf_init(&w->buf, &w->a);
  }
  if (rc < 0) w->err = rc;
  return rc;
}

static int flush_locked(tbe_writer *w, int durable) {
  if (w->err) return w->err;
  int rc = write_buffer_locked(w);
  if (rc < 0) return rc;
  if (durable && w->out.sync && (rc = w->out.sync(w->out.ctx)) < 0) {
    w->err = rc;
    return rc;
  }
  return 0;
}

/* After appending records: flush when the buffer is full, when every record
 * must go out at once, or when the oldest pending record is too old. */
static int after_append_locked(tbe_writer *w) {
  if (tbe__buf_error(&w->buf)) {
    /* A failed reserve appends nothing, so the buffer still holds whole
     * records: report the failure for this record only (not sticky). */
    int e = tbe__buf_error(&w->buf);
    w->buf.err = 0;
    return e;
  }
  if (w->buf.len >= w->buffer_size || w->flush_interval <= 0)
    return flush_locked(w, w->durable);
  double now = mono_now();
  if (w->pending_since < 0)
    w->pending_since = now;
  else if (now - w->pending_since >= w->flush_interval)
    return flush_locked(w, w->durable);
  return 0;
}

static int state_locked(const tbe_writer *w) {
  if (w->err) return w->err;
  if (w->closed) return TBE_ECLOSED;
  return 0;
}

static int append_record(tbe_writer *w, const uint8_t *data, size_t n) {
  int rc = lock_owned(w);
  if (rc) return rc;
  rc = state_locked(w);
  if (rc == 0) {
    tbe__tfr_append(&w->buf, data, n);
    rc = after_append_locked(w);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tbe__writer_write_message(tbe_writer *w, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  int rc = lock_owned(w);
  if (rc) return rc;
  rc = state_locked(w);
  if (rc == 0) {
    uint8_t *d = tbe__buf_reserve(&w->buf, n + TBE__TFR_OVERHEAD);
    if (!d) {
      rc = after_append_locked(w);
    } else {
      size_t got = protobuf_c_message_pack(msg, d + TBE__TFR_HEADER);
      if (got != n) {
        rc = TBE_EIO; /* cannot happen with protobuf-c; do not store a bad record */
      } else {
        tbe__tfr_header(d, n);
        tbe__tfr_footer(d + TBE__TFR_HEADER + n, d + TBE__TFR_HEADER, n);
        w->buf.len += n + TBE__TFR_OVERHEAD;
        rc = after_append_locked(w);
      }
    }
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tbe__writer_replace_fd(tbe_writer *w, int fd) {
  if (!w || fd < 0) return TBE_EINVAL;
  if (lock_owned(w)) return TBE_ESTATE;
  if (w->out.write != file_write) {
    pthread_mutex_unlock(&w->mu);
    return TBE_EINVAL;
  }
  if (w->fd >= 0) close(w->fd);
  w->fd = fd;
  off_t at = lseek(fd, 0, SEEK_CUR);
  w->written = at > 0 ? (uint64_t)at : 0;
  pthread_mutex_unlock(&w->mu);
  return 0;
}

/* ---- open / close ---- */

static int check_suffix(const char *s) {
  size_t n = strlen(s);
  if (n > 100 || !tbe__utf8_valid(s, n)) return TBE_ENAME;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '/' || (unsigned char)s[i] < 0x20) return TBE_ENAME;
  return 0;
}

static void writer_free(tbe_writer *w) {
  tbe_allocator a = w->a;
  tbe__buf_deinit(&w->buf);
  tbe__free(&a, w->path);
  tbe__free(&a, w->dir);
  tbe__free(&a, w->suffix);
  tbe__free(&a, w->host);
  /* (in a child the mutex may be held by a thread that is not there) */
  if (!in_child_of_owner(w)) pthread_mutex_destroy(&w->mu);
  tbe__free(&a, w);
}

static int write_file_version(tbe_writer *w) {
  Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
  Tensorboard__SourceMetadata sm = TENSORBOARD__SOURCE_METADATA__INIT;
  sm.writer = (char *)WRITER_NAME;
  ev.wall_time = w->version_fixed ? w->version_wall : tbe__writer_wall_now();
  ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
  ev.file_version = (char *)"brain.Event:2";
  ev.source_metadata = &sm;
  return tbe__writer_write_message(w, &ev.base);
}

/* The writer object of tbe_writer_open and tbe__writer_open_out, on the
 * own file's backend but without a file; `o` gets the options with
 * defaults applied. */
static int writer_new(tbe_writer **out, const char *run_dir, const tbe_writer_options *opts,
                      tbe_writer_options *o) {
  *out = NULL;
  tbe_writer_options_init(o);
  if (opts) *o = *opts;
  if (isnan(o->flush_interval_s) || o->flush_interval_s < 0) return TBE_EINVAL;
  if (o->buffer_size == 0) o->buffer_size = DEFAULT_BUFFER;
  if (o->filename_suffix && check_suffix(o->filename_suffix) < 0) return TBE_ENAME;
  if (o->host && tbe__name_check(o->host, NULL) < 0) return TBE_ENAME;

  tbe_allocator a;
  tbe__allocator_init(&a, o->allocator);
  tbe_writer *w = tbe__calloc(&a, 1, sizeof *w);
  if (!w) return TBE_ENOMEM;
  w->a = a;
  w->fd = -1;
  w->out.write = file_write;
  w->out.sync = file_sync;
  w->out.ctx = w;
  w->pending_since = -1;
  w->flush_interval = o->flush_interval_s;
  w->buffer_size = o->buffer_size;
  w->durable = o->durable;
  pthread_once(&atfork_once, register_atfork);
  w->owner = getpid();
  w->gen = atomic_load_explicit(&fork_gen, memory_order_relaxed);
  pthread_mutex_init(&w->mu, NULL);
  tbe__buf_init(&w->buf, &w->a);
  char hostbuf[256];
  if (o->host)
    snprintf(hostbuf, sizeof hostbuf, "%s", o->host);
  else
    tbe__hostname(hostbuf, sizeof hostbuf);
  w->dir = tbe__strdup(&w->a, run_dir);
  w->host = tbe__strdup(&w->a, hostbuf);
  w->suffix = tbe__strdup(&w->a, o->filename_suffix ? o->filename_suffix : "");
  if (!w->dir || !w->host || !w->suffix) {
    writer_free(w);
    return TBE_ENOMEM;
  }
  *out = w;
  return 0;
}

/* Writes the file_version record at once. */
static int writer_start(tbe_writer *w, int durable) {
  int rc = write_file_version(w);
  if (rc == 0) {
    pthread_mutex_lock(&w->mu);
    rc = flush_locked(w, durable);
    pthread_mutex_unlock(&w->mu);
  }
  return rc;
}

int tbe_writer_open(tbe_writer **out, const char *run_dir, const tbe_writer_options *opts) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!run_dir || !*run_dir) return TBE_EINVAL;
  tbe_writer_options oc; /* the caller's, completed to this version (its size) */
  if (opts && !(opts = TBE__OPTIONS_TAKE(tbe_writer_options, &oc, opts))) return TBE_EINVAL;
  tbe_writer_options o;
  tbe_writer *w;
  int rc = writer_new(&w, run_dir, opts, &o);
  if (rc) return rc;
  /* run_dir is the caller's (symlinks in it are followed); the file is
   * created in it with O_EXCL, so a symlink planted at a name we try is
   * skipped, never opened. */
  rc = tbe__mkdir_p(run_dir, 0755);
  int dfd = rc ? -1 : open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!rc && dfd < 0) rc = -errno;
  if (rc < 0) {
    writer_free(w);
    return rc;
  }
  long long secs = (long long)time(NULL);
  for (int tries = 0; tries < 1000; tries++) {
    unsigned n = atomic_fetch_add(&file_counter, 1u);
    tbe__buf name;
    tbe__buf_init(&name, &w->a);
    tbe__buf_printf(&name, "%s/events.out.tfevents.%010lld.%s.%ld.%u%s", run_dir, secs, w->host,
                    (long)getpid(), n, w->suffix);
    tbe__buf_putc(&name, '\0');
    if (tbe__buf_error(&name)) {
      tbe__buf_deinit(&name);
      close(dfd);
      writer_free(w);
      return TBE_ENOMEM;
    }
    const char *base = (char *)name.data + strlen(run_dir) + 1;
    int fd = tbe__io_openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      w->fd = fd;
      w->path = (char *)name.data; /* owned now */
      break;
    }
    int e = errno;
    tbe__buf_deinit(&name);
    if (e != EEXIST) {
      close(dfd);
      writer_free(w);
      return -e;
    }
  }
  if (w->fd < 0) {
    close(dfd);
    writer_free(w);
    return TBE_EEXIST;
  }
  rc = writer_start(w, o.durable);
  if (rc == 0 && o.durable && tbe__io_fsync(dfd) != 0) rc = -errno;
  if (rc < 0) {
    close(w->fd);
    unlinkat(dfd, strrchr(w->path, '/') + 1, 0);
    close(dfd);
    writer_free(w);
    return rc;
  }
  close(dfd);
  *out = w;
  return 0;
}

int tbe__writer_open_out(tbe_writer **out, const tbe__writer_out *to, const char *path,
                         const tbe_writer_options *opts, double version_wall) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!to || !to->write || !path) return TBE_EINVAL;
  tbe_writer_options o;
  tbe_writer *w;
  int rc = writer_new(&w, "", opts, &o);
  if (rc) return rc;
  if (!(w->path = tbe__strdup(&w->a, path))) {
    writer_free(w);
    return TBE_ENOMEM;
  }
  w->out = *to;
  w->version_fixed = version_wall >= 0;
  w->version_wall = version_wall;
  rc = writer_start(w, o.durable);
  if (rc < 0) {
    writer_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

const char *tbe_writer_path(const tbe_writer *w) { return w ? w->path : NULL; }

int tbe_writer_flush(tbe_writer *w, int durable) {
  if (!w) return TBE_EINVAL;
  int rc = lock_owned(w);
  if (rc) return rc;
  rc = state_locked(w);
  if (rc == 0) rc = flush_locked(w, durable || w->durable);
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tbe_writer_finish(tbe_writer *w) {
  if (!w) return TBE_EINVAL;
  if (in_child_of_owner(w)) {
    /* The child's copy only: its descriptor closed, the owner's records
     * left to the owner; an error only when the child tried to write. */
    if (!atomic_exchange(&w->released, 1) && w->fd >= 0) close(w->fd);
    return atomic_load_explicit(&w->refused, memory_order_relaxed);
  }
  pthread_mutex_lock(&w->mu);
  int rc = w->err;
  if (!w->closed) {
    if (!w->err) rc = flush_locked(w, w->durable);
    if (w->fd >= 0 && tbe__io_close(w->fd) != 0 && rc == 0) {
      rc = -errno;
      if (!w->err) w->err = rc;
    }
    w->fd = -1;
    w->closed = 1;
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

int tbe_writer_close(tbe_writer *w) {
  if (!w) return 0;
  int rc = tbe_writer_finish(w);
  writer_free(w);
  return rc;
}

/* ---- records ----
 * The scalar, encoded by hand in place (event_enc.c: the hot path), every
 * other Summary value through protobuf-c (tbe__writer_write_message), and
 * caller-serialized Events. */

int tbe_writer_add_scalar(tbe_writer *w, const char *tag, double value, int64_t step,
                          double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = tbe__writer_check_tag(tag, &tl);
  if (rc < 0) return rc;
  if ((rc = tbe__writer_resolve_wall(&wall_time)) < 0) return rc;
  size_t max = tbe__scalar_event_max(tl);
  if ((rc = lock_owned(w))) return rc;
  rc = state_locked(w);
  if (rc == 0) {
    uint8_t *d = tbe__buf_reserve(&w->buf, max + TBE__TFR_OVERHEAD);
    if (d) {
      /* encode in place, then frame around it */
      size_t n = tbe__encode_scalar_event(d + TBE__TFR_HEADER, wall_time, step, tag, tl,
                                          (float)value);
      tbe__tfr_header(d, n);
      tbe__tfr_footer(d + TBE__TFR_HEADER + n, d + TBE__TFR_HEADER, n);
      w->buf.len += n + TBE__TFR_OVERHEAD;
    }
    rc = after_append_locked(w);
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

/* Writes Event{wall_time, step, summary{value}}. */
int tbe__writer_write_value(tbe_writer *w, Tensorboard__Summary__Value *v, int64_t step,
                            double wall_time) {
  Tensorboard__Summary s = TENSORBOARD__SUMMARY__INIT;
  Tensorboard__Summary__Value *vals[1] = {v};
  s.n_value = 1;
  s.value = vals;
  Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
  ev.summary = &s;
  return tbe__writer_write_message(w, &ev.base);
}

int tbe_writer_write_event(tbe_writer *w, const void *event, size_t size) {
  if (!w || (!event && size)) return TBE_EINVAL;
  ProtobufCAllocator pa;
  tbe__pbctx ctx = {&w->a, 0};
  tbe__pb_allocator(&pa, &ctx);
  Tensorboard__Event *ev = tensorboard__event__unpack(&pa, size, event);
  if (!ev) return ctx.oom ? TBE_ENOMEM : TBE_EPARSE;
  tensorboard__event__free_unpacked(ev, &pa);
  return append_record(w, event, size);
}

/* ---- for the encoders ---- */

const tbe_allocator *tbe__writer_allocator(const tbe_writer *w) { return &w->a; }

int tbe__writer_open_subrun(tbe_writer *w, const char *subrun, tbe_writer **sub) {
  *sub = NULL;
  if (!*w->dir) return TBE_ESTATE; /* on a caller's output: no run directory */
  int rc = lock_owned(w);
  if (rc) return rc;
  rc = state_locked(w);
  pthread_mutex_unlock(&w->mu);
  if (rc < 0) return rc;
  tbe__buf dir;
  tbe__buf_init(&dir, &w->a);
  tbe__buf_printf(&dir, "%s/%s", w->dir, subrun);
  tbe__buf_putc(&dir, '\0');
  if (tbe__buf_error(&dir)) {
    tbe__buf_deinit(&dir);
    return TBE_ENOMEM;
  }
  tbe_writer_options o;
  tbe_writer_options_init(&o);
  o.host = w->host;
  o.filename_suffix = w->suffix[0] ? w->suffix : NULL;
  o.durable = w->durable;
  o.allocator = &w->a;
  o.flush_interval_s = w->flush_interval;
  /* The sub-run directory is ours: never written through a symlink. */
  rc = tbe__mkdir_under(w->dir, subrun, 0755);
  if (rc == 0) rc = tbe_writer_open(sub, (char *)dir.data, &o);
  tbe__buf_deinit(&dir);
  return rc;
}
