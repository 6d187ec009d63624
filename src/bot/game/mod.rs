//! One game, from its first stream line to its PGN: a task per game that
//! reads the game stream, keeps the position (rebuilt from the initial FEN
//! and the server's whole move list on every `gameState`), asks its own
//! engine for a move when it is our turn, posts it on the urgent path, and
//! handles everything else a game brings: draw offers and takebacks,
//! aborting a game the opponent never starts (never an arena game: there
//! the player who does not start loses), claiming the win (or the draw,
//! when we cannot win on material) when the opponent leaves, chat
//! greetings and commands, and the PGN at the end.
//!
//! Each game has its own [`Engine`] (own thread, own transposition table of
//! `engine.hash_mb / bot.concurrency` MiB): games never share a table or
//! disturb each other's move ordering, and dropping the game frees it all.
//! The CPU budget is shared instead: a search needs one of the
//! `engine.threads` threads of [`GameContext::scheduler`], so the daemon
//! never searches on more threads than configured, whatever the number of
//! games; who waits is served by urgency, and a game that cannot wait has
//! a search with time to spare cut short (see [`scheduler`](super::scheduler)).
//! A search cut early in its budget asks again and searches on; one cut
//! late plays its best move so far.
//!
//! With `engine.ponder`, the game thinks on the opponent's time too: see
//! `Pondering` for the hit/miss flow and how a ponder search shares the
//! permits.
//!
//! The daemon talks to a running game through [`GameHandle`]: it tells it
//! that Lichess reported the game finished, or asks it to resign (used on
//! shutdown).
//!
//! A game without a clock (correspondence) is *parked* once it has waited
//! `bot.correspondence_park_secs` for the opponent's move (at once when
//! the daemon shuts down): the task ends ([`Exit::Parked`]) and gives back
//! its slot, engine and stream; the daemon starts a new task when
//! `/api/account/playing` lists it as our turn again.

//! The game is split by concern: `reader` keeps the game stream open
//! and stamps each line with its arrival; `mover` is the one place that
//! chooses and posts our move, asking [`lookup`] (books, tables,
//! online) before the engine, with the limits `clock` makes of the
//! clocks; `rules` holds the pure draw/resign rules; `end` stops the
//! engine, says goodbye and writes the PGN. This module keeps the
//! position and the game's timers and ties them together.

mod clock;
mod end;
pub mod lookup;
mod mover;
mod park;
mod player;
mod reader;
mod rules;

use super::chat::{self, Command, Room};
use super::external::{self, ExternalEngine};
use super::scheduler::{Permit, Scheduler};
use crate::bot::board::Record;
use crate::bot::board::standard::RecordError;
use crate::bot::store::hashstore;
use crate::chess;
use crate::config::Config;
use crate::engine::{self, Engine, EngineOptions, hashfile};
use crate::lichess::Error as ClientError;
use crate::lichess::client::Client;
use crate::lichess::model::{
    ChatLine, ChatRoom, Color, GameEvent, GameFull, GameInfo, GameState, GameStatus, OpponentGone,
    Speed, VariantKey,
};
use clock::Lag;
use futures::FutureExt;
use lookup::{Asking, MoveSources};
use mover::{Refused, Search};
use player::{Answers, Player};
use reader::{Line, Reader};
use rules::Judged;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

/// After Lichess says the game finished, wait this long for the stream's
/// last `gameState` (the final move for the PGN) before wrapping up.
const FINISH_GRACE: Duration = Duration::from_secs(2);
/// A claim is made again after this while the game goes on: refused
/// (too early), or answered 200 without effect (lila does nothing where
/// it cannot take the claim now, say on our own turn).
const CLAIM_RETRY: Duration = Duration::from_secs(1);
const MAX_CLAIMS: u32 = 10;
/// A claim due on our turn looks again this often (until our move is in).
const CLAIM_ON_OUR_TURN: Duration = Duration::from_millis(200);
/// Chat commands answered per game and minute, at most: a spammer cannot
/// make us flood the chat (and earn a 429).
const CHAT_REPLIES_PER_MINUTE: u32 = 4;
/// `!wait`: the opponent's first move is awaited this long from then...
const FIRST_MOVE_WAIT_EXTENSION: Duration = Duration::from_secs(60);
/// ...at most this many times a game.
const FIRST_MOVE_WAIT_EXTENSIONS: u32 = 2;

/// Who we are on Lichess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Me {
    /// The user id (lowercase username).
    pub id: String,
    /// The username as displayed.
    pub name: String,
}

/// A running game as the control socket's `status` shows it; the game
/// task keeps it current.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    pub opponent: String,
    /// Our colour: `white` or `black`.
    pub color: &'static str,
    pub variant: &'static str,
    pub speed: &'static str,
    pub rated: bool,
    /// Moves (plies) played.
    pub plies: usize,
    /// The clocks at the last move, in milliseconds.
    pub our_clock_ms: Option<u64>,
    pub their_clock_ms: Option<u64>,
    /// Our engine's last score, White's view (`+0.35`, `#-2`).
    pub score: Option<String>,
    /// The position now, and the move that led to it (UCI).
    pub fen: String,
    pub last_move: Option<String>,
    /// Our engine's evaluation after each ply it judged, White's view in
    /// centipawns (a mate as ±10000 less its distance); `None` elsewhere.
    pub evals: Vec<Option<i32>>,
    /// Our engine's principal variation at its last move, and its depth.
    pub pv: Option<String>,
    pub depth: Option<u32>,
}

/// What every game task gets from the daemon.
#[derive(Clone)]
pub struct GameContext {
    pub client: Client,
    pub config: Arc<Config>,
    pub me: Me,
    /// The search threads (`engine.threads`), shared by all games.
    pub scheduler: Scheduler,
    /// Challenges waiting in the daemon's queue (for `!queue`).
    pub queue_len: Arc<AtomicUsize>,
    /// Greet the players when the game starts (false when taking up a
    /// parked correspondence game that was greeted already).
    pub greet: bool,
    /// Books, tables and online sources, asked before the search.
    pub sources: Arc<MoveSources>,
    /// The external engine that plays this game (`[engines.NAME]`), or
    /// none: the built-in engine.
    pub external: Option<Arc<ExternalChoice>>,
    /// Where the game shows how it stands ([`Summary`]).
    pub summary: Arc<tokio::sync::watch::Sender<Summary>>,
}

