"""colltune: a workbench for MPI collective algorithms."""

__version__ = "0.1.0"
