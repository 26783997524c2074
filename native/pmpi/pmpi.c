/*
 * pmpi.c -- libcolltune-pmpi.so: colltune's algorithms inside unmodified MPI
 * applications (docs/interposition.md).
 *
 * Preloaded (LD_PRELOAD) or linked before the MPI library, it defines an
 * MPI_<Coll> for each collective of colltune.h (pmpi_call.c). Each call
 * looks up (collective, communicator size, colltune size) in
 *   COLLTUNE_<COLL>=spec   one algorithm forced for a collective, else
 *   COLLTUNE_RULES=file    colltune's own rules file (first matching line), else
 *   the MPI library's own collective (PMPI_<Coll>),
 * and runs that algorithm through the algorithm library's dispatcher (private
 * communicator per user communicator, freed with it; declared fallbacks for
 * non-commutative ops and process counts). Everything an algorithm cannot take
 * goes to the library's own collective, unchanged: intercommunicators,
 * MPI_COMM_NULL, MPI_DATATYPE_NULL, invalid counts or roots (so the library
 * raises the error exactly as it would), and a datatype whose size does not fit
 * an int. Until MPI_Init or MPI_Init_thread has been seen (C, or the Fortran entry
 * points of pmpi_fortran.c), every call is passed through; so is every call of a
 * program whose MPI library is not the one this build is for (pmpi_library.c).
 *
 * Threads: any level MPI_Init_thread gives, MPI_THREAD_MULTIPLE included.
 * Different threads may run collectives on different communicators at the same
 * time (the same communicator at once is erroneous in MPI itself): what a call
 * records (the last dispatch, the last error, the last lookup) is per thread,
 * the communicator caches are per thread with an epoch the attribute delete
 * callbacks advance, the verbose and profile tables take a lock, and the rest is
 * set once here, before any other thread can call. MPI_Pcontrol(level) that
 * measures the load again is collective over MPI_COMM_WORLD: one thread per
 * process calls it, as for any collective on MPI_COMM_WORLD.
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

#define st ct_pmpi_st

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* "COLLTUNE_" and the collective's name in capitals, made once */
const char *ct_pmpi_env_force(ct_coll_t c) {
    static char names[CT_NCOLL][48];
    if (!names[c][0]) {
        char *o = names[c] + snprintf(names[c], sizeof names[c], "COLLTUNE_");
        for (const char *s = ct_coll_name(c); *s && o < names[c] + sizeof names[c] - 1; s++)
            *o++ = (char)(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s);
        *o = '\0';
    }
    return names[c];
}

ct_pmpi_state_t ct_pmpi_st;


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
        s[B_FORCE0 + c] = getenv(ct_pmpi_env_force((ct_coll_t)c)) ? getenv(ct_pmpi_env_force((ct_coll_t)c)) : "";
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
    d->ppn_min = d->ppn_max = -1;
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
            return;
        }
        st.load_index = ct_pmpi_load_probe(st.probe_iterations, &ms);
        how = "probe";
    }
    /* every thread's next lookup sees the new class (pmpi_call.c's decide) */
    st.load_class = ct_pmpi_load_class_of(&st.rules, st.load_index);
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
static void configure(void) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
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
        if (setup_decision(&st.forced_store[c], (ct_coll_t)c, spec, ct_pmpi_env_force((ct_coll_t)c))) {
            if (warn)
                ct_pmpi_warn("%s='%s' ignored: %s", ct_pmpi_env_force((ct_coll_t)c), spec, ct_last_error());
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
    ct_pmpi_ccache_init();
    if (st.rules.has_ppn) ct_pmpi_ppn_init();
    st.observe = st.verbose || st.profile;
    st.t_init = PMPI_Wtime();
    st.active = 1;
    free(blob);
}

/* ---- set-up and tear-down ------------------------------------------------ */

/* Once per process, after the library's MPI_Init: the C entry points below and the
 * Fortran ones (pmpi_fortran.c, which may nest) call it; nothing when the library is
 * not the one this build is for (pmpi_library.c). */
void ct_pmpi_configure(void) {
    static int done;
    if (done || st.disabled) return;
    done = 1;
    configure();
}

int MPI_Init(int *argc, char ***argv) {
    ct_pmpi_library_check();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) ct_pmpi_configure();
    return rc;
}

/* Any thread level, MPI_THREAD_MULTIPLE included (see the top of this file). */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    ct_pmpi_library_check();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) ct_pmpi_configure();
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

/* What MPI_Finalize does before the library's: once (a Fortran MPI_FINALIZE may call
 * the C one). */
void ct_pmpi_finalize_begin(void) {
    static int done;
    if (done) return;
    done = 1;
    if (st.profile) {
        ct_pmpi_observe_merge(st.rank);
        ct_pmpi_profile_write(st.profile_path, st.rank);
    }
    st.profile = 0;
    st.active = 0;
    ct_pmpi_rules_free(&st.rules);
}

int MPI_Finalize(void) {
    ct_pmpi_finalize_begin();
    return PMPI_Finalize();
}

