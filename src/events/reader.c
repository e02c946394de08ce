/* reader.c: the TensorBoard event reader (include/tbexport/reader.h).
 *
 * open() lists the event files up front (sorted by run, then name), walking
 * a directory tree so that it ends whatever the tree holds: each directory
 * is read once, known by (device, inode), so a link back up (`latest ->
 * .`) or two links to each other cannot repeat or loop; the real
 * directories are walked first and the symbolic links to directories
 * after, a generation at a time in name order, so a run keeps its own name
 * when a link also leads to it and the list does not depend on readdir's
 * order; a link to a directory outside the tree is followed once.  Only
 * regular files are listed: a FIFO, device or socket named like an event
 * file is recorded as skipped, never opened (opening a FIFO blocks).
 * next()
 * reads one record at `offset` of the current file through a read window
 * (pread of 256 KiB at a time): the 12-byte header first (length CRC checked
 * before the length is trusted), then the rest; a record longer than the
 * window is checked against the file's size first, so a damaged length
 * never makes us allocate more than the file holds.  The Event is unpacked with
 * protobuf-c through the caller's allocator and turned into the plain views
 * of reader.h; everything an event view points to lives in the unpacked
 * message or in `scratch`, both released at the next call.
 *
 * The last file is never left: reaching its end returns 0 and a later call
 * looks again (tail-follow); a truncated tail is reported once per offset.
 * Corruption makes the rest of a file unreadable ("dead"). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/intern.h"
#include "events/tfrecord.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "tbexport/reader.h"
#include "tensorboard/event.pb-c.h"
#include "tensorboard/summary.pb-c.h"

#define MAX_DEPTH 32
#define WINDOW (256 * 1024) /* bytes read at a time */

typedef struct rfile {
  char *path;
  char *run;
  char *name;
} rfile;

/* A symbolic link to a directory, walked after the real tree. */
typedef struct rlink {
  char *path;
  char *run;
  dev_t dev;
  ino_t ino;
  int depth;
} rlink;

/* An entry not read, and why (a static string). */
typedef struct rskip {
  char *path;
  const char *why;
} rskip;

struct tbe_reader {
  tbe_allocator a;
  tbe__pbctx pctx;
  ProtobufCAllocator pa;
  rfile *files;
  size_t nfiles, capfiles;
  rlink *links;
  size_t nlinks, caplinks;
  rskip *skipped;
  size_t nskipped, capskipped;
  tbe__intern seen; /* the directories read: (device, inode) as 16 bytes */
  size_t cur;
  int fd;
  int dead;             /* current file abandoned */
  uint64_t offset;      /* next record in the current file */
  uint64_t trunc_at;    /* offset of a reported truncated tail, or UINT64_MAX */
  tbe__buf win;         /* read window: file bytes from win_off */
  uint64_t win_off;
  Tensorboard__Event *msg;
  void **scratch;
  size_t nscratch, capscratch;
  tbe_summary_value *values;
  tbe_tb_event ev;
  int err_code;
  uint64_t err_offset;
  const char *err_path;
  char err_msg[256];
};

/* ---- file list ---- */

static int add_file(tbe_reader *r, const char *dir, const char *run, const char *name) {
  if (tbe__grow(&r->a, (void **)&r->files, &r->capfiles, r->nfiles + 1, sizeof(rfile)) < 0)
    return TBE_ENOMEM;
  rfile *f = &r->files[r->nfiles];
  tbe__buf p;
  tbe__buf_init(&p, &r->a);
  tbe__buf_printf(&p, "%s/%s", dir, name);
  tbe__buf_putc(&p, '\0');
  f->path = p.err ? NULL : (char *)p.data;
  if (p.err) tbe__buf_deinit(&p);
  f->run = tbe__strdup(&r->a, run);
  f->name = tbe__strdup(&r->a, name);
  r->nfiles++;
  if (!f->path || !f->run || !f->name) return TBE_ENOMEM;
  return 0;
}

/* A directory's key in r->seen: no padding, so equal pairs are equal
 * bytes. */
static void dir_key(uint64_t k[2], dev_t dev, ino_t ino) {
  k[0] = (uint64_t)dev;
  k[1] = (uint64_t)ino;
}

/* Marks the directory (dev, ino) read.  Returns 1 when it was already, 0
 * when it is now, TBE_ENOMEM. */
