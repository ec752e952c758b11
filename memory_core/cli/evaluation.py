"""memctl's commands that measure: feedback, metrics, ablation runs, labeled sets, the tuner and
replaying logged recalls under another preset."""

from __future__ import annotations

import json
import os
import sys
from datetime import date
from typing import TYPE_CHECKING, Any

import click

from memory_core import parse_time

if TYPE_CHECKING:
    from memory_core import MemoryBank

from .base import _Context, cli


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
    from memory_core.evaluation import metrics as mx  # pandas: loaded only when asked for

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
    from memory_core import ablate as ablate_cases
    from memory_core import load_cases

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
    from memory_core.evaluation import tuning

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
    from memory_core.evaluation import tuning

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
    import numpy as np

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
    from memory_core.evaluation import tuning

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
