/*
 * pmpi_internal.h -- shared by the files of libcolltune-pmpi.so (not installed).
 *
 * The interposition library defines an MPI_<Coll> for each collective of
 * colltune.h (pmpi_call.c), and MPI_Init, MPI_Init_thread, MPI_Pcontrol and
 * MPI_Finalize to set itself up and write the profile (pmpi.c); with an MPI library
 * that has Fortran bindings, their Fortran names too (pmpi_fortran.c). Every call it does not run with one
 * of colltune's algorithms goes to the library's own PMPI_ entry point; the
 * algorithm library itself only calls point-to-point functions and PMPI_
 * collectives, so nothing recurses into these definitions.
 */
#ifndef CT_PMPI_INTERNAL_H
#define CT_PMPI_INTERNAL_H

#include "colltune.h"

#include <stddef.h>
#include <stdio.h>

/* From the algorithm library (lib/util.c; inline there as ct_type_size): MPI_Type_size,
 * with the predefined types answered from a small table after their first use. */
int ct_type_size_call(MPI_Datatype dt, int *size);
/* lib/choice.c: " (did you mean 'x'?)" for the closest of `cands`, else "" */
void ct_did_you_mean(const char *word, const char *const *cands, int n, char *buf,
                     size_t len);

/* Per-thread state on the path of every call, as lib/ct_internal.h's
 * CT_THREAD_LOCAL: initial-exec TLS (this library is loaded at start-up). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(SMPI_SHARED_MALLOC)
#define CT_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define CT_THREAD_LOCAL _Thread_local
#endif

/* One way of running a collective: the library's own (native) or one of ours. */
typedef struct {
    int native;          /* nonzero: the MPI library's own collective        */
    ct_choice_t choice;  /* registry index and parameters (native included)  */
    char spec[256];      /* canonical spec, as ct_choice_format writes it    */
    char source[160];    /* why: "COLLTUNE_BCAST", "tuned.rules:7", ...      */
    /* the rule's ranges (size class for the verbose output); -1: unbounded */
    int np_min, np_max;
    long long size_min, size_max;
    int id;              /* distinct per decision of this process            */
    int rule;            /* from a rules file line (its ranges are the size class) */
    int load;            /* load class index (load=NAME), -1: under every load */
    int ppn_min, ppn_max; /* processes per node (ppn=), -1: any; ppn_max -1: no bound */
} ct_pmpi_decision_t;

/* A load class of a rules file ('# load-class: NAME MIN MAX'): lo <= index < hi,
 * hi < 0 no bound; the index is the probe's microseconds per iteration. */
#define CT_PMPI_MAX_CLASSES 16
typedef struct {
    char name[64];
    double lo, hi;
} ct_pmpi_load_class_t;

/* A parsed rules file: decisions per collective, first match wins. */
typedef struct {
    ct_pmpi_decision_t *rules[CT_NCOLL];
    int nrules[CT_NCOLL];
    ct_pmpi_load_class_t classes[CT_PMPI_MAX_CLASSES];
    int nclasses;
    int has_ppn; /* some rule has a ppn= range: decisions need the communicator's ppn */
} ct_pmpi_rules_t;

/* ---- the process's state (pmpi.c sets it up at MPI_Init; pmpi_call.c reads it
 * on every call, in any thread). Both files name it `st` (#define st ct_pmpi_st).
 * Only load_class changes after MPI_Init (MPI_Pcontrol), hence atomic; what is
 * per thread (the last lookup, the communicator facts) lives in pmpi_call.c. */
typedef struct {
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
    _Atomic int load_class; /* index into rules.classes; -1 without classes */
    double load_index;     /* µs per probe iteration, last measured (or forced) */
    int load_forced;       /* COLLTUNE_LOAD_INDEX given */
    int probe_iterations;  /* COLLTUNE_LOAD_PROBE */
    int pcontrol_level;    /* MPI_Pcontrol level that measures again */
    double t_init;         /* PMPI_Wtime right after MPI_Init: the wall time's start */
    int disabled; /* the program's MPI library is not this build's: never active */
} ct_pmpi_state_t;
extern ct_pmpi_state_t ct_pmpi_st;
/* "COLLTUNE_BCAST", ...: the variable that forces an algorithm for collective c */
const char *ct_pmpi_env_force(ct_coll_t c);

