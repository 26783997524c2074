"""The one lazy-import helper for heavy third-party modules.

numpy, pandas, statsmodels, sklearn and matplotlib cost half a second to import, and
`colltune --help` should not pay it. A module that needs one of them at run time binds
it here at import time and pays on first use::

    from colltune.base.lazy import LazyModule

    pd = LazyModule("pandas")
    np = LazyModule("numpy")

Attribute access (`pd.DataFrame`, `np.median`) imports the module the first time.
"""

from __future__ import annotations

import importlib

HEAVY = ("pandas", "numpy", "matplotlib", "statsmodels", "sklearn")


class LazyModule:
    """A module imported on first attribute access. `setup`, when given, runs once just
    before the import (matplotlib: choose the Agg backend)."""

    def __init__(self, name: str, setup=None):
        self._name = name
        self._setup = setup
        self._mod = None

    def __getattr__(self, attr: str):
        if self._mod is None:
            if self._setup is not None:
                self._setup()
            self._mod = importlib.import_module(self._name)
        return getattr(self._mod, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._mod is not None else "not loaded yet"
        return f"<LazyModule {self._name!r} ({state})>"
