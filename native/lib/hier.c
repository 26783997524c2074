/*
 * hier.c -- node-aware (hierarchical) algorithms: node groups found once per
 * communicator and cached with it, and the `hier` algorithm of Bcast, Reduce,
 * Allreduce, Barrier, Allgather, Allgatherv and Alltoall (registry.c).
 *
 * Groups. The ranks of the private communicator are cut into groups of
 * consecutive ranks: virtual nodes of `vppn` ranks (parameter vppn > 0; the last
 * one smaller when vppn does not divide p), or the communicator's nodes
 * (vppn = 0: ct_place_build, i.e. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or
 * the virtual nodes of COLLTUNE_NODES / COLLTUNE_VIRTUAL_PPN; under SimGrid's SMPI
 * the simulated hosts), each maximal run of consecutive ranks on one node being
 * a group. Groups of consecutive ranks, in rank order, are what keeps a
 * non-commutative reduction right (intra-group reduction in rank order, then
 * inter-group reduction in group order) and every group's blocks of a gathered
 * result contiguous. A placement whose nodes are not runs of consecutive ranks
 * (round-robin) therefore gives smaller groups: still correct, less hierarchy.
 * The groups of a communicator and vppn are built once (one Allgather of an int
 * inside ct_place_build, two MPI_Comm_split) and kept in an attribute of the
 * communicator whose delete callback frees them with it.
 *
 * Each group has a leader, its first rank (local rank 0). Phases: inside the
 * group on its own communicator (`intra`, an algorithm of the registry), between
 * leaders on the leaders' communicator (`inter`). One group (one node) runs only
 * the intra phase, groups of one rank (one process per node) only the inter phase:
 * the degenerate cases need no fallback. The inner algorithms run with their
 * default parameters or their own (`inter=ALG:key=value+...`, ct_inner_value) and
 * their declared fallbacks (dispatch.c, ct_run_*); an inner algorithm cannot itself
 * be hierarchical (choice.c refuses it).
 */
#include "ct_internal.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>

enum { TAG_HIER = 1100 };

ct_coll_t ct_hier_inner_coll(ct_coll_t outer, ct_param_id_t id) {
    switch (id) {
    case CT_P_BCAST: return CT_BCAST;
    case CT_P_REDUCE: return CT_REDUCE;
    case CT_P_GATHER: return CT_GATHER;
    case CT_P_INTER:
        return outer == CT_ALLGATHER ? CT_ALLGATHERV : outer == CT_ALLTOALL ? CT_ALLTOALLV : outer;
    case CT_P_INTRA:
        return outer == CT_ALLREDUCE ? CT_REDUCE : outer == CT_ALLGATHER ? CT_GATHER : outer;
    default: return CT_NCOLL;
    }
}

/* ---- the groups of a communicator, cached ------------------------------------- */
typedef struct hier {
    int vppn;          /* the key: 0 = the communicator's nodes                */
    int P, rank;
    int G, g;          /* groups, this rank's                                  */
    int *start;        /* G + 1: first rank of each group, P last              */
    int local, lsize;  /* this rank in its group, the group's size             */
    MPI_Comm node;     /* this rank's group                                    */
    MPI_Comm leaders;  /* the leaders in group order; MPI_COMM_NULL elsewhere  */
    struct slices *sl; /* the multi-leader slicings built on it (hier_ml)       */
    struct hier *next;
} hier_t;

/* A multi-leader slicing (hier_ml): the vector cut into K slices, slice j owned in
 * group g by its local rank j % lsize(g) (every group owns every slice; a group
 * smaller than K gives some of its ranks several); comm[j]: the owners of slice j,
 * one per group in group order (rank g), MPI_COMM_NULL where this rank does not
 * own j. */
typedef struct slices {
    int leaders; /* the key: the parameter (0 = the largest group's size) */
    int K;
    MPI_Comm *comm;
    struct slices *next;
} slices_t;

static _Atomic int hier_key = MPI_KEYVAL_INVALID;

static void hier_free_one(hier_t *h, int finalized) {
    for (slices_t *sl = h->sl, *n; sl; sl = n) {
        n = sl->next;
        for (int j = 0; j < sl->K && sl->comm; j++)
            if (!finalized && sl->comm[j] != MPI_COMM_NULL) MPI_Comm_free(&sl->comm[j]);
        free(sl->comm);
        free(sl);
    }
    if (!finalized) {
        if (h->node != MPI_COMM_NULL) MPI_Comm_free(&h->node);
        if (h->leaders != MPI_COMM_NULL) MPI_Comm_free(&h->leaders);
    }
    free(h->start);
    free(h);
}

/* the attribute's value: the list of the communicator's groupings (one per vppn) */
typedef struct {
    hier_t *head;
} hier_list_t;

static int hier_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm; (void)key; (void)extra;
    hier_list_t *l = val;
    int finalized = 0;
    MPI_Finalized(&finalized);
    for (hier_t *h = l->head, *n; h; h = n) {
        n = h->next;
        hier_free_one(h, finalized);
    }
    free(l);
    return MPI_SUCCESS;
}

static int hier_keyval(int *out) {
    int key = atomic_load_explicit(&hier_key, memory_order_acquire);
    if (key == MPI_KEYVAL_INVALID) { /* the first use in the process, maybe in two threads */
        int mine, none = MPI_KEYVAL_INVALID;
        CT_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, hier_delete, &mine, NULL));
        if (atomic_compare_exchange_strong(&hier_key, &none, mine)) {
            key = mine;
        } else {
            MPI_Comm_free_keyval(&mine);
            key = none;
        }
    }
    *out = key;
    return MPI_SUCCESS;
}

