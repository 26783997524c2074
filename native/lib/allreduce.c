/*
 * allreduce.c -- Allreduce algorithms (see registry.c for the table).
 *
 * Every algorithm follows MPI_Allreduce semantics: on return rbuf holds
 * x0 op x1 op ... op x(p-1) on every rank, where xi is rank i's input
 * (sbuf, or rbuf itself when sbuf == MPI_IN_PLACE). Algorithms that are not
 * declared CT_NEED_COMMUTATIVE keep that rank order exactly, so they are
 * correct for any associative op. Reductions use MPI_Reduce_local(in, inout),
 * i.e. inout = in op inout: the left operand is always the lower ranks' data.
 *
 * Most algorithms first copy the input into rbuf and then work in place there,
 * so MPI_IN_PLACE needs no special case after the first lines.
 */
#include "ct_internal.h"

#include <limits.h>
#include <stdint.h>

/* Copy the input into rbuf (nothing to do for MPI_IN_PLACE). */
static int input_to_rbuf(const void *sbuf, void *rbuf, int count, MPI_Datatype dt) {
    if (sbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    return ct_copy(sbuf, rbuf, count, dt);
}

/* inout = in op inout, skipping empty ranges. */
static int combine(const void *in, void *inout, int n, MPI_Datatype dt, MPI_Op op) {
    if (n <= 0) return MPI_SUCCESS;
    return MPI_Reduce_local(in, inout, n, dt, op);
}

static int alloc_failed(const char *algo, MPI_Aint count, const ct_type_t *t) {
    return ct_set_error(MPI_ERR_NO_MEM,
                        "allreduce/%s: cannot allocate a temporary buffer of %lld elements "
                        "(%lld bytes)",
                        algo, (long long)count, (long long)(count * t->extent));
}

/*
 * Ranks folded for a power-of-two core (used by recursive_doubling and
 * rabenseifner). With pof2 = largest power of two <= p and rem = p - pof2,
 * the first 2*rem ranks pair up as (2i, 2i+1): the even rank sends its vector
 * to the odd one, which combines them as x(2i) op x(2i+1) and takes the new
 * rank i; the even rank sits out (new rank -1). Ranks >= 2*rem take new rank
 * rank - rem. New rank j therefore holds the reduction of a contiguous,
 * increasing range of old ranks, so rank order is preserved.
 */
static int fold_newrank(int rank, int rem) {
    if (rank < 2 * rem) return (rank % 2) ? rank / 2 : -1;
    return rank - rem;
}
static int fold_oldrank(int newrank, int rem) {
    return newrank < rem ? 2 * newrank + 1 : newrank + rem;
}

/* Fold step: even ranks of the first 2*rem send, odd ones receive into tmp
 * and combine (lower rank on the left). */
static int fold_in(void *rbuf, void *tmp, int count, MPI_Datatype dt, MPI_Op op, int rank,
                   int rem, MPI_Comm comm) {
    if (rank >= 2 * rem) return MPI_SUCCESS;
    if (rank % 2 == 0)
        return ct_send(rbuf, count, dt, rank + 1, CT_TAG_ALLREDUCE, comm);
    CT_CHECK(MPI_Recv(tmp, count, dt, rank - 1, CT_TAG_ALLREDUCE, comm, MPI_STATUS_IGNORE));
    return combine(tmp, rbuf, count, dt, op);
}

/* Unfold step: odd ranks of the first 2*rem hand the result to their even partner. */
static int fold_out(void *rbuf, int count, MPI_Datatype dt, int rank, int rem,
                    MPI_Comm comm) {
    if (rank >= 2 * rem) return MPI_SUCCESS;
    if (rank % 2)
        return ct_send(rbuf, count, dt, rank - 1, CT_TAG_ALLREDUCE + 1, comm);
    return MPI_Recv(rbuf, count, dt, rank + 1, CT_TAG_ALLREDUCE + 1, comm, MPI_STATUS_IGNORE);
}

/* ------------------------------------------------------------------ native */
int ct_allreduce_native(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

/* ------------------------------------------------------------ reduce_bcast */
/*
 * A colltune Reduce to rank 0 (algorithm p->v[CT_P_REDUCE], with its declared
 * fallback, e.g. for a non-commutative op), then a colltune Bcast from rank 0
 * (algorithm p->v[CT_P_BCAST]). On ranks other than 0 the Reduce's rbuf is not
 * significant, so NULL is passed there and the Bcast writes rbuf afterwards.
 */
int ct_allreduce_reduce_bcast(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    int reduce_algo = (int)p->v[CT_P_REDUCE], bcast_algo = (int)p->v[CT_P_BCAST];
    if (rank == 0)
        CT_CHECK(ct_run_reduce(reduce_algo, sbuf, rbuf, count, dt, op, 0, comm));
    else
        CT_CHECK(ct_run_reduce(reduce_algo, ct_input_of(sbuf, rbuf), NULL, count, dt, op, 0,
                               comm));
    return ct_run_bcast(bcast_algo, rbuf, count, dt, 0, comm);
}

/* ------------------------------------------------------------ basic_linear */
/*
 * colltune's linear Reduce to rank 0 (rank 0 receives every other vector and
 * accumulates x0 op ... op x(p-1) in rank order directly in rbuf, so any
 * associative op works), then its linear_nb Bcast from rank 0 (an Isend to
 * every rank at once). Open MPI's basic_linear has the same two phases.
 */
int ct_allreduce_basic_linear(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    int size, rank;
    CT_CHECK(ct_comm_geom(comm, &size, &rank));
    if (size == 1) return input_to_rbuf(sbuf, rbuf, count, dt);
    /* in place, every rank's input is in rbuf: the Reduce reads it there too */
    CT_CHECK(ct_reduce_linear(sbuf, rbuf, count, dt, op, 0, comm, p));
    /* all sends posted at once, as Open MPI's basic_linear broadcasts */
    return ct_bcast_linear_nb(rbuf, count, dt, 0, comm, p);
}

/* ------------------------------------------------------ recursive_doubling */
/*
 * Extra ranks are folded into partners first (see fold_newrank), leaving a
 * power-of-two set of new ranks. In round j (mask = 2^j) new ranks r and
 * r ^ mask exchange their whole vectors and both combine them, the lower new
 * rank's data on the left; after the round each holds the reduction of the
 * aligned group of 2*mask consecutive new ranks, i.e. of consecutive old
 * ranks, so the order x0 .. x(p-1) is kept for any associative op. Finally
 * the folded-out ranks get the result from their partners.
 * One temporary vector; the working vector alternates between rbuf and it to
 * avoid a copy per round.
 */
int ct_allreduce_recursive_doubling(const void *sbuf, void *rbuf, int count,
                                    MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                    const ct_params_t *p) {
    (void)p;
    int rank, size, rc = MPI_SUCCESS;
    void *tmp_raw = NULL;
    ct_type_t t;
    ct_small_t small;
    CT_CHECK(ct_comm_geom(comm, &size, &rank));
    CT_CHECK(ct_type(dt, &t));
    if (sbuf != MPI_IN_PLACE) CT_CHECK(ct_copy_t(sbuf, rbuf, count, dt, &t));
    if (size == 1) return MPI_SUCCESS;

    void *tmp = ct_tmp_alloc_in(count, &t, &tmp_raw, &small, sizeof small);
    if (!tmp) return alloc_failed("recursive_doubling", count, &t);

    int pof2 = ct_pow2_floor(size), rem = size - pof2;
    int newrank = fold_newrank(rank, rem);
    CT_TRY(fold_in(rbuf, tmp, count, dt, op, rank, rem, comm));

    if (newrank >= 0) {
        void *cur = rbuf, *other = tmp; /* cur holds the partial result */
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int newpeer = newrank ^ mask, peer = fold_oldrank(newpeer, rem);
            CT_TRY(ct_sendrecv(cur, count, dt, peer, CT_TAG_ALLREDUCE, other, count, dt, peer,
                             CT_TAG_ALLREDUCE, comm, MPI_STATUS_IGNORE));
            if (newpeer < newrank) {
                CT_TRY(combine(other, cur, count, dt, op)); /* cur = peer op cur */
            } else {
                CT_TRY(combine(cur, other, count, dt, op)); /* other = cur op peer */
                void *swap = cur;
                cur = other;
                other = swap;
            }
        }
        if (cur != rbuf) CT_TRY(ct_copy_t(cur, rbuf, count, dt, &t));
    }
    CT_TRY(fold_out(rbuf, count, dt, rank, rem, comm));
out:
    free(tmp_raw);
    return rc;
}

/* -------------------------------------------------------------------- ring */
/* The p blocks of count elements (ct_block_count/ct_block_start) with the one
 * division made once per call: q = count / p, rem = count % p. */
typedef struct {
    int q, rem;
} blocks_t;
static inline int blk_count(blocks_t b, int i) { return b.q + (i < b.rem); }
static inline int blk_start(blocks_t b, int i) { return i * b.q + (i < b.rem ? i : b.rem); }

/* Length of block b's segment in phase ph (0 when the block is shorter). */
static inline int seg_len(blocks_t bl, int b, int ph, int segcount) {
    int left = blk_count(bl, b) - ph * segcount;
    return left <= 0 ? 0 : left < segcount ? left : segcount;
}

/* First element of block b's segment in phase ph (clamped to the block's end). */
static inline int seg_start(blocks_t bl, int b, int ph, int segcount) {
    int bc = blk_count(bl, b), off = ph * segcount;
    return blk_start(bl, b) + (off < bc ? off : bc);
}

/* x mod p for -p < x < 2p, without a division */
static inline int ring_wrap(int x, int p) { return x < 0 ? x + p : x >= p ? x - p : x; }

/*
 * Ring allreduce over p blocks (block i: ct_block_start/ct_block_count, empty
 * when count < p), shared by ring and segmented_ring.
 *
 * Reduce-scatter: each block is cut into segments of segcount elements and
 * the segments are processed in phases; in phase ph every block contributes
 * its ph-th segment (possibly empty). A phase is p-1 steps: in step k rank r
 * sends block (r-k) mod p to r+1 and receives block (r-k-1) mod p from r-1,
 * which it combines into its own copy; the receive for step k+1 is posted
 * before step k's data is combined (two receive buffers), so communication
 * overlaps the reduction. After all phases rank r holds the complete block
 * (r+1) mod p.
 * Allgather: p-1 steps; in step k rank r sends block (r+1-k) mod p to r+1
 * and receives block (r-k) mod p from r-1, straight into rbuf.
 * Commutative ops only (blocks are combined in ring order).
 */
static int ring_allreduce(const char *name, const void *sbuf, void *rbuf, int count,
                          MPI_Datatype dt, MPI_Op op, MPI_Comm comm, long segsize) {
    int rank, size, rc = MPI_SUCCESS;
    void *tmp_raw = NULL;
    MPI_Request req[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &size, &rank));
    CT_CHECK(ct_type(dt, &t));
    CT_CHECK(input_to_rbuf(sbuf, rbuf, count, dt));
    if (size == 1) return MPI_SUCCESS;

    const int next = ring_wrap(rank + 1, size), prev = ring_wrap(rank - 1, size);
    const blocks_t bl = { count / size, count % size };
    const int maxblock = blk_count(bl, 0); /* block 0 is the largest */
    const int segcount = ct_seg_elems(segsize, maxblock, &t);
    const int nphases = segcount >= maxblock ? 1 : (maxblock + segcount - 1) / segcount;

    /* the two receive buffers: on the stack up to CT_TMP_SMALL bytes (no malloc) */
    ct_small_t small;
    void *tmp = ct_tmp_alloc_in(2 * (MPI_Aint)segcount, &t, &tmp_raw, &small, sizeof small);
    if (!tmp) return alloc_failed(name, 2 * (MPI_Aint)segcount, &t);
    void *inbuf[2] = { tmp, ct_elem(tmp, segcount, &t) };

#define SEG_START(b) seg_start(bl, (b), ph, segcount)
#define SEG_LEN(b) seg_len(bl, (b), ph, segcount)
#define BLK(x) ring_wrap((x), size) /* every x here lies in (-size, 2 size) */

    for (int ph = 0; ph < nphases; ph++) {
        int rb = BLK(rank - 1); /* block received in step 0 */
        CT_TRY(MPI_Irecv(inbuf[0], SEG_LEN(rb), dt, prev, CT_TAG_ALLREDUCE, comm, &req[0]));
        CT_TRY(ct_send(ct_elem(rbuf, SEG_START(rank), &t), SEG_LEN(rank), dt, next,
                     CT_TAG_ALLREDUCE, comm));
        for (int k = 0; k < size - 1; k++) {
            int cur = k & 1;
            rb = BLK(rank - k - 1);
            if (k + 1 < size - 1) {
                int rb_next = BLK(rank - k - 2);
                CT_TRY(MPI_Irecv(inbuf[cur ^ 1], SEG_LEN(rb_next), dt, prev, CT_TAG_ALLREDUCE,
                              comm, &req[cur ^ 1]));
            }
            CT_TRY(MPI_Wait(&req[cur], MPI_STATUS_IGNORE));
            char *mine = ct_elem(rbuf, SEG_START(rb), &t);
            CT_TRY(combine(inbuf[cur], mine, SEG_LEN(rb), dt, op));
            /* the block just completed for this step is the next one to pass on */
            if (k + 1 < size - 1)
                CT_TRY(ct_send(mine, SEG_LEN(rb), dt, next, CT_TAG_ALLREDUCE, comm));
        }
    }

    for (int k = 0; k < size - 1; k++) {
        int sb = BLK(rank + 1 - k), rb = BLK(rank - k);
        CT_TRY(ct_sendrecv(ct_elem(rbuf, blk_start(bl, sb), &t), blk_count(bl, sb), dt, next,
                           CT_TAG_ALLREDUCE + 1, ct_elem(rbuf, blk_start(bl, rb), &t),
                           blk_count(bl, rb), dt, prev, CT_TAG_ALLREDUCE + 1, comm,
                           MPI_STATUS_IGNORE));
    }
#undef SEG_START
#undef SEG_LEN
#undef BLK
out:
    /* only reached with requests pending after an error; cancel them */
    for (int i = 0; i < 2; i++)
        if (req[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&req[i]);
            MPI_Request_free(&req[i]);
        }
    free(tmp_raw);
    return rc;
}

