/*
 * reduce_scatter.c -- Reduce_scatter and Reduce_scatter_block algorithms (see
 * registry.c for the table).
 *
 * Every rank contributes a vector of p blocks (block i: cnt[i] elements starting at
 * element disp[i] = cnt[0] + ... + cnt[i-1]); rank i receives block i of
 * x0 op x1 op ... op x(p-1) in rbuf. The input is sbuf, or rbuf itself when sbuf is
 * MPI_IN_PLACE (the result then overwrites the start of rbuf). Reduce_scatter_block
 * is the case cnt[i] = recvcount for every i: each of its algorithms is the
 * Reduce_scatter algorithm of the same name on an array of equal counts.
 *
 * Algorithms not declared CT_NEED_COMMUTATIVE keep the rank order exactly
 * (MPI_Reduce_local(in, inout): the lower ranks' data is the left operand), so they
 * are correct for any associative op. Reductions need one datatype on every rank,
 * so blocks are cut at elements. The dispatcher passes only calls with a non-empty
 * vector whose total count fits an int; rbuf is not touched where cnt[rank] == 0.
 *
 * Non-power-of-two p (recursive_halving, butterfly, recursive_doubling): with
 * pof2 = the largest power of two <= p and rem = p - pof2, the first 2*rem ranks
 * pair up as (2i, 2i+1): the even rank sends its whole vector to the odd one, which
 * combines x(2i) op x(2i+1) and plays new rank i, whose block is the old blocks 2i
 * and 2i+1 side by side; ranks >= 2*rem play new rank rank - rem. New rank j thus
 * holds a contiguous, increasing range of old ranks and of blocks, so rank order is
 * kept. At the end the odd rank hands old block 2i to its partner.
 */
#include "ct_internal.h"

#include <limits.h>

#define TAG CT_TAG_REDUCE_SCATTER

/* inout = in op inout, skipping empty ranges. */
static int combine(const void *in, void *inout, int n, MPI_Datatype dt, MPI_Op op) {
    if (n <= 0) return MPI_SUCCESS;
    return MPI_Reduce_local(in, inout, n, dt, op);
}

static int alloc_failed(const char *algo, MPI_Aint count, const ct_type_t *t) {
    return ct_set_error(MPI_ERR_NO_MEM,
                        "reduce_scatter/%s: cannot allocate a temporary buffer of %lld "
                        "elements (%lld bytes)",
                        algo, (long long)count, (long long)(count * t->extent));
}

/* One call's layout: block displacements (p + 1 entries, disp[p] = the total) and
 * the folded ranks of the power-of-two core. */
typedef struct {
    int p, rank, pof2, rem, newrank;
    const int *cnt;
    int *disp;
    ct_type_t t;
} rs_t;

static int rs_init(rs_t *s, const int *cnt, MPI_Datatype dt, MPI_Comm comm) {
    CT_CHECK(MPI_Comm_size(comm, &s->p));
    CT_CHECK(MPI_Comm_rank(comm, &s->rank));
    CT_CHECK(ct_type(dt, &s->t));
    s->cnt = cnt;
    s->disp = malloc((size_t)(s->p + 1) * sizeof *s->disp);
    if (!s->disp) return ct_set_error(MPI_ERR_NO_MEM, "reduce_scatter: out of memory");
    s->disp[0] = 0;
    for (int i = 0; i < s->p; i++) s->disp[i + 1] = s->disp[i] + cnt[i]; /* fits: dispatcher */
    s->pof2 = ct_pow2_floor(s->p);
    s->rem = s->p - s->pof2;
    s->newrank = s->rank < 2 * s->rem ? (s->rank % 2 ? s->rank / 2 : -1) : s->rank - s->rem;
    return MPI_SUCCESS;
}

/* first element of new rank j's block (j == pof2: the total) */
static inline int nd(const rs_t *s, int j) {
    return s->disp[j < s->rem ? 2 * j : j + s->rem];
}
static inline int new_to_old(const rs_t *s, int j) { return j < s->rem ? 2 * j + 1 : j + s->rem; }

