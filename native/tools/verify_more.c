/*
 * verify_more.c -- colltune-verify's cases of Alltoall, Alltoallv, Scatter and
 * Barrier (main, garbage and self through run_case, mixed through run_mixed; the
 * inputs, layouts and verdicts are verify_cases.c's, see verify_shared.h).
 */
#include "verify_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Alltoall: block j of every rank's send buffer goes to rank j. With MPI_IN_PLACE
 * the send count and type are ignored (garbage: -1 and MPI_DATATYPE_NULL). */
void run_alltoall(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    size_t total = (size_t)c->count * type_extent(c->t) * (size_t)cn;
    uint32_t salt = ++salt_counter;
    vbufs_t b = vbufs_new(total, total);
    fill(b.in, c->t, (long)c->count * cn, O_SUM, rank, salt);
    memcpy(b.in_ref, b.in, total);
    if (c->inplace) {
        memcpy(b.rn, b.in, total);
        memcpy(b.ro, b.in, total);
    }
    const void *sn = c->inplace ? MPI_IN_PLACE : b.in;
    MPI_Datatype dt = types[c->t], sd = dt;
    int sc = c->count;
    if (c->garbage && c->inplace) {
        sc = -1;
        sd = MPI_DATATYPE_NULL;
    }
    MPI_Alltoall(sn, c->count, dt, b.rn, c->count, dt, c->comm);
    check_rc(&v, ct_alltoall(&c->choice, sn, sc, sd, b.ro, c->count, dt, c->comm));
    compare(&v, "result", b.ro, b.rn, c->t, (long)c->count * cn);
    if (!c->inplace)
        compare(&v, "send buffer was modified", b.in, b.in_ref, c->t, (long)c->count * cn);
    report(c, &v);
    vbufs_free(&b);
}

/* Alltoallv's counts for base count n: uneven, some zero; symmetric (what i sends
 * to j is what j sends to i) where MPI_IN_PLACE needs it. */
static int a2av_count(int n, int src, int dst, int sym) {
    if (n == 0) return 0;
    return sym ? (n + src + dst) % (n + 2) : (n + src + 2 * dst) % (n + 2);
}
/* counts and displacements of one side: blocks laid out last peer first, one
 * element apart (rev_layout); returns the elements spanned */
static long a2av_layout(int n, int me, int cn, int send, int sym, int *cnt, int *dsp) {
    for (int j = 0; j < cn; j++)
        cnt[j] = send ? a2av_count(n, me, j, sym) : a2av_count(n, j, me, sym);
    return rev_layout(cn, cnt, dsp);
}

void run_alltoallv(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    int *ar = malloc((size_t)(4 * cn) * sizeof *ar);
    int *scnt = ar, *sdsp = ar + cn, *rcnt = ar + 2 * cn, *rdsp = ar + 3 * cn;
    const int sym = c->inplace;
    long sspan = a2av_layout(c->count, cr, cn, 1, sym, scnt, sdsp);
    long rspan = a2av_layout(c->count, cr, cn, 0, sym, rcnt, rdsp);
    size_t ext = type_extent(c->t), rbytes = (size_t)rspan * ext;
    uint32_t salt = ++salt_counter;
    vbufs_t b = vbufs_new((size_t)sspan * ext, rbytes);
    char *rn = b.rn;
    fill(b.in, c->t, sspan, O_SUM, rank, salt);
    memcpy(b.in_ref, b.in, b.sbytes);
    if (c->inplace) { /* the data to send sits in the receive buffer (same layout) */
        fill(rn, c->t, rspan, O_SUM, rank, salt);
        memcpy(b.ro, rn, rbytes);
    }
    const void *sn = c->inplace ? MPI_IN_PLACE : b.in;
    MPI_Datatype dt = types[c->t], sd = dt;
    const int *gc = scnt, *gd = sdsp;
    if (c->garbage && c->inplace) {
        gc = NULL;
        gd = NULL;
        sd = MPI_DATATYPE_NULL;
    }
    char *ref_src = NULL;
#ifdef SMPI_SHARED_MALLOC
    /* SimGrid 4.1's in-place MPI_Alltoallv copies (displacement + count) x the type's
     * SIZE bytes of the receive buffer, not x its extent: for a type with holes (vec)
     * its result is wrong and it reads past its copy. The reference is then the same
     * exchange from a copy of the receive buffer, not in place (what MPI_IN_PLACE
     * means: the counts and displacements are symmetric here). */
    if (c->inplace) {
        ref_src = alloc_region(rbytes);
        memcpy(ref_src, rn, rbytes);
    }
#endif
    if (ref_src)
        MPI_Alltoallv(ref_src, rcnt, rdsp, dt, rn, rcnt, rdsp, dt, c->comm);
    else
        MPI_Alltoallv(sn, scnt, sdsp, dt, rn, rcnt, rdsp, dt, c->comm);
    free(ref_src);
    check_rc(&v, ct_alltoallv(&c->choice, sn, gc, gd, sd, b.ro, rcnt, rdsp, dt, c->comm));
    compare(&v, "result", b.ro, rn, c->t, rspan);
    if (!c->inplace) compare(&v, "send buffer was modified", b.in, b.in_ref, c->t, sspan);
    report(c, &v);
    free(ar);
    vbufs_free(&b);
}

