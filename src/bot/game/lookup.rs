//! The moves a game plays without a search, asked in this order before
//! the engine (built-in or external): the opening books that admit the
//! game (its variant, speed and our colour; every variant), the endgame
//! tables (local, instant: [`Sources::table_move`]), then Lichess's online
//! tablebase and cloud evaluation. Each only when it applies (book: within
//! its depth, a legal move for the position; tables: standard chess and
//! its set-ups, no castling rights and few enough pieces; online: no
//! local table covers the position, or early in a standard game) and the
//! clock allows. An online question runs in its own task with a short
//! timeout while the game goes on reading its stream; its answer comes
//! back as an `Asking` the game task waits on, and a stale or useless
//! answer sends the game to the search.

use super::mover::{Chosen, Thinking};
use super::player::Said;
use super::spawn_here;
use super::{Flow, Game, to_model};
use crate::bot::board::Record;
use crate::chess::Color;
use crate::config::GameBook;
use crate::engine::book::game_ply;
use crate::engine::sources::{Source, SourceMove, Sources};
use crate::engine::tablebase::Outcome;
use crate::engine::{Score, SearchInfo};
use crate::lichess::model::VariantKey;
use crate::lichess::online::{CHESSDB_DECISIVE, ExplorerDb, Health, Online, OnlineError};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The books and tables of the bot (opened once, shared by every game)
/// and its online sources.
#[derive(Debug, Default)]
pub struct MoveSources {
    /// Asked in order; a game asks those that admit it.
    pub books: Vec<GameBook>,
    pub local: Sources,
    pub online: Option<Online>,
}

/// An online question under way for the position at `ply`.
pub(super) struct Asking {
    pub(super) ply: usize,
    pub(super) key: u64,
    pub(super) answer: oneshot::Receiver<Option<(String, Source)>>,
}

/// Which online source a position is asked of.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Query {
    /// Lichess's tablebase server (standard, atomic, antichess).
    Tablebase,
    /// ChessDB's answer in an ending (its tablebase).
    ChessDbTablebase,
    /// Lichess's opening explorer.
    Explorer,
    /// ChessDB as a book.
    ChessDb,
    /// Lichess's cloud evaluation.
    CloudEval,
}

/// What the online sources need to know of the position asked about.
struct Asked {
    variant: VariantKey,
    /// Pieces on the board, kings included.
    pieces: u32,
    castling: bool,
    /// Plies since the game's start position.
    ply: u32,
    /// A local table answers it (the online tablebases are not asked).
    covered: bool,
}

impl Asked {
    /// The board and castling fields of the FEN: pieces (a crazyhouse
    /// pocket is not on the board) and whether any castling is left.
    fn board(fen: &str) -> (u32, bool) {
        let mut fields = fen.split_whitespace();
        let board = fields.next().unwrap_or_default();
        let board = board.split('[').next().unwrap_or_default();
        let pieces = board.chars().filter(char::is_ascii_alphabetic).count() as u32;
        let castling = fields.nth(1).is_some_and(|c| c != "-");
        (pieces, castling)
    }
}

/// The online sources that apply to the position, in the order they are
/// asked (the first with a move answers): the tablebases in an ending no
/// local table covers (Lichess's, then ChessDB's), else the opening
/// explorer, ChessDB and the cloud evaluation early in the game; not one
/// that rests after failing in a row. None when our clock (`clock`)
/// cannot spare their timeouts.
fn online_queries(online: &Online, asked: &Asked, clock: Option<Duration>) -> Vec<Query> {
    let o = &online.options;
    let standard = matches!(
        asked.variant,
        VariantKey::Standard | VariantKey::FromPosition
    );
    let native = standard || asked.variant == VariantKey::Chess960;
    let mut queries = Vec::new();
    let ending = !asked.castling && !asked.covered;
    let tablebase_variant = native
        || (o.tablebase_variants
            && matches!(asked.variant, VariantKey::Atomic | VariantKey::Antichess));
    if o.tablebase_url.is_some()
        && ending
        && tablebase_variant
        && asked.pieces <= o.tablebase_pieces
    {
        queries.push(Query::Tablebase);
    }
    if let Some(c) = &o.chessdb
        && c.tablebase
        && ending
        && native
        && asked.pieces <= 7
    {
        queries.push(Query::ChessDbTablebase);
    }
    if let Some(e) = &o.explorer {
        let served = match e.db {
            ExplorerDb::Masters => standard,
            _ => true,
        };
        if served && asked.ply < e.plies {
            queries.push(Query::Explorer);
        }
    }
    if let Some(c) = &o.chessdb
        && standard
        && asked.ply < c.plies
    {
        queries.push(Query::ChessDb);
    }
    if o.cloud_eval_url.is_some() && standard && asked.ply < o.cloud_eval_plies {
        queries.push(Query::CloudEval);
    }
    // A source that keeps failing rests (its timeout would be lost on
    // every move).
    queries.retain(|&q| !health(online, q).resting());
    // Each may take its whole timeout: keep five to spare besides.
    let need = o.min_clock.max(o.timeout * (4 + queries.len() as u32));
    if clock.is_some_and(|c| c < need) {
        return Vec::new();
    }
    queries
}

