/*
 * allgatherv.c -- Allgatherv algorithms (see registry.c for the table).
 *
 * Blocks: rank j's contribution is block j of rbuf -- rcounts[j] elements of
 * this rank's rdt starting at rbuf + displs[j]*extent(rdt). Block j's type
 * signature is rank j's send signature on every rank, but each rank may
 * describe it with its own datatype and count, so blocks always travel whole,
 * in the receiver's (or sender's) own datatype: one block as rcounts[j] x rdt,
 * a set of blocks as one message of an indexed type over rbuf (lengths
 * rcounts[j], displacements displs[j]); a block is never cut. Counts may be
 * uneven and zero; an empty block still travels as an empty message where the
 * pattern has a step for it, so every rank runs the same steps.
 *
 * My own block: as allgather.c, a first step that sends only that block sends
 * it straight from sbuf (scount x sdt) and copies it into place afterwards;
 * any other step copies it first. With MPI_IN_PLACE it is already at
 * displs[rank] and sendcount/sendtype are never read.
 *
 * Every exchange is an MPI_Sendrecv or non-blocking, so no algorithm relies on
 * MPI buffering; all work for every process count (neighbor_exchange needs an
 * even one and two_proc two: they declare ring as their fallback).
 */
#include "ct_internal.h"

#include <limits.h>

#define AGV_STACK 32 /* processes whose index arrays live on the stack */

/* State of one call. */
typedef struct {
    MPI_Comm comm;
    int np, r;
    char *rbuf;
    const int *rcounts, *displs;
    MPI_Datatype rdt;
    MPI_Aint rext;
    ct_type_t rt; /* geometry of rdt */
    const void *sbuf; /* my block while own_pending (see the header) */
    int scount, own_pending;
    MPI_Datatype sdt;
    int *lens, *disps; /* np each: the arguments of MPI_Type_indexed */
    int *sidx, *ridx;  /* np each: block lists of one step */
    int *heap;         /* the four arrays when np > AGV_STACK, else NULL */
} agv_t;

static char *blk(const agv_t *g, int j) { return g->rbuf + (MPI_Aint)g->displs[j] * g->rext; }

static int place_own(agv_t *g) {
    if (!g->own_pending) return MPI_SUCCESS;
    g->own_pending = 0;
    if (g->sdt == g->rdt && g->scount == g->rcounts[g->r]) /* the geometry at hand */
        return ct_copy_t(g->sbuf, blk(g, g->r), g->scount, g->rdt, &g->rt);
    return ct_copy_sig(g->sbuf, g->scount, g->sdt, blk(g, g->r), g->rcounts[g->r], g->rdt);
}

static int agv_begin(agv_t *g, int *stack, const void *sbuf, int scount, MPI_Datatype sdt,
                     void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rdt,
                     MPI_Comm comm) {
    g->comm = comm;
    g->rbuf = rbuf;
    g->rcounts = rcounts;
    g->displs = displs;
    g->rdt = rdt;
    g->sbuf = sbuf;
    g->scount = scount;
    g->sdt = sdt;
    g->own_pending = sbuf != MPI_IN_PLACE;
    g->heap = NULL;
    /* no MPI call for either: the dispatcher's size and rank, the type cache */
    CT_CHECK(ct_comm_geom(comm, &g->np, &g->r));
    CT_CHECK(ct_type(rdt, &g->rt)); /* cached after the first call */
    g->rext = g->rt.extent;
    int *a = stack;
    if (g->np > AGV_STACK) {
        a = g->heap = malloc((size_t)(4 * g->np) * sizeof *a);
        if (!a) return ct_set_error(MPI_ERR_NO_MEM, "allgatherv: out of memory");
    }
    g->lens = a;
    g->disps = a + g->np;
    g->sidx = a + 2 * g->np;
    g->ridx = a + 3 * g->np;
    return MPI_SUCCESS;
}

/* Place my own block if no step did; release the arrays. */
static int agv_end(agv_t *g, int rc) {
    if (rc == MPI_SUCCESS) rc = place_own(g);
    if (g->heap) free(g->heap);
    return rc;
}

/* The message of blocks idx[0..n): one block as rcounts x rdt at its place, several
 * as one element of a committed indexed type over rbuf (*owned: free it). */
