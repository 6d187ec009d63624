#!/usr/bin/env python3
"""The net's evaluation scale against the hand-crafted one.

Every search margin of kaissa (futility, razoring, aspiration, ...) and the
bot's resign and draw rules are in the hand-crafted evaluation's
centipawns. A net learns its own scale from its training targets, so after
each new net: take quiet positions from played games (any PGN, e.g. one
written by `match.py --pgn`), ask kaissa's UCI `eval` for both evaluations
and fit `net = slope * classical` (positions where the hand-crafted
evaluation is within +/-1000 cp). A slope near 1.00 means the margins hold;
otherwise the net's output scale (K, in its file's header: `kaissa train`
fits it to the data, `--k` sets it) is off: train again with the K that
brings it there and check the change in a match.

    python3 scripts/eval-scale.py --pgn games.pgn [--engine "target/release/kaissa uci"] \
        [--option EvalFile=nets/other.nnue]

Needs python-chess (pip install chess).
"""
import argparse
import random
import re
import shlex
import statistics
import subprocess
import sys

import chess.pgn


def positions(path, every, limit, seed):
    """Quiet positions (not in check, game not over) from the games of a PGN."""
    fens = []
    with open(path) as f:
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            for i, move in enumerate(game.mainline_moves()):
                board.push(move)
                if i % every == every // 2 and not board.is_check() and not board.is_game_over():
                    fens.append(board.fen())
    random.Random(seed).shuffle(fens)
    return fens[:limit]


def static_evals(engine, options, fens):
    """kaissa's `eval` for each position, in centipawns from the side to move's view."""
    lines = ["uci"] + [f"setoption name {n} value {v}" for n, v in options]
    for fen in fens:
        lines += [f"position fen {fen}", "eval"]
    lines.append("quit")
    try:
        run = subprocess.run(shlex.split(engine), input="\n".join(lines) + "\n",
                             capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"cannot start {engine!r}: {e}")
    if run.returncode != 0:
        sys.exit(f"{engine!r} exited with status {run.returncode}: {run.stderr.strip()[-500:]}")
    out = run.stdout
    evals = [int(x) for x in re.findall(r"static eval (-?\d+) cp", out)]
    if len(evals) != len(fens):
        sys.exit(f"expected {len(fens)} evaluations from {engine!r}, got {len(evals)}")
    return evals


def option(text):
    """A `NAME=VALUE` UCI option."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pgn", required=True, help="played games to take positions from")
    p.add_argument("--engine", default="target/release/kaissa uci")
    p.add_argument("--option", action="append", default=[], type=option, metavar="NAME=VALUE",
                   help="UCI option for the net side (e.g. EvalFile=PATH)")
    p.add_argument("--every", type=int, default=7, help="one position every N plies")
    p.add_argument("--positions", type=int, default=3000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    fens = positions(a.pgn, a.every, a.positions, a.seed)
    if len(fens) < 100:
        sys.exit(f"only {len(fens)} positions in {a.pgn}: give more games")
    net = static_evals(a.engine, a.option, fens)
    classical = static_evals(a.engine, [("EvalFile", "classical")], fens)
    pairs = [(n, c) for n, c in zip(net, classical) if abs(c) < 1000]
    nn, cc = [n for n, _ in pairs], [c for _, c in pairs]
    slope = sum(n * c for n, c in pairs) / sum(c * c for c in cc)
    print(f"{len(pairs)} positions: slope net/classical {slope:.3f}, "
          f"correlation {statistics.correlation(nn, cc):.3f}, "
          f"mean |eval| net {statistics.mean(map(abs, nn)):.1f} cp, "
          f"classical {statistics.mean(map(abs, cc)):.1f} cp")
    for lo, hi in [(0, 50), (50, 150), (150, 400), (400, 1000)]:
        band = [(n, c) for n, c in pairs if lo <= abs(c) < hi]
        if band:
            print(f"  |classical| {lo:>3}..{hi:<4} {len(band):>5} positions: mean |net| "
                  f"{statistics.mean(abs(n) for n, _ in band):6.1f}, "
                  f"mean |classical| {statistics.mean(abs(c) for _, c in band):6.1f}")


if __name__ == "__main__":
    main()
