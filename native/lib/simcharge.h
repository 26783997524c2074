/*
 * simcharge.h -- under SimGrid's SMPI, the simulated time of what the simulation
 * does not see: local copies (ct_copy) and local reductions (MPI_Reduce_local)
 * inside colltune's algorithms (docs/simulation.md, "Charged computation").
 *
 * SMPI runs with smpi/simulate-computation:no, so the CPU time between MPI calls
 * costs nothing. Here each copy and each local reduction is charged as simulated
 * computation: the time of its size interpolated linearly in the platform's table
 * of the kind (measured on the machine by colltune platform calibrate; below the
 * first size its time, above the last its time per byte), which the launch passes
 * in the environment (mpi/platforms.py: sim_env):
 *
 *   COLLTUNE_SIM_CHARGE="copy=BYTES:US,BYTES:US,...;reduce=BYTES:US,...;forward=..."
 *
 * read once per simulated rank. Deterministic: the charge depends on the bytes
 * only, never on how long the host took. Outside SMPI builds (SMPI's mpi.h
 * defines SMPI_SHARED_MALLOC) everything here compiles to nothing.
 */
#ifndef CT_SIMCHARGE_H
#define CT_SIMCHARGE_H

#include <mpi.h>

#ifdef SMPI_SHARED_MALLOC
enum { CT_SIM_COPY = 0, CT_SIM_REDUCE = 1, CT_SIM_FORWARD = 2 };
/* charge the simulated time of one operation of `kind` on `bytes` bytes */
void ct_sim_charge(int kind, double bytes);
/* ct_sim_timing_only (colltune.h) is on: copies and reductions are charged, not done */
int ct_sim_timing_only_on(void);
/* MPI_Reduce_local, charged as a reduction of count x dt (not done: timing only) */
int ct_sim_reduce_local(const void *in, void *inout, int count, MPI_Datatype dt, MPI_Op op);
/* `bytes` at p were just written by this rank (a receive, a copy, a reduction) */
void ct_sim_wrote(const void *p, double bytes);
/* no region written any more (at the start of every collective call: dispatch.c) */
void ct_sim_forget(void);
/* Point-to-point calls of the algorithms, with a "forward" table: the regions they
 * receive into are marked written, and a send from a written region is charged the
 * table's time of its size first (a message whose data the sender's core has just
 * written costs more than a clean one: docs/simulation.md, "Data the sender just
 * wrote"). Without the table: the plain calls. */
int ct_sim_send(const void *b, int n, MPI_Datatype dt, int dst, int tag, MPI_Comm comm);
int ct_sim_isend(const void *b, int n, MPI_Datatype dt, int dst, int tag, MPI_Comm comm,
                 MPI_Request *req);
int ct_sim_recv(void *b, int n, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                MPI_Status *st);
int ct_sim_irecv(void *b, int n, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
                 MPI_Request *req);
int ct_sim_sendrecv(const void *sb, int sn, MPI_Datatype sdt, int dst, int stag, void *rb,
                    int rn, MPI_Datatype rdt, int src, int rtag, MPI_Comm comm, MPI_Status *st);
#define CT_SIM_CHARGE(kind, bytes) ct_sim_charge((kind), (double)(bytes))
#define CT_SIM_WROTE(p, bytes) ct_sim_wrote((p), (double)(bytes))
#define CT_SIM_FORGET() ct_sim_forget()
#define CT_SIM_TIMING_ONLY() ct_sim_timing_only_on()
/* every local reduction of the algorithms goes through the charged wrapper */
#define MPI_Reduce_local(in, inout, n, dt, op) ct_sim_reduce_local((in), (inout), (n), (dt), (op))
#define MPI_Send(b, n, dt, d, t, c) ct_sim_send((b), (n), (dt), (d), (t), (c))
#define MPI_Isend(b, n, dt, d, t, c, r) ct_sim_isend((b), (n), (dt), (d), (t), (c), (r))
#define MPI_Recv(b, n, dt, s, t, c, st) ct_sim_recv((b), (n), (dt), (s), (t), (c), (st))
#define MPI_Irecv(b, n, dt, s, t, c, r) ct_sim_irecv((b), (n), (dt), (s), (t), (c), (r))
#define MPI_Sendrecv(sb, sn, sdt, d, stg, rb, rn, rdt, s, rtg, c, st) \
    ct_sim_sendrecv((sb), (sn), (sdt), (d), (stg), (rb), (rn), (rdt), (s), (rtg), (c), (st))
#else
#define CT_SIM_CHARGE(kind, bytes) ((void)0)
#define CT_SIM_WROTE(p, bytes) ((void)0)
#define CT_SIM_FORGET() ((void)0)
#define CT_SIM_TIMING_ONLY() 0
#endif

#endif /* CT_SIMCHARGE_H */
