/*
 * bench.c -- colltune-bench: latency of collective algorithms.
 *
 * Two timing methods (--timing), both run the algorithms of one collective
 * interleaved (A B C A B C ...) within each repetition and size, so drift of
 * a noisy machine does not favour one of them:
 *
 * osu (default), as the OSU Micro-Benchmarks: per point, warm-up iterations,
 *   then `iterations` calls, each timed alone with an untimed barrier after
 *   it; each process's mean time per call is one sample; per repetition, the
 *   mean over processes (OSU's "Avg Latency") is the repetition's value, and
 *   statistics run over repetitions (rep_min_us, median_us, ...). OSU's
 *   "Min/Max Latency" are the smallest and largest, over processes, of a
 *   process's mean time per call over all its timed calls (rank_min_us,
 *   rank_max_us).
 *
 * `native` calls the MPI library's collective (MPI_Bcast, ...) directly in the
 * timed loop, not through colltune's dispatcher, so its figure is the library's
 * call alone. Message buffers are aligned to --align bytes (default: the page
 * size, as OSU allocates them) and written before any timing.
 *
 * window, after ReproMPI: each rank's clock offset to rank 0 is estimated by
 *   ping-pong (smallest round trip wins); rank 0 broadcasts a schedule of
 *   time windows in that global clock; every rank busy-waits for the start of
 *   a window, runs one call and records its start and end. A sample where
 *   some rank reached the window after its start is invalid and discarded;
 *   a valid sample's time is the last end over ranks minus the window start.
 *   Statistics run over the valid samples of all repetitions.
 *
 * Output: one JSON object per (size, algorithm) on stdout from rank 0.
 * docs/benchmarking.md describes every field.
 *
 * --lib LABEL --cvars "NAME=VALUE ..." (repeatable): the MPI library's own algorithm
 * as a candidate of this launch, beside `native` and colltune's: every process writes
 * the MPI_T control variables (Open MPI: coll_tuned_bcast_algorithm=1, ...; the
 * launch needs OMPI_MCA_coll_tuned_use_dynamic_rules=1), duplicates the measured
 * communicator (Open MPI's coll/tuned reads its forced algorithm when a communicator
 * is made) and writes the old values back; the candidate then calls the library's
 * collective on that duplicate, so its repetitions are paired in time with native's
 * (docs/library-algorithms.md). A value that does not read back as written stops the
 * run with an error. Each candidate's first warm-up call is marked for a preloaded
 * observer (colltune_observe_mark(LABEL), observers/ompi_algos.c), so that tests see
 * which algorithm each communicator ran.
 *
 * This file: the options, buffers, the loop over sizes, repetitions and
 * algorithms, and the output; bench_timing.c: one call, the timed loops of both
 * methods, the clock synchronisation and --validate.
 */
#define _GNU_SOURCE
#include "bench_timing.h"
#include "bench_stats.h"
#include "driver_common.h"
#include "loadtraffic.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *timing_names[] = { "osu", "window" };

/* --time-budget: the most iterations a point is given */
#define ITER_CAP_OSU 10000000L
#define ITER_CAP_WINDOW 1000000L /* window keeps every sample on rank 0             */

static int rank, nprocs;
/* the measured processes: MPI_COMM_WORLD, or without the generator ranks (--load-ranks) */
static MPI_Comm world; /* set after MPI_Init (under SMPI MPI_COMM_WORLD is a call) */

static int timing = TIMING_OSU;
static double sleep_s;        /* --sleep */
static double budget_s;       /* --time-budget, 0 if none */
static int reps = 3;
static long warmup_opt = -1;
static int warmup_once;        /* --warmup-once: warm-up calls before a candidate's first point only */
static int prepare;            /* --prepare: ct_comm_prepare before a candidate's first point */
static long align = -1;        /* --align: buffer alignment in bytes, 1 = plain malloc */
static int shared_bufs;        /* --shared-buffers (SMPI only): SMPI_SHARED_MALLOC */
static int no_dup;             /* --no-dup: do not hold the run's duplicate communicator */
static long rotate;            /* --rotate K: every repetition starts with candidate K (mod n) */

/* --lib LABEL --cvars "NAME=VALUE ...": the library's algorithms on their own communicators */
#define MAX_LIB 64
static const char *lib_label[MAX_LIB], *lib_cvars[MAX_LIB];
static int nlib;

