#!/usr/bin/env python3
"""Tests for scripts/bench-nps.py, with stand-in engines that print the
bench output of kaissa and of Ethereal: `python3 scripts/test_bench_nps.py`."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "bench-nps.py"


def fake(*lines: str) -> str:
    """A command that prints `lines`."""
    body = "; ".join(f"print({line!r})" for line in lines)
    return f'{sys.executable} -c "{body}"'


def run(*engines: str, rounds: int = 2) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", str(rounds), *engines],
        capture_output=True,
        text=True,
    )


def test_reads_kaissa_and_ethereal_output() -> None:
    kaissa = fake("Total time (ms) : 6000", "Nodes searched  : 10580326", "Nodes/second    : 1750707")
    ethereal = fake("info depth 13 nodes 30922 nps 2061000", "Time  : 3166ms", "Nodes : 5132900", "NPS   : 1621257")
    r = run(f"kaissa={kaissa}", f"ethereal={ethereal}", rounds=3)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1] == "| kaissa | 10580326 | 1750707 | 1750707 | 3 |", rows
    # Ethereal's per-iteration "nps" lines are not its total.
    assert rows[2] == "| ethereal | 5132900 | 1621257 | 1621257 | 3 |", rows


def test_output_without_a_speed_is_an_error() -> None:
    r = run(f"broken={fake('bench done')}", rounds=1)
    assert r.returncode != 0
    assert "no node count or speed" in r.stderr


def test_a_spec_without_a_label_is_refused() -> None:
    r = run("target/release/kaissa bench", rounds=1)
    assert r.returncode != 0
    assert "LABEL=COMMAND" in r.stderr


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"{name}: ok")
