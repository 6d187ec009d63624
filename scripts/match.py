#!/usr/bin/env python3
"""Engine-vs-engine matches for kaissa, driven by python-chess.

Plays engine 1 ("A", by default target/release/kaissa uci) against engine 2
("B"), each speaking UCI or XBoard/CECP, from a balanced opening set. Every
opening is played twice with colours reversed. Clocks are kept by this
script with real wall time: a side whose clock runs out loses on time.
Illegal moves, crashes and hangs lose too, and are reported separately.

Results are printed from engine A's point of view: W/D/L, score, Elo
difference with a 95% error bar (trinomial, per-game variance), plus the
pentanomial (opening pair) view, LOS, time losses and termination reasons.

With --sprt ELO0,ELO1 the match is a sequential probability ratio test on
opening pairs (scripts/sprt.py) that stops as soon as it decides; --state
FILE keeps every finished pair so that a stopped run resumes.

Run with --help for all options; see scripts/README.md for examples.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import datetime
import hashlib
import json
import logging
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

try:
    import chess
    import chess.engine
    import chess.pgn
except ImportError:  # pragma: no cover
    sys.exit("python-chess is missing: run scripts/install-engines.sh or `pip install chess`")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sprt  # noqa: E402  (scripts/sprt.py)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ENGINE1 = f"{REPO / 'target' / 'release' / 'kaissa'} uci"
DEFAULT_OPENINGS = REPO / "scripts" / "data" / "openings-8ply.epd"
# The default for --sprt: 10,000 openings, 20,000 games before they repeat.
DEFAULT_SPRT_OPENINGS = REPO / "scripts" / "data" / "openings-8ply-10k.epd"
DEFAULT_SPRT_GAMES = 20000

# Extra wall time we wait for a move after the mover's clock (plus margin)
# has run out before declaring the engine hung and killing it. The game is
# lost on time either way; this only decides whether the process is reused.
HANG_GRACE = 3.0
INIT_TIMEOUT = 20.0

LOG = logging.getLogger("match")


# --------------------------------------------------------------------------
# XBoard engines without "setboard" (e.g. Fairy-Max): translate to "edit".
# --------------------------------------------------------------------------

class _Features(dict):
    """python-chess insists on feature setboard=1. We pretend it is there
    and translate setboard into the old edit-mode commands instead."""

    def get(self, key, default=None):  # type: ignore[override]
        if key == "setboard":
            return 1
        return super().get(key, default)


def edit_commands(fen: str) -> List[str]:
    """CECP edit-mode sequence equivalent to `setboard fen`.

    Sent right after new + force, as xboard itself does. Black to move is set
    up by playing a2a3 from the initial position first (the protocol's own
    idiom). Castling rights are whatever the engine infers from unmoved kings
    and rooks; an en-passant square cannot be expressed.
    """
    board = chess.Board(fen)
    lines = ["a2a3"] if board.turn == chess.BLACK else []
    lines += ["edit", "#"]
    for color in (chess.WHITE, chess.BLACK):
        if color == chess.BLACK:
            lines.append("c")
        for sq, piece in sorted(board.piece_map().items()):
            if piece.color == color:
                lines.append(piece.symbol().upper() + chess.square_name(sq))
    lines.append(".")
    return lines


class XBoardEngine(chess.engine.XBoardProtocol):
    def __init__(self) -> None:
        super().__init__()
        self.features = _Features()

    def send_line(self, line: str) -> None:
        if line.startswith("setboard ") and not dict.get(self.features, "setboard", 0):
            for sub in edit_commands(line[len("setboard "):]):
                super().send_line(sub)
        else:
            super().send_line(line)


# --------------------------------------------------------------------------
# Engines
# --------------------------------------------------------------------------

class FatalError(Exception):
    """Something that makes the whole run pointless (engine will not start,
    bad option...)."""


@dataclasses.dataclass
class EngineSpec:
    cmd: List[str]
    proto: str
    options: Dict[str, str]
    cwd: Optional[str]
    name: Optional[str]
    label: str  # "A" or "B"

    def describe(self) -> str:
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{shlex.join(self.cmd)} [{self.proto}]" + (f" {opts}" if opts else "")


class Player:
    """One running engine process, restarted on demand after a crash/hang."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.transport: Optional[asyncio.SubprocessTransport] = None
        self.protocol: Optional[chess.engine.Protocol] = None
        self.name = spec.name or os.path.basename(spec.cmd[0])
        self.dead = True

    async def start(self) -> None:
        cls = chess.engine.UciProtocol if self.spec.proto == "uci" else XBoardEngine
        try:
            self.transport, self.protocol = await cls.popen(
                self.spec.cmd, setpgrp=True, stderr=subprocess.DEVNULL, cwd=self.spec.cwd)
        except OSError as e:
            raise FatalError(f"engine {self.spec.label}: cannot start {shlex.join(self.spec.cmd)}: {e}") from e
        try:
            await asyncio.wait_for(self.protocol.initialize(), INIT_TIMEOUT)
            await self.protocol.configure(self._typed_options())
            await asyncio.wait_for(self.protocol.ping(), INIT_TIMEOUT)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, asyncio.TimeoutError) as e:
            self.kill()
            raise FatalError(f"engine {self.spec.label} ({shlex.join(self.spec.cmd)}, {self.spec.proto}): "
                             f"initialisation failed: {e!r}") from e
        if not self.spec.name:
            self.name = self.protocol.id.get("name") or self.name
        self.dead = False

    def _typed_options(self) -> Dict[str, object]:
        assert self.protocol is not None
        out: Dict[str, object] = {}
        for key, value in self.spec.options.items():
            opt = self.protocol.options.get(key)
            if opt is None:
                known = ", ".join(sorted(self.protocol.options)) or "none"
                raise chess.engine.EngineError(f"no option {key!r} (engine options: {known})")
            if opt.type == "check":
                out[key] = str(value).lower() in ("1", "true", "yes", "on")
            else:
                out[key] = value
        return out

    async def ensure(self) -> None:
        if self.dead:
            self.kill()
            await self.start()

    async def new_game(self, board: chess.Board, token: object) -> None:
        """Tell the engine a new game starts and wait until it is ready, so
        that hash clearing etc. is not charged to its clock. Uses
        python-chess internals; if they change we fall back to letting
        play() do it (then the setup time counts on the clock)."""
        for attempt in (1, 2):
            await self.ensure()
            p = self.protocol
            try:
                if isinstance(p, chess.engine.UciProtocol):
                    p._ucinewgame()
                    p.game = token
                elif isinstance(p, chess.engine.XBoardProtocol):
                    p._new(board, token, {})
                await asyncio.wait_for(p.ping(), INIT_TIMEOUT)
                return
            except (AttributeError, TypeError):
                return
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError, asyncio.TimeoutError) as e:
                # Died or wedged between games: restart it once.
                print(f"warning: engine {self.spec.label} ({self.name}) not ready for a new game ({e!r}), "
                      "restarting", file=sys.stderr, flush=True)
                self.kill()
        raise FatalError(f"engine {self.spec.label} ({self.name}) keeps failing at the start of a game")

    def kill(self) -> None:
        self.dead = True
        if self.transport is not None:
            # The engine runs in its own process group (setpgrp): kill the
            # whole group so wrapper scripts do not leave orphans behind.
            pid = self.transport.get_pid()
            try:
                if self.transport.get_returncode() is None:
                    os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                try:
                    self.transport.kill()
                except (ProcessLookupError, OSError):
                    pass
            try:
                self.transport.close()
            except Exception:
                pass
        self.transport = None
        self.protocol = None

    async def close(self) -> None:
        if self.protocol is not None and not self.dead:
            try:
                await asyncio.wait_for(self.protocol.quit(), 2.0)
            except Exception:
                pass
        self.kill()


