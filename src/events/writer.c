/* writer.c: the TensorBoard event writer (include/tbexport/writer.h).
 *
 * One writer owns one file opened with O_EXCL.  Records are framed
 * (tfrecord.c) into `buf`, which only ever holds whole records; a flush
 * hands the whole buffer to the kernel, so a crash loses or tears at most
 * the records of the last flush and the file always ends at a record
 * boundary or inside the last one.  A mutex guards everything; the Event
 * bytes are built before taking it (scalars by hand, event_enc.c; the rest
 * with protobuf-c), so threads only serialize on the memcpy into `buf`.
 *
 * Bounded delay: `pending_since` is the monotonic time the oldest unflushed
 * record was added; each call that finds it older than flush_interval_s
 * flushes.  Errors: the first write error is stored in `err` and returned
 * by every later call (sticky), the buffer is dropped and the file cut back
 * to its last whole record.  Running out of
 * memory fails only the call that met it.  After
 * tbe_writer_finish (or close) calls return TBE_ECLOSED.
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
#include "common/intern.h"
#include "common/iofault.h"
#include "common/optsize.h"
#include "events/event_enc.h"
#include "events/histo.h"
#include "events/png.h"
#include "events/tfrecord.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "tensorboard/custom_scalar.pb-c.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/hparams.pb-c.h"
#include "tensorboard/plugins.pb-c.h"
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
  int fd;
  int err;    /* sticky */
  uint64_t written; /* bytes of whole records in the file */
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

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Resolves the caller's wall time: negative -> now; NaN/inf rejected. */
static int resolve_wall(double *wt) {
  if (isnan(*wt) || isinf(*wt)) return TBE_EINVAL;
  if (*wt < 0) *wt = wall_now();
  return 0;
}

static int check_tag(const char *tag, size_t *len) {
  if (!tag) return TBE_EINVAL;
  size_t n = strlen(tag);
  if (n == 0) return TBE_EINVAL;
  if (!tbe__utf8_valid(tag, n)) return TBE_EUTF8;
  *len = n;
  return 0;
}

