/*
 * probe.c -- colltune-probe: a quick check of how loaded the network is.
 *
 * In the manner of the HP2P probe (many iterations of small pairwise
 * exchanges between randomly paired processes): each iteration, the processes
 * are shuffled and paired up in shuffle order, (p[0], p[1]), (p[2], p[3]), ...;
 * with an odd process count the last one sits that iteration out. Partners
 * exchange `size` bytes both ways with MPI_Irecv + MPI_Isend + MPI_Waitall.
 * Every iteration starts with an (untimed) barrier, and every process times
 * its own exchange, from posting the receive to the end of the Waitall.
 *
 * The shuffles come from a seed that rank 0 chooses (or is given) and
 * broadcasts; every rank then draws the same permutations from the same
 * deterministic generator (splitmix64 + Fisher-Yates), and a checksum of all
 * permutations is compared across ranks at the end.
 *
 * Output: one JSON object on stdout from rank 0 with the distribution of the
 * exchange times over all ranks and iterations, `iter_wall_us`: the wall time of
 * the timed loop on rank 0 divided by the iterations (a barrier and an exchange
 * each: what studies store as the probe index, docs/workload.md, since it also sees
 * processes that wait for a core), and the load index:
 *     load_index = median_us / baseline_us   with --baseline-us
 *     load_index = median_us / min_us        without (this run's fastest exchange)
 */
#include "driver_common.h"
#include "loadtraffic.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TAG_PROBE 4712

static int rank, nprocs;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, long n, double q) {
    if (n == 1) return sorted[0];
    double pos = q * (double)(n - 1);
    long lo = (long)floor(pos);
    long hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]);
}

static unsigned char pattern(int src, long i) { return (unsigned char)(src * 31 + i * 7 + 1); }

static void usage(void) {
    printf("usage: colltune-probe [--size BYTES] [--iterations N] [--warmup N] [--seed S]\n"
           "                      [--baseline-us X]\n\n"
           "  --size         bytes each partner sends per exchange (default 4096)\n"
           "  --iterations   timed iterations, each with a fresh random pairing (default 1000)\n"
           "  --warmup       untimed iterations first (default 10)\n"
           "  --seed         seed of the pairings (default: chosen by rank 0 and reported)\n"
           "  --baseline-us  median exchange time of a quiet system; load_index is the\n"
           "                 median divided by it (default: divided by this run's minimum)\n");
}

