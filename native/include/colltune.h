/*
 * colltune.h -- the one public header of the colltune algorithm library.
 *
 * Collective algorithms written on MPI point-to-point, one registry table that
 * describes them (name, collective, tunable parameters, constraints, fallback,
 * Hockney cost formula) and a dispatcher per collective that checks arguments,
 * applies declared fallbacks and reports them.
 *
 * Every function returns an MPI error code (MPI_SUCCESS on success); after a
 * failure, ct_last_error() says what was wrong and what is valid.
 *
 * Threads: different threads may call the collectives on different communicators
 * at the same time (MPI_THREAD_MULTIPLE); the error message and the dispatch
 * record are per thread. The same communicator in two threads at once is erroneous,
 * as in MPI. The traffic counters (ct_traffic_enable) are process-wide.
 */
#ifndef COLLTUNE_H
#define COLLTUNE_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLTUNE_VERSION "0.1.0"

/* ---- collectives --------------------------------------------------------- */
typedef enum {
    CT_BCAST = 0,
    CT_REDUCE,
    CT_GATHER,
    CT_ALLGATHER,
    CT_ALLREDUCE,
    CT_ALLTOALL,
    CT_ALLTOALLV,
    CT_SCATTER,
    CT_BARRIER,
    CT_REDUCE_SCATTER_BLOCK,
    CT_REDUCE_SCATTER,
    CT_ALLGATHERV,
    CT_GATHERV,
    CT_SCATTERV,
    CT_NCOLL
} ct_coll_t;

const char *ct_coll_name(ct_coll_t coll);            /* "bcast", ...       */
int ct_coll_from_name(const char *name, ct_coll_t *out); /* MPI_ERR_ARG if unknown */

/* ---- tunable parameters -------------------------------------------------- */
typedef enum {
    CT_P_SEGSIZE = 0, /* segment size in bytes, 0 = no segmentation          */
    CT_P_FANOUT,      /* tree/chain fan-out                                   */
    CT_P_RADIX,       /* k-nomial radix                                       */
    CT_P_BCAST,       /* inner Bcast algorithm of composites (registry index, or
                       * ct_inner_value for one with parameters of its own)    */
    CT_P_REDUCE,      /* inner Reduce algorithm (the same)                    */
    CT_P_GATHER,      /* inner Gather algorithm (the same)                    */
    CT_P_REMAP,       /* rank remapping (CT_REMAP_*): accepted by every Bcast, Reduce,
                       * Allgather and Allreduce algorithm, applied by the dispatcher */
    CT_P_MAX_REQUESTS,/* outstanding sends (and as many receives) per rank, 0 = all */
    CT_P_INTER,       /* hierarchical: the algorithm among the node leaders (registry
                       * index or ct_inner_value; its collective: ct_hier_inner_coll) */
    CT_P_INTRA,       /* hierarchical: the algorithm inside each node (the same)      */
    CT_P_VPPN,        /* hierarchical: virtual nodes of this many consecutive ranks,
                       * 0 = the communicator's nodes (ct_comm_placement)            */
    CT_P_LEADERS,     /* multi-leader hierarchical: slices of the vector per node, each
                       * owned by one rank of the node, 0 = as many as the largest node */
    CT_NPARAMS
} ct_param_id_t;

/* Values of CT_P_REMAP ("remap=none|seq|rr|auto"): the algorithm runs on a
 * permuted communicator whose rank order is the one it would see if the ranks
 * were placed sequentially (seq) or round-robin (rr) over the nodes; auto takes
 * the order that suits the algorithm (none for algorithms without one). */
enum { CT_REMAP_NONE = 0, CT_REMAP_SEQ = 1, CT_REMAP_RR = 2, CT_REMAP_AUTO = 3 };
const char *ct_remap_name(long remap); /* "none", "seq", "rr", "auto" */
/* Whether the algorithms of `coll` take remap= (Bcast, Reduce, Allgather, Allreduce). */
int ct_coll_remaps(ct_coll_t coll);
/* The order `remap=auto` gives algorithm `algo` (CT_REMAP_NONE, _SEQ or _RR). */
int ct_remap_auto(int algo);

typedef struct {
    long v[CT_NPARAMS]; /* indexed by ct_param_id_t; only an algorithm's own params are read */
} ct_params_t;

