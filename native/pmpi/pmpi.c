/*
 * pmpi.c -- libcolltune-pmpi.so: colltune's algorithms inside unmodified MPI
 * applications (docs/interposition.md).
 *
 * Preloaded (LD_PRELOAD) or linked before the MPI library, it defines
 * MPI_Bcast, MPI_Reduce, MPI_Gather, MPI_Allgather and MPI_Allreduce. Each call
 * looks up (collective, communicator size, colltune size) in
 *   COLLTUNE_<COLL>=spec   one algorithm forced for a collective, else
 *   COLLTUNE_RULES=file    colltune's own rules file (first matching line), else
 *   the MPI library's own collective (PMPI_<Coll>),
 * and runs that algorithm through the algorithm library's dispatcher (private
 * communicator per user communicator, freed with it; declared fallbacks for
 * non-commutative ops and process counts). Everything an algorithm cannot take
 * goes to the library's own collective, unchanged: intercommunicators,
 * MPI_COMM_NULL, MPI_DATATYPE_NULL, invalid counts or roots (so the library
 * raises the error exactly as it would), a datatype whose size does not fit an
 * int, and every call of a process initialised with MPI_THREAD_MULTIPLE (the
 * dispatcher's state is per process). Until MPI_Init or MPI_Init_thread has been
 * seen (a Fortran program's init does not come through here), every call is
 * passed through.
 *
 * Configuration is read on rank 0 of MPI_COMM_WORLD at MPI_Init and broadcast,
 * so every rank decides alike (a rank deciding differently would hang). A bad
 * rules file or spec gives one warning on rank 0 and that part is ignored
 * (`colltune run` checks them all before the launch and stops instead). Every
 * line printed is whole, one write(2) (ct_pmpi_say).
 * COLLTUNE_VERBOSE=1 prints each distinct decision once on rank 0;
 * COLLTUNE_PROFILE=file writes calls and times at MPI_Finalize (pmpi_profile.c).
 *
 * Load classes (docs/workload.md): a rules file with `# load-class:` lines has rules
 * that hold under one class of the load index only. The index is measured at
 * MPI_Init by a shortened probe (pmpi_load.c; COLLTUNE_LOAD_PROBE=N iterations,
 * default 50; 0: never, the quietest class) and again whenever every rank of
 * MPI_COMM_WORLD calls MPI_Pcontrol(COLLTUNE_LOAD_PCONTROL) (default level 17).
 * COLLTUNE_LOAD_INDEX=X sets the index instead of measuring it (tests, or a value
 * measured elsewhere). COLLTUNE_VERBOSE shows the index, the probe's cost and the class.
 */
#include "pmpi_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const env_force[CT_NCOLL] = { "COLLTUNE_BCAST", "COLLTUNE_REDUCE",
                                                 "COLLTUNE_GATHER", "COLLTUNE_ALLGATHER",
                                                 "COLLTUNE_ALLREDUCE", "COLLTUNE_ALLTOALL",
                                                 "COLLTUNE_ALLTOALLV", "COLLTUNE_SCATTER",
                                                 "COLLTUNE_BARRIER" };

static struct {
    int active;   /* 0: every call goes to PMPI_ */
    int rank;     /* in MPI_COMM_WORLD */
    int verbose;  /* rank 0 prints decisions */
    int observe;  /* verbose on this rank, or profiling */
    int profile;
    char profile_path[1024];
    ct_pmpi_decision_t *forced[CT_NCOLL];
    ct_pmpi_decision_t forced_store[CT_NCOLL];
    ct_pmpi_decision_t nomatch[CT_NCOLL]; /* the library's own: no rule, no forcing */
    ct_pmpi_rules_t rules;
    int load_class;        /* index into rules.classes; -1 without classes */
    double load_index;     /* µs per probe iteration, last measured (or forced) */
    int load_forced;       /* COLLTUNE_LOAD_INDEX given */
    int probe_iterations;  /* COLLTUNE_LOAD_PROBE */
    int pcontrol_level;    /* MPI_Pcontrol level that measures again */
    /* last lookup per collective (a loop calls one size again and again) */
    struct {
        int np;
        long long size;
        const ct_pmpi_decision_t *d;
    } last[CT_NCOLL];
} st;

