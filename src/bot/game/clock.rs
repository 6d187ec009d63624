//! The bot's clock, in one place: the limits of a search from the game's
//! clocks (the overhead, raised by the lag measured between our post and
//! its echo; the first move, off the clock; correspondence, a fixed time),
//! the move budget the scheduler weighs a wait against, and the clocks an
//! external engine is told (its share of ours when games share the
//! threads; its deadline on the real clock, after which a hung engine is
//! stopped). The engine's own time management is `engine::timeman`.

use super::Game;
use crate::bot::board::Record;
use crate::chess;
use crate::engine::{Limits, ThreadShare};
use crate::lichess::model::GameState;
use std::time::Duration;
use tokio::time::Instant;

/// An external engine is stopped when it has not answered after this
/// share of our clock (a hung engine must not make us lose on time).
pub(super) const EXTERNAL_DEADLINE_SHARE: u32 = 2;
/// The least time an external engine is given, and the grace after a
/// fixed move time before it is stopped.
pub(super) const EXTERNAL_MIN_TIME: Duration = crate::bot::external::MIN_TOLD_TIME;
pub(super) const EXTERNAL_GRACE: Duration = Duration::from_secs(1);

/// Our first move is played after this much thought at most: Lichess
/// aborts a game whose first moves do not come quickly, and the clocks do
/// not run yet anyway.
const FIRST_MOVE_TIME: Duration = Duration::from_millis(1000);
/// Our first move is not on the clock (Lichess starts the clocks once
/// both sides have moved), only under the abort timer: for the scheduler
/// it is as patient as a move with this budget (it waits up to a 16th).
const FIRST_MOVE_PATIENCE: Duration = Duration::from_secs(16);
/// The measured lag raises the move overhead by at most this much.
const MAX_EXTRA_OVERHEAD: Duration = Duration::from_secs(1);
/// How long the echo of our move may take before the game stream is
/// taken for stuck: four times the smoothed lag, within these bounds
/// (under the stream watchdog, which a stream that keeps alive but
/// carries no line never trips).
const ECHO_WAIT_MIN: Duration = Duration::from_secs(2);
const ECHO_WAIT_MAX: Duration = Duration::from_secs(6);

/// The lag between our move post and its echo on the game stream (a
/// round trip and the server's work), smoothed.
#[derive(Debug, Default)]
pub(super) struct Lag {
    /// Our last post: its ply and when it was sent.
    pending: Option<(usize, Instant)>,
    last: Option<Duration>,
    smoothed: Option<Duration>,
}

impl Lag {
    /// Our move at `ply` was posted at `at`.
    pub(super) fn posted(&mut self, ply: usize, at: Instant) {
        self.pending = Some((ply, at));
    }

    /// A state with `ply` moves arrived at `at`: if it holds our move,
    /// the lag is measured.
    pub(super) fn seen(&mut self, ply: usize, at: Instant) {
        if let Some((ours, posted)) = self.pending
            && ply > ours
        {
            self.pending = None;
            let lag = at.saturating_duration_since(posted);
            self.last = Some(lag);
            self.smoothed = Some(match self.smoothed {
                Some(s) => (s * 3 + lag) / 4,
                None => lag,
            });
        }
    }

    /// The game was read whole again (a reopened stream's `gameFull`): no
    /// echo of our post, which may have waited on a dead stream, so it
    /// goes unmeasured.
    pub(super) fn resynced(&mut self) {
        self.pending = None;
    }

    /// Whether a post of ours has not been echoed yet.
    pub(super) fn awaiting(&self) -> bool {
        self.pending.is_some()
    }

    /// How long after a post its echo is due.
    pub(super) fn echo_wait(&self) -> Duration {
        (self.smoothed.unwrap_or_default() * 4).clamp(ECHO_WAIT_MIN, ECHO_WAIT_MAX)
    }

    /// The moves from ply `kept` on were taken back: a post among them
    /// will never be echoed.
    pub(super) fn taken_back(&mut self, kept: usize) {
        self.pending = self.pending.filter(|&(ours, _)| ours < kept);
    }

    pub(super) fn last(&self) -> Option<Duration> {
        self.last
    }

    /// The move overhead: the configured one, raised to the smoothed lag
    /// when that is longer, by at most [`MAX_EXTRA_OVERHEAD`].
    pub(super) fn overhead(&self, configured: Duration) -> Duration {
        self.smoothed
            .unwrap_or_default()
            .clamp(configured, configured + MAX_EXTRA_OVERHEAD)
    }
}

