"""memctl's curation commands: undo, conflicts, merges, maintenance, ingest (with ``--llm``, the
configured LLM judges and writes; else the rules)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memory_core import CONFLICT_STATUSES, MAINTENANCE_STEPS, PII_MODES, RESOLUTIONS

from .base import _Context, cli


def _llm(use_llm: bool) -> Any:
    """The configured LLM client when asked for (MEMCTL_LLM_* or the config file), else None."""
    if not use_llm:
        return None
    from memory_core import get_client

    client = get_client()
    if client is None:
        raise click.ClickException("no LLM is configured: set MEMCTL_LLM_BASE_URL and MEMCTL_LLM_MODEL "
                                   "(see docs/llm.md), or leave out --llm to use the rules")
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
@click.option("--threshold", type=float, default=None,
              help="Cosine similarity for near duplicates (default: the calibrated pair classifier on the default "
                   "model, the model's threshold on others).")
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
            sure = "" if cl.confidence is None else f", confidence {cl.confidence:.2f}"
            click.echo(f"[{ns}] {cl.reason}, similarity >= {cl.min_similarity:.2f}{sure}: {list(cl.ids)}"
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


@cli.command(name="undo-run")
@click.argument("run_id", type=int)
@click.pass_obj
def undo_run(obj: _Context, run_id: int) -> None:
    """Undo everything a maintenance run changed, all or nothing (refused if a memory changed since)."""
    with obj.open() as bank:
        undos = bank.undo_maintenance_run(run_id)
    click.echo(f"maintenance run {run_id} undone ({len(undos)} operations)")


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print exactly what would change; change nothing.")
@click.option("--all", "all_steps", is_flag=True, help="Run every step, not only the due ones.")
@click.option("--step", "steps", multiple=True, type=click.Choice(MAINTENANCE_STEPS))
@click.option("-n", "--namespace", default=None)
@click.option("--now", default=None, help="Run as of this date (default: now).")
@click.option("--hard", is_flag=True, help="Erase expired memories for good instead of archiving them.")
@click.option("--rule", type=click.Choice(["durability", "age_importance"]), default="durability", show_default=True,
              help="durability: expire transient memories once their time has passed, list durable ones long "
                   "unused for review; age_importance: seed 004's rule (old, unimportant, unused), durable or not.")
@_llm_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def maintain(obj: _Context, dry_run: bool, all_steps: bool, steps: tuple[str, ...], namespace: str | None,
             now: str | None, hard: bool, rule: str, use_llm: bool, as_json: bool) -> None:
    """Run the maintenance plan: expiry and conflict rules weekly, merges monthly."""
    from memory_core.curation import maintenance  # loads the conflict rules: only when maintaining

    client = _llm(use_llm)
    plan = maintenance.MaintenancePlan(expire_action="hard" if hard else "archive", expire_rule=rule)
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
