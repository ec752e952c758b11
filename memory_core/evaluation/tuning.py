"""Tuning recall from labeled queries: evaluation, a cross-validated search, and replay of the log.

Everything here is a what-if: nothing is recorded, no access count moves, no preset becomes
active. Scores come from :class:`memory_core.index.scoring.Candidates` (the same blend and selection as
recall); each query is embedded once and then re-ranked under as many settings as needed.

Metrics on a labeled set (results are what recall returns: top k that clear the threshold):

* **precision@k**: over queries that return something, the mean share of returned memories that
  are labeled relevant. A query with nothing relevant that returns anything scores 0, so noise on
  off-topic turns costs precision; a query that returns nothing shows nothing irrelevant and is
  left out (an empty result is a correct answer, not a failure).
* **recall@k**: over queries with at least one relevant memory, the mean of relevant returned ÷
  min(relevant, k), so 1 is reachable when more memories are relevant than k allows.
* **empty rate**: over queries with no relevant memory, the share that return nothing.
* **F-beta** of precision and recall; β < 1 weighs precision more (``f0.5`` is the default
  objective, since an irrelevant memory is worse than none).

Memories the labels do not name count as not relevant.

The search (:func:`tune`) varies α/β/γ/δ, the lexical weight, the half-life, the threshold and what
frequency counts (``frequency_from``: retrievals or uses; k and everything else stay as in the base
preset): the base itself and the base with each other choice of :data:`CHOICES`, then random
settings drawn from :data:`SPACE` and :data:`CHOICES`, then a local refinement that perturbs the
best setting with a shrinking step and keeps improvements. With k folds over queries (a query text
and namespace never sit in two folds) the whole procedure is run on each fold's training queries
and scored on its held-out ones; the mean held-out score is compared with the base preset's
held-out score. The proposal is the procedure run on every labeled query. It is returned, never
activated."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from ..errors import ValidationError
from ..models import LabeledQuery, check_namespace, parse_time
from ..index.scoring import FREQUENCY_FROM, Candidates, ScoringParams

if TYPE_CHECKING:
    from ..bank import MemoryBank

Progress = Callable[[int], None]

# name: (low, high, log scale). Weights are drawn then scaled to sum 1 (only their ratios matter).
SPACE: dict[str, tuple[float, float, bool]] = {
    "alpha": (0.2, 1.0, False),
    "beta": (0.0, 0.4, False),
    "gamma": (0.0, 0.4, False),
    "delta": (0.0, 0.2, False),
    "lexical_weight": (0.0, 0.8, False),
    "half_life_days": (7.0, 730.0, True),
    "threshold": (0.1, 0.75, False),
}
# name: the values a categorical setting may take (drawn uniformly; a refinement step flips one
# with probability CHOICE_FLIP).
CHOICES: dict[str, tuple[str, ...]] = {"frequency_from": FREQUENCY_FROM}
CHOICE_FLIP = 0.2
TUNED = tuple(SPACE) + tuple(CHOICES)


# -- objectives ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Objective:
    """What the tuner maximizes: ``precision``, ``recall`` or ``fbeta`` (with ``beta``)."""

    kind: str
    beta: float = 0.5

    @property
    def name(self) -> str:
        return f"f{self.beta:g}" if self.kind == "fbeta" else self.kind

    @classmethod
    def parse(cls, spec: "str | Objective") -> "Objective":
        """``"precision"`` (or ``p@k``), ``"recall"`` (``r@k``), ``"f0.5"``, ``"f1"``, ``"fbeta:0.5"``."""
        if isinstance(spec, Objective):
            return spec
        if not isinstance(spec, str):
            raise ValidationError(f"objective must be a string like 'f0.5', got {spec!r}")
        s = spec.strip().lower().replace("@k", "")
        if s in ("precision", "p"):
            return cls("precision")
        if s in ("recall", "r"):
            return cls("recall")
        m = re.fullmatch(r"f(?:beta)?[:=]?(\d+(?:\.\d+)?)", s)
        if m:
            beta = float(m.group(1))
            if not 0 < beta <= 10:
                raise ValidationError(f"the F-beta objective needs 0 < beta <= 10, got {beta}")
            return cls("fbeta", beta)
        raise ValidationError(f"unknown objective {spec!r}: use precision, recall, or f<beta> such as f0.5")


# -- scores ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """Metrics of one parameter setting on a set of labeled queries (see the module docstring).

    A metric with no query to average over (no query returned anything, no query has a relevant
    memory...) is NaN; the objective counts NaN precision or recall as 0.
    """

    precision: float
    recall: float
    empty_rate: float
    f_beta: float
    beta: float
    queries: int
    with_relevant: int
    without_relevant: int
    returned_any: int

    def value(self, objective: Objective) -> float:
        """This setting's score under ``objective`` (NaN counts as 0)."""
        v = {"precision": self.precision, "recall": self.recall}.get(objective.kind)
        if v is None:
            v = fbeta(self.precision, self.recall, objective.beta)
        return 0.0 if math.isnan(v) else float(v)

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def fbeta(precision: float, recall: float, beta: float) -> float:
    """F-beta of a precision and a recall (NaN counts as 0; 0 when both are 0)."""
    p = 0.0 if math.isnan(precision) else precision
    r = 0.0 if math.isnan(recall) else recall
    b2 = beta * beta
    return 0.0 if p + r == 0 else (1 + b2) * p * r / (b2 * p + r)


