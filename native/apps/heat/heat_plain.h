/*
 * heat_plain.h -- what colltune-heat-plain uses instead of the colltune library:
 * heat.c built with -DCT_HEAT_PLAIN is an application that knows nothing of
 * colltune. Its collectives are the MPI library's MPI_Allreduce and MPI_Reduce
 * (so that libcolltune-pmpi.so, preloaded, can put colltune's algorithms behind
 * them: docs/interposition.md), and the few helpers heat.c shares with the
 * drivers are stand-ins here (ct_die, ct_json_str and ct_mpi_version are
 * native/tools/plain.c itself).
 * --allreduce and --reduce accept only "native".
 */
#ifndef CT_HEAT_PLAIN_H
#define CT_HEAT_PLAIN_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CT_REDUCE = 1, CT_ALLREDUCE = 4 } ct_coll_t;
typedef struct { int algo; } ct_choice_t;
typedef struct { int used; char reason[160]; } ct_dispatch_t;
typedef struct { const char *name; } ct_algo_t;

static const char *ct_plain_error = "";

static inline int ct_choice_parse(ct_coll_t coll, const char *spec, ct_choice_t *out) {
    (void)coll;
    out->algo = 0;
    if (spec && strcmp(spec, "native") == 0) return MPI_SUCCESS;
    ct_plain_error = "this build calls MPI only (colltune-heat-plain): the only algorithm is "
                     "native; preload libcolltune-pmpi.so to run colltune's";
    return MPI_ERR_ARG;
}
static inline int ct_allreduce(const ct_choice_t *c, const void *s, void *r, int n,
                               MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    (void)c;
    return MPI_Allreduce(s, r, n, dt, op, comm);
}
static inline int ct_reduce(const ct_choice_t *c, const void *s, void *r, int n,
                            MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
    (void)c;
    return MPI_Reduce(s, r, n, dt, op, root, comm);
}
static inline const char *ct_last_error(void) { return ct_plain_error; }
static inline const ct_dispatch_t *ct_last_dispatch(void) {
    static const ct_dispatch_t d = { 0, "" };
    return &d;
}
static inline const ct_algo_t *ct_algo_get(int i) {
    static const ct_algo_t native = { "native" };
    (void)i;
    return &native;
}



#include "plain.h" /* native/tools/plain.c, linked into this build too */

#endif /* CT_HEAT_PLAIN_H */
