/*
 * bench.c -- colltune-bench: latency of collective algorithms.
 *
 * Two timing methods (--timing), both run the algorithms of one collective
 * interleaved (A B C A B C ...) within each repetition and size, so drift of
 * a noisy machine does not favour one of them:
 *
 * osu (default), as the OSU Micro-Benchmarks: per point, warm-up iterations,
 *   then `iterations` calls, each timed alone with an untimed barrier after
 *   it; each process's mean time per call is one sample; per repetition, the
 *   mean over processes (OSU's "Avg Latency") is the repetition's value, and
 *   statistics run over repetitions (rep_min_us, median_us, ...). OSU's
 *   "Min/Max Latency" are the smallest and largest, over processes, of a
 *   process's mean time per call over all its timed calls (rank_min_us,
 *   rank_max_us).
 *
 * `native` calls the MPI library's collective (MPI_Bcast, ...) directly in the
 * timed loop, not through colltune's dispatcher, so its figure is the library's
 * call alone. Message buffers are aligned to --align bytes (default: the page
 * size, as OSU allocates them) and written before any timing.
 *
 * window, after ReproMPI: each rank's clock offset to rank 0 is estimated by
 *   ping-pong (smallest round trip wins); rank 0 broadcasts a schedule of
 *   time windows in that global clock; every rank busy-waits for the start of
 *   a window, runs one call and records its start and end. A sample where
 *   some rank reached the window after its start is invalid and discarded;
 *   a valid sample's time is the last end over ranks minus the window start.
 *   Statistics run over the valid samples of all repetitions.
 *
 * Output: one JSON object per (size, algorithm) on stdout from rank 0.
 * docs/benchmarking.md describes every field.
 */
#include "bench_stats.h"
#include "driver_common.h"
#include "loadtraffic.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TIMING_OSU, TIMING_WINDOW };
static const char *timing_names[] = { "osu", "window" };

/* window method */
#define SYNC_ROUNDS 10          /* ping-pongs per rank and clock synchronisation   */
#define SYNC_TAG 7301           /* on `world`; algorithms use their own comm */
#define WIN_BATCH_MAX 1000      /* samples per schedule                             */
#define WIN_FIRST_BATCH 10      /* first schedule of a block: short, to adapt early */
#define WIN_BATCH_SECONDS 0.1   /* longer schedules are split (clocks re-synced)    */
#define WIN_MAX_INVALID 0.1     /* invalid fraction of a schedule that doubles w    */
#define WIN_MIN_S 2e-6          /* shortest window                                  */
#define WIN_MAX_S 10.0          /* longest window                                   */
#define WIN_MAX_GROWTH 32       /* a window grows to at most 32 x its first length  */
#define WIN_SPIN_S 500e-6       /* longer waits sleep until this close to the start */
#define WIN_EST_CALLS 5         /* calls timed to choose the first window           */
/* --time-budget */
#define CAL_FRACTION 0.05       /* of the budget spent calibrating (osu)            */
#define CAL_MAX_S 0.5
#define ITER_CAP_OSU 10000000L
#define ITER_CAP_WINDOW 1000000L /* window keeps every sample on rank 0             */

static int rank, nprocs;
/* the measured processes: MPI_COMM_WORLD, or without the generator ranks (--load-ranks) */
static MPI_Comm world; /* set after MPI_Init (under SMPI MPI_COMM_WORLD is a call) */

typedef struct {
    ct_choice_t choice;
    char spec[256];     /* canonical: name and every parameter value */
    const char *given;  /* as the user wrote it */
    /* per point (size) */
    long iters, warm;
    double *samples;    /* rank 0: osu: per repetition, mean over processes of the per-call
                         * time; window: valid sample times; seconds */
    int nsamples, cap;
    long invalid;       /* window: discarded samples */
    double busy;        /* osu, every rank: time in timed calls over all repetitions */
    long nbusy;         /* osu, every rank: timed calls over all repetitions */
    int native;         /* the library's own collective: called directly, no dispatcher */
    double lsum;        /* window, every rank: own call durations over valid samples */
    long ln;
    double w, w_max;    /* window length (s) and its limit, rank 0 */
    int valid;          /* --validate: 1 ok, 0 failed, -1 not checked */
    int fallback;
    char fallback_reason[160];
} candidate_t;

/* what one point runs */
typedef struct {
    ct_coll_t coll;
    MPI_Datatype dt;
    MPI_Op op;
    int root, count, tsize;
    char *sbuf, *rbuf;
} point_t;

static int timing = TIMING_OSU;
static double sleep_s;        /* --sleep */
static double budget_s;       /* --time-budget, 0 if none */
static int reps = 3;
static long warmup_opt = -1;
static int warmup_once;        /* --warmup-once: warm-up calls before a candidate's first point only */
static int prepare;            /* --prepare: ct_comm_prepare before a candidate's first point */
static long align = -1;        /* --align: buffer alignment in bytes, 1 = plain malloc */
static int shared_bufs;        /* --shared-buffers (SMPI only): SMPI_SHARED_MALLOC */

/* clocks (window) */
static double clk_offset;     /* this rank's clock minus rank 0's */
static double clk_err;        /* rank 0: largest offset uncertainty over ranks */
static double t_barrier;      /* rank 0: mean barrier time */

