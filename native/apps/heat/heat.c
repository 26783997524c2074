/*
 * heat.c -- colltune-heat: heat diffusion on a 2-D grid, an application that
 * uses colltune's Allreduce and Reduce (see docs/heat.md).
 *
 * Model. R x C cells of temperature T and conductivity weight k in [0, 0.25].
 * One iteration computes, for every cell,
 *     s     = ((T[i-1][j] + T[i+1][j]) + T[i][j-1]) + T[i][j+1]
 *     T'    = T[i][j] + k[i][j] * (s - 4.0 * T[i][j])
 *     delta = |T' - T[i][j]|
 * always in exactly this order, so each cell's value depends only on the old
 * values of itself and its four neighbours, never on how the grid is split:
 * the final grid is bitwise identical for every process count, decomposition
 * and variant (the kernel, heat_kernel.c, is compiled with -ffp-contract=off
 * so no multiply-add is fused). 8 FLOPs per cell: 7 for the update, 1 for the
 * change (the absolute value and the max are not counted).
 *
 * Boundaries. Columns wrap around (column -1 is column C-1, column C is
 * column 0). Rows have fixed boundaries: a virtual row above row 0 holds the
 * initial temperatures of row 0, a virtual row below row R-1 those of row
 * R-1, and they never change. Every one of the R x C cells is updated.
 *
 * Decomposition. A Cartesian process grid Pr x Pc (periodic in columns only):
 * --decomp rows is P x 1, --decomp 2d is MPI_Dims_create(P) or --pgrid. Each
 * process owns a block of rows and columns (sizes differ by at most one) and
 * keeps a halo of one row above and below and one column left and right.
 * With Pc = 1 the column halo is a local copy (the wrap-around).
 *
 * Variants (halo exchange of the freshly computed grid, every iteration):
 *   blocking    compute the whole block, then MPI_Sendrecv the halos;
 *   overlap     compute the block's frame (first/last row and column), start
 *               MPI_Irecv/MPI_Isend of it, compute the interior, MPI_Waitall;
 *   persistent  as overlap, with MPI_Recv_init/MPI_Send_init requests made
 *               once per grid buffer (the two buffers swap every iteration,
 *               so there are two request sets) and MPI_Startall.
 *
 * Collectives through colltune: with --threshold T > 0 the global maximum
 * change is found every iteration with ct_allreduce(MAX) and the run stops
 * after the first iteration whose maximum change is < T (the maximum is
 * exact, so every decomposition stops at the same iteration). Every
 * --report-interval K iterations, the minimum, maximum and sum of the
 * temperatures go to rank 0 with three ct_reduce calls (MIN, MAX, SUM);
 * average = sum / (R*C).
 *
 * Output: rank 0 prints one JSON line per report ("kind": "heat_report") and
 * one summary line ("kind": "heat"). --output FILE gathers the final grid on
 * rank 0 and writes it as raw float64 (row-major, native byte order) or as a
 * 16-bit PGM.
 */
#ifdef CT_HEAT_PLAIN
#include "heat_plain.h" /* colltune-heat-plain: MPI only, no colltune library */
#else
#include "driver_common.h"
#endif
#include "heat_kernel.h"
#include "heat_pgm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FLOPS_PER_CELL 8
#define BYTES_PER_CELL 24 /* read T, read k, write T' (neighbours from cache) */
#define T_RANGE 100.0     /* initial temperatures lie in [0, T_RANGE]          */
#define K_RANGE 0.25      /* conductivity weights lie in [0, K_RANGE]          */
#define MAX_EDGE 1000000L

enum { TAG_UP = 101, TAG_DOWN, TAG_LEFT, TAG_RIGHT, TAG_GATHER };
enum { V_BLOCKING, V_OVERLAP, V_PERSISTENT };
static const char *variant_names[] = { "blocking", "overlap", "persistent" };

static int rank, nprocs;

/* ---------------------------------------------------------------- options */

typedef struct {
    long rows, cols, iterations, report_interval;
    double threshold;
    int decomp_2d, variant, pgrid[2];
    const char *allreduce, *reduce, *init, *cond, *output, *output_format;
    unsigned long long seed;
} opts_t;

