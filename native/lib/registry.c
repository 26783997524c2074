/*
 * registry.c -- the one table of algorithms.
 *
 * Each entry: name, collective, function, tunable parameters (default and
 * valid range), constraints, the fallback taken when a constraint does not
 * hold, the Hockney cost formula, a one-line description, the matching Open MPI
 * algorithm, and (outside the public ct_algo_t) the rank order `remap=auto`
 * gives it. Everything that lists, parses, checks or models algorithms (the
 * CLI, verify, the benchmark, the cost models, the dispatcher's remap layer)
 * reads this table.
 *
 * Cost formulas: p processes, n bytes (Bcast/Reduce/Allreduce: the vector;
 * Gather/Allgather/Allgatherv/Gatherv and Scatter/Scatterv: the whole gathered or
 * scattered data, p blocks (the v variants' of n/p bytes on average); Alltoall(v): what one
 * process sends, p blocks of n/p bytes), a = alpha (s),
 * b = beta (s/byte), g = gamma (s/byte of reduction), s = segment bytes
 * (= n when unsegmented), k = fan-out or radix. nseg = ceil(n/s).
 */
#include "ct_internal.h"

#define SEG(d) { CT_P_SEGSIZE, (d), 0, 1L << 30, NULL }
#define SEG_AUTO SEG(CT_SEGSIZE_AUTO)
#define FAN(d) { CT_P_FANOUT, (d), 1, 1024, NULL }
#define RADIX(d) { CT_P_RADIX, (d), 2, 64, NULL }
#define INNER(id, name) { (id), -1, -1, -1, (name) }
#define MAXREQ(d) { CT_P_MAX_REQUESTS, (d), 0, 1L << 20, NULL }

#define NSEG "ceil(n/s)"
/* recursive doubling/halving with a fold of the p - 2^floor(log2 p) extra ranks:
 * two more steps and about n more bytes when p is not a power of two */
#define RD_FOLD_COST \
    "(floor(log2(p)) + 2*(ceil(log2(p)) - floor(log2(p))))*a + ((p-1)/p*n + " \
    "(ceil(log2(p)) - floor(log2(p)))*n)*b"

/* ---- the remap=auto column ----------------------------------------------------
 * The order under which the algorithm's heavy messages stay inside nodes,
 * from each algorithm's pattern (docs/remapping.md derives each line; the
 * traffic counts of `colltune traffic` show them):
 *  - neighbour patterns (ring, neighbour exchange, chain, pipeline) and
 *    patterns whose large messages go to near ranks (vector halving with
 *    distance doubling, sparbit, recursive halving): seq;
 *  - patterns whose large messages go to far ranks (recursive doubling
 *    allgather, Bruck) and binomial/k-nomial trees built by doubling distances
 *    (their edges v -> v + 2^r cross nodes P - Q times under seq, M - 1 times
 *    under rr): rr;
 *  - the rest (linear, binary trees, recursive-doubling allreduce whose steps
 *    all carry the whole vector): none. */
#define AUTO_NONE CT_REMAP_NONE
#define AUTO_SEQ CT_REMAP_SEQ
#define AUTO_RR CT_REMAP_RR

/* ---- the segsize=auto column -------------------------------------------------
 * The pipeline whose depth the segsize=auto rule (ct_segsize_resolve, below)
 * reads, packed into the remap=auto column's upper bits: the chain of fan-out
 * k, the single chain, the balanced binary tree, the split binary tree. */
#define SR_SHIFT 4
#define SR_MASK (7 << SR_SHIFT)
#define SR_CHAIN (1 << SR_SHIFT)
#define SR_PIPELINE (2 << SR_SHIFT)
#define SR_BINARY (3 << SR_SHIFT)
#define SR_SPLIT (4 << SR_SHIFT)

/* One row: the public description, then the remap=auto order (| the
 * segsize=auto rule, SR_*, for the segmented trees). */
typedef struct {
    ct_algo_t a;
    int remap_auto; /* CT_REMAP_NONE, _SEQ or _RR, | SR_* */
} entry_t;

