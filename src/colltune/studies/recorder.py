"""The one recorder of studies: a study's row, its runs, each launch's records (or its
failure) and each run's end, written through results/store.

A sweep (studies/sweep.py) and adaptive tuning (`tune --measure`,
workflows/tune.py) both record through it, so a study measured either way is
stored the same way: one study row updated to its definition, one run per
invocation in a round, one unit per launch keyed by what defines it."""

from __future__ import annotations

from colltune.results import reader, store


class Recorder:
    """Records one study into an open database connection."""

    def __init__(self, conn, name: str, definition: dict | None = None,
                 description: str = "", source: str = ""):
        self.conn = conn
        self.name = name
        self.study_id = store.upsert_study(conn, name, definition, description, source)
        self.run_id: int | None = None
        self.round: int | None = None

    def mark_stale(self) -> list[int]:
        """Earlier runs of the study that ended without finishing become 'aborted'."""
        return store.mark_stale_runs(self.conn, self.study_id)

    def latest_round(self) -> int:
        return reader.latest_round(self.conn, self.study_id)

    def next_round(self) -> int:
        """A new round: one after the latest, or 1 for a study without runs."""
        if not reader.run_count(self.conn, self.study_id):
            return 1
        return self.latest_round() + 1

    def stored_keys(self, rnd: int, failed: bool = False) -> set[str]:
        """The keys of the round's stored launches (`failed`: of its failed ones)."""
        if failed:
            return reader.failed_unit_keys(self.conn, self.study_id, rnd)
        return reader.stored_unit_keys(self.conn, self.study_id, rnd)

    def start(self, *, kind: str, round: int, **run) -> int:
        """A run of the study in `round` (results/store.store_run's fields); its id."""
        self.round = round
        self.run_id = store.store_run(self.conn, kind=kind, study_id=self.study_id,
                                      round=round, **run)
        return self.run_id

    def unit(self, *, key: str, records: list[dict], **fields) -> int:
        """One launch and its records, in one transaction (store.store_unit; an
        IntegrityError when another process stored the same launch)."""
        return store.store_unit(self.conn, study_id=self.study_id, run_id=self.run_id,
                                round=self.round, key=key, records=records, **fields)

    def failure(self, *, key: str, **fields) -> None:
        """A launch that failed, with its error output."""
        store.store_failure(self.conn, run_id=self.run_id, study_id=self.study_id,
                            round=self.round, key=key, **fields)

    def command(self, command: str) -> None:
        """The run's launcher command, known once its first launch ran."""
        store.set_launcher_command(self.conn, self.run_id, command)

    def finish(self, status: str) -> None:
        store.finish_run(self.conn, self.run_id, status)