/* The group starts: consecutive runs of `node` (P entries) or blocks of vppn. */
static int group_starts(const int *node, int P, int vppn, int **out, int *G) {
    int *s = malloc((size_t)(P + 1) * sizeof *s), n = 0;
    if (!s) return ct_set_error(MPI_ERR_NO_MEM, "hier: out of memory (groups of %d ranks)", P);
    for (int r = 0; r < P; r++)
        if (r == 0 || (vppn > 0 ? r % vppn == 0 : node[r] != node[r - 1])) s[n++] = r;
    s[n] = P;
    *out = s;
    *G = n;
    return MPI_SUCCESS;
}

static int hier_build(MPI_Comm comm, int vppn, hier_t **out) {
    hier_t *h = calloc(1, sizeof *h);
    if (!h) return ct_set_error(MPI_ERR_NO_MEM, "hier: out of memory");
    h->vppn = vppn;
    h->node = h->leaders = MPI_COMM_NULL;
    int rc = ct_comm_geom(comm, &h->P, &h->rank);
    if (rc == MPI_SUCCESS && vppn > 0) {
        rc = group_starts(NULL, h->P, vppn, &h->start, &h->G);
    } else if (rc == MPI_SUCCESS) {
        ct_place_t *pl = NULL;
        rc = ct_place_build(comm, h->rank, h->P, &pl);
        if (rc == MPI_SUCCESS) rc = group_starts(pl->node, h->P, 0, &h->start, &h->G);
        ct_place_free(pl, 0);
    }
    if (rc == MPI_SUCCESS) {
        int g = 0;
        while (h->start[g + 1] <= h->rank) g++;
        h->g = g;
        h->local = h->rank - h->start[g];
        h->lsize = h->start[g + 1] - h->start[g];
        rc = MPI_Comm_split(comm, g, h->local, &h->node);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split(comm, h->local == 0 ? 0 : MPI_UNDEFINED, h->g, &h->leaders);
    if (rc != MPI_SUCCESS) {
        hier_free_one(h, 0);
        return rc;
    }
    *out = h;
    return MPI_SUCCESS;
}

/* The groups of comm for vppn: built on first use (collective), then cached. */
static int hier_get(MPI_Comm comm, int vppn, hier_t **out) {
    int key, found = 0;
    hier_list_t *l = NULL;
    CT_CHECK(hier_keyval(&key));
    CT_CHECK(MPI_Comm_get_attr(comm, key, &l, &found));
    if (found)
        for (hier_t *h = l->head; h; h = h->next)
            if (h->vppn == vppn) {
                *out = h;
                return MPI_SUCCESS;
            }
    if (!found) {
        if (!(l = calloc(1, sizeof *l))) return ct_set_error(MPI_ERR_NO_MEM, "out of memory");
        int rc = MPI_Comm_set_attr(comm, key, l);
        if (rc != MPI_SUCCESS) {
            free(l);
            return rc;
        }
    }
    hier_t *h = NULL;
    CT_CHECK(hier_build(comm, vppn, &h));
    h->next = l->head;
    l->head = h;
    *out = h;
    return MPI_SUCCESS;
}

int ct_comm_hier_groups(MPI_Comm comm, int vppn, int *groups, const int **starts) {
    int inter = 0;
    if (comm == MPI_COMM_NULL)
        return ct_set_error(MPI_ERR_COMM, "hier: the communicator is MPI_COMM_NULL");
    CT_CHECK(MPI_Comm_test_inter(comm, &inter));
    if (inter) return ct_set_error(MPI_ERR_COMM, "hier: intercommunicators have no nodes");
    if (vppn < 0) return ct_set_error(MPI_ERR_ARG, "hier: vppn %d is negative", vppn);
    hier_t *h = NULL;
    CT_CHECK(hier_get(comm, vppn, &h));
    *groups = h->G;
    *starts = h->start;
    return MPI_SUCCESS;
}

/* The groups an algorithm call runs on. */
static int groups_of(MPI_Comm comm, const ct_params_t *prm, hier_t **h) {
    return hier_get(comm, (int)prm->v[CT_P_VPPN], h);
}

/* ---- inner algorithms of the phases (default parameters, declared fallbacks) ---- */
int ct_run_allreduce(int algo, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                     MPI_Op op, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_ALLREDUCE, comm, count, op, &run));
    if (count == 0) return MPI_SUCCESS;
    return ct_algo_get(run.algo)->fn.allreduce(sbuf, rbuf, count, dt, op, comm, &run.params);
}

int ct_run_barrier(int algo, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_BARRIER, comm, 0, MPI_OP_NULL, &run));
    return ct_algo_get(run.algo)->fn.barrier(comm, &run.params);
}

int ct_run_allgatherv(int algo, const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                      const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_ALLGATHERV, comm, 0, MPI_OP_NULL, &run));
    return ct_algo_get(run.algo)->fn.allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                                                comm, &run.params);
}

int ct_run_alltoallv(int algo, const void *sbuf, const int *scounts, const int *sdispls,
                     MPI_Datatype sdt, void *rbuf, const int *rcounts, const int *rdispls,
                     MPI_Datatype rdt, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_ALLTOALLV, comm, 0, MPI_OP_NULL, &run));
    return ct_algo_get(run.algo)->fn.alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts,
                                               rdispls, rdt, comm, &run.params);
}

