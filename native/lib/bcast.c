/*
 * bcast.c -- Bcast algorithms (see registry.c for the table).
 *
 * Ranks are handled relative to the root: v = (rank - root + p) % p, so the
 * root is always v = 0 and a relative rank w is the real rank (w + root) % p.
 *
 * The tree algorithms (chain, pipeline, binary, split_binary, binomial,
 * knomial, _broken) differ only in the shape of the tree: each one builds its
 * parent/children lists and hands them to tree_pipeline(), which moves the
 * message down the tree in segments with nonblocking operations so that a
 * rank receives segment s+1 while it forwards segment s.
 */
#include "ct_internal.h"

#include <limits.h>

/* ---- small helpers --------------------------------------------------------- */

static inline int rel_rank(int rank, int root, int p) { return (rank - root + p) % p; }
static inline int real_rank(int v, int root, int p) { return (v + root) % p; }

/* First element of block i of the p-block split (block p = end of message). */
static inline int blk_start(int count, int p, int i) {
    return i >= p ? count : ct_block_start(count, p, i);
}

/* A tree node as seen by one rank: parent and children as real ranks. */
#define TREE_LOCAL 8
typedef struct {
    int parent;             /* real rank, -1 at the root               */
    int nchild;             /* children, in the order they are served  */
    int *child;             /* points into local[] or a malloc'ed list */
    int local[TREE_LOCAL];
} tree_t;

/* Make room for up to maxchild children. */
static int tree_init(tree_t *tr, int maxchild) {
    tr->parent = -1;
    tr->nchild = 0;
    tr->child = tr->local;
    if (maxchild > TREE_LOCAL) {
        tr->child = malloc((size_t)maxchild * sizeof(int));
        if (!tr->child) {
            tr->child = tr->local;
            return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for a %d-child tree",
                                maxchild);
        }
    }
    return MPI_SUCCESS;
}

static void tree_free(tree_t *tr) {
    if (tr->child != tr->local) free(tr->child);
    tr->child = tr->local;
}

/*
 * Pipelined, segmented broadcast of count elements at buf down a tree.
 *
 * A non-root rank receives segment s from its parent and Isends it to all of
 * its children; the receive of segment s+1 is posted before segment s is
 * forwarded. Sends are tracked in a window of two segments, so at most two
 * segments per child are in flight. Every rank forwards its whole region.
 *
 * At the root only, coff/ccnt (may be NULL) give child i its own part of the
 * message: elements [coff[i], coff[i] + ccnt[i]) of buf (split_binary sends
 * one half down each subtree); with NULL every child gets all count elements.
 */
static int tree_pipeline(void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                         long segsize, const tree_t *tr, const int *coff, const int *ccnt,
                         int tag, MPI_Comm comm) {
    const int nc = tr->nchild, is_root = tr->parent < 0;
    if (count <= 0 || (is_root && nc == 0)) return MPI_SUCCESS;

    /* One leaf without segmentation: a plain blocking receive. */
    const int se = ct_seg_elems(segsize, count, t);
    if (nc == 0 && se >= count)
        return MPI_Recv(buf, count, dt, tr->parent, tag, comm, MPI_STATUS_IGNORE);

    /* Segment count: at the root, the longest of the children's parts. */
    int nseg = (count + se - 1) / se;
    if (is_root && ccnt) {
        nseg = 0;
        for (int i = 0; i < nc; i++) {
            int n = (ccnt[i] + se - 1) / se;
            if (n > nseg) nseg = n;
        }
    }

    /* Requests: two windows of nc sends, then two receives. */
    MPI_Request small[2 * TREE_LOCAL + 2], *req = small;
    const int nreq = 2 * nc + 2;
    if (nreq > (int)(sizeof small / sizeof small[0])) {
        req = malloc((size_t)nreq * sizeof(MPI_Request));
        if (!req) return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for requests");
    }
    for (int i = 0; i < nreq; i++) req[i] = MPI_REQUEST_NULL;
    MPI_Request *rreq = req + 2 * nc;

    int rc = MPI_SUCCESS;
    if (!is_root)
        rc = MPI_Irecv(buf, se, dt, tr->parent, tag, comm, &rreq[0]);

    for (int s = 0; s < nseg && rc == MPI_SUCCESS; s++) {
        const int first = s * se; /* s < nseg, so first < count fits an int */
        const int n = count - first < se ? count - first : se;
        MPI_Request *sreq = req + (s % 2) * nc;
        if (!is_root) {
            if (s + 1 < nseg) {
                int nfirst = first + se, nn = count - nfirst < se ? count - nfirst : se;
                rc = MPI_Irecv(ct_elem(buf, nfirst, t), nn, dt, tr->parent, tag, comm,
                               &rreq[(s + 1) % 2]);
                if (rc != MPI_SUCCESS) break;
            }
            rc = MPI_Wait(&rreq[s % 2], MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS || nc == 0) continue;
        }
        /* the slot still holds segment s-2: let it finish before reusing it */
        rc = MPI_Waitall(nc, sreq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < nc && rc == MPI_SUCCESS; i++) {
            int off = first, m = n;
            if (is_root && ccnt) { /* child i's own part of the message */
                int part = ccnt[i];
                if (first >= part) continue;
                off = coff[i] + first;
                m = part - first < se ? part - first : se;
            }
            rc = MPI_Isend(ct_elem(buf, off, t), m, dt, tr->child[i], tag, comm, &sreq[i]);
        }
    }
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    if (req != small) free(req);
    return rc;
}