/* Set up after the library's MPI_Init (once; pmpi.c), and tear down before its
 * MPI_Finalize (once): the C and the Fortran entry points (pmpi_fortran.c) call them. */
void ct_pmpi_configure(void);
void ct_pmpi_finalize_begin(void);
/* Before the library's MPI_Init: its version string against the family this build is
 * for; on a mismatch one line and ct_pmpi_st.disabled (pmpi_library.c). Once. */
void ct_pmpi_library_check(void);

/* ---- calls (pmpi_call.c) --------------------------------------------------- */
/* the communicator-facts cache, set up by configure() at MPI_Init */
void ct_pmpi_ccache_init(void);
/* the attribute key that keeps a communicator's processes per node (ppn= rules) */
void ct_pmpi_ppn_init(void);

/* ---- load (pmpi_load.c) ---------------------------------------------------- */
/* The shortened probe (colltune-probe's exchange: a barrier, then 4 KB both ways
 * between random pairs), collective over MPI_COMM_WORLD on a private duplicate:
 * microseconds per iteration as rank 0 measured them, the same value on every rank
 * (broadcast); *ms_out: the probe's own wall time in ms. */
double ct_pmpi_load_probe(int iterations, double *ms_out);
/* The class holding `index` (the last one when above all), -1 without classes. */
int ct_pmpi_load_class_of(const ct_pmpi_rules_t *r, double index);

/* Parse colltune's own rules file (text of `name`) into `out`. Returns 0, or -1
 * with a one-line message "name:LINE: problem" in err. `first_id` numbers the
 * decisions. On failure `out` is left empty. */
int ct_pmpi_rules_parse(const char *text, const char *name, int first_id,
                        ct_pmpi_rules_t *out, char *err, size_t errlen);
void ct_pmpi_rules_free(ct_pmpi_rules_t *r);

/* ---- profile (pmpi_profile.c) -------------------------------------------- */
void ct_pmpi_profile_add(ct_coll_t coll, int np, long long size, const ct_pmpi_decision_t *d,
                         int used_algo, double seconds);
/* A call the library took because the algorithms do not (an intercommunicator, an
 * argument they do not take): algorithm native, source `why`, size bucket 0. */
void ct_pmpi_profile_add_passthrough(ct_coll_t coll, int np, const char *why, double seconds);
/* Collective over MPI_COMM_WORLD (called in MPI_Finalize, before PMPI_Finalize):
 * merge every rank's entries at rank 0, which writes `path`. */
void ct_pmpi_profile_write(const char *path, int rank);
/* Every rank's `bytes` bytes at `buf`, concatenated at rank 0 of MPI_COMM_WORLD
 * (collective): rank 0 gets a malloc'd block of *total bytes (NULL without memory). */
void *ct_pmpi_gather_at_root(const void *buf, int bytes, int rank, long long *total);

/* ---- the other collectives (pmpi_observe.c) ------------------------------ */
/* Collective over MPI_COMM_WORLD, before ct_pmpi_profile_write: every rank's entries of
 * the collectives colltune does not run, and the wall times, merged at rank 0 */
void ct_pmpi_observe_merge(int rank);
/* rank 0, inside the profile's object: ', "wall_s": ..., "observed": [...]' */
void ct_pmpi_observe_json(FILE *f);

/* One warning line on stderr, "colltune-pmpi: warning: ..." (callers print on rank 0
 * only); ct_pmpi_say: one line "colltune-pmpi: ...". Each is formatted whole, control
 * characters (a newline in a file name) replaced, and written with one write(2), so
 * it never splits around the program's own output. */
void ct_pmpi_warn(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void ct_pmpi_say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif /* CT_PMPI_INTERNAL_H */
