/*
 * verify.c -- colltune-verify: the correctness matrix.
 *
 * One launch (one process count) runs every case for the selected algorithms
 * and compares each result, byte for byte, with the MPI library's own
 * collective on the same inputs: outputs (holes of derived datatypes
 * included, so writes into holes are caught), untouched input buffers, and
 * untouched receive buffers where MPI says they are not significant.
 *
 * Inputs are chosen so every result is exact in any order of evaluation
 * (small integers, powers of two), so doubles compare exactly too; the one
 * non-commutative op (composition of affine maps) makes any reordering of a
 * reduction visible.
 *
 * Output (rank 0, stdout): JSON lines, one "algo" record per algorithm, one
 * "fail" record per failing case (naming algorithm, np, root, count, type,
 * op, parameters, in-place), one "summary" record. Exit status 1 on failure.
 */
#include "driver_common.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- datatypes and ops under test ---------------------------------------- */
enum { T_CHAR, T_INT, T_DOUBLE, T_VEC, NTYPES };
static const char *type_names[NTYPES] = { "char", "int", "double", "vec" };
static MPI_Datatype types[NTYPES];
/* vec: 2 ints at byte offsets 0 and 12 (MPI_Type_vector(2,1,3,MPI_INT)),
 * resized to an extent of 20 bytes: holes inside and between elements. */
#define VEC_EXTENT 20
#define VEC_OFF1 12

enum { O_SUM, O_MAX, O_PROD, O_NONCOMM, NOPS };
static const char *op_names[NOPS] = { "sum", "max", "prod", "noncommutative" };
static MPI_Op ops[NOPS];

/* Affine maps x -> a*x + b modulo M, composed left to right:
 * (a1,b1) . (a2,b2) = (a1*a2, a2*b1 + b2): associative, not commutative. */
static void compose(uint32_t l, uint32_t r, uint32_t *out, unsigned bits) {
    uint32_t m = (1u << bits) - 1;
    uint32_t a1 = (l >> bits) & m, b1 = l & m, a2 = (r >> bits) & m, b2 = r & m;
    *out = (((a1 * a2) & m) << bits) | ((a2 * b1 + b2) & m);
}

static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    char *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        if (*dt == MPI_SIGNED_CHAR) {
            uint32_t l = (unsigned char)x[i], r = (unsigned char)y[i], o;
            compose(l, r, &o, 4);
            y[i] = (char)(unsigned char)o;
        } else if (*dt == MPI_INT) {
            uint32_t l, r, o;
            memcpy(&l, x + 4 * i, 4);
            memcpy(&r, y + 4 * i, 4);
            compose(l, r, &o, 16);
            memcpy(y + 4 * i, &o, 4);
        } else if (*dt == MPI_DOUBLE) {
            double l, r;
            memcpy(&l, x + 8 * i, 8);
            memcpy(&r, y + 8 * i, 8);
            uint32_t o;
            compose((uint32_t)l, (uint32_t)r, &o, 16);
            double d = (double)o;
            memcpy(y + 8 * i, &d, 8);
        } else if (*dt == types[T_VEC]) {
            for (int j = 0; j < 2; j++) {
                size_t off = (size_t)i * VEC_EXTENT + (j ? VEC_OFF1 : 0);
                uint32_t l, r, o;
                memcpy(&l, x + off, 4);
                memcpy(&r, y + off, 4);
                compose(l, r, &o, 16);
                memcpy(y + off, &o, 4);
            }
        } else {
            fprintf(stderr, "verify: non-commutative op called with an unexpected datatype\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

/* Commutative user op (sum of ints) for the derived type: MPI's predefined
 * ops are only defined on predefined datatypes. */
static void vec_sum_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    char *x = in, *y = inout;
    (void)dt;
    for (int i = 0; i < *len; i++)
        for (int j = 0; j < 2; j++) {
            size_t off = (size_t)i * VEC_EXTENT + (j ? VEC_OFF1 : 0);
            int32_t l, r;
            memcpy(&l, x + off, 4);
            memcpy(&r, y + off, 4);
            r = (int32_t)((uint32_t)l + (uint32_t)r);
            memcpy(y + off, &r, 4);
        }
}
static MPI_Op vec_sum;

/* The op of a case: on the derived type, sum is a user-defined commutative op
 * and max/prod are not tested (MPI does not define them there). */
static MPI_Op case_op(int t, int o);

/* ---- inputs ---------------------------------------------------------------- */
#define SENTINEL 0x5A

static int scalars_per_elem(int t) { return t == T_VEC ? 2 : 1; }

static size_t scalar_offset(int t, long i, int j) {
    switch (t) {
    case T_CHAR: return (size_t)i;
    case T_INT: return (size_t)i * 4;
    case T_DOUBLE: return (size_t)i * 8;
    default: return (size_t)i * VEC_EXTENT + (j ? VEC_OFF1 : 0);
    }
}

static size_t type_extent(int t) {
    return t == T_CHAR ? 1 : t == T_INT ? 4 : t == T_DOUBLE ? 8 : VEC_EXTENT;
}

static uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ c * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return h;
}

/* Value of scalar k of process `who` for op `o`, stored in type t. */
static void put_value(char *buf, int t, long i, int j, int o, int who, uint32_t salt) {
    uint32_t h = hash3((uint32_t)who, (uint32_t)(i * 2 + j), salt);
    long v;
    double dv;
    if (o == O_NONCOMM) {
        unsigned bits = t == T_CHAR ? 4 : 16;
        uint32_t m = (1u << bits) - 1;
        uint32_t a = ((h >> 8) | 1u) & m, b = (h >> 20) & m;
        uint32_t enc = (a << bits) | b;
        v = (long)enc;
        dv = (double)enc;
    } else if (o == O_PROD) {
        static const int ip[4] = { 1, -1, 2, 1 };
        static const double dp[4] = { 1, -1, 2, 0.5 };
        v = ip[h % 4];
        dv = dp[h % 4];
    } else {
        v = t == T_CHAR ? (long)(h % 7) - 3 : (long)(h % 101) - 50;
        dv = (double)v;
    }
    char *p = buf + scalar_offset(t, i, j);
    if (t == T_CHAR) *p = (char)(signed char)v;
    else if (t == T_DOUBLE) memcpy(p, &dv, 8);
    else {
        int32_t iv = (int32_t)(uint32_t)v;
        memcpy(p, &iv, 4);
    }
}

/* count elements of process `who` at buf (holes left alone). */
static void fill(char *buf, int t, long count, int o, int who, uint32_t salt) {
    for (long i = 0; i < count; i++)
        for (int j = 0; j < scalars_per_elem(t); j++) put_value(buf, t, i, j, o, who, salt);
}

