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

#include <stdio.h>

#define st ct_pmpi_st

/* ---- lookup -------------------------------------------------------------- */

static const ct_pmpi_decision_t *decide(ct_coll_t c, int np, long long size) {
    if (st.forced[c]) return st.forced[c];
    if (st.last[c].d && st.last[c].np == np && st.last[c].size == size) return st.last[c].d;
    const ct_pmpi_decision_t *d = &st.nomatch[c];
    const ct_pmpi_decision_t *r = st.rules.rules[c];
    for (int i = 0, n = st.rules.nrules[c]; i < n; i++)
        if ((r[i].load < 0 || r[i].load == st.load_class) && r[i].np_min <= np &&
            (r[i].np_max < 0 || np <= r[i].np_max) &&
            r[i].size_min <= size && (r[i].size_max < 0 || size <= r[i].size_max)) {
            d = &r[i];
            break;
        }
    st.last[c].np = np;
    st.last[c].size = size;
    st.last[c].d = d;
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

static long long bucket_of(long long size) {
    long long b = 1;
    if (size <= 0) return 0;
    while (b <= size / 2) b *= 2;
    return b;
}

static void say(ct_coll_t c, int np, long long size, const ct_pmpi_decision_t *d, int used,
                const char *why, const char *detail) {
    /* forced and unmatched decisions have no size class of their own: the
     * power-of-two bucket of the size stands for it */
    int ranged = d->rule;
    long long bucket = ranged ? -1 : bucket_of(size);
    for (int i = 0; i < nseen; i++)
        if (seen[i].coll == (int)c && seen[i].np == np && seen[i].id == d->id &&
            seen[i].used == used && seen[i].bucket == bucket && seen[i].why == why)
            return;
    if (nseen == SEEN_MAX) return;
    seen[nseen].coll = (int)c;
    seen[nseen].np = np;
    seen[nseen].id = d->id;
    seen[nseen].used = used;
    seen[nseen].bucket = bucket;
    seen[nseen].why = why;
    nseen++;
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

/* why a call went to the library's own collective (pointers compared in `say`) */
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

/* ---- communicator facts, cached -------------------------------------------
 * The size of a communicator and whether it is an intercommunicator never
 * change, but a handle may be reused after MPI_Comm_free. So an entry lives only
 * while an attribute of ours sits on its communicator: the attribute's delete
 * callback, which MPI_Comm_free runs, removes the entry (the copy callback is
 * MPI_COMM_NULL_COPY_FN, so a duplicate starts without it). MPI_COMM_WORLD is
 * answered from what MPI_Init found. A hit costs a few compares instead of two
 * calls into the library. */
#define CCACHE 16
static struct {
    MPI_Comm comm;
    int np, inter, rank;
} ccache[CCACHE];
static int ccache_next, ccache_key = MPI_KEYVAL_INVALID, world_np;

static int ccache_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)key;
    (void)val;
    (void)extra;
    for (int i = 0; i < CCACHE; i++)
        if (ccache[i].comm == comm) ccache[i].comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

void ct_pmpi_ccache_init(void) {
    for (int i = 0; i < CCACHE; i++) ccache[i].comm = MPI_COMM_NULL;
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
    for (int i = 0; i < CCACHE; i++)
        if (ccache[i].comm == comm) {
            *np = ccache[i].np;
            *inter = ccache[i].inter;
            *rank = ccache[i].rank;
            return 0;
        }
    if (PMPI_Comm_test_inter(comm, inter) != MPI_SUCCESS ||
        PMPI_Comm_size(comm, np) != MPI_SUCCESS || PMPI_Comm_rank(comm, rank) != MPI_SUCCESS)
        return -1;
    /* setting the attribute first: replacing an old one runs the delete
     * callback, which must not remove the entry made after it */
    if (ccache_key != MPI_KEYVAL_INVALID &&
        PMPI_Comm_set_attr(comm, ccache_key, NULL) == MPI_SUCCESS) {
        int slot = ccache_next;
        ccache_next = (ccache_next + 1) % CCACHE;
        ccache[slot].comm = comm;
        ccache[slot].np = *np;
        ccache[slot].inter = *inter;
        ccache[slot].rank = *rank;
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
    if (count < 0 || dt == MPI_DATATYPE_NULL || ct_type_size(dt, &ts) != MPI_SUCCESS ||
        ts == MPI_UNDEFINED || ts < 0)
        return -1;
    return (long long)count * ts;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_BCAST, comm, &np, &r))
        return PMPI_Bcast(buf, count, dt, root, comm);
    long long size = bytes_of(count, dt);
    if (size < 0 || root < 0 || root >= np) {
        passthrough_note(CT_BCAST, np, size, WHY_ARGS);
        return PMPI_Bcast(buf, count, dt, root, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_BCAST, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Bcast(buf, count, dt, root, comm)
                       : ct_bcast(&d->choice, buf, count, dt, root, comm);
    if (st.observe) observe(CT_BCAST, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_BCAST, rc);
    return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_REDUCE, comm, &np, &r))
        return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
    long long size = bytes_of(count, dt);
    if (size < 0 || root < 0 || root >= np || op == MPI_OP_NULL ||
        (sbuf == MPI_IN_PLACE && r != root)) {
        passthrough_note(CT_REDUCE, np, size, WHY_ARGS);
        return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_REDUCE, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm)
                       : ct_reduce(&d->choice, sbuf, rbuf, count, dt, op, root, comm);
    if (st.observe) observe(CT_REDUCE, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_REDUCE, rc);
    return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
               MPI_Datatype rdt, int root, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_GATHER, comm, &np, &r))
        return PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    long long size = -1;
    if (root >= 0 && root < np && (sbuf != MPI_IN_PLACE || r == root)) {
        /* colltune's size: bytes per process (the send signature, or at the root
         * the receive signature, which must match it) */
        long long ssize = sbuf == MPI_IN_PLACE ? 0 : bytes_of(scount, sdt);
        long long rsize = r == root ? bytes_of(rcount, rdt) : 0;
        size = r == root ? (ssize < 0 ? -1 : rsize) : ssize;
    }
    if (size < 0) {
        passthrough_note(CT_GATHER, np, size, WHY_ARGS);
        return PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_GATHER, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm)
                       : ct_gather(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    if (st.observe) observe(CT_GATHER, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_GATHER, rc);
    return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_ALLGATHER, comm, &np, &r))
        return PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    long long size = bytes_of(rcount, rdt);
    if (size >= 0 && sbuf != MPI_IN_PLACE && bytes_of(scount, sdt) < 0) size = -1;
    if (size < 0) {
        passthrough_note(CT_ALLGATHER, np, size, WHY_ARGS);
        return PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_ALLGATHER, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
                       : ct_allgather(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    if (st.observe) observe(CT_ALLGATHER, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_ALLGATHER, rc);
    return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_ALLREDUCE, comm, &np, &r))
        return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
    long long size = bytes_of(count, dt);
    if (size < 0 || op == MPI_OP_NULL) {
        passthrough_note(CT_ALLREDUCE, np, size, WHY_ARGS);
        return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_ALLREDUCE, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm)
                       : ct_allreduce(&d->choice, sbuf, rbuf, count, dt, op, comm);
    if (st.observe) observe(CT_ALLREDUCE, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_ALLREDUCE, rc);
    return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                 MPI_Datatype rdt, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_ALLTOALL, comm, &np, &r))
        return PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    /* colltune's size: bytes per process per destination (as osu_alltoall) */
    long long size = bytes_of(rcount, rdt);
    if (size >= 0 && sbuf != MPI_IN_PLACE && bytes_of(scount, sdt) < 0) size = -1;
    if (size < 0) {
        passthrough_note(CT_ALLTOALL, np, size, WHY_ARGS);
        return PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_ALLTOALL, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
                       : ct_alltoall(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    if (st.observe) observe(CT_ALLTOALL, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_ALLTOALL, rc);
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdt,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rdt,
                  MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_ALLTOALLV, comm, &np, &r))
        return PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
    /* colltune's size: bytes this process receives per source, on average */
    long long size = -1;
    if (rcounts && rdispls && (sbuf == MPI_IN_PLACE || (scounts && sdispls &&
                                                        bytes_of(0, sdt) == 0))) {
        long long total = 0;
        for (int j = 0; j < np && total >= 0; j++) {
            long long b = bytes_of(rcounts[j], rdt);
            if (b < 0 || (sbuf != MPI_IN_PLACE && scounts[j] < 0)) total = -1;
            else total += b;
        }
        size = total < 0 ? -1 : total / np;
    }
    if (size < 0) {
        passthrough_note(CT_ALLTOALLV, np, size, WHY_ARGS);
        return PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_ALLTOALLV, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native
                 ? PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm)
                 : ct_alltoallv(&d->choice, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
                                rdt, comm);
    if (st.observe) observe(CT_ALLTOALLV, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_ALLTOALLV, rc);
    return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                MPI_Datatype rdt, int root, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_SCATTER, comm, &np, &r))
        return PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    long long size = -1;
    if (root >= 0 && root < np && (rbuf != MPI_IN_PLACE || r == root)) {
        /* colltune's size: bytes per process (the root's send signature, elsewhere the
         * receive signature, which must match it) */
        long long rsize = rbuf == MPI_IN_PLACE ? 0 : bytes_of(rcount, rdt);
        long long ssize = r == root ? bytes_of(scount, sdt) : 0;
        size = r == root ? (rsize < 0 ? -1 : ssize) : rsize;
    }
    if (size < 0) {
        passthrough_note(CT_SCATTER, np, size, WHY_ARGS);
        return PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_SCATTER, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm)
                       : ct_scatter(&d->choice, sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    if (st.observe) observe(CT_SCATTER, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_SCATTER, rc);
    return rc;
}

