/*
 * bench_timing.c -- colltune-bench's measurement: one call of a candidate (the
 * MPI library's collective for `native`, colltune's dispatcher otherwise), the
 * timed loops of the osu and window methods, the window method's clock
 * synchronisation, and --validate's comparison with the MPI library. bench.c
 * describes both methods and drives them.
 */
#include "bench_timing.h"
#include "bench_stats.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
#define WIN_SPIN_MAX_S 0.05     /* ... a margin that grows with the oversleep seen   */
#define WIN_EST_CALLS 5         /* calls timed to choose the first window           */
/* --time-budget */
#define CAL_FRACTION 0.05       /* of the budget spent calibrating (osu)            */
#define CAL_MAX_S 0.5

/* set by bench_timing_init */
static int rank, nprocs; /* in world */
static MPI_Comm world;   /* the measured processes */
static double sleep_s;   /* --sleep */
static double budget_s;  /* --time-budget, 0 if none */

/* clocks (window) */
static double clk_offset;     /* this rank's clock minus rank 0's */
static double clk_err;        /* rank 0: largest offset uncertainty over ranks */
static double t_barrier;      /* rank 0: mean barrier time */
/* How close to a window's start a waiting rank stops sleeping and spins: at least
 * WIN_SPIN_S, and twice the largest oversleep this rank has seen (a virtual CPU
 * woken from idle can take a millisecond), so that sleeping never makes it late. */
static double spin_s = WIN_SPIN_S;

void bench_timing_init(MPI_Comm measured, double sleep_seconds, double budget_seconds) {
    world = measured;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &nprocs);
    sleep_s = sleep_seconds;
    budget_s = budget_seconds;
}

/* Alltoallv's (and Allgatherv's, Gatherv's, Scatterv's) arguments at one point: `count`
 * elements for every peer, blocks side by side (what osu_alltoallv, osu_allgatherv,
 * osu_gatherv and osu_scatterv measure); made
 * once per count. Reduce_scatter uses the counts: `count` elements for every rank. */
static int *vcounts, *vdispls, vcount = -1;
static void v_args(int count) {
    if (count == vcount) return;
    if (!vcounts) {
        vcounts = malloc((size_t)nprocs * sizeof *vcounts);
        vdispls = malloc((size_t)nprocs * sizeof *vdispls);
        if (!vcounts || !vdispls) ct_die(rank, "alltoallv: out of memory");
    }
    for (int j = 0; j < nprocs; j++) {
        vcounts[j] = count;
        vdispls[j] = j * count;
    }
    vcount = count;
}

/* The MPI library's own collective, called directly (what `native` times), on `world`
 * or on a library algorithm's own communicator (candidate_t.comm, bench.c --lib). */