/* ---- native and linear ------------------------------------------------------ */

int ct_bcast_native(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Bcast(buf, count, dt, root, comm);
}

/* Linear: the root sends the whole message to every other rank in turn with a
 * blocking send (relative order root+1, root+2, ...); the others receive. */
int ct_bcast_linear(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (rank != root)
        return MPI_Recv(buf, count, dt, root, CT_TAG_BCAST, comm, MPI_STATUS_IGNORE);
    for (int v = 1; v < np; v++)
        CT_CHECK(MPI_Send(buf, count, dt, real_rank(v, root, np), CT_TAG_BCAST, comm));
    return MPI_SUCCESS;
}

/* Linear, nonblocking: the root posts an Isend of the whole message to every
 * other rank at once and waits for all of them; the others receive. */
int ct_bcast_linear_nb(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (rank != root)
        return MPI_Recv(buf, count, dt, root, CT_TAG_BCAST, comm, MPI_STATUS_IGNORE);
    if (np == 1) return MPI_SUCCESS;

    MPI_Request *req = malloc((size_t)(np - 1) * sizeof(MPI_Request));
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "bcast linear_nb: out of memory for %d "
                                  "requests", np - 1);
    int rc = MPI_SUCCESS, posted = 0; /* req[i] goes to relative rank i+1 */
    while (posted < np - 1) {
        rc = MPI_Isend(buf, count, dt, real_rank(posted + 1, root, np), CT_TAG_BCAST, comm,
                       &req[posted]);
        if (rc != MPI_SUCCESS) break;
        posted++;
    }
    int rc2 = MPI_Waitall(posted, req, MPI_STATUSES_IGNORE);
    free(req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ---- chain and pipeline ------------------------------------------------------ */

/* Chains: the p-1 non-root ranks (relative 1..p-1) are cut into k = min(fanout,
 * p-1) consecutive runs as evenly as possible; the root feeds the head of each
 * run and every rank forwards to the next rank of its run. Segments are
 * pipelined down all chains at once. */
static int chain_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                       long segsize, int fanout) {
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));

    const int n = np - 1, k = fanout < n ? (fanout < 1 ? 1 : fanout) : n;
    const int v = rel_rank(rank, root, np);
    tree_t tr;
    CT_CHECK(tree_init(&tr, v == 0 ? k : 1));
    if (v == 0) {
        for (int c = 0; c < k; c++) /* head of chain c */
            tr.child[tr.nchild++] = real_rank(1 + ct_block_start(n, k, c), root, np);
    } else {
        int c = 0; /* the chain holding v: runs are [1+start(c), 1+start(c)+len(c)) */
        while (v - 1 >= ct_block_start(n, k, c) + ct_block_count(n, k, c)) c++;
        int head = 1 + ct_block_start(n, k, c), tail = head + ct_block_count(n, k, c) - 1;
        tr.parent = real_rank(v == head ? 0 : v - 1, root, np);
        if (v < tail) tr.child[tr.nchild++] = real_rank(v + 1, root, np);
    }
    int rc = tree_pipeline(buf, count, dt, &t, segsize, &tr, NULL, NULL, CT_TAG_BCAST, comm);
    tree_free(&tr);
    return rc;
}

/* Chain: k = fanout chains hanging off the root, segments pipelined. */
int ct_bcast_chain(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return chain_bcast(buf, count, dt, root, comm, CT_SEGSIZE(p), CT_FANOUT(p));
}

/* Pipeline: one chain root -> root+1 -> ... -> root-1, segments pipelined. */
int ct_bcast_pipeline(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return chain_bcast(buf, count, dt, root, comm, CT_SEGSIZE(p), 1);
}

/* ---- binary trees --------------------------------------------------------------- */

