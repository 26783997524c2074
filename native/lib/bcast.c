/*
 * bcast.c -- Bcast algorithms (see registry.c for the table).
 *
 * Ranks are handled relative to the root: v = (rank - root + p) % p, so the
 * root is always v = 0 and a relative rank w is the real rank (w + root) % p.
 *
 * The tree algorithms (chain, pipeline, binary, split_binary, binomial,
 * knomial, _broken) differ only in the shape of the tree: each one builds its
 * parent/children lists and hands them to tree_pipeline(), which moves the
 * message down the tree in segments with nonblocking operations so that a
 * rank receives segment s+1 while it forwards segment s.
 */
#include "ct_internal.h"

#include <limits.h>

/* ---- small helpers --------------------------------------------------------- */

/* No division: an integer division costs more than the rest of a small
 * broadcast's tree set-up (about half of knomial_bcast's time at 8 B, perf). */
static inline int rel_rank(int rank, int root, int p) {
    const int v = rank - root; /* rank and root are ranks of comm */
    return v < 0 ? v + p : v;
}
static inline int real_rank(int v, int root, int p) {
    int r = v + root; /* v >= 0 */
    while (r >= p) r -= p;
    return r;
}

/* The cutting unit of an n-byte stream: the largest power of two up to 8 that
 * divides n. Segment and block boundaries fall on multiples of it, so a message
 * of basic elements of up to 8 bytes is never cut inside an element (the same
 * cuts as whole elements gave), and it depends on n only: every rank agrees. */
static inline MPI_Aint stream_unit(MPI_Aint n) {
    if (n <= 0) return 1;
    const MPI_Aint low = n & -n; /* the lowest set bit: the largest power of two dividing n */
    return low < 8 ? low : 8;
}

/* A tree node as seen by one rank: parent and children as real ranks. */
#define TREE_LOCAL 8
typedef struct {
    int parent;             /* real rank, -1 at the root               */
    int nchild;             /* children, in the order they are served  */
    int *child;             /* points into local[] or a malloc'ed list */
    int local[TREE_LOCAL];
} tree_t;

/* Make room for up to maxchild children. */
static int tree_init(tree_t *tr, int maxchild) {
    tr->parent = -1;
    tr->nchild = 0;
    tr->child = tr->local;
    if (maxchild > TREE_LOCAL) {
        tr->child = malloc((size_t)maxchild * sizeof(int));
        if (!tr->child) {
            tr->child = tr->local;
            return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for a %d-child tree",
                                maxchild);
        }
    }
    return MPI_SUCCESS;
}

static void tree_free(tree_t *tr) {
    if (tr->child != tr->local) free(tr->child);
    tr->child = tr->local;
}

/*
 * How a message moves: n units of dt, unit i at base + i*ext, in segments of
 * seg units, always in byte mode (stream_open): the type signature's bytes as
 * MPI_BYTE, cut at the same byte offsets on every rank whatever its datatype
 * (see ct_internal.h). A message that is not cut travels in the caller's own
 * count and datatype instead (tree_once).
 */
typedef struct {
    char *base;
    MPI_Aint n, ext, seg;
    MPI_Aint unit; /* byte mode: boundaries fall on multiples of it (stream_unit) */
    MPI_Datatype dt;
    void *tmp;  /* byte mode on a rank whose datatype is not dense: the packed copy */
} msg_t;

/* Segment bytes for segsize on an n-byte stream: a multiple of the unit, at
 * least one unit, at most CT_PIECE (segsize 0: CT_PIECE). */
static MPI_Aint seg_bytes(long segsize, MPI_Aint n) {
    const MPI_Aint u = stream_unit(n);
    MPI_Aint seg = segsize > 0 && segsize < CT_PIECE ? segsize : CT_PIECE;
    seg &= ~(u - 1); /* u is a power of two */
    return seg < u ? u : seg;
}

/* 1 if segsize cuts a message of count x dt (decided on the signature's bytes,
 * so every rank decides the same). */
static int segmented(long segsize, int count, const ct_type_t *t) {
    return segsize > 0 && seg_bytes(segsize, (MPI_Aint)count * t->size) < (MPI_Aint)count * t->size;
}

/* The message as a byte stream in segments of segsize bytes (0: one segment,
 * at most CT_PIECE). A dense datatype is its own stream; otherwise the root
 * packs the message into a temporary here and the others unpack it in
 * stream_close. */
static inline int stream_open(msg_t *m, void *buf, int count, MPI_Datatype dt, const ct_type_t *t,
                              int is_root, long segsize, MPI_Comm comm) {
    m->n = (MPI_Aint)count * t->size;
    m->ext = 1;
    m->dt = MPI_BYTE;
    m->unit = stream_unit(m->n);
    m->seg = seg_bytes(segsize, m->n);
    if (m->seg > m->n) m->seg = m->n > 0 ? m->n : 1;
    m->tmp = NULL;
    m->base = (char *)buf + t->true_lb;
    if (ct_type_dense(dt, t)) return MPI_SUCCESS;
    m->tmp = malloc(m->n > 0 ? (size_t)m->n : 1);
    if (!m->tmp)
        return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for a %ld-byte packed copy",
                            (long)m->n);
    m->base = m->tmp;
    return is_root ? ct_pack_stream(buf, count, dt, t, m->base, comm) : MPI_SUCCESS;
}

