/*
 * threads.c -- colltune-threads: a plain MPI program (it knows nothing of colltune)
 * whose threads run collectives at the same time, each on a communicator of its
 * own, as MPI_THREAD_MULTIPLE allows. tests/test_threads.py runs it under
 * libcolltune-pmpi.so with algorithms forced (COLLTUNE_<COLL>) and checks that
 * every result is right and that each thread's calls were recorded as its own.
 *
 *   colltune-threads [--threads T] [--iters N] [--renew K]
 *
 * Initialised with MPI_THREAD_MULTIPLE (exit 1 if the library does not provide
 * it). The main thread makes T communicators (a duplicate of MPI_COMM_WORLD,
 * every other one in reversed rank order), then T threads each run N rounds on
 * their own: Bcast, Reduce, Allreduce, Gather, Scatter, Allgather, Alltoall,
 * Alltoallv and Barrier with counts, roots and data that depend on the thread and
 * the round, and every K rounds (default 16) replace their communicator with a
 * duplicate of it and free the old one (handles are reused while other threads
 * keep calling). Threads of even number reduce ints with MPI_SUM (2 ints: 8
 * bytes), odd ones with a non-commutative user op (10 pairs: 80 bytes), so an
 * algorithm forced for Allreduce that needs a commutative op falls back in odd
 * threads only. The Allgather moves an int with a hole after it (extent 8), so
 * local copies of it are not a plain memcpy.
 *
 * Every rank prints its own "FAIL ..." lines on stderr and exits 1 after
 * MPI_Finalize if any check failed; rank 0 prints "threads: N checks passed".
 */
#include <mpi.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic long nfail, nchecks;
static int wrank;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        nchecks++;                                                             \
        if (!(cond) && nfail++ < 20) {                                         \
            char m_[300];                                                      \
            snprintf(m_, sizeof m_, __VA_ARGS__);                              \
            fprintf(stderr, "FAIL rank %d: %s\n", wrank, m_);                  \
        }                                                                      \
    } while (0)

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
static affine_t affine_of(int rank, int i, int salt) {
    affine_t x = { (unsigned)(2 * rank + 3 + i + salt), (unsigned)(rank * 31 + i + 1 + salt) };
    return x;
}

static MPI_Datatype affine_dt, gap_dt; /* made by the main thread, used by all */
static MPI_Op affine;
static int nthreads = 4, iters = 100, renew = 16;

typedef struct {
    int t;
    MPI_Comm comm;
} job_t;

#define MAXC 64

static void round_of(int t, int it, MPI_Comm comm) {
    int p, r;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &r);
    int salt = t * 10007 + it;
    int root = (it + t) % p, bad = 0;
    int a[MAXC * 8], b[MAXC * 8];
    int n = 1 + (it * 7 + t) % MAXC;
    /* Bcast */
    for (int i = 0; i < n; i++) a[i] = r == root ? val(root, i, salt) : -1;
    MPI_Bcast(a, n, MPI_INT, root, comm);
    for (int i = 0; i < n; i++) bad += a[i] != val(root, i, salt);
    CHECK(!bad, "thread %d round %d bcast n=%d root=%d: %d wrong", t, it, n, root, bad);
    /* Reduce, sum */
    for (int i = 0; i < n; i++) {
        a[i] = val(r, i, salt);
        b[i] = -1;
    }
    MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
    if (r == root) {
        bad = 0;
        for (int i = 0; i < n; i++) {
            int e = 0;
            for (int s = 0; s < p; s++) e += val(s, i, salt);
            bad += b[i] != e;
        }
        CHECK(!bad, "thread %d round %d reduce n=%d root=%d: %d wrong", t, it, n, root, bad);
    }
    /* Allreduce: even threads 4 ints with MPI_SUM (at least as many elements as
     * processes up to 4: ring runs, no fallback), odd threads 10 affine maps */
    if (t % 2 == 0) {
        for (int i = 0; i < 4; i++) a[i] = val(r, i, salt);
        MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, comm);
        bad = 0;
        for (int i = 0; i < 4; i++) {
            int e = 0;
            for (int s = 0; s < p; s++) e += val(s, i, salt);
            bad += b[i] != e;
        }
        CHECK(!bad, "thread %d round %d allreduce sum: %d wrong", t, it, bad);
    } else {
        affine_t x[10], y[10];
        for (int i = 0; i < 10; i++) x[i] = affine_of(r, i, salt);
        MPI_Allreduce(x, y, 10, affine_dt, affine, comm);
        bad = 0;
        for (int i = 0; i < 10; i++) {
            affine_t e = affine_of(p - 1, i, salt);
            for (int s = p - 2; s >= 0; s--) {
                affine_t u = affine_of(s, i, salt);
                int one = 1;
                affine_op(&u, &e, &one, NULL);
            }
            bad += y[i].a != e.a || y[i].b != e.b;
        }
        CHECK(!bad, "thread %d round %d allreduce affine: %d wrong", t, it, bad);
    }
    /* Gather, then Scatter back: m ints a process */
    int m = 1 + (it + 3 * t) % 8;
    for (int i = 0; i < m; i++) a[i] = val(r, i, salt + 1);
    for (int i = 0; i < m * p; i++) b[i] = -1;
    MPI_Gather(a, m, MPI_INT, b, m, MPI_INT, root, comm);
    if (r == root) {
        bad = 0;
        for (int s = 0; s < p; s++)
            for (int i = 0; i < m; i++) bad += b[s * m + i] != val(s, i, salt + 1);
        CHECK(!bad, "thread %d round %d gather m=%d root=%d: %d wrong", t, it, m, root, bad);
        for (int s = 0; s < p; s++)
            for (int i = 0; i < m; i++) b[s * m + i] = val(s, i, salt + 2);
    }
    for (int i = 0; i < m; i++) a[i] = -1;
    MPI_Scatter(b, m, MPI_INT, a, m, MPI_INT, root, comm);
    bad = 0;
    for (int i = 0; i < m; i++) bad += a[i] != val(r, i, salt + 2);
    CHECK(!bad, "thread %d round %d scatter m=%d root=%d: %d wrong", t, it, m, root, bad);
    /* Allgather of ints with holes: element i at a[2i], a[2i+1] untouched */
    int g = 1 + (it + t) % 3;
    for (int i = 0; i < 2 * g; i++) a[i] = i % 2 ? -7 : val(r, i / 2, salt + 3);
    for (int i = 0; i < 2 * g * p; i++) b[i] = -9;
    MPI_Allgather(a, g, gap_dt, b, g, gap_dt, comm);
    bad = 0;
    for (int s = 0; s < p; s++)
        for (int i = 0; i < g; i++)
            bad += b[2 * (s * g + i)] != val(s, i, salt + 3) || b[2 * (s * g + i) + 1] != -9;
    CHECK(!bad, "thread %d round %d allgather g=%d: %d wrong", t, it, g, bad);
    /* Alltoall: k ints to each process */
    int k = 1 + (it + 5 * t) % 4;
    for (int s = 0; s < p; s++)
        for (int i = 0; i < k; i++) a[s * k + i] = val(r, s * 100 + i, salt + 4);
    MPI_Alltoall(a, k, MPI_INT, b, k, MPI_INT, comm);
    bad = 0;
    for (int s = 0; s < p; s++)
        for (int i = 0; i < k; i++) bad += b[s * k + i] != val(s, r * 100 + i, salt + 4);
    CHECK(!bad, "thread %d round %d alltoall k=%d: %d wrong", t, it, k, bad);
    /* Alltoallv: s+1+j%2 ints from process s to process j */
    int sc[16], sd[16], rc[16], rd[16], so = 0, ro = 0;
    for (int j = 0; j < p; j++) {
        sc[j] = r + 1 + j % 2;
        sd[j] = so;
        so += sc[j];
        rc[j] = j + 1 + r % 2;
        rd[j] = ro;
        ro += rc[j];
    }
    for (int j = 0; j < p; j++)
        for (int i = 0; i < sc[j]; i++) a[sd[j] + i] = val(r, j * 100 + i, salt + 5);
    MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, comm);
    bad = 0;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < rc[j]; i++) bad += b[rd[j] + i] != val(j, r * 100 + i, salt + 5);
    CHECK(!bad, "thread %d round %d alltoallv: %d wrong", t, it, bad);
    MPI_Barrier(comm);
}

