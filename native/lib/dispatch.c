/*
 * dispatch.c -- argument checks, constraint checks with reported fallbacks,
 * rank remapping of a call, and the per-communicator private duplicate on which
 * algorithms run (so their tags never meet user messages). Parsing and checking
 * of choices is choice.c's.
 */
#include "ct_internal.h"

#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>

/* ---- per-communicator facts and the private communicator ----------------
 * One attribute per user communicator holds what never changes for it: its
 * size, this process's rank, and the private duplicate on which colltune's
 * algorithms run (made on first use by one of them, never for `native`).
 * A small table keyed by the handle answers repeated calls without any call
 * into the MPI library; an entry lives only while the attribute does: the
 * attribute's delete callback (run by MPI_Comm_free) has the table forget it, so
 * a handle reused after a free is never mistaken (the copy callback is
 * MPI_COMM_NULL_COPY_FN, so a duplicate of the communicator starts without it).
 * Intercommunicators are refused and never cached.
 *
 * Threads (MPI_THREAD_MULTIPLE): a collective runs on one communicator in one
 * thread at a time (concurrent collectives on one communicator are erroneous),
 * but different communicators may be used by different threads at once. So the
 * table is per thread: a hit reads nothing another thread writes. The delete
 * callback may run in any thread and cannot reach the other threads' tables:
 * it advances a process-wide epoch instead, and a table filled under an older
 * epoch is emptied before its next lookup. */
typedef struct {
    ct_geom_t g;    /* dup (MPI_COMM_NULL until an algorithm of ours first needs it),
                     * size, rank */
    ct_place_t *pl; /* placement and remapped communicators, made on first use */
} comm_info_t;

#define CCACHE 8
static _Atomic unsigned ccache_epoch = 1; /* a thread's table starts at 0: emptied first */
static CT_THREAD_LOCAL struct {
    unsigned epoch;
    int next;
    struct {
        MPI_Comm comm;
        comm_info_t *info;
    } e[CCACHE];
} tc;
static _Atomic int info_key = MPI_KEYVAL_INVALID;

/* The facts of the private duplicate this thread's current call runs on, for
 * ct_comm_geom (ct_internal.h): set by shadow_comm, cleared at the start of every
 * dispatch (comm_info), so it never outlives the call that set it (another thread
 * may free that communicator afterwards). */
CT_THREAD_LOCAL const ct_geom_t *ct_geom_;

int ct_comm_geom_slow(MPI_Comm comm, int *size, int *rank) {
    CT_CHECK(MPI_Comm_size(comm, size));
    return MPI_Comm_rank(comm, rank);
}

static int info_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm; (void)key; (void)extra;
    comm_info_t *ci = (comm_info_t *)val;
    /* every thread's table forgets its entries before the next lookup (the freed
     * handle may be reused by a new communicator) */
    atomic_fetch_add_explicit(&ccache_epoch, 1, memory_order_release);
    if (ct_geom_ == &ci->g) ct_geom_ = NULL; /* this thread's; the others reset theirs per call */
    int finalized = 0;
    MPI_Finalized(&finalized);
    ct_place_free(ci->pl, finalized);
    if (!finalized && ci->g.dup != MPI_COMM_NULL) MPI_Comm_free(&ci->g.dup);
    free(ci);
    return MPI_SUCCESS;
}

/* This thread's table, emptied when a communicator was freed since it was filled. */
static inline void ccache_sync(void) {
    unsigned ep = atomic_load_explicit(&ccache_epoch, memory_order_acquire);
    if (tc.epoch != ep) {
        for (int i = 0; i < CCACHE; i++) {
            tc.e[i].comm = MPI_COMM_NULL;
            tc.e[i].info = NULL;
        }
        tc.epoch = ep;
    }
}

/* colltune's algorithms are intracommunicator algorithms: refuse anything else
 * before any other check (a root of MPI_ROOT/MPI_PROC_NULL or a remote-group
 * count would only give misleading errors), locally and at once, so no rank
 * waits for a message. */
static int comm_refused(ct_coll_t coll, MPI_Comm comm) {
    if (comm == MPI_COMM_NULL)
        return ct_set_error(MPI_ERR_COMM, "%s: the communicator is MPI_COMM_NULL",
                            ct_coll_name(coll));
    return ct_set_error(MPI_ERR_COMM,
                        "%s: intercommunicators are not supported by colltune's "
                        "algorithms; call the MPI library's own MPI_%c%s on them",
                        ct_coll_name(coll), ct_coll_name(coll)[0] - 'a' + 'A',
                        ct_coll_name(coll) + 1);
}

static int comm_info_slow(ct_coll_t coll, MPI_Comm comm, comm_info_t **out) {
    int inter = 0, found = 0;
    if (comm == MPI_COMM_NULL) return comm_refused(coll, comm);
    CT_CHECK(MPI_Comm_test_inter(comm, &inter));
    if (inter) return comm_refused(coll, comm);
    int key = atomic_load_explicit(&info_key, memory_order_acquire);
    if (key == MPI_KEYVAL_INVALID) { /* the first use in the process, maybe in two threads */
        int mine, none = MPI_KEYVAL_INVALID;
        CT_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, info_delete, &mine, NULL));
        if (atomic_compare_exchange_strong(&info_key, &none, mine)) {
            key = mine;
        } else {
            MPI_Comm_free_keyval(&mine);
            key = none;
        }
    }
    comm_info_t *ci = NULL;
    CT_CHECK(MPI_Comm_get_attr(comm, key, &ci, &found));
    if (!found) {
        ci = malloc(sizeof *ci);
        if (!ci) return ct_set_error(MPI_ERR_NO_MEM, "out of memory");
        ci->g.dup = MPI_COMM_NULL;
        ci->pl = NULL;
        int rc = MPI_Comm_size(comm, &ci->g.size);
        if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(comm, &ci->g.rank);
        if (rc == MPI_SUCCESS) rc = MPI_Comm_set_attr(comm, key, ci);
        if (rc != MPI_SUCCESS) {
            free(ci);
            return rc;
        }
    }
    ccache_sync();
    int slot = tc.next;
    tc.next = (tc.next + 1) % CCACHE;
    tc.e[slot].comm = comm;
    tc.e[slot].info = ci;
    *out = ci;
    return MPI_SUCCESS;
}