static void usage(void) {
    printf(
        "usage: colltune-heat [--rows R] [--cols C] [--iterations N] [--threshold T]\n"
        "                     [--report-interval K] [--decomp rows|2d] [--pgrid PRxPC]\n"
        "                     [--variant blocking|overlap|persistent] [--allreduce ALGO]\n"
        "                     [--reduce ALGO] [--seed S] [--init FILE.pgm]\n"
        "                     [--conductivity FILE.pgm] [--output FILE]\n"
        "                     [--output-format raw|pgm]\n\n"
        "  --rows, --cols     grid size (default 100 x 100, or the size of the PGM files)\n"
        "  --iterations       most iterations (default 1000)\n"
        "  --threshold        stop after the first iteration whose largest |change| is < T,\n"
        "                     found with Allreduce(MAX) each iteration (default 0: never)\n"
        "  --report-interval  every K iterations min/max/average temperature to rank 0 with\n"
        "                     Reduce(MIN/MAX/SUM) (default 0: no reports)\n"
        "  --decomp           rows: P x 1 process grid (default); 2d: blocks on a\n"
        "                     MPI_Dims_create grid, or the one --pgrid gives\n"
        "  --variant          blocking: compute, then MPI_Sendrecv halos; overlap: frame,\n"
        "                     Isend/Irecv, interior, Waitall (default); persistent: as\n"
        "                     overlap with Send_init/Recv_init + Startall\n"
        "  --allreduce        colltune Allreduce algorithm spec (default native)\n"
        "  --reduce           colltune Reduce algorithm spec (default native)\n"
        "  --seed             seed of the generated temperatures in [0,100] and conductivity\n"
        "                     weights in [0,0.25] (default 1)\n"
        "  --init             initial temperature from a P2/P5 PGM: 100*value/maxval\n"
        "  --conductivity     conductivity weights from a P2/P5 PGM: 0.25*value/maxval\n"
        "  --output           write the final grid (rank 0 gathers it)\n"
        "  --output-format    raw: R*C float64, row-major, native byte order (default);\n"
        "                     pgm: P5, maxval 65535, round(T/100*65535) clamped\n");
}

static double parse_double(const char *opt, const char *v) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < 0)
        ct_die(rank, "%s '%s': must be a finite number >= 0", opt, v);
    return x;
}

static void parse_args(int argc, char **argv, opts_t *o) {
    memset(o, 0, sizeof *o);
    o->rows = o->cols = -1;
    o->iterations = 1000;
    o->variant = V_OVERLAP;
    o->allreduce = o->reduce = "native";
    o->output_format = "raw";
    o->seed = 1;
    const char *decomp = "rows", *variant = "overlap", *pgrid = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) ct_die(rank, "%s needs a value (see --help)", a);
        if (!strcmp(a, "--rows")) o->rows = ct_parse_long(rank, a, v, 1, MAX_EDGE);
        else if (!strcmp(a, "--cols")) o->cols = ct_parse_long(rank, a, v, 1, MAX_EDGE);
        else if (!strcmp(a, "--iterations")) o->iterations = ct_parse_long(rank, a, v, 0, LONG_MAX);
        else if (!strcmp(a, "--threshold")) o->threshold = parse_double(a, v);
        else if (!strcmp(a, "--report-interval"))
            o->report_interval = ct_parse_long(rank, a, v, 0, LONG_MAX);
        else if (!strcmp(a, "--decomp")) decomp = v;
        else if (!strcmp(a, "--pgrid")) pgrid = v;
        else if (!strcmp(a, "--variant")) variant = v;
        else if (!strcmp(a, "--allreduce")) o->allreduce = v;
        else if (!strcmp(a, "--reduce")) o->reduce = v;
        else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            o->seed = strtoull(v, &end, 10);
            if (end == v || *end || errno || v[0] == '-')
                ct_die(rank, "--seed '%s': must be a whole number in 0..2^64-1", v);
        } else if (!strcmp(a, "--init")) o->init = v;
        else if (!strcmp(a, "--conductivity")) o->cond = v;
        else if (!strcmp(a, "--output")) o->output = v;
        else if (!strcmp(a, "--output-format")) o->output_format = v;
        else ct_die(rank, "unknown argument '%s' (see --help)", a);
        i++;
    }
    if (!strcmp(decomp, "rows")) o->decomp_2d = 0;
    else if (!strcmp(decomp, "2d")) o->decomp_2d = 1;
    else ct_die(rank, "--decomp '%s': valid: rows, 2d", decomp);
    int found = 0;
    for (int k = 0; k < 3; k++)
        if (!strcmp(variant, variant_names[k])) {
            o->variant = k;
            found = 1;
        }
    if (!found) ct_die(rank, "--variant '%s': valid: blocking, overlap, persistent", variant);
    if (strcmp(o->output_format, "raw") && strcmp(o->output_format, "pgm"))
        ct_die(rank, "--output-format '%s': valid: raw, pgm", o->output_format);
    if (pgrid) {
        if (!o->decomp_2d) ct_die(rank, "--pgrid applies to --decomp 2d only");
        int pr, pc;
        char tail;
        if (sscanf(pgrid, "%dx%d%c", &pr, &pc, &tail) != 2 || pr < 1 || pc < 1)
            ct_die(rank, "--pgrid '%s': expected PRxPC, e.g. 2x3", pgrid);
        if ((long)pr * pc != nprocs)
            ct_die(rank, "--pgrid %dx%d has %ld processes but %d are running", pr, pc,
                   (long)pr * pc, nprocs);
        o->pgrid[0] = pr;
        o->pgrid[1] = pc;
    }
}

