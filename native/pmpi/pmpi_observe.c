/*
 * pmpi_observe.c -- the collectives colltune does not run, profiled (COLLTUNE_PROFILE):
 * every other collective entry point of MPI-4 that the library defines, counted with
 * calls, bytes and time, so that `colltune profile` can say what share of the
 * program's collective time colltune can change and which calls stay the library's.
 *
 * From one line per collective (the tables below) come its forms:
 *   blocking      MPI_Gatherv                time inside the call
 *   nonblocking   MPI_Igatherv               time inside the starting call; the time
 *                                            from the start to the completion (span); the
 *                                            time spent in MPI_Wait... and MPI_Test... on it
 *   persistent    MPI_Gatherv_init           (MPI-4, where the library has it) the same,
 *                                            from each MPI_Start/MPI_Startall
 *   large count   MPI_Gatherv_c, MPI_Igatherv_c, MPI_Gatherv_init_c (where defined)
 * Every wrapper times and calls PMPI_<name>, nothing else: without COLLTUNE_PROFILE it is
 * one test and the library's call. The blocking wrappers are weak: a collective that
 * colltune intercepts (pmpi_call.c defines MPI_Bcast, ...) keeps its intercept, so a
 * collective moved there later needs no change here. A Fortran entry point calls the
 * C name (MPI_Igatherv) after converting its handles, and lands on the same path.
 *
 * Requests: the nonblocking and persistent ones are kept in a small table (handle,
 * entry, start time) until they complete in MPI_Wait, MPI_Waitall, MPI_Waitany,
 * MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany or MPI_Testsome, which are wrapped
 * here; with no such request outstanding each of these is one test and the library's
 * call. The time of a wait over several tracked requests is shared equally among them.
 * MPI_Request_free forgets a request; MPI_Start/MPI_Startall start a persistent one.
 *
 * Bytes of a call: the larger of what this process sends and what it receives, from its
 * buffers' type signatures (a reduction: its vector; MPI_IN_PLACE sends nothing; a
 * rooted call's other side only at the root; neighbourhood calls: per neighbour).
 *
 * Library support (CMake checks one symbol per group): CT_HAVE_COLL_INIT (MPI_Bcast_init),
 * CT_HAVE_NEIGHBOR_INIT (MPI_Neighbor_alltoallw_init), CT_HAVE_COLL_C (MPI_Bcast_c),
 * CT_HAVE_COLL_INIT_C (MPI_Bcast_init_c). Open MPI 4.1 has none of them, Open MPI 5 the
 * first two, MPICH 4 all four.
 */
#include "pmpi_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define st ct_pmpi_st

/* ---- the tables -----------------------------------------------------------
 * X(Name, name, (PARAMS), (ARGS), BYTES): PARAMS of the blocking form, with C the count
 * type, CA the element of a count array and D of a displacement array (int, or MPI_Count
 * and MPI_Aint for the large-count forms); BYTES from the parameters and the
 * communicator's facts `x` (obs_facts). The nonblocking form adds MPI_Request *req, the
 * persistent one MPI_Info info, MPI_Request *req. */