/* The facts of an intracommunicator, or an error for MPI_COMM_NULL and
 * intercommunicators (an invalid handle raises the library's own error). */
static inline int comm_info(ct_coll_t coll, MPI_Comm comm, comm_info_t **out) {
    CT_SIM_FORGET(); /* SMPI only: each call counts only what it writes itself */
    ct_geom_ = NULL;
    ccache_sync();
    if (comm != MPI_COMM_NULL)
        for (int i = 0; i < CCACHE; i++)
            if (tc.e[i].comm == comm) {
                *out = tc.e[i].info;
                return MPI_SUCCESS;
            }
    return comm_info_slow(coll, comm, out);
}

/* The private duplicate: collective on first use for a communicator (every rank
 * reaches it together because the calling collective is itself collective). */
static int shadow_comm(MPI_Comm comm, comm_info_t *ci, MPI_Comm *out) {
    if (ci->g.dup == MPI_COMM_NULL) {
        MPI_Comm dup;
        CT_CHECK(MPI_Comm_dup(comm, &dup));
        ci->g.dup = dup;
    }
    *out = ci->g.dup;
    ct_geom_ = &ci->g;
    return MPI_SUCCESS;
}

/* ---- constraints and fallbacks ------------------------------------------- */
/* the record of the calling thread's last dispatch (one per thread, so a thread
 * reads what its own call ran) */
static CT_THREAD_LOCAL ct_dispatch_t last;
static _Atomic(ct_fallback_hook_t) hook;

const ct_dispatch_t *ct_last_dispatch(void) { return &last; }
void ct_set_fallback_hook(ct_fallback_hook_t h) {
    atomic_store_explicit(&hook, h, memory_order_relaxed);
}
static void call_hook(void) {
    ct_fallback_hook_t h = atomic_load_explicit(&hook, memory_order_relaxed);
    if (h) h(&last);
}

/* The predefined op this thread's last op_commutes() call matched: a repeated
 * Reduce with the same op skips the 13 comparisons (callgrind: 38 of a Reduce
 * call's instructions). Only predefined ops are remembered -- a user op's
 * handle may be freed and reused for another op. */
static CT_THREAD_LOCAL MPI_Op commuting_op;

/* the predefined reduction operations are commutative: no call needed. Out of
 * line: inlined into violated(), the compiler evaluated its 13 comparisons on
 * every call, needed or not (callgrind: a third of resolve()'s instructions). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int op_commutes(MPI_Op op) {
    if (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN || op == MPI_PROD ||
        op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR || op == MPI_LAND ||
        op == MPI_LOR || op == MPI_LXOR || op == MPI_MAXLOC || op == MPI_MINLOC) {
        commuting_op = op;
        return 1;
    }
    if (op == MPI_OP_NULL) return 1;
    int commute = 1;
    MPI_Op_commutative(op, &commute);
    return commute;
}

static inline int op_commutes_fast(MPI_Op op) {
    return op == commuting_op || op_commutes(op);
}

/* The first constraint of `a` that the call violates, as text; NULL if none. */
static const char *violated(const ct_algo_t *a, int p, int count, MPI_Op op) {
    unsigned c = a->constraints;
    if ((c & CT_NEED_COMMUTATIVE) && !op_commutes_fast(op)) return "the op is not commutative";
    if ((c & CT_NEED_POW2) && (p & (p - 1))) return "the process count is not a power of two";
    if ((c & CT_NEED_EVEN) && (p % 2)) return "the process count is odd";
    if ((c & CT_NEED_TWO_PROCS) && p != 2) return "the process count is not 2";
    if ((c & CT_NEED_COUNT_GE_P) && count < p) return "there are fewer elements than processes";
    return NULL;
}

/* The last choice per collective that passed ct_choice_check, by value (the
 * caller may change its struct between calls): a repeated call skips the
 * parameter checks. Only the algorithm's own parameters are read (and
 * checked), so only they are compared. Per thread, as `last`. */
static CT_THREAD_LOCAL struct {
    int ok;
    ct_choice_t c;
    const ct_algo_t *a; /* its registry entry */
    ct_choice_t run;    /* c as it runs: segsize=auto replaced per call (seg_auto) */
} checked[CT_NCOLL];

/* The fallback last found for checked[coll] and violated()'s inputs then (p, count < p,
 * commutative op): a call that falls back the same way skips the chain's walk (5,262
 * instructions a call, callgrind). Reset when checked[coll] changes. Per thread. */
static CT_THREAD_LOCAL struct {
    int ok, p, few, commutes, used;
    ct_choice_t fb;
    const ct_algo_t *ra;
    char reason[sizeof last.reason];
} fallen[CT_NCOLL];

static inline int same_choice(const ct_choice_t *x, const ct_choice_t *y, const ct_algo_t *a) {
    if (x->algo != y->algo || x->params.v[CT_P_REMAP] != y->params.v[CT_P_REMAP]) return 0;
    for (int j = 0; j < a->nparams; j++)
        if (x->params.v[a->params[j].id] != y->params.v[a->params[j].id]) return 0;
    return 1;
}