static void usage(void) {
    printf("usage: colltune-bench --coll C --algo LIST [--sizes LIST] [--iterations N]\n"
           "                      [--warmup N] [--warmup-once] [--prepare] [--reps R]\n"
           "                      [--root R] [--dtype T] [--op O]\n"
           "                      [--timing osu|window] [--sleep US] [--time-budget S]\n"
           "                      [--align BYTES] [--validate] [--raw] [--trace] [--no-dup]\n"
           "                      [--rotate K]\n"
           "                      [--shared-buffers] [--load-ranks K [--load-pattern P]\n"
           "                      [--load-size B] [--load-window W] [--load-seed S]]\n"
           "                      [--probe-iterations N [--probe-size B]]\n"
           "                      [--lib LABEL --cvars \"NAME=VALUE ...\"]...\n\n"
           "  --coll        bcast | reduce | gather | allgather | allreduce | alltoall |\n"
           "                alltoallv | scatter | barrier | allgatherv | gatherv | scatterv\n"
           "  --algo        comma-separated algorithm specs, e.g. native,binomial,chain:fanout=2\n"
           "  --sizes       message sizes in bytes (default 8,65536,1048576); for gather and\n"
           "                allgather: bytes per process; alltoall(v): per process per\n"
           "                destination (as osu_alltoall); scatter: per process; barrier: 0;\n"
           "                allgatherv, gatherv, scatterv: per process, equal on every\n"
           "                process (as osu_allgatherv, osu_gatherv, osu_scatterv)\n"
           "  --iterations  timed calls (osu) or samples (window) per point and repetition\n"
           "                (default 1000 up to 8 KiB, 100 above)\n"
           "  --warmup      untimed calls first (default iterations/10)\n"
           "  --warmup-once the warm-up calls only before each algorithm's first point (its\n"
           "                first size and repetition), not before every point: under\n"
           "                simulation, where only a first call differs (private\n"
           "                communicators are made then), the later ones would repeat it\n"
           "  --prepare     before each algorithm's first point, make what its first call\n"
           "                would make (ct_comm_prepare: the private duplicate, a remap's\n"
           "                permuted communicator) instead of a call; with --warmup 0, for\n"
           "                simulations, where that is the only first-call effect\n"
           "  --reps        repetitions, interleaved across algorithms (default 3)\n"
           "  --dtype       char | int | float | double (default char)\n"
           "  --op          sum | max | min | prod (default sum)\n"
           "  --timing      osu: per-call time with a barrier between calls (default);\n"
           "                window: synchronised clocks, one call per time window (ReproMPI)\n"
           "  --sleep       microseconds to sleep between calls, outside the timed region\n"
           "  --time-budget seconds per point and algorithm, all repetitions together;\n"
           "                the iteration count comes from a calibration run (not with\n"
           "                --iterations)\n"
           "  --align       message buffers start at a multiple of BYTES (a power of two;\n"
           "                default: the page size, as the OSU benchmarks allocate them);\n"
           "                0 or 1: plain malloc\n"
           "  --validate    after timing a point, compare one call on rank-dependent data\n"
           "                with the MPI library's collective; exit 1 if any differs\n"
           "  --shared-buffers  (SimGrid SMPI only) message buffers from SMPI_SHARED_MALLOC:\n"
           "                every rank's buffer is the same memory, so thousands of\n"
           "                simulated ranks fit; timing only, the data is not meaningful\n"
           "                (not with --validate); the remapped Allgather's scratch too\n"
           "  --rotate K    every repetition runs the candidates from the K-th on (mod their\n"
           "                number), so that launches of one repetition each (a study's)\n"
           "                do not always run the same candidate first\n"
           "  --lib LABEL --cvars \"NAME=VALUE ...\"\n"
           "                the MPI library's own algorithm as a candidate LABEL: its\n"
           "                collective on a communicator made while the MPI_T control\n"
           "                variables held these values (Open MPI: coll_tuned_*; the\n"
           "                launch needs OMPI_MCA_coll_tuned_use_dynamic_rules=1)\n"
           "  --no-dup      do not hold a duplicate of the communicator for the run (every\n"
           "                launch holds one by default, as the dispatcher makes one for\n"
           "                colltune's algorithms, so all launches wait alike)\n"
           "  --raw         add the per-repetition (osu) or per-sample (window) times\n"
           "  --trace       print the buffer addresses (\"buffers ...\") and the order of the\n"
           "                timed loops (\"trace size=... rep=... algo=...\") on stderr\n"
           "  --load-ranks  the last K ranks of MPI_COMM_WORLD are a load generator (as\n"
           "                colltune-load, without a duty cycle): they exchange traffic among\n"
           "                themselves until the measured ranks (the others) are done; for a\n"
           "                generator inside the same simulation (docs/workload.md)\n"
           "  --load-pattern pairs | alltoall | hot (default pairs)\n"
           "  --load-size   bytes per generator message (default 1048576)\n"
           "  --load-window generator messages per partner in flight at once (default 4)\n"
           "  --load-seed   seed of the generator's random pairings (default 1)\n"
           "  --probe-iterations  before the points, the probe (colltune-probe's loop: a\n"
           "                barrier and --probe-size bytes between random pairs) on the\n"
           "                measured ranks; prints {\"kind\": \"probe\", ...} (default 0: none)\n"
           "  --probe-size  bytes per probe exchange (default 4096)\n");
}

/* ---- output --------------------------------------------------------------- */

static void json_us(const char *name, double seconds) {
    if (isfinite(seconds)) printf(", \"%s\": %.3f", name, seconds * 1e6);
    else printf(", \"%s\": null", name);
}

