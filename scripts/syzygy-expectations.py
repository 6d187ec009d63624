#!/usr/bin/env python3
"""Writes the Syzygy expectations kaissa's tablebase test checks against:
random legal 3- and 4-man positions (no castling rights, some with an
en-passant square) with python-chess's WDL and DTZ probes.

    pip install chess==1.11.2
    scripts/fetch-syzygy.sh tests/data/syzygy
    python3 scripts/syzygy-expectations.py tests/data/syzygy > tests/data/syzygy-probes.txt

Each line: FEN;WDL;DTZ (WDL -2..2 as if the position were reached by a
capture or pawn move, DTZ in plies, both from the side to move's view).
The seed is fixed: the same tables give the same file.
"""
import random
import sys

import chess
import chess.syzygy

PIECES = "QRBNP"


def random_position(rng):
    """A legal position with the kings and 1 or 2 more pieces."""
    while True:
        board = chess.Board(None)
        extra = rng.choice([1, 2, 2])
        squares = rng.sample(chess.SQUARES, 2 + extra)
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        for sq in squares[2:]:
            symbol = rng.choice(PIECES)
            color = rng.random() < 0.6
            board.set_piece_at(sq, chess.Piece.from_symbol(symbol if color else symbol.lower()))
        board.turn = rng.random() < 0.5
        if board.is_valid():
            return board


def en_passant_position(rng):
    """A legal position just after a double pawn step that can be taken."""
    while True:
        board = chess.Board(None)
        file = rng.randrange(8)
        side = rng.choice([-1, 1])
        if not 0 <= file + side < 8:
            continue
        # White just played a double step; Black's pawn stands beside it.
        board.set_piece_at(chess.square(file, 3), chess.Piece(chess.PAWN, chess.WHITE))
        board.set_piece_at(chess.square(file + side, 3), chess.Piece(chess.PAWN, chess.BLACK))
        free = [s for s in chess.SQUARES if board.piece_at(s) is None
                and s not in (chess.square(file, 2), chess.square(file, 1))]
        wk, bk = rng.sample(free, 2)
        board.set_piece_at(wk, chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(bk, chess.Piece(chess.KING, chess.BLACK))
        board.turn = chess.BLACK
        board.ep_square = chess.square(file, 2)
        if board.is_valid() and board.has_legal_en_passant():
            return board


def main():
    tables = sys.argv[1]
    rng = random.Random(20261123)
    seen = set()
    with chess.syzygy.open_tablebase(tables) as tb:
        rows = []
        while len(rows) < 320:
            board = en_passant_position(rng) if len(rows) % 16 == 15 else random_position(rng)
            fen = board.fen()
            if fen in seen:
                continue
            seen.add(fen)
            rows.append(f"{fen};{tb.probe_wdl(board)};{tb.probe_dtz(board)}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
