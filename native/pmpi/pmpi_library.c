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
 * build was compiled for (OPEN_MPI or MPICH_VERSION of its mpi.h); the version string
 * of every MPI library loaded in the process is read (dl_iterate_phdr: a program whose
 * MPI library is not a direct dependency, a Fortran one, binds this library's calls to
 * this build's library first, so asking through them would not tell). On a mismatch the
 * process prints one line, colltune disables itself (every C call goes to the library
 * untouched, every Fortran call to the library's own Fortran binding) and the program
 * runs as it would without colltune. `colltune run` makes the same check before the
 * launch from what the program links (colltune.rules.interpose.program_mpi).
 */
#define _GNU_SOURCE /* dl_iterate_phdr, dladdr, RTLD_NOLOAD */
#include "pmpi_internal.h"

#include <dlfcn.h>
#include <link.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A version string cut to its first line, up to its first comma, with MPICH's
 * "Version:" label dropped: "Open MPI v4.1.4", "MPICH 4.0.2". */
static void short_version(char *v, char *buf, size_t len) {
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

/* Every loaded object that itself defines PMPI_Get_library_version is an MPI library:
 * the program's, and this build's own when it is another one (loaded as this
 * library's dependency). The first whose family is not `family` goes to `buf`. */
typedef struct {
    int family;
    char *buf;
    size_t len;
    int found;
    char path[400]; /* the other library's file */
} scan_t;

static int scan_one(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    scan_t *sc = data;
    const char *name = info->dlpi_name;
    if (sc->found || !name || !name[0]) return 0;
    void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    int (*ver)(char *, int *) = NULL;
    void *f = dlsym(h, "PMPI_Get_library_version");
    Dl_info di;
    if (f && dladdr(f, &di) && di.dli_fname && strcmp(di.dli_fname, name) == 0)
        memcpy(&ver, &f, sizeof ver);
    if (ver) {
        /* the running library may be another one than this build's mpi.h describes,
         * with a longer limit (MPICH's 8192 against Open MPI's 256): room for either */
        static char v[16384 + MPI_MAX_LIBRARY_VERSION_STRING];
        int n = 0;
        v[0] = '\0';
        if (ver(v, &n) != MPI_SUCCESS) v[0] = '\0';
        v[sizeof v - 1] = '\0';
        if ((strncmp(v, "Open MPI", 8) == 0) != (sc->family == 1)) {
            char shortv[200];
            short_version(v, shortv, sizeof shortv);
            snprintf(sc->buf, sc->len, "%s (%s)", shortv, name);
            snprintf(sc->path, sizeof sc->path, "%s", name);
            sc->found = 1;
        }
    }
    dlclose(h);
    return 0;
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
    char built[96], other[512];
    int family = built_for(built, sizeof built);
    if (!family) return;
    scan_t sc = {family, other, sizeof other, 0, ""};
    dl_iterate_phdr(scan_one, &sc);
    if (!sc.found) return;
    ct_pmpi_st.disabled = 1;
    /* Untouched only if (a) every object's PMPI_ calls, this library's included, bind to
     * the program's library: not so when that library is not a direct dependency of the
     * program (a Fortran program's C library comes after this build's, its own Fortran
     * library's calls go to this build's library), and (b) the program's handles pass
     * through this build's C signatures whole: Open MPI's are pointers, MPICH's ints,
     * so an MPICH build would cut an Open MPI program's handles in half. Otherwise the
     * process stops here, with the line, rather than crash later. */
    Dl_info di;
    void *init = dlsym(RTLD_DEFAULT, "PMPI_Init");
    int bound = init && dladdr(init, &di) && di.dli_fname && strcmp(di.dli_fname, sc.path) == 0;
    int untouched = bound && sizeof(MPI_Comm) >= sizeof(void *);
    if (first_rank())
        ct_pmpi_warn("this program runs %s but colltune's build is for %s: %s (rebuild "
                     "with --mpi naming the program's MPI library)", other, built,
                     untouched ? "it stays off, the program runs untouched"
                               : "the program cannot run with it preloaded, stopping");
    if (!untouched) {
        /* the others wait a little, so that a launcher ending the job at the first exit
         * does not drop rank 0's line */
        if (!first_rank()) sleep(2);
        _exit(1);
    }
}