/// An external engine chosen for a game, and how it is driven.
#[derive(Debug, Clone)]
pub struct ExternalChoice {
    pub spec: external::EngineSpec,
    /// Subtracted from our clock for each move.
    pub move_overhead: Duration,
    /// `go depth` / `go nodes` added to every search (0: none).
    pub max_depth: u32,
    pub max_nodes: u64,
}

/// How a game task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The game is over.
    Over,
    /// Not ours to play (its stream refused), or stopped for the next run.
    Ended,
    /// A correspondence game waits for the opponent (greeted already).
    Parked,
    /// The task stopped with the game perhaps still on (a panic, a bug; or
    /// its stream refused mid-game): the daemon checks the games in
    /// progress soon to take it up again.
    Dropped,
}

/// What a game task tells the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The players are known (the first `gameFull`): whether the opponent
    /// is a bot, and when the game was created (ms since the epoch).
    Opponent { bot: bool, created_at: Option<u64> },
    /// The task ended.
    Done(Exit),
}

/// Where a game task's notices go (the daemon's channel, whatever its
/// message type).
type Notices = Arc<dyn Fn(String, Notice) + Send + Sync>;

/// What the daemon can tell a running game.
#[derive(Debug)]
pub enum GameCommand {
    /// The event stream reported the game finished (`gameFinish`).
    Finished(Box<GameInfo>),
    /// Resign now (abort if the game cannot be resigned yet).
    Resign,
    /// Stop for the next run of the daemon: save the hash table, say
    /// nothing to Lichess.
    HandOver,
    /// The daemon is shutting down: a game without a clock parks as soon
    /// as it waits for the opponent, without waiting for a quick reply
    /// (the next run takes it up).
    ParkNow,
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

/// Starts the task of game `info.game_id`. It sends the game id and its
/// [`Notice`]s on `notices`, the last when it ends.
pub fn spawn<M: From<(String, Notice)> + Send + 'static>(
    ctx: GameContext,
    info: GameInfo,
    notices: mpsc::UnboundedSender<M>,
) -> GameHandle {
    let notices: Notices = Arc::new(move |id, notice| {
        let _ = notices.send(M::from((id, notice)));
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let id = info.game_id.clone();
    // Every line the task logs carries the game: `game{id=...}`.
    let span = tracing::info_span!("game", id = %id);
    let task = tokio::spawn(
        async move {
            let exit = guarded(async {
                match Game::new(ctx.clone(), &info, notices.clone()).await {
                    Ok((game, answers)) => game.run(rx, answers).await,
                    Err(e) => {
                        tracing::error!("cannot start the engine: {e}; game not played");
                        give_up(&ctx, &info).await;
                        Exit::Ended
                    }
                }
            })
            .await;
            notices(id, Notice::Done(exit));
        }
        .instrument(span),
    );
    GameHandle { commands: tx, task }
}

/// Runs a game task's body; a panic in it (a bug) ends the task as
/// `Exit::Dropped` with an error line instead of silently. The daemon then
/// frees the game's slot, and its check of the games in progress starts
/// a new task for the game if it is still going on.
async fn guarded(body: impl Future<Output = Exit>) -> Exit {
    match AssertUnwindSafe(body).catch_unwind().await {
        Ok(exit) => exit,
        Err(payload) => {
            let message = engine::panic_message(&*payload);
            tracing::error!(
                "the game task panicked (a bug; the next check of the games in progress takes the game up again): {message}"
            );
            Exit::Dropped
        }
    }
}

/// Spawns a task of the game task (a post, a save, a source's answer)
/// in its span, so that its lines name the game too.
fn spawn_here<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future.in_current_span())
}

/// A game we cannot play (its engine does not start): aborted, or
/// resigned when it cannot be aborted any more, so that it does not hang.
async fn give_up(ctx: &GameContext, info: &GameInfo) {
    if info.status.is_some_and(|s| !s.is_ongoing()) {
        return;
    }
    let abortable = !info.has_moved && info.tournament_id.is_none();
    let result = if abortable {
        ctx.client.abort(&info.game_id).await
    } else {
        ctx.client.resign(&info.game_id).await
    };
    match result {
        Ok(()) if abortable => tracing::warn!("game aborted: no engine"),
        Ok(()) => tracing::warn!("game resigned: no engine"),
        Err(e) => tracing::warn!("{e}"),
    }
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
    speed: Speed,
    variant: VariantKey,
    created_at: Option<u64>,
    /// The opponent is a bot, or Lichess's AI.
    opponent_bot: bool,
}

/// What a handled line asks the run loop to do.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// It is our turn: get a search permit.
    Think,
    /// A game without a clock waits for the opponent: park it.
    Park,
    /// The game is over.
    Over,
    /// Our view may be stale (a move post failed or was refused): reopen
    /// the game stream, whose `gameFull` tells where the game stands.
    Resync,
}

/// A game's draw and takeback offers: the plies at which the opponent's
/// last ones were answered, our last draw offer, and the takebacks
/// accepted (up to `bot.max_takebacks`).
#[derive(Debug, Default)]
struct Offers {
    draw_answered_at: Option<usize>,
    takeback_answered_at: Option<usize>,
    takebacks_accepted: u32,
    draw_offered_at: Option<usize>,
}

/// A game's claims of victory or a draw (the opponent gone): when the next
/// is due, and how many were sent.
#[derive(Debug, Default)]
struct Claims {
    at: Option<Instant>,
    sent: u32,
    /// The claim on its way: a request of its own, so that a slow Lichess
    /// (retries of up to a minute) never holds up the game's loop, its
    /// moves, its engine answers or another game's call for the thread.
    in_flight: Option<tokio::task::JoinHandle<()>>,
}

type PermitFuture = Pin<Box<dyn Future<Output = Permit> + Send>>;

