/*
 * verify_empty.c -- colltune-verify's family "empty": empty type signatures written
 * both ways, a count of 0 and a count of a zero-size datatype, for every collective.
 *
 * MPI matches type signatures, not counts: 0 MPI_INT on one side may meet 3
 * elements of MPI_Type_contiguous(0, MPI_INT), or 2 of an empty struct whose extent
 * is 8 bytes, on the other. An algorithm that skips a message on its count on one
 * side and on its bytes (or not at all) on the other waits for a message that never
 * comes. Two kinds of cases:
 *  - wholly empty: every rank's signature is empty, written by each rank in its
 *    own way (send and receive sides differ too; reductions, which need the same
 *    count and datatype everywhere, one way on all ranks); nothing may be written
 *    and nothing may hang. There is nothing to compare with: MPI libraries' own
 *    collectives hang on some of these (Open MPI 5.0's MPI_Bcast, for one).
 *  - partly empty (Alltoallv, Allgatherv, Gatherv, Scatterv): some blocks empty by
 *    a zero-size datatype on one side and by a count of 0 on the other, the rest
 *    carrying data; compared with the library's own collective on the same call
 *    with the empty blocks written as 0 MPI_INT on both sides (the same bytes).
 */
#include "verify_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the ways of writing an empty signature: count x datatype */
enum { E_ZERO, E_CONTIG, E_STRUCT, NEMPTY };
static const char *e_names[NEMPTY] = { "0 int", "3 contiguous(0,int)", "2 empty struct" };
static MPI_Datatype e_dt[NEMPTY];
static MPI_Op e_op; /* a commutative user op for the empty datatypes (never has elements) */
static int e_count(int e) { return e == E_ZERO ? 0 : e == E_CONTIG ? 3 : 2; }
static MPI_Op e_opof(int e) { return e == E_ZERO ? MPI_SUM : e_op; }

