/*
 * gamma.c -- colltune-gamma: the time of a local reduction per byte, the gamma of
 * the Hockney model (colltune model, docs/cost-model.md).
 *
 * Usage: colltune-gamma DTYPE OP SIZES, on one process. DTYPE: char, int, float,
 * double; OP: sum, max, min, prod, or copy (a memcpy of the same bytes instead of
 * the reduction: the local copy the simulation charges, docs/simulation.md);
 * SIZES: bytes, comma-separated.
 *
 * For each size: one MPI_Reduce_local call (warm-up, page faults), then as many
 * calls as take about 20 ms (estimated from a 5 ms trial, at least 3) timed 7
 * times. Output: one JSON object a size on stdout, with the minimum, median and
 * maximum of the 7 per-call times in microseconds. Python (drivers/gamma.py)
 * fits gamma as the slope of the median against the size.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_op;  /* OP copy: time memcpy instead of MPI_Reduce_local */

static void once(void *in, void *io, long count, int esz, MPI_Datatype dt, MPI_Op op) {
    if (copy_op) {
        memcpy(io, in, (size_t)count * (size_t)esz);
        __asm__ __volatile__("" : : "r"(io) : "memory");  /* the copy is not dead */
    } else MPI_Reduce_local(in, io, (int)count, dt, op);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "error: usage: DTYPE OP SIZES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    MPI_Datatype dt; int esz; const char *dn = argv[1];
    if (!strcmp(dn, "char")) { dt = MPI_SIGNED_CHAR; esz = 1; }
    else if (!strcmp(dn, "int")) { dt = MPI_INT; esz = 4; }
    else if (!strcmp(dn, "float")) { dt = MPI_FLOAT; esz = 4; }
    else if (!strcmp(dn, "double")) { dt = MPI_DOUBLE; esz = 8; }
    else { fprintf(stderr, "error: dtype %s\n", dn); MPI_Abort(MPI_COMM_WORLD, 2); return 2; }
    MPI_Op op = MPI_SUM; const char *on = argv[2];
    if (!strcmp(on, "copy")) copy_op = 1;
    else if (!strcmp(on, "sum")) op = MPI_SUM; else if (!strcmp(on, "max")) op = MPI_MAX;
    else if (!strcmp(on, "min")) op = MPI_MIN; else if (!strcmp(on, "prod")) op = MPI_PROD;
    else { fprintf(stderr, "error: op %s\n", on); MPI_Abort(MPI_COMM_WORLD, 2); return 2; }
    char *list = strdup(argv[3]);
    if (!list) {
        fprintf(stderr, "error: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long size = atol(tok); long count = size / esz;
        if (count < 1) continue;
        void *in = malloc((size_t)count * esz), *io = malloc((size_t)count * esz);
        if (!in || !io) {
            fprintf(stderr, "error: cannot allocate %ld bytes\n", size);
            MPI_Abort(MPI_COMM_WORLD, 2);
            return 2;
        }
        for (long i = 0; i < count; i++) {
            if (dt == MPI_DOUBLE) { ((double *)in)[i] = 1.0; ((double *)io)[i] = 1.0; }
            else if (dt == MPI_FLOAT) { ((float *)in)[i] = 1.0f; ((float *)io)[i] = 1.0f; }
            else if (dt == MPI_INT) { ((int *)in)[i] = 1; ((int *)io)[i] = 1; }
            else { ((signed char *)in)[i] = 1; ((signed char *)io)[i] = 1; }
        }
        once(in, io, count, esz, dt, op);          /* warm-up, page faults */
        double t0 = MPI_Wtime(); long it = 0;
        do { once(in, io, count, esz, dt, op); it++; } while (MPI_Wtime() - t0 < 0.005);
        long iters = (long)(it * (0.02 / (MPI_Wtime() - t0))) + 1;
        if (iters < 3) iters = 3;
        double s[7];
        for (int r = 0; r < 7; r++) {
            double a = MPI_Wtime();
            for (long i = 0; i < iters; i++) once(in, io, count, esz, dt, op);
            s[r] = (MPI_Wtime() - a) / iters * 1e6;
        }
        qsort(s, 7, sizeof s[0], cmp);
        printf("{\"size\": %ld, \"dtype\": \"%s\", \"op\": \"%s\", \"iterations\": %ld, "
               "\"reps\": 7, \"min_us\": %.6f, \"median_us\": %.6f, \"max_us\": %.6f}\n",
               count * esz, dn, on, iters, s[0], s[3], s[6]);
        fflush(stdout);
        free(in); free(io);
    }
    free(list);
    MPI_Finalize();
    return 0;
}