/* Scatter: the root's block i goes to rank i. Garbage in what MPI ignores: the
 * send arguments at non-roots, the receive count and type at a root in place. */
void run_scatter(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    const int is_root = cr == c->root, inplace = c->inplace && is_root;
    size_t bytes = (size_t)c->count * type_extent(c->t), total = bytes * (size_t)cn;
    uint32_t salt = ++salt_counter;
    vbufs_t b = vbufs_new(total, bytes);
    if (is_root) fill(b.in, c->t, (long)c->count * cn, O_SUM, rank, salt);
    memcpy(b.in_ref, b.in, total);
    MPI_Datatype dt = types[c->t], sd = dt, rd = dt;
    const void *sb = b.in;
    int sc = c->count, rc = c->count;
    void *rb = inplace ? MPI_IN_PLACE : (void *)b.ro;
    if (c->garbage && !is_root) {
        sb = NULL;
        sc = -1;
        sd = MPI_DATATYPE_NULL;
    }
    if (c->garbage && inplace) {
        rc = -1;
        rd = MPI_DATATYPE_NULL;
    }
    MPI_Scatter(b.in, c->count, dt, inplace ? MPI_IN_PLACE : (void *)b.rn, c->count, dt,
                c->root, c->comm);
    check_rc(&v, ct_scatter(&c->choice, sb, sc, sd, rb, rc, rd, c->root, c->comm));
    if (!inplace) compare(&v, "result", b.ro, b.rn, c->t, c->count);
    if (is_root)
        compare(&v, "send buffer was modified", b.in, b.in_ref, c->t, (long)c->count * cn);
    report(c, &v);
    vbufs_free(&b);
}

/* One clock for every process of the node: CLOCK_MONOTONIC (Open MPI 5's MPI_Wtime
 * counts from each process's own origin); under SMPI the simulated MPI_Wtime. */
static double node_clock(void) {
#ifdef SMPI_SHARED_MALLOC
    return MPI_Wtime();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}

/* Barrier: no rank may return before the last one has entered. The late rank
 * (changing from case to case) enters 3 ms after the others; every rank's return
 * time must be at or after the last entry (node_clock: the processes of one node). */