static int set_msg(agv_t *g, int n, const int *idx, void **addr, int *count, MPI_Datatype *dt,
                   int *owned) {
    *owned = 0;
    if (n == 1) {
        *addr = blk(g, idx[0]);
        *count = g->rcounts[idx[0]];
        *dt = g->rdt;
        return MPI_SUCCESS;
    }
    for (int k = 0; k < n; k++) {
        g->lens[k] = g->rcounts[idx[k]];
        g->disps[k] = g->displs[idx[k]];
    }
    CT_CHECK(MPI_Type_indexed(n, g->lens, g->disps, g->rdt, dt));
    int rc = MPI_Type_commit(dt);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(dt);
        return rc;
    }
    *owned = 1;
    *addr = g->rbuf;
    *count = 1;
    return MPI_SUCCESS;
}

/* Send blocks sidx[0..sn) to dst while receiving blocks ridx[0..rn) from src, one
 * message each way; a peer of MPI_PROC_NULL skips that direction. A step that
 * sends only my own block while it is still only in sbuf sends it from there. */
static int xchg_set(agv_t *g, int sn, const int *sidx, int dst, int rn, const int *ridx,
                    int src) {
    void *sa = NULL, *ra = NULL;
    int sc = 0, rcnt = 0, sown = 0, rown = 0, rc = MPI_SUCCESS, from_sbuf = 0;
    MPI_Datatype st = g->rdt, rt = g->rdt;
    if (dst != MPI_PROC_NULL && g->own_pending && sn == 1 && sidx[0] == g->r) {
        from_sbuf = 1;
        sa = (void *)g->sbuf;
        sc = g->scount;
        st = g->sdt;
    } else {
        CT_CHECK(place_own(g));
        if (dst != MPI_PROC_NULL) CT_CHECK(set_msg(g, sn, sidx, &sa, &sc, &st, &sown));
    }
    if (src != MPI_PROC_NULL) CT_TRY(set_msg(g, rn, ridx, &ra, &rcnt, &rt, &rown));
#ifdef SMPI_SHARED_MALLOC
    /* SMPI refuses a Sendrecv whose two buffers start at one address (legal MPI when
     * the datatypes select disjoint bytes): a receive and a send in flight together */
    {
        MPI_Request req[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
        if (src != MPI_PROC_NULL)
            CT_TRY(MPI_Irecv(ra, rcnt, rt, src, CT_TAG_ALLGATHERV, g->comm, &req[0]));
        if (dst != MPI_PROC_NULL)
            CT_TRY(ct_isend(sa, sc, st, dst, CT_TAG_ALLGATHERV, g->comm, &req[1]));
        CT_TRY(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    }
#else
    CT_TRY(ct_sendrecv(sa, sc, st, dst, CT_TAG_ALLGATHERV, ra, rcnt, rt, src, CT_TAG_ALLGATHERV,
                       g->comm, MPI_STATUS_IGNORE));
#endif
    if (from_sbuf) rc = place_own(g);
out:
    if (sown) MPI_Type_free(&st);
    if (rown) MPI_Type_free(&rt);
    return rc;
}

/* One block each way, to and from real ranks: xchg_set without its general
 * message set-up (about 130 instructions of an 8-byte call's 1,600). */
static int xchg1(agv_t *g, int sblk, int dst, int rblk, int src) {
#ifdef SMPI_SHARED_MALLOC
    return xchg_set(g, 1, &sblk, dst, 1, &rblk, src);
#else
    if (g->own_pending && sblk == g->r) { /* my block straight from sbuf (see the header) */
        CT_CHECK(ct_sendrecv(g->sbuf, g->scount, g->sdt, dst, CT_TAG_ALLGATHERV, blk(g, rblk),
                             g->rcounts[rblk], g->rdt, src, CT_TAG_ALLGATHERV, g->comm,
                             MPI_STATUS_IGNORE));
        return place_own(g);
    }
    CT_CHECK(place_own(g));
    return ct_sendrecv(blk(g, sblk), g->rcounts[sblk], g->rdt, dst, CT_TAG_ALLGATHERV,
                       blk(g, rblk), g->rcounts[rblk], g->rdt, src, CT_TAG_ALLGATHERV, g->comm,
                       MPI_STATUS_IGNORE);
#endif
}

/* Whether block j is empty (the same on every rank: its signature is rank j's). */
static int blk_empty(const agv_t *g, int j, int rsize) {
    return g->rcounts[j] == 0 || rsize == 0;
}

/* ---- the algorithms ------------------------------------------------------ */

int ct_allgatherv_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                         const ct_params_t *p) {
    (void)p;
    return PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
}

/* Linear: every rank posts a receive of every other rank's non-empty block and a
 * send of its own block (if not empty) to every other rank, rank+1 first, copies
 * its own block meanwhile, and waits for all. */
int ct_allgatherv_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                         const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS, n = 0, rsize;
    MPI_Request rstack[2 * AGV_STACK];
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    MPI_Request *req = g.np <= AGV_STACK ? rstack : malloc((size_t)(2 * g.np) * sizeof *req);
    if (!req)
        return agv_end(&g, ct_set_error(MPI_ERR_NO_MEM, "allgatherv/linear: out of memory"));
    rsize = g.rt.size;
    for (int i = 1; i < g.np; i++) {
        int src = (g.r - i + g.np) % g.np;
        if (blk_empty(&g, src, rsize)) continue; /* the peer sends nothing either */
        CT_TRY(MPI_Irecv(blk(&g, src), rcounts[src], rdt, src, CT_TAG_ALLGATHERV, comm,
                         &req[n]));
        n++;
    }
    if (!blk_empty(&g, g.r, rsize))
        for (int i = 1; i < g.np; i++) {
            int dst = (g.r + i) % g.np;
            if (g.own_pending)
                CT_TRY(ct_isend(sbuf, scount, sdt, dst, CT_TAG_ALLGATHERV, comm, &req[n]));
            else
                CT_TRY(ct_isend(blk(&g, g.r), rcounts[g.r], rdt, dst, CT_TAG_ALLGATHERV, comm,
                                &req[n]));
            n++;
        }
    CT_TRY(place_own(&g));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != rstack) free(req);
    return agv_end(&g, rc);
}

