/* launcher.h: the rank of this process in a distributed job, as its
 * launcher (torchrun, mpirun, srun, ...) told it through the environment.
 *
 * Users run one profiled process per rank: `srun tbexport -- python
 * train.py`, `torchrun --no-python ... tbexport -- python train.py`,
 * `mpirun -n 4 tbexport -- ./app`, or `tbexport -- torchrun ...` around
 * the launcher.  Each rank then needs its own host entry in one shared run
 * (`<host>.rank<N>`, tbexport/session.h), and the run a name every rank
 * agrees on without talking to the others: the launcher's job id.
 *
 * Which variables, in this order; the first launcher whose rank variable
 * holds a valid rank wins (a process under torchrun inside an Slurm
 * allocation has both, and torch's rank is the one its program uses):
 *   torchrun / torch.distributed  RANK, WORLD_SIZE, LOCAL_RANK;
 *                                 job TORCHELASTIC_RUN_ID (not "" or "none")
 *   Open MPI                      OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK;
 *                                 job PMIX_NAMESPACE, else OMPI_MCA_ess_base_jobid
 *   PMIx                          PMIX_RANK; job PMIX_NAMESPACE
 *   MPICH's Hydra and other PMI   PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
 *   MVAPICH                       MV2_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
 *   Slurm                         SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID;
 *                                 job SLURM_JOB_ID[.SLURM_STEP_ID]
 * When the rank's launcher gives no job id, a Slurm job id in the
 * environment still names the job (torchrun inside sbatch).
 *
 * Attempts.  A launcher that runs a job again keeps its id: Slurm keeps
 * job and step id when it requeues a job (preemption, a node failure) and
 * counts in SLURM_RESTART_COUNT; torchrun keeps TORCHELASTIC_RUN_ID when
 * it restarts its workers and counts in TORCHELASTIC_RESTART_COUNT.  Both
 * counts are read whatever launcher gave the rank (torchrun inside a
 * requeued sbatch job has both), and with no rank at all (a name the user
 * gave, `tbexport --run NAME -- torchrun ...` in a batch script, repeats
 * just the same); an attempt after the first is named by the suffix
 * ".requeue<K>" and/or ".restart<J>" (tbe__launcher_attempt), which the
 * job's run name carries, so every rank of one attempt still agrees on
 * one run and no attempt lands on an earlier one's files.
 *
 * Values are decimal without sign or spaces, within int32; a rank must be
 * below the world size when both are known.  A malformed rank makes its
 * launcher count as absent (the next one is tried); a malformed size or
 * local rank is dropped alone; either way `why` says which variable was
 * ignored and why, for the caller to report.  An empty variable is absent.
 *
 * Pure: the variables come from a getenv-like callback, so tests drive it
 * without touching the process's environment.  No allocation, no output. */
#ifndef TBE_COLLECT_LAUNCHER_H
#define TBE_COLLECT_LAUNCHER_H

#include <stddef.h>
#include <stdint.h>

#include "events/spool.h"

#define TBE__JOB_MAX 128 /* job id bytes kept (longer ids are cut) */

typedef struct tbe__launcher {
  int32_t rank;               /* -1: no launcher found */
  int32_t world_size;         /* 0: unknown */
  int32_t local_rank;         /* -1: unknown */
  unsigned launcher;          /* TBE__LAUNCHER_* of the rank; NONE without one */
  unsigned job_launcher;      /* TBE__LAUNCHER_* whose variable gave the job id */
  char job[TBE__JOB_MAX + 1]; /* the job id, "" if none (only with a rank) */
  int32_t requeue;            /* SLURM_RESTART_COUNT; 0: absent, the first run */
  int32_t restart;            /* TORCHELASTIC_RESTART_COUNT; 0: absent, the first */
  char why[256];              /* the first variable ignored, "" if none */
} tbe__launcher;

/* Returns the value of variable `name`, or NULL when it is not set. */
typedef const char *(*tbe__getenv_fn)(void *ctx, const char *name);

/* Reads the launcher's variables through `get` (NULL: getenv) into *out. */
void tbe__launcher_read(tbe__launcher *out, tbe__getenv_fn get, void *ctx);

/* The launcher's name for people: "torchrun", "Open MPI", "PMIx", "PMI",
 * "MVAPICH", "Slurm"; "" for NONE or an unknown value. */
const char *tbe__launcher_name(unsigned launcher);

#define TBE__ATTEMPT_MAX 40 /* bytes of the longest attempt suffix, NUL included */

/* The suffix of an attempt after the first: ".requeue<K>" when Slurm
 * requeued the job K times, then ".restart<J>" when torchrun restarted
 * its workers J times; "" for a first attempt.  Into buf[0..size) (at
 * least TBE__ATTEMPT_MAX bytes, else ""). */
void tbe__launcher_attempt(const tbe__launcher *l, char *buf, size_t size);

/* The run name the job id gives, "<prefix>-<job><attempt>" (prefix:
 * torch, ompi, pmix, slurm, of the job's launcher; the attempt suffix
 * above), bytes of the job id other than letters, digits, '-', '_' and a
 * '.' not after another replaced by '_', so that it passes tbe_name_check.
 * Returns 0, or TBE_ENOENT without a job id (buf: ""), TBE_EINVAL when
 * buf cannot hold it. */
int tbe__launcher_run_name(const tbe__launcher *l, char *buf, size_t size);

/* The spool item of *l (TBE__SP_RANK: tbe__sp_rank then the job id's
 * bytes) into `body` (size at least sizeof(tbe__sp_rank) +
 * TBE__JOB_MAX); returns its length, 0 when l has no rank. */
size_t tbe__launcher_item(const tbe__launcher *l, uint8_t *body, size_t size);

#endif
