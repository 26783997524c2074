/*
 * verify_allgatherv.c -- colltune-verify's cases of Allgatherv (main, garbage and
 * self through run_case, mixed through run_mixed, inter in run_inter; the inputs,
 * layouts and verdicts are verify_cases.c's, see verify_shared.h).
 */
#include "verify_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allgatherv's count of block j for base count n: uneven, some zero (n > 0). */
static int agv_count(int n, int j) { return n == 0 ? 0 : (n + 3 * j) % (n + 2); }

/* Allgatherv: block j (agv_count elements) from rank j, at displs[j]. With
 * MPI_IN_PLACE this rank's block is already in place and the send count and type
 * are ignored (garbage: -1 and MPI_DATATYPE_NULL). */
void run_allgatherv(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    vblocks_t k = vblocks_new(cn, c->count, agv_count, rev_layout);
    const int *cnt = k.cnt, *dsp = k.dsp;
    size_t ext = type_extent(c->t);
    uint32_t salt = ++salt_counter;
    vbufs_t b = vbufs_new((size_t)cnt[cr] * ext, (size_t)k.span * ext);
    fill(b.in, c->t, cnt[cr], O_SUM, rank, salt);
    memcpy(b.in_ref, b.in, b.sbytes);
    if (c->inplace) {
        memcpy(b.rn + (size_t)dsp[cr] * ext, b.in, b.sbytes);
        memcpy(b.ro + (size_t)dsp[cr] * ext, b.in, b.sbytes);
    }
    const void *sn = c->inplace ? MPI_IN_PLACE : b.in;
    MPI_Datatype dt = types[c->t], sd = dt;
    int sc = cnt[cr];
    if (c->garbage && c->inplace) {
        sc = -1;
        sd = MPI_DATATYPE_NULL;
    }
    MPI_Allgatherv(sn, cnt[cr], dt, b.rn, cnt, dsp, dt, c->comm);
    check_rc(&v, ct_allgatherv(&c->choice, sn, sc, sd, b.ro, cnt, dsp, dt, c->comm));
    compare(&v, "result", b.ro, b.rn, c->t, k.span);
    if (!c->inplace) compare(&v, "send buffer was modified", b.in, b.in_ref, c->t, cnt[cr]);
    report(c, &v);
    free(k.cnt);
    vbufs_free(&b);
}

/* Allgatherv: rank j sends agv_count(pairs, j) pairs of ints in its layout; each
 * rank receives every block in its own layout (counts in its own elements), blocks
 * in reverse order one element apart. The expected result is computed here (rank
 * j's ints do not depend on its layout): Open MPI 5.0.11's own MPI_Allgatherv hangs
 * on these layouts at 3 processes and 65539 pairs (its sparbit, algorithm 6, which
 * its default selection picks there). */
void run_mixed_allgatherv(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count;
    if (pairs == 0) return; /* the empty layouts: Allgather's family covers them */
    const int Ls = lay_of(a, rank, pairs), Lr = lay_of(a, rank + 1, pairs);
    int *ar = malloc((size_t)(2 * nprocs) * sizeof *ar);
    int *rc = ar, *rd = ar + nprocs;
    for (int j = 0; j < nprocs; j++) rc[j] = lay_count(Lr, agv_count(pairs, j));
    long rspan = rev_layout(nprocs, rc, rd);
    const int mine = agv_count(pairs, rank), sc = lay_count(Ls, mine);
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    vbufs_t b = vbufs_new(lay_bytes(Ls, mine) + 1, (size_t)rspan * lay_extent(Lr));
    lay_fill(b.in, Ls, mine, rank, salt);
    memcpy(b.in_ref, b.in, b.sbytes);
    for (int j = 0; j < nprocs; j++)
        lay_fill(b.rn + (size_t)rd[j] * lay_extent(Lr), Lr, agv_count(pairs, j), j, salt);
    check_rc(&v, ct_allgatherv(&c->choice, b.in, sc, lay_dt[Ls], b.ro, rc, rd, lay_dt[Lr],
                               MPI_COMM_WORLD));
    free(ar);
    vbufs_report_bytes(c, &v, &b);
}