static const entry_t table[] = {
    /* ---------------------------------------------------------------- Bcast */
    { { "native", CT_BCAST, { .bcast = ct_bcast_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Bcast", NULL },
      AUTO_NONE },
    { { "linear", CT_BCAST, { .bcast = ct_bcast_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n*b)",
      "root sends the whole message to every other rank in turn (blocking Send)",
      NULL },
      AUTO_NONE },
    { { "linear_nb", CT_BCAST, { .bcast = ct_bcast_linear_nb }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n*b)",
      "root posts an Isend to every rank and waits for all (the seed's \"simple\")",
      "basic_linear" },
      AUTO_NONE },
    { { "chain", CT_BCAST, { .bcast = ct_bcast_chain }, 2, { SEG_AUTO, FAN(4) }, 0, NULL,
      "(min(k,p-1)*" NSEG " + ceil((p-1)/min(k,p-1)) - 1)*(a + s*b)",
      "root feeds k chains of ranks; segments are pipelined down each chain", "chain" },
      AUTO_SEQ | SR_CHAIN },
    { { "pipeline", CT_BCAST, { .bcast = ct_bcast_pipeline }, 1, { SEG_AUTO }, 0, NULL,
      "(p + " NSEG " - 2)*(a + s*b)",
      "a single chain through all ranks, segments pipelined", "pipeline" },
      AUTO_SEQ | SR_PIPELINE },
    { { "binary", CT_BCAST, { .bcast = ct_bcast_binary }, 1, { SEG_AUTO }, 0, NULL,
      "2*max(0, ceil(log2(p+1)) + " NSEG " - 2)*(a + s*b)",
      "segments pipelined down a balanced binary tree", "binary_tree" },
      AUTO_NONE | SR_BINARY },
    { { "split_binary", CT_BCAST, { .bcast = ct_bcast_split_binary }, 1, { SEG_AUTO }, 0,
      NULL,
      "2*max(0, ceil(log2(p+1)) + ceil(" NSEG "/2) - 2)*(a + s*b) + a + n/2*b",
      "each half of the message goes down one subtree of a binary tree, then "
      "left and right partners swap halves",
      "split_binary_tree" },
      AUTO_NONE | SR_SPLIT },
    { { "binomial", CT_BCAST, { .bcast = ct_bcast_binomial }, 1, { SEG(0) }, 0, NULL,
      "ceil(log2(p))*" NSEG "*(a + s*b)",
      "binomial tree: in round r, every rank that has the data sends it 2^r "
      "ranks away (the seed's \"cascade\")",
      "binomial" },
      AUTO_RR },
    { { "knomial", CT_BCAST, { .bcast = ct_bcast_knomial }, 2, { RADIX(4), SEG(0) }, 0, NULL,
      "(k-1)*ceil(log2(p)/log2(k) - 1e-9)*" NSEG "*(a + s*b)",
      "k-nomial tree: every rank with the data sends to k-1 ranks per round", "knomial" },
      AUTO_RR },
    { { "scatter_allgather", CT_BCAST, { .bcast = ct_bcast_scatter_allgather }, 0, { { 0 } },
      0, NULL, "2*ceil(log2(p))*a + 2*(p-1)/p*n*b",
      "binomial scatter of p blocks, then recursive-doubling allgather",
      "scatter_allgather" },
      AUTO_RR },
    { { "scatter_ring_allgather", CT_BCAST, { .bcast = ct_bcast_scatter_ring_allgather }, 0,
      { { 0 } }, 0, NULL, "(ceil(log2(p)) + p - 1)*a + 2*(p-1)/p*n*b",
      "binomial scatter of p blocks, then ring allgather (van de Geijn)",
      "scatter_allgather_ring" },
      AUTO_SEQ },
    { { "scatter_direct_allgather", CT_BCAST, { .bcast = ct_bcast_scatter_direct_allgather },
      0, { { 0 } }, 0, NULL,
      "max(0, 2*p - 3)*a + max(0, 2*p - 3)/max(1, p - 1)*n*b",
      "the root sends each rank its block of p-1 directly, each sends its block directly to "
      "the others (two steps, p^2 messages: for few ranks, e.g. among nodes)",
      NULL },
      AUTO_NONE },
    { { "_broken", CT_BCAST, { .bcast = ct_bcast_broken }, 0, { { 0 } }, CT_HIDDEN, NULL,
      "ceil(log2(p))*(a + n*b)",
      "test-only: a binomial broadcast that corrupts one element on the last rank", NULL },
      AUTO_NONE },

    /* --------------------------------------------------------------- Reduce */
    { { "native", CT_REDUCE, { .reduce = ct_reduce_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Reduce", NULL },
      AUTO_NONE },
    { { "linear", CT_REDUCE, { .reduce = ct_reduce_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n*b + n*g)",
      "root receives every rank's vector and combines them in rank order", "linear" },
      AUTO_NONE },
    { { "chain", CT_REDUCE, { .reduce = ct_reduce_chain }, 2, { SEG_AUTO, FAN(4) },
      CT_NEED_COMMUTATIVE, "in_order_binary",
      "(min(k,p-1)*" NSEG " + ceil((p-1)/min(k,p-1)) - 1)*(a + s*b + s*g)",
      "k chains of ranks reduce segments towards the root, pipelined", "chain" },
      AUTO_SEQ | SR_CHAIN },
    { { "pipeline", CT_REDUCE, { .reduce = ct_reduce_pipeline }, 1, { SEG_AUTO },
      CT_NEED_COMMUTATIVE, "in_order_binary", "(p + " NSEG " - 2)*(a + s*b + s*g)",
      "one chain through all ranks reduces segments towards the root", "pipeline" },
      AUTO_SEQ | SR_PIPELINE },
    { { "binary", CT_REDUCE, { .reduce = ct_reduce_binary }, 1, { SEG_AUTO },
      CT_NEED_COMMUTATIVE, "in_order_binary",
      "2*max(0, ceil(log2(p+1)) + " NSEG " - 2)*(a + s*b + s*g)",
      "segments reduced up a balanced binary tree rooted at the root", "binary" },
      AUTO_NONE | SR_BINARY },
    { { "binomial", CT_REDUCE, { .reduce = ct_reduce_binomial }, 1, { SEG(0) },
      CT_NEED_COMMUTATIVE, "in_order_binary", "ceil(log2(p))*" NSEG "*(a + s*b + s*g)",
      "binomial tree: in round r, ranks 2^r apart combine", "binomial" },
      AUTO_RR },
    { { "in_order_binary", CT_REDUCE, { .reduce = ct_reduce_in_order_binary }, 1, { SEG_AUTO },
      0, NULL,
      "2*max(0, ceil(log2(p+1)) + " NSEG " - 2)*(a + s*b + s*g) + a + n*b",
      "binary tree over ranks in order (lower ranks on the left), so any "
      "associative op works; the result is forwarded to the root",
      "in-order_binary" },
      AUTO_NONE | SR_BINARY },
    { { "rabenseifner", CT_REDUCE, { .reduce = ct_reduce_rabenseifner }, 0, { { 0 } },
      CT_NEED_COMMUTATIVE | CT_NEED_COUNT_GE_P, "binomial",
      "2*ceil(log2(p))*a + 2*(p-1)/p*n*b + (p-1)/p*n*g",
      "reduce-scatter by recursive halving, then binomial gather of the blocks "
      "to the root (extra ranks folded in first when p is not a power of two)",
      "rabenseifner" },
      AUTO_NONE },

    /* --------------------------------------------------------------- Gather */
    { { "native", CT_GATHER, { .gather = ct_gather_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Gather", NULL },
      AUTO_NONE },
    { { "linear", CT_GATHER, { .gather = ct_gather_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)", "root receives each rank's block in rank order (blocking Recv)",
      "basic_linear" },
      AUTO_NONE },
    { { "linear_nb", CT_GATHER, { .gather = ct_gather_linear_nb }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)", "root posts a receive for every rank's block at once, then waits",
      NULL },
      AUTO_NONE },
    { { "binomial", CT_GATHER, { .gather = ct_gather_binomial }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b",
      "binomial tree: subtrees collect their blocks and forward them upwards",
      "binomial" },
      AUTO_NONE },

    /* ------------------------------------------------------------ Allgather */
    { { "native", CT_ALLGATHER, { .allgather = ct_allgather_native }, 0, { { 0 } }, 0, NULL,
      NULL, "the MPI library's own MPI_Allgather", NULL },
      AUTO_NONE },
    { { "linear", CT_ALLGATHER, { .allgather = ct_allgather_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "every rank sends its block to every other rank (non-blocking, so no deadlock)",
      NULL },
      AUTO_NONE },
    { { "gather_bcast", CT_ALLGATHER, { .allgather = ct_allgather_gather_bcast }, 2,
      { INNER(CT_P_GATHER, "binomial"), INNER(CT_P_BCAST, "binomial") }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b + ceil(log2(p))*(a + n*b)",
      "gather to rank 0 with a colltune Gather, then a colltune Bcast", "linear" },
      AUTO_RR },
    { { "ring", CT_ALLGATHER, { .allgather = ct_allgather_ring }, 0, { { 0 } }, 0, NULL,
      "(p-1)*a + (p-1)/p*n*b", "p-1 steps, each rank passes one block to its right neighbour",
      "ring" },
      AUTO_SEQ },
    { { "recursive_doubling", CT_ALLGATHER, { .allgather = ct_allgather_recursive_doubling },
      0, { { 0 } }, 0, NULL, RD_FOLD_COST,
      "partners at distance 1, 2, 4, ... exchange everything they hold; for p not a power "
      "of two, extra ranks fold into partners first and get the result at the end",
      "recursive_doubling" },
      AUTO_RR },
    { { "recursive_halving", CT_ALLGATHER, { .allgather = ct_allgather_recursive_halving },
      0, { { 0 } }, 0, NULL, RD_FOLD_COST,
      "partners at distance p/2, p/4, ..., 1 exchange everything they hold (extra ranks "
      "folded in as for recursive doubling)", NULL },
      AUTO_SEQ },
    { { "bruck", CT_ALLGATHER, { .allgather = ct_allgather_bruck }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b",
      "Bruck: in step j send to rank-2^j, receive from rank+2^j; final local rotation",
      "bruck" },
      AUTO_RR },
    { { "neighbor_exchange", CT_ALLGATHER, { .allgather = ct_allgather_neighbor_exchange }, 0,
      { { 0 } }, CT_NEED_EVEN, "ring", "(p/2)*a + (p-1)/p*n*b",
      "p/2 steps exchanging with alternate neighbours, two blocks per step",
      "neighbor" },
      AUTO_SEQ },
    { { "two_proc", CT_ALLGATHER, { .allgather = ct_allgather_two_proc }, 0, { { 0 } },
      CT_NEED_TWO_PROCS, "ring", "a + n/2*b", "one exchange between the two ranks",
      "two_proc" },
      AUTO_NONE },
    { { "sparbit", CT_ALLGATHER, { .allgather = ct_allgather_sparbit }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b",
      "Sparbit: distances halve each step, data doubles, keeping traffic local late",
      "sparbit" },
      AUTO_SEQ },

    /* ------------------------------------------------------------ Allreduce */
    { { "native", CT_ALLREDUCE, { .allreduce = ct_allreduce_native }, 0, { { 0 } }, 0, NULL,
      NULL, "the MPI library's own MPI_Allreduce", NULL },
      AUTO_NONE },
    { { "reduce_bcast", CT_ALLREDUCE, { .allreduce = ct_allreduce_reduce_bcast }, 2,
      { INNER(CT_P_REDUCE, "binomial"), INNER(CT_P_BCAST, "binomial") }, 0, NULL,
      "2*ceil(log2(p))*(a + n*b) + ceil(log2(p))*n*g",
      "a colltune Reduce to rank 0, then a colltune Bcast", "nonoverlapping" },
      AUTO_RR },
    { { "basic_linear", CT_ALLREDUCE, { .allreduce = ct_allreduce_basic_linear }, 0, { { 0 } },
      0, NULL, "(p-1)*(a + n*b + n*g) + (p-1)*(a + n*b)",
      "linear reduce to rank 0 then linear broadcast", "basic_linear" },
      AUTO_NONE },
    { { "recursive_doubling", CT_ALLREDUCE, { .allreduce = ct_allreduce_recursive_doubling },
      0, { { 0 } }, 0, NULL,
      "(floor(log2(p)) + 2*(ceil(log2(p)) - floor(log2(p))))*(a + n*b) + ceil(log2(p))*n*g",
      "partners at distance 1, 2, 4, ... exchange and combine whole vectors",
      "recursive_doubling" },
      AUTO_NONE },
    { { "ring", CT_ALLREDUCE, { .allreduce = ct_allreduce_ring }, 0, { { 0 } },
      CT_NEED_COMMUTATIVE | CT_NEED_COUNT_GE_P, "recursive_doubling",
      "2*(p-1)*a + 2*(p-1)/p*n*b + (p-1)/p*n*g",
      "ring reduce-scatter of p blocks, then ring allgather", "ring" },
      AUTO_SEQ },
    { { "segmented_ring", CT_ALLREDUCE, { .allreduce = ct_allreduce_segmented_ring }, 1,
      { SEG(65536) }, CT_NEED_COMMUTATIVE | CT_NEED_COUNT_GE_P, "recursive_doubling",
      "(p-1)*(max(1, ceil(n/(p*s))) + 1)*a + 2*(p-1)/p*n*b + (p-1)/p*n*g",
      "ring allreduce with each block pipelined in segments", "segmented_ring" },
      AUTO_SEQ },
    { { "rabenseifner", CT_ALLREDUCE, { .allreduce = ct_allreduce_rabenseifner }, 0, { { 0 } },
      CT_NEED_COMMUTATIVE, "recursive_doubling",
      "2*floor(log2(p))*a + 2*(p-1)/p*n*b + (p-1)/p*n*g + "
      "(ceil(log2(p)) - floor(log2(p)))*(2*(a + n*b) + n*g)",
      "reduce-scatter (vector halving, distance doubling), then the same rounds in reverse "
      "as an allgather; extra ranks of a non-power-of-two p are paired in first",
      "rabenseifner" },
      AUTO_SEQ },
    { { "allgather_reduce", CT_ALLREDUCE, { .allreduce = ct_allreduce_allgather_reduce }, 0,
      { { 0 } }, 0, NULL, "ceil(log2(p))*a + (p-1)*n*b + (p-1)*n*g",
      "every rank gathers all vectors and combines them in rank order (small messages)",
      "allgather_reduce" },
      AUTO_NONE },

    /* ------------------------------------------------------------- Alltoall */
    { { "native", CT_ALLTOALL, { .alltoall = ct_alltoall_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Alltoall", NULL },
      AUTO_NONE },
    { { "linear", CT_ALLTOALL, { .alltoall = ct_alltoall_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*a + (p-1)/p*n*b",
      "every rank posts all p-1 receives and sends at once, then waits for all", "linear" },
      AUTO_NONE },
    { { "pairwise", CT_ALLTOALL, { .alltoall = ct_alltoall_pairwise }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "p-1 steps; in step i a rank sends to rank+i and receives from rank-i (one Sendrecv)",
      "pairwise" },
      AUTO_NONE },
    { { "bruck", CT_ALLTOALL, { .alltoall = ct_alltoall_bruck }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*(a + n/2*b)",
      "Bruck: ceil(log2 p) steps; in the step at distance 2^k the blocks whose index has "
      "bit k set go to rank+2^k, packed (small messages)",
      "modified_bruck" },
      AUTO_NONE },
    { { "linear_sync", CT_ALLTOALL, { .alltoall = ct_alltoall_linear_sync }, 1, { MAXREQ(0) },
      0, NULL, "(p-1)*a + (p-1)/p*n*b",
      "linear with at most max_requests sends and receives in flight, each completed one "
      "replaced by the next (0 = all at once)",
      "linear_sync" },
      AUTO_NONE },
    { { "two_proc", CT_ALLTOALL, { .alltoall = ct_alltoall_two_proc }, 0, { { 0 } },
      CT_NEED_TWO_PROCS, "pairwise", "a + n/2*b", "one exchange between the two ranks",
      "two_proc" },
      AUTO_NONE },
    { { "_broken", CT_ALLTOALL, { .alltoall = ct_alltoall_broken }, 0, { { 0 } }, CT_HIDDEN,
      NULL, "(p-1)*(a + n/p*b)",
      "TEST ONLY: pairwise, then the last rank corrupts one byte of its result", NULL },
      AUTO_NONE },

    /* ------------------------------------------------------------ Alltoallv */
    { { "native", CT_ALLTOALLV, { .alltoallv = ct_alltoallv_native }, 0, { { 0 } }, 0, NULL,
      NULL, "the MPI library's own MPI_Alltoallv", NULL },
      AUTO_NONE },
    { { "linear", CT_ALLTOALLV, { .alltoallv = ct_alltoallv_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*a + (p-1)/p*n*b",
      "every rank posts the receives and sends of all non-empty blocks at once, then waits",
      "basic_linear" },
      AUTO_NONE },
    { { "pairwise", CT_ALLTOALLV, { .alltoallv = ct_alltoallv_pairwise }, 0, { { 0 } }, 0,
      NULL, "(p-1)*(a + n/p*b)",
      "p-1 steps; in step i a rank sends to rank+i and receives from rank-i (one Sendrecv)",
      "pairwise" },
      AUTO_NONE },

    /* -------------------------------------------------------------- Scatter */
    { { "native", CT_SCATTER, { .scatter = ct_scatter_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Scatter", NULL },
      AUTO_NONE },
    { { "linear", CT_SCATTER, { .scatter = ct_scatter_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)", "root sends each rank its block in turn (blocking Send)",
      "basic_linear" },
      AUTO_NONE },
    { { "linear_nb", CT_SCATTER, { .scatter = ct_scatter_linear_nb }, 0, { { 0 } }, 0, NULL,
      "(p-1)*a + (p-1)/p*n*b", "root posts an Isend of every block at once, then waits",
      "linear_nb" },
      AUTO_NONE },
    { { "binomial", CT_SCATTER, { .scatter = ct_scatter_binomial }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b",
      "binomial tree: each rank receives its subtree's blocks and hands half of them on "
      "per step", "binomial" },
      AUTO_NONE },

    /* -------------------------------------------------------------- Barrier */
    { { "native", CT_BARRIER, { .barrier = ct_barrier_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Barrier", NULL },
      AUTO_NONE },
    { { "linear", CT_BARRIER, { .barrier = ct_barrier_linear }, 0, { { 0 } }, 0, NULL,
      "2*(p-1)*a", "every rank reports to rank 0, which then releases every rank",
      "linear" },
      AUTO_NONE },
    { { "double_ring", CT_BARRIER, { .barrier = ct_barrier_double_ring }, 0, { { 0 } }, 0, NULL,
      "2*p*a", "a token goes twice around the ring from rank 0", "double_ring" },
      AUTO_NONE },
    { { "recursive_doubling", CT_BARRIER, { .barrier = ct_barrier_recursive_doubling }, 0,
      { { 0 } }, 0, NULL, "(floor(log2(p)) + 2*(ceil(log2(p)) - floor(log2(p))))*a",
      "partners at distance 1, 2, 4, ... exchange; extra ranks report first and are "
      "released last", "recursive_doubling" },
      AUTO_NONE },
    { { "bruck", CT_BARRIER, { .barrier = ct_barrier_bruck }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a",
      "dissemination: in round k signal rank+2^k and wait for rank-2^k", "bruck" },
      AUTO_NONE },
    { { "two_proc", CT_BARRIER, { .barrier = ct_barrier_two_proc }, 0, { { 0 } },
      CT_NEED_TWO_PROCS, "recursive_doubling", "a", "one exchange between the two ranks",
      "two_proc" },
      AUTO_NONE },
    { { "tree", CT_BARRIER, { .barrier = ct_barrier_tree }, 0, { { 0 } }, 0, NULL,
      "2*ceil(log2(p))*a",
      "binomial tree: arrivals gathered at rank 0, then released down the same tree",
      "tree" },
      AUTO_NONE },

    /* ----------------------------------------------- Reduce_scatter(_block)
     * n: the whole vector each process contributes (p blocks; colltune's size is one
     * block, the bytes a process receives). RS_FOLD: the fold of the extra ranks of
     * a non-power-of-two p (a whole vector in, a block out). */
#define RS_FOLD "(ceil(log2(p)) - floor(log2(p)))*(2*a + n*b + n*g + n/p*b)"
    /* Reduce_scatter_block */
    { { "native", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Reduce_scatter_block", NULL },
      AUTO_NONE },
    { { "basic_linear", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_basic_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n*b + n*g) + (p-1)*(a + n/p*b)",
      "linear reduce of the whole vector to rank 0 (rank order kept), then linear scatter "
      "of the blocks", "basic_linear" },
      AUTO_NONE },
    { { "recursive_halving", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_recursive_halving }, 0,
      { { 0 } }, CT_NEED_COMMUTATIVE, "butterfly",
      "floor(log2(p))*a + (p-1)/p*n*(b + g) + " RS_FOLD,
      "vector halving, distance halving: partners at pof2/2, ..., 2, 1 swap half of what "
      "they hold; extra ranks folded in first", "recursive_halving" },
      AUTO_NONE },
    { { "butterfly", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_butterfly }, 0, { { 0 } }, 0, NULL,
      "floor(log2(p))*a + (p-1)/p*n*(b + g) + " RS_FOLD,
      "vector halving, distance doubling on bit-reversed blocks (Traff): rank order kept; "
      "extra ranks folded in first", "butterfly" },
      AUTO_NONE },
    { { "recursive_doubling", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_recursive_doubling }, 0,
      { { 0 } }, 0, NULL,
      "floor(log2(p))*a + (floor(log2(p)) - (p-1)/p)*n*(b + g) + " RS_FOLD,
      "partners at distance 1, 2, 4, ... exchange every block outside their own group "
      "(rank order kept); extra ranks folded in first", "recursive_doubling" },
      AUTO_NONE },
    { { "ring", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_ring }, 0, { { 0 } }, CT_NEED_COMMUTATIVE,
      "butterfly", "(p-1)*(a + n/p*(b + g))",
      "p-1 steps around the ring, each passing one partial block on to rank+1", NULL },
      AUTO_NONE },
    { { "pairwise", CT_REDUCE_SCATTER_BLOCK, { .reduce_scatter_block = ct_reduce_scatter_block_pairwise }, 0, { { 0 } },
      CT_NEED_COMMUTATIVE, "butterfly", "(p-1)*(a + n/p*(b + g))",
      "p-1 steps; in step i a rank sends rank+i its input block and combines rank-i's "
      "contribution to its own", NULL },
      AUTO_NONE },

    /* Reduce_scatter */
    { { "native", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Reduce_scatter", NULL },
      AUTO_NONE },
    { { "nonoverlapping", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_nonoverlapping }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n*b + n*g) + (p-1)*(a + n/p*b)",
      "linear reduce of the whole vector to rank 0 (rank order kept), then linear scatter "
      "of the blocks", "non-overlapping" },
      AUTO_NONE },
    { { "recursive_halving", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_recursive_halving }, 0,
      { { 0 } }, CT_NEED_COMMUTATIVE, "butterfly",
      "floor(log2(p))*a + (p-1)/p*n*(b + g) + " RS_FOLD,
      "vector halving, distance halving: partners at pof2/2, ..., 2, 1 swap half of what "
      "they hold; extra ranks folded in first", "recursive_halving" },
      AUTO_NONE },
    { { "butterfly", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_butterfly }, 0, { { 0 } }, 0, NULL,
      "floor(log2(p))*a + (p-1)/p*n*(b + g) + " RS_FOLD,
      "vector halving, distance doubling on bit-reversed blocks (Traff): rank order kept; "
      "extra ranks folded in first", "butterfly" },
      AUTO_NONE },
    { { "recursive_doubling", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_recursive_doubling }, 0,
      { { 0 } }, 0, NULL,
      "floor(log2(p))*a + (floor(log2(p)) - (p-1)/p)*n*(b + g) + " RS_FOLD,
      "partners at distance 1, 2, 4, ... exchange every block outside their own group "
      "(rank order kept); extra ranks folded in first", NULL },
      AUTO_NONE },
    { { "ring", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_ring }, 0, { { 0 } }, CT_NEED_COMMUTATIVE,
      "butterfly", "(p-1)*(a + n/p*(b + g))",
      "p-1 steps around the ring, each passing one partial block on to rank+1", "ring" },
      AUTO_NONE },
    { { "pairwise", CT_REDUCE_SCATTER, { .reduce_scatter = ct_reduce_scatter_pairwise }, 0, { { 0 } },
      CT_NEED_COMMUTATIVE, "butterfly", "(p-1)*(a + n/p*(b + g))",
      "p-1 steps; in step i a rank sends rank+i its input block and combines rank-i's "
      "contribution to its own", NULL },
      AUTO_NONE },
    /* ----------------------------------------------------------- Allgatherv */
    { { "native", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_native }, 0, { { 0 } }, 0,
      NULL, NULL, "the MPI library's own MPI_Allgatherv", NULL },
      AUTO_NONE },
    { { "linear", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "every rank sends its block to every other rank (non-blocking, empty blocks skipped)",
      NULL },
      AUTO_NONE },
    { { "gatherv_bcast", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_gatherv_bcast }, 1,
      { INNER(CT_P_BCAST, "binomial") }, 0, NULL,
      "(p-1)*(a + n/p*b) + ceil(log2(p))*(a + n*b)",
      "linear gatherv to rank 0, then a colltune Bcast of all blocks as one indexed type",
      "default" },
      AUTO_NONE },
    { { "ring", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_ring }, 0, { { 0 } }, 0, NULL,
      "(p-1)*a + (p-1)/p*n*b", "p-1 steps, each rank passes one block to its right neighbour",
      "ring" },
      AUTO_NONE },
    { { "bruck", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_bruck }, 0, { { 0 } }, 0, NULL,
      "ceil(log2(p))*a + (p-1)/p*n*b",
      "Bruck: in step j send the blocks held to rank-2^j, receive from rank+2^j, straight "
      "into place",
      "bruck" },
      AUTO_NONE },
    { { "recursive_doubling", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_recursive_doubling },
      0, { { 0 } }, 0, NULL, RD_FOLD_COST,
      "partners at distance 1, 2, 4, ... exchange everything they hold; for p not a power "
      "of two, extra ranks fold into partners first and get the result at the end",
      NULL },
      AUTO_NONE },
    { { "neighbor_exchange", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_neighbor_exchange },
      0, { { 0 } }, CT_NEED_EVEN, "ring", "(p/2)*a + (p-1)/p*n*b",
      "p/2 steps exchanging with alternate neighbours, two blocks per step", "neighbor" },
      AUTO_NONE },
    { { "two_proc", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_two_proc }, 0, { { 0 } },
      CT_NEED_TWO_PROCS, "ring", "a + n/2*b", "one exchange between the two ranks",
      "two_proc" },
      AUTO_NONE },
    { { "sparbit", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_sparbit }, 0, { { 0 } }, 0,
      NULL, "ceil(log2(p))*a + (p-1)/p*n*b",
      "Sparbit: distances halve each step, data doubles, keeping traffic local late",
      "sparbit" },
      AUTO_NONE },
    { { "_broken", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_broken }, 0, { { 0 } },
      CT_HIDDEN, NULL, "(p-1)*a + (p-1)/p*n*b",
      "TEST ONLY: ring, then the last rank corrupts one byte of block 0", NULL },
      AUTO_NONE },

    /* --------------------------------------------------- Gatherv and Scatterv
     * Only the root knows every count: binomial carries the counts on the tree's
     * edges (a rank's subtree byte total before its bytes, Gatherv; the subtree's
     * counts before its blocks, Scatterv), one more message on every edge that does
     * not end (Gatherv) or start (Scatterv) at the root: no constraint, no fallback.
     * No Open MPI coll/tuned algorithm (5.0 has none for either). */