@dataclass
class PerQuery:
    """Per-query counts of one setting: returned, relevant returned, relevant labeled."""

    returned: np.ndarray
    hits: np.ndarray
    relevant: np.ndarray
    k: int

    def scores(self, mask: np.ndarray | None = None, beta: float = 0.5) -> Scores:
        """Aggregate over the queries in ``mask`` (default: all)."""
        if mask is None:
            mask = np.ones(len(self.returned), dtype=bool)
        ret, hit, rel = self.returned[mask], self.hits[mask], self.relevant[mask]
        some = ret > 0
        precision = float(np.mean(hit[some] / ret[some])) if some.any() else math.nan
        has = rel > 0
        recall = float(np.mean(hit[has] / np.minimum(rel[has], self.k))) if has.any() else math.nan
        empty = float(np.mean(ret[~has] == 0)) if (~has).any() else math.nan
        return Scores(precision=precision, recall=recall, empty_rate=empty,
                      f_beta=fbeta(precision, recall, beta), beta=beta, queries=int(mask.sum()),
                      with_relevant=int(has.sum()), without_relevant=int((~has).sum()), returned_any=int(some.sum()))


# -- a labeled set, ready to score ---------------------------------------------------------------


class LabeledSet:
    """Labeled queries with their candidates captured: :meth:`evaluate` any ScoringParams cheaply.

    Build with :func:`prepare`. Queries are grouped by namespace; each is embedded once.
    """

    def __init__(self, queries: list[LabeledQuery], blocks: list[tuple[Candidates, np.ndarray]]):
        self.queries = queries
        self._blocks = blocks  # (candidates of a namespace, positions of its queries in self.queries)
        self._relevant = [set(q.relevant) for q in queries]
        self.n_relevant = np.array([len(r) for r in self._relevant], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.queries)

    def returned(self, params: ScoringParams) -> list[list[int]]:
        """What recall returns for each query under ``params`` (ids, best first)."""
        out: list[list[int]] = [[] for _ in self.queries]
        for cands, positions in self._blocks:
            for pos, ids in zip(positions, cands.select(params)):
                out[int(pos)] = ids
        return out

    def per_query(self, params: ScoringParams) -> PerQuery:
        returned = self.returned(params)
        return PerQuery(
            returned=np.array([len(r) for r in returned], dtype=np.float64),
            hits=np.array([len(rel.intersection(r)) for rel, r in zip(self._relevant, returned)], dtype=np.float64),
            relevant=self.n_relevant, k=params.k)

    def evaluate(self, params: ScoringParams, beta: float = 0.5) -> Scores:
        """precision@k, recall@k, empty rate and F-beta of ``params`` on every query of the set."""
        return self.per_query(params).scores(beta=beta)


