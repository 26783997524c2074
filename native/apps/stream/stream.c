/*
 * stream.c -- colltune-stream: memory bandwidth with a STREAM-style triad.
 *
 * Every MPI rank owns three arrays of --elements doubles (default 2^24, i.e.
 * 128 MiB each, far larger than any cache) and runs the triad
 *     a[i] = b[i] + s * c[i]
 * on them, all ranks at the same time. Each repetition starts after a barrier;
 * its time is the slowest rank's (MPI_Allreduce MAX), so the aggregate
 * bandwidth of a repetition is
 *     np * elements * 24 bytes / time
 * counting 3 arrays x 8 bytes per element (2 reads, 1 write), the STREAM
 * convention. CPUs with write-allocate caches also read a[] before writing
 * it, moving 32 bytes per element; that figure is reported too. One untimed
 * repetition first (page faults, first touch); the best (shortest) of the
 * timed repetitions is reported, as STREAM does. The result of the triad is
 * checked, so the compiler cannot drop it.
 *
 * Output: one JSON line on rank 0 ("kind": "stream").
 */
#include "driver_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void usage(void) {
    printf("usage: colltune-stream [--elements N] [--reps R]\n\n"
           "  --elements  doubles per array per rank (3 arrays; default 16777216 = 128 MiB)\n"
           "  --reps      timed repetitions, the best is reported (default 10)\n");
}

/* kept out of line so that every repetition really runs the loop */
__attribute__((noinline)) static void triad(double *restrict a, const double *restrict b,
                                            const double *restrict c, double s, long n) {
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);

    long n = 1L << 24, reps = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--elements")) n = ct_parse_long(rank, a, v, 1, 1L << 34);
        else if (!strcmp(a, "--reps")) reps = ct_parse_long(rank, a, v, 1, 100000);
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }

    size_t bytes = (size_t)n * sizeof(double);
    size_t alloc = (bytes + 63) / 64 * 64;
    double *a = aligned_alloc(64, alloc), *b = aligned_alloc(64, alloc),
           *c = aligned_alloc(64, alloc);
    int bad = !a || !b || !c, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (anybad)
        ct_die(rank, "cannot allocate 3 x %zu bytes per rank: use fewer --elements", bytes);
    /* first touch by the rank that uses the memory */
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 2.0;
        c[i] = 0.5;
    }
    const double s = 3.0;

    triad(a, b, c, s, n); /* untimed */
    double best = 0, worst = 0, sum = 0, own_best = 0;
    for (long r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        triad(a, b, c, s, n);
        double t = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r == 0 || tmax < best) best = tmax;
        if (r == 0 || tmax > worst) worst = tmax;
        if (r == 0 || t < own_best) own_best = t;
        sum += tmax;
    }
    long wrong = 0;
    for (long i = 0; i < n; i++) wrong += a[i] != 3.5;
    long anywrong = 0;
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (anywrong) ct_die(rank, "the triad computed %ld wrong values", anywrong);
    /* the sum over ranks of each rank's own best bandwidth (not simultaneous) */
    double own_gbs = 24.0 * (double)n / own_best / 1e9, own_sum = 0;
    MPI_Reduce(&own_gbs, &own_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        char ver[256];
        ct_mpi_version(ver, sizeof ver);
        double moved = (double)nprocs * (double)n;
        printf("{\"kind\": \"stream\", \"np\": %d, \"elements\": %ld, \"array_bytes\": %zu, "
               "\"reps\": %ld, \"best_s\": %.9g, \"avg_s\": %.9g, \"max_s\": %.9g, "
               "\"bytes_per_element\": 24, \"triad_GBps\": %.6g, "
               "\"triad_GBps_write_allocate\": %.6g, \"per_rank_GBps\": %.6g, "
               "\"sum_rank_best_GBps\": %.6g, \"mpi\": ",
               nprocs, n, bytes, reps, best, sum / (double)reps, worst,
               24.0 * moved / best / 1e9, 32.0 * moved / best / 1e9,
               24.0 * (double)n / best / 1e9, own_sum);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
    }
    free(a);
    free(b);
    free(c);
    MPI_Finalize();
    return 0;
}