static void print_record(const point_t *p, candidate_t *c, long size, const char *dtype_name,
                         const char *op_name, const char *ver, int raw, double rank_mean_min,
                         double rank_mean_max) {
    ct_stats_t st;
    if (ct_stats_compute(c->samples, c->nsamples, &st))
        ct_die(rank, "out of memory computing statistics");
    const ct_algo_t *a = ct_algo_get(c->choice.algo);
    const char *params = strchr(c->spec, ':');
    printf("{\"collective\": \"%s\", \"algorithm\": ", ct_coll_name(p->coll));
    ct_json_str(stdout, a->name);
    printf(", \"params\": ");
    ct_json_str(stdout, params ? params + 1 : "");
    printf(", \"spec\": ");
    ct_json_str(stdout, c->given);
    printf(", \"np\": %d, \"size\": %ld, \"dtype\": \"%s\", \"op\": \"%s\", \"root\": %d, "
           "\"iterations\": %ld, \"warmup\": %ld, \"timing\": \"%s\"",
           nprocs, size, dtype_name, op_name, p->root, c->iters, c->warm, timing_names[timing]);
    if (warmup_once) printf(", \"warmup_once\": true");
    if (prepare) printf(", \"prepared\": true");
    /* over repetitions (osu) or valid samples (window); OSU's min/max over
     * processes are rank_min_us and rank_max_us */
    json_us("rep_min_us", st.min);
    json_us("mean_us", st.mean);
    json_us("median_us", st.median);
    json_us("p90_us", st.p90);
    json_us("p99_us", st.p99);
    json_us("rep_max_us", st.max);
    json_us("stddev_us", st.stddev);
    printf(", \"valid_reps\": %d, \"invalid\": %ld", st.n, c->invalid);
    json_us("rank_min_us", rank_mean_min);
    json_us("rank_max_us", rank_mean_max);
    json_us("window_us", timing == TIMING_WINDOW ? c->w : NAN);
    printf(", \"sleep_us\": %.3f, \"align\": %ld", sleep_s * 1e6, align);
    if (budget_s > 0) printf(", \"time_budget_s\": %g", budget_s);
    else printf(", \"time_budget_s\": null");
    printf(", \"valid\": %s", c->valid < 0 ? "null" : c->valid ? "true" : "false");
    printf(", \"fallback\": ");
    if (c->fallback) ct_json_str(stdout, c->fallback_reason);
    else fputs("null", stdout);
    printf(", \"mpi\": ");
    ct_json_str(stdout, ver);
    if (raw) {
        printf(", \"samples_us\": [");
        for (int i = 0; i < c->nsamples; i++)
            printf("%s%.3f", i ? ", " : "", c->samples[i] * 1e6);
        printf("]");
    }
    printf("}\n");
    fflush(stdout);
}

/* ---- main ----------------------------------------------------------------- */

static void free_buf(char *p) {
    if (!p) return;
#ifdef SMPI_SHARED_FREE
    if (shared_bufs) {
        SMPI_SHARED_FREE(p);
        return;
    }
#endif
    free(p);
}

/* A message buffer: at a multiple of `align` bytes (posix_memalign), or plain
 * malloc when align is 1. NULL when out of memory. */
static char *alloc_buf(size_t n) {
#ifdef SMPI_SHARED_MALLOC
    if (shared_bufs) return SMPI_SHARED_MALLOC(n);
#endif
    if (align <= 1) return malloc(n);
    void *p = NULL;
    size_t a = (size_t)align < sizeof(void *) ? sizeof(void *) : (size_t)align;
    return posix_memalign(&p, a, n) == 0 ? p : NULL;
}

static double parse_seconds(const char *opt, const char *v, double scale) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < 0)
        ct_die(rank, "%s '%s': must be a non-negative number", opt, v);
    return x * scale;
}

/* a preloaded observer's marker (observers/), NULL without one */
static void (*observe_mark)(const char *label);

#ifndef SMPI_SHARED_MALLOC
/* Write one MPI_T control variable (its old value into *old), checked by reading it
 * back. The value is parsed as the variable's own type. */
typedef union {
    int i;
    unsigned u;
    long l;
    unsigned long ul;
    long long ll;
    unsigned long long ull;
    double d;
} cvar_value_t;

static MPI_T_cvar_handle cvar_open(const char *label, const char *name, MPI_Datatype *dt) {
    int idx, verb, bind, scope, nl = 0, dl = 0, count;
    MPI_T_enum en;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS)
        ct_die(rank, "--lib %s: the MPI library has no control variable %s", label, name);
    MPI_T_cvar_get_info(idx, NULL, &nl, &verb, dt, &en, NULL, &dl, &bind, &scope);
    if (bind != MPI_T_BIND_NO_OBJECT)
        ct_die(rank, "--lib %s: control variable %s is bound to an MPI object", label, name);
    if (scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY)
        ct_die(rank, "--lib %s: control variable %s cannot be written", label, name);
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS || count != 1)
        ct_die(rank, "--lib %s: control variable %s: no handle", label, name);
    return h;
}

