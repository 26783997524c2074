/*
 * allgather.c -- Allgather algorithms (see registry.c for the table).
 *
 * Blocks: rank i's contribution is block i of rbuf -- rcount elements of rdt
 * starting at rbuf + i*rcount*extent(rdt). Every algorithm except gather_bcast
 * sends its own block in its first step straight from sbuf (scount x sdt, same
 * signature as rcount x rdt) and copies it into block `rank` of rbuf after that
 * step -- or finds it there with MPI_IN_PLACE -- and otherwise moves whole
 * blocks of rbuf with the receive type, so derived types with holes or a lower
 * bound work and the holes of rbuf are never written. A block travels as `per` elements of `dt`
 * (ct_blk_t), so counts of up to p blocks never overflow an int. Sets of blocks
 * that are not contiguous in rbuf travel as one message with an indexed type.
 *
 * Every exchange is an MPI_Sendrecv or non-blocking, so no algorithm relies
 * on MPI buffering; all work for every process count (the power-of-two ones
 * fold the extra ranks in and out) and every message size.
 */
#include "ct_internal.h"

#include <limits.h>

/* State of one call. */
typedef struct {
    MPI_Comm comm;
    int np, r;
    char *rbuf;
    ct_blk_t b; /* blocks of rcount x rdt */
    /* my own block is still only in sbuf: the first send takes it from there and
     * ag_place_own copies it into rbuf afterwards */
    const void *sbuf;
    int scount, rcount, own_pending;
    MPI_Datatype sdt, rdt;
} ag_t;

static char *blk_at(const ag_t *g, int i) { return g->rbuf + (MPI_Aint)i * g->b.ext; }

/* Copy my own block from sbuf into position rank of rbuf, if it is not there yet. */
static int ag_place_own(ag_t *g) {
    if (!g->own_pending) return MPI_SUCCESS;
    g->own_pending = 0;
    if (g->sdt == g->rdt && g->scount == g->rcount) /* b.t: the geometry of rdt */
        return ct_copy_t(g->sbuf, blk_at(g, g->r), g->rcount, g->rdt, &g->b.t);
    return ct_copy_sig(g->sbuf, g->scount, g->sdt, blk_at(g, g->r), g->rcount, g->rdt);
}

/* Set up the call. My own block stays in sbuf for now (own_pending): a first step
 * that sends only that block reads it from sbuf (see xchg) and the copy into rbuf
 * comes after it (ag_place_own; any other step places it first, ag_end at the
 * latest). Sending a block that was just copied into rbuf is markedly slower on
 * shared memory -- the peer reads cache lines that are dirty in this core's cache:
 * about 2x for 64 KiB at 2 processes on the development VM -- so the copy is kept
 * off the first step. */
static int ag_begin(ag_t *g, const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                    int rcount, MPI_Datatype rdt, MPI_Comm comm) {
    g->comm = comm;
    g->rbuf = rbuf;
    g->sbuf = sbuf;
    g->scount = scount;
    g->sdt = sdt;
    g->rcount = rcount;
    g->rdt = rdt;
    g->own_pending = sbuf != MPI_IN_PLACE;
    CT_CHECK(ct_comm_geom(comm, &g->np, &g->r));
    if (rcount > INT_MAX / g->np) return ct_blk_init(&g->b, rcount, rdt, g->np);
    /* the common case of ct_blk_init without the call: blocks of rcount x rdt */
    CT_CHECK(ct_type(rdt, &g->b.t));
    g->b.owned = 0;
    g->b.dt = rdt;
    g->b.per = rcount;
    g->b.ext = (MPI_Aint)rcount * g->b.t.extent;
    return MPI_SUCCESS;
}

/* Copy n blocks from src to dst (the geometry at hand where the block type is rdt). */
static int blk_copy(const ag_t *g, const void *src, void *dst, int n) {
    if (!g->b.owned) return ct_copy_t(src, dst, n * g->b.per, g->b.dt, &g->b.t);
    return ct_copy(src, dst, n * g->b.per, g->b.dt);
}

/* Finish the call: place my own block if no step did, release the block type. */
static int ag_end(ag_t *g, int rc) {
    if (rc == MPI_SUCCESS) rc = ag_place_own(g);
    ct_blk_free(&g->b);
    return rc;
}

/* Send blocks sfirst..sfirst+scnt-1 of rbuf to dst while receiving blocks
 * rfirst..rfirst+rcnt-1 from src. While my own block is still only in sbuf
 * (see ag_begin), a step that sends just that block sends it from sbuf and
 * places it in rbuf afterwards; any other step places it first. */
