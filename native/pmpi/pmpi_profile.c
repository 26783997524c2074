/*
 * pmpi_profile.c -- COLLTUNE_PROFILE=file: what the application's collectives
 * cost, per collective x communicator size x size bucket x algorithm.
 *
 * Each rank counts its own calls and times them (PMPI_Wtime around the call; the
 * calls of all its threads, into one table under a lock).
 * At MPI_Finalize the entries of every rank go to rank 0 of MPI_COMM_WORLD,
 * which merges them by key and writes one JSON document (written to FILE.tmp,
 * then renamed, so a reader never sees half a file):
 *
 *   {"format": "colltune-profile 1", "np_world": 4, "entries": [
 *     {"collective": "bcast", "np": 4, "size_min": 8, "size_max": 15,
 *      "algorithm": "binomial", "spec": "binomial:segsize=0", "source": "COLLTUNE_BCAST",
 *      "calls": 1000, "ranks": 4, "total_s": 0.0021, "mean_s": 2.1e-06,
 *      "max_rank_total_s": 0.0025}, ...]}
 *
 * "sizes": the distinct sizes (colltune's, bytes) the calls of the entry had, in
 * ascending order, at most CT_PROFILE_SIZES of them (the first ones seen on each rank,
 * merged); "sizes_capped": true when the entry had more (colltune study from-profile
 * measures the sizes a program really used, not its buckets' bounds).
 *
 * calls: the calls one rank made (the most any rank of the key made: every member
 * of a communicator makes each call); total_s: the time of those calls averaged
 * over the ranks that made them; mean_s = total_s / calls. Size buckets are powers
 * of two of colltune's size (bytes; per process for gather and allgather): 0, 1,
 * 2..3, 4..7, ...; `algorithm` is what ran (after any declared fallback), `spec`
 * what was asked for.
 */
#include "pmpi_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT_PROFILE_SIZES 8 /* distinct sizes kept per entry */

typedef struct {
    int coll, np, used, pad;
    long long bucket;
    long long calls;
    double total;
    long long seen[CT_PROFILE_SIZES]; /* distinct sizes, ascending */
    int nseen, capped;
    char spec[256];
    char source[160];
} entry_t;

#define MAX_ENTRIES 4096
static entry_t *tab;
static int ntab, dropped;
static int last_hit = -1;
/* tab, ntab, dropped, last_hit: any thread's call adds to them */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long long bucket_of(long long size) {
    long long b = 1;
    if (size <= 0) return 0;
    while (b <= size / 2) b *= 2;
    return b;
}

/* `size` into an entry's ascending list of distinct sizes (capped when full) */
static void note_size(entry_t *e, long long size) {
    int k = 0;
    while (k < e->nseen && e->seen[k] < size) k++;
    if (k < e->nseen && e->seen[k] == size) return;
    if (e->nseen == CT_PROFILE_SIZES) {
        e->capped = 1;
        return;
    }
    memmove(&e->seen[k + 1], &e->seen[k], (size_t)(e->nseen - k) * sizeof e->seen[0]);
    e->seen[k] = size;
    e->nseen++;
}

static int same_key(const entry_t *e, int coll, int np, long long bucket, int used,
                    const char *spec, const char *source) {
    return e->coll == coll && e->np == np && e->bucket == bucket && e->used == used &&
           strcmp(e->spec, spec) == 0 && strcmp(e->source, source) == 0;
}

static void add_locked(ct_coll_t coll, int np, long long size, const ct_pmpi_decision_t *d,
                       int used_algo, double seconds) {
    long long bucket = bucket_of(size);
    int i = -1;
    if (last_hit >= 0 &&
        same_key(&tab[last_hit], (int)coll, np, bucket, used_algo, d->spec, d->source))
        i = last_hit;
    for (int k = 0; i < 0 && k < ntab; k++)
        if (same_key(&tab[k], (int)coll, np, bucket, used_algo, d->spec, d->source)) i = k;
    if (i < 0) {
        if (!tab && !(tab = calloc(MAX_ENTRIES, sizeof *tab))) {
            dropped++;
            return;
        }
        if (ntab == MAX_ENTRIES) {
            dropped++;
            return;
        }
        i = ntab++;
        entry_t *e = &tab[i];
        e->coll = (int)coll;
        e->np = np;
        e->used = used_algo;
        e->bucket = bucket;
        snprintf(e->spec, sizeof e->spec, "%s", d->spec);
        snprintf(e->source, sizeof e->source, "%s", d->source);
    }
    tab[i].calls++;
    tab[i].total += seconds;
    note_size(&tab[i], size);
    last_hit = i;
}

void ct_pmpi_profile_add(ct_coll_t coll, int np, long long size, const ct_pmpi_decision_t *d,
                         int used_algo, double seconds) {
    pthread_mutex_lock(&lock);
    add_locked(coll, np, size, d, used_algo, seconds);
    pthread_mutex_unlock(&lock);
}

