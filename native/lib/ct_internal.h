/*
 * ct_internal.h -- helpers shared by the algorithm files (not installed).
 *
 * Conventions for algorithm implementations:
 *  - comm is a private duplicate of the user's communicator (the dispatcher
 *    makes it), so any tag may be used without clashing with user traffic.
 *  - count == 0 never reaches an algorithm (the dispatcher returns early).
 *  - Data is addressed in elements of the datatype: element i starts at
 *    (char *)buf + i * extent. Temporary buffers come from ct_tmp_alloc so that
 *    derived datatypes with a lower bound or holes work.
 *  - Reductions are applied with MPI_Reduce_local(in, inout, ...), which
 *    computes inout = in (op) inout: "in" is the left operand. Order-preserving
 *    algorithms keep lower ranks on the left.
 *  - Errors: return the MPI error code; set a message with ct_set_error().
 */
#ifndef CT_INTERNAL_H
#define CT_INTERNAL_H

#include "colltune.h"
#include "simcharge.h" /* SMPI only: copies and local reductions charged */

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Tags (each algorithm may use any tag; these are only for readability). */
enum { CT_TAG_BCAST = 100, CT_TAG_REDUCE = 200, CT_TAG_GATHER = 300,
       CT_TAG_ALLGATHER = 400, CT_TAG_ALLREDUCE = 500, CT_TAG_ALLTOALL = 600,
       CT_TAG_SCATTER = 700, CT_TAG_BARRIER = 800,
       CT_TAG_REDUCE_SCATTER = 900, CT_TAG_ALLGATHERV = 1000,
       CT_TAG_GATHERV = 1100, CT_TAG_SCATTERV = 1200 };

#define CT_SEGSIZE(p) ((p)->v[CT_P_SEGSIZE])
#define CT_FANOUT(p) ((int)(p)->v[CT_P_FANOUT])
#define CT_RADIX(p) ((int)(p)->v[CT_P_RADIX])
#define CT_MAX_REQUESTS(p) ((p)->v[CT_P_MAX_REQUESTS])

/* Per-thread state on the path of every call (the dispatch record, the
 * communicator table): C11 _Thread_local, in the initial-exec model where the
 * compiler has it, so that libcolltune-pmpi.so (preloaded or linked, so loaded at
 * start-up) reaches it with one load instead of a call to __tls_get_addr. Not
 * under SimGrid's SMPI, which loads the program once per simulated rank with
 * dlopen (static TLS would run out). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(SMPI_SHARED_MALLOC)
#define CT_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define CT_THREAD_LOCAL _Thread_local
#endif

/* Return on MPI error. */
#define CT_CHECK(call)                                                     \
    do {                                                                   \
        int ct_rc_ = (call);                                               \
        if (ct_rc_ != MPI_SUCCESS) return ct_rc_;                          \
    } while (0)

/* Run `call` in a function with an `int rc` and a cleanup label `out`: on an MPI
 * error, jump to `out` with rc set. */
#define CT_TRY(call)                                                       \
    do {                                                                   \
        rc = (call);                                                       \
        if (rc != MPI_SUCCESS) goto out;                                   \
    } while (0)

/* Set the message returned by ct_last_error(); returns code. */
int ct_set_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Datatype geometry. */
typedef struct {
    MPI_Aint lb, extent;           /* MPI_Type_get_extent      */
    MPI_Aint true_lb, true_extent; /* MPI_Type_get_true_extent */
    int size;                      /* bytes of data per element */
} ct_type_t;
/* The geometry of the predefined datatypes a process has used (util.c): entries
 * only ever added, each written before the count that publishes it; read
 * without a lock, inline, so that a predefined type costs a few instructions
 * (a call into util.c cost 19-30 a lookup, callgrind) */
