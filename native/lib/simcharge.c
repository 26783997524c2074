/* simcharge.c -- the simulated time of local copies and reductions under SMPI
 * (see simcharge.h). Empty outside SMPI builds. */
#include "ct_internal.h"

#ifdef SMPI_SHARED_MALLOC
#include <stdio.h>
#include <stdlib.h>

/* the simulated hosts' speed (mpi/platforms.py HOST_SPEED_FLOPS): a charge of s
 * seconds is s x 1e9 flops. smpi_execute_flops, not smpi_execute: the latter
 * drops durations under smpi/cpu-threshold (1 µs), most copies here. */
#define CT_SIM_HOST_FLOPS 1e9
#define CT_SIM_POINTS 32 /* per kind (mpi/platforms.py COMPUTE_MAX_POINTS) */

/* per kind: the table (bytes, seconds); globals are per simulated rank (SMPI
 * privatises them), so each rank reads the environment once */
#define CT_SIM_KINDS 3
static double tb[CT_SIM_KINDS][CT_SIM_POINTS], ts[CT_SIM_KINDS][CT_SIM_POINTS];
static int tn[CT_SIM_KINDS], loaded;

/* the regions this rank wrote last (with a forward table only): a ring of them, the
 * oldest forgotten; a rank's working set in one collective is a few buffers */
#define CT_SIM_REGIONS 32
static const char *rlo[CT_SIM_REGIONS], *rhi[CT_SIM_REGIONS];
static int rnext;

static void load(void) {
    loaded = 1;
    const char *v = getenv("COLLTUNE_SIM_CHARGE");
    if (!v || !*v) return;
    static const char *names[CT_SIM_KINDS] = {"copy=", "reduce=", "forward="};
    for (int k = 0; k < CT_SIM_KINDS; k++) {
        const char *p = strstr(v, names[k]);
        if (!p) continue;
        p += strlen(names[k]);
        double b, us;
        int used;
        while (tn[k] < CT_SIM_POINTS && sscanf(p, "%lf:%lf%n", &b, &us, &used) == 2) {
            if (b <= 0 || us < 0 || (tn[k] && b <= tb[k][tn[k] - 1])) break;
            tb[k][tn[k]] = b;
            ts[k][tn[k]] = us * 1e-6;
            tn[k]++;
            p += used;
            if (*p != ',') break;
            p++;
        }
    }
}

/* seconds of one operation of kind k on `bytes` bytes */
static double seconds(int k, double bytes) {
    int n = tn[k];
    if (n == 0) return 0;
    if (bytes <= tb[k][0]) return ts[k][0];
    if (bytes >= tb[k][n - 1]) return ts[k][n - 1] * bytes / tb[k][n - 1];
    int i = 1;
    while (bytes > tb[k][i]) i++;
    double f = (bytes - tb[k][i - 1]) / (tb[k][i] - tb[k][i - 1]);
    return ts[k][i - 1] + f * (ts[k][i] - ts[k][i - 1]);
}

/* ct_sim_timing_only (colltune.h): per simulated rank, as every global here */
static int timing_only;

int ct_sim_timing_only(int on) {
    timing_only = on != 0;
    return MPI_SUCCESS;
}

int ct_sim_timing_only_on(void) { return timing_only; }

void ct_sim_charge(int kind, double bytes) {
    if (!loaded) load();
    if (kind < 0 || kind >= CT_SIM_KINDS || bytes <= 0) return;
    double s = seconds(kind, bytes);
    if (s > 0) smpi_execute_flops(s * CT_SIM_HOST_FLOPS);
}

void ct_sim_wrote(const void *p, double bytes) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] == 0 || !p || bytes <= 0) return;
    const char *lo = p, *hi = lo + (size_t)bytes;
    for (int i = 0; i < CT_SIM_REGIONS; i++) /* already known: nothing to add */
        if (rlo[i] && rlo[i] <= lo && hi <= rhi[i]) return;
    rlo[rnext] = lo;
    rhi[rnext] = hi;
    rnext = (rnext + 1) % CT_SIM_REGIONS;
}