/* ---- the byte stream of a block ----------------------------------------------- */
/* count elements of dt at buf -> count*size bytes at out (one copy when dense) */
static int pack(const void *buf, int count, MPI_Datatype dt, char *out, MPI_Comm comm) {
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    if (ct_type_dense(dt, &t)) {
        memcpy(out, (const char *)buf + t.true_lb, (size_t)count * (size_t)t.size);
        return MPI_SUCCESS;
    }
    return ct_pack_stream(buf, count, dt, &t, out, comm);
}
static int unpack(const char *in, void *buf, int count, MPI_Datatype dt, MPI_Comm comm) {
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    if (ct_type_dense(dt, &t)) {
        memcpy((char *)buf + t.true_lb, in, (size_t)count * (size_t)t.size);
        return MPI_SUCCESS;
    }
    return ct_unpack_stream(in, buf, count, dt, &t, comm);
}

static int too_large(const char *coll, long long bytes) {
    return ct_set_error(MPI_ERR_COUNT, "%s/hier: %lld bytes in one message of a node; the "
                        "hierarchical algorithm takes at most %d (use a flat algorithm)",
                        coll, bytes, INT_MAX);
}

/* ---- Bcast ---------------------------------------------------------------------
 * The root hands the message to its group's leader (one message inside the node)
 * when it is not the leader; the leaders broadcast (inter); every group
 * broadcasts from its leader, the root's group from the root (intra). With
 * segsize > 0 the two phases are pipelined: the message (its type signature's
 * bytes, packed where a rank's datatype is not dense) goes in segments, each
 * through both phases, so that a node's intra phase of segment i runs while the
 * leaders pass segment i+1 on. */
static int bcast_phases(void *buf, int count, MPI_Datatype dt, int root, const hier_t *h,
                        const ct_params_t *prm) {
    int gr = 0;
    while (h->start[gr + 1] <= root) gr++;
    const int lroot = root - h->start[gr]; /* the root's local rank */
    if (h->G > 1) {
        if (lroot != 0 && h->g == gr) {
            if (h->local == lroot) CT_CHECK(ct_send(buf, count, dt, 0, TAG_HIER, h->node));
            else if (h->local == 0)
                CT_CHECK(MPI_Recv(buf, count, dt, lroot, TAG_HIER, h->node, MPI_STATUS_IGNORE));
        }
        if (h->leaders != MPI_COMM_NULL)
            CT_CHECK(ct_run_bcast((int)prm->v[CT_P_INTER], buf, count, dt, gr, h->leaders));
    }
    if (h->lsize > 1)
        CT_CHECK(ct_run_bcast((int)prm->v[CT_P_INTRA], buf, count, dt, h->g == gr ? lroot : 0,
                              h->node));
    return MPI_SUCCESS;
}

int ct_bcast_hier(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                  const ct_params_t *prm) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    const long long bytes = (long long)count * t.size;
    const long seg = CT_SEGSIZE(prm);
    if (seg <= 0 || seg >= bytes) return bcast_phases(buf, count, dt, root, h, prm);
    /* segments of the byte stream: the buffer itself where dense, else packed */
    const int dense = ct_type_dense(dt, &t);
    char *stream = dense ? (char *)buf + t.true_lb : malloc((size_t)bytes);
    if (!stream)
        return ct_set_error(MPI_ERR_NO_MEM, "bcast/hier: out of memory (%lld bytes)", bytes);
    int rc = MPI_SUCCESS;
    if (!dense && h->rank == root) CT_TRY(ct_pack_stream(buf, count, dt, &t, stream, comm));
    for (long long off = 0; off < bytes; off += seg) {
        const int n = (int)(bytes - off < seg ? bytes - off : seg);
        CT_TRY(bcast_phases(stream + off, n, MPI_BYTE, root, h, prm));
    }
    if (!dense && h->rank != root) CT_TRY(ct_unpack_stream(stream, buf, count, dt, &t, comm));
out:
    if (!dense) free(stream);
    return rc;
}

/* ---- Reduce ----------------------------------------------------------------------
 * Each group reduces to its leader in rank order (intra), the leaders reduce to the
 * root's leader in group order (inter), which hands the result to the root when
 * the root is not the leader. One group: the intra phase reduces to the root. */
int ct_reduce_hier(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                   int root, MPI_Comm comm, const ct_params_t *prm) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    const int intra = (int)prm->v[CT_P_INTRA], is_root = h->rank == root;
    const void *in = ct_input_of(sbuf, rbuf);
    if (h->G == 1) /* one node */
        return ct_run_reduce(intra, sbuf, is_root ? rbuf : NULL, count, dt, op, root, h->node);
    int gr = 0;
    while (h->start[gr + 1] <= root) gr++;
    const int lroot = root - h->start[gr];
    if (h->local != 0) { /* a member: its input to the leader */
        CT_CHECK(ct_run_reduce(intra, in, NULL, count, dt, op, 0, h->node));
        if (is_root)
            CT_CHECK(MPI_Recv(rbuf, count, dt, 0, TAG_HIER, h->node, MPI_STATUS_IGNORE));
        return MPI_SUCCESS;
    }
    /* a leader: the group's partial result in acc (rbuf at the root) */
    ct_type_t t;
    void *raw = NULL;
    ct_small_t small;
    char *acc = rbuf;
    int rc = MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    if (!is_root) {
        acc = ct_tmp_alloc_in(count, &t, &raw, &small, sizeof small);
        if (!acc)
            return ct_set_error(MPI_ERR_NO_MEM, "reduce/hier: out of memory (%d elements)",
                                count);
    }
    if (h->lsize > 1) {
        CT_TRY(ct_run_reduce(intra, is_root ? sbuf : in, acc, count, dt, op, 0, h->node));
        in = MPI_IN_PLACE; /* the group's result is in acc */
    }
    /* inter: to the root's leader, in group order */
    if (h->g == gr) {
        CT_TRY(ct_run_reduce((int)prm->v[CT_P_INTER], in == acc ? MPI_IN_PLACE : in, acc, count,
                             dt, op, gr, h->leaders));
        if (lroot != 0) CT_TRY(ct_send(acc, count, dt, lroot, TAG_HIER, h->node));
    } else {
        CT_TRY(ct_run_reduce((int)prm->v[CT_P_INTER], in == MPI_IN_PLACE ? acc : in, NULL, count,
                             dt, op, gr, h->leaders));
    }
