/*
 * plaincolls.c -- colltune-plaincolls: a plain MPI program that knows nothing of
 * colltune. It calls MPI_Bcast, MPI_Reduce, MPI_Gather, MPI_Allgather,
 * MPI_Allreduce, MPI_Alltoall, MPI_Alltoallv, MPI_Scatter, MPI_Barrier,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Allgatherv, MPI_Gatherv and
 * MPI_Scatterv the way applications do and checks every result against values it computes itself: several counts
 * (segmented algorithms included) and roots,
 * MPI_IN_PLACE, a non-commutative user op, a sub-communicator (odd/even ranks)
 * next to MPI_COMM_WORLD, an intercommunicator, and communicators created and
 * freed in a loop. tests/test_pmpi.py runs it under libcolltune-pmpi.so.
 *
 *   colltune-plaincolls [--loop N] [--multiple] [--large]
 *
 * --loop N      N times: MPI_Comm_dup, Bcast + Allreduce on it, MPI_Comm_free
 *               (a library that leaked a communicator per dup runs out of them),
 *               and every other time an intercommunicator made and freed
 * --multiple    initialise with MPI_THREAD_MULTIPLE
 * --large       only a Bcast of INT_MAX - 7 unsigned chars (2 GiB per process)
 *
 * Every rank prints its own "FAIL ..." lines on stderr and exits 1 after
 * MPI_Finalize if any check failed; rank 0 prints "plaincolls: N checks passed".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long nfail, nchecks;
static int wrank;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        nchecks++;                                                             \
        if (!(cond)) {                                                         \
            if (nfail++ < 20) {                                                \
                fprintf(stderr, "FAIL rank %d: ", wrank);                      \
                fprintf(stderr, __VA_ARGS__);                                  \
                fputc('\n', stderr);                                           \
            }                                                                  \
        }                                                                      \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int val(int rank, int i, int salt) { return (rank + 1) * 1000003 + i * 7 + salt; }

/* x -> a*x + b, composed (non-commutative, associative; exact in unsigned arithmetic):
 * (u op v)(x) = u(v(x)), and MPI computes inout = in op inout */
typedef struct {
    unsigned a, b;
} affine_t;
static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    affine_t *u = in, *v = inout;
    for (int i = 0; i < *len; i++) {
        affine_t r = { u[i].a * v[i].a, u[i].a * v[i].b + u[i].b };
        v[i] = r;
    }
}
static affine_t affine_of(int rank, int i) {
    affine_t x = { (unsigned)(2 * rank + 3 + i), (unsigned)(rank * 31 + i + 1) };
    return x;
}

static const int COUNTS[] = { 1, 7, 1000, 70000 };
#define NCOUNTS (int)(sizeof COUNTS / sizeof COUNTS[0])

