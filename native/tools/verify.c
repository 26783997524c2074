/*
 * verify.c -- colltune-verify: the correctness matrix.
 *
 * One launch (one process count) runs every case for the selected algorithms
 * and compares each result, byte for byte, with the MPI library's own
 * collective on the same inputs: outputs (holes of derived datatypes
 * included, so writes into holes are caught), untouched input buffers, and
 * untouched receive buffers where MPI says they are not significant.
 *
 * Inputs are chosen so every result is exact in any order of evaluation
 * (small integers, powers of two), so doubles compare exactly too; the one
 * non-commutative op (composition of affine maps) makes any reordering of a
 * reduction visible.
 *
 * This file is the matrix (which cases run: parameter variants, roots, counts,
 * types, ops, the case families) and main(); verify_cases.c runs and judges
 * one case.
 *
 * Output (rank 0, stdout): JSON lines, one "algo" record per algorithm, one
 * "fail" record per failing case (naming algorithm, np, root, count, type,
 * op, parameters, in-place), one "summary" record. Exit status 1 on failure.
 */
#include "verify_cases.h"

#include <stdlib.h>
#include <string.h>

/* ---- the matrix ----------------------------------------------------------- */
static int rank, nprocs;
static int max_fail_print = 20;
static int quick;
/* case families to run (--family): the main matrix and the four below */
enum { F_MAIN = 1, F_MIXED = 2, F_GARBAGE = 4, F_SELF = 8, F_INTER = 16, F_REMAP = 32,
       F_EMPTY = 64, F_ALL = 127 };
static const char *family_names[] = { "main", "mixed", "garbage", "self", "inter", "remap",
                                      "empty" };
#define NFAMILIES 7
static unsigned families = F_ALL;
static int large_count = (1 << 17) + 3;

static int has_root(ct_coll_t c) {
    return c == CT_BCAST || c == CT_REDUCE || c == CT_GATHER || c == CT_SCATTER ||
           c == CT_GATHERV || c == CT_SCATTERV;
}
static int has_inplace(ct_coll_t c) { return c != CT_BCAST && c != CT_BARRIER; }

/* Parameter variants: the defaults, then each parameter moved alone through
 * its interesting values. Segment sizes: none, smaller than one element, not
 * a multiple of the element size, larger than the message. */
#define MAX_VARIANTS 64
static int has_param(const ct_algo_t *a, ct_param_id_t id) {
    for (int j = 0; j < a->nparams; j++)
        if (a->params[j].id == id) return 1;
    return 0;
}
/* a variant that moves only the virtual node size (of a hierarchical algorithm) */
static int vppn_only(const ct_choice_t *v, const ct_choice_t *def) {
    if (v->algo != def->algo || v->params.v[CT_P_VPPN] == def->params.v[CT_P_VPPN]) return 0;
    for (int i = 0; i < CT_NPARAMS; i++)
        if (i != CT_P_VPPN && v->params.v[i] != def->params.v[i]) return 0;
    return 1;
}
/* The inner algorithms of collective ic with parameters of their own that the variants
 * add (ct_inner_value handles into vals): the first with a radix (radix 3, and segments
 * of 1 KiB where it cuts them: two parameters joined), and the first single pipeline
 * (segsize=auto, no fan-out or radix; else the first with a segsize) in segments of
 * 1 KiB, so that the inner parameters reach the phases. */
static int inner_param_variants(ct_coll_t ic, long *vals, int nv, int max) {
    int with_radix = -1, with_seg = -1, any_seg = -1;
    for (int k = 0; k < ct_algo_count(); k++) {
        const ct_algo_t *x = ct_algo_get(k);
        if (x->coll != ic || (x->constraints & CT_HIDDEN) || strncmp(x->name, "hier", 4) == 0)
            continue;
        const ct_param_spec_t *seg = NULL;
        for (int j = 0; j < x->nparams; j++)
            if (x->params[j].id == CT_P_SEGSIZE) seg = &x->params[j];
        if (with_radix < 0 && has_param(x, CT_P_RADIX)) with_radix = k;
        if (seg && any_seg < 0) any_seg = k;
        if (seg && with_seg < 0 && seg->def == CT_SEGSIZE_AUTO && !has_param(x, CT_P_RADIX) &&
            !has_param(x, CT_P_FANOUT))
            with_seg = k;
    }
    if (with_seg < 0) with_seg = any_seg;
    const int pick[2] = { with_radix, with_seg };
    for (int i = 0; i < 2 && nv < max; i++) {
        ct_choice_t c;
        long v;
        if (pick[i] < 0 || ct_choice_default(pick[i], &c) != MPI_SUCCESS) continue;
        if (i == 0) c.params.v[CT_P_RADIX] = 3;
        if (has_param(ct_algo_get(pick[i]), CT_P_SEGSIZE)) c.params.v[CT_P_SEGSIZE] = 1024;
        if (ct_inner_value(&c, &v) == MPI_SUCCESS) vals[nv++] = v;
    }
    return nv;
}

