/*
 * ompi_algos.c -- libcolltune-ompi-algos.so: which Open MPI coll/base algorithm ran.
 *
 * Preloaded (LD_PRELOAD) into an Open MPI 5.0.x program, it defines the algorithm
 * functions ompi_coll_base_<coll>_intra_<algorithm> that coll/tuned calls through the
 * PLT of libmpi.so, records each call (collective, algorithm, colltune's size, the
 * communicator size, fan-in/out, segment size, radix, nesting depth) and forwards it
 * to the library's own function (dlsym RTLD_NEXT). Open MPI's verbose output does not
 * say which algorithm tuned chose in the release builds; this does.
 *
 * Only calls between colltune_observe_mark("LABEL") and colltune_observe_mark(NULL)
 * are recorded (colltune-which marks each size), under that label. At exit every
 * process appends its records to $COLLTUNE_OBSERVE_DIR/algos.<pid>.txt, one line each:
 *
 *   LABEL<TAB>rank=R np=N coll=C algo=A size=S faninout=F segsize=G radix=K maxreq=M depth=D calls=X
 *
 * (-1 where an argument does not exist for that algorithm). depth 0 is the algorithm
 * the collective call ran; depth 1+ are algorithms it ran inside (a fallback, the
 * reduce and bcast of allreduce nonoverlapping, ...).
 *
 * The prototypes are those of Open MPI 5.0.x (int counts); the build links it only
 * against Open MPI. Built by CMake for Open MPI builds only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REC 512

typedef struct {
    char label[96];
    char coll[24];
    char algo[48];
    long long size;
    int np, rank, faninout, segsize, radix, maxreq, depth;
    long calls;
} rec_t;

static rec_t recs[MAX_REC];
static int nrec;
static char current[96];
static int marked;
static _Thread_local int depth;

void colltune_observe_mark(const char *label) {
    if (label) {
        snprintf(current, sizeof current, "%s", label);
        marked = 1;
    } else {
        marked = 0;
    }
}

static long long tsize(MPI_Datatype dt) {
    int s = 0;
    if (dt == MPI_DATATYPE_NULL || MPI_Type_size(dt, &s) != MPI_SUCCESS) return 0;
    return s;
}

static void record(const char *coll, const char *algo, long long size, MPI_Comm comm,
                   int faninout, int segsize, int radix, int maxreq) {
    if (!marked) return;
    int np = 0, rank = 0;
    MPI_Comm_size(comm, &np);
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < nrec; i++) {
        rec_t *r = &recs[i];
        if (r->size == size && r->np == np && r->depth == depth && r->faninout == faninout
            && r->segsize == segsize && r->radix == radix && r->maxreq == maxreq
            && !strcmp(r->label, current) && !strcmp(r->coll, coll) && !strcmp(r->algo, algo)) {
            r->calls++;
            return;
        }
    }
    if (nrec == MAX_REC) return;
    rec_t *r = &recs[nrec++];
    snprintf(r->label, sizeof r->label, "%s", current);
    snprintf(r->coll, sizeof r->coll, "%s", coll);
    snprintf(r->algo, sizeof r->algo, "%s", algo);
    r->size = size;
    r->np = np;
    r->rank = rank;
    r->faninout = faninout;
    r->segsize = segsize;
    r->radix = radix;
    r->maxreq = maxreq;
    r->depth = depth;
    r->calls = 1;
}

__attribute__((destructor)) static void dump(void) {
    const char *dir = getenv("COLLTUNE_OBSERVE_DIR");
    if (!dir || !nrec) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/algos.%ld.txt", dir, (long)getpid());
    FILE *f = fopen(path, "a");
    if (!f) return;
    for (int i = 0; i < nrec; i++) {
        rec_t *r = &recs[i];
        fprintf(f, "%s\trank=%d np=%d coll=%s algo=%s size=%lld faninout=%d segsize=%d radix=%d "
                   "maxreq=%d depth=%d calls=%ld\n", r->label, r->rank, r->np, r->coll, r->algo,
                r->size, r->faninout, r->segsize, r->radix, r->maxreq, r->depth, r->calls);
    }
    fclose(f);
}

static void *next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "libcolltune-ompi-algos: %s not found in the MPI library\n", name);
        abort();
    }
    return p;
}

/* ---------------------------------------------------------------- argument lists */

