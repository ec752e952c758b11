"""Access tokens of the server: who may use which namespaces, kept hashed in the bank.

A token is a random secret shown once when it is created; the bank keeps only its SHA-256 (the
secret has 256 random bits, so a fast hash is as safe as a slow one) with its name, namespaces and
scope. Creating and revoking advance the change sequence, so every process serving the bank drops
its cached tokens on its next look (see :meth:`Core.catch_up`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Iterable

from ..storage.clock import to_naive_utc, utcnow
from ..errors import NotFoundError, StateError, ValidationError
from ..models import check_namespace
from ..storage import tables

if TYPE_CHECKING:
    from .core import Core

PREFIX = "mct_"  # every secret starts with it: easy to spot in a config file or a leaked log
ACTOR_PREFIX = "token:"  # a token's changes and recalls are logged as made by "token:<name>"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Token:
    """A token's record (never its secret): its name, the namespaces it may use and its scope.

    ``admin`` tokens may use every namespace; ``read_only`` ones may read and recall but not
    change anything (a recall they make is still logged, as it is what feedback refers to)."""

    name: str
    namespaces: tuple[str, ...]
    read_only: bool
    admin: bool
    created_at: datetime

    def may_use(self, namespace: str) -> bool:
        return self.admin or namespace in self.namespaces

    @property
    def actor(self) -> str:
        """Who the bank's history and recall log name for what is done with this token."""
        return ACTOR_PREFIX + self.name

    def to_dict(self) -> dict:
        return {"name": self.name, "namespaces": list(self.namespaces), "read_only": self.read_only,
                "admin": self.admin, "created_at": self.created_at.isoformat()}


# Per actor named for a token: the latest change (then recall), and how many since a moment.
_ACTIVITY_SQL = (
    "SELECT actor, max(happened_at), count(*) FILTER (WHERE happened_at >= ?) FROM events "
    "WHERE actor LIKE ? GROUP BY actor",
    "SELECT actor, max(recalled_at), count(*) FILTER (WHERE recalled_at >= ?) FROM retrievals "
    "WHERE actor LIKE ? GROUP BY actor",
)


@dataclass(frozen=True)
class TokenActivity:
    """What was done with a token: its latest change and recall (None: never), and how many of
    each in the last ``days`` (see :meth:`Tokens.activity`)."""

    last_change: datetime | None
    last_recall: datetime | None
    changes: int
    recalls: int
    days: float

    @property
    def last_used(self) -> datetime | None:
        return max((t for t in (self.last_change, self.last_recall) if t is not None), default=None)