static cvar_value_t cvar_parse(const char *label, const char *name, const char *text,
                               MPI_Datatype dt) {
    cvar_value_t v;
    char *end;
    errno = 0;
    if (dt == MPI_DOUBLE) v.d = strtod(text, &end);
    else {
        long long x = strtoll(text, &end, 10);
        if (dt == MPI_INT) v.i = (int)x;
        else if (dt == MPI_UNSIGNED) v.u = (unsigned)x;
        else if (dt == MPI_LONG) v.l = (long)x;
        else if (dt == MPI_UNSIGNED_LONG) v.ul = (unsigned long)x;
        else if (dt == MPI_LONG_LONG) v.ll = x;
        else if (dt == MPI_UNSIGNED_LONG_LONG) v.ull = (unsigned long long)x;
        else ct_die(rank, "--lib %s: control variable %s has a type --cvars cannot write",
                    label, name);
    }
    if (end == text || *end || errno)
        ct_die(rank, "--lib %s: %s=%s is not a number", label, name, text);
    return v;
}

static int cvar_same(const cvar_value_t *a, const cvar_value_t *b, MPI_Datatype dt) {
    if (dt == MPI_DOUBLE) return a->d == b->d;
    if (dt == MPI_INT) return a->i == b->i;
    if (dt == MPI_UNSIGNED) return a->u == b->u;
    if (dt == MPI_LONG) return a->l == b->l;
    if (dt == MPI_UNSIGNED_LONG) return a->ul == b->ul;
    if (dt == MPI_LONG_LONG) return a->ll == b->ll;
    return a->ull == b->ull;
}

/* --lib LABEL --cvars "NAME=VALUE ...": write the control variables, duplicate the
 * measured communicator, write the old values back; the duplicate keeps the algorithm
 * the library chose when it was made. */