static int variants(int algo, ct_choice_t *out) {
    const ct_algo_t *a = ct_algo_get(algo);
    int n = 0;
    ct_choice_default(algo, &out[n++]);
    for (int j = 0; j < a->nparams; j++) {
        const ct_param_spec_t *ps = &a->params[j];
        long vals[32];
        int nv = 0;
        switch (ps->id) {
        case CT_P_SEGSIZE:
            vals[nv++] = 0; vals[nv++] = 1; vals[nv++] = 13; vals[nv++] = 1L << 30;
            break;
        case CT_P_FANOUT:
            vals[nv++] = 1; vals[nv++] = 2; vals[nv++] = 3; vals[nv++] = 1024;
            break;
        case CT_P_RADIX:
            vals[nv++] = 2; vals[nv++] = 3; vals[nv++] = 7; vals[nv++] = 64;
            break;
        case CT_P_MAX_REQUESTS: /* 0 = all at once */
            vals[nv++] = 0; vals[nv++] = 1; vals[nv++] = 2; vals[nv++] = 3;
            break;
        case CT_P_BCAST: case CT_P_REDUCE: case CT_P_GATHER: case CT_P_INTER:
        case CT_P_INTRA: {
            ct_coll_t ic = ct_hier_inner_coll(a->coll, ps->id);
            for (int k = 0; k < ct_algo_count() && nv < 32; k++) {
                const ct_algo_t *x = ct_algo_get(k);
                if (x->coll == ic && !(x->constraints & CT_HIDDEN) &&
                    strncmp(x->name, "hier", 4) != 0) /* never inner (choice.c) */
                    vals[nv++] = k;
            }
            nv = inner_param_variants(ic, vals, nv, 32);
            break;
        }
        case CT_P_VPPN: /* virtual nodes of 1, 2, 3 ranks (uneven last nodes at most
                         * process counts) and of 4 */
            vals[nv++] = 1; vals[nv++] = 2; vals[nv++] = 3; vals[nv++] = 4;
            break;
        case CT_P_LEADERS: /* (on virtual nodes of 3: below) */
            vals[nv++] = 1; vals[nv++] = 2;
            break;
        default: break;
        }
        for (int k = 0; k < nv && n < MAX_VARIANTS; k++) {
            if (vals[k] == out[0].params.v[ps->id]) continue;
            out[n] = out[0];
            out[n].params.v[ps->id] = vals[k];
            /* a hierarchical algorithm's inner algorithms on virtual nodes of 2, so that
             * both phases run at every process count above 2 */
            if (ps->id != CT_P_VPPN && has_param(a, CT_P_VPPN))
                out[n].params.v[CT_P_VPPN] = 2;
            /* the slices of a multi-leader one on nodes of 3 (uneven last nodes), so
             * that fewer slices than ranks run (1, 2; a last node of 1 owns them all) */
            if (ps->id == CT_P_LEADERS) out[n].params.v[CT_P_VPPN] = 3;
            n++;
        }
    }
    return n;
}

static int has_inner_param(const ct_algo_t *a) {
    for (int j = 0; j < a->nparams; j++)
        if (a->params[j].id == CT_P_BCAST || a->params[j].id == CT_P_REDUCE ||
            a->params[j].id == CT_P_GATHER)
            return 1;
    return 0;
}

/* The case families beyond the main matrix, for every parameter variant (the
 * defaults in full, the other variants a cross-section):
 *  - mixed: different datatypes of one type signature on different ranks
 *    (Bcast, Gather, Allgather; Reduce and Allreduce need one datatype; for
 *    Reduce_scatter, shapes of recvcounts instead, see verify_rs.c);
 *  - garbage: the arguments MPI ignores filled with garbage -- NULL buffers,
 *    count -1, MPI_DATATYPE_NULL (Reduce, Gather, Allgather; Reduce_scatter: the
 *    receive buffer where recvcounts[rank] is 0; Bcast has none, Allreduce and
 *    Reduce_scatter_block only MPI_IN_PLACE, which the main matrix covers);
 *  - self: the collective on MPI_COMM_SELF, at every process count;
 *  - empty: empty type signatures written both ways, a count of 0 and a count of a
 *    zero-size datatype, mixed over ranks, wholly and (v collectives) partly empty
 *    (verify_empty.c);
 *  - inter: an intercommunicator gets MPI_ERR_COMM at once (defaults only). */
