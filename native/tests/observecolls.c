/*
 * observecolls.c -- a plain MPI program (no colltune code) calling the collectives colltune
 * does not run, each a known number of times, every result checked: tests/test_profile.py
 * runs it under libcolltune-pmpi.so and checks the profile's "observed" entries.
 *
 *   colltune-observecolls [ROUNDS]    (default 5)
 *
 * Each round: MPI_Gatherv, MPI_Scatterv, MPI_Alltoallw, MPI_Scan, MPI_Exscan (4 ints),
 * MPI_Neighbor_alltoall and MPI_Neighbor_allgather on a periodic ring, MPI_Ibcast (10
 * doubles) completed by MPI_Wait, MPI_Iallreduce (4 ints) by polling MPI_Test, two
 * MPI_Iallgather by MPI_Waitall beside a point-to-point exchange, MPI_Ibarrier by
 * MPI_Waitany, MPI_Ialltoall by MPI_Waitsome; where the library has them, a persistent
 * MPI_Allreduce_init started each round (MPI_Start, MPI_Wait) and freed at the end, and
 * MPI_Bcast_c. Exit 1 (with a line on stderr) on a wrong result.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, np, bad;

static void check(int ok, const char *what, int round) {
    if (!ok && !bad)
        fprintf(stderr, "rank %d: wrong result of %s in round %d\n", rank, what, round);
    if (!ok) bad = 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int *cnt = malloc((size_t)np * sizeof *cnt), *dsp = malloc((size_t)np * sizeof *dsp);
    int *all = malloc((size_t)np * 2 * sizeof *all), *all2 = malloc((size_t)np * 2 * sizeof *all2);
    MPI_Datatype *types = malloc((size_t)np * sizeof *types);
    for (int j = 0; j < np; j++) {
        cnt[j] = 2;
        dsp[j] = 2 * j;
        types[j] = MPI_INT;
    }
    MPI_Comm ring;
    int dims[1] = {np}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int left = (rank + np - 1) % np, right = (rank + 1) % np;
#if CT_HAVE_COLL_INIT
    int pin = rank + 1, pout = 0;
    MPI_Request preq;
    MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
#endif
    for (int r = 0; r < rounds; r++) {
        int mine[2] = {rank, r}, got[2] = {-1, -1};
        /* Gatherv, Scatterv at root r % np */
        int root = r % np;
        MPI_Gatherv(mine, 2, MPI_INT, all, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD);
        for (int j = 0; rank == root && j < np; j++)
            check(all[2 * j] == j && all[2 * j + 1] == r, "MPI_Gatherv", r);
        MPI_Scatterv(all, cnt, dsp, MPI_INT, got, 2, MPI_INT, root, MPI_COMM_WORLD);
        check(got[0] == rank && got[1] == r, "MPI_Scatterv", r);
        /* Alltoallw: block j of rank i = (i, j) */
        for (int j = 0; j < np; j++) {
            all[2 * j] = rank;
            all[2 * j + 1] = j;
        }
        int wd[64];
        for (int j = 0; j < np && j < 64; j++) wd[j] = dsp[j] * (int)sizeof(int);
        MPI_Alltoallw(all, cnt, wd, types, all2, cnt, wd, types, MPI_COMM_WORLD);
        for (int j = 0; j < np; j++)
            check(all2[2 * j] == j && all2[2 * j + 1] == rank, "MPI_Alltoallw", r);
        /* Scan, Exscan of 4 ints */
        int v[4] = {rank + 1, 1, r, 0}, s[4] = {0, 0, 0, 0};
        MPI_Scan(v, s, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(s[0] == (rank + 1) * (rank + 2) / 2 && s[1] == rank + 1, "MPI_Scan", r);
        MPI_Exscan(v, s, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank > 0) check(s[0] == rank * (rank + 1) / 2 && s[1] == rank, "MPI_Exscan", r);
        /* neighbourhood collectives on the ring: neighbours left, right */
        int nb_out[2] = {rank, rank}, nb_in[2] = {-1, -1};
        MPI_Neighbor_alltoall(nb_out, 1, MPI_INT, nb_in, 1, MPI_INT, ring);
        check(nb_in[0] == left && nb_in[1] == right, "MPI_Neighbor_alltoall", r);
        nb_in[0] = nb_in[1] = -1;
        MPI_Neighbor_allgather(&rank, 1, MPI_INT, nb_in, 1, MPI_INT, ring);
        check(nb_in[0] == left && nb_in[1] == right, "MPI_Neighbor_allgather", r);
        /* Ibcast + Wait */
        double d[10];
        for (int k = 0; k < 10; k++) d[k] = rank == root ? k + r : -1;
        MPI_Request q;
        MPI_Ibcast(d, 10, MPI_DOUBLE, root, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        check(d[9] == 9 + r && q == MPI_REQUEST_NULL, "MPI_Ibcast", r);
        /* Iallreduce + Test until done */
        int a[4] = {1, rank, r, 2}, b[4];
        int flag = 0;
        MPI_Iallreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        check(b[0] == np && b[1] == np * (np - 1) / 2 && b[3] == 2 * np, "MPI_Iallreduce", r);
        /* two Iallgather beside point-to-point, one Waitall */
        MPI_Request qs[4];
        int g1[64], g2[64], pr = -1, ps = rank;
        MPI_Iallgather(&rank, 1, MPI_INT, g1, 1, MPI_INT, MPI_COMM_WORLD, &qs[0]);
        MPI_Irecv(&pr, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &qs[1]);
        MPI_Isend(&ps, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &qs[2]);
        MPI_Iallgather(&r, 1, MPI_INT, g2, 1, MPI_INT, MPI_COMM_WORLD, &qs[3]);
        MPI_Status sts[4]; /* not MPI_STATUSES_IGNORE: gcc 12 misreads MPICH 4.0's */
        MPI_Waitall(4, qs, sts);
        for (int j = 0; j < np && j < 64; j++)
            check(g1[j] == j && g2[j] == r, "MPI_Iallgather", r);
        check(pr == left, "the point-to-point exchange", r);
        /* Ibarrier + Waitany */
        int idx = -1;
        MPI_Ibarrier(MPI_COMM_WORLD, &q);
        MPI_Waitany(1, &q, &idx, MPI_STATUS_IGNORE);
        check(idx == 0, "MPI_Ibarrier", r);
        /* Ialltoall + Waitsome until done */
        for (int j = 0; j < np; j++) all[j] = rank * 100 + j;
        MPI_Ialltoall(all, 1, MPI_INT, all2, 1, MPI_INT, MPI_COMM_WORLD, &q);
        int outc = 0, ind[1];
        while (outc != MPI_UNDEFINED) MPI_Waitsome(1, &q, &outc, ind, sts);
        for (int j = 0; j < np; j++) check(all2[j] == j * 100 + rank, "MPI_Ialltoall", r);
#if CT_HAVE_COLL_INIT
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check(pout == np * (np + 1) / 2, "MPI_Allreduce_init", r);
#endif
#if CT_HAVE_COLL_C
        MPI_Count big = 3;
        int bc[3] = {r, r, rank == root ? 7 : -1};
        MPI_Bcast_c(bc, big, MPI_INT, root, MPI_COMM_WORLD);
        check(bc[2] == 7, "MPI_Bcast_c", r);
#endif
    }
#if CT_HAVE_COLL_INIT
    MPI_Request_free(&preq);
#endif
    MPI_Comm_free(&ring);
    free(cnt);
    free(dsp);
    free(all);
    free(all2);
    free(types);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !anybad)
        printf("observecolls: %d rounds at %d processes: every result right\n", rounds, np);
    MPI_Finalize();
    return anybad;
}