/* segsize=auto, the default of the segmented Bcast and Reduce trees (chain,
 * pipeline, binary, split_binary; Reduce's in_order_binary): the dispatcher
 * replaces it on every call by ct_segsize_resolve()'s segment for the call's
 * message size and process count (docs/algorithms/bcast.md, "Segment size
 * default"). An explicit segsize (0 = unsegmented) is used as given. */
#define CT_SEGSIZE_AUTO (-1L)
#define CT_SEG_AUTO_MIN 1024L           /* smallest segment the rule gives     */
#define CT_SEG_AUTO_MAX (1024L * 1024L) /* largest                              */
#define CT_SEG_AUTO_L 8192LL          /* L = alpha/beta in bytes (Bcast)       */
#define CT_SEG_AUTO_L_REDUCE 4096LL   /* alpha/(beta+gamma), gamma ~ beta      */
/* The segment segsize=auto gives registry algorithm `algo` (with fan-out
 * `fanout` where it has one) for a message of `bytes` bytes on p processes: 0
 * (unsegmented) or a power of two in [CT_SEG_AUTO_MIN, CT_SEG_AUTO_MAX]; 0 for
 * algorithms without a rule. No MPI call. */
long ct_segsize_resolve(int algo, long fanout, long long bytes, int p);
/* The pipeline shape the rule reads for `algo` ("chain", "pipeline", "binary",
 * "split_binary"), NULL when it has none (segsize=auto then means 0). */
const char *ct_segsize_rule_name(int algo);

/* How one parameter is declared by one algorithm. */
typedef struct {
    ct_param_id_t id;
    long def;             /* default (for algorithm-valued params: see def_algo) */
    long min, max;        /* valid range, inclusive                              */
    const char *def_algo; /* default inner algorithm name for CT_P_BCAST/...     */
} ct_param_spec_t;

#define CT_MAX_ALGO_PARAMS 4

/* ---- constraints --------------------------------------------------------- */
enum {
    CT_NEED_COMMUTATIVE = 1u << 0, /* reorders the reduction                  */
    CT_NEED_POW2        = 1u << 1, /* process count a power of two            */
    CT_NEED_EVEN        = 1u << 2, /* even process count                      */
    CT_NEED_TWO_PROCS   = 1u << 3, /* exactly two processes                   */
    CT_NEED_COUNT_GE_P  = 1u << 4, /* at least one element per process        */
    CT_HIDDEN           = 1u << 30 /* test-only entry, not listed by default  */
};

/* ---- algorithm functions (comm is a private duplicate, tags are free) ----- */
typedef int (*ct_bcast_fn)(void *buf, int count, MPI_Datatype dt, int root,
                           MPI_Comm comm, const ct_params_t *p);
typedef int (*ct_reduce_fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                            MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p);
typedef int (*ct_gather_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                            int rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                            const ct_params_t *p);
typedef int (*ct_allgather_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                               int rcount, MPI_Datatype rdt, MPI_Comm comm,
                               const ct_params_t *p);
typedef int (*ct_allreduce_fn)(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm, const ct_params_t *p);
/* Alltoall(v) algorithms never see MPI_IN_PLACE: the dispatcher gives them a copy
 * of the receive buffer as the send buffer (with the receive counts and type). */
typedef int (*ct_alltoall_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                              int rcount, MPI_Datatype rdt, MPI_Comm comm,
                              const ct_params_t *p);
typedef int (*ct_scatter_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                             int rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                             const ct_params_t *p);
typedef int (*ct_barrier_fn)(MPI_Comm comm, const ct_params_t *p);
typedef int (*ct_alltoallv_fn)(const void *sbuf, const int *scounts, const int *sdispls,
                               MPI_Datatype sdt, void *rbuf, const int *rcounts,
                               const int *rdispls, MPI_Datatype rdt, MPI_Comm comm,
                               const ct_params_t *p);
/* Reduce_scatter(_block): sbuf may be MPI_IN_PLACE (the input is then rbuf's whole
 * vector, the result overwrites its start) */
typedef int (*ct_reduce_scatter_block_fn)(const void *sbuf, void *rbuf, int rcount,
                                          MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                          const ct_params_t *p);
typedef int (*ct_reduce_scatter_fn)(const void *sbuf, void *rbuf, const int *rcounts,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                    const ct_params_t *p);
typedef int (*ct_allgatherv_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                const int *rcounts, const int *displs, MPI_Datatype rdt,
                                MPI_Comm comm, const ct_params_t *p);

/* Gatherv: rcounts, displs and rdt are significant at the root only; Scatterv:
 * scounts, displs and sdt at the root only */