#define V_TREE_COST "max(0, 2*ceil(log2(p)) - 1)*a + (p-1)/p*n*b"
    { { "native", CT_GATHERV, { .gatherv = ct_gatherv_native }, 0, { { 0 } }, 0, NULL, NULL,
      "the MPI library's own MPI_Gatherv", NULL },
      AUTO_NONE },
    { { "linear", CT_GATHERV, { .gatherv = ct_gatherv_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "root receives each rank's non-empty block in rank order (blocking Recv)", NULL },
      AUTO_NONE },
    { { "linear_nb", CT_GATHERV, { .gatherv = ct_gatherv_linear_nb }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "root posts a receive for every non-empty block at once, then waits", NULL },
      AUTO_NONE },
    { { "binomial", CT_GATHERV, { .gatherv = ct_gatherv_binomial }, 0, { { 0 } }, 0, NULL,
      V_TREE_COST,
      "binomial tree: subtrees collect their blocks and forward them upwards, each "
      "preceded by its byte total (the root knows the counts)", NULL },
      AUTO_NONE },
    { { "_broken", CT_GATHERV, { .gatherv = ct_gatherv_broken }, 0, { { 0 } }, CT_HIDDEN,
      NULL, V_TREE_COST,
      "TEST ONLY: binomial, then the root corrupts one byte of another rank's block", NULL },
      AUTO_NONE },
    { { "native", CT_SCATTERV, { .scatterv = ct_scatterv_native }, 0, { { 0 } }, 0, NULL,
      NULL, "the MPI library's own MPI_Scatterv", NULL },
      AUTO_NONE },
    { { "linear", CT_SCATTERV, { .scatterv = ct_scatterv_linear }, 0, { { 0 } }, 0, NULL,
      "(p-1)*(a + n/p*b)",
      "root sends each rank its non-empty block in turn (blocking Send)", NULL },
      AUTO_NONE },
    { { "linear_nb", CT_SCATTERV, { .scatterv = ct_scatterv_linear_nb }, 0, { { 0 } }, 0,
      NULL, "(p-1)*a + (p-1)/p*n*b",
      "root posts an Isend of every non-empty block at once, then waits", NULL },
      AUTO_NONE },
    { { "binomial", CT_SCATTERV, { .scatterv = ct_scatterv_binomial }, 0, { { 0 } }, 0, NULL,
      V_TREE_COST,
      "binomial tree: each rank receives its subtree's counts and blocks and hands half "
      "of them on per step", NULL },
      AUTO_NONE },
#undef V_TREE_COST
    /* ----------------------------------------------- hierarchical (hier.c)
     * Two levels: a, b between nodes, al, bl inside a node; q processes per node
     * (the largest group), m = ceil(p/q) nodes. Formulas for the default inner
     * algorithms. No constraint: one node runs the intra phase only, one process
     * per node the inter phase only, uneven nodes are groups of their own size;
     * groups are runs of consecutive ranks, so non-commutative ops keep rank order. */
#define VPPN { CT_P_VPPN, 0, 0, 1L << 20, NULL }
#define HIER_AUTO AUTO_NONE
    { { "hier", CT_BCAST, { .bcast = ct_bcast_hier }, 4,
      { INNER(CT_P_INTER, "binomial"), INNER(CT_P_INTRA, "binomial"), VPPN, SEG(0) }, 0, NULL,
      "max(0, ceil(log2(m)) + ceil(log2(q)) + " NSEG " - 1)*(a + s*b) - "
      "ceil(log2(q))*((a + s*b) - (al + s*bl))",
      "node-aware: the root's node leader gets the message, the leaders broadcast (inter), "
      "then each node from its leader (intra); segsize > 0 pipelines the two phases", NULL },
      HIER_AUTO },
    { { "hier", CT_REDUCE, { .reduce = ct_reduce_hier }, 3,
      { INNER(CT_P_INTER, "binomial"), INNER(CT_P_INTRA, "binomial"), VPPN }, 0, NULL,
      "ceil(log2(q))*(al + n*bl + n*g) + ceil(log2(m))*(a + n*b + n*g)",
      "node-aware: each node reduces to its leader (intra), the leaders reduce to the root's "
      "leader (inter), which hands the result to the root", NULL },
      HIER_AUTO },
    { { "hier", CT_ALLREDUCE, { .allreduce = ct_allreduce_hier }, 4,
      { INNER(CT_P_INTER, "rabenseifner"), INNER(CT_P_INTRA, "binomial"),
        INNER(CT_P_BCAST, "binomial"), VPPN }, 0, NULL,
      "ceil(log2(q))*(2*al + 2*n*bl + n*g) + 2*ceil(log2(m))*a + 2*(m-1)/m*n*b + "
      "(m-1)/m*n*g",
      "node-aware: a Reduce to each node's leader (intra), an Allreduce among the leaders "
      "(inter), a Bcast from each leader (bcast)", NULL },
      HIER_AUTO },
    { { "hier", CT_BARRIER, { .barrier = ct_barrier_hier }, 3,
      { INNER(CT_P_INTER, "bruck"), INNER(CT_P_INTRA, "bruck"), VPPN }, 0, NULL,
      "2*ceil(log2(q))*al + ceil(log2(m))*a",
      "node-aware: a barrier inside each node, one among the leaders, a second inside each "
      "node", NULL },
      HIER_AUTO },
    { { "hier", CT_ALLGATHER, { .allgather = ct_allgather_hier }, 4,
      { INNER(CT_P_INTER, "bruck"), INNER(CT_P_INTRA, "binomial"),
        INNER(CT_P_BCAST, "binomial"), VPPN }, 0, NULL,
      "ceil(log2(q))*al + (q-1)/p*n*bl + ceil(log2(m))*a + (m-1)/m*n*b + "
      "ceil(log2(q))*(al + n*bl)",
      "node-aware: each node's blocks gathered at its leader (intra, a Gather), the leaders' "
      "runs of blocks exchanged (inter, an Allgatherv), the result broadcast in each node",
      NULL },
      HIER_AUTO },
    { { "hier", CT_ALLGATHERV, { .allgatherv = ct_allgatherv_hier }, 3,
      { INNER(CT_P_INTER, "bruck"), INNER(CT_P_BCAST, "binomial"), VPPN }, 0, NULL,
      "(q-1)*(al + n/p*bl) + ceil(log2(m))*a + (m-1)/m*n*b + ceil(log2(q))*(al + n*bl)",
      "node-aware: each node's blocks gathered at its leader (linear), the leaders' runs of "
      "blocks exchanged (inter), the result broadcast in each node (bcast)", NULL },
      HIER_AUTO },
    { { "hier", CT_ALLTOALL, { .alltoall = ct_alltoall_hier }, 2,
      { INNER(CT_P_INTER, "pairwise"), VPPN }, 0, NULL,
      "2*(q-1)*(al + n*bl) + (m-1)*(a + q*q*n/p*b)",
      "node-aware aggregation: each node's blocks gathered at its leader, one message per "
      "pair of nodes among the leaders (inter, an Alltoallv), each rank's blocks scattered "
      "back", NULL },
      HIER_AUTO },
    /* multi-leader (hier_ml): k = the slices per node (leaders; 0: q), every owner of a
     * slice in the inter phase of its slice; the k inter phases share the node's link
     * (n bytes in all through it). Non-commutative ops: each slice reduced in rank
     * order inside the node, in node order among its owners. */
#define LEADERS { CT_P_LEADERS, 0, 0, 1L << 20, NULL }
    { { "hier_ml", CT_BCAST, { .bcast = ct_bcast_hier_ml }, 4,
      { INNER(CT_P_INTER, "scatter_allgather"), LEADERS, VPPN, SEG(0) }, 0, NULL,
      "(k-1)*(al + n/k*bl) + 2*ceil(log2(m))*a + 2*(m-1)/m*n*b + (q-1)*(al + n/k*bl)",
      "node-aware, multi-leader: the root scatters k slices to k ranks of its node, each "
      "slice broadcast among its owners on every node (inter, k at once), then an allgather "
      "inside each node; segsize > 0: in chunks, the phases of consecutive chunks "
      "overlapping", NULL },
      HIER_AUTO },
    { { "hier_ml", CT_ALLREDUCE, { .allreduce = ct_allreduce_hier_ml }, 4,
      { INNER(CT_P_INTER, "rabenseifner"), LEADERS, VPPN, SEG(0) }, 0, NULL,
      "2*(q-1)*(al + n/k*bl) + (q-1)*n/k*g + 2*ceil(log2(m))*a + 2*(m-1)/m*n*b + "
      "(m-1)/m*n/k*g",
      "node-aware, multi-leader: a reduce-scatter inside each node (k slices, each reduced "
      "by its owner in rank order), an Allreduce of each slice among its owners on every "
      "node (inter, k at once), then an allgather inside each node; segsize > 0: in chunks, "
      "the phases of consecutive chunks overlapping", NULL },
      HIER_AUTO },
#undef LEADERS
    /* ------------------------------------------------ shared memory (shm.c)
     * One node: a shared window of the communicator; the fallback runs (reported)
     * when the ranks do not all share memory. al, bl: inside a node. */
    { { "shm", CT_BCAST, { .bcast = ct_bcast_shm }, 1, { SEG(0) }, 0, "binomial",
      "(" NSEG " + 1)*(al + s*bl)",
      "one node: the root copies the message into a shared window, every other rank "
      "copies it out (flags for synchronisation); segsize > 0: in chunks through a ring "
      "of 4 buffers, the root copying the next chunk in while the others copy one out", NULL },
      AUTO_NONE },
    { { "shm", CT_REDUCE, { .reduce = ct_reduce_shm }, 0, { { 0 } }, 0, "in_order_binary",
      "3*al + 2*n*bl + (p-1)/p*n*g",
      "one node: every rank copies its vector into a shared window and reduces its share "
      "of the elements over all of them in rank order; the root copies the result out",
      NULL },
      AUTO_NONE },
    { { "shm", CT_ALLREDUCE, { .allreduce = ct_allreduce_shm }, 0, { { 0 } }, 0,
      "recursive_doubling", "3*al + 2*n*bl + (p-1)/p*n*g",
      "one node: as Reduce shm, every rank copying the result out", NULL },
      AUTO_NONE },
    { { "shm", CT_BARRIER, { .barrier = ct_barrier_shm }, 0, { { 0 } }, 0, "bruck", "al",
      "one node: a counter and a generation flag in a shared window", NULL },
      AUTO_NONE },
};

