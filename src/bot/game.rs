//! One game, from its first stream line to its PGN: a task per game that
//! reads the game stream, keeps the position (rebuilt from the initial FEN
//! and the server's whole move list on every `gameState`), asks its own
//! engine for a move when it is our turn, posts it on the urgent path, and
//! handles everything else a game brings: draw offers and takebacks,
//! aborting a game the opponent never starts, claiming the win when the
//! opponent leaves, chat greetings and commands, and the PGN at the end.
//!
//! Each game has its own [`Engine`] (own thread, own transposition table of
//! `engine.hash_mb / bot.concurrency` MiB): games never share a table or
//! disturb each other's move ordering, and dropping the game frees it all.
//! The CPU budget is shared instead: a search needs one of the
//! `engine.threads` permits of [`GameContext::search_permits`], so the
//! daemon never searches on more threads than configured, whatever the
//! number of games.
//!
//! With `engine.ponder`, the game thinks on the opponent's time too: see
//! [`Pondering`] for the hit/miss flow and how a ponder search shares the
//! permits.
//!
//! The daemon talks to a running game through [`GameHandle`]: it tells it
//! that Lichess reported the game finished, or asks it to resign (used on
//! shutdown).

use super::chat::{self, EngineView, Room};
use super::hashstore;
use super::pgn::{Eval, PgnHeaders, write_pgn};
use super::record::GameRecord;
use crate::chess::{self, Move, Position};
use crate::config::Config;
use crate::engine::{self, Engine, EngineOptions, GoRequest, Limits, Score, SearchId, SearchInfo};
use crate::lichess::client::{Client, Error as ClientError, jittered};
use crate::lichess::model::{
    ChatLine, ChatRoom, Color, GameEvent, GameFull, GameInfo, GameState, GameStatus, OpponentGone,
};
use crate::lichess::stream::StreamEvent;
use futures::StreamExt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Our first move is played after this much thought at most: Lichess
/// aborts a game whose first moves do not come quickly, and the clocks do
/// not run yet anyway.
const FIRST_MOVE_TIME: Duration = Duration::from_millis(1000);
/// Thinking time per move in games without a clock (correspondence).
const NO_CLOCK_MOVE_TIME: Duration = Duration::from_secs(20);
/// The longest a move post is retried.
const MAX_MOVE_DEADLINE: Duration = Duration::from_secs(10);
/// The shortest: even with almost no time left, try for this long.
const MIN_MOVE_DEADLINE: Duration = Duration::from_millis(500);
/// After Lichess says the game finished, wait this long for the stream's
/// last `gameState` (the final move for the PGN) before wrapping up.
const FINISH_GRACE: Duration = Duration::from_secs(2);
/// Pauses between attempts to open the game stream.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(10);
/// A claim of victory refused (too early) is tried again after this.
const CLAIM_RETRY: Duration = Duration::from_secs(1);
const MAX_CLAIMS: u32 = 10;
/// Game-stream reopenings after failed move posts, per game.
const MAX_RESYNCS: u32 = 20;
/// A mate score counts as this many centipawns in the draw/resign rules.
const MATE_CP: i32 = 100_000;
/// While pondering, how often we check whether another game is waiting
/// for the search permit we hold (it then gets it, and we stop pondering).
const PONDER_YIELD_CHECK: Duration = Duration::from_millis(25);

/// Who we are on Lichess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Me {
    /// The user id (lowercase username).
    pub id: String,
    /// The username as displayed.
    pub name: String,
}

/// What every game task gets from the daemon.
#[derive(Clone)]
pub struct GameContext {
    pub client: Client,
    pub config: Arc<Config>,
    pub me: Me,
    /// One permit per search thread allowed (`engine.threads`), shared by
    /// all games.
    pub search_permits: Arc<Semaphore>,
}

/// What the daemon can tell a running game.
#[derive(Debug)]
pub enum GameCommand {
    /// The event stream reported the game finished (`gameFinish`).
    Finished(Box<GameInfo>),
    /// Resign now (abort if the game cannot be resigned yet).
    Resign,
}

/// The daemon's handle on a game task.
#[derive(Debug)]
pub struct GameHandle {
    commands: mpsc::UnboundedSender<GameCommand>,
    task: JoinHandle<()>,
}

impl GameHandle {
    /// Tells the game something; ignored if the task has ended.
    pub fn send(&self, command: GameCommand) {
        let _ = self.commands.send(command);
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the task where it is (no goodbye, no PGN).
    pub fn abort(&self) {
        self.task.abort();
    }
}

/// Starts the task of game `info.game_id`. When it ends, it sends the
/// game id on `done`.
pub fn spawn(ctx: GameContext, info: GameInfo, done: mpsc::UnboundedSender<String>) -> GameHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let id = info.game_id.clone();
    let task = tokio::spawn(async move {
        let (game, events) = Game::new(ctx, &info);
        game.run(rx, events).await;
        let _ = done.send(id);
    });
    GameHandle { commands: tx, task }
}