typedef int (*ct_gatherv_fn)(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                             const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                             MPI_Comm comm, const ct_params_t *p);
typedef int (*ct_scatterv_fn)(const void *sbuf, const int *scounts, const int *displs,
                              MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                              int root, MPI_Comm comm, const ct_params_t *p);

typedef struct {
    const char *name;     /* e.g. "binomial"                                      */
    ct_coll_t coll;
    union {
        ct_bcast_fn bcast;
        ct_reduce_fn reduce;
        ct_gather_fn gather;
        ct_allgather_fn allgather;
        ct_allreduce_fn allreduce;
        ct_alltoall_fn alltoall;
        ct_alltoallv_fn alltoallv;
        ct_scatter_fn scatter;
        ct_barrier_fn barrier;
        ct_reduce_scatter_block_fn reduce_scatter_block;
        ct_reduce_scatter_fn reduce_scatter;
        ct_allgatherv_fn allgatherv;
        ct_gatherv_fn gatherv;
        ct_scatterv_fn scatterv;
    } fn;
    int nparams;
    ct_param_spec_t params[CT_MAX_ALGO_PARAMS];
    unsigned constraints; /* CT_NEED_* */
    const char *fallback; /* algorithm of the same collective used when a constraint fails */
    /* Hockney cost, an expression in p (processes), n (bytes), a (alpha, s),
     * b (beta, s/byte), g (gamma, s/byte), s (segment bytes, = n if unsegmented),
     * k (fan-out or radix), with log2, ceil, floor, min, max. */
    const char *cost;
    const char *summary;  /* one line: the communication pattern              */
    const char *ompi_name;  /* the matching Open MPI coll_tuned algorithm, or NULL */
} ct_algo_t;

/* ---- registry ------------------------------------------------------------ */
int ct_algo_count(void);                      /* entries, hidden ones included */
const ct_algo_t *ct_algo_get(int index);      /* NULL if out of range          */
int ct_algo_find(ct_coll_t coll, const char *name); /* index or -1             */
const char *ct_param_name(ct_param_id_t id);  /* "segsize", "fanout", ...      */
const char *ct_param_help(ct_param_id_t id);

/* A chosen algorithm with its parameter values. */
typedef struct {
    int algo;          /* registry index */
    ct_params_t params;
} ct_choice_t;

/* Parse "name" or "name:key=value,key=value" for one collective; an inner
 * algorithm's value is "ALG" or "ALG:key=value+key=value" (ct_inner_value). Unknown
 * names list the valid ones; bad values say the valid range. */
int ct_choice_parse(ct_coll_t coll, const char *spec, ct_choice_t *out);
/* Fill a choice with the algorithm's defaults. */
int ct_choice_default(int algo, ct_choice_t *out);
/* Check a choice (algorithm index and every parameter in range). */
int ct_choice_check(const ct_choice_t *c);
/* "chain:segsize=8192,fanout=4" (writes at most len bytes, always terminated) */
void ct_choice_format(const ct_choice_t *c, char *buf, size_t len);

/* Inner algorithms with parameters of their own. An algorithm-valued parameter
 * (CT_P_INTER, CT_P_INTRA, CT_P_BCAST, CT_P_REDUCE, CT_P_GATHER) holds a registry
 * index (the inner algorithm with its default parameters) or a handle,
 * CT_INNER_BASE + a slot of a process-wide table of inner choices with their own
 * parameters: interned once (the same choice always gets the same value), never
 * freed, at most CT_INNER_MAX of them. A spec writes such a value ALG:key=value,
 * several parameters joined by '+' (',' separates the outer parameters):
 * "hier_ml:inter=pipeline:segsize=8192,leaders=4",
 * "hier:inter=knomial:radix=8+segsize=4096,intra=shm". */
#define CT_INNER_BASE (1L << 20)
#define CT_INNER_MAX 256
/* The value that stands for choice `inner` as an inner algorithm: its registry index
 * when every parameter is the algorithm's default, else its handle. MPI_ERR_ARG for
 * an invalid choice, a hierarchical or test-only algorithm, a remap (the dispatcher
 * remaps the outer call only), inner algorithms of its own with parameters (one level
 * of nesting), or a full table. Thread-safe. */
int ct_inner_value(const ct_choice_t *inner, long *value);
/* The choice a value of an algorithm-valued parameter stands for (an index: the
 * algorithm's default choice). MPI_ERR_ARG for a value that is neither. */
int ct_inner_choice(long value, ct_choice_t *out);

