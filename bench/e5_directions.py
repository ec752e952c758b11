"""The directions multilingual-e5-small's vectors lose before they are compared (``memory_core/embedding/model_data``).

e5 places every text near one common direction, and texts of one language near their own: a
Chinese question about the capital of Australia sits closer to a Chinese memory about tea than
an English question about tea does. Projecting out the common mean, the language means' differences
(memories and questions apart) and the next strongest components of a varied corpus (Language
Information Removal) leaves what the texts say. Measured in BENCHMARKS.md ("A multilingual default").

The corpus is the project's own: the demo set's memories and questions, and the dev half (odd
fact ids) of ``bench/data/multilingual.json``; the test half is never seen.

    python -m bench.e5_directions            # writes memory_core/embedding/model_data/e5_directions.npy
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

LANGS = ("en", "zh", "sv")
OUT = Path(__file__).resolve().parent.parent / "memory_core" / "model_data" / "e5_directions.npy"


def corpus() -> dict[str, list[tuple[str, str]]]:
    """(language, text) of the memories and of the questions the directions are taken from."""
    from memory_core import demo
    from memory_core.language.text import detect_language

    from .multilingual import load

    data = load()
    dev = [f for f in data["facts"] if f["id"] % 2 == 1]
    memories = [(lang, f["text"][lang]) for f in dev for lang in LANGS]
    questions = [(lang, q) for f in dev for lang in LANGS for q in f["questions"][lang]]
    memories += [(detect_language(m["text"]), m["text"]) for m in demo.memories()]
    questions += [(detect_language(q["query"]), q["query"]) for q in demo.queries()]
    return {"memory": memories, "query": questions}


def directions(vectors: dict[str, np.ndarray], langs: dict[str, list[str]], shared: int = 3,
               components: int = 2) -> np.ndarray:
    """Orthonormal rows: the ``shared`` strongest of (the common mean, each language's mean minus
    English's, for memories and for questions), then the corpus' ``components`` strongest
    principal components once those are gone."""
    everything = np.vstack(list(vectors.values()))
    rows = [everything.mean(0)]
    for kind, vecs in vectors.items():
        lang = np.array(langs[kind])
        base = vecs[lang == "en"].mean(0)
        rows += [vecs[lang == other].mean(0) - base for other in LANGS[1:] if (lang == other).any()]
    _, _, vt = np.linalg.svd(np.array(rows), full_matrices=False)
    basis = vt[:shared]
    rest = everything - (everything @ basis.T) @ basis
    rest -= rest.mean(0)
    _, _, pcs = np.linalg.svd(rest, full_matrices=False)
    q, _ = np.linalg.qr(np.vstack([basis, pcs[:components]]).T)
    return q.T.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    from memory_core.embedding.embedder import E5_MODEL, get_embedder

    embedder = get_embedder(E5_MODEL)
    texts = corpus()
    vectors = {kind: embedder.encode([t for _, t in rows], kind=kind, raw=True) for kind, rows in texts.items()}
    langs = {kind: [lang for lang, _ in rows] for kind, rows in texts.items()}
    found = directions(vectors, langs)
    np.save(args.out, found)
    print(json.dumps({"out": args.out, "directions": found.shape[0],
                      "texts": {k: len(v) for k, v in texts.items()}}))


if __name__ == "__main__":
    main()