/// The game's timers, each armed or not.
#[derive(Debug, Default)]
struct Timers {
    /// Abort the game if the opponent has not moved by then.
    abort_at: Option<Instant>,
    /// `!wait`s granted in this game.
    wait_extensions: u32,
    /// Lichess said the game finished: wrap up by then even if the last
    /// state does not come.
    finish_by: Option<Instant>,
    /// When the resyncs of a move are spent: think again at this instant.
    rethink_at: Option<Instant>,
    /// A game without a clock, waiting for the opponent: parked at this
    /// instant unless the reply comes first.
    park_at: Option<Instant>,
    /// Parked as soon as it waits for the opponent ([`GameCommand::ParkNow`]).
    park_now: bool,
    /// Our move was posted: the stream is reopened if its echo has not
    /// come by then (a stream that keeps alive but carries nothing).
    echo_at: Option<Instant>,
}

/// Where this game's table is kept (`engine.state_dir` set), and its last
/// periodic save while it may still be writing (the game's end waits for
/// it before deleting or rewriting the file).
#[derive(Debug, Default)]
struct HashFile {
    path: Option<PathBuf>,
    saving: Option<JoinHandle<()>>,
    /// What the last save took (reckoned from the table's size before
    /// one has been timed), microseconds, shared with the save's task.
    save_took_us: Arc<AtomicU64>,
}