/* Finish a stream: non-roots unpack a packed copy into buf; frees it. */
static int stream_close(msg_t *m, int rc, void *buf, int count, MPI_Datatype dt,
                        const ct_type_t *t, int is_root, MPI_Comm comm) {
    if (rc == MPI_SUCCESS && m->tmp && !is_root)
        rc = ct_unpack_stream(m->base, buf, count, dt, t, comm);
    if (m->tmp) {
        free(m->tmp);
        m->tmp = NULL;
    }
    return rc;
}

static inline char *unit_at(const msg_t *m, MPI_Aint i) { return m->base + i * m->ext; }

/* The whole message (n x dt at base) to every child of tr at once: Isends, one
 * Waitall. */
static int children_isend(void *base, int n, MPI_Datatype dt, const tree_t *tr, int tag,
                          MPI_Comm comm) {
    const int nc = tr->nchild;
    MPI_Request small[TREE_LOCAL], *req = small;
    if (nc > TREE_LOCAL) {
        req = malloc((size_t)nc * sizeof(MPI_Request));
        if (!req) return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for requests");
    }
    int rc = MPI_SUCCESS, posted = 0;
    for (; posted < nc && rc == MPI_SUCCESS; posted++)
        rc = ct_isend(base, n, dt, tr->child[posted], tag, comm, &req[posted]);
    if (rc != MPI_SUCCESS) posted--;
    int rc2 = MPI_Waitall(posted, req, MPI_STATUSES_IGNORE);
    if (req != small) free(req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* The message in one piece down the tree (every small message): a blocking
 * receive from the parent, then a blocking send to one child or nonblocking
 * sends to several. The pipeline's request window, its initialisation and a
 * Waitall over slots that are never used cost more than the message itself at
 * 8 bytes (callgrind: about 590 of the root's 1,554 instructions per call of an
 * 8-byte binomial broadcast at 2 processes). */
static inline int tree_once(void *base, int n, MPI_Datatype dt, const tree_t *tr, int tag,
                            MPI_Comm comm) {
    if (tr->parent >= 0)
        CT_CHECK(MPI_Recv(base, n, dt, tr->parent, tag, comm, MPI_STATUS_IGNORE));
    if (tr->nchild == 0) return MPI_SUCCESS;
    if (tr->nchild == 1) return ct_send(base, n, dt, tr->child[0], tag, comm);
    return children_isend(base, n, dt, tr, tag, comm);
}

/*
 * Pipelined, segmented broadcast of the message m down a tree.
 *
 * A non-root rank receives segment s from its parent and Isends it to all of
 * its children; the receive of segment s+1 is posted before segment s is
 * forwarded. Sends are tracked in a window of two segments, so at most two
 * segments per child are in flight. Every rank forwards its whole region.
 *
 * At the root only, coff/ccnt (may be NULL) give child i its own part of the
 * message: units [coff[i], coff[i] + ccnt[i]); with NULL every child gets
 * all n units.
 */
static int tree_pipeline(const msg_t *m, const tree_t *tr, const MPI_Aint *coff,
                         const MPI_Aint *ccnt, int tag, MPI_Comm comm) {
    const int nc = tr->nchild, is_root = tr->parent < 0;
    const MPI_Aint count = m->n, se = m->seg;
    if (count <= 0 || (is_root && nc == 0)) return MPI_SUCCESS;

    /* One segment for everybody: no pipeline (tree_once). */
    if (se >= count && !(is_root && ccnt))
        return tree_once(m->base, (int)count, m->dt, tr, tag, comm);

    /* Segment count: at the root, the longest of the children's parts. */
    MPI_Aint nseg = (count + se - 1) / se;
    if (is_root && ccnt) {
        nseg = 0;
        for (int i = 0; i < nc; i++) {
            MPI_Aint n = (ccnt[i] + se - 1) / se;
            if (n > nseg) nseg = n;
        }
    }

    /* Requests: two windows of nc sends, then two receives. */
    MPI_Request small[2 * TREE_LOCAL + 2], *req = small;
    const int nreq = 2 * nc + 2;
    if (nreq > (int)(sizeof small / sizeof small[0])) {
        req = malloc((size_t)nreq * sizeof(MPI_Request));
        if (!req) return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for requests");
    }
    for (int i = 0; i < nreq; i++) req[i] = MPI_REQUEST_NULL;
    MPI_Request *rreq = req + 2 * nc;

    int rc = MPI_SUCCESS;
    if (!is_root)
        rc = MPI_Irecv(m->base, (int)(se < count ? se : count), m->dt, tr->parent, tag, comm,
                       &rreq[0]);

    for (MPI_Aint s = 0; s < nseg && rc == MPI_SUCCESS; s++) {
        const MPI_Aint first = s * se;
        const int n = (int)(count - first < se ? count - first : se);
        MPI_Request *sreq = req + (s % 2) * nc;
        if (!is_root) {
            if (s + 1 < nseg) {
                MPI_Aint nfirst = first + se;
                int nn = (int)(count - nfirst < se ? count - nfirst : se);
                rc = MPI_Irecv(unit_at(m, nfirst), nn, m->dt, tr->parent, tag, comm,
                               &rreq[(s + 1) % 2]);
                if (rc != MPI_SUCCESS) break;
            }
            rc = MPI_Wait(&rreq[s % 2], MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS || nc == 0) continue;
        }
        /* the slot still holds segment s-2: let it finish before reusing it */
        rc = MPI_Waitall(nc, sreq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < nc && rc == MPI_SUCCESS; i++) {
            MPI_Aint off = first;
            int k = n;
            if (is_root && ccnt) { /* child i's own part of the message */
                MPI_Aint part = ccnt[i];
                if (first >= part) continue;
                off = coff[i] + first;
                k = (int)(part - first < se ? part - first : se);
            }
            rc = ct_isend(unit_at(m, off), k, m->dt, tr->child[i], tag, comm, &sreq[i]);
        }
    }
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    if (req != small) free(req);
    return rc;
}

/* Run a tree broadcast: in bytes of the signature when segsize cuts the
 * message, else as one message of the caller's own count and datatype. */
static int tree_bcast(void *buf, int count, MPI_Datatype dt, long segsize, const tree_t *tr,
                      int tag, MPI_Comm comm) {
    msg_t m;
    ct_type_t t;
    const int is_root = tr->parent < 0;
    int size;
    if (segsize <= 0) return tree_once(buf, count, dt, tr, tag, comm);
    /* the datatype's geometry only when a segment size may cut the message:
     * a segment at least as long as the message never does */
    CT_CHECK(ct_type_size(dt, &size));
    if (segsize >= (MPI_Aint)count * size) return tree_once(buf, count, dt, tr, tag, comm);
    CT_CHECK(ct_type(dt, &t));
    if (!segmented(segsize, count, &t)) return tree_once(buf, count, dt, tr, tag, comm);
    int rc = stream_open(&m, buf, count, dt, &t, is_root, segsize, comm);
    if (rc == MPI_SUCCESS) rc = tree_pipeline(&m, tr, NULL, NULL, tag, comm);
    return stream_close(&m, rc, buf, count, dt, &t, is_root, comm);
}

/* ---- byte messages of any length ----------------------------------------------
 * n bytes travel as ceil(n / CT_PIECE) messages (at least one, possibly empty),
 * so int counts never overflow; both sides know n, so the pieces match. */
static MPI_Aint npieces(MPI_Aint n) { return n <= CT_PIECE ? 1 : (n + CT_PIECE - 1) / CT_PIECE; }

static int post_bytes(int send, char *p, MPI_Aint n, int peer, int tag, MPI_Comm comm,
                      MPI_Request *req) {
    for (MPI_Aint i = 0, k = npieces(n); i < k; i++) {
        MPI_Aint off = i * CT_PIECE, len = n - off < CT_PIECE ? n - off : CT_PIECE;
        CT_CHECK(send ? ct_isend(p + off, (int)len, MPI_BYTE, peer, tag, comm, &req[i])
                      : MPI_Irecv(p + off, (int)len, MPI_BYTE, peer, tag, comm, &req[i]));
    }
    return MPI_SUCCESS;
}

/* xfer_bytes for a side longer than CT_PIECE: its pieces as requests. */
static int xfer_pieces(const char *sp, MPI_Aint sn, int dest, char *rp, MPI_Aint rn, int src,
                       int tag, MPI_Comm comm) {
    const MPI_Aint nr = npieces(rn), ns = npieces(sn);
    MPI_Request *req = malloc((size_t)(nr + ns) * sizeof *req);
    if (!req) return ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for requests");
    for (MPI_Aint i = 0; i < nr + ns; i++) req[i] = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (src != MPI_PROC_NULL) rc = post_bytes(0, rp, rn, src, tag, comm, req);
    if (rc == MPI_SUCCESS && dest != MPI_PROC_NULL)
        rc = post_bytes(1, (char *)sp, sn, dest, tag, comm, req + nr);
    int rc2 = MPI_Waitall((int)(nr + ns), req, MPI_STATUSES_IGNORE);
    free(req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Send sn bytes at sp to dest while receiving rn bytes at rp from src; either
 * peer may be MPI_PROC_NULL. Inline: the common case is one MPI call, and a
 * call of its own cost a small broadcast more than its arithmetic (callgrind). */
static inline int xfer_bytes(const char *sp, MPI_Aint sn, int dest, char *rp, MPI_Aint rn,
                             int src, int tag, MPI_Comm comm) {
    if (CT_UNLIKELY(sn > CT_PIECE || rn > CT_PIECE))
        return xfer_pieces(sp, sn, dest, rp, rn, src, tag, comm);
    if (src == MPI_PROC_NULL)
        return dest == MPI_PROC_NULL ? MPI_SUCCESS
                                     : ct_send(sp, (int)sn, MPI_BYTE, dest, tag, comm);
    if (dest == MPI_PROC_NULL)
        return MPI_Recv(rp, (int)rn, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE);
    return ct_sendrecv(sp, (int)sn, MPI_BYTE, dest, tag, rp, (int)rn, MPI_BYTE, src, tag, comm,
                       MPI_STATUS_IGNORE);
}

/* ---- native and linear ------------------------------------------------------ */

int ct_bcast_native(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return PMPI_Bcast(buf, count, dt, root, comm);
}

/* Linear: the root sends the whole message to every other rank in turn with a
 * blocking send (relative order root+1, root+2, ...); the others receive. */
int ct_bcast_linear(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (rank != root)
        return MPI_Recv(buf, count, dt, root, CT_TAG_BCAST, comm, MPI_STATUS_IGNORE);
    for (int v = 1; v < np; v++)
        CT_CHECK(ct_send(buf, count, dt, real_rank(v, root, np), CT_TAG_BCAST, comm));
    return MPI_SUCCESS;
}

/* Linear, nonblocking: the root posts an Isend of the whole message to every
 * other rank at once and waits for all of them; the others receive. */
int ct_bcast_linear_nb(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (rank != root)
        return MPI_Recv(buf, count, dt, root, CT_TAG_BCAST, comm, MPI_STATUS_IGNORE);
    if (np == 1) return MPI_SUCCESS;
    /* one message: a nonblocking send completed by its only wait is a blocking send
     * (70 instructions less a call: the request and the Waitall) */
    if (np == 2) return ct_send(buf, count, dt, 1 - root, CT_TAG_BCAST, comm);

    MPI_Request small[32], *req = small; /* no malloc a call up to 33 processes */
    if (np - 1 > 32 && !(req = malloc((size_t)(np - 1) * sizeof(MPI_Request))))
        return ct_set_error(MPI_ERR_NO_MEM, "bcast linear_nb: out of memory for %d requests",
                            np - 1);
    int rc = MPI_SUCCESS, posted = 0; /* req[i] goes to relative rank i+1 */
    while (posted < np - 1) {
        rc = ct_isend(buf, count, dt, real_rank(posted + 1, root, np), CT_TAG_BCAST, comm,
                       &req[posted]);
        if (rc != MPI_SUCCESS) break;
        posted++;
    }
    int rc2 = MPI_Waitall(posted, req, MPI_STATUSES_IGNORE);
    if (req != small) free(req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* ---- chain and pipeline ------------------------------------------------------ */

/* Chains: the p-1 non-root ranks (relative 1..p-1) are cut into k = min(fanout,
 * p-1) consecutive runs as evenly as possible; the root feeds the head of each
 * run and every rank forwards to the next rank of its run. Segments are
 * pipelined down all chains at once. */
static int chain_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                       long segsize, int fanout) {
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (np == 1) return MPI_SUCCESS;

    const int n = np - 1, k = fanout < n ? (fanout < 1 ? 1 : fanout) : n;
    const int v = rel_rank(rank, root, np);
    tree_t tr;
    CT_CHECK(tree_init(&tr, v == 0 ? k : 1));
    if (k == 1) { /* one chain (pipeline; chain at 2 processes): no divisions */
        if (v > 0) tr.parent = real_rank(v - 1, root, np);
        if (v < n) tr.child[tr.nchild++] = real_rank(v + 1, root, np);
    } else if (v == 0) {
        /* runs as ct_block_start(n, k, c): q or q+1 ranks, one division */
        const int q = n / k, r = n - q * k;
        for (int c = 0, start = 0; c < k; start += q + (c < r), c++) /* head of chain c */
            tr.child[tr.nchild++] = real_rank(1 + start, root, np);
    } else {
        const int q = n / k, r = n - q * k;
        int head = 1, len = q + (0 < r); /* the chain holding v: [head, head + len) */
        for (int c = 1; v >= head + len; c++) {
            head += len;
            len = q + (c < r);
        }
        tr.parent = real_rank(v == head ? 0 : v - 1, root, np);
        if (v < head + len - 1) tr.child[tr.nchild++] = real_rank(v + 1, root, np);
    }
    int rc = tree_bcast(buf, count, dt, segsize, &tr, CT_TAG_BCAST, comm);
    tree_free(&tr);
    return rc;
}

/* Chain: k = fanout chains hanging off the root, segments pipelined. */
int ct_bcast_chain(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return chain_bcast(buf, count, dt, root, comm, CT_SEGSIZE(p), CT_FANOUT(p));
}

/* Pipeline: one chain root -> root+1 -> ... -> root-1, segments pipelined. */
int ct_bcast_pipeline(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return chain_bcast(buf, count, dt, root, comm, CT_SEGSIZE(p), 1);
}

/* ---- binary trees --------------------------------------------------------------- */

/* Balanced binary tree over the relative ranks first .. first+n-1 (local index
 * i = v - first; children of i are 2i+1 and 2i+2); the parent of the first
 * rank is `top` (relative, -1 for none). Fills tr for relative rank v. */
static void binary_node(tree_t *tr, int v, int first, int n, int top, int root, int np) {
    int i = v - first;
    tr->parent = i == 0 ? (top < 0 ? -1 : real_rank(top, root, np))
                        : real_rank(first + (i - 1) / 2, root, np);
    tr->nchild = 0;
    for (int c = 2 * i + 1; c <= 2 * i + 2 && c < n; c++)
        tr->child[tr->nchild++] = real_rank(first + c, root, np);
}

/* Binary: segments pipelined down a balanced binary tree (children of relative
 * rank v are 2v+1 and 2v+2). */
int ct_bcast_binary(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (np == 1) return MPI_SUCCESS;
    tree_t tr;
    CT_CHECK(tree_init(&tr, 2));
    binary_node(&tr, rel_rank(rank, root, np), 0, np, -1, root, np);
    int rc = tree_bcast(buf, count, dt, CT_SEGSIZE(p), &tr, CT_TAG_BCAST, comm);
    tree_free(&tr);
    return rc;
}

/*
 * Split binary tree. The message -- the n bytes of its type signature, see
 * stream_open -- is cut in two halves: A = the first n - n/2 bytes, B = the
 * last n/2. The non-root ranks form two balanced binary subtrees, left =
 * relative ranks 1..nl (nl = ceil((p-1)/2)) and right = nl+1..p-1 (nr =
 * floor((p-1)/2) ranks), whose heads are the root's two children. The root
 * pipelines A down the left subtree and B down the right one, segment by
 * segment, both at once. Then left rank 1+i and right rank nl+1+i swap halves.
 * When nl > nr, the last left rank has no partner: the root sends it B
 * directly (posted up front, so it overlaps the tree phase). Fewer than 2
 * bytes cannot be split: plain binary tree.
 */
int ct_bcast_split_binary(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    int np, rank;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    const MPI_Aint nbytes = (MPI_Aint)count * t.size, unit = stream_unit(nbytes);
    if (nbytes / unit < 2) return ct_bcast_binary(buf, count, dt, root, comm, p);

    const int v = rel_rank(rank, root, np);
    msg_t m;
    int rc = stream_open(&m, buf, count, dt, &t, v == 0, CT_SEGSIZE(p), comm);
    if (rc != MPI_SUCCESS) return stream_close(&m, rc, buf, count, dt, &t, v == 0, comm);

    /* half A: [0,ca), B: [ca,n), cut on a multiple of the unit */
    const MPI_Aint cb = m.n / unit / 2 * unit, ca = m.n - cb;
    char *bufb = m.base + ca;
    msg_t ma = m, mb = m; /* the halves as messages of their own */
    ma.n = ca;
    mb.base = bufb;
    mb.n = cb;
    if (mb.seg > cb) mb.seg = cb > 0 ? cb : 1;
    const int nl = np / 2, nr = (np - 1) / 2;          /* = ceil((p-1)/2), floor((p-1)/2) */
    const int lone = nl > nr ? nl : -1;                /* relative rank without partner */
    const int tag_tree = CT_TAG_BCAST, tag_lone = CT_TAG_BCAST + 1, tag_swap = CT_TAG_BCAST + 2;

    tree_t tr;
    rc = tree_init(&tr, 2);
    if (rc != MPI_SUCCESS) return stream_close(&m, rc, buf, count, dt, &t, v == 0, comm);
    MPI_Request lsmall[4], *lreq = lsmall;
    const int nlreq = (int)npieces(cb);
    if (nlreq > 4 && !(lreq = malloc((size_t)nlreq * sizeof *lreq))) {
        tree_free(&tr);
        rc = ct_set_error(MPI_ERR_NO_MEM, "bcast: out of memory for requests");
        return stream_close(&m, rc, buf, count, dt, &t, v == 0, comm);
    }
    for (int i = 0; i < nlreq; i++) lreq[i] = MPI_REQUEST_NULL;
    if (v == 0) {
        /* B straight to the partnerless left rank, overlapping the tree phase */
        if (lone > 0) rc = post_bytes(1, bufb, cb, real_rank(lone, root, np), tag_lone, comm, lreq);
        MPI_Aint coff[2] = { 0, ca }, ccnt[2] = { ca, cb };
        tr.child[tr.nchild++] = real_rank(1, root, np);
        if (nr > 0) tr.child[tr.nchild++] = real_rank(nl + 1, root, np);
        if (rc == MPI_SUCCESS) rc = tree_pipeline(&m, &tr, coff, ccnt, tag_tree, comm);
    } else if (v <= nl) { /* left subtree: receives A down the tree */
        if (v == lone) rc = post_bytes(0, bufb, cb, root, tag_lone, comm, lreq);
        binary_node(&tr, v, 1, nl, 0, root, np);
        if (rc == MPI_SUCCESS) rc = tree_pipeline(&ma, &tr, NULL, NULL, tag_tree, comm);
        if (rc == MPI_SUCCESS && v != lone) /* swap: A out, B in */
            rc = xfer_bytes(m.base, ca, real_rank(v + nl, root, np), bufb, cb,
                            real_rank(v + nl, root, np), tag_swap, comm);
    } else { /* right subtree: receives B down the tree */
        binary_node(&tr, v, nl + 1, nr, 0, root, np);
        rc = tree_pipeline(&mb, &tr, NULL, NULL, tag_tree, comm);
        if (rc == MPI_SUCCESS) /* swap: B out, A in */
            rc = xfer_bytes(bufb, cb, real_rank(v - nl, root, np), m.base, ca,
                            real_rank(v - nl, root, np), tag_swap, comm);
    }
    int rc2 = MPI_Waitall(nlreq, lreq, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS) rc = rc2;
    if (lreq != lsmall) free(lreq);
    tree_free(&tr);
    return stream_close(&m, rc, buf, count, dt, &t, v == 0, comm);
}

/* ---- binomial and k-nomial ---------------------------------------------------- */

/* k-nomial tree in the "cascade" order: in round r (distance d = k^r), every
 * relative rank v < d, which has the data, sends it to v + j*d for
 * j = 1..k-1. So the parent of v > 0 is v mod d for the largest d = k^r <= v,
 * and the children of v are v + j*d for every d = k^r > v (all d for the
 * root), served in round order: the first child heads the largest subtree.
 * k = 2 is the binomial tree. */
static int knomial_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                         int k, long segsize) {
    int np, rank;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (np == 1) return MPI_SUCCESS;
    if (k < 2) k = 2;

    const int v = rel_rank(rank, root, np);
    int maxchild = 0; /* (k-1) per round: a bound for every rank */
    for (long long d = 1; d < np; d *= k) maxchild += k - 1;
    tree_t tr;
    CT_CHECK(tree_init(&tr, maxchild));
    long long d = 1;
    while (d * k <= v) d *= k; /* largest power of k <= v (1 for v <= 1) */
    if (v > 0) {
        /* v mod d, d a power of k: a mask for the binomial tree, no division */
        tr.parent = real_rank((int)(k == 2 ? v & (d - 1) : v % d), root, np);
        d *= k; /* the first round in which v sends */
    }
    for (; d < np; d *= k)
        for (long long j = 1; j < k && v + j * d < np; j++)
            tr.child[tr.nchild++] = real_rank((int)(v + j * d), root, np);
    int rc = tree_bcast(buf, count, dt, segsize, &tr, CT_TAG_BCAST, comm);
    tree_free(&tr);
    return rc;
}

/* Binomial: round r, every rank with the data sends it 2^r ranks further
 * (relative to the root); optionally segmented and pipelined. */
int ct_bcast_binomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return knomial_bcast(buf, count, dt, root, comm, 2, CT_SEGSIZE(p));
}

/* K-nomial: round r, every rank with the data sends it to k-1 ranks at
 * distances j*k^r, j = 1..k-1; optionally segmented and pipelined. */
int ct_bcast_knomial(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    return knomial_bcast(buf, count, dt, root, comm, CT_RADIX(p), CT_SEGSIZE(p));
}

/* ---- scatter + allgather (van de Geijn) --------------------------------------------- */

/* The p-block split of an n-byte stream: its k = n/unit units as even as
 * possible, block i (0 <= i <= p, block p = the end) from byte
 * unit * (i*q + min(i, r)), q = k/p, r = k%p. Made once per call, so finding a
 * block costs no division (a 64-bit division costs as much as the rest of a
 * block lookup several times over, and a 2-process call looks up 6 blocks). */
typedef struct {
    MPI_Aint u, k, q, r;
    int p;
} split_t;

static void split_init(split_t *s, const msg_t *m, int p) {
    s->u = m->unit;
    s->k = m->n / m->unit;
    s->q = s->k / p;
    s->r = s->k % p;
    s->p = p;
}

/* First byte of block i of the split. */
static inline MPI_Aint bstart(const split_t *s, int i) {
    return s->u * (i >= s->p ? s->k : i * s->q + (i < s->r ? i : s->r));
}

/*
 * Binomial scatter of the p blocks of the message m (its n signature bytes;
 * block i, for relative rank i, is bytes [bstart(i), bstart(i+1)), whole units, so
 * blocks may be empty). The subtree of relative rank v is v .. v+lowbit(v)-1,
 * whose blocks are contiguous: v receives all of them from v - lowbit(v), then
 * hands the upper halves on to v + m for m = lowbit(v)/2, ..., 1. Empty
 * ranges are skipped on both sides. Afterwards v holds (at least) block v.
 */
static inline int scatter_blocks(const msg_t *ms, const split_t *sp, int v, int root, int np,
                          MPI_Comm comm) {
    int m = 1;
    while (m < np && !(v & m)) m <<= 1; /* m = lowbit(v), or >= np at the root */
    if (v > 0) {
        MPI_Aint lo = bstart(sp, v), hi = bstart(sp, v + m);
        if (hi > lo)
            CT_CHECK(xfer_bytes(NULL, 0, MPI_PROC_NULL, ms->base + lo, hi - lo,
                                real_rank(v - m, root, np), CT_TAG_BCAST, comm));
    }
    for (m >>= 1; m > 0; m >>= 1) {
        if (v + m >= np) continue;
        MPI_Aint lo = bstart(sp, v + m), hi = bstart(sp, v + 2 * m);
        if (hi > lo)
            CT_CHECK(xfer_bytes(ms->base + lo, hi - lo, real_rank(v + m, root, np), NULL, 0,
                                MPI_PROC_NULL, CT_TAG_BCAST, comm));
    }
    return MPI_SUCCESS;
}

/*
 * Scatter + recursive-doubling allgather, on the bytes of the type signature
 * (stream_open). Before the step of distance m
 * (1, 2, 4, ...) every rank v holds the blocks of its group g..g+m-1 (g = v
 * with its low bits cleared, clipped to p) and swaps them with the group of
 * v ^ m. If p is not a power of two, v ^ m may not exist: then v's group is
 * the lower half of a 2m-group whose upper half is cut off at p. The upper
 * ranks that exist all got the lower blocks from their partners, but in the
 * lower group only the first c = p - g - m ranks got the upper blocks
 * [g+m, p). Within the lower group the ranks with offset < c send them on by
 * recursive halving (distance m/2, ..., 1: offset o < c sends to o + d when
 * that one is >= c), which keeps "offset < c in every subgroup has the data"
 * true and ends with everyone having it. All transfers go one way per pair
 * or through Sendrecv, so nothing depends on MPI buffering.
 */
static int scatter_allgather(const msg_t *ms, const split_t *sp, int v, int root, int np,
                             MPI_Comm comm) {
    const MPI_Aint count = ms->n;
    char *buf = ms->base;
    CT_CHECK(scatter_blocks(ms, sp, v, root, np, comm));
    for (int m = 1; m < np; m <<= 1) {
        const int g = v & ~(m - 1), w = v ^ m, gw = g ^ m;
        if (w < np) { /* swap whole groups with the partner */
            MPI_Aint lo = bstart(sp, g), hi = bstart(sp, g + m);
            MPI_Aint wlo = bstart(sp, gw), whi = bstart(sp, gw + m);
            CT_CHECK(xfer_bytes(buf + lo, hi - lo, real_rank(w, root, np), buf + wlo,
                                whi - wlo, real_rank(w, root, np), CT_TAG_BCAST + 1, comm));
        }
        /* Fix-up, only in the lower half of a 2m-group whose upper half is cut
         * off by p but not empty: c = ranks of that upper half that exist. */
        const int c = np - gw;
        if ((v & m) || gw + m <= np || c <= 0) continue;
        const MPI_Aint lo = bstart(sp, gw), n = count - lo; /* blocks gw .. p-1 */
        if (n == 0) continue;
        for (int d = m >> 1; d > 0; d >>= 1) {
            const int o = v & (2 * d - 1); /* offset in the 2d-subgroup */
            if (o < d && o < c && o + d >= c) /* have it, partner lacks it */
                CT_CHECK(xfer_bytes(buf + lo, n, real_rank(v + d, root, np), NULL, 0,
                                    MPI_PROC_NULL, CT_TAG_BCAST + 2, comm));
            else if (o >= d && o - d < c && o >= c) /* lack it, partner has it */
                CT_CHECK(xfer_bytes(NULL, 0, MPI_PROC_NULL, buf + lo, n,
                                    real_rank(v - d, root, np), CT_TAG_BCAST + 2, comm));
        }
    }
    return MPI_SUCCESS;
}

/* Scatter + ring allgather (van de Geijn): after the binomial scatter, p-1
 * ring steps; in step i relative rank v passes block v-i to v+1 and receives
 * block v-i-1 from v-1 (indices mod p). */
static int scatter_ring(const msg_t *ms, const split_t *sp, int v, int root, int np,
                        MPI_Comm comm) {
    CT_CHECK(scatter_blocks(ms, sp, v, root, np, comm));
    const int right = real_rank(v + 1, root, np), left = real_rank(v + np - 1, root, np);
    int sb = v, rb = v > 0 ? v - 1 : np - 1; /* step i: v - i and v - i - 1, mod p */
    for (int i = 0; i < np - 1; i++, sb = rb, rb = rb > 0 ? rb - 1 : np - 1) {
        MPI_Aint so = bstart(sp, sb), ro = bstart(sp, rb);
        CT_CHECK(xfer_bytes(ms->base + so, bstart(sp, sb + 1) - so, right, ms->base + ro,
                            bstart(sp, rb + 1) - ro, left, CT_TAG_BCAST + 1, comm));
    }
    return MPI_SUCCESS;
}

typedef int (*split_fn)(const msg_t *, const split_t *, int, int, int, MPI_Comm);

/* Run a scatter-based broadcast on the message's signature bytes. */
static int split_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                       split_fn fn) {
    int np, rank;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    if (np == 1) return MPI_SUCCESS;
    CT_CHECK(ct_type(dt, &t));
    const int v = rel_rank(rank, root, np);
    msg_t m;
    int rc = stream_open(&m, buf, count, dt, &t, v == 0, 0, comm);
    if (rc == MPI_SUCCESS) {
        split_t sp;
        split_init(&sp, &m, np);
        rc = fn(&m, &sp, v, root, np, comm);
    }
    return stream_close(&m, rc, buf, count, dt, &t, v == 0, comm);
}

int ct_bcast_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return split_bcast(buf, count, dt, root, comm, scatter_allgather);
}

int ct_bcast_scatter_ring_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return split_bcast(buf, count, dt, root, comm, scatter_ring);
}

