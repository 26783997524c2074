/*
 * barrier.c -- Barrier algorithms (see registry.c for the table).
 *
 * Every algorithm exchanges empty messages so that no rank returns before every
 * rank has entered: each rank's return depends, through a chain of messages, on
 * every other rank's entry. Exchanges are MPI_Sendrecv, or a blocking send whose
 * receive is the peer's next action, so no algorithm relies on buffering.
 */
#include "ct_internal.h"

static int zsend(int to, MPI_Comm comm) { return ct_send(NULL, 0, MPI_BYTE, to, CT_TAG_BARRIER, comm); }
static int zrecv(int from, MPI_Comm comm) {
    return MPI_Recv(NULL, 0, MPI_BYTE, from, CT_TAG_BARRIER, comm, MPI_STATUS_IGNORE);
}
static int zxchg(int to, int from, MPI_Comm comm) {
    return ct_sendrecv(NULL, 0, MPI_BYTE, to, CT_TAG_BARRIER, NULL, 0, MPI_BYTE, from,
                       CT_TAG_BARRIER, comm, MPI_STATUS_IGNORE);
}

int ct_barrier_native(MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Barrier(comm);
}

/* Linear: every rank tells rank 0 it has arrived; rank 0 posts the p-1 arrival
 * receives at once, from any source (whoever comes first is served first), and,
 * having heard from all, releases them with nonblocking sends posted at once --
 * Open MPI's barrier_intra_basic_linear schedule. A rank released early may
 * enter the next barrier and send its arrival before rank 0 has sent every
 * release: that message waits unmatched until rank 0 posts the next barrier's
 * receives, because this barrier's are all complete by then. */
int ct_barrier_linear(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r, rc = MPI_SUCCESS;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (r != 0) {
        CT_CHECK(zsend(0, comm));
        return zrecv(0, comm);
    }
    if (np == 1) return MPI_SUCCESS;
    if (np == 2) { /* one arrival, one release: the same two messages with blocking
                    * calls (a receive and a send instead of two requests and two
                    * waits) */
        CT_CHECK(zrecv(1, comm)); /* by number: MPICH 5.0.2 (ch4, shared memory and UCX
                                   * between nodes) left a receive from MPI_ANY_SOURCE
                                   * unmatched across nodes (docs/algorithms/hierarchical.md) */
        return zsend(1, comm);
    }
    /* the requests: from the stack up to 32 processes (a malloc and free were
     * about 200 of the call's instructions at 2 processes) */
    MPI_Request small[32];
    MPI_Request *req = np <= 32 ? small : malloc((size_t)np * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "barrier/linear: out of memory");
    int n = 0;
    for (int i = 1; i < np; i++) {
        CT_TRY(MPI_Irecv(NULL, 0, MPI_BYTE, i, CT_TAG_BARRIER, comm, &req[n])); /* (as above) */
        n++;
    }
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
    n = 0;
    for (int i = 1; i < np; i++) {
        CT_TRY(ct_isend(NULL, 0, MPI_BYTE, i, CT_TAG_BARRIER, comm, &req[n]));
        n++;
    }
    CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
out:
    if (req != small) free(req);
    return rc;
}

/* Double ring: a token goes around the ring twice, from rank 0 to 1, 2, ... and
 * back to 0: after the first round every rank has entered, the second releases
 * them. 2p messages in sequence. */
int ct_barrier_double_ring(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (np == 1) return MPI_SUCCESS;
    const int left = (r - 1 + np) % np, right = (r + 1) % np;
    for (int round = 0; round < 2; round++) {
        if (r == 0) {
            CT_CHECK(zsend(right, comm));
            CT_CHECK(zrecv(left, comm));
        } else {
            CT_CHECK(zrecv(left, comm));
            CT_CHECK(zsend(right, comm));
        }
    }
    return MPI_SUCCESS;
}

/* Recursive doubling: among q = 2^floor(log2 p) ranks, partners r XOR 1, 2, 4, ...
 * exchange; each of the p - q extra ranks first reports to rank r - q and is
 * released by it at the end. */
int ct_barrier_recursive_doubling(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    const int q = ct_pow2_floor(np), rem = np - q;
    if (r >= q) {
        CT_CHECK(zsend(r - q, comm));
        return zrecv(r - q, comm);
    }
    if (r < rem) CT_CHECK(zrecv(r + q, comm));
    for (int m = 1; m < q; m <<= 1) CT_CHECK(zxchg(r ^ m, r ^ m, comm));
    if (r < rem) CT_CHECK(zsend(r + q, comm));
    return MPI_SUCCESS;
}

/* Dissemination (Bruck): ceil(log2 p) rounds; in the round at distance d a rank
 * signals rank r+d and waits for rank r-d. Any p, no extra rounds. */
int ct_barrier_bruck(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    for (int d = 1; d < np; d <<= 1) CT_CHECK(zxchg((r + d) % np, (r - d + np) % np, comm));
    return MPI_SUCCESS;
}

/* Two processes: one exchange. */
int ct_barrier_two_proc(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    if (np != 2)
        return ct_set_error(MPI_ERR_ARG, "barrier/two_proc needs exactly 2 processes (got %d)",
                            np);
    return zxchg(1 - r, 1 - r, comm);
}

/* Tree: a binomial tree gathers the arrivals at rank 0 (children r + 1, 2, 4, ...
 * report before r reports to r - lowbit(r)), then the same tree releases them. */
int ct_barrier_tree(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    int np, r;
    CT_CHECK(ct_comm_geom(comm, &np, &r));
    int m = 1;
    for (; m < np; m <<= 1) {
        if (r & m) {
            CT_CHECK(zsend(r - m, comm));
            break;
        }
        if (r + m < np) CT_CHECK(zrecv(r + m, comm));
    }
    /* m: r's lowest set bit (its parent is r - m), or the first power of two >= p at 0 */
    if (r != 0) CT_CHECK(zrecv(r - m, comm));
    for (m >>= 1; m >= 1; m >>= 1)
        if (r + m < np) CT_CHECK(zsend(r + m, comm));
    return MPI_SUCCESS;
}