static int seen_add(tbe_reader *r, dev_t dev, ino_t ino) {
  uint64_t k[2];
  uint32_t id;
  int added;
  dir_key(k, dev, ino);
  int rc = tbe__intern_add(&r->seen, k, sizeof k, &id, &added);
  return rc ? rc : !added;
}

static int seen_has(const tbe_reader *r, dev_t dev, ino_t ino) {
  uint64_t k[2];
  dir_key(k, dev, ino);
  return tbe__intern_find(&r->seen, k, sizeof k) != TBE__NOIDX;
}

static int add_skip(tbe_reader *r, const char *path, const char *why) {
  if (tbe__grow(&r->a, (void **)&r->skipped, &r->capskipped, r->nskipped + 1, sizeof(rskip)) < 0)
    return TBE_ENOMEM;
  char *p = tbe__strdup(&r->a, path);
  if (!p) return TBE_ENOMEM;
  r->skipped[r->nskipped].path = p;
  r->skipped[r->nskipped++].why = why;
  return 0;
}

static int add_link(tbe_reader *r, const char *path, const char *run, const struct stat *st,
                    int depth) {
  if (tbe__grow(&r->a, (void **)&r->links, &r->caplinks, r->nlinks + 1, sizeof(rlink)) < 0)
    return TBE_ENOMEM;
  rlink *l = &r->links[r->nlinks];
  l->path = tbe__strdup(&r->a, path);
  l->run = tbe__strdup(&r->a, run);
  l->dev = st->st_dev;
  l->ino = st->st_ino;
  l->depth = depth;
  r->nlinks++;
  return l->path && l->run ? 0 : TBE_ENOMEM;
}

static const char *special_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO, not a regular file: not opened";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device, not a regular file: not opened";
  if (S_ISSOCK(m)) return "a socket, not a regular file: not opened";
  return "not a regular file: not opened";
}

/* Lists the event files of `dir` (its run name `run`, "." for the top),
 * walks its real subdirectories and queues its links to directories.  A
 * directory already read is not read again. */
static int scan_dir(tbe_reader *r, const char *dir, const char *run, int recursive, int depth) {
  DIR *d = opendir(dir);
  if (!d) return -errno;
  struct stat ds;
  int rc = fstat(dirfd(d), &ds) == 0 ? seen_add(r, ds.st_dev, ds.st_ino) : -errno;
  if (rc != 0) { /* read already (a bind mount of an ancestor), or an error */
    closedir(d);
    return rc > 0 ? 0 : rc;
  }
  struct dirent *de;
  tbe__buf p, sub;
  tbe__buf_init(&p, &r->a);
  tbe__buf_init(&sub, &r->a);
  while ((de = readdir(d)) != NULL && rc == 0) {
    const char *n = de->d_name;
    if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0) continue;
    tbe__buf_clear(&p);
    tbe__buf_printf(&p, "%s/%s", dir, n);
    tbe__buf_putc(&p, '\0');
    tbe__buf_clear(&sub);
    if (strcmp(run, ".") == 0) tbe__buf_puts(&sub, n);
    else tbe__buf_printf(&sub, "%s/%s", run, n);
    tbe__buf_putc(&sub, '\0');
    if (p.err || sub.err) {
      rc = TBE_ENOMEM;
      break;
    }
    const char *path = (const char *)p.data;
    int named = strstr(n, "tfevents") != NULL;
    struct stat st;
    if (lstat(path, &st) != 0) continue; /* gone since readdir */
    if (S_ISLNK(st.st_mode)) {
      if (stat(path, &st) != 0) continue; /* a dangling link */
      if (S_ISDIR(st.st_mode)) {
        if (recursive && depth < MAX_DEPTH)
          rc = add_link(r, path, (const char *)sub.data, &st, depth + 1);
        continue;
      }
    }
    if (S_ISREG(st.st_mode)) {
      if (named) rc = add_file(r, dir, run, n);
    } else if (S_ISDIR(st.st_mode)) {
      if (recursive && depth < MAX_DEPTH) {
        int src = scan_dir(r, path, (const char *)sub.data, recursive, depth + 1);
        if (src == TBE_ENOMEM) rc = src; /* unreadable subdirectories are skipped */
      }
    } else if (named) {
      rc = add_skip(r, path, special_kind(st.st_mode));
    }
  }
  tbe__buf_deinit(&p);
  tbe__buf_deinit(&sub);
  closedir(d);
  return rc;
}

static int cmp_link(const void *x, const void *y) {
  return strcmp(((const rlink *)x)->run, ((const rlink *)y)->run);
}

