/*
 * gatherv.c -- Gatherv and Scatterv algorithms (see registry.c for the table).
 *
 * Blocks: rank j's block is rcounts[j] (Gatherv) or scounts[j] (Scatterv) elements
 * of the root's datatype at displs[j] x extent of the root's buffer, and scount x
 * sdt (Gatherv) or rcount x rdt (Scatterv) on rank j: the same type signature, any
 * layout. Displacements may leave gaps and come in any order; counts may be zero,
 * and a block is empty when its BYTES are zero -- 0 MPI_INT on one side may meet 3
 * elements of a zero-size datatype on the other, so every skip below is decided on
 * count x type size, on both sides of every message.
 *
 * Only the root knows every count. `linear` and `linear_nb` need no more: each rank
 * sends or receives its own block, the root every other one. `binomial` forwards
 * the blocks of a subtree through its inner ranks, which do not know the counts of
 * the ranks below them; the counts travel with the data instead (a count exchange
 * on the tree's own edges, no extra round):
 *  - Gatherv: a rank sends its parent the bytes of its subtree as one int64 first,
 *    then the subtree's bytes (its own block first, then each child's subtree in
 *    round order, i.e. relative rank order). The root knows every count, so its
 *    children send no count.
 *  - Scatterv: the root sends each child the byte counts of the child's subtree
 *    (one int64 per rank, relative rank order), then those blocks' bytes; an inner
 *    rank hands each of its children the slice of counts and bytes of that child's
 *    subtree. A leaf (a subtree of one rank) knows its own count: it gets no counts.
 * Blocks travel as bytes of their type signature (one memcpy for a dense datatype,
 * MPI_Pack/MPI_Unpack otherwise), in messages of at most CT_PIECE bytes (both ends
 * know the total, so both cut it alike). The root receives (Gatherv) or sends
 * (Scatterv) a subtree straight from its buffer when the subtree's blocks lie side
 * by side there in rank order in a dense datatype, else through a temporary.
 *
 * The dispatcher passes every call (a non-root rank cannot tell that the whole
 * call is empty); the algorithms skip what is empty.
 */
#include "ct_internal.h"

#include <limits.h>
#include <stdint.h>

#define VSTACK 64 /* processes whose per-call arrays live on the stack */

int ct_gatherv_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                      const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                      MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
}

int ct_scatterv_native(const void *sbuf, const int *scounts, const int *displs,
                       MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
                       MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
}

/* count elements of dt: its bytes (0 for an empty signature, whatever the count) */
static inline MPI_Aint nbytes(int count, const ct_type_t *t) {
    return (MPI_Aint)count * t->size;
}

/* The root's own block between its two buffers (a no-op for zero bytes). */
static int own_copy(const void *src, int scount, MPI_Datatype sdt, void *dst, int rcount,
                    MPI_Datatype rdt, const ct_type_t *rt) {
    if (nbytes(rcount, rt) == 0) return MPI_SUCCESS;
    return ct_copy_sig_t(src, scount, sdt, dst, rcount, rdt, rt);
}

/* ---- linear ------------------------------------------------------------------ */

/* Gatherv, linear: every non-root rank with a non-empty block sends it to the root,
 * which receives the non-empty blocks one at a time in rank order (blocking), then
 * copies its own. */
int ct_gatherv_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                      const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                      MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root) {
        CT_CHECK(ct_type(sdt, &t));
        if (nbytes(scount, &t) == 0) return MPI_SUCCESS;
        return ct_send(sbuf, scount, sdt, root, CT_TAG_GATHERV, comm);
    }
    CT_CHECK(ct_type(rdt, &t));
    for (int src = 0; src < np; src++)
        if (src != root && nbytes(rcounts[src], &t) > 0)
            CT_CHECK(MPI_Recv(ct_elem(rbuf, displs[src], &t), rcounts[src], rdt, src,
                              CT_TAG_GATHERV, comm, MPI_STATUS_IGNORE));
    if (sbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    return own_copy(sbuf, scount, sdt, ct_elem(rbuf, displs[root], &t), rcounts[root], rdt, &t);
}

/* Gatherv, linear nonblocking: the root posts the receives of every non-empty block
 * at once (served in whatever order they arrive), copies its own, waits for all. */
