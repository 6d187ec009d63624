#!/usr/bin/env python3
"""A deliberately misbehaving UCI "engine" for testing scripts/match.py.

Plays a random legal move (seeded), optionally after sleeping, and can be
told to misbehave on its Nth move of a game:

  --sleep SEC        think this long on every move, ignoring the clock
  --illegal-at N     answer move N with an illegal move
  --crash-at N       exit(1) instead of answering move N
  --hang-at N        never answer move N (ignores "stop" too)
  --score CP         report this score (centipawns, side to move) in info
  --exit-at-newgame N  exit(1) on the Nth ucinewgame (dies between games)

Examples:
  match.py --engine2 "python3 scripts/testing/fake_uci.py --sleep 0.3" --tc 2+0
  match.py --engine2 "python3 scripts/testing/fake_uci.py --illegal-at 5" --tc 5+0
"""

import argparse
import random
import sys
import time

import chess


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--illegal-at", type=int, default=0)
    ap.add_argument("--crash-at", type=int, default=0)
    ap.add_argument("--hang-at", type=int, default=0)
    ap.add_argument("--score", type=int, default=0)
    ap.add_argument("--exit-at-newgame", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    board = chess.Board()
    nmove = 0
    ngames = 0

    def out(s: str) -> None:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        tok = line.split()
        if not tok:
            continue
        cmd = tok[0]
        if cmd == "uci":
            out("id name FakeUCI")
            out("id author kaissa test harness")
            out("option name Hash type spin default 1 min 1 max 16")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "ucinewgame":
            nmove = 0
            ngames += 1
            if ngames == a.exit_at_newgame:
                sys.exit(1)
        elif cmd == "position":
            if tok[1] == "startpos":
                board = chess.Board()
                rest = tok[2:]
            else:
                board = chess.Board(" ".join(tok[2:8]))
                rest = tok[8:]
            if rest and rest[0] == "moves":
                for m in rest[1:]:
                    board.push_uci(m)
        elif cmd == "go":
            nmove += 1
            if nmove == a.crash_at:
                sys.exit(1)
            if nmove == a.hang_at:
                time.sleep(10 ** 6)
            if a.sleep:
                time.sleep(a.sleep)
            out(f"info depth 1 score cp {a.score} nodes 1 pv")
            if nmove == a.illegal_at:
                out("bestmove a1a8" if board.piece_at(chess.A1) is None else "bestmove e1e5")
            else:
                out("bestmove " + rng.choice(list(board.legal_moves)).uci())
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
