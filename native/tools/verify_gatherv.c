/*
 * verify_gatherv.c -- colltune-verify's cases of Gatherv and Scatterv (main, garbage
 * and self through run_case, mixed through run_mixed, inter in run_inter; the inputs,
 * layouts and verdicts are verify_cases.c's, see verify_shared.h).
 *
 * Counts are uneven with zeros; the root's blocks lie in its buffer out of rank
 * order (even ranks first, each half last rank first) with gaps of one or two
 * elements between them, so a block written at the wrong place, or a gap written,
 * shows.
 */
#include "verify_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* block j's count for base count n: uneven, some zero (n > 0) */
static int v_count(int n, int j) { return n == 0 ? 0 : (n + 2 * j + 1) % (n + 3); }

/* the root's layout: cnt[j] elements of block j at dsp[j], blocks out of rank order
 * with gaps; returns the elements spanned */
static long v_layout(int cn, const int *cnt, int *dsp) {
    long at = 1;
    for (int half = 0; half < 2; half++)
        for (int j = cn - 1; j >= 0; j--) {
            if (j % 2 != half) continue;
            dsp[j] = (int)at;
            at += cnt[j] + 1 + j % 2;
        }
    return at;
}

/* what Gatherv and Scatterv set up alike: this rank's place in c->comm, the
 * blocks, the case's salt */
typedef struct {
    int cr, is_root, inplace;
    vblocks_t k;
    size_t ext;
    uint32_t salt;
} vsetup_t;

static vsetup_t v_setup(const vcase_t *c) {
    vsetup_t s;
    int cn;
    MPI_Comm_rank(c->comm, &s.cr);
    MPI_Comm_size(c->comm, &cn);
    s.is_root = s.cr == c->root;
    s.inplace = c->inplace && s.is_root;
    s.k = vblocks_new(cn, c->count, v_count, v_layout);
    s.ext = type_extent(c->t);
    s.salt = ++salt_counter;
    return s;
}

/* Gatherv: block j (v_count elements) from rank j to dsp[j] of the root's buffer.
 * Garbage in what MPI ignores: the receive arguments at the other ranks (NULL
 * buffer and arrays, MPI_DATATYPE_NULL), the send count and type at a
 * root in place. */
static void run_gatherv(const vcase_t *c) {
    verdict_t v = { 0, "" };
    const vsetup_t s = v_setup(c);
    const vblocks_t k = s.k;
    const int cr = s.cr, is_root = s.is_root, inplace = s.inplace, *cnt = k.cnt, *dsp = k.dsp;
    const size_t ext = s.ext;
    vbufs_t b = vbufs_new((size_t)cnt[cr] * ext, (size_t)k.span * ext);
    b.sentinel = alloc_region(b.rbytes);
    fill(b.in, c->t, cnt[cr], O_SUM, rank, s.salt);
    memcpy(b.in_ref, b.in, b.sbytes);
    if (inplace) {
        memcpy(b.rn + (size_t)dsp[cr] * ext, b.in, b.sbytes);
        memcpy(b.ro + (size_t)dsp[cr] * ext, b.in, b.sbytes);
    }
    const void *sn = inplace ? MPI_IN_PLACE : b.in;
    MPI_Datatype dt = types[c->t], sd = dt, rd = dt;
    int sc = cnt[cr];
    const int *gc = cnt, *gd = dsp;
    void *rb = b.ro;
    if (c->garbage && inplace) {
        sc = -1;
        sd = MPI_DATATYPE_NULL;
    }
    if (c->garbage && !is_root) {
        rb = NULL;
        gc = gd = NULL;
        rd = MPI_DATATYPE_NULL;
    }
    MPI_Gatherv(sn, cnt[cr], dt, b.rn, cnt, dsp, dt, c->root, c->comm);
    check_rc(&v, ct_gatherv(&c->choice, sn, sc, sd, rb, gc, gd, rd, c->root, c->comm));
    vbufs_report_rooted(c, &v, &b, is_root, inplace, k.span, cnt[cr]);
    free(k.cnt);
}

/* Scatterv: block j (v_count elements at dsp[j] of the root's buffer) to rank j.
 * Garbage: the send arguments at the other ranks, the receive count and type at a
 * root in place (its block stays where it is). */
