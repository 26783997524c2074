/*
 * bench.c -- colltune-bench: latency of collective algorithms.
 *
 * Timing (method "osu", as the OSU Micro-Benchmarks): per point, warm-up
 * iterations, then `iterations` calls, each timed alone with an untimed
 * barrier after it; each process's mean time per call is one sample; across processes min / mean / max as OSU
 * prints them. Repetitions (--reps) repeat this; the algorithms of one
 * collective run interleaved (A B C A B C ...) within each repetition and
 * size, so drift of a noisy machine does not favour one of them. Statistics
 * over repetitions use, per repetition, the mean over processes (OSU's
 * "Avg Latency").
 *
 * Output: one JSON object per (size, algorithm) on stdout from rank 0.
 */
#include "driver_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

typedef struct {
    ct_choice_t choice;
    char spec[256];     /* canonical: name and every parameter value */
    const char *given;  /* as the user wrote it */
    double *rep_mean; /* per repetition: mean over processes of per-call time (s) */
    double min_rank, max_rank;
    int fallback;
    char fallback_reason[160];
} candidate_t;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile by linear interpolation of sorted values. */
static double quantile(const double *sorted, int n, double q) {
    if (n == 1) return sorted[0];
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

static void usage(void) {
    printf("usage: colltune-bench --coll C --algo LIST [--sizes LIST] [--iterations N]\n"
           "                      [--warmup N] [--reps R] [--root R] [--dtype T] [--op O]\n\n"
           "  --coll        bcast | reduce | gather | allgather | allreduce\n"
           "  --algo        comma-separated algorithm specs, e.g. native,binomial,chain:fanout=2\n"
           "  --sizes       message sizes in bytes (default 8,65536,1048576); for gather and\n"
           "                allgather: bytes per process\n"
           "  --iterations  timed calls per point (default 1000 up to 8 KiB, 100 above)\n"
           "  --warmup      untimed calls first (default iterations/10)\n"
           "  --reps        repetitions, interleaved across algorithms (default 3)\n"
           "  --dtype       char | int | float | double (default char)\n"
           "  --op          sum | max | min | prod (default sum)\n");
}

static int run_once(ct_coll_t coll, const ct_choice_t *c, void *sbuf, void *rbuf, int count,
                    MPI_Datatype dt, MPI_Op op, int root) {
    switch (coll) {
    case CT_BCAST: return ct_bcast(c, sbuf, count, dt, root, MPI_COMM_WORLD);
    case CT_REDUCE: return ct_reduce(c, sbuf, rbuf, count, dt, op, root, MPI_COMM_WORLD);
    case CT_GATHER: return ct_gather(c, sbuf, count, dt, rbuf, count, dt, root, MPI_COMM_WORLD);
    case CT_ALLGATHER: return ct_allgather(c, sbuf, count, dt, rbuf, count, dt, MPI_COMM_WORLD);
    case CT_ALLREDUCE: return ct_allreduce(c, sbuf, rbuf, count, dt, op, MPI_COMM_WORLD);
    default: return MPI_ERR_ARG;
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    const char *coll_name = NULL, *algo_list = NULL, *size_list = "8,65536,1048576";
    const char *dtype_name = "char", *op_name = "sum";
    long iterations = -1, warmup = -1;
    int reps = 3, root = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--coll")) coll_name = v;
        else if (!strcmp(a, "--algo")) algo_list = v;
        else if (!strcmp(a, "--sizes")) size_list = v;
        else if (!strcmp(a, "--iterations")) iterations = atol(v);
        else if (!strcmp(a, "--warmup")) warmup = atol(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--root")) root = atoi(v);
        else if (!strcmp(a, "--dtype")) dtype_name = v;
        else if (!strcmp(a, "--op")) op_name = v;
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
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
    if (reps < 1) ct_die(rank, "--reps %d: must be at least 1", reps);
    if (root < 0 || root >= nprocs)
        ct_die(rank, "--root %d: must be a rank of the %d processes", root, nprocs);
    int tsize;
    MPI_Type_size(dt, &tsize);

    char **specs, **sizes_s;
    int ncand = ct_split_specs(algo_list, &specs);
    int nsizes = ct_split(size_list, &sizes_s);
    candidate_t *cand = calloc((size_t)ncand, sizeof *cand);
    for (int k = 0; k < ncand; k++) {
        if (ct_choice_parse(coll, specs[k], &cand[k].choice) != MPI_SUCCESS)
            ct_die(rank, "%s", ct_last_error());
        ct_choice_format(&cand[k].choice, cand[k].spec, sizeof cand[k].spec);
        cand[k].given = specs[k];
        cand[k].rep_mean = calloc((size_t)reps, sizeof(double));
    }
    long *sizes = malloc((size_t)nsizes * sizeof *sizes);
    long max_size = 0;
    for (int s = 0; s < nsizes; s++) {
        char *end;
        sizes[s] = strtol(sizes_s[s], &end, 10);
        if (*end || sizes[s] < 0)
            ct_die(rank, "size '%s' is not a non-negative number of bytes", sizes_s[s]);
        if (sizes[s] % tsize)
            ct_die(rank, "size %ld B is not a multiple of the %s element (%d B)", sizes[s],
                   dtype_name, tsize);
        if (sizes[s] > max_size) max_size = sizes[s];
    }
    size_t per = (size_t)max_size, tot = per * ((coll == CT_GATHER || coll == CT_ALLGATHER)
                                                    ? (size_t)nprocs : 1);
    char *sbuf = malloc(per ? per : 1), *rbuf = malloc(tot ? tot : 1);
    if (!sbuf || !rbuf)
        ct_die(rank, "cannot allocate %zu + %zu bytes of message buffers", per, tot);
    memset(sbuf, 1, per ? per : 1);
    memset(rbuf, 0, tot ? tot : 1);

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    for (int s = 0; s < nsizes; s++) {
        int count = (int)(sizes[s] / tsize);
        long iters = iterations > 0 ? iterations : (sizes[s] <= 8192 ? 1000 : 100);
        long warm = warmup >= 0 ? warmup : iters / 10;
        for (int k = 0; k < ncand; k++) {
            cand[k].min_rank = 1e30;
            cand[k].max_rank = 0;
            cand[k].fallback = 0;
        }
        for (int r = 0; r < reps; r++) {
            for (int k = 0; k < ncand; k++) {
                candidate_t *c = &cand[k];
                int rc = MPI_SUCCESS;
                for (long it = 0; it < warm && rc == MPI_SUCCESS; it++)
                    rc = run_once(coll, &c->choice, sbuf, rbuf, count, dt, op, root);
                /* as OSU: each call timed alone, a barrier (not timed) between calls */
                double busy = 0;
                MPI_Barrier(MPI_COMM_WORLD);
                for (long it = 0; it < iters && rc == MPI_SUCCESS; it++) {
                    double t0 = MPI_Wtime();
                    rc = run_once(coll, &c->choice, sbuf, rbuf, count, dt, op, root);
                    busy += MPI_Wtime() - t0;
                    MPI_Barrier(MPI_COMM_WORLD);
                }
                double mine = busy / (double)iters;
                if (rc != MPI_SUCCESS) ct_die(rank, "%s failed: %s", c->spec, ct_last_error());
                const ct_dispatch_t *d = ct_last_dispatch();
                if (d->reason[0]) {
                    c->fallback = 1;
                    snprintf(c->fallback_reason, sizeof c->fallback_reason, "%s", d->reason);
                }
                double sum, mn, mx;
                MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                MPI_Reduce(&mine, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
                MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    c->rep_mean[r] = sum / nprocs;
                    if (mn < c->min_rank) c->min_rank = mn;
                    if (mx > c->max_rank) c->max_rank = mx;
                }
            }
        }
        if (rank != 0) continue;
        for (int k = 0; k < ncand; k++) {
            candidate_t *c = &cand[k];
            double *v = malloc((size_t)reps * sizeof(double));
            memcpy(v, c->rep_mean, (size_t)reps * sizeof(double));
            qsort(v, (size_t)reps, sizeof(double), cmp_double);
            double mean = 0, var = 0;
            for (int r = 0; r < reps; r++) mean += v[r];
            mean /= reps;
            for (int r = 0; r < reps; r++) var += (v[r] - mean) * (v[r] - mean);
            double sd = reps > 1 ? sqrt(var / (reps - 1)) : 0;
            const ct_algo_t *a = ct_algo_get(c->choice.algo);
            const char *params = strchr(c->spec, ':');
            printf("{\"collective\": \"%s\", \"algorithm\": ", ct_coll_name(coll));
            ct_json_str(stdout, a->name);
            printf(", \"params\": ");
            ct_json_str(stdout, params ? params + 1 : "");
            printf(", \"spec\": ");
            ct_json_str(stdout, c->given);
            printf(", \"np\": %d, \"size\": %ld, \"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
                   "\"iterations\": %ld, \"warmup\": %ld, \"timing\": \"osu\", "
                   "\"min_us\": %.3f, \"mean_us\": %.3f, \"median_us\": %.3f, \"p90_us\": %.3f, "
                   "\"p99_us\": %.3f, \"max_us\": %.3f, \"stddev_us\": %.3f, \"valid_reps\": %d, "
                   "\"rank_min_us\": %.3f, \"rank_max_us\": %.3f, \"fallback\": ",
                   nprocs, sizes[s], dtype_name, op_name, root, iters, warm, v[0] * 1e6,
                   mean * 1e6, quantile(v, reps, 0.5) * 1e6, quantile(v, reps, 0.9) * 1e6,
                   quantile(v, reps, 0.99) * 1e6, v[reps - 1] * 1e6, sd * 1e6, reps,
                   c->min_rank * 1e6, c->max_rank * 1e6);
            if (c->fallback) ct_json_str(stdout, c->fallback_reason);
            else fputs("null", stdout);
            printf(", \"mpi\": ");
            ct_json_str(stdout, ver);
            printf("}\n");
            fflush(stdout);
            free(v);
        }
    }
    for (int k = 0; k < ncand; k++) free(cand[k].rep_mean);
    free(cand);
    free(sizes);
    free(sbuf);
    free(rbuf);
    ct_free_list(specs, ncand);
    ct_free_list(sizes_s, nsizes);
    MPI_Finalize();
    return 0;
}