static int run_mpi(const point_t *p, MPI_Comm comm) {
    switch (p->coll) {
    case CT_BCAST: return MPI_Bcast(p->sbuf, p->count, p->dt, p->root, comm);
    case CT_REDUCE:
        return MPI_Reduce(p->sbuf, p->rbuf, p->count, p->dt, p->op, p->root, comm);
    case CT_GATHER:
        return MPI_Gather(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, p->root,
                          comm);
    case CT_ALLGATHER:
        return MPI_Allgather(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt,
                             comm);
    case CT_ALLREDUCE:
        return MPI_Allreduce(p->sbuf, p->rbuf, p->count, p->dt, p->op, comm);
    case CT_ALLTOALL:
        return MPI_Alltoall(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, comm);
    case CT_ALLTOALLV:
        v_args(p->count);
        return MPI_Alltoallv(p->sbuf, vcounts, vdispls, p->dt, p->rbuf, vcounts, vdispls,
                             p->dt, comm);
    case CT_SCATTER:
        return MPI_Scatter(p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, p->root, comm);
    case CT_BARRIER: return MPI_Barrier(comm);
    case CT_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(p->sbuf, p->rbuf, p->count, p->dt, p->op, comm);
    case CT_REDUCE_SCATTER:
        v_args(p->count);
        return MPI_Reduce_scatter(p->sbuf, p->rbuf, vcounts, p->dt, p->op, comm);
    case CT_ALLGATHERV:
        v_args(p->count);
        return MPI_Allgatherv(p->sbuf, p->count, p->dt, p->rbuf, vcounts, vdispls, p->dt,
                              comm);
    case CT_GATHERV:
        v_args(p->count);
        return MPI_Gatherv(p->sbuf, p->count, p->dt, p->rbuf, vcounts, vdispls, p->dt, p->root,
                           comm);
    case CT_SCATTERV:
        v_args(p->count);
        return MPI_Scatterv(p->sbuf, vcounts, vdispls, p->dt, p->rbuf, p->count, p->dt, p->root,
                            comm);
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
    case CT_ALLTOALL:
        return ct_alltoall(c, p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, world);
    case CT_ALLTOALLV:
        v_args(p->count);
        return ct_alltoallv(c, p->sbuf, vcounts, vdispls, p->dt, p->rbuf, vcounts, vdispls,
                            p->dt, world);
    case CT_SCATTER:
        return ct_scatter(c, p->sbuf, p->count, p->dt, p->rbuf, p->count, p->dt, p->root,
                          world);
    case CT_BARRIER: return ct_barrier(c, world);
    case CT_REDUCE_SCATTER_BLOCK:
        return ct_reduce_scatter_block(c, p->sbuf, p->rbuf, p->count, p->dt, p->op, world);
    case CT_REDUCE_SCATTER:
        v_args(p->count);
        return ct_reduce_scatter(c, p->sbuf, p->rbuf, vcounts, p->dt, p->op, world);
    case CT_ALLGATHERV:
        v_args(p->count);
        return ct_allgatherv(c, p->sbuf, p->count, p->dt, p->rbuf, vcounts, vdispls, p->dt,
                             world);
    case CT_GATHERV:
        v_args(p->count);
        return ct_gatherv(c, p->sbuf, p->count, p->dt, p->rbuf, vcounts, vdispls, p->dt, p->root,
                          world);
    case CT_SCATTERV:
        v_args(p->count);
        return ct_scatterv(c, p->sbuf, vcounts, vdispls, p->dt, p->rbuf, p->count, p->dt, p->root,
                           world);
    default: return MPI_ERR_ARG;
    }
}

/* One call of a candidate: `native` straight to the MPI library, the others
 * through colltune's dispatcher. */
static inline int run_once(const point_t *p, const candidate_t *c) {
    return c->native ? run_mpi(p, c->comm != MPI_COMM_NULL ? c->comm : world)
                     : run_choice(p, &c->choice);
}

int bench_call(const point_t *p, const candidate_t *c) { return run_once(p, c); }

