/*
 * osu_latency.c -- colltune-osu-latency: a tiny OSU-style collective latency
 * program, plain MPI, that knows nothing of colltune (tests/test_pmpi.py runs
 * it under libcolltune-pmpi.so to show that the rules decide what it measures).
 *
 *   colltune-osu-latency bcast|allreduce BYTES [ITERATIONS]
 *
 * Warm-up calls, a barrier, then ITERATIONS timed calls (default 100), each
 * followed by a barrier as the OSU benchmarks do; rank 0 prints
 *   "# Size  Avg Latency(us)" and "BYTES  LATENCY"
 * where LATENCY is the mean over processes of each one's mean time per call.
 * Bcast: MPI_CHAR from root 0; Allreduce: MPI_CHAR with MPI_SUM.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int bcast = argc > 1 && !strcmp(argv[1], "bcast");
    if (argc < 3 || (!bcast && strcmp(argv[1], "allreduce"))) {
        if (rank == 0)
            fprintf(stderr, "usage: colltune-osu-latency bcast|allreduce BYTES [ITERATIONS]\n");
        MPI_Finalize();
        return 2;
    }
    int bytes = atoi(argv[2]), iters = argc > 3 ? atoi(argv[3]) : 100, skip = 10;
    char *sbuf = malloc((size_t)bytes + 1), *rbuf = malloc((size_t)bytes + 1);
    memset(sbuf, 1, (size_t)bytes + 1);
    double total = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t = MPI_Wtime();
        if (bcast)
            MPI_Bcast(sbuf, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
        else
            MPI_Allreduce(sbuf, rbuf, bytes, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        if (i >= skip) total += t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine = total / iters * 1e6, sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# Size  Avg Latency(us)\n%d  %.2f\n", bytes, sum / np);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