/* Balanced binary tree over the relative ranks first .. first+n-1 (local index
 * i = v - first; children of i are 2i+1 and 2i+2); the parent of the first
 * rank is `top` (relative, -1 for none). Fills tr for relative rank v. */
static void binary_node(tree_t *tr, int v, int first, int n, int top, int root, int np) {
    int i = v - first;
    tr->parent = i == 0 ? (top < 0 ? -1 : real_rank(top, root, np))
                        : real_rank(first + (i - 1) / 2, root, np);
    tr->nchild = 0;
    for (int c = 2 * i + 1; c <= 2 * i + 2 && c < n; c++)
        tr->child[tr->nchild++] = real_rank(first + c, root, np);
}

/* Binary: segments pipelined down a balanced binary tree (children of relative
 * rank v are 2v+1 and 2v+2). */
int ct_bcast_binary(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    tree_t tr;
    CT_CHECK(tree_init(&tr, 2));
    binary_node(&tr, rel_rank(rank, root, np), 0, np, -1, root, np);
    int rc = tree_pipeline(buf, count, dt, &t, CT_SEGSIZE(p), &tr, NULL, NULL, CT_TAG_BCAST,
                           comm);
    tree_free(&tr);
    return rc;
}

/*
 * Split binary tree. The message is cut in two halves: A = the first
 * count - count/2 elements, B = the last count/2. The non-root ranks form two
 * balanced binary subtrees, left = relative ranks 1..nl (nl = ceil((p-1)/2))
 * and right = nl+1..p-1 (nr = floor((p-1)/2) ranks), whose heads are the
 * root's two children. The root pipelines A down the left subtree and B down
 * the right one, segment by segment, both at once. Then left rank 1+i and
 * right rank nl+1+i swap halves with one Sendrecv. When nl > nr, the last
 * left rank has no partner: the root sends it B directly (posted up front, so
 * it overlaps the tree phase). Fewer than 2 elements cannot be split: plain
 * binary tree.
 */
int ct_bcast_split_binary(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    if (count < 2) return ct_bcast_binary(buf, count, dt, root, comm, p);
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));

    const int ca = count - count / 2, cb = count / 2; /* half A: [0,ca), B: [ca,count) */
    char *bufb = ct_elem(buf, ca, &t);
    const int nl = np / 2, nr = (np - 1) / 2;          /* = ceil((p-1)/2), floor((p-1)/2) */
    const int lone = nl > nr ? nl : -1;                /* relative rank without partner */
    const int v = rel_rank(rank, root, np);
    const int tag_tree = CT_TAG_BCAST, tag_lone = CT_TAG_BCAST + 1, tag_swap = CT_TAG_BCAST + 2;

    tree_t tr;
    CT_CHECK(tree_init(&tr, 2));
    MPI_Request lreq = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (v == 0) {
        /* B straight to the partnerless left rank, overlapping the tree phase */
        if (lone > 0)
            rc = MPI_Isend(bufb, cb, dt, real_rank(lone, root, np), tag_lone, comm, &lreq);
        int coff[2] = { 0, ca }, ccnt[2] = { ca, cb };
        tr.child[tr.nchild++] = real_rank(1, root, np);
        if (nr > 0) tr.child[tr.nchild++] = real_rank(nl + 1, root, np);
        if (rc == MPI_SUCCESS)
            rc = tree_pipeline(buf, count, dt, &t, CT_SEGSIZE(p), &tr, coff, ccnt, tag_tree,
                               comm);
    } else if (v <= nl) { /* left subtree: receives A down the tree */
        if (v == lone)
            rc = MPI_Irecv(bufb, cb, dt, root, tag_lone, comm, &lreq);
        binary_node(&tr, v, 1, nl, 0, root, np);
        if (rc == MPI_SUCCESS)
            rc = tree_pipeline(buf, ca, dt, &t, CT_SEGSIZE(p), &tr, NULL, NULL, tag_tree, comm);
        if (rc == MPI_SUCCESS && v != lone) /* swap: A out, B in */
            rc = MPI_Sendrecv(buf, ca, dt, real_rank(v + nl, root, np), tag_swap, bufb, cb, dt,
                              real_rank(v + nl, root, np), tag_swap, comm, MPI_STATUS_IGNORE);
    } else { /* right subtree: receives B down the tree */
        binary_node(&tr, v, nl + 1, nr, 0, root, np);
        rc = tree_pipeline(bufb, cb, dt, &t, CT_SEGSIZE(p), &tr, NULL, NULL, tag_tree, comm);
        if (rc == MPI_SUCCESS) /* swap: B out, A in */
            rc = MPI_Sendrecv(bufb, cb, dt, real_rank(v - nl, root, np), tag_swap, buf, ca, dt,
                              real_rank(v - nl, root, np), tag_swap, comm, MPI_STATUS_IGNORE);
    }
    if (lreq != MPI_REQUEST_NULL) {
        int rc2 = MPI_Wait(&lreq, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = rc2;
    }
    tree_free(&tr);
    return rc;
}

