#!/usr/bin/env python3
"""Perft speed, kaissa against Stockfish, in the same run on the same machine.

Both are timed without process start-up: kaissa reports its own perft time,
Stockfish is driven over UCI and timed from `go perft` to its node count.
Each measurement is the best of --runs. Usage:

    cargo build --release
    python3 scripts/perft_vs_stockfish.py [--stockfish /usr/games/stockfish]
"""
import argparse
import re
import subprocess
import time

CASES = [
    ("startpos", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 6),
    ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5),
]


def kaissa_perft(binary, fen, depth):
    out = subprocess.run([binary, "perft", str(depth), "--fen", fen],
                         check=True, capture_output=True, text=True).stdout
    nodes = int(re.search(r"nodes (\d+)", out).group(1))
    secs = float(re.search(r"time ([\d.]+) s", out).group(1))
    return nodes, secs


class Stockfish:
    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.send("uci")
        self.wait("uciok")
        self.send("setoption name Threads value 1")
        self.send("isready")
        self.wait("readyok")

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def wait(self, prefix):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("stockfish exited")
            if line.startswith(prefix):
                return line

    def perft(self, fen, depth):
        self.send(f"position fen {fen}")
        self.send("isready")
        self.wait("readyok")
        start = time.perf_counter()
        self.send(f"go perft {depth}")
        line = self.wait("Nodes searched")
        secs = time.perf_counter() - start
        return int(line.split(":")[1]), secs

    def close(self):
        self.send("quit")
        self.p.wait(timeout=5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kaissa", default="target/release/kaissa")
    ap.add_argument("--stockfish", default="/usr/games/stockfish")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sf = Stockfish(args.stockfish)
    print(f"{'position':<10} {'depth':>5} {'nodes':>12} {'kaissa Mnps':>12} "
          f"{'stockfish Mnps':>15} {'ratio':>6}")
    for name, fen, depth in CASES:
        k = min((kaissa_perft(args.kaissa, fen, depth) for _ in range(args.runs)),
                key=lambda r: r[1])
        s = min((sf.perft(fen, depth) for _ in range(args.runs)), key=lambda r: r[1])
        if k[0] != s[0]:
            raise SystemExit(f"node counts differ on {name}: kaissa {k[0]}, stockfish {s[0]}")
        km, sm = k[0] / k[1] / 1e6, s[0] / s[1] / 1e6
        print(f"{name:<10} {depth:>5} {k[0]:>12} {km:>12.1f} {sm:>15.1f} {km / sm:>6.2f}")
    sf.close()


if __name__ == "__main__":
    main()
