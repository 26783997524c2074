/*
 * pmpi_call.c -- the calls of libcolltune-pmpi.so: an MPI_<Coll> for each collective
 * of colltune.h (docs/interposition.md), and what every one of them does: the
 * communicator's facts (cached), the decision for (collective, size, bytes), the
 * verbose line and the profile entry, and an error raised as the library would.
 *
 * Adding a collective: its intercept at the end of this file, same shape as the
 * others (the library's own call for whatever the algorithms do not take).
 */
#include "pmpi_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define st ct_pmpi_st

/* ---- processes per node, for ppn= rules ----------------------------------
 * The largest number of the communicator's processes on one node (MPI_Comm_split_type
 * MPI_COMM_TYPE_SHARED, then a maximum over the communicator): collective, so it is
 * computed at the first call on a communicator that consults the rules, which every
 * rank makes alike, and kept in an attribute of the communicator (freed with it). Only
 * when the rules have ppn= keys. */
static int ppn_key = MPI_KEYVAL_INVALID;

static int ppn_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm;
    (void)key;
    (void)extra;
    free(val);
    return MPI_SUCCESS;
}

void ct_pmpi_ppn_init(void) {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ppn_delete, &ppn_key, NULL) !=
        MPI_SUCCESS)
        ppn_key = MPI_KEYVAL_INVALID;
}

static int comm_ppn(MPI_Comm comm) {
    int *v, flag = 0, local = 1, ppn = 1;
    if (ppn_key != MPI_KEYVAL_INVALID &&
        PMPI_Comm_get_attr(comm, ppn_key, &v, &flag) == MPI_SUCCESS && flag)
        return *v;
    MPI_Comm node;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        PMPI_Comm_size(node, &local);
        PMPI_Comm_free(&node);
    }
    PMPI_Allreduce(&local, &ppn, 1, MPI_INT, MPI_MAX, comm);
    if (ppn_key != MPI_KEYVAL_INVALID && (v = malloc(sizeof *v)) != NULL) {
        *v = ppn;
        if (PMPI_Comm_set_attr(comm, ppn_key, v) != MPI_SUCCESS) free(v);
    }
    return ppn;
}

/* ---- lookup -------------------------------------------------------------- */

/* The last lookup per collective, per thread (a loop calls one size again and
 * again); the load class and the communicator's processes per node are part of the
 * key, so MPI_Pcontrol's new class, set in one thread, is seen by every thread's next
 * lookup. */
static CT_THREAD_LOCAL struct {
    int np, load_class, ppn;
    long long size;
    const ct_pmpi_decision_t *d;
} last[CT_NCOLL];

static const ct_pmpi_decision_t *decide(ct_coll_t c, MPI_Comm comm, int np, long long size) {
    if (st.forced[c]) return st.forced[c];
    int cls = atomic_load_explicit(&st.load_class, memory_order_relaxed);
    int ppn = st.rules.has_ppn ? comm_ppn(comm) : 0;
    if (last[c].d && last[c].np == np && last[c].size == size && last[c].load_class == cls &&
        last[c].ppn == ppn)
        return last[c].d;
    const ct_pmpi_decision_t *d = &st.nomatch[c];
    const ct_pmpi_decision_t *r = st.rules.rules[c];
    for (int i = 0, n = st.rules.nrules[c]; i < n; i++)
        if ((r[i].load < 0 || r[i].load == cls) && r[i].np_min <= np &&
            (r[i].np_max < 0 || np <= r[i].np_max) &&
            r[i].size_min <= size && (r[i].size_max < 0 || size <= r[i].size_max) &&
            (r[i].ppn_min < 0 || (r[i].ppn_min <= ppn && (r[i].ppn_max < 0 ||
                                                          ppn <= r[i].ppn_max)))) {
            d = &r[i];
            break;
        }
    last[c].np = np;
    last[c].size = size;
    last[c].load_class = cls;
    last[c].ppn = ppn;
    last[c].d = d;
    return d;
}

/* ---- verbose: each distinct decision once -------------------------------- */

#define SEEN_MAX 4096
static struct {
    int coll, np, id, used;
    long long bucket;
    const char *why;
} seen[SEEN_MAX];
static int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER; /* seen, nseen */

static long long bucket_of(long long size) {
    long long b = 1;
    if (size <= 0) return 0;
    while (b <= size / 2) b *= 2;
    return b;
}