struct Game {
    ctx: GameContext,
    id: String,
    /// Our colour, from `gameStart` or from the player ids of `gameFull`.
    color: Option<chess::Color>,
    facts: Option<Facts>,
    record: Option<Record>,
    /// The latest state and when it arrived.
    state: Option<(GameState, Instant)>,
    status: GameStatus,
    winner: Option<Color>,
    player: Player,
    /// The searches: for our move, on the opponent's time, suspended.
    search: Search,
    /// The ply of our last move post, so one position is answered once.
    moved_at_ply: Option<usize>,
    greeted: bool,
    offers: Offers,
    /// What the searches said of our moves, for the rules and the PGN.
    judged: Judged,
    /// The mover's clock after each ply, as the `gameState` that brought
    /// the ply said; none where no state said it (plies played before a
    /// restart, or in one state with the next) and in games without a
    /// clock. For the PGN's `[%clk]`.
    clocks: Vec<Option<Duration>>,
    claims: Claims,
    timers: Timers,
    /// Resyncs after a failed move post, for the current move.
    resyncs: u32,
    /// The last move list from the server did not fit our board, and the
    /// stream was read again for it.
    unfit: bool,
    /// Our moves the server refused in the current position.
    refused: Refused,
    /// The arena tournament of the game, if it is an arena pairing.
    tournament: Option<String>,
    /// Our move posts and their echo on the stream.
    lag: Lag,
    /// Chat commands answered in the current minute, and its start.
    chat_replies: (u32, Instant),
    /// The game stream, read by its own task.
    reader: Reader,
    /// This game's table on disk.
    hash: HashFile,
    /// Our moves posted in this run (the table is saved every few).
    moves_posted: usize,
    /// Stopped for the next run of the daemon (a restart), which resumes
    /// the game: no goodbye, no PGN.
    handed_over: bool,
    /// Lichess refused the game's stream (404, 410) after it had sent the
    /// game: if the game is still on, the daemon's check of the games in
    /// progress takes it up again (no goodbye, no PGN).
    stream_refused: bool,
    /// The ply whose position an online source was last asked about (once
    /// per position).
    online_asked_at: Option<usize>,
    /// To the daemon: what this game tells it.
    notices: Notices,
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

/// Why a game of `variant` from `initial_fen` (None: the start position)
/// cannot be played, if it cannot: its position is refused by the board
/// that would play it (lila admits more than 16 pieces or 8 pawns a side
/// in a set-up; kaissa's board does not).
pub fn position_error(variant: VariantKey, initial_fen: Option<&str>) -> Option<String> {
    let fen = initial_fen.unwrap_or("startpos");
    Record::new(variant, fen).err().map(|e| e.to_string())
}

impl Game {
    async fn new(
        mut ctx: GameContext,
        info: &GameInfo,
        notices: Notices,
    ) -> Result<(Game, Answers), String> {
        // The stream first: its lines keep the instant they came while an
        // external engine starts (seconds), and the clock counts from it.
        let reader = Reader::spawn(ctx.client.clone(), info.game_id.clone());
        let variant = info.variant.as_ref().map(|v| v.key);
        let mut external = None;
        if let Some(choice) = &ctx.external {
            let uci_variant = variant
                .and_then(crate::bot::board::variant::uci_variant)
                .map(str::to_owned);
            let chess960 = variant == Some(VariantKey::Chess960);
            let name = &choice.spec.name;
            match ExternalEngine::start(choice.spec.clone(), uci_variant, chess960, &info.game_id)
                .await
            {
                Ok((engine, events)) => {
                    tracing::info!(engine = %name, id = %engine.id().name, "external engine started");
                    external = Some((engine, events));
                }
                // Chess of any kind: the built-in engine plays it.
                Err(e) if variant.is_none_or(|v| v.is_chess()) => {
                    tracing::error!(engine = %name, "the external engine did not start: {e}; the built-in engine plays");
                    ctx.external = None;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let (player, answers, hash) = match external {
            Some((engine, events)) => (
                Player::External(engine),
                Answers::External(events),
                HashFile::default(),
            ),
            None => {
                let clock = info
                    .seconds_left
                    .map(|s| Duration::from_secs(s.max(0) as u64));
                let (engine, events, hash) = Game::built_in(&ctx, &info.game_id, clock)
                    .map_err(|e| format!("engine thread: {e}"))?;
                (Player::BuiltIn(engine), Answers::BuiltIn(events), hash)
            }
        };
        let greeted = !ctx.greet;
        let game = Game {
            id: info.game_id.clone(),
            color: info.color.map(to_chess),
            ctx,
            facts: None,
            record: None,
            state: None,
            status: GameStatus::Started,
            winner: None,
            player,
            search: Search::default(),
            moved_at_ply: None,
            greeted,
            offers: Offers::default(),
            judged: Judged::default(),
            clocks: Vec::new(),
            claims: Claims::default(),
            timers: Timers::default(),
            resyncs: 0,
            unfit: false,
            refused: Refused::default(),
            tournament: info.tournament_id.clone(),
            lag: Lag::default(),
            chat_replies: (0, Instant::now()),
            reader,
            hash,
            moves_posted: 0,
            handed_over: false,
            stream_refused: false,
            online_asked_at: None,
            notices,
        };
        Ok((game, answers))
    }

    /// The built-in engine of game `id`: its thread, with the table an
    /// earlier run of this game saved, if any (and if our `clock` leaves
    /// time to load it), and the table's file.
    fn built_in(
        ctx: &GameContext,
        id: &str,
        clock: Option<Duration>,
    ) -> std::io::Result<(Engine, mpsc::UnboundedReceiver<engine::Event>, HashFile)> {
        let options = EngineOptions {
            hash_mb: ctx
                .config
                .engine
                .hash_mb_per_game(ctx.config.bot.concurrency),
            threads: 1,
            multipv: 1,
        };
        let mb = options.hash_mb;
        let bytes = hashfile::file_len(mb);
        let (mut engine, events) = Engine::try_spawn(options)?;
        if ctx.config.engine.ponder {
            engine.set_ponder(true);
        }
        engine.set_tablebases(ctx.sources.local.tablebases.clone());
        let hash_file = ctx
            .config
            .engine
            .state_dir
            .as_deref()
            .and_then(|dir| hashstore::path(dir, id));
        // A table saved by an earlier run of this game (a restart): loaded
        // before the first search, since the engine takes commands in order.
        // Only a file of our own table's size: another size would make the
        // engine allocate whatever the file says.
        if let Some(path) = hash_file.as_ref().filter(|p| p.exists()) {
            if !hashstore::has_len(path, bytes) {
                tracing::warn!(path = %path.display(), "hash file of another table size refused");
                let _ = std::fs::remove_file(path);
            } else if !hashstore::load_fits(clock, bytes) {
                // Kept: the next save rewrites it.
                tracing::info!(mib = mb, clock_s = ?clock.map(|c| c.as_secs()), "hash file not loaded: too little on our clock for it");
            } else {
                let reply = engine.load_hash(path.clone());
                spawn_here(async move {
                    match reply.await {
                        Ok(Ok(loaded)) => tracing::info!(
                            mib = loaded.bytes >> 20,
                            entries = loaded.used,
                            "hash table loaded"
                        ),
                        Ok(Err(e)) => tracing::warn!("hash file not used: {e}"),
                        Err(_) => {}
                    }
                });
            }
        }
        let hash = HashFile {
            path: hash_file,
            saving: None,
            save_took_us: Arc::new(AtomicU64::new(
                hashstore::reckoned_io(bytes).as_micros() as u64
            )),
        };
        Ok((engine, events, hash))
    }

    /// Plays the game until it is over (or Lichess no longer knows it),
    /// then says goodbye and writes the PGN; or until a game without a
    /// clock waits for the opponent, then parks it.
    async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<GameCommand>,
        answers: Answers,
    ) -> Exit {
        let mut answers = Some(answers);
        let mut pending: Option<PermitFuture> = None;
        let mut asking: Option<Asking> = None;
        let far = || Instant::now() + Duration::from_secs(86_400 * 365);
        loop {
            // Our search's thread, if the scheduler wants it back.
            let cut: Option<Arc<Notify>> = self.cut_signal();
            let flow = tokio::select! {
                // The server's lines first: a move already waiting is seen
                // before an engine answer for the position it ends, or a
                // timer it disarms (the abort of a game the opponent has
                // just started, with the bot Black).
                biased;
                line = self.reader.lines.recv() => match line {
                    Some(Line::Event(event, arrived)) => self.on_event(event, arrived).await,
                    // Not ours to play (404 and the like), or the reader
                    // is gone.
                    Some(Line::Refused) => {
                        self.stream_refused = true;
                        Flow::Over
                    }
                    None => Flow::Over,
                },
                answer = async { match answers.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                } } => match answer {
                    Some(answer) => self.on_answer(answer).await,
                    // The engine is gone: no answer will come again.
                    None => {
                        answers = None;
                        self.engine_gone()
                    }
                },
                permit = async { match pending.as_mut() {
                    Some(f) => f.await,
                    None => std::future::pending().await,
                } }, if pending.is_some() => {
                    pending = None;
                    // Without an engine the permit goes straight back.
                    if answers.is_some() {
                        self.start_search(permit);
                    }
                    if self.search.thinking.is_none() && self.has_no_clock() && !self.our_turn() {
                        // The turn passed while we waited (a takeback):
                        // the park asked for meanwhile was put off.
                        Flow::Park
                    } else {
                        Flow::Continue
                    }
                }
                _ = async { match cut.as_ref() {
                    Some(n) => n.notified().await,
                    None => std::future::pending().await,
                } } => self.on_cut(),
                answer = async { match asking.as_mut() {
                    Some(a) => (&mut a.answer).await.ok().flatten(),
                    None => std::future::pending().await,
                } }, if asking.is_some() => {
                    match asking.take() {
                        Some(a) => self.on_online((a.ply, a.key), answer).await,
                        None => Flow::Continue,
                    }
                }
                _ = tokio::time::sleep_until(self.timers.abort_at.unwrap_or_else(far)),
                    if self.timers.abort_at.is_some() => self.on_abort_timer(),
                _ = tokio::time::sleep_until(self.claims.at.unwrap_or_else(far)),
                    if self.claims.at.is_some() => self.on_claim_timer(),
                _ = tokio::time::sleep_until(self.timers.rethink_at.unwrap_or_else(far)),
                    if self.timers.rethink_at.is_some() => self.on_rethink_timer(),
                _ = tokio::time::sleep_until(self.timers.echo_at.unwrap_or_else(far)),
                    if self.timers.echo_at.is_some() => self.on_echo_timer(),
                _ = tokio::time::sleep_until(self.timers.finish_by.unwrap_or_else(far)),
                    if self.timers.finish_by.is_some() => Flow::Over,
                _ = tokio::time::sleep_until(self.timers.park_at.unwrap_or_else(far)),
                    if self.timers.park_at.is_some() => self.on_park_timer(),
                command = commands.recv() => match command {
                    Some(GameCommand::Finished(info)) => self.on_finished(*info),
                    Some(GameCommand::Resign) => self.resign_now("on request"),
                    Some(GameCommand::HandOver) => {
                        self.handed_over = true;
                        Flow::Over
                    }
                    Some(GameCommand::ParkNow) => {
                        self.timers.park_now = true;
                        self.on_park_timer()
                    }
                    // The daemon is gone: nobody will read our result.
                    None => Flow::Over,
                },
            };
            // The built-in engine took the game over: its answers now.
            if let Some(taken_over) = self.search.taken_over.take() {
                answers = Some(taken_over);
            }
            // Our turn: the move sources first, then the search.
            let flow = match flow {
                // No engine to search with any more (the game is given up).
                Flow::Think if answers.is_none() => Flow::Continue,
                Flow::Think if pending.is_none() => self.before_search(&mut asking).await,
                other => other,
            };
            match flow {
                Flow::Continue => {}
                Flow::Think => {
                    self.timers.park_at = None;
                    if pending.is_none() {
                        let scheduler = self.ctx.scheduler.clone();
                        let ask = self.ask(false);
                        pending = Some(Box::pin(async move { scheduler.acquire(&ask).await }));
                    }
                }
                Flow::Over => break,
                Flow::Park if pending.is_none() && self.park_due() => {
                    self.park().await;
                    return Exit::Parked;
                }
                Flow::Park => {}
                Flow::Resync => self.reader.resync(),
            }
        }
        let exit = if !self.status.is_ongoing() {
            Exit::Over
        } else if self.lost_track() {
            Exit::Dropped
        } else {
            Exit::Ended
        };
        self.wrap_up().await;
        exit
    }

    /// Whether Lichess stopped giving us the game's stream while, as far
    /// as we know, the game goes on: it sent the game, then refused to
    /// send it again (a 404 mid-game). The game may still be on; only the
    /// list of games in progress can say.
    fn lost_track(&self) -> bool {
        self.stream_refused && self.record.is_some() && self.status.is_ongoing()
    }

    async fn on_event(&mut self, event: GameEvent, arrived: Instant) -> Flow {
        match event {
            GameEvent::GameFull(full) => self.on_full(*full, arrived).await,
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
                tracing::debug!(%kind, "unknown game stream line ignored");
                Flow::Continue
            }
        }
    }