/// The tablebase server's category as an outcome (`None`: unknown).
fn category_outcome(category: &str) -> Option<Outcome> {
    Some(match category {
        "win" | "syzygy-win" | "maybe-win" => Outcome::Win,
        "cursed-win" => Outcome::CursedWin,
        "draw" => Outcome::Draw,
        "blessed-loss" => Outcome::BlessedLoss,
        "loss" | "syzygy-loss" | "maybe-loss" => Outcome::Loss,
        _ => return None,
    })
}

/// ChessDB's score in an ending as an outcome: beyond +-20000 a win or a
/// loss, 0 a draw, anything else unknown.
fn chessdb_outcome(score: i32) -> Option<Outcome> {
    match score {
        s if s >= CHESSDB_DECISIVE => Some(Outcome::Win),
        s if s <= -CHESSDB_DECISIVE => Some(Outcome::Loss),
        0 => Some(Outcome::Draw),
        _ => None,
    }
}

/// Asks `query` about the position (`fen`, in `variant`, `us_white` to
/// move); the answer is a move in UCI and its source, or `None`.
async fn ask_one(
    online: &Online,
    query: Query,
    variant: VariantKey,
    fen: &str,
    us_white: bool,
) -> Result<Option<(String, Source)>, OnlineError> {
    Ok(match query {
        Query::Tablebase => {
            let path = match variant {
                VariantKey::Atomic | VariantKey::Antichess => variant.as_str(),
                _ => "standard",
            };
            online.tablebase(path, fen).await?.and_then(|a| {
                let outcome = category_outcome(&a.category)?;
                Some((a.uci, Source::OnlineTablebase { outcome }))
            })
        }
        Query::ChessDbTablebase => online.chessdb(fen).await?.and_then(|m| {
            let outcome = chessdb_outcome(m.score)?;
            Some((m.uci, Source::OnlineTablebase { outcome }))
        }),
        Query::Explorer => online
            .explorer(variant.as_str(), fen, us_white)
            .await?
            .map(|m| {
                let source = Source::Explorer {
                    games: m.games,
                    score: m.score,
                };
                (m.uci, source)
            }),
        Query::ChessDb => online.chessdb(fen).await?.map(|m| {
            let source = Source::ChessDb {
                cp: m.score,
                depth: m.depth,
            };
            (m.uci, source)
        }),
        Query::CloudEval => online.cloud_eval(fen).await?.map(|e| {
            // White's view to ours; a mate counts as a decisive score.
            let white = e.cp.unwrap_or(match e.mate {
                Some(m) if m > 0 => 10_000,
                _ => -10_000,
            });
            let cp = if us_white { white } else { -white };
            (e.uci, Source::CloudEval { cp, depth: e.depth })
        }),
    })
}

/// The health of `query`'s source.
fn health(online: &Online, query: Query) -> &Health {
    match query {
        Query::Tablebase => &online.tablebase_health,
        Query::CloudEval => &online.cloud_eval_health,
        Query::Explorer => &online.explorer_health,
        Query::ChessDb | Query::ChessDbTablebase => &online.chessdb_health,
    }
}

