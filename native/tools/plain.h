/* plain.h -- the helpers of plain.c: MPI only, no colltune library, so that
 * colltune-heat-plain links them too (driver_common.h includes this). */
#ifndef CT_PLAIN_H
#define CT_PLAIN_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

/* The start of every program's main(): with --help or -h among the arguments,
 * usage() and exit(0) before MPI is initialised; else MPI_Init, then this
 * process's rank in *rank and MPI_COMM_WORLD's size in *size. */
void ct_start(int *argc, char ***argv, void (*usage)(void), int *rank, int *size);

/* Print message to stderr on rank 0 and abort with exit code 2. */
void ct_die(int rank, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

/* A whole number option value in lo..hi, or ct_die naming the option and the range. */
long ct_parse_long(int rank, const char *opt, const char *v, long lo, long hi);

/* JSON string literal of s into f. */
void ct_json_str(FILE *f, const char *s);

/* Library name and version string of the MPI in use (one line). */
void ct_mpi_version(char *buf, size_t len);

#endif
