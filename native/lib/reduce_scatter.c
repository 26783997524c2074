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

/* One call's layout: block displacements (p + 1 entries, disp[p] = the total; on the
 * stack up to RS_SMALL_P processes) and the folded ranks of the power-of-two core. */
#define RS_SMALL_P 64
typedef struct {
    int p, rank, pof2, rem, newrank;
    const int *cnt;
    int *disp;
    ct_type_t t;
    int dsmall[RS_SMALL_P + 1];
} rs_t;

static int rs_init(rs_t *s, const int *cnt, MPI_Datatype dt, MPI_Comm comm) {
    CT_CHECK(ct_comm_geom(comm, &s->p, &s->rank));
    CT_CHECK(ct_type(dt, &s->t));
    s->cnt = cnt;
    s->disp = s->dsmall;
    if (s->p > RS_SMALL_P && !(s->disp = malloc((size_t)(s->p + 1) * sizeof *s->disp)))
        return ct_set_error(MPI_ERR_NO_MEM, "reduce_scatter: out of memory");
    s->disp[0] = 0;
    for (int i = 0; i < s->p; i++) s->disp[i + 1] = s->disp[i] + cnt[i]; /* fits: dispatcher */
    s->pof2 = ct_pow2_floor(s->p);
    s->rem = s->p - s->pof2;
    s->newrank = s->rank < 2 * s->rem ? (s->rank & 1 ? s->rank / 2 : -1) : s->rank - s->rem;
    return MPI_SUCCESS;
}

static void rs_free(rs_t *s) {
    if (s->disp != s->dsmall) free(s->disp);
}

/* first element of new rank j's block (j == pof2: the total) */
static inline int nd(const rs_t *s, int j) {
    return s->disp[j < s->rem ? 2 * j : j + s->rem];
}
static inline int new_to_old(const rs_t *s, int j) { return j < s->rem ? 2 * j + 1 : j + s->rem; }

/* Temporaries of the whole vector's layout (element i of the vector at element i of
 * the buffer), allocated when first needed: a small vector lives on the stack. The
 * algorithms below read the caller's input in place and write only these, so no
 * call copies the whole input vector, and a rank touches only the ranges it
 * receives or combines. */
typedef struct {
    char *b[2];
    void *raw[2];
    ct_small_t small[2];
} rs_bufs_t;

/* (not `= { 0 }`: that would clear the stack room too, 512 bytes a call) */
static inline void rs_bufs_init(rs_bufs_t *v) {
    v->b[0] = v->b[1] = NULL;
    v->raw[0] = v->raw[1] = NULL;
}

static char *rs_buf(rs_bufs_t *v, int i, const rs_t *s, const char *name, int *rc) {
    if (!v->b[i]) {
        v->b[i] = ct_tmp_alloc_in(s->disp[s->p], &s->t, &v->raw[i], v->small[i].c,
                                  sizeof v->small[i]);
        if (!v->b[i]) *rc = alloc_failed(name, s->disp[s->p], &s->t);
    }
    return v->b[i];
}
/* the temporary that is not `cur` (cur: the input or one of the two) */
static char *rs_other(rs_bufs_t *v, const char *cur, const rs_t *s, const char *name, int *rc) {
    return rs_buf(v, cur == v->b[0] ? 1 : 0, s, name, rc);
}
static void rs_bufs_free(rs_bufs_t *v) {
    free(v->raw[0]);
    free(v->raw[1]);
}

static int op_commutes(MPI_Op op) {
    int c = 0;
    return MPI_Op_commutative(op, &c) == MPI_SUCCESS && c;
}

/*
 * The first combination of a range [off, off + len) when this rank's own data is
 * still the caller's input `mine` (read-only) and the peer's data arrived in `got`
 * at the same offsets: the result (lower ranks on the left) goes to got, or to
 * spare when the peer is the lower one and the op does not commute (mine must then
 * be the inout operand: copied to spare first). Returns the buffer with the
 * result, NULL on an error (*rc).
 */
