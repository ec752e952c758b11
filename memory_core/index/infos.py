"""The fields a hit shows (text, kind, dates...) per row of a namespace index, kept compact."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np


class RowInfos:
    """What a Memory needs beyond the index's arrays (text, kind, dates...), per row, without a
    Python tuple per row: rows as loaded stay in an Arrow table (a few bytes per field), rows set
    since are tuples in a dict beside it. Indexed like a list; ``None`` for a row not filled yet.
    """

    COMPACT_MIN = 4096

    def __init__(self) -> None:
        self.n = 0
        self._table: Any = None  # pyarrow.Table of rows 0..base_n-1, or None
        self._columns: list[Any] = []
        self._base_n = 0
        self._set: dict[int, tuple | None] = {}
        self._compact_at = self.COMPACT_MIN  # rows in the dict that trigger a compaction

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, row: int) -> tuple | None:
        if not 0 <= row < self.n:
            raise IndexError(row)
        if row in self._set:
            return self._set[row]
        if row < self._base_n:
            return tuple(col[row].as_py() for col in self._columns)
        return None

    def __setitem__(self, row: int, info: tuple | None) -> None:
        if not 0 <= row < self.n:
            raise IndexError(row)
        self._set[row] = info
        self._maybe_compact()

    def append(self, info: tuple | None) -> None:
        self.n += 1
        self[self.n - 1] = info

    def extend(self, infos: Iterable[tuple | None]) -> None:
        for info in infos:
            self.append(info)

    def extend_unfilled(self, rows: int) -> None:
        """Append rows whose fields are not known yet (None until set)."""
        self.n += rows

    def extend_table(self, table: Any) -> None:
        """Append the rows of an Arrow table whose columns are the info fields, in order."""
        if self._set or self._base_n != self.n or (self._table is not None and table.schema != self._table.schema):
            self.extend(tuple(r.values()) for r in table.to_pylist())
            return
        import pyarrow as pa

        self._table = table if self._table is None else pa.concat_tables([self._table, table])
        self._base_n += table.num_rows
        self.n += table.num_rows
        self._columns = list(self._table.columns)

    def finish_loading(self) -> None:
        """One Arrow chunk per column (row lookups in a column of many chunks walk them)."""
        if self._table is not None:
            self._table = self._table.combine_chunks()
            self._columns = list(self._table.columns)

    def pop(self) -> None:
        """Drop the last row."""
        self.n -= 1
        self._set.pop(self.n, None)

    def whole(self) -> Any:
        """Every row's fields as one Arrow table (what a saved index keeps), or None when a row is
        not filled or no table gives the fields' types."""
        if self.n == 0 or self._table is None or any(v is None for v in self._set.values()):
            return None
        if any(r not in self._set for r in range(self._base_n, self.n)):
            return None
        if self._set or self._base_n != self.n:
            self._compact()
        return self._table if self._base_n == self.n else None

    def _maybe_compact(self) -> None:
        if len(self._set) <= self._compact_at:
            return
        self._compact_at = 2 * len(self._set)
        if self._table is None or any(v is None for v in self._set.values()):
            return  # nothing to take the schema from, or rows the bank has not filled yet
        self._compact()

    def _compact(self) -> None:
        """The rows set since the table was made, into the table (every row filled)."""
        import pyarrow as pa

        rows = sorted(self._set)
        added = pa.Table.from_pylist([dict(zip(self._table.column_names, self._set[r])) for r in rows],
                                     schema=self._table.schema)
        take = np.arange(self.n, dtype=np.int64)
        take[rows] = self._base_n + np.arange(len(rows))
        self._table = pa.concat_tables([self._table, added]).take(take).combine_chunks()
        self._columns = list(self._table.columns)
        self._base_n = self.n
        self._set.clear()
        self._compact_at = max(self.COMPACT_MIN, self.n // 8)
