"""memctl: the command line of Memory Console. A thin layer over MemoryBank.

Like the dashboard, it uses memory_core's public surface only (the package's exports and the
submodules of memory_core.PUBLIC_MODULES), and its choices are the package's vocabularies.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import click
import numpy as np

from memory_core import (
    CATEGORIES, CONFLICT_STATUSES, INDEX_MODES, KINDS, LOAD_PROGRESS_MIN, MAINTENANCE_STEPS, PII_MODES, RESOLUTIONS,
    ImportFormatError, MemoryBank, MemoryCoreError, ScoringParams, ValidationError, get_client, humanize_age, load_cases,
    parse_time,
)
from memory_core import ablate as ablate_cases  # `ablate` is a command here
from memory_core import demo as demo_set

DEFAULT_BANK = "data/memory.duckdb"
LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


class _Context:
    def __init__(self, bank_path: str):
        self.bank_path = bank_path

    def open(self, actor: str = "cli", **kwargs: Any) -> MemoryBank:
        return MemoryBank.open(self.bank_path, actor=actor, **kwargs)


def _fail(exc: Exception) -> None:
    raise click.ClickException(str(exc))


class _Group(click.Group):
    """Turns memory_core's typed errors into one clear line and exit code 1, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ImportFormatError as exc:
            for line, msg in exc.problems[:20]:
                click.echo(f"line {line}: {msg}", err=True)
            _fail(exc)
        except MemoryCoreError as exc:
            _fail(exc)


@click.group(cls=_Group)
@click.option("--bank", "bank_path", envvar="MEMCTL_BANK", default=DEFAULT_BANK, show_default=True,
              help="The bank file (created if missing). Also MEMCTL_BANK.")
@click.version_option(package_name="memory-console")
@click.pass_context
def cli(ctx: click.Context, bank_path: str) -> None:
    """Memory Console: long-term memory for LLM agents."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ctx.obj = _Context(bank_path)


@cli.command()
@click.option("--model", default=None, help="embedding model: use-multilingual-v3 (16 languages, questions and "
              "memories in different languages), a sentence-transformers model name or folder (default: the "
              "bundled all-MiniLM-L6-v2, English).")
@click.pass_obj
def init(obj: _Context, model: str | None) -> None:
    """Create an empty bank (opening an existing one just checks it)."""
    with obj.open(model=model) as bank:
        click.echo(f"bank {bank.path} ready: model {bank.model}, {bank.count(status=None)} memories")


@cli.command()
@click.argument("text")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-i", "--importance", type=float, default=0.5, show_default=True)
@click.option("--kind", type=click.Choice(KINDS), default="explicit", show_default=True)
@click.option("-c", "--category", type=click.Choice(CATEGORIES), default="other", show_default=True)
@click.option("--created-at", default=None, help="ISO 8601 date or time (default: now).")
@click.option("--source", default=None)
@click.option("--context", default=None,
              help="Text that situates the memory (e.g. the turns around it): recall matches it, never shows it.")
@click.pass_obj
def add(obj: _Context, text: str, namespace: str, importance: float, kind: str, category: str,
        created_at: str | None, source: str | None, context: str | None) -> None:
    """Store one memory; prints its id."""
    with obj.open() as bank:
        mid = bank.add(text, namespace=namespace, importance=importance, kind=kind, category=category,
                       created_at=created_at, source=source, context=context)
    click.echo(mid)


@cli.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--skip-errors", is_flag=True, help="Import the good lines and report the bad ones "
              "(default: refuse the whole file when any line is malformed).")
@click.option("-n", "--namespace", default=None, help="Put every memory in this namespace.")
@click.pass_obj
def import_(obj: _Context, file: str, skip_errors: bool, namespace: str | None) -> None:
    """Import memories from a JSON-lines FILE (as `export` writes), keeping their dates."""
    total = sum(1 for line in open(file, encoding="utf-8", errors="replace") if line.strip())
    with obj.open() as bank, click.progressbar(length=total, label="importing", file=sys.stderr) as bar:
        report = bank.import_jsonl(file, on_error="skip" if skip_errors else "refuse",
                                   progress=bar.update, namespace=namespace)
    for line, msg in report.errors:
        click.echo(f"skipped line {line}: {msg}", err=True)
    click.echo(f"imported {report.added}, already present {report.skipped_existing}, "
               f"skipped {len(report.errors)} malformed line(s)")


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@click.option("-n", "--namespace", default=None)
@click.option("--embeddings", is_flag=True, help="Include the vectors (importing them skips embedding).")
@click.pass_obj
def export(obj: _Context, file: str, namespace: str | None, embeddings: bool) -> None:
    """Write the bank's memories as JSON lines to FILE (default: standard output)."""
    with obj.open() as bank:
        if file == "-":
            n = bank.export_jsonl(sys.stdout, namespace=namespace, include_embeddings=embeddings)
        else:
            n = bank.export_jsonl(file, namespace=namespace, include_embeddings=embeddings)
    click.echo(f"exported {n} memories", err=True)