#define BCAST_P void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, void *module
#define BCAST_A buf, count, dt, root, comm, module
#define REDUCE_P const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, \
                 MPI_Comm comm, void *module
#define REDUCE_A sbuf, rbuf, count, dt, op, root, comm, module
#define ALLRED_P const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, \
                 MPI_Comm comm, void *module
#define ALLRED_A sbuf, rbuf, count, dt, op, comm, module
#define GATHER_P const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, \
                 MPI_Datatype rdt, int root, MPI_Comm comm, void *module
#define GATHER_A sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, module
#define ALLGA_P const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, \
                MPI_Datatype rdt, MPI_Comm comm, void *module
#define ALLGA_A sbuf, scount, sdt, rbuf, rcount, rdt, comm, module
#define A2A_P ALLGA_P /* alltoall: the same arguments as allgather */
#define A2A_A ALLGA_A

/* per-process bytes of gather/allgather (alltoall: per destination): the send side,
 * the receive side in place */
#define PER_PROC_SIZE (sbuf == MPI_IN_PLACE ? (long long)rcount * tsize(rdt) \
                                            : (long long)scount * tsize(sdt))

/* one wrapper: NAME, COLL, ALGO, parameter list, argument list, extra parameters and
 * arguments, size expression, faninout, segsize, radix, maxreq expressions */
