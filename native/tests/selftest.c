/*
 * selftest.c -- colltune-selftest: unit tests of the registry, the parser and
 * argument checking, and the statistics of colltune-bench (bench_stats.c) on
 * synthetic timings. Run with one process (mpirun -np 1). Prints
 * "N passed, N failed" and exits non-zero on any failure.
 */
#include "bench_stats.h"
#include "colltune.h"
#include "../lib/ct_internal.h" /* ct_type_dense, ct_pack_stream */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

#define EXPECT(cond, ...)                                              \
    do {                                                               \
        if (cond) {                                                    \
            passed++;                                                  \
        } else {                                                       \
            failed++;                                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                \
            printf(__VA_ARGS__);                                       \
            printf("\n");                                              \
        }                                                              \
    } while (0)

static int hook_calls;
static void on_fallback(const ct_dispatch_t *d) { (void)d; hook_calls++; }

static void int_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* a switch of the library for SMPI timing runs: on and off under SMPI, refused
 * (MPI_ERR_ARG, a message naming SMPI) when turned on in any other build */
static void smpi_only_switch(int (*sw)(int), const char *what) {
#ifdef SMPI_SHARED_MALLOC
    EXPECT(sw(1) == MPI_SUCCESS && sw(0) == MPI_SUCCESS, "%s under SMPI: %s", what,
           ct_last_error());
#else
    int rc = sw(1);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "SMPI"), "%s outside SMPI: %d %s",
           what, rc, ct_last_error());
    EXPECT(sw(0) == MPI_SUCCESS, "%s off", what);
#endif
}

static int near(double x, double want) { return fabs(x - want) <= 1e-9 * (1 + fabs(want)); }

/* The byte-stream helpers of issue 14: which datatypes are their own type
 * signature in memory, and packing round trips. */
static int dense(MPI_Datatype dt) {
    ct_type_t g;
    return ct_type(dt, &g) == MPI_SUCCESS && ct_type_dense(dt, &g);
}

static void test_dense(void) {
    MPI_Datatype t;
    EXPECT(dense(MPI_INT) && dense(MPI_DOUBLE) && dense(MPI_2INT),
           "predefined types without padding are dense");
    EXPECT(!dense(MPI_DOUBLE_INT), "MPI_DOUBLE_INT has padding: not dense");
    MPI_Type_contiguous(3, MPI_DOUBLE, &t);
    EXPECT(dense(t), "contiguous(3, double) is dense");
    MPI_Type_free(&t);
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);
    EXPECT(!dense(t), "vector(2,1,3,int) has holes");
    MPI_Type_free(&t);
    MPI_Type_vector(3, 2, 2, MPI_INT, &t);
    EXPECT(dense(t), "vector(3,2,2,int) is contiguous");
    MPI_Type_free(&t);
    MPI_Type_create_resized(MPI_INT, 0, 8, &t);
    EXPECT(!dense(t), "int resized to extent 8 has a gap");
    MPI_Type_free(&t);
    int bl[2] = { 1, 1 };
    MPI_Aint swapped[2] = { 4, 0 }, ordered[2] = { 0, 4 };
    MPI_Datatype ints[2] = { MPI_INT, MPI_INT };
    MPI_Type_create_struct(2, bl, swapped, ints, &t);
    EXPECT(!dense(t), "struct {int@4, int@0}: signature order is not memory order");
    MPI_Type_free(&t);
    MPI_Type_create_struct(2, bl, ordered, ints, &t);
    EXPECT(dense(t), "struct {int@0, int@4} is dense");
    MPI_Type_free(&t);
    MPI_Type_create_hindexed(2, bl, ordered, MPI_INT, &t);
    EXPECT(dense(t), "hindexed blocks in order are dense");
    MPI_Type_free(&t);

    /* pack / unpack round trip of a strided type leaves the holes alone */
    MPI_Type_vector(2, 1, 3, MPI_INT, &t);
    MPI_Type_commit(&t);
    int src[6] = { 1, -1, -1, 2, -1, -1 }, dst[6] = { 7, 7, 7, 7, 7, 7 };
    char packed[8];
    ct_type_t g;
    ct_type(t, &g);
    int rc = ct_pack_stream(src, 1, t, &g, packed, MPI_COMM_SELF);
    int first, second;
    memcpy(&first, packed, 4);
    memcpy(&second, packed + 4, 4);
    EXPECT(rc == MPI_SUCCESS && first == 1 && second == 2, "pack: rc %d, %d %d", rc, first,
           second);
    rc = ct_unpack_stream(packed, dst, 1, t, &g, MPI_COMM_SELF);
    EXPECT(rc == MPI_SUCCESS && dst[0] == 1 && dst[3] == 2 && dst[1] == 7 && dst[2] == 7,
           "unpack: rc %d, %d %d %d %d", rc, dst[0], dst[1], dst[2], dst[3]);
    MPI_Type_free(&t);
}