/* 1 when the decision is new (and now recorded), 0 when it was seen before */
static int first_seen(ct_coll_t c, int np, const ct_pmpi_decision_t *d, int used,
                      long long bucket, const char *why) {
    int fresh = 0;
    pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nseen; i++)
        if (seen[i].coll == (int)c && seen[i].np == np && seen[i].id == d->id &&
            seen[i].used == used && seen[i].bucket == bucket && seen[i].why == why)
            goto out;
    if (nseen == SEEN_MAX) goto out;
    fresh = 1;
    seen[nseen].coll = (int)c;
    seen[nseen].np = np;
    seen[nseen].id = d->id;
    seen[nseen].used = used;
    seen[nseen].bucket = bucket;
    seen[nseen].why = why;
    nseen++;
out:
    pthread_mutex_unlock(&seen_lock);
    return fresh;
}

static void say(ct_coll_t c, int np, long long size, const ct_pmpi_decision_t *d, int used,
                const char *why, const char *detail) {
    /* forced and unmatched decisions have no size class of their own: the
     * power-of-two bucket of the size stands for it */
    int ranged = d->rule;
    long long bucket = ranged ? -1 : bucket_of(size);
    if (!first_seen(c, np, d, used, bucket, why)) return;
    char cls[96];
    if (size < 0) {
        snprintf(cls, sizeof cls, "-");
    } else if (ranged) {
        if (d->size_max < 0)
            snprintf(cls, sizeof cls, "%lld.. B", d->size_min);
        else
            snprintf(cls, sizeof cls, "%lld..%lld B", d->size_min, d->size_max);
    } else {
        snprintf(cls, sizeof cls, "%lld..%lld B", bucket, bucket ? 2 * bucket - 1 : 0);
    }
    const char *ran = used >= 0 ? ct_algo_get(used)->name : "native";
    char under[96] = "";
    if (d->rule && d->load >= 0 && d->load < st.rules.nclasses)
        snprintf(under, sizeof under, "; load %s", st.rules.classes[d->load].name);
    ct_pmpi_say("%s np=%d size %s: %s (%s%s%s%s)", ct_coll_name(c), np, cls, ran, why, under,
                detail && *detail ? "; " : "", detail ? detail : "");
}

/* ---- the calls ----------------------------------------------------------- */

/* why a call went to the library's own collective (pointers compared in `say`; the
 * profile's `source` of such calls, which colltune.rules.interpose knows) */
static const char WHY_INTER[] = "intercommunicator: the library's own";
static const char WHY_ARGS[] = "argument the algorithms do not take: the library's own";

static int passthrough_note(ct_coll_t c, int np, long long size, const char *why) {
    if (st.verbose) say(c, np, size, &st.nomatch[c], -1, why, NULL);
    return 0;
}

/* What ran and how long it took, after one of our algorithms or the library's. */
static void observe(ct_coll_t c, int np, long long size, const ct_pmpi_decision_t *d,
                    double t0) {
    double dt = st.profile ? PMPI_Wtime() - t0 : 0;
    int used = d->choice.algo;
    const char *detail = NULL;
    if (!d->native) {
        const ct_dispatch_t *ld = ct_last_dispatch();
        used = ld->used;
        detail = ld->reason;
    }
    if (st.verbose) say(c, np, size, d, used, d->source, detail);
    if (st.profile) ct_pmpi_profile_add(c, np, size, d, used, dt);
}

/* An error from one of our algorithms: through the communicator's error handler,
 * as the library would report it. */