/* One whole line "colltune-pmpi: [warning: ]MESSAGE\n" with a single write(2): the
 * program's own output cannot land inside it; control characters of the message
 * (a newline in a file name) become '?', so it stays one line. */
static void emit(const char *kind, const char *fmt, va_list ap) {
    char buf[1400];
    int head = snprintf(buf, sizeof buf, "colltune-pmpi: %s", kind);
    int n = vsnprintf(buf + head, sizeof buf - (size_t)head - 1, fmt, ap);
    size_t len = (size_t)head + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof buf - 2) len = sizeof buf - 2;
    for (size_t i = (size_t)head; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) buf[i] = '?';
    buf[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, buf + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
}

void ct_pmpi_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit("warning: ", fmt, ap);
    va_end(ap);
}

void ct_pmpi_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit("", fmt, ap);
    va_end(ap);
}

static void ccache_init(void);

/* ---- configuration ------------------------------------------------------- */

/* Rank 0's view of the environment and the rules file, as one blob of
 * NUL-terminated strings: verbose, profile path, 5 forced specs, rules file name,
 * rules text, read error. */
enum { B_VERBOSE, B_PROFILE, B_FORCE0, B_RULES_NAME = B_FORCE0 + CT_NCOLL, B_RULES_TEXT,
       B_RULES_ERR, B_LOAD_INDEX, B_LOAD_PROBE, B_PCONTROL, B_N };

static char *read_file(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read the rules file", path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n + 1 == cap) {
            if (cap > ((size_t)1 << 26)) { /* 64 MiB: not a rules file */
                free(buf);
                buf = NULL;
                snprintf(err, errlen, "%s: larger than 64 MiB, not a rules file", path);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read the rules file", path);
        return NULL;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        free(buf);
        snprintf(err, errlen, "%s: a binary file, not a rules file", path);
        return NULL;
    }
    return buf;
}

static char *make_blob(size_t *len) {
    const char *s[B_N];
    char err[1200] = "";
    char *text = NULL;
    const char *v = getenv("COLLTUNE_VERBOSE");
    s[B_VERBOSE] = v && *v && strcmp(v, "0") != 0 ? "1" : "";
    s[B_PROFILE] = getenv("COLLTUNE_PROFILE") ? getenv("COLLTUNE_PROFILE") : "";
    for (int c = 0; c < CT_NCOLL; c++)
        s[B_FORCE0 + c] = getenv(env_force[c]) ? getenv(env_force[c]) : "";
    const char *rules = getenv("COLLTUNE_RULES");
    s[B_RULES_NAME] = rules ? rules : "";
    if (rules && *rules) text = read_file(rules, err, sizeof err);
    s[B_RULES_TEXT] = text ? text : "";
    s[B_RULES_ERR] = err;
    s[B_LOAD_INDEX] = getenv("COLLTUNE_LOAD_INDEX") ? getenv("COLLTUNE_LOAD_INDEX") : "";
    s[B_LOAD_PROBE] = getenv("COLLTUNE_LOAD_PROBE") ? getenv("COLLTUNE_LOAD_PROBE") : "";
    s[B_PCONTROL] = getenv("COLLTUNE_LOAD_PCONTROL") ? getenv("COLLTUNE_LOAD_PCONTROL") : "";
    size_t n = 0;
    for (int i = 0; i < B_N; i++) n += strlen(s[i]) + 1;
    char *blob = malloc(n);
    if (blob) {
        size_t at = 0;
        for (int i = 0; i < B_N; i++) {
            size_t l = strlen(s[i]) + 1;
            memcpy(blob + at, s[i], l);
            at += l;
        }
    }
    free(text);
    *len = n;
    return blob;
}

static int setup_decision(ct_pmpi_decision_t *d, ct_coll_t c, const char *spec,
                          const char *source) {
    memset(d, 0, sizeof *d);
    if (ct_choice_parse(c, spec, &d->choice) != MPI_SUCCESS) return -1;
    d->native = strcmp(ct_algo_get(d->choice.algo)->name, "native") == 0;
    ct_choice_format(&d->choice, d->spec, sizeof d->spec);
    snprintf(d->source, sizeof d->source, "%s", source);
    d->np_min = 1;
    d->np_max = -1;
    d->size_min = 0;
    d->size_max = -1;
    d->load = -1;
    return 0;
}

