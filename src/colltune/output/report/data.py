"""Every database read of the report (through colltune.results.reader): the runs behind the
measurements, their launch commands and the study definitions."""

from __future__ import annotations

from dataclasses import dataclass, field

from colltune.base.lazy import LazyModule
from colltune.results import reader

pd = LazyModule("pandas")

RUN_COLUMNS = ("run_id", "id", "study", "kind", "round", "status", "host", "cpu_model", "cores",
               "cpus", "os", "mpi_kind", "mpi_version", "mpi_banner", "mpi", "colltune_version",
               "git_revision", "git_rev", "launcher", "seed", "shuffled", "units_done",
               "units_failed", "started_at", "finished_at", "started", "finished",
               "command_line", "launcher_command", "command", "environment", "notes")


@dataclass
class Provenance:
    runs: pd.DataFrame                                        # one row per run
    launches: dict = field(default_factory=dict)              # run id -> launch commands
    definitions: dict = field(default_factory=dict)           # study -> definition (JSON)


def read_runs(db_path, study: str | None, df: pd.DataFrame) -> Provenance:
    """The runs behind the measurements (the `runs` table, with their launch commands
    from `units` and the study definitions from `studies`), or what the measurements
    themselves record about their provenance."""
    t = reader.read_tables(db_path, ("runs", "units", "studies"))
    runs = t.get("runs", pd.DataFrame())
    units, studies = t.get("units"), t.get("studies")
    prov = Provenance(pd.DataFrame())
    if runs.empty:
        cols = [c for c in ("run_id", "host", "cpu_model", "mpi", "command", "timing", "dtype")
                if c in df.columns]
        if cols:
            prov.runs = df[cols].drop_duplicates().reset_index(drop=True)
        return prov
    key = "run_id" if "run_id" in runs.columns else ("id" if "id" in runs.columns else None)
    if key and "run_id" in df.columns:
        runs = runs[runs[key].isin(df["run_id"].dropna().unique())]
    if key and key != "run_id":
        runs = runs.rename(columns={key: "run_id"})
    if studies is not None and "study_id" in runs.columns:
        skey = "id" if "id" in studies.columns else None
        sname = "name" if "name" in studies.columns else None
        if skey and sname:
            names = dict(zip(studies[skey], studies[sname]))
            runs.insert(1, "study", runs["study_id"].map(names).fillna("(bench)"))
            if "definition" in studies.columns:
                for sid in runs["study_id"].dropna().unique():
                    row = studies[studies[skey] == sid]
                    if len(row) and row["definition"].notna().any():
                        prov.definitions[names.get(sid, sid)] = row["definition"].iloc[0]
    keep = [c for c in RUN_COLUMNS if c in runs.columns]
    keep += [c for c in runs.columns if c not in keep and c not in (
        "study_id", "definition", "pid", "mpi_path", "units_planned", "units_skipped")]
    prov.runs = runs[keep].dropna(axis=1, how="all").reset_index(drop=True)
    if units is not None and {"run_id", "command"} <= set(units.columns):
        for rid, g in units[units["run_id"].isin(prov.runs["run_id"])].groupby("run_id"):
            prov.launches[rid] = list(dict.fromkeys(g["command"].dropna().astype(str)))
    return prov


def read_applications(db_path, study: str | None) -> list[dict]:
    """The application comparisons of the study's rules (the "Application" section)."""
    names = [x.strip() for x in study.split(",") if x.strip()] if study else [None]
    seen, out = set(), []
    for name in names:
        for c in reader.study_app_comparisons(db_path, name):
            if c["id"] not in seen:
                seen.add(c["id"])
                out.append(c)
    return out