/* Arguments MPI ignores may hold garbage; significant ones are checked. */
static void test_ignored_arguments(void) {
    ct_choice_t c;
    int in = 5, out[1] = { 0 };
    const char *gathers[] = { "linear", "binomial" };
    for (int i = 0; i < 2; i++) {
        ct_choice_parse(CT_GATHER, gathers[i], &c);
        out[0] = 9;
        int rc = ct_gather(&c, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, out, 1, MPI_INT, 0,
                           MPI_COMM_SELF);
        EXPECT(rc == MPI_SUCCESS && out[0] == 9,
               "gather/%s in place with garbage send arguments: rc %d (%s)", gathers[i], rc,
               ct_last_error());
        rc = ct_gather(&c, &in, 1, MPI_INT, out, -1, MPI_INT, 0, MPI_COMM_SELF);
        EXPECT(rc == MPI_ERR_COUNT && contains(ct_last_error(), "recvcount -1"),
               "gather: a negative recvcount at the root must be refused: %d %s", rc,
               ct_last_error());
    }
    ct_choice_parse(CT_ALLGATHER, "ring", &c);
    out[0] = 4;
    int rc = ct_allgather(&c, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, out, 1, MPI_INT,
                          MPI_COMM_SELF);
    EXPECT(rc == MPI_SUCCESS && out[0] == 4, "allgather in place with garbage: %d %s", rc,
           ct_last_error());
    ct_choice_parse(CT_BCAST, "linear", &c);
    rc = ct_bcast(&c, out, 1, MPI_INT, 0, MPI_COMM_NULL);
    EXPECT(rc == MPI_ERR_COMM && contains(ct_last_error(), "MPI_COMM_NULL"),
           "MPI_COMM_NULL: %d %s", rc, ct_last_error());
}