/* A whole number from the environment blob; `dflt` when empty, -1 when malformed. */
static long env_long(const char *v, long dflt, long lo, long hi) {
    if (!v[0]) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end || x < lo || x > hi) ? -1 : x;
}

/* The load index now (forced or the probe), its class; says so when verbose.
 * Collective over MPI_COMM_WORLD unless the index is forced or the probe is off. */
static void measure_load(const char *when) {
    double ms = 0;
    const char *how = "COLLTUNE_LOAD_INDEX";
    if (!st.load_forced) {
        if (st.probe_iterations == 0) {
            st.load_class = 0;
            if (st.verbose)
                ct_pmpi_say("load probe off (COLLTUNE_LOAD_PROBE=0): class %s, the quietest",
                            st.rules.classes[0].name);
            for (int c = 0; c < CT_NCOLL; c++) st.last[c].d = NULL;
            return;
        }
        st.load_index = ct_pmpi_load_probe(st.probe_iterations, &ms);
        how = "probe";
    }
    st.load_class = ct_pmpi_load_class_of(&st.rules, st.load_index);
    for (int c = 0; c < CT_NCOLL; c++) st.last[c].d = NULL;
    if (st.verbose) {
        const ct_pmpi_load_class_t *lc = &st.rules.classes[st.load_class];
        char hi[32];
        if (lc->hi < 0) snprintf(hi, sizeof hi, "-");
        else snprintf(hi, sizeof hi, "%g", lc->hi);
        if (st.load_forced)
            ct_pmpi_say("load index %.3f us (%s; %s) -> class %s [%g, %s)", st.load_index, how,
                        when, lc->name, lc->lo, hi);
        else
            ct_pmpi_say("load index %.3f us (probe: %d iterations of 4096 B random-pair "
                        "exchanges, %.2f ms; %s) -> class %s [%g, %s)", st.load_index,
                        st.probe_iterations, ms, when, lc->name, lc->lo, hi);
    }
}

