/*
 * loadtraffic.c -- the generator's rounds and the probe's loop (loadtraffic.h).
 *
 * A round in each pattern:
 *   pairs     a fresh random pairing (splitmix64 + Fisher-Yates from the shared seed);
 *             partners exchange `window` messages of `size` bytes both ways
 *   alltoall  every rank sends `window` messages of `size` bytes to every other one
 *   hot       every rank but 0 sends `window` messages to rank 0, which answers each
 *             with one byte (incast on one node)
 * All messages of a round are in flight at once (MPI_Isend/MPI_Irecv, one Waitall).
 */
#include "loadtraffic.h"

#include <stdlib.h>
#include <string.h>

#define TAG_LOAD 4713
#define TAG_PROBE 4712

const char *const ct_load_pattern_names[CT_LOAD_NPATTERNS] = { "pairs", "alltoall", "hot" };

uint64_t ct_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t ct_rng_below(uint64_t *state, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = ct_rng_next(state);
    while (x >= limit);
    return x % n;
}

void ct_rng_shuffle(int *perm, int n, uint64_t *state) {
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)ct_rng_below(state, (uint64_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int ct_load_pattern(const char *name) {
    for (int k = 0; k < CT_LOAD_NPATTERNS; k++)
        if (!strcmp(name, ct_load_pattern_names[k])) return k;
    return -1;
}

int ct_load_init(ct_load_t *g, MPI_Comm comm, int pattern, long size, long window,
                 uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->pattern = pattern;
    g->size = size;
    g->window = window;
    g->comm = comm;
    g->state = seed;
    MPI_Comm_rank(comm, &g->rank);
    MPI_Comm_size(comm, &g->nprocs);
    int peers = pattern == CT_LOAD_PAIRS ? 1 : g->nprocs - 1;
    size_t nreq = (size_t)2 * (size_t)peers * (size_t)window;
    size_t bytes = (size_t)(size ? size : 1);
    g->sbuf = malloc(bytes);
    g->rbuf = malloc(bytes * (size_t)peers * (size_t)window);
    g->req = malloc(nreq * sizeof *g->req);
    g->perm = malloc((size_t)g->nprocs * sizeof *g->perm);
    if (!g->sbuf || !g->rbuf || !g->req || !g->perm) return -1;
    memset(g->sbuf, g->rank + 1, bytes);
    return 0;
}

void ct_load_free(ct_load_t *g) {
    free(g->sbuf);
    free(g->rbuf);
    free(g->req);
    free(g->perm);
    memset(g, 0, sizeof *g);
}

void ct_load_round(ct_load_t *g) {
    int n = 0, nprocs = g->nprocs, rank = g->rank;
    long size = g->size, window = g->window;
    size_t bytes = (size_t)(size ? size : 1);
    MPI_Request *req = g->req;
    if (g->pattern == CT_LOAD_PAIRS) {
        ct_rng_shuffle(g->perm, nprocs, &g->state);
        int pos = 0;
        while (g->perm[pos] != rank) pos++;
        int ppos = pos ^ 1;
        if (ppos < nprocs) {
            int partner = g->perm[ppos];
            for (long w = 0; w < window; w++) {
                MPI_Irecv(g->rbuf + (size_t)w * bytes, (int)size, MPI_BYTE, partner, TAG_LOAD,
                          g->comm, &req[n++]);
                MPI_Isend(g->sbuf, (int)size, MPI_BYTE, partner, TAG_LOAD, g->comm, &req[n++]);
            }
            g->msgs += window;
            g->sent += window * size;
        }
    } else if (g->pattern == CT_LOAD_ALLTOALL) {
        int k = 0;
        for (int d = 1; d < nprocs; d++) {
            int to = (rank + d) % nprocs, from = (rank - d + nprocs) % nprocs;
            for (long w = 0; w < window; w++, k++) {
                MPI_Irecv(g->rbuf + (size_t)k * bytes, (int)size, MPI_BYTE, from, TAG_LOAD,
                          g->comm, &req[n++]);
                MPI_Isend(g->sbuf, (int)size, MPI_BYTE, to, TAG_LOAD, g->comm, &req[n++]);
            }
        }
        g->msgs += (long long)(nprocs - 1) * window;
        g->sent += (long long)(nprocs - 1) * window * size;
    } else if (rank == 0) { /* hot: incast to rank 0, one-byte answers */
        static const char ack = 1;
        int k = 0;
        for (int from = 1; from < nprocs; from++)
            for (long w = 0; w < window; w++, k++) {
                MPI_Irecv(g->rbuf + (size_t)k * bytes, (int)size, MPI_BYTE, from, TAG_LOAD,
                          g->comm, &req[n++]);
                MPI_Isend(&ack, 1, MPI_BYTE, from, TAG_LOAD, g->comm, &req[n++]);
            }
        g->msgs += (long long)(nprocs - 1) * window;
        g->sent += (long long)(nprocs - 1) * window;
    } else {
        for (long w = 0; w < window; w++) {
            MPI_Irecv(&g->acks[w], 1, MPI_BYTE, 0, TAG_LOAD, g->comm, &req[n++]);
            MPI_Isend(g->sbuf, (int)size, MPI_BYTE, 0, TAG_LOAD, g->comm, &req[n++]);
        }
        g->msgs += window;
        g->sent += window * size;
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

void ct_load_serve(ct_load_t *g, MPI_Request *stop, long long *rounds) {
    for (;;) {
        int done = 0;
        if (g->rank == 0) MPI_Test(stop, &done, MPI_STATUS_IGNORE);
        MPI_Bcast(&done, 1, MPI_INT, 0, g->comm);
        if (done) break;
        ct_load_round(g);
        ++*rounds;
    }
    if (g->rank != 0) MPI_Wait(stop, MPI_STATUS_IGNORE);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ct_probe_loop(MPI_Comm comm, long size, long iterations, long warmup, uint64_t seed,
                   double *iter_wall, double *median_exchange) {
    int rank, nprocs;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nprocs);
    size_t bytes = (size_t)(size ? size : 1);
    char *sbuf = malloc(bytes), *rbuf = malloc(bytes);
    int *perm = malloc((size_t)nprocs * sizeof *perm);
    double *mine = malloc((size_t)iterations * sizeof *mine);
    double *all = rank == 0 ? malloc((size_t)nprocs * (size_t)iterations * sizeof *all) : NULL;
    if (!sbuf || !rbuf || !perm || !mine || (rank == 0 && !all)) MPI_Abort(comm, 2);
    memset(sbuf, rank + 1, bytes);
    uint64_t state = seed;
    double t_loop = 0;
    for (long it = -warmup; it < iterations; it++) {
        if (it == 0) t_loop = MPI_Wtime();
        ct_rng_shuffle(perm, nprocs, &state);
        int pos = 0;
        while (perm[pos] != rank) pos++;
        int ppos = pos ^ 1;
        MPI_Barrier(comm);
        double t = -1;
        if (ppos < nprocs) {
            MPI_Request req[2];
            double t0 = MPI_Wtime();
            MPI_Irecv(rbuf, (int)size, MPI_BYTE, perm[ppos], TAG_PROBE, comm, &req[0]);
            MPI_Isend(sbuf, (int)size, MPI_BYTE, perm[ppos], TAG_PROBE, comm, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            t = MPI_Wtime() - t0;
        }
        if (it >= 0) mine[it] = t;
    }
    MPI_Barrier(comm);
    *iter_wall = (MPI_Wtime() - t_loop) / (double)iterations;
    MPI_Gather(mine, (int)iterations, MPI_DOUBLE, all, (int)iterations, MPI_DOUBLE, 0, comm);
    *median_exchange = 0;
    if (rank == 0) {
        size_t n = 0;
        for (size_t k = 0; k < (size_t)nprocs * (size_t)iterations; k++)
            if (all[k] >= 0) all[n++] = all[k];
        qsort(all, n, sizeof *all, cmp_double);
        if (n) *median_exchange = n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2;
    }
    free(sbuf);
    free(rbuf);
    free(perm);
    free(mine);
    free(all);
}
