#!/usr/bin/env python3
"""Tests for scripts/sprt.py: `python3 -m pytest scripts/` or
`python3 scripts/test_sprt.py`.

The published figures are fishtest's, as pasted into Stockfish commit
messages (the commit and the test page are named with each). fishtest
prints the LLR and the Elo to two decimals and the error bar to one, so
that is the tolerance. Braces {} in those lines mean logistic Elo bounds,
angle brackets <> normalized Elo.
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sprt  # noqa: E402

# (model, elo0, elo1, pentanomial, published LLR, where)
PUBLISHED_LLR = [
    ("logistic", -0.20, 1.10, [406, 8728, 41933, 8848, 493], 2.94,
     "Stockfish 6ad4f485d, tests/view/60735b3a8141753378960534"),
    ("logistic", 0.20, 0.90, [23, 1079, 15473, 1255, 14], 2.94,
     "Stockfish 6ad4f485d, tests/view/6073ffbc814175337896057f"),
    ("logistic", -1.00, 0.20, [577, 11681, 56451, 11586, 605], 2.94,
     "Stockfish 79bb28281, tests/view/606532732b2df919fd5f026d"),
    ("logistic", 0.25, 1.25, [25, 1383, 19438, 1408, 26], -2.96,
     "Stockfish 7d0a16e06, tests/view/6002a4836019e097de3ef8e3"),
    ("normalized", 0.00, 2.00, [182, 5438, 13706, 5745, 193], 2.94,
     "Stockfish 8e3b5b13f, tests/view/6a607ab325028d004c922829"),
    ("normalized", 0.00, 2.00, [85, 1662, 3334, 1440, 71], -2.92,
     "Stockfish 70ba9de85"),
    ("normalized", 0.50, 2.50, [44, 11265, 30084, 11751, 28], 2.94,
     "Stockfish 356d7c5c1, tests/view/6a5a3d2c5529b8472df81249"),
    ("normalized", -1.75, 0.25, [414, 13292, 38302, 12928, 408], -2.93,
     "Stockfish 94175524b, tests/view/688bcb35502b34dd5e7111c9"),
]

# (pentanomial, Elo, +/-, LOS %, nElo, where): fishtest's fixed-games results.
PUBLISHED_ELO = [
    ([154, 6440, 16053, 7148, 205], 4.69, 1.4, 100.0, 9.38, "Stockfish 69a01b88f"),
    ([143, 6697, 14452, 6415, 164], -1.50, 1.5, 2.3, -2.95,
     "Stockfish a12dc6cc1, tests/view/69fef06c9392f0c317213dca"),
    ([0, 148, 4694, 158, 0], 0.35, 1.2, 71.6, 1.99,
     "Stockfish 3f1835239, tests/view/68abeb8175da51a345a5af82"),
    ([55, 2365, 5182, 2349, 49], -0.49, 2.4, 34.8, -0.96,
     "Stockfish b5f11085d, tests/view/6822af4b3629b02d74b17be6"),
]


def close(a, b, tol):
    return abs(a - b) <= tol


def test_published_llr():
    for model, e0, e1, penta, published, where in PUBLISHED_LLR:
        got = sprt.llr(e0, e1, penta, model)
        assert close(got, published, 0.0051), f"{where}: LLR {got:.4f}, published {published}"


def test_published_elo():
    for penta, elo, err, los, nelo, where in PUBLISHED_ELO:
        e, er, lo = sprt.elo_estimate(penta)
        ne, _ = sprt.nelo_estimate(penta)
        assert close(e, elo, 0.0051), f"{where}: Elo {e:.4f}, published {elo}"
        assert close(er, err, 0.051), f"{where}: error {er:.4f}, published {err}"
        assert close(100 * lo, los, 0.051), f"{where}: LOS {100 * lo:.3f}%, published {los}%"
        assert close(ne, nelo, 0.0051), f"{where}: nElo {ne:.4f}, published {nelo}"


def test_bounds():
    lo, hi = sprt.bounds(0.05, 0.05)
    assert close(lo, -math.log(19), 1e-12) and close(hi, math.log(19), 1e-12)
    assert close(hi, 2.944, 0.001)
    lo, hi = sprt.bounds(0.05, 0.10)
    assert close(lo, math.log(0.10 / 0.95), 1e-12) and close(hi, math.log(0.90 / 0.05), 1e-12)


def test_logistic_conversions():
    assert sprt.logistic_score(0) == 0.5
    assert close(sprt.logistic_score(400), 10 / 11, 1e-12)
    for e in (-300, -5, 0, 3.5, 120):
        assert close(sprt.logistic_elo(sprt.logistic_score(e)), e, 1e-9)


def test_two_point_llr_by_hand():
    # Only LL and WW pairs: the constrained maximum-likelihood laws put
    # (almost: the empty cells hold 0.001 each) all their mass on the two
    # outcomes, with P(WW) = s, so LLR = W ln(s1/s0) + L ln((1-s1)/(1-s0)).
    s0, s1 = 0.5, 1 / (1 + 10 ** (-5 / 400))
    by_hand = 60 * math.log(s1 / s0) + 40 * math.log((1 - s1) / (1 - s0))
    assert close(by_hand, 0.27747, 1e-5)
    assert close(sprt.llr_logistic(0, 5, [40, 0, 0, 0, 60]), by_hand, 1e-3)


def test_llr_close_to_brownian_approximation():
    # For many pairs and small Elo the GSPRT LLR approaches
    # N (s1 - s0)(2 mean - s0 - s1) / (2 var), var that of one pair's mean.
    penta = [300, 2500, 5000, 2700, 350]
    n = sum(penta)
    _, mean, var_game = sprt.score_stats(penta)
    var_pair = var_game / 2
    s0, s1 = sprt.logistic_score(0), sprt.logistic_score(5)
    approx = n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var_pair)
    exact = sprt.llr_logistic(0, 5, penta)
    assert close(exact, approx, 0.01 * abs(approx)), (exact, approx)


def test_llr_symmetries():
    penta = [12, 80, 150, 95, 20]
    for model in sprt.MODELS:
        a = sprt.llr(0, 5, penta, model)
        assert close(sprt.llr(5, 0, penta, model), -a, 1e-9)
        assert close(sprt.llr(-5, 0, list(reversed(penta)), model), -a, 1e-6)
        assert sprt.llr(0, 5, [0, 0, 0, 0, 0], model) == 0.0
    # More wins move the LLR towards H1.
    assert sprt.llr_logistic(0, 5, [10, 50, 100, 60, 15]) < sprt.llr_logistic(0, 5, [10, 50, 100, 60, 25])


def test_mle_keeps_the_constraint():
    probs = [0.01, 0.2, 0.5, 0.25, 0.04]
    for s in (0.3, 0.5, 0.52, 0.8):
        q = sprt.mle_with_mean(probs, s)
        assert close(sum(q), 1.0, 1e-9)
        assert close(sum(v * p for v, p in zip(sprt.PAIR_VALUES, q)), s, 1e-9)
    q = sprt.mle_with_t(probs, 0.5, 0.1)
    mean = sum(v * p for v, p in zip(sprt.PAIR_VALUES, q))
    sd = math.sqrt(sum(p * (v - mean) ** 2 for v, p in zip(sprt.PAIR_VALUES, q)))
    assert close(sum(q), 1.0, 1e-9) and close((mean - 0.5) / sd, 0.1, 1e-7)


def test_elo_by_hand():
    # [10, 20, 40, 20, 10]: mean 1/2, so Elo 0 and LOS 50%. Variance of a
    # pair's mean: (10 + 10) (1/4) + (20 + 20) (1/16) over 100 = 0.075;
    # standard error sqrt(0.075 / 100) = 0.0273861; upper end of the 95%
    # interval 0.5 + 1.959964 x 0.0273861 = 0.5536758, Elo(0.5536758) =
    # -400 log10(1 / 0.5536758 - 1) = 37.442 = the half-width by symmetry.
    e, err, los = sprt.elo_estimate([10, 20, 40, 20, 10])
    assert close(e, 0.0, 1e-9) and close(err, 37.442, 0.001) and close(los, 0.5, 1e-9)
    games, mean, var = sprt.score_stats([10, 20, 40, 20, 10])
    assert games == 200 and close(mean, 0.5, 1e-12) and close(var, 0.15, 1e-12)
    # All pairs 1.5/2: mean 0.75, Elo 400 log10(3) = 190.85 (the 0.001
    # pairs put into each empty cell take 0.02 off).
    e, _, _ = sprt.elo_estimate([0, 0, 0, 50, 0])
    assert close(e, 400 * math.log10(3), 0.05)


def test_sprt_object():
    t = sprt.Sprt(0, 5)
    assert t.verdict([0, 0, 0, 0, 0]) is None
    assert t.verdict([0, 5, 40, 60, 400]) == "H1"
    assert t.verdict([400, 60, 40, 5, 0]) == "H0"
    for bad in ((5, 0), (0, 0)):
        try:
            sprt.Sprt(*bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"Sprt{bad} accepted")


if __name__ == "__main__":
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print(f"ok      {name}")
            except AssertionError as e:
                failed += 1
                print(f"FAILED  {name}: {e!r}")
    sys.exit(1 if failed else 0)