#define WRAP(NAME, COLL, ALGO, PARAMS, ARGS, SIZE, FAN, SEG, RADIX, MAXREQ)                  \
    int NAME(PARAMS) {                                                                       \
        static int (*real)(PARAMS);                                                          \
        if (!real) {                                                                         \
            void *p = next(#NAME);                                                           \
            memcpy(&real, &p, sizeof real);                                                  \
        }                                                                                    \
        record(COLL, ALGO, SIZE, comm, FAN, SEG, RADIX, MAXREQ);                             \
        depth++;                                                                             \
        int rc = real(ARGS);                                                                 \
        depth--;                                                                             \
        return rc;                                                                           \
    }

#define COMMA ,
#define BSIZE ((long long)count * tsize(dt))

/* prototypes first: -Wmissing-prototypes style warnings stay quiet */
#define DECL(NAME, PARAMS) int NAME(PARAMS);

/* bcast */
DECL(ompi_coll_base_bcast_intra_basic_linear, BCAST_P)
WRAP(ompi_coll_base_bcast_intra_basic_linear, "bcast", "basic_linear", BCAST_P, BCAST_A, BSIZE,
     -1, -1, -1, -1)
DECL(ompi_coll_base_bcast_intra_chain, BCAST_P COMMA uint32_t segsize COMMA int32_t chains)
WRAP(ompi_coll_base_bcast_intra_chain, "bcast", "chain",
     BCAST_P COMMA uint32_t segsize COMMA int32_t chains, BCAST_A COMMA segsize COMMA chains,
     BSIZE, chains, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_pipeline, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_pipeline, "bcast", "pipeline", BCAST_P COMMA uint32_t segsize,
     BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_binomial, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_binomial, "bcast", "binomial", BCAST_P COMMA uint32_t segsize,
     BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_bintree, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_bintree, "bcast", "binary_tree", BCAST_P COMMA uint32_t segsize,
     BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_split_bintree, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_split_bintree, "bcast", "split_binary_tree",
     BCAST_P COMMA uint32_t segsize, BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_knomial, BCAST_P COMMA uint32_t segsize COMMA int radix)
WRAP(ompi_coll_base_bcast_intra_knomial, "bcast", "knomial",
     BCAST_P COMMA uint32_t segsize COMMA int radix, BCAST_A COMMA segsize COMMA radix, BSIZE,
     -1, (int)segsize, radix, -1)
DECL(ompi_coll_base_bcast_intra_scatter_allgather, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_scatter_allgather, "bcast", "scatter_allgather",
     BCAST_P COMMA uint32_t segsize, BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_bcast_intra_scatter_allgather_ring, BCAST_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_bcast_intra_scatter_allgather_ring, "bcast", "scatter_allgather_ring",
     BCAST_P COMMA uint32_t segsize, BCAST_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)

/* reduce */
DECL(ompi_coll_base_reduce_intra_basic_linear, REDUCE_P)
WRAP(ompi_coll_base_reduce_intra_basic_linear, "reduce", "linear", REDUCE_P, REDUCE_A, BSIZE,
     -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_intra_chain, REDUCE_P COMMA uint32_t segsize COMMA int fanout
     COMMA int maxreq)
WRAP(ompi_coll_base_reduce_intra_chain, "reduce", "chain",
     REDUCE_P COMMA uint32_t segsize COMMA int fanout COMMA int maxreq,
     REDUCE_A COMMA segsize COMMA fanout COMMA maxreq, BSIZE, fanout, (int)segsize, -1, maxreq)
DECL(ompi_coll_base_reduce_intra_pipeline, REDUCE_P COMMA uint32_t segsize COMMA int maxreq)
WRAP(ompi_coll_base_reduce_intra_pipeline, "reduce", "pipeline",
     REDUCE_P COMMA uint32_t segsize COMMA int maxreq, REDUCE_A COMMA segsize COMMA maxreq, BSIZE,
     -1, (int)segsize, -1, maxreq)
DECL(ompi_coll_base_reduce_intra_binary, REDUCE_P COMMA uint32_t segsize COMMA int maxreq)
WRAP(ompi_coll_base_reduce_intra_binary, "reduce", "binary",
     REDUCE_P COMMA uint32_t segsize COMMA int maxreq, REDUCE_A COMMA segsize COMMA maxreq, BSIZE,
     -1, (int)segsize, -1, maxreq)
DECL(ompi_coll_base_reduce_intra_binomial, REDUCE_P COMMA uint32_t segsize COMMA int maxreq)
WRAP(ompi_coll_base_reduce_intra_binomial, "reduce", "binomial",
     REDUCE_P COMMA uint32_t segsize COMMA int maxreq, REDUCE_A COMMA segsize COMMA maxreq, BSIZE,
     -1, (int)segsize, -1, maxreq)
DECL(ompi_coll_base_reduce_intra_in_order_binary, REDUCE_P COMMA uint32_t segsize COMMA int maxreq)
WRAP(ompi_coll_base_reduce_intra_in_order_binary, "reduce", "in-order_binary",
     REDUCE_P COMMA uint32_t segsize COMMA int maxreq, REDUCE_A COMMA segsize COMMA maxreq, BSIZE,
     -1, (int)segsize, -1, maxreq)
DECL(ompi_coll_base_reduce_intra_redscat_gather, REDUCE_P)
WRAP(ompi_coll_base_reduce_intra_redscat_gather, "reduce", "rabenseifner", REDUCE_P, REDUCE_A,
     BSIZE, -1, -1, -1, -1)

/* allreduce */
DECL(ompi_coll_base_allreduce_intra_basic_linear, ALLRED_P)
WRAP(ompi_coll_base_allreduce_intra_basic_linear, "allreduce", "basic_linear", ALLRED_P,
     ALLRED_A, BSIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allreduce_intra_nonoverlapping, ALLRED_P)
WRAP(ompi_coll_base_allreduce_intra_nonoverlapping, "allreduce", "nonoverlapping", ALLRED_P,
     ALLRED_A, BSIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allreduce_intra_recursivedoubling, ALLRED_P)
WRAP(ompi_coll_base_allreduce_intra_recursivedoubling, "allreduce", "recursive_doubling",
     ALLRED_P, ALLRED_A, BSIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allreduce_intra_ring, ALLRED_P)
WRAP(ompi_coll_base_allreduce_intra_ring, "allreduce", "ring", ALLRED_P, ALLRED_A, BSIZE, -1,
     -1, -1, -1)
DECL(ompi_coll_base_allreduce_intra_ring_segmented, ALLRED_P COMMA uint32_t segsize)
WRAP(ompi_coll_base_allreduce_intra_ring_segmented, "allreduce", "segmented_ring",
     ALLRED_P COMMA uint32_t segsize, ALLRED_A COMMA segsize, BSIZE, -1, (int)segsize, -1, -1)
DECL(ompi_coll_base_allreduce_intra_redscat_allgather, ALLRED_P)
WRAP(ompi_coll_base_allreduce_intra_redscat_allgather, "allreduce", "rabenseifner", ALLRED_P,
     ALLRED_A, BSIZE, -1, -1, -1, -1)

/* gather */
DECL(ompi_coll_base_gather_intra_basic_linear, GATHER_P)
WRAP(ompi_coll_base_gather_intra_basic_linear, "gather", "basic_linear", GATHER_P, GATHER_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_gather_intra_binomial, GATHER_P)
WRAP(ompi_coll_base_gather_intra_binomial, "gather", "binomial", GATHER_P, GATHER_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_gather_intra_linear_sync, GATHER_P COMMA int first_segment)
WRAP(ompi_coll_base_gather_intra_linear_sync, "gather", "linear_sync",
     GATHER_P COMMA int first_segment, GATHER_A COMMA first_segment, PER_PROC_SIZE, -1,
     first_segment, -1, -1)

/* allgather */
DECL(ompi_coll_base_allgather_intra_basic_linear, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_basic_linear, "allgather", "linear", ALLGA_P, ALLGA_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_bruck, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_bruck, "allgather", "bruck", ALLGA_P, ALLGA_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_recursivedoubling, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_recursivedoubling, "allgather", "recursive_doubling",
     ALLGA_P, ALLGA_A, PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_ring, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_ring, "allgather", "ring", ALLGA_P, ALLGA_A, PER_PROC_SIZE,
     -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_neighborexchange, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_neighborexchange, "allgather", "neighbor", ALLGA_P,
     ALLGA_A, PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_two_procs, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_two_procs, "allgather", "two_proc", ALLGA_P, ALLGA_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgather_intra_sparbit, ALLGA_P)
WRAP(ompi_coll_base_allgather_intra_sparbit, "allgather", "sparbit", ALLGA_P, ALLGA_A,
     PER_PROC_SIZE, -1, -1, -1, -1)

/* alltoall (coll/tuned calls these five; linear_sync takes the max_requests of the
 * rules file's MAXREQ column or of coll_tuned_alltoall_algorithm_max_requests) */
DECL(ompi_coll_base_alltoall_intra_basic_linear, A2A_P)
WRAP(ompi_coll_base_alltoall_intra_basic_linear, "alltoall", "linear", A2A_P, A2A_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_alltoall_intra_pairwise, A2A_P)
WRAP(ompi_coll_base_alltoall_intra_pairwise, "alltoall", "pairwise", A2A_P, A2A_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_alltoall_intra_bruck, A2A_P)
WRAP(ompi_coll_base_alltoall_intra_bruck, "alltoall", "modified_bruck", A2A_P, A2A_A,
     PER_PROC_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_alltoall_intra_linear_sync, A2A_P COMMA int max_requests)
WRAP(ompi_coll_base_alltoall_intra_linear_sync, "alltoall", "linear_sync",
     A2A_P COMMA int max_requests, A2A_A COMMA max_requests, PER_PROC_SIZE, -1, -1, -1,
     max_requests)
DECL(ompi_coll_base_alltoall_intra_two_procs, A2A_P)
WRAP(ompi_coll_base_alltoall_intra_two_procs, "alltoall", "two_proc", A2A_P, A2A_A,
     PER_PROC_SIZE, -1, -1, -1, -1)

/* alltoallv (coll/tuned calls these two; its dynamic rules measure every call as 0 bytes)
 * colltune's size: the bytes for the first destination (colltune-which sends the same
 * to every destination) */
#define A2AV_P const void *sbuf, const int *scounts, const int *sdisps, MPI_Datatype sdt, \
               void *rbuf, const int *rcounts, const int *rdisps, MPI_Datatype rdt,      \
               MPI_Comm comm, void *module
#define A2AV_A sbuf, scounts, sdisps, sdt, rbuf, rcounts, rdisps, rdt, comm, module
#define A2AV_SIZE (sbuf == MPI_IN_PLACE ? (long long)rcounts[0] * tsize(rdt) \
                                        : (long long)scounts[0] * tsize(sdt))