static MPI_Comm lib_comm(const char *label, const char *cvars) {
    static int mpit;
    if (!mpit) {
        int provided;
        if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
            ct_die(rank, "--lib %s: the MPI library's tool interface (MPI_T) failed", label);
        mpit = 1;
    }
    enum { MAXV = 16 };
    MPI_T_cvar_handle h[MAXV];
    MPI_Datatype dts[MAXV];
    cvar_value_t old[MAXV];
    int n = 0;
    char *list = strdup(cvars), *save = NULL;
    if (!list) ct_die(rank, "out of memory");
    for (char *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) ct_die(rank, "--cvars '%s': NAME=VALUE expected", tok);
        if (n == MAXV) ct_die(rank, "--cvars: at most %d variables", MAXV);
        *eq = 0;
        h[n] = cvar_open(label, tok, &dts[n]);
        cvar_value_t want = cvar_parse(label, tok, eq + 1, dts[n]), got;
        MPI_T_cvar_read(h[n], &old[n]);
        if (MPI_T_cvar_write(h[n], &want) != MPI_SUCCESS)
            ct_die(rank, "--lib %s: the MPI library refused to write %s=%s", label, tok, eq + 1);
        MPI_T_cvar_read(h[n], &got);
        if (!cvar_same(&want, &got, dts[n]))
            ct_die(rank, "--lib %s: %s=%s did not read back as written", label, tok, eq + 1);
        n++;
    }
    free(list);
    MPI_Comm comm;
    if (MPI_Comm_dup(world, &comm) != MPI_SUCCESS)
        ct_die(rank, "--lib %s: MPI_Comm_dup failed", label);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int i = n - 1; i >= 0; i--) {
        MPI_T_cvar_write(h[i], &old[i]);
        MPI_T_cvar_handle_free(&h[i]);
    }
    return comm;
}
#else
static MPI_Comm lib_comm(const char *label, const char *cvars) {
    (void)cvars;
    ct_die(rank, "--lib %s: the MPI library's own algorithms are not simulated", label);
    return MPI_COMM_NULL;
}
#endif

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        void *sym = dlsym(RTLD_DEFAULT, "colltune_observe_mark");
        memcpy(&observe_mark, &sym, sizeof observe_mark);
    }
    world = MPI_COMM_WORLD;

    const char *coll_name = NULL, *algo_list = NULL, *size_list = "8,65536,1048576";
    const char *dtype_name = "char", *op_name = "sum", *timing_name = "osu";
    long iterations = -1;
    int root = 0, validate = 0, raw = 0, trace = 0;
    long load_ranks = 0, load_size = 1048576, load_window = 4, probe_iters = 0, probe_size = 4096;
    int load_pattern = CT_LOAD_PAIRS;
    unsigned long long load_seed = 1;
    /* options without a value */
    const struct {
        const char *name;
        int *on;
    } flags[] = { { "--validate", &validate }, { "--raw", &raw }, { "--trace", &trace },
                  { "--warmup-once", &warmup_once }, { "--prepare", &prepare },
                  { "--no-dup", &no_dup } };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int flag = 0;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0] && !flag; f++)
            if (!strcmp(a, flags[f].name)) flag = *flags[f].on = 1;
        if (flag) continue;
        if (!strcmp(a, "--shared-buffers")) {
#ifdef SMPI_SHARED_MALLOC
            shared_bufs = 1; /* and the remap layer's Allgather scratch: after MPI_Init */
            continue;
#else
            ct_die(rank, "--shared-buffers: only in a build for SimGrid's SMPI "
                         "(colltune build --mpi smpi)");
#endif
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--coll")) coll_name = v;
        else if (!strcmp(a, "--algo")) algo_list = v;
        else if (!strcmp(a, "--lib")) {
            if (nlib == MAX_LIB) ct_die(rank, "--lib: at most %d", MAX_LIB);
            lib_label[nlib++] = v;
        } else if (!strcmp(a, "--cvars")) {
            if (!nlib || lib_cvars[nlib - 1])
                ct_die(rank, "--cvars '%s': give it once after each --lib LABEL", v);
            lib_cvars[nlib - 1] = v;
        }
        else if (!strcmp(a, "--sizes")) size_list = v;
        else if (!strcmp(a, "--iterations")) iterations = atol(v);
        else if (!strcmp(a, "--warmup")) warmup_opt = atol(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--rotate")) rotate = ct_parse_long(rank, a, v, 0, 1000000L);
        else if (!strcmp(a, "--root")) root = atoi(v);
        else if (!strcmp(a, "--dtype")) dtype_name = v;
        else if (!strcmp(a, "--op")) op_name = v;
        else if (!strcmp(a, "--timing")) timing_name = v;
        else if (!strcmp(a, "--align")) {
            char *end;
            errno = 0;
            align = strtol(v, &end, 10);
            if (end == v || *end || errno || align < 0 || align > (1L << 30) ||
                (align & (align - 1)))
                ct_die(rank, "--align '%s': must be 0 or a power of two up to 1073741824 "
                             "(bytes; 0 or 1: plain malloc)", v);
            if (align == 0) align = 1;
        }
        else if (!strcmp(a, "--load-ranks")) load_ranks = ct_parse_long(rank, a, v, 0, nprocs - 1);
        else if (!strcmp(a, "--load-size")) load_size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--load-window")) load_window = ct_parse_long(rank, a, v, 1, 1024);
        else if (!strcmp(a, "--probe-iterations")) probe_iters = ct_parse_long(rank, a, v, 0, 10000000L);
        else if (!strcmp(a, "--probe-size")) probe_size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--load-pattern")) {
            load_pattern = ct_load_pattern(v);
            if (load_pattern < 0) ct_die(rank, "--load-pattern '%s': valid: pairs, alltoall, hot", v);
        } else if (!strcmp(a, "--load-seed")) {
            char *end;
            errno = 0;
            if (v[0] == '-' || (load_seed = strtoull(v, &end, 10), end == v || *end || errno))
                ct_die(rank, "--load-seed '%s': must be a whole number >= 0", v);
        }
        else if (!strcmp(a, "--sleep")) sleep_s = parse_seconds(a, v, 1e-6);
        else if (!strcmp(a, "--time-budget")) {
            budget_s = parse_seconds(a, v, 1);
            if (!(budget_s > 0)) ct_die(rank, "--time-budget '%s': must be more than 0 s", v);
        }
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    MPI_Comm stop_comm = MPI_COMM_NULL;
    if (load_ranks > 0) {
        /* the last load_ranks ranks generate traffic until the measured ones are done:
         * a nonblocking barrier over all ranks on a duplicate of MPI_COMM_WORLD, which
         * the generator ranks post first and the measured ranks enter at the end */
        if (load_ranks < 2)
            ct_die(rank, "--load-ranks %ld: the generator needs at least 2 ranks", load_ranks);
        int is_gen = rank >= nprocs - load_ranks, wsize = nprocs;
        MPI_Comm_dup(MPI_COMM_WORLD, &stop_comm);
        MPI_Comm_split(MPI_COMM_WORLD, is_gen, rank, &world);
        MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
        if (is_gen) {
            MPI_Request stop;
            MPI_Ibarrier(stop_comm, &stop);
            ct_load_t gen;
            if (ct_load_init(&gen, world, load_pattern, load_size, load_window,
                             (uint64_t)load_seed))
                ct_die(rank, "out of memory for the load generator");
            long long rounds = 0, tot[2] = { 0, 0 };
            double t0 = MPI_Wtime();
            ct_load_serve(&gen, &stop, &rounds);
            double elapsed = MPI_Wtime() - t0;
            long long mine[2] = { gen.msgs, gen.sent };
            MPI_Reduce(mine, tot, 2, MPI_LONG_LONG, MPI_SUM, 0, world);
            if (gen.rank == 0) {
                printf("{\"kind\": \"load\", \"np\": %ld, \"measured_np\": %ld, \"pattern\": "
                       "\"%s\", \"size\": %ld, \"window\": %ld, \"seed\": %llu, \"rounds\": "
                       "%lld, \"messages\": %lld, \"bytes\": %lld, \"elapsed_s\": %.6f, "
                       "\"rate_MBps\": %.3f}\n",
                       load_ranks, wsize - load_ranks, ct_load_pattern_names[load_pattern],
                       load_size, load_window, load_seed, rounds, tot[0], tot[1], elapsed,
                       elapsed > 0 ? (double)tot[1] / elapsed / 1e6 : 0);
                fflush(stdout);
            }
            ct_load_free(&gen);
            MPI_Comm_free(&world);
            MPI_Comm_free(&stop_comm);
            MPI_Finalize();
            return 0;
        }
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &nprocs);
    }
    if (probe_iters > 0) {
        if (nprocs < 2) ct_die(rank, "--probe-iterations: the probe needs 2 measured ranks");
        double wall = 0, med = 0;
        ct_probe_loop(world, probe_size, probe_iters, 10, 0x5eed0004ULL, &wall, &med);
        if (rank == 0) {
            printf("{\"kind\": \"probe\", \"np\": %d, \"size\": %ld, \"iterations\": %ld, "
                   "\"iter_wall_us\": %.4f, \"median_us\": %.4f}\n",
                   nprocs, probe_size, probe_iters, wall * 1e6, med * 1e6);
            fflush(stdout);
        }
    }
    ct_print_placement(world); /* where the processes really are (nodes, ppn) */
    /* Every launch holds one duplicate of the measured communicator for the whole run,
     * as colltune's dispatcher makes one for our algorithms: in Open MPI 5 the first
     * duplicate registers libnbc's progress callback, which every later wait then
     * polls. Without this, launches of the library's algorithms alone (ompi:, mpich:)
     * would wait with a shorter progress loop than launches that run ours and native
     * (docs/benchmarking.md). --no-dup measures the difference. */
    MPI_Comm run_dup = MPI_COMM_NULL;
    if (!no_dup) MPI_Comm_dup(world, &run_dup);
    ct_coll_t coll;
    if (!coll_name) ct_die(rank, "--coll is required (bcast, reduce, gather, allgather, allreduce, "
                                 "alltoall, alltoallv, scatter, barrier, allgatherv, gatherv, "
                                 "scatterv)");
    if (ct_coll_from_name(coll_name, &coll) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
    if (!algo_list && !nlib) ct_die(rank, "--algo is required");
    for (int l = 0; l < nlib; l++)
        if (!lib_cvars[l]) ct_die(rank, "--lib %s: --cvars \"NAME=VALUE ...\" must follow it",
                                  lib_label[l]);
    MPI_Datatype dt;
    MPI_Op op;
    if (ct_dtype_from_name(dtype_name, &dt))
        ct_die(rank, "unknown --dtype '%s'; valid: char, int, float, double", dtype_name);
    if (ct_op_from_name(op_name, &op))
        ct_die(rank, "unknown --op '%s'; valid: sum, max, min, prod", op_name);
    if (!strcmp(timing_name, "osu")) timing = TIMING_OSU;
    else if (!strcmp(timing_name, "window")) timing = TIMING_WINDOW;
    else ct_die(rank, "unknown --timing '%s'; valid: osu, window", timing_name);
    if (reps < 1) ct_die(rank, "--reps %d: must be at least 1", reps);
    if (root < 0 || root >= nprocs)
        ct_die(rank, "--root %d: must be a rank of the %d processes", root, nprocs);
    if (budget_s > 0 && iterations > 0)
        ct_die(rank, "--time-budget and --iterations exclude each other");
    if (shared_bufs && validate)
        ct_die(rank, "--shared-buffers and --validate exclude each other (shared buffers "
                     "hold no meaningful data)");
    if (shared_bufs && (ct_remap_shared_scratch(1) != MPI_SUCCESS ||
                        ct_sim_timing_only(1) != MPI_SUCCESS))
        ct_die(rank, "--shared-buffers: %s", ct_last_error());
    if (sleep_s > 10) ct_die(rank, "--sleep %.0f us: at most 10 s", sleep_s * 1e6);
    if (align < 0) { /* not given: the page size, as OSU's buffers */
        long pg = sysconf(_SC_PAGESIZE);
        align = pg > 0 ? pg : 4096;
    }
    int tsize;
    MPI_Type_size(dt, &tsize);

    char **specs = NULL, **sizes_s;
    int nalgo = algo_list ? ct_split_specs(algo_list, &specs) : 0;
    int nsizes = ct_split(size_list, &sizes_s);
    if (algo_list && nalgo < 1) ct_die(rank, "--algo names no algorithm");
    if (nsizes < 1) ct_die(rank, "--sizes names no size");
    int ncand = nalgo + nlib;
    candidate_t *cand = calloc((size_t)ncand, sizeof *cand);
    if (!cand) ct_die(rank, "out of memory");
    for (int k = 0; k < ncand; k++) {
        cand[k].comm = MPI_COMM_NULL;
        if (ct_choice_parse(coll, k < nalgo ? specs[k] : "native", &cand[k].choice) !=
            MPI_SUCCESS)
            ct_die(rank, "%s", ct_last_error());
        ct_choice_format(&cand[k].choice, cand[k].spec, sizeof cand[k].spec);
        cand[k].given = k < nalgo ? specs[k] : lib_label[k - nalgo];
        cand[k].native = !strcmp(ct_algo_get(cand[k].choice.algo)->name, "native");
        if (k >= nalgo) cand[k].comm = lib_comm(lib_label[k - nalgo], lib_cvars[k - nalgo]);
    }
    /* all-to-all: the size is per process per destination (osu_alltoall): send and
     * receive processes x size */
    int a2a = coll == CT_ALLTOALL || coll == CT_ALLTOALLV;
    /* reduce-scatter: the size is what each process receives (one block): the send
     * buffer is processes x size */
    int sends_p = a2a || coll == CT_SCATTER || coll == CT_REDUCE_SCATTER_BLOCK ||
                  coll == CT_REDUCE_SCATTER || coll == CT_SCATTERV; /* send: processes x size */
    int gathered = coll == CT_GATHER || coll == CT_ALLGATHER || a2a ||
                   coll == CT_ALLGATHERV || coll == CT_GATHERV; /* receive: p x size */
    int vdispl = a2a || coll == CT_ALLGATHERV || coll == CT_GATHERV ||
                 coll == CT_SCATTERV; /* displacements j x count fit an int */
    long *sizes = malloc((size_t)nsizes * sizeof *sizes);
    long max_size = 0;
    for (int s = 0; s < nsizes; s++) {
        char *end;
        errno = 0;
        sizes[s] = strtol(sizes_s[s], &end, 10);
        if (end == sizes_s[s] || *end || sizes[s] < 0 || errno)
            ct_die(rank, "size '%s' is not a non-negative number of bytes", sizes_s[s]);
        if (sizes[s] % tsize)
            ct_die(rank, "size %ld B is not a multiple of the %s element (%d B)", sizes[s],
                   dtype_name, tsize);
        if (coll == CT_BARRIER && sizes[s] != 0)
            ct_die(rank, "size %ld B: a barrier moves no data; use --sizes 0", sizes[s]);
        if (sizes[s] / tsize > (vdispl || (sends_p && coll != CT_SCATTER) ? INT_MAX / nprocs
                                                                          : INT_MAX))
            ct_die(rank, "size %ld B is %ld %s elements, more than an MPI count can hold (%d)",
                   sizes[s], sizes[s] / tsize, dtype_name, INT_MAX);
        if ((gathered || sends_p) && (size_t)sizes[s] > SIZE_MAX / 4 / (size_t)nprocs)
            ct_die(rank, "size %ld B per process times %d processes does not fit in memory",
                   sizes[s], nprocs);
        if (sizes[s] > max_size) max_size = sizes[s];
    }

    /* buffers for the largest size; every process must have them, or all stop */
    size_t per = (size_t)max_size * (sends_p ? (size_t)nprocs : 1); /* send */
    size_t tot = coll == CT_BCAST ? 0 : (size_t)max_size * (gathered ? (size_t)nprocs : 1);
    size_t vref = !validate ? 0 : coll == CT_BCAST ? per : tot; /* MPI's own result */
    char *sbuf = alloc_buf(per ? per : 1), *rbuf = alloc_buf(tot ? tot : 1);
    char *ref = validate ? alloc_buf(vref ? vref : 1) : NULL;
    int have = sbuf && rbuf && (!validate || ref), all_have = 0, nmissing = 0;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, world);
    int missing = !have;
    MPI_Allreduce(&missing, &nmissing, 1, MPI_INT, MPI_SUM, world);
    if (!all_have) {
        char parts[160];
        if (coll == CT_BCAST) snprintf(parts, sizeof parts, "buffer %zu", per);
        else snprintf(parts, sizeof parts, "send %zu + receive %zu%s", per, tot,
                      gathered ? " (processes x size)" : "");
        if (validate)
            snprintf(parts + strlen(parts), sizeof parts - strlen(parts),
                     " + MPI's result for --validate %zu", vref);
        ct_die(rank,
               "cannot allocate the message buffers for size %ld B: %zu bytes per process "
               "needed (%s), failed on %d of %d processes; use smaller --sizes",
               max_size, per + tot + vref, parts, nmissing, nprocs);
    }
    /* touched before any timing: every page is mapped and in this process's memory
     * (shared buffers: no data and no timing to protect; untouched, they cost no
     * page faults) */
    if (!shared_bufs) {
        memset(sbuf, 1, per ? per : 1);
        memset(rbuf, 0, tot ? tot : 1);
    }
    if (ref) memset(ref, 0, vref ? vref : 1);
    if (trace && rank == 0)
        fprintf(stderr, "buffers align=%ld sbuf=%p rbuf=%p\n", align, (void *)sbuf,
                (void *)rbuf);

    bench_timing_init(world, sleep_s, budget_s);
    if (timing == TIMING_WINDOW) window_setup();

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    int nfailed = 0;
    for (int s = 0; s < nsizes; s++) {
        point_t p = { coll, dt, op, root, (int)(sizes[s] / tsize), tsize, sbuf, rbuf };
        long def_iters = iterations > 0 ? iterations : (sizes[s] <= 8192 ? 1000 : 100);
        for (int k = 0; k < ncand; k++) {
            candidate_t *c = &cand[k];
            c->nsamples = 0;
            c->invalid = 0;
            c->busy = 0;
            c->nbusy = 0;
            c->lsum = 0;
            c->ln = 0;
            c->valid = -1;
            c->fallback = 0;
        }
        for (int r = 0; r < reps; r++) {
            for (int kk = 0; kk < ncand; kk++) {
                candidate_t *c = &cand[(kk + rotate) % ncand];
                if (trace && rank == 0) /* the order points run in, for tests and doubts */
                    fprintf(stderr, "trace size=%ld rep=%d algo=%s\n", sizes[s], r, c->spec);
                if (r == 0) {
                    /* calibration: the window length, and the iteration count
                     * for a time budget (decided on rank 0, used by all) */
                    double per_call = 0;
                    if (timing == TIMING_WINDOW) {
                        window_estimate(&p, c);
                        per_call = c->w + sleep_s;
                    } else if (budget_s > 0) {
                        per_call = osu_calibrate(&p, c);
                    }
                    c->iters = def_iters;
                    if (budget_s > 0 && rank == 0)
                        c->iters = ct_budget_iterations(
                            budget_s, per_call, reps, warmup_opt,
                            timing == TIMING_WINDOW ? ITER_CAP_WINDOW : ITER_CAP_OSU);
                    MPI_Bcast(&c->iters, 1, MPI_LONG, 0, world);
                    c->warm = warmup_opt >= 0 ? warmup_opt : c->iters / 10;
                }
                /* rank 0's end of this repetition's share of a time budget */
                double deadline = budget_s > 0 ? MPI_Wtime() + budget_s / reps : 0;
                int rc = MPI_SUCCESS;
                /* warm-up: osu as OSU's skipped iterations (a barrier after each
                 * call), window back to back */
                if (prepare && s == 0 && r == 0 && !c->native) {
                    int reduces = coll == CT_REDUCE || coll == CT_ALLREDUCE ||
                                  coll == CT_REDUCE_SCATTER_BLOCK || coll == CT_REDUCE_SCATTER;
                    check_rc(ct_comm_prepare(&c->choice, world, p.count,
                                             reduces ? op : MPI_OP_NULL), c);
                    MPI_Barrier(world);
                }
                long warm = warmup_once && (s > 0 || r > 0) ? 0 : c->warm;
                if (s == 0 && r == 0 && observe_mark) { /* which algorithm: one marked call */
                    observe_mark(c->given);
                    rc = bench_call(&p, c);
                    observe_mark(NULL);
                    MPI_Barrier(world);
                }
                for (long it = 0; it < warm && rc == MPI_SUCCESS; it++) {
                    rc = bench_call(&p, c);
                    if (timing == TIMING_OSU) MPI_Barrier(world);
                }
                check_rc(rc, c);
                if (timing == TIMING_WINDOW) window_block(&p, c, deadline);
                else osu_block(&p, c);
                note_fallback(c);
            }
        }
        for (int k = 0; k < ncand; k++) {
            candidate_t *c = &cand[k];
            double rmin = NAN, rmax = NAN;
            if (timing == TIMING_OSU) {
                /* OSU's Min/Max Latency: a process's mean time per call over all
                 * its timed calls, smallest and largest over processes */
                double mine = c->nbusy ? c->busy / (double)c->nbusy : NAN;
                MPI_Reduce(&mine, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, world);
                MPI_Reduce(&mine, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, world);
            } else {
                /* per process: mean duration of its own calls in valid samples */
                double mine = c->ln ? c->lsum / (double)c->ln : NAN, lo = mine, hi = mine;
                if (!c->ln) lo = INFINITY, hi = -INFINITY;
                MPI_Reduce(&lo, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, world);
                MPI_Reduce(&hi, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, world);
            }
            if (validate) {
                c->valid = validate_point(&p, c, ref, sizes[s]);
                nfailed += !c->valid;
                memset(sbuf, 1, per ? per : 1); /* timing data as before */
                memset(rbuf, 0, tot ? tot : 1);
            }
            if (rank == 0) print_record(&p, c, sizes[s], dtype_name, op_name, ver, raw, rmin, rmax);
        }
    }
    if (nfailed && rank == 0) {
        fprintf(stderr, "error: --validate: %d point(s) differ from the MPI library's "
                        "collective (listed above)\n", nfailed);
        fflush(stderr);
    }
    for (int k = 0; k < ncand; k++) {
        free(cand[k].samples);
        if (cand[k].comm != MPI_COMM_NULL) MPI_Comm_free(&cand[k].comm);
    }
    free(cand);
    free(sizes);
    free_buf(sbuf);
    free_buf(rbuf);
    free_buf(ref);
    if (specs) ct_free_list(specs, nalgo);
    ct_free_list(sizes_s, nsizes);
    if (run_dup != MPI_COMM_NULL) MPI_Comm_free(&run_dup);
    if (stop_comm != MPI_COMM_NULL) { /* the generator ranks stop after this */
        MPI_Request stop;
        MPI_Ibarrier(stop_comm, &stop);
        MPI_Wait(&stop, MPI_STATUS_IGNORE);
        MPI_Comm_free(&world);
        MPI_Comm_free(&stop_comm);
    }
    MPI_Finalize();
    return nfailed ? 1 : 0;
}