static void noop(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)in;
    (void)inout;
    (void)dt;
    if (*len > 0) {
        fprintf(stderr, "verify: the empty family's op was called with %d elements\n", *len);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

void vc_empty_setup(void) {
    e_dt[E_ZERO] = MPI_INT;
    MPI_Type_contiguous(0, MPI_INT, &e_dt[E_CONTIG]);
    MPI_Type_commit(&e_dt[E_CONTIG]);
    {   /* one block of 0 ints, extent 8 */
        int bl = 0;
        MPI_Aint disp = 0;
        MPI_Datatype t = MPI_INT, s;
        MPI_Type_create_struct(1, &bl, &disp, &t, &s);
        MPI_Type_create_resized(s, 0, 8, &e_dt[E_STRUCT]);
        MPI_Type_commit(&e_dt[E_STRUCT]);
        MPI_Type_free(&s);
    }
    MPI_Op_create(noop, 1, &e_op);
}

void vc_empty_teardown(void) {
    MPI_Type_free(&e_dt[E_CONTIG]);
    MPI_Type_free(&e_dt[E_STRUCT]);
    MPI_Op_free(&e_op);
}

/* ---- wholly empty ------------------------------------------------------------ */

/* Every buffer: a region of sentinel bytes (nothing may be written) large enough
 * for p blocks of any of the ways (the struct's extent is 8). */
#define E_REGION(p) ((size_t)(p) * 32 + 64)

/* The way rank `who` writes its side `role` (0 send, 1 receive) in assignment a. */
static int e_way(int a, int who, int role) { return (a + who + 2 * role) % NEMPTY; }

static void run_empty_all(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int p = nprocs, red = has_reduction(c->coll);
    const int es = red ? a : e_way(a, rank, 0), er = red ? a : e_way(a, rank, 1);
    const int sc = e_count(es), rc = e_count(er);
    const MPI_Datatype sd = e_dt[es], rd = e_dt[er];
    const size_t R = E_REGION(p);
    char *s = alloc_region(R), *r = alloc_region(R), *ref = alloc_region(R);
    int *ar = malloc((size_t)(4 * p) * sizeof *ar);
    int *scnt = ar, *sdsp = ar + p, *rcnt = ar + 2 * p, *rdsp = ar + 3 * p;
    for (int j = 0; j < p; j++) {
        scnt[j] = sc;
        sdsp[j] = j * sc;
        rcnt[j] = rc;
        rdsp[j] = j * rc;
    }
    if (red) snprintf(c->tdesc, sizeof c->tdesc, "empty: %s everywhere", e_names[es]);
    else snprintf(c->tdesc, sizeof c->tdesc, "empty %d: %s / %s / %s by rank", a,
                  e_names[e_way(a, 0, 0)], e_names[e_way(a, 1, 0)], e_names[e_way(a, 2, 0)]);
    const ct_choice_t *ch = &c->choice;
    MPI_Comm w = MPI_COMM_WORLD;
    int rc_ = MPI_SUCCESS;
    switch (c->coll) {
    case CT_BCAST: rc_ = ct_bcast(ch, r, rc, rd, c->root, w); break;
    case CT_REDUCE: rc_ = ct_reduce(ch, s, r, sc, sd, e_opof(es), c->root, w); break;
    case CT_ALLREDUCE: rc_ = ct_allreduce(ch, s, r, sc, sd, e_opof(es), w); break;
    case CT_GATHER: rc_ = ct_gather(ch, s, sc, sd, r, rc, rd, c->root, w); break;
    case CT_ALLGATHER: rc_ = ct_allgather(ch, s, sc, sd, r, rc, rd, w); break;
    case CT_ALLTOALL: rc_ = ct_alltoall(ch, s, sc, sd, r, rc, rd, w); break;
    case CT_ALLTOALLV: rc_ = ct_alltoallv(ch, s, scnt, sdsp, sd, r, rcnt, rdsp, rd, w); break;
    case CT_SCATTER: rc_ = ct_scatter(ch, s, sc, sd, r, rc, rd, c->root, w); break;
    case CT_REDUCE_SCATTER_BLOCK:
        rc_ = ct_reduce_scatter_block(ch, s, r, sc, sd, e_opof(es), w);
        break;
    case CT_REDUCE_SCATTER: rc_ = ct_reduce_scatter(ch, s, r, scnt, sd, e_opof(es), w); break;
    case CT_ALLGATHERV: rc_ = ct_allgatherv(ch, s, sc, sd, r, rcnt, rdsp, rd, w); break;
    case CT_GATHERV: rc_ = ct_gatherv(ch, s, sc, sd, r, rcnt, rdsp, rd, c->root, w); break;
    case CT_SCATTERV: rc_ = ct_scatterv(ch, s, scnt, sdsp, sd, r, rc, rd, c->root, w); break;
    default: break;
    }
    check_rc(&v, rc_);
    compare_bytes(&v, "an empty call wrote into the receive buffer", r, ref, R);
    compare_bytes(&v, "an empty call wrote into the send buffer", s, ref, R);
    report(c, &v);
    c->tdesc[0] = '\0';
    free(ar);
    free(s);
    free(r);
    free(ref);
}

/* ---- partly empty -------------------------------------------------------------- */

/* ints from src to dst: uneven, some zero */
static int p_count(int src, int dst) { return (5 + src + 2 * dst) % 7; }

/* cnt[j] ints per block, one int apart, last block first; returns the ints spanned */
static long p_layout(int p, const int *cnt, int *dsp) {
    long at = 1;
    for (int j = p - 1; j >= 0; j--) {
        dsp[j] = (int)at;
        at += cnt[j] + 1;
    }
    return at;
}

/* One partly empty case. Ranks E (receives, or at a root is sent, only empty blocks
 * by a zero-size datatype) and S (sends only empty blocks by a zero-size datatype)
 * against peers that write those blocks as 0 MPI_INT; the library's call is the
 * same with every empty block as 0 MPI_INT on both sides. */
static void run_empty_part(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int p = nprocs, kind = a % 2 ? E_STRUCT : E_CONTIG;
    const int E = (c->root + 1 + a) % p, S = (c->root + 2 + a) % p;
    const int is_root = rank == c->root;
    int *ar = malloc((size_t)(4 * p) * sizeof *ar);
    int *scnt = ar, *sdsp = ar + p, *rcnt = ar + 2 * p, *rdsp = ar + 3 * p;
    const size_t R = E_REGION(p) + (size_t)p * 8 * 4;
    char *s = alloc_region(R), *s_ref = alloc_region(R), *ro = alloc_region(R),
         *rn = alloc_region(R);
    uint32_t salt = ++salt_counter;
    /* what the library is given: ints everywhere, empty blocks as 0 ints */
    int sc = 0, rc = 0;
    MPI_Datatype sd = MPI_INT, rd = MPI_INT;
    /* what colltune is given: the same, with the zero-size datatypes where they go */
    int osc = 0, orc = 0;
    MPI_Datatype osd = MPI_INT, ord = MPI_INT;
    int *oscnt = NULL, *orcnt = NULL;
    int ones[1024]; /* every block: one element of the zero-size type */
    for (int j = 0; j < p && j < 1024; j++) ones[j] = e_count(kind);
    const ct_choice_t *ch = &c->choice;
    MPI_Comm w = MPI_COMM_WORLD;
    int ret = MPI_SUCCESS;
    snprintf(c->tdesc, sizeof c->tdesc, "partly empty: %s against 0 int", e_names[kind]);
    switch (c->coll) {
    case CT_ALLTOALLV:
        for (int j = 0; j < p; j++) {
            scnt[j] = rank == S || j == E ? 0 : p_count(rank, j);
            rcnt[j] = rank == E || j == S ? 0 : p_count(j, rank);
        }
        p_layout(p, scnt, sdsp);
        p_layout(p, rcnt, rdsp);
        fill(s, T_INT, (long)(R / 4), O_SUM, rank, salt);
        oscnt = rank == S ? ones : scnt;
        orcnt = rank == E ? ones : rcnt;
        if (rank == S) osd = e_dt[kind];
        if (rank == E) ord = e_dt[kind];
        memcpy(s_ref, s, R);
        MPI_Alltoallv(s, scnt, sdsp, sd, rn, rcnt, rdsp, rd, w);
        ret = ct_alltoallv(ch, s, oscnt, sdsp, osd, ro, orcnt, rdsp, ord, w);
        break;
    case CT_ALLGATHERV: /* rank E's block: empty by its datatype there, 0 ints elsewhere */
    case CT_GATHERV:    /* and rank S's: 0 ints there and at the root */
        for (int j = 0; j < p; j++) rcnt[j] = j == E || j == S ? 0 : p_count(j, 0);
        p_layout(p, rcnt, rdsp);
        sc = rcnt[rank];
        fill(s, T_INT, sc, O_SUM, rank, salt);
        osc = rank == E ? e_count(kind) : sc;
        if (rank == E) osd = e_dt[kind];
        memcpy(s_ref, s, R);
        if (c->coll == CT_ALLGATHERV) {
            MPI_Allgatherv(s, sc, sd, rn, rcnt, rdsp, rd, w);
            ret = ct_allgatherv(ch, s, osc, osd, ro, rcnt, rdsp, rd, w);
        } else {
            MPI_Gatherv(s, sc, sd, rn, rcnt, rdsp, rd, c->root, w);
            ret = ct_gatherv(ch, s, osc, osd, ro, rcnt, rdsp, rd, c->root, w);
        }
        break;
    case CT_SCATTERV: /* rank E receives its empty block by its datatype */
        for (int j = 0; j < p; j++) scnt[j] = j == E || j == S ? 0 : p_count(0, j);
        p_layout(p, scnt, sdsp);
        if (is_root) fill(s, T_INT, (long)(R / 4), O_SUM, rank, salt);
        rc = scnt[rank];
        orc = rank == E ? e_count(kind) : rc;
        if (rank == E) ord = e_dt[kind];
        memcpy(s_ref, s, R);
        MPI_Scatterv(s, scnt, sdsp, sd, rn, rc, rd, c->root, w);
        ret = ct_scatterv(ch, s, scnt, sdsp, sd, ro, orc, ord, c->root, w);
        break;
    default: break;
    }
    check_rc(&v, ret);
    compare_bytes(&v, "result", ro, rn, R);
    compare_bytes(&v, "send buffer was modified", s, s_ref, R);
    report(c, &v);
    c->tdesc[0] = '\0';
    free(ar);
    free(s);
    free(s_ref);
    free(ro);
    free(rn);
}

/* The family for one choice at one root: wholly empty in every assignment of the
 * ways to ranks, partly empty where the collective has per-block counts. */
void run_empty(vcase_t *c) {
    if (c->coll == CT_BARRIER) return;
    for (int a = 0; a < NEMPTY; a++) run_empty_all(c, a);
    if (nprocs > 1024) return;
    if (c->coll == CT_ALLTOALLV || c->coll == CT_ALLGATHERV || c->coll == CT_GATHERV ||
        c->coll == CT_SCATTERV)
        for (int a = 0; a < 2; a++) run_empty_part(c, a);
}
