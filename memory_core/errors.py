"""Typed errors raised by memory_core.

Every error a caller can provoke with bad input or a busy file is a subclass of
:class:`MemoryCoreError`, so ``except memory_core.MemoryCoreError`` catches them all.
Messages say what was wrong and what to do about it.
"""

from __future__ import annotations


class MemoryCoreError(Exception):
    """Base class of every error memory_core raises on purpose."""


class ValidationError(MemoryCoreError, ValueError):
    """An argument has the wrong type or value (empty text, importance out of range, NaN...)."""


class NotFoundError(MemoryCoreError, KeyError):
    """No memory (or preset, or retrieval) has the given id or name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ImportFormatError(ValidationError):
    """One or more lines of an import file are malformed.

    ``problems`` is a list of ``(line_number, message)`` pairs, 1-based.
    """

    def __init__(self, message: str, problems: list[tuple[int, str]] | None = None):
        super().__init__(message)
        self.problems = problems or []


class ModelMismatchError(MemoryCoreError):
    """The bank was built with another embedding model (or dimension) than the one asked for."""


class BankLockedError(MemoryCoreError):
    """Another process held the bank file for longer than the bounded wait."""


class BankReadOnlyError(MemoryCoreError):
    """The bank file (or its folder) cannot be written."""


class CorruptBankError(MemoryCoreError):
    """The database file is damaged or is not a Memory Console bank."""


class StateError(MemoryCoreError):
    """The operation does not apply to the memory in its current state (restore an active memory...)."""


class LLMError(MemoryCoreError):
    """The configured LLM endpoint failed: unreachable, timed out, or answered garbage."""


class LLMNotConfiguredError(LLMError):
    """An LLM feature was asked for but no endpoint is configured."""


class AuthenticationError(MemoryCoreError):
    """A server request came without a token, or with one that is unknown or revoked (HTTP 401)."""


class PermissionDeniedError(MemoryCoreError):
    """The request's token may not do this: another namespace, a change with a read-only token (403)."""


class PayloadTooLargeError(ValidationError):
    """A request body is larger than the server accepts (HTTP 413)."""


class ServerUnavailableError(BankLockedError):
    """A served bank (``MemoryBank.open("http://...")``) could not be reached: the connection was
    refused or dropped, it timed out, or the server stayed busy (HTTP 503) through every retry.

    A subclass of :class:`BankLockedError` because it asks for the same thing: try again later.
    Code that waits out a locked bank file waits out an unreachable server the same way.
    """
