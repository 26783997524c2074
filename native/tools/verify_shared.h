/* verify_shared.h -- what verify_cases.c shares with verify_more.c (the cases of
 * Alltoall, Alltoallv, Scatter and Barrier): the datatypes under test, inputs,
 * comparisons and the layouts of the mixed family. Not included by verify.c. */
#ifndef CT_VERIFY_SHARED_H
#define CT_VERIFY_SHARED_H

#include "verify_cases.h"

#include <stdint.h>

extern int rank, nprocs;               /* of MPI_COMM_WORLD */
extern MPI_Datatype types[NTYPES];     /* indexed by T_* */
extern uint32_t salt_counter;          /* ++ per case: fresh inputs */
size_t type_extent(int t);
/* count elements of process `who` (values for op o) at buf, holes left alone */
void fill(char *buf, int t, long count, int o, int who, uint32_t salt);
/* bytes filled with a sentinel; aborts when out of memory */
char *alloc_region(size_t bytes);
/* byte-exact comparisons (holes included) that set the verdict on a difference */
void compare(verdict_t *v, const char *what, const char *got, const char *want, int t,
             long count);
void compare_bytes(verdict_t *v, const char *what, const char *got, const char *want,
                   size_t bytes);

/* the four buffers of most cases, sentinel-filled by vbufs_new: the send buffer in
 * and its copy in_ref (sbytes each), the receive buffers rn (of the MPI library's
 * own collective) and ro (of colltune's) (rbytes each); with a root, sentinel
 * (rbytes, set by the case; else NULL): what ro must stay at the other ranks */
typedef struct {
    char *in, *in_ref, *rn, *ro, *sentinel;
    size_t sbytes, rbytes;
} vbufs_t;
vbufs_t vbufs_new(size_t sbytes, size_t rbytes);
void vbufs_free(vbufs_t *b);
/* the end of a rooted case: at the root the result (ro against rn, rcount
 * elements), at the others ro untouched (against sentinel); the send buffer
 * (scount elements) unless in place; the verdict reported, the buffers freed */
void vbufs_report_rooted(const vcase_t *c, verdict_t *v, vbufs_t *b, int is_root, int inplace,
                         long rcount, long scount);
/* the end of a case of the mixed family: the result (ro against rn) and the send
 * buffer (in against in_ref) compared byte-exact, the verdict reported (collective
 * over MPI_COMM_WORLD), the buffers freed */
void vbufs_report_bytes(const vcase_t *c, verdict_t *v, vbufs_t *b);

/* the counts and displacements of cn uneven blocks: cnt[j] = count(n, j), dsp set
 * by layout (which returns the elements spanned); one allocation (free(cnt)) */
typedef struct {
    int *cnt, *dsp;
    long span;
} vblocks_t;
/* blocks laid out last first, one element apart (holes and reversed order): sets
 * dsp[j] for cnt[j] elements of block j (j < cn); returns the elements spanned */
long rev_layout(int cn, const int *cnt, int *dsp);
vblocks_t vblocks_new(int cn, int n, int (*count)(int n, int j),
                      long (*layout)(int cn, const int *cnt, int *dsp));

/* the mixed family: one message of 2n ints in several layouts (verify_cases.c) */
enum { L_INT, L_VEC, L_SWAP, L_PAIR, L_EMPTY, NLAYOUTS };
extern MPI_Datatype lay_dt[NLAYOUTS];
int lay_count(int L, int pairs);
size_t lay_extent(int L);
size_t lay_bytes(int L, int pairs);
void lay_fill(char *buf, int L, int pairs, int who, uint32_t salt);
int lay_of(int a, int rel, int pairs);
void mixed_desc(vcase_t *c, int a, int pairs);

/* verify_more.c */
void run_alltoall(const vcase_t *c);
void run_alltoallv(const vcase_t *c);
void run_scatter(const vcase_t *c);
void run_barrier(const vcase_t *c);
void run_mixed_alltoall(vcase_t *c, int a);
void run_mixed_alltoallv(vcase_t *c, int a);
void run_mixed_scatter(vcase_t *c, int a);

/* verify_rs.c */
MPI_Op case_op(int t, int o); /* the op of a case (verify_cases.c) */
void run_reduce_scatter_block(const vcase_t *c);
void run_reduce_scatter(const vcase_t *c);
void run_mixed_reduce_scatter(vcase_t *c, int a);
/* verify_allgatherv.c */
void run_allgatherv(const vcase_t *c);
void run_mixed_allgatherv(vcase_t *c, int a);
/* verify_gatherv.c */
void run_gatherv_case(const vcase_t *c); /* Gatherv or Scatterv */
void run_mixed_gatherv(vcase_t *c, int a);
/* verify_empty.c */
void vc_empty_setup(void);
void vc_empty_teardown(void);

#endif
