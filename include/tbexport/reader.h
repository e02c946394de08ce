/* tbexport/reader.h: reading TensorBoard event files from C.
 *
 * A tbe_reader iterates the events of one event file, of one run directory
 * (its files whose name contains "tfevents", in name order), or of a whole
 * log directory tree (TBE_READER_RECURSIVE: every run below it, runs in
 * name order).  Each event is handed out as a plain view (tbe_tb_event) that
 * stays valid until the next call on the reader; no protobuf types appear
 * here.  The raw record bytes are included for callers who parse them
 * themselves.
 *
 * Damage is reported, never fatal:
 *  - TBE_ETRUNCATED: the file ends inside a record (a writer may still be
 *    appending).  In the last file the reader stays at that record: the
 *    truncation is reported once, then tbe_reader_next returns 0 ("nothing
 *    more for now") until more bytes arrive, and reading resumes there
 *    (tail-follow; likewise after a clean end of the last file).  In an
 *    earlier file the next call moves on to the next file.
 *  - TBE_ECHECKSUM (bad length or data CRC), TBE_EPARSE (a record whose
 *    data is not an Event): the rest of that file is skipped (TensorBoard
 *    gives such a file up too); the next call continues with the next file.
 *  - TBE_ENOMEM and I/O errors concern one call; I/O errors also skip the
 *    rest of that file.
 * tbe_reader_error describes the last such report: file, byte offset of the
 * record, and a one-line message.
 *
 * Thread safety: a reader is used by one thread at a time; distinct readers
 * are independent. */
#ifndef TBEXPORT_READER_H
#define TBEXPORT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tbe_reader tbe_reader;

/* Bytes owned by the reader (valid until the next call). */
typedef struct tbe_bytes {
  const uint8_t *data;
  size_t size;
} tbe_bytes;

/* What an Event carries (its `what` field). */
typedef enum tbe_tb_kind {
  TBE_TB_EMPTY = 0,        /* none set (only wall_time/step) */
  TBE_TB_FILE_VERSION = 1, /* file_version, e.g. "brain.Event:2" */
  TBE_TB_GRAPH = 2,        /* graph_def bytes (in `payload`) */
  TBE_TB_SUMMARY = 3,      /* summary values (in `values`) */
  TBE_TB_LOG_MESSAGE = 4,  /* deprecated log message (in `text`) */
  TBE_TB_SESSION_LOG = 5,  /* session_status, `text` = msg */
  TBE_TB_RUN_METADATA = 6, /* tagged run metadata: `text` = tag, `payload` */
  TBE_TB_META_GRAPH = 7    /* meta_graph_def bytes (in `payload`) */
} tbe_tb_kind;

/* Which value a summary value holds. */
typedef enum tbe_value_type {
  TBE_VALUE_NONE = 0,   /* only metadata (e.g. hparams records) */
  TBE_VALUE_SIMPLE = 1, /* simple_value (float) */
  TBE_VALUE_HISTO = 2,  /* HistogramProto */
  TBE_VALUE_IMAGE = 3,  /* Summary.Image */
  TBE_VALUE_AUDIO = 4,  /* Summary.Audio */
  TBE_VALUE_TENSOR = 5, /* TensorProto */
  TBE_VALUE_OLD_HISTOGRAM = 6 /* obsolete bytes (in `tensor.content`) */
} tbe_value_type;

/* TensorFlow DataType numbers of the common tensor element types. */
enum {
  TBE_DT_INVALID = 0,
  TBE_DT_FLOAT = 1,
  TBE_DT_DOUBLE = 2,
  TBE_DT_INT32 = 3,
  TBE_DT_UINT8 = 4,
  TBE_DT_STRING = 7,
  TBE_DT_INT64 = 9,
  TBE_DT_BOOL = 10,
  TBE_DT_HALF = 19
};

/* A tensor, with its elements decoded: DT_FLOAT elements are in `floats`
 * whether stored as float_val or tensor_content; DT_DOUBLE in `doubles`;
 * integer and bool types in `ints`; DT_STRING in `strings`.  Arrays not
 * matching the dtype are empty.  `content` is the raw tensor_content. */
typedef struct tbe_tensor_view {
  int dtype;
  size_t rank;
  const int64_t *shape; /* rank sizes (-1 for unknown) */
  const float *floats;
  size_t nfloats;
  const double *doubles;
  size_t ndoubles;
  const int64_t *ints;
  size_t nints;
  const tbe_bytes *strings;
  size_t nstrings;
  tbe_bytes content;
} tbe_tensor_view;

typedef struct tbe_histo_view {
  double min, max, num, sum, sum_squares;
  const double *bucket_limit;
  const double *bucket;
  size_t nbuckets; /* min of the two array lengths */
} tbe_histo_view;

typedef struct tbe_image_view {
  int width, height, colorspace;
  tbe_bytes encoded; /* PNG/JPEG/GIF bytes */
} tbe_image_view;

typedef struct tbe_audio_view {
  float sample_rate;
  int64_t num_channels, length_frames;
  tbe_bytes encoded;
  const char *content_type;
} tbe_audio_view;

