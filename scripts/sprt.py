"""Sequential probability ratio test on game pairs (pentanomial), and the
Elo estimates that go with it. Used by scripts/match.py --sprt; no
dependencies beyond the standard library.

Results are pentanomial counts [LL, LD, DD+WL, WD, WW]: the number of
opening pairs (the same opening played twice, colours reversed) in which
engine A scored 0, 1/2, 1, 3/2 and 2 points. A pair is one sample with
value 0, 1/4, 1/2, 3/4 or 1 (its mean score per game).

The test is the generalized SPRT (GSPRT) that fishtest runs on pentanomial
results. For each hypothesis the distribution of the five outcomes is the
maximum-likelihood one given the observed frequencies and the constraint
of the hypothesis; the LLR is the log of the ratio of the two likelihoods.

Elo models:

- "logistic" (the default here): elo0/elo1 are logistic Elo, the usual
  Elo of rating lists and of match.py's reports. Elo E means an expected
  score per game of 1 / (1 + 10^(-E/400)); [0, 5] tests "gains nothing"
  against "gains 5 Elo" (fishtest's elo_model "logistic").
- "normalized": elo0/elo1 are normalized Elo (fishtest's bounds since
  2021, e.g. [0, 2]): the expected score's distance from 1/2 divided by
  the per-game standard deviation, times 800 / ln 10. It does not depend
  on the draw rate of the conditions.

Zero counts are replaced by 0.001 before anything is computed (as fishtest
does), so that the maximum-likelihood problems have a solution.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

Z95 = 1.959963984540054          # two-sided 95% quantile of the normal law
NELO_PER_T = 800.0 / math.log(10.0)  # normalized Elo per unit of t-value (about 347.4)
MODELS = ("logistic", "normalized")

# The outcome values of a pair, as a mean score per game.
PAIR_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)


def logistic_score(elo: float) -> float:
    """Expected score per game of a side that is `elo` logistic Elo stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def logistic_elo(score: float) -> float:
    """Inverse of logistic_score, with the score clamped to [0.001, 0.999]."""
    score = min(max(score, 1e-3), 1.0 - 1e-3)
    return -400.0 * math.log10(1.0 / score - 1.0)