#define CT_TCACHE 16
typedef struct {
    MPI_Datatype dt;
    ct_type_t t;
} ct_tcache_entry_t;
extern ct_tcache_entry_t ct_tcache_[CT_TCACHE];
extern _Atomic int ct_tcache_n_;
static inline const ct_type_t *ct_type_cached(MPI_Datatype dt) {
    for (int i = 0, n = atomic_load_explicit(&ct_tcache_n_, memory_order_acquire); i < n; i++)
        if (ct_tcache_[i].dt == dt) return &ct_tcache_[i].t;
    return NULL;
}
int ct_type_slow(MPI_Datatype dt, ct_type_t *t);
int ct_type_size_slow(MPI_Datatype dt, int *size);
int ct_type_size_call(MPI_Datatype dt, int *size); /* out of line, for native/pmpi */
static inline int ct_type(MPI_Datatype dt, ct_type_t *t) {
    const ct_type_t *c = ct_type_cached(dt);
    if (c) {
        *t = *c;
        return MPI_SUCCESS;
    }
    return ct_type_slow(dt, t);
}
/* MPI_Type_size; predefined types are answered without a call after first use */
static inline int ct_type_size(MPI_Datatype dt, int *size) {
    const ct_type_t *c = ct_type_cached(dt);
    if (c) {
        *size = c->size;
        return MPI_SUCCESS;
    }
    return ct_type_size_slow(dt, size);
}
/* " (did you mean 'x'?)" into buf for the one of `cands` closest to `word` when it
 * is close enough to be a typo, else "" (as base/errors.did_you_mean in Python) */
void ct_did_you_mean(const char *word, const char *const *cands, int n, char *buf,
                     size_t len);

/* Address of element i of buf. */
static inline char *ct_elem(const void *buf, MPI_Aint i, const ct_type_t *t) {
    return (char *)buf + i * t->extent;
}

/* Allocate room for count elements of dt; returns the buffer pointer to use in
 * MPI calls (already shifted by -true_lb) and the raw pointer to free() in *raw.
 * Returns NULL with *raw == NULL when out of memory (count <= 0 gives a valid
 * dummy buffer). */
void *ct_tmp_alloc(MPI_Aint count, const ct_type_t *t, void **raw);

/* The same from a small buffer of the caller's (on its stack) when the count
 * elements fit in `bytes` bytes of it -- *raw is then NULL, and free(*raw) is
 * still right -- else from malloc. A small message's malloc and free cost as
 * much as its exchange (callgrind: about 100 instructions a call). */
void *ct_tmp_alloc_in(MPI_Aint count, const ct_type_t *t, void **raw, void *small,
                      size_t bytes);
/* room for a small temporary on the stack, aligned for any basic type */
#define CT_TMP_SMALL 256
typedef union {
    char c[CT_TMP_SMALL];
    long double ld;
    long long ll;
    void *p;
} ct_small_t;

/* Local copy of count elements between buffers laid out with datatype dt. */
int ct_copy(const void *src, void *dst, int count, MPI_Datatype dt);
/* The same when the caller has the datatype's geometry t already. */
int ct_copy_t(const void *src, void *dst, int count, MPI_Datatype dt, const ct_type_t *t);
/* Local copy between two layouts of the same type signature (scount x sdt into
 * rcount x rdt); a plain ct_copy when both are the same. */
int ct_copy_sig(const void *src, int scount, MPI_Datatype sdt, void *dst, int rcount,
                MPI_Datatype rdt);
/* The same when the caller has rdt's geometry rt already: one type and count on
 * both sides copy with it (no second type lookup: callgrind, Gather `linear` root
 * at 8 B, about 90 instructions a call), else the conversion of ct_copy_sig. */
static inline int ct_copy_sig_t(const void *src, int scount, MPI_Datatype sdt, void *dst,
                                int rcount, MPI_Datatype rdt, const ct_type_t *rt) {
    if (sdt == rdt && scount == rcount) return ct_copy_t(src, dst, rcount, rdt, rt);
    return ct_copy_sig(src, scount, sdt, dst, rcount, rdt);
}

/* ---- the type signature as a byte stream ----------------------------------
 * MPI lets every rank describe a message with its own count and datatype as
 * long as the type signatures match. Algorithms that cut a message into
 * segments or blocks therefore cut the signature's bytes (count * size, the
 * same on every rank), never elements of a rank's own datatype. A rank whose
 * datatype is dense (ct_type_dense) uses its buffer as the stream directly
 * (from buf + true_lb); any other rank packs into / unpacks from a contiguous
 * temporary. Every rank cuts the stream at the same byte offsets, so all ranks
 * exchange the same messages whatever their datatypes. */
