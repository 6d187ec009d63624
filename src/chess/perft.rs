//! Perft: counts the leaf nodes of the legal move tree, the correctness
//! oracle of move generation. The last ply is counted in bulk.

use super::position::Position;

/// Leaf nodes at `depth`.
pub fn perft(pos: &Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal(),
        _ => pos
            .legal_moves()
            .iter()
            .map(|&m| perft(&pos.play(m), depth - 1))
            .sum(),
    }
}

/// Leaf nodes below each root move (the `divide` of perft debugging).
pub fn divide(pos: &Position, depth: u32, chess960: bool) -> Vec<(String, u64)> {
    pos.legal_moves()
        .iter()
        .map(|&m| {
            (
                m.to_uci(chess960),
                perft(&pos.play(m), depth.saturating_sub(1)),
            )
        })
        .collect()
}
