/* verify_cases.h -- the cases of colltune-verify (verify_cases.c), run by its
 * matrix (verify.c). */
#ifndef CT_VERIFY_CASES_H
#define CT_VERIFY_CASES_H

#include "driver_common.h"

/* datatypes and ops under test (vec: 2 ints with holes, see verify_cases.c) */
enum { T_CHAR, T_INT, T_DOUBLE, T_VEC, NTYPES };
enum { O_SUM, O_MAX, O_PROD, O_NONCOMM, NOPS };
/* rank assignments of the mixed-layout family (run_mixed's `a`) */
#define NASSIGN 4

static inline int has_reduction(ct_coll_t c) {
    return c == CT_REDUCE || c == CT_ALLREDUCE || c == CT_REDUCE_SCATTER_BLOCK ||
           c == CT_REDUCE_SCATTER;
}

/* One case. */
typedef struct {
    ct_coll_t coll;
    ct_choice_t choice;
    int root, count, t, o, inplace;
    MPI_Comm comm;      /* MPI_COMM_WORLD, or MPI_COMM_SELF (family "self") */
    int garbage;        /* ignored arguments filled with garbage (family "garbage") */
    const char *family; /* NULL: the main matrix */
    char tdesc[64];     /* type description when not type_names[t] (family "mixed") */
} vcase_t;

/* Local verdict of one process for one case. */
typedef struct {
    int bad;
    char msg[400];
} verdict_t;

void verdict(verdict_t *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* a verdict for an error code (with ct_last_error's text) */
void check_rc(verdict_t *v, int rc);
/* the case's verdict over all ranks: counted, and printed by rank 0 if it failed
 * (collective over MPI_COMM_WORLD) */
void report(const vcase_t *c, verdict_t *mine);
extern long vc_cases_run, vc_cases_failed;

/* Run one case of c->coll and report it (collective over MPI_COMM_WORLD). */
void run_case(const vcase_t *c);
/* The mixed-layout family: rank assignment a (0 .. NASSIGN-1) of layouts. */
void run_mixed(vcase_t *c, int a);
/* The intercommunicator family (needs vc_have_intercomm()). */
void run_inter(vcase_t *c);

/* After MPI_Init: the datatypes and ops under test, and with_inter (at 2 processes
 * or more) the intercommunicator; failures printed at most max_fail times. */
void vc_setup(int max_fail, int with_inter);
int vc_have_intercomm(void);
void vc_teardown(void);
/* The family "empty" (verify_empty.c): empty type signatures written both ways. */
void run_empty(vcase_t *c);

#endif
