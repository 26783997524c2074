/*
 * gamma.c -- colltune-gamma: the time of a local reduction per byte, the gamma of
 * the Hockney model (colltune model, docs/cost-model.md).
 *
 * Usage: colltune-gamma DTYPE OP SIZES [POOL], on one process. DTYPE: char, int,
 * float, double; OP: sum, max, min, prod, or copy (a memcpy of the same bytes instead
 * of the reduction: the local copy the simulation charges, docs/simulation.md);
 * SIZES: bytes, comma-separated. POOL (bytes, optional): the calls take their input
 * and output buffers in turn from a pool of that many bytes, so that with a pool
 * larger than the caches each call finds its data in memory ("cold"), as a
 * collective's copy of a buffer another process wrote may; without it every call
 * reuses one pair of buffers (in the cache when they fit).
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
static long npairs = 1, next_pair;  /* buffer pairs of the pool, the next one used */
static char *pool_in, *pool_io;     /* npairs buffers each, `bytes` apart */
static size_t bytes;

static void once_next(long count, int esz, MPI_Datatype dt, MPI_Op op);

static void once(void *in, void *io, long count, int esz, MPI_Datatype dt, MPI_Op op) {
    if (copy_op) {
        memcpy(io, in, (size_t)count * (size_t)esz);
        __asm__ __volatile__("" : : "r"(io) : "memory");  /* the copy is not dead */
    } else MPI_Reduce_local(in, io, (int)count, dt, op);
}

/* one call on the next pair of the pool (the only pair without a pool) */
static void once_next(long count, int esz, MPI_Datatype dt, MPI_Op op) {
    size_t off = bytes * (size_t)next_pair;
    once(pool_in + off, pool_io + off, count, esz, dt, op);
    if (++next_pair == npairs) next_pair = 0;
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
    long pool = argc > 4 ? atol(argv[4]) : 0;
    if (argc > 4 && pool <= 0) {
        fprintf(stderr, "error: pool %s: a number of bytes > 0\n", argv[4]);
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    char *list = strdup(argv[3]);
    if (!list) {
        fprintf(stderr, "error: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long size = atol(tok); long count = size / esz;
        if (count < 1) continue;
        bytes = (size_t)count * (size_t)esz;
        npairs = pool > 0 ? pool / (long)(2 * bytes) : 1;
        if (npairs < 1) npairs = 1;
        next_pair = 0;
        pool_in = malloc(bytes * (size_t)npairs);
        pool_io = malloc(bytes * (size_t)npairs);
        if (!pool_in || !pool_io) {
            fprintf(stderr, "error: cannot allocate 2 x %ld x %ld bytes\n", npairs, size);
            MPI_Abort(MPI_COMM_WORLD, 2);
            return 2;
        }
        void *in = pool_in, *io = pool_io;
        for (long i = 0; i < count * npairs; i++) {
            if (dt == MPI_DOUBLE) { ((double *)in)[i] = 1.0; ((double *)io)[i] = 1.0; }
            else if (dt == MPI_FLOAT) { ((float *)in)[i] = 1.0f; ((float *)io)[i] = 1.0f; }
            else if (dt == MPI_INT) { ((int *)in)[i] = 1; ((int *)io)[i] = 1; }
            else { ((signed char *)in)[i] = 1; ((signed char *)io)[i] = 1; }
        }
        for (long i = 0; i < npairs; i++) once_next(count, esz, dt, op); /* page faults */
        double t0 = MPI_Wtime(); long it = 0;
        do { once_next(count, esz, dt, op); it++; } while (MPI_Wtime() - t0 < 0.005);
        long iters = (long)(it * (0.02 / (MPI_Wtime() - t0))) + 1;
        if (iters < 3) iters = 3;
        double s[7];
        for (int r = 0; r < 7; r++) {
            double a = MPI_Wtime();
            for (long i = 0; i < iters; i++) once_next(count, esz, dt, op);
            s[r] = (MPI_Wtime() - a) / iters * 1e6;
        }
        qsort(s, 7, sizeof s[0], cmp);
        printf("{\"size\": %ld, \"dtype\": \"%s\", \"op\": \"%s\", \"iterations\": %ld, "
               "\"reps\": 7, \"min_us\": %.6f, \"median_us\": %.6f, \"max_us\": %.6f, "
               "\"pool_bytes\": %ld}\n",
               count * esz, dn, on, iters, s[0], s[3], s[6],
               pool > 0 ? (long)(2 * bytes) * npairs : 0L);
        fflush(stdout);
        free(pool_in); free(pool_io);
    }
    free(list);
    MPI_Finalize();
    return 0;
}
