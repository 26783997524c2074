/* util.c -- datatype geometry, temporary buffers, local copies, errors. */
#include "ct_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char last_error[512];

int ct_set_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *ct_last_error(void) { return last_error; }

int ct_type(MPI_Datatype dt, ct_type_t *t) {
    CT_CHECK(MPI_Type_get_extent(dt, &t->lb, &t->extent));
    CT_CHECK(MPI_Type_get_true_extent(dt, &t->true_lb, &t->true_extent));
    CT_CHECK(MPI_Type_size(dt, &t->size));
    return MPI_SUCCESS;
}

void *ct_tmp_alloc(MPI_Aint count, const ct_type_t *t, void **raw) {
    /* count elements span (count-1)*extent + true_extent bytes from true_lb */
    MPI_Aint bytes = count > 0 ? (count - 1) * t->extent + t->true_extent : 1;
    if (bytes <= 0) bytes = 1;
    *raw = malloc((size_t)bytes);
    if (!*raw) return NULL;
    return (char *)*raw - t->true_lb;
}

int ct_copy(const void *src, void *dst, int count, MPI_Datatype dt) {
    if (count <= 0 || src == dst) return MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    if (t.size == t.extent && t.size == t.true_extent) {
        /* dense elements (no holes, no gaps between them): one memmove, several
         * times cheaper than a self send/receive for both small and large counts */
        memmove((char *)dst + t.true_lb, (const char *)src + t.true_lb,
                (size_t)count * (size_t)t.size);
        return MPI_SUCCESS;
    }
    /* a self send/receive copies any datatype, holes untouched */
    return MPI_Sendrecv(src, count, dt, 0, 0, dst, count, dt, 0, 0, MPI_COMM_SELF,
                        MPI_STATUS_IGNORE);
}

int ct_copy_sig(const void *src, int scount, MPI_Datatype sdt, void *dst, int rcount,
                MPI_Datatype rdt) {
    if (sdt == rdt && scount == rcount) return ct_copy(src, dst, scount, sdt);
    /* two layouts of one type signature: the self send/receive converts */
    return MPI_Sendrecv(src, scount, sdt, 0, 0, dst, rcount, rdt, 0, 0, MPI_COMM_SELF,
                        MPI_STATUS_IGNORE);
}

int ct_seg_elems(long segsize, int count, const ct_type_t *t) {
    if (segsize <= 0 || t->size <= 0) return count > 0 ? count : 1;
    long e = segsize / t->size;
    if (e < 1) e = 1;
    if (e > count) e = count;
    return e > 0 ? (int)e : 1;
}