int ct_gatherv_linear_nb(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                         MPI_Comm comm, const ct_params_t *prm) {
    int np, r, rc = MPI_SUCCESS, n = 0;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root)
        return ct_gatherv_linear(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm, prm);
    CT_CHECK(ct_type(rdt, &t));
    MPI_Request small[VSTACK];
    MPI_Request *req = np <= VSTACK ? small : malloc((size_t)np * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "gatherv/linear_nb: out of memory");
    for (int i = 1; i < np; i++) {
        int src = (root + i) % np;
        if (nbytes(rcounts[src], &t) == 0) continue;
        CT_TRY(MPI_Irecv(ct_elem(rbuf, displs[src], &t), rcounts[src], rdt, src, CT_TAG_GATHERV,
                         comm, &req[n]));
        n++;
    }
    if (sbuf != MPI_IN_PLACE)
        CT_TRY(own_copy(sbuf, scount, sdt, ct_elem(rbuf, displs[root], &t), rcounts[root], rdt,
                        &t));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != small) free(req);
    return rc;
}

/* Scatterv, linear: the root sends every non-empty block in turn (blocking, rank
 * root+1 first), then copies its own; every other rank receives its block unless
 * it is empty. */
int ct_scatterv_linear(const void *sbuf, const int *scounts, const int *displs,
                       MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
                       MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    ct_type_t t, rt;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root) {
        CT_CHECK(ct_type(rdt, &rt));
        if (nbytes(rcount, &rt) == 0) return MPI_SUCCESS;
        return MPI_Recv(rbuf, rcount, rdt, root, CT_TAG_SCATTERV, comm, MPI_STATUS_IGNORE);
    }
    CT_CHECK(ct_type(sdt, &t));
    for (int i = 1; i < np; i++) {
        int dst = (root + i) % np;
        if (nbytes(scounts[dst], &t) > 0)
            CT_CHECK(ct_send(ct_elem(sbuf, displs[dst], &t), scounts[dst], sdt, dst,
                             CT_TAG_SCATTERV, comm));
    }
    if (rbuf == MPI_IN_PLACE) return MPI_SUCCESS;
    CT_CHECK(ct_type(rdt, &rt));
    return own_copy(ct_elem(sbuf, displs[root], &t), scounts[root], sdt, rbuf, rcount, rdt, &rt);
}

/* Scatterv, linear nonblocking: the root posts the sends of every non-empty block
 * at once, copies its own block meanwhile, and waits for all. */
int ct_scatterv_linear_nb(const void *sbuf, const int *scounts, const int *displs,
                          MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
                          MPI_Comm comm, const ct_params_t *prm) {
    int np, r, rc = MPI_SUCCESS, n = 0;
    ct_type_t t, rt;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root)
        return ct_scatterv_linear(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm,
                                  prm);
    CT_CHECK(ct_type(sdt, &t));
    MPI_Request small[VSTACK];
    MPI_Request *req = np <= VSTACK ? small : malloc((size_t)np * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "scatterv/linear_nb: out of memory");
    for (int i = 1; i < np; i++) {
        int dst = (root + i) % np;
        if (nbytes(scounts[dst], &t) == 0) continue;
        CT_TRY(ct_isend(ct_elem(sbuf, displs[dst], &t), scounts[dst], sdt, dst, CT_TAG_SCATTERV,
                        comm, &req[n]));
        n++;
    }
    if (rbuf != MPI_IN_PLACE) {
        CT_TRY(ct_type(rdt, &rt));
        CT_TRY(own_copy(ct_elem(sbuf, displs[root], &t), scounts[root], sdt, rbuf, rcount, rdt,
                        &rt));
    }
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != small) free(req);
    return rc;
}

/* ---- binomial: the shared pieces ------------------------------------------------ */

/* B bytes in messages of at most CT_PIECE bytes (none when B is 0): both ends know
 * B, so both cut it alike. */
static int send_bytes(const char *buf, MPI_Aint B, int peer, int tag, MPI_Comm comm) {
    for (MPI_Aint off = 0; off < B; off += CT_PIECE) {
        MPI_Aint n = B - off < CT_PIECE ? B - off : CT_PIECE;
        CT_CHECK(ct_send(buf + off, (int)n, MPI_BYTE, peer, tag, comm));
    }
    return MPI_SUCCESS;
}
static int recv_bytes(char *buf, MPI_Aint B, int peer, int tag, MPI_Comm comm) {
    for (MPI_Aint off = 0; off < B; off += CT_PIECE) {
        MPI_Aint n = B - off < CT_PIECE ? B - off : CT_PIECE;
        CT_CHECK(MPI_Recv(buf + off, (int)n, MPI_BYTE, peer, tag, comm, MPI_STATUS_IGNORE));
    }
    return MPI_SUCCESS;
}