typedef struct tbe_summary_value {
  const char *tag;         /* "" when absent (then see node_name) */
  const char *node_name;
  int has_metadata;        /* the value carries SummaryMetadata */
  const char *plugin_name; /* "" when none */
  tbe_bytes plugin_content;
  const char *display_name;
  int data_class; /* 0 unknown, 1 scalar, 2 tensor, 3 blob sequence */
  tbe_value_type type;
  float simple_value;     /* TBE_VALUE_SIMPLE */
  tbe_histo_view histo;   /* TBE_VALUE_HISTO */
  tbe_image_view image;   /* TBE_VALUE_IMAGE */
  tbe_audio_view audio;   /* TBE_VALUE_AUDIO */
  tbe_tensor_view tensor; /* TBE_VALUE_TENSOR */
} tbe_summary_value;

typedef struct tbe_tb_event {
  double wall_time;
  int64_t step;
  tbe_tb_kind kind;
  const char *file_version;  /* TBE_TB_FILE_VERSION, else NULL */
  const char *source_writer; /* source_metadata.writer, or NULL */
  int session_status;        /* TBE_TB_SESSION_LOG: 0..3 (START 1) */
  const char *text;          /* see tbe_tb_kind, else NULL */
  tbe_bytes payload;         /* see tbe_tb_kind */
  const tbe_summary_value *values;
  size_t nvalues;
  const char *path;   /* file the event came from */
  const char *run;    /* its directory relative to the opened path ("." for itself) */
  uint64_t offset;    /* byte offset of the record in that file */
  tbe_bytes record;   /* the serialized Event (the record's data) */
} tbe_tb_event;

/* Flags of tbe_reader_open. */
#define TBE_READER_RECURSIVE 1u /* a directory: walk all subdirectories too */

/* Opens `path`: an event file (any name), or a directory (its event files
 * in name order; with TBE_READER_RECURSIVE every event file below it, in
 * path order, which groups them by run).  `path` itself may be a symbolic
 * link.  Below it, each directory is read once, known by its device and
 * inode: the real subdirectories first, then the symbolic links to
 * directories not read yet (a link to a directory outside the tree is
 * followed, its runs named by the link's path), so links such as
 * `latest -> .` or two links to each other neither repeat runs nor loop;
 * the links not followed are listed by tbe_reader_skipped.  Links to event
 * files are followed.  Only regular files are read: a FIFO, device or
 * socket named like an event file is listed by tbe_reader_skipped and
 * never opened, and such a `path` gives -ESPIPE.  `allocator` may be
 * NULL.  Returns 0 and the reader in *out, TBE_EINVAL, -ENOENT, -ESPIPE,
 * another -errno, or TBE_ENOMEM.  A directory with no event files is not
 * an error (the first next() returns 0). */
TBE_API int tbe_reader_open(tbe_reader **out, const char *path, unsigned flags,
                            const tbe_allocator *allocator);

/* Reads the next event.  Returns 1 and sets *ev (valid until the next call
 * on `r`), 0 at the end of the data, or a negative code: TBE_ETRUNCATED,
 * TBE_ECHECKSUM, TBE_EPARSE (see above; the reader can go on), -errno for
 * I/O errors, TBE_ENOMEM, TBE_EINVAL for NULL arguments. */
TBE_API int tbe_reader_next(tbe_reader *r, const tbe_tb_event **ev);

/* Details of the last negative result of tbe_reader_next. */
typedef struct tbe_reader_error_info {
  int code;
  const char *path;   /* file, owned by the reader */
  uint64_t offset;    /* byte offset of the damaged record */
  const char *message; /* one line, e.g. "data CRC mismatch (got 0x.., want 0x..)" */
} tbe_reader_error_info;

/* Fills *info with the last error (code 0 if none).  Strings stay valid
 * until the next call on `r`. */
TBE_API void tbe_reader_error(const tbe_reader *r, tbe_reader_error_info *info);

/* Number of event files the reader found (known after open). */
TBE_API size_t tbe_reader_file_count(const tbe_reader *r);

/* Entries of the tree that open() did not list (known after open): names
 * containing "tfevents" that are not regular files, and symbolic links to
 * a directory already read.  Returns their number; for i below it, sets
 * *path (owned by the reader) and *why (a static phrase, e.g. "a FIFO, not
 * a regular file: not opened"); either may be NULL. */
TBE_API size_t tbe_reader_skipped(const tbe_reader *r, size_t i, const char **path,
                                  const char **why);

/* Frees the reader (NULL is a no-op). */
TBE_API void tbe_reader_close(tbe_reader *r);

/* Whether the first `n` bytes of a file can start an event file, for a
 * program that wants to say what a file is before reading it: 1 when the
 * first record's length and its masked CRC32C agree, or when fewer than
 * the 12 bytes of a record header are given (an empty or cut file is the
 * reader's to report); 0 when the length's checksum fails, so the file is
 * something else.  `head` may be NULL when n is 0. */
TBE_API int tbe_reader_probe(const void *head, size_t n);

#ifdef __cplusplus
}
#endif

#endif