/* Out of line (first call, a changed choice, fallbacks): kept out of the per-call
 * path, whose frame and register saves they would otherwise enlarge. */
#if defined(__GNUC__)
#define CT_COLD __attribute__((noinline, cold))
#else
#define CT_COLD
#endif

CT_COLD static int check_choice_slow(const ct_choice_t *c, ct_coll_t coll,
                                     const ct_algo_t **out) {
    CT_CHECK(ct_choice_check(c));
    const ct_algo_t *a = ct_algo_get(c->algo);
    if (a->coll != coll)
        return ct_set_error(MPI_ERR_ARG, "algorithm %s/%s used for a %s", ct_coll_name(a->coll),
                            a->name, ct_coll_name(coll));
    checked[coll].c = *c;
    checked[coll].run = *c;
    checked[coll].a = a;
    checked[coll].ok = 1;
    fallen[coll].ok = 0;
    *out = a;
    return MPI_SUCCESS;
}

static inline int check_choice(const ct_choice_t *c, ct_coll_t coll, const ct_algo_t **out) {
    if (c && checked[coll].ok && same_choice(c, &checked[coll].c, checked[coll].a)) {
        *out = checked[coll].a;
        return MPI_SUCCESS;
    }
    return check_choice_slow(c, coll, out);
}

/* A declared fallback instead of `a` (its constraint `why` is violated),
 * repeatedly: records the chain in `last`, fills fb, sets *run and *ra. */
CT_COLD static int resolve_fallback(const ct_choice_t *c, ct_coll_t coll, int p, int count,
                                    MPI_Op op, ct_choice_t *fb, const ct_choice_t **run,
                                    const ct_algo_t **ra, const ct_algo_t *a, const char *why) {
    int few = count < p, commutes = op == MPI_OP_NULL || op_commutes_fast(op);
    if (fallen[coll].ok && fallen[coll].p == p && fallen[coll].few == few
        && fallen[coll].commutes == commutes) {
        *fb = fallen[coll].fb;
        *run = fb;
        *ra = fallen[coll].ra;
        last.used = fallen[coll].used;
        memcpy(last.reason, fallen[coll].reason, sizeof last.reason);
        call_hook();
        return MPI_SUCCESS;
    }
    for (int hops = 0; hops < 8 && why; hops++) {
        int f = ct_algo_find(coll, a->fallback);
        if (f < 0)
            return ct_set_error(MPI_ERR_INTERN, "%s/%s: %s and no fallback is declared",
                                ct_coll_name(coll), a->name, why);
        /* the whole chain: "reduce/rabenseifner -> binomial -> in_order_binary: ..." */
        char chain[96];
        if (hops == 0)
            snprintf(chain, sizeof chain, "%s/%s -> %s", ct_coll_name(coll), a->name,
                     a->fallback);
        else
            snprintf(chain, sizeof chain, "%.*s -> %s", (int)strcspn(last.reason, ":"),
                     last.reason, a->fallback);
        snprintf(last.reason, sizeof last.reason, "%s: %s", chain, why);
        CT_CHECK(ct_choice_default(f, fb));
        fb->params.v[CT_P_REMAP] = c->params.v[CT_P_REMAP];
        /* carry over parameters the fallback shares (e.g. segsize) */
        const ct_algo_t *fa = ct_algo_get(f);
        for (int j = 0; j < fa->nparams; j++)
            if (ct_param_spec(ct_algo_get(c->algo), fa->params[j].id))
                fb->params.v[fa->params[j].id] = c->params.v[fa->params[j].id];
        *run = fb;
        *ra = fa;
        last.used = f;
        a = fa;
        call_hook();
        why = violated(a, p, count, op);
    }
    fallen[coll].p = p, fallen[coll].few = few, fallen[coll].commutes = commutes;
    fallen[coll].fb = *fb, fallen[coll].ra = *ra, fallen[coll].used = last.used;
    memcpy(fallen[coll].reason, last.reason, sizeof last.reason);
    fallen[coll].ok = 1;
    return MPI_SUCCESS;
}

/* Resolve the algorithm to run for this call on p processes; records it in
 * `last`. *run is c itself, or `fb` filled with the declared fallback; *ra is
 * its registry entry. Inline: as a call, its eight arguments, frame and the
 * pointers it returns through memory cost about 45 instructions of each
 * collective call (callgrind, 8-byte Bcast and Reduce at 2 processes). */
static inline int resolve(const ct_choice_t *c, ct_coll_t coll, int p, int count, MPI_Op op,
                          ct_choice_t *fb, const ct_choice_t **run, const ct_algo_t **ra) {
    const ct_algo_t *a = NULL;
    CT_CHECK(check_choice(c, coll, &a));
    *run = c;
    *ra = a;
    last.requested = last.used = c->algo;
    last.reason[0] = '\0';
    last.remap = CT_REMAP_NONE;
    const char *why = violated(a, p, count, op);
    return why ? resolve_fallback(c, coll, p, count, op, fb, run, ra, a, why) : MPI_SUCCESS;
}

/* segsize=auto (Bcast, Reduce): the choice with this call's ct_segsize_resolve segment:
 * fb when it holds the fallback, else the checked copy resolve() just matched (only the
 * segment is written, no copy; no Bcast or Reduce algorithm calls its own collective).
 * At most CT_SEG_AUTO_MIN bytes or 2 processes: never cut, answered without the call. */
static inline const ct_choice_t *seg_auto(const ct_choice_t *run, ct_choice_t *fb,
                                          ct_coll_t coll, long long bytes, int p) {
    ct_choice_t *to = run == fb ? fb : &checked[coll].run;
    to->params.v[CT_P_SEGSIZE] =
        bytes <= CT_SEG_AUTO_MIN || p < 3
            ? 0 : ct_segsize_resolve(to->algo, to->params.v[CT_P_FANOUT], bytes, p);
    return to;
}