/* ---------------------------------------------------------- initial fields */

/* splitmix64 finaliser: a counter-based generator, so a cell's initial value
 * depends only on (seed, field, global index), never on the decomposition. */
static uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1): 53 random bits of mix64(key ^ index) */
static double unit_value(uint64_t key, uint64_t index) {
    return (double)(mix64(key ^ index) >> 11) * 0x1.0p-53;
}

typedef struct {
    const ct_pgm_t *img; /* NULL: generated                */
    uint64_t key;        /* mix64(mix64(seed) + stream)    */
    double range;        /* T_RANGE or K_RANGE             */
    long cols;
} source_t;

static double source_value(const source_t *s, long gi, long gj) {
    if (s->img) {
        unsigned v = s->img->pix[(size_t)gi * (size_t)s->cols + (size_t)gj];
        return s->range * (double)v / (double)s->img->maxval;
    }
    return s->range * unit_value(s->key, (uint64_t)gi * (uint64_t)s->cols + (uint64_t)gj);
}

/* ---------------------------------------------------------------- domain */

typedef struct {
    MPI_Comm comm;                /* Cartesian, periodic in columns     */
    int dims[2], coords[2];
    int nr, nc, ld;               /* local rows, columns, row stride    */
    long r0, c0;                  /* global index of local cell (1, 1) */
    int up, down, left, right;
    double *g[2];                 /* two temperature buffers with halo  */
    double *k;                    /* conductivity, same layout          */
    MPI_Datatype col;             /* one column of nr cells             */
} dom_t;

/* block q of n items over p parts: sizes differ by at most one */
static void block(long n, int p, int q, long *start, long *count) {
    long base = n / p, extra = n % p;
    *start = q * base + (q < extra ? q : extra);
    *count = base + (q < extra ? 1 : 0);
}

#define AT(g, i, j) ((g)[(size_t)(i) * (size_t)d->ld + (size_t)(j)])

/* Sweep rows i0..i1, columns j0..j1 of cur into nxt; the largest |change|. */
static double sweep(const dom_t *d, const double *cur, double *nxt, int i0, int i1, int j0,
                    int j1) {
    return ct_heat_sweep(cur, nxt, d->k, (size_t)d->ld, i0, i1, j0, j1);
}

/* Frame: the cells whose new values the neighbours need. With Pc = 1 only the
 * first and last rows (the columns wrap locally). */
static double sweep_frame(const dom_t *d, const double *cur, double *nxt) {
    double m = sweep(d, cur, nxt, 1, 1, 1, d->nc);
    if (d->nr > 1) m = fmax(m, sweep(d, cur, nxt, d->nr, d->nr, 1, d->nc));
    if (d->dims[1] > 1 && d->nr > 2) {
        m = fmax(m, sweep(d, cur, nxt, 2, d->nr - 1, 1, 1));
        if (d->nc > 1) m = fmax(m, sweep(d, cur, nxt, 2, d->nr - 1, d->nc, d->nc));
    }
    return m;
}

static double sweep_interior(const dom_t *d, const double *cur, double *nxt) {
    if (d->nr <= 2) return 0.0;
    if (d->dims[1] == 1) return sweep(d, cur, nxt, 2, d->nr - 1, 1, d->nc);
    if (d->nc <= 2) return 0.0;
    return sweep(d, cur, nxt, 2, d->nr - 1, 2, d->nc - 1);
}

