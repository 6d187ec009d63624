//! `kaissa bench`: a fixed set of positions searched to a fixed depth on
//! one thread, with the table and history cleared between positions. The
//! total node count is the search's signature: any change that alters the
//! search changes it, and a change that should not, must not.

use super::limits::Limits;
use super::nnue::Network;
use super::search::{Searcher, search_blocking};
use super::tablebase::Tablebases;
use super::tt::TranspositionTable;
use crate::chess::Position;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default depth: about ten seconds on the development machine.
pub const DEFAULT_DEPTH: u32 = 16;

/// Openings, middlegames, endgames, tactics and Chess960 starts.
pub const POSITIONS: &[&str] = &[
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
    "r1q2rk1/2p1bppp/2Pp4/p6b/Q1PNp3/4B3/PP1R1PPP/2K4R w - - 2 18",
    "4k2r/1pb2ppp/1p2p3/1R1p4/3P4/2r1PN2/P4PPP/1R4K1 b - - 3 22",
    "3q2k1/pb3p1p/4pbp1/2r5/PpN2N2/1P2P2P/5PP1/Q2R2K1 b - - 4 26",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/8 b - - 3 54",
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "rnbqkb1r/pp3ppp/4pn2/2pp4/2PP4/2N2N2/PP2PPPP/R1BQKB1R w KQkq - 0 5",
    "r2q1rk1/pp1nbppp/2p1pn2/3p4/2PP1B2/2NBPN2/PP3PPP/R2QK2R w KQ - 2 9",
    "2rr3k/pp3pp1/1nnqbN1p/3pN3/2pP4/2P3Q1/PPB4P/R4RK1 w - - 0 1",
    "r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 1",
    "6k1/3b3r/1p1p4/p1n2p2/1PPNpP1q/P3Q1p1/1R1RB1P1/5K2 b - - 0 1",
    "r2r1n2/pp2bk2/2p1p2p/3q4/3PN1QP/2P3R1/P4PP1/5RK1 w - - 0 1",
    "8/8/8/8/5kp1/P7/8/1K1N4 w - - 0 1",
    "8/8/8/5N2/8/p7/8/2NK3k w - - 0 1",
    "8/3k4/8/8/8/4B3/4KB2/2B5 w - - 0 1",
    "8/8/1P6/5pr1/8/4R3/7k/2K5 w - - 0 1",
    "8/2p4P/8/kr6/6R1/8/8/1K6 w - - 0 1",
    "8/8/3P3k/8/1p6/8/1P6/1K3n2 b - - 0 1",
    "8/R7/2q5/8/6k1/8/1P5p/K6R w - - 0 124",
    "8/8/8/8/8/6k1/6p1/6K1 w - - 0 1",
    "7k/7P/6K1/8/3B4/8/8/8 b - - 0 1",
    "8/5pk1/6p1/8/5PP1/6K1/8/8 w - - 0 40",
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
    "2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9",
    "qbb1rnkr/ppp3pp/4n3/3ppp2/1P3PP1/8/P1PPPN1P/QBB1RNKR w HEhe - 0 9",
    "1nbrnbkr/p1ppp1pp/1p6/5p2/4q1PP/3P4/PPP1PP2/QNBRNBKR w HDhd - 1 9",
];

/// The outcome of a bench run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchResult {
    pub nodes: u64,
    pub time: Duration,
    /// Endgame table probes that answered (0 without tables).
    pub tb_hits: u64,
}

impl BenchResult {
    pub fn nps(&self) -> u64 {
        (self.nodes as u128 * 1_000_000 / self.time.as_micros().max(1)) as u64
    }
}

/// What a bench run searches with.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    /// The evaluation (`None`: hand-crafted).
    pub net: Option<Arc<Network>>,
    /// Endgame tables probed by the search (`None`: none; the signature
    /// is taken without).
    pub tablebases: Option<Arc<Tablebases>>,
    /// Only the positions of at most [`ENDGAME_PIECES`] pieces (where the
    /// tables come into play).
    pub endgames_only: bool,
}

/// The most pieces of a position `--endgames` keeps.
pub const ENDGAME_PIECES: u32 = 7;

/// Searches every bench position to `depth`; `progress` is called after
/// each with (index, FEN, nodes).
pub fn run(
    depth: u32,
    options: BenchOptions,
    progress: &mut dyn FnMut(usize, &str, u64),
) -> BenchResult {
    let mut tt = TranspositionTable::new(16);
    let mut searcher = Searcher::new();
    searcher.set_net(options.net);
    searcher.set_tablebases(options.tablebases);
    let limits = Limits::depth(depth);
    let mut nodes = 0;
    let mut tb_hits = 0;
    let start = Instant::now();
    for (i, fen) in POSITIONS.iter().enumerate() {
        let Ok(pos) = Position::from_fen(fen) else {
            continue;
        };
        if options.endgames_only && pos.occupied().count() > ENDGAME_PIECES {
            continue;
        }
        tt.clear();
        searcher.clear();
        let r = search_blocking(&mut searcher, &tt, &pos, &[], &limits);
        nodes += r.nodes;
        tb_hits += searcher.tb_hits();
        progress(i, fen, r.nodes);
    }
    BenchResult {
        nodes,
        time: start.elapsed(),
        tb_hits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_valid() {
        assert!(POSITIONS.len() >= 30);
        for fen in POSITIONS {
            assert!(Position::from_fen(fen).is_ok(), "{fen}");
        }
    }
}