/* ---- rank remapping ---------------------------------------------------------
 * remap=seq|rr|auto runs the algorithm on a cached permuted communicator (see
 * remap.c); the root of Bcast/Reduce is translated, Allgather's blocks land
 * in a scratch buffer that one local copy puts in the caller's rank order.
 * Reductions whose op is not commutative keep the communicator's order: the
 * remap is refused and reported like a fallback. */
typedef struct {
    MPI_Comm comm;          /* MPI_COMM_NULL: no remap for this call */
    const int *perm, *inv;
} remap_run_t;

static int placement_of(MPI_Comm comm, comm_info_t *ci, MPI_Comm *dup) {
    CT_CHECK(shadow_comm(comm, ci, dup));
    if (!ci->pl) CT_CHECK(ct_place_build(*dup, ci->g.rank, ci->g.size, &ci->pl));
    return MPI_SUCCESS;
}

static int remap_slow(ct_coll_t coll, const ct_choice_t *run, MPI_Op op, MPI_Comm comm,
                      comm_info_t *ci, remap_run_t *rm) {
    long asked = run->params.v[CT_P_REMAP];
    int target = asked == CT_REMAP_AUTO ? ct_remap_auto(run->algo) : (int)asked;
    if (target == CT_REMAP_NONE || ci->g.size < 2) return MPI_SUCCESS;
    if ((coll == CT_REDUCE || coll == CT_ALLREDUCE) && !op_commutes(op)) {
        size_t used = strlen(last.reason);
        snprintf(last.reason + used, sizeof last.reason - used,
                 "%s%s/%s: remap=%s not applied: the op is not commutative (rank order kept)",
                 used ? "; " : "", ct_coll_name(coll), ct_algo_get(run->algo)->name,
                 ct_remap_name(asked));
        call_hook();
        return MPI_SUCCESS;
    }
    MPI_Comm dup;
    CT_CHECK(placement_of(comm, ci, &dup));
    if (ci->pl->ident[target]) return MPI_SUCCESS; /* already in that order */
    CT_CHECK(ct_place_comm(ci->pl, dup, ci->g.rank, target, &rm->comm));
    rm->perm = ci->pl->perm[target];
    rm->inv = ci->pl->inv[target];
    last.remap = target;
    return MPI_SUCCESS;
}

static inline int remap_of(ct_coll_t coll, const ct_choice_t *run, MPI_Op op, MPI_Comm comm,
                           comm_info_t *ci, remap_run_t *rm) {
    rm->comm = MPI_COMM_NULL;
    if (run->params.v[CT_P_REMAP] == CT_REMAP_NONE) return MPI_SUCCESS;
    return remap_slow(coll, run, op, comm, ci, rm);
}

int ct_comm_placement(MPI_Comm comm, ct_placement_t *out) {
    comm_info_t *ci;
    MPI_Comm dup;
    CT_CHECK(comm_info(CT_ALLGATHER, comm, &ci));
    CT_CHECK(placement_of(comm, ci, &dup));
    *out = ci->pl->pub;
    return MPI_SUCCESS;
}

int ct_comm_remap_order(MPI_Comm comm, int remap, const int **perm) {
    comm_info_t *ci;
    MPI_Comm dup;
    if (remap != CT_REMAP_SEQ && remap != CT_REMAP_RR)
        return ct_set_error(MPI_ERR_ARG, "remap order %d: valid: seq (%d), rr (%d)", remap,
                            CT_REMAP_SEQ, CT_REMAP_RR);
    CT_CHECK(comm_info(CT_ALLGATHER, comm, &ci));
    CT_CHECK(placement_of(comm, ci, &dup));
    *perm = ci->pl->perm[remap];
    return MPI_SUCCESS;
}

/* registry index + 1 of each collective's `native` entry, 0 until first needed
 * (no strcmp per call; any thread may fill it in, all write the same value) */
static _Atomic int native_algo1[CT_NCOLL];
static int is_native(const ct_choice_t *c, ct_coll_t coll) {
    int n1 = atomic_load_explicit(&native_algo1[coll], memory_order_relaxed);
    if (!n1) {
        n1 = ct_algo_find(coll, "native") + 1;
        atomic_store_explicit(&native_algo1[coll], n1, memory_order_relaxed);
    }
    return c->algo == n1 - 1;
}

/* bytes per element of dt: MPI_Type_size, answered from a small table for the
 * predefined types (util.c) */
#define TYPE_SIZE(dt, size) CT_CHECK(ct_type_size((dt), (size)))

/* the locals of every entry point: fallback room, the choice run, its entry, comm facts */
#define CALL_VARS ct_choice_t fb; const ct_choice_t *run; const ct_algo_t *ra; comm_info_t *ci

/* The communicator the algorithm runs on: the caller's for `native` (the library's
 * own collective), the private duplicate for ours. */
static inline int run_comm(const ct_choice_t *run, ct_coll_t coll, MPI_Comm comm,
                           comm_info_t *ci, MPI_Comm *out) {
    if (!is_native(run, coll)) return shadow_comm(comm, ci, out);
    *out = comm;
    return MPI_SUCCESS;
}