out:
    free(raw);
    return rc;
}

/* ---- Allreduce -------------------------------------------------------------------
 * Reduce to each group's leader (intra, a Reduce algorithm), Allreduce among the
 * leaders (inter), Bcast from each leader (bcast). */
int ct_allreduce_hier(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                      MPI_Comm comm, const ct_params_t *prm) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    const int leader = h->local == 0;
    if (h->lsize > 1) {
        if (leader)
            CT_CHECK(ct_run_reduce((int)prm->v[CT_P_INTRA], sbuf, rbuf, count, dt, op, 0,
                                   h->node));
        else
            CT_CHECK(ct_run_reduce((int)prm->v[CT_P_INTRA], ct_input_of(sbuf, rbuf), NULL, count,
                                   dt, op, 0, h->node));
    } else if (sbuf != MPI_IN_PLACE) {
        CT_CHECK(ct_copy(sbuf, rbuf, count, dt));
    }
    if (leader && h->G > 1)
        CT_CHECK(ct_run_allreduce((int)prm->v[CT_P_INTER], MPI_IN_PLACE, rbuf, count, dt, op,
                                  h->leaders));
    if (h->lsize > 1)
        CT_CHECK(ct_run_bcast((int)prm->v[CT_P_BCAST], rbuf, count, dt, 0, h->node));
    return MPI_SUCCESS;
}

/* ---- Barrier ---------------------------------------------------------------------
 * The group's ranks arrive (intra), the leaders synchronise (inter), the leaders
 * release their groups (intra again). */
int ct_barrier_hier(MPI_Comm comm, const ct_params_t *prm) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    const int intra = (int)prm->v[CT_P_INTRA];
    if (h->lsize > 1) CT_CHECK(ct_run_barrier(intra, h->node));
    if (h->leaders != MPI_COMM_NULL && h->G > 1)
        CT_CHECK(ct_run_barrier((int)prm->v[CT_P_INTER], h->leaders));
    if (h->lsize > 1) CT_CHECK(ct_run_barrier(intra, h->node));
    return MPI_SUCCESS;
}

/* ---- Allgather(v) -----------------------------------------------------------------
 * On the byte stream of the result (every block packed, rank order): each rank
 * packs its block, the group's blocks are gathered at the leader (intra: a Gather
 * algorithm for Allgather's equal blocks, linear for Allgatherv), the leaders
 * exchange their groups' runs of blocks (inter: an Allgatherv algorithm), each
 * leader broadcasts the whole stream to its group (bcast), and every rank unpacks
 * the blocks into its receive buffer. Any datatypes whose signatures match. */
static int allgatherv_stream(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                             const int *rcounts, const int *displs, MPI_Datatype rdt,
                             MPI_Comm comm, const ct_params_t *prm, int gather_algo,
                             const char *coll) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    ct_type_t rt;
    CT_CHECK(ct_type(rdt, &rt));
    const int P = h->P, G = h->G, me = h->rank;
    long long *off = malloc((size_t)(P + 1) * sizeof *off);
    int *gc = malloc((size_t)(2 * G) * sizeof *gc);
    MPI_Request *req = malloc((size_t)h->lsize * sizeof *req);
    char *all = NULL;
    int rc = MPI_SUCCESS;
    if (!off || !gc || !req) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "%s/hier: out of memory", coll);
        goto out;
    }
    off[0] = 0;
    for (int r = 0; r < P; r++) off[r + 1] = off[r] + (long long)rcounts[r] * rt.size;
    if (off[P] > INT_MAX) {
        rc = too_large(coll, off[P]);
        goto out;
    }
    all = malloc(off[P] ? (size_t)off[P] : 1);
    if (!all) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "%s/hier: out of memory (%lld bytes)", coll, off[P]);
        goto out;
    }
    if (sbuf == MPI_IN_PLACE)
        CT_TRY(pack(ct_elem(rbuf, displs[me], &rt), rcounts[me], rdt, all + off[me], comm));
    else
        CT_TRY(pack(sbuf, scount, sdt, all + off[me], comm));
    const int s0 = h->start[h->g];
    if (h->lsize > 1) {
        const int mine = (int)(off[me + 1] - off[me]);
        if (gather_algo >= 0) { /* equal blocks: a Gather algorithm */
            CT_TRY(ct_run_gather(gather_algo, h->local ? all + off[me] : MPI_IN_PLACE, mine,
                                 MPI_BYTE, all + off[s0], mine, MPI_BYTE, 0, h->node));
        } else if (h->local) { /* (an empty block: no message, none is expected) */
            if (mine > 0) CT_TRY(ct_send(all + off[me], mine, MPI_BYTE, 0, TAG_HIER, h->node));
        } else {
            int n = 0;
            for (int i = 1; i < h->lsize; i++)
                if (off[s0 + i + 1] > off[s0 + i])
                    CT_TRY(MPI_Irecv(all + off[s0 + i], (int)(off[s0 + i + 1] - off[s0 + i]),
                                     MPI_BYTE, i, TAG_HIER, h->node, &req[n++]));
            CT_TRY(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        }
    }
    if (h->leaders != MPI_COMM_NULL && G > 1) {
        for (int g = 0; g < G; g++) {
            gc[g] = (int)(off[h->start[g + 1]] - off[h->start[g]]);
            gc[G + g] = (int)off[h->start[g]];
        }
        CT_TRY(ct_run_allgatherv((int)prm->v[CT_P_INTER], MPI_IN_PLACE, 0, MPI_BYTE, all, gc,
                                 gc + G, MPI_BYTE, h->leaders));
    }
    if (h->lsize > 1)
        CT_TRY(ct_run_bcast((int)prm->v[CT_P_BCAST], all, (int)off[P], MPI_BYTE, 0, h->node));
    for (int r = 0; r < P; r++)
        if (r != me || sbuf != MPI_IN_PLACE)
            CT_TRY(unpack(all + off[r], ct_elem(rbuf, displs[r], &rt), rcounts[r], rdt, comm));
out:
    free(all);
    free(req);
    free(gc);
    free(off);
    return rc;
}