/* A copy of this rank's whole input vector in a temporary (*raw to free). */
static void *input_copy(const char *name, const rs_t *s, const void *in, MPI_Datatype dt,
                        void **raw, int *rc) {
    char *acc = ct_tmp_alloc(s->disp[s->p], &s->t, raw);
    if (!acc) {
        *rc = alloc_failed(name, s->disp[s->p], &s->t);
        return NULL;
    }
    *rc = ct_copy(in, acc, s->disp[s->p], dt);
    return acc;
}

/* The prologue of the algorithms that work on the whole vector: a copy of the input
 * (`acc`) and a temporary as large (`tmp`); the caller frees both raws. */
static int whole_vector(const char *name, const rs_t *s, const void *in, MPI_Datatype dt,
                        char **acc, void **raw, char **tmp, void **traw) {
    int rc = MPI_SUCCESS;
    *acc = input_copy(name, s, in, dt, raw, &rc);
    if (rc != MPI_SUCCESS) return rc;
    *tmp = ct_tmp_alloc(s->disp[s->p], &s->t, traw);
    return *tmp ? MPI_SUCCESS : alloc_failed(name, s->disp[s->p], &s->t);
}

/* Fold: even ranks of the first 2*rem send their whole vector, odd ones combine it
 * on the left of theirs (tmp: room for the vector). */
static int fold_in(const rs_t *s, void *acc, void *tmp, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm) {
    int n = s->disp[s->p];
    if (s->rank >= 2 * s->rem) return MPI_SUCCESS;
    if (s->rank % 2 == 0) return ct_send(acc, n, dt, s->rank + 1, TAG, comm);
    CT_CHECK(MPI_Recv(tmp, n, dt, s->rank - 1, TAG, comm, MPI_STATUS_IGNORE));
    return combine(tmp, acc, n, dt, op);
}

/* Unfold and finish: `res` holds new block newrank (laid out as in the vector, so old
 * block r is at res + disp[r] - nd(newrank)); the odd rank of a pair sends the even
 * one its block, every rank puts its own block in rbuf. */
static int fold_out(const rs_t *s, const char *res, void *rbuf, MPI_Datatype dt,
                    MPI_Comm comm) {
    int r = s->rank;
    if (s->newrank < 0)
        return MPI_Recv(rbuf, s->cnt[r], dt, r + 1, TAG + 1, comm, MPI_STATUS_IGNORE);
    const char *base = res - (MPI_Aint)nd(s, s->newrank) * s->t.extent;
    if (r < 2 * s->rem)
        CT_CHECK(ct_send(ct_elem(base, s->disp[r - 1], &s->t), s->cnt[r - 1], dt, r - 1,
                         TAG + 1, comm));
    return ct_copy(ct_elem(base, s->disp[r], &s->t), rbuf, s->cnt[r], dt);
}

/* ------------------------------------------------------------------ native */
int ct_reduce_scatter_native(const void *sbuf, void *rbuf, const int *rcounts,
                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm);
}

int ct_reduce_scatter_block_native(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm);
}

/* ---------------------------------------------------------- nonoverlapping */
/*
 * colltune's linear Reduce of the whole vector to rank 0 (rank order kept, any op),
 * then a linear Scatterv of the blocks from rank 0 (one blocking send per non-empty
 * block). Open MPI's non-overlapping (Reduce_scatter) and basic_linear
 * (Reduce_scatter_block) have the same two phases.
 */