/* ---- dispatch ------------------------------------------------------------ */
int ct_bcast(const ct_choice_t *c, void *buf, int count, MPI_Datatype dt, int root,
             MPI_Comm comm);
int ct_reduce(const ct_choice_t *c, const void *sbuf, void *rbuf, int count,
              MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int ct_gather(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
              void *rbuf, int rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
int ct_allgather(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                 void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm);
int ct_allreduce(const ct_choice_t *c, const void *sbuf, void *rbuf, int count,
                 MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
/* sbuf may be MPI_IN_PLACE (scount and sdt, or scounts, sdispls and sdt, are then
 * ignored) */
int ct_alltoall(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm);
int ct_alltoallv(const ct_choice_t *c, const void *sbuf, const int *scounts,
                 const int *sdispls, MPI_Datatype sdt, void *rbuf, const int *rcounts,
                 const int *rdispls, MPI_Datatype rdt, MPI_Comm comm);
/* rbuf may be MPI_IN_PLACE at the root (rcount and rdt are then ignored there) */
int ct_scatter(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
               void *rbuf, int rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
int ct_barrier(const ct_choice_t *c, MPI_Comm comm);
/* sbuf may be MPI_IN_PLACE (the input is rbuf's whole vector, the result overwrites
 * its start); rbuf is ignored where this rank receives no element */
int ct_reduce_scatter_block(const ct_choice_t *c, const void *sbuf, void *rbuf, int rcount,
                            MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int ct_reduce_scatter(const ct_choice_t *c, const void *sbuf, void *rbuf, const int *rcounts,
                      MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
/* sbuf may be MPI_IN_PLACE (this rank's block is then already at displs[rank] of
 * rbuf; scount and sdt are ignored) */
int ct_allgatherv(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                  void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rdt,
                  MPI_Comm comm);
/* sbuf may be MPI_IN_PLACE at the root (its block is then already at displs[root] of
 * rbuf; scount and sdt are ignored there); rbuf, rcounts, displs and rdt are ignored
 * at the other ranks. Only the root knows the counts, so no rank returns early: every
 * rank runs the algorithm, which skips what is empty (by bytes, not counts). */
int ct_gatherv(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
               void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
               MPI_Comm comm);
/* rbuf may be MPI_IN_PLACE at the root (its block stays at displs[root] of sbuf;
 * rcount and rdt are ignored there); sbuf, scounts, displs and sdt are ignored at the
 * other ranks. */
int ct_scatterv(const ct_choice_t *c, const void *sbuf, const int *scounts,
                const int *displs, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                int root, MPI_Comm comm);

/* What the calling thread's last dispatch actually ran (a record per thread). */
typedef struct {
    int requested;     /* registry index asked for                 */
    int used;          /* registry index that ran                  */
    char reason[160];  /* why a fallback was taken; "" if none     */
    int remap;         /* the rank order applied (CT_REMAP_NONE/SEQ/RR): NONE when
                        * not asked, refused, or the order was already the target */
} ct_dispatch_t;
const ct_dispatch_t *ct_last_dispatch(void);

/* Called on every fallback (default: none), in the thread that made the call. The
 * library never falls back silently: ct_last_dispatch() always records it, and this
 * hook lets a driver print it. Set it before other threads call collectives. */
typedef void (*ct_fallback_hook_t)(const ct_dispatch_t *d);
void ct_set_fallback_hook(ct_fallback_hook_t hook);

/* ---- hierarchy (hier.c) ------------------------------------------------------
 * The collective of the inner algorithm that parameter `id` (CT_P_INTER,
 * CT_P_INTRA, CT_P_BCAST, CT_P_REDUCE, CT_P_GATHER) names in an algorithm of
 * collective `outer`; CT_NCOLL when `id` is no inner-algorithm parameter. */
ct_coll_t ct_hier_inner_coll(ct_coll_t outer, ct_param_id_t id);
/* The node groups the hierarchical algorithms see on comm (collective on first use
 * for a communicator and vppn, then cached with it): vppn > 0 cuts the ranks into
 * consecutive virtual nodes of vppn ranks (the last one may be smaller); 0 takes
 * the communicator's nodes (ct_comm_placement: shared memory, COLLTUNE_NODES or
 * COLLTUNE_VIRTUAL_PPN), each maximal run of consecutive ranks on one node being a
 * group (so that a group's ranks are consecutive and the groups in rank order).
 * *groups: their number; starts (groups + 1 entries, owned by the library): the
 * first rank of each group, and the communicator size last. */
int ct_comm_hier_groups(MPI_Comm comm, int vppn, int *groups, const int **starts);
/* The shared-memory windows of the `shm` algorithms (shm.c) this process holds now:
 * one per communicator that ran one (created on first use, freed with it). */
int ct_shm_windows(void);

/* ---- placement ------------------------------------------------------------
 * The node of every rank of an intracommunicator (collective on first use for a
 * communicator, then cached with it): ranks sharing memory
 * (MPI_Comm_split_type SHARED) are one node, unless COLLTUNE_NODES declares
 * virtual nodes over MPI_COMM_WORLD's ranks:
 *   COLLTUNE_NODES=4          4 nodes; world ranks placed by COLLTUNE_NODE_ORDER=seq
 *                             (default: contiguous blocks, sizes differing by at most
 *                             one) or rr (world rank r on node r mod 4)
 *   COLLTUNE_NODES=0,0,1,1,2  the node of each world rank, one entry per rank
 *   COLLTUNE_VIRTUAL_PPN=3    (without COLLTUNE_NODES) nodes of 3 consecutive world
 *                             ranks, the last one smaller when 3 does not divide them
 * Nodes are numbered by first appearance in the communicator's rank order. */
enum { CT_PLACE_SEQ = 1, CT_PLACE_RR = 2 }; /* kind bits; neither = irregular */
typedef struct {
    int size;        /* P                                                      */
    int nodes;       /* M                                                      */
    int max_per_node;/* Q (the largest node; P == M*Q when regular)            */
    int regular;     /* every node has the same number of ranks                */
    int kind;        /* CT_PLACE_SEQ | CT_PLACE_RR bits (both when M == 1 or M == P) */
    const int *node; /* node of each rank (size entries), owned by the library */
} ct_placement_t;
int ct_comm_placement(MPI_Comm comm, ct_placement_t *out);
/* "seq", "rr", "seq+rr" or "irregular" */
const char *ct_placement_kind_name(int kind);
/* The rank order a remap gives (CT_REMAP_SEQ or CT_REMAP_RR): perm[j] is the
 * communicator rank that plays rank j (size entries, owned by the library). */
int ct_comm_remap_order(MPI_Comm comm, int remap, const int **perm);
/* Collective over comm: makes now what the first call of choice c with this
 * count and op would make on comm (the private duplicate, and for a remap the
 * placement and the permuted communicator), so that the first call costs what
 * every later one does. For simulations, where that is the only first-call
 * effect (colltune-bench --prepare). op: MPI_OP_NULL for Bcast, Gather and
 * Allgather. */
int ct_comm_prepare(const ct_choice_t *c, MPI_Comm comm, int count, MPI_Op op);
/* Timing runs under SimGrid's SMPI only: while on, the scratch of a remapped
 * Allgather (P*count elements per rank) comes from SMPI_SHARED_MALLOC, one
 * memory for all simulated ranks, so its data is meaningless (as the shared
 * message buffers' of `colltune-bench --shared-buffers` are) and large points
 * fit in memory. Scratch allocated before the switch is replaced at the next
 * call. Returns MPI_ERR_ARG when on != 0 in a build that is not for SMPI. */
int ct_remap_shared_scratch(int on);
/* Timing runs under SimGrid's SMPI only (colltune-bench --shared-buffers, whose
 * buffers hold no data anyone reads): while on, the local reductions
 * (MPI_Reduce_local) and the dense copies (ct_copy) of the library's algorithms
 * on this rank are charged as before (simcharge.h: the simulated time does not
 * change) but not carried out, which spares the host their CPU time. Never for
 * a run whose results are read. Returns MPI_ERR_ARG when on != 0 in a build
 * that is not for SMPI. */
int ct_sim_timing_only(int on);

/* ---- traffic accounting ------------------------------------------------------
 * While enabled, every point-to-point send an algorithm of the library makes
 * (MPI_Send, MPI_Isend, MPI_Sendrecv and their variants) adds its bytes and one
 * message to bytes[w] and msgs[w], w = the destination's rank in MPI_COMM_WORLD
 * (arrays of MPI_COMM_WORLD's size, owned by the caller). Disabled (NULL): one
 * predictable branch per send. */
void ct_traffic_enable(long long *bytes, long long *msgs);
void ct_traffic_disable(void);

/* Message of the calling thread's last error ("" if none). */
const char *ct_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* COLLTUNE_H */
