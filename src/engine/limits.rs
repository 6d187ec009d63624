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