static char *alloc_region(size_t bytes) {
    char *b = malloc(bytes ? bytes : 1);
    if (!b) {
        fprintf(stderr, "verify: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(b, SENTINEL, bytes ? bytes : 1);
    return b;
}

static int has_reduction(ct_coll_t c) { return c == CT_REDUCE || c == CT_ALLREDUCE; }

/* ---- case description and reporting -------------------------------------- */
typedef struct {
    ct_coll_t coll;
    ct_choice_t choice;
    int root, count, t, o, inplace;
    MPI_Comm comm;      /* MPI_COMM_WORLD, or MPI_COMM_SELF (family "self") */
    int garbage;        /* ignored arguments filled with garbage (family "garbage") */
    const char *family; /* NULL: the main matrix */
    char tdesc[64];     /* type description when not type_names[t] (family "mixed") */
} vcase_t;

static int rank, nprocs;
static long cases_run, cases_failed;
static int max_fail_print = 20;
static int printed_fail;

static void describe_value(char *out, size_t len, const char *buf, int t, long elem) {
    if (t == T_CHAR) snprintf(out, len, "%d", (signed char)buf[elem]);
    else if (t == T_INT) {
        int32_t v;
        memcpy(&v, buf + elem * 4, 4);
        snprintf(out, len, "%d", v);
    } else if (t == T_DOUBLE) {
        double v;
        memcpy(&v, buf + elem * 8, 8);
        snprintf(out, len, "%.17g", v);
    } else {
        int32_t a, b;
        memcpy(&a, buf + elem * VEC_EXTENT, 4);
        memcpy(&b, buf + elem * VEC_EXTENT + VEC_OFF1, 4);
        snprintf(out, len, "(%d,%d)", a, b);
    }
}

/* First differing byte between got and want, or -1. */
static long first_diff(const char *got, const char *want, size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        if (got[i] != want[i]) return (long)i;
    return -1;
}

/* Local verdict of one process for one case. */
typedef struct {
    int bad;
    char msg[400];
} verdict_t;

static void verdict(verdict_t *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void verdict(verdict_t *v, const char *fmt, ...) {
    if (v->bad) return; /* keep the first problem */
    v->bad = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

/* Compare a buffer of count elements of type t (byte-exact, holes included). */
static void compare(verdict_t *v, const char *what, const char *got, const char *want, int t,
                    long count) {
    size_t bytes = (size_t)count * type_extent(t);
    long d = first_diff(got, want, bytes);
    if (d < 0) return;
    long elem = d / (long)type_extent(t);
    long in_elem = d % (long)type_extent(t);
    int in_hole = t == T_VEC && !((in_elem >= 0 && in_elem < 4) ||
                                  (in_elem >= VEC_OFF1 && in_elem < VEC_OFF1 + 4));
    char g[64], w[64];
    describe_value(g, sizeof g, got, t, elem);
    describe_value(w, sizeof w, want, t, elem);
    verdict(v, "%s: element %ld%s: got %s, expected %s", what, elem,
            in_hole ? " (a hole of the datatype was written)" : "", g, w);
}

static void report(const vcase_t *c, verdict_t *mine) {
    int bad = mine->bad, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    cases_run++;
    if (!anybad) return;
    cases_failed++;
    /* lowest failing rank tells its story to rank 0 */
    int first = bad ? rank : nprocs;
    int lowest;
    MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char msg[400];
    if (rank == lowest) memcpy(msg, mine->msg, sizeof msg);
    if (lowest != 0) {
        if (rank == lowest) MPI_Send(msg, sizeof msg, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
        if (rank == 0)
            MPI_Recv(msg, sizeof msg, MPI_CHAR, lowest, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank != 0 || printed_fail >= max_fail_print) return;
    printed_fail++;
    char spec[256];
    ct_choice_format(&c->choice, spec, sizeof spec);
    printf("{\"event\": \"fail\", \"collective\": \"%s\", \"algorithm\": ", ct_coll_name(c->coll));
    ct_json_str(stdout, ct_algo_get(c->choice.algo)->name);
    printf(", \"spec\": ");
    ct_json_str(stdout, spec);
    printf(", \"family\": \"%s\", \"comm\": \"%s\"", c->family ? c->family : "main",
           c->comm == MPI_COMM_SELF ? "self" : "world");
    printf(", \"np\": %d, \"root\": %d, \"count\": %d, \"type\": \"%s\", \"op\": \"%s\", "
           "\"in_place\": %s, \"rank\": %d, \"message\": ",
           nprocs, c->root, c->count, c->tdesc[0] ? c->tdesc : type_names[c->t],
           !has_reduction(c->coll) ? "-" : (c->t == T_VEC && c->o == O_SUM) ? "sum (user-defined)" : op_names[c->o],
           c->inplace ? "true" : "false", lowest);
    ct_json_str(stdout, msg);
    printf("}\n");
    fflush(stdout);
}

/* ---- one case per collective ---------------------------------------------- */
static uint32_t salt_counter;

static void check_rc(verdict_t *v, int rc) {
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int l;
        MPI_Error_string(rc, es, &l);
        verdict(v, "returned error %d (%s): %s", rc, es, ct_last_error());
    }
}

static void run_bcast(const vcase_t *c) {
    verdict_t v = { 0, "" };
    int cr;
    MPI_Comm_rank(c->comm, &cr);
    size_t bytes = (size_t)c->count * type_extent(c->t);
    uint32_t salt = ++salt_counter;
    char *bn = alloc_region(bytes), *bo = alloc_region(bytes);
    if (cr == c->root) {
        fill(bn, c->t, c->count, O_SUM, c->root, salt);
        fill(bo, c->t, c->count, O_SUM, c->root, salt);
    }
    MPI_Bcast(bn, c->count, types[c->t], c->root, c->comm);
    check_rc(&v, ct_bcast(&c->choice, bo, c->count, types[c->t], c->root, c->comm));
    compare(&v, cr == c->root ? "root buffer changed" : "result", bo, bn, c->t, c->count);
    report(c, &v);
    free(bn);
    free(bo);
}

static void run_reduce(const vcase_t *c, int all) {
    verdict_t v = { 0, "" };
    int cr;
    MPI_Comm_rank(c->comm, &cr);
    size_t bytes = (size_t)c->count * type_extent(c->t);
    uint32_t salt = ++salt_counter;
    int is_root = all || cr == c->root;
    int inplace = c->inplace && is_root;
    char *in = alloc_region(bytes), *in_ref = alloc_region(bytes);
    char *rn = alloc_region(bytes), *ro = alloc_region(bytes), *sentinel = alloc_region(bytes);
    fill(in, c->t, c->count, c->o, rank, salt);
    memcpy(in_ref, in, bytes);
    if (inplace) {
        memcpy(rn, in, bytes);
        memcpy(ro, in, bytes);
    }
    const void *sn = inplace ? MPI_IN_PLACE : in;
    /* garbage: the receive buffer is not significant at a Reduce's non-roots */
    void *rb = c->garbage && !is_root ? NULL : ro;
    if (all) {
        MPI_Allreduce(sn, rn, c->count, types[c->t], case_op(c->t, c->o), c->comm);
        check_rc(&v, ct_allreduce(&c->choice, sn, rb, c->count, types[c->t], case_op(c->t, c->o),
                                  c->comm));
    } else {
        MPI_Reduce(sn, rn, c->count, types[c->t], case_op(c->t, c->o), c->root, c->comm);
        check_rc(&v, ct_reduce(&c->choice, sn, rb, c->count, types[c->t], case_op(c->t, c->o),
                               c->root, c->comm));
    }
    if (is_root) compare(&v, "result", ro, rn, c->t, c->count);
    else compare(&v, "receive buffer of a non-root process was written", ro, sentinel, c->t,
                 c->count);
    if (!inplace) compare(&v, "send buffer was modified", in, in_ref, c->t, c->count);
    report(c, &v);
    free(in);
    free(in_ref);
    free(rn);
    free(ro);
    free(sentinel);
}

static void run_gather(const vcase_t *c, int all) {
    verdict_t v = { 0, "" };
    int cr, cn;
    MPI_Comm_rank(c->comm, &cr);
    MPI_Comm_size(c->comm, &cn);
    size_t ext = type_extent(c->t);
    size_t bytes = (size_t)c->count * ext, total = bytes * (size_t)cn;
    uint32_t salt = ++salt_counter;
    int is_root = all || cr == c->root;
    int inplace = c->inplace && is_root;
    char *in = alloc_region(bytes), *in_ref = alloc_region(bytes);
    char *rn = alloc_region(total), *ro = alloc_region(total), *sentinel = alloc_region(total);
    fill(in, c->t, c->count, O_SUM, rank, salt);
    memcpy(in_ref, in, bytes);
    if (inplace) {
        memcpy(rn + (size_t)cr * bytes, in, bytes);
        memcpy(ro + (size_t)cr * bytes, in, bytes);
    }
    const void *sn = inplace ? MPI_IN_PLACE : in;
    MPI_Datatype dt = types[c->t];
    /* garbage in the arguments MPI ignores: the send count and type with
     * MPI_IN_PLACE, the receive buffer, count and type at a Gather's non-roots */
    int sc = c->count, rc = c->count;
    MPI_Datatype sd = dt, rd = dt;
    void *rb = ro;
    if (c->garbage && inplace) {
        sc = -1;
        sd = MPI_DATATYPE_NULL;
    }
    if (c->garbage && !is_root) {
        rb = NULL;
        rc = -1;
        rd = MPI_DATATYPE_NULL;
    }
    if (all) {
        MPI_Allgather(sn, c->count, dt, rn, c->count, dt, c->comm);
        check_rc(&v, ct_allgather(&c->choice, sn, sc, sd, rb, rc, rd, c->comm));
    } else {
        MPI_Gather(sn, c->count, dt, rn, c->count, dt, c->root, c->comm);
        check_rc(&v, ct_gather(&c->choice, sn, sc, sd, rb, rc, rd, c->root, c->comm));
    }
    if (is_root) compare(&v, "result", ro, rn, c->t, (long)c->count * cn);
    else compare(&v, "receive buffer of a non-root process was written", ro, sentinel, c->t,
                 (long)c->count * cn);
    if (!inplace) compare(&v, "send buffer was modified", in, in_ref, c->t, c->count);
    report(c, &v);
    free(in);
    free(in_ref);
    free(rn);
    free(ro);
    free(sentinel);
}

/* ---- family "mixed": different datatypes of one type signature ------------
 * MPI lets each rank describe a message with its own count and datatype as
 * long as the type signatures match. The message here is 2n ints; each rank
 * lays it out in one of these layouts, chosen per rank (and per role: send or
 * receive), and the result is compared byte for byte, holes included, with
 * the MPI library's own collective on the same layouts. n = 0 mixes 0 ints
 * with 3 elements of an empty datatype (zero bytes everywhere). */
enum { L_INT, L_VEC, L_SWAP, L_PAIR, L_EMPTY, NLAYOUTS };
static const char *lay_names[NLAYOUTS] = { "int", "vec", "swap", "pair", "empty" };
static MPI_Datatype lay_dt[NLAYOUTS];
/* swap: struct {int at byte 4, int at byte 0}: dense in size and extent, but
 * its signature order is not its memory order; pair: contiguous(2, int). */
#define NASSIGN 4

static int lay_count(int L, int pairs) {
    return L == L_EMPTY ? 3 : L == L_INT ? 2 * pairs : pairs;
}
static size_t lay_extent(int L) {
    return L == L_INT ? 4 : L == L_VEC ? VEC_EXTENT : L == L_EMPTY ? 0 : 8;
}
static size_t lay_bytes(int L, int pairs) { return (size_t)lay_count(L, pairs) * lay_extent(L); }
/* byte offset of int k of the signature */
static size_t lay_off(int L, long k) {
    switch (L) {
    case L_VEC: return (size_t)(k / 2) * VEC_EXTENT + (k % 2 ? VEC_OFF1 : 0);
    case L_SWAP: return (size_t)(k / 2) * 8 + (k % 2 ? 0 : 4);
    default: return (size_t)k * 4;
    }
}
static void lay_fill(char *buf, int L, int pairs, int who, uint32_t salt) {
    if (L == L_EMPTY) return;
    for (long k = 0; k < 2L * pairs; k++) {
        int32_t x = (int32_t)hash3((uint32_t)who, (uint32_t)k, salt);
        memcpy(buf + lay_off(L, k), &x, 4);
    }
}
/* The layout of relative rank `rel` in assignment a (n > 0); rel 0 is the root. */
static int lay_of(int a, int rel, int pairs) {
    if (pairs == 0) return rel % 2 ? L_EMPTY : L_INT;
    switch (a) {
    case 0: return rel == 0 ? L_VEC : L_INT; /* the root strided, the others plain */
    case 1: return rel == 0 ? L_INT : rel % 3 == 1 ? L_VEC : rel % 3 == 2 ? L_SWAP : L_PAIR;
    case 2: return rel == 0 ? L_SWAP : rel % 2 ? L_INT : L_VEC;
    default: return rel == 0 ? L_PAIR : rel % 2 ? L_SWAP : L_VEC;
    }
}

static void compare_bytes(verdict_t *v, const char *what, const char *got, const char *want,
                          size_t bytes) {
    long d = first_diff(got, want, bytes);
    if (d >= 0)
        verdict(v, "%s: byte %ld of %zu differs (got 0x%02x, expected 0x%02x)", what, d, bytes,
                (unsigned char)got[d], (unsigned char)want[d]);
}

static void mixed_desc(vcase_t *c, int a, int pairs) {
    if (pairs == 0) snprintf(c->tdesc, sizeof c->tdesc, "mixed: 0 int / 3 empty");
    else snprintf(c->tdesc, sizeof c->tdesc, "mixed %d: %d ints as %s/%s/%s/%s...", a,
                  2 * pairs, lay_names[lay_of(a, 0, pairs)], lay_names[lay_of(a, 1, pairs)],
                  lay_names[lay_of(a, 2, pairs)], lay_names[lay_of(a, 3, pairs)]);
}

/* c->count = n (pairs of ints); Bcast with every rank's own layout. */
static void run_mixed_bcast(vcase_t *c, int a) {
    verdict_t v = { 0, "" };
    const int pairs = c->count, rel = (rank - c->root + nprocs) % nprocs;
    const int L = lay_of(a, rel, pairs);
    size_t bytes = lay_bytes(L, pairs);
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    char *bn = alloc_region(bytes), *bo = alloc_region(bytes);
    if (rel == 0) {
        lay_fill(bn, L, pairs, c->root, salt);
        lay_fill(bo, L, pairs, c->root, salt);
    }
    /* zero bytes in different counts (0 ints, 3 empty elements): nothing to
     * compare with -- and Open MPI 5.0's own MPI_Bcast hangs on it */
    if (pairs > 0) MPI_Bcast(bn, lay_count(L, pairs), lay_dt[L], c->root, MPI_COMM_WORLD);
    check_rc(&v, ct_bcast(&c->choice, bo, lay_count(L, pairs), lay_dt[L], c->root,
                          MPI_COMM_WORLD));
    compare_bytes(&v, rel == 0 ? "root buffer changed" : "result", bo, bn, bytes);
    report(c, &v);
    free(bn);
    free(bo);
}

/* Gather / Allgather: each rank sends its block in its own layout and receives
 * in another one (at a Gather's root only). */
static void run_mixed_gather(vcase_t *c, int a, int all) {
    verdict_t v = { 0, "" };
    const int pairs = c->count, rel = all ? rank : (rank - c->root + nprocs) % nprocs;
    const int Ls = lay_of(a, rel, pairs), Lr = lay_of(a, rel + 1, pairs);
    const int is_root = all || rel == 0;
    size_t sbytes = lay_bytes(Ls, pairs), rbytes = lay_bytes(Lr, pairs) * (size_t)nprocs;
    uint32_t salt = ++salt_counter;
    mixed_desc(c, a, pairs);
    char *in = alloc_region(sbytes), *in_ref = alloc_region(sbytes);
    char *rn = alloc_region(rbytes), *ro = alloc_region(rbytes), *sentinel = alloc_region(rbytes);
    lay_fill(in, Ls, pairs, rank, salt);
    memcpy(in_ref, in, sbytes);
    int sc = lay_count(Ls, pairs), rc = lay_count(Lr, pairs);
    if (pairs == 0) { /* zero bytes: nothing to compare with (see run_mixed_bcast) */
        if (all) check_rc(&v, ct_allgather(&c->choice, in, sc, lay_dt[Ls], ro, rc, lay_dt[Lr],
                                           MPI_COMM_WORLD));
        else check_rc(&v, ct_gather(&c->choice, in, sc, lay_dt[Ls], ro, rc, lay_dt[Lr], c->root,
                                    MPI_COMM_WORLD));
    } else if (all) {
        MPI_Allgather(in, sc, lay_dt[Ls], rn, rc, lay_dt[Lr], MPI_COMM_WORLD);
        check_rc(&v, ct_allgather(&c->choice, in, sc, lay_dt[Ls], ro, rc, lay_dt[Lr],
                                  MPI_COMM_WORLD));
    } else {
        MPI_Gather(in, sc, lay_dt[Ls], rn, rc, lay_dt[Lr], c->root, MPI_COMM_WORLD);
        check_rc(&v, ct_gather(&c->choice, in, sc, lay_dt[Ls], ro, rc, lay_dt[Lr], c->root,
                               MPI_COMM_WORLD));
    }
    if (is_root) compare_bytes(&v, "result", ro, rn, rbytes);
    else compare_bytes(&v, "receive buffer of a non-root process was written", ro, sentinel,
                       rbytes);
    compare_bytes(&v, "send buffer was modified", in, in_ref, sbytes);
    report(c, &v);
    free(in);
    free(in_ref);
    free(rn);
    free(ro);
    free(sentinel);
}

static void run_mixed(vcase_t *c, int a) {
    if (c->coll == CT_BCAST) run_mixed_bcast(c, a);
    else if (c->coll == CT_GATHER) run_mixed_gather(c, a, 0);
    else if (c->coll == CT_ALLGATHER) run_mixed_gather(c, a, 1);
    /* Reduce and Allreduce: MPI requires the same count and datatype everywhere */
}

/* ---- family "inter": intercommunicators get one clear error, at once ------ */
static MPI_Comm intercomm = MPI_COMM_NULL;
static int inter_low; /* 1 in the low half of the world */

static void run_inter(vcase_t *c) {
    verdict_t v = { 0, "" };
    int buf[64] = { 0 }, out[64 * 16] = { 0 };
    /* roots as the standard spells them: MPI_ROOT at the root of the low
     * group, MPI_PROC_NULL at its other ranks, the root's rank (0) in the
     * remote group */
    int lr;
    MPI_Comm_rank(intercomm, &lr);
    int root = inter_low ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    double t0 = MPI_Wtime();
    int rc;
    switch (c->coll) {
    case CT_BCAST: rc = ct_bcast(&c->choice, buf, 4, MPI_INT, root, intercomm); break;
    case CT_REDUCE:
        rc = ct_reduce(&c->choice, buf, out, 4, MPI_INT, MPI_SUM, root, intercomm);
        break;
    case CT_GATHER:
        rc = ct_gather(&c->choice, buf, 4, MPI_INT, out, 4, MPI_INT, root, intercomm);
        break;
    case CT_ALLGATHER:
        rc = ct_allgather(&c->choice, buf, 4, MPI_INT, out, 4, MPI_INT, intercomm);
        break;
    default: rc = ct_allreduce(&c->choice, buf, out, 4, MPI_INT, MPI_SUM, intercomm); break;
    }
    double secs = MPI_Wtime() - t0;
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_COMM)
        verdict(&v, "on an intercommunicator: expected MPI_ERR_COMM, got error class %d (%s)",
                cls, rc == MPI_SUCCESS ? "success" : ct_last_error());
    else if (!strstr(ct_last_error(), "intercommunicator"))
        verdict(&v, "on an intercommunicator: the error text does not say so: %s",
                ct_last_error());
    else if (secs > 2.0)
        verdict(&v, "on an intercommunicator: the error took %.1f s", secs);
    snprintf(c->tdesc, sizeof c->tdesc, "int (intercommunicator)");
    report(c, &v);
}

/* ---- the matrix ----------------------------------------------------------- */
static int quick;
/* case families to run (--family): the main matrix and the four below */
enum { F_MAIN = 1, F_MIXED = 2, F_GARBAGE = 4, F_SELF = 8, F_INTER = 16, F_REMAP = 32,
       F_ALL = 63 };
static const char *family_names[] = { "main", "mixed", "garbage", "self", "inter", "remap" };
#define NFAMILIES 6
static unsigned families = F_ALL;
static int large_count = (1 << 17) + 3;

static int has_root(ct_coll_t c) { return c == CT_BCAST || c == CT_REDUCE || c == CT_GATHER; }
static int has_inplace(ct_coll_t c) { return c != CT_BCAST; }

static MPI_Op case_op(int t, int o) {
    if (t == T_VEC && o == O_SUM) return vec_sum;
    return ops[o];
}

static void run_case(const vcase_t *c) {
    if (has_reduction(c->coll) && c->t == T_VEC && (c->o == O_MAX || c->o == O_PROD)) return;
    switch (c->coll) {
    case CT_BCAST: run_bcast(c); break;
    case CT_REDUCE: run_reduce(c, 0); break;
    case CT_ALLREDUCE: run_reduce(c, 1); break;
    case CT_GATHER: run_gather(c, 0); break;
    case CT_ALLGATHER: run_gather(c, 1); break;
    default: break;
    }
}

/* Parameter variants: the defaults, then each parameter moved alone through
 * its interesting values. Segment sizes: none, smaller than one element, not
 * a multiple of the element size, larger than the message. */
#define MAX_VARIANTS 64
static int variants(int algo, ct_choice_t *out) {
    const ct_algo_t *a = ct_algo_get(algo);
    int n = 0;
    ct_choice_default(algo, &out[n++]);
    for (int j = 0; j < a->nparams; j++) {
        const ct_param_spec_t *ps = &a->params[j];
        long vals[32];
        int nv = 0;
        switch (ps->id) {
        case CT_P_SEGSIZE:
            vals[nv++] = 0; vals[nv++] = 1; vals[nv++] = 13; vals[nv++] = 1L << 30;
            break;
        case CT_P_FANOUT:
            vals[nv++] = 1; vals[nv++] = 2; vals[nv++] = 3; vals[nv++] = 1024;
            break;
        case CT_P_RADIX:
            vals[nv++] = 2; vals[nv++] = 3; vals[nv++] = 7; vals[nv++] = 64;
            break;
        case CT_P_BCAST: case CT_P_REDUCE: case CT_P_GATHER: {
            ct_coll_t ic = ps->id == CT_P_BCAST ? CT_BCAST
                           : ps->id == CT_P_REDUCE ? CT_REDUCE : CT_GATHER;
            for (int k = 0; k < ct_algo_count() && nv < 32; k++) {
                const ct_algo_t *x = ct_algo_get(k);
                if (x->coll == ic && !(x->constraints & CT_HIDDEN)) vals[nv++] = k;
            }
            break;
        }
        default: break;
        }
        for (int k = 0; k < nv && n < MAX_VARIANTS; k++) {
            if (vals[k] == out[0].params.v[ps->id]) continue;
            out[n] = out[0];
            out[n].params.v[ps->id] = vals[k];
            n++;
        }
    }
    return n;
}

static int has_inner_param(const ct_algo_t *a) {
    for (int j = 0; j < a->nparams; j++)
        if (a->params[j].id == CT_P_BCAST || a->params[j].id == CT_P_REDUCE ||
            a->params[j].id == CT_P_GATHER)
            return 1;
    return 0;
}

/* The case families beyond the main matrix, for every parameter variant (the
 * defaults in full, the other variants a cross-section):
 *  - mixed: different datatypes of one type signature on different ranks
 *    (Bcast, Gather, Allgather; Reduce and Allreduce need one datatype);
 *  - garbage: the arguments MPI ignores filled with garbage -- NULL buffers,
 *    count -1, MPI_DATATYPE_NULL (Reduce, Gather, Allgather; Bcast has none,
 *    Allreduce only MPI_IN_PLACE, which the main matrix covers);
 *  - self: the collective on MPI_COMM_SELF, at every process count;
 *  - inter: an intercommunicator gets MPI_ERR_COMM at once (defaults only). */
static void run_families(ct_coll_t coll, const ct_choice_t *var, int nvar, const int *roots,
                         int nroots) {
    for (int vi = 0; vi < nvar; vi++) {
        const int full = vi == 0;
        vcase_t c = { coll, var[vi], 0, 0, 0, O_SUM, 0, MPI_COMM_WORLD, 0, NULL, "" };
        if ((families & F_MIXED) &&
            (coll == CT_BCAST || coll == CT_GATHER || coll == CT_ALLGATHER)) {
            static const int pairs[] = { 0, 1, 7, 1000 };
            c.family = "mixed";
            c.t = T_INT;
            for (int ri = 0; ri < nroots; ri++) {
                if (!full && ri != nroots - 1) continue;
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
                    if (!full && pairs[k] < 7) continue;
                    c.count = pairs[k];
                    for (int a = 0; a < (pairs[k] ? NASSIGN : 1); a++) {
                        c.tdesc[0] = '\0';
                        run_mixed(&c, a);
                    }
                }
            }
            /* more than a few segments of every default segment size */
            if (!quick && full)
                for (int a = 0; a < 2; a++) {
                    c.root = roots[nroots - 1];
                    c.count = (1 << 16) + 3;
                    c.tdesc[0] = '\0';
                    run_mixed(&c, a);
                }
            c.tdesc[0] = '\0';
        }
        if ((families & F_GARBAGE) &&
            (coll == CT_REDUCE || coll == CT_GATHER || coll == CT_ALLGATHER)) {
            static const int counts[] = { 1, 7, 1000 };
            c.family = "garbage";
            c.garbage = 1;
            for (int ri = 0; ri < nroots; ri++) {
                if (!full && ri != nroots - 1) continue;
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                    if (!full && counts[k] == 1000) continue;
                    c.count = counts[k];
                    for (int t = T_INT; t < NTYPES; t += T_VEC - T_INT) {
                        c.t = t;
                        for (int ip = coll == CT_ALLGATHER; ip < 2; ip++) {
                            c.inplace = ip;
                            run_case(&c);
                        }
                    }
                }
            }
            c.garbage = 0;
        }
        if (families & F_SELF) {
            static const int counts[] = { 0, 1, 7, 1000 };
            c.family = "self";
            c.comm = MPI_COMM_SELF;
            c.root = 0;
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                if (!full && counts[k] == 1000) continue;
                c.count = counts[k];
                for (int t = 0; t < NTYPES; t++) {
                    if (!full && t == T_DOUBLE) continue;
                    c.t = t;
                    for (int o = 0; o < (has_reduction(coll) ? NOPS : 1); o++) {
                        if (!full && o != O_SUM && o != O_NONCOMM) continue;
                        c.o = o;
                        for (int ip = 0; ip < (has_inplace(coll) ? 2 : 1); ip++) {
                            c.inplace = ip;
                            run_case(&c);
                        }
                    }
                }
            }
            c.comm = MPI_COMM_WORLD;
            c.o = O_SUM;
            c.inplace = 0;
        }
        if ((families & F_INTER) && full && intercomm != MPI_COMM_NULL) {
            c.family = "inter";
            c.t = T_INT;
            c.count = 4;
            c.root = 0;
            run_inter(&c);
        }
    }
}

/* ---- family "remap": the algorithm on a permuted communicator ---------------
 * For each virtual placement (COLLTUNE_NODES as the user set it, or: 2 and 3
 * nodes placed seq and rr, and two irregular placements, node (r/2) mod 2 and
 * (r/2) mod 3), a fresh duplicate of the world (placement is cached per
 * communicator) checks the detected nodes, then runs remap=seq, rr and auto
 * over roots, counts 1, 7, 1000, int and strided vector, sum and the
 * non-commutative op, in place or not; the dispatcher must report the remap
 * it applied (none where the placement already has the target order, and for
 * a non-commutative op). */
typedef struct {
    const char *nodes, *order; /* environment values; nodes NULL: a list made here */
    int list_mod;              /* list: node (r/2) mod list_mod */
} layout_t;

static int expected_node(const layout_t *l, int r) {
    if (!l->nodes) return (r / 2) % l->list_mod;
    int m = atoi(l->nodes);
    if (m > nprocs) m = nprocs;
    if (!strcmp(l->order, "rr")) return r % m;
    int n = 0;
    while (n + 1 < m && (n + 1) * (nprocs / m) + (n + 1 < nprocs % m ? n + 1 : nprocs % m) <= r)
        n++;
    return n;
}

/* Whether the user set COLLTUNE_NODES: read in main before MPI_Init, because the
 * family changes the variable, and under SimGrid's SMPI every rank is a thread of
 * one process sharing one environment (a rank reading it later would see another
 * rank's layout). For the same reason the ranks change the variable only between
 * two barriers, and read it (ct_comm_placement) only outside them. */
static int user_nodes;

static void set_layout_env(const char *nodes, const char *order) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (nodes) setenv("COLLTUNE_NODES", nodes, 1);
    else unsetenv("COLLTUNE_NODES");
    if (order) setenv("COLLTUNE_NODE_ORDER", order, 1);
    else unsetenv("COLLTUNE_NODE_ORDER");
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run_remap_family(ct_coll_t coll, const ct_choice_t *base, const int *roots,
                             int nroots) {
    if (coll == CT_GATHER) return;
    static const layout_t builtin[] = { { "2", "seq", 0 }, { "2", "rr", 0 }, { "3", "seq", 0 },
                                        { "3", "rr", 0 },  { NULL, NULL, 2 }, { NULL, NULL, 3 } };
    int user = user_nodes;
    int nl = user ? 1 : (int)(sizeof builtin / sizeof builtin[0]);
    for (int li = 0; li < nl; li++) {
        const layout_t *l = &builtin[li];
        char list[4096];
        if (!user) {
            if (l->nodes) {
                set_layout_env(l->nodes, l->order);
            } else {
                size_t used = 0;
                list[0] = '\0';
                for (int r = 0; r < nprocs && used + 16 < sizeof list; r++)
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                             r ? "," : "", (r / 2) % l->list_mod);
                set_layout_env(nprocs == 1 ? "1" : list, NULL);
            }
        }
        MPI_Comm vc;
        MPI_Comm_dup(MPI_COMM_WORLD, &vc);
        MPI_Comm_set_errhandler(vc, MPI_ERRORS_RETURN);
        vcase_t c = { coll, *base, 0, 0, T_INT, O_SUM, 0, vc, 0, "remap", "" };
        {   /* the detected placement */
            verdict_t v = { 0, "" };
            ct_placement_t pl;
            int rc = ct_comm_placement(vc, &pl);
            check_rc(&v, rc);
            if (rc == MPI_SUCCESS && !user)
                for (int r = 0; r < nprocs; r++)
                    if (pl.node[r] != expected_node(l, r)) {
                        verdict(&v, "placement %s%s%s: rank %d detected on node %d, expected %d",
                                l->nodes ? l->nodes : "list", l->order ? " " : "",
                                l->order ? l->order : "", r, pl.node[r], expected_node(l, r));
                        break;
                    }
            snprintf(c.tdesc, sizeof c.tdesc, "placement");
            c.count = 0;
            report(&c, &v);
            c.tdesc[0] = '\0';
        }
        static const int counts[] = { 1, 7, 1000 };
        static const int tlist[] = { T_INT, T_VEC };
        for (int target = CT_REMAP_SEQ; target <= CT_REMAP_AUTO; target++) {
            c.choice = *base;
            c.choice.params.v[CT_P_REMAP] = target;
            for (int ri = 0; ri < nroots; ri++) {
                c.root = roots[ri];
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                    c.count = counts[k];
                    for (int ti = 0; ti < 2; ti++) {
                        c.t = tlist[ti];
                        for (int o = 0; o < (has_reduction(coll) ? NOPS : 1); o++) {
                            if (o != O_SUM && o != O_NONCOMM) continue;
                            c.o = o;
                            for (int ip = 0; ip < (has_inplace(coll) ? 2 : 1); ip++) {
                                c.inplace = ip;
                                run_case(&c);
                                const ct_dispatch_t *d = ct_last_dispatch();
                                /* auto: the order of the algorithm that ran (a fallback's) */
                                int order = target == CT_REMAP_AUTO ? ct_remap_auto(d->used)
                                                                    : target;
                                int ident = 1;
                                const int *perm;
                                if (order != CT_REMAP_NONE &&
                                    ct_comm_remap_order(vc, order, &perm) == MPI_SUCCESS)
                                    for (int r = 0; r < nprocs; r++)
                                        if (perm[r] != r) ident = 0;
                                int noncomm = has_reduction(coll) && o == O_NONCOMM;
                                int want = noncomm || ident ? CT_REMAP_NONE : order;
                                d = ct_last_dispatch(); /* (ct_comm_remap_order keeps it) */
                                verdict_t v = { 0, "" };
                                if (d->remap != want)
                                    verdict(&v, "the dispatcher applied remap order %s, "
                                            "expected %s", ct_remap_name(d->remap),
                                            ct_remap_name(want));
                                if (noncomm && !ident && !strstr(d->reason, "not commutative"))
                                    verdict(&v, "a refused remap was not reported: '%s'",
                                            d->reason);
                                report(&c, &v);
                            }
                        }
                    }
                }
            }
        }
        MPI_Comm_free(&vc);
    }
    if (!user) set_layout_env(NULL, NULL);
}

