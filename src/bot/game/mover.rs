//! The mover: the one place that chooses and posts our move. It owns the
//! search for our move ([`Thinking`]) and the search on the opponent's time
//! ([`Pondering`]), the engine's answers, and the move post with its
//! resync budget (the limits from the clocks and the lag are `clock`'s).
//! It is the same whichever engine plays: the [`Player`] (built-in or
//! external) takes its orders and its answers come back the same way.
//! An engine's move is checked against the rules of the game before it
//! is posted; an engine that fails (an external process that died or
//! hung is restarted by its driver) searches again. An external engine
//! that fails for good in a game of chess (no restart left, or
//! [`MAX_ENGINE_FAILURES`] failures for one move) leaves the rest of the
//! game to the built-in engine; in a variant, the first move of its last
//! line or any legal move is played rather than lose on time. Before the
//! engine, the move sources (`lookup`: books, tables, online) are asked;
//! their moves are posted by the same [`Game::play`], logged with their
//! source.

use super::clock;
use super::player::{Answer, Answers, Order, Player, Said, SearchRef};
use super::rules::{self, pv_san, score_cp, score_text, white_eval};
use super::spawn_here;
use super::{Flow, Game};
use crate::bot::board::Record;
use crate::bot::chat::EngineView;
use crate::bot::external;
use crate::bot::scheduler::{Ask, Permit};
use crate::bot::store::hashstore;
use crate::bot::store::pgn::{EngineNote, Eval};
use crate::chess::Position;
use crate::engine::sources::Source;
use crate::engine::tablebase::Outcome;
use crate::engine::{Score, SearchInfo};
use crate::lichess::Error as ClientError;
use crate::lichess::model::GameState;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::Instant;

/// Searches that may fail for one move (an external engine's process died
/// or hung and is restarted) before we play any legal move instead.
pub(super) const MAX_ENGINE_FAILURES: u32 = 3;
/// Another search after a failed one needs twice that one's time and
/// this much more left on our clock; else the fallback move is played.
const RETRY_RESERVE: Duration = Duration::from_secs(1);
/// The longest a move post is retried.
const MAX_MOVE_DEADLINE: Duration = Duration::from_secs(10);
/// The shortest: even with almost no time left, try for this long.
const MIN_MOVE_DEADLINE: Duration = Duration::from_millis(500);
/// Game-stream reopenings after failed move posts, per move.
pub(super) const MAX_RESYNCS_PER_MOVE: u32 = 3;
/// When they are spent, think again on what we know after this.
pub(super) const RETHINK_AFTER: Duration = Duration::from_secs(1);
/// Moves Lichess refused in the position we are answering (a 400 to the
/// post itself, not to a retry whose first attempt may have gone
/// through), and moves an engine named there that are not legal on our
/// board. The next search leaves them out and the move sources are
/// skipped there, so a move the server will not take is never posted
/// twice: whatever the cause (a castling form it does not read, a rule
/// we see otherwise), the game goes on with another legal move instead of
/// losing on time.
#[derive(Debug, Default)]
pub(super) struct Refused {
    /// The ply and key of the position they were refused in.
    at: (usize, u64),
    /// The moves as posted (UCI): what the engine is told to leave out.
    texts: Vec<String>,
}

impl Refused {
    fn add(&mut self, ply: usize, key: u64, text: &str) {
        if self.at != (ply, key) {
            self.at = (ply, key);
            self.texts.clear();
        }
        if !self.texts.iter().any(|t| t == text) {
            self.texts.push(text.to_owned());
        }
    }

    /// The moves refused in the position `key` at `ply`, as posted.
    pub(super) fn texts_at(&self, ply: usize, key: u64) -> &[String] {
        if self.at == (ply, key) {
            &self.texts
        } else {
            &[]
        }
    }
}