static int check_text(const char *s) {
  if (!s) return TBE_EINVAL;
  return tbe__utf8_valid(s, strlen(s)) ? 0 : TBE_EUTF8;
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

/* ---- the locked core ---- */

static int write_buffer_locked(tbe_writer *w) {
  if (w->buf.len == 0) {
    w->pending_since = -1;
    return 0;
  }
  /* A child of a raw clone or fork system call (no atfork handler ran)
   * still never writes the owner's records; getpid is paid per flush. */
  int rc = getpid() == w->owner ? tbe__write_all(w->fd, w->buf.data, w->buf.len) : TBE_ESTATE;
  /* A failed write may have left part of the buffer in the file: cut it
   * back to the last whole record (best effort) so that the file stays a
   * clean sequence of records; nothing is written after a failure. */
  if (rc == 0) w->written += w->buf.len;
  else if (rc != TBE_ESTATE && ftruncate(w->fd, (off_t)w->written) != 0) {
    /* a torn last record stays */
  }
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
  if (durable && tbe__io_fsync(w->fd) != 0) {
    w->err = -errno;
    return w->err;
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
  ev.wall_time = w->version_fixed ? w->version_wall : wall_now();
  ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
  ev.file_version = (char *)"brain.Event:2";
  ev.source_metadata = &sm;
  return tbe__writer_write_message(w, &ev.base);
}

/* The writer object of tbe_writer_open and tbe__writer_open_fd, without a
 * file; `o` gets the options with defaults applied. */
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

int tbe__writer_open_fd(tbe_writer **out, int fd, const char *path, const tbe_writer_options *opts,
                        double version_wall) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (fd < 0 || !path) {
    if (fd >= 0) close(fd);
    return TBE_EINVAL;
  }
  tbe_writer_options o;
  tbe_writer *w;
  int rc = writer_new(&w, "", opts, &o);
  if (!rc && !(w->path = tbe__strdup(&w->a, path))) {
    writer_free(w);
    rc = TBE_ENOMEM;
  }
  if (rc) {
    close(fd);
    return rc;
  }
  w->fd = fd;
  w->version_fixed = version_wall >= 0;
  w->version_wall = version_wall;
  rc = writer_start(w, o.durable);
  if (rc < 0) {
    close(w->fd);
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

/* ---- add_* ---- */

static int write_value(tbe_writer *w, Tensorboard__Summary__Value *v, int64_t step,
                       double wall_time);

int tbe_writer_add_scalar(tbe_writer *w, const char *tag, double value, int64_t step,
                          double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
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

/* The metadata TensorBoard keeps a scalar's description with: its fast
 * loader drops the description of a plain simple_value and keeps it when
 * the metadata names the scalars plugin with DATA_CLASS_SCALAR. */
int tbe_writer_add_scalar_described(tbe_writer *w, const char *tag, double value, int64_t step,
                                    double wall_time, const char *display_name,
                                    const char *description) {
  if (!w) return TBE_EINVAL;
  if ((!display_name || !*display_name) && (!description || !*description))
    return tbe_writer_add_scalar(w, tag, value, step, wall_time);
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (display_name && (rc = check_text(display_name)) < 0) return rc;
  if (description && (rc = check_text(description)) < 0) return rc;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"scalars";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  md.display_name = (char *)(display_name ? display_name : "");
  md.summary_description = (char *)(description ? description : "");
  md.data_class = TENSORBOARD__DATA_CLASS__DATA_CLASS_SCALAR;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
  v.simple_value = (float)value;
  return write_value(w, &v, step, wall_time);
}

/* Writes Event{wall_time, step, summary{value}}. */
static int write_value(tbe_writer *w, Tensorboard__Summary__Value *v, int64_t step,
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

static int write_histo(tbe_writer *w, const char *tag, Tensorboard__HistogramProto *h,
                       int64_t step, double wall_time) {
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_HISTO;
  v.histo = h;
  return write_value(w, &v, step, wall_time);
}

int tbe_writer_add_histogram(tbe_writer *w, const char *tag, const double *values, size_t n,
                             int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!values || n == 0) return TBE_EINVAL;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  tbe__histo hh;
  if ((rc = tbe__histo_default(&w->a, values, n, &hh)) < 0) return rc;
  Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
  h.min = hh.min;
  h.max = hh.max;
  h.num = hh.num;
  h.sum = hh.sum;
  h.sum_squares = hh.sum_squares;
  h.n_bucket_limit = h.n_bucket = hh.n;
  h.bucket_limit = hh.limits;
  h.bucket = hh.counts;
  rc = write_histo(w, tag, &h, step, wall_time);
  tbe__histo_free(&w->a, &hh);
  return rc;
}

int tbe_writer_add_histogram_raw(tbe_writer *w, const char *tag, double min, double max,
                                 double num, double sum, double sum_squares,
                                 const double *bucket_limits, const double *bucket_counts,
                                 size_t nbuckets, int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!bucket_limits || !bucket_counts || nbuckets == 0) return TBE_EINVAL;
  if (isnan(min) || isnan(max) || isnan(num) || isnan(sum) || isnan(sum_squares) || num < 0)
    return TBE_EINVAL;
  for (size_t i = 0; i < nbuckets; i++) {
    if (isnan(bucket_limits[i]) || isnan(bucket_counts[i]) || bucket_counts[i] < 0)
      return TBE_EINVAL;
    if (i && !(bucket_limits[i] > bucket_limits[i - 1])) return TBE_EINVAL;
  }
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  Tensorboard__HistogramProto h = TENSORBOARD__HISTOGRAM_PROTO__INIT;
  h.min = min;
  h.max = max;
  h.num = num;
  h.sum = sum;
  h.sum_squares = sum_squares;
  h.n_bucket_limit = h.n_bucket = nbuckets;
  h.bucket_limit = (double *)bucket_limits;
  h.bucket = (double *)bucket_counts;
  return write_histo(w, tag, &h, step, wall_time);
}

int tbe_writer_add_text(tbe_writer *w, const char *tag, const char *markdown, int64_t step,
                        double wall_time) {
  return tbe_writer_add_text_described(w, tag, markdown, step, wall_time, NULL);
}

int tbe_writer_add_text_described(tbe_writer *w, const char *tag, const char *markdown,
                                  int64_t step, double wall_time, const char *description) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if ((rc = check_text(markdown)) < 0) return rc;
  if (description && (rc = check_text(description)) < 0) return rc;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  static const char sfx[] = "/text_summary";
  char *full = tbe__alloc(&w->a, tl + sizeof sfx);
  if (!full) return TBE_ENOMEM;
  memcpy(full, tag, tl);
  memcpy(full + tl, sfx, sizeof sfx);

  Tensorboard__TensorShapeProto__Dim dim = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  dim.size = 1;
  Tensorboard__TensorShapeProto__Dim *dims[1] = {&dim};
  Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 1;
  shape.dim = dims;
  ProtobufCBinaryData str = {strlen(markdown), (uint8_t *)markdown};
  Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
  t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
  t.tensor_shape = &shape;
  t.n_string_val = 1;
  t.string_val = &str;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"text";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  if (description) md.summary_description = (char *)description;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = full;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  v.tensor = &t;
  rc = write_value(w, &v, step, wall_time);
  tbe__free(&w->a, full);
  return rc;
}

int tbe_writer_add_image(tbe_writer *w, const char *tag, const uint8_t *pixels, size_t size,
                         int width, int height, int channels, int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!pixels || width <= 0 || height <= 0 || channels < 1 || channels > 4) return TBE_EINVAL;
  size_t need = (size_t)width * (size_t)height;
  if (need / (size_t)width != (size_t)height || need > SIZE_MAX / (size_t)channels)
    return TBE_EINVAL;
  if (need * (size_t)channels != size) return TBE_EINVAL;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  tbe__buf png;
  tbe__buf_init(&png, &w->a);
  rc = tbe__png_encode(&png, &w->a, pixels, (uint32_t)width, (uint32_t)height, channels);
  if (rc < 0) {
    tbe__buf_deinit(&png);
    return rc;
  }
  Tensorboard__Summary__Image im = TENSORBOARD__SUMMARY__IMAGE__INIT;
  im.height = height;
  im.width = width;
  im.colorspace = channels;
  im.encoded_image_string.data = png.data;
  im.encoded_image_string.len = png.len;
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"images";
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE;
  v.image = &im;
  rc = write_value(w, &v, step, wall_time);
  tbe__buf_deinit(&png);
  return rc;
}

/* ---- hparams ---- */

/* Serializes an HParamsPluginData into a new buffer (caller frees). */
static int pack_hp(const tbe_allocator *a, const Tensorboard__Hparams__HParamsPluginData *hp,
                   ProtobufCBinaryData *out) {
  size_t n = tensorboard__hparams__hparams_plugin_data__get_packed_size(hp);
  out->data = tbe__alloc(a, n ? n : 1);
  if (!out->data) return TBE_ENOMEM;
  out->len = tensorboard__hparams__hparams_plugin_data__pack(hp, out->data);
  return 0;
}

static int write_hp_value(tbe_writer *w, const char *tag, ProtobufCBinaryData content,
                          int64_t step, double wall_time) {
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"hparams";
  pd.content = content;
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  return write_value(w, &v, step, wall_time);
}

/* The hparams records: the experiment (when `experiment`), the session
 * start (its hyper-parameters, start time `start` when > 0) and end
 * (SUCCESS), then each metric as a scalar. */
static int hp_write_all(tbe_writer *sub, const tbe_allocator *a, const tbe_hparam *hp, size_t nh,
                        const tbe_metric *m, size_t nm, int64_t step, double wall, int experiment,
                        double start) {
  int rc = 0;
  Tensorboard__Hparams__HParamInfo *infos = tbe__calloc(a, nh ? nh : 1, sizeof *infos);
  Tensorboard__Hparams__HParamInfo **pinfos = tbe__calloc(a, nh ? nh : 1, sizeof *pinfos);
  Tensorboard__Hparams__MetricName *mnames = tbe__calloc(a, nm ? nm : 1, sizeof *mnames);
  Tensorboard__Hparams__MetricInfo *minfos = tbe__calloc(a, nm ? nm : 1, sizeof *minfos);
  Tensorboard__Hparams__MetricInfo **pminfos = tbe__calloc(a, nm ? nm : 1, sizeof *pminfos);
  Tensorboard__Hparams__Value *vals = tbe__calloc(a, nh ? nh : 1, sizeof *vals);
  Tensorboard__Hparams__SessionStartInfo__HparamsEntry *ents =
      tbe__calloc(a, nh ? nh : 1, sizeof *ents);
  Tensorboard__Hparams__SessionStartInfo__HparamsEntry **pents =
      tbe__calloc(a, nh ? nh : 1, sizeof *pents);
  ProtobufCBinaryData c = {0, NULL};
  if (!infos || !pinfos || !mnames || !minfos || !pminfos || !vals || !ents || !pents) {
    rc = TBE_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < nh; i++) {
    Tensorboard__Hparams__HParamInfo init = TENSORBOARD__HPARAMS__HPARAM_INFO__INIT;
    Tensorboard__Hparams__Value vinit = TENSORBOARD__HPARAMS__VALUE__INIT;
    Tensorboard__Hparams__SessionStartInfo__HparamsEntry einit =
        TENSORBOARD__HPARAMS__SESSION_START_INFO__HPARAMS_ENTRY__INIT;
    infos[i] = init;
    vals[i] = vinit;
    ents[i] = einit;
    infos[i].name = (char *)hp[i].name;
    switch (hp[i].type) {
      case TBE_HPARAM_NUMBER:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_FLOAT64;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_NUMBER_VALUE;
        vals[i].number_value = hp[i].number;
        break;
      case TBE_HPARAM_STRING:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_STRING;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_STRING_VALUE;
        vals[i].string_value = (char *)hp[i].string;
        break;
      default:
        infos[i].type = TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_BOOL;
        vals[i].kind_case = TENSORBOARD__HPARAMS__VALUE__KIND_BOOL_VALUE;
        vals[i].bool_value = hp[i].boolean ? 1 : 0;
        break;
    }
    pinfos[i] = &infos[i];
    ents[i].key = (char *)hp[i].name;
    ents[i].value = &vals[i];
    pents[i] = &ents[i];
  }
  for (size_t i = 0; i < nm; i++) {
    Tensorboard__Hparams__MetricName ninit = TENSORBOARD__HPARAMS__METRIC_NAME__INIT;
    Tensorboard__Hparams__MetricInfo minit = TENSORBOARD__HPARAMS__METRIC_INFO__INIT;
    mnames[i] = ninit;
    minfos[i] = minit;
    mnames[i].tag = (char *)m[i].tag;
    minfos[i].name = &mnames[i];
    pminfos[i] = &minfos[i];
  }
  /* experiment */
  Tensorboard__Hparams__Experiment exp = TENSORBOARD__HPARAMS__EXPERIMENT__INIT;
  exp.n_hparam_infos = nh;
  exp.hparam_infos = pinfos;
  exp.n_metric_infos = nm;
  exp.metric_infos = pminfos;
  Tensorboard__Hparams__HParamsPluginData pd = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__INIT;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT;
  pd.experiment = &exp;
  if (experiment) {
    if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
    if ((rc = write_hp_value(sub, "_hparams_/experiment", c, step, wall)) < 0) goto done;
    tbe__free(a, c.data);
    c.data = NULL;
  }
  /* session start */
  Tensorboard__Hparams__SessionStartInfo ssi = TENSORBOARD__HPARAMS__SESSION_START_INFO__INIT;
  ssi.n_hparams = nh;
  ssi.hparams = pents;
  if (start > 0) ssi.start_time_secs = start;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_START_INFO;
  pd.session_start_info = &ssi;
  if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
  if ((rc = write_hp_value(sub, "_hparams_/session_start_info", c, step, wall)) < 0) goto done;
  tbe__free(a, c.data);
  c.data = NULL;
  /* session end */
  Tensorboard__Hparams__SessionEndInfo sei = TENSORBOARD__HPARAMS__SESSION_END_INFO__INIT;
  sei.status = TENSORBOARD__HPARAMS__STATUS__STATUS_SUCCESS;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_SESSION_END_INFO;
  pd.session_end_info = &sei;
  if ((rc = pack_hp(a, &pd, &c)) < 0) goto done;
  if ((rc = write_hp_value(sub, "_hparams_/session_end_info", c, step, wall)) < 0) goto done;
  for (size_t i = 0; i < nm && rc == 0; i++)
    rc = tbe_writer_add_scalar(sub, m[i].tag, m[i].value, step, wall);
done:
  tbe__free(a, c.data);
  tbe__free(a, infos);
  tbe__free(a, pinfos);
  tbe__free(a, mnames);
  tbe__free(a, minfos);
  tbe__free(a, pminfos);
  tbe__free(a, vals);
  tbe__free(a, ents);
  tbe__free(a, pents);
  return rc;
}

/* Whether name s[0..n) was seen before in `seen` (added now if not):
 * 1, 0, or a negative code (out of memory). */
static int seen_before(tbe__intern *seen, const char *s, size_t n) {
  int added = 0;
  uint32_t id;
  int rc = tbe__intern_add(seen, s, n, &id, &added);
  return rc < 0 ? rc : !added;
}

/* The hyper-parameters and metrics of one session: names and tags by the
 * tag rules, each name once and each tag once (TensorBoard keys a
 * session's values and the experiment's columns by them: a second value of
 * one name would be a column with two values), string values valid UTF-8,
 * known types.  Returns 0 or TBE_EINVAL / TBE_EUTF8 / TBE_ENOMEM. */
static int check_hparams(const tbe_allocator *a, const tbe_hparam *hp, size_t nh,
                         const tbe_metric *m, size_t nm) {
  if ((nh && !hp) || (nm && !m)) return TBE_EINVAL;
  size_t tl;
  int rc = 0;
  for (size_t i = 0; i < nh && !rc; i++) {
    if ((rc = check_tag(hp[i].name, &tl)) < 0) break;
    if (hp[i].type == TBE_HPARAM_STRING)
      rc = check_text(hp[i].string);
    else if (hp[i].type != TBE_HPARAM_NUMBER && hp[i].type != TBE_HPARAM_BOOL)
      rc = TBE_EINVAL;
  }
  for (size_t i = 0; i < nm && !rc; i++) rc = check_tag(m[i].tag, &tl);
  tbe__intern names, tags;
  tbe__intern_init(&names, a, TBE__SEED_PROCESS);
  tbe__intern_init(&tags, a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < nh && !rc; i++)
    if ((rc = seen_before(&names, hp[i].name, strlen(hp[i].name))) == 1) rc = TBE_EINVAL;
  for (size_t i = 0; i < nm && !rc; i++)
    if ((rc = seen_before(&tags, m[i].tag, strlen(m[i].tag))) == 1) rc = TBE_EINVAL;
  tbe__intern_deinit(&names);
  tbe__intern_deinit(&tags);
  return rc;
}

/* The experiment record of `x`: every text valid UTF-8, names by the tag
 * rules, each hparam name and each metric tag once. */
static int write_experiment(tbe_writer *w, const tbe__hp_experiment *x, int64_t step, double wall) {
  const tbe_allocator *a = &w->a;
  size_t nh = x->nhparams, nm = x->nmetrics, tl;
  int rc = 0;
  if ((nh && !x->hparams) || (nm && !x->metrics)) return TBE_EINVAL;
  tbe__intern seen;
  tbe__intern_init(&seen, a, TBE__SEED_PROCESS);
  for (size_t i = 0; i < nh + nm && !rc; i++) {
    const tbe__hp_column *c = i < nh ? &x->hparams[i] : &x->metrics[i - nh];
    if ((rc = check_tag(c->name, &tl)) < 0) break;
    if (c->display_name && (rc = check_text(c->display_name)) < 0) break;
    if (c->description && (rc = check_text(c->description)) < 0) break;
    if (i < nh && c->type != TBE_HPARAM_NUMBER && c->type != TBE_HPARAM_STRING &&
        c->type != TBE_HPARAM_BOOL)
      rc = TBE_EINVAL;
    /* one namespace per kind: a hparam and a metric may share a name */
    if (!rc) {
      tbe__buf k;
      tbe__buf_init(&k, a);
      tbe__buf_putc(&k, i < nh ? 'h' : 'm');
      tbe__buf_puts(&k, c->name);
      rc = tbe__buf_error(&k) ? TBE_ENOMEM : seen_before(&seen, (const char *)k.data, k.len);
      if (rc == 1) rc = TBE_EINVAL;
      tbe__buf_deinit(&k);
    }
  }
  tbe__intern_deinit(&seen);
  if (rc < 0) return rc;
  Tensorboard__Hparams__HParamInfo *hi = tbe__calloc(a, nh ? nh : 1, sizeof *hi);
  Tensorboard__Hparams__HParamInfo **phi = tbe__calloc(a, nh ? nh : 1, sizeof *phi);
  Tensorboard__Hparams__MetricName *mn = tbe__calloc(a, nm ? nm : 1, sizeof *mn);
  Tensorboard__Hparams__MetricInfo *mi = tbe__calloc(a, nm ? nm : 1, sizeof *mi);
  Tensorboard__Hparams__MetricInfo **pmi = tbe__calloc(a, nm ? nm : 1, sizeof *pmi);
  ProtobufCBinaryData c = {0, NULL};
  if (!hi || !phi || !mn || !mi || !pmi) {
    rc = TBE_ENOMEM;
    goto done;
  }
  static const Tensorboard__Hparams__DataType types[] = {
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_FLOAT64,
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_STRING,
      TENSORBOARD__HPARAMS__DATA_TYPE__DATA_TYPE_BOOL};
  for (size_t i = 0; i < nh; i++) {
    Tensorboard__Hparams__HParamInfo init = TENSORBOARD__HPARAMS__HPARAM_INFO__INIT;
    hi[i] = init;
    hi[i].name = (char *)x->hparams[i].name;
    if (x->hparams[i].display_name) hi[i].display_name = (char *)x->hparams[i].display_name;
    if (x->hparams[i].description) hi[i].description = (char *)x->hparams[i].description;
    hi[i].type = types[x->hparams[i].type];
    hi[i].differs = x->hparams[i].differs ? 1 : 0;
    phi[i] = &hi[i];
  }
  for (size_t i = 0; i < nm; i++) {
    Tensorboard__Hparams__MetricName ninit = TENSORBOARD__HPARAMS__METRIC_NAME__INIT;
    Tensorboard__Hparams__MetricInfo minit = TENSORBOARD__HPARAMS__METRIC_INFO__INIT;
    mn[i] = ninit;
    mi[i] = minit;
    mn[i].tag = (char *)x->metrics[i].name;
    mi[i].name = &mn[i];
    if (x->metrics[i].display_name) mi[i].display_name = (char *)x->metrics[i].display_name;
    if (x->metrics[i].description) mi[i].description = (char *)x->metrics[i].description;
    pmi[i] = &mi[i];
  }
  Tensorboard__Hparams__Experiment exp = TENSORBOARD__HPARAMS__EXPERIMENT__INIT;
  exp.n_hparam_infos = nh;
  exp.hparam_infos = phi;
  exp.n_metric_infos = nm;
  exp.metric_infos = pmi;
  Tensorboard__Hparams__HParamsPluginData pd = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__INIT;
  pd.data_case = TENSORBOARD__HPARAMS__HPARAMS_PLUGIN_DATA__DATA_EXPERIMENT;
  pd.experiment = &exp;
  if (!(rc = pack_hp(a, &pd, &c))) rc = write_hp_value(w, "_hparams_/experiment", c, step, wall);
done:
  tbe__free(a, c.data);
  tbe__free(a, hi);
  tbe__free(a, phi);
  tbe__free(a, mn);
  tbe__free(a, mi);
  tbe__free(a, pmi);
  return rc;
}

int tbe__writer_hparams_session(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                                const tbe_metric *metrics, size_t nmetrics,
                                const tbe__hp_experiment *exp, double start, int64_t step,
                                double wall_time) {
  if (!w) return TBE_EINVAL;
  int rc = check_hparams(&w->a, hparams, nhparams, metrics, nmetrics);
  if (rc < 0) return rc;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  if (exp && (rc = write_experiment(w, exp, step, wall_time)) < 0) return rc;
  return hp_write_all(w, &w->a, hparams, nhparams, metrics, nmetrics, step, wall_time, 0, start);
}

int tbe_writer_add_hparams(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                           const tbe_metric *metrics, size_t nmetrics, const char *subrun,
                           int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  if (nhparams + nmetrics == 0) return TBE_EINVAL;
  int rc = check_hparams(&w->a, hparams, nhparams, metrics, nmetrics);
  if (rc < 0) return rc;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  char name[64];
  if (!subrun) {
    snprintf(name, sizeof name, "%.6f", wall_now());
    subrun = name;
  }
  if (tbe__name_check(subrun, NULL) < 0) return TBE_ENAME;

  if ((rc = lock_owned(w))) return rc;
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
  tbe_writer *sub = NULL;
  /* The sub-run directory is ours: never written through a symlink. */
  rc = tbe__mkdir_under(w->dir, subrun, 0755);
  if (rc == 0) rc = tbe_writer_open(&sub, (char *)dir.data, &o);
  tbe__buf_deinit(&dir);
  if (rc < 0) return rc;
  rc = hp_write_all(sub, &w->a, hparams, nhparams, metrics, nmetrics, step, wall_time, 1, 0);
  int rc2 = tbe_writer_close(sub);
  return rc < 0 ? rc : rc2;
}

/* ---- PR curves ---- */

int tbe_writer_add_pr_curve(tbe_writer *w, const char *tag, const uint8_t *labels,
                            const float *predictions, size_t n, unsigned num_thresholds,
                            int64_t step, double wall_time) {
  if (!w) return TBE_EINVAL;
  size_t tl;
  int rc = check_tag(tag, &tl);
  if (rc < 0) return rc;
  if (!labels || !predictions || n == 0) return TBE_EINVAL;
  if (num_thresholds == 0) num_thresholds = 127;
  if (num_thresholds < 2 || num_thresholds > (1u << 20)) return TBE_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!(predictions[i] >= 0.0f && predictions[i] <= 1.0f)) return TBE_EINVAL;
  if ((rc = resolve_wall(&wall_time)) < 0) return rc;
  size_t k = num_thresholds;
  double *tpb = tbe__calloc(&w->a, 2 * k, sizeof(double));
  float *data = tbe__alloc(&w->a, 6 * k * sizeof(float));
  if (!tpb || !data) {
    tbe__free(&w->a, tpb);
    tbe__free(&w->a, data);
    return TBE_ENOMEM;
  }
  double *fpb = tpb + k;
  /* Like TensorBoard's pr_curve summary: bucket floor(p * (k-1)) in float
   * arithmetic; then reverse cumulative sums give TP/FP at each threshold
   * i/(k-1). */
  float scale = (float)(k - 1);
  for (size_t i = 0; i < n; i++) {
    float f = floorf(predictions[i] * scale);
    size_t b = (size_t)f;
    if (b > k - 1) b = k - 1;
    if (labels[i])
      tpb[b] += 1.0;
    else
      fpb[b] += 1.0;
  }
  double tp = 0, fp = 0;
  for (size_t j = k; j-- > 0;) {
    tp += tpb[j];
    fp += fpb[j];
    tpb[j] = tp;
    fpb[j] = fp;
  }
  for (size_t j = 0; j < k; j++) {
    double TP = tpb[j], FP = fpb[j], TN = fpb[0] - FP, FN = tpb[0] - TP;
    double pd = TP + FP > 1e-7 ? TP + FP : 1e-7;
    double rd = TP + FN > 1e-7 ? TP + FN : 1e-7;
    data[0 * k + j] = (float)TP;
    data[1 * k + j] = (float)FP;
    data[2 * k + j] = (float)TN;
    data[3 * k + j] = (float)FN;
    data[4 * k + j] = (float)(TP / pd);
    data[5 * k + j] = (float)(TP / rd);
  }
  Tensorboard__TensorShapeProto__Dim d0 = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  Tensorboard__TensorShapeProto__Dim d1 = TENSORBOARD__TENSOR_SHAPE_PROTO__DIM__INIT;
  d0.size = 6;
  d1.size = (int64_t)k;
  Tensorboard__TensorShapeProto__Dim *dims[2] = {&d0, &d1};
  Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2;
  shape.dim = dims;
  Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
  t.dtype = TENSORBOARD__DATA_TYPE__DT_FLOAT;
  t.tensor_shape = &shape;
  t.n_float_val = 6 * k;
  t.float_val = data;
  Tensorboard__PrCurvePluginData prd = TENSORBOARD__PR_CURVE_PLUGIN_DATA__INIT;
  prd.num_thresholds = num_thresholds;
  uint8_t content[16];
  Tensorboard__SummaryMetadata__PluginData pd = TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
  pd.plugin_name = (char *)"pr_curves";
  pd.content.data = content;
  pd.content.len = tensorboard__pr_curve_plugin_data__pack(&prd, content);
  Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
  md.plugin_data = &pd;
  Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.metadata = &md;
  v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
  v.tensor = &t;
  rc = write_value(w, &v, step, wall_time);
  tbe__free(&w->a, tpb);
  tbe__free(&w->a, data);
  return rc;
}