int ct_comm_prepare(const ct_choice_t *c, MPI_Comm comm, int count, MPI_Op op) {
    ct_choice_t fb;
    const ct_choice_t *run;
    const ct_algo_t *a, *ra;
    comm_info_t *ci;
    remap_run_t rm;
    MPI_Comm pc;
    if (!c || !(a = ct_algo_get(c->algo)))
        return ct_set_error(MPI_ERR_ARG, "prepare: no valid algorithm choice");
    CT_CHECK(comm_info(a->coll, comm, &ci));
    /* the algorithm this call would run (a declared fallback included) */
    CT_CHECK(resolve(c, a->coll, ci->g.size, count, op, &fb, &run, &ra));
    CT_CHECK(remap_of(a->coll, run, op, comm, ci, &rm));
    if (rm.comm != MPI_COMM_NULL || is_native(run, a->coll)) return MPI_SUCCESS;
    return shadow_comm(comm, ci, &pc);
}

int ct_bcast(const ct_choice_t *c, void *buf, int count, MPI_Datatype dt, int root,
             MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_BCAST, comm, &ci));
    CT_CHECK(resolve(c, CT_BCAST, ci->g.size, count, MPI_OP_NULL, &fb, &run, &ra));
    if (count < 0) return ct_set_error(MPI_ERR_COUNT, "bcast: count %d is negative", count);
    if (root < 0 || root >= ci->g.size)
        return ct_set_error(MPI_ERR_ROOT, "bcast: root %d is not a rank of a %d-process "
                            "communicator", root, ci->g.size);
    TYPE_SIZE(dt, &size);
    if (count == 0 || size == 0) return MPI_SUCCESS;
    if (run->params.v[CT_P_SEGSIZE] < 0)
        run = seg_auto(run, &fb, CT_BCAST, (long long)count * size, ci->g.size);
    ct_bcast_fn fn = ra->fn.bcast;
    remap_run_t rm;
    CT_CHECK(remap_of(CT_BCAST, run, MPI_OP_NULL, comm, ci, &rm));
    if (rm.comm != MPI_COMM_NULL)
        return fn(buf, count, dt, rm.inv[root], rm.comm, &run->params);
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_BCAST, comm, ci, &pc));
    return fn(buf, count, dt, root, pc, &run->params);
}

int ct_reduce(const ct_choice_t *c, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
              MPI_Op op, int root, MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_REDUCE, comm, &ci));
    CT_CHECK(resolve(c, CT_REDUCE, ci->g.size, count, op, &fb, &run, &ra));
    if (count < 0) return ct_set_error(MPI_ERR_COUNT, "reduce: count %d is negative", count);
    if (root < 0 || root >= ci->g.size)
        return ct_set_error(MPI_ERR_ROOT, "reduce: root %d is not a rank of a %d-process "
                            "communicator", root, ci->g.size);
    if (sbuf == MPI_IN_PLACE && ci->g.rank != root)
        return ct_set_error(MPI_ERR_BUFFER, "reduce: MPI_IN_PLACE is only valid at the root");
    TYPE_SIZE(dt, &size);
    if (count == 0 || size == 0) return MPI_SUCCESS;
    if (run->params.v[CT_P_SEGSIZE] < 0)
        run = seg_auto(run, &fb, CT_REDUCE, (long long)count * size, ci->g.size);
    ct_reduce_fn fn = ra->fn.reduce;
    remap_run_t rm;
    CT_CHECK(remap_of(CT_REDUCE, run, op, comm, ci, &rm));
    if (rm.comm != MPI_COMM_NULL)
        return fn(sbuf, rbuf, count, dt, op, rm.inv[root], rm.comm, &run->params);
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_REDUCE, comm, ci, &pc));
    return fn(sbuf, rbuf, count, dt, op, root, pc, &run->params);
}

int ct_gather(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
              void *rbuf, int rcount, MPI_Datatype rdt, int root, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_GATHER, comm, &ci));
    CT_CHECK(resolve(c, CT_GATHER, ci->g.size, 0, MPI_OP_NULL, &fb, &run, &ra));
    int p = ci->g.size, r = ci->g.rank;
    if (root < 0 || root >= p)
        return ct_set_error(MPI_ERR_ROOT, "gather: root %d is not a rank of a %d-process "
                            "communicator", root, p);
    /* only the arguments significant on this rank: the receive arguments at the
     * root only, the send arguments except at a root with MPI_IN_PLACE */
    if (sbuf == MPI_IN_PLACE && r != root)
        return ct_set_error(MPI_ERR_BUFFER, "gather: MPI_IN_PLACE is only valid at the root");
    if (sbuf != MPI_IN_PLACE && scount < 0)
        return ct_set_error(MPI_ERR_COUNT, "gather: sendcount %d is negative", scount);
    if (r == root && rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "gather: recvcount %d is negative at the root",
                            rcount);
    {   /* nothing to move (type signatures match, so every rank agrees) */
        int size;
        int in_place_root = sbuf == MPI_IN_PLACE;
        TYPE_SIZE(in_place_root ? rdt : sdt, &size);
        if ((in_place_root ? rcount : scount) == 0 || size == 0) return MPI_SUCCESS;
    }
    ct_gather_fn fn = ra->fn.gather;
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_GATHER, comm, ci, &pc));
    return fn(sbuf, scount, sdt, rbuf, rcount, rdt, root, pc, &run->params);
}

int ct_allgather(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                 void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_ALLGATHER, comm, &ci));
    CT_CHECK(resolve(c, CT_ALLGATHER, ci->g.size, rcount, MPI_OP_NULL, &fb, &run, &ra));
    if (rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "allgather: recvcount %d is negative", rcount);
    if (sbuf != MPI_IN_PLACE && scount < 0) /* ignored with MPI_IN_PLACE */
        return ct_set_error(MPI_ERR_COUNT, "allgather: sendcount %d is negative", scount);
    TYPE_SIZE(rdt, &size);
    if (rcount == 0 || size == 0) return MPI_SUCCESS;
    ct_allgather_fn fn = ra->fn.allgather;
    remap_run_t rm;
    CT_CHECK(remap_of(CT_ALLGATHER, run, MPI_OP_NULL, comm, ci, &rm));
    if (rm.comm != MPI_COMM_NULL)
        return ct_remap_allgather(fn, &run->params, sbuf, scount, sdt, rbuf, rcount, rdt,
                                  ci->pl, ci->g.rank, ci->g.size, rm.comm, rm.perm);
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_ALLGATHER, comm, ci, &pc));
    return fn(sbuf, scount, sdt, rbuf, rcount, rdt, pc, &run->params);
}

