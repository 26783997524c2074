/*
 * alltoall.c -- Alltoall and Alltoallv algorithms (see registry.c for the table).
 *
 * Blocks: block j of the send buffer (scount x sdt from sbuf + j*scount*extent(sdt);
 * for Alltoallv scounts[j] elements from sbuf + sdispls[j]*extent(sdt)) goes to
 * rank j, which receives it into its block `rank` of rbuf. Send and receive
 * types may differ between ranks and between the two sides as long as the type
 * signatures of each pair of blocks match; a block travels as the sender's
 * scount x sdt and arrives as the receiver's rcount x rdt, so holes of derived
 * types are never written. Bruck, which forwards blocks of other ranks, moves
 * them as bytes of the type signature (packed where a datatype is not dense).
 *
 * The dispatcher never passes MPI_IN_PLACE: it hands the algorithms a copy of the
 * receive buffer as the send buffer. Every exchange is an MPI_Sendrecv or
 * non-blocking, so no algorithm relies on MPI buffering; all work for every
 * process count.
 */
#include "ct_internal.h"

#include <limits.h>

/* Geometry of one call: block addresses of both buffers. */
typedef struct {
    int np, r;
    MPI_Aint sext, rext; /* extent of one element of sdt / rdt */
    ct_type_t rt;        /* geometry of rdt (for the copy of the own block) */
} a2a_t;

/* The size and rank of the private communicator come from the dispatcher
 * (ct_comm_geom) and the geometry of a predefined type from the type cache
 * (ct_type): no MPI call per call for either -- MPI_Comm_size, MPI_Comm_rank and
 * two MPI_Type_get_extent cost about 120 instructions, a tenth of an 8-byte
 * exchange at two processes (callgrind). */
static int a2a_begin(a2a_t *g, MPI_Datatype sdt, MPI_Datatype rdt, MPI_Comm comm) {
    CT_CHECK(ct_comm_geom(comm, &g->np, &g->r));
    CT_CHECK(ct_type(rdt, &g->rt));
    g->rext = g->rt.extent;
    if (sdt == rdt) {
        g->sext = g->rext;
    } else {
        ct_type_t st;
        CT_CHECK(ct_type(sdt, &st));
        g->sext = st.extent;
    }
    return MPI_SUCCESS;
}

/* The own block, scount x sdt at src -> rcount x rdt at dst: with one type and
 * count on both sides a copy with the geometry at hand (one memmove for a dense
 * type), else the conversion of ct_copy_sig. */
static inline int a2a_copy_own(const a2a_t *g, const void *src, int scount, MPI_Datatype sdt,
                               void *dst, int rcount, MPI_Datatype rdt) {
    if (sdt == rdt && scount == rcount) return ct_copy_t(src, dst, rcount, rdt, &g->rt);
    return ct_copy_sig(src, scount, sdt, dst, rcount, rdt);
}

/* Requests of one call: on the stack up to REQ_STACK, else from the heap. */
#define REQ_STACK 64
static MPI_Request *req_array(int n, MPI_Request *stack) {
    return n <= REQ_STACK ? stack : malloc((size_t)n * sizeof(MPI_Request));
}
static void req_free(MPI_Request *req, MPI_Request *stack) {
    if (req != stack) free(req);
}

static inline const char *sblk(const void *sbuf, const a2a_t *g, int count, int j) {
    return (const char *)sbuf + (MPI_Aint)j * count * g->sext;
}
static inline char *rblk(void *rbuf, const a2a_t *g, int count, int j) {
    return (char *)rbuf + (MPI_Aint)j * count * g->rext;
}

/* ---- Alltoall -------------------------------------------------------------- */