int ct_allgatherv_hier(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                       const int *rcounts, const int *displs, MPI_Datatype rdt, MPI_Comm comm,
                       const ct_params_t *prm) {
    return allgatherv_stream(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, prm, -1,
                             "allgatherv");
}

int ct_allgather_hier(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                      MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    int P, me;
    CT_CHECK(ct_comm_geom(comm, &P, &me));
    if ((long long)P * rcount > INT_MAX) return too_large("allgather", (long long)P * rcount);
    int *cd = malloc((size_t)(2 * P) * sizeof *cd);
    if (!cd) return ct_set_error(MPI_ERR_NO_MEM, "allgather/hier: out of memory");
    for (int r = 0; r < P; r++) {
        cd[r] = rcount;
        cd[P + r] = r * rcount;
    }
    int rc = allgatherv_stream(sbuf, scount, sdt, rbuf, cd, cd + P, rdt, comm, prm,
                               (int)prm->v[CT_P_INTRA], "allgather");
    free(cd);
    return rc;
}

/* ---- Alltoall --------------------------------------------------------------------
 * Node-aware aggregation: every rank packs its p blocks and sends them to its
 * leader; the leader sends each other group, as one message, the blocks its
 * group's ranks have for that group's ranks (inter: an Alltoallv algorithm among
 * the leaders, one message per pair of nodes); it then sorts what it received
 * into each of its ranks' p blocks in source order and sends each rank its own. */
int ct_alltoall_hier(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                     MPI_Datatype rdt, MPI_Comm comm, const ct_params_t *prm) {
    hier_t *h = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    int rsize;
    CT_CHECK(ct_type_size(rdt, &rsize));
    const int P = h->P, G = h->G, L = h->lsize, leader = h->local == 0;
    const long long blk = (long long)rcount * rsize, row = blk * P; /* bytes */
    if (row * L > INT_MAX) return too_large("alltoall", row * L);
    char *mine = NULL, *gath = NULL, *sendv = NULL, *recvv = NULL;
    int *cnt = NULL;
    MPI_Request *req = NULL;
    int rc = MPI_SUCCESS;
    /* the leader's rows: one per rank of the group (its own first) */
    if (leader) {
        gath = malloc((size_t)(row * L));
        sendv = malloc((size_t)(row * L));
        recvv = malloc((size_t)(row * L));
        cnt = malloc((size_t)(4 * G) * sizeof *cnt);
        req = malloc((size_t)L * sizeof *req);
        mine = gath;
        if (!gath || !sendv || !recvv || !cnt || !req) {
            rc = ct_set_error(MPI_ERR_NO_MEM, "alltoall/hier: out of memory (%lld bytes)",
                              3 * row * L);
            goto out;
        }
    } else if (!(mine = malloc((size_t)row))) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "alltoall/hier: out of memory (%lld bytes)", row);
        goto out;
    }
    CT_TRY(pack(sbuf, (int)((long long)scount * P), sdt, mine, comm));
    if (!leader) {
        CT_TRY(ct_send(mine, (int)row, MPI_BYTE, 0, TAG_HIER, h->node));
        CT_TRY(MPI_Recv(mine, (int)row, MPI_BYTE, 0, TAG_HIER + 1, h->node, MPI_STATUS_IGNORE));
        CT_TRY(unpack(mine, rbuf, (int)((long long)rcount * P), rdt, comm));
        goto out;
    }
    for (int i = 1; i < L; i++)
        CT_TRY(MPI_Irecv(gath + i * row, (int)row, MPI_BYTE, i, TAG_HIER, h->node, &req[i - 1]));
    CT_TRY(MPI_Waitall(L - 1, req, MPI_STATUSES_IGNORE));
    /* to group k: for each rank i of mine, its blocks for k's ranks (contiguous) */
    long long pos = 0;
    for (int k = 0; k < G; k++) {
        const int ks = h->start[k], kn = h->start[k + 1] - ks;
        cnt[k] = (int)(blk * kn * L);
        cnt[G + k] = (int)pos;
        for (int i = 0; i < L; i++, pos += blk * kn)
            memcpy(sendv + pos, gath + i * row + ks * blk, (size_t)(blk * kn));
        cnt[2 * G + k] = (int)(blk * kn * L); /* from k: for each of k's ranks, mine */
        cnt[3 * G + k] = (int)(blk * ks * L);
    }
    if (G > 1) {
        CT_TRY(ct_run_alltoallv((int)prm->v[CT_P_INTER], sendv, cnt, cnt + G, MPI_BYTE, recvv,
                                cnt + 2 * G, cnt + 3 * G, MPI_BYTE, h->leaders));
    } else {
        char *t = recvv;
        recvv = sendv;
        sendv = t;
    }
    /* rank i of mine receives from source rank s = ks + j of group k the block at
     * recvv + 3G-displacement of k + (j*L + i)*blk */
    for (int k = 0; k < G; k++) {
        const int ks = h->start[k], kn = h->start[k + 1] - ks;
        for (int j = 0; j < kn; j++)
            for (int i = 0; i < L; i++)
                memcpy(gath + i * row + (ks + j) * blk,
                       recvv + cnt[3 * G + k] + ((long long)j * L + i) * blk, (size_t)blk);
    }
    for (int i = 1; i < L; i++)
        CT_TRY(ct_isend(gath + i * row, (int)row, MPI_BYTE, i, TAG_HIER + 1, h->node,
                        &req[i - 1]));
    rc = unpack(gath, rbuf, (int)((long long)rcount * P), rdt, comm);
    int rc2 = MPI_Waitall(L - 1, req, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS) rc = rc2;