def prepare(bank: "MemoryBank", queries: Iterable[LabeledQuery], *, now: Any = None,
            progress: Progress | None = None, vectors: dict[str, np.ndarray] | None = None) -> LabeledSet:
    """Capture what ranking the labeled ``queries`` needs (one embedding per query). Changes nothing.

    A query's ``as_of`` is the moment it is asked; queries without one are asked at ``now``
    (default: the current time). ``progress`` is called with the number of queries done.
    ``vectors`` (query text → embedding of the bank's model) is reused and filled in, so a caller
    that prepares again after a label changed (the Tune page) embeds only new queries.
    """
    queries = list(queries)
    for q in queries:
        if not isinstance(q, LabeledQuery):
            raise ValidationError("queries must be LabeledQuery values (from bank.labels())")
    default_now = parse_time(now, "now")
    by_ns: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        by_ns.setdefault(q.namespace, []).append(i)
    if vectors is not None:
        missing = list(dict.fromkeys(q.query for q in queries if q.query not in vectors))
        if missing:
            vectors.update(zip(missing, bank.embedder.encode(missing, kind="query")))
    blocks = []
    for ns, positions in by_ns.items():
        texts = [queries[i].query for i in positions]
        cands = bank.candidates(texts, ns, now=[queries[i].as_of or default_now for i in positions],
                                vectors=None if vectors is None else np.array([vectors[t] for t in texts]))
        blocks.append((cands, np.array(positions, dtype=np.int64)))
        if progress:
            progress(len(positions))
    return LabeledSet(queries, blocks)


# -- the search ------------------------------------------------------------------------------------


def _key(p: ScoringParams) -> tuple:
    return tuple(getattr(p, n) for n in TUNED)


def _clean(base: ScoringParams, values: dict[str, float]) -> ScoringParams:
    """A valid, readable setting: weights scaled to sum 1, values rounded, inside SPACE."""
    v = dict(values)
    for name, (lo, hi, _) in SPACE.items():
        v[name] = min(max(v[name], lo), hi)
    total = sum(v[n] for n in ("alpha", "beta", "gamma", "delta"))
    for n in ("alpha", "beta", "gamma", "delta"):
        v[n] = round(v[n] / total, 3)
    v["lexical_weight"] = round(v["lexical_weight"], 3)
    v["half_life_days"] = float(round(v["half_life_days"]))
    v["threshold"] = round(v["threshold"], 3)
    return base.replace(**v)


