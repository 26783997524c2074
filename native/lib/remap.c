/*
 * remap.c -- placement detection, rank remapping orders and the permuted
 * communicators, with the scratch a remapped Allgather keeps per communicator.
 * (Which order `remap=auto` picks is a column of the registry, registry.c.) The
 * dispatcher (dispatch.c) calls in here and nothing here calls it back.
 *
 * Placement: the node of every rank of a communicator (shared-memory split, or
 * the virtual nodes of COLLTUNE_NODES), found once per communicator with one
 * Allgather of an int on the library's private duplicate and cached with it
 * (dispatch.c keeps it in the communicator's attribute). The collectives here
 * are called by their PMPI names: under the interposition library MPI_Allgather
 * is colltune's own, which must not re-enter the dispatcher.
 *
 * Remapping (seed 003, Alvarez, Diaz, Rico, TAPEMS 2017): an algorithm runs on a
 * permuted communicator in which rank j is played by communicator rank perm[j].
 *  - seq order: ranks sorted by node (stable), so each node's ranks are
 *    contiguous. For a regular round-robin placement (P = M*Q, rank p on node
 *    p mod M) the new rank of p is (p mod M)*Q + p div M = f_RR->SEQ(p) =
 *    ((p*Q) mod P) + floor(p/M).
 *  - rr order: the i-th rank of every node, nodes in order, for i = 0, 1, ...;
 *    for a regular sequential placement the new rank of p is (p mod Q)*M +
 *    p div Q = f_SEQ->RR(p) = ((p*M) mod P) + floor(p/Q).
 * Both orders are defined for any placement (nodes of different sizes, M not
 * dividing P): they are the seed's formulas generalised by sorting on
 * (node, index in node) and (index in node, node).
 */
#include "ct_internal.h"

#include <errno.h>
#include <stdio.h>

const char *ct_placement_kind_name(int kind) {
    switch (kind & (CT_PLACE_SEQ | CT_PLACE_RR)) {
    case CT_PLACE_SEQ: return "seq";
    case CT_PLACE_RR: return "rr";
    case CT_PLACE_SEQ | CT_PLACE_RR: return "seq+rr";
    default: return "irregular";
    }
}

/* ---- virtual nodes ------------------------------------------------------------ */
/* The virtual node of world rank wr of W from COLLTUNE_NODES (see colltune.h),
 * or -1 in *node when the variable is not set. */
static int virtual_node(int wr, int W, int *node) {
    const char *spec = getenv("COLLTUNE_NODES");
    *node = -1;
    if (!spec || !*spec) { /* nodes of K consecutive world ranks, or none declared */
        const char *ppn = getenv("COLLTUNE_VIRTUAL_PPN");
        if (!ppn || !*ppn) return MPI_SUCCESS;
        char *end = NULL;
        errno = 0;
        long k = strtol(ppn, &end, 10);
        if (errno || end == ppn || *end || k < 1)
            return ct_set_error(MPI_ERR_ARG, "COLLTUNE_VIRTUAL_PPN='%s' is not a number of "
                                "processes per node >= 1", ppn);
        *node = (int)(wr / k);
        return MPI_SUCCESS;
    }
    if (strchr(spec, ',')) {
        const char *s = spec;
        for (int i = 0;; i++) {
            char *end = NULL;
            errno = 0;
            long v = strtol(s, &end, 10);
            if (errno || end == s || v < 0 || v > 1000000 || (*end && *end != ','))
                return ct_set_error(MPI_ERR_ARG, "COLLTUNE_NODES='%s': entry %d is not a node "
                                    "number (syntax: a node count, or the node of each "
                                    "world rank as 0,0,1,1,...)", spec, i);
            if (i == wr) *node = (int)v;
            if (!*end) {
                if (i + 1 != W)
                    return ct_set_error(MPI_ERR_ARG, "COLLTUNE_NODES lists %d nodes for %d "
                                        "processes: give the node of each world rank", i + 1,
                                        W);
                return MPI_SUCCESS;
            }
            s = end + 1;
        }
    }
    char *end = NULL;
    errno = 0;
    long m = strtol(spec, &end, 10);
    if (errno || end == spec || *end || m < 1)
        return ct_set_error(MPI_ERR_ARG, "COLLTUNE_NODES='%s' is not a node count >= 1 nor a "
                            "list of nodes (0,0,1,1,...)", spec);
    if (m > W) m = W;
    const char *order = getenv("COLLTUNE_NODE_ORDER");
    if (!order || !*order || strcmp(order, "seq") == 0) {
        int n = 0;
        while (n + 1 < m && ct_block_start(W, (int)m, n + 1) <= wr) n++;
        *node = n;
    } else if (strcmp(order, "rr") == 0) {
        *node = wr % (int)m;
    } else {
        return ct_set_error(MPI_ERR_ARG, "COLLTUNE_NODE_ORDER='%s' is invalid; valid: seq, rr",
                            order);
    }
    return MPI_SUCCESS;
}