static void run_all(MPI_Comm comm, const char *name, MPI_Datatype affine_t_dt, MPI_Op affine) {
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    int maxc = COUNTS[NCOUNTS - 1];
    int *a = malloc(sizeof(int) * (size_t)maxc * (size_t)p);
    int *b = malloc(sizeof(int) * (size_t)maxc * (size_t)p);
    affine_t *x = malloc(sizeof(affine_t) * (size_t)maxc);
    affine_t *y = malloc(sizeof(affine_t) * (size_t)maxc);
    for (int k = 0; k < NCOUNTS; k++) {
        int n = COUNTS[k];
        int roots[2] = { 0, p - 1 };
        for (int q = 0; q < (p > 1 ? 2 : 1); q++) {
            int root = roots[q];
            /* Bcast */
            for (int i = 0; i < n; i++) a[i] = r == root ? val(root, i, 1) : -1;
            MPI_Bcast(a, n, MPI_INT, root, comm);
            int bad = 0;
            for (int i = 0; i < n; i++) bad += a[i] != val(root, i, 1);
            CHECK(!bad, "%s bcast count=%d root=%d: %d wrong elements", name, n, root, bad);
            /* Reduce, sum */
            for (int i = 0; i < n; i++) {
                a[i] = val(r, i, 2);
                b[i] = -1;
            }
            MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
            if (r == root) {
                bad = 0;
                for (int i = 0; i < n; i++) {
                    int e = 0;
                    for (int s = 0; s < p; s++) e += val(s, i, 2);
                    bad += b[i] != e;
                }
                CHECK(!bad, "%s reduce sum count=%d root=%d: %d wrong", name, n, root, bad);
            }
            /* Reduce in place at the root, non-commutative op */
            for (int i = 0; i < n; i++) x[i] = y[i] = affine_of(r, i);
            MPI_Reduce(r == root ? MPI_IN_PLACE : x, r == root ? y : NULL, n, affine_t_dt,
                       affine, root, comm);
            if (r == root) {
                bad = 0;
                for (int i = 0; i < n; i++) {
                    affine_t e = affine_of(p - 1, i);
                    for (int s = p - 2; s >= 0; s--) {
                        affine_t u = affine_of(s, i);
                        int one = 1;
                        affine_op(&u, &e, &one, NULL);
                    }
                    bad += y[i].a != e.a || y[i].b != e.b;
                }
                CHECK(!bad, "%s reduce in place non-commutative count=%d root=%d: %d wrong",
                      name, n, root, bad);
            }
            /* Scatter: block s of the root's buffer to rank s (in place at the root
             * every other pass) */
            if (n <= 20000) {
                int inplace = q == 1 && r == root;
                for (int i = 0; i < n * p; i++) a[i] = r == root ? val(root, i, 8) : -1;
                for (int i = 0; i < n; i++) b[i] = -1;
                MPI_Scatter(a, n, MPI_INT, inplace ? MPI_IN_PLACE : b, n, MPI_INT, root, comm);
                bad = 0;
                if (!inplace)
                    for (int i = 0; i < n; i++) bad += b[i] != val(root, r * n + i, 8);
                for (int i = 0; r == root && i < n * p; i++) bad += a[i] != val(root, i, 8);
                CHECK(!bad, "%s scatter count=%d root=%d%s: %d wrong", name, n, root,
                      inplace ? " in place" : "", bad);
            }
            /* Gather: n ints per process (the largest count once) */
            if (n <= 20000) {
                for (int i = 0; i < n; i++) a[i] = val(r, i, 3);
                for (int i = 0; i < n * p; i++) b[i] = -1;
                int inplace = q == 1 && r == root;
                if (inplace)
                    for (int i = 0; i < n; i++) b[(size_t)root * n + i] = val(r, i, 3);
                MPI_Gather(inplace ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT, root, comm);
                if (r == root) {
                    bad = 0;
                    for (int s = 0; s < p; s++)
                        for (int i = 0; i < n; i++) bad += b[(size_t)s * n + i] != val(s, i, 3);
                    CHECK(!bad, "%s gather count=%d root=%d%s: %d wrong", name, n, root,
                          inplace ? " in place" : "", bad);
                }
            }
            /* Gatherv: rank s sends (n + 2s) % (n + 1) ints (some none); the root's
             * blocks last rank first, one int apart (in place at the root every other
             * pass); the receive arguments are NULL off the root, as MPI allows */
            if (n <= 20000) {
                int inplace = q == 1 && r == root;
                int *cnt = malloc(sizeof(int) * 2 * (size_t)p), *dsp = cnt + p;
                for (int s = 0; s < p; s++) {
                    cnt[s] = (n + 2 * s) % (n + 1);
                    dsp[s] = (p - 1 - s) * (n + 1);
                }
                for (int i = 0; i < cnt[r]; i++) a[i] = val(r, i, 10);
                for (int i = 0; i < (n + 1) * p; i++) b[i] = -1;
                if (inplace)
                    for (int i = 0; i < cnt[r]; i++) b[dsp[r] + i] = a[i];
                MPI_Gatherv(inplace ? MPI_IN_PLACE : a, cnt[r], MPI_INT, r == root ? b : NULL,
                            r == root ? cnt : NULL, r == root ? dsp : NULL, MPI_INT, root, comm);
                bad = 0;
                for (int s = 0; r == root && s < p; s++)
                    for (int i = 0; i <= n; i++)
                        bad += b[dsp[s] + i] != (i < cnt[s] ? val(s, i, 10) : -1);
                for (int i = 0; r != root && i < (n + 1) * p; i++) bad += b[i] != -1;
                CHECK(!bad, "%s gatherv count=%d root=%d%s: %d wrong", name, n, root,
                      inplace ? " in place" : "", bad);
                /* Scatterv: the same counts and layout from the root */
                for (int i = 0; i < (n + 1) * p; i++) a[i] = r == root ? val(root, i, 11) : -1;
                for (int i = 0; i <= n; i++) b[i] = -1;
                MPI_Scatterv(r == root ? a : NULL, r == root ? cnt : NULL,
                             r == root ? dsp : NULL, MPI_INT, inplace ? MPI_IN_PLACE : b,
                             cnt[r], MPI_INT, root, comm);
                bad = 0;
                for (int i = 0; !inplace && i <= n; i++)
                    bad += b[i] != (i < cnt[r] ? val(root, dsp[r] + i, 11) : -1);
                for (int i = 0; r == root && i < (n + 1) * p; i++) bad += a[i] != val(root, i, 11);
                CHECK(!bad, "%s scatterv count=%d root=%d%s: %d wrong", name, n, root,
                      inplace ? " in place" : "", bad);
                free(cnt);
            }
        }
        /* Allgather (in place every other count) */
        if (n <= 20000) {
            int inplace = k % 2;
            for (int i = 0; i < n; i++) a[i] = val(r, i, 4);
            for (int i = 0; i < n * p; i++) b[i] = inplace ? val(r, i % n, 4) : -1;
            MPI_Allgather(inplace ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT, comm);
            int bad = 0;
            for (int s = 0; s < p; s++)
                for (int i = 0; i < n; i++) bad += b[(size_t)s * n + i] != val(s, i, 4);
            CHECK(!bad, "%s allgather count=%d%s: %d wrong", name, n, inplace ? " in place" : "",
                  bad);
        }
        /* Alltoall (in place every other count): block d of rank r holds
         * val(r, d*n + i) and goes to rank d */
        if (n <= 20000) {
            int inplace = k % 2;
            for (int d = 0; d < p; d++)
                for (int i = 0; i < n; i++) {
                    a[(size_t)d * n + i] = val(r, d * n + i, 6);
                    b[(size_t)d * n + i] = inplace ? a[(size_t)d * n + i] : -1;
                }
            MPI_Alltoall(inplace ? MPI_IN_PLACE : a, n, MPI_INT, b, n, MPI_INT, comm);
            int bad = 0;
            for (int s = 0; s < p; s++)
                for (int i = 0; i < n; i++) bad += b[(size_t)s * n + i] != val(s, r * n + i, 6);
            CHECK(!bad, "%s alltoall count=%d%s: %d wrong", name, n, inplace ? " in place" : "",
                  bad);
        }
        /* Alltoallv: rank s sends (n + s + 2d) % (n + 1) ints to rank d, blocks n apart
         * (the rest of each block must stay untouched) */
        if (n <= 20000) {
            int *cnt = malloc(sizeof(int) * 4 * (size_t)p);
            int *sc = cnt, *sd = cnt + p, *rc = cnt + 2 * p, *rd = cnt + 3 * p;
            for (int d = 0; d < p; d++) {
                sc[d] = (n + r + 2 * d) % (n + 1);
                rc[d] = (n + d + 2 * r) % (n + 1);
                sd[d] = rd[d] = d * n;
                for (int i = 0; i < n; i++) {
                    a[(size_t)d * n + i] = val(r, d * n + i, 7);
                    b[(size_t)d * n + i] = -1;
                }
            }
            MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, comm);
            int bad = 0;
            for (int s = 0; s < p; s++)
                for (int i = 0; i < n; i++)
                    bad += b[(size_t)s * n + i] != (i < rc[s] ? val(s, r * n + i, 7) : -1);
            CHECK(!bad, "%s alltoallv count=%d: %d wrong", name, n, bad);
            free(cnt);
        }
        /* Alltoallv with empty signatures written two ways: every rank sends rank 0
         * 0 ints, which rank 0 receives as 1 element of contiguous(0, int); the other
         * blocks carry one int each */
        if (k == 0) {
            MPI_Datatype none;
            MPI_Type_contiguous(0, MPI_INT, &none);
            MPI_Type_commit(&none);
            int *cnt = malloc(sizeof(int) * 4 * (size_t)p), *sd = cnt + p, *rc = cnt + 2 * p,
                *rd = cnt + 3 * p;
            for (int s = 0; s < p; s++) {
                cnt[s] = s == 0 ? 0 : 1;
                sd[s] = s;
                rc[s] = 1;
                rd[s] = s;
                a[s] = val(r, s, 12);
                b[s] = -1;
            }
            MPI_Alltoallv(a, cnt, sd, MPI_INT, b, rc, rd, r == 0 ? none : MPI_INT, comm);
            int bad = 0;
            for (int s = 0; s < p; s++) bad += b[s] != (r == 0 ? -1 : val(s, r, 12));
            CHECK(!bad, "%s alltoallv with empty signatures (0 int / 1 contiguous(0)): %d wrong",
                  name, bad);
            MPI_Type_free(&none);
            free(cnt);
        }
        /* Allgatherv (in place every other count): rank s contributes (n + 3s) % (n + 1)
         * ints at s*n, blocks n apart (the rest of each block must stay untouched) */
        if (n <= 20000) {
            int inplace = k % 2;
            int *cnt = malloc(sizeof(int) * 2 * (size_t)p), *dsp = cnt + p;
            for (int s = 0; s < p; s++) {
                cnt[s] = (n + 3 * s) % (n + 1);
                dsp[s] = s * n;
            }
            for (int i = 0; i < cnt[r]; i++) a[i] = val(r, i, 9);
            for (int i = 0; i < n * p; i++) b[i] = -1;
            if (inplace)
                for (int i = 0; i < cnt[r]; i++) b[(size_t)r * n + i] = a[i];
            MPI_Allgatherv(inplace ? MPI_IN_PLACE : a, cnt[r], MPI_INT, b, cnt, dsp, MPI_INT,
                           comm);
            int bad = 0;
            for (int s = 0; s < p; s++)
                for (int i = 0; i < n; i++)
                    bad += b[(size_t)s * n + i] != (i < cnt[s] ? val(s, i, 9) : -1);
            CHECK(!bad, "%s allgatherv count=%d%s: %d wrong", name, n,
                  inplace ? " in place" : "", bad);
            free(cnt);
        }
        /* Barrier: each rank in turn enters 2 ms late; no rank may leave before the
         * late one has entered (CLOCK_MONOTONIC: one clock for the node) */
        if (k == 0) {
            int bad = 0;
            for (int it = 0; it < p; it++) {
                if (r == it) {
                    struct timespec nap = { 0, 2000000 };
                    nanosleep(&nap, NULL);
                }
                double enter = now(), leave, last_enter, first_leave;
                MPI_Barrier(comm);
                leave = now();
                MPI_Allreduce(&enter, &last_enter, 1, MPI_DOUBLE, MPI_MAX, comm);
                MPI_Allreduce(&leave, &first_leave, 1, MPI_DOUBLE, MPI_MIN, comm);
                bad += first_leave < last_enter;
            }
            CHECK(!bad, "%s barrier: a rank left before the late one entered (%d of %d)", name,
                  bad, p);
        }
        /* Reduce_scatter_block: sum, n ints per rank, in place every other count */
        if (n <= 20000) {
            int inplace = k % 2;
            for (int i = 0; i < n * p; i++) {
                a[i] = val(r, i, 9);
                b[i] = inplace ? a[i] : -1;
            }
            MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, comm);
            int bad = 0;
            for (int i = 0; i < n; i++) {
                int e = 0;
                for (int s = 0; s < p; s++) e += val(s, r * n + i, 9);
                bad += b[i] != e;
            }
            CHECK(!bad, "%s reduce_scatter_block sum count=%d%s: %d wrong", name, n,
                  inplace ? " in place" : "", bad);
        }
        /* Reduce_scatter: the non-commutative op on n elements cut unevenly (rank s
         * gets a share of weight s % 3: some none), in place every other count */
        {
            int inplace = k % 2, *cnt = malloc(sizeof(int) * (size_t)p), w = 0, at = 0;
            for (int s = 0; s < p; s++) w += s % 3;
            for (int s = 0; s < p; s++) {
                cnt[s] = w ? (int)((long)n * (s % 3) / w) : n;
                at += cnt[s];
            }
            cnt[p - 1] += n - at;
            int first = 0;
            for (int s = 0; s < r; s++) first += cnt[s];
            for (int i = 0; i < n; i++) x[i] = y[i] = affine_of(r, i);
            MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : x, y, cnt, affine_t_dt, affine, comm);
            int bad = 0;
            for (int i = 0; i < cnt[r]; i++) {
                affine_t e = affine_of(p - 1, first + i);
                for (int s = p - 2; s >= 0; s--) {
                    affine_t u = affine_of(s, first + i);
                    int one = 1;
                    affine_op(&u, &e, &one, NULL);
                }
                bad += y[i].a != e.a || y[i].b != e.b;
            }
            CHECK(!bad, "%s reduce_scatter non-commutative count=%d%s: %d wrong", name, n,
                  inplace ? " in place" : "", bad);
            free(cnt);
        }
        /* Allreduce: sum, in place every other count; and the non-commutative op */
        {
            int inplace = k % 2;
            for (int i = 0; i < n; i++) {
                a[i] = val(r, i, 5);
                b[i] = inplace ? a[i] : -1;
            }
            MPI_Allreduce(inplace ? MPI_IN_PLACE : a, b, n, MPI_INT, MPI_SUM, comm);
            int bad = 0;
            for (int i = 0; i < n; i++) {
                int e = 0;
                for (int s = 0; s < p; s++) e += val(s, i, 5);
                bad += b[i] != e;
            }
            CHECK(!bad, "%s allreduce sum count=%d%s: %d wrong", name, n,
                  inplace ? " in place" : "", bad);
            for (int i = 0; i < n; i++) x[i] = affine_of(r, i);
            MPI_Allreduce(x, y, n, affine_t_dt, affine, comm);
            bad = 0;
            for (int i = 0; i < n; i++) {
                affine_t e = affine_of(p - 1, i);
                for (int s = p - 2; s >= 0; s--) {
                    affine_t u = affine_of(s, i);
                    int one = 1;
                    affine_op(&u, &e, &one, NULL);
                }
                bad += y[i].a != e.a || y[i].b != e.b;
            }
            CHECK(!bad, "%s allreduce non-commutative count=%d: %d wrong", name, n, bad);
        }
    }
    free(a);
    free(b);
    free(x);
    free(y);
}

