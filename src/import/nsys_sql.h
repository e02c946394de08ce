/* nsys_sql.h: the Nsight Systems importer's state and its SQL access
 * (nsys.c's essay says what is read and why).  Private to the importer.
 *
 * nsys_sql.c holds what talks to SQLite without knowing the tables'
 * meaning: errors named by table, row and column; whether a table exists;
 * a SELECT of the columns a table has (select_cols: optional columns read
 * as NULL, required ones, marked '!', refused when missing); a loop over
 * the rows (each_row); the checks of device ordinals; the read-only URI.
 * nsys.c holds the meaning: enums, sessions, devices, and one row handler
 * per activity table.  The column readers below are inline: they run for
 * every column of every row.  Errors go to the import's tbe_import_error
 * (importer.h) as "<path>: table T row R: ..."; every function returns 0
 * or the error it reported. */
#ifndef TBE_IMPORT_NSYS_SQL_H
#define TBE_IMPORT_NSYS_SQL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/map.h"
#include "import/importer.h"
#include "tbexport/error.h"
#include "tbexport/import.h"
#include "tbexport/trace.h"

/* ---- int64 -> uint32 maps (string ids, correlation keys) ----
 *
 * common/map.h's keyed table: ids and correlation numbers are the file's
 * to choose. */

typedef tbe__map nmap;

static inline uint32_t nmap_get(const nmap *m, int64_t k) {
  const uint32_t *v = tbe__map_get(m, (uint64_t)k);
  return v ? *v : TBE_NONE;
}

/* Sets k -> v (replacing).  0 or TBE_ENOMEM. */
static inline int nmap_put(nmap *m, int64_t k, uint32_t v) {
  return tbe__map_set(m, (uint64_t)k, v);
}

static inline void nmap_free(nmap *m) { tbe__map_deinit(m); }

/* ---- state ---- */

#define NS_MAXENUM 64

typedef struct ns_state {
  tbe_trace *t;
  sqlite3 *db;
  const char *path;
  tbe_import_error *err;
  const tbe_import_options *opts;
  const tbe_allocator *a; /* opts->allocator: all but SQLite's own memory */
  uint64_t rows_done, rows_total;
  int64_t time_off;
  sqlite3_stmt *str_stmt;  /* SELECT value FROM StringIds WHERE id=? */
  nmap strs;               /* StringIds id -> tbe_str */
  nmap api_strs;           /* StringIds id -> tbe_str without "_v<n>" */
  nmap demangles;          /* kernel mangledName (tbe_str) -> 1 if libiberty demangles it */
  nmap corr_api;           /* (pid, correlation) -> API name (tbe_str) */
  nmap domains;            /* NVTX domainId -> tbe_str */
  nmap pnames;             /* pid -> process name */
  uint8_t mem_kind[NS_MAXENUM];   /* nsys mem kind -> tbe_mem_kind */
  uint8_t copy_kind[NS_MAXENUM];  /* nsys copy kind -> tbe_copy_kind */
  uint8_t copy_uvm[NS_MAXENUM];   /* 1 for the unified-memory copy kinds */
  uint8_t mem_free[NS_MAXENUM];   /* 1 for the memory operations that free */
  int64_t ev_runtime, ev_driver, ev_backtrace;  /* ENUM_NSYS_EVENT_CLASS ids */
  int driver_table;        /* reading CUPTI_ACTIVITY_KIND_DRIVER */
  int multi_proc;          /* API calls from several processes */
  nmap stream_dev;         /* (pid, stream) -> device of its GPU work */
  nmap pid_dev;            /* pid -> its only device, or TBE_NONE - 1 if several */
  uint64_t sync_moved;     /* sync rows placed on their stream's device */
  int32_t last_dev;
  uint64_t nvtx_open, skipped_backtrace;
  size_t ev_first;         /* t->nevents before this import */
} ns_state;

/* ---- errors ---- */

