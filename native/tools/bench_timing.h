/* bench_timing.h -- colltune-bench's measurement (bench_timing.c), driven by
 * bench.c. */
#ifndef CT_BENCH_TIMING_H
#define CT_BENCH_TIMING_H

#include "driver_common.h"

enum { TIMING_OSU, TIMING_WINDOW };

/* One algorithm being measured. */
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
    MPI_Comm comm;      /* --lib: the communicator made under its MPI_T control variables
                         * (runs the library's algorithm they force); else MPI_COMM_NULL */
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

/* Before any of the below (after MPI_Init and any --load-ranks split): the
 * measured processes, --sleep and --time-budget in seconds (0: none). */
void bench_timing_init(MPI_Comm measured, double sleep_seconds, double budget_seconds);

/* One untimed call of candidate c at point p. */
int bench_call(const point_t *p, const candidate_t *c);
/* ct_die with the candidate's error unless rc is MPI_SUCCESS. */
void check_rc(int rc, const candidate_t *c);
/* Record the dispatcher's fallback of c's last call, if any. */
void note_fallback(candidate_t *c);

/* osu: one timed loop of c->iters calls (rank 0 keeps a sample); rank 0's time per
 * iteration from a calibration within the time budget. */
void osu_block(const point_t *p, candidate_t *c);
double osu_calibrate(const point_t *p, candidate_t *c);

/* window: the barrier time and a first clock synchronisation; c's first window at
 * this point; c->iters samples (ending early on rank 0 once deadline has passed). */
void window_setup(void);
void window_estimate(const point_t *p, candidate_t *c);
void window_block(const point_t *p, candidate_t *c, double deadline);

/* --validate: one call and one of the MPI library's collective on the same
 * rank-dependent input (ref: a buffer of the output's size); 1 on every rank if
 * all agree. */
int validate_point(const point_t *p, candidate_t *c, char *ref, long size);

#endif
