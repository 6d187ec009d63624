//! 32-byte training records into chunk games: `kaissa chunk convert`.
//!
//! A record file keeps only the quiet positions of each game, without
//! castling rights, so the games are rebuilt: game g's opening is played
//! again from the run's seed (as `kaissa datagen` chose it), and each
//! recorded position is reached from the one before by the shortest line
//! of legal moves that leads to it (a short search: the positions left
//! out between two records are a few checks and captures), whose first
//! move is quiet (the record was kept for its quiet best move). The
//! positions on such a line have no score. Where no line is found, the game goes on
//! as a new game from the record's position (no castling rights).

use super::chunk::Game;
use super::datagen;
use super::packed::PackedBoard;
use crate::chess::{CastleSide, Color, Move, Position, Role};
use crate::engine::movepick::is_noisy;

/// The longest line searched between two records, in plies.
const MAX_BRIDGE: usize = 8;
/// Positions visited at most for one line.
const BRIDGE_NODES: u64 = 100_000;

/// How the records of a datagen run were made.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub seed: u64,
    pub random_plies: (usize, usize),
}

/// What a conversion did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// Games of the records (record game numbers).
    pub source_games: u64,
    pub records: u64,
    /// Games written: one a source game, plus one for each break.
    pub games: u64,
    /// Unscored plies put in between records.
    pub bridged: u64,
    /// Records whose line was not found (each starts a new game).
    pub breaks: u64,
    /// Source games whose opening did not lead to their first record.
    pub openings_missed: u64,
}

/// A record's board as 12 bitboards and the side to move.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Target {
    bb: [[u64; 6]; 2],
    turn: Color,
}

impl Target {
    fn of_record(r: &PackedBoard) -> Target {
        let mut bb = [[0u64; 6]; 2];
        for (sq, p) in r.pieces() {
            bb[p.color as usize][p.role as usize] |= 1 << sq.index();
        }
        Target {
            bb,
            turn: r.side_to_move(),
        }
    }

    fn of_position(pos: &Position) -> Target {
        let mut bb = [[0u64; 6]; 2];
        for c in [Color::White, Color::Black] {
            for r in Role::ALL {
                bb[c as usize][r as usize] = pos.pieces(c, r).0;
            }
        }
        Target {
            bb,
            turn: pos.turn(),
        }
    }

    /// Squares holding a piece of `c` in the target that `pos` does not
    /// have there: each move of `c` fills at most one (castling two).
    fn missing(&self, pos: &Position, c: Color) -> u32 {
        Role::ALL
            .iter()
            .map(|&r| (self.bb[c as usize][r as usize] & !pos.pieces(c, r).0).count_ones())
            .sum()
    }
}

/// Whether `pos` cannot reach `t` in `plies` more plies.
fn too_far(pos: &Position, t: &Target, plies: usize) -> bool {
    [Color::White, Color::Black].into_iter().any(|c| {
        let own = if pos.turn() == c {
            plies.div_ceil(2)
        } else {
            plies / 2
        };
        let can_castle = [CastleSide::King, CastleSide::Queen]
            .into_iter()
            .any(|s| pos.castle_rook(c, s).is_some());
        t.missing(pos, c) as usize > own + usize::from(can_castle && own > 0)
    })
}

fn bridge_from(
    pos: &Position,
    t: &Target,
    plies: usize,
    quiet_first: bool,
    line: &mut Vec<Move>,
    budget: &mut u64,
) -> bool {
    if plies == 0 {
        return Target::of_position(pos) == *t;
    }
    if *budget == 0 || too_far(pos, t, plies) {
        return false;
    }
    *budget -= 1;
    // From a record, the move played was quiet (that is why it was kept).
    let quiet_only = quiet_first && line.is_empty();
    for &m in pos.legal_moves().iter() {
        if quiet_only && (is_noisy(pos, m) || m.is_promotion()) {
            continue;
        }
        line.push(m);
        if bridge_from(&pos.play(m), t, plies - 1, quiet_first, line, budget) {
            return true;
        }
        line.pop();
    }
    false
}

/// Where a line starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum From {
    /// The end of the replayed opening: the first record may be there.
    Opening,
    /// A record: the line has a ply at least, and its first move is quiet.
    Record,
}

/// The shortest line of legal moves from `pos` to `t`, if one of at most
/// `MAX_BRIDGE` plies is found.
fn bridge(pos: &Position, t: &Target, from: From) -> Option<Vec<Move>> {
    let parity = usize::from(pos.turn() != t.turn);
    let least = if from == From::Record && parity == 0 {
        2
    } else {
        parity
    };
    let mut budget = BRIDGE_NODES;
    (least..=MAX_BRIDGE).step_by(2).find_map(|plies| {
        let mut line = Vec::new();
        bridge_from(pos, t, plies, from == From::Record, &mut line, &mut budget).then_some(line)
    })
}