# --------------------------------------------------------------------------
# Games
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Settings:
    base: Optional[float]
    inc: float
    nodes: Dict[str, Optional[int]]  # per side, "A" / "B"
    depth: Optional[int]
    timemargin: float
    move_timeout: float
    resign_moves: int
    resign_score: int
    draw_movenumber: int
    draw_moves: int
    draw_score: int
    maxplies: int


@dataclasses.dataclass
class GameResult:
    index: int           # 0-based game number
    opening: int         # 0-based opening index
    a_white: bool
    result: str          # "1-0", "0-1", "1/2-1/2", "*"
    reason: str
    failure: Optional[str]   # "time", "crash", "illegal", "hang", "error" (loser's failure)
    loser: Optional[str]     # "A" / "B" when failure is set
    pgn: Optional[chess.pgn.Game]
    move_times: Optional[Dict[str, List[float]]]
    plies: int
    # [moves, total seconds, longest] per side; filled from move_times, or
    # read back from a --state file (whose games have no move lists).
    time_stats: Optional[Dict[str, List[float]]] = None
    # Each side's clock (seconds) when the game ended; None without a clock.
    clock_end: Optional[Dict[str, float]] = None

    def __post_init__(self) -> None:
        if self.time_stats is None and self.move_times is not None:
            self.time_stats = {who: [len(v), sum(v), max(v, default=0.0)]
                               for who, v in self.move_times.items()}

    def record(self) -> dict:
        """What a --state file keeps of the game."""
        return {"game": self.index, "opening": self.opening, "a_white": self.a_white,
                "result": self.result, "reason": self.reason, "failure": self.failure,
                "loser": self.loser, "plies": self.plies, "times": self.time_stats,
                "clock_end": self.clock_end}

    @classmethod
    def from_record(cls, d: dict) -> "GameResult":
        return cls(d["game"], d["opening"], d["a_white"], d["result"], d["reason"], d["failure"],
                   d["loser"], None, None, d["plies"], d["times"], d.get("clock_end"))

    @property
    def a_score(self) -> Optional[float]:
        if self.result == "1/2-1/2":
            return 0.5
        if self.result == "1-0":
            return 1.0 if self.a_white else 0.0
        if self.result == "0-1":
            return 0.0 if self.a_white else 1.0
        return None


def _cp(score: Optional[chess.engine.PovScore], color: chess.Color) -> Optional[int]:
    if score is None:
        return None
    return score.pov(color).score(mate_score=100000)


def _fmt_score(cp: Optional[int]) -> str:
    if cp is None:
        return "?"
    if abs(cp) >= 90000:
        n = 100000 - abs(cp)
        return ("+M" if cp > 0 else "-M") + str(n)
    return f"{cp / 100:+.2f}"


async def play_game(idx: int, opening_idx: int, fen: str, a_white: bool,
                    pa: Player, pb: Player, st: Settings, tc_str: str) -> GameResult:
    start = chess.Board(fen)
    board = start.copy()
    token = object()
    players = {chess.WHITE: pa if a_white else pb, chess.BLACK: pb if a_white else pa}
    label = {chess.WHITE: "A" if a_white else "B", chess.BLACK: "B" if a_white else "A"}
    clocks = {chess.WHITE: st.base, chess.BLACK: st.base}
    scores: Dict[chess.Color, List[Optional[int]]] = {chess.WHITE: [], chess.BLACK: []}
    move_times: Dict[str, List[float]] = {"A": [], "B": []}
    comments: List[str] = []

    for c in (chess.WHITE, chess.BLACK):
        await players[c].new_game(start, token)

    result, reason, failure, loser = "*", "", None, None

    def lose(color: chess.Color, why: str, kind: Optional[str] = None) -> None:
        nonlocal result, reason, failure, loser
        result = "0-1" if color == chess.WHITE else "1-0"
        reason = why
        failure, loser = kind, (label[color] if kind else None)

    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            result = outcome.result()
            reason = {
                chess.Termination.CHECKMATE: ("White" if outcome.winner else "Black") + " mates",
                chess.Termination.STALEMATE: "stalemate",
                chess.Termination.INSUFFICIENT_MATERIAL: "insufficient material",
                chess.Termination.FIFTY_MOVES: "fifty-move rule",
                chess.Termination.THREEFOLD_REPETITION: "threefold repetition",
                chess.Termination.SEVENTYFIVE_MOVES: "seventy-five-move rule",
                chess.Termination.FIVEFOLD_REPETITION: "fivefold repetition",
            }.get(outcome.termination, outcome.termination.name.lower())
            break
        if st.maxplies and len(board.move_stack) >= st.maxplies:
            result, reason = "1/2-1/2", f"adjudication: max plies ({st.maxplies})"
            break

        turn = board.turn
        player = players[turn]
        name = player.name
        if st.base is not None:
            limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                       white_inc=st.inc, black_inc=st.inc, clock_id=token,
                                       nodes=st.nodes[label[turn]], depth=st.depth)
            wait = max(0.0, clocks[turn]) + st.timemargin + HANG_GRACE
        else:
            limit = chess.engine.Limit(nodes=st.nodes[label[turn]], depth=st.depth)
            wait = st.move_timeout

        t0 = time.monotonic()
        try:
            res = await asyncio.wait_for(
                player.protocol.play(board, limit, game=token, info=chess.engine.INFO_SCORE),
                wait)
        except asyncio.TimeoutError:
            elapsed = time.monotonic() - t0
            player.kill()
            if st.base is not None:
                if board.has_insufficient_material(not turn):
                    result, reason = "1/2-1/2", f"{name} hangs/flags, opponent cannot mate"
                else:
                    lose(turn, f"{name} loses on time (no reply after {elapsed:.1f}s)", "time")
            else:
                lose(turn, f"{name} hangs (no move after {elapsed:.0f}s)", "hang")
            break
        except chess.engine.EngineTerminatedError as e:
            player.kill()
            lose(turn, f"{name} crashed/exited ({e})", "crash")
            break
        except chess.engine.EngineError as e:
            msg = str(e)
            player.kill()  # state unknown: restart for the next game
            if "illegal" in msg.lower() or "invalid" in msg.lower() or "expected" in msg.lower():
                lose(turn, f"{name} makes an illegal move ({msg})", "illegal")
            else:
                lose(turn, f"{name} protocol error ({msg})", "error")
            break
        elapsed = time.monotonic() - t0
        move_times[label[turn]].append(elapsed)

        if st.base is not None:
            clocks[turn] -= elapsed
            if clocks[turn] < -st.timemargin:
                over = -clocks[turn]
                if board.has_insufficient_material(not turn):
                    result, reason = "1/2-1/2", f"{name} flags ({over * 1000:.0f} ms over), opponent cannot mate"
                else:
                    lose(turn, f"{name} loses on time ({over * 1000:.0f} ms over)", "time")
                break
            clocks[turn] += st.inc

        if res.resigned:
            lose(turn, f"{name} resigns")
            break
        mv = res.move
        if mv is None or mv not in board.legal_moves:
            player.kill()
            lose(turn, f"{name} makes no/illegal move ({mv})", "illegal")
            break

        cp = _cp(res.info.get("score"), turn)
        scores[turn].append(cp)
        depth = res.info.get("depth")
        comments.append(f"{_fmt_score(cp)}/{depth if depth is not None else '?'} {elapsed:.2f}s")
        board.push(mv)

        # Adjudication on engine scores (both sides must agree).
        if st.resign_moves > 0:
            done = False
            for c in (chess.WHITE, chess.BLACK):
                mine, theirs = scores[c][-st.resign_moves:], scores[not c][-st.resign_moves:]
                if (len(mine) == st.resign_moves and len(theirs) == st.resign_moves
                        and all(s is not None and s <= -st.resign_score for s in mine)
                        and all(s is not None and s >= st.resign_score for s in theirs)):
                    lose(c, f"adjudication: {players[c].name} is lost (both engines agree)")
                    done = True
                    break
            if done:
                break
        if st.draw_moves > 0 and board.fullmove_number >= st.draw_movenumber:
            w, b = scores[chess.WHITE][-st.draw_moves:], scores[chess.BLACK][-st.draw_moves:]
            if (len(w) == st.draw_moves and len(b) == st.draw_moves
                    and all(s is not None and abs(s) <= st.draw_score for s in w + b)):
                result, reason = "1/2-1/2", "adjudication: draw (scores near 0)"
                break

    # PGN
    game = chess.pgn.Game()
    game.setup(start)
    game.headers["Event"] = "kaissa match"
    game.headers["Site"] = "local"
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(idx + 1)
    game.headers["White"] = players[chess.WHITE].name
    game.headers["Black"] = players[chess.BLACK].name
    game.headers["Result"] = result
    game.headers["TimeControl"] = tc_str
    game.headers["Termination"] = {"time": "time forfeit", "crash": "abandoned", "hang": "stalled connection",
                                   "illegal": "illegal move", "error": "abandoned"}.get(
        failure or "", "adjudication" if reason.startswith("adjudication") else "normal")
    game.headers["PlyCount"] = str(len(board.move_stack))
    node = game
    for mv, com in zip(board.move_stack, comments):
        node = node.add_variation(mv, comment=com)
    node.comment = (node.comment + " " if node.comment else "") + reason
    clock_end = None
    if st.base is not None:
        clock_end = {label[c]: clocks[c] for c in (chess.WHITE, chess.BLACK)}
    return GameResult(idx, opening_idx, a_white, result, reason, failure, loser, game, move_times,
                      len(board.move_stack), clock_end=clock_end)


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------

