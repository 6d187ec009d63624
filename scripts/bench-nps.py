#!/usr/bin/env python3
"""Search speed of several engines side by side: runs each one's `bench`
in turn, ROUNDS times (so that a load change on the machine hits them
all alike), and prints each engine's nodes, median and best nodes per
second.

    scripts/bench-nps.py --rounds 5 \\
        kaissa="target/release/kaissa bench" \\
        4f278a5="/path/kaissa-4f278a5 bench" \\
        ethereal="/usr/games/ethereal-chess bench"

Understands the bench output of kaissa and Stockfish ("Nodes searched :
N", "Nodes/second : N") and of Ethereal ("Nodes : N", "NPS : N").
"""

import argparse
import re
import shlex
import statistics
import subprocess
import sys

NODES = re.compile(r"^(?:Nodes searched|Nodes)\s*:\s*(\d+)\s*$", re.M)
NPS = re.compile(r"^(?:Nodes/second|NPS)\s*:\s*(\d+)\s*$", re.M)


def bench(command):
    """(nodes, nps) of one run of `command`."""
    try:
        run = subprocess.run(
            shlex.split(command),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"{command!r} failed: {e}")
    out = run.stdout + run.stderr
    nodes, nps = NODES.findall(out), NPS.findall(out)
    if not nodes or not nps:
        raise SystemExit(f"no node count or speed in the output of {command!r}")
    return int(nodes[-1]), int(nps[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engines", nargs="+", metavar="LABEL=COMMAND")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    engines = []
    for spec in args.engines:
        label, sep, command = spec.partition("=")
        if not sep or not command:
            ap.error(f"expected LABEL=COMMAND, got {spec!r}")
        engines.append((label, command))
    speeds = {label: [] for label, _ in engines}
    nodes = {}
    for r in range(args.rounds):
        for label, command in engines:
            n, nps = bench(command)
            if nodes.setdefault(label, n) != n:
                print(f"{label}: node count changed, {nodes[label]} then {n}", file=sys.stderr)
            speeds[label].append(nps)
            print(f"round {r + 1} {label}: {nps} nps", file=sys.stderr)
    print(f"| engine | bench nodes | median nps | best nps | runs |")
    print(f"|---|---|---|---|---|")
    for label, _ in engines:
        s = speeds[label]
        print(f"| {label} | {nodes[label]} | {int(statistics.median(s))} | {max(s)} | {len(s)} |")


if __name__ == "__main__":
    main()