static void usage(void) {
    printf("usage: colltune-bench --coll C --algo LIST [--sizes LIST] [--iterations N]\n"
           "                      [--warmup N] [--warmup-once] [--prepare] [--reps R]\n"
           "                      [--root R] [--dtype T] [--op O]\n"
           "                      [--timing osu|window] [--sleep US] [--time-budget S]\n"
           "                      [--align BYTES] [--validate] [--raw] [--trace]\n"
           "                      [--shared-buffers] [--load-ranks K [--load-pattern P]\n"
           "                      [--load-size B] [--load-window W] [--load-seed S]]\n"
           "                      [--probe-iterations N [--probe-size B]]\n\n"
           "  --coll        bcast | reduce | gather | allgather | allreduce\n"
           "  --algo        comma-separated algorithm specs, e.g. native,binomial,chain:fanout=2\n"
           "  --sizes       message sizes in bytes (default 8,65536,1048576); for gather and\n"
           "                allgather: bytes per process\n"
           "  --iterations  timed calls (osu) or samples (window) per point and repetition\n"
           "                (default 1000 up to 8 KiB, 100 above)\n"
           "  --warmup      untimed calls first (default iterations/10)\n"
           "  --warmup-once the warm-up calls only before each algorithm's first point (its\n"
           "                first size and repetition), not before every point: under\n"
           "                simulation, where only a first call differs (private\n"
           "                communicators are made then), the later ones would repeat it\n"
           "  --prepare     before each algorithm's first point, make what its first call\n"
           "                would make (ct_comm_prepare: the private duplicate, a remap's\n"
           "                permuted communicator) instead of a call; with --warmup 0, for\n"
           "                simulations, where that is the only first-call effect\n"
           "  --reps        repetitions, interleaved across algorithms (default 3)\n"
           "  --dtype       char | int | float | double (default char)\n"
           "  --op          sum | max | min | prod (default sum)\n"
           "  --timing      osu: per-call time with a barrier between calls (default);\n"
           "                window: synchronised clocks, one call per time window (ReproMPI)\n"
           "  --sleep       microseconds to sleep between calls, outside the timed region\n"
           "  --time-budget seconds per point and algorithm, all repetitions together;\n"
           "                the iteration count comes from a calibration run (not with\n"
           "                --iterations)\n"
           "  --align       message buffers start at a multiple of BYTES (a power of two;\n"
           "                default: the page size, as the OSU benchmarks allocate them);\n"
           "                0 or 1: plain malloc\n"
           "  --validate    after timing a point, compare one call on rank-dependent data\n"
           "                with the MPI library's collective; exit 1 if any differs\n"
           "  --shared-buffers  (SimGrid SMPI only) message buffers from SMPI_SHARED_MALLOC:\n"
           "                every rank's buffer is the same memory, so thousands of\n"
           "                simulated ranks fit; timing only, the data is not meaningful\n"
           "                (not with --validate); the remapped Allgather's scratch too\n"
           "  --raw         add the per-repetition (osu) or per-sample (window) times\n"
           "  --trace       print the buffer addresses (\"buffers ...\") and the order of the\n"
           "                timed loops (\"trace size=... rep=... algo=...\") on stderr\n"
           "  --load-ranks  the last K ranks of MPI_COMM_WORLD are a load generator (as\n"
           "                colltune-load, without a duty cycle): they exchange traffic among\n"
           "                themselves until the measured ranks (the others) are done; for a\n"
           "                generator inside the same simulation (docs/workload.md)\n"
           "  --load-pattern pairs | alltoall | hot (default pairs)\n"
           "  --load-size   bytes per generator message (default 1048576)\n"
           "  --load-window generator messages per partner in flight at once (default 4)\n"
           "  --load-seed   seed of the generator's random pairings (default 1)\n"
           "  --probe-iterations  before the points, the probe (colltune-probe's loop: a\n"
           "                barrier and --probe-size bytes between random pairs) on the\n"
           "                measured ranks; prints {\"kind\": \"probe\", ...} (default 0: none)\n"
           "  --probe-size  bytes per probe exchange (default 4096)\n");
}

/* The MPI library's own collective, called directly (what `native` times). */
static int run_mpi(const point_t *p) {
    switch (p->coll) {
    case CT_BCAST: return MPI_Bcast(p->sbuf, p->count, p->dt, p->root, world);
    case CT_REDUCE:
        return MPI_Reduce(p->sbuf, p->rbuf, p->count, p->dt, p->op, p->root, world);
    case CT_GATHER:
        return MPI_Gather(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, p->root,
                          world);
    case CT_ALLGATHER:
        return MPI_Allgather(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt,
                             world);
    case CT_ALLREDUCE:
        return MPI_Allreduce(p->sbuf, p->rbuf, p->count, p->dt, p->op, world);
    default: return MPI_ERR_ARG;
    }
}

static int run_choice(const point_t *p, const ct_choice_t *c) {
    switch (p->coll) {
    case CT_BCAST: return ct_bcast(c, p->sbuf, p->count, p->dt, p->root, world);
    case CT_REDUCE:
        return ct_reduce(c, p->sbuf, p->rbuf, p->count, p->dt, p->op, p->root, world);
    case CT_GATHER:
        return ct_gather(c, p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, p->root,
                         world);
    case CT_ALLGATHER:
        return ct_allgather(c, p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt,
                            world);
    case CT_ALLREDUCE:
        return ct_allreduce(c, p->sbuf, p->rbuf, p->count, p->dt, p->op, world);
    default: return MPI_ERR_ARG;
    }
}

/* One call of a candidate: `native` straight to the MPI library, the others
 * through colltune's dispatcher. */
static inline int run_once(const point_t *p, const candidate_t *c) {
    return c->native ? run_mpi(p) : run_choice(p, &c->choice);
}

static void check_rc(int rc, const candidate_t *c) {
    if (rc == MPI_SUCCESS) return;
    if (c->native) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        ct_die(rank, "%s (the MPI library's collective) failed: %s", c->spec, msg);
    }
    ct_die(rank, "%s failed: %s", c->spec, ct_last_error());
}

