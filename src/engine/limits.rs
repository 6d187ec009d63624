//! `Limits`: what the caller asked the search for (UCI `go` parameters or
//! the bot's clock), independent of how the time is then budgeted.

use crate::chess::Move;
use std::time::Duration;

/// Search limits. Everything is optional; with nothing set (and no
/// clock), the search runs until stopped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Stop after completing this many plies.
    pub depth: Option<u32>,
    /// Stop after about this many nodes.
    pub nodes: Option<u64>,
    /// Stop after the first completed iteration past this many nodes
    /// (data generation: whole iterations, about the same effort a move).
    pub soft_nodes: Option<u64>,
    /// Think exactly this long.
    pub movetime: Option<Duration>,
    /// Stop when a mate in at most this many moves is found.
    pub mate: Option<u32>,
    /// Search until told to stop (the best move is held back until then).
    pub infinite: bool,
    /// Only consider these root moves (empty = all).
    pub searchmoves: Vec<Move>,
    /// Time left on White's / Black's clock.
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    /// Increment per move.
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    /// Moves to the next time control (None = sudden death).
    pub movestogo: Option<u32>,
    /// Time kept in reserve per move for communication lag.
    pub move_overhead: Duration,
    /// The share of a thread the search can count on (the bot's games
    /// share `engine.threads`): a clock budget is scaled by it. None: a
    /// thread of its own (UCI).
    pub thread_share: Option<ThreadShare>,
}

/// The share of a search thread a search can count on, in thousandths
/// (at least [`ThreadShare::MIN`]): while other games' searches take the
/// thread, our clock runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ThreadShare(u16);

impl ThreadShare {
    /// The least share: a search is never planned below a 16th of its
    /// budget (the scheduler's cuts bound the rest).
    pub const MIN: f64 = 1.0 / 16.0;

    /// The share `fraction` (clamped to `MIN..=1`).
    pub fn new(fraction: f64) -> ThreadShare {
        let f = if fraction.is_nan() { 1.0 } else { fraction };
        ThreadShare((f.clamp(ThreadShare::MIN, 1.0) * 1000.0).round() as u16)
    }

    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 1000.0
    }

    /// `d` scaled by the share (never below a millisecond).
    pub fn of(self, d: Duration) -> Duration {
        d.mul_f64(self.fraction()).max(Duration::from_millis(1))
    }
}

impl Limits {
    /// Limits of a fixed-depth search.
    pub fn depth(depth: u32) -> Limits {
        Limits {
            depth: Some(depth),
            ..Limits::default()
        }
    }

    /// Limits of a fixed-node search.
    pub fn nodes(nodes: u64) -> Limits {
        Limits {
            nodes: Some(nodes),
            ..Limits::default()
        }
    }

    /// Whether a clock is given for the side to move.
    pub fn has_clock(&self, white_to_move: bool) -> bool {
        if white_to_move {
            self.wtime.is_some()
        } else {
            self.btime.is_some()
        }
    }
}