/* bench_stats.c on known arrays */
static void test_bench_stats(void) {
    const double four[] = { 1, 2, 3, 4 };
    EXPECT(near(ct_quantile_sorted(four, 4, 0.5), 2.5), "median of 1..4: %g",
           ct_quantile_sorted(four, 4, 0.5));
    /* position 0.9 * 3 = 2.7: 3 + 0.7 * (4 - 3) */
    EXPECT(near(ct_quantile_sorted(four, 4, 0.9), 3.7), "p90 of 1..4: %g",
           ct_quantile_sorted(four, 4, 0.9));
    EXPECT(near(ct_quantile_sorted(four, 4, 0.99), 3.97), "p99 of 1..4: %g",
           ct_quantile_sorted(four, 4, 0.99));
    EXPECT(ct_quantile_sorted(four, 4, 0) == 1 && ct_quantile_sorted(four, 4, 1) == 4,
           "quantiles 0 and 1 are the extremes");
    EXPECT(ct_quantile_sorted(four + 2, 1, 0.9) == 3, "quantile of one value");

    /* unsorted input, not modified; sorted: 2 4 4 4 5 5 7 9, mean 5,
     * squared deviations 32, sample variance 32/7 */
    double v[] = { 9, 2, 5, 4, 4, 7, 4, 5 };
    ct_stats_t st;
    EXPECT(ct_stats_compute(v, 8, &st) == 0 && st.n == 8, "stats of 8 values");
    EXPECT(st.min == 2 && st.max == 9 && near(st.mean, 5), "min %g max %g mean %g", st.min,
           st.max, st.mean);
    EXPECT(near(st.median, 4.5), "median %g, want 4.5", st.median);
    EXPECT(near(st.p90, 7.6), "p90 %g, want 7.6 (position 6.3)", st.p90);
    EXPECT(near(st.p99, 7 + 0.93 * 2), "p99 %g, want 8.86", st.p99);
    EXPECT(near(st.stddev, sqrt(32.0 / 7)), "stddev %g, want %g", st.stddev, sqrt(32.0 / 7));
    EXPECT(v[0] == 9 && v[1] == 2 && v[7] == 5, "input array was modified");
    double one = 3.25;
    EXPECT(ct_stats_compute(&one, 1, &st) == 0 && st.n == 1 && st.median == 3.25 &&
               st.stddev == 0 && st.p99 == 3.25,
           "one sample: median %g stddev %g", st.median, st.stddev);
    EXPECT(ct_stats_compute(v, 0, &st) == 0 && st.n == 0 && isnan(st.median) && isnan(st.mean),
           "no samples must give n = 0 and NaN statistics");

    /* clock offset: the round with the smallest round trip (round 1, rtt 1.5) */
    const double t0[] = { 0, 10, 20 }, t1[] = { 4, 11.5, 26 }, tr[] = { 103, 110.75, 121 };
    double off = 0, rtt = 0;
    EXPECT(ct_clock_offset(t0, tr, t1, 3, &off, &rtt) == 1 && near(off, 100) && near(rtt, 1.5),
           "clock offset %g rtt %g, want 100 and 1.5", off, rtt);
    EXPECT(ct_clock_offset(t0, tr, t1, 0, &off, &rtt) == -1, "no rounds must give -1");

    /* time budget: 1 s over 2 repetitions at 1 ms per call, warm-up a tenth: 500 / 1.1 */
    EXPECT(ct_budget_iterations(1.0, 1e-3, 2, -1, 1000000) == 454, "budget iterations %ld",
           ct_budget_iterations(1.0, 1e-3, 2, -1, 1000000));
    EXPECT(ct_budget_iterations(1.0, 1e-3, 2, 50, 1000000) == 450, "budget with warm-up 50: %ld",
           ct_budget_iterations(1.0, 1e-3, 2, 50, 1000000));
    EXPECT(ct_budget_iterations(10, 1e-9, 1, -1, 1000) == 1000, "cap not applied");
    EXPECT(ct_budget_iterations(1e-6, 1.0, 3, -1, 1000) == 1, "at least one iteration");
}

/* ct_inner_value from several threads at once: every thread gets the same handle for
 * the same inner choice (one process-wide table, interned under its lock) */
enum { INNER_THREADS = 8, INNER_SPECS = 6 };
static const char *inner_specs[INNER_SPECS] = {
    "hier:inter=chain:segsize=777", "hier:inter=chain:segsize=778+fanout=3",
    "hier:inter=knomial:radix=5", "hier:inter=knomial:radix=6+segsize=99",
    "hier_ml:inter=pipeline:segsize=779", "hier:intra=binary:segsize=780" };