int ct_alltoall_native(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                       MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

/*
 * Linear: every rank posts a receive from every other rank (rank+1 first, then
 * rank+2, ...) and a send to every other rank (rank-1 first, then rank-2, ...:
 * rank r+1's first message is the one r's first receive waits for), copies its
 * own block while they are in flight, then waits for all. The partners' order is
 * Open MPI's basic_linear (which copies its own block first). At two processes
 * that is one Sendrecv.
 */
static int a2a_linear(const a2a_t *g, const void *sbuf, int scount, MPI_Datatype sdt,
                      void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm) {
    int rc = MPI_SUCCESS, n = 0;
    if (g->np == 2) { /* one peer: its receive and send in one MPI_Sendrecv -- the same
                       * two messages with one MPI call instead of three (their argument
                       * checks: about 70 instructions) */
        const int o = 1 - g->r;
        CT_CHECK(ct_sendrecv(sblk(sbuf, g, scount, o), scount, sdt, o, CT_TAG_ALLTOALL,
                             rblk(rbuf, g, rcount, o), rcount, rdt, o, CT_TAG_ALLTOALL, comm,
                             MPI_STATUS_IGNORE));
        return a2a_copy_own(g, sblk(sbuf, g, scount, g->r), scount, sdt,
                            rblk(rbuf, g, rcount, g->r), rcount, rdt);
    }
    MPI_Request stack[REQ_STACK], *req = req_array(2 * g->np, stack);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "alltoall/linear: out of memory");
    for (int i = 1; i < g->np; i++) {
        int src = (g->r + i) % g->np;
        CT_TRY(MPI_Irecv(rblk(rbuf, g, rcount, src), rcount, rdt, src, CT_TAG_ALLTOALL, comm,
                         &req[n]));
        n++;
    }
    for (int i = 1; i < g->np; i++) {
        int dst = (g->r - i + g->np) % g->np;
        CT_TRY(ct_isend(sblk(sbuf, g, scount, dst), scount, sdt, dst, CT_TAG_ALLTOALL, comm,
                        &req[n]));
        n++;
    }
    CT_TRY(a2a_copy_own(g, sblk(sbuf, g, scount, g->r), scount, sdt,
                         rblk(rbuf, g, rcount, g->r), rcount, rdt));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    req_free(req, stack);
    return rc;
}

int ct_alltoall_linear(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                       MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    return a2a_linear(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm);
}

/*
 * Pairwise exchange: p-1 steps; in step i rank r sends its block for r+i and
 * receives the block of r-i (one Sendrecv per step).
 */
int ct_alltoall_pairwise(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         int rcount, MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    /* step i: to r+i, from r-i (mod p), counted without a division per step */
    for (int i = 1, dst = g.r, src = g.r; i < g.np; i++) {
        dst = dst + 1 < g.np ? dst + 1 : 0;
        src = src > 0 ? src - 1 : g.np - 1;
        CT_CHECK(ct_sendrecv(sblk(sbuf, &g, scount, dst), scount, sdt, dst, CT_TAG_ALLTOALL,
                             rblk(rbuf, &g, rcount, src), rcount, rdt, src, CT_TAG_ALLTOALL,
                             comm, MPI_STATUS_IGNORE));
    }
    /* the own block last: the first exchange starts without waiting for a copy */
    return a2a_copy_own(&g, sblk(sbuf, &g, scount, g.r), scount, sdt,
                         rblk(rbuf, &g, rcount, g.r), rcount, rdt);
}

/*
 * Linear with at most max_requests sends (and as many receives) outstanding
 * (Open MPI's linear_sync): the first max_requests receives and sends are
 * posted, and each one that completes is replaced by the next of its kind.
 * max_requests = 0 or >= p-1 posts them all: linear itself.
 */
