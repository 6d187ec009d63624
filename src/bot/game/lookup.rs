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
use crate::chess::{CastlingNotation, Color, Position};
use crate::config::GameBook;
use crate::engine::book::game_ply;
use crate::engine::sources::{Source, SourceMove, Sources};
use crate::engine::tablebase::Outcome;
use crate::engine::{Score, SearchInfo};
use crate::lichess::online::Online;
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

/// Which online source a position is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Query {
    Tablebase,
    CloudEval,
}

/// The online source that applies to `pos` with `clock` on our clock, if
/// any: the tablebase when no local table covers the position, else the
/// cloud evaluation early in a standard game.
fn online_query(
    online: &Online,
    local: &Sources,
    pos: &Position,
    chess960: bool,
    clock: Option<Duration>,
) -> Option<Query> {
    let o = &online.options;
    if clock.is_some_and(|c| c < o.min_clock.max(o.timeout * 5)) {
        return None;
    }
    let covered = local.tablebases.as_ref().is_some_and(|t| t.covers(pos));
    if o.tablebase_url.is_some()
        && !covered
        && pos.castle_rooks().is_empty()
        && pos.occupied().count() <= o.tablebase_pieces
    {
        return Some(Query::Tablebase);
    }
    if o.cloud_eval_url.is_some() && !chess960 && game_ply(pos) < o.cloud_eval_plies {
        return Some(Query::CloudEval);
    }
    None
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

/// Asks `query` about `fen` (`us` to move); the answer is a move in UCI
/// and its source, or `None` (logged).
async fn ask(online: Online, query: Query, fen: String, us: Color) -> Option<(String, Source)> {
    let answer = match query {
        Query::Tablebase => online.tablebase(&fen).await.map(|a| {
            a.and_then(|a| {
                let outcome = category_outcome(&a.category)?;
                Some((a.uci, Source::OnlineTablebase { outcome }))
            })
        }),
        Query::CloudEval => online.cloud_eval(&fen).await.map(|e| {
            e.map(|e| {
                // White's view to ours; a mate counts as a decisive score.
                let white = e.cp.unwrap_or(match e.mate {
                    Some(m) if m > 0 => 10_000,
                    _ => -10_000,
                });
                let cp = if us == Color::White { white } else { -white };
                (e.uci, Source::CloudEval { cp, depth: e.depth })
            })
        }),
    };
    let health = match query {
        Query::Tablebase => &online.tablebase_health,
        Query::CloudEval => &online.cloud_eval_health,
    };
    match answer {
        Ok(answer) => {
            let failed = health.answered();
            if failed > 0 {
                tracing::info!(source = ?query, failed, "online source answers again");
            }
            if answer.is_none() {
                tracing::debug!(source = ?query, "online source: no move");
            }
            answer
        }
        Err(e) if health.failed() == 1 => {
            tracing::warn!(
                source = ?query,
                "online source failing: {e}; the search moves instead (until it answers again, its failures are logged at debug level)"
            );
            None
        }
        Err(e) => {
            tracing::debug!(source = ?query, "online source: {e}");
            None
        }
    }
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
        // The tables and the online sources: standard chess and its
        // set-ups.
        let Some(record) = record.native() else {
            return Flow::Think;
        };
        let pos = record.position();
        let chess960 = record.chess960();
        // Our clock as it stands now.
        let clock = self
            .limits(state, us, false)
            .1
            .map(|c| c.saturating_sub(arrived.elapsed()));
        if let Some(choice) = sources.local.table_move(pos) {
            return self.play_source(choice, arrived).await;
        }
        let Some(online) = &sources.online else {
            return Flow::Think;
        };
        if self.online_asked_at == Some(ply) {
            return Flow::Think;
        }
        let Some(query) = online_query(online, &sources.local, pos, chess960, clock) else {
            return Flow::Think;
        };
        self.online_asked_at = Some(ply);
        let (tx, rx) = oneshot::channel();
        let fen = pos.to_fen(CastlingNotation::XFen);
        let task = ask(online.clone(), query, fen, us);
        spawn_here(async move {
            let _ = tx.send(task.await);
        });
        tracing::debug!(ply, source = ?query, "asking an online source");
        *asking = Some(Asking {
            ply,
            key: pos.key(),
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
        let (Some(us), Some(record), Some((state, arrived))) = (
            self.color,
            self.record.as_ref().and_then(Record::native),
            &self.state,
        ) else {
            return Flow::Continue;
        };
        let pos = record.position();
        let ply = record.ply();
        if !state.status.is_ongoing()
            || pos.turn() != us
            || self.search.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return Flow::Continue;
        }
        if (ply, pos.key()) != asked {
            // The position changed meanwhile: answer the new one.
            return Flow::Think;
        }
        let arrived = *arrived;
        let legal = answer.and_then(|(uci, source)| {
            let mv = pos.parse_uci(&uci, record.chess960()).ok()?;
            Some(SourceMove { mv, source })
        });
        match legal {
            Some(choice) => self.play_source(choice, arrived).await,
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