static int raise_error(MPI_Comm comm, ct_coll_t c, int rc) {
    ct_pmpi_say("%s failed on rank %d: %s", ct_coll_name(c), st.rank, ct_last_error());
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* the start of a call's time, when profiling */
static inline double start(void) { return st.profile ? PMPI_Wtime() : 0; }

/* after the call: what ran (verbose, profile); an error of ours raised through the
 * communicator's error handler (the library raises its own) */
static inline int finish(ct_coll_t c, MPI_Comm comm, int np, long long size,
                         const ct_pmpi_decision_t *d, double t0, int rc) {
    if (st.observe) observe(c, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, c, rc);
    return rc;
}

/* ---- communicator facts, cached -------------------------------------------
 * The size of a communicator and whether it is an intercommunicator never
 * change, but a handle may be reused after MPI_Comm_free. So an entry lives only
 * while an attribute of ours sits on its communicator: the attribute's delete
 * callback, which MPI_Comm_free runs, has the entry forgotten (the copy callback
 * is MPI_COMM_NULL_COPY_FN, so a duplicate starts without it). MPI_COMM_WORLD is
 * answered from what MPI_Init found. A hit costs a few compares instead of two
 * calls into the library.
 * Threads: the table is per thread (different threads may call collectives on
 * different communicators at once), so a hit reads nothing another thread
 * writes; the delete callback, which may run in any thread, advances a
 * process-wide epoch, and a table of an older epoch is emptied before its next
 * lookup. */
#define CCACHE 16
static _Atomic unsigned ccache_epoch = 1; /* a thread's table starts at 0: emptied first */
static CT_THREAD_LOCAL struct {
    unsigned epoch;
    int next;
    struct {
        MPI_Comm comm;
        int np, inter, rank;
    } e[CCACHE];
} tc;
static int ccache_key = MPI_KEYVAL_INVALID, world_np; /* set at MPI_Init */

static int ccache_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm;
    (void)key;
    (void)val;
    (void)extra;
    atomic_fetch_add_explicit(&ccache_epoch, 1, memory_order_release);
    return MPI_SUCCESS;
}

/* This thread's table, emptied when a communicator was freed since it was filled. */
static inline void ccache_sync(void) {
    unsigned ep = atomic_load_explicit(&ccache_epoch, memory_order_acquire);
    if (tc.epoch != ep) {
        for (int i = 0; i < CCACHE; i++) tc.e[i].comm = MPI_COMM_NULL;
        tc.epoch = ep;
    }
}

void ct_pmpi_ccache_init(void) {
    PMPI_Comm_size(MPI_COMM_WORLD, &world_np);
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ccache_delete, &ccache_key, NULL) !=
        MPI_SUCCESS)
        ccache_key = MPI_KEYVAL_INVALID;
}

/* 0 with the size, inter flag and this process's rank (in the local group),
 * -1 when the library must take the call */
static int comm_facts(MPI_Comm comm, int *np, int *inter, int *rank) {
    if (comm == MPI_COMM_WORLD) {
        *np = world_np;
        *inter = 0;
        *rank = st.rank;
        return 0;
    }
    if (comm == MPI_COMM_NULL) return -1;
    ccache_sync();
    for (int i = 0; i < CCACHE; i++)
        if (tc.e[i].comm == comm) {
            *np = tc.e[i].np;
            *inter = tc.e[i].inter;
            *rank = tc.e[i].rank;
            return 0;
        }
    if (PMPI_Comm_test_inter(comm, inter) != MPI_SUCCESS ||
        PMPI_Comm_size(comm, np) != MPI_SUCCESS || PMPI_Comm_rank(comm, rank) != MPI_SUCCESS)
        return -1;
    /* the attribute is set once per communicator (another thread's table may hold
     * it already: replacing it would run the delete callback and empty every
     * table), then the entry is made under the epoch after it */
    void *val;
    int found = 0;
    if (ccache_key != MPI_KEYVAL_INVALID &&
        PMPI_Comm_get_attr(comm, ccache_key, &val, &found) == MPI_SUCCESS &&
        (found || PMPI_Comm_set_attr(comm, ccache_key, NULL) == MPI_SUCCESS)) {
        ccache_sync();
        int slot = tc.next;
        tc.next = (tc.next + 1) % CCACHE;
        tc.e[slot].comm = comm;
        tc.e[slot].np = *np;
        tc.e[slot].inter = *inter;
        tc.e[slot].rank = *rank;
    }
    return 0;
}

/* Communicator checks shared by every collective: 0 with the size and this
 * process's rank, or -1 when the call must go to the library (which raises any
 * error itself). */
static int intra_size(ct_coll_t c, MPI_Comm comm, int *np, int *rank) {
    int inter = 0;
    if (comm_facts(comm, np, &inter, rank)) return -1;
    if (inter) {
        passthrough_note(c, *np, -1, WHY_INTER);
        return -1;
    }
    return 0;
}

