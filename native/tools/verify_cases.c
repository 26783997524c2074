/*
 * verify_cases.c -- colltune-verify's cases: the datatypes and ops under test,
 * the inputs, one case of each collective compared with the MPI library's own
 * (families main, mixed, garbage, self and remap run through run_case and
 * run_mixed; inter through run_inter), and the verdict of a case over all
 * ranks. verify.c decides which cases run (the matrix).
 */
#include "verify_shared.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- datatypes and ops under test ---------------------------------------- */
static const char *type_names[NTYPES] = { "char", "int", "double", "vec" };
MPI_Datatype types[NTYPES];
/* vec: 2 ints at byte offsets 0 and 12 (MPI_Type_vector(2,1,3,MPI_INT)),
 * resized to an extent of 20 bytes: holes inside and between elements. */
#define VEC_EXTENT 20
#define VEC_OFF1 12

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
MPI_Op case_op(int t, int o) {
    if (t == T_VEC && o == O_SUM) return vec_sum;
    return ops[o];
}

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

size_t type_extent(int t) {
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
void fill(char *buf, int t, long count, int o, int who, uint32_t salt) {
    for (long i = 0; i < count; i++)
        for (int j = 0; j < scalars_per_elem(t); j++) put_value(buf, t, i, j, o, who, salt);
}

char *alloc_region(size_t bytes) {
    char *b = malloc(bytes ? bytes : 1);
    if (!b) {
        fprintf(stderr, "verify: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(b, SENTINEL, bytes ? bytes : 1);
    return b;
}

vbufs_t vbufs_new(size_t sbytes, size_t rbytes) {
    vbufs_t b = { alloc_region(sbytes), alloc_region(sbytes), alloc_region(rbytes),
                  alloc_region(rbytes), NULL, sbytes, rbytes };
    return b;
}

void vbufs_free(vbufs_t *b) {
    free(b->in);
    free(b->in_ref);
    free(b->rn);
    free(b->ro);
    free(b->sentinel);
}

void vbufs_report_rooted(const vcase_t *c, verdict_t *v, vbufs_t *b, int is_root, int inplace,
                         long rcount, long scount) {
    if (is_root) compare(v, "result", b->ro, b->rn, c->t, rcount);
    else compare(v, "receive buffer of a non-root process was written", b->ro, b->sentinel, c->t,
                 rcount);
    if (!inplace) compare(v, "send buffer was modified", b->in, b->in_ref, c->t, scount);
    report(c, v);
    vbufs_free(b);
}

long rev_layout(int cn, const int *cnt, int *dsp) {
    long at = 1;
    for (int j = cn - 1; j >= 0; j--) {
        dsp[j] = (int)at;
        at += cnt[j] + 1;
    }
    return at;
}

vblocks_t vblocks_new(int cn, int n, int (*count)(int n, int j),
                      long (*layout)(int cn, const int *cnt, int *dsp)) {
    vblocks_t k;
    k.cnt = malloc((size_t)(2 * cn) * sizeof *k.cnt);
    k.dsp = k.cnt + cn;
    for (int j = 0; j < cn; j++) k.cnt[j] = count(n, j);
    k.span = layout(cn, k.cnt, k.dsp);
    return k;
}

/* ---- case description and reporting -------------------------------------- */
int rank, nprocs; /* of MPI_COMM_WORLD (vc_setup) */
long vc_cases_run, vc_cases_failed;
static int max_fail_print;
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

void verdict(verdict_t *v, const char *fmt, ...) {
    if (v->bad) return; /* keep the first problem */
    v->bad = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

/* Compare a buffer of count elements of type t (byte-exact, holes included). */
void compare(verdict_t *v, const char *what, const char *got, const char *want, int t,
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

void report(const vcase_t *c, verdict_t *mine) {
    int bad = mine->bad, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    vc_cases_run++;
    if (!anybad) return;
    vc_cases_failed++;
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
uint32_t salt_counter;

void check_rc(verdict_t *v, int rc) {
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
    vbufs_t b = vbufs_new(bytes, bytes);
    b.sentinel = alloc_region(bytes);
    fill(b.in, c->t, c->count, c->o, rank, salt);
    memcpy(b.in_ref, b.in, bytes);
    if (inplace) {
        memcpy(b.rn, b.in, bytes);
        memcpy(b.ro, b.in, bytes);
    }
    const void *sn = inplace ? MPI_IN_PLACE : b.in;
    /* garbage: the receive buffer is not significant at a Reduce's non-roots */
    void *rb = c->garbage && !is_root ? NULL : b.ro;
    if (all) {
        MPI_Allreduce(sn, b.rn, c->count, types[c->t], case_op(c->t, c->o), c->comm);
        check_rc(&v, ct_allreduce(&c->choice, sn, rb, c->count, types[c->t], case_op(c->t, c->o),
                                  c->comm));
    } else {
        MPI_Reduce(sn, b.rn, c->count, types[c->t], case_op(c->t, c->o), c->root, c->comm);
        check_rc(&v, ct_reduce(&c->choice, sn, rb, c->count, types[c->t], case_op(c->t, c->o),
                               c->root, c->comm));
    }
    vbufs_report_rooted(c, &v, &b, is_root, inplace, c->count, c->count);
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
    vbufs_t b = vbufs_new(bytes, total);
    b.sentinel = alloc_region(total);
    fill(b.in, c->t, c->count, O_SUM, rank, salt);
    memcpy(b.in_ref, b.in, bytes);
    if (inplace) {
        memcpy(b.rn + (size_t)cr * bytes, b.in, bytes);
        memcpy(b.ro + (size_t)cr * bytes, b.in, bytes);
    }
    const void *sn = inplace ? MPI_IN_PLACE : b.in;
    MPI_Datatype dt = types[c->t];
    /* garbage in the arguments MPI ignores: the send count and type with
     * MPI_IN_PLACE, the receive buffer, count and type at a Gather's non-roots */
    int sc = c->count, rc = c->count;
    MPI_Datatype sd = dt, rd = dt;
    void *rb = b.ro;
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
        MPI_Allgather(sn, c->count, dt, b.rn, c->count, dt, c->comm);
        check_rc(&v, ct_allgather(&c->choice, sn, sc, sd, rb, rc, rd, c->comm));
    } else {
        MPI_Gather(sn, c->count, dt, b.rn, c->count, dt, c->root, c->comm);
        check_rc(&v, ct_gather(&c->choice, sn, sc, sd, rb, rc, rd, c->root, c->comm));
    }
    vbufs_report_rooted(c, &v, &b, is_root, inplace, (long)c->count * cn, c->count);
}

/* ---- family "mixed": different datatypes of one type signature ------------
 * MPI lets each rank describe a message with its own count and datatype as
 * long as the type signatures match. The message here is 2n ints; each rank
 * lays it out in one of these layouts, chosen per rank (and per role: send or
 * receive), and the result is compared byte for byte, holes included, with
 * the MPI library's own collective on the same layouts. n = 0 mixes 0 ints
 * with 3 elements of an empty datatype (zero bytes everywhere). */
static const char *lay_names[NLAYOUTS] = { "int", "vec", "swap", "pair", "empty" };
MPI_Datatype lay_dt[NLAYOUTS];
/* swap: struct {int at byte 4, int at byte 0}: dense in size and extent, but
 * its signature order is not its memory order; pair: contiguous(2, int). */

int lay_count(int L, int pairs) {
    return L == L_EMPTY ? 3 : L == L_INT ? 2 * pairs : pairs;
}
size_t lay_extent(int L) {
    return L == L_INT ? 4 : L == L_VEC ? VEC_EXTENT : L == L_EMPTY ? 0 : 8;
}
size_t lay_bytes(int L, int pairs) { return (size_t)lay_count(L, pairs) * lay_extent(L); }
/* byte offset of int k of the signature */
static size_t lay_off(int L, long k) {
    switch (L) {
    case L_VEC: return (size_t)(k / 2) * VEC_EXTENT + (k % 2 ? VEC_OFF1 : 0);
    case L_SWAP: return (size_t)(k / 2) * 8 + (k % 2 ? 0 : 4);
    default: return (size_t)k * 4;
    }
}
void lay_fill(char *buf, int L, int pairs, int who, uint32_t salt) {
    if (L == L_EMPTY) return;
    for (long k = 0; k < 2L * pairs; k++) {
        int32_t x = (int32_t)hash3((uint32_t)who, (uint32_t)k, salt);
        memcpy(buf + lay_off(L, k), &x, 4);
    }
}
/* The layout of relative rank `rel` in assignment a (n > 0); rel 0 is the root. */
int lay_of(int a, int rel, int pairs) {
    if (pairs == 0) return rel % 2 ? L_EMPTY : L_INT;
    switch (a) {
    case 0: return rel == 0 ? L_VEC : L_INT; /* the root strided, the others plain */
    case 1: return rel == 0 ? L_INT : rel % 3 == 1 ? L_VEC : rel % 3 == 2 ? L_SWAP : L_PAIR;
    case 2: return rel == 0 ? L_SWAP : rel % 2 ? L_INT : L_VEC;
    default: return rel == 0 ? L_PAIR : rel % 2 ? L_SWAP : L_VEC;
    }
}

void compare_bytes(verdict_t *v, const char *what, const char *got, const char *want,
                          size_t bytes) {
    long d = first_diff(got, want, bytes);
    if (d >= 0)
        verdict(v, "%s: byte %ld of %zu differs (got 0x%02x, expected 0x%02x)", what, d, bytes,
                (unsigned char)got[d], (unsigned char)want[d]);
}

void vbufs_report_bytes(const vcase_t *c, verdict_t *v, vbufs_t *b) {
    compare_bytes(v, "result", b->ro, b->rn, b->rbytes);
    compare_bytes(v, "send buffer was modified", b->in, b->in_ref, b->sbytes);
    report(c, v);
    vbufs_free(b);
}

void mixed_desc(vcase_t *c, int a, int pairs) {
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

void run_mixed(vcase_t *c, int a) {
    if (c->coll == CT_BCAST) run_mixed_bcast(c, a);
    else if (c->coll == CT_GATHER) run_mixed_gather(c, a, 0);
    else if (c->coll == CT_ALLGATHER) run_mixed_gather(c, a, 1);
    else if (c->coll == CT_ALLTOALL) run_mixed_alltoall(c, a);
    else if (c->coll == CT_ALLTOALLV) run_mixed_alltoallv(c, a);
    else if (c->coll == CT_SCATTER) run_mixed_scatter(c, a);
    else if (c->coll == CT_REDUCE_SCATTER) run_mixed_reduce_scatter(c, a);
    else if (c->coll == CT_ALLGATHERV) run_mixed_allgatherv(c, a);
    else if (c->coll == CT_GATHERV || c->coll == CT_SCATTERV) run_mixed_gatherv(c, a);
    /* Reduce and Allreduce: MPI requires the same count and datatype everywhere */
}

/* ---- family "inter": intercommunicators get one clear error, at once ------ */
static MPI_Comm intercomm = MPI_COMM_NULL;
static int inter_low; /* 1 in the low half of the world */

void run_inter(vcase_t *c) {
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
    case CT_ALLTOALL:
        rc = ct_alltoall(&c->choice, out, 1, MPI_INT, out + 64, 1, MPI_INT, intercomm);
        break;
    case CT_ALLTOALLV: {
        int cnt[16] = { 0 }, dsp[16] = { 0 };
        rc = ct_alltoallv(&c->choice, out, cnt, dsp, MPI_INT, out + 64, cnt, dsp, MPI_INT,
                          intercomm);
        break;
    }
    case CT_SCATTER:
        rc = ct_scatter(&c->choice, out, 4, MPI_INT, buf, 4, MPI_INT, root, intercomm);
        break;
    case CT_BARRIER: rc = ct_barrier(&c->choice, intercomm); break;
    case CT_REDUCE_SCATTER_BLOCK:
        rc = ct_reduce_scatter_block(&c->choice, out, buf, 4, MPI_INT, MPI_SUM, intercomm);
        break;
    case CT_REDUCE_SCATTER: {
        int cnt[64];
        for (int j = 0; j < 64; j++) cnt[j] = 4;
        rc = ct_reduce_scatter(&c->choice, out, buf, cnt, MPI_INT, MPI_SUM, intercomm);
        break;
    }
    case CT_ALLGATHERV: {
        int cnt[16] = { 0 }, dsp[16] = { 0 };
        rc = ct_allgatherv(&c->choice, buf, 0, MPI_INT, out, cnt, dsp, MPI_INT, intercomm);
        break;
    }
    case CT_GATHERV: {
        int cnt[16] = { 0 }, dsp[16] = { 0 };
        rc = ct_gatherv(&c->choice, buf, 0, MPI_INT, out, cnt, dsp, MPI_INT, root, intercomm);
        break;
    }
    case CT_SCATTERV: {
        int cnt[16] = { 0 }, dsp[16] = { 0 };
        rc = ct_scatterv(&c->choice, out, cnt, dsp, MPI_INT, buf, 0, MPI_INT, root, intercomm);
        break;
    }
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

/* ---- one case of any collective ------------------------------------------- */
void run_case(const vcase_t *c) {
    if (has_reduction(c->coll) && c->t == T_VEC && (c->o == O_MAX || c->o == O_PROD)) return;
    switch (c->coll) {
    case CT_BCAST: run_bcast(c); break;
    case CT_REDUCE: run_reduce(c, 0); break;
    case CT_ALLREDUCE: run_reduce(c, 1); break;
    case CT_GATHER: run_gather(c, 0); break;
    case CT_ALLGATHER: run_gather(c, 1); break;
    case CT_ALLTOALL: run_alltoall(c); break;
    case CT_ALLTOALLV: run_alltoallv(c); break;
    case CT_SCATTER: run_scatter(c); break;
    case CT_BARRIER: run_barrier(c); break;
    case CT_REDUCE_SCATTER_BLOCK: run_reduce_scatter_block(c); break;
    case CT_REDUCE_SCATTER: run_reduce_scatter(c); break;
    case CT_ALLGATHERV: run_allgatherv(c); break;
    case CT_GATHERV: case CT_SCATTERV: run_gatherv_case(c); break;
    default: break;
    }
}

/* ---- setup ------------------------------------------------------------------ */
void vc_setup(int max_fail, int with_inter) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    max_fail_print = max_fail;
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
    if (nprocs >= 2 && with_inter) {
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
    vc_empty_setup();
}

int vc_have_intercomm(void) { return intercomm != MPI_COMM_NULL; }

void vc_teardown(void) {
    vc_empty_teardown();
    MPI_Op_free(&ops[O_NONCOMM]);
    MPI_Op_free(&vec_sum);
    MPI_Type_free(&types[T_VEC]);
    MPI_Type_free(&lay_dt[L_SWAP]);
    MPI_Type_free(&lay_dt[L_PAIR]);
    MPI_Type_free(&lay_dt[L_EMPTY]);
    if (intercomm != MPI_COMM_NULL) MPI_Comm_free(&intercomm);
}