/* ---- scatter + direct allgather (two steps) ------------------------------------------
 * The root cuts the stream into p-1 blocks (whole units, as even as possible, some
 * maybe empty) and sends block v-1 to relative rank v, all at once; every other rank
 * receives its block from the root and sends it on to the p-2 ranks other than the
 * root, receiving theirs at the same time. Two steps deep whatever p: the root sends
 * n bytes, every other rank receives n and sends (p-2)/(p-1)*n, in p-1 messages at
 * once. For few ranks with much bandwidth each, such as one rank a node among the
 * nodes (hier_ml's inter phase): its messages grow as p^2. */
/* a block (b, its bytes) to or from peer, as its pieces; an empty block not at all */
static int post_block(int send, char *at, MPI_Aint n, int peer, int tag, MPI_Comm comm,
                      MPI_Request *req, int *nr) {
    if (n == 0) return MPI_SUCCESS;
    CT_CHECK(post_bytes(send, at, n, peer, tag, comm, req + *nr));
    *nr += (int)npieces(n);
    return MPI_SUCCESS;
}

/* a split_fn: its blocks are p-1 (split_bcast's p are not used) */
static int scatter_direct(const msg_t *ms, const split_t *p_blocks, int v, int root, int np,
                          MPI_Comm comm) {
    (void)p_blocks;
    split_t sp; /* block b: relative rank b + 1's */
    split_init(&sp, ms, np - 1);
    const MPI_Aint most = bstart(&sp, 1) - bstart(&sp, 0); /* block 0 is a largest one */
    const long long per = npieces(most);                  /* requests a block, at most */
    MPI_Request *req = malloc((size_t)(2 * (long long)np * per) * sizeof *req);
    if (!req)
        return ct_set_error(MPI_ERR_NO_MEM, "bcast scatter_direct_allgather: out of memory "
                            "for %d requests", 2 * np);
    const int cap = (int)(2 * (long long)np * per);
    for (int i = 0; i < cap; i++) req[i] = MPI_REQUEST_NULL;
    int nr = 0, rc = MPI_SUCCESS;
#define BLK(b) ms->base + bstart(&sp, (b)), bstart(&sp, (b) + 1) - bstart(&sp, (b))
    if (v == 0) {
        for (int w = 1; w < np && rc == MPI_SUCCESS; w++)
            rc = post_block(1, BLK(w - 1), real_rank(w, root, np), CT_TAG_BCAST, comm, req, &nr);
    } else {
        rc = post_block(0, BLK(v - 1), root, CT_TAG_BCAST, comm, req, &nr);
        const int mine = nr;
        for (int i = 1; i < np - 1 && rc == MPI_SUCCESS; i++) { /* theirs, v+1, v+2, ... */
            const int w = 1 + (v - 1 + i) % (np - 1);
            rc = post_block(0, BLK(w - 1), real_rank(w, root, np), CT_TAG_BCAST + 1, comm, req,
                            &nr);
        }
        if (rc == MPI_SUCCESS) rc = MPI_Waitall(mine, req, MPI_STATUSES_IGNORE);
        for (int i = 1; i < np - 1 && rc == MPI_SUCCESS; i++) { /* mine to them */
            const int w = 1 + (v - 1 + i) % (np - 1);
            rc = post_block(1, BLK(v - 1), real_rank(w, root, np), CT_TAG_BCAST + 1, comm, req,
                            &nr);
        }
    }
#undef BLK
    /* after an error, every request a partial post left too */
    const int rc2 = MPI_Waitall(rc == MPI_SUCCESS ? nr : cap, req, MPI_STATUSES_IGNORE);
    free(req);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int ct_bcast_scatter_direct_allgather(void *buf, int count, MPI_Datatype dt, int root,
                                      MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    return split_bcast(buf, count, dt, root, comm, scatter_direct);
}

/* ---- test-only ------------------------------------------------------------------- */

/* DELIBERATELY WRONG, for testing the verifier: a correct binomial broadcast,
 * after which the last rank of the communicator (when p >= 2) flips all bits
 * of the first data byte of the last element. That byte lies at offset
 * true_lb of the element, which is data for any datatype (never a hole). */
int ct_bcast_broken(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, const ct_params_t *p) {
    (void)p;
    int np, rank;
    ct_type_t t;
    CT_CHECK(ct_comm_geom(comm, &np, &rank));
    CT_CHECK(ct_type(dt, &t));
    CT_CHECK(knomial_bcast(buf, count, dt, root, comm, 2, 0));
    if (np >= 2 && rank == np - 1 && t.size > 0) {
        unsigned char *byte = (unsigned char *)ct_elem(buf, count - 1, &t) + t.true_lb;
        *byte ^= 0xFFu; /* the deliberate corruption */
    }
    return MPI_SUCCESS;
}
