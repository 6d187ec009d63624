//! A fake Lichess server for integration tests: a real HTTP server on
//! 127.0.0.1 (ephemeral port) that the client, or the real daemon binary,
//! talks to over TCP.
//!
//! It speaks the bot API as Lichess documents it (lichess.org/api), with
//! shakmaty for the rules: the event stream (keep-alives, replay of open
//! challenges and ongoing games on connect, one stream per token), game
//! streams (`gameFull`, then `gameState` on every move, `chatLine`,
//! `opponentGone`), moves validated and timed like Lichess (a side's clock
//! runs from the moment the previous move was received; increments added
//! after the move; flag fall is `outoftime`), draws, takebacks, aborts,
//! resignations, claims, challenges both ways, and the account endpoints.
//!
//! Tests drive it through [`FakeLichess`]: send challenges, play the
//! opponent (by hand or automatically, see [`AutoPlay`]), inject faults
//! (cut or silent streams, 429s, 5xx, malformed/oversized/unknown lines),
//! read the per-game [`GameRecord`]s and wait for conditions with
//! [`FakeLichess::wait_for`].
//!
//! The JSON it sends is written here with `json!`, from the Lichess spec,
//! independently of `kaissa::lichess::model`, so the tests check the model
//! against the spec rather than against itself.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt as _;
use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::Zobrist64;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position, Role};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The standard starting position.
pub const STARTPOS_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The clock Lichess reports for games without one.
const NO_CLOCK_MS: i64 = 2_147_483_647;

/// Settings of the fake server.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The token the bot must present.
    pub token: String,
    /// The bot's username (its id is the lowercase form).
    pub username: String,
    /// Whether the account is a bot account (title BOT).
    pub is_bot: bool,
    /// Interval of the blank keep-alive lines on every stream.
    pub keepalive: Duration,
    /// A game whose first moves are not played within this is aborted.
    pub first_move_timeout: Duration,
    /// `claimWinInSeconds` announced when the opponent leaves.
    pub claim_win_secs: u32,
    /// Seed of the fake's random choices (colours, moves, ids).
    pub seed: u64,
}

impl Default for FakeConfig {
    fn default() -> FakeConfig {
        FakeConfig {
            token: "lip_fake_token_0123456789".to_owned(),
            username: "KaissaBot".to_owned(),
            is_bot: true,
            keepalive: Duration::from_secs(1),
            first_move_timeout: Duration::from_secs(30),
            claim_win_secs: 10,
            seed: 0x5eed,
        }
    }
}

/// How the automatic opponent picks its moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Any legal move.
    Random,
    /// Mate if possible, else the biggest capture, else any move.
    Greedy,
}

/// The opponent plays by itself: `policy`, after `think` on each move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoPlay {
    pub policy: Policy,
    pub think: Duration,
    /// Accept the bot's draw offers (else they lapse when it moves).
    pub accept_draws: bool,
}

impl Default for AutoPlay {
    fn default() -> AutoPlay {
        AutoPlay {
            policy: Policy::Greedy,
            think: Duration::from_millis(20),
            accept_draws: false,
        }
    }
}

/// The variant of a challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeVariant {
    Standard,
    /// A Chess960 start position by its number (0..960; 518 is the standard
    /// one), or a random one.
    Chess960 {
        position: Option<u32>,
    },
    /// A game from a FEN.
    FromPosition {
        fen: String,
    },
    /// Any other variant key: the bot should decline it. Such a challenge
    /// cannot be accepted.
    Other {
        key: String,
    },
}

/// The time control of a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeTime {
    Clock {
        limit_secs: u32,
        increment_secs: u32,
    },
    Correspondence {
        days: u32,
    },
    Unlimited,
}

/// Who challenges (or is challenged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opponent {
    pub id: String,
    pub name: String,
    /// `Some("BOT")` for a bot, `Some("GM")`...
    pub title: Option<String>,
    pub rating: Option<u32>,
    pub provisional: bool,
}

impl Opponent {
    /// A human player named `name`, rated 1500.
    pub fn human(name: &str) -> Opponent {
        Opponent {
            id: name.to_lowercase(),
            name: name.to_owned(),
            title: None,
            rating: Some(1500),
            provisional: false,
        }
    }

    /// A bot named `name`, rated 2000.
    pub fn bot(name: &str) -> Opponent {
        Opponent {
            title: Some("BOT".to_owned()),
            rating: Some(2000),
            ..Opponent::human(name)
        }
    }
}

/// The challenger's colour choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    White,
    Black,
    Random,
}

/// A challenge sent to the bot (see [`FakeLichess::send_challenge`]) or a
/// game started directly ([`FakeLichess::start_game`]).
#[derive(Debug, Clone)]
pub struct ChallengeSpec {
    pub variant: FakeVariant,
    pub time: FakeTime,
    pub rated: bool,
    /// The challenger's colour; the bot gets the other one.
    pub color: Side,
    pub challenger: Opponent,
    /// How the challenger plays once the game starts; `None`: by hand.
    pub autoplay: Option<AutoPlay>,
}

impl Default for ChallengeSpec {
    fn default() -> ChallengeSpec {
        ChallengeSpec {
            variant: FakeVariant::Standard,
            time: FakeTime::Clock {
                limit_secs: 180,
                increment_secs: 2,
            },
            rated: false,
            color: Side::Random,
            challenger: Opponent::human("Alice"),
            autoplay: Some(AutoPlay::default()),
        }
    }
}

impl ChallengeSpec {
    pub fn variant(mut self, variant: FakeVariant) -> ChallengeSpec {
        self.variant = variant;
        self
    }

    pub fn clock(mut self, limit_secs: u32, increment_secs: u32) -> ChallengeSpec {
        self.time = FakeTime::Clock {
            limit_secs,
            increment_secs,
        };
        self
    }

    pub fn time(mut self, time: FakeTime) -> ChallengeSpec {
        self.time = time;
        self
    }

    pub fn rated(mut self, rated: bool) -> ChallengeSpec {
        self.rated = rated;
        self
    }

    /// The challenger's colour.
    pub fn challenger_color(mut self, color: Side) -> ChallengeSpec {
        self.color = color;
        self
    }

    pub fn challenger(mut self, challenger: Opponent) -> ChallengeSpec {
        self.challenger = challenger;
        self
    }

    pub fn autoplay(mut self, autoplay: Option<AutoPlay>) -> ChallengeSpec {
        self.autoplay = autoplay;
        self
    }
}

/// A move the server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IllegalMove {
    pub uci: String,
    /// Plies played when it was tried.
    pub ply: usize,
    pub reason: String,
}

/// A chat message in a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRecord {
    pub room: String,
    pub username: String,
    pub text: String,
    pub from_bot: bool,
}

/// What happened in a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameRecord {
    pub id: String,
    /// `standard`, `chess960`, `fromPosition`.
    pub variant: String,
    /// `startpos` or a FEN.
    pub initial_fen: String,
    pub bot_color: Color,
    pub opponent: Opponent,
    /// UCI, as reported in `gameState.moves`.
    pub moves: Vec<String>,
    /// `started`, `mate`, `resign`, `stalemate`, `draw`, `outoftime`,
    /// `timeout`, `aborted`.
    pub status: String,
    pub winner: Option<Color>,
    /// The current position.
    pub fen: String,
    pub wtime_ms: i64,
    pub btime_ms: i64,
    /// Moves the bot posted that were refused (illegal or not its turn).
    pub illegal_moves: Vec<IllegalMove>,
    pub chat: Vec<ChatRecord>,
    /// The bot's answers to draw offers (`true`: accepted).
    pub draw_answers: Vec<bool>,
    /// The bot's answers to takeback proposals.
    pub takeback_answers: Vec<bool>,
    /// Draw offers the bot made (with a move or `draw/yes`).
    pub bot_draw_offers: usize,
    /// Game streams opened for this game.
    pub stream_connections: usize,
}

impl GameRecord {
    pub fn is_over(&self) -> bool {
        self.status != "started"
    }

    /// The bot's chat lines in `room`.
    pub fn bot_chat(&self, room: &str) -> Vec<String> {
        self.chat
            .iter()
            .filter(|c| c.from_bot && c.room == room)
            .map(|c| c.text.clone())
            .collect()
    }
}