# Categorical choices come from their own generator (seeded from the same seed), so adding one
# leaves the numeric settings a seed draws as they were.
def _draw(rng: np.random.Generator, crng: np.random.Generator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (lo, hi, log) in SPACE.items():
        out[name] = float(math.exp(rng.uniform(math.log(lo), math.log(hi))) if log else rng.uniform(lo, hi))
    for name, options in CHOICES.items():
        out[name] = options[int(crng.integers(len(options)))]
    return out


def _neighbour(rng: np.random.Generator, p: ScoringParams, radius: float,
               crng: np.random.Generator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, options in CHOICES.items():
        value = getattr(p, name)
        if crng.random() < CHOICE_FLIP:
            value = [o for o in options if o != value][int(crng.integers(len(options) - 1))]
        out[name] = value
    for name, (lo, hi, log) in SPACE.items():
        value = getattr(p, name)
        if log:
            out[name] = float(math.exp(math.log(max(value, lo)) + rng.normal(0, radius * (math.log(hi) - math.log(lo)))))
        else:
            out[name] = float(value + rng.normal(0, radius * (hi - lo)))
    return out


def make_folds(queries: list[LabeledQuery], folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """k folds over queries as (train positions, test positions); every occurrence of one query text
    in one namespace lands in the same fold, so no fold trains on a query it is tested on."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, q in enumerate(queries):
        groups.setdefault((q.namespace, q.query), []).append(i)
    keys = list(groups)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValidationError(f"folds must be a whole number of at least 2, got {folds!r}")
    if len(keys) < folds:
        raise ValidationError(f"{folds}-fold cross-validation needs at least {folds} distinct labeled queries; "
                              f"the set has {len(keys)}. Label more queries, or use fewer folds")
    order = np.random.default_rng(seed).permutation(len(keys))
    fold_of = np.empty(len(queries), dtype=np.int64)
    for rank, g in enumerate(order):
        fold_of[groups[keys[g]]] = rank % folds
    everything = np.arange(len(queries))
    return [(everything[fold_of != f], everything[fold_of == f]) for f in range(folds)]


@dataclass
class TuneResult:
    """What :func:`tune` found. ``proposal`` is a suggestion: nothing was saved or activated.

    ``cv`` / ``cv_base``: the objective on each fold's held-out queries, for the tuning procedure
    (trained on the other folds) and for the base preset. ``held_out`` / ``held_out_base``: the
    metrics over all held-out predictions pooled. ``fit`` / ``fit_base``: the proposal's and the
    base's metrics on every labeled query (in-sample for the proposal).
    """

    objective: Objective
    base: ScoringParams
    proposal: ScoringParams
    cv: list[float]
    cv_base: list[float]
    held_out: Scores
    held_out_base: Scores
    fit: Scores
    fit_base: Scores
    folds: list[tuple[np.ndarray, np.ndarray]]
    fold_params: list[ScoringParams]
    trials: int
    queries: int
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # setting: (base, proposal)

    @property
    def cv_mean(self) -> float:
        return float(np.mean(self.cv))

    @property
    def cv_base_mean(self) -> float:
        return float(np.mean(self.cv_base))

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective.name, "queries": self.queries, "folds": len(self.folds),
            "trials": self.trials, "cv_mean": self.cv_mean, "cv_base_mean": self.cv_base_mean,
            "cv": self.cv, "cv_base": self.cv_base, "held_out": self.held_out.to_dict(),
            "held_out_base": self.held_out_base.to_dict(), "fit": self.fit.to_dict(),
            "fit_base": self.fit_base.to_dict(), "proposal": self.proposal.to_dict(),
            "changes": {k: list(v) for k, v in self.changes.items()},
        }


def plan_size(trials: int, folds: int) -> int:
    """How many settings :func:`tune` evaluates (for a progress bar's length)."""
    return 1 + _variants() + trials + (folds + 1) * _refine_steps(trials)


def _variants() -> int:
    """Settings the base is tried with besides itself: each other value of each choice."""
    return sum(len(options) - 1 for options in CHOICES.values())


def _refine_steps(trials: int) -> int:
    return max(10, trials // 2)


def tune(labeled: LabeledSet, base: ScoringParams, *, objective: str | Objective = "f0.5", folds: int = 5,
         trials: int = 200, seed: int = 0, progress: Progress | None = None) -> TuneResult:
    """Search α/β/γ/δ, lexical weight, half-life, threshold and frequency_from to maximize
    ``objective`` on ``labeled``, with ``folds``-fold cross-validation over queries. Changes
    nothing; returns a proposal.

    ``trials`` random settings are drawn (the base and the base with each other ``frequency_from``
    are always tried too), then each fit refines its best
    with ``max(10, trials // 2)`` local steps. ``progress`` is called with 1 per setting evaluated
    (:func:`plan_size` in all). Deterministic for a given ``seed``.
    """
    obj = Objective.parse(objective)
    if not isinstance(base, ScoringParams):
        raise ValidationError("base must be a ScoringParams")
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 100_000:
        raise ValidationError(f"trials must be a whole number from 1 to 100000, got {trials!r}")
    if not isinstance(labeled, LabeledSet) or len(labeled) == 0:
        raise ValidationError("tuning needs a labeled set with at least one query (see tuning.prepare)")
    split = make_folds(labeled.queries, folds, seed)
    rng = np.random.default_rng(seed)
    crng = np.random.default_rng([seed, 1])
    cache: dict[tuple, PerQuery] = {}
    params_of: dict[tuple, ScoringParams] = {}

    def run(p: ScoringParams) -> PerQuery:
        key = _key(p)
        if key not in cache:
            cache[key] = labeled.per_query(p)
            params_of[key] = p
            if progress:
                progress(1)
        return cache[key]

    def value(p: ScoringParams, mask: np.ndarray) -> float:
        return run(p).scores(mask, obj.beta).value(obj)

    variants = [base.replace(**{name: o}) for name, options in CHOICES.items() for o in options
                if o != getattr(base, name)]
    pool = [base] + variants + [_clean(base, _draw(rng, crng)) for _ in range(trials)]
    for p in pool:
        run(p)
    steps = _refine_steps(trials)

    def fit(mask: np.ndarray, fit_seed: int) -> ScoringParams:
        # Ties keep the earlier setting, and the base comes first: no change without a gain.
        best, best_v = base, value(base, mask)
        for p in pool[1:]:
            v = value(p, mask)
            if v > best_v:
                best, best_v = p, v
        local = np.random.default_rng(fit_seed)
        local_choices = np.random.default_rng([fit_seed, 1])
        radius = 0.15
        for step in range(steps):
            cand = _clean(base, _neighbour(local, best, radius, local_choices))
            v = value(cand, mask)
            if v > best_v:
                best, best_v = cand, v
            elif step % 5 == 4:
                radius = max(radius * 0.6, 0.01)
        return best

    n = len(labeled)
    cv, cv_base, fold_params = [], [], []
    pred_ret, pred_hit = np.zeros(n), np.zeros(n)
    for f, (train, test) in enumerate(split):
        train_mask = np.zeros(n, dtype=bool)
        train_mask[train] = True
        chosen = fit(train_mask, seed * 1000 + f + 1)
        fold_params.append(chosen)
        cv.append(value(chosen, ~train_mask))
        cv_base.append(value(base, ~train_mask))
        pq = run(chosen)
        pred_ret[test], pred_hit[test] = pq.returned[test], pq.hits[test]
    base_pq = run(base)
    held_out = PerQuery(pred_ret, pred_hit, labeled.n_relevant, base.k).scores(beta=obj.beta)
    proposal = fit(np.ones(n, dtype=bool), seed * 1000)
    changes = {name: (getattr(base, name), getattr(proposal, name)) for name in TUNED
               if getattr(base, name) != getattr(proposal, name)}
    return TuneResult(
        objective=obj, base=base, proposal=proposal, cv=cv, cv_base=cv_base, held_out=held_out,
        held_out_base=base_pq.scores(beta=obj.beta), fit=run(proposal).scores(beta=obj.beta),
        fit_base=base_pq.scores(beta=obj.beta), folds=split, fold_params=fold_params, trials=len(cache),
        queries=n, changes=changes)


# -- replay ----------------------------------------------------------------------------------------


@dataclass
class ReplayReport:
    """Logged recalls re-run under candidate parameters (what-if: nothing recorded).

    ``rows`` has one entry per replayed recall: retrieval id, time, namespace, query, the ids it
    returned then (``before``) and would return now (``after``). Metrics compare ``before`` and
    ``after`` on the replayed recalls whose query is labeled (``labeled``).
    """

    replayed: int
    skipped: int  # logged turns the recall gate had declined: nothing was retrieved to compare
    changed: int
    newly_empty: int
    newly_nonempty: int
    labeled: int
    before: Scores | None
    after: Scores | None
    rows: list[dict[str, Any]]

    def deltas(self) -> dict[str, float]:
        """after − before for precision, recall, empty rate and F-beta (labeled recalls only)."""
        if self.before is None or self.after is None:
            return {}
        return {m: getattr(self.after, m) - getattr(self.before, m)
                for m in ("precision", "recall", "empty_rate", "f_beta")}

    def to_dict(self) -> dict[str, Any]:
        return {"replayed": self.replayed, "skipped": self.skipped, "changed": self.changed,
                "newly_empty": self.newly_empty, "newly_nonempty": self.newly_nonempty, "labeled": self.labeled,
                "before": self.before.to_dict() if self.before else None,
                "after": self.after.to_dict() if self.after else None,
                "deltas": {k: (None if math.isnan(v) else v) for k, v in self.deltas().items()}}


def replay(bank: "MemoryBank", params: ScoringParams, *, since: Any = None, until: Any = None,
           namespace: str | None = None, label_set: str | None = None, beta: float = 0.5,
           progress: Progress | None = None) -> ReplayReport:
    """Re-run the logged recalls of ``[since, until]`` under ``params``, each as of its own time.

    Reports how many results change (as a set of ids), become empty, or stop being empty, and
    precision/recall/empty-rate/F-beta before (what the log says was returned) and after, on the
    recalls whose query has labels (of ``label_set``, default any set; a label pinned to a moment
    matches the recall at that moment, an unpinned one matches any). Changes nothing: no log
    entry, no access count. ``progress`` is called with the number of recalls done per namespace.
    """
    if not isinstance(params, ScoringParams):
        raise ValidationError("params must be a ScoringParams")
    if namespace is not None:
        check_namespace(namespace)
    logged = bank.retrievals(namespace=namespace, limit=None, since=since, until=until)
    logged.sort(key=lambda r: r["id"])
    ran = [r for r in logged if r["recalled"] and r["query"]]
    skipped = len(logged) - len(ran)
    labels: dict[tuple, LabeledQuery] = {}
    for q in bank.labels(namespace=namespace, set_name=label_set):
        labels.setdefault((q.namespace, q.query, q.as_of), q)

    def label_of(r: dict[str, Any]) -> LabeledQuery | None:
        return labels.get((r["namespace"], r["query"], r["recalled_at"])) or labels.get(
            (r["namespace"], r["query"], None))

    after: dict[int, list[int]] = {}
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for r in ran:
        by_ns.setdefault(r["namespace"], []).append(r)
    for ns, rows in by_ns.items():
        cands = bank.candidates([r["query"] for r in rows], ns, now=[r["recalled_at"] for r in rows])
        for r, ids in zip(rows, cands.select(params)):
            after[r["id"]] = ids
        if progress:
            progress(len(rows))
    out_rows, changed, newly_empty, newly_nonempty = [], 0, 0, 0
    lab_before: list[tuple[list[int], LabeledQuery]] = []
    lab_after: list[tuple[list[int], LabeledQuery]] = []
    for r in ran:
        old = [h["memory_id"] for h in r["hits"]]
        new = after[r["id"]]
        changed += set(old) != set(new)
        newly_empty += bool(old) and not new
        newly_nonempty += not old and bool(new)
        lq = label_of(r)
        if lq is not None:
            lab_before.append((old, lq))
            lab_after.append((new, lq))
        out_rows.append({"retrieval_id": r["id"], "recalled_at": r["recalled_at"], "namespace": r["namespace"],
                         "query": r["query"], "before": old, "after": new, "labeled": lq is not None})
    # One k for both sides, large enough for what the log returned, so recall@k compares like with like.
    k = max(params.k, max((len(o) for o, _ in lab_before), default=1))

    def scores(pairs: list[tuple[list[int], LabeledQuery]], kk: int) -> Scores | None:
        if not pairs:
            return None
        rel = [set(q.relevant) for _, q in pairs]
        return PerQuery(np.array([len(ids) for ids, _ in pairs], dtype=np.float64),
                        np.array([len(s.intersection(ids)) for (ids, _), s in zip(pairs, rel)], dtype=np.float64),
                        np.array([len(s) for s in rel], dtype=np.float64), kk).scores(beta=beta)

    return ReplayReport(replayed=len(ran), skipped=skipped, changed=changed, newly_empty=newly_empty,
                        newly_nonempty=newly_nonempty, labeled=len(lab_before), before=scores(lab_before, k),
                        after=scores(lab_after, k), rows=out_rows)
