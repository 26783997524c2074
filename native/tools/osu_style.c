/*
 * osu_style.c -- colltune-osu-style: the MPI library's collective timed the
 * way the OSU Micro-Benchmarks 7.x time it (osu_bcast, osu_reduce,
 * osu_allgather, osu_allreduce), as a plain MPI loop with no colltune code in
 * it. It is the reference that benchmarks/osu_agreement.py compares
 * `colltune-bench --timing osu --algo native` with.
 *
 * Per size, as OSU does:
 *   - buffers allocated once for the largest size, aligned to the page size
 *     (--align), and written before timing;
 *   - iterations = 1000 (100 above 8 KiB), skip = 100 (10 above 8 KiB);
 *   - MPI_Barrier, then iterations + skip calls, each timed alone
 *     (t = MPI_Wtime(); call; t = MPI_Wtime() - t), the first `skip` not
 *     counted, an untimed MPI_Barrier after each;
 *   - each process's latency is its timed total / iterations; rank 0 prints
 *     the mean over processes (OSU's "Avg Latency") and their minimum and
 *     maximum ("Min Latency", "Max Latency").
 * Root 0, MPI_CHAR (Bcast, Allgather) or MPI_CHAR with MPI_SUM (Reduce,
 * Allreduce); Allgather sizes are bytes per process.
 *
 * Output: one JSON object per size on stdout from rank 0.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_MESSAGE_SIZE 8192

static int rank, nprocs;

static void die(const char *fmt, const char *arg) {
    if (rank == 0) {
        fprintf(stderr, "colltune-osu-style: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n");
    }
    MPI_Finalize();
    exit(2);
}

static void usage(void) {
    printf("usage: colltune-osu-style --coll bcast|reduce|allgather|allreduce\n"
           "                          [--sizes LIST] [--iterations N] [--skip N] [--align B]\n\n"
           "  --sizes       bytes, comma-separated (default 8,1024,65536,1048576); allgather:\n"
           "                bytes per process\n"
           "  --iterations  timed calls per size (default 1000 up to 8 KiB, 100 above)\n"
           "  --skip        untimed calls first (default 100 up to 8 KiB, 10 above)\n"
           "  --align       buffer alignment in bytes, a power of two (default: page size;\n"
           "                0 or 1: plain malloc)\n");
}

static long parse_long(const char *opt, const char *v) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 0) die("%s: must be a non-negative whole number", opt);
    return x;
}

static char *alloc(size_t n, long align) {
    if (align <= 1) return malloc(n);
    void *p = NULL;
    size_t a = (size_t)align < sizeof(void *) ? sizeof(void *) : (size_t)align;
    return posix_memalign(&p, a, n) == 0 ? p : NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    const char *coll = NULL;
    char sizes_arg[1024] = "8,1024,65536,1048576";
    long iterations = -1, skip = -1, align = sysconf(_SC_PAGESIZE);
    if (align <= 0) align = 4096;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("%s needs a value (see --help)", a);
        if (!strcmp(a, "--coll")) coll = v;
        else if (!strcmp(a, "--sizes")) snprintf(sizes_arg, sizeof sizes_arg, "%s", v);
        else if (!strcmp(a, "--iterations")) iterations = parse_long(a, v);
        else if (!strcmp(a, "--skip")) skip = parse_long(a, v);
        else if (!strcmp(a, "--align")) align = parse_long(a, v);
        else die("unknown argument '%s' (see --help)", a);
    }
    if (!coll) die("%s", "--coll is required: bcast, reduce, allgather or allreduce");
    int c = !strcmp(coll, "bcast") ? 0 : !strcmp(coll, "reduce") ? 1
          : !strcmp(coll, "allgather") ? 2 : !strcmp(coll, "allreduce") ? 3 : -1;
    if (c < 0) die("--coll '%s': valid: bcast, reduce, allgather, allreduce", coll);
    if (align & (align - 1)) die("--align: must be 0 or a power of two%s", "");
    if (iterations == 0) die("%s", "--iterations must be at least 1");

    long sizes[64];
    int nsizes = 0;
    for (char *tok = strtok(sizes_arg, ","); tok; tok = strtok(NULL, ",")) {
        if (nsizes == 64) die("%s", "--sizes: at most 64 sizes");
        sizes[nsizes] = parse_long("--sizes", tok);
        if (sizes[nsizes] > INT_MAX) die("size %s is more than an MPI count can hold", tok);
        nsizes++;
    }
    long max_size = 1;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > max_size) max_size = sizes[s];
    size_t rbytes = (size_t)max_size * (c == 2 ? (size_t)nprocs : 1);
    char *sbuf = alloc((size_t)max_size, align), *rbuf = alloc(rbytes, align);
    if (!sbuf || !rbuf) die("%s", "cannot allocate the message buffers");
    memset(sbuf, 1, (size_t)max_size);
    memset(rbuf, 0, rbytes);

    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen = 0;
    MPI_Get_library_version(ver, &vlen);
    ver[strcspn(ver, "\n\r\"\\")] = '\0';

    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < nsizes; s++) {
        int count = (int)sizes[s];
        long iters = iterations > 0 ? iterations : sizes[s] > LARGE_MESSAGE_SIZE ? 100 : 1000;
        long sk = skip >= 0 ? skip : sizes[s] > LARGE_MESSAGE_SIZE ? 10 : 100;
        double timer = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < iters + sk; i++) {
            double t0 = MPI_Wtime();
            switch (c) {
            case 0: MPI_Bcast(sbuf, count, MPI_CHAR, 0, MPI_COMM_WORLD); break;
            case 1: MPI_Reduce(sbuf, rbuf, count, MPI_CHAR, MPI_SUM, 0, MPI_COMM_WORLD); break;
            case 2:
                MPI_Allgather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, MPI_COMM_WORLD);
                break;
            default: MPI_Allreduce(sbuf, rbuf, count, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD); break;
            }
            double t1 = MPI_Wtime();
            if (i >= sk) timer += t1 - t0;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double lat = timer * 1e6 / (double)iters, mn, mx, sum;
        MPI_Reduce(&lat, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("{\"program\": \"colltune-osu-style\", \"collective\": \"%s\", \"np\": %d, "
                   "\"size\": %ld, \"avg_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, "
                   "\"iterations\": %ld, \"skip\": %ld, \"align\": %ld, \"mpi\": \"%s\"}\n",
                   coll, nprocs, sizes[s], sum / nprocs, mn, mx, iters, sk, align < 1 ? 1 : align,
                   ver);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
