/* driver_common.h -- shared by the colltune MPI programs (verify, bench). */
#ifndef CT_DRIVER_COMMON_H
#define CT_DRIVER_COMMON_H

#include "colltune.h"

#include <stdio.h>

/* Print the registry as JSON (no MPI needed). */
void ct_print_registry_json(FILE *f, int include_hidden);

/* JSON string literal of s into f. */
void ct_json_str(FILE *f, const char *s);

/* Split a comma-separated list of algorithm specs, where "k=v" tokens after a
 * "name:k=v" belong to the preceding algorithm: "chain:segsize=8192,fanout=4,binomial"
 * -> {"chain:segsize=8192,fanout=4", "binomial"}. Returns count, items malloc'd. */
int ct_split_specs(const char *list, char ***out);
/* Plain comma split. */
int ct_split(const char *list, char ***out);
void ct_free_list(char **items, int n);

/* Predefined datatype and op names used by drivers: char, int, float, double;
 * sum, max, min, prod. Return 0 on success, -1 if unknown. */
int ct_dtype_from_name(const char *name, MPI_Datatype *dt);
int ct_op_from_name(const char *name, MPI_Op *op);

/* Library name and version string of the MPI in use (one line). */
void ct_mpi_version(char *buf, size_t len);

/* Print message to stderr on rank 0 and abort with exit code 2. */
void ct_die(int rank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

/* A whole number option value in lo..hi, or ct_die naming the option and the range. */
long ct_parse_long(int rank, const char *opt, const char *v, long lo, long hi);

/* Whether --help or -h is among the arguments (checked before MPI_Init). */
int ct_help_asked(int argc, char **argv);

#endif
