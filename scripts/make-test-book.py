#!/usr/bin/env python3
"""Cuts a small Polyglot book for kaissa's tests out of a big one: every
entry of every position reached from the start by the big book's own
moves within PLIES plies, sorted as Polyglot wants. Debian's
gnuchess-book (public domain) gave tests/data/gnuchess-2ply.bin:

    pip install chess==1.11.2; apt-get install gnuchess-book
    python3 scripts/make-test-book.py /usr/share/games/gnuchess/book.bin 2 tests/data/gnuchess-2ply.bin
"""
import struct
import sys

import chess
import chess.polyglot


def main():
    source, plies, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    entries = set()
    with chess.polyglot.open_reader(source) as book:
        frontier = [chess.Board()]
        for ply in range(plies + 1):
            following = []
            for board in frontier:
                for e in book.find_all(board, minimum_weight=0):
                    entries.add((e.key, e.raw_move, e.weight, e.learn))
                    if ply < plies:
                        nxt = board.copy()
                        nxt.push(e.move)
                        following.append(nxt)
            frontier = following
    with open(out, "wb") as f:
        for key, move, weight, learn in sorted(entries):
            f.write(struct.pack(">QHHI", key, move, weight, learn))
    print(f"{len(entries)} entries")


if __name__ == "__main__":
    main()
