/* ct_die: the one error exit of every program (the drivers, the applications, and
 * colltune-heat-plain, which links this file without the colltune library). */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