static void pause_for(double s) {
    if (!(s > 0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void add_sample(candidate_t *c, double v) {
    if (c->nsamples == c->cap) {
        int ncap = c->cap ? 2 * c->cap : 64;
        double *s = realloc(c->samples, (size_t)ncap * sizeof *s);
        if (!s) ct_die(rank, "cannot keep %d samples of %s", ncap, c->spec);
        c->samples = s;
        c->cap = ncap;
    }
    c->samples[c->nsamples++] = v;
}

static void note_fallback(candidate_t *c) {
    if (c->native) return; /* not dispatched: the last dispatch record is another's */
    const ct_dispatch_t *d = ct_last_dispatch();
    if (d->reason[0]) {
        c->fallback = 1;
        snprintf(c->fallback_reason, sizeof c->fallback_reason, "%s", d->reason);
    }
}

/* ---- osu ------------------------------------------------------------------ */

/* One timed loop; rank 0 keeps the mean over processes as one sample. */
static void osu_block(const point_t *p, candidate_t *c) {
    int rc = MPI_SUCCESS;
    double busy = 0;
    MPI_Barrier(world);
    for (long it = 0; it < c->iters && rc == MPI_SUCCESS; it++) {
        double t0 = MPI_Wtime();
        rc = run_once(p, c);
        busy += MPI_Wtime() - t0;
        pause_for(sleep_s);
        MPI_Barrier(world);
    }
    check_rc(rc, c);
    double mine = busy / (double)c->iters, sum;
    c->busy += busy;
    c->nbusy += c->iters;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, world);
    if (rank == 0) add_sample(c, sum / nprocs);
}

/* Rank 0's time per iteration of the osu loop (call, sleep, barrier), from
 * runs of 1, 2, 4, ... iterations until one takes a little of the budget. */
static double osu_calibrate(const point_t *p, candidate_t *c) {
    double target = budget_s * CAL_FRACTION < CAL_MAX_S ? budget_s * CAL_FRACTION : CAL_MAX_S;
    double per = 0;
    for (long n = 1;; n *= 2) {
        int rc = MPI_SUCCESS, more = 0;
        MPI_Barrier(world);
        double t0 = MPI_Wtime();
        for (long it = 0; it < n && rc == MPI_SUCCESS; it++) {
            rc = run_once(p, c);
            pause_for(sleep_s);
            MPI_Barrier(world);
        }
        double el = MPI_Wtime() - t0;
        check_rc(rc, c);
        if (rank == 0) {
            per = el / (double)n;
            more = el < target && n < (1L << 24);
        }
        MPI_Bcast(&more, 1, MPI_INT, 0, world);
        if (!more) break;
    }
    return per;
}

/* ---- window --------------------------------------------------------------- */

static double gnow(void) { return MPI_Wtime() - clk_offset; }

/* Estimate every rank's clock offset to rank 0 (SYNC_ROUNDS ping-pongs per
 * rank, smallest round trip); clk_offset on every rank, clk_err on rank 0. */
static void clock_sync(void) {
    double *offs = NULL;
    if (rank == 0) {
        offs = malloc((size_t)nprocs * sizeof *offs);
        if (!offs) ct_die(rank, "out of memory (clock offsets)");
        offs[0] = 0;
        clk_err = 0;
        for (int r = 1; r < nprocs; r++) {
            double t0[SYNC_ROUNDS], tr[SYNC_ROUNDS], t1[SYNC_ROUNDS], rtt, off;
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                t0[k] = MPI_Wtime();
                MPI_Send(&t0[k], 1, MPI_DOUBLE, r, SYNC_TAG, world);
                MPI_Recv(&tr[k], 1, MPI_DOUBLE, r, SYNC_TAG, world, MPI_STATUS_IGNORE);
                t1[k] = MPI_Wtime();
            }
            ct_clock_offset(t0, tr, t1, SYNC_ROUNDS, &off, &rtt);
            offs[r] = off;
            if (rtt / 2 > clk_err) clk_err = rtt / 2;
        }
    } else {
        for (int k = 0; k < SYNC_ROUNDS; k++) {
            double ping, t;
            MPI_Recv(&ping, 1, MPI_DOUBLE, 0, SYNC_TAG, world, MPI_STATUS_IGNORE);
            t = MPI_Wtime();
            MPI_Send(&t, 1, MPI_DOUBLE, 0, SYNC_TAG, world);
        }
    }
    MPI_Scatter(offs, 1, MPI_DOUBLE, &clk_offset, 1, MPI_DOUBLE, 0, world);
    free(offs);
}

/* First window length of a candidate at this point (rank 0): twice the
 * slowest rank's median call time plus twice the clock uncertainty. */
static void window_estimate(const point_t *p, candidate_t *c) {
    double d[WIN_EST_CALLS], t_call = 0;
    int rc = MPI_SUCCESS;
    for (int j = 0; j < WIN_EST_CALLS; j++) {
        MPI_Barrier(world);
        double t0 = MPI_Wtime();
        rc = run_once(p, c);
        d[j] = MPI_Wtime() - t0;
        if (rc != MPI_SUCCESS) break;
    }
    check_rc(rc, c);
    double med = 0;
    ct_stats_t st;
    if (ct_stats_compute(d, WIN_EST_CALLS, &st) == 0) med = st.median;
    MPI_Reduce(&med, &t_call, 1, MPI_DOUBLE, MPI_MAX, 0, world);
    if (rank == 0) {
        double w = 2 * t_call + 2 * clk_err;
        c->w = w < WIN_MIN_S ? WIN_MIN_S : w > WIN_MAX_S ? WIN_MAX_S : w;
        c->w_max = c->w * WIN_MAX_GROWTH < WIN_MAX_S ? c->w * WIN_MAX_GROWTH : WIN_MAX_S;
    }
}

/* c->iters samples, in schedules of at most WIN_BATCH_MAX windows; clocks are
 * re-synchronised before each schedule. Per-sample results are reduced over
 * ranks once per schedule. --sleep widens the spacing of windows (the wait
 * for a window sleeps when it is long). With a time budget, rank 0 ends the
 * block early once deadline (its clock) has passed: windows that grew after
 * the iteration count was chosen must not overrun the budget. */
static void window_block(const point_t *p, candidate_t *c, double deadline) {
    static int late[WIN_BATCH_MAX], late_all[WIN_BATCH_MAX];
    static double ls[WIN_BATCH_MAX], le[WIN_BATCH_MAX], le_max[WIN_BATCH_MAX];
    long done = 0;
    int first = 1;
    while (done < c->iters) {
        clock_sync();
        double sched[3]; /* start of window 0 (global clock), spacing, windows */
        if (rank == 0) {
            double spacing = c->w + sleep_s;
            long left = c->iters - done;
            long n = first ? WIN_FIRST_BATCH : (long)(WIN_BATCH_SECONDS / spacing);
            if (n > WIN_BATCH_MAX) n = WIN_BATCH_MAX;
            if (n > left) n = left;
            if (n < 1) n = 1;
            if (!first && deadline > 0 && MPI_Wtime() >= deadline) n = 0; /* budget used */
            sched[0] = gnow() + c->w + 10 * t_barrier + 2 * clk_err; /* margin: the Bcast */
            sched[1] = spacing;
            sched[2] = (double)n;
        }
        MPI_Bcast(sched, 3, MPI_DOUBLE, 0, world);
        int n = (int)sched[2], rc = MPI_SUCCESS;
        if (n == 0) break;
        for (int k = 0; k < n; k++) {
            double start = sched[0] + k * sched[1];
            double now = gnow();
            if (start - now > 2 * WIN_SPIN_S) { /* long wait: sleep, then spin */
                pause_for(start - now - WIN_SPIN_S);
                now = gnow();
            }
            late[k] = now > start; /* arrived (or woke) after the window opened */
            while (now < start) now = gnow();
            ls[k] = now;
            rc = run_once(p, c);
            le[k] = gnow();
            check_rc(rc, c);
        }
        MPI_Allreduce(late, late_all, n, MPI_INT, MPI_MAX, world);
        MPI_Reduce(le, le_max, n, MPI_DOUBLE, MPI_MAX, 0, world);
        int bad = 0;
        for (int k = 0; k < n; k++) {
            if (late_all[k]) {
                bad++;
                continue;
            }
            c->lsum += le[k] - ls[k];
            c->ln++;
            if (rank == 0) add_sample(c, le_max[k] - (sched[0] + k * sched[1]));
        }
        if (rank == 0) {
            c->invalid += bad;
            if (bad > WIN_MAX_INVALID * n) c->w = 2 * c->w < c->w_max ? 2 * c->w : c->w_max;
        }
        done += n;
        first = 0;
    }
}

/* ---- --validate ----------------------------------------------------------- */

/* Values exact in any order of evaluation, for every dtype: small integers
 * for sum (0..3), +-1 for prod, -100..99 otherwise. */
enum { V_DATA, V_SUM, V_PROD };

static void fill_values(void *buf, int count, MPI_Datatype dt, int who, int kind) {
    for (int i = 0; i < count; i++) {
        long v;
        if (kind == V_SUM) v = (who * 5 + i * 3) % 4;
        else if (kind == V_PROD) v = (who + i) % 3 == 0 ? -1 : 1;
        else v = (who * 37 + i * 11 + 7) % 200 - 100;
        if (dt == MPI_SIGNED_CHAR) ((signed char *)buf)[i] = (signed char)v;
        else if (dt == MPI_INT) ((int *)buf)[i] = (int)v;
        else if (dt == MPI_FLOAT) ((float *)buf)[i] = (float)v;
        else ((double *)buf)[i] = (double)v;
    }
}

static const char *mpi_coll_name(ct_coll_t coll) {
    static const char *names[] = { "MPI_Bcast", "MPI_Reduce", "MPI_Gather", "MPI_Allgather",
                                   "MPI_Allreduce" };
    return (unsigned)coll < sizeof names / sizeof *names ? names[coll] : "?";
}

/* One call of the candidate and one of the MPI library's collective on the
 * same rank-dependent input; returns 1 on every rank if all results agree. */
static int validate_point(const point_t *p, candidate_t *c, char *ref, long size) {
    size_t bytes = (size_t)p->count * (size_t)p->tsize;
    size_t outb = (p->coll == CT_GATHER || p->coll == CT_ALLGATHER) ? bytes * (size_t)nprocs
                                                                     : bytes;
    int kind = V_DATA;
    if (p->coll == CT_REDUCE || p->coll == CT_ALLREDUCE)
        kind = p->op == MPI_SUM ? V_SUM : p->op == MPI_PROD ? V_PROD : V_DATA;
    int rc, rrc, ok = 1;
    if (p->coll == CT_BCAST) {
        if (rank == p->root) fill_values(p->sbuf, p->count, p->dt, rank, kind);
        else memset(p->sbuf, 0x5a, bytes);
        memcpy(ref, p->sbuf, bytes);
        rc = ct_bcast(&c->choice, p->sbuf, p->count, p->dt, p->root, world);
        rrc = MPI_Bcast(ref, p->count, p->dt, p->root, world);
        ok = memcmp(p->sbuf, ref, bytes) == 0;
    } else {
        fill_values(p->sbuf, p->count, p->dt, rank, kind);
        memset(p->rbuf, 0x5a, outb);
        memset(ref, 0x5a, outb);
        rc = run_choice(p, &c->choice);
        switch (p->coll) {
        case CT_REDUCE:
            rrc = MPI_Reduce(p->sbuf, ref, p->count, p->dt, p->op, p->root, world);
            break;
        case CT_GATHER:
            rrc = MPI_Gather(p->sbuf, p->count, p->dt, ref, p->count, p->dt, p->root,
                             world);
            break;
        case CT_ALLGATHER:
            rrc = MPI_Allgather(p->sbuf, p->count, p->dt, ref, p->count, p->dt, world);
            break;
        default:
            rrc = MPI_Allreduce(p->sbuf, ref, p->count, p->dt, p->op, world);
            break;
        }
        int rooted = p->coll == CT_REDUCE || p->coll == CT_GATHER;
        if (!rooted || rank == p->root) ok = memcmp(p->rbuf, ref, outb) == 0;
    }
    if (rc != MPI_SUCCESS || rrc != MPI_SUCCESS) ok = 0;
    int first_bad = ok ? INT_MAX : rank, nbad = !ok, all_first, all_bad;
    MPI_Allreduce(&first_bad, &all_first, 1, MPI_INT, MPI_MIN, world);
    MPI_Allreduce(&nbad, &all_bad, 1, MPI_INT, MPI_SUM, world);
    if (all_bad && rank == 0) {
        fprintf(stderr, "validation failed: %s %s, size %ld B, %d processes: result differs "
                        "from %s on %d process(es), first rank %d%s%s\n",
                ct_coll_name(p->coll), c->spec, size, nprocs, mpi_coll_name(p->coll), all_bad,
                all_first, rc != MPI_SUCCESS ? ": " : "",
                rc != MPI_SUCCESS ? ct_last_error() : "");
        fflush(stderr);
    }
    return all_bad == 0;
}

/* ---- output --------------------------------------------------------------- */

static void json_us(const char *name, double seconds) {
    if (isfinite(seconds)) printf(", \"%s\": %.3f", name, seconds * 1e6);
    else printf(", \"%s\": null", name);
}

static void print_record(const point_t *p, candidate_t *c, long size, const char *dtype_name,
                         const char *op_name, const char *ver, int raw, double rank_mean_min,
                         double rank_mean_max) {
    ct_stats_t st;
    if (ct_stats_compute(c->samples, c->nsamples, &st))
        ct_die(rank, "out of memory computing statistics");
    const ct_algo_t *a = ct_algo_get(c->choice.algo);
    const char *params = strchr(c->spec, ':');
    printf("{\"collective\": \"%s\", \"algorithm\": ", ct_coll_name(p->coll));
    ct_json_str(stdout, a->name);
    printf(", \"params\": ");
    ct_json_str(stdout, params ? params + 1 : "");
    printf(", \"spec\": ");
    ct_json_str(stdout, c->given);
    printf(", \"np\": %d, \"size\": %ld, \"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
           "\"iterations\": %ld, \"warmup\": %ld, \"timing\": \"%s\"",
           nprocs, size, dtype_name, op_name, p->root, c->iters, c->warm, timing_names[timing]);
    if (warmup_once) printf(", \"warmup_once\": true");
    if (prepare) printf(", \"prepared\": true");
    /* over repetitions (osu) or valid samples (window); OSU's min/max over
     * processes are rank_min_us and rank_max_us */
    json_us("rep_min_us", st.min);
    json_us("mean_us", st.mean);
    json_us("median_us", st.median);
    json_us("p90_us", st.p90);
    json_us("p99_us", st.p99);
    json_us("rep_max_us", st.max);
    json_us("stddev_us", st.stddev);
    printf(", \"valid_reps\": %d, \"invalid\": %ld", st.n, c->invalid);
    json_us("rank_min_us", rank_mean_min);
    json_us("rank_max_us", rank_mean_max);
    json_us("window_us", timing == TIMING_WINDOW ? c->w : NAN);
    printf(", \"sleep_us\": %.3f, \"align\": %ld", sleep_s * 1e6, align);
    if (budget_s > 0) printf(", \"time_budget_s\": %g", budget_s);
    else printf(", \"time_budget_s\": null");
    printf(", \"valid\": %s", c->valid < 0 ? "null" : c->valid ? "true" : "false");
    printf(", \"fallback\": ");
    if (c->fallback) ct_json_str(stdout, c->fallback_reason);
    else fputs("null", stdout);
    printf(", \"mpi\": ");
    ct_json_str(stdout, ver);
    if (raw) {
        printf(", \"samples_us\": [");
        for (int i = 0; i < c->nsamples; i++)
            printf("%s%.3f", i ? ", " : "", c->samples[i] * 1e6);
        printf("]");
    }
    printf("}\n");
    fflush(stdout);
}

/* ---- main ----------------------------------------------------------------- */

static void free_buf(char *p) {
    if (!p) return;
#ifdef SMPI_SHARED_FREE
    if (shared_bufs) {
        SMPI_SHARED_FREE(p);
        return;
    }
#endif
    free(p);
}

/* A message buffer: at a multiple of `align` bytes (posix_memalign), or plain
 * malloc when align is 1. NULL when out of memory. */
static char *alloc_buf(size_t n) {
#ifdef SMPI_SHARED_MALLOC
    if (shared_bufs) return SMPI_SHARED_MALLOC(n);
#endif
    if (align <= 1) return malloc(n);
    void *p = NULL;
    size_t a = (size_t)align < sizeof(void *) ? sizeof(void *) : (size_t)align;
    return posix_memalign(&p, a, n) == 0 ? p : NULL;
}

static double parse_seconds(const char *opt, const char *v, double scale) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        ct_die(rank, "%s '%s': must be a non-negative number", opt, v);
    return x * scale;
}

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    world = MPI_COMM_WORLD;

    const char *coll_name = NULL, *algo_list = NULL, *size_list = "8,65536,1048576";
    const char *dtype_name = "char", *op_name = "sum", *timing_name = "osu";
    long iterations = -1;
    int root = 0, validate = 0, raw = 0, trace = 0;
    long load_ranks = 0, load_size = 1048576, load_window = 4, probe_iters = 0, probe_size = 4096;
    int load_pattern = CT_LOAD_PAIRS;
    unsigned long long load_seed = 1;
    /* options without a value */
    const struct {
        const char *name;
        int *on;
    } flags[] = { { "--validate", &validate }, { "--raw", &raw }, { "--trace", &trace },
                  { "--warmup-once", &warmup_once }, { "--prepare", &prepare } };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int flag = 0;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0] && !flag; f++)
            if (!strcmp(a, flags[f].name)) flag = *flags[f].on = 1;
        if (flag) continue;
        if (!strcmp(a, "--shared-buffers")) {
#ifdef SMPI_SHARED_MALLOC
            shared_bufs = 1; /* and the remap layer's Allgather scratch: after MPI_Init */
            continue;
#else
            ct_die(rank, "--shared-buffers: only in a build for SimGrid's SMPI "
                         "(colltune build --mpi smpi)");
#endif
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--coll")) coll_name = v;
        else if (!strcmp(a, "--algo")) algo_list = v;
        else if (!strcmp(a, "--sizes")) size_list = v;
        else if (!strcmp(a, "--iterations")) iterations = atol(v);
        else if (!strcmp(a, "--warmup")) warmup_opt = atol(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--root")) root = atoi(v);
        else if (!strcmp(a, "--dtype")) dtype_name = v;
        else if (!strcmp(a, "--op")) op_name = v;
        else if (!strcmp(a, "--timing")) timing_name = v;
        else if (!strcmp(a, "--align")) {
            char *end;
            errno = 0;
            align = strtol(v, &end, 10);
            if (end == v || *end || errno || align < 0 || align > (1L << 30) ||
                (align & (align - 1)))
                ct_die(rank, "--align '%s': must be 0 or a power of two up to 1073741824 "
                             "(bytes; 0 or 1: plain malloc)", v);
            if (align == 0) align = 1;
        }
        else if (!strcmp(a, "--load-ranks")) load_ranks = ct_parse_long(rank, a, v, 0, nprocs - 1);
        else if (!strcmp(a, "--load-size")) load_size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--load-window")) load_window = ct_parse_long(rank, a, v, 1, 1024);
        else if (!strcmp(a, "--probe-iterations")) probe_iters = ct_parse_long(rank, a, v, 0, 10000000L);
        else if (!strcmp(a, "--probe-size")) probe_size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--load-pattern")) {
            load_pattern = ct_load_pattern(v);
            if (load_pattern < 0) ct_die(rank, "--load-pattern '%s': valid: pairs, alltoall, hot", v);
        } else if (!strcmp(a, "--load-seed")) {
            char *end;
            errno = 0;
            if (v[0] == '-' || (load_seed = strtoull(v, &end, 10), end == v || *end || errno))
                ct_die(rank, "--load-seed '%s': must be a whole number >= 0", v);
        }
        else if (!strcmp(a, "--sleep")) sleep_s = parse_seconds(a, v, 1e-6);
        else if (!strcmp(a, "--time-budget")) {
            budget_s = parse_seconds(a, v, 1);
            if (!(budget_s > 0)) ct_die(rank, "--time-budget '%s': must be more than 0 s", v);
        }
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    MPI_Comm stop_comm = MPI_COMM_NULL;
    if (load_ranks > 0) {
        /* the last load_ranks ranks generate traffic until the measured ones are done:
         * a nonblocking barrier over all ranks on a duplicate of MPI_COMM_WORLD, which
         * the generator ranks post first and the measured ranks enter at the end */
        if (load_ranks < 2)
            ct_die(rank, "--load-ranks %ld: the generator needs at least 2 ranks", load_ranks);
        int is_gen = rank >= nprocs - load_ranks, wsize = nprocs;
        MPI_Comm_dup(MPI_COMM_WORLD, &stop_comm);
        MPI_Comm_split(MPI_COMM_WORLD, is_gen, rank, &world);
        MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
        if (is_gen) {
            MPI_Request stop;
            MPI_Ibarrier(stop_comm, &stop);
            ct_load_t gen;
            if (ct_load_init(&gen, world, load_pattern, load_size, load_window,
                             (uint64_t)load_seed))
                ct_die(rank, "out of memory for the load generator");
            long long rounds = 0, tot[2] = { 0, 0 };
            double t0 = MPI_Wtime();
            ct_load_serve(&gen, &stop, &rounds);
            double elapsed = MPI_Wtime() - t0;
            long long mine[2] = { gen.msgs, gen.sent };
            MPI_Reduce(mine, tot, 2, MPI_LONG_LONG, MPI_SUM, 0, world);
            if (gen.rank == 0) {
                printf("{\"kind\": \"load\", \"np\": %ld, \"measured_np\": %ld, \"pattern\": "
                       "\"%s\", \"size\": %ld, \"window\": %ld, \"seed\": %llu, \"rounds\": "
                       "%lld, \"messages\": %lld, \"bytes\": %lld, \"elapsed_s\": %.6f, "
                       "\"rate_MBps\": %.3f}\n",
                       load_ranks, wsize - load_ranks, ct_load_pattern_names[load_pattern],
                       load_size, load_window, load_seed, rounds, tot[0], tot[1], elapsed,
                       elapsed > 0 ? (double)tot[1] / elapsed / 1e6 : 0);
                fflush(stdout);
            }
            ct_load_free(&gen);
            MPI_Comm_free(&world);
            MPI_Comm_free(&stop_comm);
            MPI_Finalize();
            return 0;
        }
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &nprocs);
    }
    if (probe_iters > 0) {
        if (nprocs < 2) ct_die(rank, "--probe-iterations: the probe needs 2 measured ranks");
        double wall = 0, med = 0;
        ct_probe_loop(world, probe_size, probe_iters, 10, 0x5eed0004ULL, &wall, &med);
        if (rank == 0) {
            printf("{\"kind\": \"probe\", \"np\": %d, \"size\": %ld, \"iterations\": %ld, "
                   "\"iter_wall_us\": %.4f, \"median_us\": %.4f}\n",
                   nprocs, probe_size, probe_iters, wall * 1e6, med * 1e6);
            fflush(stdout);
        }
    }
    ct_coll_t coll;
    if (!coll_name) ct_die(rank, "--coll is required (bcast, reduce, gather, allgather, allreduce)");
    if (ct_coll_from_name(coll_name, &coll) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
    if (!algo_list) ct_die(rank, "--algo is required");
    MPI_Datatype dt;
    MPI_Op op;
    if (ct_dtype_from_name(dtype_name, &dt))
        ct_die(rank, "unknown --dtype '%s'; valid: char, int, float, double", dtype_name);
    if (ct_op_from_name(op_name, &op))
        ct_die(rank, "unknown --op '%s'; valid: sum, max, min, prod", op_name);
    if (!strcmp(timing_name, "osu")) timing = TIMING_OSU;
    else if (!strcmp(timing_name, "window")) timing = TIMING_WINDOW;
    else ct_die(rank, "unknown --timing '%s'; valid: osu, window", timing_name);
    if (reps < 1) ct_die(rank, "--reps %d: must be at least 1", reps);
    if (root < 0 || root >= nprocs)
        ct_die(rank, "--root %d: must be a rank of the %d processes", root, nprocs);
    if (budget_s > 0 && iterations > 0)
        ct_die(rank, "--time-budget and --iterations exclude each other");
    if (shared_bufs && validate)
        ct_die(rank, "--shared-buffers and --validate exclude each other (shared buffers "
                     "hold no meaningful data)");
    if (shared_bufs && ct_remap_shared_scratch(1) != MPI_SUCCESS)
        ct_die(rank, "--shared-buffers: %s", ct_last_error());
    if (sleep_s > 10) ct_die(rank, "--sleep %.0f us: at most 10 s", sleep_s * 1e6);
    if (align < 0) { /* not given: the page size, as OSU's buffers */
        long pg = sysconf(_SC_PAGESIZE);
        align = pg > 0 ? pg : 4096;
    }
    int tsize;
    MPI_Type_size(dt, &tsize);

    char **specs, **sizes_s;
    int ncand = ct_split_specs(algo_list, &specs);
    int nsizes = ct_split(size_list, &sizes_s);
    if (ncand < 1) ct_die(rank, "--algo names no algorithm");
    if (nsizes < 1) ct_die(rank, "--sizes names no size");
    candidate_t *cand = calloc((size_t)ncand, sizeof *cand);
    for (int k = 0; k < ncand; k++) {
        if (ct_choice_parse(coll, specs[k], &cand[k].choice) != MPI_SUCCESS)
            ct_die(rank, "%s", ct_last_error());
        ct_choice_format(&cand[k].choice, cand[k].spec, sizeof cand[k].spec);
        cand[k].given = specs[k];
        cand[k].native = !strcmp(ct_algo_get(cand[k].choice.algo)->name, "native");
    }
    int gathered = coll == CT_GATHER || coll == CT_ALLGATHER;
    long *sizes = malloc((size_t)nsizes * sizeof *sizes);
    long max_size = 0;
    for (int s = 0; s < nsizes; s++) {
        char *end;
        errno = 0;
        sizes[s] = strtol(sizes_s[s], &end, 10);
        if (end == sizes_s[s] || *end || sizes[s] < 0 || errno)
            ct_die(rank, "size '%s' is not a non-negative number of bytes", sizes_s[s]);
        if (sizes[s] % tsize)
            ct_die(rank, "size %ld B is not a multiple of the %s element (%d B)", sizes[s],
                   dtype_name, tsize);
        if (sizes[s] / tsize > INT_MAX)
            ct_die(rank, "size %ld B is %ld %s elements, more than an MPI count can hold (%d)",
                   sizes[s], sizes[s] / tsize, dtype_name, INT_MAX);
        if (gathered && (size_t)sizes[s] > SIZE_MAX / 4 / (size_t)nprocs)
            ct_die(rank, "size %ld B per process times %d processes does not fit in memory",
                   sizes[s], nprocs);
        if (sizes[s] > max_size) max_size = sizes[s];
    }

    /* buffers for the largest size; every process must have them, or all stop */
    size_t per = (size_t)max_size;
    size_t tot = coll == CT_BCAST ? 0 : per * (gathered ? (size_t)nprocs : 1); /* receive */
    size_t vref = !validate ? 0 : coll == CT_BCAST ? per : tot; /* MPI's own result */
    char *sbuf = alloc_buf(per ? per : 1), *rbuf = alloc_buf(tot ? tot : 1);
    char *ref = validate ? alloc_buf(vref ? vref : 1) : NULL;
    int have = sbuf && rbuf && (!validate || ref), all_have = 0, nmissing = 0;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, world);
    int missing = !have;
    MPI_Allreduce(&missing, &nmissing, 1, MPI_INT, MPI_SUM, world);
    if (!all_have) {
        char parts[160];
        if (coll == CT_BCAST) snprintf(parts, sizeof parts, "buffer %zu", per);
        else snprintf(parts, sizeof parts, "send %zu + receive %zu%s", per, tot,
                      gathered ? " (processes x size)" : "");
        if (validate)
            snprintf(parts + strlen(parts), sizeof parts - strlen(parts),
                     " + MPI's result for --validate %zu", vref);
        ct_die(rank,
               "cannot allocate the message buffers for size %ld B: %zu bytes per process "
               "needed (%s), failed on %d of %d processes; use smaller --sizes",
               max_size, per + tot + vref, parts, nmissing, nprocs);
    }
    /* touched before any timing: every page is mapped and in this process's memory */
    memset(sbuf, 1, per ? per : 1);
    memset(rbuf, 0, tot ? tot : 1);
    if (ref) memset(ref, 0, vref ? vref : 1);
    if (trace && rank == 0)
        fprintf(stderr, "buffers align=%ld sbuf=%p rbuf=%p\n", align, (void *)sbuf,
                (void *)rbuf);

    if (timing == TIMING_WINDOW) {
        /* first clock estimate (for the first window) and the barrier time */
        MPI_Barrier(world);
        double t0 = MPI_Wtime();
        for (int i = 0; i < 10; i++) MPI_Barrier(world);
        t_barrier = (MPI_Wtime() - t0) / 10;
        clock_sync();
    }

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    int nfailed = 0;
    for (int s = 0; s < nsizes; s++) {
        point_t p = { coll, dt, op, root, (int)(sizes[s] / tsize), tsize, sbuf, rbuf };
        long def_iters = iterations > 0 ? iterations : (sizes[s] <= 8192 ? 1000 : 100);
        for (int k = 0; k < ncand; k++) {
            candidate_t *c = &cand[k];
            c->nsamples = 0;
            c->invalid = 0;
            c->busy = 0;
            c->nbusy = 0;
            c->lsum = 0;
            c->ln = 0;
            c->valid = -1;
            c->fallback = 0;
        }
        for (int r = 0; r < reps; r++) {
            for (int k = 0; k < ncand; k++) {
                candidate_t *c = &cand[k];
                if (trace && rank == 0) /* the order points run in, for tests and doubts */
                    fprintf(stderr, "trace size=%ld rep=%d algo=%s\n", sizes[s], r, c->spec);
                if (r == 0) {
                    /* calibration: the window length, and the iteration count
                     * for a time budget (decided on rank 0, used by all) */
                    double per_call = 0;
                    if (timing == TIMING_WINDOW) {
                        window_estimate(&p, c);
                        per_call = c->w + sleep_s;
                    } else if (budget_s > 0) {
                        per_call = osu_calibrate(&p, c);
                    }
                    c->iters = def_iters;
                    if (budget_s > 0 && rank == 0)
                        c->iters = ct_budget_iterations(
                            budget_s, per_call, reps, warmup_opt,
                            timing == TIMING_WINDOW ? ITER_CAP_WINDOW : ITER_CAP_OSU);
                    MPI_Bcast(&c->iters, 1, MPI_LONG, 0, world);
                    c->warm = warmup_opt >= 0 ? warmup_opt : c->iters / 10;
                }
                /* rank 0's end of this repetition's share of a time budget */
                double deadline = budget_s > 0 ? MPI_Wtime() + budget_s / reps : 0;
                int rc = MPI_SUCCESS;
                /* warm-up: osu as OSU's skipped iterations (a barrier after each
                 * call), window back to back */
                if (prepare && s == 0 && r == 0 && !c->native) {
                    int reduces = coll == CT_REDUCE || coll == CT_ALLREDUCE;
                    check_rc(ct_comm_prepare(&c->choice, world, p.count,
                                             reduces ? op : MPI_OP_NULL), c);
                    MPI_Barrier(world);
                }
                long warm = warmup_once && (s > 0 || r > 0) ? 0 : c->warm;
                for (long it = 0; it < warm && rc == MPI_SUCCESS; it++) {
                    rc = run_once(&p, c);
                    if (timing == TIMING_OSU) MPI_Barrier(world);
                }
                check_rc(rc, c);
                if (timing == TIMING_WINDOW) window_block(&p, c, deadline);
                else osu_block(&p, c);
                note_fallback(c);
            }
        }
        for (int k = 0; k < ncand; k++) {
            candidate_t *c = &cand[k];
            double rmin = NAN, rmax = NAN;
            if (timing == TIMING_OSU) {
                /* OSU's Min/Max Latency: a process's mean time per call over all
                 * its timed calls, smallest and largest over processes */
                double mine = c->nbusy ? c->busy / (double)c->nbusy : NAN;
                MPI_Reduce(&mine, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, world);
                MPI_Reduce(&mine, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, world);
            } else {
                /* per process: mean duration of its own calls in valid samples */
                double mine = c->ln ? c->lsum / (double)c->ln : NAN, lo = mine, hi = mine;
                if (!c->ln) lo = INFINITY, hi = -INFINITY;
                MPI_Reduce(&lo, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, world);
                MPI_Reduce(&hi, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, world);
            }
            if (validate) {
                c->valid = validate_point(&p, c, ref, sizes[s]);
                nfailed += !c->valid;
                memset(sbuf, 1, per ? per : 1); /* timing data as before */
                memset(rbuf, 0, tot ? tot : 1);
            }
            if (rank == 0) print_record(&p, c, sizes[s], dtype_name, op_name, ver, raw, rmin, rmax);
        }
    }
    if (nfailed && rank == 0) {
        fprintf(stderr, "error: --validate: %d point(s) differ from the MPI library's "
                        "collective (listed above)\n", nfailed);
        fflush(stderr);
    }
    for (int k = 0; k < ncand; k++) free(cand[k].samples);
    free(cand);
    free(sizes);
    free_buf(sbuf);
    free_buf(rbuf);
    free_buf(ref);
    ct_free_list(specs, ncand);
    ct_free_list(sizes_s, nsizes);
    if (stop_comm != MPI_COMM_NULL) { /* the generator ranks stop after this */
        MPI_Request stop;
        MPI_Ibarrier(stop_comm, &stop);
        MPI_Wait(&stop, MPI_STATUS_IGNORE);
        MPI_Comm_free(&world);
        MPI_Comm_free(&stop_comm);
    }
    MPI_Finalize();
    return nfailed ? 1 : 0;
}