/// A challenge as the fake sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeRecord {
    pub id: String,
    /// `created`, `accepted`, `declined`, `canceled`.
    pub status: String,
    /// `in` (to the bot) or `out` (from the bot).
    pub direction: String,
    /// The reason the bot gave (`tooFast`...), if it declined.
    pub decline_reason: Option<String>,
    /// For challenges the bot created: who, and the form it sent.
    pub dest: Option<String>,
    pub form: HashMap<String, String>,
    /// The game it became, once accepted.
    pub game_id: Option<String>,
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub status: u16,
    pub at: Instant,
}

/// A read-only view of the server, for [`FakeLichess::wait_for`].
pub struct View<'a>(&'a World);

impl View<'_> {
    pub fn game(&self, id: &str) -> Option<GameRecord> {
        self.0.games.get(id).map(|g| g.record())
    }

    /// All games, oldest first.
    pub fn games(&self) -> Vec<GameRecord> {
        self.0
            .game_order
            .iter()
            .filter_map(|id| self.game(id))
            .collect()
    }

    pub fn challenge(&self, id: &str) -> Option<ChallengeRecord> {
        self.0.challenges.get(id).map(|c| c.record())
    }

    pub fn challenges(&self) -> Vec<ChallengeRecord> {
        self.0
            .challenge_order
            .iter()
            .filter_map(|id| self.challenge(id))
            .collect()
    }

    pub fn requests(&self) -> &[RequestRecord] {
        &self.0.requests
    }

    pub fn event_stream_connected(&self) -> bool {
        self.0.event_stream.as_ref().is_some_and(|c| !c.closed())
    }

    pub fn event_stream_connections(&self) -> usize {
        self.0.event_connections
    }

    /// Games in progress right now.
    pub fn games_in_progress(&self) -> usize {
        self.0.in_progress()
    }

    /// The most games ever in progress at once.
    pub fn max_simultaneous_games(&self) -> usize {
        self.0.max_simultaneous
    }
}

// ---------------------------------------------------------------------------
// Streams

enum Frame {
    Data(Bytes),
    /// Close the connection cleanly (end of the chunked body).
    End,
    /// Abort the connection mid-stream.
    Cut,
}

/// One open ndjson response.
#[derive(Clone)]
struct Conn {
    tx: mpsc::UnboundedSender<Frame>,
    /// Silent: nothing is sent any more, not even keep-alives; the
    /// connection stays open.
    silent: Arc<AtomicBool>,
}

impl Conn {
    fn open(keepalive: Duration) -> (Conn, Response) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Frame>();
        let conn = Conn {
            tx,
            silent: Arc::new(AtomicBool::new(false)),
        };
        let ticker = conn.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(keepalive);
            interval.tick().await;
            loop {
                interval.tick().await;
                if ticker.closed() {
                    return;
                }
                ticker.send_raw(Bytes::from_static(b"\n"));
            }
        });
        let stream =
            futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).scan(false, |ended, frame| {
                let item = match frame {
                    _ if *ended => None,
                    Frame::Data(bytes) => Some(Ok(bytes)),
                    Frame::End => None,
                    Frame::Cut => {
                        *ended = true;
                        Some(Err(std::io::Error::other("connection cut by the test")))
                    }
                };
                std::future::ready(item)
            });
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        (conn, response)
    }

    fn closed(&self) -> bool {
        self.tx.is_closed()
    }

    fn send_raw(&self, bytes: Bytes) {
        if !self.silent.load(Ordering::SeqCst) {
            let _ = self.tx.send(Frame::Data(bytes));
        }
    }

    fn send(&self, value: &Value) {
        self.send_raw(Bytes::from(format!("{value}\n")));
    }

    fn end(&self) {
        let _ = self.tx.send(Frame::End);
    }

    fn cut(&self) {
        let _ = self.tx.send(Frame::Cut);
    }

    fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// Games

struct Game {
    id: String,
    full_id: String,
    variant: &'static str,
    mode: CastlingMode,
    initial_fen: String,
    start: Chess,
    pos: Chess,
    moves: Vec<String>,
    /// Zobrist keys of every position so far, for threefold repetition.
    keys: Vec<Zobrist64>,
    bot_color: Color,
    opponent: Opponent,
    rated: bool,
    speed: &'static str,
    /// Initial time and increment in ms; `None` without a clock.
    clock: Option<(i64, i64)>,
    days: Option<u32>,
    /// Time left, white then black, as of the last move.
    times: [i64; 2],
    last_move_at: Instant,
    created_at_ms: u64,
    status: &'static str,
    winner: Option<Color>,
    draw_offer: Option<Color>,
    takeback_offer: Option<Color>,
    gone_since: Option<Instant>,
    autoplay: Option<AutoPlay>,
    /// Bumped on every change that makes pending timers stale.
    generation: u64,
    subscribers: Vec<Conn>,
    chat: Vec<ChatRecord>,
    illegal: Vec<IllegalMove>,
    draw_answers: Vec<bool>,
    takeback_answers: Vec<bool>,
    bot_draw_offers: usize,
    stream_connections: usize,
}

fn idx(color: Color) -> usize {
    match color {
        Color::White => 0,
        Color::Black => 1,
    }
}

fn color_name(color: Color) -> &'static str {
    color.fold_wb("white", "black")
}

fn role_value(role: Role) -> u32 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 100,
    }
}

impl Game {
    fn started(&self) -> bool {
        self.status == "started"
    }

    fn ply(&self) -> usize {
        self.moves.len()
    }

    fn fen(&self) -> String {
        Fen::from_position(&self.pos, EnPassantMode::Legal).to_string()
    }

    fn uci(&self, m: Move) -> String {
        UciMove::from_move(m, self.mode).to_string()
    }

    fn record(&self) -> GameRecord {
        GameRecord {
            id: self.id.clone(),
            variant: self.variant.to_owned(),
            initial_fen: self.initial_fen.clone(),
            bot_color: self.bot_color,
            opponent: self.opponent.clone(),
            moves: self.moves.clone(),
            status: self.status.to_owned(),
            winner: self.winner,
            fen: self.fen(),
            wtime_ms: self.times[0],
            btime_ms: self.times[1],
            illegal_moves: self.illegal.clone(),
            chat: self.chat.clone(),
            draw_answers: self.draw_answers.clone(),
            takeback_answers: self.takeback_answers.clone(),
            bot_draw_offers: self.bot_draw_offers,
            stream_connections: self.stream_connections,
        }
    }

    fn player_json(&self, color: Color, bot: &Value) -> Value {
        if color == self.bot_color {
            bot.clone()
        } else {
            let o = &self.opponent;
            json!({"id": o.id, "name": o.name, "title": o.title, "rating": o.rating,
                   "provisional": o.provisional})
        }
    }

    fn state_json(&self) -> Value {
        let (winc, binc) = match self.clock {
            Some((_, inc)) => (inc, inc),
            None => (0, 0),
        };
        let mut state = json!({
            "type": "gameState",
            "moves": self.moves.join(" "),
            "wtime": self.times[0],
            "btime": self.times[1],
            "winc": winc,
            "binc": binc,
            "status": self.status,
        });
        if let Some(winner) = self.winner {
            state["winner"] = json!(color_name(winner));
        }
        match self.draw_offer {
            Some(Color::White) => state["wdraw"] = json!(true),
            Some(Color::Black) => state["bdraw"] = json!(true),
            None => {}
        }
        match self.takeback_offer {
            Some(Color::White) => state["wtakeback"] = json!(true),
            Some(Color::Black) => state["btakeback"] = json!(true),
            None => {}
        }
        if self.started() && self.ply() < 2 {
            state["expiration"] = json!({
                "idleMillis": self.last_move_at.elapsed().as_millis() as u64,
                "millisToMove": 0, // filled in by the caller, who knows the config
            });
        }
        state
    }