static void run_families(ct_coll_t coll, const ct_choice_t *var, int nvar, const int *roots,
                         int nroots) {
    for (int vi = 0; vi < nvar; vi++) {
        const int full = vi == 0 || vppn_only(&var[vi], &var[0]);
        vcase_t c = { coll, var[vi], 0, 0, 0, O_SUM, 0, MPI_COMM_WORLD, 0, NULL, "" };
        if ((families & F_MIXED) && (coll == CT_BCAST || coll == CT_GATHER ||
                                     coll == CT_ALLGATHER || coll == CT_ALLTOALL ||
                                     coll == CT_ALLTOALLV || coll == CT_SCATTER ||
                                     coll == CT_REDUCE_SCATTER || coll == CT_ALLGATHERV ||
                                     coll == CT_GATHERV || coll == CT_SCATTERV)) {
            static const int pairs[] = { 0, 1, 7, 1000 };
            c.family = "mixed";
            c.t = T_INT;
            for (int ri = 0; ri < nroots; ri++) {
                if (!full && ri != nroots - 1) continue;
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
                    if (!full && pairs[k] < 7) continue;
                    c.count = pairs[k];
                    for (int a = 0; a < (pairs[k] ? NASSIGN : 1); a++) {
                        c.tdesc[0] = '\0';
                        run_mixed(&c, a);
                    }
                }
            }
            /* more than a few segments of every default segment size */
            if (!quick && full)
                for (int a = 0; a < 2; a++) {
                    c.root = roots[nroots - 1];
                    c.count = (1 << 16) + 3;
                    c.tdesc[0] = '\0';
                    run_mixed(&c, a);
                }
            c.tdesc[0] = '\0';
        }
        if ((families & F_GARBAGE) && (coll == CT_REDUCE || coll == CT_GATHER ||
                                       coll == CT_ALLGATHER || coll == CT_ALLTOALL ||
                                       coll == CT_ALLTOALLV || coll == CT_SCATTER ||
                                       coll == CT_REDUCE_SCATTER || coll == CT_ALLGATHERV ||
                                       coll == CT_GATHERV || coll == CT_SCATTERV)) {
            static const int counts[] = { 1, 7, 1000 };
            c.family = "garbage";
            c.garbage = 1;
            for (int ri = 0; ri < nroots; ri++) {
                if (!full && ri != nroots - 1) continue;
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                    if (!full && counts[k] == 1000) continue;
                    c.count = counts[k];
                    for (int t = T_INT; t < NTYPES; t += T_VEC - T_INT) {
                        c.t = t;
                        /* all-to-all collectives ignore arguments only in place */
                        int ip0 = coll == CT_ALLGATHER || coll == CT_ALLTOALL ||
                                  coll == CT_ALLTOALLV || coll == CT_ALLGATHERV;
                        for (int ip = ip0; ip < 2; ip++) {
                            c.inplace = ip;
                            run_case(&c);
                        }
                    }
                }
            }
            c.garbage = 0;
        }
        if (families & F_SELF) {
            static const int counts[] = { 0, 1, 7, 1000 };
            c.family = "self";
            c.comm = MPI_COMM_SELF;
            c.root = 0;
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                if (!full && counts[k] == 1000) continue;
                c.count = counts[k];
                for (int t = 0; t < NTYPES; t++) {
                    if (!full && t == T_DOUBLE) continue;
                    c.t = t;
                    for (int o = 0; o < (has_reduction(coll) ? NOPS : 1); o++) {
                        if (!full && o != O_SUM && o != O_NONCOMM) continue;
                        c.o = o;
                        for (int ip = 0; ip < (has_inplace(coll) ? 2 : 1); ip++) {
                            c.inplace = ip;
                            run_case(&c);
                        }
                    }
                }
            }
            c.comm = MPI_COMM_WORLD;
            c.o = O_SUM;
            c.inplace = 0;
        }
        if (families & F_EMPTY) {
            c.family = "empty";
            c.t = T_INT;
            c.count = 0;
            for (int ri = 0; ri < nroots; ri++) {
                if (!full && ri != nroots - 1) continue;
                c.root = roots[ri];
                run_empty(&c);
            }
        }
        if ((families & F_INTER) && full && vc_have_intercomm()) {
            c.family = "inter";
            c.t = T_INT;
            c.count = 4;
            c.root = 0;
            run_inter(&c);
        }
    }
}