/// The search in progress for one of our moves.
struct Thinking {
    id: SearchId,
    /// The ply it answers (moves played before our move).
    ply: usize,
    /// When the `gameState` that made it our turn arrived.
    arrived: Instant,
    /// When the search was started.
    started: Instant,
    /// How long we waited for a search permit (another game was
    /// searching): queueing, not overhead.
    queued: Duration,
    /// Our clock when the search started.
    clock: Option<Duration>,
    last_info: Option<SearchInfo>,
    _permit: OwnedSemaphorePermit,
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
/// Permits: a ponder search runs on a CPU thread too, so it holds one of
/// the `engine.threads` permits, but it never waits for one and never
/// keeps one from a game that needs it for its real move. It starts only
/// if a permit is free at once (the permit of our own search is released
/// first, so a game queued for it gets it), and every
/// [`PONDER_YIELD_CHECK`] it releases its permit and takes it back if it
/// can without waiting: the semaphore is fair, so a released permit goes
/// to a game already waiting, and the ponder search then stops.
struct Pondering {
    id: SearchId,
    /// The ply of the position searched (after the expected reply).
    ply: usize,
    /// The key of the position after our move (the opponent to move).
    after_ours: u64,
    /// The key of the position searched.
    key: u64,
    /// The expected reply, in UCI (for the log).
    expected: String,
    last_info: Option<SearchInfo>,
    /// `None` only for an instant, while checking for waiting games.
    permit: Option<OwnedSemaphorePermit>,
}

/// The immutable facts of the game, from `gameFull`.
struct Facts {
    white: String,
    black: String,
    white_rating: Option<u32>,
    black_rating: Option<u32>,
    /// Initial time and increment in ms.
    clock: Option<(u64, u64)>,
    rated: bool,
    speed: &'static str,
    chess960: bool,
    created_at: Option<u64>,
}

/// What a handled line asks the run loop to do.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// It is our turn: get a search permit.
    Think,
    /// The game is over.
    Over,
    /// Our view may be stale (a move post failed or was refused): reopen
    /// the game stream, whose `gameFull` tells where the game stands.
    Resync,
}

type PermitFuture = Pin<Box<dyn Future<Output = Option<OwnedSemaphorePermit>> + Send>>;

struct Game {
    ctx: GameContext,
    id: String,
    /// Our colour, from `gameStart` or from the player ids of `gameFull`.
    color: Option<chess::Color>,
    facts: Option<Facts>,
    record: Option<GameRecord>,
    /// The latest state and when it arrived.
    state: Option<(GameState, Instant)>,
    status: GameStatus,
    winner: Option<Color>,
    engine: Engine,
    thinking: Option<Thinking>,
    pondering: Option<Pondering>,
    /// Ponder searches that ended in a hit / a miss (wrong guess).
    ponder_hits: u32,
    ponder_misses: u32,
    /// The ply of our last move post, so one position is answered once.
    moved_at_ply: Option<usize>,
    /// Evaluation after each move (White's view), for the PGN.
    evals: Vec<Option<Eval>>,
    /// Our score after each of our moves (our view, centipawns).
    scores: Vec<i32>,
    view: EngineView,
    greeted: bool,
    draw_answered_at: Option<usize>,
    takeback_answered_at: Option<usize>,
    draw_offered_at: Option<usize>,
    abort_at: Option<Instant>,
    claim_at: Option<Instant>,
    claims: u32,
    finish_by: Option<Instant>,
    /// Resyncs after a failed move post, so far.
    resyncs: u32,
    /// Where this game's table is kept (`engine.state_dir` set).
    hash_file: Option<PathBuf>,
    /// Our moves posted in this run (the table is saved every few).
    moves_posted: usize,
}

/// The other side's colour in the Lichess model.
fn to_chess(color: Color) -> chess::Color {
    match color {
        Color::White => chess::Color::White,
        Color::Black => chess::Color::Black,
    }
}

fn to_model(color: chess::Color) -> Color {
    match color {
        chess::Color::White => Color::White,
        chess::Color::Black => Color::Black,
    }
}

/// A score in centipawns, mates counted as huge.
fn score_cp(score: Score) -> i32 {
    match score {
        Score::Cp(cp) => cp,
        Score::Mate(n) if n > 0 => MATE_CP - n,
        Score::Mate(n) => -MATE_CP - n,
    }
}

/// `+0.35`, `-1.20`, `#3`, `#-2`.
fn score_text(eval: Eval) -> String {
    match eval {
        Eval::Cp(cp) => format!("{:+.2}", cp as f64 / 100.0),
        Eval::Mate(n) => format!("#{n}"),
    }
}

/// The engine's score (side to move's view) as White sees it.
fn white_eval(score: Score, mover: chess::Color) -> Eval {
    let sign = if mover == chess::Color::White { 1 } else { -1 };
    match score {
        Score::Cp(cp) => Eval::Cp(sign * cp),
        Score::Mate(n) => Eval::Mate(sign * n),
    }
}

