"""Where a run ran, as the results database records it (results/store.py writes it
into `runs` and `tunings`): the host, its CPU and cores, the environment variables
that can change an MPI measurement, and the git revision of the colltune source."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

from colltune.base.paths import repo_root
from colltune.mpi.placement import cores

ENV_PREFIXES = ("OMPI_", "PRTE_", "PMIX_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "I_MPI_", "UCX_",
                "FI_", "PSM2_", "HWLOC_", "COLLTUNE_", "SLURM_JOB_", "SLURM_NTASKS",
                "SLURM_NNODES", "SLURM_CPUS", "SLURM_TASKS_PER_NODE", "SLURM_CLUSTER_NAME",
                "OMP_")
ENV_NAMES = ("LD_LIBRARY_PATH", "PATH", "SLURM_NODELIST", "SLURM_PARTITION")
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|_KEY$|^KEY", re.I)


def relevant_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables that can change an MPI measurement (no secrets)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items())
            if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and not _SECRET.search(k)}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model", "Processor"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision() -> str | None:
    """HEAD of the source tree colltune runs from, '+dirty' with local changes."""
    root = repo_root()
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, timeout=30)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def host_info() -> dict[str, Any]:
    return {"host": socket.gethostname(), "cpu_model": cpu_model(), "cores": cores(),
            "cpus": os.cpu_count(), "os": f"{platform.system()} {platform.release()}"}


def mpi_info(mpi) -> dict[str, Any]:
    """The MPI library of a run (an mpi.MPI, or None): kind, version, banner, path."""
    return {"mpi_kind": getattr(mpi, "kind", None), "mpi_version": getattr(mpi, "version", None),
            "mpi_banner": getattr(mpi, "banner", None),
            "mpi_path": str(mpi.bindir) if mpi is not None else None}