/// The game of one group of records (one source game): its opening
/// played again, then each record reached in turn.
fn rebuild(records: &[PackedBoard], origin: &Origin, out: &mut Vec<Game>, stats: &mut Converted) {
    let first = &records[0];
    let opening = datagen::opening(&[], origin.random_plies, origin.seed, first.game)
        .map(|(g, _)| g)
        .filter(|g| {
            let end = g.positions().pop().expect("a position");
            bridge(&end, &Target::of_record(first), From::Opening).is_some()
        });
    if opening.is_none() {
        stats.openings_missed += 1;
    }
    let mut game: Option<Game> = opening;
    for r in records {
        let target = Target::of_record(r);
        let line = game.as_ref().and_then(|g| {
            let end = g.positions().pop().expect("a position");
            let from = match g.scores.last() {
                Some(Some(_)) => From::Record,
                _ => From::Opening,
            };
            bridge(&end, &target, from)
        });
        match (line, game.as_mut()) {
            (Some(line), Some(g)) => {
                stats.bridged += line.len().saturating_sub(1) as u64;
                for m in line {
                    let kept = *g.scores.last().expect("a score slot");
                    g.push(m, kept);
                }
            }
            _ => {
                if game.is_some() {
                    stats.breaks += 1;
                }
                if let Some(g) = game.take() {
                    out.push(g);
                }
                let start = r.to_position().unwrap_or_else(Position::startpos);
                game = Some(Game::new(start));
            }
        }
        let g = game.as_mut().expect("a game is open");
        g.result = r.result;
        *g.scores.last_mut().expect("a score slot") = Some(i32::from(r.score));
    }
    out.extend(game);
}

/// Rebuilds the games of `records` (one datagen file, games contiguous).
pub fn convert(records: &[PackedBoard], origin: &Origin) -> (Vec<Game>, Converted) {
    let mut stats = Converted {
        records: records.len() as u64,
        ..Converted::default()
    };
    let mut out = Vec::new();
    for group in records.chunk_by(|a, b| a.game == b.game) {
        stats.source_games += 1;
        rebuild(group, origin, &mut out, &mut stats);
    }
    stats.games = out.len() as u64;
    (out, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::chunk::Filter;
    use crate::tools::datagen::{DatagenConfig, Player};
    use crate::tools::packed::GameResult;

    /// What the old `kaissa datagen` wrote for a game: its quiet records.
    fn old_records(game: &Game, number: u32) -> Vec<PackedBoard> {
        Filter::default().records(game, number)
    }

    #[test]
    fn datagen_games_are_rebuilt_from_their_quiet_records() {
        let cfg = DatagenConfig::default();
        let mut player = Player::new(300, 1);
        let origin = Origin {
            seed: 11,
            random_plies: cfg.random_plies,
        };
        let mut records = Vec::new();
        let mut originals = Vec::new();
        for number in 0..3 {
            if let Some(g) = player.play(&[], origin.random_plies, origin.seed, number) {
                records.extend(old_records(&g, number));
                originals.push(g);
            }
        }
        let (games, stats) = convert(&records, &origin);
        assert_eq!(stats.openings_missed, 0, "{stats:?}");
        assert_eq!(stats.games, originals.len() as u64 + stats.breaks);
        // Every record comes back, in order, with its score and result.
        let key = |r: &PackedBoard| (r.to_fen(), r.score, r.result);
        let back: Vec<_> = games.iter().flat_map(|g| old_records(g, 0)).collect();
        assert_eq!(
            back.iter().map(key).collect::<Vec<_>>(),
            records.iter().map(key).collect::<Vec<_>>()
        );
        // A game rebuilt whole has the game played's start and length, up
        // to its last record (between two records the bridging search may
        // pick another move that reaches the next one: which is the net's
        // choice, so the moves themselves are not compared).
        let first = &games[0];
        assert_eq!(first.start, originals[0].start);
        if stats.breaks == 0 {
            for (g, o) in games.iter().zip(&originals) {
                assert!(g.moves.len() <= o.moves.len());
                assert_eq!(g.moves[..8], o.moves[..8]);
            }
        }
    }

    #[test]
    fn a_record_out_of_reach_starts_a_new_game() {
        let start = Position::from_fen("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1").unwrap();
        let far = Position::from_fen("8/8/8/3k4/8/8/8/R3K3 w - - 0 1").unwrap();
        let mut records = Vec::new();
        // Game 0 of seed 5: its opening, then a record it cannot reach.
        let (opening, _) = datagen::opening(&[], (8, 9), 5, 0).unwrap();
        let end = opening.positions().pop().unwrap();
        records.push(PackedBoard::from_position(&end, 10, GameResult::Draw, 0));
        records.push(PackedBoard::from_position(&far, 20, GameResult::Draw, 0));
        records.push(PackedBoard::from_position(&start, 30, GameResult::Draw, 1));
        let origin = Origin {
            seed: 5,
            random_plies: (8, 9),
        };
        let (games, stats) = convert(&records, &origin);
        assert_eq!(stats.breaks, 1);
        assert_eq!(
            stats.openings_missed, 1,
            "game 1's opening is not the record"
        );
        assert_eq!(games.len(), 3);
        assert_eq!(games[0].moves, opening.moves);
        assert_eq!(games[0].scores.last(), Some(&Some(10)));
        assert_eq!(games[1].start, far);
        assert_eq!(games[2].scores, vec![Some(30)]);
    }
}
