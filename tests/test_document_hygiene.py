"""The product speaks of itself only: no committed text labels a figure by a run number or a
session, says who worked on it, or names a path of a development machine.

Who ran what, and when, belongs in git history; a figure names its machine, date and load, and a
harness that produced one is in ``bench/``. The texts checked are every Markdown page of the
repository, its build and CI files (``Makefile``, ``*.toml``, ``.ci/run``) and the docstrings and
comments of its Python (string literals are left alone: a test may well hand a run's label or a
temporary path to the code it tests). Each rule is a regular expression run on plain text, so the
tests below also show what each one catches and what it lets through.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", "results", "test-artifacts"}
PYTHON_ROOTS = ("memory_core", "bench", "dashboard", "examples", "tests", "app.py")

RULES: dict[str, re.Pattern[str]] = {
    "a session as a label": re.compile(
        r"\b[Ss]essions? \d+|\b(?:this|that|other|earlier|later|previous) sessions?\b(?!['’]s? (?:state|cookie))"
        r"|\bsessions['’] work\b", re.I),
    "a run or round as a label": re.compile(
        r"\b[Rr]un #?\d+\b(?! ?(?:km|mi|miles|minutes|min)\b)|\b(?:this|that|the last|last|previous) round\b"
        r"|\bthe round before\b", re.I),
    "who worked on it": re.compile(
        r"\bthe lead\b(?!-)|\b(?:I|[Ww]e) (?:measured|ran|re-?ran|tried|found|chose|picked|profiled)\b"
        r"|\bsix other\b"),
    "a harness that is not in the repository": re.compile(r"\bscratch (?:runs?|scripts?|harness)\b", re.I),
    "a path of a development machine": re.compile(
        r"(?<![\w.~/-])/(?:work|home|Users|root|mnt|scratch|tmp)(?:/|\b)|[A-Z]:\\\\?Users\b|\.\./shared/"),
}


def findings(text: str) -> list[tuple[str, str]]:
    """(rule, the text it matched) for every match of every rule in ``text``."""
    return [(name, m.group(0)) for name, rule in RULES.items() for m in rule.finditer(text)]


def python_prose(source: str) -> str:
    """The docstrings and comments of a Python source, one per line block; its code left out."""
    parts = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string)
    return "\n".join(parts)


def committed_texts(root: Path = ROOT) -> dict[str, str]:
    """Every Markdown page, the build and CI files, and every Python file's prose, by path relative to
    ``root``."""
    texts = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or SKIP_DIRS & set(rel.parts):
            continue
        if path.suffix in (".md", ".toml") or path.name in ("Makefile", "run"):
            texts[rel.as_posix()] = path.read_text(encoding="utf-8")
        elif path.suffix == ".py" and rel.parts[0] in PYTHON_ROOTS:
            texts[rel.as_posix()] = python_prose(path.read_text(encoding="utf-8"))
    return texts


def test_no_text_labels_a_run_says_who_or_names_a_machines_path() -> None:
    texts = committed_texts()
    assert {"README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "RELIABILITY.md", "bench/serve.py",
            "memory_core/bank.py"} <= texts.keys()
    found = {path: hits for path, text in texts.items() if (hits := findings(text))}
    assert found == {}


@pytest.mark.parametrize("text, rule", [
    ("**Session 30** (2026-12-03, the Intel Xeon of session 29)", "a session as a label"),
    ("measured at load 13-19 with six other sessions on the machine", "a session as a label"),
    ("other sessions' work kept the cores busy", "a session as a label"),
    ("Run 3 gave 0.71, run #4 gave 0.72", "a run or round as a label"),
    ("the round before this one measured 12 ms", "a run or round as a label"),
    ("the lead reruns these on a quiet machine", "who worked on it"),
    ("We measured 12 ms on the shared machine", "who worked on it"),
    ("94-104 in scratch runs on an empty namespace", "a harness that is not in the repository"),
    ("a numpy harness over cached embeddings in `/work/scratch`", "a path of a development machine"),
    ("as /work/shared/notes/mem0-local.md describes", "a path of a development machine"),
    ("python -m bench.locomo ../shared/datasets/locomo/locomo10.json", "a path of a development machine"),
    ("memctl --bank /tmp/demo.duckdb demo", "a path of a development machine"),
    ("the notes in /home/alice/notes.md", "a path of a development machine"),
])
def test_each_rule_catches_what_it_is_for(text: str, rule: str) -> None:
    assert rule in {name for name, _ in findings(text)}


@pytest.mark.parametrize("text", [
    "Every operation runs in `Core.session()`: one transaction.",
    "LoCoMo dates each turn by its session; the last session's turns come first.",
    "True when no password is configured or this browser tab gave it.",
    "Goal: run 10 km under 55 minutes",
    "rounds of ten alternating, both models in turns",
    "the lead-ins and small talk patterns",
    "vectors live in an unlinked memory-mapped scratch file",
    "python -m bench.tune_demo --bank data/demo.duckdb",
    "Measured on an AMD EPYC, 2 cores, on 2026-12-05, load average 1.0-1.9.",
    "BROWSER_PATH=/usr/bin/chromium drives kaleido",
])
def test_the_rules_leave_ordinary_prose_alone(text: str) -> None:
    assert findings(text) == []


def test_prose_is_docstrings_and_comments_not_literals() -> None:
    source = ('"""A module about session 12."""\nX = "Run 1: three cases"  # run by the lead\n'
              'def f():\n    """See /work/notes."""\n    return "/tmp/x"\n')
    prose = python_prose(source)
    assert "session 12" in prose and "the lead" in prose and "/work/notes" in prose
    assert "Run 1" not in prose and "/tmp/x" not in prose
