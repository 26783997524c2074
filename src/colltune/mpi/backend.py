"""What the backend a build runs on can do: one answer for the layers above mpi/.

A build runs its programs either on this machine's MPI library (measured: real time,
noise, other processes disturb it) or on SimGrid's SMPI (simulated, `--mpi smpi`: a
call's time is computed on a simulated platform, the same in every run). Upper layers
ask `backend_for(build)` what they need instead of testing `build.mpi.simulated`:

  exact               a call takes the same time every time: one repetition suffices
                      and two times compare exactly (evidence.EXACT_TOL)
  default_reps        repetitions of a bench when none are given
  parallel_launches   launches may run side by side (sweep --jobs): their times do not
                      depend on what else the machine runs
  load_in_launch      load-generator ranks run inside the measured launch (a simulated
                      one); measured, the generator runs beside it (colltune load)
  tuning_engine       'exact' (colltune.tuning.exact) or 'adaptive' (tuning.adaptive)
  unsupported_families  verify's case families it cannot run
and which features run there at all (the MPI library's own algorithms, applications,
launchers other than 'local', shared buffers, timing that waits on the clock).

Everything here is read from the build's MPI (libraries.MPI.simulated); nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass

# bench repetitions when none are given: a measured point needs several to show its
# noise; a simulated call gives the same time in every repetition (drivers/bench.py,
# SIM_ITERATIONS, SIM_WARMUP)
MEASURED_REPS = 3
SIMULATED_REPS = 1

# verify's case families that SimGrid's SMPI cannot run: no MPI_Intercomm_create
# (inter); different derived datatypes of one type signature on sender and receiver
# are not matched by SMPI's datatype engine (mixed: a plain MPI_Send/MPI_Recv,
# bcast/linear, fails the same way)
SMPI_UNSUPPORTED_FAMILIES = ("inter", "mixed")


@dataclass(frozen=True)
class Backend:
    """What the backend of a build can do (see the module's docstring)."""

    name: str                         # 'measured' or 'simulated'
    simulated: bool                   # times are simulated (SimGrid SMPI), not measured
    exact: bool                       # a call takes the same time every time
    default_reps: int                 # bench repetitions when none are given
    parallel_launches: bool           # launches may run side by side (sweep --jobs)
    load_in_launch: bool              # load-generator ranks run inside the launch
    tuning_engine: str                # 'exact' or 'adaptive'
    unsupported_families: tuple[str, ...]  # verify's families it cannot run
    library_algorithms: bool          # the MPI library's own algorithms (ompi:, mpich:) run
    applications: bool                # applications (the heat study) run
    local_only: bool                  # launches run here only (launcher 'local')
    shared_buffers: bool              # message buffers may be shared (SMPI_SHARED_MALLOC)
    wall_clock: bool                  # timing that waits on the clock (window, time budget,
                                      # sleep between calls) works
    eager_limit_measurable: bool      # the eager limit is measured (else a setting)
    programs_via_launcher: bool       # even a listing of a program runs through the launcher

    def verify_families(self, families: tuple[str, ...]) -> tuple[str, ...]:
        """Those of verify's `families` this backend can run."""
        return tuple(f for f in families if f not in self.unsupported_families)


MEASURED = Backend(
    name="measured", simulated=False, exact=False, default_reps=MEASURED_REPS,
    parallel_launches=False, load_in_launch=False, tuning_engine="adaptive",
    unsupported_families=(), library_algorithms=True, applications=True, local_only=False,
    shared_buffers=False, wall_clock=True, eager_limit_measurable=True,
    programs_via_launcher=False)

SIMULATED = Backend(
    name="simulated", simulated=True, exact=True, default_reps=SIMULATED_REPS,
    parallel_launches=True, load_in_launch=True, tuning_engine="exact",
    unsupported_families=SMPI_UNSUPPORTED_FAMILIES, library_algorithms=False,
    applications=False, local_only=True, shared_buffers=True, wall_clock=False,
    eager_limit_measurable=False, programs_via_launcher=True)


def backend_for(build) -> Backend:
    """The backend of a build (mpi.build.Build), or of an MPI (libraries.MPI) itself;
    anything without one (None, a test's stand-in) is measured."""
    mpi = getattr(build, "mpi", build)
    return SIMULATED if getattr(mpi, "simulated", False) else MEASURED