    fn full_json(&self, bot: &Value, first_move_ms: u64) -> Value {
        let mut state = self.state_json();
        if let Some(expiration) = state.get_mut("expiration") {
            expiration["millisToMove"] = json!(first_move_ms);
        }
        let mut full = json!({
            "type": "gameFull",
            "id": self.id,
            "variant": variant_json(self.variant),
            "speed": self.speed,
            "perf": {"name": perf_name(self.speed, self.variant)},
            "rated": self.rated,
            "createdAt": self.created_at_ms,
            "white": self.player_json(Color::White, bot),
            "black": self.player_json(Color::Black, bot),
            "initialFen": self.initial_fen,
            "state": state,
        });
        if let Some((initial, inc)) = self.clock {
            full["clock"] = json!({"initial": initial, "increment": inc});
        }
        if let Some(days) = self.days {
            full["daysPerTurn"] = json!(days);
        }
        full
    }

    /// The game as `gameStart`/`gameFinish`/`nowPlaying` list it.
    fn info_json(&self) -> Value {
        let status_id = match self.status {
            "started" => 20,
            "aborted" => 25,
            "mate" => 30,
            "resign" => 31,
            "stalemate" => 32,
            "timeout" => 33,
            "draw" => 34,
            "outoftime" => 35,
            _ => 38,
        };
        let seconds_left = self.times[idx(self.bot_color)] / 1000;
        let mut info = json!({
            "gameId": self.id,
            "fullId": self.full_id,
            "id": self.id,
            "color": color_name(self.bot_color),
            "fen": self.fen(),
            "hasMoved": self.moves.len() > usize::from(self.bot_color == Color::Black),
            "isMyTurn": self.started() && self.pos.turn() == self.bot_color,
            "lastMove": self.moves.last().cloned().unwrap_or_default(),
            "opponent": {"id": self.opponent.id, "username": self.opponent.name,
                         "rating": self.opponent.rating},
            "perf": self.speed,
            "rated": self.rated,
            "source": "friend",
            "speed": self.speed,
            "variant": variant_json(self.variant),
            "status": {"id": status_id, "name": self.status},
            "compat": {"bot": true, "board": true},
        });
        if self.clock.is_some() {
            info["secondsLeft"] = json!(seconds_left);
        }
        if let Some(winner) = self.winner {
            info["winner"] = json!(color_name(winner));
        }
        info
    }

    /// Parses a move posted as UCI, the way Lichess takes it: in standard
    /// chess castling as e1g1 or e1h1, in Chess960 only king-takes-rook.
    fn parse_move(&self, uci: &str) -> Result<Move, String> {
        let parsed: UciMove = uci.parse().map_err(|_| format!("Invalid UCI: {uci}"))?;
        let m = parsed
            .to_move(&self.pos)
            .map_err(|_| format!("Illegal move: {uci}"))?;
        if let (CastlingMode::Chess960, Move::Castle { rook, .. }, UciMove::Normal { to, .. }) =
            (self.mode, m, parsed)
        {
            if to != rook {
                return Err(format!(
                    "Illegal move: {uci} (Chess960 castles king-takes-rook)"
                ));
            }
        }
        Ok(m)
    }
}

fn variant_json(key: &str) -> Value {
    let (name, short) = match key {
        "standard" => ("Standard", "Std"),
        "chess960" => ("Chess960", "960"),
        "fromPosition" => ("From Position", "FEN"),
        other => (other, other),
    };
    json!({"key": key, "name": name, "short": short})
}

fn perf_name(speed: &str, variant: &str) -> String {
    if variant == "chess960" {
        return "Chess960".to_owned();
    }
    let mut chars = speed.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Lichess's speed of a clock: estimated duration = limit + 40 × increment.
fn speed_of(time: FakeTime) -> &'static str {
    match time {
        FakeTime::Clock {
            limit_secs,
            increment_secs,
        } => {
            let estimate = limit_secs + 40 * increment_secs;
            match estimate {
                0..30 => "ultraBullet",
                30..180 => "bullet",
                180..480 => "blitz",
                480..1500 => "rapid",
                _ => "classical",
            }
        }
        FakeTime::Correspondence { .. } | FakeTime::Unlimited => "correspondence",
    }
}

/// The back rank (White's) of Chess960 start position `n` (Scharnagl
/// numbering).
pub fn chess960_back_rank(n: u32) -> String {
    let fen = chess960_fen(n);
    fen[fen.rfind('/').map_or(0, |i| i + 1)..fen.find(' ').unwrap_or(fen.len())].to_owned()
}

/// The FEN of Chess960 start position `n`.
pub fn chess960_fen(n: u32) -> String {
    kaissa::chess::chess960_start_fen(n)
}

// ---------------------------------------------------------------------------
// Challenges

struct ChallengeState {
    id: String,
    status: &'static str,
    direction: &'static str,
    spec: ChallengeSpec,
    /// The challenger's final colour (incoming) / the bot's (outgoing).
    challenger_color: Color,
    decline_reason: Option<String>,
    dest: Option<String>,
    form: HashMap<String, String>,
    game_id: Option<String>,
}

impl ChallengeState {
    fn record(&self) -> ChallengeRecord {
        ChallengeRecord {
            id: self.id.clone(),
            status: self.status.to_owned(),
            direction: self.direction.to_owned(),
            decline_reason: self.decline_reason.clone(),
            dest: self.dest.clone(),
            form: self.form.clone(),
            game_id: self.game_id.clone(),
        }
    }
}

// ---------------------------------------------------------------------------
// The server's state

#[derive(Default)]
struct Faults {
    /// Answer 429 to this many requests, with this Retry-After.
    fail_429: u32,
    retry_after: Option<u64>,
    /// Answer 503 to this many move posts / requests of any kind.
    fail_5xx_moves: u32,
    fail_5xx_any: u32,
    /// Creating a challenge against a bot gets the daily-cap 429.
    bot_vs_bot_exhausted: bool,
    /// Accepts answered 200 without a game ever starting.
    accept_without_game: u32,
    /// Accepts that start the game but answer 503 (the bot cannot tell).
    accept_then_5xx: u32,
    /// The event stream does not replay ongoing games on connect (only
    /// `/api/account/playing` lists them).
    no_game_replay: bool,
    /// Answer 400 "Not your turn" to this many move posts (not played).
    reject_moves: u32,
}

struct World {
    cfg: FakeConfig,
    base_url: String,
    is_bot: bool,
    rng: fastrand::Rng,
    challenges: HashMap<String, ChallengeState>,
    challenge_order: Vec<String>,
    games: HashMap<String, Game>,
    game_order: Vec<String>,
    event_stream: Option<Conn>,
    event_connections: usize,
    faults: Faults,
    requests: Vec<RequestRecord>,
    max_simultaneous: usize,
}

struct Shared {
    world: Mutex<World>,
    changed: Notify,
}

