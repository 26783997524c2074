/* bench_stats.c -- statistics and small estimators of colltune-bench (no MPI). */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ct_quantile_sorted(const double *sorted, int n, double q) {
    if (n < 1) return NAN;
    if (n == 1 || q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

int ct_stats_compute(const double *v, int n, ct_stats_t *st) {
    st->n = 0;
    st->min = st->max = st->mean = st->median = st->p90 = st->p99 = st->stddev = NAN;
    if (n < 1) return 0;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return -1;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    double mean = sum / n, var = 0;
    for (int i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
    st->n = n;
    st->min = s[0];
    st->max = s[n - 1];
    st->mean = mean;
    st->median = ct_quantile_sorted(s, n, 0.5);
    st->p90 = ct_quantile_sorted(s, n, 0.9);
    st->p99 = ct_quantile_sorted(s, n, 0.99);
    st->stddev = n > 1 ? sqrt(var / (n - 1)) : 0;
    free(s);
    return 0;
}

int ct_clock_offset(const double *t0, const double *tr, const double *t1, int n,
                    double *offset, double *rtt) {
    int best = -1;
    for (int k = 0; k < n; k++)
        if (best < 0 || t1[k] - t0[k] < t1[best] - t0[best]) best = k;
    if (best < 0) return -1;
    *rtt = t1[best] - t0[best];
    *offset = tr[best] - (t0[best] + t1[best]) / 2;
    return best;
}

long ct_budget_iterations(double budget_s, double per_call_s, int reps, long warmup, long cap) {
    if (cap < 1) cap = 1;
    if (!(budget_s > 0) || reps < 1) return 1;
    if (!(per_call_s > 0)) return cap;
    /* reps * (iters + warm) * per_call = budget */
    double per_rep = budget_s / reps / per_call_s;
    double iters = warmup >= 0 ? per_rep - (double)warmup : per_rep / 1.1;
    if (!(iters >= 1)) return 1;
    if (iters >= (double)cap) return cap;
    return (long)iters;
}