/// What an external engine is told of the clocks, and when it is stopped
/// if it has not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Told {
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    pub deadline: Option<Duration>,
}

/// `limits` with our clock run for `since` more (the state they were
/// made from is that old).
pub(super) fn run_for(mut limits: Limits, us: chess::Color, since: Duration) -> Limits {
    let ours = match us {
        chess::Color::White => &mut limits.wtime,
        chess::Color::Black => &mut limits.btime,
    };
    *ours = ours.map(|t| t.saturating_sub(since));
    limits
}

/// `limits` as they will be when the opponent replies: our increment
/// added to our clock once the clocks run (Lichess adds it after our
/// move, from the second move on); theirs as they stand (the engine
/// counts ours from the hit).
pub(super) fn at_reply(limits: &Limits, us: chess::Color, clocks_run: bool) -> Limits {
    let mut limits = limits.clone();
    if clocks_run {
        match us {
            chess::Color::White => {
                limits.wtime = limits.wtime.map(|t| t + limits.winc.unwrap_or_default())
            }
            chess::Color::Black => {
                limits.btime = limits.btime.map(|t| t + limits.binc.unwrap_or_default())
            }
        }
    }
    limits
}

/// Our clock in `limits`.
pub(super) fn ours(limits: &Limits, us: chess::Color) -> Option<Duration> {
    match us {
        chess::Color::White => limits.wtime,
        chess::Color::Black => limits.btime,
    }
}

/// How far our clock may be below the ponder search's when the expected
/// reply comes, at least: normal lag, not a late state.
const HIT_SLACK: Duration = Duration::from_millis(500);

/// Whether a ponder hit may keep the ponder search's clock (`given`: our
/// clock at the reply as we estimated it at the post, none without a
/// clock). Our real clock (`real`, from the state that brought the
/// reply) is below it by more than a tenth (at least [`HIT_SLACK`]) when
/// the state came late (a reconnect, a stalled stream): the search would
/// budget time we do not have, so it is stopped and our move searched
/// on the real clock; the table keeps what the ponder search found.
pub(super) fn hit_keeps_clock(given: Option<Duration>, real: Duration) -> bool {
    given.is_none_or(|given| real + (given / 10).max(HIT_SLACK) >= given)
}

/// The clocks an external engine searching our move is told: ours less
/// the overhead (at least [`EXTERNAL_MIN_TIME`]); with a `share` of a
/// thread (games sharing them), that share of our clock and increment.
/// The deadline stays on the real clock: a fixed move time and
/// [`EXTERNAL_GRACE`], else a [`EXTERNAL_DEADLINE_SHARE`]th of our clock.
pub(super) fn told_for_search(
    limits: &Limits,
    us: chess::Color,
    share: Option<ThreadShare>,
) -> Told {
    let less = |t: Option<Duration>| {
        t.map(|t| {
            t.saturating_sub(limits.move_overhead)
                .max(EXTERNAL_MIN_TIME)
        })
    };
    let mut told = Told {
        wtime: limits.wtime,
        btime: limits.btime,
        winc: limits.winc,
        binc: limits.binc,
        deadline: None,
    };
    let (time, inc) = match us {
        chess::Color::White => (&mut told.wtime, &mut told.winc),
        chess::Color::Black => (&mut told.btime, &mut told.binc),
    };
    *time = less(*time);
    told.deadline = match (limits.movetime, *time) {
        (Some(movetime), _) => Some(movetime + EXTERNAL_GRACE),
        (None, Some(ours)) => Some((ours / EXTERNAL_DEADLINE_SHARE).max(EXTERNAL_MIN_TIME)),
        (None, None) => None,
    };
    if let Some(share) = share.filter(|_| limits.movetime.is_none()) {
        *time = time.map(|t| share.of(t).max(EXTERNAL_MIN_TIME));
        *inc = inc.map(|i| i.mul_f64(share.fraction()));
    }
    told
}