/* ---- custom scalars ---- */

int tbe_writer_set_custom_scalars_layout(tbe_writer *w, const tbe_category *cats, size_t ncats) {
  return tbe__writer_layout_at(w, cats, ncats, wall_now());
}

int tbe__writer_layout_at(tbe_writer *w, const tbe_category *cats, size_t ncats, double wall) {
  if (!w || !cats || ncats == 0) return TBE_EINVAL;
  int rc;
  size_t nch = 0, nser = 0, tl;
  for (size_t i = 0; i < ncats; i++) {
    if ((rc = check_text(cats[i].title)) < 0) return rc;
    if (cats[i].ncharts && !cats[i].charts) return TBE_EINVAL;
    for (size_t j = 0; j < cats[i].ncharts; j++) {
      const tbe_chart *c = &cats[i].charts[j];
      if ((rc = check_text(c->title)) < 0) return rc;
      if (c->ntags == 0 || !c->tags) return TBE_EINVAL;
      if (c->margin && c->ntags % 3 != 0) return TBE_EINVAL;
      for (size_t k = 0; k < c->ntags; k++)
        if ((rc = check_tag(c->tags[k], &tl)) < 0) return rc;
      nch++;
      if (c->margin) nser += c->ntags / 3;
    }
  }
  const tbe_allocator *a = &w->a;
  Tensorboard__Category *tc = tbe__calloc(a, ncats, sizeof *tc);
  Tensorboard__Category **ptc = tbe__calloc(a, ncats, sizeof *ptc);
  Tensorboard__Chart *ch = tbe__calloc(a, nch + 1, sizeof *ch);
  Tensorboard__Chart **pch = tbe__calloc(a, nch + 1, sizeof *pch);
  Tensorboard__MultilineChartContent *ml = tbe__calloc(a, nch + 1, sizeof *ml);
  Tensorboard__MarginChartContent *mg = tbe__calloc(a, nch + 1, sizeof *mg);
  Tensorboard__MarginChartContent__Series *se = tbe__calloc(a, nser + 1, sizeof *se);
  Tensorboard__MarginChartContent__Series **pse = tbe__calloc(a, nser + 1, sizeof *pse);
  uint8_t *packed = NULL;
  if (!tc || !ptc || !ch || !pch || !ml || !mg || !se || !pse) {
    rc = TBE_ENOMEM;
    goto done;
  }
  size_t ci = 0, si = 0;
  for (size_t i = 0; i < ncats; i++) {
    Tensorboard__Category cinit = TENSORBOARD__CATEGORY__INIT;
    tc[i] = cinit;
    tc[i].title = (char *)cats[i].title;
    tc[i].closed = cats[i].closed ? 1 : 0;
    tc[i].chart = pch + ci;
    tc[i].n_chart = cats[i].ncharts;
    ptc[i] = &tc[i];
    for (size_t j = 0; j < cats[i].ncharts; j++, ci++) {
      const tbe_chart *c = &cats[i].charts[j];
      Tensorboard__Chart chinit = TENSORBOARD__CHART__INIT;
      ch[ci] = chinit;
      ch[ci].title = (char *)c->title;
      if (!c->margin) {
        Tensorboard__MultilineChartContent minit = TENSORBOARD__MULTILINE_CHART_CONTENT__INIT;
        ml[ci] = minit;
        ml[ci].n_tag = c->ntags;
        ml[ci].tag = (char **)c->tags;
        ch[ci].content_case = TENSORBOARD__CHART__CONTENT_MULTILINE;
        ch[ci].multiline = &ml[ci];
      } else {
        Tensorboard__MarginChartContent ginit = TENSORBOARD__MARGIN_CHART_CONTENT__INIT;
        mg[ci] = ginit;
        mg[ci].series = pse + si;
        mg[ci].n_series = c->ntags / 3;
        for (size_t k = 0; k + 2 < c->ntags; k += 3, si++) {
          Tensorboard__MarginChartContent__Series sinit =
              TENSORBOARD__MARGIN_CHART_CONTENT__SERIES__INIT;
          se[si] = sinit;
          se[si].value = (char *)c->tags[k];
          se[si].lower = (char *)c->tags[k + 1];
          se[si].upper = (char *)c->tags[k + 2];
          pse[si] = &se[si];
        }
        ch[ci].content_case = TENSORBOARD__CHART__CONTENT_MARGIN;
        ch[ci].margin = &mg[ci];
      }
      pch[ci] = &ch[ci];
    }
  }
  Tensorboard__Layout lay = TENSORBOARD__LAYOUT__INIT;
  lay.n_category = ncats;
  lay.category = ptc;
  size_t n = tensorboard__layout__get_packed_size(&lay);
  packed = tbe__alloc(a, n ? n : 1);
  if (!packed) {
    rc = TBE_ENOMEM;
    goto done;
  }
  tensorboard__layout__pack(&lay, packed);
  {
    ProtobufCBinaryData str = {n, packed};
    Tensorboard__TensorShapeProto shape = TENSORBOARD__TENSOR_SHAPE_PROTO__INIT;
    Tensorboard__TensorProto t = TENSORBOARD__TENSOR_PROTO__INIT;
    t.dtype = TENSORBOARD__DATA_TYPE__DT_STRING;
    t.tensor_shape = &shape;
    t.n_string_val = 1;
    t.string_val = &str;
    Tensorboard__SummaryMetadata__PluginData pd =
        TENSORBOARD__SUMMARY_METADATA__PLUGIN_DATA__INIT;
    pd.plugin_name = (char *)"custom_scalars";
    Tensorboard__SummaryMetadata md = TENSORBOARD__SUMMARY_METADATA__INIT;
    md.plugin_data = &pd;
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)"custom_scalars__config__";
    v.metadata = &md;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR;
    v.tensor = &t;
    rc = write_value(w, &v, 0, wall);
  }
done:
  tbe__free(a, packed);
  tbe__free(a, tc);
  tbe__free(a, ptc);
  tbe__free(a, ch);
  tbe__free(a, pch);
  tbe__free(a, ml);
  tbe__free(a, mg);
  tbe__free(a, se);
  tbe__free(a, pse);
  return rc;
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
