/*
 * traffic_count.c -- colltune-traffic-count: the bytes and messages one call of
 * a colltune algorithm sends inside nodes and between nodes, per rank.
 *
 * Counted from the algorithm's own sends (the library's ct_send/ct_isend/
 * ct_sendrecv, enabled with ct_traffic_enable around the one call), so it is the
 * real code path, remapping included. Nodes are the communicator's placement:
 * real shared-memory nodes, or virtual ones from COLLTUNE_NODES (see colltune.h).
 * One JSON line per size on rank 0's stdout.
 */
#include "driver_common.h"

#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: colltune-traffic-count --coll C --algo SPEC --sizes LIST [--root R]\n\n"
           "Run under mpirun (virtual nodes: COLLTUNE_NODES, COLLTUNE_NODE_ORDER). For each\n"
           "size (bytes; Allgather: bytes per process; Reduce/Allreduce: a multiple of 4,\n"
           "ints summed) one call of the algorithm is made with every send counted, and\n"
           "rank 0 prints a JSON line: placement, and per rank the bytes and messages it\n"
           "sent to ranks of its own node (intra) and of other nodes (inter).\n");
}

int main(int argc, char **argv) {
    const char *coll_s = NULL, *spec = NULL, *sizes_s = NULL;
    int root = 0;
    int rank, P;
    ct_start(&argc, &argv, usage, &rank, &P);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--coll") && i + 1 < argc) coll_s = argv[++i];
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_s = argv[++i];
        else if (!strcmp(argv[i], "--root") && i + 1 < argc) root = atoi(argv[++i]);
        else ct_die(rank, "unknown argument '%s' (see --help)", argv[i]);
    }
    if (!coll_s || !spec || !sizes_s) ct_die(rank, "--coll, --algo and --sizes are required");
    ct_coll_t coll;
    ct_choice_t choice;
    if (ct_coll_from_name(coll_s, &coll) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
    if (ct_choice_parse(coll, spec, &choice) != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
    if (root < 0 || root >= P) ct_die(rank, "--root %d: valid 0..%d", root, P - 1);
    ct_placement_t pl;
    if (ct_comm_placement(MPI_COMM_WORLD, &pl) != MPI_SUCCESS)
        ct_die(rank, "%s", ct_last_error());
    char **sz;
    int nsz = ct_split(sizes_s, &sz);
    long long *bytes = calloc((size_t)P, sizeof *bytes), *msgs = calloc((size_t)P, sizeof *msgs);
    long long *all = rank == 0 ? malloc((size_t)P * 4 * sizeof *all) : NULL;
    char fmt[256];
    ct_choice_format(&choice, fmt, sizeof fmt);
    for (int k = 0; k < nsz; k++) {
        char *end = NULL;
        long size = strtol(sz[k], &end, 10);
        if (!end || *end || size < 1) ct_die(rank, "size '%s' is not a byte count >= 1", sz[k]);
        int reduces = coll == CT_REDUCE || coll == CT_ALLREDUCE;
        if (reduces && size % 4)
            ct_die(rank, "size %ld: %s counts ints, give a multiple of 4", size, coll_s);
        int count = (int)(reduces ? size / 4 : size);
        MPI_Datatype dt = reduces ? MPI_INT : MPI_CHAR;
        size_t total = coll == CT_ALLGATHER || coll == CT_GATHER ? (size_t)size * (size_t)P
                                                                  : (size_t)size;
        char *s = calloc((size_t)size, 1), *r = calloc(total, 1);
        if (!s || !r) ct_die(rank, "out of memory for size %ld", size);
        memset(bytes, 0, (size_t)P * sizeof *bytes);
        memset(msgs, 0, (size_t)P * sizeof *msgs);
        MPI_Barrier(MPI_COMM_WORLD);
        ct_traffic_enable(bytes, msgs);
        int rc = MPI_SUCCESS;
        switch (coll) {
        case CT_BCAST: rc = ct_bcast(&choice, s, count, dt, root, MPI_COMM_WORLD); break;
        case CT_REDUCE:
            rc = ct_reduce(&choice, s, r, count, dt, MPI_SUM, root, MPI_COMM_WORLD);
            break;
        case CT_GATHER:
            rc = ct_gather(&choice, s, count, dt, r, count, dt, root, MPI_COMM_WORLD);
            break;
        case CT_ALLGATHER:
            rc = ct_allgather(&choice, s, count, dt, r, count, dt, MPI_COMM_WORLD);
            break;
        case CT_ALLREDUCE:
            rc = ct_allreduce(&choice, s, r, count, dt, MPI_SUM, MPI_COMM_WORLD);
            break;
        default: break;
        }
        ct_traffic_disable();
        if (rc != MPI_SUCCESS) ct_die(rank, "%s", ct_last_error());
        const ct_dispatch_t *d = ct_last_dispatch();
        long long mine[4] = { 0, 0, 0, 0 }; /* intra bytes, intra msgs, inter bytes, msgs */
        for (int w = 0; w < P; w++) {
            int inter = pl.node[w] != pl.node[rank];
            mine[2 * inter] += bytes[w];
            mine[2 * inter + 1] += msgs[w];
        }
        MPI_Gather(mine, 4, MPI_LONG_LONG, all, 4, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            long long tot[4] = { 0, 0, 0, 0 };
            printf("{\"collective\": \"%s\", \"spec\": ", coll_s);
            ct_json_str(stdout, fmt);
            printf(", \"algorithm\": ");
            ct_json_str(stdout, ct_algo_get(d->used)->name);
            printf(", \"fallback\": ");
            if (d->reason[0]) ct_json_str(stdout, d->reason);
            else fputs("null", stdout);
            printf(", \"remap_applied\": \"%s\", \"np\": %d, \"nodes\": %d, "
                   "\"max_per_node\": %d, \"regular\": %s, \"placement\": \"%s\", "
                   "\"size\": %ld, \"root\": %d, \"node\": [",
                   ct_remap_name(d->remap), P, pl.nodes, pl.max_per_node,
                   pl.regular ? "true" : "false", ct_placement_kind_name(pl.kind), size, root);
            for (int w = 0; w < P; w++) printf("%s%d", w ? ", " : "", pl.node[w]);
            printf("], \"ranks\": [");
            for (int w = 0; w < P; w++) {
                const long long *a = all + 4 * w;
                for (int j = 0; j < 4; j++) tot[j] += a[j];
                printf("%s[%lld, %lld, %lld, %lld]", w ? ", " : "", a[0], a[1], a[2], a[3]);
            }
            printf("], \"total\": {\"intra_bytes\": %lld, \"intra_msgs\": %lld, "
                   "\"inter_bytes\": %lld, \"inter_msgs\": %lld}}\n",
                   tot[0], tot[1], tot[2], tot[3]);
            fflush(stdout);
        }
        free(s);
        free(r);
    }
    ct_free_list(sz, nsz);
    free(bytes);
    free(msgs);
    free(all);
    MPI_Finalize();
    return 0;
}