/* Ring: reduce-scatter of p blocks then allgather, each in p-1 steps. */
int ct_allreduce_ring(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                      MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return ring_allreduce("ring", sbuf, rbuf, count, dt, op, comm, 0);
}

/* ---------------------------------------------------------- segmented_ring */
/*
 * Ring whose reduce-scatter is run in phases of one segment (segsize bytes,
 * whole elements) per block, each phase a full ring pass with the receives
 * pipelined against the reductions; segsize = 0 gives the plain ring. The
 * allgather moves whole blocks (it has no computation to overlap).
 */
int ct_allreduce_segmented_ring(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                                MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    return ring_allreduce("segmented_ring", sbuf, rbuf, count, dt, op, comm, CT_SEGSIZE(p));
}

/* ------------------------------------------------------------ rabenseifner */
/*
 * Rabenseifner: extra ranks are folded in first (see fold_newrank), leaving
 * pof2 new ranks and pof2 blocks of the vector. Reduce-scatter by recursive
 * halving: in round j (distance mask = 2^j, doubling) partners new r and
 * r ^ mask split their current window of blocks in two; the lower new rank
 * keeps the lower half, sends the other half and combines the half it
 * receives. After log2(pof2) rounds each rank owns one fully reduced block.
 * Allgather by recursive doubling: the same rounds in reverse order, each
 * partner sending its window and receiving the other half, until every rank
 * has the whole vector; then the folded-out ranks get it from their partners.
 * Blocks may be empty (count < pof2). Commutative ops only.
 */
