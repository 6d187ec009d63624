#!/usr/bin/env python3
"""Tests for scripts/match.py's argument parsing (--prior), short SPRT
runs that go on from earlier results, and --summary of their state
files: `python3 -m pytest scripts/` or `python3 scripts/test_match.py`
(needs python-chess)."""

import argparse
import re
import subprocess
import sys
import tempfile
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


def match_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "match.py"), *args],
                          capture_output=True, text=True, timeout=300)


def run_match(*extra: str) -> subprocess.CompletedProcess:
    """match.py with fake_uci.py on both sides, at one node a move."""
    fake = f"{sys.executable} {SCRIPTS / 'testing' / 'fake_uci.py'}"
    return match_py("--engine1", fake, "--engine2", fake, "--nodes", "1", "--quiet", *extra)


def test_a_run_with_prior_counts_them_in_the_llr() -> None:
    # A prior far past the upper bound decides at the first scored pair.
    out = run_match("--sprt", "0,5", "--games", "20", "--prior", "1900,200,100:0,0,200,0,900")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "H1 accepted: PASS" in out.stdout
    assert "with 2200 earlier games (--prior)" in out.stdout
    # The earlier games are in the totals: 1100 earlier pairs and one now.
    assert "Games 2202 (1101 pairs)" in out.stdout


def test_summary_gives_a_state_files_totals_and_how_to_go_on() -> None:
    with tempfile.TemporaryDirectory() as d:
        state = Path(d) / "t.state"
        run = run_match("--sprt", "0,5", "--games", "6", "--start", "11", "--state", str(state),
                        "--prior", "3,4,3:1,1,1,1,1")
        assert run.returncode in (0, 1, 3), run.stdout + run.stderr
        played = run.stdout
        total = re.search(r"Total: (\d+) W: (\d+) L: (\d+) D: (\d+)", played)
        ptnml = re.search(r"    Ptnml\(0-2\): ([\d, ]+)", played)
        assert total and ptnml, played
        games, w, l, dr = total.groups()
        out = match_py("--summary", str(state))
        assert out.returncode == 0, out.stdout + out.stderr
        summary = out.stdout
        # This run: 3 pairs from opening 11, and the 10 earlier games.
        assert "This file: 6 games (3 pairs)" in summary, summary
        assert f"With its --prior (10 earlier games): {games} games  W/D/L {w}/{dr}/{l}" in summary, summary
        assert f"Ptnml {ptnml.group(1).strip()}" in summary, summary
        assert "SPRT [0.00,5.00] logistic: LLR" in summary, summary
        assert f"--start 14 --prior {w},{dr},{l}:{ptnml.group(1).strip().replace(' ', '')}" in summary, summary


def test_summary_of_a_missing_file_is_an_error() -> None:
    out = match_py("--summary", "/nonexistent/x.state")
    assert out.returncode == 2
    assert "no such state file" in out.stderr


def test_summary_of_a_damaged_header_is_an_error() -> None:
    with tempfile.TemporaryDirectory() as d:
        state = Path(d) / "t.state"
        state.write_text('{"kaissa_match_state":1,"config":{}}\n')
        out = match_py("--summary", str(state))
        assert out.returncode == 2, out.stdout + out.stderr
        assert "the header line is damaged" in out.stderr


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"{name}: ok")