out:
    if (!leader) free(mine);
    free(gath);
    free(sendv);
    free(recvv);
    free(cnt);
    free(req);
    return rc;
}

/* ---- multi-leader: slices of the vector, every owner an inter-node leader ----------
 * hier_ml (Bcast, Allreduce): the message is cut into K slices (`leaders`; 0: as many
 * as the largest group has ranks); in every group slice j belongs to local rank
 * j % lsize, and the owners of slice j, one per group, run the inter-node phase of
 * that slice among themselves (K concurrent inter-node collectives of n/K bytes
 * instead of one of n). A rank owning several slices runs their inter phases in
 * increasing j, the same order on every rank: no cycle of waits. */
static int owner_of(int j, int lsize) { return j % lsize; }

static int slices_get(MPI_Comm comm, hier_t *h, int leaders, slices_t **out) {
    for (slices_t *sl = h->sl; sl; sl = sl->next)
        if (sl->leaders == leaders) {
            *out = sl;
            return MPI_SUCCESS;
        }
    int qmax = 1;
    for (int g = 0; g < h->G; g++)
        if (h->start[g + 1] - h->start[g] > qmax) qmax = h->start[g + 1] - h->start[g];
    slices_t *sl = calloc(1, sizeof *sl);
    const int K = leaders > 0 && leaders < qmax ? leaders : qmax;
    if (sl) sl->comm = malloc((size_t)K * sizeof *sl->comm);
    if (!sl || !sl->comm) {
        free(sl);
        return ct_set_error(MPI_ERR_NO_MEM, "hier_ml: out of memory (%d slices)", K);
    }
    sl->leaders = leaders;
    sl->K = K;
    for (int j = 0; j < K; j++) sl->comm[j] = MPI_COMM_NULL;
    int rc = MPI_SUCCESS;
    for (int j = 0; j < K && rc == MPI_SUCCESS; j++) /* (one split per slice, collective) */
        rc = MPI_Comm_split(comm, owner_of(j, h->lsize) == h->local ? 0 : MPI_UNDEFINED, h->g,
                            &sl->comm[j]);
    sl->next = h->sl; /* (freed with the groups, also after a failed split) */
    h->sl = sl;
    if (rc != MPI_SUCCESS) return rc;
    *out = sl;
    return MPI_SUCCESS;
}

/* Chunks and slices: the message (count elements or bytes) goes in chunks of `seg`
 * (0: one chunk), each cut into K slices; slice j of chunk c spans [lo, lo + n). */
typedef struct {
    long long total, seg; /* elements (Allreduce) or bytes (Bcast); seg > 0 */
    int K, chunks;
} cut_t;
static cut_t cut_of(long long total, long long seg, int K) {
    cut_t c = { total, seg > 0 && seg < total ? seg : total, K, 1 };
    c.chunks = (int)((total + c.seg - 1) / c.seg);
    return c;
}
static long long cut_slice(const cut_t *c, int chunk, int j, long long *n) {
    const long long base = c->seg * chunk;
    const long long len = c->total - base < c->seg ? c->total - base : c->seg;
    const long long lo = len * j / c->K;
    *n = len * (j + 1) / c->K - lo;
    return base + lo;
}

/* Allreduce hier_ml: per chunk, a reduce-scatter inside each group (every rank sends
 * slice j to its owner; the owner reduces the group's inputs in rank order), an
 * Allreduce of each slice among its owners (inter, in group order), an allgather
 * inside each group (each owner sends its slices to the group's other ranks). With
 * chunks (segsize) the phases overlap: chunk c+1's reduce-scatter and chunk c-1's
 * allgather are in flight while the owners run chunk c's inter phase. */
typedef struct {
    const hier_t *h;
    const slices_t *sl;
    cut_t cut;
    MPI_Datatype dt;
    const ct_type_t *t;
    int nown, L, me;
    long long mx; /* elements of the largest slice */
} ml_t;