#define SB (sb == MPI_IN_PLACE)
#define CT_OBS_COLLS(X)                                                                           \
    X(Bcast, bcast, (void *b, C n, MPI_Datatype t, int root, MPI_Comm comm),                      \
      (b, n, t, root, comm), by(n, t))                                                            \
    X(Reduce, reduce, (const void *sb, void *rb, C n, MPI_Datatype t, MPI_Op op, int root,        \
      MPI_Comm comm), (sb, rb, n, t, op, root, comm), by(n, t))                                   \
    X(Allreduce, allreduce, (const void *sb, void *rb, C n, MPI_Datatype t, MPI_Op op,            \
      MPI_Comm comm), (sb, rb, n, t, op, comm), by(n, t))                                         \
    X(Scan, scan, (const void *sb, void *rb, C n, MPI_Datatype t, MPI_Op op, MPI_Comm comm),      \
      (sb, rb, n, t, op, comm), by(n, t))                                                         \
    X(Exscan, exscan, (const void *sb, void *rb, C n, MPI_Datatype t, MPI_Op op, MPI_Comm comm),  \
      (sb, rb, n, t, op, comm), by(n, t))                                                         \
    X(Gather, gather, (const void *sb, C sc, MPI_Datatype st_, void *rb, C rc, MPI_Datatype rt,   \
      int root, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, root, comm),                            \
      mx(SB ? 0 : by(sc, st_), at_root(&x, root) ? by(rc, rt) * x.peers : 0))                     \
    X(Gatherv, gatherv, (const void *sb, C sc, MPI_Datatype st_, void *rb, const CA rc[],         \
      const D dp[], MPI_Datatype rt, int root, MPI_Comm comm), (sb, sc, st_, rb, rc, dp, rt,      \
      root, comm), mx(SB ? 0 : by(sc, st_), at_root(&x, root) ? SUMV(rc, rt, x.peers) : 0))       \
    X(Scatter, scatter, (const void *sb, C sc, MPI_Datatype st_, void *rb, C rc,                  \
      MPI_Datatype rt, int root, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, root, comm),           \
      mx(at_root(&x, root) ? by(sc, st_) * x.peers : 0, rb == MPI_IN_PLACE ? 0 : by(rc, rt)))     \
    X(Scatterv, scatterv, (const void *sb, const CA sc[], const D dp[], MPI_Datatype st_,         \
      void *rb, C rc, MPI_Datatype rt, int root, MPI_Comm comm), (sb, sc, dp, st_, rb, rc, rt,    \
      root, comm), mx(at_root(&x, root) ? SUMV(sc, st_, x.peers) : 0,                             \
                      rb == MPI_IN_PLACE ? 0 : by(rc, rt)))                                       \
    X(Allgather, allgather, (const void *sb, C sc, MPI_Datatype st_, void *rb, C rc,              \
      MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, comm),                           \
      mx(SB ? 0 : by(sc, st_), by(rc, rt) * x.peers))                                             \
    X(Allgatherv, allgatherv, (const void *sb, C sc, MPI_Datatype st_, void *rb, const CA rc[],   \
      const D dp[], MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb, rc, dp, rt, comm),         \
      mx(SB ? 0 : by(sc, st_), SUMV(rc, rt, x.peers)))                                            \
    X(Alltoall, alltoall, (const void *sb, C sc, MPI_Datatype st_, void *rb, C rc,                \
      MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, comm),                           \
      mx(SB ? 0 : by(sc, st_) * x.peers, by(rc, rt) * x.peers))                                   \
    X(Alltoallv, alltoallv, (const void *sb, const CA sc[], const D sd[], MPI_Datatype st_,       \
      void *rb, const CA rc[], const D rd[], MPI_Datatype rt, MPI_Comm comm), (sb, sc, sd, st_,   \
      rb, rc, rd, rt, comm), mx(SB ? 0 : SUMV(sc, st_, x.peers), SUMV(rc, rt, x.peers)))          \
    X(Alltoallw, alltoallw, (const void *sb, const CA sc[], const D sd[],                         \
      const MPI_Datatype sts[], void *rb, const CA rc[], const D rd[],                            \
      const MPI_Datatype rts[], MPI_Comm comm), (sb, sc, sd, sts, rb, rc, rd, rts, comm),         \
      mx(SB ? 0 : SUMW(sc, sts, x.peers), SUMW(rc, rts, x.peers)))                                \
    X(Reduce_scatter_block, reduce_scatter_block, (const void *sb, void *rb, C rc,                \
      MPI_Datatype t, MPI_Op op, MPI_Comm comm), (sb, rb, rc, t, op, comm), by(rc, t) * x.peers)  \
    X(Reduce_scatter, reduce_scatter, (const void *sb, void *rb, const CA rc[], MPI_Datatype t,   \
      MPI_Op op, MPI_Comm comm), (sb, rb, rc, t, op, comm), SUMV(rc, t, x.peers))

