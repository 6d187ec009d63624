//! The daemon's event loop: keeps the event stream open (reconnecting
//! with a [`Backoff`]), decides each incoming challenge with
//! [`challenge::decide`](super::challenge::decide) and accepts or declines
//! it, starts one game task per ongoing game, shuts down gracefully, and
//! keeps systemd informed.
//!
//! **The loop never awaits a request.** Accepts and declines are sent by
//! at most [`MAX_ANSWERS_IN_FLIGHT`] tasks that report back; one that
//! failed (a 429, a timeout) is sent again later, after the rate-limit
//! pause, up to [`MAX_ANSWER_TRIES`] times. So a `gameStart` or a signal
//! is handled at once even while requests wait a minute behind a 429.
//! A challenge is decided once per id: the stream resends open challenges
//! on every reconnect. Game ids are checked before anything is allocated,
//! and the game tasks are capped at `bot.concurrency` + [`SPARE_GAMES`], so
//! a flood of `gameStart` lines cannot spawn threads and tables without
//! limit.
//!
//! The registry maps a game id (a challenge id is its game's id) to a
//! [`GameEntry`]: the slot it holds, if any, and the handle of its task,
//! once it started. Slots are taken when a challenge is accepted (or at
//! `gameStart` for a game we did not accept, e.g. one we created), and
//! given back on `gameFinish`, when the game task ends, or when an
//! accepted challenge never turns into a game within
//! `bot.game_start_timeout_secs`. An accept that failed on our side
//! (timeout, connection cut, or a 404 to the retry of an accept that went
//! through) may have worked on the server's, so it keeps its slot until
//! the game starts or that timeout passes.
//!
//! **Reconciling.** Lichess replays ongoing games as `gameStart` when the
//! event stream opens, but a replay can be missed (the stream dies right
//! after opening, a line is lost). So on start and after every reconnect
//! the daemon also asks `/api/account/playing` and starts a task for every
//! listed game that has none: a daemon restarted mid-game resumes it, the
//! game task rebuilding position and clocks from its game stream. The
//! registry guarantees one task per game id whichever source comes first.
//!
//! **Shutdown** is counted in signals (see [`Signals`]). The first one
//! stops accepting challenges (new ones are declined with `later`), keeps
//! the event stream open for `gameFinish`, and waits for the running games
//! to end; `bot.shutdown_deadline_secs` bounds that wait. The second
//! signal, or the deadline, asks every remaining game to resign (or abort,
//! where it still can) and exits once they ended or after
//! [`RESIGN_GRACE`].
//!
//! **systemd**: `READY=1` when the event stream first opens, `WATCHDOG=1`
//! while the event stream is open or was within the last 5 minutes,
//! `STATUS=` with the games in progress, `STOPPING=1` on shutdown.

use super::challenge::{Decision, SlotGuard, Slots, decide};
use super::game::sources::MoveSources;
use super::game::{self, GameCommand, GameContext, GameHandle, Me};
use super::hashstore;
use crate::config::Config;
use crate::lichess::backoff::Backoff;
use crate::lichess::client::{Client, Error as ClientError, EventStream, is_valid_id};
use crate::lichess::model::{Challenge, DeclineReason, Direction, Event, GameInfo};
use crate::lichess::stream::StreamEvent;
use crate::systemd::Notifier;
use futures::StreamExt;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::time::Instant;

/// The shortest and longest pause before reopening the event stream; the
/// pause goes back to the shortest once the stream stayed up this long.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(15);
const HEALTHY_AFTER: Duration = Duration::from_secs(10);
/// Accepts and declines being sent at once, at most.
pub const MAX_ANSWERS_IN_FLIGHT: usize = 4;
/// A failed accept or decline is sent this many times in all, at most.
pub const MAX_ANSWER_TRIES: u32 = 5;
/// Pause before resending a failed answer (or the rate-limit pause).
const ANSWER_RETRY: Duration = Duration::from_secs(2);
/// Game tasks beyond `bot.concurrency` that may run (games started
/// elsewhere, resumed games); more `gameStart`s are ignored until some end.
pub const SPARE_GAMES: usize = 2;
/// Challenge ids decided are remembered this long (or up to
/// [`MAX_DECIDED`] of them).
const DECIDED_TTL: Duration = Duration::from_secs(3600);
const MAX_DECIDED: usize = 10_000;
/// How often stale hash files are swept and their total size capped.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// The loop must have turned this recently for the watchdog to ping.
const LOOP_STUCK_AFTER: Duration = Duration::from_secs(30);
/// How often pending accepts, the shutdown deadline, the watchdog and the
/// status line are looked after.
const HOUSEKEEPING: Duration = Duration::from_millis(500);
/// After asking the remaining games to resign, how long they get to do it
/// (and write their PGN) before the daemon exits regardless.
pub const RESIGN_GRACE: Duration = Duration::from_secs(10);
/// The event stream may be down this long before the watchdog pings stop
/// (systemd then restarts the daemon, which is all it can do).
const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);