/* ---- family "remap": the algorithm on a permuted communicator ---------------
 * For each virtual placement (COLLTUNE_NODES as the user set it, or: 2 and 3
 * nodes placed seq and rr, and two irregular placements, node (r/2) mod 2 and
 * (r/2) mod 3), a fresh duplicate of the world (placement is cached per
 * communicator) checks the detected nodes, then runs remap=seq, rr and auto
 * over roots, counts 1, 7, 1000, int and strided vector, sum and the
 * non-commutative op, in place or not; the dispatcher must report the remap
 * it applied (none where the placement already has the target order, and for
 * a non-commutative op). */
typedef struct {
    const char *nodes, *order; /* environment values; nodes NULL: a list made here */
    int list_mod;              /* list: node (r/2) mod list_mod */
} layout_t;

static int expected_node(const layout_t *l, int r) {
    if (!l->nodes) return (r / 2) % l->list_mod;
    int m = atoi(l->nodes);
    if (m > nprocs) m = nprocs;
    if (!strcmp(l->order, "rr")) return r % m;
    int n = 0;
    while (n + 1 < m && (n + 1) * (nprocs / m) + (n + 1 < nprocs % m ? n + 1 : nprocs % m) <= r)
        n++;
    return n;
}

/* Whether the user set COLLTUNE_NODES: read in main before MPI_Init, because the
 * family changes the variable, and under SimGrid's SMPI every rank is a thread of
 * one process sharing one environment (a rank reading it later would see another
 * rank's layout). For the same reason the ranks change the variable only between
 * two barriers, and read it (ct_comm_placement) only outside them. */
static int user_nodes;

static void set_layout_env(const char *nodes, const char *order) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (nodes) setenv("COLLTUNE_NODES", nodes, 1);
    else unsetenv("COLLTUNE_NODES");
    if (order) setenv("COLLTUNE_NODE_ORDER", order, 1);
    else unsetenv("COLLTUNE_NODE_ORDER");
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run_remap_family(ct_coll_t coll, const ct_choice_t *base, const int *roots,
                             int nroots) {
    if (!ct_coll_remaps(coll)) return;
    static const layout_t builtin[] = { { "2", "seq", 0 }, { "2", "rr", 0 }, { "3", "seq", 0 },
                                        { "3", "rr", 0 },  { NULL, NULL, 2 }, { NULL, NULL, 3 } };
    int user = user_nodes;
    int nl = user ? 1 : (int)(sizeof builtin / sizeof builtin[0]);
    for (int li = 0; li < nl; li++) {
        const layout_t *l = &builtin[li];
        char list[4096];
        if (!user) {
            if (l->nodes) {
                set_layout_env(l->nodes, l->order);
            } else {
                size_t used = 0;
                list[0] = '\0';
                for (int r = 0; r < nprocs && used + 16 < sizeof list; r++)
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                             r ? "," : "", (r / 2) % l->list_mod);
                set_layout_env(nprocs == 1 ? "1" : list, NULL);
            }
        }
        MPI_Comm vc;
        MPI_Comm_dup(MPI_COMM_WORLD, &vc);
        MPI_Comm_set_errhandler(vc, MPI_ERRORS_RETURN);
        vcase_t c = { coll, *base, 0, 0, T_INT, O_SUM, 0, vc, 0, "remap", "" };
        {   /* the detected placement */
            verdict_t v = { 0, "" };
            ct_placement_t pl;
            int rc = ct_comm_placement(vc, &pl);
            check_rc(&v, rc);
            if (rc == MPI_SUCCESS && !user)
                for (int r = 0; r < nprocs; r++)
                    if (pl.node[r] != expected_node(l, r)) {
                        verdict(&v, "placement %s%s%s: rank %d detected on node %d, expected %d",
                                l->nodes ? l->nodes : "list", l->order ? " " : "",
                                l->order ? l->order : "", r, pl.node[r], expected_node(l, r));
                        break;
                    }
            snprintf(c.tdesc, sizeof c.tdesc, "placement");
            c.count = 0;
            report(&c, &v);
            c.tdesc[0] = '\0';
        }
        static const int counts[] = { 1, 7, 1000 };
        static const int tlist[] = { T_INT, T_VEC };
        for (int target = CT_REMAP_SEQ; target <= CT_REMAP_AUTO; target++) {
            c.choice = *base;
            c.choice.params.v[CT_P_REMAP] = target;
            for (int ri = 0; ri < nroots; ri++) {
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                    c.count = counts[k];
                    for (int ti = 0; ti < 2; ti++) {
                        c.t = tlist[ti];
                        for (int o = 0; o < (has_reduction(coll) ? NOPS : 1); o++) {
                            if (o != O_SUM && o != O_NONCOMM) continue;
                            c.o = o;
                            for (int ip = 0; ip < (has_inplace(coll) ? 2 : 1); ip++) {
                                c.inplace = ip;
                                run_case(&c);
                                const ct_dispatch_t *d = ct_last_dispatch();
                                /* auto: the order of the algorithm that ran (a fallback's) */
                                int order = target == CT_REMAP_AUTO ? ct_remap_auto(d->used)
                                                                    : target;
                                int ident = 1;
                                const int *perm;
                                if (order != CT_REMAP_NONE &&
                                    ct_comm_remap_order(vc, order, &perm) == MPI_SUCCESS)
                                    for (int r = 0; r < nprocs; r++)
                                        if (perm[r] != r) ident = 0;
                                int noncomm = has_reduction(coll) && o == O_NONCOMM;
                                int want = noncomm || ident ? CT_REMAP_NONE : order;
                                d = ct_last_dispatch(); /* (ct_comm_remap_order keeps it) */
                                verdict_t v = { 0, "" };
                                if (d->remap != want)
                                    verdict(&v, "the dispatcher applied remap order %s, "
                                            "expected %s", ct_remap_name(d->remap),
                                            ct_remap_name(want));
                                if (noncomm && !ident && !strstr(d->reason, "not commutative"))
                                    verdict(&v, "a refused remap was not reported: '%s'",
                                            d->reason);
                                report(&c, &v);
                            }
                        }
                    }
                }
            }
        }
        MPI_Comm_free(&vc);
    }
    if (!user) set_layout_env(NULL, NULL);
}