/* Pc = 1: the column halo is the other end of the same rows. */
static void wrap_columns(const dom_t *d, double *g) {
    for (int i = 1; i <= d->nr; i++) {
        AT(g, i, 0) = AT(g, i, d->nc);
        AT(g, i, d->nc + 1) = AT(g, i, 1);
    }
}

static void halo_blocking(const dom_t *d, double *g) {
    int nr = d->nr, nc = d->nc;
    MPI_Sendrecv(&AT(g, 1, 1), nc, MPI_DOUBLE, d->up, TAG_UP, &AT(g, nr + 1, 1), nc,
                 MPI_DOUBLE, d->down, TAG_UP, d->comm, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(g, nr, 1), nc, MPI_DOUBLE, d->down, TAG_DOWN, &AT(g, 0, 1), nc,
                 MPI_DOUBLE, d->up, TAG_DOWN, d->comm, MPI_STATUS_IGNORE);
    if (d->dims[1] > 1) {
        MPI_Sendrecv(&AT(g, 1, 1), 1, d->col, d->left, TAG_LEFT, &AT(g, 1, nc + 1), 1, d->col,
                     d->right, TAG_LEFT, d->comm, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&AT(g, 1, nc), 1, d->col, d->right, TAG_RIGHT, &AT(g, 1, 0), 1, d->col,
                     d->left, TAG_RIGHT, d->comm, MPI_STATUS_IGNORE);
    } else {
        wrap_columns(d, g);
    }
}

/* The halo requests of buffer g: receives first, then sends. persistent = 0:
 * started now (MPI_Irecv/MPI_Isend); 1: inactive persistent requests. */
static int halo_requests(const dom_t *d, double *g, MPI_Request *r, int persistent) {
    int nr = d->nr, nc = d->nc, n = 0;
    struct {
        int recv;
        double *buf;
        int count;
        MPI_Datatype dt;
        int peer, tag;
    } m[8] = {
        { 1, &AT(g, nr + 1, 1), nc, MPI_DOUBLE, d->down, TAG_UP },
        { 1, &AT(g, 0, 1), nc, MPI_DOUBLE, d->up, TAG_DOWN },
        { 0, &AT(g, 1, 1), nc, MPI_DOUBLE, d->up, TAG_UP },
        { 0, &AT(g, nr, 1), nc, MPI_DOUBLE, d->down, TAG_DOWN },
        { 1, &AT(g, 1, nc + 1), 1, d->col, d->right, TAG_LEFT },
        { 1, &AT(g, 1, 0), 1, d->col, d->left, TAG_RIGHT },
        { 0, &AT(g, 1, 1), 1, d->col, d->left, TAG_LEFT },
        { 0, &AT(g, 1, nc), 1, d->col, d->right, TAG_RIGHT },
    };
    int count = d->dims[1] > 1 ? 8 : 4;
    /* post all receives before any send */
    for (int pass = 1; pass >= 0; pass--)
        for (int q = 0; q < count; q++) {
            if (m[q].recv != pass) continue;
            if (m[q].recv && persistent)
                MPI_Recv_init(m[q].buf, m[q].count, m[q].dt, m[q].peer, m[q].tag, d->comm,
                              &r[n]);
            else if (m[q].recv)
                MPI_Irecv(m[q].buf, m[q].count, m[q].dt, m[q].peer, m[q].tag, d->comm, &r[n]);
            else if (persistent)
                MPI_Send_init(m[q].buf, m[q].count, m[q].dt, m[q].peer, m[q].tag, d->comm,
                              &r[n]);
            else
                MPI_Isend(m[q].buf, m[q].count, m[q].dt, m[q].peer, m[q].tag, d->comm, &r[n]);
            n++;
        }
    return n;
}