int ct_allreduce(const ct_choice_t *c, const void *sbuf, void *rbuf, int count,
                 MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_ALLREDUCE, comm, &ci));
    CT_CHECK(resolve(c, CT_ALLREDUCE, ci->g.size, count, op, &fb, &run, &ra));
    if (count < 0) return ct_set_error(MPI_ERR_COUNT, "allreduce: count %d is negative", count);
    TYPE_SIZE(dt, &size);
    if (count == 0 || size == 0) return MPI_SUCCESS;
    ct_allreduce_fn fn = ra->fn.allreduce;
    remap_run_t rm;
    CT_CHECK(remap_of(CT_ALLREDUCE, run, op, comm, ci, &rm));
    if (rm.comm != MPI_COMM_NULL) return fn(sbuf, rbuf, count, dt, op, rm.comm, &run->params);
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_ALLREDUCE, comm, ci, &pc));
    return fn(sbuf, rbuf, count, dt, op, pc, &run->params);
}

int ct_alltoall(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_ALLTOALL, comm, &ci));
    CT_CHECK(resolve(c, CT_ALLTOALL, ci->g.size, rcount, MPI_OP_NULL, &fb, &run, &ra));
    if (rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "alltoall: recvcount %d is negative", rcount);
    if (sbuf != MPI_IN_PLACE && scount < 0) /* ignored with MPI_IN_PLACE */
        return ct_set_error(MPI_ERR_COUNT, "alltoall: sendcount %d is negative", scount);
    TYPE_SIZE(rdt, &size);
    if (rcount == 0 || size == 0) return MPI_SUCCESS;
    ct_alltoall_fn fn = ra->fn.alltoall;
    if (is_native(run, CT_ALLTOALL))
        return fn(sbuf, scount, sdt, rbuf, rcount, rdt, comm, &run->params);
    MPI_Comm pc;
    CT_CHECK(shadow_comm(comm, ci, &pc));
    if (sbuf != MPI_IN_PLACE) return fn(sbuf, scount, sdt, rbuf, rcount, rdt, pc, &run->params);
    /* p blocks of rcount elements: counts and displacements in blocks of ct_blk_t */
    const int p = ci->g.size;
    int *cd = malloc((size_t)(2 * p) * sizeof *cd);
    if (!cd) return ct_set_error(MPI_ERR_NO_MEM, "alltoall: out of memory");
    ct_blk_t b;
    void *raw = NULL;
    const void *copy = NULL;
    int rc = ct_blk_init(&b, rcount, rdt, p);
    if (rc == MPI_SUCCESS) {
        for (int j = 0; j < p; j++) {
            cd[j] = b.per;
            cd[p + j] = j * b.per;
        }
        rc = ct_a2a_inplace_copy(rbuf, cd, cd + p, b.dt, p, &raw, &copy);
        ct_blk_free(&b);
    }
    free(cd);
    if (rc == MPI_SUCCESS) rc = fn(copy, rcount, rdt, rbuf, rcount, rdt, pc, &run->params);
    free(raw);
    return rc;
}

int ct_alltoallv(const ct_choice_t *c, const void *sbuf, const int *scounts,
                 const int *sdispls, MPI_Datatype sdt, void *rbuf, const int *rcounts,
                 const int *rdispls, MPI_Datatype rdt, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_ALLTOALLV, comm, &ci));
    CT_CHECK(resolve(c, CT_ALLTOALLV, ci->g.size, 0, MPI_OP_NULL, &fb, &run, &ra));
    const int p = ci->g.size, inplace = sbuf == MPI_IN_PLACE;
    if (!rcounts || !rdispls || (!inplace && (!scounts || !sdispls)))
        return ct_set_error(MPI_ERR_ARG, "alltoallv: a count or displacement array is NULL");
    for (int j = 0; j < p; j++) {
        if (rcounts[j] < 0)
            return ct_set_error(MPI_ERR_COUNT, "alltoallv: recvcounts[%d] = %d is negative", j,
                                rcounts[j]);
        if (!inplace && scounts[j] < 0)
            return ct_set_error(MPI_ERR_COUNT, "alltoallv: sendcounts[%d] = %d is negative", j,
                                scounts[j]);
    }
    ct_alltoallv_fn fn = ra->fn.alltoallv;
    if (is_native(run, CT_ALLTOALLV))
        return fn(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, &run->params);
    MPI_Comm pc;
    CT_CHECK(shadow_comm(comm, ci, &pc));
    if (!inplace)
        return fn(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, pc, &run->params);
    void *raw = NULL;
    const void *copy = NULL;
    int rc = ct_a2a_inplace_copy(rbuf, rcounts, rdispls, rdt, p, &raw, &copy);
    if (rc == MPI_SUCCESS)
        rc = fn(copy, rcounts, rdispls, rdt, rbuf, rcounts, rdispls, rdt, pc, &run->params);
    free(raw);
    return rc;
}

