/*
 * dispatch_v.c -- the entry points of Gatherv and Scatterv: argument checks, then the
 * algorithm dispatch.c resolves (declared fallbacks, the dispatch record) on the
 * communicator it gives (ct_call_begin, ct_call_comm).
 */
#include "ct_internal.h"

/* Gatherv and Scatterv: the root checks the counts it alone knows; every rank its own
 * block's arguments. No early return: a rank cannot tell that the others' blocks are
 * empty too (the algorithms skip empty blocks, by their bytes). */
static int v_root_check(ct_coll_t coll, int root, int p, int r, const int *counts,
                        const int *displs, const char *what) {
    if (root < 0 || root >= p)
        return ct_set_error(MPI_ERR_ROOT, "%s: root %d is not a rank of a %d-process "
                            "communicator", ct_coll_name(coll), root, p);
    if (r != root) return MPI_SUCCESS;
    if (!counts || !displs)
        return ct_set_error(MPI_ERR_ARG, "%s: %s or displs is NULL at the root",
                            ct_coll_name(coll), what);
    for (int j = 0; j < p; j++)
        if (counts[j] < 0)
            return ct_set_error(MPI_ERR_COUNT, "%s: %s[%d] = %d is negative",
                                ct_coll_name(coll), what, j, counts[j]);
    return MPI_SUCCESS;
}

int ct_gatherv(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
               void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rdt, int root,
               MPI_Comm comm) {
    ct_call_t k;
    CT_CHECK(ct_call_begin(CT_GATHERV, c, comm, &k));
    const int r = k.rank;
    CT_CHECK(v_root_check(CT_GATHERV, root, k.size, r, rcounts, displs, "recvcounts"));
    if (sbuf == MPI_IN_PLACE && r != root)
        return ct_set_error(MPI_ERR_BUFFER, "gatherv: MPI_IN_PLACE is only valid at the root");
    if (sbuf != MPI_IN_PLACE && scount < 0)
        return ct_set_error(MPI_ERR_COUNT, "gatherv: sendcount %d is negative", scount);
    MPI_Comm pc;
    CT_CHECK(ct_call_comm(&k, CT_GATHERV, comm, &pc));
    return k.ra->fn.gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, pc,
                            &k.run->params);
}

int ct_scatterv(const ct_choice_t *c, const void *sbuf, const int *scounts,
                const int *displs, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt,
                int root, MPI_Comm comm) {
    ct_call_t k;
    CT_CHECK(ct_call_begin(CT_SCATTERV, c, comm, &k));
    const int r = k.rank;
    CT_CHECK(v_root_check(CT_SCATTERV, root, k.size, r, scounts, displs, "sendcounts"));
    if (rbuf == MPI_IN_PLACE && r != root)
        return ct_set_error(MPI_ERR_BUFFER, "scatterv: MPI_IN_PLACE is only valid at the root");
    if (rbuf != MPI_IN_PLACE && rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "scatterv: recvcount %d is negative", rcount);
    MPI_Comm pc;
    CT_CHECK(ct_call_comm(&k, CT_SCATTERV, comm, &pc));
    return k.ra->fn.scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, pc,
                             &k.run->params);
}