/// Shutdown requests, counted: the sender increments the value on every
/// SIGTERM/SIGINT. [`GRACEFUL`]: finish the running games, then exit;
/// [`IMMEDIATE`] or more: resign (or abort) them and exit.
pub type Signals = watch::Receiver<u32>;
/// The first signal.
pub const GRACEFUL: u32 = 1;
/// The second signal.
pub const IMMEDIATE: u32 = 2;

/// One game the daemon knows of.
#[derive(Debug)]
pub struct GameEntry {
    /// Held while the game counts against `bot.concurrency`.
    slot: Option<SlotGuard>,
    /// The game's task, once `gameStart` arrived.
    task: Option<GameHandle>,
    /// When the challenge was accepted, while the game has not started.
    accepted_at: Option<Instant>,
}

/// Where shutdown stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Games finish; the wait ends at the deadline.
    Draining {
        deadline: Instant,
    },
    /// Games were asked to resign; the daemon exits at `exit_by`.
    Resigning {
        exit_by: Instant,
    },
}

type OpenFuture = Pin<Box<dyn Future<Output = Result<EventStream, ClientError>> + Send>>;

/// The event stream's connection state.
enum Conn {
    Opening(OpenFuture),
    Open(EventStream),
    /// Reopen at this instant.
    Waiting(Instant),
}

/// What the event stream's connection did. Lives on the stack for one
/// turn of the loop, so the size of its variants does not matter.
#[allow(clippy::large_enum_variant)]
enum Step {
    Opened(Result<EventStream, ClientError>),
    Next(Option<<EventStream as futures::Stream>::Item>),
    Reopen,
}

/// An accept or decline to send.
#[derive(Debug, Clone)]
struct Answer {
    id: String,
    /// `None`: accept.
    decline: Option<DeclineReason>,
    tries: u32,
    not_before: Instant,
}

/// What a sent answer came to.
struct Answered {
    answer: Answer,
    result: Result<(), ClientError>,
}

/// The event loop's state.
pub struct Daemon {
    client: Client,
    config: Arc<Config>,
    slots: Slots,
    games: HashMap<String, GameEntry>,
    search_permits: Arc<Semaphore>,
    done_tx: mpsc::UnboundedSender<String>,
    done_rx: mpsc::UnboundedReceiver<String>,
    me: Option<Me>,
    notifier: Arc<Notifier>,
    /// Books, tables and online sources, shared by every game.
    sources: Arc<MoveSources>,
    phase: Phase,
    /// When the event stream was last seen open.
    last_open: Option<Instant>,
    ready_sent: bool,
    /// Shared with the watchdog task: when the event stream was last seen
    /// open, and when the loop last turned.
    health: Arc<Mutex<Health>>,
    last_status: String,
    /// Answers waiting to be sent, and how many are being sent.
    answers: VecDeque<Answer>,
    answers_in_flight: usize,
    answered_tx: mpsc::UnboundedSender<Answered>,
    answered_rx: mpsc::UnboundedReceiver<Answered>,
    /// Challenge ids already decided, and when.
    decided: HashMap<String, Instant>,
    /// A `/api/account/playing` call is under way; another was asked.
    reconciling: bool,
    reconcile_again: bool,
    /// When `gameStart`s beyond the cap were last logged.
    flood_logged: Option<Instant>,
    last_sweep: Instant,
}

/// What the watchdog looks at.
#[derive(Debug, Default, Clone, Copy)]
struct Health {
    stream_open: Option<Instant>,
    loop_turned: Option<Instant>,
}

