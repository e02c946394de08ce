/* nsys_sql.c: the Nsight Systems importer's SQL access (nsys_sql.h):
 * errors named by table and row, table and column discovery, the row
 * loop, device ordinal checks and the read-only URI.  Nothing here knows
 * what a table means (nsys.c). */
#include "import/nsys_sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

int tbe__ns_fail_sql(ns_state *s, int code, const char *table, const char *what) {
  return tbe__import_fail(s->err, code, s->path, UINT64_MAX, 0, 0, "table %s: %s", table, what);
}

int tbe__ns_fail_row(ns_state *s, const char *table, int64_t rowid, const char *fmt,
                     const char *col) {
  char what[160];
  snprintf(what, sizeof what, fmt, col);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, UINT64_MAX, 0, 0,
                          "table %s row %" PRId64 ": %s", table, rowid, what);
}

/* SQLite result code -> our error for a failed step/prepare. */
int tbe__ns_sql_error(ns_state *s, const char *table, int src) {
  int code = (src == SQLITE_NOMEM) ? TBE_ENOMEM : (src == SQLITE_IOERR) ? TBE_EIO : TBE_ECORRUPT;
  char what[256];
  snprintf(what, sizeof what, "SQLite error: %s", sqlite3_errmsg(s->db));
  return tbe__ns_fail_sql(s, code, table, what);
}

int tbe__ns_table_exists(ns_state *s, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1, &st,
                         NULL) != SQLITE_OK)
    return -1;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int r = sqlite3_step(st);
  sqlite3_finalize(st);
  return r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : -1;
}

/* Prepares "SELECT rowid, <col or NULL>... FROM <table>" (plus `tail`),
 * selecting only columns the table has.  `have[i]` tells which exist.
 * Required columns (names starting with '!') must exist.  Returns 0 and
 * *out (NULL when the table is absent), or an error (already reported). */
int tbe__ns_select_cols(ns_state *s, const char *table, const char *const *cols, size_t ncols,
                        const char *tail, sqlite3_stmt **out, int *have) {
  *out = NULL;
  int ex = tbe__ns_table_exists(s, table);
  if (ex < 0) return tbe__ns_sql_error(s, table, sqlite3_errcode(s->db));
  if (!ex) return 0;
  char sql[2048];
  snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
  sqlite3_stmt *pi;
  int rc = sqlite3_prepare_v2(s->db, sql, -1, &pi, NULL);
  if (rc != SQLITE_OK) return tbe__ns_sql_error(s, table, rc);
  for (size_t i = 0; i < ncols; i++) have[i] = 0;
  while ((rc = sqlite3_step(pi)) == SQLITE_ROW) {
    const char *cn = (const char *)sqlite3_column_text(pi, 1);
    if (!cn) continue;
    for (size_t i = 0; i < ncols; i++) {
      const char *want = cols[i][0] == '!' ? cols[i] + 1 : cols[i];
      if (strcmp(cn, want) == 0) have[i] = 1;
    }
  }
  sqlite3_finalize(pi);
  if (rc != SQLITE_DONE) return tbe__ns_sql_error(s, table, rc);
  size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT rowid");
  for (size_t i = 0; i < ncols; i++) {
    const char *want = cols[i][0] == '!' ? cols[i] + 1 : cols[i];
    if (!have[i] && cols[i][0] == '!') {
      char what[128];
      snprintf(what, sizeof what, "no column \"%s\" (not the layout of an nsys export)", want);
      return tbe__ns_fail_sql(s, TBE_ECORRUPT, table, what);
    }
    len += (size_t)snprintf(sql + len, sizeof sql - len, have[i] ? ", \"%s\"" : ", NULL", want);
  }
  snprintf(sql + len, sizeof sql - len, " FROM \"%s\"%s", table, tail ? tail : "");
  rc = sqlite3_prepare_v2(s->db, sql, -1, out, NULL);
  if (rc != SQLITE_OK) return tbe__ns_sql_error(s, table, rc);
  return 0;
}

/* Checks a device ordinal before it is narrowed; `none_ok`: -1 is none
 * (a copy's end that is no device).  Otherwise refused naming the column. */
int tbe__ns_check_device(row *r, int col, int64_t dev, int none_ok) {
  if (r->rc || (dev >= 0 && dev <= NS_MAX_DEVICE) || (none_ok && dev == -1)) return r->rc;
  const char *cn = r->cols[col - 1][0] == '!' ? r->cols[col - 1] + 1 : r->cols[col - 1];
  char what[160];
  snprintf(what, sizeof what, "column %s is not a device ordinal (0 to %d%s): %lld", cn,
           NS_MAX_DEVICE, none_ok ? ", or -1 for none" : "", (long long)dev);
  r->rc = tbe__ns_fail_row(r->s, r->table, r->rowid, "%s", what);
  return r->rc;
}

/* Runs a prepared table loop: `fn` handles each row. */
int tbe__ns_each_row(ns_state *s, const char *table, const char *const *cols, size_t ncols,
                     const char *tail, int *have, row_fn fn) {
  sqlite3_stmt *st;
  int rc = tbe__ns_select_cols(s, table, cols, ncols, tail, &st, have);
  if (rc || !st) return rc;
  row r = {s, st, table, cols, 0, 0};
  int sr;
  while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
    r.rowid = sqlite3_column_int64(st, 0);
    rc = fn(s, &r);
    if (!rc) rc = r.rc;
    if (rc) break;
  }
  sqlite3_finalize(st);
  if (rc) return rc;
  if (sr != SQLITE_DONE) return tbe__ns_sql_error(s, table, sr);
  return tbe_trace_error(s->t);
}

int tbe__ns_count_rows(ns_state *s, const char *table) {
  if (tbe__ns_table_exists(s, table) != 1) return 0;
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\"", table);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
  if (sqlite3_step(st) == SQLITE_ROW) s->rows_total += (uint64_t)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return 0;
}

/* "file:<percent-encoded path>?immutable=1" */
char *tbe__ns_make_uri(const tbe_allocator *a, const char *path) {
  size_t n = strlen(path);
  char *u = tbe__alloc(a, n * 3 + 32);
  if (!u) return NULL;
  char *p = u;
  p += sprintf(p, "file:");
  for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
        strchr("/-_.~", *c))
      *p++ = (char)*c;
    else
      p += sprintf(p, "%%%02X", *c);
  }
  strcpy(p, "?immutable=1");
  return u;
}