    async fn on_full(&mut self, full: GameFull, arrived: Instant) -> Flow {
        let variant = full.variant.key;
        // The built-in engine plays chess; an external one was started for
        // this game's variant.
        if !self.player.plays(variant) {
            return self.refuse(&full, "a variant we do not play").await;
        }
        if self.record.is_none() {
            match Record::new(variant, &full.initial_fen) {
                Ok(record) => self.record = Some(record),
                // Never left to run out: aborted or resigned.
                Err(e) => {
                    return self
                        .refuse(&full, &format!("cannot play this position: {e}"))
                        .await;
                }
            }
        }
        if full.tournament_id.is_some() {
            self.tournament.clone_from(&full.tournament_id);
        }
        if let Some(color) = full.color_of(&self.ctx.me.id) {
            self.color = Some(to_chess(color));
        }
        let Some(us) = self.color else {
            tracing::error!("we do not play in this game");
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
            speed: full.speed,
            variant: full.variant.key,
            created_at: full.created_at,
            opponent_bot: {
                let them = if us == chess::Color::White {
                    &full.black
                } else {
                    &full.white
                };
                them.is_bot() || them.ai_level.is_some()
            },
        });
        if first_time {
            let them = if us == chess::Color::White {
                &full.black
            } else {
                &full.white
            };
            let notice = Notice::Opponent {
                bot: them.is_bot(),
                created_at: full.created_at,
            };
            (self.notices)(self.id.clone(), notice);
        }
        let opponent = self.opponent_name();
        self.ctx.summary.send_modify(|s| {
            s.opponent.clone_from(&opponent);
            s.color = to_model(us).as_str();
            s.variant = full.variant.key.as_str();
            s.speed = full.speed.as_str();
            s.rated = full.rated;
        });
        if first_time {
            tracing::info!(
                color = to_model(us).as_str(),
                opponent = %opponent,
                variant = full.variant.key.as_str(),
                speed = full.speed.as_str(),
                rated = full.rated,
                clock = %full.clock.map(|c| format!("{}+{}", c.initial / 1000, c.increment / 1000)).unwrap_or_else(|| "-".to_owned()),
                initial_fen = %full.initial_fen,
                tournament = self.tournament.as_deref(),
                "game start"
            );
            if full.state.moves.split_whitespace().nth(1).is_some() {
                // Both sides moved before this run took the game up: an
                // earlier run played (and greeted) it.
                self.greeted = true;
            }
        }
        self.lag.resynced();
        let flow = self.on_state(full.state, arrived);
        if !self.greeted && self.status.is_ongoing() {
            self.greeted = true;
            self.greet();
        }
        flow
    }

    /// Greets both rooms, unless the player chat already has a line of
    /// ours: a restart before both sides moved finds its own greeting
    /// there (`GET /api/bot/game/{id}/chat`). The chat is read off the
    /// game task, so the first move does not wait for it.
    fn greet(&self) {
        let opponent = self.opponent_name();
        let me = self.ctx.me.name.clone();
        let chat = &self.ctx.config.chat;
        // The spectators' line first: the players' room is the one we can
        // read back, so a greeting found there after a restart means both
        // were sent.
        let lines = [
            (
                ChatRoom::Spectator,
                chat::fill_template(&chat.greeting_spectator, &me, &opponent),
            ),
            (
                ChatRoom::Player,
                chat::fill_template(&chat.greeting, &me, &opponent),
            ),
        ];
        if lines.iter().all(|(_, text)| text.trim().is_empty()) {
            return;
        }
        let client = self.ctx.client.clone();
        let id = self.id.clone();
        spawn_here(async move {
            match client.chat_history(&id).await {
                Ok(history) if history.iter().any(|l| l.user.eq_ignore_ascii_case(&me)) => {
                    tracing::debug!("greeted already (a line of ours is in the chat)");
                    return;
                }
                Ok(_) => {}
                // Better twice than never.
                Err(e) => tracing::debug!("chat not read before the greeting: {e}"),
            }
            for (room, text) in lines {
                if text.trim().is_empty() {
                    continue;
                }
                if let Err(e) = client.chat(&id, room, &text).await {
                    tracing::warn!("chat failed: {e}");
                }
            }
        });
    }