#define CT_PIECE (1L << 30) /* largest byte message: int counts never overflow */
int ct_type_dense(MPI_Datatype dt, const ct_type_t *t); /* t: ct_type(dt) */
/* count elements of dt at buf -> count*size bytes at out, and back. */
int ct_pack_stream(const void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                   char *out, MPI_Comm comm);
int ct_unpack_stream(const char *in, void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                     MPI_Comm comm);
/* The same with the type's density at hand (dense: ct_type_dense(dt, t)): one memcpy
 * from/to buf + true_lb for a dense type, MPI_Pack/MPI_Unpack otherwise. */
int ct_to_stream(const void *buf, int count, MPI_Datatype dt, const ct_type_t *t, int dense,
                 char *out, MPI_Comm comm);
int ct_from_stream(const char *in, void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                   int dense, MPI_Comm comm);

/* Elements per segment for this datatype and segment size in bytes:
 * count if segsize == 0 or larger than the message, at least 1 otherwise
 * (segments are split at whole elements). */
int ct_seg_elems(long segsize, int count, const ct_type_t *t);

/* The input of a rank of a reduction: sbuf, or rbuf where sbuf == MPI_IN_PLACE. */
static inline const void *ct_input_of(const void *sbuf, const void *rbuf) {
    return sbuf == MPI_IN_PLACE ? rbuf : sbuf;
}

/* How one block of a Gather/Allgather travels: `per` elements of `dt`, `ext` bytes
 * apart in memory, so that counts of up to nmax blocks never overflow an int. */
typedef struct {
    MPI_Datatype dt;
    int per;       /* elements of dt per block                                */
    MPI_Aint ext;  /* bytes from one block to the next                        */
    int owned;     /* dt was created here (contiguous block type): free it    */
    ct_type_t t;   /* geometry of the element type (for temporaries)          */
} ct_blk_t;
/* Blocks of `count` elements of `dt` in messages of up to `nmax` blocks: the
 * element type itself when nmax*count fits an int, else a contiguous block type
 * (counts are then in blocks). */
int ct_blk_init(ct_blk_t *b, int count, MPI_Datatype dt, int nmax);
void ct_blk_free(ct_blk_t *b);

/* Split count elements into p nearly equal blocks: block i has
 * ct_block_count(count,p,i) elements starting at ct_block_start(count,p,i). */
static inline int ct_block_count(int count, int p, int i) {
    return count / p + (i < count % p ? 1 : 0);
}
static inline int ct_block_start(int count, int p, int i) {
    return i * (count / p) + (i < count % p ? i : count % p);
}

/* Largest power of two <= n (n >= 1). */
static inline int ct_pow2_floor(int n) {
    int r = 1;
    while (r * 2 <= n) r *= 2;
    return r;
}

/* The schedule of Allgather(v)'s neighbor exchange (Chen et al.), even np: in step
 * 0 rank r swaps its block with nb[0] (ranks 2i and 2i+1 pair up), so each holds
 * the pair starting at block r - r%2; then for np/2-1 steps it alternates between
 * its two neighbours (even ranks: left first, odd ranks: right first), passing on
 * the pair it received in the previous step and receiving the next pair from that
 * side. */
typedef struct {
    int np;
    int nb[2];   /* nb[0]: the pair partner (step 0 and even steps), nb[1]: the other side */
    int step[2]; /* pairs arrive from each side moving away by 2 blocks per step */
    int last[2]; /* the first block of the last pair received from each side */
    int from;    /* the first block of the pair to send next */
} ct_nbx_t;
static inline void ct_nbx_init(ct_nbx_t *x, int np, int r) {
    const int even = r % 2 == 0;
    x->np = np;
    x->nb[0] = even ? (r + 1) % np : (r - 1 + np) % np;
    x->nb[1] = even ? (r - 1 + np) % np : (r + 1) % np;
    x->step[0] = even ? 2 : -2;
    x->step[1] = even ? -2 : 2;
    x->last[0] = x->last[1] = x->from = r - r % 2;
}
/* Step i (1 .. np/2-1): returns the peer; the pair sent starts at block *send, the
 * pair received at block *recv. */
static inline int ct_nbx_step(ct_nbx_t *x, int i, int *send, int *recv) {
    const int s = i % 2;
    x->last[s] = (x->last[s] + x->step[s] + x->np) % x->np;
    *send = x->from;
    *recv = x->from = x->last[s];
    return x->nb[s];
}