def bounds(alpha: float, beta: float) -> Tuple[float, float]:
    """The LLR bounds: below the lower one H0 is accepted, above the upper
    one H1 (alpha: false positive rate, beta: false negative rate)."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def regularize(counts: Sequence[float]) -> List[float]:
    return [c if c > 0 else 1e-3 for c in counts]


def _distribution(penta: Sequence[int]) -> Tuple[float, List[float]]:
    """(number of pairs, observed frequencies) after regularization."""
    if len(penta) != 5:
        raise ValueError(f"pentanomial counts need 5 entries, got {len(penta)}")
    counts = regularize(penta)
    n = float(sum(counts))
    return n, [c / n for c in counts]


def _moments(values: Sequence[float], probs: Sequence[float]) -> Tuple[float, float]:
    mean = sum(p * v for v, p in zip(values, probs))
    var = sum(p * (v - mean) ** 2 for v, p in zip(values, probs))
    return mean, var


def _solve_secular(shifts: Sequence[float], probs: Sequence[float]) -> float:
    """The x with sum_i p_i c_i / (1 + x c_i) = 0 and 1 + x c_i > 0 for all
    i, where the c_i (`shifts`) have both signs. The left side decreases
    from +inf to -inf on that interval, so bisection finds the one root."""
    lo = -1.0 / max(shifts)
    hi = -1.0 / min(shifts)

    def f(x: float) -> float:
        total = 0.0
        for c, p in zip(shifts, probs):
            d = 1.0 + x * c
            if d <= 0.0:  # rounding at the very edge of the interval
                return math.inf if c > 0 else -math.inf
            total += p * c / d
        return total

    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo < 1e-15:
            break
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mle_with_mean(probs: Sequence[float], mean: float,
                  values: Sequence[float] = PAIR_VALUES) -> List[float]:
    """The distribution on `values` closest to the observed `probs` (maximum
    likelihood) among those with the given mean: q_i = p_i / (1 + x (v_i - mean))
    where x solves the constraint."""
    shifts = [v - mean for v in values]
    x = _solve_secular(shifts, probs)
    return [p / (1.0 + x * c) for c, p in zip(shifts, probs)]


def mle_with_t(probs: Sequence[float], ref: float, t: float,
               values: Sequence[float] = PAIR_VALUES) -> List[float]:
    """The maximum-likelihood distribution on `values` among those with
    (mean - ref) / sd = t. The stationarity condition is the mean
    constraint above with shifts that depend on the solution's own mean
    and sd, so it is iterated to a fixed point from the uniform law."""
    q = [1.0 / len(values)] * len(values)
    for _ in range(100):
        mean, var = _moments(values, q)
        sd = math.sqrt(var)
        shifts = [v - ref - t * sd * (1.0 + ((mean - v) / sd) ** 2) / 2.0 for v in values]
        x = _solve_secular(shifts, probs)
        new = [p / (1.0 + x * c) for c, p in zip(shifts, probs)]
        done = max(abs(a - b) for a, b in zip(new, q)) < 1e-12
        q = new
        if done:
            break
    return q


def _llr_from(n: float, probs: Sequence[float], q0: Sequence[float], q1: Sequence[float]) -> float:
    return n * sum(p * (math.log(b) - math.log(a)) for p, a, b in zip(probs, q0, q1))


def llr_logistic(elo0: float, elo1: float, penta: Sequence[int]) -> float:
    """LLR of H1: Elo = elo1 against H0: Elo = elo0, logistic Elo."""
    if sum(penta) == 0:
        return 0.0
    n, probs = _distribution(penta)
    q0 = mle_with_mean(probs, logistic_score(elo0))
    q1 = mle_with_mean(probs, logistic_score(elo1))
    return _llr_from(n, probs, q0, q1)


def llr_normalized(nelo0: float, nelo1: float, penta: Sequence[int]) -> float:
    """LLR of H1: nElo = nelo1 against H0: nElo = nelo0 (normalized Elo).

    nElo is defined per game; a pair's mean score has the per-game mean and
    (for independent games) half the variance, so the pair t-value is the
    per-game one times sqrt(2)."""
    if sum(penta) == 0:
        return 0.0
    n, probs = _distribution(penta)
    t0, t1 = (e / NELO_PER_T * math.sqrt(2.0) for e in (nelo0, nelo1))
    q0 = mle_with_t(probs, 0.5, t0)
    q1 = mle_with_t(probs, 0.5, t1)
    return _llr_from(n, probs, q0, q1)


def llr(elo0: float, elo1: float, penta: Sequence[int], model: str = "logistic") -> float:
    if model == "logistic":
        return llr_logistic(elo0, elo1, penta)
    if model == "normalized":
        return llr_normalized(elo0, elo1, penta)
    raise ValueError(f"unknown Elo model {model!r} (known: {', '.join(MODELS)})")


def score_stats(penta: Sequence[int]) -> Tuple[int, float, float]:
    """(games, mean score per game, variance of one game's score) from
    pentanomial counts (regularized). The variance is the variance of the
    pair mean times 2: the per-game variance that gives the same standard
    error of the mean over 2N games, so that it includes the correlation
    of the two games of a pair."""
    n, probs = _distribution(penta)
    mean, var_pair = _moments(PAIR_VALUES, probs)
    return 2 * sum(penta), mean, 2.0 * var_pair


def elo_estimate(penta: Sequence[int]) -> Tuple[float, float, float]:
    """Logistic Elo, half-width of its 95% interval and LOS (likelihood of
    superiority, the probability that A is the stronger) from pentanomial
    counts: the 95% interval of the mean score mapped through logistic_elo,
    as fishtest computes it."""
    n_pairs = sum(penta)
    if n_pairs == 0:
        return math.nan, math.inf, 0.5
    games, mean, var = score_stats(penta)
    se = math.sqrt(var / (2.0 * n_pairs))
    err = (logistic_elo(mean + Z95 * se) - logistic_elo(mean - Z95 * se)) / 2.0
    los = 0.5 * (1.0 + math.erf((mean - 0.5) / se / math.sqrt(2.0))) if se > 0 else 0.5
    return logistic_elo(mean), err, los


def nelo_estimate(penta: Sequence[int]) -> Tuple[float, float]:
    """Normalized Elo and the half-width of its 95% interval (the interval
    of the t-value, whose standard error is about 1/sqrt(2 N_pairs) per game)."""
    n_pairs = sum(penta)
    if n_pairs == 0:
        return math.nan, math.inf
    games, mean, var = score_stats(penta)
    t = (mean - 0.5) / math.sqrt(var)
    return t * NELO_PER_T, Z95 * NELO_PER_T / math.sqrt(games)


def verdict(value: float, lower: float, upper: float) -> Optional[str]:
    """'H1' when the LLR reached the upper bound, 'H0' the lower one, else None."""
    if value >= upper:
        return "H1"
    if value <= lower:
        return "H0"
    return None


class Sprt:
    """Bounds and the stop rule of one test."""

    def __init__(self, elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05,
                 model: str = "logistic") -> None:
        if model not in MODELS:
            raise ValueError(f"unknown Elo model {model!r} (known: {', '.join(MODELS)})")
        if not elo0 < elo1:
            raise ValueError(f"need elo0 < elo1, got [{elo0}, {elo1}]")
        if not (0 < alpha < 0.5 and 0 < beta < 0.5):
            raise ValueError("alpha and beta must be in (0, 0.5)")
        self.elo0, self.elo1, self.alpha, self.beta, self.model = elo0, elo1, alpha, beta, model
        self.lower, self.upper = bounds(alpha, beta)

    def llr(self, penta: Sequence[int]) -> float:
        return llr(self.elo0, self.elo1, penta, self.model)

    def verdict(self, penta: Sequence[int]) -> Optional[str]:
        return verdict(self.llr(penta), self.lower, self.upper)

    def describe(self) -> str:
        return (f"[{self.elo0:.2f}, {self.elo1:.2f}] {self.model} Elo, "
                f"alpha {self.alpha:g}, beta {self.beta:g}")
