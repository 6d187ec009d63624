#!/usr/bin/env python3
"""Makes a large set of balanced 8-ply openings for SPRT matches
(scripts/data/openings-8ply-10k.epd), reproducibly from a seed.

Debian's gnuchess-book (/usr/share/games/gnuchess/book.bin, Polyglot,
public domain) holds only about 2,900 distinct positions 8 plies deep, so
each walk plays --book-plies moves drawn from the book with probability
proportional to their weights (a uniformly random legal move where the
book has none), then random legal moves up to --plies. A candidate is kept
when it is new (by EPD), not in check and not over, and a Stockfish search
(one thread, fresh hash, fixed --depth: deterministic) scores it within
--max-cp of 0. Candidates are drawn in a fixed order from the seed and
searched in batches by --jobs engines, so the file does not depend on
--jobs. The kept lines read `FEN ; book6+2 sf_d12 CP` (CP from White's
side, as Stockfish 15.1 sees it).

    apt-get install gnuchess-book stockfish; pip install chess
    python3 scripts/make-openings.py --count 10000 --seed 1 --jobs 2 \
        --out scripts/data/openings-8ply-10k.epd
"""
import argparse
import concurrent.futures
import random
import sys
import time

import chess
import chess.engine
import chess.polyglot


def walk(book, rng, book_plies, plies):
    """One random walk from the start position, or None if it dead-ends."""
    board = chess.Board()
    for ply in range(plies):
        move = None
        if ply < book_plies:
            try:
                move = book.weighted_choice(board, random=rng).move
            except IndexError:
                move = None
        if move is None:
            moves = list(board.legal_moves)
            if not moves:
                return None
            move = rng.choice(moves)
        board.push(move)
    return board


class Evaluator:
    """One Stockfish process; searches a position from a fresh hash."""

    def __init__(self, cmd, depth, hash_mb):
        self.engine = chess.engine.SimpleEngine.popen_uci(cmd)
        self.engine.configure({"Threads": 1, "Hash": hash_mb})
        self.depth = depth

    def cp(self, fen):
        info = self.engine.analyse(chess.Board(fen), chess.engine.Limit(depth=self.depth), game=object())
        return info["score"].white().score(mate_score=100000)

    def close(self):
        self.engine.quit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--book", default="/usr/share/games/gnuchess/book.bin")
    ap.add_argument("--engine", default="/usr/games/stockfish")
    ap.add_argument("--count", type=int, default=10000, help="positions to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plies", type=int, default=8)
    ap.add_argument("--book-plies", type=int, default=6)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--hash", type=int, default=16, help="Stockfish hash in MiB")
    ap.add_argument("--max-cp", type=int, default=60, help="keep positions with |eval| <= this")
    ap.add_argument("--jobs", type=int, default=1, help="Stockfish processes")
    ap.add_argument("--batch", type=int, default=200, help="candidates searched per batch")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    seen = set()
    kept = []
    tried = 0
    started = time.monotonic()
    evaluators = [Evaluator(args.engine, args.depth, args.hash) for _ in range(args.jobs)]
    try:
        with chess.polyglot.open_reader(args.book) as book, \
                concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            while len(kept) < args.count:
                batch = []
                while len(batch) < args.batch:
                    board = walk(book, rng, args.book_plies, args.plies)
                    if board is None or board.is_check() or board.is_game_over():
                        continue
                    epd = board.epd()
                    if epd in seen:
                        continue
                    seen.add(epd)
                    batch.append(board.fen())
                # Evaluator i searches positions i, i+jobs, ...: the order of
                # the results (and so the file) does not depend on timing.
                chunks = [batch[i::args.jobs] for i in range(args.jobs)]
                futs = [pool.submit(lambda ev, fens: [ev.cp(f) for f in fens], ev, ch)
                        for ev, ch in zip(evaluators, chunks)]
                scores = {}
                for ch, fut in zip(chunks, futs):
                    scores.update(zip(ch, fut.result()))
                for fen in batch:
                    if len(kept) == args.count:
                        break
                    tried += 1
                    cp = scores[fen]
                    if abs(cp) <= args.max_cp:
                        kept.append(f"{fen} ; book{args.book_plies}+{args.plies - args.book_plies} "
                                    f"sf_d{args.depth} {cp}")
                print(f"{len(kept)}/{args.count} kept of {tried} searched, "
                      f"{time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    finally:
        for ev in evaluators:
            ev.close()
    with open(args.out, "w") as f:
        f.write(f"# {args.count} balanced openings: scripts/make-openings.py --count {args.count} "
                f"--seed {args.seed} --plies {args.plies} --book-plies {args.book_plies} "
                f"--depth {args.depth} --max-cp {args.max_cp}\n")
        f.write("# (gnuchess-book 1.02, Stockfish 15.1 from Debian; "
                f"{len(kept)} kept of {tried} searched)\n")
        for line in kept:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