int ct_scatter(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
               void *rbuf, int rcount, MPI_Datatype rdt, int root, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_SCATTER, comm, &ci));
    CT_CHECK(resolve(c, CT_SCATTER, ci->g.size, 0, MPI_OP_NULL, &fb, &run, &ra));
    int p = ci->g.size, r = ci->g.rank;
    if (root < 0 || root >= p)
        return ct_set_error(MPI_ERR_ROOT, "scatter: root %d is not a rank of a %d-process "
                            "communicator", root, p);
    /* only the arguments significant on this rank: the send arguments at the root
     * only, the receive arguments except at a root with MPI_IN_PLACE */
    if (rbuf == MPI_IN_PLACE && r != root)
        return ct_set_error(MPI_ERR_BUFFER, "scatter: MPI_IN_PLACE is only valid at the root");
    if (r == root && scount < 0)
        return ct_set_error(MPI_ERR_COUNT, "scatter: sendcount %d is negative at the root",
                            scount);
    if (rbuf != MPI_IN_PLACE && rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "scatter: recvcount %d is negative", rcount);
    {   /* nothing to move (type signatures match, so every rank agrees) */
        int size;
        TYPE_SIZE(r == root ? sdt : rdt, &size);
        if ((r == root ? scount : rcount) == 0 || size == 0) return MPI_SUCCESS;
    }
    ct_scatter_fn fn = ra->fn.scatter;
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_SCATTER, comm, ci, &pc));
    return fn(sbuf, scount, sdt, rbuf, rcount, rdt, root, pc, &run->params);
}

int ct_barrier(const ct_choice_t *c, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_BARRIER, comm, &ci));
    CT_CHECK(resolve(c, CT_BARRIER, ci->g.size, 0, MPI_OP_NULL, &fb, &run, &ra));
    ct_barrier_fn fn = ra->fn.barrier;
    if (is_native(run, CT_BARRIER)) return fn(comm, &run->params);
    if (ci->g.size == 1) return MPI_SUCCESS;
    MPI_Comm pc;
    CT_CHECK(shadow_comm(comm, ci, &pc));
    return fn(pc, &run->params);
}

/* Reduce_scatter(_block): the vector (the sum of the counts) must fit an int for
 * colltune's algorithms, which cut it at element offsets; `native` takes any. */
static int rs_run(const ct_choice_t *run, const ct_algo_t *ra, ct_coll_t coll,
                  comm_info_t *ci, long long total, const void *sbuf, void *rbuf,
                  int rcount, const int *rcounts, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    int size;
    TYPE_SIZE(dt, &size);
    if (total == 0 || size == 0) return MPI_SUCCESS;
    int native = is_native(run, coll);
    if (!native && total > INT_MAX)
        return ct_set_error(MPI_ERR_COUNT, "%s/%s: a vector of %lld elements; colltune's "
                            "algorithms take at most %d (use native)", ct_coll_name(coll),
                            ra->name, total, INT_MAX);
    MPI_Comm pc = comm;
    if (!native) CT_CHECK(shadow_comm(comm, ci, &pc));
    if (coll == CT_REDUCE_SCATTER_BLOCK)
        return ra->fn.reduce_scatter_block(sbuf, rbuf, rcount, dt, op, pc, &run->params);
    return ra->fn.reduce_scatter(sbuf, rbuf, rcounts, dt, op, pc, &run->params);
}

int ct_reduce_scatter_block(const ct_choice_t *c, const void *sbuf, void *rbuf, int rcount,
                            MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_REDUCE_SCATTER_BLOCK, comm, &ci));
    long long total = (long long)rcount * ci->g.size;
    CT_CHECK(resolve(c, CT_REDUCE_SCATTER_BLOCK, ci->g.size, total > INT_MAX ? INT_MAX :
                     (int)total, op, &fb, &run, &ra));
    if (rcount < 0)
        return ct_set_error(MPI_ERR_COUNT, "reduce_scatter_block: recvcount %d is negative",
                            rcount);
    return rs_run(run, ra, CT_REDUCE_SCATTER_BLOCK, ci, total, sbuf, rbuf, rcount, NULL, dt,
                  op, comm);
}

int ct_reduce_scatter(const ct_choice_t *c, const void *sbuf, void *rbuf, const int *rcounts,
                      MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    CALL_VARS;
    CT_CHECK(comm_info(CT_REDUCE_SCATTER, comm, &ci));
    if (!rcounts) return ct_set_error(MPI_ERR_ARG, "reduce_scatter: recvcounts is NULL");
    long long total = 0;
    for (int j = 0; j < ci->g.size; j++) {
        if (rcounts[j] < 0)
            return ct_set_error(MPI_ERR_COUNT, "reduce_scatter: recvcounts[%d] = %d is negative",
                                j, rcounts[j]);
        total += rcounts[j];
    }
    CT_CHECK(resolve(c, CT_REDUCE_SCATTER, ci->g.size, total > INT_MAX ? INT_MAX : (int)total,
                     op, &fb, &run, &ra));
    return rs_run(run, ra, CT_REDUCE_SCATTER, ci, total, sbuf, rbuf, 0, rcounts, dt, op, comm);
}