/* ---- binomial and k-nomial ---------------------------------------------------- */

/* k-nomial tree in the "cascade" order: in round r (distance d = k^r), every
 * relative rank v < d, which has the data, sends it to v + j*d for
 * j = 1..k-1. So the parent of v > 0 is v mod d for the largest d = k^r <= v,
 * and the children of v are v + j*d for every d = k^r > v (all d for the
 * root), served in round order: the first child heads the largest subtree.
 * k = 2 is the binomial tree. */
static int knomial_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                         int k, long segsize) {
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    if (k < 2) k = 2;

    const int v = rel_rank(rank, root, np);
    int maxchild = 0; /* (k-1) per round: a bound for every rank */
    for (long long d = 1; d < np; d *= k) maxchild += k - 1;
    tree_t tr;
    CT_CHECK(tree_init(&tr, maxchild));
    long long d = 1;
    while (d * k <= v) d *= k; /* largest power of k <= v (1 for v <= 1) */
    if (v > 0) {
        tr.parent = real_rank((int)(v % d), root, np);
        d *= k; /* the first round in which v sends */
    }
    for (; d < np; d *= k)
        for (long long j = 1; j < k && v + j * d < np; j++)
            tr.child[tr.nchild++] = real_rank((int)(v + j * d), root, np);
    int rc = tree_pipeline(buf, count, dt, &t, segsize, &tr, NULL, NULL, CT_TAG_BCAST, comm);
    tree_free(&tr);
    return rc;
}

/* Binomial: round r, every rank with the data sends it 2^r ranks further
 * (relative to the root); optionally segmented and pipelined. */
int ct_bcast_binomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return knomial_bcast(buf, count, dt, root, comm, 2, CT_SEGSIZE(p));
}

/* K-nomial: round r, every rank with the data sends it to k-1 ranks at
 * distances j*k^r, j = 1..k-1; optionally segmented and pipelined. */
int ct_bcast_knomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return knomial_bcast(buf, count, dt, root, comm, CT_RADIX(p), CT_SEGSIZE(p));
}

/* ---- scatter + allgather (van de Geijn) --------------------------------------------- */

/*
 * Binomial scatter of the p blocks of the message (block i, for relative rank
 * i, is ct_block_count(count,p,i) elements at ct_block_start(count,p,i), so
 * blocks may be empty). The subtree of relative rank v is v .. v+lowbit(v)-1,
 * whose blocks are contiguous: v receives all of them from v - lowbit(v), then
 * hands the upper halves on to v + m for m = lowbit(v)/2, ..., 1. Empty
 * ranges are skipped on both sides. Afterwards v holds (at least) block v.
 */
static int scatter_blocks(void *buf, int count, MPI_Datatype dt, const ct_type_t *t, int v,
                          int root, int np, MPI_Comm comm) {
    int m = 1;
    while (m < np && !(v & m)) m <<= 1; /* m = lowbit(v), or >= np at the root */
    if (v > 0) {
        int lo = blk_start(count, np, v), hi = blk_start(count, np, v + m);
        if (hi > lo)
            CT_CHECK(MPI_Recv(ct_elem(buf, lo, t), hi - lo, dt, real_rank(v - m, root, np),
                              CT_TAG_BCAST, comm, MPI_STATUS_IGNORE));
    }
    for (m >>= 1; m > 0; m >>= 1) {
        if (v + m >= np) continue;
        int lo = blk_start(count, np, v + m), hi = blk_start(count, np, v + 2 * m);
        if (hi > lo)
            CT_CHECK(MPI_Send(ct_elem(buf, lo, t), hi - lo, dt, real_rank(v + m, root, np),
                              CT_TAG_BCAST, comm));
    }
    return MPI_SUCCESS;
}

/*
 * Scatter + recursive-doubling allgather. Before the step of distance m
 * (1, 2, 4, ...) every rank v holds the blocks of its group g..g+m-1 (g = v
 * with its low bits cleared, clipped to p) and swaps them with the group of
 * v ^ m. If p is not a power of two, v ^ m may not exist: then v's group is
 * the lower half of a 2m-group whose upper half is cut off at p. The upper
 * ranks that exist all got the lower blocks from their partners, but in the
 * lower group only the first c = p - g - m ranks got the upper blocks
 * [g+m, p). Within the lower group the ranks with offset < c send them on by
 * recursive halving (distance m/2, ..., 1: offset o < c sends to o + d when
 * that one is >= c), which keeps "offset < c in every subgroup has the data"
 * true and ends with everyone having it. All transfers go one way per pair
 * or through Sendrecv, so nothing depends on MPI buffering.
 */
