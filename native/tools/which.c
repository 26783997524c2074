/*
 * which.c -- colltune-which: call one MPI collective at given sizes, plainly, so that
 * a preloaded observer (libcolltune-ompi-algos.so under Open MPI, libcolltune-traffic.so
 * under MPICH) can say which algorithm the library ran (colltune rules verify).
 *
 *   colltune-which COLLECTIVE SIZE[,SIZE...] [ITERATIONS]
 *
 * SIZE is colltune's size in bytes: the message for bcast/reduce/allreduce (reduce and
 * allreduce sum ints: SIZE/4 of them), the bytes per process for gather/allgather/scatter
 * (root 0) and allgatherv (every process the same), per destination for alltoall/alltoallv
 * (every destination the same, in order; MPI_BYTE), the block of one process for
 * reduce_scatter_block and reduce_scatter (ints, SIZE/4 of them, every process the
 * same); barrier ignores it. Before and after the calls of each size the
 * program calls the observer's colltune_observe_mark("COLLECTIVE SIZE") /
 * colltune_observe_mark(NULL) when one is loaded (found with dlsym), so the observer counts those calls only.
 * Rank 0 prints one line per size: "ran COLLECTIVE SIZE NP ITERATIONS".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*mark_fn)(const char *label);

static void usage(void) {
    fprintf(stderr, "usage: colltune-which bcast|reduce|gather|allgather|allreduce|alltoall|"
                    "alltoallv|scatter|barrier|reduce_scatter_block|reduce_scatter|allgatherv "
                    "SIZE[,SIZE...] [ITERATIONS]\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 3) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    const char *coll = argv[1];
    int iters = argc > 3 ? atoi(argv[3]) : 3;
    if (iters < 1) iters = 1;
    int known = !strcmp(coll, "bcast") || !strcmp(coll, "reduce") || !strcmp(coll, "gather")
                || !strcmp(coll, "allgather") || !strcmp(coll, "allreduce")
                || !strcmp(coll, "alltoall") || !strcmp(coll, "alltoallv")
                || !strcmp(coll, "scatter") || !strcmp(coll, "barrier")
                || !strcmp(coll, "reduce_scatter_block") || !strcmp(coll, "reduce_scatter")
                || !strcmp(coll, "allgatherv");
    if (!known) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    mark_fn mark = NULL;
    void *sym = dlsym(RTLD_DEFAULT, "colltune_observe_mark");
    memcpy(&mark, &sym, sizeof mark);

    char *list = strdup(argv[2]);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long long size = strtoll(tok, &end, 10);
        if (*end || size < 0 || size > (1LL << 30)) {
            if (rank == 0) fprintf(stderr, "colltune-which: bad size '%s'\n", tok);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        size_t total = (size_t)size * (size_t)np + 64;
        char *sbuf = calloc(total, 1), *rbuf = calloc(total, 1);
        int *counts = malloc(sizeof(int) * (size_t)np), *displs = malloc(sizeof(int) * (size_t)np);
        int *icounts = malloc(sizeof(int) * (size_t)np);
        if (!sbuf || !rbuf || !counts || !displs || !icounts) MPI_Abort(MPI_COMM_WORLD, 3);
        for (int p = 0; p < np; p++) {
            counts[p] = (int)size;
            displs[p] = (int)(size * p);
            icounts[p] = (int)(size / 4);
        }
        char label[96];
        snprintf(label, sizeof label, "%s %lld", coll, size);
        MPI_Barrier(MPI_COMM_WORLD);
        if (mark) mark(label);
        for (int i = 0; i < iters; i++) {
            if (!strcmp(coll, "bcast"))
                MPI_Bcast(sbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (!strcmp(coll, "reduce"))
                MPI_Reduce(sbuf, rbuf, (int)(size / 4), MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
            else if (!strcmp(coll, "allreduce"))
                MPI_Allreduce(sbuf, rbuf, (int)(size / 4), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(coll, "gather"))
                MPI_Gather(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, 0,
                           MPI_COMM_WORLD);
            else if (!strcmp(coll, "alltoall"))
                MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                             MPI_COMM_WORLD);
            else if (!strcmp(coll, "alltoallv"))
                MPI_Alltoallv(sbuf, counts, displs, MPI_BYTE, rbuf, counts, displs, MPI_BYTE,
                              MPI_COMM_WORLD);
            else if (!strcmp(coll, "scatter"))
                MPI_Scatter(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, 0,
                            MPI_COMM_WORLD);
            else if (!strcmp(coll, "barrier"))
                MPI_Barrier(MPI_COMM_WORLD);
            else if (!strcmp(coll, "reduce_scatter_block"))
                MPI_Reduce_scatter_block(sbuf, rbuf, (int)(size / 4), MPI_INT, MPI_SUM,
                                         MPI_COMM_WORLD);
            else if (!strcmp(coll, "reduce_scatter"))
                MPI_Reduce_scatter(sbuf, rbuf, icounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(coll, "allgatherv"))
                MPI_Allgatherv(sbuf, (int)size, MPI_BYTE, rbuf, counts, displs, MPI_BYTE,
                               MPI_COMM_WORLD);
            else
                MPI_Allgather(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                              MPI_COMM_WORLD);
        }
        if (mark) mark(NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            printf("ran %s %lld %d %d\n", coll, size, np, iters);
            fflush(stdout);
        }
        free(sbuf);
        free(rbuf);
        free(counts);
        free(displs);
        free(icounts);
    }
    free(list);
    MPI_Finalize();
    return 0;
}
