/*
 * shm.c -- the `shm` algorithms of Bcast, Reduce, Allreduce and Barrier: an MPI-3
 * shared-memory window per communicator whose ranks share memory (one node; the
 * intra phase of `hier`, intra=shm), created on first use, kept in an attribute of
 * the communicator and freed with it (the attribute's delete callback).
 *
 * The window: a control block (a barrier's counter and generation, in rank 0's
 * segment) and one slot per rank. The ranks synchronise by flags: a counter every
 * rank increments with an atomic add, the last one to arrive resets it and
 * advances the generation the others wait for (yielding the processor, as ranks
 * may share cores), and MPI_Win_sync (the window is locked for the whole of its
 * life, MPI_Win_lock_all) orders the slots' plain loads and stores around it.
 * Under SimGrid's SMPI the ranks are threads of one simulation that a spinning
 * rank would never give back the processor to: there the flags are PMPI_Barrier.
 *
 *  - Bcast: the root copies the message in (packed bytes of its datatype), each
 *    other rank copies it out (unpacked into its own): one copy in, one copy out;
 *    segsize > 0: in chunks through a ring of buffers, copy-in and copy-out
 *    overlapping (bcast_ring).
 *  - Reduce/Allreduce: every rank copies its input into its slot (the datatype's
 *    own layout), then reduces its share of the elements over all slots in rank
 *    order (any associative op), into the last slot; the root (every rank) copies
 *    the result out.
 *  - Barrier: the flags alone.
 * Messages larger than a slot go in slot-sized pieces. A communicator whose ranks
 * do not all share memory runs the declared fallback instead (ct_note_fallback
 * reports it).
 */
#include "ct_internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#define SHM_SLOT_MAX (4L << 20) /* bytes per rank at most: larger messages in pieces */
#define SHM_RING_N 4            /* buffers in Bcast's ring (segsize > 0)            */
#define SHM_CTRL 1024           /* the control block's bytes                        */

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "shm: flags shared between processes");

typedef struct {
    int L, rank, shared; /* shared: every rank of the communicator on one node */
    MPI_Win win;         /* MPI_WIN_NULL until the first call that needs one   */
    MPI_Aint slot;       /* bytes of each rank's slot                          */
    MPI_Aint chunk;      /* bytes of each buffer of Bcast's ring (0: none yet)   */
    char **slots;        /* L pointers                                         */
    _Atomic int *count, *gen;
    /* Bcast's ring (rank 0's segment, after its slot): buffer b holds chunk g when
     * g % SHM_RING_N == b; ready[b] = g + 1 once it is in, freed[b] counts the
     * readers' releases (L - 1 a chunk); chunks: the chunks so far (every rank) */
    char *ring;
    _Atomic long long *ready[SHM_RING_N], *freed[SHM_RING_N];
    long long chunks;
} shm_t;

static _Atomic int shm_key = MPI_KEYVAL_INVALID;
static _Atomic int live; /* windows allocated and not yet freed (ct_shm_windows) */

int ct_shm_windows(void) { return atomic_load(&live); }

static void win_free(shm_t *s, int finalized) {
    if (s->win != MPI_WIN_NULL && !finalized) {
        MPI_Win_unlock_all(s->win);
        MPI_Win_free(&s->win);
        atomic_fetch_sub(&live, 1);
    }
    s->win = MPI_WIN_NULL;
    free(s->slots);
    s->slots = NULL;
}

static int shm_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm; (void)key; (void)extra;
    int finalized = 0;
    MPI_Finalized(&finalized);
    win_free(val, finalized);
    free(val);
    return MPI_SUCCESS;
}

/* a window whose slots hold at least `bytes` and whose ring's buffers `chunk`
 * (collective: every rank asks the same); it only grows */