/* The whole tree below `path`: the real directories, then the links to
 * directories not read yet, one generation (the links found by the
 * previous one) at a time, each in name order. */
static int scan_tree(tbe_reader *r, const char *path, int recursive) {
  int rc = scan_dir(r, path, ".", recursive, 0);
  size_t next = 0;
  while (rc == 0 && next < r->nlinks) {
    size_t end = r->nlinks;
    qsort(r->links + next, end - next, sizeof(rlink), cmp_link);
    for (; rc == 0 && next < end; next++) {
      /* the array may move as links are added: index it afresh */
      if (seen_has(r, r->links[next].dev, r->links[next].ino)) {
        rc = add_skip(r, r->links[next].path,
                      "a symbolic link to a directory already read: not followed");
        continue;
      }
      int src = scan_dir(r, r->links[next].path, r->links[next].run, recursive,
                         r->links[next].depth);
      if (src == TBE_ENOMEM) rc = src;
    }
  }
  return rc;
}

static int cmp_file(const void *x, const void *y) {
  const rfile *a = x, *b = y;
  int c = strcmp(a->run, b->run);
  return c ? c : strcmp(a->name, b->name);
}

int tbe_reader_open(tbe_reader **out, const char *path, unsigned flags,
                    const tbe_allocator *allocator) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!path || !*path) return TBE_EINVAL;
  struct stat st;
  if (stat(path, &st) != 0) return -errno;
  tbe_allocator a;
  tbe__allocator_init(&a, allocator);
  tbe_reader *r = tbe__calloc(&a, 1, sizeof *r);
  if (!r) return TBE_ENOMEM;
  r->a = a;
  r->pctx.a = &r->a;
  tbe__pb_allocator(&r->pa, &r->pctx);
  r->fd = -1;
  r->trunc_at = UINT64_MAX;
  tbe__buf_init(&r->win, &r->a);
  tbe__intern_init(&r->seen, &r->a, TBE__SEED_PROCESS);
  int rc;
  if (S_ISDIR(st.st_mode)) {
    rc = scan_tree(r, path, (flags & TBE_READER_RECURSIVE) != 0);
    if (rc == 0 && r->nfiles > 1) qsort(r->files, r->nfiles, sizeof(rfile), cmp_file);
  } else if (!S_ISREG(st.st_mode)) {
    rc = -ESPIPE; /* a FIFO, a device, a socket: not a file to read at offsets */
  } else {
    rc = TBE_ENOMEM;
    if (tbe__grow(&r->a, (void **)&r->files, &r->capfiles, 1, sizeof(rfile)) == 0) {
      const char *slash = strrchr(path, '/');
      r->files[0].path = tbe__strdup(&r->a, path);
      r->files[0].run = tbe__strdup(&r->a, ".");
      r->files[0].name = tbe__strdup(&r->a, slash ? slash + 1 : path);
      r->nfiles = 1;
      if (r->files[0].path && r->files[0].run && r->files[0].name) rc = 0;
    }
  }
  if (rc < 0) {
    tbe_reader_close(r);
    return rc;
  }
  *out = r;
  return 0;
}

size_t tbe_reader_file_count(const tbe_reader *r) { return r ? r->nfiles : 0; }

size_t tbe_reader_skipped(const tbe_reader *r, size_t i, const char **path, const char **why) {
  if (!r) return 0;
  if (i < r->nskipped) {
    if (path) *path = r->skipped[i].path;
    if (why) *why = r->skipped[i].why;
  }
  return r->nskipped;
}

/* ---- per-event scratch ---- */

static void *scratch(tbe_reader *r, size_t size) {
  if (tbe__grow(&r->a, (void **)&r->scratch, &r->capscratch, r->nscratch + 1, sizeof(void *)) < 0)
    return NULL;
  void *p = tbe__alloc(&r->a, size ? size : 1);
  if (p) r->scratch[r->nscratch++] = p;
  return p;
}

static void release_event(tbe_reader *r) {
  for (size_t i = 0; i < r->nscratch; i++) tbe__free(&r->a, r->scratch[i]);
  r->nscratch = 0;
  r->values = NULL;
  if (r->msg) tensorboard__event__free_unpacked(r->msg, &r->pa);
  r->msg = NULL;
}