DECL(ompi_coll_base_alltoallv_intra_basic_linear, A2AV_P)
WRAP(ompi_coll_base_alltoallv_intra_basic_linear, "alltoallv", "basic_linear", A2AV_P, A2AV_A,
     A2AV_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_alltoallv_intra_pairwise, A2AV_P)
WRAP(ompi_coll_base_alltoallv_intra_pairwise, "alltoallv", "pairwise", A2AV_P, A2AV_A,
     A2AV_SIZE, -1, -1, -1, -1)

/* scatter (linear_nb takes coll_tuned_scatter_algorithm_max_requests, not the file's
 * MAXREQ); colltune's size: the bytes each process receives */
#define SCAT_P GATHER_P /* scatter: the same arguments as gather */
#define SCAT_A GATHER_A
#define SCAT_SIZE (rbuf == MPI_IN_PLACE ? (long long)scount * tsize(sdt) \
                                        : (long long)rcount * tsize(rdt))
DECL(ompi_coll_base_scatter_intra_basic_linear, SCAT_P)
WRAP(ompi_coll_base_scatter_intra_basic_linear, "scatter", "basic_linear", SCAT_P, SCAT_A,
     SCAT_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_scatter_intra_binomial, SCAT_P)
WRAP(ompi_coll_base_scatter_intra_binomial, "scatter", "binomial", SCAT_P, SCAT_A, SCAT_SIZE,
     -1, -1, -1, -1)
