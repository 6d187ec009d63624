//! Time management: how long to think on a move, from the clock.
//!
//! Two limits come out of the clock. The *soft* limit is checked between
//! iterations of iterative deepening and is stretched or shrunk by how the
//! search is going: the `Pacer` asks for more time when the best move
//! keeps changing, the score falls or the best move leaves many of the
//! nodes to its rivals, and for less when the best move is stable and
//! takes almost all of them. The *hard* limit is checked inside the
//! search and is never exceeded. Both already leave out the move
//! overhead, the time lost between our engine deciding and the server's
//! clock stopping.
//!
//! The adaptive shape follows Stockfish 15.1's published formulas: plan
//! for up to 50 moves, spend a share of the time that grows with the game
//! ply, allow a few times that share in an emergency, never more than 80%
//! of what is left. The overhead is kept for every move of that plan and,
//! where the increment does not pay it, for a long game's worth of moves.
//! The first, fixed budget (a 30th of the clock plus most of the
//! increment, no pacing) is kept as `TimeManager::Fixed` so the two can be
//! matched against each other.

use super::limits::Limits;
use crate::chess::Color;
use std::time::{Duration, Instant};

/// Which time manager a clock search uses.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TimeManager {
    /// Stockfish-shaped budget with a pacer (the default).
    #[default]
    Adaptive,
    /// The first budget: left/30 + 3/4 inc, hard = 3 x soft, no pacing.
    Fixed,
}

impl TimeManager {
    /// Parses a UCI option value ("adaptive" / "fixed").
    pub fn parse(s: &str) -> Option<TimeManager> {
        match s.trim().to_ascii_lowercase().as_str() {
            "adaptive" => Some(TimeManager::Adaptive),
            "fixed" => Some(TimeManager::Fixed),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeManager::Adaptive => "adaptive",
            TimeManager::Fixed => "fixed",
        }
    }
}

/// How one search is timed: its limits and, for the adaptive manager, the
/// pacer that decides between iterations.
#[derive(Clone, Debug, Default)]
pub struct TimePlan {
    pub budget: TimeBudget,
    pub pacer: Option<Pacer>,
}

/// The plan for a search by `us` under `limits`, at game ply `ply`;
/// `ponder`: we also think on the opponent's time.
pub fn plan(limits: &Limits, us: Color, ply: u32, ponder: bool, manager: TimeManager) -> TimePlan {
    let mut plan = clock_plan(limits, us, ply, ponder, manager);
    // A clock budget counts the share of a thread the search will get; a
    // fixed move time is what was asked for.
    if let Some(share) = limits.thread_share.filter(|_| limits.movetime.is_none()) {
        let scale = |d: Option<Duration>| d.map(|d| share.of(d));
        plan.budget = TimeBudget {
            soft: scale(plan.budget.soft),
            hard: scale(plan.budget.hard),
        };
        if let Some(pacer) = &mut plan.pacer {
            let b = pacer.budget();
            *pacer = Pacer::new(Budget {
                soft: share.of(b.soft),
                hard: share.of(b.hard),
            });
        }
    }
    plan
}

fn clock_plan(
    limits: &Limits,
    us: Color,
    ply: u32,
    ponder: bool,
    manager: TimeManager,
) -> TimePlan {
    if manager == TimeManager::Fixed || limits.infinite || limits.movetime.is_some() {
        return TimePlan {
            budget: budget(limits, us),
            pacer: None,
        };
    }
    let (time, inc) = match us {
        Color::White => (limits.wtime, limits.winc),
        Color::Black => (limits.btime, limits.binc),
    };
    let Some(time) = time else {
        return TimePlan::default();
    };
    let clock = Clock {
        time,
        increment: inc.unwrap_or_default(),
        moves_to_go: limits.movestogo.filter(|&m| m > 0),
    };
    let b = clock_budget(clock, limits.move_overhead, ply, ponder);
    TimePlan {
        budget: TimeBudget {
            soft: Some(b.soft),
            hard: Some(b.hard),
        },
        pacer: Some(Pacer::new(b)),
    }
}

/// Our side's clock at the moment the search starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Time left on our clock.
    pub time: Duration,
    /// Our increment per move.
    pub increment: Duration,
    /// Moves until the next time control, if the control has one.
    pub moves_to_go: Option<u32>,
}

/// The two limits of one search.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub soft: Duration,
    pub hard: Duration,
}