static char *first_combine(const char *mine, char *got, char *spare, int off, int len,
                           int peer_lower, MPI_Datatype dt, MPI_Op op, const rs_t *s,
                           int *rc) {
    const char *m = ct_elem(mine, off, &s->t);
    if (!peer_lower || !spare) { /* got = mine op got */
        *rc = combine(m, ct_elem(got, off, &s->t), len, dt, op);
        return *rc == MPI_SUCCESS ? got : NULL;
    }
    *rc = ct_copy_t(m, ct_elem(spare, off, &s->t), len, dt, &s->t); /* spare = got op mine */
    if (*rc == MPI_SUCCESS)
        *rc = combine(ct_elem(got, off, &s->t), ct_elem(spare, off, &s->t), len, dt, op);
    return *rc == MPI_SUCCESS ? spare : NULL;
}

/* Fold: even ranks of the first 2*rem send their whole input, odd ones combine it
 * on the left of theirs. Returns the odd rank's partial result (a temporary of v;
 * `ordered`: keep x(2i) on the left even for an op that commutes not), else `in`. */
static const char *fold_in(const rs_t *s, const char *in, rs_bufs_t *v, int ordered,
                           const char *name, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                           int *rc) {
    int n = s->disp[s->p];
    *rc = MPI_SUCCESS;
    if (s->rank >= 2 * s->rem) return in;
    if (s->rank % 2 == 0) {
        *rc = ct_send(in, n, dt, s->rank + 1, TAG, comm);
        return in;
    }
    char *got = rs_buf(v, 0, s, name, rc), *spare = NULL;
    if (!got) return NULL;
    if (ordered && !op_commutes(op) && !(spare = rs_buf(v, 1, s, name, rc))) return NULL;
    *rc = MPI_Recv(got, n, dt, s->rank - 1, TAG, comm, MPI_STATUS_IGNORE);
    if (*rc != MPI_SUCCESS) return NULL;
    return first_combine(in, got, spare, 0, n, 1, dt, op, s, rc);
}

/* Unfold and finish: `res` holds new block newrank (laid out as in the vector, so old
 * block r is at res + disp[r] - nd(newrank)); the odd rank of a pair sends the even
 * one its block, every rank puts its own block in rbuf. */