int ct_alltoall_linear_sync(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                            int rcount, MPI_Datatype rdt, MPI_Comm comm,
                            const ct_params_t *prm) {
    a2a_t g;
    int rc = MPI_SUCCESS;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    const int np = g.np, r = g.r;
    long m = CT_MAX_REQUESTS(prm);
    if (m <= 0 || m >= np - 1) /* no bound: every request at once */
        return a2a_linear(&g, sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    CT_CHECK(a2a_copy_own(&g, sblk(sbuf, &g, scount, g.r), scount, sdt,
                          rblk(rbuf, &g, rcount, g.r), rcount, rdt));
    const int M = (int)m;
    MPI_Request stack[REQ_STACK], *req = req_array(2 * M, stack);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "alltoall/linear_sync: out of memory");
    for (int k = 0; k < 2 * M; k++) req[k] = MPI_REQUEST_NULL;
    /* receives / sends posted: peers r+1, r+2, .. and r-1, r-2, .. in turn (Open
     * MPI's linear_sync order) */
    int nr = 0, ns = 0;
    for (; nr < M; nr++) {
        int src = (r + nr + 1) % np;
        CT_TRY(MPI_Irecv(rblk(rbuf, &g, rcount, src), rcount, rdt, src, CT_TAG_ALLTOALL, comm,
                         &req[nr]));
    }
    for (; ns < M; ns++) {
        int dst = (r - ns - 1 + np) % np;
        CT_TRY(ct_isend(sblk(sbuf, &g, scount, dst), scount, sdt, dst, CT_TAG_ALLTOALL, comm,
                        &req[M + ns]));
    }
    for (int done = 0; done < 2 * (np - 1); done++) {
        int idx;
        CT_TRY(MPI_Waitany(2 * M, req, &idx, MPI_STATUS_IGNORE));
        if (idx == MPI_UNDEFINED) break;
        if (idx < M && nr < np - 1) {
            int src = (r + nr + 1) % np;
            CT_TRY(MPI_Irecv(rblk(rbuf, &g, rcount, src), rcount, rdt, src, CT_TAG_ALLTOALL,
                             comm, &req[idx]));
            nr++;
        } else if (idx >= M && ns < np - 1) {
            int dst = (r - ns - 1 + np) % np;
            CT_TRY(ct_isend(sblk(sbuf, &g, scount, dst), scount, sdt, dst, CT_TAG_ALLTOALL,
                            comm, &req[idx]));
            ns++;
        }
    }
out:
    req_free(req, stack);
    return rc;
}

/* Two processes: one exchange and the local copy. */
int ct_alltoall_two_proc(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                         int rcount, MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    if (g.np != 2)
        return ct_set_error(MPI_ERR_ARG, "alltoall/two_proc needs exactly 2 processes (got %d)",
                            g.np);
    const int o = 1 - g.r;
    CT_CHECK(ct_sendrecv(sblk(sbuf, &g, scount, o), scount, sdt, o, CT_TAG_ALLTOALL,
                         rblk(rbuf, &g, rcount, o), rcount, rdt, o, CT_TAG_ALLTOALL, comm,
                         MPI_STATUS_IGNORE));
    return a2a_copy_own(&g, sblk(sbuf, &g, scount, g.r), scount, sdt,
                         rblk(rbuf, &g, rcount, g.r), rcount, rdt);
}


/*
 * Bruck (Open MPI's modified Bruck): slot i of a temporary holds the block for
 * rank r+i, as B bytes of the type signature. In the step at distance d = 2^k
 * a rank sends the slots whose index has bit k set to rank r+d and receives
 * the same slots from rank r-d (packed into one message each way); after
 * ceil(log2 p) steps slot i holds the block from rank r-i, which a last pass
 * unpacks into place. About p/2 blocks per step: for small blocks.
 */
