/* launcher.c: the launcher's rank, world size, local rank and job id from
 * the environment (launcher.h says which variables, in which order, and
 * what is refused).
 *
 * The table below is the order; each row names its variables, and a row
 * whose rank variable is absent or malformed is skipped.  Only the first
 * reason is kept in `why`: one line is what a person reads.
 *
 * Invariant: *out is complete and consistent whatever the environment
 * holds: rank >= 0 or -1; world_size 0 or > rank; local_rank -1 or in
 * [0, world_size) when the size is known; job non-empty only with a rank;
 * requeue and restart >= 0, read with or without a rank. */
#include "collect/launcher.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbexport/error.h"

/* ---- the launchers ---- */

typedef struct row {
  unsigned launcher;
  const char *rank, *size, *local; /* variable names; NULL: none */
  const char *job[2];              /* job id variables, first set wins */
} row;

static const row rows[] = {
    {TBE__LAUNCHER_TORCH, "RANK", "WORLD_SIZE", "LOCAL_RANK", {"TORCHELASTIC_RUN_ID", NULL}},
    {TBE__LAUNCHER_OMPI,
     "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK",
     {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"}},
    {TBE__LAUNCHER_PMIX, "PMIX_RANK", NULL, NULL, {"PMIX_NAMESPACE", NULL}},
    {TBE__LAUNCHER_PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", {NULL, NULL}},
    {TBE__LAUNCHER_MVAPICH,
     "MV2_COMM_WORLD_RANK",
     "MV2_COMM_WORLD_SIZE",
     "MV2_COMM_WORLD_LOCAL_RANK",
     {NULL, NULL}},
    {TBE__LAUNCHER_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", {NULL, NULL}},
};

const char *tbe__launcher_name(unsigned launcher) {
  switch (launcher) {
    case TBE__LAUNCHER_TORCH: return "torchrun";
    case TBE__LAUNCHER_OMPI: return "Open MPI";
    case TBE__LAUNCHER_PMIX: return "PMIx";
    case TBE__LAUNCHER_PMI: return "PMI";
    case TBE__LAUNCHER_MVAPICH: return "MVAPICH";
    case TBE__LAUNCHER_SLURM: return "Slurm";
    default: return "";
  }
}

static const char *run_prefix(unsigned launcher) {
  switch (launcher) {
    case TBE__LAUNCHER_TORCH: return "torch";
    case TBE__LAUNCHER_OMPI: return "ompi";
    case TBE__LAUNCHER_PMIX: return "pmix";
    case TBE__LAUNCHER_SLURM: return "slurm";
    default: return "job";
  }
}

/* ---- values ---- */

typedef struct reader {
  tbe__getenv_fn get;
  void *ctx;
  tbe__launcher *out;
} reader;

static const char *std_getenv(void *ctx, const char *name) {
  (void)ctx;
  return getenv(name);
}

/* The variable's value; NULL when unset or empty. */
static const char *var(const reader *r, const char *name) {
  if (!name) return NULL;
  const char *v = r->get(r->ctx, name);
  return v && *v ? v : NULL;
}

static void ignored(const reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ignored(const reader *r, const char *fmt, ...) {
  if (r->out->why[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->out->why, sizeof r->out->why, fmt, ap);
  va_end(ap);
}

/* A decimal in [lo, INT32_MAX]: 1 and *v, else 0. */
static int decimal(const char *s, int64_t lo, int32_t *v) {
  int64_t x = 0;
  if (!*s) return 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return 0;
    x = x * 10 + (*p - '0');
    if (x > INT32_MAX) return 0;
  }
  if (x < lo) return 0;
  *v = (int32_t)x;
  return 1;
}

/* Variable NAME as a number >= lo into *v; 1 when set and valid, 0 when
 * absent, -1 when malformed (the reason noted). */
static int number(const reader *r, const char *name, int64_t lo, int32_t *v) {
  const char *s = var(r, name);
  if (!s) return 0;
  if (decimal(s, lo, v)) return 1;
  ignored(r, "%s='%.40s%s' is not a %s: ignored", name, s, strlen(s) > 40 ? "..." : "",
          lo > 0 ? "positive decimal number" : "decimal number");
  return -1;
}

static void set_job(tbe__launcher *l, unsigned launcher, const char *id, const char *step) {
  snprintf(l->job, sizeof l->job, "%s%s%s", id, step ? "." : "", step ? step : "");
  l->job_launcher = launcher;
}

/* The row's rank, size and local rank into *l; 1 when it gave a rank. */
static int read_row(const reader *r, const row *w, tbe__launcher *l) {
  int32_t rank, size = 0, local = -1;
  if (number(r, w->rank, 0, &rank) != 1) return 0;
  if (w->size && number(r, w->size, 1, &size) != 1) size = 0;
  if (size > 0 && rank >= size) {
    ignored(r, "%s=%d is not below %s=%d: the %s rank is ignored", w->rank, (int)rank, w->size,
            (int)size, tbe__launcher_name(w->launcher));
    return 0;
  }
  if (w->local && number(r, w->local, 0, &local) != 1) local = -1;
  if (local >= 0 && size > 0 && local >= size) {
    ignored(r, "%s=%d is not below %s=%d: ignored", w->local, (int)local, w->size, (int)size);
    local = -1;
  }
  l->rank = rank;
  l->world_size = size;
  l->local_rank = local;
  l->launcher = w->launcher;
  for (int k = 0; k < 2 && !l->job[0]; k++) {
    const char *id = var(r, w->job[k]);
    if (id && !(w->launcher == TBE__LAUNCHER_TORCH && strcmp(id, "none") == 0))
      set_job(l, w->launcher, id, NULL);
  }
  return 1;
}

void tbe__launcher_read(tbe__launcher *out, tbe__getenv_fn get, void *ctx) {
  memset(out, 0, sizeof *out);
  out->rank = -1;
  out->local_rank = -1;
  reader r = {get ? get : std_getenv, ctx, out};
  int found = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0] && !found; i++)
    found = read_row(&r, &rows[i], out);
  /* A Slurm job around a launcher that names no job (torchrun in sbatch). */
  const char *sj = found && !out->job[0] ? var(&r, "SLURM_JOB_ID") : NULL;
  if (sj) set_job(out, TBE__LAUNCHER_SLURM, sj, var(&r, "SLURM_STEP_ID"));
  /* Which attempt of the job this is (launcher.h, "Attempts"). */
  if (number(&r, "SLURM_RESTART_COUNT", 0, &out->requeue) != 1) out->requeue = 0;
  if (number(&r, "TORCHELASTIC_RESTART_COUNT", 0, &out->restart) != 1) out->restart = 0;
}

/* ---- what is made of it ---- */

void tbe__launcher_attempt(const tbe__launcher *l, char *buf, size_t size) {
  if (!buf || !size) return;
  buf[0] = '\0';
  if (!l || size < TBE__ATTEMPT_MAX) return;
  int n = 0;
  if (l->requeue > 0) n = snprintf(buf, size, ".requeue%d", (int)l->requeue);
  if (l->restart > 0) snprintf(buf + n, size - (size_t)n, ".restart%d", (int)l->restart);
}

int tbe__launcher_run_name(const tbe__launcher *l, char *buf, size_t size) {
  if (!buf || !size) return TBE_EINVAL;
  buf[0] = '\0';
  if (!l || l->rank < 0 || !l->job[0]) return TBE_ENOENT;
  const char *pre = run_prefix(l->job_launcher);
  char attempt[TBE__ATTEMPT_MAX];
  tbe__launcher_attempt(l, attempt, sizeof attempt);
  size_t n = strlen(pre) + 1 + strlen(l->job);
  if (n + strlen(attempt) >= size) return TBE_EINVAL;
  snprintf(buf, size, "%s-%s%s", pre, l->job, attempt);
  for (size_t i = strlen(pre) + 1; i < n; i++) {
    unsigned char c = (unsigned char)buf[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '_' || (c == '.' && buf[i - 1] != '.' && !(i == n - 1 && attempt[0]));
    if (!ok) buf[i] = '_';
  }
  return 0;
}

size_t tbe__launcher_item(const tbe__launcher *l, uint8_t *body, size_t size) {
  if (!l || l->rank < 0) return 0;
  tbe__sp_rank it;
  memset(&it, 0, sizeof it);
  it.rank = l->rank;
  it.world_size = l->world_size;
  it.local_rank = l->local_rank;
  it.launcher = l->launcher;
  size_t jl = strlen(l->job);
  if (size < sizeof it + jl) return 0;
  memcpy(body, &it, sizeof it);
  memcpy(body + sizeof it, l->job, jl);
  return sizeof it + jl;
}