/// Sudden death: the move overhead is kept for this many moves to come.
/// (It was 120: with the bot's default overhead, 200 ms, that held 24 s
/// back, 80% of a 1/2+0 clock and 40% of a 1+0 one.)
const LAG_RESERVE_MOVES: f64 = 90.0;

/// Below this a move is played from whatever depth the search reached.
const MIN_THINK: Duration = Duration::from_millis(1);

/// The limits for a move at game ply `ply` (0 = White's first move).
/// `ponder`: we will also think on the opponent's time, so a little more
/// of our own can be spent.
pub fn clock_budget(clock: Clock, overhead: Duration, ply: u32, ponder: bool) -> Budget {
    let time = clock.time.as_secs_f64() * 1000.0;
    let inc = clock.increment.as_secs_f64() * 1000.0;
    let overhead = overhead.as_secs_f64() * 1000.0;
    // What we can spend at all: the clock minus the overhead of this move,
    // and a safety share of the clock for the very last seconds.
    let usable = (time - overhead).max(0.0);
    if usable <= 1.0 {
        return Budget {
            soft: MIN_THINK,
            hard: MIN_THINK,
        };
    }

    let mut mtg = clock.moves_to_go.map_or(50.0, |m| m.clamp(1, 50) as f64);
    // Under one second, plan for fewer moves: spreading crumbs over fifty
    // moves loses more to overhead than it gains.
    if time < 1000.0 && mtg / time > 0.05 {
        mtg = (time * 0.05).max(1.0);
    }
    // Time we expect to have over the next `mtg` moves: every one of them
    // pays the overhead and brings the increment.
    let mut reserve = overhead * (2.0 + mtg);
    // Without a time control ahead, a game may run on well past `mtg`
    // moves (self-play and bot games go past move 100). Where the
    // increment does not cover the overhead, each of those moves takes
    // the difference off the clock: keep it for a long game's worth of
    // moves. Past that reserve the engine plays almost at once.
    if clock.moves_to_go.is_none() {
        reserve += (overhead - inc).max(0.0) * (LAG_RESERVE_MOVES - mtg).max(0.0);
    }
    let left = (time + inc * (mtg - 1.0) - reserve).max(1.0);
    let ply = ply as f64;

    let (opt_scale, max_scale) = if clock.moves_to_go.is_none() {
        let opt = (0.0120 + (ply + 3.0).powf(0.45) * 0.0039).min(0.2 * time / left);
        // With a large increment a little more of the bank is safe.
        let extra = (1.0 + 12.0 * inc / time.max(1.0)).clamp(1.0, 1.12);
        (opt * extra, (4.0 + ply / 12.0).min(7.0))
    } else {
        let opt = ((0.88 + ply / 116.4) / mtg).min(0.88 * time / left);
        (opt, (1.5 + 0.11 * mtg).min(6.3))
    };

    let mut soft = opt_scale * left;
    let hard = (max_scale * soft).min(0.8 * time - overhead).min(usable);
    if ponder {
        soft *= 1.25;
    }
    let hard = hard.max(1.0);
    let soft = soft.clamp(1.0, hard);
    Budget {
        soft: Duration::from_secs_f64(soft / 1000.0),
        hard: Duration::from_secs_f64(hard / 1000.0),
    }
}

/// No iteration starts after this share of the pacer's target.
const ITERATION_START_SHARE: f64 = 0.7;

/// The best move's usual share of the nodes in a deep search, and how
/// strongly a share away from it moves the target.
const NODE_SHARE_TYPICAL: f64 = 0.6;
const NODE_SHARE_WEIGHT: f64 = 1.2;

/// Follows the iterations of one search and says when to stop.
#[derive(Clone, Debug)]
pub struct Pacer {
    budget: Budget,
    best_move_changes: f64,
    last_best: u16,
    last_score: Option<i32>,
    /// Average of the previous iterations' scores.
    average_score: Option<i32>,
    /// Elapsed time after which no new iteration starts (seconds).
    stop_at: f64,
}