int ct_alltoall_bruck(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                      MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    ct_type_t ts, tr;
    int rc = MPI_SUCCESS;
    MPI_Datatype unit = MPI_BYTE;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    const int np = g.np, r = g.r;
    CT_CHECK(a2a_copy_own(&g, sblk(sbuf, &g, scount, r), scount, sdt,
                          rblk(rbuf, &g, rcount, r), rcount, rdt));
    if (np == 1) return MPI_SUCCESS;
    tr = g.rt;
    if (sdt == rdt) ts = g.rt;
    else CT_CHECK(ct_type(sdt, &ts));
    const MPI_Aint B = (MPI_Aint)rcount * tr.size; /* bytes per block */
    if (B > INT_MAX)
        return ct_set_error(MPI_ERR_COUNT, "alltoall/bruck: blocks of %ld bytes; at most %d "
                            "(use pairwise or linear)", (long)B, INT_MAX);
    const int sdense = ct_type_dense(sdt, &ts), rdense = ct_type_dense(rdt, &tr);
    const int half = np / 2 + 1;
    int per = (int)B; /* units per block in messages */
    if ((MPI_Aint)half * B > INT_MAX) { /* counts of blocks instead of bytes */
        CT_CHECK(MPI_Type_contiguous((int)B, MPI_BYTE, &unit));
        rc = MPI_Type_commit(&unit);
        if (rc != MPI_SUCCESS) {
            MPI_Type_free(&unit);
            return rc;
        }
        per = 1;
    }
    char *tmp = malloc((size_t)(np + 2 * half) * (size_t)B + 1);
    if (!tmp) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "alltoall/bruck: out of memory");
        goto out;
    }
    char *spk = tmp + (size_t)np * (size_t)B, *rpk = spk + (size_t)half * (size_t)B;
    for (int i = 1; i < np; i++)
        CT_TRY(ct_to_stream(sblk(sbuf, &g, scount, (r + i) % np), scount, sdt, &ts, sdense,
                         tmp + (size_t)i * (size_t)B, comm));
    for (int d = 1; d < np; d <<= 1) {
        int n = 0;
        for (int i = 1; i < np; i++)
            if (i & d) memcpy(spk + (size_t)(n++) * (size_t)B, tmp + (size_t)i * (size_t)B, (size_t)B);
        CT_SIM_CHARGE(CT_SIM_COPY, (double)n * B); /* SMPI only (simcharge.h) */
        CT_TRY(ct_sendrecv(spk, n * per, unit, (r + d) % np, CT_TAG_ALLTOALL, rpk, n * per, unit,
                           (r - d + np) % np, CT_TAG_ALLTOALL, comm, MPI_STATUS_IGNORE));
        n = 0;
        for (int i = 1; i < np; i++)
            if (i & d) memcpy(tmp + (size_t)i * (size_t)B, rpk + (size_t)(n++) * (size_t)B, (size_t)B);
        CT_SIM_CHARGE(CT_SIM_COPY, (double)n * B); /* SMPI only (simcharge.h) */
    }
    for (int i = 1; i < np; i++)
        CT_TRY(ct_from_stream(tmp + (size_t)i * (size_t)B, rblk(rbuf, &g, rcount, (r - i + np) % np),
                           rcount, rdt, &tr, rdense, comm));
out:
    free(tmp);
    if (unit != MPI_BYTE) MPI_Type_free(&unit);
    return rc;
}

/* Test-only (hidden): pairwise, then the last rank corrupts the first byte of
 * the block it received from rank 0 -- proves that the checks can fail. */
int ct_alltoall_broken(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                       MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    a2a_t g;
    ct_type_t t;
    CT_CHECK(ct_alltoall_pairwise(sbuf, scount, sdt, rbuf, rcount, rdt, comm, prm));
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    CT_CHECK(ct_type(rdt, &t));
    if (g.np >= 2 && g.r == g.np - 1 && t.size > 0)
        *((unsigned char *)rbuf + t.true_lb) ^= 0xFFu; /* the deliberate corruption */
    return MPI_SUCCESS;
}

/* MPI_IN_PLACE for Alltoall(v): the algorithms get a copy of the receive buffer's
 * blocks (block j: rcounts[j] elements at rdispls[j]) as their send buffer. */
int ct_a2a_inplace_copy(const void *rbuf, const int *rcounts, const int *rdispls,
                        MPI_Datatype rdt, int p, void **raw, const void **sbuf) {
    ct_type_t t;
    CT_CHECK(ct_type(rdt, &t));
    MPI_Aint n = 0;
    for (int j = 0; j < p; j++)
        if (rcounts[j] > 0 && (MPI_Aint)rdispls[j] + rcounts[j] > n)
            n = (MPI_Aint)rdispls[j] + rcounts[j];
    char *tmp = ct_tmp_alloc(n, &t, raw);
    if (!tmp)
        return ct_set_error(MPI_ERR_NO_MEM, "alltoall: out of memory (copy of the receive "
                            "buffer for MPI_IN_PLACE)");
    for (int j = 0; j < p; j++)
        CT_CHECK(ct_copy((const char *)rbuf + (MPI_Aint)rdispls[j] * t.extent,
                         tmp + (MPI_Aint)rdispls[j] * t.extent, rcounts[j], rdt));
    *sbuf = tmp;
    return MPI_SUCCESS;
}