@cli.command()
@click.argument("query")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--preset", default=None, help="A preset name (default: the bank's active preset).")
@click.option("--now", default=None, help="Recall as of this ISO date/time (default: now).")
@click.option("-k", "--k", "k", type=int, default=None, help="How many at most.")
@click.option("--threshold", type=float, default=None, help="The score a memory must reach.")
@click.option("--gate", is_flag=True, help="Ask the recall gate first; recall nothing if it says no.")
@click.option("--dry-run", is_flag=True, help="Change nothing: no access counts, no log entry.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def recall(obj: _Context, query: str, namespace: str, preset: str | None, now: str | None, k: int | None,
           threshold: float | None, gate: bool, dry_run: bool, as_json: bool) -> None:
    """Recall the memories worth putting in the prompt for QUERY."""
    with obj.open() as bank:
        _load_with_progress(bank, namespace)
        hits = bank.recall(query, namespace=namespace, params=preset, now=now, k=k, threshold=threshold,
                           gate=gate, record=not dry_run)
        logged = bank.last_retrieval_id if not dry_run else None
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
    elif not hits:
        click.echo("no memory clears the threshold (an empty result is a correct answer)")
    else:
        now_dt = parse_time(now) or datetime.now(timezone.utc)
        click.echo(f"{'#':>2} {'score':>5} {'rel':>5} {'rec':>5} {'imp':>4} {'id':>6}  {'age':<13} text")
        for h in hits:
            c = h.components
            click.echo(f"{h.rank:>2} {h.score:5.3f} {c['relevance']:5.2f} {c['recency']:5.2f} {c['importance']:4.2f} "
                       f"{h.memory.id:>6}  {humanize_age(h.memory.created_at, now_dt):<13} {h.memory.text}")
    if logged is not None and hits:  # on stderr: the table and the JSON stay what they were
        click.echo(f"logged as retrieval {logged}; say what the answer used with: "
                   f"memctl feedback {logged} --used ID", err=True)


def _load_with_progress(bank: MemoryBank, namespace: str) -> None:
    """Load a large namespace's index under a progress bar (seconds to a minute at 1M memories)."""
    if bank.namespace_loaded(namespace):
        return
    total = bank.count(namespace=namespace)
    if total < LOAD_PROGRESS_MIN:
        return
    with click.progressbar(length=total, label=f"loading the index of {namespace}", file=sys.stderr) as bar:
        bank.load_namespace(namespace, progress=bar.update)


@cli.command()
@click.argument("memory_id", type=int)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def show(obj: _Context, memory_id: int, as_json: bool) -> None:
    """Show one memory with its history."""
    with obj.open() as bank:
        memory = bank.get(memory_id)
        events = bank.history(memory_id)
    if as_json:
        click.echo(json.dumps({"memory": memory.to_dict(), "history": [
            {"id": e.id, "at": e.at.isoformat(), "actor": e.actor, "action": e.action,
             "before": e.before, "after": e.after, "note": e.note} for e in events]},
            ensure_ascii=False, indent=2))
        return
    for key, value in memory.to_dict().items():
        click.echo(f"{key:>17}: {value}")
    click.echo("history:")
    def shown(d: dict | None) -> dict | None:  # the bookkeeping timestamp is noise in a diff
        return None if d is None else {k: v for k, v in d.items() if k != "updated_at"}

    for e in events:
        change = "" if e.action in ("add", "hard_delete") else f" {shown(e.before)} -> {shown(e.after)}"
        click.echo(f"  #{e.id} {e.at:%Y-%m-%d %H:%M} {e.actor}: {e.action}{change}{' (' + e.note + ')' if e.note else ''}")


@cli.command()
@click.argument("memory_id", type=int)
@click.option("--hard", is_flag=True, help="Erase the text for good (cannot be undone).")
@click.option("--yes", is_flag=True, help="Do not ask before a hard delete.")
@click.option("--reason", default=None)
@click.pass_obj
def forget(obj: _Context, memory_id: int, hard: bool, yes: bool, reason: str | None) -> None:
    """Soft-delete a memory (restorable), or hard-delete it with --hard."""
    with obj.open() as bank:
        memory = bank.get(memory_id)
        if hard and not yes:
            click.confirm(f"Erase memory {memory_id} for good ({memory.text!r})? This cannot be undone",
                          abort=True, err=True)
        bank.forget(memory_id, hard=hard, reason=reason)
    click.echo(f"memory {memory_id} {'erased' if hard else 'archived (restore it with: memctl restore ' + str(memory_id) + ')'}")


@cli.command()
@click.argument("memory_id", type=int, required=False)
@click.option("--from", "backup_file", type=click.Path(dir_okay=False), default=None,
              help="Restore the whole bank from this backup file (made by `memctl backup`).")
@click.option("--force", is_flag=True, help="With --from: replace an existing bank.")
@click.pass_obj
def restore(obj: _Context, memory_id: int | None, backup_file: str | None, force: bool) -> None:
    """Bring a soft-deleted memory back (MEMORY_ID), or the whole bank from a backup (--from FILE)."""
    if (memory_id is None) == (backup_file is None):
        raise click.UsageError("give a MEMORY_ID to restore one memory, or --from BACKUP to restore the bank")
    if backup_file is not None:
        n = MemoryBank.restore_backup(backup_file, obj.bank_path, force=force)
        click.echo(f"bank {obj.bank_path} restored from {backup_file}: {n} memories")
        return
    if force:
        raise click.UsageError("--force goes with --from BACKUP")
    with obj.open() as bank:
        bank.restore(memory_id)
    click.echo(f"memory {memory_id} restored")


@cli.command()
@click.option("--from", "source", required=True, help="The bank to copy: a bank file or a postgresql:// URL.")
@click.option("--to", "dest", required=True, help="Where to copy it: a new bank file, or a postgresql:// URL of "
              "an existing (empty) database.")
@click.option("--force", is_flag=True, help="Replace the memories DEST already holds.")
def migrate(source: str, dest: str, force: bool) -> None:
    """Copy a bank exactly between stores (DuckDB file <-> PostgreSQL), e.g.
    memctl migrate --from data/bank.duckdb --to postgresql://user@host/db"""
    n = MemoryBank.copy_bank(source, dest, force=force)
    click.echo(f"copied {n} memories from {source} to {dest}; open it with: memctl --bank {dest} ...")


@cli.command()
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option("--overwrite", is_flag=True, help="Replace DEST if it exists.")
@click.pass_obj
def backup(obj: _Context, dest: str, overwrite: bool) -> None:
    """Write a consistent copy of the bank to DEST, safe while agents and the dashboard use it."""
    if "://" not in obj.bank_path and not Path(obj.bank_path).exists():
        raise click.ClickException(f"there is no bank at {obj.bank_path}")
    with obj.open() as bank:
        n = bank.backup(dest, overwrite=overwrite)
    click.echo(f"backed up {n} memories to {dest}; restore with: memctl --bank {obj.bank_path} restore --from {dest} --force")


@cli.command()
@click.option("-n", "--namespace", default=None)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def stats(obj: _Context, namespace: str | None, as_json: bool) -> None:
    """Counts by status, kind, category, tier and namespace."""
    with obj.open() as bank:
        s = bank.stats(namespace=namespace)
        namespaces = bank.namespaces() if namespace is None else []
    if as_json:
        click.echo(json.dumps({**s, "by_namespace": dict(namespaces)}, indent=2))
        return
    click.echo(f"bank {s['path']} ({s['file_bytes'] / 1e6:.1f} MB), model {s['model']}, "
               f"active preset {s['active_preset']}")
    click.echo(f"memories: {s['total']} ({s['active']} active)")
    for title in ("by_status", "by_kind", "by_category", "by_tier"):
        click.echo(f"  {title[3:]:<9} " + ", ".join(f"{k} {v}" for k, v in s[title].items()))
    if namespaces:
        click.echo("  namespace " + ", ".join(f"{k} {v}" for k, v in namespaces))
    click.echo(f"retrievals: {s['retrievals']} ({s['empty_retrievals']} empty)")


@cli.command()
@click.option("--memories", "memories_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Default: the demo memories bundled with memory_core.")
@click.option("--queries", "queries_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Default: the demo recall history bundled with memory_core.")
@click.option("--truth", "truth_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Default: the bundled answer key the demo labels come from (only with the bundled files).")
@click.option("--force", is_flag=True, help="Rebuild even if the bank already has memories.")
@click.option("--if-empty", is_flag=True,
              help="Build only if the bank has no memories (a new or empty file); otherwise say so and exit 0.")
@click.option("--model", default=None, help="embedding model of a new demo bank: use-multilingual-v3 (questions and "
              "memories in different languages), a sentence-transformers model name or folder (default: the "
              "bundled all-MiniLM-L6-v2). An existing bank keeps its own: convert it with reembed --model.")
@click.pass_obj
def demo(obj: _Context, memories_file: str | None, queries_file: str | None, truth_file: str | None,
         force: bool, if_empty: bool, model: str | None) -> None:
    """Build the demo bank: import the demo memories, replay the demo recall history, label the turns."""
    if force and if_empty:
        raise click.UsageError("--force builds into a bank with memories, --if-empty never does: pick one")
    with obj.open(model=model) as bank:
        held = bank.count(status=None)
        if held and if_empty:
            click.echo(f"{bank.path} already has {held} memories; the demo was not built")
            return
        if held and not force:
            raise click.ClickException(f"{bank.path} already has memories; use --force or another --bank")
        with _StageBars(_DEMO_STAGES) as bars:
            r = demo_set.build(bank, memories=memories_file or demo_set.MEMORIES,
                               queries=queries_file or demo_set.QUERIES, truth=truth_file, progress=bars)
    click.echo(f"demo bank {obj.bank_path} (model {bank.model}): {r.memories} memories in {r.namespaces} namespaces, "
               f"{r.recalls} recalls replayed, {r.conflicts} open conflicts, "
               + (f"{r.labeled} labeled queries (set '{demo_set.LABEL_SET}')" if r.labeled
                  else "no labels (no answer key)"))


_DEMO_STAGES = {"import": "importing demo memories", "replay": "replaying recall history",
                "conflicts": "looking for contradictions"}


class _StageBars:
    """A progress callback for a run in stages (``progress(stage, done, total)``): one click
    progress bar per stage on stderr, labelled from ``labels``."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.stage: str | None = None
        self.bar: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = click.progressbar(length=total, label=self.labels.get(stage, stage), file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> _StageBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@cli.command()
@click.option("--model", default=None, help="The model to move to: use-multilingual-v3, all-MiniLM-L6-v2 or a "
              "sentence-transformers model name or folder (default: the bank's own).")
@click.pass_obj
def reembed(obj: _Context, model: str | None) -> None:
    """Embed every memory again, with another model if given."""
    with MemoryBank.open(obj.bank_path, actor="cli") as bank:
        total = bank.count(status=None)
        with click.progressbar(length=total, label="embedding", file=sys.stderr) as bar:
            n = bank.reembed(model=model, progress=bar.update)
        click.echo(f"re-embedded {n} memories with {bank.model}")


@cli.command(name="index-mode")
@click.argument("mode", required=False, type=click.Choice(INDEX_MODES))
@click.pass_obj
def index_mode(obj: _Context, mode: str | None) -> None:
    """Show or set how recall searches large namespaces: exact (default) or ivf (approximate)."""
    with MemoryBank.open(obj.bank_path, actor="cli") as bank:
        if mode is not None:
            bank.set_index_mode(mode)
        click.echo(bank.index_mode)


@cli.group()
def preset() -> None:
    """List, save and activate scoring presets."""


@preset.command(name="list")
@click.pass_obj
def preset_list(obj: _Context) -> None:
    """Every preset, the active one marked."""
    with obj.open() as bank:
        active, _ = bank.active_preset()
        for name, p in bank.presets().items():
            mark = "*" if name == active else " "
            click.echo(f"{mark} {name:<20} α={p.alpha:g} β={p.beta:g} γ={p.gamma:g} δ={p.delta:g} "
                       f"lexical={p.lexical_weight:g} half-life={p.half_life_days:g}d k={p.k} threshold={p.threshold:g} "
                       f"frequency-from={p.frequency_from}")


@preset.command(name="save")
@click.argument("name")
@click.option("--from", "base", default="default", show_default=True, help="The preset to start from.")
@click.option("--set", "changes", multiple=True, metavar="FIELD=VALUE", help="e.g. --set alpha=0.8 --set k=3")
@click.pass_obj
def preset_save(obj: _Context, name: str, base: str, changes: tuple[str, ...]) -> None:
    """Save a preset made from another with some fields changed."""
    with obj.open() as bank:
        params = bank.preset(base)
        updates: dict[str, Any] = {}
        for item in changes:
            if "=" not in item:
                raise click.BadParameter(f"{item!r} is not FIELD=VALUE", param_hint="--set")
            key, value = item.split("=", 1)
            current = getattr(ScoringParams(), key, None)
            if current is None:
                raise click.BadParameter(f"unknown field {key!r}", param_hint="--set")
            try:
                updates[key] = type(current)(value)
            except ValueError:
                raise click.BadParameter(f"{key} takes a {type(current).__name__}", param_hint="--set") from None
        bank.save_preset(name, params.replace(**updates))
    click.echo(f"saved preset {name}")


@preset.command(name="activate")
@click.argument("name")
@click.pass_obj
def preset_activate(obj: _Context, name: str) -> None:
    """Make NAME the preset agents get by default."""
    with obj.open() as bank:
        bank.set_active_preset(name)
    click.echo(f"active preset: {name}")


def _llm(use_llm: bool) -> Any:
    """The configured LLM client when asked for (MEMCTL_LLM_* or the config file), else None."""
    if not use_llm:
        return None
    client = get_client()
    if client is None:
        raise click.ClickException("no LLM is configured: set MEMCTL_LLM_BASE_URL and MEMCTL_LLM_MODEL "
                                   "(see README), or leave out --llm to use the rules")
    return client


_llm_option = click.option("--llm", "use_llm", is_flag=True,
                           help="Use the configured LLM (MEMCTL_LLM_*); rules otherwise.")


@cli.command()
@click.argument("operation_id", type=int, required=False)
@click.option("--event", "event_id", type=int, default=None, help="Undo one event instead of an operation.")
@click.pass_obj
def undo(obj: _Context, operation_id: int | None, event_id: int | None) -> None:
    """Undo an operation (a merge, a resolution, an expiry) by its group id, or one --event."""
    if (operation_id is None) == (event_id is None):
        raise click.UsageError("give an OPERATION_ID or --event ID (see `memctl show ID` for ids)")
    with obj.open() as bank:
        if event_id is not None:
            m = bank.undo(event_id)
            click.echo(f"undid event {event_id}: memory {m.id} is {m.status}")
        else:
            bank.undo_group(operation_id)
            click.echo(f"undid operation {operation_id}")


@cli.group()
def conflicts() -> None:
    """Find and resolve contradictions between memories."""


@conflicts.command(name="list")
@click.option("-n", "--namespace", default=None)
@click.option("--status", type=click.Choice([*CONFLICT_STATUSES, "all"]),
              default="open", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def conflicts_list(obj: _Context, namespace: str | None, status: str, as_json: bool) -> None:
    """Recorded conflicts, newest first."""
    with obj.open() as bank:
        found = bank.conflicts(namespace=namespace, status=None if status == "all" else status)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in found], ensure_ascii=False, indent=2))
        return
    if not found:
        click.echo(f"no {status if status != 'all' else ''} conflicts".replace("  ", " "))
    for c in found:
        click.echo(f"#{c.id} [{c.namespace}] {c.status}{' (' + c.resolution + ')' if c.resolution else ''} "
                   f"{c.kind}, confidence {c.confidence:.2f}, suggests {c.suggestion} ({c.path})")
        click.echo(f"    {c.a.created_at:%Y-%m-%d} #{c.a.id} {c.a.kind}: {c.a.text}")
        click.echo(f"    {c.b.created_at:%Y-%m-%d} #{c.b.id} {c.b.kind}: {c.b.text}")
        click.echo(f"    evidence: {c.evidence}")


@conflicts.command(name="detect")
@click.option("-n", "--namespace", default=None, help="Default: every namespace.")
@_llm_option
@click.pass_obj
def conflicts_detect(obj: _Context, namespace: str | None, use_llm: bool) -> None:
    """Look for contradictions now."""
    client = _llm(use_llm)
    with obj.open() as bank:
        names = [namespace] if namespace else [ns for ns, n in bank.namespaces() if n]
        found = []
        with click.progressbar(names, label="detecting", file=sys.stderr) as bar:
            for ns in bar:
                found += bank.detect_conflicts(ns, client=client)
    click.echo(f"{len(found)} new conflict(s); list them with: memctl conflicts list")


@conflicts.command(name="resolve")
@click.argument("conflict_id", type=int)
@click.argument("rule", type=click.Choice(RESOLUTIONS))
@click.option("--memory", "memory_id", type=int, default=None, help="With edit: which of the two.")
@click.option("--text", default=None, help="With edit: the new text.")
@click.pass_obj
def conflicts_resolve(obj: _Context, conflict_id: int, rule: str, memory_id: int | None, text: str | None) -> None:
    """Resolve a conflict by a rule (undo with `memctl undo OPERATION_ID`)."""
    with obj.open() as bank:
        c = bank.resolve_conflict(conflict_id, rule, memory_id=memory_id, text=text)
    click.echo(f"conflict {c.id}: {c.status} ({c.resolution}); undo with: memctl undo {c.group_id}")


@cli.group()
def merge() -> None:
    """Find and merge near-duplicate memories."""


@merge.command(name="plan")
@click.option("-n", "--namespace", default=None, help="Default: every namespace.")
@click.option("--threshold", type=float, default=None, help="Cosine similarity for near duplicates (default 0.88).")
@click.option("--related", type=float, default=None, help="Also suggest memories on one subject above this.")
@_llm_option
@click.option("--apply", "apply_", is_flag=True, help="Merge every planned cluster.")
@click.pass_obj
def merge_plan(obj: _Context, namespace: str | None, threshold: float | None, related: float | None,
               use_llm: bool, apply_: bool) -> None:
    """Preview every merge (and with --apply, make them)."""
    client = _llm(use_llm)
    with obj.open() as bank:
        names = [namespace] if namespace else [ns for ns, n in bank.namespaces() if n]
        planned = []
        for ns in names:
            planned += [(ns, cl, pv) for cl, pv in bank.plan_merges(
                ns, threshold=threshold, related_threshold=related, client=client)]
        if not planned:
            click.echo("nothing to merge")
            return
        for ns, cl, pv in planned:
            click.echo(f"[{ns}] {cl.reason}, similarity >= {cl.min_similarity:.2f}: {list(cl.ids)}"
                       + (f"  ({cl.detail})" if cl.detail else ""))
            click.echo(f"    -> {pv.text}  ({pv.path}: {pv.detail})")
        if apply_:
            with click.progressbar(planned, label="merging", file=sys.stderr) as bar:
                records = [bank.merge(cl.ids, pv.text, path=pv.path, detail=pv.detail) for _, cl, pv in bar]
            click.echo(f"merged {len(records)} cluster(s); undo one with: memctl merge undo MERGE_ID "
                       f"(ids {', '.join(str(r.id) for r in records)})")


@merge.command(name="apply")
@click.argument("ids", type=int, nargs=-1, required=True)
@click.option("--text", default=None, help="The merged text (default: an extractive merge).")
@click.pass_obj
def merge_apply(obj: _Context, ids: tuple[int, ...], text: str | None) -> None:
    """Merge the memories IDS into one."""
    with obj.open() as bank:
        record = bank.merge(ids, text)
        merged = bank.get(record.merged_id)
    click.echo(f"merge {record.id}: memory {merged.id} = {merged.text!r}; undo with: memctl merge undo {record.id}")


@merge.command(name="undo")
@click.argument("merge_id", type=int)
@click.pass_obj
def merge_undo(obj: _Context, merge_id: int) -> None:
    """Undo a merge: the members come back, the merged memory goes."""
    with obj.open() as bank:
        bank.undo_merge(merge_id)
    click.echo(f"merge {merge_id} undone")


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print exactly what would change; change nothing.")
@click.option("--all", "all_steps", is_flag=True, help="Run every step, not only the due ones.")
@click.option("--step", "steps", multiple=True, type=click.Choice(MAINTENANCE_STEPS))
@click.option("-n", "--namespace", default=None)
@click.option("--now", default=None, help="Run as of this date (default: now).")
@click.option("--hard", is_flag=True, help="Erase expired memories for good instead of archiving them.")
@_llm_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def maintain(obj: _Context, dry_run: bool, all_steps: bool, steps: tuple[str, ...], namespace: str | None,
             now: str | None, hard: bool, use_llm: bool, as_json: bool) -> None:
    """Run the maintenance plan: expiry and conflict rules weekly, merges monthly."""
    from memory_core import maintenance  # loads the conflict rules: only when maintaining

    client = _llm(use_llm)
    plan = maintenance.MaintenancePlan(expire_action="hard" if hard else "archive")
    chosen = list(maintenance.STEPS) if all_steps else (list(steps) or None)
    with obj.open() as bank, click.progressbar(length=100, label="maintenance", file=sys.stderr) as bar:
        def progress(done: int, total: int, label: str) -> None:
            bar.update(int(100 * done / total) - bar.pos)

        report = bank.maintain(now=now, plan=plan, steps=chosen, namespace=namespace, dry_run=dry_run,
                               client=client, progress=progress)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return
    verb = "would" if dry_run else "did"
    if not report.steps:
        click.echo("nothing is due (use --all to run every step anyway)")
    for c in report.changes:
        undo = f"  [undo: memctl undo {c.group_id}]" if c.group_id else ""
        click.echo(f"{c.step}: {verb} {c.action} {c.memory_ids} ({c.namespace}): {c.detail}{undo}")
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    st = report.stats
    click.echo(f"{'dry run' if dry_run else 'run'} {report.run_id} ({', '.join(report.steps) or 'no steps'}): {counts}")
    click.echo(f"live {st['active']}, average access count {st['average_access_count']}, "
               f"never accessed {st['never_accessed']}, tiers {st['by_tier']}")


@cli.command()
@click.argument("namespace")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def profile(obj: _Context, namespace: str, as_json: bool) -> None:
    """The core of what the bank knows about NAMESPACE."""
    with obj.open() as bank:
        p = bank.profile(namespace)
    if as_json:
        click.echo(json.dumps({"namespace": namespace, "memories": [m.to_dict() for m in p.memories]},
                              ensure_ascii=False, indent=2))
        return
    click.echo(p.text() or f"nothing important known about {namespace} yet")


@cli.command()
@click.argument("conversation", type=click.Path(exists=True, dir_okay=False))
@click.option("-n", "--namespace", required=True, help="Whose memories these are.")
@click.option("--pii", type=click.Choice(PII_MODES), default="redact", show_default=True,
              help="What to do with emails, phone numbers, card numbers, addresses...")
@_llm_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def ingest(obj: _Context, conversation: str, namespace: str, pii: str, use_llm: bool, as_json: bool) -> None:
    """Distil a CONVERSATION (JSON: a list of {role, content, at} turns) into memories."""
    try:
        data = json.loads(Path(conversation).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{conversation} is not a JSON file ({exc})") from None
    with obj.open() as bank:
        report = bank.ingest(data, namespace, pii=pii, client=_llm(use_llm))
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return
    ex = report.extraction
    click.echo(f"extracted {len(ex.memories)} memories ({ex.path}: {ex.detail})")
    for mid in report.added:
        click.echo(f"  added #{mid}")
    for mid, text in report.reinforced:
        click.echo(f"  reinforced #{mid} (restated: {text!r})")
    for turn, reason in ex.skipped:
        click.echo(f"  skipped turn {turn}: {reason}")
    for turn, kinds in ex.redacted:
        click.echo(f"  redacted in turn {turn}: {kinds}")
    for c in report.conflicts:
        click.echo(f"  conflict #{c.id}: {c.a.text!r} vs {c.b.text!r} (suggests {c.suggestion})")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def _ci(ci: tuple[float, float] | None, signed: bool = False) -> str:
    if ci is None:
        return ""
    fmt = (lambda v: f"{v:+.2f}") if signed else (lambda v: f"{v:.0%}")
    return f"(95% CI {fmt(ci[0])} to {fmt(ci[1])})"


def _print_ablation(r: dict[str, Any]) -> None:
    click.echo(f"  usefulness   {_pct(r['usefulness']):>5}  {_ci(r['usefulness_ci'])}  better with memory "
               f"({r['better']} of {r['n']})")
    click.echo(f"  disturbance  {_pct(r['disturbance']):>5}  {_ci(r['disturbance_ci'])}  worse with memory "
               f"({r['worse']} of {r['n']})")
    click.echo(f"  ties         {_pct(r['tie_rate']):>5}  {_ci(r['tie_rate_ci'])}  ({r['ties']} of {r['n']})")
    nb = "—" if r["net_benefit"] is None else f"{r['net_benefit']:+.2f}"
    click.echo(f"  net benefit  {nb:>5}  {_ci(r['net_benefit_ci'], signed=True)}  (better − worse) / n")


def _read_labels(path: str) -> dict[Any, list[int]]:
    """Relevance labels as JSON lines {"namespace", "query", "relevant": [ids]} (or {"retrieval_id", ...})."""
    labels: dict[Any, list[int]] = {}
    for no, line in enumerate(open(path, encoding="utf-8"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ids = [int(i) for i in row.get("relevant") or []]
            key = int(row["retrieval_id"]) if "retrieval_id" in row else (
                (row["namespace"], row["query"]) if "namespace" in row else row["query"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise click.ClickException(f"{path} line {no}: not a label line ({exc}); write "
                                       '{"namespace": ..., "query": ..., "relevant": [ids]}') from None
        labels[key] = ids
    return labels


@cli.command()
@click.argument("retrieval_id", type=int)
@click.option("--answer", default=None, help="The answer the agent gave (usage is decided from it).")
@click.option("--used", "used_ids", type=int, multiple=True, help="A memory id the answer used (repeatable).")
@click.option("--helpful/--not-helpful", default=None, help="Did the answer help?")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def feedback(obj: _Context, retrieval_id: int, answer: str | None, used_ids: tuple[int, ...],
             helpful: bool | None, as_json: bool) -> None:
    """Report what happened after recall RETRIEVAL_ID: which returned memories the answer used."""
    with obj.open() as bank:
        fb = bank.feedback(retrieval_id, answer=answer, used_ids=list(used_ids) if used_ids else None,
                           helpful=helpful)
    if as_json:
        click.echo(json.dumps(fb.to_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(f"feedback for retrieval {fb.retrieval_id}" + (" (replaced the earlier one)" if fb.replaced else ""))
    for h in fb.hits:
        sim = "" if h.similarity is None else f", similarity {h.similarity:.2f}"
        click.echo(f"  memory {h.memory_id}: {'used' if h.used else 'not used'} ({h.decided_by}{sim})")
    if not fb.hits:
        click.echo("  no returned memories to decide on")


@cli.command()
@click.option("-n", "--namespace", default=None, help="Default: every namespace.")
@click.option("--since", default=None, help="From this ISO date or time (dates are whole UTC days).")
@click.option("--until", default=None, help="Up to this ISO date or time (a date includes the whole day).")
@click.option("--labels", "labels_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help='Relevance labels for precision@k: JSON lines {"namespace", "query", "relevant": [ids]} '
                   "(default: the bank's labeled queries, see memctl labels).")
@click.option("-k", "--k", "k", type=int, default=None, help="Precision at this k (default: every result).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def metrics(obj: _Context, namespace: str | None, since: str | None, until: str | None,
            labels_file: str | None, k: int | None, as_json: bool) -> None:
    """Retrieval frequency, empty results, usage rate, precision@k and ablation figures."""
    from memory_core import metrics as mx  # pandas: loaded only when asked for

    def bound(value: str | None, what: str) -> Any:
        if value is None:
            return None
        try:
            return date.fromisoformat(value)  # a plain date means the whole day
        except ValueError:
            return parse_time(value, what)

    labels = _read_labels(labels_file) if labels_file else None
    with obj.open() as bank:
        rep = mx.report(bank, namespace, bound(since, "since"), bound(until, "until"), labels=labels, k=k)
    if as_json:
        click.echo(json.dumps(rep, indent=2, default=str, ensure_ascii=False))
        return
    s = rep["retrieval"]
    where = f"namespace {namespace}" if namespace else "every namespace"
    click.echo(f"{where}, {rep['since'] or 'start'} to {rep['until'] or 'now'}")
    click.echo(f"  turns logged        {s['retrievals']}")
    click.echo(f"  retrieval frequency {_pct(s['retrieval_frequency'])}  (turns that retrieved something)")
    click.echo(f"  empty results       {_pct(s['empty_rate'])}  (of {s['searched']} searches)")
    fb = rep["feedback"]
    if fb is None:
        click.echo("  usage rate          —  (no feedback yet: agents call bank.feedback after answering)")
    else:
        click.echo(f"  usage rate          {_pct(fb['usage_rate'])}  {_ci(fb['usage_rate_ci'])}  "
                   f"({fb['used']} of {fb['judged']} returned memories used, {fb['with_feedback']} recalls; "
                   + ", ".join(f"{p} {n}" for p, n in sorted(fb["by_path"].items())) + ")")
        if fb["rated"]:
            click.echo(f"  helpful             {_pct(fb['helpful_rate'])}  ({fb['helpful']} of {fb['rated']} rated)")
    pr = rep["precision"]
    if pr is not None:
        at = "" if pr["k"] is None else f"@{pr['k']}"
        click.echo(f"  precision{at:<4}       {_pct(pr['precision'])}  ({pr['evaluated']} labelled recalls with "
                   f"results; {pr['empty']} empty, {pr['empty_correct']} of them rightly)")
    ab = rep["ablation"]
    if ab is None:
        click.echo("  ablation            —  (no runs yet: memctl ablate CASES.jsonl)")
    else:
        click.echo(f"  ablation: {ab['runs']} run(s), {ab['n']} judged cases ({ab['errors']} errors)")
        _print_ablation(ab)


@cli.command()
@click.argument("cases_file", type=click.Path(exists=True, dir_okay=False))
@click.option("-n", "--namespace", default=None, help="For cases without a namespace (default: 'default').")
@click.option("--judge-model", default=None, help="The judge's model (default: MEMCTL_JUDGE_MODEL, else the "
              "answering model). The judge's endpoint: MEMCTL_JUDGE_BASE_URL, else the answering one.")
@click.option("--preset", default=None, help="Recall with this preset (default: the bank's active one).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the order the judge sees answers in.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def ablate(obj: _Context, cases_file: str, namespace: str | None, judge_model: str | None, preset: str | None,
           seed: int, as_json: bool) -> None:
    """Answer each question of CASES_FILE with and without memory, let a judge compare, store the run.

    CASES_FILE holds JSON lines {"question": ..., "namespace": ..., "expected": ...} (namespace and
    expected optional). The answering model is the configured LLM (MEMCTL_LLM_*).
    """
    cases = load_cases(cases_file, namespace=namespace)
    with obj.open() as bank, click.progressbar(length=len(cases), label="ablating", file=sys.stderr) as bar:
        result = ablate_cases(bank, cases, judge_model=judge_model, seed=seed, params=preset,
                              progress=lambda done, total: bar.update(done - bar.pos),
                              source=os.path.basename(cases_file), namespace=namespace)
        result.run_id = bank.record_ablation(result.run, result.cases)
    if as_json:
        click.echo(json.dumps({"run_id": result.run_id, "errors": result.errors, **result.rates,
                               "cases": result.cases}, indent=2, default=str, ensure_ascii=False))
        return
    click.echo(f"ablation run {result.run_id}: {len(result.cases)} cases, {result.rates['n']} judged, "
               f"{result.errors} error(s)")
    _print_ablation(result.rates)
    for i, c in enumerate(result.cases, start=1):
        if c["verdict"] == "error":
            click.echo(f"  case {i} failed: {c['error']}", err=True)
# -- labeled queries, tuning, replay -------------------------------------------------------------------


@cli.group()
def labels() -> None:
    """Labeled query sets: which memories a query should (not) bring back."""


@labels.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--set", "set_name", default=None, help="Put every query in this set (default: each line's "
              "\"set\", else 'default').")
@click.pass_obj
def labels_import(obj: _Context, file: str, set_name: str | None) -> None:
    """Import labeled queries from a JSON-lines FILE: {"namespace","query","relevant":[ids],"irrelevant":[ids]}."""
    with obj.open() as bank:
        n = bank.import_labels(file, set_name=set_name)
    click.echo(f"imported {n} labeled queries")


@labels.command(name="export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@click.option("-n", "--namespace", default=None)
@click.option("--set", "set_name", default=None)
@click.pass_obj
def labels_export(obj: _Context, file: str, namespace: str | None, set_name: str | None) -> None:
    """Write labeled queries as JSON lines to FILE (default: standard output)."""
    with obj.open() as bank:
        n = bank.export_labels(sys.stdout if file == "-" else file, namespace=namespace, set_name=set_name)
    click.echo(f"exported {n} labeled queries", err=True)


@labels.command(name="list")
@click.pass_obj
def labels_list(obj: _Context) -> None:
    """The label sets and how many queries each holds."""
    with obj.open() as bank:
        sets = bank.label_sets()
    if not sets:
        click.echo("no labels yet: mark results on the dashboard's Tune page, or `memctl labels import FILE`")
    for name, n in sets.items():
        click.echo(f"{name:<20} {n} queries")


def _scores_line(s: Any) -> str:
    def f(v: float) -> str:
        return "  n/a" if v != v else f"{v:5.3f}"
    return (f"precision@k {f(s.precision)}  recall@k {f(s.recall)}  empty-when-nothing-relevant {f(s.empty_rate)}"
            f"  F{s.beta:g} {f(s.f_beta)}")


def _labeled_set(bank: MemoryBank, namespace: str | None, set_name: str | None) -> Any:
    from memory_core import tuning

    queries = bank.labels(namespace=namespace, set_name=set_name)
    if not queries:
        raise click.ClickException("no labeled queries" + (f" in set {set_name!r}" if set_name else "")
                                   + (f" for {namespace!r}" if namespace else "")
                                   + "; import some with `memctl labels import` or build the demo")
    with click.progressbar(length=len(queries), label="embedding labeled queries", file=sys.stderr) as bar:
        return tuning.prepare(bank, queries, progress=bar.update)


@cli.command()
@click.option("-n", "--namespace", default=None, help="Tune on this namespace's labels (default: all).")
@click.option("--set", "set_name", default=None, help="The label set (default: every set).")
@click.option("--objective", default="f0.5", show_default=True, help="precision, recall, or f<beta> (β<1 favours precision).")
@click.option("--folds", type=int, default=5, show_default=True)
@click.option("--trials", type=int, default=200, show_default=True, help="Random settings tried (plus local refinement).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--preset", "base_name", default=None, help="Start from this preset (default: the active one).")
@click.option("--save", "save_as", default=None, help="Save the proposal as this preset (not made active).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def tune(obj: _Context, namespace: str | None, set_name: str | None, objective: str, folds: int, trials: int,
         seed: int, base_name: str | None, save_as: str | None, as_json: bool) -> None:
    """Search weights, half-life, threshold and frequency_from on labeled queries (cross-validated); a preset."""
    from memory_core import tuning

    tuning.Objective.parse(objective)
    with obj.open() as bank:
        active_name, active = bank.active_preset()
        base_name = base_name or active_name
        base = bank.preset(base_name)
        labeled = _labeled_set(bank, namespace, set_name)
        with click.progressbar(length=tuning.plan_size(trials, folds), label="trying settings", file=sys.stderr) as bar:
            result = tuning.tune(labeled, base, objective=objective, folds=folds, trials=trials, seed=seed,
                                 progress=bar.update)
        if save_as:
            bank.save_preset(save_as, result.proposal, description=(
                f"tuned for {result.objective.name} on {result.queries} labeled queries; held-out "
                f"{result.cv_mean:.3f} vs {base_name} {result.cv_base_mean:.3f}"))
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "base_preset": base_name, "saved_as": save_as}, indent=1))
        return
    click.echo(f"{result.queries} labeled queries, {len(result.folds)}-fold cross-validation, "
               f"{result.trials} settings tried, objective {result.objective.name}")
    click.echo(f"held-out {result.objective.name}: proposal {result.cv_mean:.3f} ± {np.std(result.cv):.3f}  vs  "
               f"{base_name} {result.cv_base_mean:.3f} ± {np.std(result.cv_base):.3f}")
    click.echo(f"  proposal (held out) {_scores_line(result.held_out)}")
    click.echo(f"  {base_name:<19} {_scores_line(result.held_out_base)}")
    if result.changes:
        def g(v: Any) -> str:  # numbers compactly; a choice such as frequency_from as its name
            return v if isinstance(v, str) else f"{v:g}"

        click.echo("proposed changes: " + ", ".join(f"{k} {g(a)} → {g(b)}" for k, (a, b) in result.changes.items()))
    else:
        click.echo(f"no setting beat {base_name}: keep it")
    if save_as:
        click.echo(f"saved as preset {save_as!r}; not active (activate with: memctl preset activate {save_as})")
    elif result.changes:
        click.echo("save it with --save NAME; nothing was changed")


@cli.command()
@click.option("--since", default=None, help="First recall time (ISO date/time).")
@click.option("--until", default=None, help="Last recall time (ISO date/time).")
@click.option("--preset", "preset_name", required=True, help="The candidate preset to replay under.")
@click.option("-n", "--namespace", default=None)
@click.option("--set", "set_name", default=None, help="Labels to score with (default: every set).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def replay(obj: _Context, since: str | None, until: str | None, preset_name: str, namespace: str | None,
           set_name: str | None, as_json: bool) -> None:
    """Re-run logged recalls under a preset, as what-ifs: what changes, what becomes empty, metric deltas."""
    from memory_core import tuning

    with obj.open() as bank:
        params = bank.preset(preset_name)
        total = len(bank.retrievals(namespace=namespace, limit=None, since=since, until=until))
        with click.progressbar(length=total, label="replaying", file=sys.stderr) as bar:
            report = tuning.replay(bank, params, since=since, until=until, namespace=namespace,
                                   label_set=set_name, progress=bar.update)
    if as_json:
        click.echo(json.dumps({"preset": preset_name, **report.to_dict()}, indent=1))
        return
    click.echo(f"{report.replayed} logged recalls replayed under {preset_name!r} (nothing recorded); "
               f"{report.skipped} skipped (the gate had declined them)")
    click.echo(f"results changed: {report.changed}  newly empty: {report.newly_empty}  "
               f"newly non-empty: {report.newly_nonempty}")
    if report.labeled:
        click.echo(f"on {report.labeled} labeled recalls:")
        click.echo(f"  logged    {_scores_line(report.before)}")
        click.echo(f"  replayed  {_scores_line(report.after)}")
        click.echo("  delta     " + "  ".join(f"{k} {v:+.3f}" for k, v in report.deltas().items() if v == v))
    else:
        click.echo("no replayed recall has labels: no metric deltas")


# -- the server ----------------------------------------------------------------------------------

@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Beyond loopback only once a token exists.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--no-auth", is_flag=True, help="Serve without tokens: for development on 127.0.0.1 only.")
@click.option("--concurrency", type=click.IntRange(1, 1024), default=64, show_default=True,
              help="Requests that work on the bank at once (the rest wait).")
@click.option("--max-body", type=click.IntRange(1024), default=None,
              help="Largest request body in bytes (default 8 MiB).")
@click.option("--no-mcp", is_flag=True, help="Leave out the MCP endpoint at /mcp (REST API only).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True)
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Server processes sharing the port, one core each (a PostgreSQL bank; a bank file has one "
                   "writer at a time).")
@click.option("--socket-fd", type=int, default=None, hidden=True)  # a worker's inherited listening socket
@click.option("--worker", type=int, default=None, hidden=True)  # and its number
@click.pass_obj
def serve(obj: _Context, host: str, port: int, no_auth: bool, concurrency: int, max_body: int | None,
          no_mcp: bool, log_level: str, workers: int, socket_fd: int | None, worker: int | None) -> None:
    """Serve the bank over HTTP: the REST API (/docs) for agents in any language, and MCP at /mcp."""
    from memory_core import server

    bank = obj.open(actor="server")
    try:
        server.check_exposure(host, auth=not no_auth, tokens=0 if no_auth else len(bank.tokens.list()))
        if workers > 1 and isinstance(bank.path, Path):
            raise ValidationError(f"--workers {workers}: the bank file {bank.path} has one writer at a time, so one "
                                  "process serves it. Serve it with one worker, or move it to PostgreSQL (memctl "
                                  "migrate --from FILE --to postgresql://...) and serve that with several.")
    except MemoryCoreError:
        bank.close()
        raise
    if worker is not None:  # one of several: the supervisor said where it serves
        server.serve(bank, auth=not no_auth, concurrency=concurrency, max_body=max_body or server.MAX_BODY,
                     mcp=not no_mcp, log_level=log_level, sock=socket.socket(fileno=socket_fd), worker=worker)
        return
    if no_auth:
        click.secho("WARNING: --no-auth: every request may read and change every namespace of "
                    f"{bank.path}. Use it only for development on this machine.", fg="red", bold=True, err=True)
    where = f"http://{host}:{port}"
    several = f" with {workers} workers" if workers > 1 else ""
    click.echo(f"serving {bank.path} on {where}{several} (API docs: /docs{'' if no_mcp else f'; MCP: {where}/mcp'}); "
               "Ctrl-C or SIGTERM stops", err=True)
    if workers > 1:
        bank.close()  # each worker opens its own
        args = ["--concurrency", str(concurrency), "--log-level", log_level]
        args += ["--no-auth"] * no_auth + ["--no-mcp"] * no_mcp + (["--max-body", str(max_body)] if max_body else [])
        sys.exit(server.serve_workers(obj.bank_path, workers, host=host, port=port, serve_args=args,
                                      log_level=log_level))
    server.serve(bank, host=host, port=port, auth=not no_auth, concurrency=concurrency,
                 max_body=max_body or server.MAX_BODY, mcp=not no_mcp, log_level=log_level)


@cli.command()
@click.option("-n", "--namespace", required=True,
              help="The namespace the MCP client reads and writes (its tools cannot reach another).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="warning", show_default=True)
@click.pass_obj
def mcp(obj: _Context, namespace: str, log_level: str) -> None:
    """Serve MCP over stdio for one namespace: for desktop clients (Claude Desktop, Cursor, IDEs).

    The client starts this command and speaks MCP on its stdin and stdout; logs go to stderr.
    """
    from memory_core import server

    server.log_to_stderr(log_level)
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol: nothing else may reach it
        bank = obj.open(actor="mcp")
        try:
            bank.count(namespace)  # a clear error for a malformed namespace, before the client connects
        except MemoryCoreError:
            bank.close()
            raise
    server.serve_stdio(bank, namespace)


@cli.group()
def token() -> None:
    """Access tokens of the server, each limited to namespaces (kept hashed in the bank)."""


@token.command(name="create")
@click.option("-n", "--namespace", "namespaces", multiple=True, help="A namespace it may use (repeatable).")
@click.option("--name", required=True, help="A name to list and revoke it by.")
@click.option("--read-only", is_flag=True, help="It may read and recall, not change.")
@click.option("--admin", is_flag=True, help="It may use every namespace and the admin routes.")
@click.pass_obj
def token_create(obj: _Context, namespaces: tuple[str, ...], name: str, read_only: bool, admin: bool) -> None:
    """Create a token and print its secret (shown this once only)."""
    with obj.open() as bank:
        made, secret = bank.tokens.create(name, namespaces, read_only=read_only, admin=admin)
    scope = "every namespace" if made.admin else ", ".join(made.namespaces)
    click.echo(f"token {made.name!r} for {scope}{' (read-only)' if made.read_only else ''}; "
               "keep the secret now, it is not shown again:", err=True)
    click.echo(secret)


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


@token.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def token_list(obj: _Context, as_json: bool) -> None:
    """The tokens: names, namespaces and scope (never their secrets)."""
    with obj.open() as bank:
        tokens = bank.tokens.list()
        activity = bank.tokens.activity(names=[t.name for t in tokens])
        made = [(t, activity[t.name]) for t in tokens]
    if as_json:
        click.echo(json.dumps([{**t.to_dict(), "last_used": used.last_used and used.last_used.isoformat(),
                                "changes_30d": used.changes, "recalls_30d": used.recalls}
                               for t, used in made], indent=1))
        return
    if not made:
        click.echo("no tokens; create one: memctl token create --namespace NS --name NAME")
    for t, used in made:
        scope = "admin (every namespace)" if t.admin else ", ".join(t.namespaces)
        last = "never used" if used.last_used is None else (
            f"last used {used.last_used:%Y-%m-%d %H:%M}, {_count(used.changes, 'change')} and "
            f"{_count(used.recalls, 'recall')} in 30 days")
        click.echo(f"{t.name}\t{scope}\t{'read-only' if t.read_only else 'read-write'}\t"
                   f"created {t.created_at:%Y-%m-%d %H:%M}\t{last}")


@token.command(name="rotate")
@click.argument("name")
@click.pass_obj
def token_rotate(obj: _Context, name: str) -> None:
    """Give token NAME a new secret (same namespaces and scope); the old one is refused from the
    next request on. Prints the new secret once."""
    with obj.open() as bank:
        made, secret = bank.tokens.rotate(name)
    click.echo(f"token {made.name!r} has a new secret; the old one no longer works. Keep it now, "
               "it is not shown again:", err=True)
    click.echo(secret)


@token.command(name="revoke")
@click.argument("name")
@click.pass_obj
def token_revoke(obj: _Context, name: str) -> None:
    """Revoke a token: a server refuses it from its next request on."""
    with obj.open() as bank:
        bank.tokens.revoke(name)
    click.echo(f"revoked {name}")


def main() -> None:
    cli(prog_name="memctl")


if __name__ == "__main__":
    main()
