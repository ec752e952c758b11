"""A bank's settings: scoring presets (built-in and saved), the active preset, the index mode.

Settings live in the store, so every process that opens the bank follows them; each change is
an event and advances the change sequence, so other processes drop what they cached.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..storage.clock import to_naive_utc, utcnow
from ..embedding.embedder import model_defaults
from ..errors import NotFoundError, ValidationError
from ..models import INDEX_MODES, check_choice
from ..index.scoring import PRESETS, ScoringParams
from ..storage import tables

if TYPE_CHECKING:
    from .core import Core



PRESET_MODEL = "preset_model:"  # meta key prefix: the model a saved preset was set on


class Settings:
    """Reads and changes one bank's presets and index mode."""

    def __init__(self, core: "Core"):
        self.core = core

    def builtin(self) -> dict[str, ScoringParams]:
        """The built-in presets for this bank: :data:`PRESETS`, each on the bank's model's scale
        ("default": ``recall`` of :data:`memory_core.embedding.embedder.MODEL_DEFAULTS`, the others
        its ``presets``)."""
        defaults = model_defaults(self.core.model)
        out = {name: params.replace(**defaults.presets.get(name, {})) for name, params in PRESETS.items()}
        out["default"] = PRESETS["default"].replace(**defaults.recall)
        return out

    def presets(self) -> dict[str, ScoringParams]:
        """Built-in and saved presets by name."""
        with self.core.session(write=False) as con:
            saved = con.execute("SELECT name, params FROM presets ORDER BY name").fetchall()
        out = self.builtin()
        # A parameter a saved preset lacks (added since) takes the model's calibrated default.
        out.update({name: ScoringParams.from_dict(json.loads(params), base=out["default"]) for name, params in saved})
        return out

    def preset(self, name: str) -> ScoringParams:
        """One preset by name (built-in or saved)."""
        presets = self.presets()
        if name not in presets:
            raise NotFoundError(f"no preset named {name!r}; known: {', '.join(presets)}")
        return presets[name]

    def save_preset(self, name: str, params: ScoringParams, description: str | None = None) -> None:
        """Save (or overwrite) an operator preset. Built-in names are reserved."""
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ValidationError("a preset name is a non-empty string of at most 100 characters")
        if name in PRESETS:
            raise ValidationError(f"{name!r} is a built-in preset; save under another name")
        if not isinstance(params, ScoringParams):
            raise ValidationError("params must be a ScoringParams")
        now = to_naive_utc(utcnow())
        with self.core.session() as con:
            before = con.execute("SELECT params FROM presets WHERE name = ?", [name]).fetchone()
            con.execute("INSERT INTO presets VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                        "params = excluded.params, description = excluded.description, "
                        "created_at = excluded.created_at, updated_at = excluded.updated_at",
                        [name, params.to_json(), description, now, now])
            # The model whose cosines the preset's weights and threshold were set on.
            tables.put_meta(con, PRESET_MODEL + name, self.core.model)
            tables.log_event(con, self.core.actor, "save_preset", None,
                            {"name": name, "params": json.loads(before[0])} if before else None,
                            {"name": name, "params": params.to_dict()}, utcnow())
        self.core.active_params = None

    def saved_on_other_models(self) -> dict[str, str]:
        """Saved presets set on another model than the bank's (it was re-embedded since): name ->
        that model. Their thresholds and similarity range read another model's cosines: check
        them (the Tune page shows the flag) before relying on them."""
        with self.core.session(write=False) as con:
            saved = {row[0] for row in con.execute("SELECT name FROM presets").fetchall()}
            meta = tables.meta(con)
        return {name: meta[PRESET_MODEL + name] for name in sorted(saved)
                if meta.get(PRESET_MODEL + name, self.core.model) != self.core.model}

    def active_preset(self) -> tuple[str, ScoringParams]:
        """The name and parameters agents get when they pass no params."""
        if self.core.active_params is None:
            with self.core.session(write=False) as con:
                self.active(con)
        return self.core.active_params

    def active(self, con: Any) -> tuple[str, ScoringParams]:
        if self.core.active_params is None:
            name = tables.meta(con).get("active_preset", "default")
            row = con.execute("SELECT params FROM presets WHERE name = ?", [name]).fetchone()
            builtin = self.builtin()
            params = ScoringParams.from_dict(json.loads(row[0]), base=builtin["default"]) if row \
                else builtin.get(name, ScoringParams())
            self.core.active_params = (name, params)
        return self.core.active_params

    def set_active_preset(self, name: str) -> None:
        """Make a preset the bank's default for recall; recorded as an event."""
        self.preset(name)
        with self.core.session() as con:
            old = tables.meta(con).get("active_preset")
            tables.set_meta(con, "active_preset", name)
            tables.next_seq(con)  # other processes must drop their cached active preset
            tables.log_event(con, self.core.actor, "set_active_preset", None, {"name": old}, {"name": name}, utcnow())
        self.core.active_params = None

    def set_index_mode(self, mode: str) -> None:
        """Choose how this bank's recall searches large namespaces: ``exact`` or ``ivf``.

        The setting is stored in the bank (every process that opens it follows) and recorded as an
        event. ``ivf`` trades exactness for speed in namespaces of 50,000 memories or more: the
        dense part of the score is searched in an inverted-file index (k-means cells, 8-bit
        codes), the candidates and the lexical matches are then scored exactly, and every hit is
        marked ``approximate``. bench/recall_scale.py measures its recall@k against exact.
        """
        check_choice(mode, INDEX_MODES, "index mode")
        with self.core.session() as con:
            old = tables.meta(con).get("index_mode", "exact")
            tables.put_meta(con, "index_mode", mode)
            tables.next_seq(con)  # other processes re-read the bank's settings
            tables.log_event(con, self.core.actor, "set_index_mode", None, {"index_mode": old}, {"index_mode": mode},
                            utcnow())
        self.core.index_mode = mode

    def resolve(self, params: ScoringParams | str | None) -> tuple[str | None, ScoringParams]:
        if isinstance(params, ScoringParams):
            return None, params
        if params is None:
            return self.active_preset()
        if isinstance(params, str):
            return params, self.preset(params)
        raise ValidationError("params must be a ScoringParams, a preset name or None")