Z95 = 1.959963984540054


def elo_from_score(s: float) -> float:
    if s <= 0.0:
        return -math.inf
    if s >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


def elo_with_error(w: int, d: int, l: int) -> Tuple[float, float, float]:
    """Elo difference, half-width of the 95% interval and LOS (trinomial).

    s = (W + D/2)/N; per-game variance var = [W(1-s)^2 + D(1/2-s)^2 + L s^2]/N;
    interval s +- 1.96 sqrt(var/N) mapped through Elo(s) = -400 log10(1/s - 1);
    error = (Elo(hi) - Elo(lo))/2 as cutechess-cli prints it.
    """
    n = w + d + l
    if n == 0:
        return 0.0, math.inf, 0.5
    s = (w + 0.5 * d) / n
    var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + l * s ** 2) / n
    delta = Z95 * math.sqrt(var / n)
    lo, hi = s - delta, s + delta
    err = (elo_from_score(hi) - elo_from_score(lo)) / 2 if 0 < lo and hi < 1 else math.inf
    los = 0.5 * (1 + math.erf((w - l) / math.sqrt(2 * (w + l)))) if w + l else 0.5
    return elo_from_score(s), err, los


def pentanomial(pairs: List[float]) -> List[int]:
    """Counts [LL, LD, DD+WL, WD, WW] of opening-pair scores (each in 0..2)."""
    penta = [0] * 5
    for p in pairs:
        penta[int(round(p * 2))] += 1
    return penta


def elo_pentanomial(pairs: List[float]) -> Tuple[float, float]:
    """Elo and 95% half-width from opening-pair scores (each in 0..2).
    (sprt.elo_estimate is the same with fishtest's 0.001 in empty cells.)"""
    n = len(pairs)
    if n < 2:
        return math.nan, math.inf
    x = [p / 2 for p in pairs]
    s = sum(x) / n
    var = sum((v - s) ** 2 for v in x) / n
    delta = Z95 * math.sqrt(var / n)
    lo, hi = s - delta, s + delta
    err = (elo_from_score(hi) - elo_from_score(lo)) / 2 if 0 < lo and hi < 1 else math.inf
    return elo_from_score(s), err


def fmt_elo(e: float, err: float) -> str:
    if math.isnan(e):
        return "n/a"
    e = 0.0 if abs(e) < 0.05 else e  # no "-0.0"
    es = f"{e:+.1f}" if math.isfinite(e) else ("+inf" if e > 0 else "-inf")
    return f"{es} +/- {err:.1f}" if math.isfinite(err) else f"{es} +/- inf"