DECL(ompi_coll_base_scatter_intra_linear_nb, SCAT_P COMMA int max_reqs)
WRAP(ompi_coll_base_scatter_intra_linear_nb, "scatter", "linear_nb", SCAT_P COMMA int max_reqs,
     SCAT_A COMMA max_reqs, SCAT_SIZE, -1, -1, -1, max_reqs)

/* barrier (size 0) */
#define BAR_P MPI_Comm comm, void *module
#define BAR_A comm, module
DECL(ompi_coll_base_barrier_intra_basic_linear, BAR_P)
WRAP(ompi_coll_base_barrier_intra_basic_linear, "barrier", "linear", BAR_P, BAR_A, 0LL, -1, -1,
     -1, -1)
DECL(ompi_coll_base_barrier_intra_doublering, BAR_P)
WRAP(ompi_coll_base_barrier_intra_doublering, "barrier", "double_ring", BAR_P, BAR_A, 0LL, -1,
     -1, -1, -1)
DECL(ompi_coll_base_barrier_intra_recursivedoubling, BAR_P)
WRAP(ompi_coll_base_barrier_intra_recursivedoubling, "barrier", "recursive_doubling", BAR_P,
     BAR_A, 0LL, -1, -1, -1, -1)
DECL(ompi_coll_base_barrier_intra_bruck, BAR_P)
WRAP(ompi_coll_base_barrier_intra_bruck, "barrier", "bruck", BAR_P, BAR_A, 0LL, -1, -1, -1, -1)
DECL(ompi_coll_base_barrier_intra_two_procs, BAR_P)
WRAP(ompi_coll_base_barrier_intra_two_procs, "barrier", "two_proc", BAR_P, BAR_A, 0LL, -1, -1,
     -1, -1)
DECL(ompi_coll_base_barrier_intra_tree, BAR_P)
WRAP(ompi_coll_base_barrier_intra_tree, "barrier", "tree", BAR_P, BAR_A, 0LL, -1, -1, -1, -1)

/* allgatherv (colltune-which gives every process the same count); colltune's size: one
 * process's block, which is also what Open MPI's rules compare (total / comm size) */
