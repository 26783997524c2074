/*
 * phases.c -- colltune-phases: a plain MPI program (no colltune code) with phases:
 * a Bcast of `size` bytes, then at each new phase MPI_Pcontrol(level) on every rank
 * (how an application tells tools a phase begins), then the Bcast again; checks every
 * Bcast's data. Under the interposition library with a rules file that has load
 * classes, MPI_Pcontrol(COLLTUNE_LOAD_PCONTROL) measures the load again
 * (tests/test_workload.py, docs/workload.md).
 *
 *   colltune-phases [PHASES [SIZE [LEVEL]]]     defaults 2, 1048576, 17
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int phases = argc > 1 ? atoi(argv[1]) : 2;
    long size = argc > 2 ? atol(argv[2]) : 1048576;
    int level = argc > 3 ? atoi(argv[3]) : 17;
    if (phases < 1 || size < 1 || size > (1L << 30)) {
        if (rank == 0) fprintf(stderr, "usage: colltune-phases [PHASES [SIZE [LEVEL]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc((size_t)size);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 2);
    int bad = 0;
    for (int p = 0; p < phases; p++) {
        if (p > 0) MPI_Pcontrol(level);
        for (long i = 0; i < size; i++)
            buf[i] = rank == 0 ? (unsigned char)(i * 7 + p) : 0;
        MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (long i = 0; i < size; i++)
            if (buf[i] != (unsigned char)(i * 7 + p)) bad = 1;
    }
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) printf("phases: %d phases, %s\n", phases, anybad ? "WRONG DATA" : "data ok");
    free(buf);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