int ct_allreduce_rabenseifner(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int rank, size, rc = MPI_SUCCESS;
    void *tmp_raw = NULL;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &size, &rank));
    CT_CHECK(ct_type(dt, &t));
    CT_CHECK(input_to_rbuf(sbuf, rbuf, count, dt));
    if (size == 1) return MPI_SUCCESS;

    ct_small_t small;
    void *tmp = ct_tmp_alloc_in(count, &t, &tmp_raw, &small, sizeof small);
    if (!tmp) return alloc_failed("rabenseifner", count, &t);

    const int pof2 = ct_pow2_floor(size), rem = size - pof2;
    const int newrank = fold_newrank(rank, rem);
    const blocks_t bl = { count / pof2, count % pof2 };
    CT_TRY(fold_in(rbuf, tmp, count, dt, op, rank, rem, comm));

/* first element of block b of pof2 blocks (E(pof2) == count) */
#define E(b) blk_start(bl, (b))
    if (newrank >= 0) {
        int lo = 0, hi = pof2; /* my current window of blocks [lo, hi) */
        int win_lo[32], win_hi[32], rounds = 0;
        for (int mask = 1; mask < pof2; mask <<= 1, rounds++) {
            int newpeer = newrank ^ mask, peer = fold_oldrank(newpeer, rem);
            int mid = lo + (hi - lo) / 2;
            int keep_lo = newrank < newpeer ? lo : mid, keep_hi = newrank < newpeer ? mid : hi;
            int send_lo = newrank < newpeer ? mid : lo, send_hi = newrank < newpeer ? hi : mid;
            win_lo[rounds] = lo;
            win_hi[rounds] = hi;
            CT_TRY(ct_sendrecv(ct_elem(rbuf, E(send_lo), &t), E(send_hi) - E(send_lo), dt, peer,
                             CT_TAG_ALLREDUCE + 2, tmp, E(keep_hi) - E(keep_lo), dt, peer,
                             CT_TAG_ALLREDUCE + 2, comm, MPI_STATUS_IGNORE));
            CT_TRY(combine(tmp, ct_elem(rbuf, E(keep_lo), &t), E(keep_hi) - E(keep_lo), dt, op));
            lo = keep_lo;
            hi = keep_hi;
        }
        /* allgather: undo the rounds, last first */
        for (int j = rounds - 1; j >= 0; j--) {
            int mask = 1 << j;
            int peer = fold_oldrank(newrank ^ mask, rem);
            /* the other half of the window of round j is the partner's */
            int other_lo = lo == win_lo[j] ? hi : win_lo[j];
            int other_hi = lo == win_lo[j] ? win_hi[j] : lo;
            CT_TRY(ct_sendrecv(ct_elem(rbuf, E(lo), &t), E(hi) - E(lo), dt, peer,
                             CT_TAG_ALLREDUCE + 3, ct_elem(rbuf, E(other_lo), &t),
                             E(other_hi) - E(other_lo), dt, peer, CT_TAG_ALLREDUCE + 3, comm,
                             MPI_STATUS_IGNORE));
            lo = win_lo[j];
            hi = win_hi[j];
        }
    }
