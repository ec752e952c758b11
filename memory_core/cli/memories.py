"""memctl's commands on memories and the bank: init, add, import, export, recall, show, forget,
restore, migrate, backup, stats, demo, reembed, index-mode, presets, profile."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

# Light names only at import: the bank, scoring and the demo set are imported by the commands that
# use them, so a call over the warm helper (memory_core.cli.warm) never loads them.
from memory_core import CATEGORIES, DURABILITIES, INDEX_MODES, KINDS, humanize_age, parse_time

if TYPE_CHECKING:
    from memory_core import MemoryBank

from .base import _Context, cli


@cli.command()
@click.option("--model", default=None, help="embedding model: multilingual-e5-small (the default: about 100 "
              "languages, a question in one finds a memory in another), all-MiniLM-L6-v2 (English only, the fastest), "
              "use-multilingual-v3, or a sentence-transformers model name or folder.")
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
@click.option("--no-dedupe", is_flag=True,
              help="Store the text as a new memory even if an active memory of the namespace has the same text "
                   "(default: that memory is reinforced and its id printed).")
@click.option("--durability", type=click.Choice(DURABILITIES), default=None,
              help="durable or transient (maintenance expires only transient memories); default: read from the text.")
@click.pass_obj
def add(obj: _Context, text: str, namespace: str, importance: float, kind: str, category: str,
        created_at: str | None, source: str | None, context: str | None, no_dedupe: bool,
        durability: str | None) -> None:
    """Store one memory; prints its id (an existing memory's, reinforced, when the namespace has the same text)."""
    with obj.open() as bank:
        mid = bank.add(text, namespace=namespace, importance=importance, kind=kind, category=category,
                       created_at=created_at, source=source, context=context, dedupe=not no_dedupe,
                       durability=durability)
    click.echo(mid)


@cli.command(name="set-durability")
@click.argument("memory_id", type=int)
@click.argument("durability", type=click.Choice(DURABILITIES))
@click.pass_obj
def set_durability(obj: _Context, memory_id: int, durability: str) -> None:
    """Mark a memory durable (maintenance never expires it for age) or transient (expired once its time passes)."""
    with obj.open() as bank:
        memory = bank.update(memory_id, durability=durability)
    click.echo(f"memory {memory.id} is {memory.durability}")


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
    from memory_core import LOAD_PROGRESS_MIN, RemoteBank

    if isinstance(bank, RemoteBank):  # a served bank loads its own, once
        return

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
        from memory_core import MemoryBank

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
    from memory_core import MemoryBank

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
@click.option("--model", default=None, help="embedding model of a new demo bank: multilingual-e5-small (the "
              "default), all-MiniLM-L6-v2 (English only), use-multilingual-v3, or a sentence-transformers model name "
              "or folder. An existing bank keeps its own: convert it with reembed --model.")
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
            from memory_core import demo as demo_set

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
@click.option("--model", default=None, help="The model to move to: multilingual-e5-small, all-MiniLM-L6-v2, "
              "use-multilingual-v3 or a sentence-transformers model name or folder (default: the bank's own).")
@click.pass_obj
def reembed(obj: _Context, model: str | None) -> None:
    """Embed every memory again, with another model if given."""
    with obj.open() as bank:
        total = bank.count(status=None)
        with click.progressbar(length=total, label="embedding", file=sys.stderr) as bar:
            n = bank.reembed(model=model, progress=bar.update)
        click.echo(f"re-embedded {n} memories with {bank.model}")


@cli.command(name="index-mode")
@click.argument("mode", required=False, type=click.Choice(INDEX_MODES))
@click.pass_obj
def index_mode(obj: _Context, mode: str | None) -> None:
    """Show or set how recall searches large namespaces: exact (default) or ivf (approximate)."""
    with obj.open() as bank:
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
    from memory_core import ScoringParams

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