/* One iteration's exchange; returns this rank's exchange time, or -1 if it sat out. */
static double exchange(const int *perm, char *sbuf, char *rbuf, int size, int *partner_out) {
    int pos = 0;
    while (perm[pos] != rank) pos++;
    int ppos = pos ^ 1; /* pairs (0,1), (2,3), ...: partner of an even slot is the next one */
    MPI_Barrier(MPI_COMM_WORLD);
    if (ppos >= nprocs) {
        *partner_out = -1;
        return -1;
    }
    int partner = perm[ppos];
    MPI_Request req[2];
    double t0 = MPI_Wtime();
    MPI_Irecv(rbuf, size, MPI_BYTE, partner, TAG_PROBE, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(sbuf, size, MPI_BYTE, partner, TAG_PROBE, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    double t = MPI_Wtime() - t0;
    *partner_out = partner;
    return t;
}

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);

    long size = 4096, iterations = 1000, warmup = 10;
    double baseline_us = 0;
    int have_seed = 0;
    unsigned long long seed_arg = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--size")) size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--iterations")) iterations = ct_parse_long(rank, a, v, 1, 100000000L);
        else if (!strcmp(a, "--warmup")) warmup = ct_parse_long(rank, a, v, 0, 100000000L);
        else if (!strcmp(a, "--seed")) {
            char *end;
            if (v[0] == '-' || (seed_arg = strtoull(v, &end, 10), end == v || *end))
                ct_die(rank, "--seed '%s': must be a whole number >= 0", v);
            have_seed = 1;
        } else if (!strcmp(a, "--baseline-us")) {
            char *end;
            baseline_us = strtod(v, &end);
            if (end == v || *end || !(baseline_us > 0) || !isfinite(baseline_us))
                ct_die(rank, "--baseline-us '%s': must be a positive number of microseconds", v);
        } else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    if (nprocs < 2)
        ct_die(rank, "the probe needs at least 2 processes to form a pair, got %d", nprocs);

    uint64_t seed = (uint64_t)seed_arg;
    if (!have_seed && rank == 0) {
        /* reported in the output, so a run can be repeated with --seed */
        uint64_t mix = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^
                       (uint64_t)(MPI_Wtime() * 1e9);
        seed = ct_rng_next(&mix) >> 1;
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    char *sbuf = malloc((size_t)(size ? size : 1)), *rbuf = malloc((size_t)(size ? size : 1));
    int *perm = malloc((size_t)nprocs * sizeof *perm);
    double *mine = malloc((size_t)iterations * sizeof *mine);
    if (!sbuf || !rbuf || !perm || !mine) ct_die(rank, "out of memory");
    for (long i = 0; i < size; i++) sbuf[i] = (char)pattern(rank, i);

    uint64_t state = seed, check = 1469598103934665603ULL; /* FNV-1a over all pairings */
    int partner = -1, bad = 0;
    double loop_t0 = 0;
    for (long it = -warmup; it < iterations; it++) {
        if (it == 0) loop_t0 = MPI_Wtime();
        ct_rng_shuffle(perm, nprocs, &state);
        for (int k = 0; k < nprocs; k++) check = (check ^ (uint64_t)perm[k]) * 1099511628211ULL;
        if (size > 0) rbuf[0] = rbuf[size - 1] = 0;
        double t = exchange(perm, sbuf, rbuf, (int)size, &partner);
        if (partner >= 0 && size > 0 &&
            ((unsigned char)rbuf[0] != pattern(partner, 0) ||
             (unsigned char)rbuf[size - 1] != pattern(partner, size - 1)))
            bad = 1;
        if (it >= 0) mine[it] = t;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double iter_wall_us = (MPI_Wtime() - loop_t0) / (double)iterations * 1e6;

    /* all ranks must have drawn the same pairings, and every message must have arrived */
    uint64_t check0 = check;
    MPI_Bcast(&check0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int local = (check0 != check) ? 1 : 0, anydiff = 0, anybad = 0;
    MPI_Allreduce(&local, &anydiff, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (anydiff) ct_die(rank, "ranks drew different pairings from seed %llu", (unsigned long long)seed);
    if (anybad) ct_die(rank, "received data differs from what the partner sent");

    double *all = NULL;
    if (rank == 0) {
        all = malloc((size_t)nprocs * (size_t)iterations * sizeof *all);
        if (!all) ct_die(rank, "out of memory for %d x %ld samples", nprocs, iterations);
    }
    MPI_Gather(mine, (int)iterations, MPI_DOUBLE, all, (int)iterations, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        /* per iteration, the slowest exchange: what a collective step would wait for */
        double *slowest = malloc((size_t)iterations * sizeof *slowest);
        long n = 0;
        double sum = 0;
        for (long it = 0; it < iterations; it++) {
            double mx = 0;
            for (int r = 0; r < nprocs; r++) {
                double t = all[(size_t)r * (size_t)iterations + (size_t)it];
                if (t > mx) mx = t;
            }
            slowest[it] = mx;
        }
        for (size_t k = 0; k < (size_t)nprocs * (size_t)iterations; k++)
            if (all[k] >= 0) {
                all[n++] = all[k];
                sum += all[k];
            }
        qsort(all, (size_t)n, sizeof *all, cmp_double);
        qsort(slowest, (size_t)iterations, sizeof *slowest, cmp_double);
        double mn = all[0] * 1e6, med = quantile(all, n, 0.5) * 1e6;
        double p90 = quantile(all, n, 0.9) * 1e6, mx = all[n - 1] * 1e6;
        double ref = baseline_us > 0 ? baseline_us : mn;
        /* a timer tick of 0 would make the ratio meaningless: then report null */
        char ver[256];
        ct_mpi_version(ver, sizeof ver);
        printf("{\"kind\": \"probe\", \"np\": %d, \"size\": %ld, \"iterations\": %ld, "
               "\"warmup\": %ld, \"samples\": %ld, \"min_us\": %.3f, \"median_us\": %.3f, "
               "\"mean_us\": %.3f, \"p90_us\": %.3f, \"max_us\": %.3f, "
               "\"iter_slowest_median_us\": %.3f, \"iter_wall_us\": %.3f, \"load_index\": ",
               nprocs, size, iterations, warmup, n, mn, med, sum / (double)n * 1e6, p90, mx,
               quantile(slowest, iterations, 0.5) * 1e6, iter_wall_us);
        if (ref > 0) printf("%.4f", med / ref);
        else fputs("null", stdout);
        printf(", \"load_basis\": \"%s\", \"baseline_us\": ", baseline_us > 0 ? "baseline" : "min");
        if (baseline_us > 0) printf("%.3f", baseline_us);
        else fputs("null", stdout);
        printf(", \"seed\": %llu, \"mpi\": ", (unsigned long long)seed);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
        free(slowest);
        free(all);
    }
    free(sbuf);
    free(rbuf);
    free(perm);
    free(mine);
    MPI_Finalize();
    return 0;
}