/* ---- the node groups of a hierarchical algorithm ------------------------------
 * vppn = K: ceil(p/K) groups of K consecutive ranks, the last one smaller; vppn = 0:
 * every maximal run of consecutive ranks on one node of ct_comm_placement (shared
 * memory, SMPI's hosts, or COLLTUNE_NODES / COLLTUNE_VIRTUAL_PPN) is one group. */
static void check_hier_groups(ct_coll_t coll, const ct_choice_t *var, int nvar) {
    for (int vi = 0; vi < nvar; vi++) {
        const int K = (int)var[vi].params.v[CT_P_VPPN];
        if (vi > 0 && !vppn_only(&var[vi], &var[0])) continue;
        vcase_t c = { coll, var[vi], 0, 0, T_INT, O_SUM, 0, MPI_COMM_WORLD, 0, NULL, "" };
        verdict_t v = { 0, "" };
        int G = 0;
        const int *st = NULL;
        int rc = ct_comm_hier_groups(MPI_COMM_WORLD, K, &G, &st);
        check_rc(&v, rc);
        if (rc == MPI_SUCCESS) {
            int want[4096], n = 0;
            ct_placement_t pl = { 0 };
            if (K == 0) check_rc(&v, ct_comm_placement(MPI_COMM_WORLD, &pl));
            for (int r = 0; r < nprocs && n < 4095; r++)
                if (r == 0 || (K > 0 ? r % K == 0 : pl.node && pl.node[r] != pl.node[r - 1]))
                    want[n++] = r;
            want[n] = nprocs;
            if (G != n) verdict(&v, "vppn=%d: %d node groups, expected %d", K, G, n);
            for (int g = 0; g <= n && G == n; g++)
                if (st[g] != want[g]) {
                    verdict(&v, "vppn=%d: group %d starts at rank %d, expected %d", K, g,
                            st[g], want[g]);
                    break;
                }
        }
        snprintf(c.tdesc, sizeof c.tdesc, "node groups");
        report(&c, &v);
    }
}

/* ---- the shared window of `shm`, freed with its communicator -------------------
 * 20 times: a communicator duplicated, the algorithm run on it (its window made),
 * the communicator freed; the process must then hold as many windows as before. */