#define AGV_P const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int *rcounts, \
              const int *rdispls, MPI_Datatype rdt, MPI_Comm comm, void *module
#define AGV_A sbuf, scount, sdt, rbuf, rcounts, rdispls, rdt, comm, module
#define AGV_SIZE ((long long)rcounts[0] * tsize(rdt))
DECL(ompi_coll_base_allgatherv_intra_basic_default, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_basic_default, "allgatherv", "default", AGV_P, AGV_A,
     AGV_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgatherv_intra_bruck, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_bruck, "allgatherv", "bruck", AGV_P, AGV_A, AGV_SIZE, -1,
     -1, -1, -1)
DECL(ompi_coll_base_allgatherv_intra_ring, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_ring, "allgatherv", "ring", AGV_P, AGV_A, AGV_SIZE, -1, -1,
     -1, -1)
DECL(ompi_coll_base_allgatherv_intra_neighborexchange, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_neighborexchange, "allgatherv", "neighbor", AGV_P, AGV_A,
     AGV_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgatherv_intra_two_procs, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_two_procs, "allgatherv", "two_proc", AGV_P, AGV_A,
     AGV_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_allgatherv_intra_sparbit, AGV_P)
WRAP(ompi_coll_base_allgatherv_intra_sparbit, "allgatherv", "sparbit", AGV_P, AGV_A, AGV_SIZE,
     -1, -1, -1, -1)

/* reduce_scatter (equal counts from colltune-which); colltune's size: one process's block */
#define RS_P const void *sbuf, void *rbuf, const int *rcounts, MPI_Datatype dt, MPI_Op op, \
             MPI_Comm comm, void *module
#define RS_A sbuf, rbuf, rcounts, dt, op, comm, module
#define RS_SIZE ((long long)rcounts[0] * tsize(dt))
DECL(ompi_coll_base_reduce_scatter_intra_nonoverlapping, RS_P)
WRAP(ompi_coll_base_reduce_scatter_intra_nonoverlapping, "reduce_scatter", "non-overlapping",
     RS_P, RS_A, RS_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_intra_basic_recursivehalving, RS_P)
WRAP(ompi_coll_base_reduce_scatter_intra_basic_recursivehalving, "reduce_scatter",
     "recursive_halving", RS_P, RS_A, RS_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_intra_ring, RS_P)
WRAP(ompi_coll_base_reduce_scatter_intra_ring, "reduce_scatter", "ring", RS_P, RS_A, RS_SIZE,
     -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_intra_butterfly, RS_P)
WRAP(ompi_coll_base_reduce_scatter_intra_butterfly, "reduce_scatter", "butterfly", RS_P, RS_A,
     RS_SIZE, -1, -1, -1, -1)

/* reduce_scatter_block; colltune's size: one process's block */
#define RSB_P const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt, MPI_Op op, \
              MPI_Comm comm, void *module
#define RSB_A sbuf, rbuf, rcount, dt, op, comm, module
#define RSB_SIZE ((long long)rcount * tsize(dt))
DECL(ompi_coll_base_reduce_scatter_block_basic_linear, RSB_P)
WRAP(ompi_coll_base_reduce_scatter_block_basic_linear, "reduce_scatter_block", "basic_linear",
     RSB_P, RSB_A, RSB_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_block_intra_recursivedoubling, RSB_P)
WRAP(ompi_coll_base_reduce_scatter_block_intra_recursivedoubling, "reduce_scatter_block",
     "recursive_doubling", RSB_P, RSB_A, RSB_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_block_intra_recursivehalving, RSB_P)
WRAP(ompi_coll_base_reduce_scatter_block_intra_recursivehalving, "reduce_scatter_block",
     "recursive_halving", RSB_P, RSB_A, RSB_SIZE, -1, -1, -1, -1)
DECL(ompi_coll_base_reduce_scatter_block_intra_butterfly, RSB_P)
WRAP(ompi_coll_base_reduce_scatter_block_intra_butterfly, "reduce_scatter_block", "butterfly",
     RSB_P, RSB_A, RSB_SIZE, -1, -1, -1, -1)