void ct_sim_forget(void) {
    for (int i = 0; i < CT_SIM_REGIONS; i++) rlo[i] = rhi[i] = NULL;
}

/* bytes of count x dt (0 when the size is unknown) */
static double msg_bytes(int count, MPI_Datatype dt) {
    int size = 0;
    return count > 0 && ct_type_size(dt, &size) == MPI_SUCCESS ? (double)count * size : 0;
}

/* before a send of `bytes` at p: the forward charge when p overlaps a written region */
static void before_send(const void *p, double bytes, int dst) {
    if (dst == MPI_PROC_NULL || bytes <= 0 || !p) return;
    const char *lo = p, *hi = lo + (size_t)bytes;
    for (int i = 0; i < CT_SIM_REGIONS; i++)
        if (rlo[i] && rlo[i] < hi && lo < rhi[i]) {
            ct_sim_charge(CT_SIM_FORWARD, bytes);
            rlo[i] = rhi[i] = NULL; /* read by the other core: clean from now on */
            return;
        }
}

int ct_sim_send(const void *b, int n, MPI_Datatype dt, int dst, int tag, MPI_Comm comm) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] > 0) before_send(b, msg_bytes(n, dt), dst);
    return (MPI_Send)(b, n, dt, dst, tag, comm);
}

int ct_sim_isend(const void *b, int n, MPI_Datatype dt, int dst, int tag, MPI_Comm comm,
                 MPI_Request *req) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] > 0) before_send(b, msg_bytes(n, dt), dst);
    return (MPI_Isend)(b, n, dt, dst, tag, comm, req);
}

int ct_sim_recv(void *b, int n, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                MPI_Status *st) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] > 0 && src != MPI_PROC_NULL) ct_sim_wrote(b, msg_bytes(n, dt));
    return (MPI_Recv)(b, n, dt, src, tag, comm, st);
}

int ct_sim_irecv(void *b, int n, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                 MPI_Request *req) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] > 0 && src != MPI_PROC_NULL) ct_sim_wrote(b, msg_bytes(n, dt));
    return (MPI_Irecv)(b, n, dt, src, tag, comm, req);
}

int ct_sim_sendrecv(const void *sb, int sn, MPI_Datatype sdt, int dst, int stag, void *rb,
                    int rn, MPI_Datatype rdt, int src, int rtag, MPI_Comm comm, MPI_Status *st) {
    if (!loaded) load();
    if (tn[CT_SIM_FORWARD] > 0) {
        before_send(sb, msg_bytes(sn, sdt), dst);
        if (src != MPI_PROC_NULL) ct_sim_wrote(rb, msg_bytes(rn, rdt));
    }
    return (MPI_Sendrecv)(sb, sn, sdt, dst, stag, rb, rn, rdt, src, rtag, comm, st);
}

int ct_sim_reduce_local(const void *in, void *inout, int count, MPI_Datatype dt, MPI_Op op) {
    /* the size only when there is a table to charge from, and without an MPI call
     * for a predefined type (ct_type_size's cache) -- no simulated time changes;
     * host time: not measurably (ring Allreduce, 256 processes, 1.24 against 1.28 s
     * a point, this VM's spread) */
    if (!loaded) load();
    int size = 0;
    if (tn[CT_SIM_REDUCE] > 0 && count > 0 && ct_type_size(dt, &size) == MPI_SUCCESS)
        ct_sim_charge(CT_SIM_REDUCE, (double)count * size);
    if (tn[CT_SIM_FORWARD] > 0) ct_sim_wrote(inout, msg_bytes(count, dt));
    if (timing_only) return MPI_SUCCESS; /* charged above; nobody reads the result */
    return (MPI_Reduce_local)(in, inout, count, dt, op);
}
#else
int ct_sim_timing_only(int on) {
    return on ? ct_set_error(MPI_ERR_ARG, "timing only: only in a build for SimGrid's SMPI")
              : MPI_SUCCESS;
}
#endif