/// The first moves of a principal variation in SAN.
fn pv_san(pos: &Position, pv: &[Move], max: usize) -> String {
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

/// `YYYY.MM.DD` of a Unix time in milliseconds (civil-from-days).
fn pgn_date(unix_ms: u64) -> String {
    let days = (unix_ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}.{m:02}.{d:02}")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The PGN result and termination of a finished game.
fn result_of(status: GameStatus, winner: Option<Color>) -> (&'static str, &'static str) {
    let result = match (status, winner) {
        (_, Some(Color::White)) => "1-0",
        (_, Some(Color::Black)) => "0-1",
        (GameStatus::Aborted | GameStatus::NoStart | GameStatus::Created, None) => "*",
        (GameStatus::Started, None) => "*",
        _ => "1/2-1/2",
    };
    let termination = match status {
        GameStatus::Outoftime | GameStatus::Timeout => "Time forfeit",
        GameStatus::Aborted | GameStatus::NoStart => "Abandoned",
        GameStatus::Cheat => "Rules infraction",
        GameStatus::Started | GameStatus::Created | GameStatus::Unknown => "Unterminated",
        _ => "Normal",
    };
    (result, termination)
}

impl Game {
    fn new(ctx: GameContext, info: &GameInfo) -> (Game, mpsc::UnboundedReceiver<engine::Event>) {
        let options = EngineOptions {
            hash_mb: ctx
                .config
                .engine
                .hash_mb_per_game(ctx.config.bot.concurrency),
            threads: 1,
            multipv: 1,
        };
        let (mut engine, events) = Engine::spawn(options);
        if ctx.config.engine.ponder {
            engine.set_ponder(true);
        }
        let hash_file = ctx
            .config
            .engine
            .state_dir
            .as_deref()
            .and_then(|dir| hashstore::path(dir, &info.game_id));
        // A table saved by an earlier run of this game (a restart): loaded
        // before the first search, since the engine takes commands in order.
        if let Some(path) = hash_file.as_ref().filter(|p| p.exists()) {
            let reply = engine.load_hash(path.clone());
            let game = info.game_id.clone();
            tokio::spawn(async move {
                match reply.await {
                    Ok(Ok(loaded)) => tracing::info!(
                        game = %game,
                        mib = loaded.bytes >> 20,
                        entries = loaded.used,
                        "hash table loaded"
                    ),
                    Ok(Err(e)) => tracing::warn!(game = %game, "hash file not used: {e}"),
                    Err(_) => {}
                }
            });
        }
        let game = Game {
            id: info.game_id.clone(),
            color: info.color.map(to_chess),
            ctx,
            facts: None,
            record: None,
            state: None,
            status: GameStatus::Started,
            winner: None,
            engine,
            thinking: None,
            pondering: None,
            ponder_hits: 0,
            ponder_misses: 0,
            moved_at_ply: None,
            evals: Vec::new(),
            scores: Vec::new(),
            view: EngineView::default(),
            greeted: false,
            draw_answered_at: None,
            takeback_answered_at: None,
            draw_offered_at: None,
            abort_at: None,
            claim_at: None,
            claims: 0,
            finish_by: None,
            resyncs: 0,
            hash_file,
            moves_posted: 0,
        };
        (game, events)
    }

    /// Plays the game until it is over (or Lichess no longer knows it),
    /// then says goodbye and writes the PGN.
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<GameCommand>,
        mut events: mpsc::UnboundedReceiver<engine::Event>,
    ) {
        let mut backoff = RECONNECT_MIN;
        let mut pending: Option<PermitFuture> = None;
        let mut asked = Instant::now();
        let far = || Instant::now() + Duration::from_secs(86_400 * 365);
        'game: loop {
            let opened = tokio::select! {
                r = self.ctx.client.stream_game(&self.id) => r,
                _ = tokio::time::sleep_until(self.finish_by.unwrap_or_else(far)),
                    if self.finish_by.is_some() => break 'game,
            };
            let mut stream = match opened {
                Ok(stream) => {
                    backoff = RECONNECT_MIN;
                    stream
                }
                Err(e @ (ClientError::NotFound { .. } | ClientError::Unauthorized { .. })) => {
                    tracing::warn!(game = %self.id, "cannot open the game stream: {e}");
                    break 'game;
                }
                Err(e) => {
                    tracing::warn!(game = %self.id, "cannot open the game stream: {e}");
                    // Lichess may have finished the game meanwhile.
                    while let Ok(command) = commands.try_recv() {
                        match command {
                            GameCommand::Finished(info) => {
                                self.on_finished(*info);
                            }
                            GameCommand::Resign => {
                                self.resign_now().await;
                            }
                        }
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(jittered(backoff)) => {}
                        _ = tokio::time::sleep_until(self.finish_by.unwrap_or_else(far)),
                            if self.finish_by.is_some() => break 'game,
                    }
                    backoff = (backoff * 2).min(RECONNECT_MAX);
                    continue 'game;
                }
            };
            loop {
                let flow = tokio::select! {
                    item = stream.next() => match item {
                        Some(Ok(StreamEvent::Item(event))) => self.on_event(event, Instant::now()),
                        Some(Ok(StreamEvent::KeepAlive)) => Flow::Continue,
                        Some(Ok(StreamEvent::Skipped(why))) => {
                            tracing::warn!(game = %self.id, "game stream: line skipped: {why}");
                            Flow::Continue
                        }
                        Some(Err(e)) => {
                            tracing::warn!(game = %self.id, "game stream failed: {e}");
                            break;
                        }
                        None => {
                            tracing::debug!(game = %self.id, "game stream closed");
                            break;
                        }
                    },
                    Some(event) = events.recv() => self.on_engine(event).await,
                    permit = async { match pending.as_mut() {
                        Some(f) => f.await,
                        None => std::future::pending().await,
                    } }, if pending.is_some() => {
                        pending = None;
                        if let Some(permit) = permit {
                            self.start_search(permit, asked.elapsed());
                        }
                        Flow::Continue
                    }
                    _ = tokio::time::sleep(PONDER_YIELD_CHECK),
                        if self.pondering.is_some() => {
                        self.ponder_yield_check();
                        Flow::Continue
                    }
                    _ = tokio::time::sleep_until(self.abort_at.unwrap_or_else(far)),
                        if self.abort_at.is_some() => self.on_abort_timer().await,
                    _ = tokio::time::sleep_until(self.claim_at.unwrap_or_else(far)),
                        if self.claim_at.is_some() => self.on_claim_timer().await,
                    _ = tokio::time::sleep_until(self.finish_by.unwrap_or_else(far)),
                        if self.finish_by.is_some() => Flow::Over,
                    command = commands.recv() => match command {
                        Some(GameCommand::Finished(info)) => self.on_finished(*info),
                        Some(GameCommand::Resign) => self.resign_now().await,
                        // The daemon is gone: nobody will read our result.
                        None => Flow::Over,
                    },
                };
                match flow {
                    Flow::Continue => {}
                    Flow::Think => {
                        if pending.is_none() {
                            asked = Instant::now();
                            let permits = Arc::clone(&self.ctx.search_permits);
                            pending =
                                Some(Box::pin(async move { permits.acquire_owned().await.ok() }));
                        }
                    }
                    Flow::Over => break 'game,
                    Flow::Resync => break,
                }
            }
            if !self.status.is_ongoing() {
                break 'game;
            }
            let delay = jittered(backoff);
            tracing::info!(game = %self.id, retry_in_ms = delay.as_millis() as u64, "reopening the game stream");
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = tokio::time::sleep_until(self.finish_by.unwrap_or_else(far)),
                    if self.finish_by.is_some() => break 'game,
            }
            backoff = (backoff * 2).min(RECONNECT_MAX);
        }
        self.wrap_up().await;
    }

    fn on_event(&mut self, event: GameEvent, arrived: Instant) -> Flow {
        match event {
            GameEvent::GameFull(full) => self.on_full(*full, arrived),
            GameEvent::GameState(state) => self.on_state(state, arrived),
            GameEvent::ChatLine(line) => {
                self.on_chat(line);
                Flow::Continue
            }
            GameEvent::OpponentGone(gone) => {
                self.on_gone(gone);
                Flow::Continue
            }
            GameEvent::Unknown { kind } => {
                tracing::debug!(game = %self.id, %kind, "unknown game stream line ignored");
                Flow::Continue
            }
        }
    }

    fn on_full(&mut self, full: GameFull, arrived: Instant) -> Flow {
        let chess960 = full.variant.key == crate::lichess::model::VariantKey::Chess960;
        if self.record.is_none() {
            match GameRecord::new(&full.initial_fen, chess960) {
                Ok(record) => self.record = Some(record),
                Err(e) => {
                    tracing::error!(game = %self.id, "cannot play this game: {e}");
                    return Flow::Over;
                }
            }
        }
        if let Some(color) = full.color_of(&self.ctx.me.id) {
            self.color = Some(to_chess(color));
        }
        let Some(us) = self.color else {
            tracing::error!(game = %self.id, "we do not play in this game");
            return Flow::Over;
        };
        let name = |p: &crate::lichess::model::GamePlayer| match p.ai_level {
            Some(level) if p.name.is_empty() => format!("Stockfish level {level}"),
            _ if p.name.is_empty() => p.id.clone(),
            _ => p.name.clone(),
        };
        let first_time = self.facts.is_none();
        self.facts = Some(Facts {
            white: name(&full.white),
            black: name(&full.black),
            white_rating: full.white.rating,
            black_rating: full.black.rating,
            clock: full.clock.map(|c| (c.initial, c.increment)),
            rated: full.rated,
            speed: full.speed.as_str(),
            chess960,
            created_at: full.created_at,
        });
        if first_time {
            let opponent = self.opponent_name();
            tracing::info!(
                game = %self.id,
                color = to_model(us).as_str(),
                opponent = %opponent,
                variant = full.variant.key.as_str(),
                speed = full.speed.as_str(),
                rated = full.rated,
                clock = %full.clock.map(|c| format!("{}+{}", c.initial / 1000, c.increment / 1000)).unwrap_or_else(|| "-".to_owned()),
                initial_fen = %full.initial_fen,
                "game start"
            );
        }
        let flow = self.on_state(full.state, arrived);
        if !self.greeted && self.status.is_ongoing() {
            self.greeted = true;
            let opponent = self.opponent_name();
            let me = self.ctx.me.name.clone();
            let chat = &self.ctx.config.chat;
            self.say(
                Room::Player,
                chat::fill_template(&chat.greeting, &me, &opponent),
            );
            self.say(
                Room::Spectator,
                chat::fill_template(&chat.greeting_spectator, &me, &opponent),
            );
        }
        flow
    }

    fn opponent_name(&self) -> String {
        match (&self.facts, self.color) {
            (Some(f), Some(chess::Color::White)) => f.black.clone(),
            (Some(f), Some(chess::Color::Black)) => f.white.clone(),
            _ => "opponent".to_owned(),
        }
    }

    /// Sends a chat line without waiting for it (chat goes through the
    /// client's queue and must not hold up the game).
    fn say(&self, room: Room, text: String) {
        if text.trim().is_empty() {
            return;
        }
        let client = self.ctx.client.clone();
        let id = self.id.clone();
        let room = match room {
            Room::Player => ChatRoom::Player,
            Room::Spectator => ChatRoom::Spectator,
        };
        tokio::spawn(async move {
            if let Err(e) = client.chat(&id, room, &text).await {
                tracing::warn!(game = %id, "chat failed: {e}");
            }
        });
    }

    fn on_state(&mut self, state: GameState, arrived: Instant) -> Flow {
        let Some(us) = self.color else {
            // A gameState before gameFull: the stream is broken.
            return Flow::Continue;
        };
        let Some(record) = self.record.as_mut() else {
            return Flow::Continue;
        };
        let before = record.ply();
        if let Err(e) = record.sync(&state.moves) {
            tracing::error!(game = %self.id, "server move list does not fit the game: {e}");
            return Flow::Continue;
        }
        let ply = record.ply();
        let turn = record.position().turn();
        let opponent_moved = ply >= 2 || (ply == 1 && record.initial().turn() != us);
        if ply < before {
            // A takeback: the evaluations of the moves taken back go.
            self.evals.truncate(ply);
        }
        self.status = state.status;
        self.winner = state.winner;
        if let Some(p) = &self.pondering {
            let key = record.position().key();
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
                Some(None) => self.ponder_hit(ply, &state, arrived),
                Some(Some(why)) => self.stop_pondering(why),
            }
        }
        if self.thinking.as_ref().is_some_and(|t| t.ply != ply) || !state.status.is_ongoing() {
            // The position changed under the search (takeback, game end).
            if self.thinking.take().is_some() {
                self.engine.stop();
            }
        }
        if !state.status.is_ongoing() {
            self.state = Some((state, arrived));
            return Flow::Over;
        }
        let them = to_model(!us);
        if state.offers_draw(them) && self.draw_answered_at != Some(ply) {
            self.draw_answered_at = Some(ply);
            let accept = self.ctx.config.bot.accept_draw && self.dead_equal();
            tracing::info!(game = %self.id, accept, "draw offer");
            self.spawn_action(
                move |client, id| async move { client.answer_draw(&id, accept).await },
            );
        }
        if state.proposes_takeback(them) && self.takeback_answered_at != Some(ply) {
            self.takeback_answered_at = Some(ply);
            let accept = self.ctx.config.bot.accept_takebacks;
            tracing::info!(game = %self.id, accept, "takeback proposal");
            self.spawn_action(move |client, id| async move {
                client.answer_takeback(&id, accept).await
            });
        }
        if opponent_moved {
            self.abort_at = None;
        } else if turn != us && self.abort_at.is_none() {
            self.abort_at = Some(Instant::now() + self.ctx.config.bot.abort_time());
        }
        self.state = Some((state, arrived));
        if turn == us && self.thinking.is_none() && self.moved_at_ply != Some(ply) {
            Flow::Think
        } else {
            Flow::Continue
        }
    }

    /// Runs a game action (draw/takeback answer, claim...) in the
    /// background, logging a failure.
    fn spawn_action<F, Fut>(&self, action: F)
    where
        F: FnOnce(Client, String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), ClientError>> + Send,
    {
        let client = self.ctx.client.clone();
        let id = self.id.clone();
        tokio::spawn(async move {
            if let Err(e) = action(client, id.clone()).await {
                tracing::warn!(game = %id, "{e}");
            }
        });
    }

    /// Whether our last `draw_moves` scores were all within
    /// `draw_score_cp` of 0.
    fn dead_equal(&self) -> bool {
        let bot = &self.ctx.config.bot;
        let n = bot.draw_moves as usize;
        self.scores.len() >= n
            && self.scores[self.scores.len() - n..]
                .iter()
                .all(|s| s.unsigned_abs() <= bot.draw_score_cp)
    }

    /// Whether our last `resign_moves` scores were all hopeless.
    fn hopeless(&self) -> bool {
        let bot = &self.ctx.config.bot;
        let n = bot.resign_moves as usize;
        bot.resign_enabled
            && self.scores.len() >= n
            && self.scores[self.scores.len() - n..]
                .iter()
                .all(|&s| s <= -(bot.resign_score_cp as i32))
    }

    /// The limits of a search for our move in `state` (our clock having
    /// run for `since` since it arrived), and our clock.
    fn limits(
        &self,
        state: &GameState,
        us: chess::Color,
        since: Duration,
        first_move: bool,
    ) -> (Limits, Option<Duration>) {
        let engine_config = &self.ctx.config.engine;
        let mut limits = Limits {
            move_overhead: engine_config.move_overhead(),
            ..Limits::default()
        };
        let clock = self.facts.as_ref().and_then(|f| f.clock);
        let mut our_clock = None;
        match clock {
            Some(_) => {
                let ms = |v: u64| Duration::from_millis(v);
                let (mut wtime, mut btime) = (ms(state.wtime), ms(state.btime));
                // The line is `since` old: our clock has been running.
                match us {
                    chess::Color::White => wtime = wtime.saturating_sub(since),
                    chess::Color::Black => btime = btime.saturating_sub(since),
                }
                our_clock = Some(if us == chess::Color::White {
                    wtime
                } else {
                    btime
                });
                limits.wtime = Some(wtime);
                limits.btime = Some(btime);
                limits.winc = Some(ms(state.winc));
                limits.binc = Some(ms(state.binc));
                if first_move {
                    limits.movetime = Some(FIRST_MOVE_TIME);
                }
            }
            None => limits.movetime = Some(NO_CLOCK_MOVE_TIME),
        }
        if engine_config.max_depth > 0 {
            limits.depth = Some(engine_config.max_depth);
        }
        if engine_config.max_nodes > 0 {
            limits.nodes = Some(engine_config.max_nodes);
        }
        (limits, our_clock)
    }

    /// Starts the search for our move, if it is still wanted.
    fn start_search(&mut self, permit: OwnedSemaphorePermit, queued: Duration) {
        let (Some(us), Some(record), Some((state, arrived))) =
            (self.color, &self.record, &self.state)
        else {
            return;
        };
        let ply = record.ply();
        if !state.status.is_ongoing()
            || record.position().turn() != us
            || self.thinking.is_some()
            || self.moved_at_ply == Some(ply)
        {
            return;
        }
        let first_move = self.moved_at_ply.is_none() && ply < 2;
        let (limits, our_clock) = self.limits(state, us, arrived.elapsed(), first_move);
        let request = GoRequest::new(record.position().clone(), record.history(), limits);
        let arrived = *arrived;
        // Defensive: a ponder search is never left running under ours.
        self.stop_pondering("position changed");
        let started = Instant::now();
        let id = self.engine.go(request);
        self.thinking = Some(Thinking {
            id,
            ply,
            arrived,
            started,
            queued,
            clock: our_clock,
            last_info: None,
            _permit: permit,
        });
    }

    async fn on_engine(&mut self, event: engine::Event) -> Flow {
        match event {
            engine::Event::Info { id, info } => {
                if info.multipv > 1 {
                    return Flow::Continue;
                }
                if let Some(t) = self.thinking.as_mut().filter(|t| t.id == id) {
                    t.last_info = Some(info);
                } else if let Some(p) = self.pondering.as_mut().filter(|p| p.id == id) {
                    p.last_info = Some(info);
                }
                Flow::Continue
            }
            engine::Event::BestMove { id, best } => {
                if self.pondering.as_ref().is_some_and(|p| p.id == id) {
                    // A ponder search holds its answer until a hit or a
                    // stop; ending by itself, it is of no use: never post.
                    self.pondering = None;
                    return Flow::Continue;
                }
                // Also the answers of stopped ponder searches: not ours.
                if self.thinking.as_ref().is_none_or(|t| t.id != id) {
                    return Flow::Continue;
                }
                let done = Instant::now();
                let Some(thinking) = self.thinking.take() else {
                    return Flow::Continue;
                };
                match best.mv {
                    Some(mv) => self.play(thinking, mv, best.ponder, done).await,
                    None => Flow::Continue,
                }
            }
        }
    }

    /// Posts our move (or resigns a hopeless game), then ponders on
    /// `expected` if pondering is on.
    async fn play(
        &mut self,
        thinking: Thinking,
        mv: Move,
        expected: Option<Move>,
        done: Instant,
    ) -> Flow {
        let (Some(us), Some(record)) = (self.color, &self.record) else {
            return Flow::Continue;
        };
        let pos = record.position().clone();
        let chess960 = record.chess960();
        let ply = thinking.ply;
        let info = thinking.last_info.as_ref();
        if let Some(info) = info {
            self.scores.push(score_cp(info.score));
            let eval = white_eval(info.score, us);
            if self.evals.len() <= ply {
                self.evals.resize(ply + 1, None);
            }
            self.evals[ply] = Some(eval);
            self.view = EngineView {
                score: Some(score_text(eval)),
                depth: Some(info.depth),
                pv: Some(pv_san(&pos, &info.pv, 6)).filter(|p| !p.is_empty()),
            };
        }
        if self.hopeless() {
            tracing::info!(game = %self.id, ply, "resigning a lost position");
            self.moved_at_ply = Some(ply);
            if let Err(e) = self.ctx.client.resign(&self.id).await {
                tracing::warn!(game = %self.id, "resign failed: {e}");
            }
            return Flow::Continue;
        }
        let bot = &self.ctx.config.bot;
        let offering_draw = bot.offer_draw
            && self.dead_equal()
            && self
                .draw_offered_at
                .is_none_or(|at| ply >= at + 2 * bot.draw_moves as usize);
        if offering_draw {
            self.draw_offered_at = Some(ply);
        }
        let uci = mv.to_uci(chess960);
        let think = done - thinking.started;
        // Retry the post for as long as our clock allows, within bounds.
        let budget = thinking
            .clock
            .map_or(MAX_MOVE_DEADLINE, |c| c.saturating_sub(think))
            .clamp(MIN_MOVE_DEADLINE, MAX_MOVE_DEADLINE);
        let posting = Instant::now();
        // Time on our side of the wire: from the line's arrival to the
        // search start (less any wait for a search permit), and from the
        // best move to this post.
        let overhead = (thinking.started - thinking.arrived).saturating_sub(thinking.queued)
            + (posting - done);
        self.moved_at_ply = Some(ply);
        let result = self
            .ctx
            .client
            .make_move(&self.id, &uci, offering_draw, posting + budget)
            .await;
        let (depth, score, nodes) = match info {
            Some(i) => (i.depth, i.score.to_string(), i.nodes),
            None => (0, "none".to_owned(), 0),
        };
        let clock = thinking.clock;
        let queued = thinking.queued;
        let arrived = thinking.arrived;
        // Our search is over: its permit goes back before any pondering
        // (a game waiting for one gets it first).
        drop(thinking);
        match result {
            Ok(()) => {
                tracing::info!(
                game = %self.id,
                ply,
                mv = %uci,
                san = %pos.san(mv),
                depth,
                score = %score,
                nodes,
                think_ms = think.as_millis() as u64,
                clock_ms = clock.map(|c| c.as_millis() as u64),
                overhead_us = overhead.as_micros() as u64,
                queued_us = queued.as_micros() as u64,
                post_us = posting.elapsed().as_micros() as u64,
                offering_draw,
                "move"
                );
                self.moves_posted += 1;
                if self.moves_posted % hashstore::SAVE_EVERY_MOVES == 0 {
                    // Before any pondering: the engine runs it first.
                    self.save_hash();
                }
                if let Some(reply) = expected {
                    self.start_ponder(&pos, mv, reply, arrived);
                }
            }
            Err(e) => {
                tracing::warn!(game = %self.id, ply, mv = %uci, "move not played: {e}");
                // Refused ("not your turn": our position is stale) or lost
                // in transit: reopen the game stream, whose `gameFull`
                // tells whether the move was played, and answer the
                // position again if not. Bounded, so it cannot loop.
                let refused = matches!(e, ClientError::MoveRejected { .. });
                if (refused || e.is_transient()) && self.resyncs < MAX_RESYNCS {
                    self.resyncs += 1;
                    self.moved_at_ply = None;
                    return Flow::Resync;
                }
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
            }
        }
        Flow::Continue
    }

    /// After our move `ours` from `pos` (answering the latest state, which
    /// arrived at `arrived`), ponders on the position after `reply`, if
    /// pondering is on and a search permit is free (see [`Pondering`]).
    fn start_ponder(&mut self, pos: &Position, ours: Move, reply: Move, arrived: Instant) {
        if !self.ctx.config.engine.ponder || self.pondering.is_some() || self.thinking.is_some() {
            return;
        }
        let (Some(us), Some(record), Some((state, _))) = (self.color, &self.record, &self.state)
        else {
            return;
        };
        if !state.status.is_ongoing() || record.position().key() != pos.key() {
            return;
        }
        let after_ours = pos.play(ours);
        if !after_ours.is_legal(reply) {
            return;
        }
        let Ok(permit) = Arc::clone(&self.ctx.search_permits).try_acquire_owned() else {
            tracing::debug!(game = %self.id, "not pondering: no free search thread");
            return;
        };
        let target = after_ours.play(reply);
        let ply = record.ply() + 2;
        let mut history = record.history();
        history.push(pos.key());
        history.push(after_ours.key());
        // The clocks as they will be at the reply: ours less the time
        // spent on this move, plus the increment Lichess adds once the
        // clocks run; theirs as they stand (they run from now: the engine
        // counts ours from the hit).
        let (mut limits, _) = self.limits(state, us, arrived.elapsed(), false);
        if record.ply() >= 2 {
            match us {
                chess::Color::White => {
                    limits.wtime = limits.wtime.map(|t| t + limits.winc.unwrap_or_default())
                }
                chess::Color::Black => {
                    limits.btime = limits.btime.map(|t| t + limits.binc.unwrap_or_default())
                }
            }
        }
        let expected = reply.to_uci(record.chess960());
        let key = target.key();
        let id = self
            .engine
            .go_ponder(GoRequest::new(target, history, limits));
        tracing::debug!(game = %self.id, ply, expected = %expected, "pondering");
        self.pondering = Some(Pondering {
            id,
            ply,
            after_ours: after_ours.key(),
            key,
            expected,
            last_info: None,
            permit: Some(permit),
        });
    }

    /// The opponent played the expected reply (`state`, at `ply`): the
    /// ponder search becomes the search for our move.
    fn ponder_hit(&mut self, ply: usize, state: &GameState, arrived: Instant) {
        let (Some(p), Some(us)) = (self.pondering.take(), self.color) else {
            return;
        };
        let Some(permit) = p.permit else {
            return;
        };
        self.engine.ponderhit();
        self.ponder_hits += 1;
        tracing::debug!(game = %self.id, ply, expected = %p.expected, "ponder hit");
        let (_, clock) = self.limits(state, us, arrived.elapsed(), false);
        let now = Instant::now();
        self.thinking = Some(Thinking {
            id: p.id,
            ply,
            arrived,
            started: now,
            queued: Duration::ZERO,
            clock,
            last_info: p.last_info,
            _permit: permit,
        });
    }

    /// Stops the ponder search, if any (its answer will be ignored), and
    /// frees its permit. `why` is logged; "other reply" counts as a miss.
    fn stop_pondering(&mut self, why: &str) {
        let Some(p) = self.pondering.take() else {
            return;
        };
        self.engine.stop();
        if why == "other reply" {
            self.ponder_misses += 1;
            tracing::debug!(game = %self.id, ply = p.ply, expected = %p.expected, "ponder miss");
        } else {
            tracing::debug!(game = %self.id, ply = p.ply, expected = %p.expected, why, "ponder stopped");
        }
    }

    /// Gives our ponder permit to a game waiting for one, if any: the
    /// permit is released and taken back only if nobody was queued for it
    /// (the semaphore is fair: a released permit goes to the first waiter).
    fn ponder_yield_check(&mut self) {
        let Some(p) = self.pondering.as_mut() else {
            return;
        };
        drop(p.permit.take());
        match Arc::clone(&self.ctx.search_permits).try_acquire_owned() {
            Ok(permit) => p.permit = Some(permit),
            Err(_) => self.stop_pondering("a game needs the thread"),
        }
    }

    fn on_chat(&mut self, line: ChatLine) {
        let me = &self.ctx.me;
        if line.username.eq_ignore_ascii_case(&me.name)
            || line.username.eq_ignore_ascii_case(&me.id)
        {
            return;
        }
        let Some(room) = Room::parse(line.room.as_str()) else {
            return;
        };
        if let Some(answer) = chat::reply(&line.text, room, &me.name, &self.view) {
            tracing::info!(game = %self.id, room = room.as_str(), command = %line.text.chars().take(20).collect::<String>(), "chat command");
            self.say(room, answer);
        }
    }

    fn on_gone(&mut self, gone: OpponentGone) {
        if gone.gone {
            let after = Duration::from_secs(gone.claim_win_in_seconds.unwrap_or(0).into());
            tracing::info!(game = %self.id, claim_in_s = after.as_secs(), "opponent gone");
            self.claim_at = Some(Instant::now() + after);
            self.claims = 0;
        } else {
            tracing::info!(game = %self.id, "opponent back");
            self.claim_at = None;
        }
    }

    async fn on_abort_timer(&mut self) -> Flow {
        self.abort_at = None;
        tracing::info!(game = %self.id, "aborting: the opponent did not make a first move");
        if let Err(e) = self.ctx.client.abort(&self.id).await {
            tracing::warn!(game = %self.id, "abort failed: {e}");
        }
        Flow::Continue
    }

    async fn on_claim_timer(&mut self) -> Flow {
        self.claim_at = None;
        self.claims += 1;
        tracing::info!(game = %self.id, "claiming victory: the opponent left");
        if let Err(e) = self.ctx.client.claim_victory(&self.id).await {
            tracing::warn!(game = %self.id, "claim failed: {e}");
            if self.claims < MAX_CLAIMS {
                self.claim_at = Some(Instant::now() + CLAIM_RETRY);
            }
        }
        Flow::Continue
    }

    fn on_finished(&mut self, info: GameInfo) -> Flow {
        self.stop_pondering("game over");
        if self.status.is_ongoing() {
            if let Some(status) = info.status {
                self.status = status;
                self.winner = info.winner;
            }
            // Let the stream deliver the final state (the last move).
            self.finish_by.get_or_insert(Instant::now() + FINISH_GRACE);
        }
        Flow::Continue
    }

    /// Resigns (or aborts, before both sides moved).
    async fn resign_now(&mut self) -> Flow {
        self.stop_pondering("resigning");
        let ply = self.record.as_ref().map_or(0, GameRecord::ply);
        let result = if ply < 2 {
            tracing::info!(game = %self.id, "aborting on request");
            self.ctx.client.abort(&self.id).await
        } else {
            tracing::info!(game = %self.id, "resigning on request");
            self.ctx.client.resign(&self.id).await
        };
        if let Err(e) = result {
            tracing::warn!(game = %self.id, "{e}");
        }
        Flow::Continue
    }

    /// The game is over: stop the engine, say goodbye, write the PGN, log.
    /// Saves the table to the game's hash file (if `engine.state_dir` is
    /// set), on the engine thread; the outcome is logged.
    fn save_hash(&mut self) {
        let Some(path) = self.hash_file.clone() else {
            return;
        };
        let reply = self.engine.save_hash(path);
        let game = self.id.clone();
        tokio::spawn(async move {
            match reply.await {
                Ok(Ok(saved)) => {
                    tracing::debug!(game = %game, entries = saved.used, "hash table saved")
                }
                Ok(Err(e)) => tracing::warn!(game = %game, "hash table not saved: {e}"),
                Err(_) => {}
            }
        });
    }

    async fn wrap_up(mut self) {
        if self.thinking.take().is_some() {
            self.engine.stop();
        }
        self.stop_pondering("game over");
        if let (Some(dir), Some(path)) = (&self.ctx.config.engine.state_dir, &self.hash_file) {
            if self.status.is_ongoing() {
                // Not over (shutdown, or Lichess lost track of it): keep
                // the table for the run that resumes the game.
                let reply = self.engine.save_hash(path.clone());
                match tokio::time::timeout(Duration::from_secs(10), reply).await {
                    Ok(Ok(Ok(saved))) => {
                        tracing::info!(game = %self.id, entries = saved.used, "hash table saved")
                    }
                    Ok(Ok(Err(e))) => tracing::warn!(game = %self.id, "hash table not saved: {e}"),
                    Ok(Err(_)) | Err(_) => {
                        tracing::warn!(game = %self.id, "hash table not saved: no answer")
                    }
                }
            } else {
                hashstore::remove(dir, &self.id);
            }
        }
        let ply = self.record.as_ref().map_or(0, GameRecord::ply);
        let (result, termination) = result_of(self.status, self.winner);
        tracing::info!(
            game = %self.id,
            status = ?self.status,
            winner = self.winner.map(Color::as_str),
            result,
            plies = ply,
            ponder_hits = self.ponder_hits,
            ponder_misses = self.ponder_misses,
            "game end"
        );
        if self.facts.is_some() {
            let opponent = self.opponent_name();
            let me = self.ctx.me.name.clone();
            let chat = &self.ctx.config.chat;
            for (room, template) in [
                (ChatRoom::Player, &chat.goodbye),
                (ChatRoom::Spectator, &chat.goodbye_spectator),
            ] {
                let text = chat::fill_template(template, &me, &opponent);
                if !text.trim().is_empty()
                    && let Err(e) = self.ctx.client.chat(&self.id, room, &text).await
                {
                    tracing::warn!(game = %self.id, "goodbye failed: {e}");
                }
            }
        }
        if let Some(dir) = self.ctx.config.bot.pgn_dir.clone()
            && let Some(pgn) = self.pgn(result, termination)
        {
            let path = dir.join(format!("{}.pgn", self.id));
            match write_file(&dir, &path, pgn).await {
                Ok(()) => tracing::info!(game = %self.id, path = %path.display(), "PGN written"),
                Err(e) => {
                    tracing::warn!(game = %self.id, path = %path.display(), "cannot write the PGN: {e}")
                }
            }
        }
        // Joining the engine thread blocks until its search has stopped.
        let engine = self.engine;
        let _ = tokio::task::spawn_blocking(move || drop(engine)).await;
    }

    fn pgn(&self, result: &str, termination: &str) -> Option<String> {
        let (facts, record) = (self.facts.as_ref()?, self.record.as_ref()?);
        let headers = PgnHeaders {
            event: format!(
                "{} {} game",
                if facts.rated { "Rated" } else { "Casual" },
                facts.speed
            ),
            site: format!("{}/{}", self.ctx.client.base_url(), self.id),
            date: pgn_date(facts.created_at.unwrap_or_else(now_ms)),
            white: facts.white.clone(),
            black: facts.black.clone(),
            white_elo: facts.white_rating,
            black_elo: facts.black_rating,
            result: result.to_owned(),
            time_control: match facts.clock {
                Some((initial, inc)) => format!("{}+{}", initial / 1000, inc / 1000),
                None => "-".to_owned(),
            },
            termination: Some(termination.to_owned()),
        };
        debug_assert_eq!(facts.chess960, record.chess960());
        Some(write_pgn(&headers, record, &self.evals))
    }
}

async fn write_file(dir: &std::path::Path, path: &PathBuf, text: String) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    tokio::fs::write(path, text).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(pgn_date(0), "1970.01.01");
        assert_eq!(pgn_date(951_782_400_000), "2000.02.29");
        assert_eq!(pgn_date(1_795_219_200_000), "2026.11.21");
    }

    #[test]
    fn results() {
        assert_eq!(
            result_of(GameStatus::Mate, Some(Color::White)),
            ("1-0", "Normal")
        );
        assert_eq!(
            result_of(GameStatus::Outoftime, Some(Color::Black)),
            ("0-1", "Time forfeit")
        );
        assert_eq!(result_of(GameStatus::Stalemate, None).0, "1/2-1/2");
        assert_eq!(result_of(GameStatus::Outoftime, None).0, "1/2-1/2");
        assert_eq!(result_of(GameStatus::Aborted, None), ("*", "Abandoned"));
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
}
