/*
 * reduce.c -- Reduce algorithms (see registry.c for the table).
 *
 * Common conventions of this file:
 *  - The input of a rank is sbuf, or rbuf where sbuf == MPI_IN_PLACE (the MPI
 *    standard allows that at the root only; the dispatcher enforces it, inner
 *    callers get the same meaning everywhere).
 *  - rbuf is touched at the root only. Other ranks accumulate in temporaries
 *    from ct_tmp_alloc; the root accumulates directly in rbuf.
 *  - MPI_Reduce_local(in, inout) computes inout = in op inout, so an
 *    order-preserving algorithm always passes the data of LOWER ranks as "in".
 *
 * The tree algorithms (chain, pipeline, binary, binomial, in_order_binary)
 * share one engine, tree_reduce(): every rank knows its parent and its
 * children; the vector is cut into segments and for each segment a rank
 * combines the contributions of its children with its own data and sends the
 * partial result to its parent. Receives run one step ahead of the combining
 * (the next child's segment arrives while the current one is reduced) and the
 * sends to the parent are nonblocking, so segments flow through the tree as a
 * pipeline.
 */
#include "ct_internal.h"

/* sends to the parent that may be in flight at once in the tree engine */
#define SEND_DEPTH 4

static int no_mem(const char *who) {
    return ct_set_error(MPI_ERR_NO_MEM, "reduce/%s: out of memory for a temporary buffer",
                        who);
}

int ct_reduce_native(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
}

/*
 * linear: every non-root rank sends its whole vector to the root (one blocking
 * send each). The root folds the vectors from the right, starting with x(p-1):
 * acc = x(p-1); acc = x(i) op acc for i = p-2 .. 0, which is exactly
 * x0 op x1 op ... op x(p-1) for any associative op. The accumulator is rbuf;
 * the vector of rank i-1 is received (into the other of two buffers) while
 * that of rank i is combined.
 */
