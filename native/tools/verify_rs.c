/*
 * verify_rs.c -- colltune-verify's cases of Reduce_scatter_block and Reduce_scatter
 * (main, garbage and self through run_case, mixed through run_mixed; the inputs,
 * ops and verdicts are verify_cases.c's, see verify_shared.h).
 *
 * Reductions need one datatype and one op on every rank, so the mixed family of
 * Reduce_scatter varies what may differ: the shape of recvcounts (uneven, empty
 * blocks, everything to one rank, single elements). Reduce_scatter_block has no
 * such freedom and no mixed family.
 */
#include "verify_shared.h"

#include <stdlib.h>
#include <string.h>

#define NPATTERNS 4

/* recvcounts[r] of pattern a for base count n (a = 0 in the main matrix) */
static int rs_count(int n, int r, int cn, int a) {
    if (n == 0) return 0;
    switch (a) {
    case 0: return r % 3 == 1 ? 0 : n + r;           /* uneven, every third rank none */
    case 1: return r == cn - 1 ? n * (cn < 4 ? cn : 4) : 0; /* all to the last rank */
    case 2: return r == 0 ? 0 : (n + 2 * r) % (n + 3); /* rank 0 none, small, uneven */
    default: return (r * 7 + n) % 5 == 0 ? 2 * n : 1; /* mostly single elements */
    }
}

/* One case: Reduce_scatter_block (recvcount = c->count) or Reduce_scatter (counts of
 * pattern a). Garbage: a rank that receives nothing passes a NULL receive buffer
 * (not significant there) unless in place. */
static void rs_case(const vcase_t *c, int block, int a) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    int *cnt = malloc((size_t)cn * sizeof *cnt);
    if (!cnt) MPI_Abort(MPI_COMM_WORLD, 3);
    long total = 0;
    for (int r = 0; r < cn; r++) {
        cnt[r] = block ? c->count : rs_count(c->count, r, cn, a);
        total += cnt[r];
    }
    size_t ext = type_extent(c->t), tbytes = (size_t)total * ext;
    size_t obytes = c->inplace ? tbytes : (size_t)cnt[cr] * ext;
    uint32_t salt = ++salt_counter;
    char *in = alloc_region(tbytes), *in_ref = alloc_region(tbytes);
    char *rn = alloc_region(obytes), *ro = alloc_region(obytes);
    fill(in, c->t, total, c->o, rank, salt);
    memcpy(in_ref, in, tbytes);
    if (c->inplace) {
        memcpy(rn, in, tbytes);
        memcpy(ro, in, tbytes);
    }
    const void *sn = c->inplace ? MPI_IN_PLACE : in;
    void *rb = c->garbage && !c->inplace && cnt[cr] == 0 ? NULL : ro;
    MPI_Datatype dt = types[c->t];
    MPI_Op op = case_op(c->t, c->o);
    if (c->t == T_VEC && c->o == O_NONCOMM) {
        /* MPICH 5.0.2's own Reduce_scatter(_block) gets this case wrong (and crashes at
         * count 1000): the reference is its Allreduce of the whole vector, block cr */
        char *all = alloc_region(tbytes);
        MPI_Allreduce(in, all, (int)total, dt, op, c->comm);
        long first = 0;
        for (int r = 0; r < cr; r++) first += cnt[r];
        memcpy(rn, all + (size_t)first * ext, (size_t)cnt[cr] * ext);
        free(all);
        if (block) check_rc(&v, ct_reduce_scatter_block(&c->choice, sn, rb, c->count, dt, op,
                                                        c->comm));
        else check_rc(&v, ct_reduce_scatter(&c->choice, sn, rb, cnt, dt, op, c->comm));
    } else if (block) {
        MPI_Reduce_scatter_block(sn, rn, c->count, dt, op, c->comm);
        check_rc(&v, ct_reduce_scatter_block(&c->choice, sn, rb, c->count, dt, op, c->comm));
    } else {
        MPI_Reduce_scatter(sn, rn, cnt, dt, op, c->comm);
        check_rc(&v, ct_reduce_scatter(&c->choice, sn, rb, cnt, dt, op, c->comm));
    }
    compare(&v, "result", ro, rn, c->t, cnt[cr]);
    if (!c->inplace) compare(&v, "send buffer was modified", in, in_ref, c->t, total);
    report(c, &v);
    free(cnt);
    free(in);
    free(in_ref);
    free(rn);
    free(ro);
}

void run_reduce_scatter_block(const vcase_t *c) { rs_case(c, 1, 0); }
void run_reduce_scatter(const vcase_t *c) { rs_case(c, 0, 0); }

/* the mixed family: recvcounts pattern a (of NASSIGN), sum and the non-commutative
 * op, in place or not */
void run_mixed_reduce_scatter(vcase_t *c, int a) {
    static const int ops_[2] = { O_SUM, O_NONCOMM };
    for (int k = 0; k < 2; k++)
        for (int ip = 0; ip < 2; ip++) {
            c->o = ops_[k];
            c->inplace = ip;
            snprintf(c->tdesc, sizeof c->tdesc, "int, recvcounts pattern %d", a % NPATTERNS);
            rs_case(c, 0, a % NPATTERNS);
        }
    c->o = O_SUM;
    c->inplace = 0;
}