int ct_reduce_scatter_nonoverlapping(const void *sbuf, void *rbuf, const int *cnt,
                                     MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                     const ct_params_t *prm) {
    rs_t s;
    int rc = MPI_SUCCESS;
    void *raw = NULL;
    const void *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int n = s.disp[s.p];
    if (s.rank != 0) {
        CT_TRY(ct_reduce_linear(in, NULL, n, dt, op, 0, comm, prm));
        if (cnt[s.rank] > 0)
            CT_TRY(MPI_Recv(rbuf, cnt[s.rank], dt, 0, TAG, comm, MPI_STATUS_IGNORE));
        goto out;
    }
    char *acc = ct_tmp_alloc(n, &s.t, &raw);
    if (!acc) {
        rc = alloc_failed("nonoverlapping", n, &s.t);
        goto out;
    }
    CT_TRY(ct_reduce_linear(in, acc, n, dt, op, 0, comm, prm));
    for (int i = 1; i < s.p; i++)
        if (cnt[i] > 0) CT_TRY(ct_send(ct_elem(acc, s.disp[i], &s.t), cnt[i], dt, i, TAG, comm));
    CT_TRY(ct_copy(acc, rbuf, cnt[0], dt));
out:
    free(raw);
    free(s.disp);
    return rc;
}

/* ------------------------------------------------------- recursive_halving */
/*
 * After the fold, pof2 new ranks halve the vector: in the round at distance mask
 * (pof2/2, ..., 2, 1) new ranks r and r ^ mask split the new blocks they are still
 * responsible for; the lower keeps the lower half and sends the upper, the higher
 * the reverse, and each combines what it receives into what it keeps. After
 * log2(pof2) rounds each new rank holds its own block. Partners at distance
 * pof2/2 first: the ranks combined are not contiguous, so commutative ops only.
 */
int ct_reduce_scatter_recursive_halving(const void *sbuf, void *rbuf, const int *cnt,
                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                        const ct_params_t *prm) {
    (void)prm;
    rs_t s;
    int rc = MPI_SUCCESS;
    void *raw = NULL, *traw = NULL;
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    char *acc = NULL, *tmp = NULL;
    CT_TRY(whole_vector("recursive_halving", &s, ct_input_of(sbuf, rbuf), dt, &acc, &raw, &tmp,
                        &traw));
    CT_TRY(fold_in(&s, acc, tmp, dt, op, comm));
    if (s.newrank >= 0) {
        int lo = 0, hi = s.pof2; /* new blocks this rank is responsible for */
        for (int mask = s.pof2 / 2; mask >= 1; mask >>= 1) {
            int peer = new_to_old(&s, s.newrank ^ mask), mid = lo + mask;
            int klo = (s.newrank & mask) ? mid : lo, khi = (s.newrank & mask) ? hi : mid;
            int slo = (s.newrank & mask) ? lo : mid, shi = (s.newrank & mask) ? mid : hi;
            int kn = nd(&s, khi) - nd(&s, klo);
            CT_TRY(ct_sendrecv(ct_elem(acc, nd(&s, slo), &s.t), nd(&s, shi) - nd(&s, slo), dt,
                               peer, TAG, tmp, kn, dt, peer, TAG, comm, MPI_STATUS_IGNORE));
            CT_TRY(combine(tmp, ct_elem(acc, nd(&s, klo), &s.t), kn, dt, op));
            lo = klo;
            hi = khi;
        }
    }
    CT_TRY(fold_out(&s, ct_elem(acc, s.newrank >= 0 ? nd(&s, s.newrank) : 0, &s.t), rbuf, dt,
                    comm));
out:
    free(raw);
    free(traw);
    free(s.disp);
    return rc;
}

/* --------------------------------------------------------------- butterfly */
/* bit reversal of q over `bits` bits */
static int bitrev(int q, int bits) {
    int r = 0;
    for (int b = 0; b < bits; b++) r |= ((q >> b) & 1) << (bits - 1 - b);
    return r;
}

/*
 * Vector halving with distance doubling (Traff's butterfly): after the fold the new
 * blocks are laid out in bit-reversed order (position q holds new block rev(q)). In
 * the round at distance mask (1, 2, 4, ...) new ranks r and r ^ mask split the
 * positions they are responsible for: the one whose bit `mask` is clear keeps the
 * lower half. Partners at distance mask belong to the aligned groups of mask new
 * ranks just below and above each other, so every partial result is the reduction
 * of a contiguous range of ranks, combined lower on the left: any associative op.
 * Half position q's top bit is bit 0 of rev(q), so after log2(pof2) rounds new
 * rank r is left with position rev(r), i.e. its own block.
 */
