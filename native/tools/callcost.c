/*
 * callcost.c -- colltune-callcost: the software cost of one collective call, as
 * a tight loop (no barrier, no timer between calls). benchmarks/pmpi_overhead.py
 * --tight runs it; at one process there is no communication at all, so what is
 * left is the price of the call path: argument checks, lookup, dispatch.
 *
 *   colltune-callcost --coll C [--sizes LIST] [--calls N] [--reps R]
 *                     [--via mpi|ct|both] [--algo SPEC]
 *
 * --via mpi   calls MPI_<Coll> (the interposition library's, when preloaded)
 * --via ct    calls ct_<coll>() with --algo (default native): colltune's
 *             dispatcher and algorithm, called directly
 * --via both  both, alternating repetitions in the one process (no launch to
 *             launch noise): prints both fastest repetitions and the ratios
 *             ct/mpi of the pairs (median, min, max)
 * Bcast and Allgather move MPI_CHAR, Reduce and Allreduce MPI_DOUBLE with
 * MPI_SUM (size / 8 elements, at least 1); root 0.
 *
 * Per size: R repetitions of N calls, each repetition timed as a whole (the
 * slowest rank's time); rank 0 prints one JSON object per size with the fastest
 * and the median repetition in ns per call.
 */
#include "colltune.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int run_loop(ct_coll_t coll, int use_ct, const ct_choice_t *choice, long calls,
                    char *sbuf, char *rbuf, int count, MPI_Datatype dt) {
    int rc = MPI_SUCCESS;
    for (long k = 0; k < calls && rc == MPI_SUCCESS; k++) {
        switch (coll) {
        case CT_BCAST:
            rc = use_ct ? ct_bcast(choice, sbuf, count, dt, 0, MPI_COMM_WORLD)
                        : MPI_Bcast(sbuf, count, dt, 0, MPI_COMM_WORLD);
            break;
        case CT_REDUCE:
            rc = use_ct ? ct_reduce(choice, sbuf, rbuf, count, dt, MPI_SUM, 0, MPI_COMM_WORLD)
                        : MPI_Reduce(sbuf, rbuf, count, dt, MPI_SUM, 0, MPI_COMM_WORLD);
            break;
        case CT_ALLGATHER:
            rc = use_ct ? ct_allgather(choice, sbuf, count, dt, rbuf, count, dt, MPI_COMM_WORLD)
                        : MPI_Allgather(sbuf, count, dt, rbuf, count, dt, MPI_COMM_WORLD);
            break;
        default:
            rc = use_ct ? ct_allreduce(choice, sbuf, rbuf, count, dt, MPI_SUM, MPI_COMM_WORLD)
                        : MPI_Allreduce(sbuf, rbuf, count, dt, MPI_SUM, MPI_COMM_WORLD);
            break;
        }
    }
    return rc;
}

/* ns per call of one repetition: the slowest rank's time */
static int timed(ct_coll_t coll, int use_ct, const ct_choice_t *choice, long calls, char *sbuf,
                 char *rbuf, int count, MPI_Datatype dt, double *ns) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = run_loop(coll, use_ct, choice, calls, sbuf, rbuf, count, dt);
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *ns = slowest * 1e9 / (double)calls;
    return rc;
}

int main(int argc, char **argv) {
    const char *coll_name = NULL, *sizes = "8,65536", *via = "mpi", *algo = "native";
    long calls = 100000, reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--coll") && v) coll_name = argv[++i];
        else if (!strcmp(a, "--sizes") && v) sizes = argv[++i];
        else if (!strcmp(a, "--calls") && v) calls = atol(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atol(argv[++i]);
        else if (!strcmp(a, "--via") && v) via = argv[++i];
        else if (!strcmp(a, "--algo") && v) algo = argv[++i];
        else {
            fprintf(stderr, "usage: colltune-callcost --coll bcast|reduce|allgather|allreduce "
                            "[--sizes LIST] [--calls N] [--reps R] [--via mpi|ct|both] "
                            "[--algo SPEC]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    ct_coll_t coll;
    ct_choice_t choice;
    int both = !strcmp(via, "both"), use_ct = both || !strcmp(via, "ct");
    if (!coll_name || ct_coll_from_name(coll_name, &coll) != MPI_SUCCESS ||
        coll == CT_GATHER || (strcmp(via, "mpi") && !use_ct) ||
        (use_ct && ct_choice_parse(coll, algo, &choice) != MPI_SUCCESS) || calls < 1 ||
        reps < 1) {
        if (rank == 0) fprintf(stderr, "colltune-callcost: bad arguments: %s\n", ct_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *t = malloc(sizeof(double) * (size_t)reps);
    double *t2 = malloc(sizeof(double) * (size_t)reps);
    double *ratio = malloc(sizeof(double) * (size_t)reps);
    char *list = strdup(sizes);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long bytes = strtol(tok, NULL, 10);
        if (strchr(tok, 'K') || strchr(tok, 'k')) bytes *= 1024;
        int dbl = coll == CT_REDUCE || coll == CT_ALLREDUCE;
        int count = dbl ? (int)(bytes / 8 > 0 ? bytes / 8 : 1) : (int)bytes;
        MPI_Datatype dt = dbl ? MPI_DOUBLE : MPI_CHAR;
        size_t esz = dbl ? 8 : 1;
        char *sbuf = calloc((size_t)count * (size_t)np + 1, esz);
        char *rbuf = calloc((size_t)count * (size_t)np + 1, esz);
        int rc = MPI_SUCCESS;
        double ns;
        for (long r = -1; r < reps && rc == MPI_SUCCESS; r++) { /* r == -1: warm-up */
            if (both) { /* the library's own and ours, alternating */
                rc = timed(coll, 0, &choice, calls, sbuf, rbuf, count, dt, &ns);
                if (r >= 0) t2[r] = ns;
            }
            if (rc == MPI_SUCCESS) rc = timed(coll, use_ct, &choice, calls, sbuf, rbuf, count,
                                              dt, &ns);
            if (r >= 0) t[r] = ns;
            if (r >= 0 && both) ratio[r] = t[r] / t2[r];
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "colltune-callcost: rank %d: %s\n", rank, ct_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        if (both) {
            qsort(t2, (size_t)reps, sizeof *t2, cmp_double);
            qsort(ratio, (size_t)reps, sizeof *ratio, cmp_double);
            if (rank == 0)
                printf("{\"coll\": \"%s\", \"size\": %ld, \"np\": %d, \"via\": \"both\", "
                       "\"algo\": \"%s\", \"calls\": %ld, \"mpi_ns_min\": %.2f, "
                       "\"ct_ns_min\": %.2f, \"ratio_median\": %.4f, \"ratio_min\": %.4f, "
                       "\"ratio_max\": %.4f}\n", coll_name, bytes, np, algo, calls, t2[0], t[0],
                       ratio[reps / 2], ratio[0], ratio[reps - 1]);
        } else if (rank == 0)
            printf("{\"coll\": \"%s\", \"size\": %ld, \"np\": %d, \"via\": \"%s\", "
                   "\"algo\": \"%s\", \"calls\": %ld, \"ns_min\": %.2f, \"ns_median\": %.2f}\n",
                   coll_name, bytes, np, via, use_ct ? algo : "-", calls, t[0],
                   t[reps / 2]);
        fflush(stdout);
        free(sbuf);
        free(rbuf);
    }
    free(list);
    free(t);
    free(t2);
    free(ratio);
    MPI_Finalize();
    return 0;
}
