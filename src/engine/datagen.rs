//! Training data for the tuner: fast self-play games from the opening
//! book at a fixed node count, each quiet position labelled with the
//! game's final result and the search score (both from White's view).
//! Output lines are `FEN [1.0] 35`: the result (`[1.0]`, `[0.5]` or
//! `[0.0]`) and the score in centipawns.
//!
//! Positions in check, positions whose best move is a capture or
//! promotion (the static eval would be taken mid-exchange) and positions
//! with a mate score are not written.

use super::limits::Limits;
use super::score::{MATE_BOUND, is_mate};
use super::search::{Searcher, search_blocking};
use super::tt::TranspositionTable;
use crate::chess::{CastlingNotation, Color, Outcome, Position};
use std::io::Write;

/// Settings of a data generation run.
#[derive(Clone, Debug)]
pub struct DatagenConfig {
    pub games: usize,
    pub nodes: u64,
    /// Random legal plies played after the book line, for variety.
    pub random_plies: usize,
    pub seed: u64,
}

/// A small deterministic PRNG (xorshift64*), good enough for openings.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Plays one game from `start` and returns the result (1.0 = White won)
/// and the quiet positions as FENs with White's search score.
fn play_game(
    start: &Position,
    cfg: &DatagenConfig,
    rng: &mut Rng,
    searcher: &mut Searcher,
    tt: &mut TranspositionTable,
) -> Option<(f32, Vec<(String, i32)>)> {
    let mut pos = start.clone();
    let mut history: Vec<u64> = Vec::new();
    for _ in 0..cfg.random_plies {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            return None;
        }
        history.push(pos.key());
        pos = pos.play(moves[rng.below(moves.len())]);
    }
    tt.clear();
    searcher.clear();
    let limits = Limits::nodes(cfg.nodes);
    let mut fens = Vec::new();
    let mut win_streak = 0;
    let mut draw_streak = 0;
    let result: f32 = loop {
        if let Some(outcome) = pos.outcome(&history) {
            break match outcome {
                Outcome::Checkmate {
                    winner: Color::White,
                } => 1.0,
                Outcome::Checkmate { .. } => 0.0,
                _ => 0.5,
            };
        }
        if history.len() > 400 {
            break 0.5;
        }
        tt.new_search();
        let r = search_blocking(searcher, tt, &pos, &history, &limits);
        let best = r.best?;
        let white_value = if pos.turn() == Color::White {
            r.value
        } else {
            -r.value
        };
        // Adjudicate clear wins and dead draws to save time.
        if white_value.abs() >= 1_500 {
            win_streak += 1;
            if win_streak >= 6 {
                break if white_value > 0 { 1.0 } else { 0.0 };
            }
        } else {
            win_streak = 0;
        }
        if history.len() >= 80 && white_value.abs() <= 8 {
            draw_streak += 1;
            if draw_streak >= 12 {
                break 0.5;
            }
        } else {
            draw_streak = 0;
        }
        let quiet = !pos.in_check()
            && !super::movepick::is_noisy(&pos, best)
            && !best.is_promotion()
            && !is_mate(r.value)
            && r.value.abs() < MATE_BOUND;
        if quiet {
            fens.push((pos.to_fen(CastlingNotation::XFen), white_value));
        }
        history.push(pos.key());
        pos = pos.play(best);
    };
    Some((result, fens))
}

/// Runs `cfg.games` games from random lines of `openings`, writing
/// labelled positions to `out`; `progress` gets (games done, positions).
pub fn run(
    openings: &[Position],
    cfg: &DatagenConfig,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(usize, usize),
) -> std::io::Result<usize> {
    let mut rng = Rng::new(cfg.seed);
    let mut searcher = Searcher::new();
    let mut tt = TranspositionTable::new(8);
    let mut written = 0;
    let start = Position::startpos();
    for g in 0..cfg.games {
        let opening = if openings.is_empty() {
            &start
        } else {
            &openings[rng.below(openings.len())]
        };
        if let Some((result, fens)) = play_game(opening, cfg, &mut rng, &mut searcher, &mut tt) {
            for (fen, score) in &fens {
                writeln!(out, "{fen} [{result:.1}] {score}")?;
            }
            written += fens.len();
        }
        progress(g + 1, written);
    }
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_labelled_quiet_positions() {
        let cfg = DatagenConfig {
            games: 2,
            nodes: 300,
            random_plies: 2,
            seed: 7,
        };
        let mut out = Vec::new();
        let n = run(&[], &cfg, &mut out, &mut |_, _| {}).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), n);
        assert!(n > 10);
        for line in text.lines() {
            let (rest, score) = line.rsplit_once(' ').unwrap();
            assert!(score.parse::<i32>().is_ok(), "{line}");
            let (fen, label) = rest.rsplit_once(' ').unwrap();
            assert!(["[1.0]", "[0.5]", "[0.0]"].contains(&label), "{line}");
            let pos = Position::from_fen(fen).unwrap();
            assert!(!pos.in_check());
        }
    }
}