#undef E
    CT_TRY(fold_out(rbuf, count, dt, rank, rem, comm));
out:
    free(tmp_raw);
    return rc;
}

/* -------------------------------------------------------- allgather_reduce */
/*
 * Every rank collects all p input vectors with a Bruck allgather on whole
 * vectors (ceil(log2 p) rounds: in the round with distance d = 1, 2, 4, ...
 * a rank sends the first min(d, p-d) vectors it holds to rank-d and appends
 * the ones received from rank+d; slot j ends up holding rank (r+j) mod p's
 * vector), then combines them locally in rank order, from x(p-1) down to x0
 * on the left, so any associative op is exact. Memory: p*count elements.
 */
int ct_allreduce_allgather_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                                  MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int rank, size, rc = MPI_SUCCESS;
    void *all_raw = NULL;
    MPI_Datatype vec = MPI_DATATYPE_NULL;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &size, &rank));
    CT_CHECK(ct_type(dt, &t));
    if (size == 1) return input_to_rbuf(sbuf, rbuf, count, dt);

    MPI_Aint total = (MPI_Aint)size * count;
    void *all = total <= (MPI_Aint)(INTPTR_MAX / (t.extent > 0 ? t.extent : 1))
                    ? ct_tmp_alloc(total, &t, &all_raw)
                    : NULL;
    if (!all)
        return ct_set_error(MPI_ERR_NO_MEM,
                            "allreduce/allgather_reduce: cannot allocate room for all %d "
                            "input vectors (%d x %d elements, %lld bytes); it is meant for "
                            "small messages, use ring or rabenseifner for large ones",
                            size, size, count, (long long)total * (long long)t.extent);
