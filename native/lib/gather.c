/*
 * gather.c -- Gather algorithms (see registry.c for the table).
 *
 * Blocks: rank i's contribution is one "block" -- scount elements of sdt on the
 * sender, rcount elements of rdt at the root (same type signature, possibly a
 * different layout). Block i of the root's rbuf starts at rbuf + i*rcount*extent.
 * A block is sent as `per` elements of `dt` (see ct_blk_t) so that counts of up to
 * p blocks never overflow an int.
 *
 * Non-root ranks never touch rbuf (it is not significant there); the binomial
 * tree's intermediate ranks collect their subtree in a temporary laid out with
 * their own send type, which has the same signature as the root's blocks.
 */
#include "ct_internal.h"

int ct_gather_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                     MPI_Datatype rdt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

/*
 * Linear: every non-root rank sends its block straight to the root; the root
 * receives them one at a time with blocking receives in rank order 0, 1, ...,
 * p-1 (Open MPI's basic_linear schedule), and copies its own block locally after
 * them: Open MPI copies it when its turn comes, so a sender above its eager limit
 * waits for that copy (1 MiB at 2 processes: 11 % of the mean time over the ranks,
 * docs/performance.md "The own block last").
 */
int ct_gather_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                     MPI_Datatype rdt, int root, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root) return ct_send(sbuf, scount, sdt, root, CT_TAG_GATHER, comm);

    ct_type_t rt;
    CT_CHECK(ct_type(rdt, &rt));
    const MPI_Aint bext = (MPI_Aint)rcount * rt.extent;
    for (int src = 0; src < np; src++)
        if (src != root)
            CT_CHECK(MPI_Recv((char *)rbuf + (MPI_Aint)src * bext, rcount, rdt, src,
                              CT_TAG_GATHER, comm, MPI_STATUS_IGNORE));
    if (sbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    return ct_copy_sig_t(sbuf, scount, sdt, (char *)rbuf + (MPI_Aint)root * bext, rcount, rdt,
                         &rt);
}

/*
 * Linear, nonblocking: every non-root rank sends its block straight to the root;
 * the root posts all p-1 receives at once (Irecv + Waitall, so the senders are
 * served in whatever order they arrive) and copies its own block locally.
 */
int ct_gather_linear_nb(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                     MPI_Datatype rdt, int root, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r, rc = MPI_SUCCESS, n = 0;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root) return ct_send(sbuf, scount, sdt, root, CT_TAG_GATHER, comm);

    ct_type_t rt;
    CT_CHECK(ct_type(rdt, &rt));
    const MPI_Aint bext = (MPI_Aint)rcount * rt.extent;
    /* the receives' requests: from the stack up to 32 processes (no malloc a call) */
    MPI_Request small[32];
    MPI_Request *req = np <= 32 ? small : malloc((size_t)(np - 1) * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "gather/linear_nb: out of memory");
    for (int i = 1; i < np; i++) {
        int src = (root + i) % np;
        CT_TRY(MPI_Irecv((char *)rbuf + (MPI_Aint)src * bext, rcount, rdt, src, CT_TAG_GATHER,
                      comm, &req[n]));
        n++;
    }
    if (sbuf != MPI_IN_PLACE)
        CT_TRY(ct_copy_sig_t(sbuf, scount, sdt, (char *)rbuf + (MPI_Aint)root * bext, rcount, rdt,
                             &rt));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != small) free(req);
    return rc;
}

/* Binomial gather, root side: each child's subtree straight into rbuf, one
 * blocking receive per round in round order (Open MPI's gather_intra_binomial
 * receives its children so), then the own block (Open MPI copies it first). */