int ct_bcast_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    const int v = rel_rank(rank, root, np);
    CT_CHECK(scatter_blocks(buf, count, dt, &t, v, root, np, comm));

    for (int m = 1; m < np; m <<= 1) {
        const int g = v & ~(m - 1), w = v ^ m, gw = g ^ m;
        if (w < np) { /* swap whole groups with the partner */
            int lo = blk_start(count, np, g), hi = blk_start(count, np, g + m);
            int wlo = blk_start(count, np, gw), whi = blk_start(count, np, gw + m);
            CT_CHECK(MPI_Sendrecv(ct_elem(buf, lo, &t), hi - lo, dt, real_rank(w, root, np),
                                  CT_TAG_BCAST + 1, ct_elem(buf, wlo, &t), whi - wlo, dt,
                                  real_rank(w, root, np), CT_TAG_BCAST + 1, comm,
                                  MPI_STATUS_IGNORE));
        }
        /* Fix-up, only in the lower half of a 2m-group whose upper half is cut
         * off by p but not empty: c = ranks of that upper half that exist. */
        const int c = np - gw;
        if ((v & m) || gw + m <= np || c <= 0) continue;
        const int lo = blk_start(count, np, gw), n = count - lo; /* blocks gw .. p-1 */
        if (n == 0) continue;
        for (int d = m >> 1; d > 0; d >>= 1) {
            const int o = v & (2 * d - 1); /* offset in the 2d-subgroup */
            if (o < d && o < c && o + d >= c) /* have it, partner lacks it */
                CT_CHECK(MPI_Send(ct_elem(buf, lo, &t), n, dt, real_rank(v + d, root, np),
                                  CT_TAG_BCAST + 2, comm));
            else if (o >= d && o - d < c && o >= c) /* lack it, partner has it */
                CT_CHECK(MPI_Recv(ct_elem(buf, lo, &t), n, dt, real_rank(v - d, root, np),
                                  CT_TAG_BCAST + 2, comm, MPI_STATUS_IGNORE));
        }
    }
    return MPI_SUCCESS;
}

/* Scatter + ring allgather (van de Geijn): after the binomial scatter, p-1
 * ring steps; in step i relative rank v passes block v-i to v+1 and receives
 * block v-i-1 from v-1 (indices mod p) with one Sendrecv. */
int ct_bcast_scatter_ring_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    const int v = rel_rank(rank, root, np);
    CT_CHECK(scatter_blocks(buf, count, dt, &t, v, root, np, comm));

    const int right = real_rank(v + 1, root, np), left = real_rank(v + np - 1, root, np);
    for (int i = 0; i < np - 1; i++) {
        const int sb = (v - i + np) % np, rb = (v - i - 1 + 2 * np) % np;
        CT_CHECK(MPI_Sendrecv(ct_elem(buf, ct_block_start(count, np, sb), &t),
                              ct_block_count(count, np, sb), dt, right, CT_TAG_BCAST + 1,
                              ct_elem(buf, ct_block_start(count, np, rb), &t),
                              ct_block_count(count, np, rb), dt, left, CT_TAG_BCAST + 1, comm,
                              MPI_STATUS_IGNORE));
    }
    return MPI_SUCCESS;
}

/* ---- test-only ------------------------------------------------------------------- */

/* DELIBERATELY WRONG, for testing the verifier: a correct binomial broadcast,
 * after which the last rank of the communicator (when p >= 2) flips all bits
 * of the first data byte of the last element. That byte lies at offset
 * true_lb of the element, which is data for any datatype (never a hole). */
int ct_bcast_broken(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    ct_type_t t;
    CT_CHECK(MPI_Comm_size(comm, &np));
    CT_CHECK(MPI_Comm_rank(comm, &rank));
    CT_CHECK(ct_type(dt, &t));
    CT_CHECK(knomial_bcast(buf, count, dt, root, comm, 2, 0));
    if (np >= 2 && rank == np - 1 && t.size > 0) {
        unsigned char *byte = (unsigned char *)ct_elem(buf, count - 1, &t) + t.true_lb;
        *byte ^= 0xFFu; /* the deliberate corruption */
    }
    return MPI_SUCCESS;
}