static inline int xchg(ag_t *g, int sfirst, int scnt, int dst, int rfirst, int rcnt, int src) {
    if (g->own_pending && sfirst == g->r && scnt == 1) {
        CT_CHECK(ct_sendrecv(g->sbuf, g->scount, g->sdt, dst, CT_TAG_ALLGATHER,
                              blk_at(g, rfirst), rcnt * g->b.per, g->b.dt, src,
                              CT_TAG_ALLGATHER, g->comm, MPI_STATUS_IGNORE));
        return ag_place_own(g);
    }
    CT_CHECK(ag_place_own(g));
    return ct_sendrecv(blk_at(g, sfirst), scnt * g->b.per, g->b.dt, dst, CT_TAG_ALLGATHER,
                        blk_at(g, rfirst), rcnt * g->b.per, g->b.dt, src, CT_TAG_ALLGATHER,
                        g->comm, MPI_STATUS_IGNORE);
}

/* Committed indexed type over rbuf: n runs, run i = len[i] blocks from block
 * first[i]. Scales first[] and len[] in place to elements of the block type. */
static int runs_type(const ag_t *g, int n, int *first, int *len, MPI_Datatype *out) {
    for (int i = 0; i < n; i++) {
        first[i] *= g->b.per;
        len[i] *= g->b.per;
    }
    int rc = MPI_Type_indexed(n, len, first, g->b.dt, out);
    if (rc != MPI_SUCCESS) {
        *out = MPI_DATATYPE_NULL;
        return rc;
    }
    rc = MPI_Type_commit(out);
    if (rc != MPI_SUCCESS) MPI_Type_free(out); /* sets *out = MPI_DATATYPE_NULL */
    return rc;
}

/* Send the runs (sfirst, slen)[0..sn) to dst while receiving (rfirst,
 * rlen)[0..rn) from src, each set as one message. A peer of MPI_PROC_NULL
 * skips that direction. The arrays are scaled in place. */
