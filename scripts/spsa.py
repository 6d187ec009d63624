#!/usr/bin/env python3
"""SPSA tuning of kaissa's search constants by self-play.

The engine must be built with `cargo build --release --features tune`: that
build lists its tunable constants as UCI spin options (names starting with
`tune_`; the default build has none). Each step plays one game pair from a
balanced opening between the current values shifted up (theta + c*delta)
and shifted down (theta - c*delta), delta a random sign per constant, and
moves every constant along delta by the pair's result: Fishtest's SPSA
(Spall's gains, alpha 0.602, gamma 0.101, A = a tenth of the steps), with
each constant's end perturbation c_end = (max - min) / 20 unless given and
one learning rate r_end for all.

    scripts/spsa.py --engine "target/release/kaissa uci" --nodes 20000 \
        --steps 20000 --concurrency 2 --state /work/tune/spsa.json

The state file keeps the values and the step count after every pair, so a
stopped run resumes with the same command. The report lists each constant's
start and current value. Only the constants named with --only are tuned, if
given; the others stay at their defaults.
"""

import argparse
import asyncio
import json
import os
import random
import shlex
import signal
import sys
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import match  # noqa: E402  (scripts/match.py: engines, games, openings)

ALPHA = 0.602
GAMMA = 0.101
PREFIX = "tune_"


class Param:
    def __init__(self, name: str, default: int, lo: int, hi: int, c_end: float) -> None:
        self.name = name
        self.default = default
        self.lo = lo
        self.hi = hi
        self.c_end = c_end
        self.value = float(default)

    def clamp(self, v: float) -> float:
        return min(max(v, self.lo), self.hi)


class Spsa:
    """The gains of Fishtest's SPSA for `steps` pairs in all."""

    def __init__(self, params: List[Param], steps: int, r_end: float) -> None:
        self.params = params
        self.steps = steps
        self.big_a = 0.1 * steps
        self.r_end = r_end

    def c_k(self, p: Param, k: int) -> float:
        c = p.c_end * self.steps ** GAMMA
        return c / (k + 1) ** GAMMA

    def r_k(self, p: Param, k: int) -> float:
        a_end = self.r_end * p.c_end ** 2
        a = a_end * (self.big_a + self.steps) ** ALPHA
        return a / (self.big_a + k + 1) ** ALPHA / self.c_k(p, k) ** 2

    def perturbation(self, k: int, rng: random.Random) -> Dict[str, float]:
        """The signed shift of each constant at step k."""
        return {p.name: self.c_k(p, k) * rng.choice((-1, 1)) for p in self.params}

    def update(self, k: int, shift: Dict[str, float], result: float) -> None:
        """`result`: the pair's score of theta+ minus theta- (-2..2)."""
        for p in self.params:
            s = shift[p.name]
            sign = 1 if s > 0 else -1
            p.value = p.clamp(p.value + self.r_k(p, k) * abs(s) * result * sign)


def tunables(options: dict) -> List[Param]:
    out = []
    for name, opt in options.items():
        if name.lower().startswith(PREFIX) and opt.type == "spin":
            lo, hi = int(opt.min), int(opt.max)
            out.append(Param(name, int(opt.default), lo, hi, max((hi - lo) / 20, 0.5)))
    return sorted(out, key=lambda p: p.name)


def full_name(name: str) -> str:
    """`rfp_margin` or `tune_rfp_margin` -> `tune_rfp_margin`."""
    name = name.strip().lower()
    return name if name.startswith(PREFIX) else PREFIX + name


def values(params: List[Param], shift: Dict[str, float], sign: int) -> Dict[str, int]:
    return {p.name: int(round(p.clamp(p.value + sign * shift.get(p.name, 0.0)))) for p in params}