#define SLOT(j) ct_elem(all, (MPI_Aint)(j) * count, &t)

    /* n vectors travel as n*count elements of dt; only when that overflows an int as
     * n elements of one whole vector as a datatype (made once). Not the vector type
     * always: it costs a type per call, and SimGrid 4.1's SMPI packs more than one
     * element of a contiguous type built on a strided vector wrongly (colltune verify
     * --mpi smpi, np >= 4: the second int of each element came back as fill) */
    const int whole = (MPI_Aint)size * count <= INT_MAX;
    if (!whole) {
        CT_TRY(MPI_Type_contiguous(count, dt, &vec));
        CT_TRY(MPI_Type_commit(&vec));
    }
    CT_TRY(ct_copy(ct_input_of(sbuf, rbuf), SLOT(0), count, dt));
    for (int d = 1; d < size; d <<= 1) {
        int n = d < size - d ? d : size - d;
        int to = (rank - d + size) % size, from = (rank + d) % size;
        const int m = whole ? n * count : n;
        const MPI_Datatype mt = whole ? dt : vec;
        CT_TRY(ct_sendrecv(SLOT(0), m, mt, to, CT_TAG_ALLREDUCE, SLOT(d), m, mt, from,
                           CT_TAG_ALLREDUCE, comm, MPI_STATUS_IGNORE));
    }
    /* x(i) is in slot (i - rank) mod p; acc = x(i) op acc, from the right */
    void *acc = SLOT((size - 1 - rank + size) % size);
    for (int i = size - 2; i >= 0; i--)
        CT_TRY(combine(SLOT((i - rank + size) % size), acc, count, dt, op));
    CT_TRY(ct_copy(acc, rbuf, count, dt));
#undef SLOT
out:
    if (vec != MPI_DATATYPE_NULL) MPI_Type_free(&vec);
    free(all_raw);
    return rc;
}