def _new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def _match(secret: str, tokens: list[tuple[Token, str]]) -> Token | None:
    """The token whose stored hash is this secret's; every hash is compared, in constant time."""
    digest = hash_secret(secret)
    found = None
    for token, stored in tokens:
        if hmac.compare_digest(digest, stored):
            found = token
    return found


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class Tokens:
    """Creates, lists, revokes and checks one bank's access tokens."""

    def __init__(self, core: "Core"):
        self.core = core

    def create(self, name: str, namespaces: Iterable[str] = (), *, read_only: bool = False,
               admin: bool = False) -> tuple[Token, str]:
        """Make a token and return it with its secret: the only time the secret is known."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValidationError("a token name is 1-64 letters, digits, '.', '_' or '-', starting with a "
                                  "letter or digit")
        if isinstance(namespaces, str):
            namespaces = [namespaces]
        spaces = tuple(dict.fromkeys(check_namespace(ns) for ns in namespaces))
        if not spaces and not admin:
            raise ValidationError("a token needs at least one namespace (--namespace NS), or --admin for all")
        secret = _new_secret()
        token = Token(name, spaces, bool(read_only), bool(admin), to_naive_utc(utcnow()))
        with self.core.session() as con:
            if con.execute("SELECT 1 FROM tokens WHERE name = ?", [name]).fetchone():
                raise StateError(f"a token named {name!r} exists; revoke it first or choose another name")
            con.execute("INSERT INTO tokens VALUES (?, ?, ?, ?, ?, ?)",
                        [name, hash_secret(secret), list(spaces), token.read_only, token.admin, token.created_at])
            tables.next_seq(con)  # other processes serving the bank drop their cached tokens
            tables.log_event(con, self.core.actor, "create_token", None, None,
                             {k: v for k, v in token.to_dict().items() if k != "created_at"}, utcnow())
        self.core.tokens = None
        return token, secret

    def list(self) -> list[Token]:
        """Every token, oldest first (names and scopes only: secrets are not kept)."""
        return [t for t, _ in self._all()]

    def revoke(self, name: str) -> Token:
        """Remove a token: requests presenting it are refused from the next one on."""
        return self._change(name, "revoke_token", "DELETE FROM tokens WHERE name = ?", [name])

    def activity(self, days: float = 30.0, now: datetime | None = None,
                 names: Iterable[str] | None = None) -> dict[str, TokenActivity]:
        """For every token (or the tokens ``names``: those a caller listed a moment before, though
        another process may have revoked one since), what was done with it, from the history and
        the recall log: its latest change and recall, and how many in the last ``days``. An
        operator reads it before revoking a token, to see whether an agent still uses it."""
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days > 0:
            raise ValidationError("days must be a number > 0")
        since = to_naive_utc(now or utcnow()) - timedelta(days=float(days))
        names = [t.name for t in self.list()] if names is None else list(names)
        found: dict[str, list[Any]] = {name: [None, None, 0, 0] for name in names}
        if names:
            with self.core.session(write=False) as con:
                for column, sql in enumerate(_ACTIVITY_SQL):
                    for actor, last, recent in con.execute(sql, [since, ACTOR_PREFIX + "%"]).fetchall():
                        row = found.get(actor[len(ACTOR_PREFIX):])  # None: a revoked token's past
                        if row is not None:
                            row[column], row[column + 2] = last, int(recent)
        return {name: TokenActivity(*row, days=float(days)) for name, row in found.items()}

    def rotate(self, name: str) -> tuple[Token, str]:
        """Give a token a new secret, keeping its name, scope and history: the old secret is
        refused from the next request on (a leaked secret, a routine change). Returns the token
        and its new secret, the only time it is known."""
        secret = _new_secret()
        token = self._change(name, "rotate_token", "UPDATE tokens SET secret_hash = ? WHERE name = ?",
                             [hash_secret(secret), name])
        return token, secret

    def _change(self, name: str, action: str, sql: str, params: list[Any]) -> Token:
        """Run ``sql`` (a constant statement) on the token named ``name`` and record ``action`` in
        the history, in one transaction; the token as it was. It advances the change sequence, so
        every process serving the bank drops its cached tokens."""
        with self.core.session() as con:
            row = con.execute("SELECT name, namespaces, read_only, admin, created_at FROM tokens WHERE name = ?",
                              [name]).fetchone()
            if row is None:
                raise NotFoundError(f"no token named {name!r}; `memctl token list` shows them")
            con.execute(sql, params)
            tables.next_seq(con)
            tables.log_event(con, self.core.actor, action, None, {"name": name}, None, utcnow())
        self.core.tokens = None
        return _token(row)

    def check(self, secret: str) -> Token | None:
        """The token this secret belongs to, or None. The secret's hash is compared with every
        stored hash in constant time, so timing tells nothing of how close a guess came."""
        if not isinstance(secret, str) or not secret:
            return None
        return _match(secret, self._all())

    def check_at_once(self, secret: str) -> tuple[bool, Token | None]:
        """:meth:`check` from the cached tokens alone, when they are known true without reading
        the store or waiting for the bank's lock: (True, the token or None); else (False, None),
        and only :meth:`check` can tell. A server checks most requests' tokens so, on its event
        loop, instead of handing each to a thread."""
        tokens = self._confirmed()
        if tokens is None:
            return False, None
        return True, (_match(secret, tokens) if isinstance(secret, str) and secret else None)

    def _confirmed(self) -> list[tuple[Token, str]] | None:
        """The cached tokens if this process knows, without asking the store, that nobody changed
        them since they were read (see :meth:`_all`); else None. What confirms them is read
        before they are, as :meth:`_all` stores them in the other order: they are never older
        than what confirmed them."""
        core = self.core
        holder_then, signature_then, version_then = core.tokens_holder, core.tokens_signature, core.tokens_version
        cached = core.tokens
        if cached is None:
            return None
        holder = core.store.holder()
        if holder is not None and holder is holder_then:
            return cached
        if core.store.shared:
            version = core.store.known_tokens_version()
            if version is not None and version == version_then:
                return cached  # no token changed since they were read, whatever else did
            known = core.store.known_signature()
            if known is not None and known == signature_then:
                return cached
        return None

    def _all(self) -> list[tuple[Token, str]]:
        """The tokens with their hashes, cached until this or another process changes the bank.

        Every request checks its token: while the store is still held as when the cache was last
        confirmed (:meth:`Store.holder`), nobody else can have changed them, and the check does
        not wait for the bank's lock (which a write holds for a whole group of adds)."""
        confirmed = self._confirmed()
        if confirmed is not None:
            return confirmed
        core = self.core
        cached = core.tokens
        if core.store.shared:
            # A database others write all the time: its signature moves with every write, so read
            # the tokens again when it moved (unless notifications say no token changed), on a
            # connection of their own, without the bank's lock.
            version = core.store.known_tokens_version()
            signature = core.store.signature()
            if cached is not None and signature == core.tokens_signature:
                return cached
            with core.store.connect(write=False) as con:
                tokens = self._read(con)
            core.tokens, core.tokens_signature, core.tokens_version = tokens, signature, version
            return tokens
        with core.lock:
            if core.tokens is None or core.store.signature() != core.signature:
                with core.session(write=False, flush=False) as con:
                    core.tokens = self._read(con)
            core.tokens_holder = core.store.holder()
            return core.tokens

    @staticmethod
    def _read(con: Any) -> list[tuple[Token, str]]:
        rows = con.execute("SELECT name, namespaces, read_only, admin, created_at, secret_hash "
                           "FROM tokens ORDER BY created_at, name").fetchall()
        return [(_token(r), r[5]) for r in rows]


def _token(row: tuple) -> Token:
    return Token(row[0], tuple(row[1]), bool(row[2]), bool(row[3]), row[4])