/* neighbourhood collectives: x.in and x.out, the communicator's topology's degrees */
#define CT_OBS_NEIGHBOR(X)                                                                        \
    X(Neighbor_allgather, neighbor_allgather, (const void *sb, C sc, MPI_Datatype st_, void *rb,  \
      C rc, MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, comm),                     \
      mx(by(sc, st_) * x.out, by(rc, rt) * x.in))                                                 \
    X(Neighbor_allgatherv, neighbor_allgatherv, (const void *sb, C sc, MPI_Datatype st_,          \
      void *rb, const CA rc[], const D dp[], MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb,   \
      rc, dp, rt, comm), mx(by(sc, st_) * x.out, SUMV(rc, rt, x.in)))                             \
    X(Neighbor_alltoall, neighbor_alltoall, (const void *sb, C sc, MPI_Datatype st_, void *rb,    \
      C rc, MPI_Datatype rt, MPI_Comm comm), (sb, sc, st_, rb, rc, rt, comm),                     \
      mx(by(sc, st_) * x.out, by(rc, rt) * x.in))                                                 \
    X(Neighbor_alltoallv, neighbor_alltoallv, (const void *sb, const CA sc[], const D sd[],       \
      MPI_Datatype st_, void *rb, const CA rc[], const D rd[], MPI_Datatype rt, MPI_Comm comm),   \
      (sb, sc, sd, st_, rb, rc, rd, rt, comm), mx(SUMV(sc, st_, x.out), SUMV(rc, rt, x.in)))      \
    X(Neighbor_alltoallw, neighbor_alltoallw, (const void *sb, const CA sc[],                     \
      const MPI_Aint sd[], const MPI_Datatype sts[], void *rb, const CA rc[],                     \
      const MPI_Aint rd[], const MPI_Datatype rts[], MPI_Comm comm), (sb, sc, sd, sts, rb, rc,    \
      rd, rts, comm), mx(SUMW(sc, sts, x.out), SUMW(rc, rts, x.in)))

/* Barrier has no large-count form */
#define CT_OBS_BARRIER(X) X(Barrier, barrier, (MPI_Comm comm), (comm), 0)

/* one id per collective of the tables */
#define ID_OF(N, n, P, A, B) OBS_##N,
enum { CT_OBS_COLLS(ID_OF) CT_OBS_NEIGHBOR(ID_OF) CT_OBS_BARRIER(ID_OF) OBS_N };
#define NAME_OF(N, n, P, A, B) {#N, #n},
static const char *const obs_names[OBS_N][2] = {CT_OBS_COLLS(NAME_OF) CT_OBS_NEIGHBOR(NAME_OF)
                                                    CT_OBS_BARRIER(NAME_OF)};

enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT };

/* ---- bytes ---------------------------------------------------------------- */

typedef struct {
    int np;      /* the communicator's size (the local group's) */
    int peers;   /* the length of a per-process array: the remote group's size on an
                    intercommunicator */
    int rank;    /* in the local group */
    int inter;
    int in, out; /* neighbourhood collectives: the topology's degrees */
} obs_facts_t;

static void obs_facts(MPI_Comm comm, obs_facts_t *x, int neighbours) {
    memset(x, 0, sizeof *x);
    if (comm == MPI_COMM_NULL) return;
    PMPI_Comm_size(comm, &x->np);
    PMPI_Comm_rank(comm, &x->rank);
    PMPI_Comm_test_inter(comm, &x->inter);
    x->peers = x->np;
    if (x->inter) PMPI_Comm_remote_size(comm, &x->peers);
    if (!neighbours) return;
    int topo = MPI_UNDEFINED, weighted;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        x->in = x->out = 2 * nd;
    } else if (topo == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, x->rank, &x->in);
        x->out = x->in;
    } else if (topo == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &x->in, &x->out, &weighted);
    }
}