impl Daemon {
    pub fn new(client: Client, config: Config) -> Daemon {
        let slots = Slots::new(config.bot.concurrency as usize);
        let search_permits = Arc::new(Semaphore::new(config.engine.threads.max(1) as usize));
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let (answered_tx, answered_rx) = mpsc::unbounded_channel();
        Daemon {
            client,
            config: Arc::new(config),
            slots,
            games: HashMap::new(),
            search_permits,
            done_tx,
            done_rx,
            me: None,
            notifier: Arc::new(Notifier::disabled()),
            sources: Arc::new(MoveSources::default()),
            phase: Phase::Running,
            last_open: None,
            ready_sent: false,
            health: Arc::new(Mutex::new(Health::default())),
            last_status: String::new(),
            answers: VecDeque::new(),
            answers_in_flight: 0,
            answered_tx,
            answered_rx,
            decided: HashMap::new(),
            reconciling: false,
            reconcile_again: false,
            flood_logged: None,
            last_sweep: Instant::now(),
        }
    }

    /// Reports to systemd through `notifier` (by default nothing is sent).
    pub fn with_notifier(mut self, notifier: Notifier) -> Daemon {
        self.notifier = Arc::new(notifier);
        self
    }

    /// Books, tables and online sources for the games (default: none).
    pub fn with_sources(mut self, sources: MoveSources) -> Daemon {
        self.sources = Arc::new(sources);
        self
    }

    /// Games in the registry (started or accepted), for tests and status.
    pub fn games(&self) -> usize {
        self.games.len()
    }

    fn running_games(&self) -> usize {
        self.games.values().filter(|g| g.task.is_some()).count()
    }

    /// Runs until shutdown is complete (see [`Signals`]; a dropped sender
    /// counts as [`IMMEDIATE`]). Errors only on a fatal problem (the token
    /// is rejected).
    pub async fn run(mut self, mut signals: Signals) -> Result<(), ClientError> {
        let result = self.run_inner(&mut signals).await;
        let _ = self.notifier.stopping();
        let running = self.running_games();
        if running > 0 {
            tracing::warn!(games = running, "exiting with games in progress");
        }
        for entry in self.games.values() {
            if let Some(task) = &entry.task {
                task.abort();
            }
        }
        result
    }

