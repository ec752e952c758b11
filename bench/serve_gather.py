"""Adds over HTTP against the model's own batch rate, with the embedding gatherer on and off (issue 33).

    python -m bench.serve_gather [--quick] [--json FILE]      (also part of `python -m bench --only serve`)

For each model (multilingual-e5-small, the default, and MiniLM), on a DuckDB bank file and a
PostgreSQL database: two real `memctl serve` processes on fresh banks,
one as users run it (concurrent small encodes share model calls, ``embed_gather``) and one with
``MEMCTL_EMBED_GATHER=0``, measured in blocks that take turns (which goes first alternates), so
that both see the same machine. Each block: the bare batch-encode rate of the same model in this
process (statements in batches of 32, nothing else running here), then for each server 8 clients
(light keep-alive clients: httpx's would spend more of the machine's CPU than the server's add)
adding one memory per request at once (aggregate adds/s) and one client adding one at a time
(latency per add). The ratio is the 8 clients' adds/s over the bare batch rate of the same block.
The 1-minute load average is recorded at each block: on a shared machine the absolute figures
move with it, the side-by-side ratios much less.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench._util import ROOT, LightClient, bare_batch, memory_statements, standalone

CLIENTS = 8
BATCH = 32
VARIANTS = {"gather on": {}, "gather off": {"MEMCTL_EMBED_GATHER": "0"}}
MODELS = ("multilingual-e5-small", "sentence-transformers/all-MiniLM-L6-v2")
STORES = ("duckdb", "postgresql")


def _sizes(quick: bool, smallest: bool) -> dict[str, int]:
    if smallest:
        return {"blocks": 2, "per_client": 3, "sequential": 5, "encode_texts": 64}
    if quick:
        return {"blocks": 2, "per_client": 20, "sequential": 40, "encode_texts": 256}
    return {"blocks": 4, "per_client": 40, "sequential": 80, "encode_texts": 512}


def _pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def eight_clients(url: str, headers: dict, per_client: int, tag: str) -> dict[str, Any]:
    """:data:`CLIENTS` clients, ``per_client`` adds each, at once: adds/s, ids acknowledged, errors."""
    acked: list[tuple[int, str]] = []
    errors: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS + 1)

    def client(i: int) -> None:
        texts = [f"{tag} client {i}: {t}" for t in memory_statements(per_client, seed=hash((tag, i)) % 2**31)]
        with LightClient(url, headers) as c:
            c.request("GET", "/v1/health")  # the connection is open before the clock starts
            barrier.wait()
            for text in texts:
                try:
                    status, body = c.request("POST", "/v1/memories", {"text": text})
                except OSError as exc:
                    errors.append(repr(exc))
                    continue
                if status == 201:
                    with lock:
                        acked.append((body["id"], text))
                else:
                    errors.append(f"{status} {str(body)[:200]}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for th in threads:
        th.start()
    barrier.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    return {"adds": len(acked), "seconds": elapsed, "errors": errors, "acked": acked}


def one_client(url: str, headers: dict, n: int, tag: str) -> list[float]:
    """One client, ``n`` adds one after another: each add's latency in seconds."""
    out = []
    with LightClient(url, headers) as c:
        c.request("GET", "/v1/health")
        for text in memory_statements(n, seed=hash(tag) % 2**31):
            t = time.perf_counter()
            status, body = c.request("POST", "/v1/memories", {"text": f"{tag}: {text}"})
            out.append(time.perf_counter() - t)
            if status != 201:
                raise RuntimeError(f"one client's add failed: {status} {body}")
    return out


def _store(kind: str, model: str, sizes: dict[str, int], folder: Path) -> dict[str, Any]:
    import stores
    from memctl_server import Served
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    embedder = get_embedder(model)
    short = model.rsplit("/", 1)[-1]

    locations = {name: (stores.create_database() if kind == "postgresql" else str(folder / f"{short}-{i}.duckdb"))
                 for i, name in enumerate(VARIANTS)}
    servers: dict[str, Any] = {}
    tokens: dict[str, str] = {}
    try:
        for name, env in VARIANTS.items():
            with MemoryBank.open(locations[name], model=model) as bank:
                _, tokens[name] = bank.tokens.create("bench", ["bench"])
            saved = dict(os.environ)
            os.environ.update(env)
            try:
                servers[name] = Served(locations[name])
            finally:
                os.environ.clear()
                os.environ.update(saved)
            with LightClient(servers[name].url, {"Authorization": f"Bearer {tokens[name]}"}) as c:
                for text in memory_statements(10, seed=77):  # the model, the store, the namespace warm
                    status, body = c.request("POST", "/v1/memories", {"text": "warm: " + text})
                    if status != 201:
                        raise RuntimeError(f"warming {name} failed: {status} {body}")
        texts = memory_statements(sizes["encode_texts"], seed=4242)
        embedder._encode(texts[:BATCH])
        blocks = []
        for b in range(sizes["blocks"]):
            order = list(VARIANTS) if b % 2 == 0 else list(VARIANTS)[::-1]
            block: dict[str, Any] = {"load_average_1min": round(os.getloadavg()[0], 2),
                                     "batch_encode_per_s": bare_batch(embedder, texts, BATCH)["batch_per_s"], "order": order}
            for name in order:
                url, headers = servers[name].url, {"Authorization": f"Bearer {tokens[name]}"}
                block[name] = {"eight": eight_clients(url, headers, sizes["per_client"], f"{short}{kind}{b}{name}"),
                               "one": one_client(url, headers, sizes["sequential"], f"{short}{kind}{b}{name}one")}
            blocks.append(block)
        # Every acknowledged add is in its bank, once.
        for name in VARIANTS:
            with MemoryBank.open(locations[name]) as bank:
                stored = bank.memories(status=None, limit=None)
            by_id = {m.id: m.text for m in stored}
            texts_stored = [m.text for m in stored]
            for blk in blocks:
                blk[name]["eight"]["lost"] = sum(by_id.get(mid) != text for mid, text in blk[name]["eight"]["acked"])
            blocks[0][name]["doubled"] = len(texts_stored) - len(set(texts_stored))
    finally:
        for server in servers.values():
            server.stop()
        if kind == "postgresql":
            for loc in locations.values():
                stores.drop_database(loc)
    return summarize(blocks)


