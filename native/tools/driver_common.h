/* driver_common.h -- shared by the colltune MPI programs (verify, bench). */
#ifndef CT_DRIVER_COMMON_H
#define CT_DRIVER_COMMON_H

#include "colltune.h"
#include "plain.h" /* ct_start, ct_die, ct_json_str, ct_parse_long, ... */

#include <stdio.h>

/* Print the registry as JSON (no MPI needed). */
void ct_print_registry_json(FILE *f, int include_hidden);

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

/* Where the processes of `comm` really are, as the MPI library sees it (shared-memory
 * nodes, MPI_Comm_split_type): rank 0 prints {"kind": "placement", "np", "nodes",
 * "ppn"} (ppn: the most processes on one node). Collective over `comm`. */
void ct_print_placement(MPI_Comm comm);

#endif
