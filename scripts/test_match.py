#!/usr/bin/env python3
"""Tests for scripts/match.py's argument parsing (--prior) and a short
SPRT run that goes on from earlier results: `python3 -m pytest scripts/`
or `python3 scripts/test_match.py` (needs python-chess)."""

import argparse
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))

import match  # noqa: E402


def rejects(text: str) -> bool:
    try:
        match.parse_prior(text)
    except argparse.ArgumentTypeError:
        return True
    return False


def test_prior_parses_the_lines_a_stopped_sprt_prints() -> None:
    # One pair of each kind: 10 games, 5 points.
    wdl, penta = match.parse_prior("3,4,3:1,1,1,1,1")
    assert wdl == [3, 4, 3]
    assert penta == [1, 1, 1, 1, 1]


def test_prior_refuses_inconsistent_or_malformed_counts() -> None:
    assert rejects("3,4,3")                 # no pentanomial part
    assert rejects("3,4:1,1,1,1,1")         # two W/D/L counts
    assert rejects("3,4,3:1,1,1,1")         # four pentanomial counts
    assert rejects("3,4,x:1,1,1,1,1")       # not a number
    assert rejects("-1,6,5:1,1,1,1,1")      # negative
    assert rejects("3,4,4:1,1,1,1,1")       # 11 games, 5 pairs
    assert rejects("6,0,4:1,1,1,1,1")       # 6 points, the pairs give 5


def test_a_run_with_prior_counts_them_in_the_llr() -> None:
    # A prior far past the upper bound decides at the first scored pair.
    fake = f"{sys.executable} {SCRIPTS / 'testing' / 'fake_uci.py'}"
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / "match.py"), "--engine1", fake, "--engine2", fake,
         "--nodes", "1", "--sprt", "0,5", "--games", "20", "--quiet",
         "--prior", "1900,200,100:0,0,200,0,900"],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "H1 accepted: PASS" in out.stdout
    assert "with 2200 earlier games (--prior)" in out.stdout
    # The earlier games are in the totals: 1100 earlier pairs and one now.
    assert "Games 2202 (1101 pairs)" in out.stdout


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"{name}: ok")