int ct_algo_count(void) { return (int)(sizeof table / sizeof table[0]); }

const ct_algo_t *ct_algo_get(int index) {
    if (index < 0 || index >= ct_algo_count()) return NULL;
    return &table[index].a;
}

int ct_algo_find(ct_coll_t coll, const char *name) {
    if (!name) return -1;
    for (int i = 0; i < ct_algo_count(); i++)
        if (table[i].a.coll == coll && strcmp(table[i].a.name, name) == 0) return i;
    return -1;
}

int ct_remap_auto(int algo) {
    if (algo < 0 || algo >= ct_algo_count()) return CT_REMAP_NONE;
    return table[algo].remap_auto & ~SR_MASK;
}

/* ---- segsize=auto -------------------------------------------------------------
 * docs/algorithms/bcast.md, "Segment size default", derives the rule: a
 * pipeline of d hops moving n bytes in segments of s bytes takes about
 * (d + n/s - 1)(a + s*b') (b' = b for Bcast, b + g for Reduce), least at
 * s* = sqrt(n*L/(d-1)) with L = a/b' bytes. The segment is s* rounded to the
 * nearest power of two (in log scale: 2^((m+1)/2), m = floor(log2(n*L/(d-1))),
 * integers only), clamped to [CT_SEG_AUTO_MIN, CT_SEG_AUTO_MAX]; unsegmented
 * (0) when d <= 1 or when the segment would hold the whole message.
 * src/colltune/analysis/segsize.py is the same rule in Python (tests compare
 * both over a grid). */