static long inner_got[INNER_THREADS][INNER_SPECS];
static void *inner_thread(void *arg) {
    long t = (long)(size_t)arg;
    for (int k = 0; k < INNER_SPECS; k++) {
        int i = (int)((k + t) % INNER_SPECS); /* different orders in different threads */
        ct_choice_t c;
        inner_got[t][i] = ct_choice_parse(CT_BCAST, inner_specs[i], &c) == MPI_SUCCESS
                              ? c.params.v[strstr(inner_specs[i], "intra") ? CT_P_INTRA
                                                                           : CT_P_INTER]
                              : -1;
    }
    return NULL;
}
static void test_inner_threads(void) {
    pthread_t tid[INNER_THREADS];
    for (long t = 0; t < INNER_THREADS; t++)
        pthread_create(&tid[t], NULL, inner_thread, (void *)(size_t)t);
    for (int t = 0; t < INNER_THREADS; t++) pthread_join(tid[t], NULL);
    for (int i = 0; i < INNER_SPECS; i++) {
        int same = 1;
        for (int t = 1; t < INNER_THREADS; t++) same &= inner_got[t][i] == inner_got[0][i];
        EXPECT(inner_got[0][i] >= CT_INNER_BASE && same, "%s: handles differ over threads",
               inner_specs[i]);
        for (int j = 0; j < i; j++)
            EXPECT(inner_got[0][i] != inner_got[0][j], "%s and %s share a handle",
                   inner_specs[i], inner_specs[j]);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    ct_choice_t c;
    int rc;

    /* every visible entry has a unique (collective, name), a summary, and a
     * cost formula unless it is native; fallbacks exist and have no constraint
     * cycle; parameter defaults lie in their ranges */
    for (int i = 0; i < ct_algo_count(); i++) {
        const ct_algo_t *a = ct_algo_get(i);
        EXPECT(ct_algo_find(a->coll, a->name) == i, "duplicate name %s", a->name);
        EXPECT(a->summary && *a->summary, "%s has no summary", a->name);
        EXPECT(strcmp(a->name, "native") == 0 || a->cost, "%s has no cost formula", a->name);
        EXPECT(!a->constraints || (a->constraints & ~CT_HIDDEN) == 0 ||
                   ct_algo_find(a->coll, a->fallback) >= 0,
               "%s/%s: constraint without a valid fallback", ct_coll_name(a->coll), a->name);
        EXPECT(ct_choice_default(i, &c) == MPI_SUCCESS && ct_choice_check(&c) == MPI_SUCCESS,
               "%s/%s: defaults invalid: %s", ct_coll_name(a->coll), a->name, ct_last_error());
    }
    /* the algorithms the project promises */
    const char *bcast[] = { "native", "linear", "linear_nb", "chain", "pipeline", "binary",
                            "split_binary", "binomial", "knomial", "scatter_allgather",
                            "scatter_ring_allgather" };
    const char *reduce[] = { "native", "linear", "chain", "pipeline", "binary", "binomial",
                             "in_order_binary", "rabenseifner" };
    for (size_t i = 0; i < sizeof bcast / sizeof *bcast; i++)
        EXPECT(ct_algo_find(CT_BCAST, bcast[i]) >= 0, "bcast/%s missing", bcast[i]);
    for (size_t i = 0; i < sizeof reduce / sizeof *reduce; i++)
        EXPECT(ct_algo_find(CT_REDUCE, reduce[i]) >= 0, "reduce/%s missing", reduce[i]);

    /* parsing */
    rc = ct_choice_parse(CT_BCAST, "chain:segsize=4096,fanout=2", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_SEGSIZE] == 4096 && c.params.v[CT_P_FANOUT] == 2,
           "chain params not parsed: %s", ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "chain:segsize=8k", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_SEGSIZE] == 8192, "8k suffix: %s", ct_last_error());
    char buf[128];
    ct_choice_format(&c, buf, sizeof buf);
    EXPECT(!strcmp(buf, "chain:segsize=8192,fanout=4"), "format gave %s", buf);

    /* segsize=auto: the default of the segmented trees, written back as auto; an
     * explicit value wins; auto only where it is the default */
    rc = ct_choice_parse(CT_BCAST, "chain", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_SEGSIZE] == CT_SEGSIZE_AUTO,
           "chain default segsize %ld", c.params.v[CT_P_SEGSIZE]);
    ct_choice_format(&c, buf, sizeof buf);
    EXPECT(!strcmp(buf, "chain:segsize=auto,fanout=4"), "format gave %s", buf);
    rc = ct_choice_parse(CT_REDUCE, "pipeline:segsize=0", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_SEGSIZE] == 0, "explicit 0: %s", ct_last_error());
    rc = ct_choice_parse(CT_REDUCE, "in_order_binary:segsize=auto", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_SEGSIZE] == CT_SEGSIZE_AUTO, "auto: %s",
           ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "binomial:segsize=auto", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "segsize=auto") &&
               contains(ct_last_error(), "no segment-size rule"),
           "auto on binomial: %s", ct_last_error());
    {
        int ch = ct_algo_find(CT_BCAST, "chain"), pl = ct_algo_find(CT_BCAST, "pipeline");
        int bi = ct_algo_find(CT_BCAST, "binomial");
        EXPECT(ct_segsize_resolve(ch, 4, 1 << 20, 2) == 0, "chain np 2 segmented");
        EXPECT(ct_segsize_resolve(pl, 1, 8, 8) == 0, "pipeline 8 B segmented");
        EXPECT(ct_segsize_resolve(pl, 1, 1 << 20, 8) == 32768, "pipeline 1 MiB np 8: %ld",
               ct_segsize_resolve(pl, 1, 1 << 20, 8));
        EXPECT(ct_segsize_resolve(bi, 1, 1 << 20, 8) == 0, "binomial has no rule");
    }

    /* bad arguments: an MPI error code and a message saying what is valid */
    rc = ct_choice_parse(CT_BCAST, "bogus", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "unknown bcast algorithm 'bogus'") &&
               contains(ct_last_error(), "binomial") && !contains(ct_last_error(), "_broken"),
           "unknown name message: %s", ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "chain:segsize=-1", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "segsize=-1") &&
               contains(ct_last_error(), "0..") ,
           "negative segsize message: %s", ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "knomial:radix=1", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "radix=1") &&
               contains(ct_last_error(), "2..64"),
           "radix message: %s", ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "binomial:fanout=2", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "no parameter 'fanout'") &&
               contains(ct_last_error(), "segsize"),
           "wrong parameter message: %s", ct_last_error());
    rc = ct_choice_parse(CT_BCAST, "chain:segsize=abc", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "not an integer"), "non-integer: %s",
           ct_last_error());
    rc = ct_choice_parse(CT_ALLREDUCE, "reduce_bcast:reduce=nope", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "unknown reduce algorithm 'nope'"),
           "inner algorithm message: %s", ct_last_error());

    /* remap: the dispatcher's parameter on every Bcast/Reduce/Allgather/Allreduce
     * algorithm, formatted only when set, refused on Gather and with bad values */
    rc = ct_choice_parse(CT_ALLGATHER, "ring:remap=rr", &c);
    EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_REMAP] == CT_REMAP_RR, "remap=rr: %s",
           ct_last_error());
    ct_choice_format(&c, buf, sizeof buf);
    EXPECT(!strcmp(buf, "ring:remap=rr"), "remap format gave %s", buf);
    rc = ct_choice_parse(CT_BCAST, "chain:remap=auto,segsize=1k", &c);
    ct_choice_format(&c, buf, sizeof buf);
    EXPECT(rc == MPI_SUCCESS && !strcmp(buf, "chain:segsize=1024,fanout=4,remap=auto"),
           "remap with params gave %s (%s)", buf, ct_last_error());
    rc = ct_choice_parse(CT_ALLREDUCE, "ring:remap=sideways", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "none, seq, rr, auto"),
           "bad remap message: %s", ct_last_error());
    rc = ct_choice_parse(CT_GATHER, "linear:remap=seq", &c);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "no parameter 'remap'"),
           "gather remap message: %s", ct_last_error());

    /* inner algorithms with parameters of their own (ALG:key=value+key=value): one
     * interned handle per distinct choice, formatted back the same way; an inner choice
     * equal to the algorithm's defaults is its registry index */
    {
        char again[256], big[256];
        ct_choice_t d, in;
        rc = ct_choice_parse(CT_BCAST, "hier_ml:inter=pipeline:segsize=8192,leaders=4", &c);
        EXPECT(rc == MPI_SUCCESS && c.params.v[CT_P_INTER] >= CT_INNER_BASE &&
                   c.params.v[CT_P_LEADERS] == 4,
               "inner params: %s", ct_last_error());
        EXPECT(ct_inner_choice(c.params.v[CT_P_INTER], &in) == MPI_SUCCESS &&
                   in.algo == ct_algo_find(CT_BCAST, "pipeline") &&
                   in.params.v[CT_P_SEGSIZE] == 8192,
               "inner choice: %s", ct_last_error());
        ct_choice_format(&c, big, sizeof big);
        EXPECT(!strcmp(big, "hier_ml:inter=pipeline:segsize=8192,leaders=4,vppn=0,segsize=0"),
               "inner format gave %s", big);
        rc = ct_choice_parse(CT_BCAST, big, &d);
        ct_choice_format(&d, again, sizeof again);
        EXPECT(rc == MPI_SUCCESS && d.params.v[CT_P_INTER] == c.params.v[CT_P_INTER] &&
                   !strcmp(again, big),
               "inner round trip: %s -> %s (%s)", big, again, ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:inter=knomial:radix=8+segsize=4k,intra=shm", &c);
        ct_choice_format(&c, big, sizeof big);
        EXPECT(rc == MPI_SUCCESS &&
                   !strcmp(big, "hier:inter=knomial:radix=8+segsize=4096,intra=shm,vppn=0,"
                                "segsize=0"),
               "two inner params gave %s (%s)", big, ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:inter=pipeline:segsize=auto", &c);
        EXPECT(rc == MPI_SUCCESS &&
                   c.params.v[CT_P_INTER] == ct_algo_find(CT_BCAST, "pipeline"),
               "default inner params not an index: %ld", c.params.v[CT_P_INTER]);
        rc = ct_choice_parse(CT_ALLREDUCE, "reduce_bcast:reduce=chain:segsize=1k+fanout=3,"
                             "bcast=knomial:radix=3", &c);
        ct_choice_format(&c, big, sizeof big);
        EXPECT(rc == MPI_SUCCESS && !strcmp(big, "reduce_bcast:reduce=chain:segsize=1024+"
                                                 "fanout=3,bcast=knomial:radix=3+segsize=0"),
               "reduce_bcast inner params gave %s (%s)", big, ct_last_error());
        rc = ct_choice_parse(CT_ALLREDUCE, "hier:inter=reduce_bcast:reduce=chain+bcast=binary",
                             &c);
        ct_choice_format(&c, big, sizeof big);
        EXPECT(rc == MPI_SUCCESS && contains(big, "inter=reduce_bcast:reduce=chain+"
                                                  "bcast=binary,intra=binomial"),
               "an inner composite's inner names gave %s (%s)", big, ct_last_error());
        /* errors name the outer parameter and what is valid */
        rc = ct_choice_parse(CT_BCAST, "hier:inter=knomial:fanout=2", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "inter=knomial:fanout=2") &&
                   contains(ct_last_error(), "no parameter 'fanout'") &&
                   contains(ct_last_error(), "radix"),
               "inner wrong parameter: %s", ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:inter=knomial:radix=1", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "2..64"), "inner range: %s",
               ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:inter=hier_ml:leaders=2", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "cannot itself be hierarchical"),
               "hierarchical inner: %s", ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:intra=binomial:remap=rr", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "remap does not apply"),
               "inner remap: %s", ct_last_error());
        rc = ct_choice_parse(CT_ALLREDUCE, "hier:inter=reduce_bcast:reduce=chain:segsize=8", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "take no parameters"),
               "two levels of inner params: %s", ct_last_error());
        rc = ct_choice_parse(CT_BCAST, "hier:inter=knomal:radix=3", &c);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "unknown bcast algorithm 'knomal'")
                   && contains(ct_last_error(), "did you mean 'knomial'"),
               "inner unknown name: %s", ct_last_error());
        c.params.v[CT_P_INTER] = CT_INNER_BASE + CT_INNER_MAX; /* no such handle */
        EXPECT(ct_choice_check(&c) == MPI_ERR_ARG, "a garbage handle passed the check");
    }
    EXPECT(ct_remap_auto(ct_algo_find(CT_ALLGATHER, "recursive_doubling")) == CT_REMAP_RR &&
               ct_remap_auto(ct_algo_find(CT_ALLGATHER, "ring")) == CT_REMAP_SEQ &&
               ct_remap_auto(ct_algo_find(CT_BCAST, "linear")) == CT_REMAP_NONE,
           "remap=auto table");
    /* the shared remap scratch and timing only (copies and reductions charged, not
     * done) are for SMPI timing runs only */
    smpi_only_switch(ct_remap_shared_scratch, "shared remap scratch");
    smpi_only_switch(ct_sim_timing_only, "timing only");