/* ---- Allgather's remap scratch -------------------------------------------------
 * ct_remap_shared_scratch: per process (SMPI privatises it per simulated rank);
 * atomic, as every thread's remapped Allgather reads it */
static _Atomic int shared_scratch;

int ct_remap_shared_scratch(int on) {
#ifdef SMPI_SHARED_MALLOC
    shared_scratch = on != 0;
    return MPI_SUCCESS;
#else
    if (on)
        return ct_set_error(MPI_ERR_ARG, "shared remap scratch: only in a build for SimGrid's "
                            "SMPI");
    shared_scratch = 0;
    return MPI_SUCCESS;
#endif
}

/* frees pl->scratch as it was allocated */
static void scratch_free(ct_place_t *pl) {
#ifdef SMPI_SHARED_FREE
    if (pl->scratch && pl->scratch_shared) {
        SMPI_SHARED_FREE(pl->scratch);
        pl->scratch = NULL;
    }
#endif
    free(pl->scratch);
    pl->scratch = NULL;
    pl->scratch_bytes = 0;
    pl->scratch_shared = 0;
}

void *ct_place_scratch(ct_place_t *pl, size_t bytes) {
    if (bytes > pl->scratch_bytes || pl->scratch_shared != shared_scratch) {
        scratch_free(pl);
        /* page-aligned as the caller's buffers usually are: single-copy
         * shared-memory transports are slower into misaligned buffers */
        size_t page = 4096, alloc = (bytes + page - 1) / page * page;
#ifdef SMPI_SHARED_MALLOC
        if (shared_scratch) { /* timing runs only: mapped pages, one memory for all ranks */
            pl->scratch = SMPI_SHARED_MALLOC(alloc);
            pl->scratch_shared = pl->scratch != NULL;
        } else
#endif
            pl->scratch = aligned_alloc(page, alloc);
        if (!pl->scratch) return NULL;
        pl->scratch_bytes = bytes;
    }
    return pl->scratch;
}

/* ---- placement ----------------------------------------------------------------- */
void ct_place_free(ct_place_t *pl, int finalized) {
    if (!pl) return;
    for (int t = 0; t < 3; t++) {
        if (!finalized && pl->rcomm[t] != MPI_COMM_NULL) MPI_Comm_free(&pl->rcomm[t]);
        free(pl->perm[t]);
        free(pl->inv[t]);
    }
    scratch_free(pl);
    free(pl->node);
    free(pl);
}

static int place_fail(ct_place_t *pl, int rc) {
    ct_place_free(pl, 0);
    return rc;
}