/* Run the matrix for one algorithm. */
static void verify_algo(int algo) {
    const ct_algo_t *a = ct_algo_get(algo);
    ct_coll_t coll = a->coll;
    ct_choice_t var[MAX_VARIANTS];
    int nvar = variants(algo, var);
    int roots[3] = { 0, nprocs - 1, nprocs / 2 }, nroots = has_root(coll) ? 3 : 1;
    if (nroots == 3 && (roots[2] == roots[0] || roots[2] == roots[1])) nroots = 2;
    if (nroots >= 2 && roots[1] == roots[0]) nroots = 1;
    int counts[] = { 0, 1, 7, 1000 };
    int nops = has_reduction(coll) ? NOPS : 1;
    int nin = has_inplace(coll) ? 2 : 1;
    long before = cases_run, failed_before = cases_failed;
    double t0 = MPI_Wtime();
    char fallback[160] = "";

    if (rank == 0) {
        fprintf(stderr, "verify: np=%d %s/%s ...\n", nprocs, ct_coll_name(coll), a->name);
        fflush(stderr);
    }
    for (int vi = 0; vi < nvar && (families & F_MAIN); vi++) {
        vcase_t c = { coll, var[vi], 0, 0, 0, 0, 0, MPI_COMM_WORLD, 0, NULL, "" };
        /* defaults: the full product; other variants: a cross-section */
        int full = vi == 0;
        for (int ri = 0; ri < nroots; ri++) {
            if (!full && ri != nroots - 1) continue;
            c.root = roots[ri];
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                c.count = counts[ci];
                if (!full && c.count == 0) continue;
                for (int t = 0; t < NTYPES; t++) {
                    if (!full && t == T_DOUBLE) continue;
                    c.t = t;
                    for (int o = 0; o < nops; o++) {
                        if (!full && o != O_SUM && o != O_NONCOMM) continue;
                        c.o = o;
                        for (int ip = 0; ip < nin; ip++) {
                            if (!full && ip) continue;
                            c.inplace = ip;
                            run_case(&c);
                            const ct_dispatch_t *d = ct_last_dispatch();
                            if (d->reason[0] && !fallback[0])
                                snprintf(fallback, sizeof fallback, "%s", d->reason);
                        }
                    }
                }
            }
        }
        /* large counts, more than any segment: 2^17+3 elements; for Gather and
         * Allgather 2^18+3 ints per process (1 MiB) up to 8 processes, where
         * blocking-exchange implementations hang, and an 8 MiB total above */
        if (quick) continue;
        if (var[vi].params.v[CT_P_SEGSIZE] > 0 && var[vi].params.v[CT_P_SEGSIZE] < 64)
            continue; /* tiny segments of a huge message: covered at small counts */
        if (!full && has_inner_param(a))
            continue; /* inner algorithms are verified at large counts on their own */
        int gathers = coll == CT_GATHER || coll == CT_ALLGATHER;
        for (int ri = 0; ri < nroots; ri++) {
            if (ri == 2 || (!full && ri == 0 && nroots > 1)) continue;
            c.root = roots[ri];
            int tlist[2] = { T_INT, T_VEC };
            for (int ti = 0; ti < (full ? 2 : 1); ti++) {
                c.t = tlist[ti];
                c.count = large_count;
                if (gathers)
                    c.count = c.t == T_VEC ? (1 << 14) + 3
                              : nprocs <= 8 ? (1 << 18) + 3 : (1 << 21) / nprocs + 3;
                for (int o = 0; o < nops; o++) {
                    if (o != O_SUM && o != O_NONCOMM) continue;
                    if (!full && o == O_NONCOMM) continue;
                    c.o = o;
                    c.inplace = full && has_inplace(coll) && ti == 1;
                    run_case(&c);
                }
            }
        }
    }
    run_families(coll, var, nvar, roots, nroots);
    if (families & F_REMAP) run_remap_family(coll, &var[0], roots, nroots);
    double secs = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("{\"event\": \"algo\", \"collective\": \"%s\", \"algorithm\": ", ct_coll_name(coll));
        ct_json_str(stdout, a->name);
        printf(", \"np\": %d, \"variants\": %d, \"cases\": %ld, \"failed\": %ld, "
               "\"seconds\": %.3f, \"fallback\": ",
               nprocs, nvar, cases_run - before, cases_failed - failed_before, secs);
        if (fallback[0]) ct_json_str(stdout, fallback);
        else fputs("null", stdout);
        printf("}\n");
        fflush(stdout);
    }
}

