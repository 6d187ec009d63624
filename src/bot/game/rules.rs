//! The pure rules of a game: scores in centipawns, when we offer or
//! accept a draw and when we resign (the scores, the opponent, the game's
//! length, the opponent's clock, the endgame tables), and how scores and
//! lines are shown (PGN comments, chat). No I/O, no state.

use crate::bot::store::pgn::{EngineNote, Eval};
use crate::chess::{self, Move, Position};
use crate::config::BotConfig;
use crate::engine::Score;
use std::time::Duration;

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

/// What the draw and resign rules know of a game besides our scores.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Standing {
    /// Our moves so far in this game.
    pub(super) our_moves: usize,
    /// The opponent is a bot (or Lichess's AI).
    pub(super) against_bot: bool,
    /// The opponent's clock, when they have no increment.
    pub(super) opponent_clock_no_increment: Option<Duration>,
    /// The endgame tables said the position after our last move is drawn.
    pub(super) tablebase_draw: bool,
    /// No draw in this game: an arena's, with `tournaments.draws` off.
    pub(super) draws_barred: bool,
}

/// Whether our last `draw_moves` scores (ours, in centipawns) were all
/// within `draw_score_cp` of 0.
fn dead_equal(scores: &[i32], bot: &BotConfig) -> bool {
    let n = bot.draw_moves as usize;
    scores.len() >= n
        && scores[scores.len() - n..]
            .iter()
            .all(|s| s.unsigned_abs() <= bot.draw_score_cp)
}

/// Whether our last `resign_moves` scores were all at or below
/// `-resign_score_cp`.
fn hopeless(scores: &[i32], bot: &BotConfig) -> bool {
    let n = bot.resign_moves as usize;
    let floor = -i32::try_from(bot.resign_score_cp).unwrap_or(i32::MAX);
    scores.len() >= n && scores[scores.len() - n..].iter().all(|&s| s <= floor)
}

/// Whether the opponent, without increment, is short enough of time that
/// they may lose on it: no draw and no resignation then.
fn opponent_may_flag(standing: &Standing, bot: &BotConfig) -> bool {
    standing
        .opponent_clock_no_increment
        .is_some_and(|c| c < Duration::from_secs(bot.opponent_low_time_secs))
}

/// Whether the position is drawn by our scores or by the tables.
fn drawn(scores: &[i32], standing: &Standing, bot: &BotConfig) -> bool {
    (bot.tablebase_draws && standing.tablebase_draw) || dead_equal(scores, bot)
}

/// Whether we offer a draw with our move.
pub(super) fn offer_draw(scores: &[i32], standing: &Standing, bot: &BotConfig) -> bool {
    bot.offer_draw
        && !standing.draws_barred
        && bot.draw_opponents.admits(standing.against_bot)
        && standing.our_moves >= bot.draw_resign_min_moves as usize
        && !opponent_may_flag(standing, bot)
        && drawn(scores, standing, bot)
}

/// Lila takes a draw offer from ply 2 on, and not within 20 plies of the
/// same player's last one (`playerCanOfferDraw`).
const DRAW_OFFER_FIRST_PLY: usize = 2;
const DRAW_OFFER_GAP: usize = 20;

/// Whether a draw offer may go with our move at `ply`, our last having
/// gone at `last`: every `draw_moves` of our moves at most, and never one
/// that lila would drop without a word.
pub(super) fn draw_offer_due(ply: usize, last: Option<usize>, draw_moves: u32) -> bool {
    let gap = (2 * draw_moves as usize).max(DRAW_OFFER_GAP + 1);
    ply >= DRAW_OFFER_FIRST_PLY && last.is_none_or(|at| ply >= at + gap)
}

/// Whether we accept the opponent's draw offer (whatever the game's
/// length: the offer is theirs).
pub(super) fn accept_draw(scores: &[i32], standing: &Standing, bot: &BotConfig) -> bool {
    bot.accept_draw
        && !standing.draws_barred
        && bot.draw_opponents.admits(standing.against_bot)
        && !opponent_may_flag(standing, bot)
        && drawn(scores, standing, bot)
}

/// Whether we resign instead of moving.
pub(super) fn resign(scores: &[i32], standing: &Standing, bot: &BotConfig) -> bool {
    bot.resign_enabled
        && bot.resign_opponents.admits(standing.against_bot)
        && standing.our_moves >= bot.draw_resign_min_moves as usize
        && !opponent_may_flag(standing, bot)
        && hopeless(scores, bot)
}

/// What the searches said of our moves: the rules read the scores, the
/// PGN the evaluations, the chat's `!eval` the last view.
#[derive(Debug, Default)]
pub(super) struct Judged {
    /// What the engine said of each of our moves (its evaluation from
    /// White's side, depth and line), for the PGN.
    pub(super) notes: Vec<Option<EngineNote>>,
    /// Our score after each of our moves (our view, centipawns).
    pub(super) scores: Vec<i32>,
    pub(super) view: crate::bot::chat::EngineView,
    /// The tables called the position after our last move a draw.
    pub(super) tablebase_draw: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Opponents;