int MPI_Barrier(MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_BARRIER, comm, &np, &r)) return PMPI_Barrier(comm);
    const ct_pmpi_decision_t *d = decide(CT_BARRIER, np, 0); /* size 0: no message */
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Barrier(comm) : ct_barrier(&d->choice, comm);
    if (st.observe) observe(CT_BARRIER, np, 0, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_BARRIER, rc);
    return rc;
}


int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rdt, MPI_Comm comm) {
    int np, r;
    if (!st.active || intra_size(CT_ALLGATHERV, comm, &np, &r))
        return PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
    /* colltune's size: bytes per process on average (the whole result / p, as
     * osu_allgatherv); the same on every rank, since block j's signature is rank j's */
    long long size = -1;
    if (rcounts && displs && (sbuf == MPI_IN_PLACE || bytes_of(scount, sdt) >= 0)) {
        long long total = 0;
        for (int j = 0; j < np && total >= 0; j++) {
            long long b = bytes_of(rcounts[j], rdt);
            total = b < 0 ? -1 : total + b;
        }
        size = total < 0 ? -1 : total / np;
    }
    if (size < 0) {
        passthrough_note(CT_ALLGATHERV, np, size, WHY_ARGS);
        return PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
    }
    const ct_pmpi_decision_t *d = decide(CT_ALLGATHERV, np, size);
    double t0 = st.profile ? PMPI_Wtime() : 0;
    int rc = d->native ? PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm)
                       : ct_allgatherv(&d->choice, sbuf, scount, sdt, rbuf, rcounts, displs,
                                       rdt, comm);
    if (st.observe) observe(CT_ALLGATHERV, np, size, d, t0);
    if (rc != MPI_SUCCESS && !d->native) return raise_error(comm, CT_ALLGATHERV, rc);
    return rc;
}