static void usage(void) {
    printf("usage: colltune-verify [--coll LIST] [--algo LIST] [--quick] [--max-fail N] [--family LIST]\n"
           "       colltune-verify --list-json [--hidden]\n\n"
           "Run under mpirun. Compares every selected algorithm with the MPI library's own\n"
           "collective over roots, counts {0,1,7,1000,2^17+3}, datatypes {char,int,double,\n"
           "strided vector}, ops {sum,max,prod,non-commutative}, in-place and parameter\n"
           "variants, at the launch's process count. JSON lines on stdout; exit 1 on any\n"
           "mismatch.\n\n"
           "  --coll LIST    collectives (bcast,reduce,gather,allgather,allreduce; default all)\n"
           "  --algo LIST    algorithm names (default: all but native and hidden ones)\n"
           "  --quick        skip the large count\n"
           "  --max-fail N   failures printed per run (default 20)\n"
           "  --family LIST  case families (default all): main (the matrix above), mixed\n"
           "                 (different datatypes of one type signature per rank), garbage\n"
           "                 (ignored arguments filled with garbage), self (MPI_COMM_SELF),\n"
           "                 inter (intercommunicators must get MPI_ERR_COMM at once), remap\n"
           "                 (remap=seq, rr and auto on virtual nodes: 2 and 3 nodes placed seq\n"
           "                 and rr, two irregular placements; only $COLLTUNE_NODES if set)\n");
}