static long long tsize(MPI_Datatype t) {
    int s;
    if (t == MPI_DATATYPE_NULL || ct_type_size_call(t, &s) != MPI_SUCCESS || s < 0) return 0;
    return s;
}
static long long by(long long n, MPI_Datatype t) { return n > 0 ? n * tsize(t) : 0; }
static long long mx(long long a, long long b) { return a > b ? a : b; }
static int at_root(const obs_facts_t *x, int root) {
    return root == MPI_ROOT || (!x->inter && root == x->rank);
}
static long long sumv_i(const int *c, MPI_Datatype t, int n) {
    long long s = 0;
    for (int i = 0; c && i < n; i++) s += c[i] > 0 ? c[i] : 0;
    return s * tsize(t);
}
static long long sumw_i(const int *c, const MPI_Datatype *t, int n) {
    long long s = 0;
    for (int i = 0; c && t && i < n; i++) s += by(c[i], t[i]);
    return s;
}
#if CT_HAVE_COLL_C
static long long sumv_c(const MPI_Count *c, MPI_Datatype t, int n) {
    long long s = 0;
    for (int i = 0; c && i < n; i++) s += c[i] > 0 ? (long long)c[i] : 0;
    return s * tsize(t);
}
static long long sumw_c(const MPI_Count *c, const MPI_Datatype *t, int n) {
    long long s = 0;
    for (int i = 0; c && t && i < n; i++) s += by((long long)c[i], t[i]);
    return s;
}
#define SUMV(c, t, n) _Generic((c), const MPI_Count *: sumv_c, default: sumv_i)(c, t, n)
#define SUMW(c, t, n) _Generic((c), const MPI_Count *: sumw_c, default: sumw_i)(c, t, n)
#else
#define SUMV(c, t, n) sumv_i(c, t, n)
#define SUMW(c, t, n) sumw_i(c, t, n)
#endif

/* ---- the entries: (collective, form, large count, communicator size) ---------- */

typedef struct {
    int id, form, large, np;
    long long calls;       /* calls of the entry point (persistent: of MPI_<Coll>_init) */
    long long starts;      /* operations started (blocking: calls; persistent: MPI_Start) */
    long long completions; /* nonblocking, persistent: seen complete in a wait or test */
    double bytes;          /* over the operations started */
    double time;           /* inside the entry point (and MPI_Start) */
    double wait;           /* inside MPI_Wait* / MPI_Test* on its requests */
    double span;           /* from each start to its completion */
} obs_entry_t;

#define OBS_MAX 1024
static obs_entry_t obs_tab[OBS_MAX];
static int obs_n, obs_dropped;

/* a request of ours until it completes (persistent: until it is freed) */
typedef struct {
    MPI_Request h;
    int entry, persistent, active;
    long long bytes;
    double t0;
} tracked_t;
#define TRACK_MAX 1024
static tracked_t trk[TRACK_MAX];
static int ntrk, untracked;
static _Atomic int nactive_trk; /* nonzero: a wait or test may hold one of ours */
static _Atomic int nall_trk;    /* nonzero: MPI_Request_free may free one of ours */
/* obs_tab, obs_n, obs_dropped, trk, ntrk, untracked: under the lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int entry_locked(int id, int form, int large, int np) {
    for (int i = obs_n - 1; i >= 0; i--)
        if (obs_tab[i].id == id && obs_tab[i].form == form && obs_tab[i].large == large &&
            obs_tab[i].np == np)
            return i;
    if (obs_n == OBS_MAX) {
        obs_dropped++;
        return -1;
    }
    obs_entry_t *e = &obs_tab[obs_n];
    memset(e, 0, sizeof *e);
    e->id = id;
    e->form = form;
    e->large = large;
    e->np = np;
    return obs_n++;
}

/* A call of an entry point: its time; a blocking or nonblocking call starts an operation
 * of `bytes`; a nonblocking or persistent one leaves *req to be tracked. */
static void obs_call(int id, int form, int large, const obs_facts_t *x, long long bytes,
                     double t0, double t1, const MPI_Request *req) {
    pthread_mutex_lock(&lock);
    int i = entry_locked(id, form, large, x->np);
    if (i >= 0) {
        obs_entry_t *e = &obs_tab[i];
        e->calls++;
        e->time += t1 - t0;
        if (form != FORM_PERSISTENT) {
            e->starts++;
            e->bytes += (double)bytes;
        }
        if (form != FORM_BLOCKING && req && *req != MPI_REQUEST_NULL) {
            if (ntrk == TRACK_MAX) {
                untracked++;
            } else {
                tracked_t *r = &trk[ntrk++];
                r->h = *req;
                r->entry = i;
                r->persistent = form == FORM_PERSISTENT;
                r->active = !r->persistent;
                r->bytes = bytes;
                r->t0 = t0;
                if (r->active) atomic_fetch_add(&nactive_trk, 1);
                atomic_fetch_add(&nall_trk, 1);
            }
        }
    }
    pthread_mutex_unlock(&lock);
}