/// The clocks an external engine pondering on the opponent's time is
/// told: as they will be at the reply, ours less the overhead plus the
/// increment once the clocks run (`clocks_run`). Its deadline counts from
/// the ponder hit, when the search becomes ours.
pub(super) fn told_for_ponder(limits: &Limits, us: chess::Color, clocks_run: bool) -> Told {
    let at_reply = at_reply(limits, us, clocks_run);
    let less = |t: Option<Duration>| {
        t.map(|t| {
            t.saturating_sub(limits.move_overhead)
                .max(EXTERNAL_MIN_TIME)
        })
    };
    let ours = match us {
        chess::Color::White => &at_reply.wtime,
        chess::Color::Black => &at_reply.btime,
    };
    let ours = less(*ours);
    let (wtime, btime) = match us {
        chess::Color::White => (ours, limits.btime),
        chess::Color::Black => (limits.wtime, ours),
    };
    // Without a clock, the fixed move time (correspondence) bounds the
    // search from the hit: nothing else would end `go ponder`.
    let deadline = match ours {
        Some(t) => Some((t / EXTERNAL_DEADLINE_SHARE).max(EXTERNAL_MIN_TIME)),
        None => limits.movetime.map(|m| m + EXTERNAL_GRACE),
    };
    Told {
        wtime,
        btime,
        winc: limits.winc,
        binc: limits.binc,
        deadline,
    }
}

impl Game {
    /// The limits of a search for our move in `state`, the clocks as they
    /// stood when it arrived, and our clock then. Depth and nodes are the
    /// playing engine's (`engine.max_*` or its `[engines.NAME]`'s).
    pub(super) fn limits(
        &self,
        state: &GameState,
        us: chess::Color,
        first_move: bool,
    ) -> (Limits, Option<Duration>) {
        let mut limits = Limits {
            move_overhead: self.lag.overhead(self.configured_overhead()),
            ..Limits::default()
        };
        let clock = self.facts.as_ref().and_then(|f| f.clock);
        let mut our_clock = None;
        match clock {
            Some(_) => {
                let ms = |v: u64| Duration::from_millis(v);
                let (wtime, btime) = (ms(state.wtime), ms(state.btime));
                our_clock = Some(if us == chess::Color::White {
                    wtime
                } else {
                    btime
                });
                limits.wtime = Some(wtime);
                limits.btime = Some(btime);
                limits.winc = Some(ms(state.winc));
                limits.binc = Some(ms(state.binc));
                if first_move {
                    limits.movetime = Some(FIRST_MOVE_TIME);
                }
            }
            None => limits.movetime = Some(self.ctx.config.bot.correspondence_move_time()),
        }
        let (depth, nodes) = match &self.ctx.external {
            Some(choice) => (choice.max_depth, choice.max_nodes),
            None => (
                self.ctx.config.engine.max_depth,
                self.ctx.config.engine.max_nodes,
            ),
        };
        limits.depth = Some(depth).filter(|&d| d > 0);
        limits.nodes = Some(nodes).filter(|&n| n > 0);
        (limits, our_clock)
    }

    /// Our budget for this move: how long the clock lets us think (a
    /// 30th of our time and most of the increment, at most a quarter of
    /// our time), what the scheduler weighs our wait against.
    pub(super) fn move_budget(&self) -> Duration {
        self.move_budget_at(Instant::now())
    }

    /// [`Game::move_budget`] as it stood at `at`.
    pub(super) fn move_budget_at(&self, at: Instant) -> Duration {
        match &self.state {
            Some((state, arrived)) => self.budget_in(state, *arrived, at),
            None => self.ctx.config.bot.correspondence_move_time(),
        }
    }

    /// Our budget for the move of `state` (arrived at `arrived`) as it
    /// stood at `at`.
    pub(super) fn budget_in(&self, state: &GameState, arrived: Instant, at: Instant) -> Duration {
        let correspondence = || self.ctx.config.bot.correspondence_move_time();
        let Some(us) = self.color else {
            return correspondence();
        };
        if self.facts.as_ref().and_then(|f| f.clock).is_none() {
            return correspondence();
        }
        let ply = self.record.as_ref().map_or(0, Record::ply);
        if self.moved_at_ply.is_none() && ply < 2 {
            return FIRST_MOVE_PATIENCE;
        }
        let ours = super::to_model(us);
        let left = Duration::from_millis(state.time_left(ours))
            .saturating_sub(at.saturating_duration_since(arrived));
        let inc = Duration::from_millis(state.increment(ours));
        (left / 30 + inc * 3 / 4).min(left / 4)
    }