static void check_shm_windows(ct_coll_t coll, const ct_choice_t *c0) {
    vcase_t c = { coll, *c0, 0, 1, T_INT, O_SUM, 0, MPI_COMM_WORLD, 0, NULL, "" };
    verdict_t v = { 0, "" };
    const int before = ct_shm_windows();
    int x[2] = { rank, rank }, y[2];
    for (int i = 0; i < 20 && !v.bad; i++) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        int rc = coll == CT_BCAST ? ct_bcast(c0, x, 2, MPI_INT, 0, d)
                 : coll == CT_REDUCE ? ct_reduce(c0, x, y, 2, MPI_INT, MPI_SUM, 0, d)
                 : coll == CT_ALLREDUCE ? ct_allreduce(c0, x, y, 2, MPI_INT, MPI_SUM, d)
                 : ct_barrier(c0, d);
        check_rc(&v, rc);
        /* (no window where the declared fallback ran: ranks on several nodes, SMPI) */
        if (i == 0 && nprocs > 1 && !ct_last_dispatch()->reason[0] &&
            ct_shm_windows() <= before)
            verdict(&v, "no shared window made (%d before, %d after)", before,
                    ct_shm_windows());
        MPI_Comm_free(&d);
    }
    if (ct_shm_windows() != before)
        verdict(&v, "%d shared windows after 20 communicators freed, %d before",
                ct_shm_windows(), before);
    snprintf(c.tdesc, sizeof c.tdesc, "windows freed");
    report(&c, &v);
}

/* Run the matrix for one algorithm. */
static void verify_algo(int algo) {
    const ct_algo_t *a = ct_algo_get(algo);
    ct_coll_t coll = a->coll;
    ct_choice_t var[MAX_VARIANTS];
    int nvar = variants(algo, var);
    int roots[3] = { 0, nprocs - 1, nprocs / 2 }, nroots = has_root(coll) ? 3 : 1;
    if (nroots == 3 && (roots[2] == roots[0] || roots[2] == roots[1])) nroots = 2;
    if (nroots >= 2 && roots[1] == roots[0]) nroots = 1;
    int counts[] = { 0, 1, 7, 1000 };
    int nops = has_reduction(coll) ? NOPS : 1;
    int nin = has_inplace(coll) ? 2 : 1;
    long before = vc_cases_run, failed_before = vc_cases_failed;
    double t0 = MPI_Wtime();
    char fallback[160] = "";

    if (rank == 0) {
        fprintf(stderr, "verify: np=%d %s/%s ...\n", nprocs, ct_coll_name(coll), a->name);
        fflush(stderr);
    }
    for (int vi = 0; vi < nvar && (families & F_MAIN); vi++) {
        vcase_t c = { coll, var[vi], 0, 0, 0, 0, 0, MPI_COMM_WORLD, 0, NULL, "" };
        /* defaults: the full product; other variants: a cross-section */
        /* (virtual node sizes of a hierarchical algorithm: the full product too) */
        int full = vi == 0 || vppn_only(&var[vi], &var[0]);
        for (int ri = 0; ri < nroots; ri++) {
            if (!full && ri != nroots - 1) continue;
            c.root = roots[ri];
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                c.count = counts[ci];
                if (!full && c.count == 0) continue;
                for (int t = 0; t < NTYPES; t++) {
                    if (!full && t == T_DOUBLE) continue;
                    c.t = t;
                    for (int o = 0; o < nops; o++) {
                        if (!full && o != O_SUM && o != O_NONCOMM) continue;
                        c.o = o;
                        for (int ip = 0; ip < nin; ip++) {
                            if (!full && ip) continue;
                            c.inplace = ip;
                            run_case(&c);
                            const ct_dispatch_t *d = ct_last_dispatch();
                            if (d->reason[0] && !fallback[0])
                                snprintf(fallback, sizeof fallback, "%s", d->reason);
                        }
                    }
                }
            }
        }
        /* large counts, more than any segment: 2^17+3 elements; for Gather and
         * Allgather 2^18+3 ints per process (1 MiB) up to 8 processes, where
         * blocking-exchange implementations hang, and an 8 MiB total above */
        if (quick || coll == CT_BARRIER) continue;
        if (var[vi].params.v[CT_P_SEGSIZE] > 0 && var[vi].params.v[CT_P_SEGSIZE] < 64)
            continue; /* tiny segments of a huge message: covered at small counts */
        if (!full && has_inner_param(a))
            continue; /* inner algorithms are verified at large counts on their own */
        int gathers = coll == CT_GATHER || coll == CT_ALLGATHER || coll == CT_ALLTOALL ||
                      coll == CT_ALLTOALLV || coll == CT_SCATTER || coll == CT_ALLGATHERV ||
                      coll == CT_GATHERV || coll == CT_SCATTERV;
        for (int ri = 0; ri < nroots; ri++) {
            if (ri == 2 || (!full && ri == 0 && nroots > 1)) continue;
            c.root = roots[ri];
            int tlist[2] = { T_INT, T_VEC };
            for (int ti = 0; ti < (full ? 2 : 1); ti++) {
                c.t = tlist[ti];
                c.count = large_count;
                if (gathers)
                    c.count = c.t == T_VEC ? (1 << 14) + 3
                              : nprocs <= 8 ? (1 << 18) + 3 : (1 << 21) / nprocs + 3;
                for (int o = 0; o < nops; o++) {
                    if (o != O_SUM && o != O_NONCOMM) continue;
                    if (!full && o == O_NONCOMM) continue;
                    c.o = o;
                    c.inplace = full && has_inplace(coll) && ti == 1;
                    run_case(&c);
                }
            }
        }
    }
    if (has_param(a, CT_P_VPPN) && (families & F_MAIN)) check_hier_groups(coll, var, nvar);
    if (!strcmp(a->name, "shm") && (families & F_MAIN)) check_shm_windows(coll, &var[0]);
    run_families(coll, var, nvar, roots, nroots);
    if (families & F_REMAP) run_remap_family(coll, &var[0], roots, nroots);
    double secs = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("{\"event\": \"algo\", \"collective\": \"%s\", \"algorithm\": ", ct_coll_name(coll));
        ct_json_str(stdout, a->name);
        int inner_own = 0; /* variants whose inner algorithm has parameters of its own */
        for (int vi = 0; vi < nvar; vi++)
            for (int j = 0; j < a->nparams; j++)
                if (ct_hier_inner_coll(coll, a->params[j].id) != CT_NCOLL &&
                    var[vi].params.v[a->params[j].id] >= CT_INNER_BASE) {
                    inner_own++;
                    break;
                }
        printf(", \"np\": %d, \"variants\": %d, \"inner_param_variants\": %d, "
               "\"cases\": %ld, \"failed\": %ld, \"seconds\": %.3f, \"fallback\": ",
               nprocs, nvar, inner_own, vc_cases_run - before, vc_cases_failed - failed_before,
               secs);
        if (fallback[0]) ct_json_str(stdout, fallback);
        else fputs("null", stdout);
        printf("}\n");
        fflush(stdout);
    }
}