void ct_pmpi_profile_add_passthrough(ct_coll_t coll, int np, const char *why, double seconds) {
    ct_pmpi_decision_t d = ct_pmpi_st.nomatch[coll];
    snprintf(d.source, sizeof d.source, "%s", why);
    ct_pmpi_profile_add(coll, np, 0, &d, d.choice.algo, seconds);
}

/* merged entry at rank 0 */
typedef struct {
    entry_t e;
    int ranks;
    double sum_total, max_total;
} merged_t;

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* Every rank's `bytes` bytes at `buf`, concatenated at rank 0 of MPI_COMM_WORLD (collective):
 * rank 0 gets a malloc'd block of *total bytes (NULL, with a warning, without memory),
 * the others NULL. */
void *ct_pmpi_gather_at_root(const void *buf, int bytes, int rank, long long *total) {
    int size;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    int *counts = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
    }
    PMPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *total = 0;
    if (rank == 0 && counts && displs) {
        for (int r = 0; r < size; r++) {
            displs[r] = (int)*total;
            *total += counts[r];
        }
        if (*total <= 0x7fffffff) all = malloc(*total ? (size_t)*total : 1);
    }
    /* the gather goes ahead whatever rank 0 could allocate (every rank must
     * take part); without memory it receives nothing and says so */
    int okroot = rank != 0 || all != NULL;
    PMPI_Bcast(&okroot, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!okroot) {
        if (rank == 0) ct_pmpi_warn("out of memory merging the profile");
        free(counts);
        free(displs);
        return NULL;
    }
    PMPI_Gatherv(buf ? buf : (const void *)&bytes, bytes, MPI_BYTE, all, counts, displs,
                 MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return all;
}

void ct_pmpi_profile_write(const char *path, int rank) {
    int size;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    int tot_dropped = 0;
    PMPI_Reduce(&dropped, &tot_dropped, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    long long total = 0;
    char *all = ct_pmpi_gather_at_root(tab, ntab * (int)sizeof(entry_t), rank, &total);
    if (rank != 0) return;
    if (!all) {
        ct_pmpi_warn("%s: the profile is not written", path);
        return;
    }
    int n = (int)(total / (long long)sizeof(entry_t));
    merged_t *m = calloc(n ? (size_t)n : 1, sizeof *m);
    int nm = 0;
    for (int k = 0; m && k < n; k++) {
        entry_t e;
        memcpy(&e, all + (size_t)k * sizeof e, sizeof e);
        int j = 0;
        while (j < nm && !same_key(&m[j].e, e.coll, e.np, e.bucket, e.used, e.spec, e.source))
            j++;
        if (j == nm) {
            m[nm].e = e;
            m[nm].e.calls = 0;
            m[nm].e.nseen = 0;
            nm++;
        }
        for (int q = 0; q < e.nseen; q++) note_size(&m[j].e, e.seen[q]);
        if (e.capped) m[j].e.capped = 1;
        if (e.calls > m[j].e.calls) m[j].e.calls = e.calls;
        m[j].ranks++;
        m[j].sum_total += e.total;
        if (e.total > m[j].max_total) m[j].max_total = e.total;
    }
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = m ? fopen(tmp, "w") : NULL;
    if (!f) {
        ct_pmpi_warn("%s: cannot write the profile", path);
    } else {
        fprintf(f, "{\"format\": \"colltune-profile 1\", \"np_world\": %d, \"dropped\": %d, "
                   "\"entries\": [", size, tot_dropped);
        for (int j = 0; j < nm; j++) {
            const entry_t *e = &m[j].e;
            double tot = m[j].ranks ? m[j].sum_total / m[j].ranks : 0;
            const ct_algo_t *a = ct_algo_get(e->used);
            fprintf(f, "%s\n  {\"collective\": \"%s\", \"np\": %d, \"size_min\": %lld, "
                       "\"size_max\": %lld, \"algorithm\": ",
                    j ? "," : "", ct_coll_name((ct_coll_t)e->coll), e->np, e->bucket,
                    e->bucket ? 2 * e->bucket - 1 : 0);
            json_string(f, a ? a->name : "?");
            fputs(", \"spec\": ", f);
            json_string(f, e->spec);
            fputs(", \"source\": ", f);
            json_string(f, e->source);
            fprintf(f, ", \"calls\": %lld, \"ranks\": %d, \"total_s\": %.9g, \"mean_s\": %.9g, "
                       "\"max_rank_total_s\": %.9g, \"sizes\": [",
                    e->calls, m[j].ranks, tot, e->calls ? tot / (double)e->calls : 0,
                    m[j].max_total);
            for (int q = 0; q < e->nseen; q++) fprintf(f, "%s%lld", q ? ", " : "", e->seen[q]);
            fprintf(f, "], \"sizes_capped\": %s}", e->capped ? "true" : "false");
        }
        fprintf(f, "%s]", nm ? "\n" : "");
        ct_pmpi_observe_json(f); /* the other collectives, the wall time */
        fputs("}\n", f);
        if (fclose(f) != 0 || rename(tmp, path) != 0) {
            ct_pmpi_warn("%s: cannot write the profile", path);
            remove(tmp);
        }
    }
    free(m);
    free(all);
}