async def main_async(args: argparse.Namespace) -> int:
    cmd = shlex.split(args.engine)
    spec = match.EngineSpec(cmd, "uci", {}, None, None, "A")
    probe = match.Player(spec)
    await probe.start()
    params = tunables(probe.protocol.options)
    await probe.close()
    if not params:
        raise match.FatalError(f"{args.engine}: no {PREFIX}* options (build with --features tune)")
    if args.only:
        wanted = {full_name(n) for n in args.only.split(",")}
        unknown = wanted - {p.name.lower() for p in params}
        if unknown:
            raise match.FatalError(f"--only: no such tunable {sorted(unknown)}; "
                                   f"have {[p.name for p in params]}")
        params = [p for p in params if p.name.lower() in wanted]
    for item in args.c_end or []:
        name, _, v = item.partition("=")
        hit = [p for p in params if p.name.lower() == full_name(name)]
        if not hit or not v:
            raise match.FatalError(f"--c-end {item!r}: expected NAME=VALUE with a tuned NAME")
        hit[0].c_end = float(v)

    spsa = Spsa(params, args.steps, args.r_end)
    step = 0
    wins = draws = losses = 0
    if args.state and args.state.exists():
        try:
            saved = json.loads(args.state.read_text())
            if saved.get("steps") != args.steps or sorted(saved["values"]) != sorted(p.name for p in params):
                raise match.FatalError(f"--state {args.state}: written for other steps or constants")
            step = int(saved["step"])
            for p in params:
                p.value = p.clamp(float(saved["values"][p.name]))
            wins, draws, losses = (int(x) for x in saved.get("wdl", (0, 0, 0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise match.FatalError(f"--state {args.state}: unreadable ({e!r}); "
                                   "fix it or give a new file") from e
        print(f"Resuming from {args.state} at step {step}", flush=True)

    openings = match.load_openings(args.openings)
    rng = random.Random(args.seed + step)
    st = match.Settings(base=None, inc=0.0, nodes={"A": args.nodes, "B": args.nodes}, depth=None,
                        timemargin=0.0, move_timeout=120.0, resign_moves=4, resign_score=800,
                        draw_movenumber=40, draw_moves=8, draw_score=10, maxplies=400)
    lock = asyncio.Lock()
    players: List[match.Player] = []

    def save() -> None:
        if args.state:
            tmp = args.state.with_suffix(".tmp")
            tmp.write_text(json.dumps({"steps": args.steps, "step": step, "wdl": [wins, draws, losses],
                                       "values": {p.name: p.value for p in params}}, indent=1))
            tmp.replace(args.state)

    def report() -> None:
        print(f"step {step}/{args.steps}  theta+ W/D/L {wins}/{draws}/{losses}", flush=True)
        for p in params:
            print(f"  {p.name:28} {p.default:6} -> {p.value:8.2f}  [{p.lo}, {p.hi}]", flush=True)

    async def worker() -> None:
        nonlocal step, wins, draws, losses
        plus = match.Player(match.EngineSpec(cmd, "uci", {}, None, "plus", "A"))
        minus = match.Player(match.EngineSpec(cmd, "uci", {}, None, "minus", "B"))
        players.extend((plus, minus))
        await plus.start()
        await minus.start()
        while True:
            async with lock:
                if step >= args.steps:
                    return
                k = step
                step += 1
                shift = spsa.perturbation(k, rng)
                o = rng.randrange(len(openings))
            pair = 0.0
            for a_white in (True, False):
                for player, sign in ((plus, 1), (minus, -1)):
                    await player.ensure()
                    await player.protocol.configure(values(params, shift, sign))
                r = await match.play_game(2 * k + (not a_white), o, openings[o], a_white, plus, minus, st, "")
                s = r.a_score
                if s is None:
                    continue  # an unfinished game (engine failure) teaches nothing
                pair += 2 * s - 1
                wins += s == 1.0
                draws += s == 0.5
                losses += s == 0.0
            async with lock:
                spsa.update(k, shift, pair)
                save()
                if step % args.report_every == 0 and step < args.steps:
                    report()

    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, me.cancel)
    try:
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    except asyncio.CancelledError:
        print("stopped", flush=True)
    finally:
        await asyncio.gather(*(p.close() for p in players), return_exceptions=True)
        save()
        report()
        print("UCI: " + " ".join(f"--option1 {p.name}={int(round(p.value))}" for p in params), flush=True)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", required=True, help="command of a build with --features tune")
    ap.add_argument("--nodes", type=int, default=20000, help="nodes per move (default 20000)")
    ap.add_argument("--steps", type=int, default=20000, help="game pairs in all (default 20000)")
    ap.add_argument("--r-end", type=float, default=0.002, help="learning rate at the end (default 0.002)")
    ap.add_argument("--c-end", action="append", metavar="NAME=C",
                    help="end perturbation of one constant (default (max-min)/20)")
    ap.add_argument("--only", help="tune only these constants (comma-separated)")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--openings", type=Path, default=match.DEFAULT_SPRT_OPENINGS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--state", type=Path, help="JSON file of the values, written after every pair")
    ap.add_argument("--report-every", type=int, default=100, help="print the values every N pairs")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.concurrency < 1 or args.nodes < 1:
        ap.error("--steps, --concurrency and --nodes must be at least 1")
    try:
        return asyncio.run(main_async(args))
    except match.FatalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