/*
 * Gatherv + Bcast (Open MPI's "default"): rank 0 receives every other rank's
 * non-empty block into place (all receives posted at once), then the colltune
 * Bcast algorithm chosen by "bcast" broadcasts all p blocks from rank 0 as one
 * element of an indexed type over rbuf (the same signature on every rank).
 */
int ct_allgatherv_gatherv_bcast(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                const int *rcounts, const int *displs, MPI_Datatype rdt,
                                MPI_Comm comm, const ct_params_t *prm) {
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS, n = 0, rsize;
    MPI_Request rstack[AGV_STACK], *req = NULL;
    MPI_Datatype all = MPI_DATATYPE_NULL;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    rsize = g.rt.size;
    if (g.r == 0) {
        req = g.np <= AGV_STACK ? rstack : malloc((size_t)g.np * sizeof *req);
        if (!req) {
            rc = ct_set_error(MPI_ERR_NO_MEM, "allgatherv/gatherv_bcast: out of memory");
            goto out;
        }
        for (int j = 1; j < g.np; j++) {
            if (blk_empty(&g, j, rsize)) continue;
            CT_TRY(MPI_Irecv(blk(&g, j), rcounts[j], rdt, j, CT_TAG_ALLGATHERV, comm, &req[n]));
            n++;
        }
        CT_TRY(place_own(&g));
        CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        n = 0;
    } else if (!blk_empty(&g, g.r, rsize)) {
        if (g.own_pending)
            CT_TRY(ct_send(sbuf, scount, sdt, 0, CT_TAG_ALLGATHERV, comm));
        else
            CT_TRY(ct_send(blk(&g, g.r), rcounts[g.r], rdt, 0, CT_TAG_ALLGATHERV, comm));
    }
    CT_TRY(place_own(&g));
    if (g.np == 1) goto out;
    {
        /* blocks back to back in rank order (the usual layout): the broadcast is
         * their total count of rdt from block 0 -- the same type signature as the
         * indexed type over all blocks, whose creation, commit and release cost
         * more than an 8-byte exchange (callgrind: about 1,800 instructions).
         * Every rank may decide differently: the broadcast algorithms cut the
         * signature's byte stream, never elements of a rank's datatype. */
        long total = rcounts[0];
        int j = 1;
        for (; j < g.np && displs[j] == displs[j - 1] + rcounts[j - 1]; j++) total += rcounts[j];
        if (j == g.np && total <= INT_MAX) {
            rc = ct_run_bcast((int)prm->v[CT_P_BCAST], blk(&g, 0), (int)total, rdt, 0, comm);
            goto out;
        }
    }
    for (int j = 0; j < g.np; j++) g.sidx[j] = j;
    {
        void *addr;
        int count, owned;
        CT_TRY(set_msg(&g, g.np, g.sidx, &addr, &count, &all, &owned));
        rc = ct_run_bcast((int)prm->v[CT_P_BCAST], addr, count, all, 0, comm);
        if (owned) MPI_Type_free(&all);
    }
out:
    if (req != rstack) free(req);
    return agv_end(&g, rc);
}

