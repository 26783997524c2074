/* heat_pgm.c -- PGM (P2/P5) reader and 16-bit P5 writer for colltune-heat. */
#include "heat_pgm.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Cursor over the file's bytes. */
typedef struct {
    const unsigned char *p, *end;
} cursor_t;

/* Skip whitespace and # comments. */
static void skip_space(cursor_t *c) {
    while (c->p < c->end) {
        if (*c->p == '#') {
            while (c->p < c->end && *c->p != '\n' && *c->p != '\r') c->p++;
        } else if (isspace(*c->p)) {
            c->p++;
        } else {
            break;
        }
    }
}

/* A decimal number after optional whitespace/comments; -1 if none or too big. */
static long read_number(cursor_t *c) {
    skip_space(c);
    if (c->p >= c->end || !isdigit(*c->p)) return -1;
    long v = 0;
    while (c->p < c->end && isdigit(*c->p)) {
        v = v * 10 + (*c->p - '0');
        if (v > INT_MAX) return -1;
        c->p++;
    }
    return v;
}

static int slurp(const char *path, unsigned char **data, size_t *len, char *err,
                 size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return fail(err, errlen, "'%s': out of memory", path);
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *bigger = realloc(buf, cap * 2);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return fail(err, errlen, "cannot read '%s'", path);
    }
    *data = buf;
    *len = n;
    return 0;
}

int ct_pgm_read(const char *path, ct_pgm_t *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    unsigned char *data = NULL;
    size_t len = 0;
    if (slurp(path, &data, &len, err, errlen)) return -1;
    cursor_t c = { data, data + len };
    int plain;
    if (len >= 2 && data[0] == 'P' && data[1] == '2') plain = 1;
    else if (len >= 2 && data[0] == 'P' && data[1] == '5') plain = 0;
    else {
        free(data);
        return fail(err, errlen, "'%s' is not a PGM image (expected magic P2 or P5)", path);
    }
    c.p += 2;
    long w = read_number(&c), h = read_number(&c), maxval = read_number(&c);
    if (w < 1 || h < 1) {
        free(data);
        return fail(err, errlen, "'%s': bad PGM header: width and height must be positive "
                                 "whole numbers", path);
    }
    if (maxval < 1 || maxval > 65535) {
        free(data);
        return fail(err, errlen, "'%s': bad PGM header: maxval must be in 1..65535", path);
    }
    if ((size_t)w * (size_t)h > (size_t)INT_MAX) {
        free(data);
        return fail(err, errlen, "'%s': %ld x %ld pixels is too large", path, w, h);
    }
    size_t n = (size_t)w * (size_t)h;
    unsigned short *pix = malloc(n * sizeof *pix);
    if (!pix) {
        free(data);
        return fail(err, errlen, "'%s': out of memory for %ld x %ld pixels", path, w, h);
    }
    if (plain) {
        for (size_t i = 0; i < n; i++) {
            long v = read_number(&c);
            if (v < 0) {
                free(data);
                free(pix);
                return fail(err, errlen, "'%s': P2 data ends or is not a number at value %zu "
                                         "of %zu", path, i + 1, n);
            }
            if (v > maxval) {
                free(data);
                free(pix);
                return fail(err, errlen, "'%s': value %ld at pixel %zu exceeds maxval %ld",
                            path, v, i + 1, maxval);
            }
            pix[i] = (unsigned short)v;
        }
    } else {
        /* exactly one whitespace character separates maxval from the raster */
        if (c.p >= c.end || !isspace(*c.p)) {
            free(data);
            free(pix);
            return fail(err, errlen, "'%s': bad P5 header: no whitespace after maxval", path);
        }
        c.p++;
        size_t bpp = maxval < 256 ? 1 : 2;
        if ((size_t)(c.end - c.p) < n * bpp) {
            free(data);
            free(pix);
            return fail(err, errlen, "'%s': P5 raster is truncated: %zu bytes, %zu needed", path,
                        (size_t)(c.end - c.p), n * bpp);
        }
        for (size_t i = 0; i < n; i++) {
            unsigned v = bpp == 1 ? c.p[i] : ((unsigned)c.p[2 * i] << 8) | c.p[2 * i + 1];
            if (v > (unsigned)maxval) {
                free(data);
                free(pix);
                return fail(err, errlen, "'%s': value %u at pixel %zu exceeds maxval %ld",
                            path, v, i + 1, maxval);
            }
            pix[i] = (unsigned short)v;
        }
    }
    free(data);
    img->width = (int)w;
    img->height = (int)h;
    img->maxval = (int)maxval;
    img->pix = pix;
    return 0;
}

int ct_pgm_write16(const char *path, int width, int height, const unsigned short *pix,
                   char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, errlen, "cannot create '%s': %s", path, strerror(errno));
    fprintf(f, "P5\n# colltune-heat temperature, 0..65535 = 0..100\n%d %d\n65535\n", width,
            height);
    size_t n = (size_t)width * (size_t)height;
    unsigned char buf[4096];
    size_t used = 0;
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        buf[used++] = (unsigned char)(pix[i] >> 8);
        buf[used++] = (unsigned char)(pix[i] & 0xff);
        if (used == sizeof buf) {
            bad = fwrite(buf, 1, used, f) != used;
            used = 0;
        }
    }
    if (!bad && used) bad = fwrite(buf, 1, used, f) != used;
    if (fclose(f) || bad) return fail(err, errlen, "cannot write '%s'", path);
    return 0;
}

void ct_pgm_free(ct_pgm_t *img) {
    free(img->pix);
    img->pix = NULL;
}