/* MPI_Comm_size and MPI_Comm_rank of comm in one call, answered without a call
 * into the MPI library for the private communicator the dispatcher just handed
 * to the algorithm (dispatch.c sets ct_geom_ for the call) -- the two calls cost
 * about 60 instructions, a tenth of a small broadcast's own work; inline, the
 * answer costs a few (a call of its own cost 22, callgrind). */
typedef struct {
    MPI_Comm dup;
    int size, rank;
} ct_geom_t;
extern CT_THREAD_LOCAL const ct_geom_t *ct_geom_;
int ct_comm_geom_slow(MPI_Comm comm, int *size, int *rank);
static inline int ct_comm_geom(MPI_Comm comm, int *size, int *rank) {
    const ct_geom_t *g = ct_geom_;
    if (g && g->dup == comm && comm != MPI_COMM_NULL) {
        *size = g->size;
        *rank = g->rank;
        return MPI_SUCCESS;
    }
    return ct_comm_geom_slow(comm, size, rank);
}

/* ---- choices (choice.c) ------------------------------------------------------ */
/* How algorithm a declares parameter id; NULL if it has no such parameter. */
const ct_param_spec_t *ct_param_spec(const ct_algo_t *a, ct_param_id_t id);

/* ---- traffic accounting (traffic.c, ct_traffic_enable) ----------------------
 * Algorithms send only through these: a plain MPI call when accounting is off
 * (one well-predicted branch), the bytes and one message per destination world
 * rank added first when it is on. */
extern long long *ct_traffic_bytes_, *ct_traffic_msgs_;
void ct_traffic_add(int count, MPI_Datatype dt, int dest, MPI_Comm comm);
#if defined(__GNUC__)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CT_UNLIKELY(x) (x)
#endif
static inline int ct_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                          MPI_Comm comm) {
    if (CT_UNLIKELY(ct_traffic_bytes_ != NULL)) ct_traffic_add(count, dt, dest, comm);
    return MPI_Send(buf, count, dt, dest, tag, comm);
}
static inline int ct_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                           MPI_Comm comm, MPI_Request *req) {
    if (CT_UNLIKELY(ct_traffic_bytes_ != NULL)) ct_traffic_add(count, dt, dest, comm);
    return MPI_Isend(buf, count, dt, dest, tag, comm, req);
}
static inline int ct_sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest,
                              int stag, void *rbuf, int rcount, MPI_Datatype rdt, int src,
                              int rtag, MPI_Comm comm, MPI_Status *st) {
    if (CT_UNLIKELY(ct_traffic_bytes_ != NULL)) ct_traffic_add(scount, sdt, dest, comm);
    return MPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm,
                        st);
}

/* ---- placement and remapping (remap.c; the dispatcher calls in, never back) ---- */
typedef struct ct_place {
    ct_placement_t pub;
    int *node;
    int *perm[3], *inv[3]; /* indexed by CT_REMAP_SEQ / CT_REMAP_RR: new -> old, old -> new */
    int ident[3];          /* that order is the communicator's own                */
    MPI_Comm rcomm[3];     /* the permuted communicators, made on first use         */
    void *scratch;         /* Allgather's remap scratch, kept for the next call     */
    size_t scratch_bytes;
    int scratch_shared;    /* scratch from SMPI_SHARED_MALLOC (ct_remap_shared_scratch) */
} ct_place_t;
/* Allgather's remap scratch of at least `bytes` (page-aligned, kept in pl for the
 * next call, from SMPI_SHARED_MALLOC while ct_remap_shared_scratch is on); NULL
 * when out of memory. */
void *ct_place_scratch(ct_place_t *pl, size_t bytes);
/* collective over dup (one Allgather of an int) */
int ct_place_build(MPI_Comm dup, int rank, int size, ct_place_t **out);
int ct_place_comm(ct_place_t *pl, MPI_Comm dup, int rank, int target, MPI_Comm *out);
void ct_place_free(ct_place_t *pl, int finalized);
/* Allgather run by `fn` on the permuted communicator pcomm (remap.c): the blocks
 * gathered in new-rank order into pl's scratch, then each put at the caller's rank
 * perm[j] by one local copy. */