/// Asks `queries` in turn about the position until one has a move: the
/// move in UCI and its source, or `None`. A source that starts failing is
/// warned about once, and said again when it answers.
async fn ask(
    online: Online,
    queries: Vec<Query>,
    variant: VariantKey,
    fen: String,
    us_white: bool,
) -> Option<(String, Source)> {
    for query in queries {
        let health = health(&online, query);
        match ask_one(&online, query, variant, &fen, us_white).await {
            Ok(answer) => {
                let failed = health.answered();
                if failed > 0 {
                    tracing::info!(source = ?query, failed, "online source answers again");
                }
                match answer {
                    Some(answer) => return Some(answer),
                    None => tracing::debug!(source = ?query, "online source: no move"),
                }
            }
            Err(e) if health.failed() == 1 => tracing::warn!(
                source = ?query,
                "online source failing: {e}; the search moves instead (until it answers again, its failures are logged at debug level)"
            ),
            Err(e) => tracing::debug!(source = ?query, "online source: {e}"),
        }
    }
    None
}

impl Game {
    /// Our turn, before the search: plays a book or table move at once, or
    /// starts an online question (then `Flow::Continue`: the answer comes
    /// through `asking`). `Flow::Think`: no source applies, search.
    pub(super) async fn before_search(&mut self, asking: &mut Option<Asking>) -> Flow {
        let (Some(us), Some(record), Some((state, arrived))) =
            (self.color, self.record.as_ref(), &self.state)
        else {
            return Flow::Think;
        };
        let ply = record.ply();
        let key = record.key();
        if !state.status.is_ongoing()
            || record.turn() != us
            || self.search.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return Flow::Continue;
        }
        if !self.refused.texts_at(ply, key).is_empty() {
            // A move was refused here (perhaps the source's): search
            // among the others.
            return Flow::Think;
        }
        if asking
            .as_ref()
            .is_some_and(|a| a.ply == ply && a.key == key)
        {
            // An online answer for this very position is on its way.
            return Flow::Continue;
        }
        let arrived = *arrived;
        let sources = std::sync::Arc::clone(&self.ctx.sources);
        if let Some((chosen, source)) = self.book_move(&sources.books) {
            return self.post_unsearched(chosen, source, None, arrived).await;
        }
        // Our clock as it stands now.
        let clock = self
            .limits(state, us, false)
            .1
            .map(|c| c.saturating_sub(arrived.elapsed()));
        // The local tables: standard chess and its set-ups. Their probes
        // read the table files (a page fault each, on a cold disk tens of
        // milliseconds), so they run off the runtime's workers, which the
        // other games' streams and clocks share.
        let native = record.native();
        let covered = native.filter(|r| {
            (sources.local.tablebases.as_ref()).is_some_and(|t| t.covers(r.position()))
        });
        if let Some(r) = covered {
            let pos = r.position().clone();
            let probe = std::sync::Arc::clone(&sources);
            let choice = tokio::task::spawn_blocking(move || probe.local.table_move(&pos)).await;
            if let Ok(Some(choice)) = choice {
                return self.play_source(choice, arrived).await;
            }
        }
        let Some(online) = &sources.online else {
            return Flow::Think;
        };
        if self.online_asked_at == Some(ply) {
            return Flow::Think;
        }
        let Some(variant) = self.facts.as_ref().map(|f| f.variant) else {
            return Flow::Think;
        };
        let fen = record.fen();
        let (pieces, castling) = Asked::board(&fen);
        let asked = Asked {
            variant,
            pieces,
            castling,
            ply: native.map_or(ply as u32, |r| game_ply(r.position())),
            covered: covered.is_some(),
        };
        let queries = online_queries(online, &asked, clock);
        if queries.is_empty() {
            return Flow::Think;
        }
        self.online_asked_at = Some(ply);
        let (tx, rx) = oneshot::channel();
        tracing::debug!(ply, sources = ?queries, "asking the online sources");
        let task = ask(online.clone(), queries, variant, fen, us == Color::White);
        spawn_here(async move {
            let _ = tx.send(task.await);
        });
        *asking = Some(Asking {
            ply,
            key,
            answer: rx,
        });
        Flow::Continue
    }

    /// An online source answered `asked`: plays its move if the position
    /// is still the one asked about and the move is legal, else searches.
    pub(super) async fn on_online(
        &mut self,
        asked: (usize, u64),
        answer: Option<(String, Source)>,
    ) -> Flow {
        let (Some(us), Some(record), Some((state, arrived))) =
            (self.color, self.record.as_ref(), &self.state)
        else {
            return Flow::Continue;
        };
        let ply = record.ply();
        if !state.status.is_ongoing()
            || record.turn() != us
            || self.search.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return Flow::Continue;
        }
        if (ply, record.key()) != asked {
            // The position changed meanwhile: answer the new one.
            return Flow::Think;
        }
        let arrived = *arrived;
        let Some((uci, source)) = answer else {
            return Flow::Think;
        };
        if let Some(native) = record.native() {
            let Ok(mv) = native.position().parse_uci(&uci, native.chess960()) else {
                return Flow::Think;
            };
            return self.play_source(SourceMove { mv, source }, arrived).await;
        }
        match record.legal(&uci) {
            Some((uci, san)) => {
                self.post_unsearched(Chosen { uci, san }, source, None, arrived)
                    .await
            }
            None => Flow::Think,
        }
    }

    /// The move of the first book that admits this game (its variant,
    /// speed and our colour) and holds a legal move for the position now:
    /// as posted, with its SAN, and its source.
    fn book_move(&self, books: &[GameBook]) -> Option<(Chosen, Source)> {
        let (us, record, facts) = (self.color?, self.record.as_ref()?, self.facts.as_ref()?);
        books
            .iter()
            .filter(|b| b.admits(facts.variant, facts.speed, to_model(us)))
            .find_map(|b| {
                let choice = record.book_move(&b.played, fastrand::f64())?;
                let (uci, san) = record.legal(&choice.mv)?;
                tracing::debug!(book = %b.name, mv = %uci, "book move");
                let source = Source::Book {
                    weight: choice.weight,
                    total: choice.total,
                };
                Some((Chosen { uci, san }, source))
            })
    }

    /// Posts a table's or an online source's move (standard chess and its
    /// set-ups), with the score the source gives it.
    async fn play_source(&mut self, choice: SourceMove, arrived: Instant) -> Flow {
        let Some(record) = self.record.as_ref().and_then(Record::native) else {
            return Flow::Continue;
        };
        let said = choice.source.value().map(|v| {
            Said::BuiltIn(SearchInfo {
                depth: 0,
                seldepth: 0,
                multipv: 1,
                score: Score::from_value(v),
                nodes: 0,
                nps: 0,
                time: Duration::ZERO,
                hashfull: 0,
                tbhits: 0,
                pv: vec![choice.mv],
            })
        });
        let chosen = Chosen {
            uci: choice.mv.to_uci(record.chess960()),
            san: record.position().san(choice.mv),
        };
        self.post_unsearched(chosen, choice.source, said, arrived)
            .await
    }

    /// Posts a move chosen without a search (logged with its source; what
    /// the source `said` of it, if anything, goes to the rules and the
    /// PGN as a search's report would).
    async fn post_unsearched(
        &mut self,
        chosen: Chosen,
        source: Source,
        said: Option<Said>,
        arrived: Instant,
    ) -> Flow {
        let (Some(us), Some(record), Some((state, _))) =
            (self.color, self.record.as_ref(), &self.state)
        else {
            return Flow::Continue;
        };
        let ply = record.ply();
        // The clock as it stood at the state's arrival (as for a search).
        let (_, clock) = self.limits(state, us, false);
        let now = Instant::now();
        let report = said.as_ref().and_then(|s| s.report(record));
        let answer = Thinking {
            id: None,
            ply,
            arrived,
            started: now,
            queued: Duration::ZERO,
            clock,
            said,
            source,
            searched_before: Duration::ZERO,
            permit: None,
        };
        self.play(answer, chosen, report, now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lichess::online::{ChessDbOptions, ExplorerOptions, ExplorerSort, OnlineOptions};

    fn online(explorer_db: ExplorerDb) -> Online {
        Online::new(OnlineOptions {
            tablebase_url: Some("http://127.0.0.1:1".to_owned()),
            tablebase_pieces: 8,
            tablebase_variants: true,
            cloud_eval_url: Some("http://127.0.0.1:1".to_owned()),
            cloud_eval_plies: 20,
            cloud_eval_min_depth: 20,
            explorer: Some(ExplorerOptions {
                url: "http://127.0.0.1:1".to_owned(),
                db: explorer_db,
                min_games: 10,
                sort: ExplorerSort::Games,
                plies: 10,
            }),
            chessdb: Some(ChessDbOptions {
                url: "http://127.0.0.1:1".to_owned(),
                plies: 30,
                min_depth: 20,
                tablebase: true,
            }),
            timeout: Duration::from_millis(500),
            min_clock: Duration::from_secs(5),
        })
        .unwrap()
    }

    fn asked(variant: VariantKey, fen: &str, ply: u32) -> Asked {
        let (pieces, castling) = Asked::board(fen);
        Asked {
            variant,
            pieces,
            castling,
            ply,
            covered: false,
        }
    }

    #[test]
    fn the_sources_that_apply_in_their_order() {
        use Query::*;
        let masters = online(ExplorerDb::Masters);
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        let opening = asked(VariantKey::Standard, start, 0);
        assert_eq!(
            online_queries(&masters, &opening, None),
            [Explorer, ChessDb, CloudEval]
        );
        // Past the explorer's 5 moves and the cloud's 10: ChessDB alone.
        let middle = asked(VariantKey::Standard, start, 24);
        assert_eq!(online_queries(&masters, &middle, None), [ChessDb]);
        // An 8-piece ending: Lichess's tablebase (op1), not ChessDB's (7).
        let six = "8/4k3/3p4/3P4/3K4/8/2N1n3/8 w - - 0 60";
        assert_eq!(Asked::board(six), (6, false));
        let eight = "8/4k3/2pp4/2PP4/3K4/8/2N1n3/8 w - - 0 60";
        let ending = asked(VariantKey::Standard, eight, 80);
        assert_eq!(online_queries(&masters, &ending, None), [Tablebase]);
        let small = asked(VariantKey::Standard, six, 80);
        assert_eq!(
            online_queries(&masters, &small, None),
            [Tablebase, ChessDbTablebase]
        );
        // Covered by a local table: no online tablebase.
        let covered = Asked {
            covered: true,
            ..asked(VariantKey::Standard, six, 80)
        };
        assert!(online_queries(&masters, &covered, None).is_empty());
        // Atomic and antichess endings ask Lichess's tables of the variant;
        // their openings ask the explorer only when it is not masters'.
        let atomic_end = asked(VariantKey::Atomic, "8/8/3k4/8/8/8/3QK3/8 w - - 0 30", 60);
        assert_eq!(online_queries(&masters, &atomic_end, None), [Tablebase]);
        let zh = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";
        let zh_opening = asked(VariantKey::Crazyhouse, zh, 0);
        assert!(online_queries(&masters, &zh_opening, None).is_empty());
        let lichess = online(ExplorerDb::Lichess {
            speeds: vec![],
            ratings: vec![],
        });
        assert_eq!(online_queries(&lichess, &zh_opening, None), [Explorer]);
        let horde_end = asked(VariantKey::Horde, "8/8/3k4/8/8/8/3P4/8 w - - 0 30", 60);
        assert!(online_queries(&lichess, &horde_end, None).is_empty());
        // Short of time: three sources need 5 s and 7 timeouts of 0.5 s.
        let short = Some(Duration::from_millis(3400));
        assert!(online_queries(&masters, &opening, short).is_empty());
        let enough = Some(Duration::from_millis(5000));
        assert_eq!(online_queries(&masters, &opening, enough).len(), 3);
        // A source failing in a row rests; the others are asked.
        for _ in 0..crate::lichess::online::RESTS_AFTER {
            masters.explorer_health.failed();
        }
        assert_eq!(
            online_queries(&masters, &opening, enough),
            [ChessDb, CloudEval]
        );
        masters.explorer_health.answered();
        assert_eq!(online_queries(&masters, &opening, enough).len(), 3);
    }

    #[test]
    fn chessdb_scores_in_endings() {
        assert_eq!(chessdb_outcome(29_970), Some(Outcome::Win));
        assert_eq!(chessdb_outcome(-20_000), Some(Outcome::Loss));
        assert_eq!(chessdb_outcome(0), Some(Outcome::Draw));
        assert_eq!(chessdb_outcome(150), None);
    }
}