/* Called by every rank of MPI_COMM_WORLD right after PMPI_Init/_thread. */
static void configure(int provided) {
    int size, multiple = provided == MPI_THREAD_MULTIPLE, any_multiple = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    /* collective decisions must agree: one rank under MPI_THREAD_MULTIPLE turns
     * the library off everywhere */
    PMPI_Allreduce(&multiple, &any_multiple, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    size_t len = 0;
    char *blob = NULL;
    long long n = 0;
    if (st.rank == 0) {
        blob = make_blob(&len);
        n = blob ? (long long)len : -1;
    }
    PMPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (n < 0) {
        if (st.rank == 0)
            ct_pmpi_warn("out of memory reading the configuration; using the MPI library's "
                         "own collectives");
        return;
    }
    if (st.rank != 0) blob = malloc((size_t)n);
    int ok = blob != NULL, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (st.rank == 0)
            ct_pmpi_warn("out of memory reading the configuration; using the MPI library's "
                         "own collectives");
        free(blob);
        return;
    }
    for (long long off = 0; off < n; off += 1 << 30) {
        long long chunk = n - off < (1 << 30) ? n - off : (1 << 30);
        PMPI_Bcast(blob + off, (int)chunk, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    const char *s[B_N];
    {
        size_t at = 0;
        for (int i = 0; i < B_N; i++) {
            s[i] = blob + at;
            at += strlen(blob + at) + 1;
        }
    }
    int warn = st.rank == 0;
    st.verbose = s[B_VERBOSE][0] && st.rank == 0;
    if (s[B_PROFILE][0]) {
        st.profile = 1;
        snprintf(st.profile_path, sizeof st.profile_path, "%s", s[B_PROFILE]);
    }
    int id = 0;
    for (int c = 0; c < CT_NCOLL; c++) {
        setup_decision(&st.nomatch[c], (ct_coll_t)c, "native", "no rule");
        st.nomatch[c].id = id++;
    }
    for (int c = 0; c < CT_NCOLL; c++) {
        const char *spec = s[B_FORCE0 + c];
        if (!spec[0]) continue;
        if (setup_decision(&st.forced_store[c], (ct_coll_t)c, spec, env_force[c])) {
            if (warn)
                ct_pmpi_warn("%s='%s' ignored: %s", env_force[c], spec, ct_last_error());
            continue;
        }
        st.forced_store[c].id = id++;
        st.forced[c] = &st.forced_store[c];
    }
    if (s[B_RULES_NAME][0]) {
        char err[1200];
        if (s[B_RULES_ERR][0]) {
            if (warn)
                ct_pmpi_warn("%s; the MPI library's own collectives run where "
                             "COLLTUNE_<COLL> forces none", s[B_RULES_ERR]);
        } else if (ct_pmpi_rules_parse(s[B_RULES_TEXT], s[B_RULES_NAME], id, &st.rules, err,
                                       sizeof err)) {
            if (warn)
                ct_pmpi_warn("%s; the rules file is ignored: the MPI library's own "
                             "collectives run where COLLTUNE_<COLL> forces none", err);
        }
    }
    if (any_multiple) {
        if (warn)
            ct_pmpi_warn("MPI_THREAD_MULTIPLE: colltune's dispatch state is per process, not "
                         "per thread, so every collective runs the MPI library's own algorithm");
        ct_pmpi_rules_free(&st.rules);
        free(blob);
        return;
    }
    st.load_class = -1;
    long iters = env_long(s[B_LOAD_PROBE], 50, 0, 1000000);
    if (iters < 0) {
        if (warn)
            ct_pmpi_warn("COLLTUNE_LOAD_PROBE='%s' ignored: a whole number of iterations "
                         "0..1000000 (0: never probe); 50 used", s[B_LOAD_PROBE]);
        iters = 50;
    }
    st.probe_iterations = (int)iters;
    long level = env_long(s[B_PCONTROL], 17, -2147483647L, 2147483647L);
    if (level == -1 && s[B_PCONTROL][0] && strcmp(s[B_PCONTROL], "-1") != 0) {
        if (warn)
            ct_pmpi_warn("COLLTUNE_LOAD_PCONTROL='%s' ignored: a whole number; 17 used",
                         s[B_PCONTROL]);
        level = 17;
    }
    st.pcontrol_level = (int)level;
    if (s[B_LOAD_INDEX][0]) {
        char *end;
        double x = strtod(s[B_LOAD_INDEX], &end);
        if (*end || !(x >= 0)) {
            if (warn)
                ct_pmpi_warn("COLLTUNE_LOAD_INDEX='%s' ignored: a number >= 0 (microseconds "
                             "per probe iteration)", s[B_LOAD_INDEX]);
        } else {
            st.load_forced = 1;
            st.load_index = x;
        }
    }
    if (st.rules.nclasses > 0) {
        st.verbose = s[B_VERBOSE][0] && st.rank == 0;
        measure_load("MPI_Init");
    }
    for (int c = 0; c < CT_NCOLL; c++) st.last[c].d = NULL;
    ccache_init();
    st.observe = st.verbose || st.profile;
    st.active = 1;
    free(blob);
}

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

static void ccache_init(void) {
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

/* ---- set-up and tear-down ------------------------------------------------ */

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        configure(provided);
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) configure(*provided);
    return rc;
}

/* MPI_Pcontrol(COLLTUNE_LOAD_PCONTROL) on every rank of MPI_COMM_WORLD: measure the
 * load again and choose the rules of its class; any other level, or no load classes:
 * the library's MPI_Pcontrol alone. */
int MPI_Pcontrol(const int level, ...) {
    if (st.active && st.rules.nclasses > 0 && level == st.pcontrol_level)
        measure_load("MPI_Pcontrol");
    return PMPI_Pcontrol(level);
}

int MPI_Finalize(void) {
    if (st.profile) ct_pmpi_profile_write(st.profile_path, st.rank);
    st.active = 0;
    ct_pmpi_rules_free(&st.rules);
    return PMPI_Finalize();
}
