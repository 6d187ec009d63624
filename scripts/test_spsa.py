#!/usr/bin/env python3
"""Tests for scripts/spsa.py's gains and update: `python3 -m pytest scripts/`
or `python3 scripts/test_spsa.py`."""

import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import spsa  # noqa: E402


def param() -> spsa.Param:
    return spsa.Param("tune_x", 100, 0, 200, 10.0)


def test_gains_end_at_c_end_and_r_end() -> None:
    p = param()
    s = spsa.Spsa([p], 1000, 0.002)
    assert math.isclose(s.c_k(p, 999), 10.0)
    assert math.isclose(s.r_k(p, 999), 0.002)
    # Larger steps at the start, shrinking.
    assert s.c_k(p, 0) > s.c_k(p, 500) > s.c_k(p, 999)
    assert s.r_k(p, 0) * s.c_k(p, 0) ** 2 > s.r_k(p, 999) * s.c_k(p, 999) ** 2


def test_update_follows_the_winning_side_and_stays_in_range() -> None:
    p = param()
    s = spsa.Spsa([p], 1000, 0.002)
    shift = s.perturbation(0, random.Random(3))
    up = shift["tune_x"] > 0
    s.update(0, shift, 2.0)  # theta+ won both games
    assert (p.value > 100) == up
    before = p.value
    s.update(1, shift, 0.0)  # a drawn pair teaches nothing
    assert p.value == before
    for k in range(2, 10_000):
        s.update(k % 1000, {"tune_x": 10.0}, 2.0)
    assert p.value == 200


def test_values_round_and_clamp() -> None:
    p = param()
    p.value = 198.4
    assert spsa.values([p], {"tune_x": 5.0}, 1) == {"tune_x": 200}
    assert spsa.values([p], {"tune_x": 5.0}, -1) == {"tune_x": 193}


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"{name}: ok")