int ct_remap_allgather(ct_allgather_fn fn, const ct_params_t *prm, const void *sbuf, int scount,
                       MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                       ct_place_t *pl, int rank, int p, MPI_Comm pcomm, const int *perm);

/* Inner algorithms of composite algorithms (e.g. Allreduce reduce_bcast): run
 * `algo`, the value of an inner-algorithm parameter (a registry index: the entry
 * with its default parameters; a ct_inner_value handle: the choice with its own), on
 * an already private communicator, applying its declared fallback if needed. */
int ct_run_bcast(int algo, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int ct_run_reduce(int algo, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                  MPI_Op op, int root, MPI_Comm comm);
int ct_run_gather(int algo, const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                  int rcount, MPI_Datatype rdt, int root, MPI_Comm comm);
/* the same for the phases of the hierarchical algorithms (hier.c), on
 * ct_inner_resolve (dispatch.c): the inner choice `algo` stands for, or its
 * declared fallback (reported in the outer call's record) */
int ct_inner_resolve(int algo, ct_coll_t coll, MPI_Comm comm, int count, MPI_Op op,
                     ct_choice_t *run);
int ct_run_allreduce(int algo, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                     MPI_Op op, MPI_Comm comm);
int ct_run_barrier(int algo, MPI_Comm comm);
int ct_run_allgatherv(int algo, const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                      const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm);
int ct_run_alltoallv(int algo, const void *sbuf, const int *scounts, const int *sdispls,
                     MPI_Datatype sdt, void *rbuf, const int *rcounts, const int *rdispls,
                     MPI_Datatype rdt, MPI_Comm comm);

/* MPI_IN_PLACE for Alltoall(v) (alltoall.c, for the dispatcher): a copy of the
 * receive buffer's blocks (block j: rcounts[j] elements at rdispls[j]) as the send
 * buffer; free(*raw) afterwards. */
int ct_a2a_inplace_copy(const void *rbuf, const int *rcounts, const int *rdispls,
                        MPI_Datatype rdt, int p, void **raw, const void **sbuf);

/* The first half of a collective call made in dispatch.c for entry points in other
 * files (dispatch_v.c): the communicator's facts (size, rank) and the algorithm to run
 * (*ra, its choice *run, a declared fallback's in fb), recorded for ct_last_dispatch;
 * then the communicator it runs on (the caller's for native, else the private
 * duplicate: collective on first use). k must stay where it is between the two. */
typedef struct {
    ct_choice_t fb;
    const ct_choice_t *run;
    const ct_algo_t *ra;
    void *ci; /* dispatch.c's facts of the communicator */
    int size, rank;
} ct_call_t;
int ct_call_begin(ct_coll_t coll, const ct_choice_t *c, MPI_Comm comm, ct_call_t *k);
int ct_call_comm(const ct_call_t *k, ct_coll_t coll, MPI_Comm comm, MPI_Comm *pc);

/* ---- algorithm implementations (one source file per collective) ---------- */
#define CT_DECL_BCAST(name) \
    int name(void *, int, MPI_Datatype, int, MPI_Comm, const ct_params_t *)
#define CT_DECL_REDUCE(name)                                                     \
    int name(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm, \
             const ct_params_t *)
#define CT_DECL_GATHER(name)                                                  \
    int name(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, \
             MPI_Comm, const ct_params_t *)
#define CT_DECL_ALLGATHER(name)                                          \
    int name(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, \
             MPI_Comm, const ct_params_t *)
#define CT_DECL_ALLREDUCE(name) \
    int name(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, const ct_params_t *)
#define CT_DECL_ALLTOALL(name) CT_DECL_ALLGATHER(name)
#define CT_DECL_ALLTOALLV(name)                                                             \
    int name(const void *, const int *, const int *, MPI_Datatype, void *, const int *, \
             const int *, MPI_Datatype, MPI_Comm, const ct_params_t *)

/* bcast.c */
CT_DECL_BCAST(ct_bcast_native);
CT_DECL_BCAST(ct_bcast_linear);
CT_DECL_BCAST(ct_bcast_linear_nb);
CT_DECL_BCAST(ct_bcast_chain);
CT_DECL_BCAST(ct_bcast_pipeline);
CT_DECL_BCAST(ct_bcast_binary);
CT_DECL_BCAST(ct_bcast_split_binary);
CT_DECL_BCAST(ct_bcast_binomial);
CT_DECL_BCAST(ct_bcast_knomial);
CT_DECL_BCAST(ct_bcast_scatter_allgather);
CT_DECL_BCAST(ct_bcast_scatter_ring_allgather);
CT_DECL_BCAST(ct_bcast_scatter_direct_allgather);
CT_DECL_BCAST(ct_bcast_broken); /* test-only: corrupts data on purpose */

/* reduce.c */
CT_DECL_REDUCE(ct_reduce_native);
CT_DECL_REDUCE(ct_reduce_linear);
CT_DECL_REDUCE(ct_reduce_chain);
CT_DECL_REDUCE(ct_reduce_pipeline);
CT_DECL_REDUCE(ct_reduce_binary);
CT_DECL_REDUCE(ct_reduce_binomial);
CT_DECL_REDUCE(ct_reduce_in_order_binary);
CT_DECL_REDUCE(ct_reduce_rabenseifner);

/* gather.c */
CT_DECL_GATHER(ct_gather_native);
CT_DECL_GATHER(ct_gather_linear);
CT_DECL_GATHER(ct_gather_linear_nb);
CT_DECL_GATHER(ct_gather_binomial);

/* allgather.c */
CT_DECL_ALLGATHER(ct_allgather_native);
CT_DECL_ALLGATHER(ct_allgather_linear);
CT_DECL_ALLGATHER(ct_allgather_gather_bcast);
CT_DECL_ALLGATHER(ct_allgather_ring);
CT_DECL_ALLGATHER(ct_allgather_recursive_doubling);
CT_DECL_ALLGATHER(ct_allgather_recursive_halving);
CT_DECL_ALLGATHER(ct_allgather_bruck);
CT_DECL_ALLGATHER(ct_allgather_neighbor_exchange);
CT_DECL_ALLGATHER(ct_allgather_two_proc);
CT_DECL_ALLGATHER(ct_allgather_sparbit);

/* allreduce.c */
CT_DECL_ALLREDUCE(ct_allreduce_native);
CT_DECL_ALLREDUCE(ct_allreduce_reduce_bcast);
CT_DECL_ALLREDUCE(ct_allreduce_basic_linear);
CT_DECL_ALLREDUCE(ct_allreduce_recursive_doubling);
CT_DECL_ALLREDUCE(ct_allreduce_ring);
CT_DECL_ALLREDUCE(ct_allreduce_segmented_ring);
CT_DECL_ALLREDUCE(ct_allreduce_rabenseifner);
CT_DECL_ALLREDUCE(ct_allreduce_allgather_reduce);

/* alltoall.c */
CT_DECL_ALLTOALL(ct_alltoall_native);
CT_DECL_ALLTOALL(ct_alltoall_linear);
CT_DECL_ALLTOALL(ct_alltoall_pairwise);
CT_DECL_ALLTOALL(ct_alltoall_bruck);
CT_DECL_ALLTOALL(ct_alltoall_linear_sync);
CT_DECL_ALLTOALL(ct_alltoall_two_proc);
CT_DECL_ALLTOALL(ct_alltoall_broken); /* test-only: corrupts data on purpose */
CT_DECL_ALLTOALLV(ct_alltoallv_native);
CT_DECL_ALLTOALLV(ct_alltoallv_linear);
CT_DECL_ALLTOALLV(ct_alltoallv_pairwise);

/* scatter.c */
#define CT_DECL_SCATTER(name) CT_DECL_GATHER(name)
CT_DECL_SCATTER(ct_scatter_native);
CT_DECL_SCATTER(ct_scatter_linear);
CT_DECL_SCATTER(ct_scatter_linear_nb);
CT_DECL_SCATTER(ct_scatter_binomial);

/* barrier.c */
#define CT_DECL_BARRIER(name) int name(MPI_Comm, const ct_params_t *)
CT_DECL_BARRIER(ct_barrier_native);
CT_DECL_BARRIER(ct_barrier_linear);
CT_DECL_BARRIER(ct_barrier_double_ring);
CT_DECL_BARRIER(ct_barrier_recursive_doubling);
CT_DECL_BARRIER(ct_barrier_bruck);
CT_DECL_BARRIER(ct_barrier_two_proc);
CT_DECL_BARRIER(ct_barrier_tree);

/* reduce_scatter.c */
#define CT_DECL_REDUCE_SCATTER(name)                                                       \
    int name(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm, \
             const ct_params_t *)
#define CT_DECL_REDUCE_SCATTER_BLOCK(name) CT_DECL_ALLREDUCE(name)
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_native);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_nonoverlapping);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_recursive_halving);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_butterfly);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_recursive_doubling);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_ring);
CT_DECL_REDUCE_SCATTER(ct_reduce_scatter_pairwise);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_native);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_basic_linear);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_recursive_halving);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_butterfly);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_recursive_doubling);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_ring);
CT_DECL_REDUCE_SCATTER_BLOCK(ct_reduce_scatter_block_pairwise);
/* allgatherv.c */
#define CT_DECL_ALLGATHERV(name)                                                      \
    int name(const void *, int, MPI_Datatype, void *, const int *, const int *, \
             MPI_Datatype, MPI_Comm, const ct_params_t *)