static int find_locked(MPI_Request h) {
    for (int i = 0; i < ntrk; i++)
        if (trk[i].h == h) return i;
    return -1;
}

static void forget_locked(int k) {
    if (trk[k].active) atomic_fetch_sub(&nactive_trk, 1);
    atomic_fetch_sub(&nall_trk, 1);
    trk[k] = trk[--ntrk];
}

/* ---- the wrappers ------------------------------------------------------------ */

#define ON (st.profile)
#define WEAK __attribute__((weak))

#define BLOCKING(N, n, P, A, B, SFX, LARGE, NB)                                       \
    int WEAK MPI_##N##SFX P {                                                         \
        if (!ON) return PMPI_##N##SFX A;                                                          \
        double t0 = PMPI_Wtime();                                                                 \
        int ret_ = PMPI_##N##SFX A;                                                               \
        double t1 = PMPI_Wtime();                                                                 \
        obs_facts_t x;                                                                            \
        obs_facts(comm, &x, NB);                                                                  \
        obs_call(OBS_##N, FORM_BLOCKING, LARGE, &x, (B), t0, t1, NULL);                           \
        return ret_;                                                                              \
    }

#define STARTED(N, NAME, PARAMS_REQ, ARGS_REQ, B, FORM, LARGE, NB)                    \
    int WEAK NAME PARAMS_REQ {                                                        \
        if (!ON) return P##NAME ARGS_REQ;                                                         \
        double t0 = PMPI_Wtime();                                                                 \
        int ret_ = P##NAME ARGS_REQ;                                                              \
        double t1 = PMPI_Wtime();                                                                 \
        obs_facts_t x;                                                                            \
        obs_facts(comm, &x, NB);                                                                  \
        obs_call(OBS_##N, FORM, LARGE, &x, ret_ == MPI_SUCCESS ? (B) : 0, t0, t1,                 \
                 ret_ == MPI_SUCCESS ? req : NULL);                                               \
        return ret_;                                                                              \
    }

/* (a, b) + MPI_Request *req -> (a, b, MPI_Request *req) */
#define ADD_REQ(...) (__VA_ARGS__, MPI_Request *req)
#define ADD_REQ_A(...) (__VA_ARGS__, req)
#define ADD_INFO_REQ(...) (__VA_ARGS__, MPI_Info info, MPI_Request *req)
#define ADD_INFO_REQ_A(...) (__VA_ARGS__, info, req)