int ct_place_build(MPI_Comm dup, int rank, int P, ct_place_t **out) {
    ct_place_t *pl = calloc(1, sizeof *pl);
    if (!pl) return ct_set_error(MPI_ERR_NO_MEM, "out of memory");
    for (int t = 0; t < 3; t++) pl->rcomm[t] = MPI_COMM_NULL;
    pl->node = malloc((size_t)P * sizeof(int));
    int *key = malloc((size_t)P * sizeof(int));
    int *cnt = calloc((size_t)P, sizeof(int));
    int *li = malloc((size_t)P * sizeof(int));
    for (int t = 1; t < 3; t++) {
        pl->perm[t] = malloc((size_t)P * sizeof(int));
        pl->inv[t] = malloc((size_t)P * sizeof(int));
    }
    int rc = MPI_SUCCESS;
    if (!pl->node || !key || !cnt || !li || !pl->perm[1] || !pl->perm[2] || !pl->inv[1] ||
        !pl->inv[2])
        rc = ct_set_error(MPI_ERR_NO_MEM, "out of memory (placement of %d ranks)", P);
    int mine = -1;
    if (rc == MPI_SUCCESS) {
        int wr, W;
        MPI_Comm_rank(MPI_COMM_WORLD, &wr);
        MPI_Comm_size(MPI_COMM_WORLD, &W);
        rc = virtual_node(wr, W, &mine);
    }
    if (rc == MPI_SUCCESS && mine < 0) {
        /* a real node: identified by the lowest rank of dup that shares memory */
        MPI_Comm nc;
        rc = MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &nc);
        if (rc == MPI_SUCCESS) {
            rc = PMPI_Allreduce(&rank, &mine, 1, MPI_INT, MPI_MIN, nc);
            MPI_Comm_free(&nc);
        }
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Allgather(&mine, 1, MPI_INT, key, 1, MPI_INT, dup);
    if (rc != MPI_SUCCESS) {
        free(key); free(cnt); free(li);
        return place_fail(pl, rc);
    }
    /* nodes numbered by first appearance in rank order */
    int M = 0;
    for (int r = 0; r < P; r++) {
        int n = -1;
        for (int q = 0; q < r && n < 0; q++)
            if (key[q] == key[r]) n = pl->node[q];
        pl->node[r] = n >= 0 ? n : M++;
        li[r] = cnt[pl->node[r]]++;
    }
    int Q = 0, regular = 1, seq = 1, rr = 1;
    for (int n = 0; n < M; n++) {
        if (cnt[n] > Q) Q = cnt[n];
        if (cnt[n] != cnt[0]) regular = 0;
    }
    for (int r = 0; r < P; r++) {
        if (r > 0 && pl->node[r] < pl->node[r - 1]) seq = 0;
        if (pl->node[r] != r % M) rr = 0;
    }
    /* seq order: by (node, index in node); rr order: by (index in node, node) */
    int *start = malloc((size_t)(M + 1) * sizeof(int));
    if (!start) {
        free(key); free(cnt); free(li);
        return place_fail(pl, ct_set_error(MPI_ERR_NO_MEM, "out of memory"));
    }
    start[0] = 0;
    for (int n = 0; n < M; n++) start[n + 1] = start[n] + cnt[n];
    for (int r = 0; r < P; r++) pl->perm[CT_REMAP_SEQ][start[pl->node[r]] + li[r]] = r;
    int j = 0;
    for (int i = 0; i < Q; i++)
        for (int n = 0; n < M; n++)
            if (i < cnt[n]) pl->perm[CT_REMAP_RR][j++] = pl->perm[CT_REMAP_SEQ][start[n] + i];
    for (int t = 1; t < 3; t++) {
        pl->ident[t] = 1;
        for (int k = 0; k < P; k++) {
            pl->inv[t][pl->perm[t][k]] = k;
            if (pl->perm[t][k] != k) pl->ident[t] = 0;
        }
    }
    free(start); free(key); free(cnt); free(li);
    pl->pub.size = P;
    pl->pub.nodes = M;
    pl->pub.max_per_node = Q;
    pl->pub.regular = regular;
    pl->pub.kind = (seq ? CT_PLACE_SEQ : 0) | (rr ? CT_PLACE_RR : 0);
    pl->pub.node = pl->node;
    *out = pl;
    return MPI_SUCCESS;
}

/* The communicator in `target` order (collective the first time per target). */
int ct_place_comm(ct_place_t *pl, MPI_Comm dup, int rank, int target, MPI_Comm *out) {
    if (pl->rcomm[target] == MPI_COMM_NULL)
        CT_CHECK(MPI_Comm_split(dup, 0, pl->inv[target][rank], &pl->rcomm[target]));
    *out = pl->rcomm[target];
    return MPI_SUCCESS;
}

/* Allgather on the permuted communicator: the algorithm gathers new-rank order
 * into a scratch buffer, one local pass puts block j at the caller's rank
 * perm[j]. Costs: P*rcount elements of scratch (kept with the communicator for
 * the next call, so repeated calls allocate and fault in nothing) and one local
 * copy of them. */
int ct_remap_allgather(ct_allgather_fn fn, const ct_params_t *prm, const void *sbuf, int scount,
                       MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                       ct_place_t *pl, int rank, int p, MPI_Comm pcomm, const int *perm) {
    ct_type_t t;
    CT_CHECK(ct_type(rdt, &t));
    MPI_Aint n = (MPI_Aint)p * rcount;
    size_t bytes = (size_t)((n - 1) * t.extent + t.true_extent);
    void *scratch = ct_place_scratch(pl, bytes);
    if (!scratch)
        return ct_set_error(MPI_ERR_NO_MEM, "allgather: out of memory (remap scratch, "
                            "%zu bytes)", bytes);
    char *tmp = (char *)scratch - t.true_lb;
    if (sbuf == MPI_IN_PLACE) { /* this rank's block, where the caller put it */
        sbuf = ct_elem(rbuf, (MPI_Aint)rank * rcount, &t);
        scount = rcount;
        sdt = rdt;
    }
    int rc = fn(sbuf, scount, sdt, tmp, rcount, rdt, pcomm, prm);
    for (int j = 0; j < p && rc == MPI_SUCCESS; j++)
        rc = ct_copy(ct_elem(tmp, (MPI_Aint)j * rcount, &t),
                     ct_elem(rbuf, (MPI_Aint)perm[j] * rcount, &t), rcount, rdt);
    return rc;
}