/* ---- Alltoallv ------------------------------------------------------------- */

int ct_alltoallv_native(const void *sbuf, const int *scounts, const int *sdispls,
                        MPI_Datatype sdt, void *rbuf, const int *rcounts, const int *rdispls,
                        MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
}

static inline const char *svblk(const void *sbuf, const a2a_t *g, const int *sdispls, int j) {
    return (const char *)sbuf + (MPI_Aint)sdispls[j] * g->sext;
}
static inline char *rvblk(void *rbuf, const a2a_t *g, const int *rdispls, int j) {
    return (char *)rbuf + (MPI_Aint)rdispls[j] * g->rext;
}

/* Linear: receives and sends of every non-empty block posted at once (rank+1
 * first), the own block copied meanwhile, then one wait for all. */
int ct_alltoallv_linear(const void *sbuf, const int *scounts, const int *sdispls,
                        MPI_Datatype sdt, void *rbuf, const int *rcounts, const int *rdispls,
                        MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    int rc = MPI_SUCCESS, n = 0;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    int ssize;
    CT_CHECK(ct_type_size(sdt, &ssize));
    MPI_Request stack[REQ_STACK], *req = req_array(2 * g.np, stack);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "alltoallv/linear: out of memory");
    /* an empty block is skipped on both sides by its bytes, not its count: 0 MPI_INT
     * may meet 1 element of a zero-size type (both signatures are empty) */
    for (int i = 1; i < g.np; i++) {
        int src = (g.r - i + g.np) % g.np;
        if (rcounts[src] == 0 || g.rt.size == 0) continue; /* the matching send is empty */
        CT_TRY(MPI_Irecv(rvblk(rbuf, &g, rdispls, src), rcounts[src], rdt, src, CT_TAG_ALLTOALL,
                         comm, &req[n]));
        n++;
    }
    for (int i = 1; i < g.np; i++) {
        int dst = (g.r + i) % g.np;
        if (scounts[dst] == 0 || ssize == 0) continue;
        CT_TRY(ct_isend(svblk(sbuf, &g, sdispls, dst), scounts[dst], sdt, dst, CT_TAG_ALLTOALL,
                        comm, &req[n]));
        n++;
    }
    CT_TRY(a2a_copy_own(&g, svblk(sbuf, &g, sdispls, g.r), scounts[g.r], sdt,
                        rvblk(rbuf, &g, rdispls, g.r), rcounts[g.r], rdt));
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    req_free(req, stack);
    return rc;
}

/* Pairwise: p-1 steps, in step i a Sendrecv to rank r+i and from rank r-i. */
int ct_alltoallv_pairwise(const void *sbuf, const int *scounts, const int *sdispls,
                          MPI_Datatype sdt, void *rbuf, const int *rcounts, const int *rdispls,
                          MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    a2a_t g;
    CT_CHECK(a2a_begin(&g, sdt, rdt, comm));
    CT_CHECK(a2a_copy_own(&g, svblk(sbuf, &g, sdispls, g.r), scounts[g.r], sdt,
                          rvblk(rbuf, &g, rdispls, g.r), rcounts[g.r], rdt));
    for (int i = 1; i < g.np; i++) {
        int dst = (g.r + i) % g.np, src = (g.r - i + g.np) % g.np;
        CT_CHECK(ct_sendrecv(svblk(sbuf, &g, sdispls, dst), scounts[dst], sdt, dst,
                             CT_TAG_ALLTOALL, rvblk(rbuf, &g, rdispls, src), rcounts[src], rdt,
                             src, CT_TAG_ALLTOALL, comm, MPI_STATUS_IGNORE));
    }
    return MPI_SUCCESS;
}
