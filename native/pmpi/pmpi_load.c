/*
 * pmpi_load.c -- the load index inside an application (docs/workload.md).
 *
 * A rules file with load classes (`# load-class: NAME MIN MAX`) needs the load of
 * the moment. This is colltune-probe's measurement, shortened: on a private
 * duplicate of MPI_COMM_WORLD, `iterations` rounds of a barrier followed by 4 KB
 * exchanged both ways between random pairs (a new pairing each round, from a fixed
 * seed, so every rank draws the same); the index is the wall time of the timed
 * rounds on rank 0 divided by their number, in microseconds (colltune-probe's
 * `iter_wall_us`, which a study stores as probe_us), broadcast so that every rank
 * chooses the same class. Only PMPI_ calls: nothing comes back through colltune.
 */
#include "pmpi_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_SIZE 4096
#define PROBE_WARMUP 5
#define TAG_PROBE 4714

static uint64_t next_u64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int below(uint64_t *state, int n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % (uint64_t)n;
    uint64_t x;
    do x = next_u64(state);
    while (x >= limit);
    return (int)(x % (uint64_t)n);
}

double ct_pmpi_load_probe(int iterations, double *ms_out) {
    MPI_Comm comm;
    int rank, np;
    double t_start = PMPI_Wtime();
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) return -1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &np);
    double index = -1;
    int *perm = malloc((size_t)np * sizeof *perm);
    char *sbuf = malloc(PROBE_SIZE), *rbuf = malloc(PROBE_SIZE);
    int ok = perm && sbuf && rbuf, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (all_ok && np >= 2) {
        memset(sbuf, rank & 0x7f, PROBE_SIZE);
        uint64_t state = 0x636f6c6c74756e65ULL; /* fixed: every rank draws the same */
        double t0 = 0;
        for (int it = -PROBE_WARMUP; it < iterations; it++) {
            for (int i = 0; i < np; i++) perm[i] = i;
            for (int i = np - 1; i > 0; i--) {
                int j = below(&state, i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            if (it == 0) t0 = PMPI_Wtime();
            PMPI_Barrier(comm);
            int pos = 0;
            while (perm[pos] != rank) pos++;
            int ppos = pos ^ 1;
            if (ppos < np) {
                MPI_Request req[2];
                PMPI_Irecv(rbuf, PROBE_SIZE, MPI_BYTE, perm[ppos], TAG_PROBE, comm, &req[0]);
                PMPI_Isend(sbuf, PROBE_SIZE, MPI_BYTE, perm[ppos], TAG_PROBE, comm, &req[1]);
                PMPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            }
        }
        PMPI_Barrier(comm);
        index = (PMPI_Wtime() - t0) / (iterations > 0 ? iterations : 1) * 1e6;
    }
    PMPI_Bcast(&index, 1, MPI_DOUBLE, 0, comm);
    free(perm);
    free(sbuf);
    free(rbuf);
    PMPI_Comm_free(&comm);
    double ms = (PMPI_Wtime() - t_start) * 1e3;
    PMPI_Bcast(&ms, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (ms_out) *ms_out = ms;
    return index;
}

int ct_pmpi_load_class_of(const ct_pmpi_rules_t *r, double index) {
    if (r->nclasses == 0) return -1;
    for (int k = 0; k < r->nclasses; k++)
        if (r->classes[k].lo <= index && (r->classes[k].hi < 0 || index < r->classes[k].hi))
            return k;
    /* below the lowest class's MIN: the quietest; otherwise (a gap) the last */
    return index < r->classes[0].lo ? 0 : r->nclasses - 1;
}