int main(int argc, char **argv) {
    const char *coll_list = "bcast,reduce,gather,allgather,allreduce", *algo_list = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
        if (!strcmp(argv[i], "--list-json")) {
            int hidden = 0;
            for (int j = 1; j < argc; j++)
                if (!strcmp(argv[j], "--hidden")) hidden = 1;
            ct_print_registry_json(stdout, hidden);
            return 0;
        }
    }
    const char *nodes_env = getenv("COLLTUNE_NODES"); /* before any rank changes it */
    user_nodes = nodes_env && *nodes_env;
    ct_start(&argc, &argv, usage, &rank, &nprocs); /* --help: answered above */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) coll_list = argv[++i];
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc) algo_list = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--max-fail") && i + 1 < argc) max_fail_print = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--family") && i + 1 < argc) {
            char **fl;
            int nf = ct_split(argv[++i], &fl);
            families = 0;
            for (int k = 0; k < nf; k++) {
                unsigned bit = 0;
                for (int f = 0; f < NFAMILIES; f++)
                    if (!strcmp(fl[k], family_names[f])) bit = 1u << f;
                if (!strcmp(fl[k], "all")) bit = F_ALL;
                if (!bit)
                    ct_die(rank, "unknown case family '%s'; valid: main, mixed, garbage, self, "
                           "inter, remap, all", fl[k]);
                families |= bit;
            }
            ct_free_list(fl, nf);
        }
        else ct_die(rank, "unknown argument '%s' (see --help)", argv[i]);
    }

    types[T_CHAR] = MPI_SIGNED_CHAR;
    types[T_INT] = MPI_INT;
    types[T_DOUBLE] = MPI_DOUBLE;
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, VEC_EXTENT, &types[T_VEC]);
    MPI_Type_commit(&types[T_VEC]);
    MPI_Type_free(&vec);
    lay_dt[L_INT] = MPI_INT;
    lay_dt[L_VEC] = types[T_VEC];
    {
        int bl[2] = { 1, 1 };
        MPI_Aint disp[2] = { 4, 0 };
        MPI_Datatype ts[2] = { MPI_INT, MPI_INT };
        MPI_Type_create_struct(2, bl, disp, ts, &lay_dt[L_SWAP]);
        MPI_Type_commit(&lay_dt[L_SWAP]);
    }
    MPI_Type_contiguous(2, MPI_INT, &lay_dt[L_PAIR]);
    MPI_Type_commit(&lay_dt[L_PAIR]);
    MPI_Type_contiguous(0, MPI_INT, &lay_dt[L_EMPTY]);
    MPI_Type_commit(&lay_dt[L_EMPTY]);
    /* low half and high half of the world; only when the family runs (SimGrid's SMPI
     * has no MPI_Intercomm_create, and aborts on it) */
    if (nprocs >= 2 && (families & F_INTER)) {
        MPI_Comm local;
        inter_low = rank < nprocs / 2;
        MPI_Comm_split(MPI_COMM_WORLD, inter_low, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inter_low ? nprocs / 2 : 0, 99,
                             &intercomm);
        MPI_Comm_set_errhandler(intercomm, MPI_ERRORS_RETURN);
        MPI_Comm_free(&local);
    }
    ops[O_SUM] = MPI_SUM;
    ops[O_MAX] = MPI_MAX;
    ops[O_PROD] = MPI_PROD;
    MPI_Op_create(affine_op, 0, &ops[O_NONCOMM]);
    MPI_Op_create(vec_sum_op, 1, &vec_sum);

    /* which collectives and algorithms */
    char **colls, **algos = NULL;
    int ncolls = ct_split(coll_list, &colls), nalgos = 0;
    int selected[CT_NCOLL] = { 0 };
    for (int i = 0; i < ncolls; i++) {
        ct_coll_t c;
        if (ct_coll_from_name(colls[i], &c) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
        selected[c] = 1;
    }
    if (algo_list) {
        nalgos = ct_split(algo_list, &algos);
        for (int k = 0; k < nalgos; k++) {
            int found = 0;
            for (int c = 0; c < CT_NCOLL; c++)
                if (selected[c] && ct_algo_find((ct_coll_t)c, algos[k]) >= 0) found = 1;
            if (!found) {
                /* the parse error lists the valid names of the first selected collective */
                for (int c = 0; c < CT_NCOLL; c++)
                    if (selected[c]) {
                        ct_choice_t tmp;
                        ct_choice_parse((ct_coll_t)c, algos[k], &tmp);
                        ct_die(rank, "%s", ct_last_error());
                    }
            }
        }
    }

    char ver[256];
    ct_mpi_version(ver, sizeof ver);
    double t0 = MPI_Wtime();
    for (int i = 0; i < ct_algo_count(); i++) {
        const ct_algo_t *a = ct_algo_get(i);
        if (!selected[a->coll]) continue;
        if (algos) {
            int want = 0;
            for (int k = 0; k < nalgos; k++)
                if (!strcmp(algos[k], a->name)) want = 1;
            if (!want) continue;
        } else if ((a->constraints & CT_HIDDEN) || !strcmp(a->name, "native")) {
            continue;
        }
        verify_algo(i);
    }
    if (rank == 0) {
        printf("{\"event\": \"summary\", \"np\": %d, \"cases\": %ld, \"failed\": %ld, "
               "\"seconds\": %.3f, \"mpi\": ",
               nprocs, cases_run, cases_failed, MPI_Wtime() - t0);
        ct_json_str(stdout, ver);
        printf("}\n");
        fflush(stdout);
    }
    ct_free_list(colls, ncolls);
    if (algos) ct_free_list(algos, nalgos);
    MPI_Op_free(&ops[O_NONCOMM]);
    MPI_Op_free(&vec_sum);
    MPI_Type_free(&types[T_VEC]);
    MPI_Type_free(&lay_dt[L_SWAP]);
    MPI_Type_free(&lay_dt[L_PAIR]);
    MPI_Type_free(&lay_dt[L_EMPTY]);
    if (intercomm != MPI_COMM_NULL) MPI_Comm_free(&intercomm);
    MPI_Finalize();
    return cases_failed ? 1 : 0;
}
