/*
 * pmpi_library.c -- is the MPI library in this process the one libcolltune-pmpi.so
 * was built for?
 *
 * MPI handles are not portable between libraries: Open MPI's MPI_COMM_WORLD is the
 * address of a structure, MPICH's a constant integer. A program built against MPICH
 * with an Open MPI build of this library preloaded calls MPICH (its own library comes
 * first in the search order), and every handle colltune passes would be wrong ("Invalid
 * communicator"). So, before the library's MPI_Init runs, its version string
 * (MPI_Get_library_version, callable before MPI_Init) is compared with the family this
 * build was compiled for (OPEN_MPI or MPICH_VERSION of its mpi.h); on a mismatch the
 * process prints one line, colltune disables itself (every C call goes to the library
 * untouched, every Fortran call to the library's own Fortran binding) and the program
 * runs as it would without colltune. `colltune run` makes the same check before the
 * launch from what the program links (colltune.rules.interpose.program_mpi).
 */
#include "pmpi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What this build was compiled for, e.g. "Open MPI v4.1.4"; family 1 Open MPI, 2 an
 * MPICH-derived library, 0 unknown (no check). */
static int built_for(char *buf, size_t len) {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION)
    snprintf(buf, len, "Open MPI v%d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
             OMPI_RELEASE_VERSION);
    return 1;
#elif defined(MPICH_VERSION)
    snprintf(buf, len, "MPICH %s", MPICH_VERSION);
    return 2;
#else
    snprintf(buf, len, "an unknown MPI library");
    return 0;
#endif
}

/* The running library's version string, first line, up to its first comma, with the
 * MPICH "Version:" label dropped: "Open MPI v4.1.4", "MPICH 4.0.2". */
static void running(char *buf, size_t len) {
    /* the running library may be another one than this build's mpi.h describes, with
     * a longer limit (MPICH's 8192 against Open MPI's 256): room for either */
    static char v[16384 + MPI_MAX_LIBRARY_VERSION_STRING];
    v[0] = '\0';
    int n = 0;
    if (PMPI_Get_library_version(v, &n) != MPI_SUCCESS) v[0] = '\0';
    v[sizeof v - 1] = '\0';
    size_t cut = strcspn(v, ",\n");
    v[cut] = '\0';
    char *label = strstr(v, " Version:");
    if (label) {
        char *rest = label + strlen(" Version:");
        while (*rest == ' ' || *rest == '\t') rest++;
        memmove(label + 1, rest, strlen(rest) + 1);
    }
    snprintf(buf, len, "%s", v[0] ? v : "an unknown MPI library");
}

/* rank 0 of the job, as the launcher says (before MPI_Init, and without using a
 * handle): Open MPI, PMIx, Hydra/PMI, Slurm; unknown: every process prints */
static int first_rank(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                 "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *r = getenv(vars[i]);
        if (r && *r) return strcmp(r, "0") == 0;
    }
    return 1;
}

void ct_pmpi_library_check(void) {
    static int checked;
    if (checked) return;
    checked = 1;
    char built[96], run[256];
    int family = built_for(built, sizeof built);
    if (!family) return;
    running(run, sizeof run);
    int run_ompi = strncmp(run, "Open MPI", 8) == 0;
    if (run_ompi == (family == 1)) return;
    ct_pmpi_st.disabled = 1;
    if (first_rank())
        ct_pmpi_warn("this program runs %s but colltune was built for %s: colltune is "
                     "off, the program runs untouched (build colltune with --mpi naming "
                     "the program's MPI library)", run, built);
}