#define NONBLOCKING(N, n, P, A, B, SFX, LARGE, NB)                                    \
    STARTED(N, MPI_I##n##SFX, ADD_REQ P, ADD_REQ_A A, B, FORM_NONBLOCKING, LARGE, NB)
#define PERSISTENT(N, n, P, A, B, SFX, LARGE, NB)                                     \
    STARTED(N, MPI_##N##_init##SFX, ADD_INFO_REQ P, ADD_INFO_REQ_A A, B,              \
            FORM_PERSISTENT, LARGE, NB)

/* the forms, as X-macros of the tables */
#define B_INT(N, n, P, A, B) BLOCKING(N, n, P, A, B, , 0, 0)
#define I_INT(N, n, P, A, B) NONBLOCKING(N, n, P, A, B, , 0, 0)
#define P_INT(N, n, P, A, B) PERSISTENT(N, n, P, A, B, , 0, 0)
#define B_INT_NB(N, n, P, A, B) BLOCKING(N, n, P, A, B, , 0, 1)
#define I_INT_NB(N, n, P, A, B) NONBLOCKING(N, n, P, A, B, , 0, 1)
#define P_INT_NB(N, n, P, A, B) PERSISTENT(N, n, P, A, B, , 0, 1)
#define B_C(N, n, P, A, B) BLOCKING(N, n, P, A, B, _c, 1, 0)
#define I_C(N, n, P, A, B) NONBLOCKING(N, n, P, A, B, _c, 1, 0)
#define P_C(N, n, P, A, B) PERSISTENT(N, n, P, A, B, _c, 1, 0)
#define B_C_NB(N, n, P, A, B) BLOCKING(N, n, P, A, B, _c, 1, 1)
#define I_C_NB(N, n, P, A, B) NONBLOCKING(N, n, P, A, B, _c, 1, 1)
#define P_C_NB(N, n, P, A, B) PERSISTENT(N, n, P, A, B, _c, 1, 1)

/* int counts */
#define C int
#define CA int
#define D int
CT_OBS_COLLS(B_INT)
CT_OBS_COLLS(I_INT)
CT_OBS_NEIGHBOR(B_INT_NB)
CT_OBS_NEIGHBOR(I_INT_NB)
CT_OBS_BARRIER(B_INT)
CT_OBS_BARRIER(I_INT)
#if CT_HAVE_COLL_INIT
CT_OBS_COLLS(P_INT)
CT_OBS_BARRIER(P_INT)
#endif
#if CT_HAVE_NEIGHBOR_INIT
CT_OBS_NEIGHBOR(P_INT_NB)
#endif
#undef C
#undef CA
#undef D

/* large counts */
#define C MPI_Count
#define CA MPI_Count
#define D MPI_Aint
#if CT_HAVE_COLL_C
CT_OBS_COLLS(B_C)
CT_OBS_COLLS(I_C)
CT_OBS_NEIGHBOR(B_C_NB)
CT_OBS_NEIGHBOR(I_C_NB)
#endif
#if CT_HAVE_COLL_INIT_C
CT_OBS_COLLS(P_C)
CT_OBS_NEIGHBOR(P_C_NB)
#endif
#undef C
#undef CA
#undef D

/* ---- starts, waits and tests ---------------------------------------------------- */

static void start_locked(MPI_Request h, double t0, double dt) {
    int k = find_locked(h);
    if (k < 0 || !trk[k].persistent) return;
    obs_entry_t *e = &obs_tab[trk[k].entry];
    e->starts++;
    e->bytes += (double)trk[k].bytes;
    e->time += dt;
    if (!trk[k].active) atomic_fetch_add(&nactive_trk, 1);
    trk[k].active = 1;
    trk[k].t0 = t0;
}

/* persistent requests of ours may exist: MPI_Start(all) must look */
static int any_tracked(void) { return atomic_load_explicit(&nall_trk, memory_order_relaxed) != 0; }

int MPI_Start(MPI_Request *req) {
    if (!ON || !req || !any_tracked()) return PMPI_Start(req);
    MPI_Request h = *req;
    double t0 = PMPI_Wtime();
    int rc = PMPI_Start(req);
    double t1 = PMPI_Wtime();
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&lock);
        start_locked(h, t0, t1 - t0);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

int MPI_Startall(int count, MPI_Request reqs[]) {
    if (!ON || !reqs || count <= 0 || !any_tracked()) return PMPI_Startall(count, reqs);
    double t0 = PMPI_Wtime();
    int rc = PMPI_Startall(count, reqs);
    double t1 = PMPI_Wtime();
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&lock);
        for (int i = 0; i < count; i++) start_locked(reqs[i], t0, (t1 - t0) / count);
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

int MPI_Request_free(MPI_Request *req) {
    if (ON && req && any_tracked()) {
        pthread_mutex_lock(&lock);
        int k = find_locked(*req);
        if (k >= 0) forget_locked(k);
        pthread_mutex_unlock(&lock);
    }
    return PMPI_Request_free(req);
}

/* A wait or test over reqs[0..n): which of them are ours and active, before the call */
typedef struct {
    int n, cap;
    int *idx;              /* position in the caller's array */
    MPI_Request *h;        /* the handle before the call (completion sets it to null) */
    int small_idx[16];
    MPI_Request small_h[16];
} pending_t;

static int pending_collect(pending_t *p, int n, const MPI_Request *reqs) {
    p->n = 0;
    p->cap = 16;
    p->idx = p->small_idx;
    p->h = p->small_h;
    if (!reqs || n <= 0 || atomic_load_explicit(&nactive_trk, memory_order_relaxed) == 0)
        return 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        int k = find_locked(reqs[i]);
        if (k < 0 || !trk[k].active) continue;
        if (p->n == p->cap) {
            int cap = p->cap * 4;
            int *ni = malloc((size_t)cap * sizeof *ni);
            MPI_Request *nh = malloc((size_t)cap * sizeof *nh);
            if (!ni || !nh) {
                free(ni);
                free(nh);
                break;
            }
            memcpy(ni, p->idx, (size_t)p->n * sizeof *ni);
            memcpy(nh, p->h, (size_t)p->n * sizeof *nh);
            if (p->idx != p->small_idx) {
                free(p->idx);
                free(p->h);
            }
            p->idx = ni;
            p->h = nh;
            p->cap = cap;
        }
        p->idx[p->n] = i;
        p->h[p->n] = reqs[i];
        p->n++;
    }
    pthread_mutex_unlock(&lock);
    return p->n;
}

