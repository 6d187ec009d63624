//! The search for our move by an external UCI engine (`[engines.NAME]`):
//! the `go` built from the game (the whole move list, both clocks less
//! our overhead, a deadline after which the driver stops a hung engine),
//! its answers checked against the rules of the game's variant before
//! [`Game::play`] posts them, and what happens when the engine fails: its
//! process is restarted by the driver and the move searched again, and
//! after [`MAX_ENGINE_FAILURES`] failures for one move any legal move is
//! played rather than lose on time.

use super::super::external;
use super::super::scheduler::Permit;
use super::board::Record;
use super::clock;
use super::mover::{Chosen, MAX_ENGINE_FAILURES, Pondering, Report, SearchRef, Thinking};
use super::{Flow, Game, Player};
use crate::engine::sources::Source;
use tokio::time::Instant;

impl Game {
    /// Starts the external engine's search for our move, if still wanted.
    pub(super) fn start_external_search(&mut self, permit: Permit) {
        let ply_now = self.record.as_ref().map_or(0, |r| r.ply());
        let (queued, searched_before) = self.resumed(ply_now, permit.queued);
        let (Some(us), Some(record), Some((state, arrived))) =
            (self.color, &self.record, &self.state)
        else {
            return;
        };
        let ply = record.ply();
        if !state.status.is_ongoing()
            || record.turn() != us
            || self.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return;
        }
        let first_move = self.moved_at_ply.is_none() && ply < 2;
        let arrived = *arrived;
        // The engine gets the clocks as they stand now (and its share of
        // ours when games share the threads).
        let (limits, our_clock) = self.limits(state, us, arrived.elapsed(), first_move);
        let told = clock::told_for_search(&limits, us, permit.share);
        // Moves Lichess refused here are left out (the engine is told to
        // search the others).
        let refused = self.refused.texts_at(ply, record.key());
        let searchmoves = if refused.is_empty() {
            Vec::new()
        } else {
            let others: Vec<String> = record
                .legal_ucis()
                .into_iter()
                .filter(|m| !refused.contains(m))
                .collect();
            if others.is_empty() {
                tracing::error!(ply, "Lichess refused every legal move here");
            }
            others
        };
        let choice = self.ctx.external.as_deref();
        let go = external::Go {
            fen: record.engine_fen(),
            moves: record.uci_moves(),
            searchmoves,
            wtime: told.wtime,
            btime: told.btime,
            winc: told.winc,
            binc: told.binc,
            movetime: limits.movetime,
            depth: choice.map(|c| c.max_depth).filter(|&d| d > 0),
            nodes: choice.map(|c| c.max_nodes).filter(|&n| n > 0),
            ponder: false,
            deadline: told.deadline,
        };
        let Player::External(engine) = &mut self.player else {
            return;
        };
        let started = Instant::now();
        let id = engine.go(go);
        self.thinking = Some(Thinking {
            id: Some(SearchRef::External(id)),
            external_info: None,
            ply,
            arrived,
            started,
            queued,
            searched_before,
            clock: our_clock,
            last_info: None,
            source: Source::Search,
            permit: Some(permit),
        });
    }

    /// An answer of the external engine.
    pub(super) async fn on_external(&mut self, event: external::Event) -> Flow {
        match event {
            external::Event::Info { id, info } => {
                let id = SearchRef::External(id);
                if let Some(t) = self.thinking.as_mut().filter(|t| t.id == Some(id)) {
                    t.external_info = Some(info);
                } else if let Some(p) = self.pondering.as_mut().filter(|p| p.id == id) {
                    p.external_info = Some(info);
                }
                Flow::Continue
            }
            external::Event::BestMove { id, best, ponder } => {
                let id = SearchRef::External(id);
                if self.pondering.as_ref().is_some_and(|p| p.id == id) {
                    // A ponder search ending by itself is of no use.
                    self.pondering = None;
                    return Flow::Continue;
                }
                if self.thinking.as_ref().is_none_or(|t| t.id != Some(id)) {
                    // A stopped search's answer: not ours to post.
                    return Flow::Continue;
                }
                let done = Instant::now();
                let (Some(thinking), Some(record)) = (self.thinking.take(), self.record.as_ref())
                else {
                    return Flow::Continue;
                };
                let refused = self.refused.texts_at(record.ply(), record.key());
                // An engine that ignored `searchmoves`: another legal move.
                let best = if refused.contains(&best) {
                    let other = record
                        .legal_ucis()
                        .into_iter()
                        .find(|m| !refused.contains(m));
                    tracing::warn!(engine = %self.engine_name(), refused = %best, other = ?other, "the engine chose a move Lichess refused");
                    other.unwrap_or(best)
                } else {
                    best
                };
                match chosen(record, &best) {
                    Some(chosen) => {
                        self.failures = 0;
                        let report = thinking
                            .external_info
                            .as_ref()
                            .and_then(|info| Report::of_external(info, record));
                        let (posted, arrived, ours) =
                            (self.moves_posted, thinking.arrived, chosen.uci.clone());
                        let flow = self.play(thinking, chosen, report, done).await;
                        if let Some(reply) = ponder.filter(|_| self.moves_posted > posted) {
                            self.start_external_ponder(&ours, &reply, arrived);
                        }
                        flow
                    }
                    None => {
                        tracing::error!(engine = %self.engine_name(), mv = %best.chars().take(16).collect::<String>(), "the engine's move is not legal here");
                        self.engine_failed(thinking, done).await
                    }
                }
            }
            external::Event::Failed { id, error } => {
                let id = SearchRef::External(id);
                if self.pondering.as_ref().is_some_and(|p| p.id == id) {
                    self.pondering = None;
                    return Flow::Continue;
                }
                if self.thinking.as_ref().is_none_or(|t| t.id != Some(id)) {
                    return Flow::Continue;
                }
                let done = Instant::now();
                let Some(thinking) = self.thinking.take() else {
                    return Flow::Continue;
                };
                tracing::warn!(engine = %self.engine_name(), "search failed: {error}");
                self.engine_failed(thinking, done).await
            }
        }
    }

    /// The engine gave no usable move: search again (the driver restarts
    /// a dead process), or after too many failures play any legal move.
    async fn engine_failed(&mut self, thinking: Thinking, done: Instant) -> Flow {
        self.failures += 1;
        if self.failures < MAX_ENGINE_FAILURES {
            drop(thinking);
            self.moved_at_ply = None;
            return Flow::Think;
        }
        let Some(record) = self.record.as_ref() else {
            return Flow::Continue;
        };
        let Some(chosen) = record.any_legal().and_then(|m| chosen(record, &m)) else {
            return Flow::Continue;
        };
        tracing::error!(engine = %self.engine_name(), failures = self.failures, mv = %chosen.uci, "no answer from the engine: playing a legal move");
        self.failures = 0;
        self.play(thinking, chosen, None, done).await
    }

    /// After our move `ours` (answering the state that arrived at
    /// `arrived`), lets the engine think on the position after `reply`
    /// on the opponent's time, if the section has `ponder` and a search
    /// permit is free at once (see `Pondering`: the same rules as the
    /// built-in engine's).
    fn start_external_ponder(&mut self, ours: &str, reply: &str, arrived: Instant) {
        let wanted = self.ctx.external.as_deref().is_some_and(|c| c.spec.ponder);
        if !wanted || self.pondering.is_some() || self.thinking.is_some() {
            return;
        }
        let (Some(us), Some(record), Some((state, _))) = (self.color, &self.record, &self.state)
        else {
            return;
        };
        if !state.status.is_ongoing() {
            return;
        }
        // The two positions ahead, by the rules: our move, then the reply.
        let mut moves = record.uci_moves();
        let ply = moves.len() + 2;
        moves.push(ours.to_owned());
        let Some(after_ours) = record.after(&moves) else {
            return;
        };
        moves.push(reply.to_owned());
        let Some(target) = record.after(&moves) else {
            return;
        };
        let Some(permit) = self.ctx.scheduler.try_acquire(&self.ask(true)) else {
            tracing::debug!("not pondering: no free search thread");
            return;
        };
        // The clocks as they will be at the reply.
        let (limits, _) = self.limits(state, us, arrived.elapsed(), false);
        let told = clock::told_for_ponder(&limits, us, record.ply() >= 2);
        let choice = self.ctx.external.as_deref();
        let go = external::Go {
            fen: record.engine_fen(),
            moves,
            wtime: told.wtime,
            btime: told.btime,
            winc: told.winc,
            binc: told.binc,
            movetime: None,
            depth: choice.map(|c| c.max_depth).filter(|&d| d > 0),
            nodes: choice.map(|c| c.max_nodes).filter(|&n| n > 0),
            ponder: true,
            searchmoves: Vec::new(),
            deadline: told.deadline,
        };
        let Player::External(engine) = &mut self.player else {
            return;
        };
        let id = engine.go(go);
        tracing::debug!(ply, expected = %reply, "pondering");
        self.pondering = Some(Pondering {
            id: SearchRef::External(id),
            ply,
            after_ours,
            key: target,
            expected: reply.to_owned(),
            last_info: None,
            external_info: None,
            permit,
        });
    }

    fn engine_name(&self) -> &str {
        self.ctx
            .external
            .as_deref()
            .map_or("built-in", |c| c.spec.name.as_str())
    }
}

/// An engine's move as we post it, if it is legal in the game's rules.
fn chosen(record: &Record, text: &str) -> Option<Chosen> {
    let (uci, san) = record.legal(text)?;
    let native = record
        .native()
        .and_then(|r| r.position().parse_uci(&uci, r.chess960()).ok());
    Some(Chosen {
        uci,
        san,
        native,
        expected: None,
    })
}