/* "table T: what", with `code`. */
int tbe__ns_fail_sql(ns_state *s, int code, const char *table, const char *what);
/* "table T row R: " and `fmt` with `col` (TBE_ECORRUPT). */
int tbe__ns_fail_row(ns_state *s, const char *table, int64_t rowid, const char *fmt,
                     const char *col);
/* SQLite result code -> our error for a failed step/prepare, with
 * SQLite's message. */
int tbe__ns_sql_error(ns_state *s, const char *table, int src);

/* ---- tables and rows ---- */

/* 1 when table `name` exists, 0 when not, -1 on an SQLite error. */
int tbe__ns_table_exists(ns_state *s, const char *name);
/* Prepares "SELECT rowid, <col or NULL>... FROM <table>" (plus `tail`),
 * selecting only columns the table has.  `have[i]` tells which exist.
 * Required columns (names starting with '!') must exist.  Returns 0 and
 * *out (NULL when the table is absent), or an error (already reported). */
int tbe__ns_select_cols(ns_state *s, const char *table, const char *const *cols, size_t ncols,
                        const char *tail, sqlite3_stmt **out, int *have);

/* Reads an integer column (index `c` counts from 1; 0 is the rowid).
 * Returns 1 with *v, 0 for NULL, or -1 for a value that is not a number. */
static inline int col_i64(sqlite3_stmt *st, int c, int64_t *v) {
  switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER: *v = sqlite3_column_int64(st, c); return 1;
    case SQLITE_NULL: return 0;
    case SQLITE_FLOAT: {
      double d = sqlite3_column_double(st, c);
      if (!(d >= -9.2e18 && d <= 9.2e18)) return -1;
      *v = (int64_t)d;
      return 1;
    }
    default: return -1;
  }
}

/* Row access with error reporting: fetches column `c` (name cols[c-1]). */
typedef struct row {
  ns_state *s;
  sqlite3_stmt *st;
  const char *table;
  const char *const *cols;
  int64_t rowid;
  int rc; /* first error */
} row;

static inline int64_t get_i(row *r, int c, int64_t dflt, int required) {
  int64_t v;
  int k = col_i64(r->st, c, &v);
  if (k == 1) return v;
  if (r->rc) return dflt;
  const char *cn = r->cols[c - 1][0] == '!' ? r->cols[c - 1] + 1 : r->cols[c - 1];
  if (k < 0)
    r->rc = tbe__ns_fail_row(r->s, r->table, r->rowid, "column %s is not a number", cn);
  else if (required)
    r->rc = tbe__ns_fail_row(r->s, r->table, r->rowid, "column %s is NULL", cn);
  return dflt;
}

static inline int is_null(row *r, int c) { return sqlite3_column_type(r->st, c) == SQLITE_NULL; }

/* Device ordinals beyond this are corruption, not devices (CUDA's own
 * ordinals, well inside the model's TBE__DEVICE_MAX: importer.h). */
#define NS_MAX_DEVICE 65535

/* Checks a device ordinal before it is narrowed; `none_ok`: -1 is none
 * (a copy's end that is no device).  Otherwise refused naming the column
 * (r->rc).  Returns r->rc. */
int tbe__ns_check_device(row *r, int col, int64_t dev, int none_ok);

/* Runs a prepared table loop (select_cols above): `fn` handles each row;
 * the first error stops it.  An absent table is no error. */
typedef int (*row_fn)(ns_state *s, row *r);
int tbe__ns_each_row(ns_state *s, const char *table, const char *const *cols, size_t ncols,
                     const char *tail, int *have, row_fn fn);

/* Adds the rows of `table` (when it exists) to s->rows_total, for the
 * progress callback.  Always 0. */
int tbe__ns_count_rows(ns_state *s, const char *table);

/* "file:<percent-encoded path>?immutable=1" in a block of `a`, or NULL. */
char *tbe__ns_make_uri(const tbe_allocator *a, const char *path);

#endif