/* Bcast and Allreduce across an intercommunicator (the library's own must run). */
static void run_inter(MPI_Comm world) {
    int p, r;
    MPI_Comm_size(world, &p);
    MPI_Comm_rank(world, &r);
    if (p < 2) return;
    MPI_Comm half, inter;
    int color = r % 2;
    MPI_Comm_split(world, color, r, &half);
    /* leaders: world rank 0 (color 0) and world rank 1 (color 1) */
    MPI_Intercomm_create(half, 0, world, color == 0 ? 1 : 0, 77, &inter);
    int hr;
    MPI_Comm_rank(half, &hr);
    int v[4] = { -1, -1, -1, -1 };
    if (color == 0) {
        if (hr == 0)
            for (int i = 0; i < 4; i++) v[i] = 4242 + i;
        MPI_Bcast(v, 4, MPI_INT, hr == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Bcast(v, 4, MPI_INT, 0, inter);
        int bad = 0;
        for (int i = 0; i < 4; i++) bad += v[i] != 4242 + i;
        CHECK(!bad, "intercommunicator bcast: %d wrong", bad);
    }
    /* allreduce: each group gets the sum over the other group of world ranks + 1 */
    int mine = r + 1, got = -1, expect = 0;
    MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, inter);
    for (int s = 0; s < p; s++)
        if (s % 2 != color) expect += s + 1;
    CHECK(got == expect, "intercommunicator allreduce: %d, expected %d", got, expect);
    /* alltoall: one int from every rank of the other group */
    int rp;
    MPI_Comm_remote_size(inter, &rp);
    int *to = malloc(sizeof(int) * (size_t)rp), *from = malloc(sizeof(int) * (size_t)rp);
    for (int j = 0; j < rp; j++) to[j] = 1000 * r + j;
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, inter);
    int bad = 0;
    for (int j = 0; j < rp; j++) bad += from[j] != 1000 * (2 * j + (1 - color)) + hr;
    CHECK(!bad, "intercommunicator alltoall: %d wrong", bad);
    /* allgatherv: one int from every rank of the other group, side by side */
    int *ones = malloc(sizeof(int) * 2 * (size_t)rp), *at = ones + rp;
    for (int j = 0; j < rp; j++) {
        ones[j] = 1;
        at[j] = j;
        from[j] = -1;
    }
    int me = 2000 + r;
    MPI_Allgatherv(&me, 1, MPI_INT, from, ones, at, MPI_INT, inter);
    bad = 0;
    for (int j = 0; j < rp; j++) bad += from[j] != 2000 + 2 * j + (1 - color);
    CHECK(!bad, "intercommunicator allgatherv: %d wrong", bad);
    /* gatherv: the low group's leader gathers one int from every rank of the other */
    for (int j = 0; j < rp; j++) from[j] = -1;
    if (color == 0)
        MPI_Gatherv(NULL, 0, MPI_INT, from, ones, at, MPI_INT,
                    hr == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    else
        MPI_Gatherv(&me, 1, MPI_INT, NULL, NULL, NULL, MPI_INT, 0, inter);
    bad = 0;
    for (int j = 0; color == 0 && hr == 0 && j < rp; j++) bad += from[j] != 2000 + 2 * j + 1;
    CHECK(!bad, "intercommunicator gatherv: %d wrong", bad);
    free(ones);
    free(to);
    free(from);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* A Bcast of close to INT_MAX elements: every byte checked. */
static void run_large(void) {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int n = 2147483647 - 7;
    unsigned char *buf = malloc((size_t)n);
    if (!buf) {
        fprintf(stderr, "plaincolls: rank %d: cannot allocate %d bytes\n", r, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    /* byte i holds i*31 mod 251 (kept incrementally: a modulo per byte is slow) */
    if (r == 0)
        for (size_t i = 0, v = 0; i < (size_t)n; i++, v = v + 31 >= 251 ? v + 31 - 251 : v + 31)
            buf[i] = (unsigned char)v;
    else
        memset(buf, 0, (size_t)n);
    MPI_Bcast(buf, n, MPI_UNSIGNED_CHAR, 0, MPI_COMM_WORLD);
    size_t bad = 0, first = 0;
    for (size_t i = 0, v = 0; i < (size_t)n; i++, v = v + 31 >= 251 ? v + 31 - 251 : v + 31)
        if (buf[i] != (unsigned char)v && !bad++) first = i;
    CHECK(!bad, "bcast of %d unsigned chars: %zu wrong bytes, the first at %zu", n, bad, first);
    free(buf);
}

int main(int argc, char **argv) {
    int loop = 0, multiple = 0, large = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--loop") && i + 1 < argc) loop = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--multiple")) multiple = 1;
        else if (!strcmp(argv[i], "--large")) large = 1;
        else {
            fprintf(stderr, "usage: colltune-plaincolls [--loop N] [--multiple] [--large]\n");
            return 2;
        }
    }
    if (multiple) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (large) {
        run_large();
        MPI_Finalize();
        if (wrank == 0 && !nfail) printf("plaincolls: %ld checks passed\n", nchecks);
        return nfail ? 1 : 0;
    }
    MPI_Datatype affine_dt;
    MPI_Type_contiguous(2, MPI_UNSIGNED, &affine_dt);
    MPI_Type_commit(&affine_dt);
    MPI_Op affine;
    MPI_Op_create(affine_op, 0, &affine);

    run_all(MPI_COMM_WORLD, "world", affine_dt, affine);
    /* a sub-communicator in flight next to the world */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &sub); /* reversed rank order */
    run_all(sub, "odd/even", affine_dt, affine);
    run_all(MPI_COMM_WORLD, "world again", affine_dt, affine);
    MPI_Comm_free(&sub);
    run_inter(MPI_COMM_WORLD);
    for (int it = 0; it < loop; it++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        int v = it, sum = 0, p;
        MPI_Comm_size(c, &p);
        MPI_Bcast(&v, 1, MPI_INT, 0, c);
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == it * p, "loop %d: allreduce on a fresh communicator gave %d", it, sum);
        MPI_Comm_free(&c);
        /* an intercommunicator, likely at the handle just freed: it must not be
         * taken for the intracommunicator that had it */
        if (it % 2) run_inter(MPI_COMM_WORLD);
        if (nfail) break;
    }
    MPI_Op_free(&affine);
    MPI_Type_free(&affine_dt);
    MPI_Finalize();
    if (wrank == 0 && !nfail) printf("plaincolls: %ld checks passed\n", nchecks);
    if (nfail) fprintf(stderr, "plaincolls: rank %d: %ld of %ld checks failed\n", wrank, nfail,
                       nchecks);
    return nfail ? 1 : 0;
}
