/*
 * scatter.c -- Scatter algorithms (see registry.c for the table).
 *
 * Block i of the root's send buffer (scount x sdt from sbuf + i*scount*extent(sdt))
 * goes to rank i, which receives it as rcount x rdt (the same type signature). With
 * MPI_IN_PLACE as the root's receive buffer the root's own block stays where it is.
 * `linear` and `linear_nb` send each block with the root's type and receive it with
 * the receiver's; `binomial`, whose inner ranks forward the blocks of their subtree,
 * moves blocks as bytes of the type signature (one memcpy for a dense datatype,
 * MPI_Pack/MPI_Unpack otherwise), as Bcast does. The dispatcher only passes calls
 * that move data (the block has more than 0 bytes).
 */
#include "ct_internal.h"

#include <limits.h>

int ct_scatter_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                      MPI_Datatype rdt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
}

/* the root's own block, unless it scatters in place */
static int own_block(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                     MPI_Datatype rdt, int root) {
    if (rbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    ct_type_t st; /* sdt's geometry: also rdt's where the copy uses it (same type) */
    CT_CHECK(ct_type(sdt, &st));
    return ct_copy_sig_t((const char *)sbuf + (MPI_Aint)root * scount * st.extent, scount, sdt,
                         rbuf, rcount, rdt, &st);
}

/* Linear: the root sends block i to rank i in turn (blocking sends, rank root+1
 * first); every other rank receives its block. */
int ct_scatter_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                      MPI_Datatype rdt, int root, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root)
        return MPI_Recv(rbuf, rcount, rdt, root, CT_TAG_SCATTER, comm, MPI_STATUS_IGNORE);
    MPI_Aint lb, ext;
    CT_CHECK(MPI_Type_get_extent(sdt, &lb, &ext));
    for (int i = 1; i < np; i++) {
        int dst = (root + i) % np;
        CT_CHECK(ct_send((const char *)sbuf + (MPI_Aint)dst * scount * ext, scount, sdt, dst,
                         CT_TAG_SCATTER, comm));
    }
    return own_block(sbuf, scount, sdt, rbuf, rcount, rdt, root);
}

/* Linear, nonblocking: the root posts all sends at once, copies its own block
 * while they are in flight, and waits for all. */
int ct_scatter_linear_nb(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         int rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                         const ct_params_t *prm) {
    (void)prm;
    int np, r, rc = MPI_SUCCESS, n = 0;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root)
        return MPI_Recv(rbuf, rcount, rdt, root, CT_TAG_SCATTER, comm, MPI_STATUS_IGNORE);
    MPI_Aint lb, ext;
    CT_CHECK(MPI_Type_get_extent(sdt, &lb, &ext));
    /* the sends' requests: from the stack up to 32 processes (no malloc a call) */
    MPI_Request small[32];
    MPI_Request *req = np <= 32 ? small : malloc((size_t)np * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "scatter/linear_nb: out of memory");
    for (int i = 1; i < np; i++) {
        int dst = (root + i) % np;
        CT_TRY(ct_isend((const char *)sbuf + (MPI_Aint)dst * scount * ext, scount, sdt, dst,
                        CT_TAG_SCATTER, comm, &req[n]));
        n++;
    }
    CT_TRY(own_block(sbuf, scount, sdt, rbuf, rcount, rdt, root));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != small) free(req);
    return rc;
}

/*
 * Binomial: on relative ranks v = (rank - root) mod p, rank v > 0 receives the
 * blocks of its subtree (v .. v + min(lowbit(v), p - v) - 1) from v - lowbit(v),
 * then hands the upper halves on: to v + m for m = lowbit(v)/2, ..., 1 (the root:
 * from the largest power of two below p), the blocks v + m .. of that subtree. The
 * root sends each subtree's blocks straight from sbuf when they are contiguous bytes
 * there, else packs them first. ceil(log2 p) steps.
 */