/// The answer in progress for one of our moves: a search (with its id
/// and search permit), or a move a source gave without a search (no id,
/// no permit; never stored in `Game::thinking`).
pub(super) struct Thinking {
    pub(super) id: Option<SearchRef>,
    /// The ply it answers (moves played before our move).
    pub(super) ply: usize,
    /// When the `gameState` that made it our turn arrived.
    pub(super) arrived: Instant,
    /// When the search was started.
    pub(super) started: Instant,
    /// How long we waited for a search thread (another game was
    /// searching): queueing, not overhead.
    pub(super) queued: Duration,
    /// How long earlier searches of this move ran before they were
    /// suspended for another game (thinking, not overhead).
    pub(super) searched_before: Duration,
    /// Our clock when the search started.
    pub(super) clock: Option<Duration>,
    /// What the engine (or the source) said last about it.
    pub(super) said: Option<Said>,
    /// Where the move comes from.
    pub(super) source: Source,
    /// The search's thread (none for a source's move).
    pub(super) permit: Option<Permit>,
}

impl Thinking {
    /// Our clock at `at`: as it stood when the state arrived, less the
    /// time since (`None` without a clock).
    pub(super) fn clock_left(&self, at: Instant) -> Option<Duration> {
        self.clock
            .map(|c| c.saturating_sub(at.saturating_duration_since(self.arrived)))
    }
}

/// A search for our move suspended for a game that could not wait: what
/// it had spent when it asked for a thread again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Suspended {
    pub(super) ply: usize,
    pub(super) searched: Duration,
    pub(super) queued: Duration,
}

/// Our move, ready to post.
pub(super) struct Chosen {
    /// As Lichess takes it.
    pub(super) uci: String,
    pub(super) san: String,
}

/// What a search said of its move.
pub(super) struct Report {
    pub(super) depth: u32,
    pub(super) score: Score,
    pub(super) nodes: u64,
    /// The principal variation's first moves in SAN.
    pub(super) pv: String,
}

impl Report {
    /// The built-in engine's last line about the position `pos`.
    pub(super) fn of_search(info: &SearchInfo, pos: &Position) -> Report {
        Report {
            depth: info.depth,
            score: info.score,
            nodes: info.nodes,
            pv: pv_san(pos, &info.pv, 6),
        }
    }

    /// An external engine's last line (no score: no report).
    pub(super) fn of_external(info: &external::Info, record: &Record) -> Option<Report> {
        let score = match info.score? {
            external::Score::Cp(cp) => Score::Cp(cp),
            external::Score::Mate(n) => Score::Mate(n),
        };
        Some(Report {
            depth: info.depth,
            score,
            nodes: info.nodes,
            pv: record.pv_san(&info.pv, 6),
        })
    }
}

/// A ponder search: after our move was posted, the engine searches the
/// position after the reply it expects, on the opponent's time.
///
/// When the next `gameState` brings the expected reply, `ponderhit` turns
/// it into the search for our move (the engine counts our clock from that
/// moment) and it becomes [`Thinking`] with its permit. Any other reply (or
/// a takeback, or the game's end) stops it; its `BestMove` is then ignored
/// by its id (never posted) and the real position is searched as usual.
///
/// Threads: a ponder search runs on a CPU thread too, so it holds one of
/// the scheduler's `engine.threads`, but it never waits for one and never
/// keeps one from a game that needs it for its real move. It starts only
/// if a thread is free at once and nobody waits (the thread of our own
/// search is given back first, so a game waiting for it gets it), and the
/// scheduler cuts it once any game has waited 20 ms.
pub(super) struct Pondering {
    pub(super) id: SearchRef,
    /// The ply of the position searched (after the expected reply).
    pub(super) ply: usize,
    /// The key of the position after our move (the opponent to move).
    pub(super) after_ours: u64,
    /// The key of the position searched.
    pub(super) key: u64,
    /// The expected reply, in UCI (for the log).
    pub(super) expected: String,
    /// Our clock at the reply, as the search was given it (none without
    /// a clock).
    pub(super) clock_at_reply: Option<Duration>,
    pub(super) said: Option<Said>,
    pub(super) permit: Permit,
}

/// The searches of the game: the one for our move, the one on the
/// opponent's time, one suspended for another game, and their counts.
#[derive(Default)]
pub(super) struct Search {
    pub(super) thinking: Option<Thinking>,
    pub(super) pondering: Option<Pondering>,
    /// Our search for the move, suspended for another game.
    pub(super) suspended: Option<Suspended>,
    /// Searches that failed for the current move (an external engine's
    /// process died or hung and is being restarted).
    pub(super) failures: u32,
    /// Ponder searches that ended in a hit / a miss (wrong guess).
    pub(super) ponder_hits: u32,
    pub(super) ponder_misses: u32,
    /// The built-in engine's answers, once it took the game over from a
    /// failed external engine: the run loop reads them from then on.
    pub(super) taken_over: Option<Answers>,
}

