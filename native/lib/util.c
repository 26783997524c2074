/* util.c -- datatype geometry, temporary buffers, local copies, message blocks,
 * errors: the helpers every algorithm file shares. */
#include "ct_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>

/* per thread: a thread's ct_last_error() is the message of its own last error */
static _Thread_local char last_error[512];

int ct_set_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *ct_last_error(void) { return last_error; }

/* The geometry of the predefined datatypes a process uses, remembered: they are
 * never freed, so their handles never change meaning (a derived type's handle
 * may be reused after MPI_Type_free, so derived types are always asked).
 * Threads: entries are only ever added, under a lock, each written before the
 * count that makes it visible is published; readers take no lock. */
ct_tcache_entry_t ct_tcache_[CT_TCACHE];
_Atomic int ct_tcache_n_;
static pthread_mutex_t tcache_lock = PTHREAD_MUTEX_INITIALIZER;

static void tcache_add(MPI_Datatype dt, const ct_type_t *t) {
    pthread_mutex_lock(&tcache_lock);
    int n = atomic_load_explicit(&ct_tcache_n_, memory_order_relaxed);
    if (n < CT_TCACHE && !ct_type_cached(dt)) {
        ct_tcache_[n].dt = dt;
        ct_tcache_[n].t = *t;
        atomic_store_explicit(&ct_tcache_n_, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&tcache_lock);
}

int ct_type_slow(MPI_Datatype dt, ct_type_t *t) {
    CT_CHECK(MPI_Type_get_extent(dt, &t->lb, &t->extent));
    CT_CHECK(MPI_Type_get_true_extent(dt, &t->true_lb, &t->true_extent));
    CT_CHECK(MPI_Type_size(dt, &t->size));
    int ni, na, nd, comb;
    if (atomic_load_explicit(&ct_tcache_n_, memory_order_relaxed) < CT_TCACHE &&
        MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
        comb == MPI_COMBINER_NAMED)
        tcache_add(dt, t);
    return MPI_SUCCESS;
}

/* ct_type_size out of line, for the interposition library (pmpi_internal.h) */
int ct_type_size_call(MPI_Datatype dt, int *size) { return ct_type_size(dt, size); }

int ct_type_size_slow(MPI_Datatype dt, int *size) {
    CT_CHECK(MPI_Type_size(dt, size));
    int ni, na, nd, comb;
    ct_type_t t;
    if (atomic_load_explicit(&ct_tcache_n_, memory_order_relaxed) < CT_TCACHE &&
        MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
        comb == MPI_COMBINER_NAMED)
        (void)ct_type_slow(dt, &t); /* a predefined type's first use: remember it */
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

/* The tag of this thread's self send/receives on MPI_COMM_SELF: threads copying at
 * the same time must not receive each other's message. Distinct for the first
 * 32768 threads of the process (MPI guarantees tags up to 32767), then reused. */
static int self_tag(void) {
    static _Atomic unsigned next;
    static _Thread_local int tag = -1;
    if (tag < 0) tag = (int)(atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % 32768u);
    return tag;
}

void *ct_tmp_alloc_in(MPI_Aint count, const ct_type_t *t, void **raw, void *small,
                      size_t bytes) {
    MPI_Aint need = count > 0 ? (count - 1) * t->extent + t->true_extent : 1;
    if (need > 0 && (size_t)need <= bytes) {
        *raw = NULL;
        return (char *)small - t->true_lb;
    }
    return ct_tmp_alloc(count, t, raw);
}

int ct_copy(const void *src, void *dst, int count, MPI_Datatype dt) {
    if (count <= 0 || src == dst) return MPI_SUCCESS;
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    return ct_copy_t(src, dst, count, dt, &t);
}

int ct_copy_t(const void *src, void *dst, int count, MPI_Datatype dt, const ct_type_t *t) {
    if (count <= 0 || src == dst) return MPI_SUCCESS;
    if (t->size == t->extent && t->size == t->true_extent) {
        CT_SIM_CHARGE(CT_SIM_COPY, (double)count * t->size); /* SMPI only (simcharge.h) */
        CT_SIM_WROTE((char *)dst + t->true_lb, (double)count * t->size);
        /* dense elements (no holes, no gaps between them): one memmove, several
         * times cheaper than a self send/receive for both small and large counts;
         * charged but not done in a timing-only simulation (colltune.h) */
        if (!CT_SIM_TIMING_ONLY())
            memmove((char *)dst + t->true_lb, (const char *)src + t->true_lb,
                    (size_t)count * (size_t)t->size);
        return MPI_SUCCESS;
    }
    /* a self send/receive copies any datatype, holes untouched */
    int tag = self_tag();
    return MPI_Sendrecv(src, count, dt, 0, tag, dst, count, dt, 0, tag, MPI_COMM_SELF,
                        MPI_STATUS_IGNORE);
}

int ct_copy_sig(const void *src, int scount, MPI_Datatype sdt, void *dst, int rcount,
                MPI_Datatype rdt) {
    if (sdt == rdt && scount == rcount) return ct_copy(src, dst, scount, sdt);
    /* an empty signature (0 elements, or elements of a zero-size type, on either side:
     * they match) moves nothing; no self send/receive (SimGrid's SMPI divides by the
     * type size there) */
    int rsize;
    CT_CHECK(ct_type_size(rdt, &rsize));
    if (rcount == 0 || rsize == 0) return MPI_SUCCESS;
    /* two layouts of one type signature: the self send/receive converts */
    int tag = self_tag();
    return MPI_Sendrecv(src, scount, sdt, 0, tag, dst, rcount, rdt, 0, tag, MPI_COMM_SELF,
                        MPI_STATUS_IGNORE);
}

int ct_seg_elems(long segsize, int count, const ct_type_t *t) {
    if (segsize <= 0 || t->size <= 0) return count > 0 ? count : 1;
    long e = segsize / t->size;
    if (e < 1) e = 1;
    if (e > count) e = count;
    return e > 0 ? (int)e : 1;
}

int ct_blk_init(ct_blk_t *b, int count, MPI_Datatype dt, int nmax) {
    b->owned = 0;
    CT_CHECK(ct_type(dt, &b->t));
    b->ext = (MPI_Aint)count * b->t.extent;
    if (count <= 0 || (long long)count * (nmax > 0 ? nmax : 1) <= INT_MAX) { /* no division */
        b->dt = dt;
        b->per = count;
        return MPI_SUCCESS;
    }
    CT_CHECK(MPI_Type_contiguous(count, dt, &b->dt));
    int rc = MPI_Type_commit(&b->dt);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(&b->dt);
        return rc;
    }
    b->owned = 1;
    b->per = 1;
    return MPI_SUCCESS;
}

void ct_blk_free(ct_blk_t *b) {
    if (b->owned) MPI_Type_free(&b->dt);
    b->owned = 0;
}

/* ---- the type signature as a byte stream ---------------------------------- */

/* 1 if one element of dt (and so count elements of it) is its own type
 * signature in memory: size == extent == true_extent and the basic elements lie
 * back to back in signature order. Decided from the datatype's constructor
 * (MPI_Type_get_envelope/contents), conservatively: constructors not handled
 * here count as not dense, which only costs a pack. */
static int dense_rec(MPI_Datatype dt, int depth) {
    int ni, na, nd, comb;
    ct_type_t t;
    if (ct_type(dt, &t) != MPI_SUCCESS) return 0;
    if (t.size == 0) return 1;
    if (t.size != t.extent || t.size != t.true_extent) return 0;
    if (MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
    if (comb == MPI_COMBINER_NAMED) return 1;
    if (depth > 16) return 0;
    int ok = 0;
    int *iv = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *av = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *dv = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    if (!iv || !av || !dv) goto out;
    if (MPI_Type_get_contents(dt, ni, na, nd, iv, av, dv) != MPI_SUCCESS) {
        nd = 0;
        goto out;
    }
    /* every constituent type must be dense itself */
    for (int i = 0; i < nd; i++)
        if (!dense_rec(dv[i], depth + 1)) goto out;
    ct_type_t o;
    if (nd < 1 || ct_type(dv[0], &o) != MPI_SUCCESS) goto out;
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_CONTIGUOUS:
    case MPI_COMBINER_RESIZED:
        ok = 1; /* the top-level size/extent test did the rest */
        break;
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride (elements) */
        ok = iv[0] <= 1 || iv[1] == iv[2];
        break;
    case MPI_COMBINER_HVECTOR: /* count, blocklength; stride (bytes) */
        ok = iv[0] <= 1 || (MPI_Aint)iv[1] * o.extent == av[0];
        break;
    case MPI_COMBINER_INDEXED:        /* count, bl[count], disp[count] (elements) */
    case MPI_COMBINER_HINDEXED:       /* count, bl[count]; disp[count] (bytes)    */
    case MPI_COMBINER_INDEXED_BLOCK:  /* count, bl, disp[count] (elements)         */
    case MPI_COMBINER_HINDEXED_BLOCK: /* count, bl; disp[count] (bytes)            */
    case MPI_COMBINER_STRUCT: {       /* count, bl[count]; disp[count]; types     */
        int n = iv[0];
        MPI_Aint next = 0;
        int started = 0;
        ok = 1;
        for (int i = 0; i < n && ok; i++) {
            int bl = (comb == MPI_COMBINER_INDEXED_BLOCK || comb == MPI_COMBINER_HINDEXED_BLOCK)
                         ? iv[1] : iv[1 + i];
            MPI_Aint disp;
            ct_type_t bt = o;
            if (comb == MPI_COMBINER_STRUCT) {
                if (ct_type(dv[i], &bt) != MPI_SUCCESS) { ok = 0; break; }
            }
            if (comb == MPI_COMBINER_INDEXED) disp = (MPI_Aint)iv[1 + n + i] * o.extent;
            else if (comb == MPI_COMBINER_INDEXED_BLOCK) disp = (MPI_Aint)iv[2 + i] * o.extent;
            else disp = av[i];
            if (bl == 0 || bt.size == 0) continue;
            MPI_Aint first = disp + bt.true_lb;
            if (started && first != next) ok = 0;
            started = 1;
            next = first + (MPI_Aint)bl * bt.size;
        }
        break;
    }
    default:
        ok = 0;
        break;
    }
out:
    for (int i = 0; i < nd && dv; i++) {
        int a, b, c, k;
        if (MPI_Type_get_envelope(dv[i], &a, &b, &c, &k) == MPI_SUCCESS &&
            k != MPI_COMBINER_NAMED)
            MPI_Type_free(&dv[i]);
    }
    free(iv);
    free(av);
    free(dv);
    return ok;
}

int ct_type_dense(MPI_Datatype dt, const ct_type_t *t) {
    /* the common cases without decoding: no data, gaps or holes, a predefined type */
    if (t->size == 0) return 1;
    if (t->size != t->extent || t->size != t->true_extent) return 0;
    if (ct_type_cached(dt)) return 1; /* predefined */
    int ni, na, nd, comb;
    if (MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
    return comb == MPI_COMBINER_NAMED ? 1 : dense_rec(dt, 0);
}

/* Elements per MPI_Pack/MPI_Unpack call: whole elements, at most 1 GiB, so the
 * int sizes and positions of those calls never overflow. */
static int pack_chunk(int size) {
    long e = size > 0 ? (long)CT_PIECE / size : 1;
    return e < 1 ? 1 : e > INT_MAX ? INT_MAX : (int)e;
}

int ct_pack_stream(const void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                   char *out, MPI_Comm comm) {
    const int chunk = pack_chunk(t->size);
    for (int i = 0; i < count; i += chunk) {
        int m = count - i < chunk ? count - i : chunk, pos = 0;
        MPI_Aint bytes = (MPI_Aint)m * t->size;
        CT_CHECK(MPI_Pack(ct_elem(buf, i, t), m, dt, out + (MPI_Aint)i * t->size, (int)bytes,
                          &pos, comm));
        if (pos != bytes)
            return ct_set_error(MPI_ERR_INTERN, "MPI_Pack wrote %d bytes for %ld bytes of "
                                "type signature (a heterogeneous system?)", pos, (long)bytes);
    }
    return MPI_SUCCESS;
}

int ct_unpack_stream(const char *in, void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                     MPI_Comm comm) {
    const int chunk = pack_chunk(t->size);
    for (int i = 0; i < count; i += chunk) {
        int m = count - i < chunk ? count - i : chunk, pos = 0;
        MPI_Aint bytes = (MPI_Aint)m * t->size;
        CT_CHECK(MPI_Unpack(in + (MPI_Aint)i * t->size, (int)bytes, &pos, ct_elem(buf, i, t), m,
                            dt, comm));
    }
    return MPI_SUCCESS;
}

int ct_to_stream(const void *buf, int count, MPI_Datatype dt, const ct_type_t *t, int dense,
                 char *out, MPI_Comm comm) {
    if (dense) {
        CT_SIM_CHARGE(CT_SIM_COPY, (double)count * t->size); /* SMPI only (simcharge.h) */
        memcpy(out, (const char *)buf + t->true_lb, (size_t)count * (size_t)t->size);
        return MPI_SUCCESS;
    }
    return ct_pack_stream(buf, count, dt, t, out, comm);
}

int ct_from_stream(const char *in, void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                   int dense, MPI_Comm comm) {
    if (dense) {
        CT_SIM_CHARGE(CT_SIM_COPY, (double)count * t->size); /* SMPI only (simcharge.h) */
        memcpy((char *)buf + t->true_lb, in, (size_t)count * (size_t)t->size);
        return MPI_SUCCESS;
    }
    return ct_unpack_stream(in, buf, count, dt, t, comm);
}
