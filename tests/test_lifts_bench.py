"""bench/lifts.py: a setting is kept only if it costs the second set (LongMemEval), the general
questions and the short facts nothing on their dev halves; of those, LoCoMo's dev R@10 decides."""

from __future__ import annotations

from bench import lifts


def _row(name: str, locomo: float, lme5: float = 0.7, lme10: float = 0.8, empty: float = 0.9,
         en: float = 0.5) -> dict:
    ml = {"en": en, "zh": 0.6, "sv": 0.4, "empty_en": 0.9, "empty_zh": 0.9, "empty_sv": 0.9}
    return {"setting": {"name": name}, "locomo_r10": {"dev": locomo, "test": locomo},
            "locomo_general_empty": {"dev": empty}, "lme_r5": {"dev": lme5}, "lme_r10": {"dev": lme10},
            "multilingual": {"dev": ml, "test": ml}}


def test_the_best_locomo_setting_that_costs_no_other_set_wins():
    default = _row("default", 0.73)
    rows = [_row("costs LongMemEval", 0.80, lme5=0.65), _row("costs general questions", 0.79, empty=0.88),
            _row("costs short facts", 0.78, en=0.45), _row("fair", 0.75), _row("worse", 0.72)]
    assert lifts.choose(rows, default, 0.0)["setting"]["name"] == "fair"
    assert lifts.choose(rows, default, 0.06)["setting"]["name"] == "costs LongMemEval"


def test_with_nothing_eligible_the_default_stays():
    default = _row("default", 0.73)
    assert lifts.choose([_row("costs LongMemEval", 0.80, lme10=0.7)], default, 0.0) is default
