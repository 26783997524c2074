/*
 * pingpong.c -- colltune-pingpong: point-to-point latency and bandwidth.
 *
 * Two modes, one message pattern: a token travels around a ring of P
 * participants. Rank 0 sends to rank 1 and then waits for the token to come
 * back from rank P-1; every other participant first receives from its left
 * neighbour and then sends to its right one. With --mode pingpong the ring is
 * ranks 0 and 1 only (P = 2: the classic ping-pong, others idle); with
 * --mode ring it is all N processes (P = N).
 *
 * Each iteration is one full round of P hops, timed on rank 0, so
 *     one-way (per-hop) time = round time / P
 * which for the ping-pong is RTT / 2. With --mode exchange ranks 0 and 1 send
 * to each other at the same time (MPI_Sendrecv, or both persistent requests
 * started and waited for together): one iteration is one exchange, and its
 * time is what two concurrent messages cost (shared memory: both processes
 * copy at once). By default the transfers are MPI_Send /
 * MPI_Recv, as osu_latency does them; --persistent 1 uses persistent requests
 * instead (MPI_Send_init / MPI_Recv_init once per size, then MPI_Start +
 * MPI_Wait per transfer). The buffers are aligned to the page size (--align),
 * as osu_latency allocates them, and written before timing.
 *
 * Per size: `warmup` untimed rounds, then `reps` repetitions of `iterations`
 * timed rounds, each repetition starting after a barrier of all processes.
 * One repetition gives one sample, its mean one-way time; statistics are over
 * the repetitions. Bandwidth is size / median one-way time, in MB/s (10^6 B/s).
 *
 * Output: one JSON object per size on stdout from rank 0.
 *
 * --mode eager finds the library's eager limit between ranks 0 and 1: the
 * largest message MPI_Send completes before the receiver has posted its
 * receive. Rank 1 spins for --delay-us microseconds outside MPI (on MPI_Wtime)
 * before posting; rank 0 times MPI_Send. A size waits for the receiver when the
 * median of --reps sends took at least half the delay. Powers
 * of two from 1 byte up to the largest of --sizes find the first size that
 * waits; bisection between it and the size before finds the limit to the byte.
 * Output: one JSON object (eager_limit, rendezvous_from, each size tried).
 */
#include "driver_common.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_TOKEN 4711
#define TAG_EAGER 4712

static int rank, nprocs;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile by linear interpolation of sorted values. */
static double quantile(const double *sorted, int n, double q) {
    if (n == 1) return sorted[0];
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

static void usage(void) {
    printf("usage: colltune-pingpong [--mode pingpong|ring|exchange|eager] [--sizes LIST]\n"
           "                         [--iterations N]\n"
           "                         [--warmup N] [--reps R] [--persistent 0|1] [--align B]\n"
           "                         [--delay-us US]\n\n"
           "  --mode        pingpong: ranks 0 and 1 exchange, the others idle (default);\n"
           "                ring: a token goes 0 -> 1 -> ... -> N-1 -> 0 through all N ranks;\n"
           "                exchange: ranks 0 and 1 send to each other at once (time of one\n"
           "                exchange), the others idle;\n"
           "                eager: the largest message MPI_Send completes before rank 1\n"
           "                posts the receive, searched up to the largest of --sizes\n"
           "  --delay-us    eager: how long rank 1 waits before posting (default 1000)\n"
           "  --sizes       message sizes in bytes, comma-separated\n"
           "                (default 8,4096,65536,1048576)\n"
           "  --iterations  timed rounds per repetition (default 1000 up to 8 KiB, 100 above)\n"
           "  --warmup      untimed rounds before each size (default iterations/10, at least 1)\n"
           "  --reps        repetitions per size; statistics are over them (default 5)\n"
           "  --persistent  0: MPI_Send/MPI_Recv, as osu_latency (default);\n"
           "                1: MPI_Send_init/MPI_Recv_init + MPI_Start/MPI_Wait\n"
           "  --align       buffers start at a multiple of B bytes, a power of two (default:\n"
           "                the page size, as osu_latency); 0 or 1: plain malloc\n");
}

static long parse_long(const char *opt, const char *v, long lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo)
        ct_die(rank, "%s '%s': must be a whole number >= %ld", opt, v, lo);
    return x;
}