CT_DECL_ALLGATHERV(ct_allgatherv_native);
CT_DECL_ALLGATHERV(ct_allgatherv_linear);
CT_DECL_ALLGATHERV(ct_allgatherv_gatherv_bcast);
CT_DECL_ALLGATHERV(ct_allgatherv_ring);
CT_DECL_ALLGATHERV(ct_allgatherv_bruck);
CT_DECL_ALLGATHERV(ct_allgatherv_recursive_doubling);
CT_DECL_ALLGATHERV(ct_allgatherv_neighbor_exchange);
CT_DECL_ALLGATHERV(ct_allgatherv_two_proc);
CT_DECL_ALLGATHERV(ct_allgatherv_sparbit);
CT_DECL_ALLGATHERV(ct_allgatherv_broken); /* test-only: corrupts data on purpose */
/* gatherv.c (Gatherv and Scatterv) */
#define CT_DECL_GATHERV(name)                                                              \
    int name(const void *, int, MPI_Datatype, void *, const int *, const int *, MPI_Datatype, \
             int, MPI_Comm, const ct_params_t *)
#define CT_DECL_SCATTERV(name)                                                             \
    int name(const void *, const int *, const int *, MPI_Datatype, void *, int, MPI_Datatype, \
             int, MPI_Comm, const ct_params_t *)