static void usage(void) {
    printf("usage: colltune-verify [--coll LIST] [--algo LIST] [--quick] [--max-fail N] [--family LIST]\n"
           "       colltune-verify --list-json [--hidden]\n\n"
           "Run under mpirun. Compares every selected algorithm with the MPI library's own\n"
           "collective over roots, counts {0,1,7,1000,2^17+3}, datatypes {char,int,double,\n"
           "strided vector}, ops {sum,max,prod,non-commutative}, in-place and parameter\n"
           "variants, at the launch's process count. JSON lines on stdout; exit 1 on any\n"
           "mismatch.\n\n"
           "  --coll LIST    collectives (bcast,reduce,gather,allgather,allreduce,alltoall,\n"
           "                 alltoallv,scatter,barrier,reduce_scatter_block,reduce_scatter,\n"
           "                 allgatherv,gatherv,scatterv; default all)\n"
           "  --algo LIST    algorithm names (default: all but native and hidden ones)\n"
           "  --quick        skip the large count\n"
           "  --max-fail N   failures printed per run (default 20)\n"
           "  --family LIST  case families (default all): main (the matrix above), mixed\n"
           "                 (different datatypes of one type signature per rank), garbage\n"
           "                 (ignored arguments filled with garbage), self (MPI_COMM_SELF),\n"
           "                 inter (intercommunicators must get MPI_ERR_COMM at once), remap\n"
           "                 (remap=seq, rr and auto on virtual nodes: 2 and 3 nodes placed seq\n"
           "                 and rr, two irregular placements; only $COLLTUNE_NODES if set),\n"
           "                 empty (empty type signatures written both ways: a count of 0 and\n"
           "                 a count of a zero-size datatype, mixed over ranks)\n");
}