    #[test]
    fn draw_offers_go_only_where_lila_takes_them() {
        // Not before ply 2.
        assert!(!draw_offer_due(0, None, 1));
        assert!(!draw_offer_due(1, None, 1));
        assert!(draw_offer_due(2, None, 1));
        // Not within 20 plies of the last (lila: `last >= ply - 20`).
        assert!(!draw_offer_due(22, Some(2), 1));
        assert!(draw_offer_due(23, Some(2), 1));
        assert!(!draw_offer_due(24, Some(4), 10));
        assert!(draw_offer_due(25, Some(4), 10));
        // A longer draw_moves spaces them further.
        assert!(!draw_offer_due(33, Some(4), 15));
        assert!(draw_offer_due(34, Some(4), 15));
    }

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
            draw_resign_min_moves: 0,
            ..BotConfig::default()
        };
        let any = Standing::default();
        // A resign threshold beyond i32 never wraps into "resign at once".
        assert!(!resign(&[0, 0, 0], &any, &bot));
        assert!(!resign(&[-90_000, -90_000, -90_000], &any, &bot));
        let bot = BotConfig {
            resign_score_cp: 500,
            ..bot
        };
        assert!(resign(&[0, -600, -500, -99_000], &any, &bot));
        assert!(!resign(&[-600, -499, -600], &any, &bot));
        assert!(!resign(&[-600, -600], &any, &bot));
        assert!(offer_draw(&[300, 5, -10], &any, &bot));
        assert!(accept_draw(&[300, 5, -10], &any, &bot));
        assert!(!offer_draw(&[5, 11], &any, &bot));
        assert!(!offer_draw(&[5], &any, &bot));
        let off = BotConfig {
            resign_enabled: false,
            offer_draw: false,
            accept_draw: false,
            ..bot.clone()
        };
        assert!(!resign(&[-600; 3], &any, &off));
        assert!(!offer_draw(&[0; 3], &any, &off));
        assert!(!accept_draw(&[0; 3], &any, &off));
    }

    #[test]
    fn resign_is_off_by_default() {
        let bot = BotConfig::default();
        assert!(!resign(
            &[-99_000; 50],
            &Standing {
                our_moves: 50,
                ..Standing::default()
            },
            &bot
        ));
    }

    #[test]
    fn no_draw_or_resignation_while_the_opponent_may_flag() {
        let bot = BotConfig {
            resign_enabled: true,
            resign_moves: 1,
            draw_moves: 1,
            draw_resign_min_moves: 0,
            opponent_low_time_secs: 60,
            ..BotConfig::default()
        };
        let flagging = Standing {
            opponent_clock_no_increment: Some(Duration::from_secs(59)),
            ..Standing::default()
        };
        assert!(!resign(&[-5000], &flagging, &bot));
        assert!(!offer_draw(&[0], &flagging, &bot));
        assert!(!accept_draw(&[0], &flagging, &bot));
        let plenty = Standing {
            opponent_clock_no_increment: Some(Duration::from_secs(60)),
            ..Standing::default()
        };
        assert!(resign(&[-5000], &plenty, &bot));
        assert!(offer_draw(&[0], &plenty, &bot));
        // With an increment (no clock to watch) the rule does not apply.
        assert!(resign(&[-5000], &Standing::default(), &bot));
        let off = BotConfig {
            opponent_low_time_secs: 0,
            ..bot
        };
        assert!(resign(&[-5000], &flagging, &off));
    }

    #[test]
    fn a_minimum_game_length_and_separate_rules_for_humans_and_bots() {
        let bot = BotConfig {
            resign_enabled: true,
            resign_moves: 1,
            draw_moves: 1,
            draw_resign_min_moves: 20,
            resign_opponents: Opponents::Bots,
            draw_opponents: Opponents::Humans,
            ..BotConfig::default()
        };
        let human = |our_moves| Standing {
            our_moves,
            ..Standing::default()
        };
        let bot_at = |our_moves| Standing {
            our_moves,
            against_bot: true,
            ..Standing::default()
        };
        assert!(!resign(&[-5000], &bot_at(19), &bot));
        assert!(resign(&[-5000], &bot_at(20), &bot));
        assert!(!resign(&[-5000], &human(40), &bot));
        assert!(!offer_draw(&[0], &human(19), &bot));
        assert!(offer_draw(&[0], &human(20), &bot));
        // An offer of theirs is answered whatever the game's length.
        assert!(accept_draw(&[0], &human(3), &bot));
        assert!(!offer_draw(&[0], &bot_at(40), &bot));
        assert!(!accept_draw(&[0], &bot_at(40), &bot));
    }

    #[test]
    fn the_tables_draw_at_once() {
        let bot = BotConfig {
            draw_moves: 10,
            draw_resign_min_moves: 0,
            ..BotConfig::default()
        };
        let tb = Standing {
            tablebase_draw: true,
            ..Standing::default()
        };
        assert!(offer_draw(&[150], &tb, &bot));
        assert!(accept_draw(&[150], &tb, &bot));
        assert!(!offer_draw(&[150], &Standing::default(), &bot));
        let off = BotConfig {
            tablebase_draws: false,
            ..bot
        };
        assert!(!offer_draw(&[150], &tb, &off));
    }

    #[test]
    fn no_draw_where_the_tournament_bars_it() {
        let bot = BotConfig {
            draw_resign_min_moves: 0,
            ..BotConfig::default()
        };
        let tb = Standing {
            tablebase_draw: true,
            ..Standing::default()
        };
        assert!(offer_draw(&[0], &tb, &bot) && accept_draw(&[0], &tb, &bot));
        let barred = Standing {
            draws_barred: true,
            ..tb
        };
        assert!(!offer_draw(&[0], &barred, &bot));
        assert!(!accept_draw(&[0], &barred, &bot));
    }
}