void tbe_reader_close(tbe_reader *r) {
  if (!r) return;
  tbe_allocator a = r->a;
  release_event(r);
  tbe__free(&a, r->scratch);
  if (r->fd >= 0) close(r->fd);
  for (size_t i = 0; i < r->nfiles; i++) {
    tbe__free(&a, r->files[i].path);
    tbe__free(&a, r->files[i].run);
    tbe__free(&a, r->files[i].name);
  }
  tbe__free(&a, r->files);
  for (size_t i = 0; i < r->nlinks; i++) {
    tbe__free(&a, r->links[i].path);
    tbe__free(&a, r->links[i].run);
  }
  tbe__free(&a, r->links);
  for (size_t i = 0; i < r->nskipped; i++) tbe__free(&a, r->skipped[i].path);
  tbe__free(&a, r->skipped);
  tbe__intern_deinit(&r->seen);
  tbe__buf_deinit(&r->win);
  tbe__free(&a, r);
}

void tbe_reader_error(const tbe_reader *r, tbe_reader_error_info *info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  if (!r) return;
  info->code = r->err_code;
  info->path = r->err_path;
  info->offset = r->err_offset;
  info->message = r->err_code ? r->err_msg : "";
}

static int report(tbe_reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int report(tbe_reader *r, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err_msg, sizeof r->err_msg, fmt, ap);
  va_end(ap);
  r->err_code = code;
  r->err_offset = r->offset;
  r->err_path = r->cur < r->nfiles ? r->files[r->cur].path : "";
  return code;
}

/* ---- views ---- */