/* The root's blocks of absolute ranks first .. first+cnt-1 as one byte stream: where
 * the non-empty ones lie side by side in rank order (no wrap past rank np-1) in a
 * dense datatype, their address in the root's buffer, else NULL. */
static char *side_by_side(const void *buf, const int *counts, const int *displs,
                          const ct_type_t *t, int dense, int first, int cnt, int np) {
    if (!dense || first + cnt > np) return NULL;
    int start = -1;
    MPI_Aint next = 0;
    for (int j = first; j < first + cnt; j++) {
        if (counts[j] == 0) continue;
        if (start >= 0 && displs[j] != next) return NULL;
        if (start < 0) start = j;
        next = (MPI_Aint)displs[j] + counts[j];
    }
    return start < 0 ? NULL : ct_elem(buf, displs[start], t) + t->true_lb;
}

/* ---- Gatherv, binomial ----------------------------------------------------------- */

/* The root: each child's subtree (relative ranks m .. m+cnt-1, absolute from
 * root+m, wrapping past np-1) in round order, its byte total known from rcounts:
 * straight into rbuf when its blocks lie side by side there, else into a temporary
 * unpacked block by block; the own block last (no child waits for it). */
static int gv_binomial_root(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                            const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                            int np, MPI_Comm comm) {
    int rc = MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(rdt, &t));
    const int dense = ct_type_dense(rdt, &t);
    char *tmp = NULL;
    for (int m = 1; m < np; m <<= 1) {
        const int cnt = m < np - m ? m : np - m, first = (root + m) % np;
        MPI_Aint B = 0;
        for (int i = 0; i < cnt; i++) B += nbytes(rcounts[(first + i) % np], &t);
        if (B == 0) continue; /* the child sends nothing */
        char *at = side_by_side(rbuf, rcounts, displs, &t, dense, first, cnt, np);
        if (at) {
            CT_TRY(recv_bytes(at, B, first, CT_TAG_GATHERV, comm));
            continue;
        }
        free(tmp);
        if (!(tmp = malloc((size_t)B))) {
            rc = ct_set_error(MPI_ERR_NO_MEM, "gatherv/binomial: out of memory (%ld bytes)",
                              (long)B);
            goto out;
        }
        CT_TRY(recv_bytes(tmp, B, first, CT_TAG_GATHERV, comm));
        MPI_Aint off = 0;
        for (int i = 0; i < cnt; i++) {
            int j = (first + i) % np;
            CT_TRY(ct_from_stream(tmp + off, ct_elem(rbuf, displs[j], &t), rcounts[j], rdt, &t,
                                  dense, comm));
            off += nbytes(rcounts[j], &t);
        }
    }
    if (sbuf != MPI_IN_PLACE)
        rc = own_copy(sbuf, scount, sdt, ct_elem(rbuf, displs[root], &t), rcounts[root], rdt,
                      &t);
out:
    free(tmp);
    return rc;
}

/* A non-root rank, relative rank v: the byte totals of its children's subtrees
 * first (all posted at once), then their bytes one child at a time in round order
 * into a temporary after its own block, then its own block, then count (unless the
 * parent is the root) and bytes to the parent. A leaf sends straight from sbuf when
 * its datatype is dense. */