int ct_reduce_scatter_butterfly(const void *sbuf, void *rbuf, const int *cnt,
                                MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                const ct_params_t *prm) {
    (void)prm;
    rs_t s;
    int rc = MPI_SUCCESS, *pd = NULL;
    void *raw = NULL, *wraw = NULL;
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int n = s.disp[s.p];
    char *acc = NULL, *w = NULL;
    CT_TRY(whole_vector("butterfly", &s, ct_input_of(sbuf, rbuf), dt, &acc, &raw, &w, &wraw));
    char *res = acc;
    pd = malloc((size_t)(s.pof2 + 1) * sizeof *pd);
    if (!pd) {
        rc = alloc_failed("butterfly", n, &s.t);
        goto out;
    }
    CT_TRY(fold_in(&s, acc, w, dt, op, comm));
    if (s.newrank >= 0) {
        int bits = 0;
        while ((1 << bits) < s.pof2) bits++;
        pd[0] = 0; /* positions: pd[q] = first element of position q in w */
        for (int q = 0; q < s.pof2; q++) {
            int j = bitrev(q, bits), len = nd(&s, j + 1) - nd(&s, j);
            CT_TRY(ct_copy(ct_elem(acc, nd(&s, j), &s.t), ct_elem(w, pd[q], &s.t), len, dt));
            pd[q + 1] = pd[q] + len;
        }
        char *tmp = acc; /* acc is free now: it receives */
        int lo = 0, hi = s.pof2;
        for (int mask = 1; mask < s.pof2; mask <<= 1) {
            int newpeer = s.newrank ^ mask, peer = new_to_old(&s, newpeer);
            int mid = (lo + hi) / 2, upper = (s.newrank & mask) != 0;
            int klo = upper ? mid : lo, khi = upper ? hi : mid;
            int slo = upper ? lo : mid, shi = upper ? mid : hi;
            int kn = pd[khi] - pd[klo];
            char *keep = ct_elem(w, pd[klo], &s.t);
            CT_TRY(ct_sendrecv(ct_elem(w, pd[slo], &s.t), pd[shi] - pd[slo], dt, peer, TAG, tmp,
                               kn, dt, peer, TAG, comm, MPI_STATUS_IGNORE));
            if (newpeer < s.newrank) {
                CT_TRY(combine(tmp, keep, kn, dt, op)); /* keep = peer op keep */
            } else {
                CT_TRY(combine(keep, tmp, kn, dt, op)); /* tmp = keep op peer */
                CT_TRY(ct_copy(tmp, keep, kn, dt));
            }
            lo = klo;
            hi = khi;
        }
        res = ct_elem(w, pd[lo], &s.t);
    }
    CT_TRY(fold_out(&s, res, rbuf, dt, comm));
out:
    free(raw);
    free(wraw);
    free(pd);
    free(s.disp);
    return rc;
}

/* ------------------------------------------------------ recursive_doubling */
/*
 * After the fold, in the round at distance mask (1, 2, 4, ...) new rank r, whose
 * aligned group G of mask new ranks holds the partial reduction over G, exchanges
 * with r ^ mask (group G'): it sends every block outside G (what G' and the ranks
 * beyond still need) and receives every block outside G', then combines, the lower
 * group on the left, what it still needs: its own block and the blocks outside
 * G + G'. Groups are contiguous ranges of ranks: any associative op. The working
 * vector alternates between two buffers (no copy per round). Each round moves
 * n - mask blocks: (log2 p - (p-1)/p) n in all, for log2 p rounds.
 */