/* the receives of my slices of chunk c (into tb) and the sends of the others */
static int ml_rs_post(const ml_t *m, const void *in, char *tb, int c, MPI_Request *req,
                      int *nr) {
    for (int j = 0, jj = 0; j < m->cut.K; j++) {
        long long n;
        const long long lo = cut_slice(&m->cut, c, j, &n);
        const int o = owner_of(j, m->L);
        if (o == m->me) {
            for (int i = 0; i < m->L && n > 0; i++)
                if (i != m->me)
                    CT_CHECK(MPI_Irecv(ct_elem(tb, ((MPI_Aint)jj * m->L + i) * m->mx, m->t),
                                       (int)n, m->dt, i, TAG_HIER + 2, m->h->node,
                                       &req[(*nr)++]));
            jj++;
        } else if (n > 0) {
            CT_CHECK(ct_isend(ct_elem(in, lo, m->t), (int)n, m->dt, o, TAG_HIER + 2, m->h->node,
                              &req[(*nr)++]));
        }
    }
    return MPI_SUCCESS;
}

/* my slices of chunk c to the group's other ranks, the others from their owners;
 * `skip`: a local rank that neither sends nor receives (the Bcast root), or -1 */
static int ml_ag_post(const ml_t *m, char *buf, MPI_Datatype dt, const ct_type_t *t, int c,
                      int skip, int tag, MPI_Request *req, int *nr) {
    for (int j = 0; j < m->cut.K && m->L > 1; j++) {
        long long n;
        const long long lo = cut_slice(&m->cut, c, j, &n);
        const int o = owner_of(j, m->L);
        if (n == 0) continue;
        if (o == m->me) {
            for (int i = 0; i < m->L; i++)
                if (i != m->me && i != skip)
                    CT_CHECK(ct_isend(ct_elem(buf, lo, t), (int)n, dt, i, tag, m->h->node,
                                      &req[(*nr)++]));
        } else if (m->me != skip) {
            CT_CHECK(MPI_Irecv(ct_elem(buf, lo, t), (int)n, dt, o, tag, m->h->node,
                               &req[(*nr)++]));
        }
    }
    return MPI_SUCCESS;
}

static int ml_wait(MPI_Request *req, int *nr) {
    const int n = *nr;
    *nr = 0;
    return MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

int ct_allreduce_hier_ml(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm, const ct_params_t *prm) {
    hier_t *h = NULL;
    slices_t *sl = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    CT_CHECK(slices_get(comm, h, (int)prm->v[CT_P_LEADERS], &sl));
    if (count == 0) return MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    const long seg = CT_SEGSIZE(prm);
    ml_t m = { h, sl, cut_of(count, seg > 0 ? (seg / t.size > 0 ? seg / t.size : 1) : 0, sl->K),
               dt, &t, 0, h->lsize, h->local, 0 };
    m.nown = m.cut.K / m.L + (m.me < m.cut.K % m.L); /* slices me, me + L, ... below K */
    m.mx = (m.cut.seg + m.cut.K - 1) / m.cut.K;
    const int nreq = m.nown * (m.L - 1) + m.cut.K; /* one phase of one chunk, at most */
    const void *in = ct_input_of(sbuf, rbuf);
    const MPI_Aint slot = (MPI_Aint)m.nown * m.L * m.mx; /* elements, one chunk's */
    void *raw = NULL;
    const int bufs = m.cut.chunks > 1 ? 2 : 1; /* (the next chunk's in flight) */
    char *tb = m.nown ? ct_tmp_alloc(bufs * slot, &t, &raw) : NULL;
    MPI_Request *req = malloc((size_t)(4 * nreq + 1) * sizeof *req);
    MPI_Request *rs[2] = { req, req + nreq }, *ag[2] = { req + 2 * nreq, req + 3 * nreq };
    int nrs[2] = { 0, 0 }, nag[2] = { 0, 0 }, rc = MPI_SUCCESS;
    if ((m.nown && !tb) || !req) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "allreduce/hier_ml: out of memory (%lld elements)",
                          bufs * (long long)slot);
        goto out;
    }
    CT_TRY(ml_rs_post(&m, in, tb, 0, rs[0], &nrs[0]));
    for (int c = 0; c < m.cut.chunks; c++) {
        char *tc = tb ? ct_elem(tb, (c & 1) * slot, &t) : NULL;
        CT_TRY(ml_wait(rs[c & 1], &nrs[c & 1]));
        if (c + 1 < m.cut.chunks) /* the next chunk's reduce-scatter, in flight */
            CT_TRY(ml_rs_post(&m, in, tb ? ct_elem(tb, ((c + 1) & 1) * slot, &t) : NULL, c + 1,
                              rs[(c + 1) & 1], &nrs[(c + 1) & 1]));
        /* each of my slices: x_0 op x_1 op ... op x_{L-1} (from the right, rank order),
         * then among the owners of the slice, in group order */
        for (int j = m.me, jj = 0; j < m.cut.K; j += m.L, jj++) {
            long long n;
            const long long lo = cut_slice(&m.cut, c, j, &n);
            if (n == 0) continue;
#define SLOT(i) ct_elem(tc, ((MPI_Aint)jj * m.L + (i)) * m.mx, &t)
            char *acc = SLOT(m.L - 1);
            CT_TRY(ct_copy_t(ct_elem(in, lo, &t), m.me == m.L - 1 ? acc : SLOT(m.me), (int)n,
                             dt, &t));
            for (int i = m.L - 2; i >= 0; i--)
                CT_TRY(MPI_Reduce_local(SLOT(i), acc, (int)n, dt, op));
#undef SLOT
            CT_TRY(ct_copy_t(acc, ct_elem(rbuf, lo, &t), (int)n, dt, &t));
            if (h->G > 1)
                CT_TRY(ct_run_allreduce((int)prm->v[CT_P_INTER], MPI_IN_PLACE,
                                        ct_elem(rbuf, lo, &t), (int)n, dt, op, sl->comm[j]));
        }
        CT_TRY(ml_ag_post(&m, rbuf, dt, &t, c, -1, TAG_HIER + 3, ag[c & 1], &nag[c & 1]));
        if (c > 0) CT_TRY(ml_wait(ag[(c - 1) & 1], &nag[(c - 1) & 1]));
    }