#ifdef SMPI_SHARED_MALLOC
    {
        int from[4] = {1, 2, 3, 4}, to[4] = {0, 0, 0, 0};
        EXPECT(ct_sim_timing_only(1) == MPI_SUCCESS && ct_copy(from, to, 4, MPI_INT) ==
                   MPI_SUCCESS && to[3] == 0, "timing only: the copy is not done");
        EXPECT(ct_sim_timing_only(0) == MPI_SUCCESS && ct_copy(from, to, 4, MPI_INT) ==
                   MPI_SUCCESS && to[3] == 4, "timing only off: the copy is done");
    }
#endif

    /* a hand-made choice out of range is refused by the dispatcher too */
    ct_choice_parse(CT_BCAST, "knomial", &c);
    c.params.v[CT_P_RADIX] = 0;
    int x = 1;
    rc = ct_bcast(&c, &x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "radix=0"), "dispatch radix: %d %s",
           rc, ct_last_error());
    ct_choice_parse(CT_BCAST, "binomial", &c);
    rc = ct_bcast(&c, &x, 1, MPI_INT, 5, MPI_COMM_WORLD);
    EXPECT(rc == MPI_ERR_ROOT, "bad root gave %d", rc);
    rc = ct_bcast(&c, &x, -1, MPI_INT, 0, MPI_COMM_WORLD);
    EXPECT(rc == MPI_ERR_COUNT, "negative count gave %d", rc);
    ct_choice_parse(CT_REDUCE, "binomial", &c);
    rc = ct_bcast(&c, &x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "used for a bcast"),
           "reduce algorithm used as bcast: %s", ct_last_error());

    /* Gatherv and Scatterv: the root's count arrays are checked at the root */
    {
        int cnt[1] = { 1 }, neg[1] = { -2 }, dsp[1] = { 0 }, y = 0;
        ct_choice_parse(CT_GATHERV, "binomial", &c);
        rc = ct_gatherv(&c, &x, 1, MPI_INT, &y, cnt, dsp, MPI_INT, 3, MPI_COMM_WORLD);
        EXPECT(rc == MPI_ERR_ROOT && contains(ct_last_error(), "gatherv: root 3"),
               "gatherv bad root: %d %s", rc, ct_last_error());
        rc = ct_gatherv(&c, &x, 1, MPI_INT, &y, neg, dsp, MPI_INT, 0, MPI_COMM_WORLD);
        EXPECT(rc == MPI_ERR_COUNT && contains(ct_last_error(), "recvcounts[0] = -2"),
               "gatherv negative count: %d %s", rc, ct_last_error());
        rc = ct_gatherv(&c, &x, 1, MPI_INT, &y, NULL, dsp, MPI_INT, 0, MPI_COMM_WORLD);
        EXPECT(rc == MPI_ERR_ARG, "gatherv NULL counts at the root gave %d", rc);
        rc = ct_gatherv(&c, &x, 1, MPI_INT, &y, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
        EXPECT(rc == MPI_SUCCESS && y == x, "gatherv at one process: %d, y %d", rc, y);
        ct_choice_parse(CT_SCATTERV, "binomial", &c);
        rc = ct_scatterv(&c, &x, cnt, dsp, MPI_INT, &y, -1, MPI_INT, 0, MPI_COMM_WORLD);
        EXPECT(rc == MPI_ERR_COUNT && contains(ct_last_error(), "scatterv: recvcount -1"),
               "scatterv negative recvcount: %d %s", rc, ct_last_error());
        ct_choice_parse(CT_GATHER, "binomial", &c);
        rc = ct_gatherv(&c, &x, 1, MPI_INT, &y, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
        EXPECT(rc == MPI_ERR_ARG && contains(ct_last_error(), "used for a gatherv"),
               "gather algorithm used as gatherv: %s", ct_last_error());
    }

    /* a declared fallback is taken and reported: commutative-only algorithm,
     * non-commutative op */
    MPI_Op noncomm;
    MPI_Op_create(int_sum, 0, &noncomm);
    ct_set_fallback_hook(on_fallback);
    ct_choice_parse(CT_REDUCE, "binomial", &c);
    int in = 3, res = 0;
    rc = ct_reduce(&c, &in, &res, 1, MPI_INT, noncomm, 0, MPI_COMM_WORLD);
    const ct_dispatch_t *d = ct_last_dispatch();
    EXPECT(d->requested == ct_algo_find(CT_REDUCE, "binomial") &&
               d->used == ct_algo_find(CT_REDUCE, "in_order_binary") &&
               contains(d->reason, "not commutative") && hook_calls == 1,
           "fallback not reported: used %d reason '%s' hook %d", d->used, d->reason, hook_calls);
    EXPECT(rc == MPI_SUCCESS && res == 3, "fallback result %d rc %d", res, rc);
    rc = ct_reduce(&c, &in, &res, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    EXPECT(ct_last_dispatch()->used == c.algo && ct_last_dispatch()->reason[0] == '\0',
           "commutative op should not fall back: %s", ct_last_dispatch()->reason);
    MPI_Op_free(&noncomm);

    test_dense();
    test_ignored_arguments();
    test_bench_stats();
    test_inner_threads();

    printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