static void run_scatterv(const vcase_t *c) {
    verdict_t v = { 0, "" };
    const vsetup_t s = v_setup(c);
    const vblocks_t k = s.k;
    const int cr = s.cr, is_root = s.is_root, inplace = s.inplace, *cnt = k.cnt, *dsp = k.dsp;
    vbufs_t b = vbufs_new((size_t)k.span * s.ext, (size_t)cnt[cr] * s.ext);
    if (is_root) fill(b.in, c->t, k.span, O_SUM, rank, s.salt);
    memcpy(b.in_ref, b.in, b.sbytes);
    MPI_Datatype dt = types[c->t], sd = dt, rd = dt;
    const void *sb = b.in;
    const int *gc = cnt, *gd = dsp;
    int rc = cnt[cr];
    void *rb = inplace ? MPI_IN_PLACE : (void *)b.ro;
    if (c->garbage && !is_root) {
        sb = NULL;
        gc = gd = NULL;
        sd = MPI_DATATYPE_NULL;
    }
    if (c->garbage && inplace) {
        rc = -1;
        rd = MPI_DATATYPE_NULL;
    }
    MPI_Scatterv(b.in, cnt, dsp, dt, inplace ? MPI_IN_PLACE : (void *)b.rn, cnt[cr], dt, c->root,
                 c->comm);
    check_rc(&v, ct_scatterv(&c->choice, sb, gc, gd, sd, rb, rc, rd, c->root, c->comm));
    if (!inplace) compare(&v, "result", b.ro, b.rn, c->t, cnt[cr]);
    if (is_root) compare(&v, "send buffer was modified", b.in, b.in_ref, c->t, k.span);
    report(c, &v);
    free(k.cnt);
    vbufs_free(&b);
}

void run_gatherv_case(const vcase_t *c) {
    if (c->coll == CT_GATHERV) run_gatherv(c);
    else run_scatterv(c);
}

/* The mixed family: rank j's block is v_count(pairs, j) pairs of ints, in rank j's
 * own layout there and in the root's layout at the root (counts in its own
 * elements); the expected result is computed here (rank j's ints do not depend on
 * its layout). */
void run_mixed_gatherv(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count, gather = c->coll == CT_GATHERV;
    if (pairs == 0) return; /* empty signatures: the family "empty" */
    const int rel = (rank - c->root + nprocs) % nprocs, is_root = rel == 0;
    const int Lroot = lay_of(a, 0, pairs), Lme = lay_of(a, rel + 1, pairs);
    int *ar = malloc((size_t)(2 * nprocs) * sizeof *ar);
    int *cnt = ar, *dsp = ar + nprocs;
    for (int j = 0; j < nprocs; j++) cnt[j] = lay_count(Lroot, v_count(pairs, j));
    long span = v_layout(nprocs, cnt, dsp);
    const int mine = v_count(pairs, rank), mc = lay_count(Lme, mine);
    size_t rootbytes = (size_t)span * lay_extent(Lroot), mebytes = lay_bytes(Lme, mine) + 1;
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    char *root_o = alloc_region(rootbytes), *root_x = alloc_region(rootbytes);
    char *me_o = alloc_region(mebytes), *me_x = alloc_region(mebytes);
    if (is_root)
        for (int j = 0; j < nprocs; j++)
            lay_fill(root_x + (size_t)dsp[j] * lay_extent(Lroot), Lroot, v_count(pairs, j), j,
                     salt);
    lay_fill(me_x, Lme, mine, rank, salt);
    if (gather) {
        memcpy(me_o, me_x, mebytes);
        check_rc(&v, ct_gatherv(&c->choice, me_o, mc, lay_dt[Lme], root_o, cnt, dsp,
                                lay_dt[Lroot], c->root, MPI_COMM_WORLD));
    } else {
        memcpy(root_o, root_x, rootbytes);
        check_rc(&v, ct_scatterv(&c->choice, root_o, cnt, dsp, lay_dt[Lroot], me_o, mc,
                                 lay_dt[Lme], c->root, MPI_COMM_WORLD));
    }
    compare_bytes(&v, gather ? "result" : "send buffer was modified", root_o, root_x,
                  rootbytes);
    compare_bytes(&v, gather ? "send buffer was modified" : "result", me_o, me_x, mebytes);
    report(c, &v);
    free(ar);
    free(root_o);
    free(root_x);
    free(me_o);
    free(me_x);
}