out:
    for (int i = 0; i < 2 && req; i++) { /* (after an error: no request left behind) */
        int r1 = ml_wait(rs[i], &nrs[i]), r2 = ml_wait(ag[i], &nag[i]);
        if (rc == MPI_SUCCESS) rc = r1 != MPI_SUCCESS ? r1 : r2;
    }
    free(req);
    free(raw);
    return rc;
}

/* Bcast hier_ml, on the byte stream of the message (packed where a rank's datatype has
 * holes), per chunk: the root sends slice j to its owner in the root's group
 * (scatter), the owners of slice j broadcast it among the groups (inter, from the
 * root's group), each owner sends its slices to its group's other ranks (allgather;
 * the root receives nothing). With chunks (segsize) the scatter of chunk c+1 and the
 * allgather of chunk c-1 are in flight during chunk c's inter phase. */
int ct_bcast_hier_ml(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                     const ct_params_t *prm) {
    hier_t *h = NULL;
    slices_t *sl = NULL;
    CT_CHECK(groups_of(comm, prm, &h));
    CT_CHECK(slices_get(comm, h, (int)prm->v[CT_P_LEADERS], &sl));
    ct_type_t t, bt;
    CT_CHECK(ct_type(dt, &t));
    CT_CHECK(ct_type(MPI_BYTE, &bt));
    const long long bytes = (long long)count * t.size;
    if (bytes == 0) return MPI_SUCCESS;
    ml_t m = { h, sl, cut_of(bytes, CT_SEGSIZE(prm), sl->K), MPI_BYTE, &bt, 0, h->lsize,
               h->local, 0 };
    const int K = sl->K, L = m.L, me = m.me, is_root = h->rank == root;
    int gr = 0;
    while (h->start[gr + 1] <= root) gr++;
    const int lroot = root - h->start[gr], mygroup = h->g == gr;
    const int dense = ct_type_dense(dt, &t), nreq = K * L + 1;
    char *stream = dense ? (char *)buf + t.true_lb : malloc((size_t)bytes);
    MPI_Request *req = malloc((size_t)(4 * nreq) * sizeof *req);
    MPI_Request *sc[2] = { req, req + nreq }, *ag[2] = { req + 2 * nreq, req + 3 * nreq };
    int nsc[2] = { 0, 0 }, nag[2] = { 0, 0 }, rc = MPI_SUCCESS;
    if (!stream || !req) {
        rc = ct_set_error(MPI_ERR_NO_MEM, "bcast/hier_ml: out of memory (%lld bytes)", bytes);
        goto out;
    }
    if (!dense && is_root) CT_TRY(ct_pack_stream(buf, count, dt, &t, stream, comm));
    for (int c = 0; c <= m.cut.chunks; c++) {
        /* the scatter of chunk c in the root's group (one chunk ahead of the rest) */
        for (int j = 0; j < K && mygroup && c < m.cut.chunks; j++) {
            long long n;
            const long long lo = cut_slice(&m.cut, c, j, &n);
            const int o = owner_of(j, L);
            if (n == 0 || o == lroot) continue;
            if (is_root)
                CT_TRY(ct_isend(stream + lo, (int)n, MPI_BYTE, o, TAG_HIER + 4, h->node,
                                &sc[c & 1][nsc[c & 1]++]));
            else if (o == me)
                CT_TRY(MPI_Irecv(stream + lo, (int)n, MPI_BYTE, lroot, TAG_HIER + 4, h->node,
                                 &sc[c & 1][nsc[c & 1]++]));
        }
        if (c == 0) continue;
        const int d = c - 1; /* chunk d: inter, then its allgather in flight */
        CT_TRY(ml_wait(sc[d & 1], &nsc[d & 1]));
        for (int j = me; j < K && h->G > 1; j += L) {
            long long n;
            const long long lo = cut_slice(&m.cut, d, j, &n);
            if (n > 0)
                CT_TRY(ct_run_bcast((int)prm->v[CT_P_INTER], stream + lo, (int)n, MPI_BYTE, gr,
                                    sl->comm[j]));
        }
        CT_TRY(ml_ag_post(&m, stream, MPI_BYTE, &bt, d, mygroup ? lroot : -1, TAG_HIER + 5,
                          ag[d & 1], &nag[d & 1]));
        if (d > 0) CT_TRY(ml_wait(ag[(d - 1) & 1], &nag[(d - 1) & 1]));
    }
    CT_TRY(ml_wait(ag[(m.cut.chunks - 1) & 1], &nag[(m.cut.chunks - 1) & 1]));
    if (!dense && !is_root) CT_TRY(ct_unpack_stream(stream, buf, count, dt, &t, comm));
out:
    for (int i = 0; i < 2 && req; i++) { /* (after an error: no request left behind) */
        ml_wait(sc[i], &nsc[i]);
        ml_wait(ag[i], &nag[i]);
    }
    if (!dense) free(stream);
    free(req);
    return rc;
}
