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
 *   COLLTUNE_SIM_CHARGE="copy=BYTES:US,BYTES:US,...;reduce=BYTES:US,..."
 *
 * read once per simulated rank. Deterministic: the charge depends on the bytes
 * only, never on how long the host took. Outside SMPI builds (SMPI's mpi.h
 * defines SMPI_SHARED_MALLOC) everything here compiles to nothing.
 */
#ifndef CT_SIMCHARGE_H
#define CT_SIMCHARGE_H

#include <mpi.h>

#ifdef SMPI_SHARED_MALLOC
enum { CT_SIM_COPY = 0, CT_SIM_REDUCE = 1 };
/* charge the simulated time of one operation of `kind` on `bytes` bytes */
void ct_sim_charge(int kind, double bytes);
/* MPI_Reduce_local, charged as a reduction of count x dt */
int ct_sim_reduce_local(const void *in, void *inout, int count, MPI_Datatype dt, MPI_Op op);
#define CT_SIM_CHARGE(kind, bytes) ct_sim_charge((kind), (double)(bytes))
/* every local reduction of the algorithms goes through the charged wrapper */
#define MPI_Reduce_local(in, inout, n, dt, op) ct_sim_reduce_local((in), (inout), (n), (dt), (op))
#else
#define CT_SIM_CHARGE(kind, bytes) ((void)0)
#endif

#endif /* CT_SIMCHARGE_H */