/* size in bytes of count elements, or -1 (MPI_DATATYPE_NULL, size undefined) */
static long long bytes_of(int count, MPI_Datatype dt) {
    int ts;
    if (count < 0 || dt == MPI_DATATYPE_NULL || ct_type_size_call(dt, &ts) != MPI_SUCCESS ||
        ts == MPI_UNDEFINED || ts < 0)
        return -1;
    return (long long)count * ts;
}

/* colltune's size of a rooted call (gather, scatter): bytes per process, from the
 * arguments significant on this rank: each rank's own block (`mine`: gather's send,
 * scatter's receive; not significant at a root with MPI_IN_PLACE) and at the root the
 * root's side (`all`: gather's receive, scatter's send), whose signature must match.
 * -1: an argument the algorithms do not take. */
static long long rooted_size(int r, int root, int np, int in_place, int mcount,
                             MPI_Datatype mdt, int acount, MPI_Datatype adt) {
    if (root < 0 || root >= np || (in_place && r != root)) return -1;
    long long mine = in_place ? 0 : bytes_of(mcount, mdt);
    if (r != root) return mine;
    return mine < 0 ? -1 : bytes_of(acount, adt);
}

/* The library's own call for one the algorithms do not take; timed into the profile
 * (source: why) when profiling. */
#define CT_PASSTHROUGH(C, NP, WHY, LIBRARY_CALL)                                        \
    do {                                                                                \
        if (!st.profile) return LIBRARY_CALL;                                           \
        double t0_ = PMPI_Wtime();                                                      \
        int rc_ = LIBRARY_CALL;                                                         \
        ct_pmpi_profile_add_passthrough(C, NP, WHY, PMPI_Wtime() - t0_);                \
        return rc_;                                                                     \
    } while (0)

/* ---- the intercepts ---------------------------------------------------------
 * Every one is CT_INTERCEPT(C, SIZE, LIBRARY_CALL, OUR_CALL): inactive, MPI_COMM_NULL
 * or an intercommunicator -> the library (intra_size); SIZE, colltune's size of the
 * call from the arguments significant on this rank (np and r, this rank, are known
 * there), -1 (and the library) for any argument the algorithms do not take; decide();
 * the library's own call or ours (`d->choice`); finish(). */
#define CT_INTERCEPT(C, SIZE, LIBRARY_CALL, OUR_CALL)                                   \
    do {                                                                                \
        int np = 0, r;                                                                  \
        if (!st.active) return LIBRARY_CALL;                                            \
        if (intra_size(C, comm, &np, &r)) CT_PASSTHROUGH(C, np, WHY_INTER, LIBRARY_CALL); \
        long long size = (SIZE);                                                        \
        if (size < 0) {                                                                 \
            passthrough_note(C, np, size, WHY_ARGS);                                    \
            CT_PASSTHROUGH(C, np, WHY_ARGS, LIBRARY_CALL);                              \
        }                                                                               \
        const ct_pmpi_decision_t *d = decide(C, comm, np, size);                        \
        double t0 = start();                                                            \
        int rc = d->native ? LIBRARY_CALL : OUR_CALL;                                   \
        return finish(C, comm, np, size, d, t0, rc);                                    \
    } while (0)

/* allgather, alltoall: the receive signature per process (per destination), and a
 * send signature that has a size unless in place */
static long long block_size(const void *sbuf, int scount, MPI_Datatype sdt, int rcount,
                            MPI_Datatype rdt) {
    long long size = bytes_of(rcount, rdt);
    return size >= 0 && sbuf != MPI_IN_PLACE && bytes_of(scount, sdt) < 0 ? -1 : size;
}