static int shm_window(shm_t *s, MPI_Aint bytes, MPI_Aint chunk, MPI_Comm comm) {
    if (s->win != MPI_WIN_NULL && s->slot >= bytes && s->chunk >= chunk) return MPI_SUCCESS;
    MPI_Aint slot = 4096;
    while (slot < bytes || (s->win != MPI_WIN_NULL && slot < s->slot)) slot *= 2;
    if (s->win != MPI_WIN_NULL && chunk < s->chunk) chunk = s->chunk;
    win_free(s, 0);
    char *base;
    const MPI_Aint ring = s->rank == 0 ? SHM_RING_N * chunk : 0;
    CT_CHECK(MPI_Win_allocate_shared(SHM_CTRL + slot + ring, 1, MPI_INFO_NULL, comm, &base,
                                     &s->win));
    atomic_fetch_add(&live, 1);
    s->slots = malloc((size_t)s->L * sizeof *s->slots);
    if (!s->slots) return ct_set_error(MPI_ERR_NO_MEM, "shm: out of memory");
    for (int j = 0; j < s->L; j++) {
        MPI_Aint size;
        int unit;
        char *p;
        CT_CHECK(MPI_Win_shared_query(s->win, j, &size, &unit, &p));
        s->slots[j] = p + SHM_CTRL;
        if (j == 0) { /* a cache line each */
            s->count = (_Atomic int *)p;
            s->gen = (_Atomic int *)(p + 64);
            for (int b = 0; b < SHM_RING_N; b++) {
                s->ready[b] = (_Atomic long long *)(p + 128 + 128 * b);
                s->freed[b] = (_Atomic long long *)(p + 192 + 128 * b);
            }
            s->ring = p + SHM_CTRL + slot;
        }
    }
    if (s->rank == 0) {
        atomic_store(s->count, 0);
        atomic_store(s->gen, 0);
        for (int b = 0; b < SHM_RING_N; b++) {
            atomic_store(s->ready[b], 0);
            atomic_store(s->freed[b], 0);
        }
    }
    s->slot = slot;
    s->chunk = chunk;
    s->chunks = 0;
    CT_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
    return PMPI_Barrier(comm); /* the control block is set before anyone uses it */
}

/* The communicator's shared-memory state (collective on first use). */
static int shm_get(MPI_Comm comm, shm_t **out) {
    int key = atomic_load_explicit(&shm_key, memory_order_acquire), found = 0;
    if (key == MPI_KEYVAL_INVALID) {
        int mine, none = MPI_KEYVAL_INVALID;
        CT_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, shm_delete, &mine, NULL));
        if (atomic_compare_exchange_strong(&shm_key, &none, mine)) key = mine;
        else {
            MPI_Comm_free_keyval(&mine);
            key = none;
        }
    }
    shm_t *s = NULL;
    CT_CHECK(MPI_Comm_get_attr(comm, key, &s, &found));
    if (found) {
        *out = s;
        return MPI_SUCCESS;
    }
    if (!(s = calloc(1, sizeof *s))) return ct_set_error(MPI_ERR_NO_MEM, "shm: out of memory");
    s->win = MPI_WIN_NULL;
    int rc = ct_comm_geom(comm, &s->L, &s->rank);
    MPI_Comm node = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &node);
    int n = 0, all = 0;
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &n);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    n = n == s->L;
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&n, &all, 1, MPI_INT, MPI_MIN, comm);
    s->shared = all;
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_attr(comm, key, s);
    if (rc != MPI_SUCCESS) {
        free(s);
        return rc;
    }
    *out = s;
    return MPI_SUCCESS;
}

/* every rank has arrived; the slots' stores before are visible to the loads after */
static int shm_sync(shm_t *s, MPI_Comm comm) {
#ifdef SMPI_SHARED_MALLOC
    /* SMPI: the ranks are threads of one process, and its MPI_Win_sync orders nothing:
     * a barrier is the synchronisation there */
    (void)s;
    return PMPI_Barrier(comm);
#else
    (void)comm;
    CT_CHECK(MPI_Win_sync(s->win));
    int g = atomic_load(s->gen);
    if (atomic_fetch_add(s->count, 1) == s->L - 1) {
        atomic_store(s->count, 0);
        atomic_fetch_add(s->gen, 1);
    } else {
        for (long spin = 0; atomic_load(s->gen) == g; spin++)
            if (spin > 64) sched_yield();
    }
    return MPI_Win_sync(s->win);
#endif
}