/* After the call (t0..t1): its time shared among ours; done(idx) says which completed. */
enum { DONE_ALL, DONE_NONE, DONE_ONE, DONE_LIST };
static void pending_finish(pending_t *p, double t0, double t1, int how, int one,
                           const int *list, int nlist) {
    pthread_mutex_lock(&lock);
    for (int j = 0; j < p->n; j++) {
        int k = find_locked(p->h[j]);
        if (k < 0 || !trk[k].active) continue;
        obs_entry_t *e = &obs_tab[trk[k].entry];
        e->wait += (t1 - t0) / p->n;
        int done = how == DONE_ALL || (how == DONE_ONE && p->idx[j] == one);
        for (int q = 0; how == DONE_LIST && !done && q < nlist; q++) done = list[q] == p->idx[j];
        if (!done) continue;
        e->completions++;
        e->span += t1 - trk[k].t0;
        if (trk[k].persistent) {
            trk[k].active = 0;
            atomic_fetch_sub(&nactive_trk, 1);
        } else {
            forget_locked(k);
        }
    }
    pthread_mutex_unlock(&lock);
    if (p->idx != p->small_idx) {
        free(p->idx);
        free(p->h);
    }
}

/* the wrappers: the library's call alone unless one of ours may be among the requests */
#define WAITLIKE(N, REQS, CALL, HOW, ONE, LIST, NLIST)                                \
    do {                                                                              \
        pending_t p;                                                                              \
        if (!ON || !pending_collect(&p, N, REQS)) return CALL;                                    \
        double t0 = PMPI_Wtime();                                                                 \
        int rc = CALL;                                                                            \
        double t1 = PMPI_Wtime();                                                                 \
        pending_finish(&p, t0, t1, rc == MPI_SUCCESS ? (HOW) : DONE_NONE, ONE, LIST,              \
                       NLIST);                                                                    \
        return rc;                                                                                \
    } while (0)

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    WAITLIKE(1, req, PMPI_Wait(req, status), DONE_ALL, 0, NULL, 0);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    WAITLIKE(n, reqs, PMPI_Waitall(n, reqs, statuses), DONE_ALL, 0, NULL, 0);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    WAITLIKE(n, reqs, PMPI_Waitany(n, reqs, index, status), DONE_ONE,
             index ? *index : MPI_UNDEFINED, NULL, 0);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    WAITLIKE(n, reqs, PMPI_Waitsome(n, reqs, outcount, indices, statuses), DONE_LIST, 0,
             indices, outcount && *outcount != MPI_UNDEFINED ? *outcount : 0);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    WAITLIKE(1, req, PMPI_Test(req, flag, status), *flag ? DONE_ALL : DONE_NONE, 0, NULL, 0);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    WAITLIKE(n, reqs, PMPI_Testall(n, reqs, flag, statuses), *flag ? DONE_ALL : DONE_NONE, 0,
             NULL, 0);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
    WAITLIKE(n, reqs, PMPI_Testany(n, reqs, index, flag, status),
             *flag ? DONE_ONE : DONE_NONE, index ? *index : MPI_UNDEFINED, NULL, 0);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
    WAITLIKE(n, reqs, PMPI_Testsome(n, reqs, outcount, indices, statuses), DONE_LIST, 0,
             indices, outcount && *outcount != MPI_UNDEFINED ? *outcount : 0);
}

/* ---- at MPI_Finalize ------------------------------------------------------------ */