class Tally:
    def __init__(self) -> None:
        # (game index, opening, A's score) of every game added
        self.results: List[Tuple[int, int, Optional[float]]] = []
        self.w = self.d = self.l = 0
        self.failures: Dict[str, collections.Counter] = {"A": collections.Counter(), "B": collections.Counter()}
        self.reasons: collections.Counter = collections.Counter()
        self.times: Dict[str, List[float]] = {"A": [0, 0.0, 0.0], "B": [0, 0.0, 0.0]}  # moves, total, max
        # Clock left at game end, games with a clock: count, total, least.
        self.clock_end: Dict[str, List[float]] = {"A": [0, 0.0, math.inf], "B": [0, 0.0, math.inf]}

    def add(self, r: GameResult) -> None:
        self.results.append((r.index, r.opening, r.a_score))
        sc = r.a_score
        if sc == 1.0:
            self.w += 1
        elif sc == 0.5:
            self.d += 1
        elif sc == 0.0:
            self.l += 1
        if r.failure:
            self.failures[r.loser][r.failure] += 1
        key = r.reason
        for who in ("A", "B"):
            n, total, longest = r.time_stats[who] if r.time_stats else (0, 0.0, 0.0)
            t = self.times[who]
            t[0] += n
            t[1] += total
            t[2] = max(t[2], longest)
            if r.clock_end is not None:
                c = self.clock_end[who]
                c[0] += 1
                c[1] += r.clock_end[who]
                c[2] = min(c[2], r.clock_end[who])
        # Strip per-game numbers so reasons aggregate (but not a name's "(2)").
        if "loses on time" in key:
            key = key.split(" loses on time")[0] + " loses on time"
        else:
            m = re.search(r" \((?!\d+\))", key)
            key = key[:m.start()] if m else key
        self.reasons[key] += 1

    @property
    def n(self) -> int:
        return self.w + self.d + self.l

    def score_line(self, na: str, nb: str) -> str:
        n = self.n
        s = (self.w + 0.5 * self.d) / n if n else 0.0
        return f"Score of {na} vs {nb}: {self.w} - {self.l} - {self.d}  [{s:.3f}] {n}"

    def pairs(self) -> List[float]:
        by_open: Dict[Tuple[int, int], List[float]] = collections.defaultdict(list)
        for index, opening, score in self.results:
            if score is not None:
                by_open[(index // 2, opening)].append(score)
        return [sum(v) for v in by_open.values() if len(v) == 2]

    def summary(self, na: str, nb: str) -> dict:
        e, err, los = elo_with_error(self.w, self.d, self.l)
        pairs = self.pairs()
        pe, perr = elo_pentanomial(pairs)
        penta = pentanomial(pairs)

        def tstats(v: List[float]) -> dict:
            return {"moves": v[0], "avg": (v[1] / v[0]) if v[0] else 0.0, "max": v[2]}

        return {
            "engine1": na, "engine2": nb, "games": self.n, "wins": self.w, "draws": self.d, "losses": self.l,
            "score": (self.w + 0.5 * self.d) / self.n if self.n else None,
            "elo": e, "elo_error95": err, "los": los,
            "pentanomial": penta, "elo_penta": pe, "elo_penta_error95": perr,
            "time_losses": {"A": self.failures["A"]["time"], "B": self.failures["B"]["time"]},
            "failures": {k: dict(v) for k, v in self.failures.items()},
            "reasons": dict(self.reasons),
            "move_time": {"A": tstats(self.times["A"]), "B": tstats(self.times["B"])},
            "clock_end": {who: {"games": c[0], "avg": c[1] / c[0], "min": c[2]}
                          for who, c in self.clock_end.items() if c[0]},
        }


def print_report(t: Tally, na: str, nb: str, header: str) -> dict:
    s = t.summary(na, nb)
    print()
    print(f"=== {header}")
    if t.n == 0:
        print("no games finished")
        return s
    print(f"W/D/L ({na} vs {nb}): {t.w}/{t.d}/{t.l}   score {100 * s['score']:.1f}%   "
          f"draws {100 * t.d / t.n:.1f}%   games {t.n}")
    print(f"Elo difference: {fmt_elo(s['elo'], s['elo_error95'])} (95%, trinomial)   LOS {100 * s['los']:.1f}%")
    pn = s["pentanomial"]
    if sum(pn):
        print(f"Pentanomial [0, 0.5, 1, 1.5, 2] per opening pair: {pn}   "
              f"Elo {fmt_elo(s['elo_penta'], s['elo_penta_error95'])}")
    fa, fb = t.failures["A"], t.failures["B"]
    print(f"Time losses: {na} {fa['time']}, {nb} {fb['time']}")
    other_a = {k: v for k, v in fa.items() if k != "time"}
    other_b = {k: v for k, v in fb.items() if k != "time"}
    if other_a or other_b:
        print(f"Crashes/illegal/hangs: {na} {other_a or 0}, {nb} {other_b or 0}")
    mt = s["move_time"]
    print(f"Move time: {na} avg {mt['A']['avg'] * 1000:.0f} ms max {mt['A']['max'] * 1000:.0f} ms "
          f"({mt['A']['moves']} moves); {nb} avg {mt['B']['avg'] * 1000:.0f} ms max "
          f"{mt['B']['max'] * 1000:.0f} ms ({mt['B']['moves']} moves)")
    ce = s["clock_end"]
    if ce:
        print("Clock left at game end: " + "; ".join(
            f"{n} avg {ce[w]['avg']:.2f} s min {ce[w]['min']:.2f} s"
            for w, n in (("A", na), ("B", nb)) if w in ce))
    print("Terminations:")
    for k, v in t.reasons.most_common():
        print(f"  {v:4d}  {k}")
    return s


# --------------------------------------------------------------------------
# --state: finished games kept on disk, so that a stopped run resumes
# --------------------------------------------------------------------------

STATE_VERSION = 1


def file_digest(path: os.PathLike) -> str:
    """First 16 hex digits of the file's sha256."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def named_files(spec: EngineSpec) -> Dict[str, str]:
    """Digests of the files an engine's command line and options name (its
    binary, a script it runs, a net given as an option), so that a binary
    rebuilt at the same path is noticed when a run resumes."""
    base = spec.cwd or os.getcwd()
    found: List[Tuple[str, str]] = []
    if os.sep not in spec.cmd[0]:
        exe = shutil.which(spec.cmd[0])
        if exe:
            found.append((spec.cmd[0], exe))
    for token in spec.cmd + list(spec.options.values()):
        path = os.path.join(base, token)  # an absolute token stays as it is
        if os.path.isfile(path):
            found.append((token, path))
    out: Dict[str, str] = {}
    for token, path in found:
        if token not in out:
            try:
                out[token] = file_digest(path)
            except OSError:
                pass
    return out


def _flatten(d: dict, prefix: str = "") -> Dict[str, object]:
    out: Dict[str, object] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_differences(old: dict, new: dict) -> List[str]:
    a, b = _flatten(old), _flatten(new)
    return [f"{k}: {json.dumps(a.get(k))} in the state file, {json.dumps(b.get(k))} now"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


class StateFile:
    """JSON lines. The first holds the settings that decide the games
    ({"kaissa_match_state": 1, "config": {...}, ...}); each further line is
    one finished opening pair, {"pair": k, "games": [game, game]}, appended
    with a single write() and fsync'd once both games are over. A line cut
    short by a kill (no newline at the end) is dropped when the file is read
    back, so a stopped run loses at most the pairs it was playing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: Optional[int] = None
        self.good_size = 0

    def load(self) -> Tuple[Optional[dict], Dict[int, GameResult]]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, {}
        except OSError as e:
            raise FatalError(f"--state {self.path}: {e}") from e
        end = data.rfind(b"\n") + 1
        if end < len(data):
            print(f"warning: {self.path}: dropping an unfinished last line ({len(data) - end} bytes)",
                  file=sys.stderr)
        self.good_size = end
        header: Optional[dict] = None
        games: Dict[int, GameResult] = {}
        for lineno, raw in enumerate(data[:end].split(b"\n")[:-1], 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
                if header is None:
                    if obj.get("kaissa_match_state") != STATE_VERSION:
                        raise ValueError("not a match.py state file (version 1)")
                    header = obj
                    continue
                for rec in obj["games"]:
                    r = GameResult.from_record(rec)
                    games[r.index] = r
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise FatalError(f"--state {self.path}: line {lineno} is damaged ({e}); "
                                 "fix or remove the file") from e
        return header, games

    def create(self, header: dict) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(header, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.good_size = self.path.stat().st_size

    def open_append(self) -> None:
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        os.ftruncate(self.fd, self.good_size)

    def append(self, obj: dict) -> None:
        assert self.fd is not None
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        while line:
            line = line[os.write(self.fd, line):]
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def run_config(args: argparse.Namespace, specs: List[EngineSpec], st: Settings, openings: List[str],
               openings_path: Path, seed: Optional[int], test: Optional[sprt.Sprt]) -> dict:
    """Everything that decides which games are played and how they are
    scored: a resumed run must match it (--games, --concurrency and the
    output options may change)."""
    cfg = {
        "engines": {s.label: {"cmd": s.cmd, "proto": s.proto, "options": s.options, "cwd": s.cwd,
                              "files": named_files(s)} for s in specs},
        "limits": {"tc": [st.base, st.inc] if st.base is not None else None, "nodes": dict(st.nodes),
                   "depth": st.depth, "timemargin_ms": args.timemargin, "move_timeout": st.move_timeout},
        "adjudication": {"resign_moves": st.resign_moves, "resign_score": st.resign_score,
                         "draw_movenumber": st.draw_movenumber, "draw_moves": st.draw_moves,
                         "draw_score": st.draw_score, "maxplies": st.maxplies},
        "openings": {"sha256": file_digest(openings_path), "positions": len(openings),
                     "shuffle": bool(args.shuffle), "seed": seed if args.shuffle else None,
                     "start": args.start},
        **({"prior": args.prior} if args.prior else {}),
        "sprt": None if test is None else {"elo0": test.elo0, "elo1": test.elo1, "alpha": test.alpha,
                                           "beta": test.beta, "elo_model": test.model},
    }
    return json.loads(json.dumps(cfg))  # as it reads back from the file


def wdl_with_prior(t: Tally, prior_wdl: List[int]) -> List[int]:
    """This run's W/D/L plus the --prior ones."""
    return [a + b for a, b in zip((t.w, t.d, t.l), prior_wdl)]


def print_sprt(test: sprt.Sprt, penta: List[int], t: Tally, prior_wdl: List[int], verdict: Optional[str],
               label: str, finished: bool, resumable: bool) -> dict:
    """The SPRT block of the final report, and the lines for a commit message.
    `penta` includes the --prior counts; `prior_wdl` is their W/D/L."""
    pairs = sum(penta)
    w, d, l = wdl_with_prior(t, prior_wdl)
    value = test.llr(penta)
    e, err, los = sprt.elo_estimate(penta)
    ne, nerr = sprt.nelo_estimate(penta)
    if verdict == "H1":
        outcome = "H1 accepted: PASS"
    elif verdict == "H0":
        outcome = "H0 accepted: FAIL"
    elif finished:
        outcome = "inconclusive (maximum games reached): no verdict"
    else:
        outcome = ("unfinished (stopped): rerun the same command to go on" if resumable
                   else "unfinished (stopped; without --state it cannot be resumed)")
    bounds = f"({test.lower:.2f},{test.upper:.2f})"
    elos = f"[{test.elo0:.2f},{test.elo1:.2f}]"
    unit = "Elo" if test.model == "logistic" else "nElo"
    print(f"--- SPRT {elos} {test.model} Elo (H0: {unit} = {test.elo0:g}, H1: {unit} = {test.elo1:g}), "
          f"alpha {test.alpha:g}, beta {test.beta:g}")
    print(f"LLR {value:.2f} {bounds}: {outcome}")
    print(f"Games {2 * pairs} ({pairs} pairs)   W/D/L {w}/{d}/{l}")
    print(f"Ptnml(0-2) [LL, LD, DD+WL, WD, WW]: {', '.join(map(str, penta))}")
    if pairs:
        print(f"Elo {fmt_elo(e, err)} (95%, pentanomial, logistic)   nElo {fmt_elo(ne, nerr)}   "
              f"LOS {100 * los:.1f}%")
    print("For the commit message:")
    word = {"H1": "Passed", "H0": "Failed"}.get(verdict or "", "Inconclusive" if finished else "Unfinished")
    print(f"    {word} SPRT {elos} {test.model} Elo, {label}")
    print(f"    LLR: {value:.2f} {bounds} {elos}")
    print(f"    Total: {2 * pairs} W: {w} L: {l} D: {d}")
    print(f"    Ptnml(0-2): {', '.join(map(str, penta))}")
    if pairs:
        print(f"    Elo: {fmt_elo(e, err)} (95%) LOS: {100 * los:.1f}%")
    return {"elo0": test.elo0, "elo1": test.elo1, "alpha": test.alpha, "beta": test.beta,
            "elo_model": test.model, "llr": value, "lower_bound": test.lower, "upper_bound": test.upper,
            "verdict": verdict, "pairs": pairs, "pentanomial": penta, "elo": e, "elo_error95": err,
            "nelo": ne, "nelo_error95": nerr, "los": los}


def describe_limits(tc: Optional[Sequence[float]], nodes: Dict[str, Optional[int]], depth: Optional[int]) -> str:
    """'tc 8+0.08', 'nodes 20000', 'nodes 4000/2000', 'depth 6' (or several):
    a run's limits, as its report and --summary print them."""
    return " ".join(x for x in (
        f"tc {tc[0]:g}+{tc[1]:g}" if tc else "",
        (f"nodes {nodes['A']}" if nodes["A"] == nodes["B"] else f"nodes {nodes['A'] or '-'}/{nodes['B'] or '-'}")
        if any(nodes.values()) else "",
        f"depth {depth}" if depth else "") if x)


def state_summary(path: Path) -> str:
    """--summary FILE: the totals of a --state file without playing: W/D/L,
    pentanomial, Elo and (for an SPRT) the LLR, with the file's own --prior
    counted, and the --start and --prior that go on from it elsewhere."""
    header, games = StateFile(path).load()
    if header is None:
        raise FatalError(f"--summary {path}: no such state file, or it is empty")
    try:
        return _state_summary(path, header, games)
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise FatalError(f"--summary {path}: the header line is damaged ({e!r})") from e


def _state_summary(path: Path, header: dict, games: Dict[int, GameResult]) -> str:
    cfg = header["config"]
    pairs: Dict[int, List[GameResult]] = {}
    for g, r in games.items():
        pairs.setdefault(g // 2, []).append(r)
    # Only whole pairs with two results count (as in an SPRT and a --prior).
    scored = [v for v in pairs.values() if len(v) == 2 and all(r.a_score is not None for r in v)]
    tally = Tally()
    for r in (r for rs in scored for r in rs):
        tally.add(r)
    penta = pentanomial([sum(r.a_score for r in rs) for rs in scored])
    prior_wdl, prior_penta = cfg.get("prior") or ([0, 0, 0], [0] * 5)
    total_wdl = wdl_with_prior(tally, prior_wdl)
    total_penta = [a + b for a, b in zip(penta, prior_penta)]

    names = " vs ".join(os.path.basename(e["cmd"][0]) for e in cfg["engines"].values())
    lim = cfg["limits"]
    limits = describe_limits(lim["tc"], lim["nodes"], lim["depth"])
    op = cfg["openings"]
    lines = [f"{path}: {names}, {limits}, {header.get('openings_file', '?')} from --start {op['start']}"]
    last = max(pairs, default=-1)
    unfinished = last + 1 - len(scored)
    lines.append(f"This file: {tally.n} games ({len(scored)} pairs) W/D/L {tally.w}/{tally.d}/{tally.l}  "
                 f"Ptnml {', '.join(map(str, penta))}"
                 + (f"  (unfinished or unscored below the last pair: {unfinished})" if unfinished else ""))
    if cfg.get("prior"):
        lines.append(f"With its --prior ({2 * sum(prior_penta)} earlier games): {2 * sum(total_penta)} games  "
                     f"W/D/L {'/'.join(map(str, total_wdl))}  Ptnml {', '.join(map(str, total_penta))}")
    if sum(total_penta):
        e, err, los = sprt.elo_estimate(total_penta)
        lines.append(f"Elo {fmt_elo(e, err)} (95%, pentanomial, logistic)   LOS {100 * los:.1f}%")
    t = cfg.get("sprt")
    if t:
        test = sprt.Sprt(t["elo0"], t["elo1"], t["alpha"], t["beta"], t["elo_model"])
        word = {"H1": "H1 accepted: PASS", "H0": "H0 accepted: FAIL"}.get(test.verdict(total_penta) or "",
                                                                          "no verdict")
        lines.append(f"SPRT [{test.elo0:.2f},{test.elo1:.2f}] {test.model}: LLR {test.llr(total_penta):.2f} "
                     f"({test.lower:.2f},{test.upper:.2f}), {word}")
    seed = f" --shuffle --seed {op['seed']}" if op.get("shuffle") else ""
    lines.append(f"To go on with a new --state file: --start {op['start'] + last + 1}{seed} --prior "
                 f"{','.join(map(str, total_wdl))}:{','.join(map(str, total_penta))}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Openings, arguments, main loop
# --------------------------------------------------------------------------

def load_openings(path: Path) -> List[str]:
    fens = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pos = line.split(";")[0].strip()
            parts = pos.split()
            try:
                if len(parts) >= 6 and parts[4].isdigit() and parts[5].isdigit():
                    board = chess.Board(" ".join(parts[:6]))
                else:
                    board, _ = chess.Board.from_epd(line)
            except ValueError as e:
                print(f"warning: {path}:{lineno}: bad position skipped ({e})", file=sys.stderr)
                continue
            if not board.is_valid() or board.is_game_over():
                print(f"warning: {path}:{lineno}: invalid or finished position skipped", file=sys.stderr)
                continue
            fens.append(board.fen())
    if not fens:
        raise FatalError(f"no usable positions in {path}")
    return fens


def parse_tc(s: str) -> Tuple[float, float]:
    """'10+0.1' -> (10.0, 0.1); '1:30+1' -> (90, 1); '60' -> (60, 0)."""
    base, _, inc = s.partition("+")
    if ":" in base:
        m, sec = base.split(":", 1)
        b = 60 * float(m) + float(sec)
    else:
        b = float(base)
    i = float(inc) if inc else 0.0
    if b <= 0 or i < 0:
        raise argparse.ArgumentTypeError(f"bad time control {s!r}")
    return b, i


def parse_sprt(s: str) -> Tuple[float, float]:
    """'0,5' -> (0.0, 5.0); '-5,0' -> (-5.0, 0.0)."""
    try:
        e0, e1 = (float(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ELO0,ELO1 (e.g. 0,5), got {s!r}")
    if not e0 < e1:
        raise argparse.ArgumentTypeError(f"need ELO0 < ELO1, got {s!r}")
    return e0, e1


def parse_prior(s: str) -> Tuple[List[int], List[int]]:
    """'W,D,L:LL,LD,DD,WD,WW' -> ([W, D, L], [LL, LD, DD, WD, WW]): the
    results of earlier runs of the same test (the lines a stopped --sprt
    printed), checked for consistency (games and points must agree)."""
    try:
        wdl_s, penta_s = s.split(":")
        wdl = [int(x) for x in wdl_s.split(",")]
        penta = [int(x) for x in penta_s.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected W,D,L:LL,LD,DD,WD,WW, got {s!r}")
    if len(wdl) != 3 or len(penta) != 5 or min(wdl + penta) < 0:
        raise argparse.ArgumentTypeError(f"expected 3 and 5 counts >= 0 (W,D,L:LL,LD,DD,WD,WW), got {s!r}")
    if sum(wdl) != 2 * sum(penta):
        raise argparse.ArgumentTypeError(f"{s!r}: W+D+L = {sum(wdl)} games, but the pentanomial counts "
                                         f"{sum(penta)} pairs ({2 * sum(penta)} games)")
    if 2 * wdl[0] + wdl[1] != sum(i * c for i, c in enumerate(penta)):
        raise argparse.ArgumentTypeError(f"{s!r}: the W/D/L and pentanomial counts give different scores")
    return wdl, penta


def parse_options(items: List[str], which: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for it in items or []:
        if "=" not in it:
            raise FatalError(f"--option{which} {it!r}: expected Name=value")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Play engine A against engine B (UCI or XBoard) with python-chess.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("engines")
    g.add_argument("--engine1", default=DEFAULT_ENGINE1, help="command line of engine A (the engine under test)")
    g.add_argument("--proto1", choices=["uci", "xboard"], default="uci")
    g.add_argument("--option1", action="append", metavar="NAME=VALUE", help="engine A option (repeatable)")
    g.add_argument("--name1", help="display name of engine A (default: engine's id)")
    g.add_argument("--cwd1", help="working directory for engine A")
    g.add_argument("--engine2", help="command line of engine B (opponent; required)")
    g.add_argument("--proto2", choices=["uci", "xboard"], default="uci")
    g.add_argument("--option2", action="append", metavar="NAME=VALUE", help="engine B option (repeatable)")
    g.add_argument("--name2", help="display name of engine B")
    g.add_argument("--cwd2", help="working directory for engine B")
    g.add_argument("--sf-elo", type=int, metavar="N",
                   help="set UCI_LimitStrength=true UCI_Elo=N on the side whose command is stockfish")
    g.add_argument("--sf-elo1", type=int, metavar="N", help="same, explicitly on engine A")
    g.add_argument("--sf-elo2", type=int, metavar="N", help="same, explicitly on engine B")

    g = p.add_argument_group("games")
    g.add_argument("--tc", type=parse_tc, metavar="BASE+INC",
                   help="time control in seconds, e.g. 10+0.1 (also M:SS+INC)")
    g.add_argument("--nodes", type=int, help="fixed node limit per move")
    g.add_argument("--nodes1", type=int, metavar="N", help="node limit of engine A only (overrides --nodes)")
    g.add_argument("--nodes2", type=int, metavar="N", help="node limit of engine B only (overrides --nodes)")
    g.add_argument("--depth", type=int, help="fixed depth limit per move")
    g.add_argument("--timemargin", type=int, default=0, metavar="MS",
                   help="tolerated clock overrun in milliseconds before a time loss")
    g.add_argument("--move-timeout", type=float, default=120.0, metavar="SEC",
                   help="with --nodes/--depth only: a move taking longer counts as a hang (loss)")
    g.add_argument("--games", type=int, default=None,
                   help="number of games (2 per opening; default 100); with --sprt the most to play "
                        f"(default {DEFAULT_SPRT_GAMES}, rounded up to whole pairs)")
    g.add_argument("--concurrency", type=int, default=1, help="games played in parallel")
    g.add_argument("--openings", type=Path, default=None,
                   help="EPD file, lines 'FEN ; comment' (default scripts/data/openings-8ply.epd; "
                        "with --sprt scripts/data/openings-8ply-10k.epd)")
    g.add_argument("--start", type=int, default=1, help="first opening to use (1-based, after shuffling)")
    g.add_argument("--shuffle", action="store_true", help="shuffle the openings")
    g.add_argument("--seed", type=int, default=None, help="seed for --shuffle")

    g = p.add_argument_group("SPRT and resuming")
    g.add_argument("--sprt", type=parse_sprt, metavar="ELO0,ELO1",
                   help="sequential probability ratio test on opening pairs of H0: Elo = ELO0 against "
                        "H1: Elo = ELO1 (Elo of engine A over B); stops when the LLR leaves the bounds. "
                        "Gainers: 0,5; simplifications: -5,0")
    g.add_argument("--alpha", type=float, default=0.05, help="SPRT false positive rate")
    g.add_argument("--beta", type=float, default=0.05, help="SPRT false negative rate")
    g.add_argument("--elo-model", choices=sprt.MODELS, default="logistic",
                   help="unit of the --sprt bounds: logistic Elo (as the Elo reports) or fishtest's "
                        "normalized Elo")
    g.add_argument("--prior", type=parse_prior, metavar="W,D,L:LL,LD,DD,WD,WW",
                   help="with --sprt: add the results of earlier runs of the same test (on another machine "
                        "or without --state; play this run from a later --start) to the LLR and the report")
    g.add_argument("--progress-every", type=int, default=20, metavar="PAIRS",
                   help="with --sprt: a progress line every this many pairs")
    g.add_argument("--state", type=Path, metavar="FILE",
                   help="keep every finished pair in FILE (JSON lines); if FILE exists, go on from it "
                        "(refused when the engines, options, limits, openings or SPRT differ)")
    g.add_argument("--summary", type=Path, metavar="FILE",
                   help="print the totals of a --state FILE (W/D/L, pentanomial, Elo, LLR, and the --start "
                        "and --prior that go on from it elsewhere) and exit, playing nothing")

    g = p.add_argument_group("adjudication")
    g.add_argument("--resign-moves", type=int, default=4,
                   help="resign adjudication when both engines agree for this many moves each (0=off)")
    g.add_argument("--resign-score", type=int, default=800, metavar="CP")
    g.add_argument("--draw-movenumber", type=int, default=40, help="draw adjudication only from this move on")
    g.add_argument("--draw-moves", type=int, default=8,
                   help="draw adjudication when both sides report |score|<=draw-score for this many moves (0=off)")
    g.add_argument("--draw-score", type=int, default=10, metavar="CP")
    g.add_argument("--maxplies", type=int, default=400,
                   help="adjudicate a draw after this many plies from the opening position (0=off)")
    g.add_argument("--no-adjudication", action="store_true", help="turn off resign/draw/maxplies adjudication")

    g = p.add_argument_group("output")
    g.add_argument("--pgn", type=Path, help="append every finished game to this PGN file")
    g.add_argument("--json", type=Path, help="write the final summary as JSON (used by ladder.sh)")
    g.add_argument("--quiet", action="store_true", help="no per-game lines, only the final report")
    g.add_argument("--report-every", type=int, default=0, metavar="N",
                   help="print the Elo estimate every N games (0=only at the end)")
    g.add_argument("--debug", type=Path, metavar="FILE", help="log all engine I/O (python-chess debug) to FILE")
    return p


async def run(args: argparse.Namespace) -> int:
    if not args.engine2:
        raise FatalError("give --engine2 (the opponent's command line)")
    nodes = {"A": args.nodes1 if args.nodes1 is not None else args.nodes,
             "B": args.nodes2 if args.nodes2 is not None else args.nodes}
    if args.tc is None and args.depth is None and None in nodes.values():
        raise FatalError("give a limit: --tc BASE+INC and/or --nodes N / --depth N "
                         "(--nodes1/--nodes2 only: both sides need one)")
    base, inc = args.tc if args.tc else (None, 0.0)
    test: Optional[sprt.Sprt] = None
    if args.sprt is not None:
        try:
            test = sprt.Sprt(args.sprt[0], args.sprt[1], args.alpha, args.beta, args.elo_model)
        except ValueError as e:
            raise FatalError(f"--sprt: {e}") from e
    if args.prior and test is None:
        raise FatalError("--prior adds earlier results to an SPRT: give --sprt too")
    games = args.games if args.games is not None else (DEFAULT_SPRT_GAMES if test else 100)
    if games < 1:
        raise FatalError("--games must be at least 1")
    if test and games % 2:
        games += 1  # whole pairs
    openings_path: Path = args.openings or (DEFAULT_SPRT_OPENINGS if test else DEFAULT_OPENINGS)
    # Pairs are the unit (of the PGN and the state file too) with --sprt or --state.
    by_pair = bool(test or args.state)

    # SIGTERM/SIGHUP end the run like Ctrl-C: report, then close the engines
    # (some, e.g. sjeng, spin at 100% CPU instead of exiting on a closed stdin).
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, me.cancel)
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    specs = []
    for i in ("1", "2"):
        cmd = shlex.split(getattr(args, f"engine{i}"))
        if not cmd:
            raise FatalError(f"--engine{i} is empty")
        specs.append(EngineSpec(cmd, getattr(args, f"proto{i}"), parse_options(getattr(args, f"option{i}"), i),
                                getattr(args, f"cwd{i}"), getattr(args, f"name{i}"), "AB"[int(i) - 1]))
    if args.sf_elo is not None:
        sf = [s for s in specs if "stockfish" in os.path.basename(s.cmd[0]).lower()]
        if len(sf) != 1:
            raise FatalError("--sf-elo: exactly one engine command must be stockfish; use --sf-elo1/--sf-elo2")
        sf[0].options.update({"UCI_LimitStrength": "true", "UCI_Elo": str(args.sf_elo)})
    for spec, v in ((specs[0], args.sf_elo1), (specs[1], args.sf_elo2)):
        if v is not None:
            spec.options.update({"UCI_LimitStrength": "true", "UCI_Elo": str(v)})
    for spec in specs:
        if spec.proto == "xboard" and nodes[spec.label] is not None and base is not None:
            raise FatalError("xboard engines cannot combine --nodes with --tc")

    openings = load_openings(openings_path)
    state = StateFile(args.state) if args.state else None
    header, loaded = state.load() if state else (None, {})
    seed = args.seed
    if args.shuffle and seed is None and state is not None:
        # The order must be the same when the run resumes: keep the seed.
        old = header["config"]["openings"].get("seed") if header else None
        seed = old if old is not None else random.randrange(1, 2 ** 31)
    if args.shuffle:
        random.Random(seed).shuffle(openings)
    first = max(0, args.start - 1)
    need = (games + 1) // 2
    if test and base is None and need > len(openings):
        # Deterministic engines replay a repeated opening move for move: the
        # SPRT would count the same pair twice.
        raise FatalError(f"--sprt at fixed nodes/depth: {games} games need {need} openings and "
                         f"{openings_path} has {len(openings)}; a repeated opening would replay the same "
                         f"games. Lower --games to {2 * len(openings)} or give a larger --openings file")
    if first + need > len(openings):
        print(f"warning: {need} openings needed from #{first + 1}, file has {len(openings)}: wrapping around",
              file=sys.stderr)

    st = Settings(base=base, inc=inc, nodes=nodes, depth=args.depth,
                  timemargin=args.timemargin / 1000.0, move_timeout=args.move_timeout,
                  resign_moves=0 if args.no_adjudication else args.resign_moves,
                  resign_score=args.resign_score, draw_movenumber=args.draw_movenumber,
                  draw_moves=0 if args.no_adjudication else args.draw_moves,
                  draw_score=args.draw_score, maxplies=0 if args.no_adjudication else args.maxplies)
    tc_str = f"{base:g}+{inc:g}" if base is not None else "-"
    limit_desc = describe_limits(None if base is None else (base, inc), nodes, args.depth)

    def opening_of(g: int) -> int:
        return (first + g // 2) % len(openings)

    if state is not None:
        cfg = run_config(args, specs, st, openings, openings_path, seed, test)
        if header is None:
            state.create({"kaissa_match_state": STATE_VERSION, "config": cfg,
                          "created": datetime.datetime.now().isoformat(timespec="seconds"),
                          "openings_file": str(openings_path), "command": sys.argv})
        else:
            diffs = config_differences(header["config"], cfg)
            if diffs:
                raise FatalError(
                    f"--state {args.state} was written by a run with other settings:\n  " + "\n  ".join(diffs) +
                    "\nResume with the same engines (and binaries), options, limits, adjudication, openings "
                    "and SPRT bounds (--games, --concurrency and the output options may change), "
                    "or give a new --state file.")
        for g, r in loaded.items():
            if r.opening != opening_of(g) or r.a_white != (g % 2 == 0):
                raise FatalError(f"--state {args.state}: game {g + 1} was played from opening {r.opening + 1} "
                                 f"(A {'white' if r.a_white else 'black'}), this run would use opening "
                                 f"{opening_of(g) + 1}: the file does not belong to these openings")
        state.open_append()
    loaded = {g: r for g, r in loaded.items() if g < games}
    if test:  # half pairs cannot be scored: play them again
        loaded = {g: r for g, r in loaded.items() if (g ^ 1) in loaded}

    conc = max(1, min(args.concurrency, games))
    pending = [g for g in range(games) if g not in loaded]
    queue: asyncio.Queue = asyncio.Queue()
    for g in pending:
        queue.put_nowait(g)

    tally = Tally()
    results: Dict[int, GameResult] = dict(loaded)  # finished games
    flushed = set(loaded)                           # games whose pair went to the PGN and state file
    pgn_wait: Dict[int, chess.pgn.Game] = {}        # finished games of pairs still being played
    prior_wdl, prior_penta = args.prior or ([0, 0, 0], [0] * 5)
    penta = list(prior_penta)                       # SPRT: pentanomial of the scored pairs (and --prior)
    scored_pairs = 0                                # SPRT: pairs 0 .. scored_pairs-1 are scored
    decision: Optional[str] = None
    stop = asyncio.Event()
    played_now = 0
    names = {"A": specs[0].name or os.path.basename(specs[0].cmd[0]),
             "B": specs[1].name or os.path.basename(specs[1].cmd[0])}
    pgn_file = open(args.pgn, "a") if args.pgn else None
    all_players: List[Player] = []
    started = time.monotonic()

    def progress_line() -> str:
        e, err, _ = sprt.elo_estimate(penta)
        rate = played_now / max(1e-9, time.monotonic() - started) * 3600
        w, d, l = wdl_with_prior(tally, prior_wdl)
        return (f"SPRT {2 * sum(penta)} games ({sum(penta)} pairs): W/D/L {w}/{d}/{l}  "
                f"Ptnml {penta}  Elo {fmt_elo(e, err)}  LLR {test.llr(penta):.2f} "
                f"({test.lower:.2f}, {test.upper:.2f})" + (f"  {rate:.0f} games/h" if played_now else ""))

    def score_pairs(replaying: bool = False) -> None:
        """SPRT: score finished pairs in the order of their index, never in
        the order they finish (a pair of short games must not be counted
        before a long pair that started earlier), and stop at the first
        pair whose LLR leaves the bounds."""
        nonlocal scored_pairs, decision
        while decision is None and 2 * scored_pairs < games:
            g = 2 * scored_pairs
            if g not in results or g + 1 not in results:
                break
            r0, r1 = results[g], results[g + 1]
            tally.add(r0)
            tally.add(r1)
            if r0.a_score is not None and r1.a_score is not None:
                penta[int(round(2 * (r0.a_score + r1.a_score)))] += 1
            scored_pairs += 1
            decision = test.verdict(penta)
            if not replaying and (decision or scored_pairs % max(1, args.progress_every) == 0):
                print(progress_line(), flush=True)
        if decision:
            stop.set()

    def game_done(r: GameResult) -> None:
        nonlocal played_now
        played_now += 1
        results[r.index] = r
        if r.pgn is not None:
            r.pgn.headers["Opening"] = f"#{r.opening + 1}"
        if not by_pair:
            if pgn_file and r.pgn is not None:
                print(r.pgn, file=pgn_file, end="\n\n", flush=True)
        else:
            if r.pgn is not None:
                pgn_wait[r.index] = r.pgn
            k = r.index // 2
            members = [x for x in (2 * k, 2 * k + 1) if x < games]
            if all(x in results for x in members):
                new = [x for x in members if x not in flushed]
                if state is not None:
                    state.append({"pair": k, "games": [results[x].record() for x in new]})
                if pgn_file:
                    for x in new:
                        if x in pgn_wait:
                            print(pgn_wait[x], file=pgn_file, end="\n\n")
                    pgn_file.flush()
                for x in new:
                    pgn_wait.pop(x, None)
                flushed.update(new)
        r.pgn = None  # thousands of games: keep only what the report needs
        r.move_times = None
        if test:
            score_pairs()
        else:
            tally.add(r)

    # Start one pair first so that a bad command or option fails fast, once.
    async def make_pair() -> Tuple[Player, Player]:
        pa, pb = Player(specs[0]), Player(specs[1])
        all_players.extend((pa, pb))
        await pa.start()
        await pb.start()
        return pa, pb

    try:
        first_pair = await make_pair()
    except BaseException:
        await asyncio.gather(*(p.close() for p in all_players), return_exceptions=True)
        if state is not None:
            state.close()
        raise
    for pl in first_pair:
        if nodes[pl.spec.label] is not None:
            if isinstance(pl.protocol, chess.engine.XBoardProtocol) and dict.get(pl.protocol.features, "nps", 0) != 1:
                await asyncio.gather(*(p.close() for p in all_players))
                raise FatalError(f"engine {pl.spec.label} ({pl.name}) is xboard without feature nps=1: "
                                 "it cannot search a node count (it would read 'st N' as N seconds)")
    names["A"], names["B"] = first_pair[0].name, first_pair[1].name
    if names["A"] == names["B"]:
        names["B"] += " (2)"
        first_pair[1].name = names["B"]
    print(f"A: {names['A']}: {specs[0].describe()}")
    print(f"B: {names['B']}: {specs[1].describe()}")
    print(f"{'at most ' if test else ''}{games} games, {limit_desc}, concurrency {conc}, openings {openings_path} "
          f"({len(openings)}, from #{first + 1}{f', shuffled with seed {seed}' if args.shuffle else ''})", flush=True)
    if test:
        print(f"SPRT {test.describe()}: H1 accepted (pass) at LLR >= {test.upper:.2f}, "
              f"H0 accepted (fail) at LLR <= {test.lower:.2f}", flush=True)
    if loaded:
        print(f"Resuming from {args.state}: {len(loaded)} games already played", flush=True)
        if test:
            score_pairs(replaying=True)
            print(progress_line(), flush=True)
        else:
            for g in sorted(loaded):
                tally.add(loaded[g])
    elif state is not None:
        print(f"Finished pairs go to {args.state} (rerun the same command to resume)", flush=True)

    async def worker(pair: Optional[Tuple[Player, Player]]) -> None:
        pa, pb = pair if pair else await make_pair()
        pa.name, pb.name = names["A"], names["B"]
        while not stop.is_set():
            try:
                g = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            oi = opening_of(g)
            a_white = g % 2 == 0
            r = await play_game(g, oi, openings[oi], a_white, pa, pb, st, tc_str)
            game_done(r)
            if not args.quiet:
                w, b = (names["A"], names["B"]) if a_white else (names["B"], names["A"])
                print(f"Game {g + 1}/{games} (opening {oi + 1}): {w} vs {b}: {r.result} {{{r.reason}}}, "
                      f"{r.plies} plies", flush=True)
                if not test:
                    print("  " + tally.score_line(names["A"], names["B"]), flush=True)
            if not test and args.report_every and tally.n % args.report_every == 0:
                e, err, _ = elo_with_error(tally.w, tally.d, tally.l)
                print(f"  Elo after {tally.n}: {fmt_elo(e, err)}", flush=True)

    tasks: List[asyncio.Task] = []
    stopper = asyncio.create_task(stop.wait())
    finished = False
    try:
        if decision is None and pending:
            tasks = [asyncio.create_task(worker(first_pair if i == 0 else None)) for i in range(conc)]
            while True:
                done, _ = await asyncio.wait(set(tasks) | {stopper}, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t is not stopper and t.exception() is not None:
                        raise t.exception()
                if stopper.done() or all(t.done() for t in tasks):
                    break
        finished = True
    finally:
        # On a decision, error or Ctrl-C: stop the other games, then the engines.
        for t in tasks + [stopper]:
            t.cancel()
        await asyncio.gather(*tasks, stopper, return_exceptions=True)
        await asyncio.gather(*(p.close() for p in all_players), return_exceptions=True)
        if pgn_file:
            pgn_file.close()
        if state is not None:
            state.close()
        header_line = (f"{names['A']} vs {names['B']}, {limit_desc}, {tally.n}/{games} games, "
                       f"{time.monotonic() - started:.0f}s")
        if loaded:
            header_line += f" ({played_now} played now)"
        summary = print_report(tally, names["A"], names["B"], header_line)
        summary.update({"limit": limit_desc, "planned_games": games,
                        "engine1_cmd": specs[0].describe(), "engine2_cmd": specs[1].describe()})
        if test:
            label = f"{limit_desc}, {names['A']} vs {names['B']}, {openings_path.name}"
            if args.prior:
                label += f", with {2 * sum(prior_penta)} earlier games (--prior)"
            summary["sprt"] = print_sprt(test, penta, tally, prior_wdl, decision, label,
                                         finished=finished and 2 * scored_pairs >= games,
                                         resumable=state is not None)
        elif state is not None and tally.n < games:
            print(f"Stopped after {tally.n} of {games} games: rerun the same command to go on from {args.state}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1, default=lambda x: None)
    if test:
        return {"H1": 0, "H0": 1}.get(decision or "", 3)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for i in range(len(argv) - 1):  # let "--sprt -5,0" through (argparse takes -5,0 for an option)
        if argv[i] == "--sprt" and argv[i + 1][:1] == "-" and argv[i + 1][1:2].isdigit():
            argv[i:i + 2] = [f"--sprt={argv[i + 1]}"]
            break
    args = build_parser().parse_args(argv)
    if args.debug:
        logging.basicConfig(filename=args.debug, level=logging.DEBUG,
                            format="%(asctime)s.%(msecs)03d %(name)s %(message)s", datefmt="%H:%M:%S")
    else:
        # python-chess warns about every unparsed engine line (sjeng, toga2...).
        logging.basicConfig(level=logging.ERROR, format="%(name)s: %(message)s")
    try:
        if args.summary:
            print(state_summary(args.summary))
            return 0
        return asyncio.run(run(args))
    except FatalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