/* The state of comm, or a reported fallback when its ranks span nodes (*s NULL). */
static int shm_or_fallback(MPI_Comm comm, const char *coll, const char *fb, shm_t **out) {
    char why[128];
#ifdef SMPI_SHARED_MALLOC
    /* SimGrid's SMPI: its shared windows gave wrong Reduce results in verify (np 24 on
     * tapems-16x12), and it charges no time for copies through them: not used */
    (void)comm;
    snprintf(why, sizeof why, "%s/shm -> %s: not under SimGrid's SMPI", coll, fb);
    ct_note_fallback(why);
    *out = NULL;
    return MPI_SUCCESS;
#endif
    CT_CHECK(shm_get(comm, out));
    if ((*out)->shared) return MPI_SUCCESS;
    snprintf(why, sizeof why, "%s/shm -> %s: the ranks do not all share memory (one node)",
             coll, fb);
    ct_note_fallback(why);
    *out = NULL;
    return MPI_SUCCESS;
}

int ct_barrier_shm(MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    shm_t *s;
    CT_CHECK(shm_or_fallback(comm, "barrier", "bruck", &s));
    if (!s) return ct_run_barrier(ct_algo_find(CT_BARRIER, "bruck"), comm);
    CT_CHECK(shm_window(s, 0, 0, comm));
    return shm_sync(s, comm);
}

/* wait until *x >= v, yielding the processor (ranks may share cores) */
static void shm_wait(_Atomic long long *x, long long v) {
    for (long spin = 0; atomic_load(x) < v; spin++)
        if (spin > 64) sched_yield();
}

/* segsize 0: through slot 0, slot-sized pieces, both copies of a piece between
 * two barriers of the flags */
static int bcast_serial(shm_t *s, char *data, long long bytes, int root, MPI_Comm comm) {
    CT_CHECK(shm_window(s, bytes < SHM_SLOT_MAX ? bytes : SHM_SLOT_MAX, 0, comm));
    for (long long off = 0; off < bytes; off += s->slot) {
        const size_t n = (size_t)(bytes - off < s->slot ? bytes - off : s->slot);
        if (s->rank == root) memcpy(s->slots[0], data + off, n);
        CT_CHECK(shm_sync(s, comm));
        if (s->rank != root) memcpy(data + off, s->slots[0], n);
        CT_CHECK(shm_sync(s, comm)); /* the slot is free again */
    }
    return MPI_SUCCESS;
}

/* segsize > 0: a pipeline through the ring, chunks of seg bytes: the root copies
 * chunk g + 1 in while the others copy chunk g out; a buffer is refilled once its
 * L - 1 readers released it. The root returns without waiting for the last chunks'
 * readers (the next Bcast's root waits for them; MPI_Win_free is collective). */
static int bcast_ring(shm_t *s, char *data, long long bytes, long long seg, int root,
                      MPI_Comm comm) {
    const long long ch = seg < bytes ? seg : bytes;
    CT_CHECK(shm_window(s, 0, (MPI_Aint)ch, comm));
    for (long long off = 0; off < bytes; off += ch) {
        const size_t n = (size_t)(bytes - off < ch ? bytes - off : ch);
        const long long g = s->chunks++;
        const int b = (int)(g % SHM_RING_N);
        char *in = s->ring + b * s->chunk;
        if (s->rank == root) {
            shm_wait(s->freed[b], g / SHM_RING_N * (s->L - 1));
            CT_CHECK(MPI_Win_sync(s->win));
            memcpy(in, data + off, n);
            CT_CHECK(MPI_Win_sync(s->win));
            atomic_store(s->ready[b], g + 1);
        } else {
            shm_wait(s->ready[b], g + 1);
            CT_CHECK(MPI_Win_sync(s->win));
            memcpy(data + off, in, n);
            CT_CHECK(MPI_Win_sync(s->win));
            atomic_fetch_add(s->freed[b], 1);
        }
    }
    return MPI_SUCCESS;
}