int ct_allgatherv(const ct_choice_t *c, const void *sbuf, int scount, MPI_Datatype sdt,
                  void *rbuf, const int *rcounts, const int *displs, MPI_Datatype rdt,
                  MPI_Comm comm) {
    CALL_VARS;
    int size;
    CT_CHECK(comm_info(CT_ALLGATHERV, comm, &ci));
    CT_CHECK(resolve(c, CT_ALLGATHERV, ci->g.size, 0, MPI_OP_NULL, &fb, &run, &ra));
    if (!rcounts || !displs)
        return ct_set_error(MPI_ERR_ARG, "allgatherv: recvcounts or displs is NULL");
    long long total = 0;
    for (int j = 0; j < ci->g.size; j++) {
        if (rcounts[j] < 0)
            return ct_set_error(MPI_ERR_COUNT, "allgatherv: recvcounts[%d] = %d is negative", j,
                                rcounts[j]);
        total += rcounts[j];
    }
    if (sbuf != MPI_IN_PLACE && scount < 0) /* ignored with MPI_IN_PLACE */
        return ct_set_error(MPI_ERR_COUNT, "allgatherv: sendcount %d is negative", scount);
    TYPE_SIZE(rdt, &size);
    /* nothing to move (block j's signature is rank j's everywhere: every rank agrees) */
    if (total == 0 || size == 0) return MPI_SUCCESS;
    ct_allgatherv_fn fn = ra->fn.allgatherv;
    MPI_Comm pc;
    CT_CHECK(run_comm(run, CT_ALLGATHERV, comm, ci, &pc));
    return fn(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, pc, &run->params);
}

/* ---- entry points of other files (dispatch_v.c: Gatherv, Scatterv) ---------------- */
int ct_call_begin(ct_coll_t coll, const ct_choice_t *c, MPI_Comm comm, ct_call_t *k) {
    comm_info_t *ci;
    CT_CHECK(comm_info(coll, comm, &ci));
    k->ci = ci;
    k->size = ci->g.size;
    k->rank = ci->g.rank;
    return resolve(c, coll, k->size, 0, MPI_OP_NULL, &k->fb, &k->run, &k->ra);
}

int ct_call_comm(const ct_call_t *k, ct_coll_t coll, MPI_Comm comm, MPI_Comm *pc) {
    return run_comm(k->run, coll, comm, (comm_info_t *)k->ci, pc);
}

/* ---- inner algorithms of composites (already on a private communicator) --- */
/* The choice of the last inner algorithm per collective and thread, by the value of
 * its parameter (a registry index: the default choice; a ct_inner_value handle: the
 * interned choice with its own parameters; neither ever changes): no
 * ct_choice_default or table lookup per call. */
static CT_THREAD_LOCAL struct { int ok, algo; ct_choice_t c; const ct_algo_t *a; }
    inner_def[CT_NCOLL];

int ct_inner_resolve(int algo, ct_coll_t coll, MPI_Comm comm, int count, MPI_Op op,
                     ct_choice_t *run) {
    int p, rank;
    if (!inner_def[coll].ok || inner_def[coll].algo != algo) {
        inner_def[coll].ok = 0;
        CT_CHECK(ct_inner_choice(algo, &inner_def[coll].c));
        inner_def[coll].a = ct_algo_get(inner_def[coll].c.algo);
        inner_def[coll].algo = algo;
        inner_def[coll].ok = 1;
    }
    const ct_choice_t *c = &inner_def[coll].c;
    CT_CHECK(ct_comm_geom(comm, &p, &rank));
    /* the common case, a default choice of this collective whose constraints
     * hold, runs as it is: the record of the outer call stays as it was (as the
     * general path below leaves it), without copying it twice */
    const ct_algo_t *ia = inner_def[coll].a;
    if (ia && ia->coll == coll && !violated(ia, p, count, op)) {
        *run = *c;
        return MPI_SUCCESS;
    }
    ct_dispatch_t saved = last;
    const ct_choice_t *r;
    const ct_algo_t *ra;
    int rc = resolve(c, coll, p, count, op, run, &r, &ra);
    if (rc == MPI_SUCCESS && r != run) *run = *r;
    /* an inner fallback is still reported, appended to the outer record */
    if (last.reason[0] && !saved.reason[0]) {
        ct_dispatch_t inner = last;
        last = saved;
        snprintf(last.reason, sizeof last.reason, "%s", inner.reason);
    } else {
        last = saved;
    }
    return rc;
}

/* segsize=auto of an inner Bcast or Reduce, as seg_auto */
static int inner_seg_auto(ct_choice_t *run, MPI_Comm comm, int count, MPI_Datatype dt) {
    int size, p, rank;
    if (run->params.v[CT_P_SEGSIZE] >= 0) return MPI_SUCCESS;
    TYPE_SIZE(dt, &size);
    CT_CHECK(ct_comm_geom(comm, &p, &rank));
    run->params.v[CT_P_SEGSIZE] =
        ct_segsize_resolve(run->algo, run->params.v[CT_P_FANOUT], (long long)count * size, p);
    return MPI_SUCCESS;
}

int ct_run_bcast(int algo, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_BCAST, comm, count, MPI_OP_NULL, &run));
    if (count == 0) return MPI_SUCCESS;
    CT_CHECK(inner_seg_auto(&run, comm, count, dt));
    return ct_algo_get(run.algo)->fn.bcast(buf, count, dt, root, comm, &run.params);
}

int ct_run_reduce(int algo, const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                  MPI_Op op, int root, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_REDUCE, comm, count, op, &run));
    if (count == 0) return MPI_SUCCESS;
    CT_CHECK(inner_seg_auto(&run, comm, count, dt));
    return ct_algo_get(run.algo)->fn.reduce(sbuf, rbuf, count, dt, op, root, comm,
                                            &run.params);
}

int ct_run_gather(int algo, const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf,
                  int rcount, MPI_Datatype rdt, int root, MPI_Comm comm) {
    ct_choice_t run;
    CT_CHECK(ct_inner_resolve(algo, CT_GATHER, comm, scount, MPI_OP_NULL, &run));
    return ct_algo_get(run.algo)->fn.gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm,
                                            &run.params);
}

void ct_note_fallback(const char *why) {
    size_t used = strlen(last.reason);
    snprintf(last.reason + used, sizeof last.reason - used, "%s%s", used ? "; " : "", why);
    call_hook();
}