static void setup_domain(const opts_t *o, dom_t *d) {
    memset(d, 0, sizeof *d);
    if (!o->decomp_2d) {
        d->dims[0] = nprocs;
        d->dims[1] = 1;
    } else if (o->pgrid[0]) {
        d->dims[0] = o->pgrid[0];
        d->dims[1] = o->pgrid[1];
    } else {
        MPI_Dims_create(nprocs, 2, d->dims);
    }
    if (o->rows < d->dims[0])
        ct_die(rank, "%ld rows cannot be split over %d process rows (%dx%d process grid): "
                     "every process needs at least one row",
               o->rows, d->dims[0], d->dims[0], d->dims[1]);
    if (o->cols < d->dims[1])
        ct_die(rank, "%ld columns cannot be split over %d process columns (%dx%d process "
                     "grid): every process needs at least one column",
               o->cols, d->dims[1], d->dims[0], d->dims[1]);
    int periods[2] = { 0, 1 };
    MPI_Cart_create(MPI_COMM_WORLD, 2, d->dims, periods, 0, &d->comm);
    MPI_Cart_coords(d->comm, rank, 2, d->coords);
    MPI_Cart_shift(d->comm, 0, 1, &d->up, &d->down);
    MPI_Cart_shift(d->comm, 1, 1, &d->left, &d->right);
    long nr, nc;
    block(o->rows, d->dims[0], d->coords[0], &d->r0, &nr);
    block(o->cols, d->dims[1], d->coords[1], &d->c0, &nc);
    if (nr * nc > INT_MAX)
        ct_die(rank, "a block of %ld x %ld cells is too large for one process: use more "
                     "processes", nr, nc);
    d->nr = (int)nr;
    d->nc = (int)nc;
    d->ld = d->nc + 2;
    size_t cells = (size_t)(d->nr + 2) * (size_t)d->ld;
    int bad = 0;
    for (int b = 0; b < 2; b++) bad |= !(d->g[b] = calloc(cells, sizeof(double)));
    bad |= !(d->k = calloc(cells, sizeof(double)));
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (anybad)
        ct_die(rank, "cannot allocate 3 x %zu doubles per process for a %ld x %ld grid", cells,
               o->rows, o->cols);
    MPI_Type_vector(d->nr, 1, d->ld, MPI_DOUBLE, &d->col);
    MPI_Type_commit(&d->col);
}

static void fill_domain(const opts_t *o, dom_t *d, const source_t *ts, const source_t *ks) {
    double *g = d->g[0];
    for (int i = 1; i <= d->nr; i++)
        for (int j = 1; j <= d->nc; j++) {
            AT(g, i, j) = source_value(ts, d->r0 + i - 1, d->c0 + j - 1);
            AT(d->k, i, j) = source_value(ks, d->r0 + i - 1, d->c0 + j - 1);
        }
    /* fixed boundary rows: initial temperatures of the first and last grid row */
    if (d->up == MPI_PROC_NULL)
        for (int j = 1; j <= d->nc; j++) AT(g, 0, j) = source_value(ts, 0, d->c0 + j - 1);
    if (d->down == MPI_PROC_NULL)
        for (int j = 1; j <= d->nc; j++)
            AT(g, d->nr + 1, j) = source_value(ts, o->rows - 1, d->c0 + j - 1);
    halo_blocking(d, g);
    memcpy(d->g[1], g, (size_t)(d->nr + 2) * (size_t)d->ld * sizeof(double));
}

/* ---------------------------------------------------------------- output */