int ct_bcast_shm(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                 const ct_params_t *prm) {
    shm_t *s;
    CT_CHECK(shm_or_fallback(comm, "bcast", "binomial", &s));
    if (!s) return ct_run_bcast(ct_algo_find(CT_BCAST, "binomial"), buf, count, dt, root, comm);
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    const long long bytes = (long long)count * t.size;
    if (s->L == 1 || bytes == 0) return MPI_SUCCESS;
    long long seg = CT_SEGSIZE(prm);
    if (seg > SHM_SLOT_MAX) seg = SHM_SLOT_MAX;
    /* a non-dense datatype goes as its packed stream */
    const int dense = ct_type_dense(dt, &t);
    char *stream = NULL;
    if (!dense && !(stream = malloc((size_t)bytes)))
        return ct_set_error(MPI_ERR_NO_MEM, "bcast/shm: out of memory (%lld bytes)", bytes);
    char *data = dense ? (char *)buf + t.true_lb : stream;
    int rc = MPI_SUCCESS;
    if (!dense && s->rank == root) CT_TRY(ct_pack_stream(buf, count, dt, &t, stream, comm));
    CT_TRY(seg > 0 ? bcast_ring(s, data, bytes, seg, root, comm)
                   : bcast_serial(s, data, bytes, root, comm));
    if (!dense && s->rank != root) CT_TRY(ct_unpack_stream(stream, buf, count, dt, &t, comm));
out:
    free(stream);
    return rc;
}

/* Reduce to every rank (root < 0) or to root. */
static int shm_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                      int root, shm_t *s, MPI_Comm comm) {
    ct_type_t t;
    CT_CHECK(ct_type(dt, &t));
    /* a piece of e elements: (e - 1) * extent + true_extent bytes in a slot */
    long long per = t.extent > 0 ? (SHM_SLOT_MAX - t.true_extent) / t.extent + 1 : count;
    if (per < 1) per = 1;
    if (per > count) per = count;
    CT_CHECK(shm_window(s, (MPI_Aint)((per - 1) * t.extent + t.true_extent), 0, comm));
    const void *in = ct_input_of(sbuf, rbuf);
    const int last = s->L - 1;
    for (long long e0 = 0; e0 < count; e0 += per) {
        const int e = (int)(count - e0 < per ? count - e0 : per);
        char *mine = s->slots[s->rank] - t.true_lb; /* element 0 of this piece */
        CT_CHECK(ct_copy(ct_elem(in, e0, &t), mine, e, dt));
        CT_CHECK(shm_sync(s, comm));
        /* my share of the elements, over every slot in rank order, into the last */
        const int c = ct_block_count(e, s->L, s->rank), b = ct_block_start(e, s->L, s->rank);
        char *acc = ct_elem(s->slots[last] - t.true_lb, b, &t);
        for (int j = last - 1; j >= 0 && c > 0; j--)
            CT_CHECK(MPI_Reduce_local(ct_elem(s->slots[j] - t.true_lb, b, &t), acc, c, dt, op));
        CT_CHECK(shm_sync(s, comm));
        if (root < 0 || s->rank == root)
            CT_CHECK(ct_copy(s->slots[last] - t.true_lb, ct_elem(rbuf, e0, &t), e, dt));
        CT_CHECK(shm_sync(s, comm)); /* the slots are free again */
    }
    return MPI_SUCCESS;
}

int ct_reduce_shm(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                  MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    shm_t *s;
    CT_CHECK(shm_or_fallback(comm, "reduce", "in_order_binary", &s));
    if (!s)
        return ct_run_reduce(ct_algo_find(CT_REDUCE, "in_order_binary"), sbuf, rbuf, count, dt,
                             op, root, comm);
    return shm_reduce(sbuf, rbuf, count, dt, op, root, s, comm);
}

int ct_allreduce_shm(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                     MPI_Comm comm, const ct_params_t *prm) {
    (void)prm;
    shm_t *s;
    CT_CHECK(shm_or_fallback(comm, "allreduce", "recursive_doubling", &s));
    if (!s)
        return ct_run_allreduce(ct_algo_find(CT_ALLREDUCE, "recursive_doubling"), sbuf, rbuf,
                                count, dt, op, comm);
    return shm_reduce(sbuf, rbuf, count, dt, op, -1, s, comm);
}