int ct_reduce_linear(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank, rc = MPI_SUCCESS;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    const void *in = ct_input_of(sbuf, rbuf);

    if (rank != root) return ct_send(in, count, dt, root, CT_TAG_REDUCE, comm);
    if (np == 1) return ct_copy(in, rbuf, count, dt);
    if (np == 2 && root == 0 && in != rbuf) { /* x0 op x1: one receive, as below, blocking */
        CT_CHECK(MPI_Recv(rbuf, count, dt, 1, CT_TAG_REDUCE, comm, MPI_STATUS_IGNORE));
        return MPI_Reduce_local(in, rbuf, count, dt, op);
    }

    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    void *raw[3] = { NULL, NULL, NULL };
    void *buf[2] = { NULL, NULL };
    MPI_Request req[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    const void *mine = in; /* the root's own vector, used at step i == root */

    /* The right-most vector goes straight into rbuf. If it is not the root's
     * own and the root's input lives in rbuf (in place), save the input. */
    if (root == np - 1) {
        CT_TRY(ct_copy(in, rbuf, count, dt));
    } else {
        if (in == rbuf) {
            void *save = ct_tmp_alloc(count, &t, &raw[2]);
            if (!save) { rc = no_mem("linear"); goto out; }
            CT_TRY(ct_copy(rbuf, save, count, dt));
            mine = save;
        }
        CT_TRY(MPI_Irecv(rbuf, count, dt, np - 1, CT_TAG_REDUCE, comm, &req[1]));
    }
    /* temporaries for the receives from ranks other than the root and p-1 (none
     * at 2 processes), at most two in use at a time */
    for (int k = 0; k < 2 && k < np - 1 - (root < np - 1); k++) {
        buf[k] = ct_tmp_alloc(count, &t, &raw[k]);
        if (!buf[k]) { rc = no_mem("linear"); goto out; }
    }

    /* Receives in fold order (p-2 down to 0, the root skipped); the k-th one
     * uses buf[k % 2] and is posted as soon as the (k-2)-th is combined. */
    int next = np - 2, k = 0; /* next rank to post a receive for, its number */
    if (next == root) next--;
    if (next >= 0) CT_TRY(MPI_Irecv(buf[0], count, dt, next, CT_TAG_REDUCE, comm, &req[0]));
    CT_TRY(MPI_Wait(&req[1], MPI_STATUS_IGNORE)); /* x(p-1) is in rbuf */
    for (int i = np - 2; i >= 0; i--) {
        if (i == root) {
            CT_TRY(MPI_Reduce_local(mine, rbuf, count, dt, op));
            continue;
        }
        int cur = k % 2;
        CT_TRY(MPI_Wait(&req[cur], MPI_STATUS_IGNORE));
        next--;
        if (next == root) next--;
        if (next >= 0)
            CT_TRY(MPI_Irecv(buf[1 - cur], count, dt, next, CT_TAG_REDUCE, comm, &req[1 - cur]));
        CT_TRY(MPI_Reduce_local(buf[cur], rbuf, count, dt, op));
        k++;
    }
out:
    for (int j = 0; j < 3; j++) free(raw[j]);
    return rc;
}

/* ---- the segmented tree engine ------------------------------------------- */

/* One rank's place in a reduction tree (ranks of comm). The child list lives
 * in the struct up to TREE_LOCAL children (a binomial tree of any int-sized
 * communicator), so a call mallocs nothing for it; wider chains (fanout) get
 * a malloc'ed list. */
#define TREE_LOCAL 32
typedef struct {
    int parent;  /* -1 at the tree root                                  */
    int nchild;
    int *child;  /* combined in this order; each child's partial result  */
                 /* becomes the LEFT operand of the accumulator          */
    int local[TREE_LOCAL];
} tree_t;

static int tree_init(tree_t *tr, int maxchild) {
    tr->parent = -1;
    tr->nchild = 0;
    tr->child = tr->local;
    if (maxchild > TREE_LOCAL && !(tr->child = malloc(sizeof(int) * (size_t)maxchild))) {
        tr->child = tr->local;
        return no_mem("tree");
    }
    return MPI_SUCCESS;
}

static void tree_free(tree_t *tr) {
    if (tr->child != tr->local) free(tr->child);
    tr->child = tr->local;
}

/* 1 if a segment size does not cut a message of count elements of size bytes
 * (as ct_seg_elems(segsize, count, t) >= count, without its division). */
static inline int one_piece(long segsize, int count, int size) {
    return segsize <= 0 || size <= 0 || (long)count * size <= segsize;
}

/*
 * The message in one piece (one segment) on a rank with at most one child:
 * a blocking receive from the child, one local reduction, a blocking send to
 * the parent -- the same operations in the same order as the segment engine
 * below, without its request windows (a Waitall over SEND_DEPTH slots, Waits
 * on null requests) and its two temporaries, which at 8 bytes cost more than
 * the message (callgrind: about 700 of the root's instructions per call at 2
 * processes). As there, `direct` receives the child straight into acc; t
 * (ct_type(dt)) is read only without `direct` and may be NULL with it.
 */
static int reduce_once(const void *in, void *acc, int count, MPI_Datatype dt, MPI_Op op,
                       const tree_t *tr, const ct_type_t *t, int direct, MPI_Comm comm) {
    if (tr->nchild == 1) {
        if (direct) {
            CT_CHECK(MPI_Recv(acc, count, dt, tr->child[0], CT_TAG_REDUCE, comm,
                              MPI_STATUS_IGNORE));
            CT_CHECK(MPI_Reduce_local(in, acc, count, dt, op));
        } else {
            ct_small_t small;
            void *raw;
            void *tmp = ct_tmp_alloc_in(count, t, &raw, &small, sizeof small);
            if (!tmp) return no_mem("tree");
            int rc = ct_copy_t(in, acc, count, dt, t); /* nothing when acc == in */
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(tmp, count, dt, tr->child[0], CT_TAG_REDUCE, comm,
                              MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) rc = MPI_Reduce_local(tmp, acc, count, dt, op);
            free(raw);
            CT_CHECK(rc);
        }
        in = acc; /* the subtree's result goes up */
    }
    return tr->parent >= 0 ? ct_send(in, count, dt, tr->parent, CT_TAG_REDUCE, comm)
                           : MPI_SUCCESS;
}

/*
 * Reduce along the tree `tr`. `in` is this rank's input; `acc` receives the
 * partial result of this rank's subtree (needed where nchild > 0 or at the
 * tree root; may equal `in`, then it already holds the input). For every
 * segment s: acc[s] = in[s], then acc[s] = child[c][s] op acc[s] for c in
 * order, then acc[s] goes to the parent. With `ordered`, the children must
 * arrive in that order (order-preserving trees); otherwise the op commutes and
 * the first child's segment is received straight into acc and combined with
 * the input there, which saves the local copy of the input. t: ct_type(dt).
 */
static int tree_reduce(const void *in, void *acc, int count, MPI_Datatype dt, MPI_Op op,
                       const tree_t *tr, const ct_type_t *t, long segsize, int ordered,
                       MPI_Comm comm) {
    int rc = MPI_SUCCESS;
    const int nc = tr->nchild, direct = !ordered && acc != in; /* first child lands in acc */
    if (nc == 0 && tr->parent < 0) return ct_copy_t(in, acc, count, dt, t);
    /* one piece: segsize does not cut the message (as ct_seg_elems >= count,
     * without its division) */
    if (nc <= 1 && one_piece(segsize, count, t->size))
        return reduce_once(in, acc, count, dt, op, tr, t, direct, comm);
    const int segel = ct_seg_elems(segsize, count, t);

    const long nseg = (count + (long)segel - 1) / segel;
    MPI_Request sreq[SEND_DEPTH], rreq[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    for (int j = 0; j < SEND_DEPTH; j++) sreq[j] = MPI_REQUEST_NULL;
    void *raw[2] = { NULL, NULL }, *tmp[2] = { NULL, NULL };
    ct_small_t small[2];

    if (nc == 0) {
        /* leaf: stream the input to the parent, segment by segment */
        for (long s = 0; s < nseg; s++) {
            int off = (int)(s * segel), n = count - off < segel ? count - off : segel;
            MPI_Request *r = &sreq[s % SEND_DEPTH];
            CT_TRY(MPI_Wait(r, MPI_STATUS_IGNORE));
            CT_TRY(ct_isend(ct_elem(in, off, t), n, dt, tr->parent, CT_TAG_REDUCE, comm, r));
        }
        goto out;
    }

    /* the temporaries, unless every item lands in acc (one child, direct) */
    for (int j = 0; j < 2 && !(direct && nc == 1); j++) {
        tmp[j] = ct_tmp_alloc_in(segel, t, &raw[j], &small[j], sizeof small[j]);
        if (!tmp[j]) { rc = no_mem("tree"); goto out; }
    }
    const long nitems = nseg * nc; /* item = (segment, child) */

    /* Item j: segment j / nchild from child j % nchild, received into
     * tmp[j % 2] (or acc). Item j+1 is posted before item j is combined;
     * tmp[j % 2] is reused by item j+2, posted after item j is combined. */
    for (long j = 0; j <= nitems; j++) {
        if (j < nitems) { /* post item j */
            long s = j / nc;
            int c = (int)(j % nc);
            int off = (int)(s * segel), n = count - off < segel ? count - off : segel;
            void *dst = (direct && c == 0) ? ct_elem(acc, off, t) : tmp[j % 2];
            CT_TRY(MPI_Irecv(dst, n, dt, tr->child[c], CT_TAG_REDUCE, comm, &rreq[j % 2]));
        }
        if (j == 0) continue;
        long i = j - 1; /* combine item i */
        long s = i / nc;
        int c = (int)(i % nc);
        int off = (int)(s * segel), n = count - off < segel ? count - off : segel;
        void *a = ct_elem(acc, off, t);
        if (c == 0 && !direct && acc != in) CT_TRY(ct_copy_t(ct_elem(in, off, t), a, n, dt, t));
        CT_TRY(MPI_Wait(&rreq[i % 2], MPI_STATUS_IGNORE));
        if (direct && c == 0)
            CT_TRY(MPI_Reduce_local(ct_elem(in, off, t), a, n, dt, op));
        else
            CT_TRY(MPI_Reduce_local(tmp[i % 2], a, n, dt, op));
        if (c == nc - 1 && tr->parent >= 0) {
            MPI_Request *r = &sreq[s % SEND_DEPTH];
            CT_TRY(MPI_Wait(r, MPI_STATUS_IGNORE));
            CT_TRY(ct_isend(a, n, dt, tr->parent, CT_TAG_REDUCE, comm, r));
        }
    }
out:
    /* sends exist only below the tree root */
    if (rc == MPI_SUCCESS && tr->parent >= 0) rc = MPI_Waitall(SEND_DEPTH, sreq, MPI_STATUSES_IGNORE);
    free(raw[0]);
    free(raw[1]);
    return rc;
}

/*
 * Run the engine for a tree whose root is the Reduce root: the root
 * accumulates in rbuf, inner ranks in a temporary of count elements, leaves
 * need none. Frees the tree.
 */
static inline int reduce_on_tree(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          tree_t *tr, long segsize, int ordered, MPI_Comm comm) {
    int rc, size;
    ct_type_t t;
    ct_small_t small;
    void *raw = NULL, *acc = rbuf;
    const void *in = ct_input_of(sbuf, rbuf);
    /* One piece on a leaf, or on a root whose one child lands in rbuf: no
     * temporary, so no datatype geometry (callgrind: ct_type and the engine's
     * set-up were half of a leaf's own instructions at 8 bytes). */
    if (tr->nchild == 0 ? tr->parent >= 0
                        : tr->nchild == 1 && tr->parent < 0 && !ordered && in != rbuf) {
        CT_CHECK(ct_type_size(dt, &size));
        if (one_piece(segsize, count, size)) {
            rc = tr->nchild == 0 ? ct_send(in, count, dt, tr->parent, CT_TAG_REDUCE, comm)
                                 : reduce_once(in, rbuf, count, dt, op, tr, NULL, 1, comm);
            tree_free(tr);
            return rc;
        }
    }
    rc = ct_type(dt, &t);
    if (rc == MPI_SUCCESS && tr->parent >= 0 && tr->nchild > 0) {
        acc = ct_tmp_alloc_in(count, &t, &raw, &small, sizeof small);
        if (!acc) rc = no_mem("tree");
    }
    if (rc == MPI_SUCCESS) rc = tree_reduce(in, acc, count, dt, op, tr, &t, segsize, ordered, comm);
    free(raw);
    tree_free(tr);
    return rc;
}

/* Ranks relative to the root and back, without a division (an integer
 * division costs more cycles than the rest of a small call's tree set-up). */
static inline int rel_rank(int rank, int root, int p) {
    const int v = rank - root; /* rank and root are ranks of comm */
    return v < 0 ? v + p : v;
}
static inline int real_rank(int v, int root, int p) {
    const int r = v + root; /* 0 <= v < p */
    return r >= p ? r - p : r;
}

/*
 * Chain tree on ranks relative to the root (virtual rank v = rank - root mod
 * p): the p-1 non-root ranks are cut into k = min(fanout, p-1) chains of
 * consecutive virtual ranks of nearly equal length; the root is the parent of
 * every chain head, and inside a chain each rank's parent is its predecessor.
 */
static int build_chain(int np, int rank, int root, int fanout, tree_t *tr) {
    int m = np - 1, k = fanout < m ? fanout : m;
    int v = rel_rank(rank, root, np);
    CT_CHECK(tree_init(tr, k));
    if (k <= 0) return MPI_SUCCESS; /* one process */
    if (k == 1) { /* one chain (pipeline; chain at 2 processes): no divisions */
        if (v > 0) tr->parent = real_rank(v - 1, root, np);
        if (v < m) tr->child[tr->nchild++] = real_rank(v + 1, root, np);
        return MPI_SUCCESS;
    }
    /* chains of ct_block_count(m, k, j) ranks: q or q+1, one division */
    const int q = m / k, r = m - q * k;
    if (v == 0) {
        for (int j = 0, start = 0; j < k; start += q + (j < r), j++)
            tr->child[tr->nchild++] = real_rank(1 + start, root, np);
        return MPI_SUCCESS;
    }
    int idx = v - 1, first = 0, len = q + (0 < r); /* position among the non-root ranks */
    for (int j = 1; idx >= first + len; j++) { /* its chain: [first, first + len) */
        first += len;
        len = q + (j < r);
    }
    tr->parent = idx == first ? root : real_rank(v - 1, root, np);
    if (idx + 1 < first + len) tr->child[tr->nchild++] = real_rank(v + 1, root, np);
    return MPI_SUCCESS;
}

/*
 * chain: k chains (fanout) of ranks hang off the root; segments are reduced
 * along every chain towards the root, pipelined, and the root combines the k
 * chain results. Commutative ops only.
 */
int ct_reduce_chain(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    tree_t tr;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(build_chain(np, rank, root, CT_FANOUT(p) > 0 ? CT_FANOUT(p) : 1, &tr));
    return reduce_on_tree(sbuf, rbuf, count, dt, op, &tr, CT_SEGSIZE(p), 0, comm);
}

/*
 * pipeline: a single chain root <- root+1 <- ... <- root-1 (mod p); each rank
 * adds its segment to the one arriving from its successor and passes it on.
 * Commutative ops only (the chain wraps around rank p-1 when root > 0).
 */
int ct_reduce_pipeline(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    tree_t tr;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(build_chain(np, rank, root, 1, &tr));
    return reduce_on_tree(sbuf, rbuf, count, dt, op, &tr, CT_SEGSIZE(p), 0, comm);
}

/*
 * binary: balanced binary tree in heap order on virtual ranks (v's children
 * are 2v+1 and 2v+2, its parent (v-1)/2), rooted at the root; every rank
 * combines the segments of its two children with its own and passes them up,
 * pipelined. Commutative ops only.
 */
int ct_reduce_binary(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    tree_t tr;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(tree_init(&tr, 2));
    int v = rel_rank(rank, root, np);
    if (v > 0) tr.parent = real_rank((v - 1) / 2, root, np);
    for (int c = 2 * v + 1; c <= 2 * v + 2 && c < np; c++) tr.child[tr.nchild++] = real_rank(c, root, np);
    return reduce_on_tree(sbuf, rbuf, count, dt, op, &tr, CT_SEGSIZE(p), 0, comm);
}

/*
 * binomial: on virtual ranks, v's parent is v with its lowest set bit
 * cleared and its children are v + 2^i for every 2^i below that bit (all for
 * the root). In round i the ranks 2^i apart combine: the children are combined
 * smallest subtree first; segmented if segsize > 0. Commutative ops only.
 */
int ct_reduce_binomial(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    tree_t tr;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(tree_init(&tr, 32));
    int v = rel_rank(rank, root, np);
    for (int mask = 1; mask < np; mask <<= 1) {
        if (v & mask) {
            tr.parent = real_rank(v - mask, root, np);
            break;
        }
        if (v + mask < np) tr.child[tr.nchild++] = real_rank(v + mask, root, np);
    }
    return reduce_on_tree(sbuf, rbuf, count, dt, op, &tr, CT_SEGSIZE(p), 0, comm);
}

/*
 * in_order_binary: a binary tree over the ranks in their natural order, rooted
 * at rank p-1. Every rank is the highest rank of the contiguous range its
 * subtree covers; the rest of the range is split into a lower and an upper
 * half, headed by their highest ranks. A rank combines
 *     (lower half) op (upper half) op (own data)
 * by prepending the upper child's result and then the lower child's, so the
 * result at p-1 is x0 op ... op x(p-1) for any associative op. Segments are
 * pipelined up the tree; p-1 then sends the whole result to the root if that
 * is another rank (one message, after the tree is done).
 * For a commutative op the order within one combination is free (as Open MPI's
 * in-order binary tree takes it): the first child's data is received straight
 * into the accumulator and combined with the own data there, which saves a copy
 * of the whole input on every inner rank (callgrind, 1 MiB at 2 processes: a
 * 1 MiB memcpy a call on the tree's root). Only operands of one combination
 * swap; which ranges are combined with which stays as above.
 */
int ct_reduce_in_order_binary(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank, rc;
    tree_t tr;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(tree_init(&tr, 2));
    int lo = 0, hi = np - 1; /* range of the subtree being descended */
    for (;;) {
        int n = hi - lo, nlow = (n + 1) / 2; /* ranks below hi, in the lower half */
        if (rank == hi) {
            if (n - nlow > 0) tr.child[tr.nchild++] = hi - 1;      /* upper half first */
            if (nlow > 0) tr.child[tr.nchild++] = lo + nlow - 1;  /* then the lower   */
            break;
        }
        tr.parent = hi;
        if (rank >= lo + nlow) {
            lo = lo + nlow;
            hi = hi - 1;
        } else {
            hi = lo + nlow - 1;
        }
    }

    int commute = 0;
    CT_CHECK(MPI_Op_commutative(op, &commute));
    const int ordered = !commute;
    const int top = np - 1;
    if (top == root)
        return reduce_on_tree(sbuf, rbuf, count, dt, op, &tr, CT_SEGSIZE(p), ordered, comm);

    /* The tree root is not the Reduce root: p-1 accumulates in a temporary
     * and forwards it. Every other rank keeps rbuf out of the tree. */
    ct_type_t t;
    ct_small_t small;
    void *raw = NULL, *acc = NULL;
    const void *in = ct_input_of(sbuf, rbuf);
    rc = ct_type(dt, &t);
    if (rc == MPI_SUCCESS && tr.nchild > 0) {
        acc = ct_tmp_alloc_in(count, &t, &raw, &small, sizeof small);
        if (!acc) rc = no_mem("in_order_binary");
    }
    if (rc == MPI_SUCCESS)
        rc = tree_reduce(in, acc, count, dt, op, &tr, &t, CT_SEGSIZE(p), ordered, comm);
    /* the root's own sends (possibly from rbuf) are complete here */
    if (rc == MPI_SUCCESS && rank == top)
        rc = ct_send(acc, count, dt, root, CT_TAG_REDUCE + 1, comm);
    if (rc == MPI_SUCCESS && rank == root)
        rc = MPI_Recv(rbuf, count, dt, top, CT_TAG_REDUCE + 1, comm, MPI_STATUS_IGNORE);
    free(raw);
    tree_free(&tr);
    return rc;
}

/*
 * rabenseifner (commutative ops), on virtual ranks v relative to the root:
 *  1. fold: with p = 2^m + rem, for v < 2*rem every odd v sends its vector to
 *     v-1, which combines it and stays; the odd ones are done. The 2^m
 *     remaining ranks get new ranks w (v/2 for v < 2*rem, v-rem above); the
 *     root is w = 0.
 *  2. reduce-scatter by recursive halving: the vector is cut into 2^m blocks;
 *     in step d = 2^(m-1) .. 1, w and w^d exchange halves of their current
 *     window of blocks (w keeps the half containing block w) and combine, so
 *     w ends up owning block w fully reduced.
 *  3. binomial gather: for d = 1, 2, ...: a rank with bit d set sends all the
 *     blocks it owns (blocks w .. w+d-1) to w-d and is done; w = 0 (the root)
 *     receives them straight into rbuf.
 * Empty blocks (count < 2^m) are sent as empty messages, so any count works.
 */
int ct_reduce_rabenseifner(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank, rc = MPI_SUCCESS;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    const void *in = ct_input_of(sbuf, rbuf);
    if (np == 1) return rank == root ? ct_copy(in, rbuf, count, dt) : MPI_SUCCESS;

    const int pof2 = ct_pow2_floor(np), rem = np - pof2;
    const int v = (rank - root + np) % np;
#define REAL(vr) (((vr) + root) % np)
    if (v < 2 * rem && v % 2 == 1) /* folded into v-1 */
        return ct_send(in, count, dt, REAL(v - 1), CT_TAG_REDUCE, comm);

    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    void *raw[2] = { NULL, NULL }, *acc = rbuf, *tmp;
    /* biggest receive: a whole vector in the fold, else the lower half */
    int tmpcount = v < 2 * rem ? count : ct_block_start(count, pof2, pof2 / 2);
    ct_small_t small[2]; /* small temporaries from the stack, not malloc */
    tmp = ct_tmp_alloc_in(tmpcount, &t, &raw[0], &small[0], sizeof small[0]);
    if (!tmp) { rc = no_mem("rabenseifner"); goto out; }
    if (v != 0) {
        acc = ct_tmp_alloc_in(count, &t, &raw[1], &small[1], sizeof small[1]);
        if (!acc) { rc = no_mem("rabenseifner"); goto out; }
    }
    CT_TRY(ct_copy_t(in, acc, count, dt, &t));

    if (v < 2 * rem) { /* 1. fold the odd neighbour in */
        CT_TRY(MPI_Recv(tmp, count, dt, REAL(v + 1), CT_TAG_REDUCE, comm, MPI_STATUS_IGNORE));
        CT_TRY(MPI_Reduce_local(tmp, acc, count, dt, op));
    }
    const int w = v < 2 * rem ? v / 2 : v - rem;
#define WREAL(x) REAL((x) < rem ? 2 * (x) : (x) + rem)
#define BSTART(b) ct_block_start(count, pof2, (b)) /* BSTART(pof2) == count */

    /* 2. recursive halving over the window [lo, hi) of blocks */
    int lo = 0, hi = pof2;
    for (int d = pof2 / 2; d >= 1; d /= 2) {
        int mid = lo + d, klo, khi, slo, shi;
        if (w & d) { klo = mid; khi = hi; slo = lo; shi = mid; }
        else       { klo = lo; khi = mid; slo = mid; shi = hi; }
        int kn = BSTART(khi) - BSTART(klo), sn = BSTART(shi) - BSTART(slo);
        CT_TRY(ct_sendrecv(ct_elem(acc, BSTART(slo), &t), sn, dt, WREAL(w ^ d), CT_TAG_REDUCE,
                         tmp, kn, dt, WREAL(w ^ d), CT_TAG_REDUCE, comm, MPI_STATUS_IGNORE));
        if (kn > 0) CT_TRY(MPI_Reduce_local(tmp, ct_elem(acc, BSTART(klo), &t), kn, dt, op));
        lo = klo;
        hi = khi;
    }

    /* 3. binomial gather of the blocks towards w = 0; this rank owns [w, hi) */
    for (int d = 1; d < pof2; d *= 2) {
        if (w & d) {
            CT_TRY(ct_send(ct_elem(acc, BSTART(w), &t), BSTART(hi) - BSTART(w), dt,
                         WREAL(w - d), CT_TAG_REDUCE, comm));
            break;
        }
        CT_TRY(MPI_Recv(ct_elem(acc, BSTART(hi), &t), BSTART(hi + d) - BSTART(hi), dt,
                     WREAL(w + d), CT_TAG_REDUCE, comm, MPI_STATUS_IGNORE));
        hi += d;
    }
#undef BSTART
#undef WREAL
#undef REAL
out:
    free(raw[0]);
    free(raw[1]);
    return rc;
}