static void write_output(const opts_t *o, const dom_t *d, const double *g) {
    size_t n = (size_t)d->nr * (size_t)d->nc;
    double *mine = malloc((n ? n : 1) * sizeof *mine);
    if (!mine) ct_die(rank, "cannot allocate the output block");
    for (int i = 0; i < d->nr; i++)
        memcpy(mine + (size_t)i * d->nc, &AT(g, i + 1, 1), (size_t)d->nc * sizeof(double));
    if (rank != 0) {
        MPI_Send(mine, (int)n, MPI_DOUBLE, 0, TAG_GATHER, d->comm);
        free(mine);
        int ok;
        MPI_Bcast(&ok, 1, MPI_INT, 0, d->comm);
        if (!ok) ct_die(rank, "writing the output failed");
        return;
    }
    size_t total = (size_t)o->rows * (size_t)o->cols;
    double *all = malloc(total * sizeof *all);
    if (!all) ct_die(rank, "cannot allocate %zu doubles on rank 0 for --output", total);
    for (int r = 0; r < nprocs; r++) {
        int c[2];
        MPI_Cart_coords(d->comm, r, 2, c);
        long r0, nr, c0, nc;
        block(o->rows, d->dims[0], c[0], &r0, &nr);
        block(o->cols, d->dims[1], c[1], &c0, &nc);
        double *src = mine;
        if (r != 0) {
            src = malloc((size_t)(nr * nc) * sizeof *src);
            if (!src) ct_die(rank, "cannot allocate a receive block for --output");
            MPI_Recv(src, (int)(nr * nc), MPI_DOUBLE, r, TAG_GATHER, d->comm,
                     MPI_STATUS_IGNORE);
        }
        for (long i = 0; i < nr; i++)
            memcpy(all + (size_t)(r0 + i) * (size_t)o->cols + (size_t)c0,
                   src + (size_t)i * (size_t)nc, (size_t)nc * sizeof(double));
        if (r != 0) free(src);
    }
    free(mine);
    char err[512] = "";
    int ok = 1;
    if (!strcmp(o->output_format, "raw")) {
        FILE *f = fopen(o->output, "wb");
        if (!f || fwrite(all, sizeof(double), total, f) != total) ok = 0;
        if (f && fclose(f)) ok = 0;
        if (!ok) snprintf(err, sizeof err, "cannot write '%s'", o->output);
    } else {
        unsigned short *pix = malloc(total * sizeof *pix);
        if (!pix) ct_die(rank, "cannot allocate the PGM image");
        for (size_t i = 0; i < total; i++) {
            double v = nearbyint(all[i] / T_RANGE * 65535.0);
            pix[i] = (unsigned short)(v < 0 ? 0 : v > 65535 ? 65535 : v);
        }
        ok = ct_pgm_write16(o->output, (int)o->cols, (int)o->rows, pix, err, sizeof err) == 0;
        free(pix);
    }
    free(all);
    MPI_Bcast(&ok, 1, MPI_INT, 0, d->comm);
    if (!ok) ct_die(rank, "%s", err);
}

/* ---------------------------------------------------------------- main */

typedef struct {
    long iteration;
    double min, max, avg, max_change;
} report_t;

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) ct_die(rank, "%s failed: %s", what, ct_last_error());
}

static void load_pgm(const char *path, const char *what, ct_pgm_t *img, opts_t *o) {
    char err[512];
    int bad = ct_pgm_read(path, img, err, sizeof err) != 0;
    if (bad) ct_die(rank, "%s: %s", what, err);
    if (o->rows >= 0 && o->rows != img->height)
        ct_die(rank, "%s '%s' has %d rows but --rows is %ld", what, path, img->height, o->rows);
    if (o->cols >= 0 && o->cols != img->width)
        ct_die(rank, "%s '%s' has %d columns but --cols is %ld", what, path, img->width,
               o->cols);
    o->rows = img->height;
    o->cols = img->width;
}

static void note_dispatch(const char **used, char *fallback, size_t len) {
    const ct_dispatch_t *dd = ct_last_dispatch();
    const ct_algo_t *a = ct_algo_get(dd->used);
    *used = a ? a->name : "?";
    if (dd->reason[0] && !fallback[0]) snprintf(fallback, len, "%s", dd->reason);
}

static void json_opt_str(const char *key, const char *v) {
    printf(", \"%s\": ", key);
    if (v) ct_json_str(stdout, v);
    else printf("null");
}

