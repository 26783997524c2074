/* plain.c -- the helpers that need MPI only, not the colltune library: linked by
 * every program (through ctdriver) and by colltune-heat-plain, which has no
 * colltune library. ct_start is the one start of every program's main(), ct_die
 * its one error exit. */
#include "plain.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ct_die(int rank, const char *fmt, ...) {
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs("error: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        fflush(stderr);
    }
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Finalize();
    exit(2);
}

void ct_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void ct_mpi_version(char *buf, size_t len) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int l = 0;
    MPI_Get_library_version(v, &l);
    char *nl = strchr(v, '\n');
    if (nl) *nl = '\0';
    /* trim trailing separators some libraries print */
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == ',' || v[n - 1] == '\t')) v[--n] = '\0';
    snprintf(buf, len, "%s", v);
}

long ct_parse_long(int rank, const char *opt, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        ct_die(rank, "%s '%s': must be a whole number in %ld..%ld", opt, v, lo, hi);
    return x;
}

/* Whether --help or -h is among the arguments (checked before MPI_Init). */
static int help_asked(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

void ct_start(int *argc, char ***argv, void (*usage)(void), int *rank, int *size) {
    if (help_asked(*argc, *argv)) {
        usage();
        exit(0);
    }
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}
