"""Moving memories in and out of a bank as JSON lines: the export format is the import format.

An export holds every memory but hard-deleted ones (ids, dates, statuses, counts, optionally
vectors) and imports back into an empty bank exactly. Imports check every line first and stream
the file in batches through the :class:`~memory_core.services.writer.Writer`.
"""

from __future__ import annotations

import json
import os
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator

from . import jsonl
from . import rows as rowmod
from ..storage.clock import utcnow
from ..errors import ImportFormatError, ModelMismatchError, ValidationError
from ..models import ImportReport, check_choice, check_namespace
from ..storage import tables
from .writer import BATCH_EMBED, BATCH_VECTORS, Writer, clash

if TYPE_CHECKING:
    from .core import Core

Progress = Callable[[int], None]


class Transfer:
    """Imports and exports one bank's memories as JSON lines."""

    def __init__(self, core: "Core", writer: Writer):
        self.core = core
        self.writer = writer

    def export_jsonl(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                     include_embeddings: bool = False) -> int:
        """Write every memory (all statuses but hard-deleted) as JSON lines; returns the count.

        The output imports back into an empty bank exactly: ids, dates, statuses, counts.
        """
        where, params = ("status != 'deleted'" + (" AND namespace = ?" if namespace else ""),
                         [check_namespace(namespace)] if namespace else [])
        with self.core.session(write=False) as con:
            table = tables.fetch_rows(con, where, params, with_embedding=include_embeddings)
        vectors = tables.embeddings_of(table, self.core.dim) if include_embeddings and table.num_rows else None
        rows = table.drop_columns(["embedding"]).to_pylist() if include_embeddings else table.to_pylist()

        def lines() -> Iterator[dict[str, Any]]:
            for i, row in enumerate(rows):
                out = rowmod.memory_from_row(row).to_dict()
                out.pop("content_hash")
                if vectors is not None:
                    out["embedding"] = [round(float(x), 7) for x in vectors[i]]
                yield out

        jsonl.write(dest, lines())
        return table.num_rows

    def import_jsonl(self, source: str | os.PathLike | IO[str], *, on_error: str = "refuse",
                     progress: Progress | None = None, namespace: str | None = None) -> ImportReport:
        """Import memories from JSON lines (the format :meth:`export_jsonl` writes).

        Every line is checked first. ``on_error="refuse"`` (default) writes nothing when any line
        is malformed and raises ImportFormatError listing them by line number; ``"skip"`` imports
        the good lines and reports the bad ones. Lines whose id already exists with the same text
        count as already present, so an interrupted import can be re-run.

        A file (or any seekable stream) is read twice: the check keeps only each good line's
        number, id and content hash, and the import streams the lines again in batches, so memory
        stays bounded however large the file. A stream that cannot seek is held in memory.
        """
        check_choice(on_error, ("refuse", "skip"), "on_error")
        with jsonl.reading(source) as (fh, own):
            report = ImportReport()
            now = utcnow()
            try:
                seekable = own or bool(getattr(fh, "seekable", lambda: False)())
                start = fh.tell() if seekable else 0
            except (OSError, ValueError):
                seekable, start = False, 0
            held: list[dict[str, Any]] | None = None if seekable else []
            line_numbers: list[int] = []
            line_ids: list[Any] = []
            line_hashes: list[str] = []
            embeds = False

            def parse(line: str) -> dict[str, Any]:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValidationError("each line must be a JSON object")
                if namespace is not None:
                    row["namespace"] = namespace
                for drop in ("content_hash", "embedding_model") if "embedding" not in row else ("content_hash",):
                    row.pop(drop, None)
                return row

            try:
                for lineno, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = parse(line)
                        checked = self.writer.check_row(row, now)
                    except (json.JSONDecodeError, ValidationError, ModelMismatchError, UnicodeDecodeError) as exc:
                        report.errors.append((lineno, str(exc)))
                        continue
                    line_numbers.append(lineno)
                    line_ids.append(row.get("id"))
                    line_hashes.append(checked["content_hash"])
                    embeds = embeds or "embedding" not in checked
                    if held is not None:
                        held.append(checked)
            except UnicodeDecodeError as exc:
                raise ImportFormatError(f"the file is not UTF-8 text ({exc})") from None
            present = self._check_ids(line_numbers, line_ids, line_hashes, report, on_error)
            bad_lines = {n for n, _ in report.errors}
            good = [n for n in line_numbers if n not in bad_lines]
            todo = {n for n in good if n not in present}
            report.skipped_existing += len(good) - len(todo)
            if progress is not None and len(todo) < len(good):
                progress(len(good) - len(todo))

            def rows_again() -> Iterator[tuple[int, dict[str, Any]]]:
                if held is not None:
                    yield from ((n, r) for n, r in zip(line_numbers, held) if n in todo)
                    return
                fh.seek(start)
                for lineno, line in enumerate(fh, start=1):
                    if lineno in todo:
                        yield lineno, self.writer.check_row(parse(line), now)

            size = BATCH_EMBED if embeds else BATCH_VECTORS

            def batches() -> Iterator[list[dict[str, Any]]]:
                batch: list[dict[str, Any]] = []
                for _, r in rows_again():
                    batch.append(r)
                    if len(batch) == size:
                        yield batch
                        batch = []
                if batch:
                    yield batch

            new_ids = iter(self.writer.write_stream(batches(), progress))
        ids_by_line = {}
        for lineno, mid in zip(line_numbers, line_ids):
            if lineno in todo:
                ids_by_line[lineno] = next(new_ids)
            elif lineno in present:
                ids_by_line[lineno] = mid
        report.added += len(todo)
        report.ids.extend(int(ids_by_line[n]) for n in good)
        return report

    def _check_ids(self, line_numbers: list[int], line_ids: list[Any], line_hashes: list[str], report: ImportReport,
                   on_error: str) -> set[int]:
        """The import's ids against each other and the bank: a repeated id, or one the bank holds
        with other content, is an error of its line; one it holds with the same content is already
        present (the numbers of those lines are returned). Raises ImportFormatError, listing the
        errors, when there are any and ``on_error`` is "refuse"."""
        existing = self.writer.existing([i for i in line_ids if isinstance(i, int)])
        first_line: dict[int, int] = {}
        present: set[int] = set()  # line numbers of memories the bank already holds
        for lineno, mid, h in zip(line_numbers, line_ids, line_hashes):
            if mid is None:
                continue
            if mid in first_line:
                report.errors.append((lineno, f"id {mid} appears again (first on line {first_line[mid]})"))
            elif mid in existing:
                if existing[mid] != h:
                    report.errors.append((lineno, clash(mid)))
                else:
                    present.add(lineno)
            first_line.setdefault(mid, lineno)
        report.errors.sort()
        if report.errors and on_error == "refuse":
            shown = "; ".join(f"line {n}: {m}" for n, m in report.errors[:5])
            more = f" (and {len(report.errors) - 5} more)" if len(report.errors) > 5 else ""
            raise ImportFormatError(
                f"{len(report.errors)} malformed line(s), nothing imported: {shown}{more}. Fix them, "
                "or import with on_error='skip' (memctl import --skip-errors) to import the rest",
                report.errors)
        return present