typedef struct {
    obs_entry_t e;
    int ranks;
    double sum_time, max_time, sum_wait, sum_span, sum_bytes;
} obs_merged_t;

static obs_merged_t *merged;
static int nmerged, tot_dropped, tot_untracked;
static double wall_sum, wall_max;
static int wall_ranks;

void ct_pmpi_observe_merge(int rank) {
    double wall = PMPI_Wtime() - st.t_init, wsum = 0, wmax = 0;
    int size;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Reduce(&wall, &wsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(&wall, &wmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int mine[2] = {obs_dropped, untracked}, tot[2] = {0, 0};
    PMPI_Reduce(mine, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    long long total = 0;
    char *all = ct_pmpi_gather_at_root(obs_tab, obs_n * (int)sizeof(obs_entry_t), rank, &total);
    if (rank != 0) return;
    wall_sum = wsum;
    wall_max = wmax;
    wall_ranks = size;
    tot_dropped = tot[0];
    tot_untracked = tot[1];
    if (!all) return;
    int n = (int)(total / (long long)sizeof(obs_entry_t));
    merged = calloc(n ? (size_t)n : 1, sizeof *merged);
    for (int k = 0; merged && k < n; k++) {
        obs_entry_t e;
        memcpy(&e, all + (size_t)k * sizeof e, sizeof e);
        int j = 0;
        while (j < nmerged && !(merged[j].e.id == e.id && merged[j].e.form == e.form &&
                                merged[j].e.large == e.large && merged[j].e.np == e.np))
            j++;
        obs_merged_t *m = &merged[j];
        if (j == nmerged) {
            m->e = e;
            m->e.calls = m->e.starts = m->e.completions = 0;
            nmerged++;
        }
        if (e.calls > m->e.calls) m->e.calls = e.calls;
        if (e.starts > m->e.starts) m->e.starts = e.starts;
        if (e.completions > m->e.completions) m->e.completions = e.completions;
        m->ranks++;
        m->sum_time += e.time + e.wait;
        if (e.time + e.wait > m->max_time) m->max_time = e.time + e.wait;
        m->sum_wait += e.wait;
        m->sum_span += e.span;
        m->sum_bytes += e.bytes;
    }
    free(all);
}

void ct_pmpi_observe_json(FILE *f) {
    static const char *const kinds[] = {"blocking", "nonblocking", "persistent"};
    fprintf(f, ", \"wall_s\": %.9g, \"wall_max_s\": %.9g, \"observed_dropped\": %d, "
               "\"untracked_requests\": %d, \"observed\": [",
            wall_ranks ? wall_sum / wall_ranks : 0, wall_max, tot_dropped, tot_untracked);
    for (int j = 0; j < nmerged; j++) {
        const obs_merged_t *m = &merged[j];
        const obs_entry_t *e = &m->e;
        double r = m->ranks ? m->ranks : 1;
        char name[96];
        const char *const *nm = obs_names[e->id];
        if (e->form == FORM_NONBLOCKING)
            snprintf(name, sizeof name, "MPI_I%s%s", nm[1], e->large ? "_c" : "");
        else
            snprintf(name, sizeof name, "MPI_%s%s%s", nm[0],
                     e->form == FORM_PERSISTENT ? "_init" : "", e->large ? "_c" : "");
        fprintf(f, "%s\n  {\"call\": \"%s\", \"collective\": \"%s\", \"kind\": \"%s\", "
                   "\"large_count\": %s, \"np\": %d, \"calls\": %lld, \"starts\": %lld, "
                   "\"completions\": %lld, \"ranks\": %d, \"bytes\": %.17g, \"total_s\": %.9g, "
                   "\"wait_s\": %.9g, \"span_s\": %.9g, \"max_rank_total_s\": %.9g}",
                j ? "," : "", name, nm[1], kinds[e->form], e->large ? "true" : "false", e->np,
                e->calls, e->starts, e->completions, m->ranks, m->sum_bytes / r,
                m->sum_time / r, m->sum_wait / r, m->sum_span / r, m->max_time);
    }
    fprintf(f, "%s]", nmerged ? "\n" : "");
    free(merged);
    merged = NULL;
    nmerged = 0;
}