    /// The move overhead configured for the engine that plays.
    pub(super) fn configured_overhead(&self) -> Duration {
        match &self.ctx.external {
            Some(choice) => choice.move_overhead,
            None => self.ctx.config.engine.move_overhead(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ponder_hit_keeps_its_clock_unless_ours_is_well_below_it() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // No clock (correspondence): nothing to compare.
        assert!(hit_keeps_clock(None, s(0)));
        // Lag within the slack, or a clock above the estimate.
        assert!(hit_keeps_clock(Some(s(30)), s(27)));
        assert!(hit_keeps_clock(Some(s(30)), s(31)));
        assert!(hit_keeps_clock(Some(s(2)), ms(1500)));
        // A state late by seconds.
        assert!(!hit_keeps_clock(Some(s(30)), ms(26_900)));
        assert!(!hit_keeps_clock(Some(s(2)), ms(1400)));
    }

    #[tokio::test(start_paused = true)]
    async fn lag_is_measured_and_bounds_the_overhead() {
        let base = Duration::from_millis(100);
        let mut lag = Lag::default();
        assert_eq!(lag.overhead(base), base);
        let t0 = Instant::now();
        lag.posted(10, t0);
        lag.seen(10, t0 + Duration::from_millis(50)); // not our move yet
        assert_eq!(lag.last(), None);
        lag.seen(11, t0 + Duration::from_millis(400));
        assert_eq!(lag.last(), Some(Duration::from_millis(400)));
        assert_eq!(lag.overhead(base), Duration::from_millis(400));
        assert_eq!(lag.echo_wait(), ECHO_WAIT_MIN);
        lag.posted(12, t0);
        assert!(lag.awaiting());
        // A reopened stream's gameFull is no echo: not measured.
        lag.resynced();
        lag.seen(13, t0 + Duration::from_secs(20));
        assert_eq!(lag.last(), Some(Duration::from_millis(400)));
        assert!(!lag.awaiting());
        lag.posted(12, t0);
        lag.seen(13, t0 + Duration::from_secs(60));
        assert_eq!(lag.overhead(base), base + MAX_EXTRA_OVERHEAD);
        assert_eq!(lag.echo_wait(), ECHO_WAIT_MAX);
    }

    fn clock_limits(wtime: u64, btime: u64) -> Limits {
        let ms = Duration::from_millis;
        Limits {
            wtime: Some(ms(wtime)),
            btime: Some(ms(btime)),
            winc: Some(ms(1000)),
            binc: Some(ms(1000)),
            move_overhead: ms(200),
            ..Limits::default()
        }
    }

    #[test]
    fn an_external_engine_is_told_our_clock_less_the_overhead_and_its_share() {
        let ms = Duration::from_millis;
        let limits = clock_limits(10_000, 8_000);
        let told = told_for_search(&limits, chess::Color::White, None);
        assert_eq!((told.wtime, told.btime), (Some(ms(9_800)), Some(ms(8_000))));
        assert_eq!(told.deadline, Some(ms(4_900)), "half our clock");
        let half = ThreadShare::new(0.5);
        let told = told_for_search(&limits, chess::Color::Black, Some(half));
        assert_eq!(told.btime, Some(ms(3_900)), "half of 7800");
        assert_eq!(told.binc, Some(ms(500)));
        assert_eq!(told.deadline, Some(ms(3_900)), "on the real clock");
        // A fixed move time: not shared, the deadline a grace after it.
        let fixed = Limits {
            movetime: Some(ms(1_000)),
            ..limits
        };
        let told = told_for_search(&fixed, chess::Color::White, Some(half));
        assert_eq!(told.wtime, Some(ms(9_800)));
        assert_eq!(told.deadline, Some(ms(1_000) + EXTERNAL_GRACE));
        // Almost no time: never below the least.
        let told = told_for_search(&clock_limits(100, 100), chess::Color::White, None);
        assert_eq!(told.wtime, Some(EXTERNAL_MIN_TIME));
    }

    #[test]
    fn a_pondering_external_engine_is_told_the_clock_at_the_reply() {
        let ms = Duration::from_millis;
        let limits = clock_limits(10_000, 8_000);
        let told = told_for_ponder(&limits, chess::Color::Black, true);
        assert_eq!(
            (told.wtime, told.btime),
            (Some(ms(10_000)), Some(ms(8_800)))
        );
        assert_eq!(told.deadline, Some(ms(4_400)));
        let before_clocks = told_for_ponder(&limits, chess::Color::Black, false);
        assert_eq!(before_clocks.btime, Some(ms(7_800)));
    }

    /// Without a clock (correspondence), a ponder hit starts a search the
    /// fixed move time bounds: `go ponder` tells the engine no time.
    #[test]
    fn a_ponder_search_without_a_clock_has_a_deadline() {
        let limits = Limits {
            movetime: Some(Duration::from_secs(20)),
            ..Limits::default()
        };
        let told = told_for_ponder(&limits, chess::Color::White, true);
        assert_eq!((told.wtime, told.btime), (None, None));
        assert_eq!(
            told.deadline,
            Some(Duration::from_secs(20) + EXTERNAL_GRACE)
        );
    }
}
