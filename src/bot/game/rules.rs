//! The pure rules of a game: scores in centipawns, when a position is
//! dead equal (draw offers and answers) or hopeless (resigning), and how
//! scores and lines are shown (PGN comments, chat). No I/O, no state.

use super::super::pgn::Eval;
use crate::chess::{self, Move, Position};
use crate::config::BotConfig;
use crate::engine::Score;

/// A mate score counts as this many centipawns in the draw/resign rules.
const MATE_CP: i32 = 100_000;

/// A score in centipawns, mates counted as huge.
pub(super) fn score_cp(score: Score) -> i32 {
    match score {
        Score::Cp(cp) => cp,
        Score::Mate(n) if n > 0 => MATE_CP - n,
        Score::Mate(n) => -MATE_CP - n,
    }
}

/// `+0.35`, `-1.20`, `#3`, `#-2`.
pub(super) fn score_text(eval: Eval) -> String {
    match eval {
        Eval::Cp(cp) => format!("{:+.2}", cp as f64 / 100.0),
        Eval::Mate(n) => format!("#{n}"),
    }
}

/// The engine's score (side to move's view) as White sees it.
pub(super) fn white_eval(score: Score, mover: chess::Color) -> Eval {
    let sign = if mover == chess::Color::White { 1 } else { -1 };
    match score {
        Score::Cp(cp) => Eval::Cp(sign * cp),
        Score::Mate(n) => Eval::Mate(sign * n),
    }
}

/// The first moves of a principal variation in SAN.
pub(super) fn pv_san(pos: &Position, pv: &[Move], max: usize) -> String {
    let mut pos = pos.clone();
    let mut out = Vec::new();
    for &m in pv.iter().take(max) {
        if !pos.legal_moves().iter().any(|&l| l == m) {
            break;
        }
        out.push(pos.san(m));
        pos = pos.play(m);
    }
    out.join(" ")
}

/// Whether our last `draw_moves` scores (ours, in centipawns) were all
/// within `draw_score_cp` of 0.
pub(super) fn dead_equal(scores: &[i32], bot: &BotConfig) -> bool {
    let n = bot.draw_moves as usize;
    scores.len() >= n
        && scores[scores.len() - n..]
            .iter()
            .all(|s| s.unsigned_abs() <= bot.draw_score_cp)
}

/// Whether resigning is on and our last `resign_moves` scores were all at
/// or below `-resign_score_cp`.
pub(super) fn hopeless(scores: &[i32], bot: &BotConfig) -> bool {
    let n = bot.resign_moves as usize;
    let floor = -i32::try_from(bot.resign_score_cp).unwrap_or(i32::MAX);
    bot.resign_enabled
        && scores.len() >= n
        && scores[scores.len() - n..].iter().all(|&s| s <= floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_and_evals() {
        assert_eq!(score_cp(Score::Cp(-35)), -35);
        assert!(score_cp(Score::Mate(3)) > 90_000);
        assert!(score_cp(Score::Mate(-2)) < -90_000);
        assert_eq!(
            white_eval(Score::Cp(50), chess::Color::Black),
            Eval::Cp(-50)
        );
        assert_eq!(
            white_eval(Score::Mate(2), chess::Color::Black),
            Eval::Mate(-2)
        );
        assert_eq!(score_text(Eval::Cp(35)), "+0.35");
        assert_eq!(score_text(Eval::Cp(-120)), "-1.20");
        assert_eq!(score_text(Eval::Mate(-2)), "#-2");
    }

    #[test]
    fn pv_in_san_stops_at_an_illegal_move() {
        let pos = Position::startpos();
        let e4 = pos.parse_uci("e2e4", false).unwrap();
        let after = pos.play(e4);
        let e5 = after.parse_uci("e7e5", false).unwrap();
        assert_eq!(pv_san(&pos, &[e4, e5], 6), "e4 e5");
        assert_eq!(pv_san(&pos, &[e4, e4], 6), "e4");
    }

    #[test]
    fn draw_and_resign_rules() {
        let bot = BotConfig {
            resign_enabled: true,
            resign_moves: 3,
            resign_score_cp: u32::MAX,
            draw_moves: 2,
            draw_score_cp: 10,
            ..BotConfig::default()
        };
        // A resign threshold beyond i32 never wraps into "resign at once".
        assert!(!hopeless(&[0, 0, 0], &bot));
        assert!(!hopeless(&[-90_000, -90_000, -90_000], &bot));
        let bot = BotConfig {
            resign_score_cp: 500,
            ..bot
        };
        assert!(hopeless(&[0, -600, -500, -99_000], &bot));
        assert!(!hopeless(&[-600, -499, -600], &bot));
        assert!(!hopeless(&[-600, -600], &bot));
        assert!(dead_equal(&[300, 5, -10], &bot));
        assert!(!dead_equal(&[5, 11], &bot));
        assert!(!dead_equal(&[5], &bot));
    }
}