    /// A game we cannot play (`why`: a variant we do not play, a position
    /// our board refuses; a tournament pairing, a challenge accepted
    /// elsewhere): aborted, or resigned if it is too late to abort or an
    /// arena game (lila never aborts those), at once; the task then ends.
    async fn refuse(&self, full: &GameFull, why: &str) -> Flow {
        let variant = full.variant.key.as_str();
        let ply = full.state.moves.split_whitespace().count();
        if !full.state.status.is_ongoing() {
            return Flow::Over;
        }
        let arena = self.tournament.is_some() || full.tournament_id.is_some();
        let result = if ply < 2 && !arena {
            tracing::warn!(variant, "{why}: aborting");
            self.ctx.client.abort(&self.id).await
        } else {
            tracing::warn!(variant, "{why}: resigning");
            self.ctx.client.resign(&self.id).await
        };
        if let Err(e) = result {
            tracing::warn!("{e}");
        }
        Flow::Over
    }

    /// What the draw and resign rules see of the game at `ply`.
    fn standing(&self, ply: usize) -> rules::Standing {
        let them = self.color.map(|us| to_model(!us));
        let opponent_clock_no_increment = match (&self.state, them) {
            (Some((state, _)), Some(them))
                if self.facts.as_ref().is_some_and(|f| f.clock.is_some())
                    && state.increment(them) == 0 =>
            {
                Some(Duration::from_millis(state.time_left(them)))
            }
            _ => None,
        };
        rules::Standing {
            // Plies alternate from the start position, whoever began.
            our_moves: ply / 2,
            against_bot: self.facts.as_ref().is_some_and(|f| f.opponent_bot),
            opponent_clock_no_increment,
            tablebase_draw: self.judged.tablebase_draw,
            // Arena points come from wins. (Bots cannot play Swiss
            // games: lila's Swiss pairing leaves out BOT accounts.)
            draws_barred: self.tournament.is_some() && !self.ctx.config.tournaments.draws,
        }
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
        spawn_here(async move {
            if let Err(e) = client.chat(&id, room, &text).await {
                tracing::warn!("chat failed: {e}");
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
        let new = match record.sync(&state.moves) {
            Ok(new) => new,
            Err(e) => return self.unfit(state, arrived, &e),
        };
        self.unfit = false;
        let ply = record.ply();
        if ply != before {
            // A new move: a fresh resync budget for it.
            self.resyncs = 0;
            self.timers.rethink_at = None;
        }
        let turn = record.turn();
        let opponent_moved = ply >= 2 || (ply == 1 && record.initial_turn() != us);
        let kept = ply - new;
        if kept < before {
            // A takeback: what was noted of the moves taken back goes, and
            // so does our move among them: the ply we answered may come
            // round again, with the opponent's new move before it.
            self.judged.notes.truncate(kept);
            self.clocks.truncate(kept);
            self.moved_at_ply = self.moved_at_ply.filter(|&m| m < kept);
            self.lag.taken_back(kept);
            // An offer at a ply that comes round again is a new one.
            let offers = &mut self.offers;
            offers.draw_answered_at = offers.draw_answered_at.filter(|&p| p < kept);
            offers.takeback_answered_at = offers.takeback_answered_at.filter(|&p| p < kept);
        }
        self.lag.seen(ply, arrived);
        if !self.lag.awaiting() {
            self.timers.echo_at = None;
        }
        self.status = state.status;
        let them = to_model(!us);
        let clock = self.facts.as_ref().is_some_and(|f| f.clock.is_some());
        if new > 0 && clock {
            // The clock of the last move's mover (the side not to move
            // now); the moves before it in this state have none.
            let left = state.time_left(to_model(!turn));
            self.clocks.truncate(ply - new);
            self.clocks.resize(ply, None);
            self.clocks[ply - 1] = Some(Duration::from_millis(left));
        }
        let fen = record.fen();
        let last_move = record.uci_moves().pop();
        self.ctx.summary.send_modify(|s| {
            s.plies = ply;
            s.fen = fen;
            s.last_move = last_move;
            s.our_clock_ms = clock.then(|| state.time_left(to_model(us)));
            s.their_clock_ms = clock.then(|| state.time_left(them));
        });
        self.winner = state.winner;
        let key = record.key();
        self.ponder_on(ply, key, &state, arrived);
        // The position changed under the search: a takeback, or one and
        // a new move seen together (across a reconnect), or the game's end.
        let over = !state.status.is_ongoing();
        if let Some(t) = self
            .search
            .thinking
            .take_if(|t| t.ply != ply || kept < t.ply || over)
        {
            if !over {
                tracing::info!(
                    ply = t.ply,
                    now = ply,
                    kept,
                    "search stopped: the position changed"
                );
            }
            self.player.stop();
        }
        if over {
            self.state = Some((state, arrived));
            return Flow::Over;
        }
        self.answer_offers(&state, ply);
        if turn == us {
            // The wait for a reply is over (whatever plays our move next:
            // a search, a book, the tables).
            self.timers.park_at = None;
        }
        if opponent_moved {
            self.timers.abort_at = None;
        } else if turn != us
            && self.timers.abort_at.is_none()
            && self.tournament.is_none()
            && !self.has_no_clock()
        {
            // Not in an arena: there Lichess ends a game nobody starts
            // against the player who did not move, and an abort would
            // throw our point away (Lichess refuses it anyway). Nor in a
            // game without a clock: the opponent has days for a move.
            self.timers.abort_at = Some(Instant::now() + self.ctx.config.bot.abort_time());
        }
        self.state = Some((state, arrived));
        if turn == us && self.search.thinking.is_none() && self.moved_at_ply != Some(ply) {
            Flow::Think
        } else if turn != us && self.search.thinking.is_none() && self.has_no_clock() {
            Flow::Park
        } else {
            Flow::Continue
        }
    }

    /// Answers the opponent's draw offer and takeback proposal in
    /// `state` (at `ply`), once each.
    fn answer_offers(&mut self, state: &GameState, ply: usize) {
        let Some(us) = self.color else {
            return;
        };
        let them = to_model(!us);
        if state.offers_draw(them) && self.offers.draw_answered_at != Some(ply) {
            self.offers.draw_answered_at = Some(ply);
            let accept = rules::accept_draw(
                &self.judged.scores,
                &self.standing(ply),
                &self.ctx.config.bot,
            );
            tracing::info!(accept, "draw offer");
            self.spawn_action(
                move |client, id| async move { client.answer_draw(&id, accept).await },
            );
        }
        if state.proposes_takeback(them) && self.offers.takeback_answered_at != Some(ply) {
            self.offers.takeback_answered_at = Some(ply);
            let accept = self.offers.takebacks_accepted < self.ctx.config.bot.max_takebacks;
            if accept {
                self.offers.takebacks_accepted += 1;
            }
            tracing::info!(
                accept,
                accepted = self.offers.takebacks_accepted,
                "takeback proposal"
            );
            self.spawn_action(move |client, id| async move {
                client.answer_takeback(&id, accept).await
            });
        }
    }

    /// Whether the board has us to move.
    fn our_turn(&self) -> bool {
        match (self.color, &self.record) {
            (Some(us), Some(record)) => record.turn() == us,
            _ => false,
        }
    }

    /// Whether a game waiting for the opponent is parked now: once the
    /// wait for a quick reply (`bot.correspondence_park_secs`) is over,
    /// which this starts on the first ask.
    fn park_due(&mut self) -> bool {
        if self.timers.park_now {
            return true;
        }
        let now = Instant::now();
        let at = *self
            .timers
            .park_at
            .get_or_insert(now + self.ctx.config.bot.correspondence_park_after());
        at <= now
    }

    /// The wait for a quick reply is over: parked if still waiting.
    fn on_park_timer(&mut self) -> Flow {
        let waiting = self.search.thinking.is_none() && self.has_no_clock() && !self.our_turn();
        if waiting {
            Flow::Park
        } else {
            self.timers.park_at = None;
            Flow::Continue
        }
    }

    /// A game without a clock (correspondence, unlimited).
    fn has_no_clock(&self) -> bool {
        self.facts.as_ref().is_some_and(|f| f.clock.is_none())
    }

    /// Runs a game action (draw/takeback answer, claim...) in the
    /// background, logging a failure.
    fn spawn_action<F, Fut>(&self, action: F) -> tokio::task::JoinHandle<()>
    where
        F: FnOnce(Client, String) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), ClientError>> + Send,
    {
        let client = self.ctx.client.clone();
        let id = self.id.clone();
        spawn_here(async move {
            if let Err(e) = action(client, id.clone()).await {
                tracing::warn!("{e}");
            }
        })
    }

    fn on_chat(&mut self, line: ChatLine) {
        let me = &self.ctx.me;
        if line.username.eq_ignore_ascii_case(&me.name)
            || line.username.eq_ignore_ascii_case(&me.id)
        {
            return;
        }
        let (Some(room), Some(command)) =
            (Room::parse(line.room.as_str()), Command::parse(&line.text))
        else {
            return;
        };
        let (count, since) = &mut self.chat_replies;
        if since.elapsed() >= Duration::from_secs(60) {
            *count = 0;
            *since = Instant::now();
        }
        if *count >= CHAT_REPLIES_PER_MINUTE {
            tracing::debug!("chat command not answered: too many this minute");
            return;
        }
        *count += 1;
        tracing::info!(room = room.as_str(), command = %line.text.chars().take(20).collect::<String>(), "chat command");
        let wait_extended = if command == Command::Wait && room == Room::Player {
            self.extend_first_move_wait()
        } else {
            None
        };
        // The policy of the opponent's kind (a bot's may differ).
        let kind = if self.facts.as_ref().is_some_and(|f| f.opponent_bot) {
            crate::config::Challenger::Bot
        } else {
            crate::config::Challenger::Human
        };
        let challenge = self.ctx.config.challenge.for_challenger(kind);
        let variants: Vec<&str> = challenge
            .variants
            .iter()
            .map(|v| v.key().as_str())
            .collect();
        let variants = variants.join(", ");
        let speeds: Vec<&str> = challenge
            .speeds
            .iter()
            .map(|s| s.speed().as_str())
            .collect();
        let modes = match (challenge.rated, challenge.casual) {
            (true, true) => "rated or casual",
            (true, false) => "rated",
            _ => "casual",
        };
        let games = format!("{}; {modes}", speeds.join(", "));
        let ctx = chat::Context {
            me: &self.ctx.me.name,
            engine: &self.judged.view,
            waiting: self.ctx.queue_len.load(Ordering::Relaxed),
            variants: &variants,
            games: &games,
            wait_extended: wait_extended.map(|d| d.as_secs()),
        };
        let answer = chat::reply(command, room, &ctx);
        self.say(room, answer);
    }

    /// `!wait` from the opponent before their first move: the abort
    /// timer runs [`FIRST_MOVE_WAIT_EXTENSION`] from now, at most
    /// [`FIRST_MOVE_WAIT_EXTENSIONS`] times a game. The extension given,
    /// if any.
    fn extend_first_move_wait(&mut self) -> Option<Duration> {
        let at = self.timers.abort_at.as_mut()?;
        if self.timers.wait_extensions >= FIRST_MOVE_WAIT_EXTENSIONS {
            return None;
        }
        self.timers.wait_extensions += 1;
        *at = (*at).max(Instant::now() + FIRST_MOVE_WAIT_EXTENSION);
        tracing::info!(
            extensions = self.timers.wait_extensions,
            "the opponent asked to wait: abort timer extended"
        );
        Some(FIRST_MOVE_WAIT_EXTENSION)
    }

    fn on_gone(&mut self, gone: OpponentGone) {
        if gone.gone {
            let after = Duration::from_secs(gone.claim_win_in_seconds.unwrap_or(0).into());
            tracing::info!(claim_in_s = after.as_secs(), "opponent gone");
            self.claims.at = Some(Instant::now() + after);
            self.claims.sent = 0;
        } else {
            tracing::info!("opponent back");
            self.claims.at = None;
        }
    }

    fn on_abort_timer(&mut self) -> Flow {
        self.timers.abort_at = None;
        tracing::info!("aborting: the opponent did not make a first move");
        self.spawn_action(|client, id| async move { client.abort(&id).await });
        Flow::Continue
    }

    /// The resyncs for this move are spent and it is still unanswered:
    /// think again on the position we have.
    fn on_rethink_timer(&mut self) -> Flow {
        self.timers.rethink_at = None;
        let (Some(us), Some(record), Some((state, _))) = (self.color, &self.record, &self.state)
        else {
            return Flow::Continue;
        };
        if !state.status.is_ongoing() || record.turn() != us || self.search.thinking.is_some() {
            return Flow::Continue;
        }
        tracing::info!(
            ply = record.ply(),
            "no answer from the stream: thinking again"
        );
        self.moved_at_ply = None;
        Flow::Think
    }

    /// The echo of our move is late: the stream may be stuck (open and
    /// keeping alive, carrying nothing), and the opponent's reply with
    /// it. Its reopening's `gameFull` tells where the game stands.
    fn on_echo_timer(&mut self) -> Flow {
        self.timers.echo_at = None;
        if !self.status.is_ongoing() || !self.lag.awaiting() {
            return Flow::Continue;
        }
        tracing::warn!("the echo of our move is late: reopening the game stream");
        Flow::Resync
    }

    /// The opponent left long enough ago: claim the win, or the draw when
    /// we cannot win on material (a lone king, say), where Lichess would
    /// not give the win.
    fn on_claim_timer(&mut self) -> Flow {
        self.claims.at = None;
        if !self.status.is_ongoing() {
            return Flow::Continue;
        }
        // Lichess takes a claim only on the opponent's turn (lila's
        // `mightClaimWin`: `!isMyTurn`); on ours we move first, and the
        // claim follows once the move is in.
        if let (Some(us), Some(record)) = (self.color, &self.record)
            && record.turn() == us
        {
            self.claims.at = Some(Instant::now() + CLAIM_ON_OUR_TURN);
            return Flow::Continue;
        }
        // One claim at a time: the next waits for the last one's answer.
        if self
            .claims
            .in_flight
            .as_ref()
            .is_some_and(|t| !t.is_finished())
        {
            self.claims.at = Some(Instant::now() + CLAIM_RETRY);
            return Flow::Continue;
        }
        self.claims.sent += 1;
        let can_win = match (self.color, &self.record) {
            (Some(us), Some(record)) => record.can_win(us),
            _ => true,
        };
        if can_win {
            tracing::info!("claiming victory: the opponent left");
        } else {
            tracing::info!("claiming a draw: the opponent left and we cannot win on material");
        }
        self.claims.in_flight = Some(self.spawn_action(move |client, id| async move {
            if can_win {
                client.claim_victory(&id).await
            } else {
                client.claim_draw(&id).await
            }
        }));
        // A 200 is no proof: lila's BotPlayer answers it and does nothing
        // where the claim cannot be made now (`mightClaimWin`, `drawable`:
        // the opponent's move crossed ours and it was our turn there), and
        // sends no new `opponentGone`. So the claim stands until the game
        // ends or the opponent is back (which disarm it), up to
        // MAX_CLAIMS.
        if self.claims.sent < MAX_CLAIMS {
            self.claims.at = Some(Instant::now() + CLAIM_RETRY);
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
            self.timers
                .finish_by
                .get_or_insert(Instant::now() + FINISH_GRACE);
        }
        Flow::Continue
    }

    /// The engine ended (its thread or its driver is gone: a bug), so no
    /// move will come: rather than lose on time holding a search thread
    /// other games wait for, the game is given up and the thread freed.
    fn engine_gone(&mut self) -> Flow {
        tracing::error!("the engine is gone (a bug): giving the game up");
        self.search.thinking = None;
        self.search.suspended = None;
        self.resign_now("the engine is gone")
    }

    /// A move list from the server that our board cannot follow: its
    /// moves are lost to us, and with them the opponent's reply, so the
    /// game would hang until our clock ran out. The stream is read again
    /// once (a line mangled on its way); a list that still does not fit
    /// (a board that disagrees with Lichess's) gives the game up at once
    /// rather than on time. A state that ends the game ends it.
    fn unfit(&mut self, state: GameState, arrived: Instant, e: &RecordError) -> Flow {
        if !state.status.is_ongoing() {
            tracing::error!("server move list does not fit the game: {e}; the game is over");
            self.status = state.status;
            self.winner = state.winner;
            self.state = Some((state, arrived));
            return Flow::Over;
        }
        if !self.unfit {
            self.unfit = true;
            tracing::error!("server move list does not fit the game: {e}; reading the game again");
            return Flow::Resync;
        }
        tracing::error!("server move list still does not fit the game: {e}; giving the game up");
        // The server's count of moves, not our board's: it decides
        // whether the game can still be aborted.
        let ply = state.moves.split_whitespace().count();
        self.give_up_at(ply, "our board cannot follow the game")
    }

    /// Resigns (or aborts, before both sides moved), for `why`.
    fn resign_now(&mut self, why: &str) -> Flow {
        let ply = self.record.as_ref().map_or(0, Record::ply);
        self.give_up_at(ply, why)
    }

    /// Resigns, or aborts if fewer than two moves (`ply`) were played.
    fn give_up_at(&mut self, ply: usize, why: &str) -> Flow {
        self.stop_pondering("resigning");
        if ply < 2 && self.tournament.is_none() {
            tracing::info!("aborting: {why}");
            self.spawn_action(|client, id| async move { client.abort(&id).await });
        } else {
            tracing::info!("resigning: {why}");
            self.spawn_action(|client, id| async move { client.resign(&id).await });
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_game_task_still_ends() {
        assert_eq!(guarded(async { Exit::Parked }).await, Exit::Parked);
        let exit = guarded(async {
            tokio::task::yield_now().await;
            panic!("a bug")
        })
        .await;
        assert_eq!(exit, Exit::Dropped);
    }
}