int ct_reduce_scatter_recursive_doubling(const void *sbuf, void *rbuf, const int *cnt,
                                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                         const ct_params_t *prm) {
    (void)prm;
    rs_t s;
    int rc = MPI_SUCCESS;
    void *raw = NULL, *traw = NULL;
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int n = s.disp[s.p];
    char *acc = NULL, *tmp = NULL;
    CT_TRY(whole_vector("recursive_doubling", &s, ct_input_of(sbuf, rbuf), dt, &acc, &raw, &tmp,
                        &traw));
    char *res = acc;
    CT_TRY(fold_in(&s, acc, tmp, dt, op, comm));
    if (s.newrank >= 0) {
        const int me = s.newrank;
        for (int mask = 1; mask < s.pof2; mask <<= 1) {
            int newpeer = me ^ mask, peer = new_to_old(&s, newpeer);
            int g = me & ~(mask - 1), pg = newpeer & ~(mask - 1), u = me & ~(2 * mask - 1);
            /* outside G: [0, nd(g)) and [nd(g+mask), n); outside G' likewise */
            CT_TRY(ct_sendrecv(acc, nd(&s, g), dt, peer, TAG, tmp, nd(&s, pg), dt, peer, TAG,
                               comm, MPI_STATUS_IGNORE));
            CT_TRY(ct_sendrecv(ct_elem(acc, nd(&s, g + mask), &s.t), n - nd(&s, g + mask), dt,
                               peer, TAG + 2, ct_elem(tmp, nd(&s, pg + mask), &s.t),
                               n - nd(&s, pg + mask), dt, peer, TAG + 2, comm,
                               MPI_STATUS_IGNORE));
            /* needed from now on: [0, nd(u)), own block, [nd(u + 2 mask), n) */
            int ranges[3][2] = { { 0, nd(&s, u) },
                                 { nd(&s, me), nd(&s, me + 1) },
                                 { nd(&s, u + 2 * mask), n } };
            for (int k = 0; k < 3; k++) {
                char *a = ct_elem(acc, ranges[k][0], &s.t), *b = ct_elem(tmp, ranges[k][0], &s.t);
                int len = ranges[k][1] - ranges[k][0];
                if (newpeer < me) CT_TRY(combine(b, a, len, dt, op)); /* acc = peer op acc */
                else CT_TRY(combine(a, b, len, dt, op));              /* tmp = acc op peer */
            }
            if (newpeer > me) { /* the result is in tmp: swap */
                char *x = acc;
                acc = tmp;
                tmp = x;
            }
        }
        res = ct_elem(acc, nd(&s, me), &s.t);
    }
    CT_TRY(fold_out(&s, res, rbuf, dt, comm));
out:
    free(raw);
    free(traw);
    free(s.disp);
    return rc;
}

/* -------------------------------------------------------------------- ring */
/*
 * p-1 steps around the ring: in step k rank r sends to r+1 its partial result of
 * block (r-k-1) mod p (in step 0 its own input block) and receives from r-1 the
 * partial of block (r-k-2) mod p, which it combines with its own input block. The
 * block received in the last step is r's own, complete. Blocks are combined in
 * ring order starting at the block's owner + 1: commutative ops only. Two receive
 * buffers of the largest block, used in turn.
 */
int ct_reduce_scatter_ring(const void *sbuf, void *rbuf, const int *cnt, MPI_Datatype dt,
                           MPI_Op op, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    rs_t s;
    int rc = MPI_SUCCESS, maxc = 0;
    void *raw = NULL;
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int p = s.p, r = s.rank;
    if (p == 1) {
        CT_TRY(ct_copy(in, rbuf, cnt[0], dt));
        goto out;
    }
    for (int i = 0; i < p; i++) maxc = cnt[i] > maxc ? cnt[i] : maxc;
    char *tmp = ct_tmp_alloc(2 * (MPI_Aint)maxc, &s.t, &raw);
    if (!tmp) {
        rc = alloc_failed("ring", 2 * (MPI_Aint)maxc, &s.t);
        goto out;
    }
    char *buf[2] = { tmp, ct_elem(tmp, maxc, &s.t) };
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    int sb = (r + p - 1) % p;
    const char *sp = ct_elem(in, s.disp[sb], &s.t);
    for (int k = 0; k < p - 1; k++) {
        int rb = ((r - k - 2) % p + p) % p;
        CT_TRY(ct_sendrecv(sp, cnt[sb], dt, next, TAG, buf[k & 1], cnt[rb], dt, prev, TAG, comm,
                           MPI_STATUS_IGNORE));
        CT_TRY(combine(ct_elem(in, s.disp[rb], &s.t), buf[k & 1], cnt[rb], dt, op));
        sp = buf[k & 1];
        sb = rb;
    }
    CT_TRY(ct_copy(sp, rbuf, cnt[r], dt)); /* the input is read no more */
out:
    free(raw);
    free(s.disp);
    return rc;
}