static int floor_log2ll(unsigned long long x) { return 63 - __builtin_clzll(x); }

const char *ct_segsize_rule_name(int algo) {
    static const char *names[] = { NULL, "chain", "pipeline", "binary", "split_binary" };
    if (algo < 0 || algo >= ct_algo_count()) return NULL;
    return names[(table[algo].remap_auto & SR_MASK) >> SR_SHIFT];
}

long ct_segsize_resolve(int algo, long fanout, long long bytes, int p) {
    if (algo < 0 || algo >= ct_algo_count() || p < 3 || bytes <= CT_SEG_AUTO_MIN) return 0;
    long long n = bytes, d;
    switch (table[algo].remap_auto & SR_MASK) {
    case SR_CHAIN: { /* k = min(fanout, p-1) chains of ceil((p-1)/k) ranks */
        long k = fanout < 1 ? 1 : fanout > p - 1 ? p - 1 : fanout;
        d = (p - 1 + k - 1) / k;
        break;
    }
    case SR_PIPELINE: d = p - 1; break;
    case SR_BINARY: d = floor_log2ll((unsigned long long)p); break; /* tree height */
    case SR_SPLIT: /* each half down the root's edge and a subtree of ceil((p-1)/2) */
        d = 1 + floor_log2ll((unsigned long long)(p / 2));
        n = bytes - bytes / 2;
        break;
    default: return 0;
    }
    if (d <= 1) return 0;
    if (n > (1LL << 40)) n = 1LL << 40; /* the segment is at its maximum long before */
    const long long lambda = ct_algo_get(algo)->coll == CT_REDUCE ? CT_SEG_AUTO_L_REDUCE
                                                                   : CT_SEG_AUTO_L;
    unsigned long long x = (unsigned long long)(n * lambda / (d - 1));
    long s = 1L << ((floor_log2ll(x) + 1) >> 1);
    if (s < CT_SEG_AUTO_MIN) s = CT_SEG_AUTO_MIN;
    if (s > CT_SEG_AUTO_MAX) s = CT_SEG_AUTO_MAX;
    return s >= n ? 0 : s;
}