type App = Arc<Shared>;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` on the world, then wakes the waiters.
    fn with<T>(self: &Arc<Self>, f: impl FnOnce(&mut World, &App) -> T) -> T {
        let result = {
            let mut world = self.lock();
            f(&mut world, self)
        };
        self.changed.notify_waiters();
        result
    }
}

impl World {
    fn bot_id(&self) -> String {
        self.cfg.username.to_lowercase()
    }

    fn bot_json(&self) -> Value {
        json!({"id": self.bot_id(), "name": self.cfg.username,
               "title": if self.is_bot { Some("BOT") } else { None },
               "rating": 2000, "provisional": false})
    }

    fn new_id(&mut self) -> String {
        loop {
            let id: String = (0..8).map(|_| self.rng.alphanumeric()).collect();
            if !self.games.contains_key(&id) && !self.challenges.contains_key(&id) {
                return id;
            }
        }
    }

    fn in_progress(&self) -> usize {
        self.games.values().filter(|g| g.started()).count()
    }

    fn send_event(&self, event: &Value) {
        if let Some(conn) = &self.event_stream {
            conn.send(event);
        }
    }

    fn challenge_json(&self, c: &ChallengeState) -> Value {
        let challenger_json = |o: &Opponent| {
            json!({"id": o.id, "name": o.name, "title": o.title, "rating": o.rating,
                   "provisional": o.provisional, "online": true, "lag": 4})
        };
        let bot = self.bot_json();
        let (challenger, dest) = if c.direction == "in" {
            (challenger_json(&c.spec.challenger), bot)
        } else {
            (bot, challenger_json(&c.spec.challenger))
        };
        let time_control = match c.spec.time {
            FakeTime::Clock {
                limit_secs,
                increment_secs,
            } => json!({"type": "clock", "limit": limit_secs, "increment": increment_secs,
                         "show": format!("{}+{}", limit_secs / 60, increment_secs)}),
            FakeTime::Correspondence { days } => {
                json!({"type": "correspondence", "daysPerTurn": days})
            }
            FakeTime::Unlimited => json!({"type": "unlimited"}),
        };
        let (key, fen) = match &c.spec.variant {
            FakeVariant::Standard => ("standard".to_owned(), None),
            FakeVariant::Chess960 { position } => {
                ("chess960".to_owned(), position.map(chess960_fen))
            }
            FakeVariant::FromPosition { fen } => ("fromPosition".to_owned(), Some(fen.clone())),
            FakeVariant::Other { key } => (key.clone(), None),
        };
        let speed = speed_of(c.spec.time);
        let mut json = json!({
            "id": c.id,
            "url": format!("{}/{}", self.base_url, c.id),
            "status": c.status,
            "challenger": challenger,
            "destUser": dest,
            "variant": variant_json(&key),
            "rated": c.spec.rated,
            "speed": speed,
            "timeControl": time_control,
            "color": match c.spec.color { Side::White => "white", Side::Black => "black",
                                          Side::Random => "random" },
            "finalColor": color_name(c.challenger_color),
            "perf": {"icon": "", "name": perf_name(speed, &key)},
            "direction": c.direction,
        });
        if let Some(fen) = fen {
            json["initialFen"] = json!(fen);
        }
        if let Some(reason) = &c.decline_reason {
            json["declineReason"] = json!(format!("Declined: {reason}"));
            json["declineReasonKey"] = json!(reason.to_lowercase());
        }
        json
    }

    /// Creates and starts a game; the bot plays `bot_color`.
    fn create_game(
        &mut self,
        app: &App,
        id: String,
        spec: &ChallengeSpec,
        bot_color: Color,
    ) -> Result<String, String> {
        let (variant, initial_fen, mode) = match &spec.variant {
            FakeVariant::Standard => ("standard", "startpos".to_owned(), CastlingMode::Standard),
            FakeVariant::Chess960 { position } => {
                let n = position.unwrap_or_else(|| self.rng.u32(0..960));
                ("chess960", chess960_fen(n), CastlingMode::Chess960)
            }
            FakeVariant::FromPosition { fen } => {
                let parsed = Fen::from_ascii(fen.as_bytes()).map_err(|e| e.to_string())?;
                let mode = CastlingMode::detect(parsed.as_setup());
                ("fromPosition", fen.clone(), mode)
            }
            FakeVariant::Other { key } => return Err(format!("cannot play variant {key}")),
        };
        let fen = if initial_fen == "startpos" {
            STARTPOS_FEN
        } else {
            &initial_fen
        };
        let start: Chess = Fen::from_ascii(fen.as_bytes())
            .map_err(|e| e.to_string())?
            .into_position(mode)
            .map_err(|e| e.to_string())?;
        let (clock, days, times) = match spec.time {
            FakeTime::Clock {
                limit_secs,
                increment_secs,
            } => {
                let initial = i64::from(limit_secs) * 1000;
                (
                    Some((initial, i64::from(increment_secs) * 1000)),
                    None,
                    [initial, initial],
                )
            }
            FakeTime::Correspondence { days } => (None, Some(days), [NO_CLOCK_MS; 2]),
            FakeTime::Unlimited => (None, None, [NO_CLOCK_MS; 2]),
        };
        let suffix: String = (0..4).map(|_| self.rng.alphanumeric()).collect();
        let game = Game {
            full_id: format!("{id}{suffix}"),
            id: id.clone(),
            variant,
            mode,
            initial_fen,
            keys: vec![start.zobrist_hash(EnPassantMode::Legal)],
            pos: start.clone(),
            start,
            moves: Vec::new(),
            bot_color,
            opponent: spec.challenger.clone(),
            rated: spec.rated,
            speed: speed_of(spec.time),
            clock,
            days,
            times,
            last_move_at: Instant::now(),
            created_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            status: "started",
            winner: None,
            draw_offer: None,
            takeback_offer: None,
            gone_since: None,
            autoplay: spec.autoplay,
            generation: 0,
            subscribers: Vec::new(),
            chat: Vec::new(),
            illegal: Vec::new(),
            draw_answers: Vec::new(),
            takeback_answers: Vec::new(),
            bot_draw_offers: 0,
            stream_connections: 0,
        };
        self.send_event(&json!({"type": "gameStart", "game": game.info_json()}));
        self.games.insert(id.clone(), game);
        self.game_order.push(id.clone());
        self.max_simultaneous = self.max_simultaneous.max(self.in_progress());
        self.after_change(app, &id);
        Ok(id)
    }

    /// Sends the state to the game's streams and arms the timers and the
    /// automatic opponent. Call after every change to a game.
    fn after_change(&mut self, app: &App, id: &str) {
        let first_move_ms = self.cfg.first_move_timeout.as_millis() as u64;
        let first_move_timeout = self.cfg.first_move_timeout;
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        game.generation += 1;
        let mut state = game.state_json();
        if let Some(expiration) = state.get_mut("expiration") {
            expiration["millisToMove"] = json!(first_move_ms);
        }
        game.subscribers.retain(|c| !c.closed());
        for conn in &game.subscribers {
            conn.send(&state);
        }
        if !game.started() {
            for conn in game.subscribers.drain(..) {
                conn.end();
            }
            let finish = json!({"type": "gameFinish", "game": game.info_json()});
            self.send_event(&finish);
            return;
        }
        let generation = game.generation;
        let to_move = game.pos.turn();
        // The flag: before both sides moved, the first-move timeout aborts;
        // after, the clock of the side to move runs from the last move.
        // Games without a clock have neither.
        let deadline = match game.clock {
            None => None,
            Some(_) if game.ply() < 2 => Some(game.last_move_at + first_move_timeout),
            Some(_) => Some(
                game.last_move_at + Duration::from_millis(game.times[idx(to_move)].max(0) as u64),
            ),
        };
        if let Some(deadline) = deadline {
            let app = app.clone();
            let id = id.to_owned();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                app.with(|world, app| world.flag(app, &id, generation));
            });
        }
        if to_move != game.bot_color {
            if let Some(auto) = game.autoplay {
                let app = app.clone();
                let id = id.to_owned();
                tokio::spawn(async move {
                    tokio::time::sleep(auto.think).await;
                    app.with(|world, app| world.auto_move(app, &id, generation, auto));
                });
            }
        }
    }

    /// A timer fired: if nothing happened since it was armed, the side to
    /// move lost on time (or the game is aborted before the first moves).
    fn flag(&mut self, app: &App, id: &str, generation: u64) {
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        if game.generation != generation || !game.started() {
            return;
        }
        if game.ply() < 2 {
            game.status = "aborted";
        } else {
            let loser = game.pos.turn();
            game.times[idx(loser)] = 0;
            game.status = "outoftime";
            // No win on time with a lone king (or too little to mate).
            game.winner = (!game.pos.has_insufficient_material(!loser)).then_some(!loser);
        }
        self.after_change(app, id);
    }

    fn auto_move(&mut self, app: &App, id: &str, generation: u64, auto: AutoPlay) {
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        if game.generation != generation || !game.started() || game.pos.turn() == game.bot_color {
            return;
        }
        if game.draw_offer == Some(game.bot_color) && auto.accept_draws {
            game.status = "draw";
            game.draw_offer = None;
            self.after_change(app, id);
            return;
        }
        let moves = game.pos.legal_moves();
        let choice = match auto.policy {
            Policy::Random => None,
            Policy::Greedy => moves
                .iter()
                .find(|m| {
                    let mut after = game.pos.clone();
                    after.play_unchecked(**m);
                    after.is_checkmate()
                })
                .or_else(|| {
                    moves
                        .iter()
                        .filter(|m| m.is_capture())
                        .max_by_key(|m| m.capture().map(role_value))
                })
                .copied(),
        };
        let choice = match choice {
            Some(m) => m,
            None if moves.is_empty() => return,
            None => moves[self.rng.usize(0..moves.len())],
        };
        self.play(app, id, choice);
    }

    /// Plays a legal move for the side to move: clocks, offers, game end.
    /// Returns false if the mover's flag had fallen (the game is then lost
    /// on time and the move not played).
    fn play(&mut self, app: &App, id: &str, m: Move) -> bool {
        let Some(game) = self.games.get_mut(id) else {
            return false;
        };
        let mover = game.pos.turn();
        let now = Instant::now();
        if let Some((_, inc)) = game.clock {
            // Lichess starts the clocks once both sides have moved.
            if game.ply() >= 2 {
                let spent = now.duration_since(game.last_move_at).as_millis() as i64;
                let left = game.times[idx(mover)] - spent;
                if left <= 0 {
                    game.times[idx(mover)] = 0;
                    game.status = "outoftime";
                    game.winner = (!game.pos.has_insufficient_material(!mover)).then_some(!mover);
                    self.after_change(app, id);
                    return false;
                }
                game.times[idx(mover)] = left + inc;
            }
        }
        game.last_move_at = now;
        let uci = game.uci(m);
        game.moves.push(uci);
        game.pos.play_unchecked(m);
        game.keys.push(game.pos.zobrist_hash(EnPassantMode::Legal));
        // Moving declines the other side's pending offers.
        if game.draw_offer == Some(!mover) {
            game.draw_offer = None;
        }
        game.takeback_offer = None;
        let key = game.keys[game.keys.len() - 1];
        let repetitions = game.keys.iter().filter(|k| **k == key).count();
        if game.pos.is_checkmate() {
            game.status = "mate";
            game.winner = Some(mover);
        } else if game.pos.is_stalemate() {
            game.status = "stalemate";
        } else if game.pos.is_insufficient_material()
            || game.pos.halfmoves() >= 100
            || repetitions >= 3
        {
            game.status = "draw";
        }
        if !game.started() {
            game.draw_offer = None;
        }
        self.after_change(app, id);
        true
    }

    fn finish(&mut self, app: &App, id: &str, status: &'static str, winner: Option<Color>) {
        if let Some(game) = self.games.get_mut(id) {
            game.status = status;
            game.winner = winner;
            game.draw_offer = None;
            game.takeback_offer = None;
        }
        self.after_change(app, id);
    }

    fn game_stream_line(&mut self, id: &str, line: &Value) -> Result<(), String> {
        let game = self.games.get_mut(id).ok_or("no such game")?;
        game.subscribers.retain(|c| !c.closed());
        for conn in &game.subscribers {
            conn.send(line);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// HTTP handlers

fn ok() -> Response {
    axum::Json(json!({"ok": true})).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "Not found.")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `application/x-www-form-urlencoded`, leniently.
fn parse_form(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// Auth, fault injection and the request log, around every handler.
async fn gatekeeper(State(app): State<App>, request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let expected = app.lock().cfg.token.clone();
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {expected}").as_str());
    let early = app.with(|world, _| {
        let faults = &mut world.faults;
        if faults.fail_429 > 0 {
            faults.fail_429 -= 1;
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests. Try again later.",
            );
            if let Some(secs) = faults.retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            return Some(response);
        }
        if !authorized {
            return Some(error(StatusCode::UNAUTHORIZED, "No such token"));
        }
        if faults.fail_5xx_any > 0 {
            faults.fail_5xx_any -= 1;
            return Some((StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response());
        }
        let is_move = method == "POST" && path.contains("/move/");
        if is_move && faults.reject_moves > 0 {
            faults.reject_moves -= 1;
            return Some(error(
                StatusCode::BAD_REQUEST,
                "Not your turn, or game already over",
            ));
        }
        if is_move && faults.fail_5xx_moves > 0 {
            faults.fail_5xx_moves -= 1;
            return Some((StatusCode::BAD_GATEWAY, "Bad Gateway").into_response());
        }
        if path.starts_with("/api/bot/") && path != "/api/bot/account/upgrade" && !world.is_bot {
            return Some(error(
                StatusCode::BAD_REQUEST,
                "This endpoint can only be used with a Bot account.",
            ));
        }
        None
    });
    let response = match early {
        Some(response) => response,
        None => next.run(request).await,
    };
    let status = response.status().as_u16();
    app.with(|world, _| {
        world.requests.push(RequestRecord {
            method,
            path,
            query,
            status,
            at: Instant::now(),
        })
    });
    response
}

async fn account(State(app): State<App>) -> Response {
    let world = app.lock();
    let mut account = json!({
        "id": world.bot_id(),
        "username": world.cfg.username,
        "perfs": {"blitz": {"games": 0, "rating": 1500, "rd": 350, "prog": 0, "prov": true}},
        "createdAt": 1_700_000_000_000u64,
        "url": format!("{}/@/{}", world.base_url, world.cfg.username),
        "count": {"all": world.games.len()},
    });
    if world.is_bot {
        account["title"] = json!("BOT");
    }
    axum::Json(account).into_response()
}

async fn upgrade(State(app): State<App>) -> Response {
    app.with(|world, _| {
        if world.is_bot {
            error(
                StatusCode::BAD_REQUEST,
                "This account is already a bot account.",
            )
        } else if !world.games.is_empty() {
            error(
                StatusCode::BAD_REQUEST,
                "This account has played games and cannot become a bot account.",
            )
        } else {
            world.is_bot = true;
            ok()
        }
    })
}

async fn playing(State(app): State<App>) -> Response {
    let world = app.lock();
    let games: Vec<&Game> = world
        .game_order
        .iter()
        .filter_map(|id| world.games.get(id))
        .filter(|g| g.started())
        .collect();
    let now_playing: Vec<Value> = games.iter().map(|g| g.info_json()).collect();
    let my_turn = games.iter().filter(|g| g.pos.turn() == g.bot_color).count();
    axum::Json(json!({"nowPlaying": now_playing, "nbMyTurn": my_turn})).into_response()
}

async fn event_stream(State(app): State<App>) -> Response {
    app.with(|world, _| {
        let (conn, response) = Conn::open(world.cfg.keepalive);
        // One stream per token: the new one closes the old.
        if let Some(old) = world.event_stream.replace(conn.clone()) {
            old.end();
        }
        world.event_connections += 1;
        // Like Lichess, replay what is open: challenges, then games.
        for id in &world.challenge_order {
            if let Some(c) = world.challenges.get(id) {
                if c.status == "created" {
                    conn.send(
                        &json!({"type": "challenge", "challenge": world.challenge_json(c),
                                      "compat": {"bot": true, "board": true}}),
                    );
                }
            }
        }
        for id in &world.game_order {
            if world.faults.no_game_replay {
                break;
            }
            if let Some(g) = world.games.get(id) {
                if g.started() {
                    conn.send(&json!({"type": "gameStart", "game": g.info_json()}));
                }
            }
        }
        response
    })
}

async fn game_stream(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, _| {
        let first_move_ms = world.cfg.first_move_timeout.as_millis() as u64;
        let bot = world.bot_json();
        let keepalive = world.cfg.keepalive;
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        let (conn, response) = Conn::open(keepalive);
        conn.send(&game.full_json(&bot, first_move_ms));
        game.stream_connections += 1;
        if game.started() {
            game.subscribers.push(conn);
        } else {
            conn.end();
        }
        response
    })
}

async fn bot_move(
    State(app): State<App>,
    Path((id, uci)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let offering_draw = query.get("offeringDraw").is_some_and(|v| v == "true");
    app.with(|world, app| {
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        let ply = game.ply();
        let refuse = |game: &mut Game, reason: String| {
            game.illegal.push(IllegalMove {
                uci: uci.clone(),
                ply,
                reason: reason.clone(),
            });
            error(StatusCode::BAD_REQUEST, &reason)
        };
        if !game.started() || game.pos.turn() != game.bot_color {
            return refuse(game, "Not your turn, or game already over".to_owned());
        }
        let m = match game.parse_move(&uci) {
            Ok(m) => m,
            Err(reason) => return refuse(game, reason),
        };
        let bot = game.bot_color;
        let accepts_draw = offering_draw && game.draw_offer == Some(!bot);
        if offering_draw {
            game.bot_draw_offers += 1;
        }
        if !world.play(app, &id, m) {
            if let Some(game) = world.games.get_mut(&id) {
                game.illegal.push(IllegalMove {
                    uci: uci.clone(),
                    ply,
                    reason: "out of time".to_owned(),
                });
            }
            return error(
                StatusCode::BAD_REQUEST,
                "Not your turn, or game already over",
            );
        }
        let Some(game) = world.games.get_mut(&id) else {
            return ok();
        };
        if game.started() && offering_draw {
            if accepts_draw {
                world.finish(app, &id, "draw", None);
            } else {
                game.draw_offer = Some(bot);
                world.after_change(app, &id);
            }
        }
        ok()
    })
}

async fn chat_post(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let form = parse_form(&body);
    let (Some(room), Some(text)) = (form.get("room"), form.get("text")) else {
        return error(StatusCode::BAD_REQUEST, "room and text are required");
    };
    if room != "player" && room != "spectator" {
        return error(StatusCode::BAD_REQUEST, "room must be player or spectator");
    }
    app.with(|world, _| {
        let username = world.cfg.username.clone();
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        game.chat.push(ChatRecord {
            room: room.clone(),
            username: username.clone(),
            text: text.clone(),
            from_bot: true,
        });
        let line = json!({"type": "chatLine", "room": room, "username": username, "text": text});
        let _ = world.game_stream_line(&id, &line);
        ok()
    })
}

async fn chat_get(State(app): State<App>, Path(id): Path<String>) -> Response {
    let world = app.lock();
    let Some(game) = world.games.get(&id) else {
        return not_found();
    };
    let lines: Vec<Value> = game
        .chat
        .iter()
        .filter(|c| c.room == "player")
        .map(|c| json!({"text": c.text, "user": c.username}))
        .collect();
    axum::Json(Value::Array(lines)).into_response()
}

async fn abort(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, app| {
        let Some(game) = world.games.get(&id) else {
            return not_found();
        };
        if !game.started() || game.ply() >= 2 {
            return error(StatusCode::BAD_REQUEST, "This game cannot be aborted.");
        }
        world.finish(app, &id, "aborted", None);
        ok()
    })
}

async fn resign(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, app| {
        let Some(game) = world.games.get(&id) else {
            return not_found();
        };
        if !game.started() {
            return error(StatusCode::BAD_REQUEST, "The game is over.");
        }
        let winner = !game.bot_color;
        world.finish(app, &id, "resign", Some(winner));
        ok()
    })
}

fn yes(answer: &str) -> Option<bool> {
    match answer {
        "yes" | "true" | "accept" => Some(true),
        "no" | "false" | "decline" => Some(false),
        _ => None,
    }
}

async fn draw(State(app): State<App>, Path((id, answer)): Path<(String, String)>) -> Response {
    let Some(accept) = yes(&answer) else {
        return not_found();
    };
    app.with(|world, app| {
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        if !game.started() {
            return error(StatusCode::BAD_REQUEST, "The game is over.");
        }
        let bot = game.bot_color;
        if game.draw_offer == Some(!bot) {
            game.draw_answers.push(accept);
            if accept {
                world.finish(app, &id, "draw", None);
            } else {
                game.draw_offer = None;
                world.after_change(app, &id);
            }
        } else if accept {
            // No offer to answer: "yes" makes one.
            game.bot_draw_offers += 1;
            game.draw_offer = Some(bot);
            world.after_change(app, &id);
        }
        ok()
    })
}

async fn takeback(State(app): State<App>, Path((id, answer)): Path<(String, String)>) -> Response {
    let Some(accept) = yes(&answer) else {
        return not_found();
    };
    app.with(|world, app| {
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        if !game.started() {
            return error(StatusCode::BAD_REQUEST, "The game is over.");
        }
        let bot = game.bot_color;
        if game.takeback_offer != Some(!bot) {
            // Proposals from the bot are declined at once by the fake.
            return ok();
        }
        game.takeback_answers.push(accept);
        game.takeback_offer = None;
        if accept {
            // Take back the proposer's last move, and ours after it if any.
            let proposer = !bot;
            let undo = if game.pos.turn() == proposer { 2 } else { 1 };
            let keep = game.moves.len().saturating_sub(undo);
            game.moves.truncate(keep);
            game.keys.truncate(keep + 1);
            let mut pos = game.start.clone();
            for uci in &game.moves {
                if let Ok(m) = uci
                    .parse::<UciMove>()
                    .map_err(|_| ())
                    .and_then(|u| u.to_move(&pos).map_err(|_| ()))
                {
                    pos.play_unchecked(m);
                }
            }
            game.pos = pos;
            game.last_move_at = Instant::now();
        }
        world.after_change(app, &id);
        ok()
    })
}

async fn claim(State(app): State<App>, Path((id, what)): Path<(String, String)>) -> Response {
    app.with(|world, app| {
        let claim_after = Duration::from_secs(world.cfg.claim_win_secs.into());
        let Some(game) = world.games.get(&id) else {
            return not_found();
        };
        let claimable = game.started()
            && game
                .gone_since
                .is_some_and(|since| since.elapsed() >= claim_after);
        if !claimable {
            return error(StatusCode::BAD_REQUEST, "You cannot claim now.");
        }
        let bot = game.bot_color;
        match what.as_str() {
            "claim-victory" => world.finish(app, &id, "timeout", Some(bot)),
            _ => world.finish(app, &id, "draw", None),
        }
        ok()
    })
}

async fn game_action(
    State(app): State<App>,
    Path((id, action)): Path<(String, String)>,
) -> Response {
    match action.as_str() {
        "abort" => abort(State(app), Path(id)).await,
        "resign" => resign(State(app), Path(id)).await,
        "claim-victory" | "claim-draw" => claim(State(app), Path((id, action))).await,
        _ => not_found(),
    }
}

async fn challenge_action(
    State(app): State<App>,
    Path((id, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = parse_form(&body);
    app.with(|world, app| {
        let Some(challenge) = world.challenges.get_mut(&id) else {
            return not_found();
        };
        if challenge.status != "created" {
            return not_found();
        }
        match action.as_str() {
            "accept" if challenge.direction == "in" => {
                if world.faults.accept_without_game > 0 {
                    world.faults.accept_without_game -= 1;
                    challenge.status = "accepted";
                    return ok();
                }
                let spec = challenge.spec.clone();
                let bot_color = !challenge.challenger_color;
                match world.create_game(app, id.clone(), &spec, bot_color) {
                    Ok(game_id) => {
                        if let Some(c) = world.challenges.get_mut(&id) {
                            c.status = "accepted";
                            c.game_id = Some(game_id);
                        }
                        if world.faults.accept_then_5xx > 0 {
                            world.faults.accept_then_5xx -= 1;
                            return (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
                                .into_response();
                        }
                        ok()
                    }
                    Err(message) => error(StatusCode::BAD_REQUEST, &message),
                }
            }
            "decline" if challenge.direction == "in" => {
                challenge.status = "declined";
                let reason = form
                    .get("reason")
                    .cloned()
                    .unwrap_or_else(|| "generic".to_owned());
                challenge.decline_reason = Some(reason);
                ok()
            }
            "cancel" if challenge.direction == "out" => {
                challenge.status = "canceled";
                ok()
            }
            _ => error(StatusCode::BAD_REQUEST, "Not allowed."),
        }
    })
}

async fn create_challenge(
    State(app): State<App>,
    Path(username): Path<String>,
    body: Bytes,
) -> Response {
    let form = parse_form(&body);
    app.with(|world, _| {
        if world.faults.bot_vs_bot_exhausted {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                axum::Json(json!({
                    "error": "You played 100 games against other bots today, please wait before challenging another bot.",
                    "ratelimit": {"key": "bot.vsBot.day", "seconds": 86398}
                })),
            )
                .into_response();
        }
        let time = match (form.get("clock.limit"), form.get("clock.increment"), form.get("days")) {
            (Some(l), Some(i), _) => match (l.parse(), i.parse()) {
                (Ok(limit_secs), Ok(increment_secs)) => FakeTime::Clock {
                    limit_secs,
                    increment_secs,
                },
                _ => return error(StatusCode::BAD_REQUEST, "invalid clock"),
            },
            (_, _, Some(d)) => match d.parse() {
                Ok(days) => FakeTime::Correspondence { days },
                Err(_) => return error(StatusCode::BAD_REQUEST, "invalid days"),
            },
            _ => FakeTime::Unlimited,
        };
        let variant = match form.get("variant").map(String::as_str) {
            None | Some("standard") => FakeVariant::Standard,
            Some("chess960") => FakeVariant::Chess960 { position: None },
            Some("fromPosition") => FakeVariant::FromPosition {
                fen: form.get("fen").cloned().unwrap_or_else(|| STARTPOS_FEN.to_owned()),
            },
            Some(other) => FakeVariant::Other {
                key: other.to_owned(),
            },
        };
        let bot_color = match form.get("color").map(String::as_str) {
            Some("white") => Color::White,
            Some("black") => Color::Black,
            _ => {
                if world.rng.bool() {
                    Color::White
                } else {
                    Color::Black
                }
            }
        };
        let id = world.new_id();
        let spec = ChallengeSpec {
            variant,
            time,
            rated: form.get("rated").is_some_and(|r| r == "true"),
            color: Side::Random,
            challenger: Opponent::human(&username),
            autoplay: Some(AutoPlay::default()),
        };
        let state = ChallengeState {
            id: id.clone(),
            status: "created",
            direction: "out",
            spec,
            challenger_color: bot_color,
            decline_reason: None,
            dest: Some(username.clone()),
            form: form.clone(),
            game_id: None,
        };
        let json = world.challenge_json(&state);
        world.send_event(&json!({"type": "challenge", "challenge": json,
                                 "compat": {"bot": true, "board": true}}));
        world.challenges.insert(id.clone(), state);
        world.challenge_order.push(id);
        axum::Json(json).into_response()
    })
}

// ---------------------------------------------------------------------------
// The test-facing handle

/// A running fake Lichess. Dropping it stops the server.
pub struct FakeLichess {
    app: App,
    addr: SocketAddr,
    server: JoinHandle<()>,
}

impl Drop for FakeLichess {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeLichess {
    /// Starts a server with the default settings.
    pub async fn start() -> FakeLichess {
        FakeLichess::start_with(FakeConfig::default()).await
    }

    /// Starts a server on 127.0.0.1 on an ephemeral port.
    pub async fn start_with(cfg: FakeConfig) -> FakeLichess {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let app: App = Arc::new(Shared {
            world: Mutex::new(World {
                base_url: format!("http://{addr}"),
                is_bot: cfg.is_bot,
                rng: fastrand::Rng::with_seed(cfg.seed),
                cfg,
                challenges: HashMap::new(),
                challenge_order: Vec::new(),
                games: HashMap::new(),
                game_order: Vec::new(),
                event_stream: None,
                event_connections: 0,
                faults: Faults::default(),
                requests: Vec::new(),
                max_simultaneous: 0,
            }),
            changed: Notify::new(),
        });
        let router = Router::new()
            .route("/api/account", get(account))
            .route("/api/account/playing", get(playing))
            .route("/api/bot/account/upgrade", post(upgrade))
            .route("/api/stream/event", get(event_stream))
            .route("/api/bot/game/stream/{id}", get(game_stream))
            .route("/api/bot/game/{id}/move/{uci}", post(bot_move))
            .route("/api/bot/game/{id}/chat", post(chat_post).get(chat_get))
            .route("/api/bot/game/{id}/draw/{answer}", post(draw))
            .route("/api/bot/game/{id}/takeback/{answer}", post(takeback))
            .route("/api/bot/game/{id}/{action}", post(game_action))
            .route("/api/challenge/{id}/{action}", post(challenge_action))
            .route("/api/challenge/{username}", post(create_challenge))
            .layer(middleware::from_fn_with_state(app.clone(), gatekeeper))
            .with_state(app.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        FakeLichess { app, addr, server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token the server accepts.
    pub fn token(&self) -> String {
        self.app.lock().cfg.token.clone()
    }

    /// The bot's user id.
    pub fn bot_id(&self) -> String {
        self.app.lock().bot_id()
    }

    /// Looks at the server.
    pub fn view<T>(&self, f: impl FnOnce(&View) -> T) -> T {
        let world = self.app.lock();
        f(&View(&world))
    }

    pub fn game(&self, id: &str) -> Option<GameRecord> {
        self.view(|v| v.game(id))
    }

    pub fn games(&self) -> Vec<GameRecord> {
        self.view(|v| v.games())
    }

    pub fn challenge(&self, id: &str) -> Option<ChallengeRecord> {
        self.view(|v| v.challenge(id))
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.view(|v| v.requests().to_vec())
    }

    pub fn max_simultaneous_games(&self) -> usize {
        self.view(|v| v.max_simultaneous_games())
    }

    /// Waits until `f` returns `Some`, re-checking after every change on
    /// the server; `Err` names `what` after `timeout`.
    pub async fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&View) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let notified = self.app.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(value) = self.view(&mut f) {
                return Ok(value);
            }
            // Streams and timers change state without a request: re-check
            // at least every 50 ms.
            let wake = (Instant::now() + Duration::from_millis(50)).min(deadline);
            let _ = tokio::time::timeout_at(wake, notified).await;
            if Instant::now() >= deadline {
                return match self.view(&mut f) {
                    Some(value) => Ok(value),
                    None => Err(format!("timed out after {timeout:?} waiting for {what}")),
                };
            }
        }
    }

    /// Waits until `f` holds.
    pub async fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&View) -> bool,
    ) -> Result<(), String> {
        self.wait_for(what, timeout, |v| f(v).then_some(())).await
    }

    /// Waits until the bot has an event stream open.
    pub async fn wait_event_stream(&self, timeout: Duration) -> Result<(), String> {
        self.wait_until("the event stream", timeout, |v| v.event_stream_connected())
            .await
    }

    /// Waits until game `id` is over, and returns its record.
    pub async fn wait_game_over(&self, id: &str, timeout: Duration) -> Result<GameRecord, String> {
        self.wait_for(&format!("game {id} to end"), timeout, |v| {
            v.game(id).filter(|g| g.is_over())
        })
        .await
    }

    /// Sends a challenge to the bot; returns its id (the game id if it is
    /// accepted).
    pub fn send_challenge(&self, spec: ChallengeSpec) -> String {
        self.app.with(|world, _| {
            let id = world.new_id();
            let challenger_color = match spec.color {
                Side::White => Color::White,
                Side::Black => Color::Black,
                Side::Random => {
                    if world.rng.bool() {
                        Color::White
                    } else {
                        Color::Black
                    }
                }
            };
            let spec = match spec.variant {
                // Fix the position now, so the challenge can show it.
                FakeVariant::Chess960 { position: None } => ChallengeSpec {
                    variant: FakeVariant::Chess960 {
                        position: Some(world.rng.u32(0..960)),
                    },
                    ..spec
                },
                _ => spec,
            };
            let state = ChallengeState {
                id: id.clone(),
                status: "created",
                direction: "in",
                spec,
                challenger_color,
                decline_reason: None,
                dest: None,
                form: HashMap::new(),
                game_id: None,
            };
            world.send_event(&json!({"type": "challenge",
                                     "challenge": world.challenge_json(&state),
                                     "compat": {"bot": true, "board": true}}));
            world.challenges.insert(id.clone(), state);
            world.challenge_order.push(id.clone());
            id
        })
    }

    /// The challenger withdraws a challenge (`challengeCanceled`).
    pub fn cancel_challenge(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let c = world.challenges.get_mut(id).ok_or("no such challenge")?;
            if c.status != "created" {
                return Err(format!("challenge {id} is {}", c.status));
            }
            c.status = "canceled";
            let c = &world.challenges[id];
            world.send_event(&json!({"type": "challengeCanceled",
                                     "challenge": world.challenge_json(c)}));
            Ok(())
        })
    }

    /// The opponent accepts a challenge the bot created; the game starts.
    pub fn accept_bot_challenge(&self, id: &str) -> Result<String, String> {
        self.app.with(|world, app| {
            let c = world.challenges.get(id).ok_or("no such challenge")?;
            if c.direction != "out" || c.status != "created" {
                return Err(format!("challenge {id} cannot be accepted"));
            }
            let (spec, bot_color) = (c.spec.clone(), c.challenger_color);
            let game_id = world.create_game(app, id.to_owned(), &spec, bot_color)?;
            if let Some(c) = world.challenges.get_mut(id) {
                c.status = "accepted";
                c.game_id = Some(game_id.clone());
            }
            Ok(game_id)
        })
    }

    /// The opponent declines a challenge the bot created
    /// (`challengeDeclined` with this reason, e.g. `"tooFast"`).
    pub fn decline_bot_challenge(&self, id: &str, reason: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let c = world.challenges.get_mut(id).ok_or("no such challenge")?;
            if c.direction != "out" || c.status != "created" {
                return Err(format!("challenge {id} cannot be declined"));
            }
            c.status = "declined";
            c.decline_reason = Some(reason.to_owned());
            let c = &world.challenges[id];
            world.send_event(&json!({"type": "challengeDeclined",
                                     "challenge": world.challenge_json(c)}));
            Ok(())
        })
    }

    /// Starts a game at once, as if a challenge had been accepted earlier;
    /// the bot plays `bot_color`. Returns the game id.
    pub fn start_game(&self, spec: ChallengeSpec, bot_color: Color) -> Result<String, String> {
        self.app.with(|world, app| {
            let id = world.new_id();
            world.create_game(app, id, &spec, bot_color)
        })
    }

    /// The opponent plays `uci` (in the game's castling notation).
    pub fn opponent_move(&self, id: &str, uci: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get(id).ok_or("no such game")?;
            if !game.started() || game.pos.turn() == game.bot_color {
                return Err(format!("not the opponent's turn in {id}"));
            }
            let m = game.parse_move(uci)?;
            if world.play(app, id, m) {
                Ok(())
            } else {
                Err(format!("the opponent's flag fell in {id}"))
            }
        })
    }

    /// Sets (or stops, with `None`) the automatic opponent of a game.
    pub fn set_autoplay(&self, id: &str, autoplay: Option<AutoPlay>) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            game.autoplay = autoplay;
            world.after_change(app, id);
            Ok(())
        })
    }

    /// The opponent offers a draw (`wdraw`/`bdraw` in the next state).
    pub fn opponent_offers_draw(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            if !game.started() {
                return Err("game over".into());
            }
            if game.draw_offer == Some(game.bot_color) {
                world.finish(app, id, "draw", None);
            } else {
                game.draw_offer = Some(!game.bot_color);
                world.after_change(app, id);
            }
            Ok(())
        })
    }

    /// The opponent proposes a takeback.
    pub fn opponent_proposes_takeback(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            if !game.started() || game.moves.is_empty() {
                return Err("nothing to take back".into());
            }
            game.takeback_offer = Some(!game.bot_color);
            world.after_change(app, id);
            Ok(())
        })
    }

    /// The opponent writes in the chat (`room`: player or spectator).
    pub fn opponent_says(&self, id: &str, room: &str, text: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            let username = game.opponent.name.clone();
            game.chat.push(ChatRecord {
                room: room.to_owned(),
                username: username.clone(),
                text: text.to_owned(),
                from_bot: false,
            });
            world.game_stream_line(
                id,
                &json!({"type": "chatLine", "room": room, "username": username, "text": text}),
            )
        })
    }

    /// The opponent resigns.
    pub fn opponent_resigns(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get(id).ok_or("no such game")?;
            if !game.started() {
                return Err("game over".into());
            }
            let bot = game.bot_color;
            world.finish(app, id, "resign", Some(bot));
            Ok(())
        })
    }

    /// The opponent leaves (`gone: true`, the bot may claim after
    /// `claim_win_secs`) or comes back.
    pub fn opponent_gone(&self, id: &str, gone: bool) -> Result<(), String> {
        self.app.with(|world, _| {
            let claim = world.cfg.claim_win_secs;
            let game = world.games.get_mut(id).ok_or("no such game")?;
            game.gone_since = gone.then(Instant::now);
            let line = if gone {
                json!({"type": "opponentGone", "gone": true, "claimWinInSeconds": claim})
            } else {
                json!({"type": "opponentGone", "gone": false})
            };
            world.game_stream_line(id, &line)
        })
    }

    // --- Faults -----------------------------------------------------------

    /// Aborts the event stream's connection.
    pub fn cut_event_stream(&self) {
        self.app.with(|world, _| {
            if let Some(conn) = world.event_stream.take() {
                conn.cut();
            }
        })
    }

    /// The event stream stays open but sends nothing any more.
    pub fn silence_event_stream(&self) {
        self.app.with(|world, _| {
            if let Some(conn) = &world.event_stream {
                conn.silence();
            }
        })
    }

    /// Aborts the connections of a game's streams.
    pub fn cut_game_stream(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            for conn in game.subscribers.drain(..) {
                conn.cut();
            }
            Ok(())
        })
    }

    /// A game's streams stay open but send nothing any more.
    pub fn silence_game_stream(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            for conn in game.subscribers.drain(..) {
                conn.silence();
            }
            Ok(())
        })
    }

    /// The next `n` requests (of any kind) get 429, with `Retry-After` if
    /// given.
    pub fn fail_requests_with_429(&self, n: u32, retry_after_secs: Option<u64>) {
        self.app.with(|world, _| {
            world.faults.fail_429 = n;
            world.faults.retry_after = retry_after_secs;
        })
    }

    /// The next `n` requests (of any kind) get 503.
    pub fn fail_requests_with_5xx(&self, n: u32) {
        self.app.with(|world, _| world.faults.fail_5xx_any = n)
    }

    /// The next `n` move posts get 502 (and are not played).
    pub fn fail_moves_with_5xx(&self, n: u32) {
        self.app.with(|world, _| world.faults.fail_5xx_moves = n)
    }

    /// Creating a challenge gets the `bot.vsBot.day` 429 from now on.
    pub fn exhaust_bot_vs_bot_games(&self, exhausted: bool) {
        self.app
            .with(|world, _| world.faults.bot_vs_bot_exhausted = exhausted)
    }

    /// The next `n` accepts are answered 200, but no game ever starts.
    pub fn accept_without_game(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.accept_without_game = n)
    }

    /// The next `n` accepts start the game but are answered 503, so the
    /// bot's retry then gets 404: it cannot know its accept went through.
    pub fn accept_then_fail(&self, n: u32) {
        self.app.with(|world, _| world.faults.accept_then_5xx = n)
    }

    /// Whether a new event stream replays the ongoing games as
    /// `gameStart` (Lichess does; `false` leaves `/api/account/playing`
    /// as the only way to find them).
    pub fn replay_games_on_connect(&self, replay: bool) {
        self.app
            .with(|world, _| world.faults.no_game_replay = !replay)
    }

    /// The next `n` move posts get 400 "Not your turn" (and are not
    /// played), as when the bot's view of the game is stale.
    pub fn reject_moves_not_your_turn(&self, n: u32) {
        self.app.with(|world, _| world.faults.reject_moves = n)
    }

    /// Writes a raw line (a newline is added) on the event stream.
    pub fn inject_event_line(&self, line: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let conn = world.event_stream.as_ref().ok_or("no event stream")?;
            conn.send_raw(Bytes::from(format!("{line}\n")));
            Ok(())
        })
    }

    /// Writes a raw line (a newline is added) on a game's streams.
    pub fn inject_game_line(&self, id: &str, line: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get(id).ok_or("no such game")?;
            for conn in &game.subscribers {
                conn.send_raw(Bytes::from(format!("{line}\n")));
            }
            Ok(())
        })
    }

    /// A line that is not JSON, on the event stream.
    pub fn inject_malformed_event_line(&self) -> Result<(), String> {
        self.inject_event_line(r#"{"type":"challenge","challenge":{"id":"#)
    }

    /// A JSON line of `len` bytes, on the event stream.
    pub fn inject_oversized_event_line(&self, len: usize) -> Result<(), String> {
        let prefix = r#"{"type":"gameStart","padding":""#;
        let suffix = r#""}"#;
        let pad = len.saturating_sub(prefix.len() + suffix.len());
        self.inject_event_line(&format!("{prefix}{}{suffix}", "x".repeat(pad)))
    }

    /// An event of a type Lichess might add one day.
    pub fn inject_unknown_event(&self) -> Result<(), String> {
        self.inject_event_line(r#"{"type":"tournamentPairing","tournament":{"id":"abc"}}"#)
    }
}
