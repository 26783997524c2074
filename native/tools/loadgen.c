/*
 * loadgen.c -- colltune-load: background traffic, run as its own MPI job beside a
 * measurement (docs/workload.md).
 *
 * The job's processes exchange messages among themselves in rounds, in one of three
 * patterns:
 *   pairs     every round a fresh random pairing (the same shuffle as colltune-probe,
 *             splitmix64 + Fisher-Yates from a seed rank 0 broadcasts); partners
 *             exchange `window` messages of `size` bytes both ways
 *   alltoall  every round every process sends `window` messages of `size` bytes to
 *             every other one (a burst)
 *   hot       every round every process but rank 0 sends `window` messages of `size`
 *             bytes to rank 0, which answers each with one byte (incast on one node)
 * Duty cycle: time is cut in periods of `period` ms; a period starts with rounds until
 * `duty` x period has passed (rank 0's clock decides, broadcast with each round's
 * command), then every process sleeps the rest of the period (the core is given away).
 * duty 1 never sleeps. The job stops after `duration` seconds, when the file given
 * with --stop-file appears (rank 0 looks before every round: how colltune ends it
 * cleanly), on SIGTERM/SIGINT (each process notes the signal; rank 0 ends the rounds),
 * or when killed.
 *
 * Output (rank 0): {"kind": "load-ready"} once the first round is done (the traffic is
 * flowing), and at the end one JSON object with the rounds, the messages and bytes sent
 * by all processes, the time spent, the share of it spent sending and the send rate.
 */
#include "driver_common.h"
#include "loadtraffic.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { CMD_GO, CMD_SLEEP, CMD_STOP };

static int rank, nprocs;
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(void) {
    printf("usage: colltune-load [--pattern pairs|alltoall|hot] [--size BYTES] [--window N]\n"
           "                     [--duty F] [--period-ms MS] [--duration S] [--seed S]\n\n"
           "  --pattern    pairs (random pairs each round), alltoall (bursts to every other\n"
           "               process), hot (everyone sends to rank 0); default pairs\n"
           "  --size       bytes per message (default 65536)\n"
           "  --window     messages per partner and round, all in flight at once (default 4)\n"
           "  --duty       fraction of each period spent sending, 0 < F <= 1 (default 1)\n"
           "  --period-ms  length of a duty-cycle period in ms (default 50)\n"
           "  --duration   seconds to run; 0: until SIGTERM/SIGINT (default 0)\n"
           "  --seed       seed of the random pairings (default: chosen by rank 0)\n"
           "  --stop-file  stop cleanly once this file exists (rank 0 looks every round)\n");
}

static double parse_double(const char *opt, const char *v, double lo, double hi) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < lo || x > hi)
        ct_die(rank, "%s '%s': must be a number in %g..%g", opt, v, lo, hi);
    return x;
}

static void nap(double seconds) {
    if (seconds <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    int pattern = CT_LOAD_PAIRS;
    long size = 65536, window = 4;
    double duty = 1.0, period = 0.05, duration = 0;
    int have_seed = 0;
    unsigned long long seed_arg = 0;
    const char *stop_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--stop-file")) stop_file = v;
        else if (!strcmp(a, "--pattern")) {
            pattern = ct_load_pattern(v);
            if (pattern < 0) ct_die(rank, "--pattern '%s': valid: pairs, alltoall, hot", v);
        } else if (!strcmp(a, "--size")) size = ct_parse_long(rank, a, v, 0, INT_MAX);
        else if (!strcmp(a, "--window")) window = ct_parse_long(rank, a, v, 1, 1024);
        else if (!strcmp(a, "--duty")) {
            duty = parse_double(a, v, 0, 1);
            if (!(duty > 0)) ct_die(rank, "--duty '%s': must be above 0 (at most 1)", v);
        } else if (!strcmp(a, "--period-ms")) period = parse_double(a, v, 1, 60000) / 1e3;
        else if (!strcmp(a, "--duration")) duration = parse_double(a, v, 0, 1e7);
        else if (!strcmp(a, "--seed")) {
            char *end;
            if (v[0] == '-' || (seed_arg = strtoull(v, &end, 10), end == v || *end))
                ct_die(rank, "--seed '%s': must be a whole number >= 0", v);
            have_seed = 1;
        } else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    if (nprocs < 2)
        ct_die(rank, "the load generator needs at least 2 processes to send anything, got %d",
               nprocs);

    uint64_t seed = (uint64_t)seed_arg;
    if (!have_seed && rank == 0) {
        uint64_t mix = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
        seed = ct_rng_next(&mix) >> 1;
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    ct_load_t gen;
    if (ct_load_init(&gen, MPI_COMM_WORLD, pattern, size, window, seed))
        ct_die(rank, "out of memory");

    long long rounds = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's clock starts with the others' */
    double t0 = MPI_Wtime(), period_start = t0, busy = 0;
    for (;;) {
        int cmd = CMD_GO;
        if (rank == 0) {
            double now = MPI_Wtime();
            struct stat sb;
            if (stop_requested || (duration > 0 && now - t0 >= duration) ||
                (stop_file && stat(stop_file, &sb) == 0))
                cmd = CMD_STOP;
            else if (duty < 1 && now - period_start >= duty * period) cmd = CMD_SLEEP;
        }
        MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (cmd == CMD_STOP) break;
        if (cmd == CMD_SLEEP) {
            double rest = 0;
            if (rank == 0) rest = period - (MPI_Wtime() - period_start);
            MPI_Bcast(&rest, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            nap(rest);
            period_start = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) period_start = MPI_Wtime();
            continue;
        }
        double r0 = MPI_Wtime();
        ct_load_round(&gen);
        busy += MPI_Wtime() - r0;
        if (rounds++ == 0 && rank == 0) {
            printf("{\"kind\": \"load-ready\"}\n");
            fflush(stdout);
        }
    }
    double elapsed = MPI_Wtime() - t0;
    long long tot[2] = { gen.msgs, gen.sent }, all[2] = { 0, 0 };
    MPI_Reduce(tot, all, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    /* each rank's busy share of its own elapsed time (its clock, its interval), the
     * busiest rank's share reported: never above 1 */
    double share = elapsed > 0 ? busy / elapsed : 0, busy_max = 0;
    if (share > 1) share = 1;
    MPI_Reduce(&share, &busy_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char ver[256];
        ct_mpi_version(ver, sizeof ver);
        printf("{\"kind\": \"load\", \"np\": %d, \"pattern\": \"%s\", \"size\": %ld, "
               "\"window\": %ld, \"duty\": %.4f, \"period_ms\": %.3f, \"duration_s\": %.3f, "
               "\"elapsed_s\": %.3f, \"rounds\": %lld, \"messages\": %lld, \"bytes\": %lld, "
               "\"busy_fraction\": %.4f, \"rate_MBps\": %.3f, \"seed\": %llu, \"mpi\": ",
               nprocs, ct_load_pattern_names[pattern], size, window, duty, period * 1e3, duration,
               elapsed, rounds, all[0], all[1], busy_max,
               elapsed > 0 ? (double)all[1] / elapsed / 1e6 : 0, (unsigned long long)seed);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
    }
    ct_load_free(&gen);
    MPI_Finalize();
    return 0;
}