static int gv_binomial_nonroot(const void *sbuf, int scount, MPI_Datatype sdt, int root,
                               int np, int v, MPI_Comm comm) {
    const int low = v & -v;
    const int parent = (v - low + root) % np, to_root = v == low;
    int rc = MPI_SUCCESS, nch = 0;
    ct_type_t t;
    CT_CHECK(ct_type(sdt, &t));
    const int dense = ct_type_dense(sdt, &t);
    const MPI_Aint own = nbytes(scount, &t);
    int64_t sub[32]; /* children's subtree bytes, round order (at most log2 p) */
    MPI_Request req[32];
    for (int m = 1; m < low && v + m < np; m <<= 1) {
        CT_CHECK(MPI_Irecv(&sub[nch], 1, MPI_INT64_T, (v + m + root) % np, CT_TAG_GATHERV + 1,
                           comm, &req[nch]));
        nch++;
    }
    CT_CHECK(MPI_Waitall(nch, req, MPI_STATUSES_IGNORE));
    MPI_Aint total = own;
    for (int i = 0; i < nch; i++) total += (MPI_Aint)sub[i];
    char *tmp = NULL;
    const char *out = NULL;
    if (total > own || !dense) { /* children's bytes, or an own block to pack */
        if (!(tmp = malloc((size_t)total + 1)))
            return ct_set_error(MPI_ERR_NO_MEM, "gatherv/binomial: out of memory (%ld bytes)",
                                (long)total);
        MPI_Aint off = own;
        for (int i = 0, m = 1; i < nch; i++, m <<= 1) {
            CT_TRY(recv_bytes(tmp + off, (MPI_Aint)sub[i], (v + m + root) % np, CT_TAG_GATHERV,
                              comm));
            off += (MPI_Aint)sub[i];
        }
        CT_TRY(ct_to_stream(sbuf, scount, sdt, &t, dense, tmp, comm));
        out = tmp;
    } else {
        out = (const char *)sbuf + t.true_lb; /* only my own block, dense */
    }
    if (!to_root) {
        int64_t tot = (int64_t)total;
        CT_TRY(ct_send(&tot, 1, MPI_INT64_T, parent, CT_TAG_GATHERV + 1, comm));
    }
    CT_TRY(send_bytes(out, total, parent, CT_TAG_GATHERV, comm));
out:
    free(tmp);
    return rc;
}

/*
 * Binomial: relative rank v = (rank - root) mod p; in round k a rank with bit k set
 * sends everything it holds (the blocks of relative ranks v .. v+min(2^k, p-v)-1)
 * to v - 2^k and is done, preceded by its byte total where v - 2^k is not the root
 * (see the header). ceil(log2 p) rounds.
 */
int ct_gatherv_binomial(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                        const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                        MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r == root)
        return gv_binomial_root(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, np, comm);
    return gv_binomial_nonroot(sbuf, scount, sdt, root, np, (r - root + np) % np, comm);
}

/* ---- Scatterv, binomial ---------------------------------------------------------- */

/* To a child whose subtree has cnt ranks: their byte counts (unless cnt is 1), then
 * their B bytes from `from`. */
static int sv_send_child(const int64_t *counts, int cnt, const char *from, MPI_Aint B,
                         int child, MPI_Comm comm) {
    if (cnt > 1)
        CT_CHECK(ct_send(counts, cnt, MPI_INT64_T, child, CT_TAG_SCATTERV + 1, comm));
    return send_bytes(from, B, child, CT_TAG_SCATTERV, comm);
}

/* The root: to each child, largest subtree first, the subtree's counts and blocks
 * (straight from sbuf when they lie side by side there, else packed); its own
 * block last. */
static int sv_binomial_root(const void *sbuf, const int *scounts, const int *displs,
                            MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                            int root, int np, MPI_Comm comm) {
    int rc = MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(sdt, &t));
    const int dense = ct_type_dense(sdt, &t);
    int top = 1; /* the root's first child distance: the largest power of two < p */
    while (top * 2 < np) top <<= 1;
    int64_t small[VSTACK], *cts = np <= VSTACK ? small : malloc((size_t)np * sizeof *cts);
    char *tmp = NULL;
    if (!cts) return ct_set_error(MPI_ERR_NO_MEM, "scatterv/binomial: out of memory");
    for (int m = top; m >= 1; m >>= 1) {
        if (m >= np) continue;
        const int cnt = m < np - m ? m : np - m, first = (root + m) % np;
        MPI_Aint B = 0;
        for (int i = 0; i < cnt; i++) {
            cts[i] = (int64_t)nbytes(scounts[(first + i) % np], &t);
            B += (MPI_Aint)cts[i];
        }
        const char *from = side_by_side(sbuf, scounts, displs, &t, dense, first, cnt, np);
        if (!from && B > 0) {
            free(tmp);
            if (!(tmp = malloc((size_t)B))) {
                rc = ct_set_error(MPI_ERR_NO_MEM, "scatterv/binomial: out of memory (%ld "
                                  "bytes)", (long)B);
                goto out;
            }
            MPI_Aint off = 0;
            for (int i = 0; i < cnt; i++) {
                int j = (first + i) % np;
                CT_TRY(ct_to_stream(ct_elem(sbuf, displs[j], &t), scounts[j], sdt, &t, dense,
                                    tmp + off, comm));
                off += (MPI_Aint)cts[i];
            }
            from = tmp;
        }
        CT_TRY(sv_send_child(cts, cnt, from, B, first, comm));
    }
    if (rbuf != MPI_IN_PLACE) {
        ct_type_t rt;
        CT_TRY(ct_type(rdt, &rt));
        CT_TRY(own_copy(ct_elem(sbuf, displs[root], &t), scounts[root], sdt, rbuf, rcount, rdt,
                        &rt));
    }