/* alltoallv: bytes this process receives per source, on average */
static long long alltoallv_size(const void *sbuf, const int scounts[], const int sdispls[],
                                MPI_Datatype sdt, const int rcounts[], const int rdispls[],
                                MPI_Datatype rdt, int np) {
    if (!rcounts || !rdispls ||
        (sbuf != MPI_IN_PLACE && (!scounts || !sdispls || bytes_of(0, sdt) != 0)))
        return -1;
    long long total = 0;
    for (int j = 0; j < np; j++) {
        long long b = bytes_of(rcounts[j], rdt);
        if (b < 0 || (sbuf != MPI_IN_PLACE && scounts[j] < 0)) return -1;
        total += b;
    }
    return total / np;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    CT_INTERCEPT(CT_BCAST, root < 0 || root >= np ? -1 : bytes_of(count, dt),
                 PMPI_Bcast(buf, count, dt, root, comm),
                 ct_bcast(&d->choice, buf, count, dt, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
    CT_INTERCEPT(CT_REDUCE,
                 root < 0 || root >= np || op == MPI_OP_NULL ||
                         (sbuf == MPI_IN_PLACE && r != root) ? -1 : bytes_of(count, dt),
                 PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm),
                 ct_reduce(&d->choice, sbuf, rbuf, count, dt, op, root, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
               MPI_Datatype rdt, int root, MPI_Comm comm) {
    CT_INTERCEPT(CT_GATHER,
                 rooted_size(r, root, np, sbuf == MPI_IN_PLACE, scount, sdt, rcount, rdt),
                 PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm),
                 ct_gather(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm) {
    CT_INTERCEPT(CT_ALLGATHER, block_size(sbuf, scount, sdt, rcount, rdt),
                 PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm),
                 ct_allgather(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
    CT_INTERCEPT(CT_ALLREDUCE, op == MPI_OP_NULL ? -1 : bytes_of(count, dt),
                 PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm),
                 ct_allreduce(&d->choice, sbuf, rbuf, count, dt, op, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                 MPI_Datatype rdt, MPI_Comm comm) {
    /* colltune's size: bytes per process per destination (as osu_alltoall) */
    CT_INTERCEPT(CT_ALLTOALL, block_size(sbuf, scount, sdt, rcount, rdt),
                 PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm),
                 ct_alltoall(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdt,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rdt,
                  MPI_Comm comm) {
    CT_INTERCEPT(CT_ALLTOALLV,
                 alltoallv_size(sbuf, scounts, sdispls, sdt, rcounts, rdispls, rdt, np),
                 PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm),
                 ct_alltoallv(&d->choice, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
                              rdt, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                MPI_Datatype rdt, int root, MPI_Comm comm) {
    CT_INTERCEPT(CT_SCATTER,
                 rooted_size(r, root, np, rbuf == MPI_IN_PLACE, rcount, rdt, scount, sdt),
                 PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm),
                 ct_scatter(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, root, comm));
}

int MPI_Barrier(MPI_Comm comm) {
    CT_INTERCEPT(CT_BARRIER, 0 /* no message */, PMPI_Barrier(comm),
                 ct_barrier(&d->choice, comm));
}


/* reduce_scatter: bytes each process receives, on average (the same on every rank:
 * recvcounts is); -1 for a negative count */
static long long avg_size(const int counts[], MPI_Datatype dt, int np) {
    if (!counts) return -1;
    long long total = 0;
    for (int j = 0; j < np; j++) {
        long long b = bytes_of(counts[j], dt);
        if (b < 0) return -1;
        total += b;
    }
    return total / np;
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm) {
    /* colltune's size: bytes each process receives (one block) */
    CT_INTERCEPT(CT_REDUCE_SCATTER_BLOCK, op == MPI_OP_NULL ? -1 : bytes_of(rcount, dt),
                 PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm),
                 ct_reduce_scatter_block(&d->choice, sbuf, rbuf, rcount, dt, op, comm));
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                       MPI_Op op, MPI_Comm comm) {
    CT_INTERCEPT(CT_REDUCE_SCATTER, op == MPI_OP_NULL ? -1 : avg_size(rcounts, dt, np),
                 PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm),
                 ct_reduce_scatter(&d->choice, sbuf, rbuf, rcounts, dt, op, comm));
}

/* allgatherv: bytes per process on average (the whole result / p, as osu_allgatherv);
 * the same on every rank, since block j's signature is rank j's */
static long long allgatherv_size(const void *sbuf, int scount, MPI_Datatype sdt,
                                 const int rcounts[], const int displs[], MPI_Datatype rdt,
                                 int np) {
    if (!displs || (sbuf != MPI_IN_PLACE && bytes_of(scount, sdt) < 0)) return -1;
    return avg_size(rcounts, rdt, np);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rdt, MPI_Comm comm) {
    CT_INTERCEPT(CT_ALLGATHERV, allgatherv_size(sbuf, scount, sdt, rcounts, displs, rdt, np),
                 PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm),
                 ct_allgatherv(&d->choice, sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                               comm));
}