int main(int argc, char **argv) {
    const char *coll_list = NULL, *algo_list = NULL; /* NULL: every collective */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
        if (!strcmp(argv[i], "--segsize-table")) { /* segsize=auto over a grid (tests) */
            static const long long sizes[] = { 1, 1000, 1024, 1025, 4096, 8192, 12345, 65536,
                                               100000, 262144, 1048576, 3000000, 16777216,
                                               1LL << 30, 1LL << 34 };
            static const int procs[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100,
                                         1000, 4096 };
            static const long fanouts[] = { 1, 2, 3, 4, 8, 1024 };
            printf("{\"segsize\": [\n");
            int first = 1;
            for (int a = 0; a < ct_algo_count(); a++) {
                if (!ct_segsize_rule_name(a)) continue;
                const ct_algo_t *al = ct_algo_get(a);
                for (size_t f = 0; f < sizeof fanouts / sizeof *fanouts; f++)
                    for (size_t q = 0; q < sizeof procs / sizeof *procs; q++)
                        for (size_t n = 0; n < sizeof sizes / sizeof *sizes; n++) {
                            printf("%s[\"%s\", \"%s\", %ld, %d, %lld, %ld]", first ? "" : ",\n",
                                   ct_coll_name(al->coll), al->name, fanouts[f], procs[q],
                                   sizes[n], ct_segsize_resolve(a, fanouts[f], sizes[n], procs[q]));
                            first = 0;
                        }
            }
            printf("\n]}\n");
            return 0;
        }
        if (!strcmp(argv[i], "--list-json")) {
            int hidden = 0;
            for (int j = 1; j < argc; j++)
                if (!strcmp(argv[j], "--hidden")) hidden = 1;
            ct_print_registry_json(stdout, hidden);
            return 0;
        }
    }
    const char *nodes_env = getenv("COLLTUNE_NODES"); /* before any rank changes it */
    user_nodes = nodes_env && *nodes_env;
    ct_start(&argc, &argv, usage, &rank, &nprocs); /* --help: answered above */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) coll_list = argv[++i];
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc) algo_list = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--max-fail") && i + 1 < argc) max_fail_print = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--family") && i + 1 < argc) {
            char **fl;
            int nf = ct_split(argv[++i], &fl);
            families = 0;
            for (int k = 0; k < nf; k++) {
                unsigned bit = 0;
                for (int f = 0; f < NFAMILIES; f++)
                    if (!strcmp(fl[k], family_names[f])) bit = 1u << f;
                if (!strcmp(fl[k], "all")) bit = F_ALL;
                if (!bit)
                    ct_die(rank, "unknown case family '%s'; valid: main, mixed, garbage, self, "
                           "inter, remap, empty, all", fl[k]);
                families |= bit;
            }
            ct_free_list(fl, nf);
        }
        else ct_die(rank, "unknown argument '%s' (see --help)", argv[i]);
    }

    vc_setup(max_fail_print, families & F_INTER);
    ct_print_placement(MPI_COMM_WORLD); /* the nodes MPI sees (on a cluster: more than one) */

    /* which collectives and algorithms */
    char **colls, **algos = NULL;
    int ncolls = ct_split(coll_list ? coll_list : "", &colls), nalgos = 0;
    int selected[CT_NCOLL] = { 0 };
    for (int c = 0; c < CT_NCOLL && !coll_list; c++) selected[c] = 1;
    for (int i = 0; i < ncolls; i++) {
        ct_coll_t c;
        if (ct_coll_from_name(colls[i], &c) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
        selected[c] = 1;
    }
    if (algo_list) {
        nalgos = ct_split(algo_list, &algos);
        for (int k = 0; k < nalgos; k++) {
            int found = 0;
            for (int c = 0; c < CT_NCOLL; c++)
                if (selected[c] && ct_algo_find((ct_coll_t)c, algos[k]) >= 0) found = 1;
            if (!found) {
                /* the parse error lists the valid names of the first selected collective */
                for (int c = 0; c < CT_NCOLL; c++)
                    if (selected[c]) {
                        ct_choice_t tmp;
                        ct_choice_parse((ct_coll_t)c, algos[k], &tmp);
                        ct_die(rank, "%s", ct_last_error());
                    }
            }
        }
    }

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    double t0 = MPI_Wtime();
    for (int i = 0; i < ct_algo_count(); i++) {
        const ct_algo_t *a = ct_algo_get(i);
        if (!selected[a->coll]) continue;
        if (algos) {
            int want = 0;
            for (int k = 0; k < nalgos; k++)
                if (!strcmp(algos[k], a->name)) want = 1;
            if (!want) continue;
        } else if ((a->constraints & CT_HIDDEN) || !strcmp(a->name, "native")) {
            continue;
        }
        verify_algo(i);
    }
    if (rank == 0) {
        printf("{\"event\": \"summary\", \"np\": %d, \"cases\": %ld, \"failed\": %ld, "
               "\"seconds\": %.3f, \"mpi\": ",
               nprocs, vc_cases_run, vc_cases_failed, MPI_Wtime() - t0);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
    }
    ct_free_list(colls, ncolls);
    if (algos) ct_free_list(algos, nalgos);
    vc_teardown();
    MPI_Finalize();
    return vc_cases_failed ? 1 : 0;
}