int main(int argc, char **argv) {
    ct_start(&argc, &argv, usage, &rank, &nprocs);

    opts_t o;
    parse_args(argc, argv, &o);
    ct_choice_t ar_choice, red_choice;
    if (ct_choice_parse(CT_ALLREDUCE, o.allreduce, &ar_choice) != MPI_SUCCESS)
        ct_die(rank, "--allreduce: %s", ct_last_error());
    if (ct_choice_parse(CT_REDUCE, o.reduce, &red_choice) != MPI_SUCCESS)
        ct_die(rank, "--reduce: %s", ct_last_error());

    ct_pgm_t timg = { 0 }, kimg = { 0 };
    if (o.init) load_pgm(o.init, "--init", &timg, &o);
    if (o.cond) load_pgm(o.cond, "--conductivity", &kimg, &o);
    if (o.rows < 0) o.rows = 100;
    if (o.cols < 0) o.cols = 100;

    dom_t d;
    setup_domain(&o, &d);
    source_t ts = { o.init ? &timg : NULL, mix64(mix64(o.seed) + 1), T_RANGE, o.cols };
    source_t ks = { o.cond ? &kimg : NULL, mix64(mix64(o.seed) + 2), K_RANGE, o.cols };
    fill_domain(&o, &d, &ts, &ks);
    ct_pgm_free(&timg);
    ct_pgm_free(&kimg);

    /* persistent variant: one request set per buffer; set b exchanges g[b] */
    MPI_Request preq[2][8], req[8];
    int nreq = 0;
    if (o.variant == V_PERSISTENT)
        for (int b = 0; b < 2; b++) nreq = halo_requests(&d, d.g[b], preq[b], 1);

    long nrep_max = o.report_interval > 0 ? o.iterations / o.report_interval : 0;
    report_t *reports = rank == 0 && nrep_max > 0 ? malloc((size_t)nrep_max * sizeof *reports)
                                                  : NULL;
    long nreports = 0;
    const char *ar_used = NULL, *red_used = NULL;
    char ar_fallback[160] = "", red_fallback[160] = "";
    const double ncells = (double)o.rows * (double)o.cols;

    double t_comp = 0, t_halo = 0, t_coll = 0;
    double lmax = 0, gmax = 0;
    long done = 0;
    int cur = 0, converged = 0;
    MPI_Barrier(d.comm);
    const double t_start = MPI_Wtime();
    while (done < o.iterations) {
        double *src = d.g[cur], *dst = d.g[cur ^ 1];
        double t0 = MPI_Wtime(), t1, t2, t3, t4;
        if (o.variant == V_BLOCKING) {
            lmax = sweep(&d, src, dst, 1, d.nr, 1, d.nc);
            t1 = MPI_Wtime();
            halo_blocking(&d, dst);
            t4 = MPI_Wtime();
            t_comp += t1 - t0;
            t_halo += t4 - t1;
        } else {
            lmax = sweep_frame(&d, src, dst);
            t1 = MPI_Wtime();
            MPI_Request *r = req;
            if (o.variant == V_PERSISTENT) {
                r = preq[cur ^ 1];
                MPI_Startall(nreq, r);
            } else {
                nreq = halo_requests(&d, dst, r, 0);
            }
            t2 = MPI_Wtime();
            lmax = fmax(lmax, sweep_interior(&d, src, dst));
            t3 = MPI_Wtime();
            MPI_Waitall(nreq, r, MPI_STATUSES_IGNORE);
            if (d.dims[1] == 1) wrap_columns(&d, dst);
            t4 = MPI_Wtime();
            t_comp += (t1 - t0) + (t3 - t2);
            t_halo += (t2 - t1) + (t4 - t3);
        }
        cur ^= 1;
        done++;
        if (o.threshold > 0) {
            check(ct_allreduce(&ar_choice, &lmax, &gmax, 1, MPI_DOUBLE, MPI_MAX, d.comm),
                  "Allreduce of the largest change");
            if (!ar_used) note_dispatch(&ar_used, ar_fallback, sizeof ar_fallback);
            if (gmax < o.threshold) converged = 1;
        }
        if (o.report_interval > 0 && done % o.report_interval == 0) {
            const double *g = d.g[cur];
            double lmin = INFINITY, lmx = -INFINITY, lsum = 0;
            for (int i = 1; i <= d.nr; i++)
                for (int j = 1; j <= d.nc; j++) {
                    double v = g[(size_t)i * (size_t)d.ld + (size_t)j];
                    lmin = v < lmin ? v : lmin;
                    lmx = v > lmx ? v : lmx;
                    lsum += v;
                }
            double gmin = 0, gmx = 0, gsum = 0;
            check(ct_reduce(&red_choice, &lmin, &gmin, 1, MPI_DOUBLE, MPI_MIN, 0, d.comm),
                  "Reduce(MIN) of the temperatures");
            if (!red_used) note_dispatch(&red_used, red_fallback, sizeof red_fallback);
            check(ct_reduce(&red_choice, &lmx, &gmx, 1, MPI_DOUBLE, MPI_MAX, 0, d.comm),
                  "Reduce(MAX) of the temperatures");
            check(ct_reduce(&red_choice, &lsum, &gsum, 1, MPI_DOUBLE, MPI_SUM, 0, d.comm),
                  "Reduce(SUM) of the temperatures");
            if (rank == 0 && nreports < nrep_max)
                reports[nreports++] = (report_t){ done, gmin, gmx, gsum / ncells,
                                                  o.threshold > 0 ? gmax : NAN };
        }
        t_coll += MPI_Wtime() - t4;
        if (converged) break;
    }
    double t_total = MPI_Wtime() - t_start;

    /* the final largest change, when the loop did not already find it */
    int have_change = done > 0;
    if (have_change && o.threshold <= 0) {
        check(ct_allreduce(&ar_choice, &lmax, &gmax, 1, MPI_DOUBLE, MPI_MAX, d.comm),
              "Allreduce of the largest change");
        if (!ar_used) note_dispatch(&ar_used, ar_fallback, sizeof ar_fallback);
    }

    /* per-rank timers: max and mean over the ranks */
    double mine[4] = { t_total, t_comp, t_halo, t_coll }, tmax[4], tsum[4];
    MPI_Reduce(mine, tmax, 4, MPI_DOUBLE, MPI_MAX, 0, d.comm);
    MPI_Reduce(mine, tsum, 4, MPI_DOUBLE, MPI_SUM, 0, d.comm);

    if (o.variant == V_PERSISTENT)
        for (int b = 0; b < 2; b++)
            for (int q = 0; q < nreq; q++) MPI_Request_free(&preq[b][q]);

    if (o.output) write_output(&o, &d, d.g[cur]);

    if (rank == 0) {
        char ver[256];
        ct_mpi_version(ver, sizeof ver);
        for (long r = 0; r < nreports; r++) {
            printf("{\"kind\": \"heat_report\", \"iteration\": %ld, \"min\": %.17g, "
                   "\"max\": %.17g, \"avg\": %.17g, \"max_change\": ",
                   reports[r].iteration, reports[r].min, reports[r].max, reports[r].avg);
            if (isnan(reports[r].max_change)) printf("null}\n");
            else printf("%.17g}\n", reports[r].max_change);
        }
        double flops = (double)FLOPS_PER_CELL * ncells * (double)done;
        double time = tmax[0];
        printf("{\"kind\": \"heat\", \"np\": %d, \"rows\": %ld, \"cols\": %ld, "
               "\"decomp\": \"%s\", \"variant\": \"%s\", \"pgrid\": [%d, %d], "
               "\"iterations\": %ld, \"iterations_done\": %ld, \"threshold\": %.17g, "
               "\"converged\": %s, \"final_max_change\": ",
               nprocs, o.rows, o.cols, o.decomp_2d ? "2d" : "rows", variant_names[o.variant],
               d.dims[0], d.dims[1], o.iterations, done, o.threshold,
               converged ? "true" : "false");
        if (have_change) printf("%.17g", gmax);
        else printf("null");
        printf(", \"time_s\": %.9g, \"gflops\": %.6g, \"flops_per_cell\": %d, "
               "\"bytes_per_cell\": %d, "
               "\"comp_s_max\": %.9g, \"comp_s_mean\": %.9g, \"halo_s_max\": %.9g, "
               "\"halo_s_mean\": %.9g, \"coll_s_max\": %.9g, \"coll_s_mean\": %.9g, "
               "\"time_s_mean\": %.9g",
               time, time > 0 ? flops / time / 1e9 : 0.0, FLOPS_PER_CELL, BYTES_PER_CELL,
               tmax[1], tsum[1] / nprocs, tmax[2], tsum[2] / nprocs, tmax[3],
               tsum[3] / nprocs, tsum[0] / nprocs);
        json_opt_str("allreduce", o.allreduce);
        json_opt_str("allreduce_used", ar_used);
        json_opt_str("allreduce_fallback", ar_fallback[0] ? ar_fallback : NULL);
        json_opt_str("reduce", o.reduce);
        json_opt_str("reduce_used", red_used);
        json_opt_str("reduce_fallback", red_fallback[0] ? red_fallback : NULL);
        printf(", \"report_interval\": %ld, \"reports\": %ld, \"seed\": %llu", o.report_interval,
               nreports, o.seed);
        json_opt_str("init", o.init);
        json_opt_str("conductivity", o.cond);
        json_opt_str("output", o.output);
        json_opt_str("output_format", o.output ? o.output_format : NULL);
        json_opt_str("mpi", ver);
        printf("}\n");
        fflush(stdout);
    }
    free(reports);
    for (int b = 0; b < 2; b++) free(d.g[b]);
    free(d.k);
    MPI_Type_free(&d.col);
    MPI_Comm_free(&d.comm);
    MPI_Finalize();
    return 0;
}