CT_DECL_GATHERV(ct_gatherv_native);
CT_DECL_GATHERV(ct_gatherv_linear);
CT_DECL_GATHERV(ct_gatherv_linear_nb);
CT_DECL_GATHERV(ct_gatherv_binomial);
CT_DECL_GATHERV(ct_gatherv_broken); /* test-only: corrupts data on purpose */
CT_DECL_SCATTERV(ct_scatterv_native);
CT_DECL_SCATTERV(ct_scatterv_linear);
CT_DECL_SCATTERV(ct_scatterv_linear_nb);
CT_DECL_SCATTERV(ct_scatterv_binomial);

/* hier.c: node-aware algorithms (node groups, leaders, inter and intra phases) */
CT_DECL_BCAST(ct_bcast_hier);
CT_DECL_REDUCE(ct_reduce_hier);
CT_DECL_ALLREDUCE(ct_allreduce_hier);
CT_DECL_BARRIER(ct_barrier_hier);
CT_DECL_ALLGATHER(ct_allgather_hier);
CT_DECL_ALLGATHERV(ct_allgatherv_hier);
CT_DECL_ALLTOALL(ct_alltoall_hier);
CT_DECL_BCAST(ct_bcast_hier_ml);
CT_DECL_ALLREDUCE(ct_allreduce_hier_ml);
/* shm.c: a shared-memory window per communicator of one node */
CT_DECL_BCAST(ct_bcast_shm);
CT_DECL_REDUCE(ct_reduce_shm);
CT_DECL_ALLREDUCE(ct_allreduce_shm);
CT_DECL_BARRIER(ct_barrier_shm);
/* an algorithm that runs another one instead, for a reason only it can see (shm.c:
 * ranks on several nodes): recorded in the call's dispatch record, reported by the
 * fallback hook (dispatch.c) */
void ct_note_fallback(const char *why);

#endif /* CT_INTERNAL_H */