    async fn run_inner(&mut self, signals: &mut Signals) -> Result<(), ClientError> {
        if let Some(dir) = self.config.engine.state_dir.clone() {
            prepare_state_dir(&dir);
        }
        self.me = Some(tokio::select! {
            me = self.whoami() => me?,
            _ = wait_for(signals, GRACEFUL) => return Ok(()),
        });
        let (reconcile_tx, mut reconcile_rx) = mpsc::unbounded_channel::<Vec<GameInfo>>();
        let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX, HEALTHY_AFTER);
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut conn = Conn::Opening(self.open_events());
        let mut signals_open = true;
        loop {
            if self.done() {
                tracing::info!("all games ended: exiting");
                return Ok(());
            }
            let step = async {
                match &mut conn {
                    Conn::Opening(f) => Step::Opened(f.await),
                    Conn::Open(s) => Step::Next(s.next().await),
                    Conn::Waiting(at) => {
                        tokio::time::sleep_until(*at).await;
                        Step::Reopen
                    }
                }
            };
            tokio::select! {
                step = step => match step {
                    Step::Opened(Ok(stream)) => {
                        tracing::info!("event stream open");
                        backoff.up();
                        self.on_stream_open();
                        self.reconcile_later(&reconcile_tx);
                        conn = Conn::Open(stream);
                    }
                    Step::Opened(Err(
                        e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. }),
                    )) => return Err(e),
                    Step::Opened(Err(e)) => {
                        tracing::warn!("cannot open the event stream: {e}");
                        conn = self.wait_to_reopen(&mut backoff);
                    }
                    Step::Next(next) => {
                        self.mark_open();
                        match next {
                            Some(Ok(StreamEvent::Item(event))) => self.handle(event),
                            Some(Ok(StreamEvent::KeepAlive)) => {}
                            Some(Ok(StreamEvent::Skipped(why))) => {
                                tracing::warn!("event stream: line skipped: {why}")
                            }
                            Some(Err(e)) => {
                                tracing::warn!("event stream failed: {e}");
                                conn = self.wait_to_reopen(&mut backoff);
                            }
                            None => {
                                tracing::warn!("event stream closed by the server");
                                conn = self.wait_to_reopen(&mut backoff);
                            }
                        }
                    }
                    Step::Reopen => conn = Conn::Opening(self.open_events()),
                },
                Some(id) = self.done_rx.recv() => self.game_done(&id),
                Some(games) = reconcile_rx.recv() => {
                    self.reconcile(games);
                    if std::mem::take(&mut self.reconcile_again) {
                        self.reconcile_later(&reconcile_tx);
                    }
                }
                Some(answered) = self.answered_rx.recv() => self.on_answered(answered),
                _ = housekeeping.tick() => {
                    if matches!(conn, Conn::Open(_)) {
                        self.mark_open();
                    }
                    self.housekeeping();
                }
                changed = signals.changed(), if signals_open => {
                    let count = if changed.is_ok() {
                        *signals.borrow_and_update()
                    } else {
                        signals_open = false;
                        IMMEDIATE
                    };
                    self.on_signal(count);
                }
            }
            self.send_answers();
            self.health().loop_turned = Some(Instant::now());
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open_events(&self) -> OpenFuture {
        let client = self.client.clone();
        Box::pin(async move { client.stream_events().await })
    }

    fn wait_to_reopen(&mut self, backoff: &mut Backoff) -> Conn {
        let delay = backoff.failed();
        tracing::info!(retry_in_ms = delay.as_millis() as u64, "reconnecting");
        Conn::Waiting(Instant::now() + delay)
    }

    fn on_stream_open(&mut self) {
        self.mark_open();
        if !self.ready_sent {
            self.ready_sent = true;
            if let Err(e) = self.notifier.ready() {
                tracing::warn!("cannot notify systemd: {e}");
            }
            self.spawn_watchdog();
        }
    }

    /// The event stream is open (a line or keep-alive just came).
    fn mark_open(&mut self) {
        let now = Instant::now();
        self.last_open = Some(now);
        self.health().stream_open = Some(now);
    }

    /// `WATCHDOG=1` at half the period systemd asked for, while the loop
    /// turns (its housekeeping tick, whatever the event traffic) and the
    /// event stream is open or was within [`UNHEALTHY_AFTER`].
    fn spawn_watchdog(&self) {
        let Some(period) = self.notifier.watchdog_interval() else {
            return;
        };
        let notifier = Arc::clone(&self.notifier);
        let health = Arc::clone(&self.health);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period / 2);
            loop {
                ticks.tick().await;
                let h = *health.lock().unwrap_or_else(|p| p.into_inner());
                if h.stream_open
                    .is_some_and(|at| at.elapsed() < UNHEALTHY_AFTER)
                    && h.loop_turned
                        .is_some_and(|at| at.elapsed() < LOOP_STUCK_AFTER)
                    && let Err(e) = notifier.watchdog()
                {
                    tracing::warn!("cannot notify systemd: {e}");
                }
            }
        });
    }

    /// Asks `/api/account/playing` in the background (it waits behind the
    /// rate-limit gate like any request; the loop must not). One call at a
    /// time: asked again meanwhile, one more follows it.
    fn reconcile_later(&mut self, tx: &mpsc::UnboundedSender<Vec<GameInfo>>) {
        if self.reconciling {
            self.reconcile_again = true;
            return;
        }
        self.reconciling = true;
        let client = self.client.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let games = match client.playing().await {
                Ok(playing) => playing.now_playing,
                Err(e) => {
                    tracing::warn!("cannot list the ongoing games: {e}");
                    Vec::new()
                }
            };
            let _ = tx.send(games);
        });
    }

    /// Starts a task for every ongoing game that has none.
    fn reconcile(&mut self, games: Vec<GameInfo>) {
        self.reconciling = false;
        let missing: Vec<GameInfo> = games
            .into_iter()
            .filter(|g| {
                self.games
                    .get(&g.game_id)
                    .is_none_or(|entry| entry.task.is_none())
            })
            .collect();
        tracing::info!(
            ongoing = self.running_games() + missing.len(),
            resumed = missing.len(),
            "reconciled with the ongoing games"
        );
        for info in missing {
            tracing::info!(game = %info.game_id, "resuming a game nobody watched");
            self.on_game_start(info);
        }
    }

    /// Whether shutdown is complete.
    fn done(&self) -> bool {
        match self.phase {
            Phase::Running => false,
            Phase::Draining { .. } => self.games.is_empty(),
            Phase::Resigning { exit_by } => self.running_games() == 0 || Instant::now() >= exit_by,
        }
    }

    fn on_signal(&mut self, count: u32) {
        if count >= IMMEDIATE {
            if !matches!(self.phase, Phase::Resigning { .. }) {
                tracing::info!("second signal: resigning the games in progress");
                self.resign_all();
            }
        } else if count >= GRACEFUL && self.phase == Phase::Running {
            let deadline = Instant::now() + self.config.bot.shutdown_deadline();
            tracing::info!(
                games = self.running_games(),
                deadline_s = self.config.bot.shutdown_deadline().as_secs(),
                "shutting down: new challenges declined, running games finish (a second signal resigns them)"
            );
            let _ = self.notifier.stopping();
            self.phase = Phase::Draining { deadline };
        }
        self.update_status();
    }

    fn resign_all(&mut self) {
        let _ = self.notifier.stopping();
        // Accepted challenges that have not started yet are let go.
        self.games.retain(|_, entry| entry.task.is_some());
        for entry in self.games.values() {
            if let Some(task) = &entry.task {
                task.send(GameCommand::Resign);
            }
        }
        self.phase = Phase::Resigning {
            exit_by: Instant::now() + RESIGN_GRACE,
        };
    }

    fn housekeeping(&mut self) {
        self.expire_accepts();
        self.decided.retain(|_, at| at.elapsed() < DECIDED_TTL);
        if self.last_sweep.elapsed() >= SWEEP_EVERY {
            self.last_sweep = Instant::now();
            self.sweep_hash_files();
        }
        if let Phase::Draining { deadline } = self.phase
            && Instant::now() >= deadline
        {
            tracing::warn!(
                games = self.running_games(),
                "shutdown deadline passed: resigning the games in progress"
            );
            self.resign_all();
        }
        self.update_status();
    }

    fn update_status(&mut self) {
        let games = self.running_games();
        let connected = matches!(self.last_open, Some(at) if at.elapsed() < HOUSEKEEPING * 4);
        let status = match self.phase {
            Phase::Running if connected => format!("playing {games} game(s)"),
            Phase::Running => format!("playing {games} game(s); event stream reconnecting"),
            Phase::Draining { .. } => format!("shutting down: {games} game(s) finishing"),
            Phase::Resigning { .. } => format!("shutting down: resigning {games} game(s)"),
        };
        if status != self.last_status {
            if let Err(e) = self.notifier.status(&status) {
                tracing::warn!("cannot notify systemd: {e}");
            }
            self.last_status = status;
        }
    }

    /// Our account, to know our colour in each game. Retries transient
    /// failures; a rejected token is fatal.
    async fn whoami(&self) -> Result<Me, ClientError> {
        let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX, HEALTHY_AFTER);
        loop {
            match self.client.account().await {
                Ok(account) => {
                    let name = if account.username.is_empty() {
                        account.id.clone()
                    } else {
                        account.username.clone()
                    };
                    if !account.is_bot() {
                        tracing::warn!(account = %name, "not a BOT account: the bot endpoints will refuse it");
                    }
                    tracing::info!(account = %name, "logged in");
                    return Ok(Me {
                        id: account.id.to_lowercase(),
                        name,
                    });
                }
                Err(e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. })) => {
                    return Err(e);
                }
                Err(e) => tracing::warn!("cannot read the account: {e}"),
            }
            tokio::time::sleep(backoff.failed()).await;
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Challenge { challenge, .. } => {
                if challenge.direction == Some(Direction::Out) {
                    tracing::debug!(challenge = %challenge.id, "our own challenge");
                    return;
                }
                let stopping = self.phase != Phase::Running;
                self.on_challenge(&challenge, stopping);
            }
            Event::ChallengeCanceled { challenge } => {
                tracing::info!(challenge = %challenge.id, "challenge canceled");
            }
            Event::ChallengeDeclined { challenge } => {
                tracing::info!(challenge = %challenge.id, "our challenge was declined");
            }
            Event::GameStart { game } => self.on_game_start(game),
            Event::GameFinish { game } => self.on_game_finish(game),
            Event::Unknown { kind } => tracing::info!(%kind, "unknown event ignored"),
        }
    }

    /// Starts the game's task, exactly once per game id.
    fn on_game_start(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        if !is_valid_id(&id) {
            tracing::warn!(game = %id.chars().take(80).collect::<String>(), "gameStart with an invalid game id ignored");
            return;
        }
        if let Some(entry) = self.games.get(&id)
            && entry.task.is_some()
        {
            tracing::debug!(game = %id, "game already being played");
            return;
        }
        // A game we accepted has its slot already; any other counts
        // against the cap.
        let accepted = self.games.get(&id).is_some_and(|e| e.slot.is_some());
        let cap = self.slots.capacity() + SPARE_GAMES;
        if !accepted && self.running_games() >= cap {
            if self
                .flood_logged
                .is_none_or(|at| at.elapsed() >= Duration::from_secs(10))
            {
                self.flood_logged = Some(Instant::now());
                tracing::warn!(game = %id, games = cap, "gameStart beyond the game cap ignored (more may follow, logged every 10 s)");
            }
            return;
        }
        let Some(me) = self.me.clone() else {
            return;
        };
        let slots = &self.slots;
        let entry = self.games.entry(id.clone()).or_insert_with(|| GameEntry {
            slot: None,
            task: None,
            accepted_at: None,
        });
        if entry.slot.is_none() {
            entry.slot = slots.try_reserve();
            if entry.slot.is_none() {
                tracing::warn!(game = %id, "game started beyond the concurrency limit; playing it anyway");
            }
        }
        entry.accepted_at = None;
        let ctx = GameContext {
            client: self.client.clone(),
            config: Arc::clone(&self.config),
            me,
            search_permits: Arc::clone(&self.search_permits),
            sources: Arc::clone(&self.sources),
        };
        let task = game::spawn(ctx, info, self.done_tx.clone());
        if matches!(self.phase, Phase::Resigning { .. }) {
            task.send(GameCommand::Resign);
        }
        entry.task = Some(task);
    }

    fn on_game_finish(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        tracing::debug!(game = %id, "gameFinish");
        let Some(entry) = self.games.get_mut(&id) else {
            return;
        };
        // The game no longer counts against the limit, even if its task
        // still writes the PGN.
        entry.slot = None;
        match &entry.task {
            Some(task) => task.send(GameCommand::Finished(Box::new(info))),
            None => {
                self.games.remove(&id);
            }
        }
    }

    /// A game task ended.
    fn game_done(&mut self, id: &str) {
        if self.games.remove(id).is_some() {
            tracing::debug!(game = %id, in_use = self.slots.in_use(), "game task ended");
        }
    }

    /// Gives back the slots of accepted challenges whose game never
    /// started.
    fn expire_accepts(&mut self) {
        let timeout = self.config.bot.game_start_timeout();
        self.games.retain(|id, entry| {
            let expired = entry.task.is_none()
                && entry.accepted_at.is_some_and(|at| at.elapsed() >= timeout);
            if expired {
                tracing::warn!(challenge = %id, "accepted challenge never started a game; slot released");
            }
            !expired
        });
    }

    fn on_challenge(&mut self, challenge: &Challenge, shutting_down: bool) {
        if self.decided.contains_key(&challenge.id) {
            tracing::debug!(challenge = %challenge.id, "challenge already decided");
            return;
        }
        if !is_valid_id(&challenge.id) {
            tracing::warn!("challenge with an invalid id ignored");
            return;
        }
        if self.decided.len() >= MAX_DECIDED {
            // The oldest decisions go first (the stream would only resend
            // challenges still open).
            if let Some(oldest) = self
                .decided
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(id, _)| id.clone())
            {
                self.decided.remove(&oldest);
            }
        }
        self.decided.insert(challenge.id.clone(), Instant::now());
        let concurrency = self.slots.capacity();
        let mut decision = decide(
            challenge,
            &self.config.challenge,
            self.slots.in_use(),
            concurrency,
            shutting_down,
        );
        let guard = match decision {
            Decision::Accept => match self.slots.try_reserve() {
                Some(guard) => Some(guard),
                None => {
                    decision = Decision::Decline(DeclineReason::Later);
                    None
                }
            },
            Decision::Decline(_) => None,
        };
        let who = &challenge.challenger.id;
        let decline = match decision {
            Decision::Accept => {
                tracing::info!(
                    challenge = %challenge.id,
                    challenger = %who,
                    variant = challenge.variant.key.as_str(),
                    speed = challenge.speed.as_str(),
                    rated = challenge.rated,
                    "accept"
                );
                // The slot is held from now: until the game starts, the
                // accept is refused, or the start timeout passes.
                self.games.entry(challenge.id.clone()).or_insert(GameEntry {
                    slot: guard,
                    task: None,
                    accepted_at: Some(Instant::now()),
                });
                None
            }
            Decision::Decline(reason) => {
                tracing::info!(
                    challenge = %challenge.id,
                    challenger = %who,
                    variant = challenge.variant.key.as_str(),
                    speed = challenge.speed.as_str(),
                    rated = challenge.rated,
                    reason = reason.as_str(),
                    "decline"
                );
                Some(reason)
            }
        };
        self.answers.push_back(Answer {
            id: challenge.id.clone(),
            decline,
            tries: 0,
            not_before: Instant::now(),
        });
    }

    /// Starts sending the answers that are due, up to
    /// [`MAX_ANSWERS_IN_FLIGHT`] at once.
    fn send_answers(&mut self) {
        let now = Instant::now();
        let mut later = VecDeque::new();
        while self.answers_in_flight < MAX_ANSWERS_IN_FLIGHT {
            let Some(mut answer) = self.answers.pop_front() else {
                break;
            };
            if answer.not_before > now {
                later.push_back(answer);
                continue;
            }
            answer.tries += 1;
            self.answers_in_flight += 1;
            let client = self.client.clone();
            let tx = self.answered_tx.clone();
            tokio::spawn(async move {
                let result = match answer.decline {
                    None => client.accept_challenge(&answer.id).await,
                    Some(reason) => client.decline_challenge(&answer.id, reason).await,
                };
                let _ = tx.send(Answered { answer, result });
            });
        }
        later.append(&mut self.answers);
        self.answers = later;
    }

    /// An accept or decline came back.
    fn on_answered(&mut self, Answered { mut answer, result }: Answered) {
        self.answers_in_flight = self.answers_in_flight.saturating_sub(1);
        let what = if answer.decline.is_some() {
            "decline"
        } else {
            "accept"
        };
        let Err(e) = result else {
            tracing::debug!(challenge = %answer.id, "{what} sent");
            return;
        };
        let retry =
            (e.is_transient() || e.status() == Some(429)) && answer.tries < MAX_ANSWER_TRIES;
        tracing::warn!(challenge = %answer.id, tries = answer.tries, retry, "{what} failed: {e}");
        if retry {
            let wait = self
                .client
                .rate_limited_for()
                .unwrap_or_default()
                .max(ANSWER_RETRY);
            answer.not_before = Instant::now() + wait;
            self.answers.push_back(answer);
            return;
        }
        if answer.decline.is_none() {
            // The retry of an accept that went through gets 404: keep the
            // slot until the game starts or the start timeout passes. Any
            // other refusal frees it.
            let gone = !matches!(e, ClientError::NotFound { .. })
                && self
                    .games
                    .get(&answer.id)
                    .is_some_and(|entry| entry.task.is_none());
            if gone {
                self.games.remove(&answer.id);
            }
        }
    }

    /// Deletes stale hash files and keeps their total under twice the
    /// configured table memory (the files of running games are kept).
    fn sweep_hash_files(&self) {
        let Some(dir) = self.config.engine.state_dir.clone() else {
            return;
        };
        let keep: Vec<String> = self
            .games
            .iter()
            .filter(|(_, e)| e.task.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        let max_bytes = (self.config.engine.hash_mb as u64).saturating_mul(2 << 20);
        tokio::task::spawn_blocking(move || {
            let stale =
                hashstore::sweep(&dir, hashstore::STALE_AFTER, std::time::SystemTime::now());
            let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
            let capped = hashstore::cap_total(&dir, max_bytes, &keep);
            if stale + capped > 0 {
                tracing::info!(stale, over_size = capped, "hash files deleted");
            }
        });
    }
}

/// Waits until `signals` reaches `count` (or its sender is gone).
async fn wait_for(signals: &mut Signals, count: u32) {
    while *signals.borrow_and_update() < count {
        if signals.changed().await.is_err() {
            return;
        }
    }
}

/// Creates the hash-file directory and deletes stale files. Problems are
/// logged: without it the bot still plays, only without saved tables.
fn prepare_state_dir(dir: &std::path::Path) {
    if let Err(e) = hashstore::prepare(dir) {
        tracing::warn!(
            "engine.state_dir {}: cannot create the hash directory ({e}); tables will not be saved",
            dir.display()
        );
        return;
    }
    let swept = hashstore::sweep(dir, hashstore::STALE_AFTER, std::time::SystemTime::now());
    if swept > 0 {
        tracing::info!(files = swept, "stale hash files deleted");
    }
}