impl Game {
    /// Starts the search for our move, if it is still wanted.
    pub(super) fn start_search(&mut self, permit: Permit) {
        let ply_now = self.record.as_ref().map_or(0, Record::ply);
        let (queued, searched_before) = self.resumed(ply_now, permit.queued);
        let (Some(us), Some(record), Some((state, arrived))) =
            (self.color, &self.record, &self.state)
        else {
            return;
        };
        let ply = record.ply();
        if !state.status.is_ongoing()
            || record.turn() != us
            || self.search.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return;
        }
        let first_move = self.moved_at_ply.is_none() && ply < 2;
        let arrived = *arrived;
        let (mut limits, our_clock) = self.limits(state, us, first_move);
        // Other games searching or waiting now: plan for our share.
        limits.thread_share = permit.share;
        // Moves Lichess refused here are left out.
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
        let order = Order {
            record,
            ahead: &[],
            limits,
            us,
            arrived,
            searchmoves,
        };
        let started = Instant::now();
        // Defensive: a ponder search is never left running under ours.
        if let Some(p) = self.search.pondering.take() {
            tracing::debug!(ply = p.ply, expected = %p.expected, why = "position changed", "ponder stopped");
            self.player.stop();
        }
        let Some(id) = self.player.go(order) else {
            return;
        };
        self.search.thinking = Some(Thinking {
            id: Some(id),
            ply,
            arrived,
            started,
            queued,
            searched_before,
            clock: our_clock,
            said: None,
            source: Source::Search,
            permit: Some(permit),
        });
    }

    /// An answer of the engine: a line kept for the report, or a best
    /// move to check and post (and to ponder after), or a failure.
    pub(super) async fn on_answer(&mut self, answer: Answer) -> Flow {
        match answer {
            Answer::Info { id, said } => {
                if let Some(t) = self.search.thinking.as_mut().filter(|t| t.id == Some(id)) {
                    t.said = Some(said);
                } else if let Some(p) = self.search.pondering.as_mut().filter(|p| p.id == id) {
                    p.said = Some(said);
                }
                Flow::Continue
            }
            Answer::BestMove { id, best } => {
                let done = Instant::now();
                let (Some(thinking), Some(record)) = (self.answered(id), self.record.as_ref())
                else {
                    return Flow::Continue;
                };
                let (best, ponder) = best.texts(record);
                // No move at all: the game is over on the board.
                let Some(best) = best else {
                    return Flow::Continue;
                };
                let refused = self.refused.texts_at(record.ply(), record.key());
                // An engine that ignored `searchmoves`: another legal move.
                let best = if refused.contains(&best) {
                    let other = record
                        .legal_ucis()
                        .into_iter()
                        .find(|m| !refused.contains(m));
                    tracing::warn!(engine = %self.engine_name(), refused = %best, other = ?other, "the engine chose a move refused here");
                    other.unwrap_or(best)
                } else {
                    best
                };
                let Some(chosen) = chosen(record, &best) else {
                    tracing::error!(engine = %self.engine_name(), mv = %best.chars().take(16).collect::<String>(), "the engine's move is not legal here");
                    // Left out like a refused move: searched again, the
                    // engine is given the legal moves (`searchmoves`), and
                    // if it names this one again another is played.
                    let (ply, key) = (record.ply(), record.key());
                    self.refused.add(ply, key, &best);
                    return self.engine_failed(thinking, done).await;
                };
                self.search.failures = 0;
                let report = thinking.said.as_ref().and_then(|s| s.report(record));
                let (posted, ply, arrived, ours) = (
                    self.moves_posted,
                    thinking.ply,
                    thinking.arrived,
                    chosen.uci.clone(),
                );
                let flow = self.play(thinking, chosen, report, done).await;
                if let Some(reply) = ponder.filter(|_| self.moves_posted > posted) {
                    self.start_ponder(ply, &ours, &reply, arrived);
                }
                flow
            }
            Answer::Failed { id, error } => {
                let done = Instant::now();
                let Some(thinking) = self.answered(id) else {
                    return Flow::Continue;
                };
                tracing::warn!(engine = %self.engine_name(), "search failed: {error}");
                self.engine_failed(thinking, done).await
            }
        }
    }

    /// The search for our move that search `id` ended, taken; `None` if
    /// `id` was another: a ponder search (it holds its answer until a hit
    /// or a stop; ending by itself, it is of no use and is forgotten) or a
    /// stopped search, whose answer is never posted.
    fn answered(&mut self, id: SearchRef) -> Option<Thinking> {
        if self.search.pondering.as_ref().is_some_and(|p| p.id == id) {
            self.search.pondering = None;
            return None;
        }
        self.search.thinking.take_if(|t| t.id == Some(id))
    }

    /// The engine gave no usable move: search again (the driver restarts
    /// a dead process) while the clock can pay for a search as long as
    /// this one (a hung engine may hang again). An external engine with no
    /// restart left, or out of tries or time for this move, gives a game
    /// of chess to the built-in engine, which searches at once on what is
    /// left of our clock; otherwise the first move of the line the engine
    /// reported is played, else any legal move.
    async fn engine_failed(&mut self, thinking: Thinking, done: Instant) -> Flow {
        self.search.failures += 1;
        let spent = done.saturating_duration_since(thinking.started);
        let left = thinking.clock_left(done);
        let affordable = left.is_none_or(|left| left >= spent * 2 + RETRY_RESERVE);
        let retry = self.search.failures < MAX_ENGINE_FAILURES && affordable;
        let exhausted =
            matches!(&self.player, Player::External(e) if e.restarts() >= external::MAX_RESTARTS);
        if (exhausted || !retry) && self.take_over(left) {
            drop(thinking);
            self.search.failures = 0;
            self.moved_at_ply = None;
            return Flow::Think;
        }
        if retry {
            drop(thinking);
            self.moved_at_ply = None;
            return Flow::Think;
        }
        let Some(record) = self.record.as_ref() else {
            return Flow::Continue;
        };
        let reported = thinking
            .said
            .as_ref()
            .and_then(|s| s.first_move(record))
            .filter(|m| {
                !self
                    .refused
                    .texts_at(record.ply(), record.key())
                    .contains(m)
            })
            .and_then(|m| chosen(record, &m));
        let from_line = reported.is_some();
        let Some(chosen) = reported.or_else(|| record.any_legal().and_then(|m| chosen(record, &m)))
        else {
            return Flow::Continue;
        };
        tracing::error!(engine = %self.engine_name(), failures = self.search.failures, clock_left = ?left,
            mv = %chosen.uci, from_line, "no answer from the engine in time: playing {}",
            if from_line { "the first move of its last line" } else { "a legal move" });
        self.search.failures = 0;
        self.play(thinking, chosen, None, done).await
    }

    /// Gives a game of chess played by an external engine that failed
    /// for good to the built-in engine, for the rest of the game (`left`:
    /// our clock now, for loading a table an earlier run saved). False if
    /// it cannot: a variant, the built-in engine already, no thread.
    fn take_over(&mut self, left: Option<Duration>) -> bool {
        let chess = self.facts.as_ref().is_some_and(|f| f.variant.is_chess());
        if !chess || !matches!(self.player, Player::External(_)) {
            return false;
        }
        let (engine, events, hash) = match Game::built_in(&self.ctx, &self.id, left) {
            Ok(built_in) => built_in,
            Err(e) => {
                tracing::error!("the built-in engine cannot take the game over: {e}");
                return false;
            }
        };
        tracing::error!(engine = %self.engine_name(), "the external engine failed for good: the built-in engine plays the rest of the game");
        self.stop_pondering("engine replaced");
        // The old process is killed as its handle is dropped.
        self.player = Player::BuiltIn(engine);
        self.search.taken_over = Some(Answers::BuiltIn(events));
        self.hash = hash;
        self.ctx.external = None;
        true
    }

    fn engine_name(&self) -> &str {
        self.ctx
            .external
            .as_deref()
            .map_or("built-in", |c| c.spec.name.as_str())
    }

    /// Posts our move (or resigns a hopeless game), then ponders on the
    /// expected reply if pondering is on.
    pub(super) async fn play(
        &mut self,
        mut thinking: Thinking,
        chosen: Chosen,
        report: Option<Report>,
        done: Instant,
    ) -> Flow {
        // The search is over: its thread goes back now, not after the post
        // (which may retry for seconds) and before any pondering, so that
        // a game waiting for one gets it first.
        let share = thinking
            .permit
            .take()
            .and_then(|p| p.share)
            .map_or(1.0, |s| s.fraction());
        let (Some(us), Some(record)) = (self.color, &self.record) else {
            return Flow::Continue;
        };
        let key = record.key();
        let ply = thinking.ply;
        if let Some(report) = &report {
            self.note(ply, us, report);
        }
        let Some(offering_draw) = self.resign_or_offer(ply, thinking.source).await else {
            return Flow::Continue;
        };
        let uci = chosen.uci;
        let think = done - thinking.started + thinking.searched_before;
        // Retry the post for as long as our clock allows, within bounds.
        let posting = Instant::now();
        let clock_left = thinking.clock_left(posting);
        let budget = clock_left
            .unwrap_or(MAX_MOVE_DEADLINE)
            .clamp(MIN_MOVE_DEADLINE, MAX_MOVE_DEADLINE);
        // Time on our side of the wire: from the line's arrival to the
        // search start (less any wait for a search permit), and from the
        // best move to this post.
        let overhead = (thinking.started - thinking.arrived)
            .saturating_sub(thinking.queued + thinking.searched_before)
            + (posting - done);
        self.moved_at_ply = Some(ply);
        let result = self
            .ctx
            .client
            .make_move(&self.id, &uci, offering_draw, posting + budget)
            .await;
        let (depth, score, nodes) = match &report {
            Some(r) => (r.depth, r.score.to_string(), r.nodes),
            None => (0, "none".to_owned(), 0),
        };
        let clock = thinking.clock;
        let queued = thinking.queued;
        let source = thinking.source;
        match result {
            Ok(()) => {
                tracing::info!(
                ply,
                mv = %uci,
                san = %chosen.san,
                source = %source,
                depth,
                score = %score,
                nodes,
                think_ms = think.as_millis() as u64,
                clock_ms = clock.map(|c| c.as_millis() as u64),
                overhead_us = overhead.as_micros() as u64,
                lag_ms = self.lag.last().map(|l| l.as_millis() as u64),
                move_overhead_ms = self.lag.overhead(self.configured_overhead()).as_millis() as u64,
                queued_us = queued.as_micros() as u64,
                share,
                post_us = posting.elapsed().as_micros() as u64,
                offering_draw,
                "move"
                );
                self.moves_posted += 1;
                self.lag.posted(ply, posting);
                self.timers.echo_at = Some(posting + self.lag.echo_wait());
                let m = crate::metrics::metrics();
                m.inc("kaissa_moves_total", &[]);
                m.observe("kaissa_think_seconds", think);
                m.observe("kaissa_permit_wait_seconds", queued);
                // A save delays the next search on the engine thread: only
                // with time to spare for a save as long as the last.
                let took = Duration::from_micros(self.hash.save_took_us.load(Ordering::Relaxed));
                if self
                    .moves_posted
                    .is_multiple_of(hashstore::SAVE_EVERY_MOVES)
                    && hashstore::save_fits(clock_left, took)
                {
                    // Before any pondering: the engine runs it first.
                    self.save_hash();
                }
            }
            Err(e) => return self.not_played(ply, key, &uci, &e),
        }
        Flow::Continue
    }

    /// The rules on the move at `ply` (chosen from `source`): resign a
    /// lost game (`None`), or whether to offer a draw with the move.
    async fn resign_or_offer(&mut self, ply: usize, source: Source) -> Option<bool> {
        self.judged.tablebase_draw = matches!(
            source,
            Source::Tablebase { outcome, .. } | Source::OnlineTablebase { outcome }
                if matches!(outcome, Outcome::Draw | Outcome::CursedWin | Outcome::BlessedLoss)
        );
        let standing = self.standing(ply);
        if rules::resign(&self.judged.scores, &standing, &self.ctx.config.bot) {
            tracing::info!(ply, "resigning a lost position");
            match self.ctx.client.resign(&self.id).await {
                Ok(()) => {
                    self.moved_at_ply = Some(ply);
                    return None;
                }
                // Not left to hang (days, in correspondence) or to flag:
                // the move goes instead, and the next turn judges again.
                Err(e) => tracing::warn!("resign failed: {e}; playing the move instead"),
            }
        }
        let bot = &self.ctx.config.bot;
        let offering_draw = rules::offer_draw(&self.judged.scores, &standing, bot)
            && rules::draw_offer_due(ply, self.offers.draw_offered_at, bot.draw_moves);
        if offering_draw {
            self.offers.draw_offered_at = Some(ply);
        }
        Some(offering_draw)
    }

    /// What a search said of the move at `ply`: kept for the draw and
    /// resign rules, the PGN's evals, `ctl status` and the chat's `!eval`.
    fn note(&mut self, ply: usize, us: crate::chess::Color, report: &Report) {
        self.judged.scores.push(score_cp(report.score));
        let eval = white_eval(report.score, us);
        if self.judged.notes.len() <= ply {
            self.judged.notes.resize(ply + 1, None);
        }
        self.judged.notes[ply] = Some(EngineNote {
            eval,
            depth: report.depth,
            pv: report.pv.clone(),
        });
        let pv = Some(report.pv.clone()).filter(|p| !p.is_empty());
        self.ctx.summary.send_modify(|s| {
            s.score = Some(score_text(eval));
            if s.evals.len() <= ply {
                s.evals.resize(ply + 1, None);
            }
            s.evals[ply] = Some(match eval {
                Eval::Cp(cp) => cp,
                Eval::Mate(n) => n.signum() * (10_000 - n.abs()),
            });
            s.pv.clone_from(&pv);
            s.depth = Some(report.depth);
        });
        self.judged.view = EngineView {
            score: Some(score_text(eval)),
            depth: Some(report.depth),
            pv: Some(report.pv.clone()).filter(|p| !p.is_empty()),
        };
    }

    /// Our move `uci` at `ply` (in the position `key`) was not played:
    /// refused, or lost in transit.
    fn not_played(&mut self, ply: usize, key: u64, uci: &str, e: &ClientError) -> Flow {
        tracing::warn!(ply, mv = %uci, "move not played: {e}");
        // Refused ("not your turn": our position is stale) or lost
        // in transit: reopen the game stream, whose `gameFull`
        // tells whether the move was played, and answer the
        // position again if not. Bounded, so it cannot loop.
        if let ClientError::MoveRejected {
            after_retry: false, ..
        } = &e
        {
            // The server's word on this very move: never again here.
            self.refused.add(ply, key, uci);
        }
        let refused = matches!(e, ClientError::MoveRejected { .. });
        if (refused || e.is_transient()) && self.resyncs < MAX_RESYNCS_PER_MOVE {
            self.resyncs += 1;
            self.moved_at_ply = None;
            return Flow::Resync;
        }
        // Out of resyncs for this move: think again shortly on
        // what we know, rather than wait mute.
        self.timers.rethink_at = Some(Instant::now() + RETHINK_AFTER);
        // Unless an earlier attempt may have gone through, answer
        // this position again on the next state the server sends.
        if !matches!(
            e,
            ClientError::MoveRejected {
                after_retry: true,
                ..
            }
        ) {
            self.moved_at_ply = None;
        }
        Flow::Continue
    }

    /// After our move `ours` (answering the position at `ply`, whose state
    /// arrived at `arrived`), ponders on the position after `reply`, if
    /// the playing engine ponders and a search permit is free at once (see
    /// [`Pondering`]).
    pub(super) fn start_ponder(&mut self, ply: usize, ours: &str, reply: &str, arrived: Instant) {
        let wanted = match &self.ctx.external {
            Some(choice) => choice.spec.ponder,
            None => self.ctx.config.engine.ponder,
        };
        if !wanted || self.search.pondering.is_some() || self.search.thinking.is_some() {
            return;
        }
        let (Some(us), Some(record), Some((state, _))) = (self.color, &self.record, &self.state)
        else {
            return;
        };
        if !state.status.is_ongoing() || record.ply() != ply {
            return;
        }
        // The two positions ahead, by the rules: our move, then the reply.
        let ahead = [ours.to_owned(), reply.to_owned()];
        let mut moves = record.uci_moves();
        moves.push(ours.to_owned());
        let Some(after_ours) = record.after(&moves) else {
            return;
        };
        moves.push(reply.to_owned());
        let Some(key) = record.after(&moves) else {
            return;
        };
        let Some(permit) = self.ctx.scheduler.try_acquire(&self.ask(true)) else {
            tracing::debug!("not pondering: no free search thread");
            return;
        };
        // Our clock as it stands now, after the post.
        let limits = clock::run_for(self.limits(state, us, false).0, us, arrived.elapsed());
        let clocks_run = record.ply() >= 2;
        let clock_at_reply = clock::ours(&clock::at_reply(&limits, us, clocks_run), us);
        let order = Order {
            record,
            ahead: &ahead,
            limits,
            us,
            arrived,
            searchmoves: Vec::new(),
        };
        let Some(id) = self.player.ponder(order, clocks_run) else {
            return;
        };
        tracing::debug!(ply = ply + 2, expected = %reply, "pondering");
        self.search.pondering = Some(Pondering {
            id,
            ply: ply + 2,
            after_ours,
            key,
            expected: reply.to_owned(),
            clock_at_reply,
            said: None,
            permit,
        });
    }

    /// A new state (at `ply`, the position `key`) for our ponder search,
    /// if any: the opponent still thinking, the expected reply (a hit),
    /// or anything else (it stops).
    pub(super) fn ponder_on(&mut self, ply: usize, key: u64, state: &GameState, arrived: Instant) {
        let Some(p) = &self.search.pondering else {
            return;
        };
        let ongoing = state.status.is_ongoing();
        let outcome = if ongoing && ply + 1 == p.ply && key == p.after_ours {
            // Only our own move so far: the opponent is thinking.
            None
        } else if ongoing && ply == p.ply && key == p.key {
            Some(None)
        } else if !ongoing {
            Some(Some("game over"))
        } else if ply == p.ply {
            Some(Some("other reply"))
        } else {
            Some(Some("position changed"))
        };
        match outcome {
            None => {}
            Some(None) if !self.hit_keeps_clock(state) => {
                self.stop_pondering("our clock is well below the search's")
            }
            Some(None) => self.ponder_hit(ply, state, arrived),
            Some(Some(why)) => self.stop_pondering(why),
        }
    }

    /// Whether our clock in `state` (which brought the expected reply)
    /// lets the ponder search go on as the search for our move.
    fn hit_keeps_clock(&self, state: &GameState) -> bool {
        let (Some(p), Some(us)) = (&self.search.pondering, self.color) else {
            return true;
        };
        let real = Duration::from_millis(state.time_left(super::to_model(us)));
        let keeps = clock::hit_keeps_clock(p.clock_at_reply, real);
        if !keeps {
            tracing::info!(
                given_ms = p.clock_at_reply.map(|d| d.as_millis() as u64),
                real_ms = real.as_millis() as u64,
                "late state for the expected reply: our move searched on the real clock"
            );
        }
        keeps
    }

    /// The opponent played the expected reply (`state`, at `ply`): the
    /// ponder search becomes the search for our move.
    pub(super) fn ponder_hit(&mut self, ply: usize, state: &GameState, arrived: Instant) {
        let (Some(p), Some(us)) = (self.search.pondering.take(), self.color) else {
            return;
        };
        let permit = p.permit;
        permit.ponder_hit(self.budget_in(state, arrived, arrived), arrived);
        let (_, clock) = self.limits(state, us, false);
        // The engine's clock (an external engine's deadline) counts from
        // the reply's arrival.
        self.player.ponderhit(arrived);
        self.search.ponder_hits += 1;
        tracing::debug!(ply, expected = %p.expected, "ponder hit");
        let now = Instant::now();
        self.search.thinking = Some(Thinking {
            id: Some(p.id),
            ply,
            arrived,
            started: now,
            queued: Duration::ZERO,
            searched_before: Duration::ZERO,
            clock,
            said: p.said,
            source: Source::Search,
            permit: Some(permit),
        });
    }

    /// Stops the ponder search, if any (its answer will be ignored), and
    /// frees its permit. `why` is logged; "other reply" counts as a miss.
    pub(super) fn stop_pondering(&mut self, why: &str) {
        let Some(p) = self.search.pondering.take() else {
            return;
        };
        self.player.stop();
        if why == "other reply" {
            self.search.ponder_misses += 1;
            tracing::debug!(ply = p.ply, expected = %p.expected, "ponder miss");
        } else {
            tracing::debug!(ply = p.ply, expected = %p.expected, why, "ponder stopped");
        }
    }

    /// The waits and searches of earlier, suspended searches of the move
    /// at `ply`, with this search's wait `queued` added.
    pub(super) fn resumed(&mut self, ply: usize, queued: Duration) -> (Duration, Duration) {
        match self.search.suspended.take().filter(|s| s.ply == ply) {
            Some(s) => (s.queued + queued, s.searched),
            None => (queued, Duration::ZERO),
        }
    }

    /// What we ask the scheduler for a search.
    pub(super) fn ask(&self, ponder: bool) -> Ask {
        Ask {
            game: self.id.clone(),
            budget: self.move_budget(),
            ponder,
        }
    }

    /// The signal by which the scheduler wants our search's thread back.
    pub(super) fn cut_signal(&self) -> Option<Arc<tokio::sync::Notify>> {
        let thinking = self
            .search
            .thinking
            .as_ref()
            .and_then(|t| t.permit.as_ref());
        let permit = thinking.or(self.search.pondering.as_ref().map(|p| &p.permit))?;
        Some(permit.cut_signal())
    }

    /// The scheduler wants our thread for a game that cannot wait. A
    /// ponder search stops. A search early in its budget stops and asks
    /// again (it goes on from its table when its turn comes); one that
    /// has had half its budget or more stops and plays its best move.
    pub(super) fn on_cut(&mut self) -> Flow {
        if self.search.pondering.is_some() {
            self.stop_pondering("a game needs the thread");
            return Flow::Continue;
        }
        let Some((ply, arrived, started, queued, before)) = self
            .search
            .thinking
            .as_ref()
            .filter(|t| t.permit.is_some())
            .map(|t| (t.ply, t.arrived, t.started, t.queued, t.searched_before))
        else {
            return Flow::Continue;
        };
        let spent = arrived.elapsed();
        let budget = self.move_budget_at(arrived);
        self.player.stop();
        if spent * 2 < budget {
            tracing::debug!(
                ply,
                spent_ms = spent.as_millis() as u64,
                "search suspended for a game that cannot wait"
            );
            // Its answer is ignored (no search of ours has its id now).
            self.search.thinking = None;
            self.search.suspended = Some(Suspended {
                ply,
                searched: before + started.elapsed(),
                queued,
            });
            return Flow::Think;
        }
        tracing::debug!(
            ply,
            spent_ms = spent.as_millis() as u64,
            "search cut short for a game that cannot wait: playing its best move"
        );
        Flow::Continue
    }

    /// Saves the table to the game's hash file (if `engine.state_dir` is
    /// set), on the engine thread; the outcome is logged.
    pub(super) fn save_hash(&mut self) {
        let (Some(path), Player::BuiltIn(engine)) = (self.hash.path.clone(), &mut self.player)
        else {
            return;
        };
        let reply = engine.save_hash(path);
        let took_us = Arc::clone(&self.hash.save_took_us);
        let asked = Instant::now();
        self.hash.saving = Some(spawn_here(async move {
            match reply.await {
                Ok(Ok(saved)) => {
                    let took = asked.elapsed();
                    took_us.store(took.as_micros() as u64, Ordering::Relaxed);
                    tracing::debug!(
                        entries = saved.used,
                        took_ms = took.as_millis() as u64,
                        "hash table saved"
                    )
                }
                Ok(Err(e)) => tracing::warn!("hash table not saved: {e}"),
                Err(_) => {}
            }
        }));
    }
}

/// An engine's move as we post it, if it is legal in the game's rules.
fn chosen(record: &Record, text: &str) -> Option<Chosen> {
    let (uci, san) = record.legal(text)?;
    Some(Chosen { uci, san })
}
