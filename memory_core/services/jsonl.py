"""JSON lines files that callers name by path or hand over already open.

Imports and exports of memories and labels take either; a path is opened (and closed) here, an
open file is used as it is and left open for its owner.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from ..errors import ValidationError

Source = str | os.PathLike | IO[str]


@contextlib.contextmanager
def reading(source: Source) -> Iterator[tuple[IO[str], bool]]:
    """The file to read and whether it was opened here (a path); a missing path is refused."""
    own = isinstance(source, (str, os.PathLike))
    if own and not Path(source).exists():
        raise ValidationError(f"no such file: {source}")
    fh = open(source, encoding="utf-8") if own else source
    try:
        yield fh, own
    finally:
        if own:
            fh.close()


def write(dest: Source, rows: Iterable[dict[str, Any]]) -> int:
    """Write one JSON object per line to ``dest``; returns how many."""
    own = isinstance(dest, (str, os.PathLike))
    fh = open(dest, "w", encoding="utf-8") if own else dest
    n = 0
    try:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if own:
            fh.close()
    return n