void check_rc(int rc, const candidate_t *c) {
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

void note_fallback(candidate_t *c) {
    if (c->native) return; /* not dispatched: the last dispatch record is another's */
    const ct_dispatch_t *d = ct_last_dispatch();
    if (d->reason[0]) {
        c->fallback = 1;
        snprintf(c->fallback_reason, sizeof c->fallback_reason, "%s", d->reason);
    }
}

/* ---- osu ------------------------------------------------------------------ */

/* One timed loop; rank 0 keeps the mean over processes as one sample. */
void osu_block(const point_t *p, candidate_t *c) {
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
double osu_calibrate(const point_t *p, candidate_t *c) {
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

void window_setup(void) {
    /* first clock estimate (for the first window) and the barrier time */
    MPI_Barrier(world);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 10; i++) MPI_Barrier(world);
    t_barrier = (MPI_Wtime() - t0) / 10;
    clock_sync();
}

/* First window length of a candidate at this point (rank 0): twice the
 * slowest rank's median call time plus twice the clock uncertainty. */
void window_estimate(const point_t *p, candidate_t *c) {
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
void window_block(const point_t *p, candidate_t *c, double deadline) {
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
            if (start - now > 2 * spin_s) { /* long wait: sleep, then spin */
                double wake = start - spin_s;
                pause_for(wake - now);
                now = gnow();
                if (2 * (now - wake) > spin_s) /* overslept: spin earlier from now on */
                    spin_s = 2 * (now - wake) < WIN_SPIN_MAX_S ? 2 * (now - wake) : WIN_SPIN_MAX_S;
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
    static const char *names[] = { "MPI_Bcast",     "MPI_Reduce",   "MPI_Gather",
                                   "MPI_Allgather", "MPI_Allreduce", "MPI_Alltoall",
                                   "MPI_Alltoallv", "MPI_Scatter",   "MPI_Barrier",
                                   "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
                                   "MPI_Allgatherv", "MPI_Gatherv", "MPI_Scatterv" };
    return (unsigned)coll < sizeof names / sizeof *names ? names[coll] : "?";
}

/* One call of the candidate and one of the MPI library's collective on the
 * same rank-dependent input; returns 1 on every rank if all results agree. */
int validate_point(const point_t *p, candidate_t *c, char *ref, long size) {
    size_t bytes = (size_t)p->count * (size_t)p->tsize;
    const int a2a = p->coll == CT_ALLTOALL || p->coll == CT_ALLTOALLV;
    const int rs = p->coll == CT_REDUCE_SCATTER_BLOCK || p->coll == CT_REDUCE_SCATTER;
    const int sends_p = a2a || rs || p->coll == CT_SCATTER ||
                        p->coll == CT_SCATTERV; /* the send buffer: p blocks */
    size_t outb = (p->coll == CT_GATHER || p->coll == CT_ALLGATHER || a2a ||
                   p->coll == CT_ALLGATHERV || p->coll == CT_GATHERV)
                      ? bytes * (size_t)nprocs : bytes;
    int kind = V_DATA;
    if (p->coll == CT_REDUCE || p->coll == CT_ALLREDUCE || rs)
        kind = p->op == MPI_SUM ? V_SUM : p->op == MPI_PROD ? V_PROD : V_DATA;
    int rc, rrc, ok = 1;
    if (p->coll == CT_BARRIER) { /* no data: both calls must succeed */
        rc = ct_barrier(&c->choice, world);
        rrc = MPI_Barrier(world);
    } else if (p->coll == CT_BCAST) {
        if (rank == p->root) fill_values(p->sbuf, p->count, p->dt, rank, kind);
        else memset(p->sbuf, 0x5a, bytes);
        memcpy(ref, p->sbuf, bytes);
        rc = ct_bcast(&c->choice, p->sbuf, p->count, p->dt, p->root, world);
        rrc = MPI_Bcast(ref, p->count, p->dt, p->root, world);
        ok = memcmp(p->sbuf, ref, bytes) == 0;
    } else {
        fill_values(p->sbuf, sends_p ? p->count * nprocs : p->count, p->dt, rank, kind);
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
        case CT_ALLTOALL:
            rrc = MPI_Alltoall(p->sbuf, p->count, p->dt, ref, p->count, p->dt, world);
            break;
        case CT_ALLTOALLV:
            v_args(p->count);
            rrc = MPI_Alltoallv(p->sbuf, vcounts, vdispls, p->dt, ref, vcounts, vdispls,
                                p->dt, world);
            break;
        case CT_ALLGATHERV:
            v_args(p->count);
            rrc = MPI_Allgatherv(p->sbuf, p->count, p->dt, ref, vcounts, vdispls, p->dt, world);
            break;
        case CT_SCATTER:
            rrc = MPI_Scatter(p->sbuf, p->count, p->dt, ref, p->count, p->dt, p->root, world);
            break;
        case CT_GATHERV:
            v_args(p->count);
            rrc = MPI_Gatherv(p->sbuf, p->count, p->dt, ref, vcounts, vdispls, p->dt, p->root,
                              world);
            break;
        case CT_SCATTERV:
            v_args(p->count);
            rrc = MPI_Scatterv(p->sbuf, vcounts, vdispls, p->dt, ref, p->count, p->dt, p->root,
                               world);
            break;
        case CT_REDUCE_SCATTER_BLOCK:
            rrc = MPI_Reduce_scatter_block(p->sbuf, ref, p->count, p->dt, p->op, world);
            break;
        case CT_REDUCE_SCATTER:
            v_args(p->count);
            rrc = MPI_Reduce_scatter(p->sbuf, ref, vcounts, p->dt, p->op, world);
            break;
        default:
            rrc = MPI_Allreduce(p->sbuf, ref, p->count, p->dt, p->op, world);
            break;
        }
        int rooted = p->coll == CT_REDUCE || p->coll == CT_GATHER || p->coll == CT_GATHERV;
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