void run_barrier(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    const int late = (int)(++salt_counter % (uint32_t)cn);
    if (cr == late) { /* a sleep (simulated under SMPI, where a spin on MPI_Wtime never ends) */
        struct timespec nap = { 0, 3000000 };
        nanosleep(&nap, NULL);
    }
    double enter = node_clock();
    check_rc(&v, ct_barrier(&c->choice, c->comm));
    double leave = node_clock(), last_enter, first_leave;
    MPI_Allreduce(&enter, &last_enter, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    MPI_Allreduce(&leave, &first_leave, 1, MPI_DOUBLE, MPI_MIN, c->comm);
    if (first_leave < last_enter)
        verdict(&v, "a rank left the barrier %.1f us before rank %d (late) entered it",
                (last_enter - first_leave) * 1e6, late);
    snprintf(((vcase_t *)c)->tdesc, sizeof c->tdesc, "- (rank %d late)", late);
    report(c, &v);
    ((vcase_t *)c)->tdesc[0] = '\0';
}

/* Alltoall: each rank sends its blocks in one layout and receives in another. */
void run_mixed_alltoall(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count;
    const int Ls = lay_of(a, rank, pairs), Lr = lay_of(a, rank + 1, pairs);
    size_t sb = lay_bytes(Ls, pairs), rb = lay_bytes(Lr, pairs);
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    vbufs_t b = vbufs_new(sb * (size_t)nprocs, rb * (size_t)nprocs);
    for (int j = 0; j < nprocs; j++)
        lay_fill(b.in + (size_t)j * sb, Ls, pairs, rank, salt + (uint32_t)j);
    memcpy(b.in_ref, b.in, b.sbytes);
    int sc = lay_count(Ls, pairs), rc = lay_count(Lr, pairs);
    if (pairs > 0) MPI_Alltoall(b.in, sc, lay_dt[Ls], b.rn, rc, lay_dt[Lr], MPI_COMM_WORLD);
    else memcpy(b.rn, b.ro, b.rbytes); /* zero bytes: nothing may change */
    check_rc(&v, ct_alltoall(&c->choice, b.in, sc, lay_dt[Ls], b.ro, rc, lay_dt[Lr],
                             MPI_COMM_WORLD));
    vbufs_report_bytes(c, &v, &b);
}

/* Alltoallv: uneven pair counts per block (a2av_count, some zero), each rank's own
 * send and receive layouts, blocks in reverse order one element apart. */
static long mixed_a2av_layout(int pairs, int L, int me, int send, int *cnt, int *dsp) {
    for (int j = 0; j < nprocs; j++)
        cnt[j] = lay_count(L, send ? a2av_count(pairs, me, j, 0) : a2av_count(pairs, j, me, 0));
    return rev_layout(nprocs, cnt, dsp);
}

void run_mixed_alltoallv(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count;
    if (pairs == 0) return; /* the empty layouts: Alltoall's family covers them */
    const int Ls = lay_of(a, rank, pairs), Lr = lay_of(a, rank + 1, pairs);
    int *ar = malloc((size_t)(4 * nprocs) * sizeof *ar);
    int *sc = ar, *sd = ar + nprocs, *rc = ar + 2 * nprocs, *rd = ar + 3 * nprocs;
    long sspan = mixed_a2av_layout(pairs, Ls, rank, 1, sc, sd);
    long rspan = mixed_a2av_layout(pairs, Lr, rank, 0, rc, rd);
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    vbufs_t b = vbufs_new((size_t)sspan * lay_extent(Ls), (size_t)rspan * lay_extent(Lr));
    for (int j = 0; j < nprocs; j++)
        lay_fill(b.in + (size_t)sd[j] * lay_extent(Ls), Ls, a2av_count(pairs, rank, j, 0), rank,
                 salt + (uint32_t)j);
    memcpy(b.in_ref, b.in, b.sbytes);
    MPI_Alltoallv(b.in, sc, sd, lay_dt[Ls], b.rn, rc, rd, lay_dt[Lr], MPI_COMM_WORLD);
    check_rc(&v, ct_alltoallv(&c->choice, b.in, sc, sd, lay_dt[Ls], b.ro, rc, rd, lay_dt[Lr],
                              MPI_COMM_WORLD));
    free(ar);
    vbufs_report_bytes(c, &v, &b);
}

/* Scatter: the root sends in its layout, each rank receives in its own. */
void run_mixed_scatter(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count, rel = (rank - c->root + nprocs) % nprocs;
    const int Ls = lay_of(a, 0, pairs), Lr = lay_of(a, rel + 1, pairs);
    size_t sb = lay_bytes(Ls, pairs);
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    vbufs_t b = vbufs_new(sb * (size_t)nprocs, lay_bytes(Lr, pairs));
    if (rel == 0)
        for (int j = 0; j < nprocs; j++)
            lay_fill(b.in + (size_t)j * sb, Ls, pairs, rank, salt + (uint32_t)j);
    memcpy(b.in_ref, b.in, b.sbytes);
    int sc = lay_count(Ls, pairs), rc = lay_count(Lr, pairs);
    if (pairs > 0)
        MPI_Scatter(b.in, sc, lay_dt[Ls], b.rn, rc, lay_dt[Lr], c->root, MPI_COMM_WORLD);
    check_rc(&v, ct_scatter(&c->choice, b.in, sc, lay_dt[Ls], b.ro, rc, lay_dt[Lr], c->root,
                            MPI_COMM_WORLD));
    vbufs_report_bytes(c, &v, &b);
}
