/*
 * loadtraffic.h -- the background traffic of colltune's load generator, shared by
 * colltune-load (a job of its own beside a local measurement, loadgen.c) and
 * colltune-bench --load-ranks (generator ranks inside the same simulation as the
 * measured ones, docs/workload.md), and the probe loop of colltune-bench.
 */
#ifndef COLLTUNE_LOADTRAFFIC_H
#define COLLTUNE_LOADTRAFFIC_H

#include <mpi.h>
#include <stdint.h>

enum { CT_LOAD_PAIRS, CT_LOAD_ALLTOALL, CT_LOAD_HOT, CT_LOAD_NPATTERNS };
extern const char *const ct_load_pattern_names[CT_LOAD_NPATTERNS];

/* splitmix64 and an unbiased draw in [0, n) and Fisher-Yates shuffle from it */
uint64_t ct_rng_next(uint64_t *state);
uint64_t ct_rng_below(uint64_t *state, uint64_t n);
void ct_rng_shuffle(int *perm, int n, uint64_t *state);

/* the pattern's index, or -1 */
int ct_load_pattern(const char *name);

typedef struct {
    int pattern;
    long size, window;
    MPI_Comm comm;
    int rank, nprocs;
    uint64_t state; /* the pairings' generator, the same on every rank */
    char *sbuf, *rbuf;
    char acks[1024];
    MPI_Request *req;
    int *perm;
    long long msgs, sent; /* this rank's messages and bytes so far */
} ct_load_t;

/* buffers for one round of `pattern` on `comm`; 0, or -1 when out of memory */
int ct_load_init(ct_load_t *g, MPI_Comm comm, int pattern, long size, long window,
                 uint64_t seed);
/* one round: every rank of the communicator calls it; returns after its messages */
void ct_load_round(ct_load_t *g);
void ct_load_free(ct_load_t *g);

/* colltune-bench --load-ranks: the generator ranks' loop. Rounds until the request
 * `stop` (a nonblocking barrier over all ranks, which the measured ranks enter when
 * they are done) completes; rank 0 of the generator tests it and broadcasts the
 * decision with each round, so all generator ranks end after the same round. */
void ct_load_serve(ct_load_t *g, MPI_Request *stop, long long *rounds);

/* the probe (colltune-probe's loop): `iterations` timed iterations, each an untimed
 * barrier then `size` bytes both ways between random pairs; on rank 0 of `comm`
 * the wall time per iteration and the median exchange time over all ranks, in s */
void ct_probe_loop(MPI_Comm comm, long size, long iterations, long warmup, uint64_t seed,
                   double *iter_wall, double *median_exchange);

#endif