def summarize(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant: 8 clients' adds/s over all blocks, its ratio to the batch rate, one client's p50/p99."""
    rate = sorted(b["batch_encode_per_s"] for b in blocks)[len(blocks) // 2]
    out: dict[str, Any] = {"batch_encode_per_s": rate, "loads": [b["load_average_1min"] for b in blocks],
                           "blocks": []}
    for name in VARIANTS:
        adds = sum(b[name]["eight"]["adds"] for b in blocks)
        secs = sum(b[name]["eight"]["seconds"] for b in blocks)
        lat = [x for b in blocks for x in b[name]["one"]]
        ratios = [b[name]["eight"]["adds"] / b[name]["eight"]["seconds"] / b["batch_encode_per_s"] for b in blocks]
        out[name] = {"eight_adds_per_s": adds / secs, "ratio_to_batch_rate": adds / secs / rate,
                     "ratio_per_block": ratios,
                     "errors": sum(len(b[name]["eight"]["errors"]) for b in blocks),
                     "lost": sum(b[name]["eight"]["lost"] for b in blocks), "doubled": blocks[0][name]["doubled"],
                     "one_p50_ms": 1000 * _pct(lat, 0.5), "one_p99_ms": 1000 * _pct(lat, 0.99), "one_adds": len(lat)}
    for b in blocks:
        out["blocks"].append({"load": b["load_average_1min"], "batch_encode_per_s": b["batch_encode_per_s"],
                              **{name: {"eight_adds_per_s": b[name]["eight"]["adds"] / b[name]["eight"]["seconds"],
                                        "one_p50_ms": 1000 * _pct(b[name]["one"], 0.5)} for name in VARIANTS}})
    on, off = out["gather on"], out["gather off"]
    out["on_over_off"] = {"eight_adds_per_s": on["eight_adds_per_s"] / off["eight_adds_per_s"],
                          "one_p50": on["one_p50_ms"] / off["one_p50_ms"]}
    return out


def run(quick: bool, smallest: bool = False) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ.setdefault("MEMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="memctl-bench-"))
    sizes = _sizes(quick, smallest)
    folder = Path(tempfile.mkdtemp(prefix="serve-gather-"))
    try:
        result: dict[str, Any] = {"sizes": sizes, "load_average_1min_start": round(os.getloadavg()[0], 2)}
        for model in MODELS:
            result[model] = {kind: _store(kind, model, sizes, folder) for kind in STORES}
        result["load_average_1min_end"] = round(os.getloadavg()[0], 2)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return result


def markdown(r: dict[str, Any]) -> str:
    """The section's table: per model and store, both variants side by side."""
    rows, ratios, loads = [], [], []
    for model in MODELS:
        short = model.rsplit("/", 1)[-1]
        for store in STORES:
            s = r[model][store]
            where = "DuckDB file" if store == "duckdb" else "PostgreSQL"
            for name in VARIANTS:
                v = s[name]
                rows.append(f"| {short} | {where} | {name} | {s['batch_encode_per_s']:.0f} | {v['eight_adds_per_s']:.0f} | "
                            f"**{v['ratio_to_batch_rate']:.2f}** ({', '.join(f'{x:.2f}' for x in v['ratio_per_block'])}) | "
                            f"{v['one_p50_ms']:.1f} | {v['one_p99_ms']:.1f} | {v['errors']} / {v['lost']} / {v['doubled']} |")
            ratios.append(f"{short} on {where}: 8 clients {s['on_over_off']['eight_adds_per_s']:.2f}, "
                          f"one client's p50 {s['on_over_off']['one_p50']:.2f}")
            loads += [f"{x:.1f}" for x in s["loads"]]
    return f"""| model | store | embedding | bare batch-encode /s (same run) | 8 clients adds/s | ratio to batch rate (per block) | one client p50 ms | p99 ms | errors / lost / doubled |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Gather on over off, same blocks: {"; ".join(ratios)}. Load average (1 min) at each block: {", ".join(loads)}
(start {r['load_average_1min_start']}, end {r['load_average_1min_end']}).
"""


def main() -> None:
    standalone(__doc__, run, markdown)


if __name__ == "__main__":
    main()