/* Ring: p-1 steps; in step i rank r sends block (r-i) mod p to r+1 and receives
 * block (r-i-1) mod p from r-1. */
int ct_allgatherv_ring(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                       const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                       const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    const int np = g.np, right = g.r + 1 < np ? g.r + 1 : 0, left = g.r > 0 ? g.r - 1 : np - 1;
    /* step i sends block r-i and receives block r-i-1 (mod p): counted down
     * without a division per step */
    for (int i = 0, sb = g.r; i < np - 1 && rc == MPI_SUCCESS; i++) {
        const int rb = sb > 0 ? sb - 1 : np - 1;
        rc = xchg1(&g, sb, right, rb, left);
        sb = rb;
    }
    return agv_end(&g, rc);
}

/*
 * Bruck: before the step at distance d = 1, 2, 4, ... rank r holds blocks
 * r, r+1, ..., r+d-1 (mod p); it sends the first min(d, p-d) of them to r-d and
 * receives blocks r+d, ... from r+d -- straight into place as one indexed-type
 * message each way (no temporary, no final rotation: Open MPI's allgatherv bruck).
 */
int ct_allgatherv_bruck(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                        const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                        const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    const int np = g.np, r = g.r;
    for (int d = 1; d < np; d <<= 1) {
        const int cnt = d < np - d ? d : np - d;
        for (int k = 0; k < cnt; k++) {
            g.sidx[k] = (r + k) % np;
            g.ridx[k] = (r + d + k) % np;
        }
        CT_TRY(xchg_set(&g, cnt, g.sidx, (r - d + np) % np, cnt, g.ridx, (r + d) % np));
    }
out:
    return agv_end(&g, rc);
}

/* ---- folding a non-power-of-two process count (as allgather.c) ------------
 * q = largest power of two <= p, rem = p - q. Ranks 2i and 2i+1 (i < rem) pair:
 * the even one hands its block to the odd one and sits out; the odd one plays
 * virtual rank i. Ranks >= 2*rem play virtual rank r - rem. Virtual rank u holds
 * blocks fold_first(u) .. fold_first(u+1)-1. At the end each odd rank sends
 * every block but its partner's own to the partner. */
typedef struct {
    int q, rem, v; /* v: my virtual rank, -1 if I sit out */
} fold_t;

static void fold_init(fold_t *f, int np, int r) {
    f->q = ct_pow2_floor(np);
    f->rem = np - f->q;
    f->v = r < 2 * f->rem ? ((r % 2) ? r / 2 : -1) : r - f->rem;
}
static int fold_first(const fold_t *f, int u) { return u < f->rem ? 2 * u : u + f->rem; }
static int fold_rank(const fold_t *f, int u) { return u < f->rem ? 2 * u + 1 : u + f->rem; }

/* blocks lo..hi-1 into idx; returns their number */
static int range(int *idx, int lo, int hi) {
    for (int j = lo; j < hi; j++) idx[j - lo] = j;
    return hi - lo;
}

/*
 * Recursive doubling: among q = 2^floor(log2 p) virtual ranks, partners at
 * distance 1, 2, 4, ..., q/2 exchange everything they hold (the d-aligned group
 * of d virtual ranks, a contiguous range of blocks); extra ranks fold in before
 * and get everything at the end, so any p works.
 */
int ct_allgatherv_recursive_doubling(const void *sbuf, int scount, MPI_Datatype sdt,
                                     void *rbuf, const int *rcounts, const int *displs,
                                     MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    fold_t f;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    const int r = g.r, np = g.np;
    fold_init(&f, np, r);
    if (r < 2 * f.rem) { /* fold in: the partner's first action is this receive */
        int mine = f.v < 0 ? r : r - 1;
        if (f.v < 0) CT_TRY(xchg_set(&g, 1, &mine, r + 1, 0, NULL, MPI_PROC_NULL));
        else CT_TRY(xchg_set(&g, 0, NULL, MPI_PROC_NULL, 1, &mine, r - 1));
    }
    if (f.v >= 0)
        for (int d = 1; d < f.q; d <<= 1) {
            const int peer = f.v ^ d, mine = f.v & ~(d - 1), theirs = peer & ~(d - 1);
            int sn = range(g.sidx, fold_first(&f, mine), fold_first(&f, mine + d));
            int rn = range(g.ridx, fold_first(&f, theirs), fold_first(&f, theirs + d));
            CT_TRY(xchg_set(&g, sn, g.sidx, fold_rank(&f, peer), rn, g.ridx,
                            fold_rank(&f, peer)));
        }
    if (r < 2 * f.rem) { /* fold out */
        const int e = f.v < 0 ? r : r - 1;
        int n = range(g.sidx, 0, e);
        n += range(g.sidx + n, e + 1, np);
        if (f.v < 0) CT_TRY(xchg_set(&g, 0, NULL, MPI_PROC_NULL, n, g.sidx, e + 1));
        else CT_TRY(xchg_set(&g, n, g.sidx, e, 0, NULL, MPI_PROC_NULL));
    }
out:
    return agv_end(&g, rc);
}

