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
//!
//! The parts: [`setup`] (what a test asks for), [`records`] (what it reads
//! back), [`opponent`] (the other side, driven by the test), [`bots`]
//! (other bots online, answering the bot's challenges), [`faults`]
//! (what it can break), [`online`] (the public tablebase and cloud
//! evaluation, with canned answers), [`tournament`] (arenas and their
//! pairings), and inside the server [`world`] (the state),
//! [`game`] (rules and clocks), [`challenge`], [`stream`] (ndjson
//! responses) and [`routes`] (the HTTP handlers).

mod bots;
mod challenge;
mod faults;
mod game;
mod online;
mod opponent;
mod records;
mod routes;
mod setup;
mod stream;
mod tournament;
mod world;

// The test-facing API: the tests and examples/fake_lichess.rs use parts.
#[allow(unused_imports)]
pub use bots::{Answer, OnlineBot};
#[allow(unused_imports)]
pub use game::{STARTPOS_FEN, chess960_back_rank, chess960_fen};
#[allow(unused_imports)]
pub use records::{ChallengeRecord, ChatRecord, GameRecord, IllegalMove, RequestRecord, View};
#[allow(unused_imports)]
pub use setup::{
    AutoPlay, ChallengeSpec, FakeConfig, FakeTime, FakeVariant, LICHESS_VARIANTS, Opponent, Policy,
    Side, lichess_key,
};
#[allow(unused_imports)]
pub use tournament::{ArenaPlayer, ArenaRecord, ArenaSpec};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use faults::Faults;
use world::{App, Shared, World};

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
                event_opens: Vec::new(),
                faults: Faults::default(),
                requests: Vec::new(),
                max_simultaneous: 0,
                online_bots: Vec::new(),
                online: online::OnlineAnswers::default(),
                arenas: tournament::Arenas::default(),
                bot_games: 0,
            }),
            changed: Notify::new(),
        });
        let router = routes::router(app.clone());
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

    /// The current position of game `id` (shakmaty, the game's variant).
    pub fn position(&self, id: &str) -> Option<shakmaty::variant::VariantPosition> {
        self.view(|v| v.position(id))
    }

    /// The legal moves of the side to move in game `id`, in the game
    /// stream's UCI (see [`View::legal_moves`]).
    pub fn legal_moves(&self, id: &str) -> Option<Vec<String>> {
        self.view(|v| v.legal_moves(id))
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

    /// Cuts the event stream and waits for the check of the games in
    /// progress (`GET /api/account/playing`) that its reopening brings.
    pub async fn reconnect_and_check_playing(&self, timeout: Duration) -> Result<(), String> {
        let playing = |v: &View| {
            v.requests()
                .iter()
                .filter(|r| r.method == "GET" && r.path == "/api/account/playing")
                .count()
        };
        let before = self.view(playing);
        self.cut_event_stream();
        self.wait_until("the check after the reconnect", timeout, |v| {
            playing(v) > before
        })
        .await
    }

    /// Waits until game `id` is over, and returns its record.
    pub async fn wait_game_over(&self, id: &str, timeout: Duration) -> Result<GameRecord, String> {
        self.wait_for(&format!("game {id} to end"), timeout, |v| {
            v.game(id).filter(|g| g.is_over())
        })
        .await
    }
}