/* One participant's side of the ring transfers for one size. */
typedef struct {
    int persistent;
    int first;          /* rank 0: send first, then receive */
    int exchange;       /* send and receive at once (--mode exchange) */
    int next, prev;
    char *sbuf, *rbuf;
    int size;
    MPI_Request sreq, rreq;
} hop_t;

static void hop_setup(hop_t *h) {
    if (!h->persistent) return;
    MPI_Send_init(h->sbuf, h->size, MPI_BYTE, h->next, TAG_TOKEN, MPI_COMM_WORLD, &h->sreq);
    MPI_Recv_init(h->rbuf, h->size, MPI_BYTE, h->prev, TAG_TOKEN, MPI_COMM_WORLD, &h->rreq);
}

static void hop_free(hop_t *h) {
    if (!h->persistent) return;
    MPI_Request_free(&h->sreq);
    MPI_Request_free(&h->rreq);
}

static inline void do_send(hop_t *h) {
    if (h->persistent) {
        MPI_Start(&h->sreq);
        MPI_Wait(&h->sreq, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(h->sbuf, h->size, MPI_BYTE, h->next, TAG_TOKEN, MPI_COMM_WORLD);
    }
}

static inline void do_recv(hop_t *h) {
    if (h->persistent) {
        MPI_Start(&h->rreq);
        MPI_Wait(&h->rreq, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(h->rbuf, h->size, MPI_BYTE, h->prev, TAG_TOKEN, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
}

/* Both transfers at once (--mode exchange). */
static inline void do_exchange(hop_t *h) {
    if (h->persistent) {
        MPI_Request r[2] = { h->rreq, h->sreq };
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
        MPI_Sendrecv(h->sbuf, h->size, MPI_BYTE, h->next, TAG_TOKEN, h->rbuf, h->size,
                     MPI_BYTE, h->prev, TAG_TOKEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* `rounds` rounds of the token; returns the elapsed time (meaningful on rank 0). */
static double rounds_of(hop_t *h, long rounds) {
    double t0 = MPI_Wtime();
    for (long i = 0; i < rounds; i++) {
        if (h->exchange) {
            do_exchange(h);
        } else if (h->first) {
            do_send(h);
            do_recv(h);
        } else {
            do_recv(h);
            do_send(h);
        }
    }
    return MPI_Wtime() - t0;
}

/* posix_memalign to `align` bytes, or plain malloc when align is 1 */
static char *alloc_buf(size_t n, long align) {
    if (align <= 1) return malloc(n);
    void *p = NULL;
    size_t a = (size_t)align < sizeof(void *) ? sizeof(void *) : (size_t)align;
    return posix_memalign(&p, a, n) == 0 ? p : NULL;
}

/* --mode eager, one size: does MPI_Send of `size` bytes wait for the receiver?
   Decided on rank 0 -- the median of `probes` sends took at least half the delay
   (a library may deliver some sends of a size early and not others: Open MPI's
   shared-memory fast boxes take a message only when it fits their free space) --
   and shared; *median_us: rank 0's median send time. */
static int send_waits(char *sbuf, char *rbuf, long size, double delay, long probes,
                      double *t, double *median_us) {
    for (long p = 0; p < probes; p++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            double t0 = MPI_Wtime();
            MPI_Send(sbuf, (int)size, MPI_BYTE, 1, TAG_EAGER, MPI_COMM_WORLD);
            t[p] = MPI_Wtime() - t0;
        } else if (rank == 1) {
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < delay) continue;
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG_EAGER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    double med = 0;
    if (rank == 0) {
        qsort(t, (size_t)probes, sizeof *t, cmp_double);
        med = quantile(t, (int)probes, 0.5);
    }
    int waits = rank == 0 && med >= delay / 2;
    MPI_Bcast(&waits, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *median_us = med * 1e6;
    return waits;
}

enum { MAX_TRIED = 128 };

/* the state of the eager-limit search */
typedef struct {
    char *sbuf, *rbuf;
    double delay, *t;
    long probes;
    long lo, hi; /* lo: largest size that did not wait; hi: smallest that did (-1: none) */
    int ntried;
    long tried[MAX_TRIED];
    double tried_us[MAX_TRIED];
} search_t;

static void try_size(search_t *s, long m) {
    double us;
    int w = send_waits(s->sbuf, s->rbuf, m, s->delay, s->probes, s->t, &us);
    if (s->ntried < MAX_TRIED) {
        s->tried[s->ntried] = m;
        s->tried_us[s->ntried++] = us;
    }
    if (w) s->hi = m;
    else s->lo = m;
}

static void eager_search(char *sbuf, char *rbuf, long max_size, double delay, long probes) {
    search_t *s = calloc(1, sizeof *s);
    double *t = malloc((size_t)probes * sizeof *t);
    if (!s || !t) ct_die(rank, "out of memory");
    *s = (search_t){ .sbuf = sbuf, .rbuf = rbuf, .delay = delay, .t = t, .probes = probes,
                     .lo = 0, .hi = -1 };
    for (long m = 1; s->hi < 0;) { /* 1, 2, 4, ... and max_size last */
        try_size(s, m);
        if (m >= max_size) break;
        m = m * 2 > max_size ? max_size : m * 2;
    }
    while (s->hi > 0 && s->hi - s->lo > 1) /* bisection: at most 31 more sizes */
        try_size(s, s->lo + (s->hi - s->lo) / 2);
    long lo = s->lo, hi = s->hi;
    free(t);
    if (rank != 0) {
        free(s);
        return;
    }
    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    printf("{\"kind\": \"eager\", \"np\": %d, \"eager_limit\": %ld, \"rendezvous_from\": ",
           nprocs, lo);
    if (hi > 0) printf("%ld", hi);
    else printf("null");
    printf(", \"max_size\": %ld, \"delay_us\": %.1f, \"reps\": %ld, \"tried\": [",
           max_size, delay * 1e6, probes);
    for (int i = 0; i < s->ntried; i++)
        printf("%s[%ld, %.3f]", i ? ", " : "", s->tried[i], s->tried_us[i]);
    printf("], \"mpi\": ");
    ct_json_str(stdout, ver);
    printf("}\n");
    fflush(stdout);
    free(s);
}

static unsigned char pattern(int src, long i) { return (unsigned char)(src * 31 + i * 7 + 1); }

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);

    const char *mode = "pingpong", *size_list = "8,4096,65536,1048576";
    long iterations = -1, warmup = -1, reps = 5, persistent = 0, align = -1, delay_us = 1000;
    int sizes_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--mode")) mode = v;
        else if (!strcmp(a, "--sizes")) size_list = v, sizes_given = 1;
        else if (!strcmp(a, "--delay-us")) delay_us = parse_long(a, v, 1);
        else if (!strcmp(a, "--iterations")) iterations = parse_long(a, v, 1);
        else if (!strcmp(a, "--warmup")) warmup = parse_long(a, v, 0);
        else if (!strcmp(a, "--reps")) reps = parse_long(a, v, 1);
        else if (!strcmp(a, "--persistent")) persistent = parse_long(a, v, 0);
        else if (!strcmp(a, "--align")) align = parse_long(a, v, 0);
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    int ring = 0, eager = 0, exchange = 0;
    if (!strcmp(mode, "ring")) ring = 1;
    else if (!strcmp(mode, "eager")) eager = 1;
    else if (!strcmp(mode, "exchange")) exchange = 1;
    else if (strcmp(mode, "pingpong"))
        ct_die(rank, "--mode '%s': valid: pingpong, ring, exchange, eager", mode);
    if (eager && !sizes_given) size_list = "4194304";
#ifdef SMPI_SHARED_MALLOC /* SimGrid SMPI: its clocks are simulated and stand still in a spin */
    if (eager)
        ct_die(rank, "--mode eager: under SMPI the eager limit is a setting "
                     "(smpi/send-is-detached-thresh), not something to measure");
#endif
    if (persistent > 1) ct_die(rank, "--persistent %ld: must be 0 or 1", persistent);
    if (align < 0) {
        align = sysconf(_SC_PAGESIZE);
        if (align <= 0) align = 4096;
    }
    if (align == 0) align = 1;
    if (align > (1L << 30) || (align & (align - 1)))
        ct_die(rank, "--align %ld: must be 0 or a power of two up to 1073741824", align);
    if (reps > 100000) ct_die(rank, "--reps %ld: at most 100000", reps);
    if (nprocs < 2)
        ct_die(rank, "%s needs at least 2 processes (rank 0 sends to rank 1), got %d",
               ring ? "the ring" : exchange ? "the exchange" : "the ping-pong", nprocs);

    char **sizes_s;
    int nsizes = ct_split(size_list, &sizes_s);
    if (nsizes == 0) ct_die(rank, "--sizes: no sizes given");
    long *sizes = malloc((size_t)nsizes * sizeof *sizes);
    long max_size = 1;
    for (int s = 0; s < nsizes; s++) {
        char *end;
        sizes[s] = strtol(sizes_s[s], &end, 10);
        if (end == sizes_s[s] || *end || sizes[s] < 0 || sizes[s] > INT_MAX)
            ct_die(rank, "size '%s' is not a number of bytes in 0..%d", sizes_s[s], INT_MAX);
        if (sizes[s] > max_size) max_size = sizes[s];
    }

    /* participants of the ring: 0 and 1 for the ping-pong, everybody for the ring */
    int parts = ring ? nprocs : 2;
    int active = rank < parts;
    char *sbuf = alloc_buf((size_t)max_size, align), *rbuf = alloc_buf((size_t)max_size, align);
    if (!sbuf || !rbuf) ct_die(rank, "cannot allocate 2 x %ld bytes of message buffers", max_size);
    for (long i = 0; i < max_size; i++) sbuf[i] = (char)pattern(rank, i);
    memset(rbuf, 0, (size_t)max_size);
    if (eager) eager_search(sbuf, rbuf, max_size, (double)delay_us * 1e-6, reps);
    else ct_print_placement(MPI_COMM_WORLD); /* where the processes are (nodes, ppn) */
    double *samples = malloc((size_t)reps * sizeof *samples);

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    for (int s = 0; s < (eager ? 0 : nsizes); s++) { /* eager: searched above */
        long iters = iterations > 0 ? iterations : (sizes[s] <= 8192 ? 1000 : 100);
        long warm = warmup >= 0 ? warmup : (iters >= 10 ? iters / 10 : 1);
        hop_t h = { .persistent = (int)persistent, .first = rank == 0, .exchange = exchange,
                    .next = (rank + 1) % parts, .prev = (rank + parts - 1) % parts,
                    .sbuf = sbuf, .rbuf = rbuf, .size = (int)sizes[s] };
        if (active) {
            hop_setup(&h);
            rounds_of(&h, warm);
        }
        for (long r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (active)
                samples[r] = rounds_of(&h, iters) / ((double)iters * (exchange ? 1 : parts));
        }
        /* the last round's message must be what the left neighbour sent */
        int bad = 0;
        if (active && sizes[s] > 0) {
            long last = sizes[s] - 1;
            bad = (unsigned char)rbuf[0] != pattern(h.prev, 0) ||
                  (unsigned char)rbuf[last] != pattern(h.prev, last);
        }
        if (active) hop_free(&h);
        int anybad = 0;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        if (anybad) ct_die(rank, "size %ld: received data differs from what was sent", sizes[s]);
        memset(rbuf, 0, (size_t)(sizes[s] > 0 ? sizes[s] : 1));
        if (rank != 0) continue;

        double *v = samples;
        qsort(v, (size_t)reps, sizeof *v, cmp_double);
        double mean = 0, var = 0;
        for (long r = 0; r < reps; r++) mean += v[r];
        mean /= (double)reps;
        for (long r = 0; r < reps; r++) var += (v[r] - mean) * (v[r] - mean);
        double sd = reps > 1 ? sqrt(var / (double)(reps - 1)) : 0;
        double med = quantile(v, (int)reps, 0.5);
        double bw = med > 0 ? (double)sizes[s] / med / 1e6 : 0;
        printf("{\"kind\": \"%s\", \"np\": %d, \"participants\": %d, \"size\": %ld, "
               "\"min_us\": %.3f, \"median_us\": %.3f, \"mean_us\": %.3f, \"max_us\": %.3f, "
               "\"stddev_us\": %.3f, \"bandwidth_MBps\": %.3f, \"iterations\": %ld, "
               "\"warmup\": %ld, \"reps\": %ld, \"persistent\": %s, \"align\": %ld, \"mpi\": ",
               ring ? "ring" : exchange ? "exchange" : "pingpong", nprocs, parts, sizes[s],
               v[0] * 1e6, med * 1e6,
               mean * 1e6, v[reps - 1] * 1e6, sd * 1e6, bw, iters, warm, reps,
               persistent ? "true" : "false", align);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
    }
    free(samples);
    free(sizes);
    free(sbuf);
    free(rbuf);
    ct_free_list(sizes_s, nsizes);
    MPI_Finalize();
    return 0;
}