/* ---------------------------------------------------------------- pairwise */
/*
 * p-1 steps; in step i rank r sends its input block r+i to rank r+i and receives
 * rank r-i's contribution to block r (one Sendrecv), which it combines into its
 * partial result. Contributions arrive in the order r-1, r-2, ...: commutative ops
 * only. MPICH's pairwise.
 */
int ct_reduce_scatter_pairwise(const void *sbuf, void *rbuf, const int *cnt, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    rs_t s;
    int rc = MPI_SUCCESS;
    void *raw = NULL;
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int p = s.p, r = s.rank, mine = cnt[r];
    char *tmp = ct_tmp_alloc(2 * (MPI_Aint)mine, &s.t, &raw);
    if (!tmp) {
        rc = alloc_failed("pairwise", 2 * (MPI_Aint)mine, &s.t);
        goto out;
    }
    char *acc = tmp, *recv = ct_elem(tmp, mine, &s.t);
    CT_TRY(ct_copy(ct_elem(in, s.disp[r], &s.t), acc, mine, dt));
    for (int i = 1; i < p; i++) {
        int dst = (r + i) % p, src = (r - i + p) % p;
        CT_TRY(ct_sendrecv(ct_elem(in, s.disp[dst], &s.t), cnt[dst], dt, dst, TAG, recv, mine,
                           dt, src, TAG, comm, MPI_STATUS_IGNORE));
        CT_TRY(combine(recv, acc, mine, dt, op));
    }
    CT_TRY(ct_copy(acc, rbuf, mine, dt));
out:
    free(raw);
    free(s.disp);
    return rc;
}

/* ------------------------------------------------- Reduce_scatter_block */
/* The Reduce_scatter algorithm of the same name on p counts of rcount. */
typedef int (*rs_fn)(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm,
                     const ct_params_t *);
static int as_block(rs_fn fn, const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                    MPI_Op op, MPI_Comm comm, const ct_params_t *prm) {
    int p, small[64], *cnt = small;
    CT_CHECK(MPI_Comm_size(comm, &p));
    if (p > 64 && !(cnt = malloc((size_t)p * sizeof *cnt)))
        return ct_set_error(MPI_ERR_NO_MEM, "reduce_scatter_block: out of memory");
    for (int i = 0; i < p; i++) cnt[i] = rcount;
    int rc = fn(sbuf, rbuf, cnt, dt, op, comm, prm);
    if (cnt != small) free(cnt);
    return rc;
}

#define CT_BLOCK_OF(name, rsname)                                                            \
    int ct_reduce_scatter_block_##name(const void *sbuf, void *rbuf, int rcount,           \
                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm,           \
                                        const ct_params_t *prm) {                            \
        return as_block(ct_reduce_scatter_##rsname, sbuf, rbuf, rcount, dt, op, comm, prm); \
    }
CT_BLOCK_OF(basic_linear, nonoverlapping)
CT_BLOCK_OF(recursive_halving, recursive_halving)
CT_BLOCK_OF(butterfly, butterfly)
CT_BLOCK_OF(recursive_doubling, recursive_doubling)
CT_BLOCK_OF(ring, ring)
CT_BLOCK_OF(pairwise, pairwise)
