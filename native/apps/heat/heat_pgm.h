/* heat_pgm.h -- reading and writing PGM (portable graymap) images for colltune-heat. */
#ifndef CT_HEAT_PGM_H
#define CT_HEAT_PGM_H

#include <stddef.h>

typedef struct {
    int width, height;   /* columns, rows                         */
    int maxval;          /* 1..65535                              */
    unsigned short *pix; /* height * width values, row-major      */
} ct_pgm_t;

/* Read a P2 (plain, ASCII) or P5 (raw; 1 byte per value if maxval < 256,
 * else 2 bytes, most significant first) image. Comments (# to end of line)
 * are allowed between header fields and, in P2, between values. Only the
 * first image of a file is read. Returns 0, or -1 with a message in err. */
int ct_pgm_read(const char *path, ct_pgm_t *img, char *err, size_t errlen);

/* Write a P5 image with maxval 65535 (2 bytes per value, big-endian). */
int ct_pgm_write16(const char *path, int width, int height, const unsigned short *pix,
                   char *err, size_t errlen);

void ct_pgm_free(ct_pgm_t *img);

#endif
