"""The bank's clock and its one convention for stored times.

Every store keeps times as naive UTC timestamps (``TIMESTAMP`` without a time zone, in DuckDB
and PostgreSQL alike) and the library hands out aware UTC datetimes. Callers pass ``now=``
wherever time matters; :func:`utcnow` is only the default.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(timezone.utc)


def to_naive_utc(value: datetime) -> datetime:
    """The naive UTC datetime a store keeps for an aware or naive (taken as UTC) datetime."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def to_aware(value: datetime | None) -> datetime | None:
    """An aware UTC datetime for a stored naive one."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc)