static int binomial_root(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         int rcount, MPI_Datatype rdt, int root, int np, MPI_Comm comm) {
    int rc = MPI_SUCCESS;
    ct_blk_t b;
    CT_CHECK(ct_blk_init(&b, rcount, rdt, np));
    for (int mask = 1; mask < np; mask <<= 1) {
        int cnt = mask < np - mask ? mask : np - mask; /* child's subtree size */
        int start = root + mask < np ? root + mask : root + mask - np; /* its first block */
        if (start + cnt <= np) {
            CT_TRY(MPI_Recv((char *)rbuf + (MPI_Aint)start * b.ext, cnt * b.per, b.dt, start,
                            CT_TAG_GATHER, comm, MPI_STATUS_IGNORE));
        } else {
            /* the subtree wraps: blocks start..p-1, then 0..cnt-(p-start)-1 */
            int len[2] = { (np - start) * b.per, (cnt - (np - start)) * b.per };
            int disp[2] = { start * b.per, 0 };
            MPI_Datatype wrap;
            CT_TRY(MPI_Type_indexed(2, len, disp, b.dt, &wrap));
            rc = MPI_Type_commit(&wrap);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(rbuf, 1, wrap, start, CT_TAG_GATHER, comm, MPI_STATUS_IGNORE);
            MPI_Type_free(&wrap);
            if (rc != MPI_SUCCESS) goto out;
        }
    }
    if (sbuf != MPI_IN_PLACE) /* last: a child's send does not wait for this copy */
        rc = ct_copy_sig_t(sbuf, scount, sdt, (char *)rbuf + (MPI_Aint)root * b.ext, rcount,
                           rdt, &b.t);
out:
    ct_blk_free(&b);
    return rc;
}

/* Binomial gather, non-root side: collect my subtree (relative ranks v ..
 * v+size-1) in a temporary laid out with my send type, then forward it. */
static int binomial_nonroot(const void *sbuf, int scount, MPI_Datatype sdt, int root, int np,
                            int v, MPI_Comm comm) {
    const int low = v & -v; /* the round in which I send to my parent */
    const int size = low < np - v ? low : np - v;
    const int parent = v - low + root < np ? v - low + root : v - low + root - np;
    if (size == 1) return ct_send(sbuf, scount, sdt, parent, CT_TAG_GATHER, comm);

    int rc = MPI_SUCCESS;
    void *raw = NULL;
    ct_blk_t b;
    CT_CHECK(ct_blk_init(&b, scount, sdt, np));
    char *tmp = ct_tmp_alloc((MPI_Aint)size * scount, &b.t, &raw);
    if (!tmp) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "gather/binomial: out of memory (%d blocks)", size);
        goto out;
    }
    for (int mask = 1; mask < low && v + mask < np; mask <<= 1) {
        int cnt = mask < np - v - mask ? mask : np - v - mask;
        CT_TRY(MPI_Recv(tmp + (MPI_Aint)mask * b.ext, cnt * b.per, b.dt, (v + mask + root) % np,
                        CT_TAG_GATHER, comm, MPI_STATUS_IGNORE));
    }
    CT_TRY(ct_copy_t(sbuf, tmp, scount, sdt, &b.t)); /* after the children's sends */
    CT_TRY(ct_send(tmp, size * b.per, b.dt, parent, CT_TAG_GATHER, comm));
out:
    free(raw);
    ct_blk_free(&b);
    return rc;
}

/*
 * Binomial: relative rank v = (rank - root) mod p. In round k (mask 2^k) a rank
 * with bit k set sends everything it holds -- the blocks of relative ranks
 * v .. v+size-1, packed in relative order -- to v - 2^k and is done; a rank
 * whose low k bits are clear receives the subtree of v + 2^k. A rank receives
 * its children's subtrees one at a time in round order (blocking receives, as
 * Open MPI's binomial Gather), places its own block (after them, so no child
 * waits for the copy), then forwards once. The root receives each
 * child's subtree directly at its place in rbuf (a two-piece indexed type when
 * the subtree wraps past rank p-1), so it needs no temporary and no rotation.
 */
int ct_gather_binomial(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                       int rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                       const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r == root) return binomial_root(sbuf, scount, sdt, rbuf, rcount, rdt, root, np, comm);
    return binomial_nonroot(sbuf, scount, sdt, root, np, r > root ? r - root : r - root + np,
                            comm);
}