static int fold_out(const rs_t *s, const char *res, void *rbuf, MPI_Datatype dt,
                    MPI_Comm comm) {
    int r = s->rank;
    if (s->newrank < 0)
        return s->cnt[r] > 0
                   ? MPI_Recv(rbuf, s->cnt[r], dt, r + 1, TAG + 1, comm, MPI_STATUS_IGNORE)
                   : MPI_SUCCESS;
    const char *base = res - (MPI_Aint)nd(s, s->newrank) * s->t.extent;
    if (r < 2 * s->rem && s->cnt[r - 1] > 0)
        CT_CHECK(ct_send(ct_elem(base, s->disp[r - 1], &s->t), s->cnt[r - 1], dt, r - 1,
                         TAG + 1, comm));
    return ct_copy_t(ct_elem(base, s->disp[r], &s->t), rbuf, s->cnt[r], dt, &s->t);
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
    ct_small_t small;
    const void *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int n = s.disp[s.p];
    if (s.rank != 0) {
        CT_TRY(ct_reduce_linear(in, NULL, n, dt, op, 0, comm, prm));
        if (cnt[s.rank] > 0)
            CT_TRY(MPI_Recv(rbuf, cnt[s.rank], dt, 0, TAG, comm, MPI_STATUS_IGNORE));
        goto out;
    }
    char *acc = ct_tmp_alloc_in(n, &s.t, &raw, small.c, sizeof small);
    if (!acc) {
        rc = alloc_failed("nonoverlapping", n, &s.t);
        goto out;
    }
    CT_TRY(ct_reduce_linear(in, acc, n, dt, op, 0, comm, prm));
    for (int i = 1; i < s.p; i++)
        if (cnt[i] > 0) CT_TRY(ct_send(ct_elem(acc, s.disp[i], &s.t), cnt[i], dt, i, TAG, comm));
    CT_TRY(ct_copy_t(acc, rbuf, cnt[0], dt, &s.t));
out:
    free(raw);
    rs_free(&s);
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
    static const char name[] = "recursive_halving";
    rs_t s;
    int rc = MPI_SUCCESS;
    rs_bufs_t v;
    rs_bufs_init(&v);
    char *w = NULL; /* receives from the second round on (the kept ranges only shrink) */
    void *wraw = NULL;
    ct_small_t wsmall;
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const char *cur = fold_in(&s, in, &v, 0, name, dt, op, comm, &rc);
    if (rc != MPI_SUCCESS) goto out;
    if (s.newrank >= 0) {
        char *acc = rs_buf(&v, 0, &s, name, &rc); /* the partial results */
        if (!acc) goto out;
        int lo = 0, hi = s.pof2; /* new blocks this rank is responsible for */
        for (int mask = s.pof2 / 2; mask >= 1; mask >>= 1) {
            int peer = new_to_old(&s, s.newrank ^ mask), mid = lo + mask;
            int klo = (s.newrank & mask) ? mid : lo, khi = (s.newrank & mask) ? hi : mid;
            int slo = (s.newrank & mask) ? lo : mid, shi = (s.newrank & mask) ? mid : hi;
            int k0 = nd(&s, klo), kn = nd(&s, khi) - k0, s0 = nd(&s, slo);
            if (cur == in) { /* first round: receive into acc, acc = in op received */
                CT_TRY(ct_sendrecv(ct_elem(in, s0, &s.t), nd(&s, shi) - s0, dt, peer, TAG,
                                   ct_elem(acc, k0, &s.t), kn, dt, peer, TAG, comm,
                                   MPI_STATUS_IGNORE));
                CT_TRY(combine(ct_elem(in, k0, &s.t), ct_elem(acc, k0, &s.t), kn, dt, op));
                cur = acc;
            } else {
                if (!w && !(w = ct_tmp_alloc_in(kn, &s.t, &wraw, wsmall.c, sizeof wsmall))) {
                    rc = alloc_failed(name, kn, &s.t);
                    goto out;
                }
                CT_TRY(ct_sendrecv(ct_elem(acc, s0, &s.t), nd(&s, shi) - s0, dt, peer, TAG, w,
                                   kn, dt, peer, TAG, comm, MPI_STATUS_IGNORE));
                CT_TRY(combine(w, ct_elem(acc, k0, &s.t), kn, dt, op));
            }
            lo = klo;
            hi = khi;
        }
    }
    CT_TRY(fold_out(&s, ct_elem(cur, s.newrank >= 0 ? nd(&s, s.newrank) : 0, &s.t), rbuf, dt,
                    comm));
out:
    free(wraw);
    rs_bufs_free(&v);
    rs_free(&s);
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
    static const char name[] = "butterfly";
    rs_t s;
    int rc = MPI_SUCCESS, pdsmall[RS_SMALL_P + 1], *pd = pdsmall;
    rs_bufs_t v;
    rs_bufs_init(&v);
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const char *cur = fold_in(&s, in, &v, 1, name, dt, op, comm, &rc);
    if (rc != MPI_SUCCESS) goto out;
    if (s.newrank >= 0) {
        const int me = s.newrank;
        int bits = 0;
        while ((1 << bits) < s.pof2) bits++;
        if (s.pof2 > RS_SMALL_P && !(pd = malloc((size_t)(s.pof2 + 1) * sizeof *pd))) {
            rc = alloc_failed(name, s.pof2, &s.t);
            goto out;
        }
        pd[0] = 0; /* positions: pd[q] = first element of position q */
        for (int q = 0; q < s.pof2; q++) {
            int j = bitrev(q, bits);
            pd[q + 1] = pd[q] + nd(&s, j + 1) - nd(&s, j);
        }
        if (bits > 1) { /* lay the blocks out in bit-reversed order (2 new ranks: as they are) */
            char *x = rs_other(&v, cur, &s, name, &rc);
            if (!x) goto out;
            for (int q = 0; q < s.pof2; q++) {
                int j = bitrev(q, bits);
                CT_TRY(ct_copy_t(ct_elem(cur, nd(&s, j), &s.t), ct_elem(x, pd[q], &s.t),
                                 pd[q + 1] - pd[q], dt, &s.t));
            }
            cur = x;
        }
        int lo = 0, hi = s.pof2;
        for (int mask = 1; mask < s.pof2; mask <<= 1) {
            int newpeer = me ^ mask, peer = new_to_old(&s, newpeer);
            int mid = (lo + hi) / 2, upper = (me & mask) != 0;
            int klo = upper ? mid : lo, khi = upper ? hi : mid;
            int slo = upper ? lo : mid, shi = upper ? mid : hi;
            int k0 = pd[klo], kn = pd[khi] - k0;
            char *got = rs_other(&v, cur, &s, name, &rc); /* receives at the same positions */
            if (!got) goto out;
            CT_TRY(ct_sendrecv(ct_elem(cur, pd[slo], &s.t), pd[shi] - pd[slo], dt, peer, TAG,
                               ct_elem(got, k0, &s.t), kn, dt, peer, TAG, comm,
                               MPI_STATUS_IGNORE));
            if (cur == in) { /* first round, unfolded, 2 new ranks or the layout as it is */
                char *spare = NULL;
                if (newpeer < me && !op_commutes(op) && !(spare = rs_buf(&v, 1, &s, name, &rc)))
                    goto out;
                if (!(cur = first_combine(in, got, spare, k0, kn, newpeer < me, dt, op, &s, &rc)))
                    goto out;
            } else if (newpeer < me) { /* cur = peer op cur */
                CT_TRY(combine(ct_elem(got, k0, &s.t), ct_elem((char *)cur, k0, &s.t), kn, dt,
                               op));
            } else { /* got = cur op peer: the result is in got */
                CT_TRY(combine(ct_elem(cur, k0, &s.t), ct_elem(got, k0, &s.t), kn, dt, op));
                cur = got;
            }
            lo = klo;
            hi = khi;
        }
        cur = ct_elem(cur, pd[lo], &s.t);
    }
    CT_TRY(fold_out(&s, cur, rbuf, dt, comm));
out:
    if (pd != pdsmall) free(pd);
    rs_bufs_free(&v);
    rs_free(&s);
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
    static const char name[] = "recursive_doubling";
    rs_t s;
    int rc = MPI_SUCCESS;
    rs_bufs_t v;
    rs_bufs_init(&v);
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int n = s.disp[s.p];
    const char *cur = fold_in(&s, in, &v, 1, name, dt, op, comm, &rc);
    if (rc != MPI_SUCCESS) goto out;
    if (s.newrank >= 0) {
        const int me = s.newrank;
        for (int mask = 1; mask < s.pof2; mask <<= 1) {
            int newpeer = me ^ mask, peer = new_to_old(&s, newpeer);
            int g = me & ~(mask - 1), pg = newpeer & ~(mask - 1), u = me & ~(2 * mask - 1);
            char *got = rs_other(&v, cur, &s, name, &rc); /* receives at the same offsets */
            if (!got) goto out;
            /* outside G: [0, nd(g)) and [nd(g+mask), n); outside G' likewise. Both
             * directions and both ranges at once (Sendrecvs would take turns). */
            const int sa = nd(&s, g), sb = nd(&s, g + mask), ra = nd(&s, pg),
                      rb = nd(&s, pg + mask);
            MPI_Request req[4];
            int nr = 0;
            if (ra > 0) CT_TRY(MPI_Irecv(got, ra, dt, peer, TAG, comm, &req[nr++]));
            if (rb < n)
                CT_TRY(MPI_Irecv(ct_elem(got, rb, &s.t), n - rb, dt, peer, TAG + 2, comm,
                                 &req[nr++]));
            if (sa > 0) CT_TRY(ct_isend(cur, sa, dt, peer, TAG, comm, &req[nr++]));
            if (sb < n)
                CT_TRY(ct_isend(ct_elem(cur, sb, &s.t), n - sb, dt, peer, TAG + 2, comm,
                                &req[nr++]));
            CT_TRY(MPI_Waitall(nr, req, MPI_STATUSES_IGNORE));
            /* needed from now on: [0, nd(u)), own block, [nd(u + 2 mask), n) */
            int ranges[3][2] = { { 0, nd(&s, u) },
                                 { nd(&s, me), nd(&s, me + 1) },
                                 { nd(&s, u + 2 * mask), n } };
            char *spare = NULL, *res = NULL;
            if (cur == in && newpeer < me && !op_commutes(op) &&
                !(spare = rs_buf(&v, 1, &s, name, &rc)))
                goto out;
            for (int k = 0; k < 3; k++) {
                int off = ranges[k][0], len = ranges[k][1] - ranges[k][0];
                if (len <= 0) continue;
                char *a = ct_elem(cur, off, &s.t), *b = ct_elem(got, off, &s.t);
                if (cur == in) { /* first round, unfolded: the input is read-only */
                    if (!(res = first_combine(in, got, spare, off, len, newpeer < me, dt, op, &s,
                                              &rc)))
                        goto out;
                } else if (newpeer < me) {
                    CT_TRY(combine(b, a, len, dt, op)); /* cur = peer op cur */
                } else {
                    CT_TRY(combine(a, b, len, dt, op)); /* got = cur op peer */
                }
            }
            if (cur == in) cur = res ? res : got;
            else if (newpeer > me) cur = got;
        }
        cur = ct_elem(cur, nd(&s, me), &s.t);
    }
    CT_TRY(fold_out(&s, cur, rbuf, dt, comm));
out:
    rs_bufs_free(&v);
    rs_free(&s);
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
    ct_small_t small;
    const char *in = ct_input_of(sbuf, rbuf);
    CT_CHECK(rs_init(&s, cnt, dt, comm));
    const int p = s.p, r = s.rank;
    if (p == 1) {
        CT_TRY(ct_copy_t(in, rbuf, cnt[0], dt, &s.t));
        goto out;
    }
    for (int i = 0; i < p; i++) maxc = cnt[i] > maxc ? cnt[i] : maxc;
    char *tmp = ct_tmp_alloc_in(2 * (MPI_Aint)maxc, &s.t, &raw, small.c, sizeof small);
    if (!tmp) {
        rc = alloc_failed("ring", 2 * (MPI_Aint)maxc, &s.t);
        goto out;
    }
    char *buf[2] = { tmp, ct_elem(tmp, maxc, &s.t) };
    const int next = r + 1 < p ? r + 1 : 0, prev = r > 0 ? r - 1 : p - 1;
    int sb = prev, rb = prev > 0 ? prev - 1 : p - 1; /* sent and received block */
    const char *sp = ct_elem(in, s.disp[sb], &s.t);
    for (int k = 0; k < p - 1; k++) {
        CT_TRY(ct_sendrecv(sp, cnt[sb], dt, next, TAG, buf[k & 1], cnt[rb], dt, prev, TAG, comm,
                           MPI_STATUS_IGNORE));
        CT_TRY(combine(ct_elem(in, s.disp[rb], &s.t), buf[k & 1], cnt[rb], dt, op));
        sp = buf[k & 1];
        sb = rb;
        rb = rb > 0 ? rb - 1 : p - 1;
    }
    CT_TRY(ct_copy_t(sp, rbuf, cnt[r], dt, &s.t)); /* the input is read no more */
out:
    free(raw);
    rs_free(&s);
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
    ct_small_t small;
    char *tmp = ct_tmp_alloc_in(2 * (MPI_Aint)mine, &s.t, &raw, small.c, sizeof small);
    if (!tmp) {
        rc = alloc_failed("pairwise", 2 * (MPI_Aint)mine, &s.t);
        goto out;
    }
    char *acc = tmp, *recv = ct_elem(tmp, mine, &s.t);
    CT_TRY(ct_copy_t(ct_elem(in, s.disp[r], &s.t), acc, mine, dt, &s.t));
    for (int i = 1, dst = r, src = r; i < p; i++) {
        dst = dst + 1 < p ? dst + 1 : 0; /* r + i and r - i, mod p */
        src = src > 0 ? src - 1 : p - 1;
        CT_TRY(ct_sendrecv(ct_elem(in, s.disp[dst], &s.t), cnt[dst], dt, dst, TAG, recv, mine,
                           dt, src, TAG, comm, MPI_STATUS_IGNORE));
        CT_TRY(combine(recv, acc, mine, dt, op));
    }
    CT_TRY(ct_copy_t(acc, rbuf, mine, dt, &s.t));
out:
    free(raw);
    rs_free(&s);
    return rc;
}

/* ------------------------------------------------- Reduce_scatter_block */
/* The Reduce_scatter algorithm of the same name on p counts of rcount. */
typedef int (*rs_fn)(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm,
                     const ct_params_t *);
static int as_block(rs_fn fn, const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                    MPI_Op op, MPI_Comm comm, const ct_params_t *prm) {
    int p, r, small[64], *cnt = small;
    CT_CHECK(ct_comm_geom(comm, &p, &r));
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