out:
    free(tmp);
    if (cts != small) free(cts);
    return rc;
}

/* A non-root rank, relative rank v, subtree v .. v+span-1: the subtree's counts
 * (a leaf knows its own), its bytes (a leaf with a dense datatype straight into
 * rbuf), each child's slice of both (largest subtree first), then its own block. */
static int sv_binomial_nonroot(void *rbuf, int rcount, MPI_Datatype rdt, int root, int np,
                               int v, MPI_Comm comm) {
    const int low = v & -v, span = low < np - v ? low : np - v;
    const int parent = (v - low + root) % np;
    int rc = MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(rdt, &t));
    const int dense = ct_type_dense(rdt, &t);
    const MPI_Aint own = nbytes(rcount, &t);
    if (span == 1) {
        if (own == 0) return MPI_SUCCESS;
        if (dense) return recv_bytes((char *)rbuf + t.true_lb, own, parent, CT_TAG_SCATTERV,
                                     comm);
    }
    int64_t small[VSTACK], *cts = span <= VSTACK ? small : malloc((size_t)span * sizeof *cts);
    char *tmp = NULL;
    if (!cts) return ct_set_error(MPI_ERR_NO_MEM, "scatterv/binomial: out of memory");
    if (span > 1)
        CT_TRY(MPI_Recv(cts, span, MPI_INT64_T, parent, CT_TAG_SCATTERV + 1, comm,
                        MPI_STATUS_IGNORE));
    else
        cts[0] = (int64_t)own;
    MPI_Aint B = 0;
    for (int i = 0; i < span; i++) B += (MPI_Aint)cts[i];
    if (!(tmp = malloc((size_t)B + 1))) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "scatterv/binomial: out of memory (%ld bytes)",
                          (long)B);
        goto out;
    }
    CT_TRY(recv_bytes(tmp, B, parent, CT_TAG_SCATTERV, comm));
    for (int m = low / 2; m >= 1; m >>= 1) {
        if (v + m >= np) continue;
        const int cnt = m < np - (v + m) ? m : np - (v + m);
        MPI_Aint off = 0, sub = 0;
        for (int i = 0; i < m; i++) off += (MPI_Aint)cts[i];
        for (int i = 0; i < cnt; i++) sub += (MPI_Aint)cts[m + i];
        CT_TRY(sv_send_child(cts + m, cnt, tmp + off, sub, (v + m + root) % np, comm));
    }
    if (own > 0) CT_TRY(ct_from_stream(tmp, rbuf, rcount, rdt, &t, dense, comm));
out:
    free(tmp);
    if (cts != small) free(cts);
    return rc;
}

/*
 * Binomial: on relative ranks v = (rank - root) mod p, rank v > 0 receives the
 * blocks of its subtree (v .. v + min(lowbit(v), p - v) - 1) with their byte counts
 * from v - lowbit(v), then hands on to v + m, m = lowbit(v)/2, ..., 1 (the root:
 * from the largest power of two below p) the counts and blocks of that subtree.
 * ceil(log2 p) rounds.
 */
int ct_scatterv_binomial(const void *sbuf, const int *scounts, const int *displs,
                         MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, int root,
                         MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r == root)
        return sv_binomial_root(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, np, comm);
    return sv_binomial_nonroot(rbuf, rcount, rdt, root, np, (r - root + np) % np, comm);
}

/* Test-only (hidden): binomial, then the root corrupts the first byte of the first
 * non-empty block of another rank -- proves that the checks can fail. */
int ct_gatherv_broken(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                      const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
                      MPI_Comm comm, const ct_params_t *prm) {
    int np, r;
    ct_type_t t;
    CT_CHECK(ct_gatherv_binomial(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm,
                                 prm));
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != root) return MPI_SUCCESS;
    CT_CHECK(ct_type(rdt, &t));
    for (int j = 0; j < np; j++)
        if (j != root && nbytes(rcounts[j], &t) > 0) {
            *((unsigned char *)ct_elem(rbuf, displs[j], &t) + t.true_lb) ^= 0xFFu;
            break;
        }
    return MPI_SUCCESS;
}