static int xchg_runs(ag_t *g, int sn, int *sfirst, int *slen, int dst, int rn,
                     int *rfirst, int *rlen, int src) {
    MPI_Datatype st = MPI_DATATYPE_NULL, rt = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS;
    CT_CHECK(ag_place_own(g));
    if (dst != MPI_PROC_NULL) CT_TRY(runs_type(g, sn, sfirst, slen, &st));
    if (src != MPI_PROC_NULL) CT_TRY(runs_type(g, rn, rfirst, rlen, &rt));
#ifdef SMPI_SHARED_MALLOC
    /* SimGrid's SMPI refuses a Sendrecv whose send and receive buffers start at the
     * same address even when the datatypes select disjoint bytes (legal MPI): the
     * same exchange as a receive and a send in flight together */
    {
        MPI_Request req[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
        if (src != MPI_PROC_NULL)
            CT_TRY(MPI_Irecv(g->rbuf, 1, rt, src, CT_TAG_ALLGATHER, g->comm, &req[0]));
        if (dst != MPI_PROC_NULL)
            CT_TRY(ct_isend(g->rbuf, 1, st, dst, CT_TAG_ALLGATHER, g->comm, &req[1]));
        CT_TRY(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    }
#else
    CT_TRY(ct_sendrecv(g->rbuf, dst != MPI_PROC_NULL, dst != MPI_PROC_NULL ? st : g->b.dt, dst,
                     CT_TAG_ALLGATHER, g->rbuf, src != MPI_PROC_NULL,
                     src != MPI_PROC_NULL ? rt : g->b.dt, src, CT_TAG_ALLGATHER, g->comm,
                     MPI_STATUS_IGNORE));
#endif
out:
    if (st != MPI_DATATYPE_NULL) MPI_Type_free(&st);
    if (rt != MPI_DATATYPE_NULL) MPI_Type_free(&rt);
    return rc;
}

/* ---- folding a non-power-of-two process count ----------------------------
 * q = largest power of two <= p, rem = p - q. Ranks 2i and 2i+1 (i < rem) form
 * a pair: the even one hands its block to the odd one and sits out; the odd
 * one plays virtual rank i. Ranks >= 2*rem play virtual rank r - rem. Virtual
 * rank u then holds real blocks fold_first(u) .. fold_first(u+1)-1 (two
 * blocks for u < rem, one otherwise), so a range of virtual ranks is a
 * contiguous range of real blocks. At the end each odd rank sends everything
 * to its even partner. */
typedef struct {
    int q, rem;
    int v; /* my virtual rank, -1 if I sit out */
} fold_t;

static void fold_init(fold_t *f, int np, int r) {
    f->q = ct_pow2_floor(np);
    f->rem = np - f->q;
    if (r < 2 * f->rem)
        f->v = (r % 2) ? r / 2 : -1;
    else
        f->v = r - f->rem;
}
static int fold_first(const fold_t *f, int u) { return u < f->rem ? 2 * u : u + f->rem; }
static int fold_nblk(const fold_t *f, int u) { return u < f->rem ? 2 : 1; }
static int fold_rank(const fold_t *f, int u) { return u < f->rem ? 2 * u + 1 : u + f->rem; }

/* Before the power-of-two phase: even ranks of the pairs hand their block over. */
static int fold_in(ag_t *g, const fold_t *f) {
    if (g->r >= 2 * f->rem) return MPI_SUCCESS;
    if (f->v < 0) { /* the partner's first action is this receive: no deadlock */
        if (g->own_pending) /* from sbuf; the partner sends all blocks back at the end */
            return ct_send(g->sbuf, g->scount, g->sdt, g->r + 1, CT_TAG_ALLGATHER, g->comm);
        return ct_send(blk_at(g, g->r), g->b.per, g->b.dt, g->r + 1, CT_TAG_ALLGATHER,
                        g->comm);
    }
    CT_CHECK(ag_place_own(g));
    return MPI_Recv(blk_at(g, g->r - 1), g->b.per, g->b.dt, g->r - 1, CT_TAG_ALLGATHER,
                    g->comm, MPI_STATUS_IGNORE);
}

/* After it: odd ranks of the pairs send all blocks but the partner's own. */
static int fold_out(ag_t *g, const fold_t *f) {
    if (g->r >= 2 * f->rem) return MPI_SUCCESS;
    int e = f->v < 0 ? g->r : g->r - 1; /* the even rank */
    int first[2] = { 0, e + 1 }, len[2] = { e, g->np - e - 1 };
    if (f->v < 0)
        return xchg_runs(g, 0, NULL, NULL, MPI_PROC_NULL, 2, first, len, e + 1);
    return xchg_runs(g, 2, first, len, e, 0, NULL, NULL, MPI_PROC_NULL);
}

/* ---- the algorithms ------------------------------------------------------ */

int ct_allgather_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                        MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

/*
 * Linear: every rank posts a receive from every other rank and a send of its
 * own block to every other rank (in staggered order, rank+1 first), then waits
 * for all -- the seed's Send/Recv version made deadlock-free.
 */
int ct_allgather_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                        MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    int rc = MPI_SUCCESS, n = 0;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    MPI_Request *req = malloc((size_t)(2 * g.np) * sizeof *req);
    if (!req) return ag_end(&g, ct_set_error(MPI_ERR_NO_MEM, "allgather/linear: out of memory"));
    for (int i = 1; i < g.np; i++) {
        int src = (g.r - i + g.np) % g.np;
        CT_TRY(MPI_Irecv(blk_at(&g, src), g.b.per, g.b.dt, src, CT_TAG_ALLGATHER, comm, &req[n]));
        n++;
    }
    for (int i = 1; i < g.np; i++) { /* my block from sbuf, or from rbuf when in place */
        int dst = (g.r + i) % g.np;
        if (g.own_pending)
            CT_TRY(ct_isend(sbuf, scount, sdt, dst, CT_TAG_ALLGATHER, comm, &req[n]));
        else
            CT_TRY(ct_isend(blk_at(&g, g.r), g.b.per, g.b.dt, dst, CT_TAG_ALLGATHER, comm,
                          &req[n]));
        n++;
    }
    CT_TRY(ag_place_own(&g)); /* the local copy while the messages are in flight */
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    free(req);
    return ag_end(&g, rc);
}

/*
 * Gather + Bcast: the colltune Gather algorithm chosen by the "gather"
 * parameter collects all blocks at rank 0, then the colltune Bcast algorithm
 * chosen by "bcast" broadcasts the whole of rbuf from rank 0.
 */
int ct_allgather_gather_bcast(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                              int rcount, MPI_Datatype rdt, MPI_Comm comm,
                              const ct_params_t *prm) {
    int np, r, rc;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    /* with MPI_IN_PLACE my block already sits in rbuf: send it from there
     * (the root of the gather may keep MPI_IN_PLACE) */
    if (sbuf == MPI_IN_PLACE && r != 0) {
        ct_type_t t;
        CT_CHECK(ct_type(rdt, &t));
        sbuf = (char *)rbuf + (MPI_Aint)r * rcount * t.extent;
        scount = rcount;
        sdt = rdt;
    }
    /* rbuf is not significant on the gather's non-roots (and would alias sbuf) */
    CT_CHECK(ct_run_gather((int)prm->v[CT_P_GATHER], sbuf, scount, sdt, r == 0 ? rbuf : NULL,
                           rcount, rdt, 0, comm));
    if (rcount <= INT_MAX / np)
        return ct_run_bcast((int)prm->v[CT_P_BCAST], rbuf, np * rcount, rdt, 0, comm);
    /* p*rcount elements overflow an int: broadcast p blocks of a block type */
    MPI_Datatype bt;
    CT_CHECK(MPI_Type_contiguous(rcount, rdt, &bt));
    rc = MPI_Type_commit(&bt);
    if (rc == MPI_SUCCESS) rc = ct_run_bcast((int)prm->v[CT_P_BCAST], rbuf, np, bt, 0, comm);
    MPI_Type_free(&bt);
    return rc;
}

/*
 * Ring: p-1 steps; in step i rank r sends block (r-i) mod p to r+1 and
 * receives block (r-i-1) mod p from r-1 (one Sendrecv per step).
 */
int ct_allgather_ring(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                      MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    int rc = MPI_SUCCESS;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    const int np = g.np, right = g.r + 1 < np ? g.r + 1 : 0, left = g.r > 0 ? g.r - 1 : np - 1;
    /* step i sends block r-i and receives block r-i-1 (mod p): counted down
     * without a division per step */
    for (int i = 0, sb = g.r; i < np - 1 && rc == MPI_SUCCESS; i++) {
        const int rb = sb > 0 ? sb - 1 : np - 1;
        rc = xchg(&g, sb, 1, right, rb, 1, left);
        sb = rb;
    }
    return ag_end(&g, rc);
}

/*
 * Recursive doubling: among q = 2^floor(log2 p) (virtual) ranks, partners at
 * distance 1, 2, 4, ..., q/2 exchange everything they hold -- before the step
 * at distance d a rank holds the d-aligned group of d virtual ranks around it,
 * a contiguous range of blocks. Extra ranks are folded in before and served
 * at the end (fold_in / fold_out).
 */
int ct_allgather_recursive_doubling(const void *sbuf, int scount, MPI_Datatype sdt,
                                    void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm,
                                    const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    fold_t f;
    int rc = MPI_SUCCESS;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    fold_init(&f, g.np, g.r);
    CT_TRY(fold_in(&g, &f));
    if (f.v >= 0) {
        for (int d = 1; d < f.q; d <<= 1) {
            int peer = f.v ^ d;
            int mine = f.v & ~(d - 1), theirs = peer & ~(d - 1);
            int s0 = fold_first(&f, mine), s1 = fold_first(&f, mine + d);
            int r0 = fold_first(&f, theirs), r1 = fold_first(&f, theirs + d);
            CT_TRY(xchg(&g, s0, s1 - s0, fold_rank(&f, peer), r0, r1 - r0, fold_rank(&f, peer)));
        }
    }
    CT_TRY(fold_out(&g, &f));
out:
    return ag_end(&g, rc);
}

/*
 * Recursive halving (the seed's variant): among q = 2^floor(log2 p) (virtual)
 * ranks, partners at distance q/2, q/4, ..., 1 exchange everything they hold.
 * Before the step at distance d a rank v holds the blocks of the virtual ranks
 * u with u = v (mod 2d) -- blocks 2d apart, sent as one indexed-type message
 * and received straight into place. Extra ranks are folded in and out as in
 * recursive doubling.
 */
int ct_allgather_recursive_halving(const void *sbuf, int scount, MPI_Datatype sdt,
                                   void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm,
                                   const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    fold_t f;
    int rc = MPI_SUCCESS, *buf = NULL;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    fold_init(&f, g.np, g.r);
    const int nmax = f.q / 2 > 0 ? f.q / 2 : 1;
    buf = malloc((size_t)(4 * nmax) * sizeof *buf);
    if (!buf) return ag_end(&g, ct_set_error(MPI_ERR_NO_MEM, "allgather/recursive_halving: "
                                             "out of memory"));
    int *sfirst = buf, *slen = buf + nmax, *rfirst = buf + 2 * nmax, *rlen = buf + 3 * nmax;
    CT_TRY(fold_in(&g, &f));
    if (f.v >= 0) {
        for (int d = f.q / 2; d >= 1; d >>= 1) {
            const int n = f.q / (2 * d), peer = f.v ^ d;
            const int peer_rank = fold_rank(&f, peer);
            for (int t = 0; t < n; t++) {
                int u = f.v % (2 * d) + 2 * d * t, w = peer % (2 * d) + 2 * d * t;
                sfirst[t] = fold_first(&f, u);
                slen[t] = fold_nblk(&f, u);
                rfirst[t] = fold_first(&f, w);
                rlen[t] = fold_nblk(&f, w);
            }
            if (n == 1)
                CT_TRY(xchg(&g, sfirst[0], slen[0], peer_rank, rfirst[0], rlen[0], peer_rank));
            else
                CT_TRY(xchg_runs(&g, n, sfirst, slen, peer_rank, n, rfirst, rlen, peer_rank));
        }
    }
    CT_TRY(fold_out(&g, &f));
out:
    free(buf);
    return ag_end(&g, rc);
}

/*
 * Bruck: blocks are gathered in a temporary in rotated order (slot i holds
 * block (rank+i) mod p). In step j (distance d = 2^j) a rank sends its first
 * min(d, p-d) slots to rank-d and receives as many into slots d.. from rank+d.
 * After ceil(log2 p) steps a local rotation puts every block in its place.
 */
int ct_allgather_bruck(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                       MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    void *raw = NULL;
    int rc = MPI_SUCCESS;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    const int np = g.np, r = g.r, per = g.b.per;
    if (np == 1) return ag_end(&g, MPI_SUCCESS);
    if (np == 2) /* one step, one block each way: received in place, no rotation */
        return ag_end(&g, xchg(&g, r, 1, 1 - r, 1 - r, 1, 1 - r));
    ct_small_t small;
    char *tmp = ct_tmp_alloc_in((MPI_Aint)np * rcount, &g.b.t, &raw, &small, sizeof small);
    if (!tmp) return ag_end(&g, ct_set_error(MPI_ERR_NO_MEM, "allgather/bruck: out of memory"));
    int d = 1;
    if (g.own_pending) { /* step 1 sends my block straight from sbuf (see ag_begin) */
        CT_TRY(ct_sendrecv(sbuf, scount, sdt, (r - 1 + np) % np, CT_TAG_ALLGATHER,
                         tmp + g.b.ext, per, g.b.dt, (r + 1) % np, CT_TAG_ALLGATHER, comm,
                         MPI_STATUS_IGNORE));
        if (sdt == g.b.dt && scount == per)
            CT_TRY(blk_copy(&g, sbuf, tmp, 1));
        else
            CT_TRY(ct_copy_sig(sbuf, scount, sdt, tmp, per, g.b.dt));
        d = 2;
    } else {
        CT_TRY(blk_copy(&g, blk_at(&g, r), tmp, 1));
    }
    for (; d < np; d <<= 1) {
        int cnt = d < np - d ? d : np - d;
        CT_TRY(ct_sendrecv(tmp, cnt * per, g.b.dt, (r - d + np) % np, CT_TAG_ALLGATHER,
                         tmp + (MPI_Aint)d * g.b.ext, cnt * per, g.b.dt, (r + d) % np,
                         CT_TAG_ALLGATHER, comm, MPI_STATUS_IGNORE));
    }
    /* slots 1..p-r-1 are blocks r+1..p-1, slots p-r..p-1 are blocks 0..r-1 */
    CT_TRY(blk_copy(&g, tmp + g.b.ext, blk_at(&g, r + 1), np - r - 1));
    CT_TRY(blk_copy(&g, tmp + (MPI_Aint)(np - r) * g.b.ext, blk_at(&g, 0), r));
out:
    free(raw);
    return ag_end(&g, rc);
}

/* Neighbor exchange (Chen et al.), even p: the schedule of ct_nbx_t, one pair of
 * blocks (contiguous in the receive buffer) per message. */
int ct_allgather_neighbor_exchange(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                   int rcount, MPI_Datatype rdt, MPI_Comm comm,
                                   const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    int rc = MPI_SUCCESS;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    const int np = g.np, r = g.r;
    if (np % 2)
        return ag_end(&g, ct_set_error(MPI_ERR_ARG, "allgather/neighbor_exchange needs an "
                                       "even process count (got %d)", np));
    ct_nbx_t x;
    ct_nbx_init(&x, np, r);
    CT_TRY(xchg(&g, r, 1, x.nb[0], x.nb[0], 1, x.nb[0]));
    for (int i = 1; i < np / 2; i++) {
        int send, recv;
        const int peer = ct_nbx_step(&x, i, &send, &recv);
        CT_TRY(xchg(&g, send, 2, peer, recv, 2, peer));
    }
out:
    return ag_end(&g, rc);
}

/* Two processes: a single exchange of the two blocks. Without the state of the
 * other algorithms: one block of rcount elements is a message, so no block type
 * is ever needed. */
int ct_allgather_two_proc(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                          int rcount, MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (np != 2)
        return ct_set_error(MPI_ERR_ARG, "allgather/two_proc needs exactly 2 processes (got %d)",
                            np);
    CT_CHECK(ct_type(rdt, &t));
    const int o = 1 - r;
    const MPI_Aint bext = (MPI_Aint)rcount * t.extent;
    char *mine = (char *)rbuf + r * bext, *theirs = (char *)rbuf + o * bext;
    if (sbuf == MPI_IN_PLACE)
        return ct_sendrecv(mine, rcount, rdt, o, CT_TAG_ALLGATHER, theirs, rcount, rdt, o,
                           CT_TAG_ALLGATHER, comm, MPI_STATUS_IGNORE);
    /* my block straight from sbuf, placed after the exchange (see ag_begin) */
    CT_CHECK(ct_sendrecv(sbuf, scount, sdt, o, CT_TAG_ALLGATHER, theirs, rcount, rdt, o,
                         CT_TAG_ALLGATHER, comm, MPI_STATUS_IGNORE));
    if (sdt == rdt && scount == rcount) return ct_copy_t(sbuf, mine, rcount, rdt, &t);
    return ct_copy_sig(sbuf, scount, sdt, mine, rcount, rdt);
}

/*
 * Sparbit (Loch & Koslovski 2021): L = ceil(log2 p) steps with distances
 * d = 2^(L-1), ..., 2, 1 -- far partners first, near ones last, while the
 * data doubles. Before the step at distance d rank r holds blocks
 * r - 2d*t (mod p), t = 0..k-1 with k = ceil(p/2d); it sends them to r+d and
 * receives the set of r-d, blocks r - d - 2d*t, into place (one indexed-type
 * message each way). When p is not a power of two, doubling would overshoot:
 * in a step where ceil(p/d) is odd the last block is left out, so that after
 * the last step (d = 1) rank r holds exactly blocks r, r-1, ..., r-p+1.
 */
int ct_allgather_sparbit(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                         MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    ag_t g;
    int rc = MPI_SUCCESS, *buf = NULL;
    CT_CHECK(ag_begin(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
    const int np = g.np, r = g.r;
    if (np == 1) return ag_end(&g, MPI_SUCCESS);
    int L = 0;
    while ((1 << L) < np) L++;
    const int nmax = (np + 1) / 2;
    buf = malloc((size_t)(4 * nmax) * sizeof *buf);
    if (!buf) return ag_end(&g, ct_set_error(MPI_ERR_NO_MEM, "allgather/sparbit: out of memory"));
    int *sfirst = buf, *slen = buf + nmax, *rfirst = buf + 2 * nmax, *rlen = buf + 3 * nmax;
    int k = 1; /* blocks held */
    for (int j = L - 1; j >= 0; j--) {
        const int d = 1 << j;
        const int knext = (np + d - 1) / d; /* held after this step          */
        const int n = knext - k;            /* sent = received: k or k-1      */
        const int to = (r + d) % np, from = (r - d + np) % np;
        for (int t = 0; t < n; t++) {
            /* 2d*t and d*(2t+1) are both < p here, so no wrap below -p */
            sfirst[t] = (r - 2 * d * t + np) % np;
            rfirst[t] = (r - d * (2 * t + 1) + np) % np;
            slen[t] = rlen[t] = 1;
        }
        if (n == 1)
            CT_TRY(xchg(&g, sfirst[0], 1, to, rfirst[0], 1, from));
        else
            CT_TRY(xchg_runs(&g, n, sfirst, slen, to, n, rfirst, rlen, from));
        k = knext;
    }
out:
    free(buf);
    return ag_end(&g, rc);
}