static float half_to_float(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
  if (e == 0) {
    if (m == 0)
      bits = s;
    else { /* subnormal */
      e = 127 - 15 + 1;
      while (!(m & 0x400)) {
        m <<= 1;
        e--;
      }
      m &= 0x3ff;
      bits = s | (e << 23) | (m << 13);
    }
  } else if (e == 31) {
    bits = s | 0x7f800000u | (m << 13);
  } else {
    bits = s | ((e - 15 + 127) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static int tensor_view(tbe_reader *r, const Tensorboard__TensorProto *t, tbe_tensor_view *v) {
  memset(v, 0, sizeof *v);
  v->dtype = (int)t->dtype;
  v->content.data = t->tensor_content.data;
  v->content.size = t->tensor_content.len;
  if (t->tensor_shape && t->tensor_shape->n_dim) {
    int64_t *sh = scratch(r, t->tensor_shape->n_dim * sizeof(int64_t));
    if (!sh) return TBE_ENOMEM;
    for (size_t i = 0; i < t->tensor_shape->n_dim; i++) sh[i] = t->tensor_shape->dim[i]->size;
    v->shape = sh;
    v->rank = t->tensor_shape->n_dim;
  }
  const uint8_t *c = t->tensor_content.data;
  size_t cl = t->tensor_content.len;
  switch (t->dtype) {
    case TENSORBOARD__DATA_TYPE__DT_FLOAT:
      if (t->n_float_val || cl == 0) {
        v->floats = t->float_val;
        v->nfloats = t->n_float_val;
      } else {
        float *f = scratch(r, cl / 4 * sizeof(float));
        if (!f) return TBE_ENOMEM;
        for (size_t i = 0; i < cl / 4; i++) {
          uint32_t b = tbe__get_le32(c + 4 * i);
          memcpy(&f[i], &b, 4);
        }
        v->floats = f;
        v->nfloats = cl / 4;
      }
      break;
    case TENSORBOARD__DATA_TYPE__DT_HALF: {
      size_t n = t->n_half_val ? t->n_half_val : cl / 2;
      float *f = scratch(r, n * sizeof(float));
      if (!f) return TBE_ENOMEM;
      for (size_t i = 0; i < n; i++)
        f[i] = half_to_float(t->n_half_val ? (uint16_t)t->half_val[i]
                                           : (uint16_t)(c[2 * i] | c[2 * i + 1] << 8));
      v->floats = f;
      v->nfloats = n;
      break;
    }
    case TENSORBOARD__DATA_TYPE__DT_DOUBLE:
      if (t->n_double_val || cl == 0) {
        v->doubles = t->double_val;
        v->ndoubles = t->n_double_val;
      } else {
        double *d = scratch(r, cl / 8 * sizeof(double));
        if (!d) return TBE_ENOMEM;
        for (size_t i = 0; i < cl / 8; i++) {
          uint64_t b = tbe__get_le64(c + 8 * i);
          memcpy(&d[i], &b, 8);
        }
        v->doubles = d;
        v->ndoubles = cl / 8;
      }
      break;
    case TENSORBOARD__DATA_TYPE__DT_INT32:
    case TENSORBOARD__DATA_TYPE__DT_INT16:
    case TENSORBOARD__DATA_TYPE__DT_INT8:
    case TENSORBOARD__DATA_TYPE__DT_UINT8:
    case TENSORBOARD__DATA_TYPE__DT_UINT16:
    case TENSORBOARD__DATA_TYPE__DT_INT64:
    case TENSORBOARD__DATA_TYPE__DT_BOOL:
    case TENSORBOARD__DATA_TYPE__DT_UINT32:
    case TENSORBOARD__DATA_TYPE__DT_UINT64: {
      size_t esz;
      size_t nv;
      switch (t->dtype) {
        case TENSORBOARD__DATA_TYPE__DT_INT16:
        case TENSORBOARD__DATA_TYPE__DT_UINT16: esz = 2; nv = t->n_int_val; break;
        case TENSORBOARD__DATA_TYPE__DT_INT8:
        case TENSORBOARD__DATA_TYPE__DT_UINT8: esz = 1; nv = t->n_int_val; break;
        case TENSORBOARD__DATA_TYPE__DT_BOOL: esz = 1; nv = t->n_bool_val; break;
        case TENSORBOARD__DATA_TYPE__DT_INT64: esz = 8; nv = t->n_int64_val; break;
        case TENSORBOARD__DATA_TYPE__DT_UINT32: esz = 4; nv = t->n_uint32_val; break;
        case TENSORBOARD__DATA_TYPE__DT_UINT64: esz = 8; nv = t->n_uint64_val; break;
        default: esz = 4; nv = t->n_int_val; break;
      }
      size_t n = nv ? nv : cl / esz;
      int64_t *iv = scratch(r, n * sizeof(int64_t));
      if (!iv) return TBE_ENOMEM;
      for (size_t i = 0; i < n; i++) {
        int64_t x;
        if (nv) {
          switch (t->dtype) {
            case TENSORBOARD__DATA_TYPE__DT_BOOL: x = t->bool_val[i] ? 1 : 0; break;
            case TENSORBOARD__DATA_TYPE__DT_INT64: x = t->int64_val[i]; break;
            case TENSORBOARD__DATA_TYPE__DT_UINT32: x = t->uint32_val[i]; break;
            case TENSORBOARD__DATA_TYPE__DT_UINT64: x = (int64_t)t->uint64_val[i]; break;
            default: x = t->int_val[i]; break;
          }
        } else {
          const uint8_t *p = c + i * esz;
          switch (t->dtype) {
            case TENSORBOARD__DATA_TYPE__DT_INT8: x = (int8_t)p[0]; break;
            case TENSORBOARD__DATA_TYPE__DT_UINT8:
            case TENSORBOARD__DATA_TYPE__DT_BOOL: x = p[0]; break;
            case TENSORBOARD__DATA_TYPE__DT_INT16: x = (int16_t)(p[0] | p[1] << 8); break;
            case TENSORBOARD__DATA_TYPE__DT_UINT16: x = (uint16_t)(p[0] | p[1] << 8); break;
            case TENSORBOARD__DATA_TYPE__DT_INT32: x = (int32_t)tbe__get_le32(p); break;
            case TENSORBOARD__DATA_TYPE__DT_UINT32: x = tbe__get_le32(p); break;
            default: x = (int64_t)tbe__get_le64(p); break;
          }
        }
        iv[i] = x;
      }
      v->ints = iv;
      v->nints = n;
      break;
    }
    case TENSORBOARD__DATA_TYPE__DT_STRING:
      if (t->n_string_val) {
        tbe_bytes *s = scratch(r, t->n_string_val * sizeof(tbe_bytes));
        if (!s) return TBE_ENOMEM;
        for (size_t i = 0; i < t->n_string_val; i++) {
          s[i].data = t->string_val[i].data;
          s[i].size = t->string_val[i].len;
        }
        v->strings = s;
        v->nstrings = t->n_string_val;
      }
      break;
    default: break;
  }
  return 0;
}

static int build_view(tbe_reader *r, const rfile *f, const uint8_t *rec, size_t rec_len) {
  Tensorboard__Event *m = r->msg;
  tbe_tb_event *e = &r->ev;
  memset(e, 0, sizeof *e);
  e->wall_time = m->wall_time;
  e->step = m->step;
  e->path = f->path;
  e->run = f->run;
  e->offset = r->offset;
  e->record.data = rec + TBE__TFR_HEADER;
  e->record.size = rec_len - TBE__TFR_OVERHEAD;
  if (m->source_metadata) e->source_writer = m->source_metadata->writer;
  switch (m->what_case) {
    case TENSORBOARD__EVENT__WHAT_FILE_VERSION:
      e->kind = TBE_TB_FILE_VERSION;
      e->file_version = m->file_version;
      break;
    case TENSORBOARD__EVENT__WHAT_GRAPH_DEF:
      e->kind = TBE_TB_GRAPH;
      e->payload.data = m->graph_def.data;
      e->payload.size = m->graph_def.len;
      break;
    case TENSORBOARD__EVENT__WHAT_META_GRAPH_DEF:
      e->kind = TBE_TB_META_GRAPH;
      e->payload.data = m->meta_graph_def.data;
      e->payload.size = m->meta_graph_def.len;
      break;
    case TENSORBOARD__EVENT__WHAT_LOG_MESSAGE:
      e->kind = TBE_TB_LOG_MESSAGE;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      e->text = m->log_message ? m->log_message->message : "";
#pragma GCC diagnostic pop
      break;
    case TENSORBOARD__EVENT__WHAT_SESSION_LOG:
      e->kind = TBE_TB_SESSION_LOG;
      e->session_status = m->session_log ? (int)m->session_log->status : 0;
      e->text = m->session_log ? m->session_log->msg : "";
      break;
    case TENSORBOARD__EVENT__WHAT_TAGGED_RUN_METADATA:
      e->kind = TBE_TB_RUN_METADATA;
      if (m->tagged_run_metadata) {
        e->text = m->tagged_run_metadata->tag;
        e->payload.data = m->tagged_run_metadata->run_metadata.data;
        e->payload.size = m->tagged_run_metadata->run_metadata.len;
      }
      break;
    case TENSORBOARD__EVENT__WHAT_SUMMARY: {
      e->kind = TBE_TB_SUMMARY;
      const Tensorboard__Summary *s = m->summary;
      if (!s || s->n_value == 0) break;
      tbe_summary_value *vals = scratch(r, s->n_value * sizeof *vals);
      if (!vals) return TBE_ENOMEM;
      memset(vals, 0, s->n_value * sizeof *vals);
      for (size_t i = 0; i < s->n_value; i++) {
        const Tensorboard__Summary__Value *sv = s->value[i];
        tbe_summary_value *v = &vals[i];
        v->tag = sv->tag;
        v->node_name = sv->node_name;
        v->plugin_name = "";
        v->display_name = "";
        if (sv->metadata) {
          v->has_metadata = 1;
          v->display_name = sv->metadata->display_name;
          v->data_class = (int)sv->metadata->data_class;
          if (sv->metadata->plugin_data) {
            v->plugin_name = sv->metadata->plugin_data->plugin_name;
            v->plugin_content.data = sv->metadata->plugin_data->content.data;
            v->plugin_content.size = sv->metadata->plugin_data->content.len;
          }
        }
        switch (sv->value_case) {
          case TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE:
            v->type = TBE_VALUE_SIMPLE;
            v->simple_value = sv->simple_value;
            break;
          case TENSORBOARD__SUMMARY__VALUE__VALUE_HISTO: {
            v->type = TBE_VALUE_HISTO;
            const Tensorboard__HistogramProto *h = sv->histo;
            if (!h) break;
            v->histo.min = h->min;
            v->histo.max = h->max;
            v->histo.num = h->num;
            v->histo.sum = h->sum;
            v->histo.sum_squares = h->sum_squares;
            v->histo.bucket_limit = h->bucket_limit;
            v->histo.bucket = h->bucket;
            v->histo.nbuckets = h->n_bucket < h->n_bucket_limit ? h->n_bucket : h->n_bucket_limit;
            break;
          }
          case TENSORBOARD__SUMMARY__VALUE__VALUE_IMAGE:
            v->type = TBE_VALUE_IMAGE;
            if (sv->image) {
              v->image.width = sv->image->width;
              v->image.height = sv->image->height;
              v->image.colorspace = sv->image->colorspace;
              v->image.encoded.data = sv->image->encoded_image_string.data;
              v->image.encoded.size = sv->image->encoded_image_string.len;
            }
            break;
          case TENSORBOARD__SUMMARY__VALUE__VALUE_AUDIO:
            v->type = TBE_VALUE_AUDIO;
            if (sv->audio) {
              v->audio.sample_rate = sv->audio->sample_rate;
              v->audio.num_channels = sv->audio->num_channels;
              v->audio.length_frames = sv->audio->length_frames;
              v->audio.encoded.data = sv->audio->encoded_audio_string.data;
              v->audio.encoded.size = sv->audio->encoded_audio_string.len;
              v->audio.content_type = sv->audio->content_type;
            }
            break;
          case TENSORBOARD__SUMMARY__VALUE__VALUE_TENSOR:
            v->type = TBE_VALUE_TENSOR;
            if (sv->tensor) {
              int rc = tensor_view(r, sv->tensor, &v->tensor);
              if (rc < 0) return rc;
            }
            break;
          case TENSORBOARD__SUMMARY__VALUE__VALUE_OBSOLETE_OLD_STYLE_HISTOGRAM:
            v->type = TBE_VALUE_OLD_HISTOGRAM;
            v->tensor.content.data = sv->obsolete_old_style_histogram.data;
            v->tensor.content.size = sv->obsolete_old_style_histogram.len;
            break;
          default: v->type = TBE_VALUE_NONE; break;
        }
      }
      e->values = vals;
      e->nvalues = s->n_value;
      break;
    }
    default: e->kind = TBE_TB_EMPTY; break;
  }
  return 0;
}

/* ---- iteration ---- */

static void close_current(tbe_reader *r) {
  if (r->fd >= 0) close(r->fd);
  r->fd = -1;
  r->dead = 0;
  r->offset = 0;
  r->trunc_at = UINT64_MAX;
}

/* Leaves the current file (unless it is the last one, which stays so a
 * later call can look for more data). */
static void advance(tbe_reader *r) {
  if (r->cur + 1 < r->nfiles) {
    close_current(r);
    r->cur++;
  }
}

static int read_at(int fd, uint8_t *p, size_t n, uint64_t off, size_t *got) {
  *got = 0;
  while (*got < n) {
    ssize_t k = pread(fd, p + *got, n - *got, (off_t)(off + *got));
    if (k < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (k == 0) break;
    *got += (size_t)k;
  }
  return 0;
}

/* Makes bytes [off, off + n) of the current file available through the
 * read window.  Serves them from the window when it holds them; otherwise
 * reads at least WINDOW bytes from `off` (so a file that grew is seen
 * again).  *p points at `off`, *avail gets min(n, bytes there). */
static int window(tbe_reader *r, uint64_t off, size_t n, const uint8_t **p, size_t *avail) {
  if (off >= r->win_off && off - r->win_off <= r->win.len && n <= r->win.len - (off - r->win_off)) {
    *p = r->win.data + (off - r->win_off);
    *avail = n;
    return 0;
  }
  size_t want = n > WINDOW ? n : WINDOW;
  tbe__buf_clear(&r->win);
  r->win_off = off;
  uint8_t *d = tbe__buf_reserve(&r->win, want);
  if (!d) {
    r->win.err = 0;
    return TBE_ENOMEM;
  }
  size_t got;
  int rc = read_at(r->fd, d, want, off, &got);
  if (rc < 0) return rc;
  r->win.len = got;
  *p = d;
  *avail = got < n ? got : n;
  return 0;
}

int tbe_reader_next(tbe_reader *r, const tbe_tb_event **ev) {
  if (!r || !ev) return TBE_EINVAL;
  *ev = NULL;
  release_event(r);
  r->err_code = 0;
  for (;;) {
    if (r->cur >= r->nfiles) return 0;
    rfile *f = &r->files[r->cur];
    int last = r->cur + 1 == r->nfiles;
    if (r->dead) {
      if (last) return 0;
      advance(r);
      continue;
    }
    if (r->fd < 0) {
      /* O_NONBLOCK: a file replaced by a FIFO since open() must not block */
      r->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
      struct stat fs;
      if (r->fd >= 0 && (fstat(r->fd, &fs) != 0 || !S_ISREG(fs.st_mode))) {
        close(r->fd);
        r->fd = -1;
        errno = ESPIPE;
      }
      if (r->fd < 0) {
        int e = -errno;
        if (e == -ESPIPE) report(r, e, "not a regular file: not read");
        else report(r, e, "cannot open: %s", tbe_strerror(e));
        r->dead = 1;
        return e;
      }
      tbe__buf_clear(&r->win);
      r->win_off = 0;
    }
    const uint8_t *d;
    size_t got;
    int rc = window(r, r->offset, TBE__TFR_HEADER, &d, &got);
    if (rc < 0) {
      if (rc == TBE_ENOMEM) return report(r, rc, "out of memory");
      report(r, rc, "read error: %s", tbe_strerror(rc));
      r->dead = 1;
      return rc;
    }
    uint64_t len = 0;
    uint32_t gc = 0, wc = 0;
    tbe__tfr_status st = tbe__tfr_check(d, got, &len, &gc, &wc);
    if (st == TBE__TFR_END) {
      if (last) return 0;
      advance(r);
      continue;
    }
    if (st == TBE__TFR_BAD_LENGTH_CRC) {
      r->dead = 1;
      return report(r, TBE_ECHECKSUM, "length CRC mismatch (stored 0x%08" PRIx32
                    ", computed 0x%08" PRIx32 ")", gc, wc);
    }
    size_t present = got;
    int truncated = got < TBE__TFR_HEADER;
    if (!truncated && len > WINDOW) {
      /* a big record: make sure the file holds it before allocating */
      struct stat sb;
      if (fstat(r->fd, &sb) != 0) {
        rc = -errno;
        r->dead = 1;
        return report(r, rc, "stat failed: %s", tbe_strerror(rc));
      }
      uint64_t size = (uint64_t)sb.st_size;
      uint64_t left = size > r->offset ? size - r->offset : 0;
      if (left < TBE__TFR_OVERHEAD || len > left - TBE__TFR_OVERHEAD || len > SIZE_MAX / 2) {
        truncated = 1;
        present = (size_t)(left < SIZE_MAX ? left : SIZE_MAX);
      }
    }
    if (!truncated) {
      size_t total = (size_t)len + TBE__TFR_OVERHEAD;
      rc = window(r, r->offset, total, &d, &got);
      if (rc == TBE_ENOMEM)
        return report(r, rc, "out of memory for a %zu-byte record", total);
      if (rc < 0) {
        r->dead = 1;
        return report(r, rc, "read error: %s", tbe_strerror(rc));
      }
      present = got;
      st = tbe__tfr_check(d, got, &len, &gc, &wc);
      if (st == TBE__TFR_TRUNCATED || st == TBE__TFR_END) {
        truncated = 1;
      } else if (st == TBE__TFR_BAD_LENGTH_CRC) { /* the file changed under us */
        r->dead = 1;
        return report(r, TBE_ECHECKSUM, "length CRC mismatch (stored 0x%08" PRIx32
                      ", computed 0x%08" PRIx32 ")", gc, wc);
      } else if (st == TBE__TFR_BAD_DATA_CRC) {
        r->dead = 1;
        return report(r, TBE_ECHECKSUM, "data CRC mismatch (stored 0x%08" PRIx32
                      ", computed 0x%08" PRIx32 ") in a %" PRIu64 "-byte record", gc, wc, len);
      } else {
        r->pctx.oom = 0;
        r->msg = tensorboard__event__unpack(&r->pa, (size_t)len, d + TBE__TFR_HEADER);
        if (!r->msg && r->pctx.oom) /* not the file's fault; a later call may retry */
          return report(r, TBE_ENOMEM, "out of memory parsing a %" PRIu64 "-byte record", len);
        if (!r->msg) {
          r->dead = 1;
          return report(r, TBE_EPARSE, "record of %" PRIu64 " bytes is not a valid Event", len);
        }
        rc = build_view(r, f, d, total);
        if (rc < 0) {
          release_event(r);
          return report(r, rc, "out of memory");
        }
        r->offset += total;
        r->trunc_at = UINT64_MAX;
        *ev = &r->ev;
        return 1;
      }
    }
    /* truncated tail */
    if (last) {
      if (r->trunc_at == r->offset) return 0; /* already reported; nothing new */
      r->trunc_at = r->offset;
      return report(r, TBE_ETRUNCATED, "file ends inside a record (%zu bytes present; more may "
                    "follow)", present);
    }
    rc = report(r, TBE_ETRUNCATED, "file ends inside a record (%zu bytes present)", present);
    advance(r);
    return rc;
  }
}

/* ---- probing a file's first bytes ---- */

int tbe_reader_probe(const void *head, size_t n) {
  if (!head) return 1;
  uint64_t len;
  uint32_t got, want;
  return tbe__tfr_check(head, n, &len, &got, &want) != TBE__TFR_BAD_LENGTH_CRC;
}
