#!/usr/bin/env python3
"""Labelled positions for Texel tuning: plays fast self-play games and
writes one line per position, `FEN;result` with result 1.0 / 0.5 / 0.0
from White's point of view.

Any UCI engine plays the games (kaissa itself: `--engine "target/release/kaissa uci"`;
Stockfish for quick high-quality labels). Openings come from
scripts/data/openings-8ply.epd plus a few random plies for variety, so
games differ. Positions in check, the first plies and positions after the
game was decided (adjudicated) are skipped. Needs python-chess (pip install
chess). Example, reproducible with the seed:

    python3 scripts/datagen.py --engine /usr/games/stockfish --nodes 4000 \
        --games 4000 --seed 1 --out /tmp/tune.epd
"""
import argparse
import random
import shlex
import sys
from pathlib import Path

import chess
import chess.engine


def openings(path):
    with open(path) as f:
        return [line.split(";")[0].strip() for line in f if line.strip()]


def play_game(engine, fen, rng, args):
    board = chess.Board(fen)
    for _ in range(rng.randint(0, args.random_plies)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    fens = []
    decisive_streak = 0
    drawish_streak = 0
    result = None
    while result is None:
        if board.is_game_over(claim_draw=True):
            result = board.result(claim_draw=True)
            break
        info = engine.analyse(board, chess.engine.Limit(nodes=args.nodes))
        score = info["score"].white()
        cp = score.score(mate_score=100000)
        if abs(cp) > 1000:
            decisive_streak += 1
        else:
            decisive_streak = 0
        drawish_streak = drawish_streak + 1 if abs(cp) < 10 and board.ply() > 120 else 0
        if decisive_streak >= 6:
            result = "1-0" if cp > 0 else "0-1"
            break
        if drawish_streak >= 12 or board.ply() > 400:
            result = "1/2-1/2"
            break
        if not board.is_check() and board.ply() >= 12:
            fens.append(board.fen())
        move = info["pv"][0] if info.get("pv") else engine.play(board, chess.engine.Limit(nodes=args.nodes)).move
        board.push(move)
    label = {"1-0": "1.0", "0-1": "0.0"}.get(result, "0.5")
    return [(f, label) for f in fens]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", required=True, help="UCI engine command line")
    ap.add_argument("--nodes", type=int, default=4000)
    ap.add_argument("--games", type=int, default=1000)
    ap.add_argument("--random-plies", type=int, default=4)
    ap.add_argument("--openings", default=str(Path(__file__).resolve().parent / "data" / "openings-8ply.epd"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    book = openings(args.openings)
    engine = chess.engine.SimpleEngine.popen_uci(shlex.split(args.engine))
    engine.configure({"Threads": 1, "Hash": 16})
    written = 0
    with open(args.out, "w") as out:
        for game in range(args.games):
            engine.protocol.send_line("ucinewgame")
            for fen, label in play_game(engine, rng.choice(book), rng, args):
                out.write(f"{fen};{label}\n")
                written += 1
            if game % 50 == 49:
                out.flush()
                print(f"games {game + 1} positions {written}", file=sys.stderr, flush=True)
    engine.quit()


if __name__ == "__main__":
    main()