impl Pacer {
    pub fn new(budget: Budget) -> Pacer {
        Pacer {
            budget,
            best_move_changes: 0.0,
            last_best: 0,
            last_score: None,
            average_score: None,
            stop_at: budget.soft.as_secs_f64() * ITERATION_START_SHARE,
        }
    }

    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Records a finished iteration (best move as bits, score in cp from
    /// the side to move, the share of the search's nodes spent on the best
    /// move when deep enough to mean something) and says whether to start
    /// another, given the time spent so far.
    pub fn next_iteration(
        &mut self,
        best_move: u16,
        score: i32,
        best_share: Option<f64>,
        elapsed: Duration,
    ) -> bool {
        // Older changes count less: halve the tally each iteration.
        self.best_move_changes *= 0.5;
        if self.last_score.is_some() && best_move != self.last_best {
            self.best_move_changes += 1.0;
        }
        self.last_best = best_move;
        let previous = self.average_score.unwrap_or(score);
        let falling = ((previous - score).clamp(-500, 500)) as f64;
        self.average_score = Some(match self.average_score {
            Some(avg) => (avg + score) / 2,
            None => score,
        });
        self.last_score = Some(score);

        // A falling score means trouble we have just seen: think longer.
        // An unstable best move: think longer. A stable one: stop early.
        let falling_factor = (1.0 + falling / 200.0).clamp(0.6, 1.6);
        let instability = 0.75 + 0.9 * self.best_move_changes;
        // A best move that takes most of the nodes has beaten its rivals
        // cheaply: less time. One that leaves many nodes to the others
        // is contested: more. (Deep searches share about 0.6 on average.)
        let node_factor = best_share.map_or(1.0, |share| {
            (1.0 + NODE_SHARE_WEIGHT * (NODE_SHARE_TYPICAL - share)).clamp(0.65, 1.5)
        });
        let target = self.budget.soft.as_secs_f64() * falling_factor * instability * node_factor;
        let target = target.min(self.budget.hard.as_secs_f64());
        // Another iteration takes a multiple of the last one: don't start
        // it if it cannot finish before the target.
        self.stop_at = target * ITERATION_START_SHARE;
        !self.out_of_time(elapsed)
    }

    /// Whether, after `elapsed`, the search should play the move of its
    /// last finished iteration (used when a ponder search turns into a
    /// real one: the time spent pondering already bought those iterations).
    pub fn out_of_time(&self, elapsed: Duration) -> bool {
        elapsed.as_secs_f64() >= self.stop_at
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct TimeBudget {
    /// Do not start a new iteration once this much time has gone.
    pub soft: Option<Duration>,
    /// Stop searching when this much time has gone.
    pub hard: Option<Duration>,
}

/// The fixed budget (`TimeManager::Fixed`) for a search by `us` under
/// `limits`; movetime and infinite searches use it under both managers.
pub fn budget(limits: &Limits, us: Color) -> TimeBudget {
    if limits.infinite {
        return TimeBudget::default();
    }
    if let Some(mt) = limits.movetime {
        let t = mt
            .saturating_sub(limits.move_overhead)
            .max(Duration::from_millis(1));
        return TimeBudget {
            soft: Some(t),
            hard: Some(t),
        };
    }
    let (time, inc) = match us {
        Color::White => (limits.wtime, limits.winc),
        Color::Black => (limits.btime, limits.binc),
    };
    let Some(left) = time else {
        return TimeBudget::default();
    };
    let inc = inc.unwrap_or_default();
    let overhead = limits.move_overhead;
    // What we may spend at most, keeping the overhead for every move.
    let usable = left.saturating_sub(overhead);
    let moves = limits.movestogo.map_or(30, |m| m.clamp(1, 30));
    let soft = usable / moves + inc * 3 / 4;
    let cap = if limits.movestogo == Some(1) {
        usable * 4 / 5
    } else {
        usable / 5
    };
    let hard = (soft * 3).min(cap).max(Duration::from_millis(1));
    let soft = soft.min(hard);
    TimeBudget {
        soft: Some(soft),
        hard: Some(hard),
    }
}

/// The two clocks of one search. Thinking time runs from `go`, pondering
/// included: it is what the pacer weighs, since iterations finished while
/// pondering are work this move does not have to do again. Our clock runs
/// only from the moment the move is really ours to play: `go` for a normal
/// search, `ponderhit` for a ponder search; the hard limit is counted on
/// it, as the server's clock is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SearchClock {
    start: Instant,
    on_clock_since: Option<Instant>,
}

impl SearchClock {
    /// A search started at `start`, pondering or not.
    pub fn new(start: Instant, pondering: bool) -> SearchClock {
        SearchClock {
            start,
            on_clock_since: (!pondering).then_some(start),
        }
    }

    /// The opponent played the expected move at `at`: our clock starts.
    /// Returns false if it was already running.
    pub fn ponderhit(&mut self, at: Instant) -> bool {
        if self.on_clock_since.is_some() {
            return false;
        }
        self.on_clock_since = Some(at.max(self.start));
        true
    }

    pub fn is_pondering(&self) -> bool {
        self.on_clock_since.is_none()
    }

    /// Time spent thinking on this move, pondering included.
    pub fn thinking(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    /// Time our clock has run (zero while pondering).
    pub fn on_clock(&self, now: Instant) -> Duration {
        self.on_clock_since
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::limits::ThreadShare;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn clock(time: u64, inc: u64, mtg: Option<u32>) -> Clock {
        Clock {
            time: ms(time),
            increment: ms(inc),
            moves_to_go: mtg,
        }
    }

    #[test]
    fn limits_never_exceed_the_clock() {
        let overhead = ms(50);
        for time in [
            0, 1, 20, 50, 51, 100, 300, 1000, 5000, 60_000, 600_000, 10_800_000,
        ] {
            for inc in [0, 10, 100, 2000, 30_000] {
                for mtg in [None, Some(1), Some(2), Some(40)] {
                    for ply in [0, 1, 30, 80, 300] {
                        let b = clock_budget(clock(time, inc, mtg), overhead, ply, ply % 2 == 0);
                        assert!(b.soft <= b.hard, "{time} {inc} {mtg:?} {ply}: {b:?}");
                        let usable = ms(time).saturating_sub(overhead).max(MIN_THINK);
                        assert!(b.hard <= usable, "{time} {inc} {mtg:?} {ply}: {b:?}");
                        if time >= 1000 {
                            assert!(b.hard.as_secs_f64() <= 0.8 * time as f64 / 1000.0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sensible_shares_at_common_controls() {
        // Blitz 3+2, first move: a few seconds at most, well above zero.
        let b = clock_budget(clock(180_000, 2000, None), ms(50), 0, false);
        assert!(b.soft > ms(2000) && b.soft < ms(8000), "{b:?}");
        // Bullet 1+0 with 2 s left: a small fraction.
        let b = clock_budget(clock(2000, 0, None), ms(50), 80, false);
        assert!(b.hard < ms(700), "{b:?}");
        // The last move before the time control may use most of the time,
        // but not all of it.
        let b = clock_budget(clock(10_000, 0, Some(1)), ms(50), 60, false);
        assert!(b.soft > ms(3000) && b.hard <= ms(8000), "{b:?}");
        // More time never means a smaller budget.
        let mut prev = Duration::ZERO;
        for t in (1..200).map(|k| k * 500) {
            let b = clock_budget(clock(t, 0, None), ms(50), 40, false);
            assert!(b.soft >= prev, "{t}: {b:?}");
            prev = b.soft;
        }
    }

    #[test]
    fn pacer_stops_sooner_when_stable_and_later_when_falling() {
        let b = Budget {
            soft: ms(1000),
            hard: ms(4000),
        };
        let mut stable = Pacer::new(b);
        let mut stop_stable = None;
        for i in 0..30 {
            if !stable.next_iteration(7, 30, None, ms(100 * i)) {
                stop_stable = Some(i);
                break;
            }
        }
        let mut falling = Pacer::new(b);
        let mut stop_falling = None;
        for i in 0..30 {
            let best = if i % 2 == 0 { 7 } else { 9 };
            if !falling.next_iteration(best, 30 - 40 * i as i32, None, ms(100 * i)) {
                stop_falling = Some(i);
                break;
            }
        }
        let (s, f) = (stop_stable.unwrap(), stop_falling.unwrap());
        assert!(s < f, "stable stopped at {s}, unstable/falling at {f}");
        // Never past the hard limit.
        assert!(f * 100 <= 4000);
    }

    #[test]
    fn an_increment_that_pays_the_overhead_needs_no_long_reserve() {
        // 10+0.1 with 30 ms of overhead: the increment covers every
        // move's lag, so only the planning horizon's overhead is kept
        // (10 s + 49 x 0.1 s - 52 x 30 ms = 13.34 s to plan with).
        let b = clock_budget(clock(10_000, 100, None), ms(30), 0, false);
        assert!(b.soft > ms(260), "{b:?}");
        // Below the overhead the difference is kept for 90 moves: at
        // 10+0.02 the same move gets far less than the 13.34 s plan.
        let b = clock_budget(clock(10_000, 20, None), ms(30), 0, false);
        assert!(b.soft < ms(230), "{b:?}");
        // Sudden death with a clock under the long reserve: move at once.
        let b = clock_budget(clock(2_500, 0, None), ms(30), 40, false);
        assert!(b.soft <= MIN_THINK, "{b:?}");
    }

    #[test]
    fn the_long_game_reserve_leaves_bullet_a_clock_to_think_with() {
        // The bot's default overhead (200 ms) in sudden death: 90 moves'
        // overhead kept, 18 s (120 moves' kept 24 s). The first move gets
        // 1.7% to 2% of what is left to plan with.
        let first_share = |base: u64, plan: f64| {
            let b = clock_budget(clock(base, 0, None), ms(200), 0, false);
            b.soft.as_secs_f64() / plan
        };
        // 1/2+0, the fastest control a bot may play: 11.6 s to plan with;
        // 1+0: 41.6 s.
        for (base, plan) in [(30_000, 11.6), (60_000, 41.6)] {
            let share = first_share(base, plan);
            assert!((0.017..0.020).contains(&share), "{base}: {share}");
        }
    }

    #[test]
    fn a_best_move_with_most_of_the_nodes_stops_sooner() {
        let b = Budget {
            soft: ms(1000),
            hard: ms(4000),
        };
        let stop = |share: f64| {
            let mut p = Pacer::new(b);
            (0..40)
                .find(|&i| !p.next_iteration(7, 30, Some(share), ms(50 * i)))
                .unwrap()
        };
        let (dominant, usual, contested) = (stop(0.95), stop(0.6), stop(0.25));
        assert!(
            dominant < usual && usual < contested,
            "{dominant} {usual} {contested}"
        );
        // Shallow iterations report no share: the usual target.
        let mut p = Pacer::new(b);
        let none = (0..40)
            .find(|&i| !p.next_iteration(7, 30, None, ms(50 * i)))
            .unwrap();
        assert_eq!(none, usual);
    }

    #[test]
    fn clock_budgets() {
        let limits = Limits {
            wtime: Some(ms(60_000)),
            winc: Some(ms(1_000)),
            btime: Some(ms(1_000)),
            move_overhead: ms(50),
            ..Limits::default()
        };
        let b = budget(&limits, Color::White);
        let soft = b.soft.unwrap();
        let hard = b.hard.unwrap();
        assert!(soft > ms(2_000) && soft < ms(3_500), "{soft:?}");
        assert!(hard >= soft && hard <= ms(12_000));
        // Almost no time left: tiny but non-zero budget, under the clock.
        let b = budget(&limits, Color::Black);
        assert!(b.hard.unwrap() <= ms(200) && b.hard.unwrap() > ms(0));
        let zero = Limits {
            btime: Some(ms(0)),
            ..Limits::default()
        };
        assert_eq!(budget(&zero, Color::Black).hard, Some(ms(1)));
        let mt = Limits {
            movetime: Some(ms(500)),
            move_overhead: ms(20),
            ..Limits::default()
        };
        assert_eq!(budget(&mt, Color::White).hard, Some(ms(480)));
        assert_eq!(
            budget(&Limits::default(), Color::White),
            TimeBudget::default()
        );
    }

    #[test]
    fn a_thread_share_scales_a_clock_budget_not_a_move_time() {
        let limits = Limits {
            wtime: Some(ms(180_000)),
            winc: Some(ms(2_000)),
            btime: Some(ms(180_000)),
            binc: Some(ms(2_000)),
            move_overhead: ms(100),
            ..Limits::default()
        };
        let shared = Limits {
            thread_share: Some(ThreadShare::new(0.25)),
            ..limits.clone()
        };
        for manager in [TimeManager::Adaptive, TimeManager::Fixed] {
            let whole = plan(&limits, Color::White, 20, false, manager);
            let quarter = plan(&shared, Color::White, 20, false, manager);
            let (w, q) = (whole.budget, quarter.budget);
            assert_eq!(q.soft, w.soft.map(|d| d.mul_f64(0.25)), "{manager:?}");
            assert_eq!(q.hard, w.hard.map(|d| d.mul_f64(0.25)), "{manager:?}");
            assert_eq!(
                quarter.pacer.map(|p| p.budget()),
                whole.pacer.map(|p| Budget {
                    soft: p.budget().soft.mul_f64(0.25),
                    hard: p.budget().hard.mul_f64(0.25),
                })
            );
        }
        // A fixed move time is what was asked for.
        let movetime = Limits {
            movetime: Some(ms(1_000)),
            thread_share: Some(ThreadShare::new(0.25)),
            ..Limits::default()
        };
        let b = plan(&movetime, Color::White, 0, false, TimeManager::Adaptive).budget;
        assert_eq!(b.hard, Some(ms(1_000)));
        // Never below a 16th, never above the whole.
        assert_eq!(ThreadShare::new(0.001).fraction(), 0.063);
        assert_eq!(ThreadShare::new(3.0).fraction(), 1.0);
        assert_eq!(ThreadShare::new(f64::NAN).fraction(), 1.0);
    }

    #[test]
    fn ponder_time_counts_for_the_pacer_not_for_the_clock() {
        let t0 = Instant::now();
        let b = clock_budget(clock(60_000, 0, None), ms(100), 30, true);
        // Pondered for 10 s, then hit: our clock starts at the hit.
        let mut c = SearchClock::new(t0, true);
        assert!(c.is_pondering());
        assert_eq!(c.on_clock(t0 + ms(10_000)), Duration::ZERO);
        assert!(c.ponderhit(t0 + ms(10_000)));
        assert!(!c.ponderhit(t0 + ms(11_000)), "the clock starts once");
        let now = t0 + ms(10_050);
        assert_eq!(c.on_clock(now), ms(50));
        assert_eq!(c.thinking(now), ms(10_050));
        // Ten seconds of pondering bought more than this move's share:
        // play at once, well inside the hard limit counted from the hit.
        let pacer = Pacer::new(b);
        assert!(pacer.out_of_time(c.thinking(now)));
        assert!(c.on_clock(now) < b.hard);
        // A short ponder leaves the search its normal share after the hit.
        let mut c = SearchClock::new(t0, true);
        c.ponderhit(t0 + ms(20));
        assert!(!pacer.out_of_time(c.thinking(t0 + ms(30))));
        // A miss is a stop and a new go: a fresh clock from the new go.
        let c = SearchClock::new(t0 + ms(500), false);
        assert_eq!(c.on_clock(t0 + ms(600)), ms(100));
        assert_eq!(c.thinking(t0 + ms(600)), ms(100));
        // A hit reported before the search started counts from its start.
        let mut c = SearchClock::new(t0 + ms(5), true);
        c.ponderhit(t0);
        assert_eq!(c.on_clock(t0 + ms(5)), Duration::ZERO);
    }

    #[test]
    fn a_long_game_with_full_lag_never_flags() {
        // Each move thinks for `think` of its budget, then loses the whole
        // overhead to lag; how many moves a side fit the clock.
        let overhead = ms(150);
        let moves = |base: u64, inc: u64, think: fn(Budget) -> Duration| {
            let mut time = ms(base);
            (0..400u32)
                .find(|&m| {
                    let t = clock(time.as_millis() as u64, inc, None);
                    let spent = think(clock_budget(t, overhead, 2 * m, true)) + overhead;
                    if spent >= time {
                        return true;
                    }
                    time = time - spent + ms(inc);
                    false
                })
                .unwrap_or(400)
        };
        let hard: fn(Budget) -> Duration = |b| b.hard;
        let busy: fn(Budget) -> Duration = |b| (b.soft * 3 / 2).min(b.hard);
        // An increment that pays the overhead: 125 moves to the hard limit.
        for (base, inc) in [(3_000, 1_000), (180_000, 2_000), (600_000, 5_000)] {
            let n = moves(base, inc, hard);
            assert!(n >= 125, "{base}+{inc}: flagged at move {n}");
        }
        // Sudden death, from 1/2+0 (the fastest a bot may play) to 3+0:
        // 110 moves to the hard limit, 125 at half again the soft limit,
        // as a pacer in a hard game spends.
        for base in [30_000, 60_000, 180_000] {
            let n = moves(base, 0, hard);
            assert!(n >= 110, "{base}+0 to the hard limit: flagged at move {n}");
            let n = moves(base, 0, busy);
            assert!(n >= 125, "{base}+0 busy: flagged at move {n}");
        }
    }
}
