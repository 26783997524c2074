/*
 * bench_stats.h -- the arithmetic of colltune-bench, kept free of MPI so that
 * colltune-selftest can check it on synthetic timings: statistics of a set of
 * samples, the clock-offset estimate of one ping-pong series, and the
 * iteration count that fills a time budget.
 */
#ifndef CT_BENCH_STATS_H
#define CT_BENCH_STATS_H

/* Statistics of n samples (seconds or any unit; the unit is kept). */
typedef struct {
    int n;               /* samples used; 0: every other field is NaN  */
    double min, max;
    double mean;
    double median, p90, p99; /* quantiles, linear interpolation          */
    double stddev;       /* sample standard deviation (divisor n-1), 0 if n == 1 */
} ct_stats_t;

/* Quantile q (0..1) of n >= 1 values sorted ascending: linear interpolation
 * between the two closest ranks, position q * (n - 1). */
double ct_quantile_sorted(const double *sorted, int n, double q);

/* Statistics of v[0..n-1] (any order; v is not modified). Returns 0, or -1
 * if memory for the sorted copy could not be allocated (st->n is then 0). */
int ct_stats_compute(const double *v, int n, ct_stats_t *st);

/* Clock offset from n ping-pong rounds with a reference process: round k sent
 * at t0[k] and answered at t1[k] (reference clock), the peer read its clock
 * at tr[k] in between. The round with the smallest round-trip time is used:
 * offset = tr - (t0 + t1) / 2 (peer clock minus reference clock), with an
 * uncertainty of at most half that round trip. Returns the round used, or -1
 * if n < 1. */
int ct_clock_offset(const double *t0, const double *tr, const double *t1, int n,
                    double *offset, double *rtt);

/* Timed calls per repetition that fill budget_s over reps repetitions when one
 * call (with whatever surrounds it in the timed loop) costs per_call_s and
 * each repetition also runs warm-up calls: warmup of them if warmup >= 0,
 * else a tenth of the timed calls (the driver's default). The result is
 * clamped to 1..cap. */
long ct_budget_iterations(double budget_s, double per_call_s, int reps, long warmup, long cap);

#endif