/* Neighbor exchange (Chen et al.), even p: the schedule of ct_nbx_t, one pair of
 * blocks (one indexed-type message) per step. */
int ct_allgatherv_neighbor_exchange(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                                    const int *rcounts, const int *displs, MPI_Datatype rdt,
                                    MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    const int np = g.np, r = g.r;
    if (np % 2)
        return agv_end(&g, ct_set_error(MPI_ERR_ARG, "allgatherv/neighbor_exchange needs an "
                                        "even process count (got %d)", np));
    ct_nbx_t x;
    ct_nbx_init(&x, np, r);
    CT_TRY(xchg1(&g, r, x.nb[0], x.nb[0], x.nb[0]));
    for (int i = 1; i < np / 2; i++) {
        int send, recv;
        const int peer = ct_nbx_step(&x, i, &send, &recv);
        g.sidx[0] = send;
        g.sidx[1] = send + 1;
        g.ridx[0] = recv;
        g.ridx[1] = recv + 1;
        CT_TRY(xchg_set(&g, 2, g.sidx, peer, 2, g.ridx, peer));
    }
out:
    return agv_end(&g, rc);
}

/* Two processes: one exchange of the two blocks. */
int ct_allgatherv_two_proc(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                           const int *rcounts, const int *displs, MPI_Datatype rdt,
                           MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK];
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    if (g.np != 2)
        return agv_end(&g, ct_set_error(MPI_ERR_ARG, "allgatherv/two_proc needs exactly 2 "
                                        "processes (got %d)", g.np));
    const int o = 1 - g.r;
    return agv_end(&g, xchg1(&g, g.r, o, o, o));
}

/*
 * Sparbit (Loch & Koslovski 2021), as allgather.c's: distances d = 2^(L-1), ...,
 * 2, 1 with L = ceil(log2 p); before the step at distance d rank r holds blocks
 * r - 2d*t (mod p), sends them to r+d and receives r - d - 2d*t from r-d (the
 * last one left out where ceil(p/d) is odd), each set as one message.
 */
int ct_allgatherv_sparbit(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                          const int *rcounts, const int *displs, MPI_Datatype rdt,
                          MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    agv_t g;
    int stack[4 * AGV_STACK], rc = MPI_SUCCESS;
    CT_CHECK(agv_begin(&g, stack, sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm));
    const int np = g.np, r = g.r;
    int L = 0, k = 1;
    while ((1 << L) < np) L++;
    for (int j = L - 1; j >= 0; j--) {
        const int d = 1 << j, knext = (np + d - 1) / d, n = knext - k;
        for (int t = 0; t < n; t++) {
            g.sidx[t] = (r - 2 * d * t + np) % np;
            g.ridx[t] = (r - d * (2 * t + 1) + np) % np;
        }
        CT_TRY(xchg_set(&g, n, g.sidx, (r + d) % np, n, g.ridx, (r - d + np) % np));
        k = knext;
    }
out:
    return agv_end(&g, rc);
}

/* Test-only (hidden): ring, then the last rank corrupts the first byte of block 0
 * (when it has one) -- proves that the checks can fail. */
int ct_allgatherv_broken(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                         const ct_params_t *prm) {
    int np, r;
    ct_type_t t;
    CT_CHECK(ct_allgatherv_ring(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, prm));
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &r));
    CT_CHECK(ct_type(rdt, &t));
    if (np >= 2 && r == np - 1 && rcounts[0] > 0 && t.size > 0) /* the deliberate corruption */
        *((unsigned char *)rbuf + (MPI_Aint)displs[0] * t.extent + t.true_lb) ^= 0xFFu;
    return MPI_SUCCESS;
}