int ct_scatter_binomial(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                        int rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                        const ct_params_t *prm) {
    (void)prm;
    int np, r, rc = MPI_SUCCESS;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    const int v = (r - root + np) % np;
    ct_type_t t;
    /* the bytes of one block: the send signature at the root, the receive one elsewhere */
    CT_CHECK(ct_type(r == root ? sdt : rdt, &t));
    const MPI_Aint B = (MPI_Aint)(r == root ? scount : rcount) * t.size;
    int lowbit = 1;
    while (v && !(v & lowbit)) lowbit <<= 1;
    int top = 1; /* the root's first child distance: largest power of two < p */
    while (top * 2 < np) top <<= 1;
    /* blocks in one message: a subtree (the root's largest: top blocks) */
    const int span = v == 0 ? top : (lowbit < np - v ? lowbit : np - v);
    if ((MPI_Aint)span * B > INT_MAX)
        return ct_set_error(MPI_ERR_COUNT, "scatter/binomial: %d blocks of %ld bytes in one "
                            "message; at most %d bytes (use linear or linear_nb)", span,
                            (long)B, INT_MAX);
    MPI_Aint lb, sext;
    const int parent = (v - lowbit + root + np) % np;
    if (span == 1 && v != 0 && ct_type_dense(rdt, &t)) /* a leaf: straight into place */
        return MPI_Recv((char *)rbuf + t.true_lb, (int)B, MPI_BYTE, parent, CT_TAG_SCATTER,
                        comm, MPI_STATUS_IGNORE);
    if (v == 0) { /* the root: each subtree's blocks straight from sbuf where they are
                   * contiguous bytes there (a dense type, no wrap past block p-1), else
                   * packed into a temporary first */
        char *pk = NULL;
        CT_CHECK(MPI_Type_get_extent(sdt, &lb, &sext));
        const int dense = ct_type_dense(sdt, &t);
        for (int m = top; m >= 1 && m < np && rc == MPI_SUCCESS; m >>= 1) {
            const int cnt = m < np - m ? m : np - m, a0 = (m + root) % np;
            const char *from = (const char *)sbuf + (MPI_Aint)a0 * scount * sext + t.true_lb;
            if (!dense || a0 + cnt > np) {
                if (!pk && !(pk = malloc((size_t)top * (size_t)B + 1))) {
                    rc = ct_set_error(MPI_ERR_NO_MEM, "scatter/binomial: out of memory");
                    break;
                }
                for (int i = 0; i < cnt && rc == MPI_SUCCESS; i++) {
                    const char *blk = (const char *)sbuf +
                                      (MPI_Aint)((a0 + i) % np) * scount * sext;
                    if (dense) CT_SIM_CHARGE(CT_SIM_COPY, B); /* SMPI only (simcharge.h) */
                    if (dense) memcpy(pk + (size_t)i * (size_t)B, blk + t.true_lb, (size_t)B);
                    else rc = ct_pack_stream(blk, scount, sdt, &t, pk + (size_t)i * (size_t)B,
                                             comm);
                }
                from = pk;
            }
            if (rc == MPI_SUCCESS)
                rc = ct_send(from, (int)(cnt * B), MPI_BYTE, a0, CT_TAG_SCATTER, comm);
        }
        free(pk);
        if (rc == MPI_SUCCESS) rc = own_block(sbuf, scount, sdt, rbuf, rcount, rdt, root);
        return rc;
    }
    char *tmp = malloc((size_t)span * (size_t)B + 1);
    if (!tmp) return ct_set_error(MPI_ERR_NO_MEM, "scatter/binomial: out of memory");
    CT_TRY(MPI_Recv(tmp, (int)(span * B), MPI_BYTE, parent, CT_TAG_SCATTER, comm,
                    MPI_STATUS_IGNORE));
    for (int m = lowbit / 2; m >= 1; m >>= 1) {
        if (v + m >= np) continue;
        int cnt = m < np - (v + m) ? m : np - (v + m);
        CT_TRY(ct_send(tmp + (size_t)m * (size_t)B, (int)(cnt * B), MPI_BYTE, (v + m + root) % np,
                       CT_TAG_SCATTER, comm));
    }
    if (ct_type_dense(rdt, &t)) CT_SIM_CHARGE(CT_SIM_COPY, B); /* SMPI only (simcharge.h) */
    if (ct_type_dense(rdt, &t)) memcpy((char *)rbuf + t.true_lb, tmp, (size_t)B);
    else CT_TRY(ct_unpack_stream(tmp, rbuf, rcount, rdt, &t, comm));
out:
    free(tmp);
    return rc;
}