static void *worker(void *arg) {
    job_t *j = arg;
    for (int it = 0; it < iters; it++) {
        round_of(j->t, it, j->comm);
        if (renew > 0 && (it + 1) % renew == 0) {
            MPI_Comm next;
            MPI_Comm_dup(j->comm, &next);
            MPI_Comm_free(&j->comm);
            j->comm = next;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = MPI_THREAD_SINGLE, p;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) nthreads = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--iters") == 0) iters = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--renew") == 0) renew = atoi(argv[++i]);
        else {
            if (wrank == 0)
                fprintf(stderr, "usage: colltune-threads [--threads T] [--iters N] "
                                "[--renew K]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (provided != MPI_THREAD_MULTIPLE || nthreads < 1 || nthreads > 64 || p > 16) {
        if (wrank == 0)
            fprintf(stderr, "threads: needs MPI_THREAD_MULTIPLE (provided: %d), 1..64 "
                            "threads and at most 16 processes\n", provided);
        MPI_Finalize();
        return 1;
    }
    MPI_Type_contiguous(2, MPI_UNSIGNED, &affine_dt);
    MPI_Type_commit(&affine_dt);
    MPI_Op_create(affine_op, 0, &affine);
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &gap_dt);
    MPI_Type_commit(&gap_dt);
    job_t *jobs = calloc((size_t)nthreads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
    for (int t = 0; t < nthreads; t++) { /* collective on MPI_COMM_WORLD: one thread */
        jobs[t].t = t;
        MPI_Comm_split(MPI_COMM_WORLD, 0, t % 2 ? p - 1 - wrank : wrank, &jobs[t].comm);
    }
    for (int t = 0; t < nthreads; t++) pthread_create(&tid[t], NULL, worker, &jobs[t]);
    for (int t = 0; t < nthreads; t++) pthread_join(tid[t], NULL);
    for (int t = 0; t < nthreads; t++) MPI_Comm_free(&jobs[t].comm);
    /* four elements (two used): at least one per process up to 4, so the forced ring
     * runs here too and the only fallback is the odd threads' */
    long mine[4] = { nfail, nchecks, 0, 0 }, all[4];
    MPI_Allreduce(mine, all, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0 && all[0] == 0)
        printf("threads: %ld checks passed (%d threads x %d rounds, %d processes)\n", all[1],
               nthreads, iters, p);
    MPI_Op_free(&affine);
    MPI_Type_free(&affine_dt);
    MPI_Type_free(&gap_dt);
    free(jobs);
    free(tid);
    MPI_Finalize();
    return all[0] ? 1 : 0;
}
