//! The daemon's event loop: keeps the event stream open (reconnecting
//! with a [`Backoff`]), decides each incoming challenge with
//! [`challenge::decide`](crate::bot::policy::challenge::decide) and accepts or declines
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
//! The daemon's house, one concern a file:
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the state, the event loop and its dispatch, the event stream's connection, housekeeping |
//! | `games.rs` | game tasks: `gameStart`, `gameFinish`, parked correspondence games, reconciling with `/api/account/playing` |
//! | `incoming.rs` | challenges to us: decision, fair limits, the queue, accepts and declines |
//! | `outgoing.rs` | our challenges: matchmaking |
//! | `stop.rs` | shutdown: finish, resign, hand over |
//! | `arena_requests.rs` | arena tournaments: their requests, their slots, their games |
//! | `operator.rs` | the operator's commands from the control socket (`kaissa ctl`) |
//! | `service.rs` | what systemd hears: ready, watchdog, status, stopping |
//!
//! **systemd**: `READY=1` when the event stream first opens, `WATCHDOG=1`
//! while the event stream is open or was within the last 5 minutes,
//! `STATUS=` with the games in progress, `STOPPING=1` on shutdown.

use super::control::{self as ctl, Order};
use super::game::{self, GameHandle, Me, Notice};
use super::preflight::{self, Finding, Level};
use super::scheduler::Scheduler;
use crate::bot::external::roster::Engines;
use crate::bot::game::lookup::MoveSources;
use crate::bot::policy::blocklists;
use crate::bot::policy::budget::ChallengeBudget;
use crate::bot::policy::challenge::{SlotGuard, Slots};
use crate::bot::policy::matchmaker::{Matchmaker, Outcome};
use crate::bot::policy::queue::ChallengeQueue;
use crate::bot::policy::quota::BotQuota;
use crate::bot::store::hashstore;
use crate::bot::store::results::Results;
use crate::bot::store::state::unix_now;
use crate::config::Config;
use crate::lichess::backoff::Backoff;
use crate::lichess::client::{Client, EventStream};
use crate::lichess::model::{DeclineReason, Direction, Event, GameInfo};
use crate::lichess::stream::StreamEvent;
use crate::lichess::{Endpoint, Error as ClientError};
use crate::metrics::metrics;
use crate::systemd::Notifier;
use futures::StreamExt;
use outgoing::MatchEvent;
use service::Service;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

mod arena_requests;
mod games;
mod incoming;
mod operator;
mod outgoing;
mod service;
mod stop;

use arena_requests::Arenas;
use games::{Parking, PlayingCheck};
use incoming::Incoming;
use operator::Blocks;

/// The shortest and longest pause before reopening the event stream; the
/// pause goes back to the shortest once the stream stayed up this long.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(15);
const HEALTHY_AFTER: Duration = Duration::from_secs(10);
/// The event stream refusing the token mid-run (401 or 403: the token
/// revoked, the account closed) stops the bot only once the refusals have
/// gone on this long; a shorter spell is a hiccup of Lichess's, waited
/// out as any failed open, for the bot would not come back by itself
/// (the unit does not restart on a rejected token).
const TOKEN_REFUSED_FOR: Duration = Duration::from_secs(20);
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
/// Rematch chains remembered, at most (the games of a day or so).
const MAX_REMATCH_CHAINS: usize = 1_000;
/// How often stale hash files are swept and their total size capped.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
/// How often pending accepts, the shutdown deadline, the watchdog and the
/// status line are looked after.
const HOUSEKEEPING: Duration = Duration::from_millis(500);
/// After asking the remaining games to resign, how long they get to do it
/// (and write their PGN) before the daemon exits regardless.
pub const RESIGN_GRACE: Duration = Duration::from_secs(10);
/// After asking the games to stop for the next run, how long they get to
/// save their hash tables (a save is bounded at 10 s) before the daemon
/// exits regardless.
pub const HANDOVER_GRACE: Duration = Duration::from_secs(12);

/// What the daemon is asked to do about stopping; the daemon reads it
/// from a watch channel ([`Signals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Keep playing.
    No,
    /// Decline new challenges, let the running games finish, then exit.
    Finish,
    /// Leave the running games to the next run (a restart): each saves its
    /// hash table and stops, without resigning; then exit.
    HandOver,
    /// Resign (or abort) the running games, then exit.
    Resign,
}

/// The stop requests; a dropped sender counts as [`Stop::Resign`].
pub type Signals = watch::Receiver<Stop>;

/// One game the daemon knows of.
#[derive(Debug)]
pub struct GameEntry {
    /// Held while the game counts against `bot.concurrency`.
    slot: Option<SlotGuard>,
    /// The game's task, once `gameStart` arrived.
    task: Option<GameHandle>,
    /// When the challenge was accepted, while the game has not started.
    accepted_at: Option<Instant>,
    /// The opponent's user id, when known (for the per-opponent cap).
    opponent: Option<String>,
    /// The opponent is a bot (for the slots kept for humans, the quota).
    bot: bool,
    /// Our own challenge (matchmaking's or the operator's), not
    /// answered yet.
    outgoing: bool,
    /// A correspondence game whose turn came while its task was parking:
    /// take it up again at once.
    recheck: bool,
    /// The game as `gameStart` gave it (to take a parked game up again).
    info: Option<GameInfo>,
    /// How the game stands, kept by its task (for `kaissa ctl status`).
    summary: Option<watch::Receiver<game::Summary>>,
}

impl GameEntry {
    /// Whether its game is a correspondence game (as far as known).
    fn correspondence(&self) -> bool {
        self.info.as_ref().is_some_and(games::is_correspondence)
    }

    fn new(slot: Option<SlotGuard>) -> GameEntry {
        GameEntry {
            slot,
            task: None,
            accepted_at: None,
            opponent: None,
            bot: false,
            outgoing: false,
            recheck: false,
            info: None,
            summary: None,
        }
    }
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
    /// Games were asked to stop for the next run; the daemon exits at
    /// `exit_by`.
    HandingOver {
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

/// What comes back to the loop from the tasks it spawned, on one channel.
enum Inbox {
    /// A game task's notice.
    Game(String, Notice),
    /// `/api/account/playing`'s games (`None`: the call failed).
    Playing(Option<Vec<GameInfo>>),
    /// Matchmaking's requests.
    Match(MatchEvent),
    /// An online block list.
    BlockList(blocklists::Fetched),
    /// A command from the control socket.
    Control(Order),
    /// An answer about an arena.
    Tournament(arena_requests::Answered),
    /// An accept or decline sent.
    Answered(Answered),
    /// A `kaissa ctl challenge` created or settled.
    Operator(operator::OperatorEvent),
}

impl From<(String, Notice)> for Inbox {
    fn from((id, notice): (String, Notice)) -> Inbox {
        Inbox::Game(id, notice)
    }
}

impl From<MatchEvent> for Inbox {
    fn from(event: MatchEvent) -> Inbox {
        Inbox::Match(event)
    }
}

impl From<blocklists::Fetched> for Inbox {
    fn from(fetched: blocklists::Fetched) -> Inbox {
        Inbox::BlockList(fetched)
    }
}

impl From<Order> for Inbox {
    fn from(order: Order) -> Inbox {
        Inbox::Control(order)
    }
}

/// The event loop's state.
pub struct Daemon {
    client: Client,
    config: Arc<Config>,
    slots: Slots,
    games: HashMap<String, GameEntry>,
    scheduler: Scheduler,
    /// What the tasks the loop spawned send back, one channel for all.
    inbox_tx: mpsc::UnboundedSender<Inbox>,
    inbox_rx: mpsc::UnboundedReceiver<Inbox>,
    me: Option<Me>,
    /// What systemd hears.
    service: Service,
    /// Books, tables and online sources, shared by every game.
    sources: Arc<MoveSources>,
    /// The external engines (`[engines.NAME]`) and their health.
    engines: Arc<Engines>,
    phase: Phase,
    /// The challenges made to us: answers to send, decisions, rematches.
    incoming: Incoming,
    /// Who is blocked: the online lists and `kaissa ctl block`.
    blocks: Blocks,
    /// When the daemon started (for the status's uptime).
    started: Instant,
    /// The `/api/account/playing` check that reconciles the games.
    playing_check: PlayingCheck,
    /// Challenges waiting for a slot, and their count for `!queue`.
    queue: ChallengeQueue,
    queue_len: Arc<AtomicUsize>,
    quota: BotQuota,
    /// The credits of the challenges we create (lila's limit per account).
    budget: ChallengeBudget,
    /// Matchmaking said it waits for the budget (said once per wait).
    budget_said: bool,
    matchmaker: Matchmaker,
    /// Since when nothing was under way (no game, nothing queued).
    idle_since: Instant,
    /// Correspondence games waiting for the opponent.
    parking: Parking,
    /// When `gameStart`s beyond the cap were last logged.
    flood_logged: Option<Instant>,
    last_sweep: Instant,
    /// The arena tournaments.
    arenas: Arenas,
    /// The last games' results (the status page's table and chart).
    results: Results,
}

impl Daemon {
    pub fn new(client: Client, config: Config) -> Daemon {
        let slots = Slots::new(config.bot.concurrency as usize);
        let scheduler = Scheduler::new(config.engine.threads.max(1) as usize);
        let (inbox_tx, inbox_rx) = mpsc::unbounded_channel();
        let state_dir = config.engine.state_dir.clone();
        let queue = ChallengeQueue::new(
            config.challenge.queue_order,
            config.challenge.queue_first.clone(),
            config.challenge.queue_size as usize,
        );
        let quota = BotQuota::load(state_dir.as_deref(), config.bot.bot_games_per_day);
        let budget = ChallengeBudget::load(state_dir.as_deref());
        let mut matchmaker = Matchmaker::new(
            config.matchmaking.clone(),
            config.challenge.block_list.clone(),
            config.challenge.allow_list.clone(),
            state_dir.as_deref(),
        );
        let blocks = Blocks::load(&config, state_dir.as_deref());
        matchmaker.set_online_blocked(&blocks.all());
        let engines = Engines::new(&config);
        let arenas = Arenas::new(&config, state_dir.as_deref());
        Daemon {
            client,
            config: Arc::new(config),
            slots,
            games: HashMap::new(),
            scheduler,
            inbox_tx,
            inbox_rx,
            me: None,
            service: Service::new(Notifier::disabled()),
            sources: Arc::new(MoveSources::default()),
            engines,
            phase: Phase::Running,
            incoming: Incoming::default(),
            blocks,
            started: Instant::now(),
            playing_check: PlayingCheck::new(),
            queue,
            queue_len: Arc::new(AtomicUsize::new(0)),
            quota,
            budget,
            budget_said: false,
            matchmaker,
            idle_since: Instant::now(),
            parking: Parking::default(),
            flood_logged: None,
            last_sweep: Instant::now(),
            arenas,
            results: Results::load(state_dir.as_deref()),
        }
    }

    /// Reports to systemd through `notifier` (by default nothing is sent).
    pub fn with_notifier(mut self, notifier: Notifier) -> Daemon {
        self.service = Service::new(notifier);
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

    /// Runs until shutdown is complete (see [`Stop`]). Errors only on a fatal problem (the token
    /// is rejected).
    pub async fn run(mut self, mut signals: Signals) -> Result<(), ClientError> {
        let socket = ctl::socket_path(&self.config.bot.control_socket);
        if let Some(path) = &socket {
            match ctl::listen(path, self.inbox_tx.clone()) {
                Ok(()) => {
                    tracing::info!(path = %path.display(), "control socket open (kaissa ctl)")
                }
                Err(e) => tracing::warn!(path = %path.display(), "control socket not opened: {e}"),
            }
        }
        if self.config.web.enabled {
            self.start_web().await;
        }
        let result = self.run_inner(&mut signals).await;
        if let Some(path) = &socket {
            let _ = std::fs::remove_file(path);
        }
        self.service.stopping(Duration::ZERO);
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
            _ = stop_requested(signals) => return Ok(()),
        });
        self.check_scopes().await?;
        // Before the first challenge: which external engines can play.
        if !self.config.engines.is_empty() {
            preflight::engines(&self.engines)
                .await
                .iter()
                .for_each(Finding::log);
        }
        let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX, HEALTHY_AFTER);
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut conn = Conn::Opening(self.open_events());
        let mut signals_open = true;
        // Since when the event stream refuses the token, and the refusal
        // the daemon exits with once the games are handed over.
        let mut refused_since: Option<Instant> = None;
        let mut fatal: Option<ClientError> = None;
        loop {
            if self.done() {
                if let Some(e) = fatal {
                    return Err(e);
                }
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
                        refused_since = None;
                        self.service.stream_open();
                        self.reconcile_later();
                        conn = Conn::Open(stream);
                    }
                    Step::Opened(Err(
                        e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. }),
                    )) => {
                        let since = *refused_since.get_or_insert_with(Instant::now);
                        if since.elapsed() < TOKEN_REFUSED_FOR {
                            tracing::warn!(
                                "the event stream refuses the token: {e}; trying again (for {} s in all)",
                                TOKEN_REFUSED_FOR.as_secs()
                            );
                            conn = self.wait_to_reopen(&mut backoff);
                        } else {
                            tracing::error!(
                                "Lichess has refused the token for {} s ({e}): revoked, or the \
                                 account closed; the games in progress are saved for the next \
                                 run and the bot stops (put a new token where this one was read \
                                 from, then start it again)",
                                since.elapsed().as_secs()
                            );
                            if !matches!(self.phase, Phase::HandingOver { .. }) {
                                self.hand_over_all();
                                self.update_status();
                            }
                            fatal = Some(e);
                            conn = Conn::Waiting(Instant::now() + Duration::from_secs(86_400));
                        }
                    }
                    Step::Opened(Err(e)) => {
                        // Refusals of the token count only in a row.
                        refused_since = None;
                        tracing::warn!("cannot open the event stream: {e}");
                        conn = self.wait_to_reopen(&mut backoff);
                        // A 429 to the open itself: wait as Lichess asks.
                        if let (ClientError::RateLimited { .. }, Some(pause), Conn::Waiting(at)) =
                            (&e, self.client.rate_limited_for(Endpoint::Events), &mut conn)
                        {
                            *at = (*at).max(Instant::now() + pause);
                            self.service.paused_until(*at);
                        }
                    }
                    Step::Next(next) => {
                        self.service.stream_open();
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
                Some(message) = self.inbox_rx.recv() => self.on_inbox(message),
                _ = housekeeping.tick() => {
                    if matches!(conn, Conn::Open(_)) {
                        self.service.stream_open();
                    }
                    self.housekeeping();
                }
                changed = signals.changed(), if signals_open => {
                    let stop = if changed.is_ok() {
                        *signals.borrow_and_update()
                    } else {
                        signals_open = false;
                        Stop::Resign
                    };
                    self.on_stop(stop);
                }
            }
            self.send_answers();
            self.service.loop_turned();
        }
    }

    /// A message from a task the loop spawned.
    fn on_inbox(&mut self, message: Inbox) {
        match message {
            Inbox::Game(id, notice) => self.on_game_notice(&id, notice),
            Inbox::Playing(games) => {
                self.reconcile(games);
                if std::mem::take(&mut self.playing_check.again) {
                    self.reconcile_later();
                }
            }
            Inbox::Match(event) => self.on_match_event(event),
            Inbox::BlockList(fetched) => {
                self.blocks.lists.update(fetched);
                self.block_lists_changed();
            }
            Inbox::Control(order) => self.on_control(order),
            Inbox::Tournament(answer) => self.on_tournament_answer(answer),
            Inbox::Answered(answered) => self.on_answered(answered),
            Inbox::Operator(event) => self.on_operator_event(event),
        }
    }

    fn open_events(&self) -> OpenFuture {
        let client = self.client.clone();
        Box::pin(async move { client.stream_events().await })
    }

    /// `[web]`: the metrics and health server. One that cannot listen is
    /// logged, and the bot plays on without it.
    async fn start_web(&self) {
        let Ok(listen) = self.config.web.listen.parse() else {
            return;
        };
        match crate::bot::web::serve(listen, self.service.probe(), self.inbox_tx.clone()).await {
            Ok(bound) => {
                tracing::info!(address = %bound, "web server listening (/metrics, /healthz)")
            }
            Err(e) => tracing::warn!(address = %listen, "web server not started: {e}"),
        }
    }

    fn wait_to_reopen(&mut self, backoff: &mut Backoff) -> Conn {
        self.service.stream_down();
        metrics().inc("kaissa_stream_reconnects_total", &[]);
        let delay = backoff.failed();
        tracing::info!(retry_in_ms = delay.as_millis() as u64, "reconnecting");
        Conn::Waiting(Instant::now() + delay)
    }

    fn housekeeping(&mut self) {
        self.expire_accepts();
        if self.playing_check.due(self.config.bot.playing_check()) {
            self.reconcile_later();
        }
        self.drain_queue();
        self.refresh_block_lists();
        self.tournaments_tick();
        self.matchmaking();
        self.incoming
            .decided
            .retain(|_, at| at.elapsed() < DECIDED_TTL);
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

    /// Fetches the online block lists in the background at start and
    /// every `challenge.block_list_refresh_secs`.
    fn refresh_block_lists(&mut self) {
        let urls = &self.config.challenge.online_block_lists;
        let every = Duration::from_secs(self.config.challenge.block_list_refresh_secs);
        if urls.is_empty() || self.blocks.asked.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        self.blocks.asked = Some(Instant::now());
        blocklists::spawn_fetch(urls.clone(), self.inbox_tx.clone());
    }

    fn update_status(&mut self) {
        let games = self.running_games();
        metrics().set("kaissa_games_playing", &[], games as f64);
        metrics().set(
            "kaissa_games_parked",
            &[],
            self.parking.waiting.len() as f64,
        );
        let connected = self.service.connected(HOUSEKEEPING * 4);
        let queued = match self.queue.len() {
            0 => String::new(),
            n => format!(", {n} challenge(s) waiting"),
        };
        let status = match self.phase {
            Phase::Running if connected => format!("playing {games} game(s){queued}"),
            Phase::Running => format!("playing {games} game(s); event stream reconnecting"),
            Phase::Draining { .. } => format!("shutting down: {games} game(s) finishing"),
            Phase::Resigning { .. } => format!("shutting down: resigning {games} game(s)"),
            Phase::HandingOver { .. } => {
                format!("restarting: handing over {games} game(s)")
            }
        };
        self.service.status(status);
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
                    set_ratings(&account);
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

    /// Logs the token's scopes and what the configuration needs of them
    /// ([`preflight::scopes`]); a token that cannot play is fatal. If
    /// Lichess cannot say (a network error), the bot goes on: the
    /// endpoints will tell.
    async fn check_scopes(&self) -> Result<(), ClientError> {
        let info = match self.client.token_info().await {
            Ok(Some(info)) => info,
            Ok(None) => {
                tracing::warn!("Lichess does not know the token's scopes");
                return Ok(());
            }
            Err(e) => {
                tracing::warn!("cannot read the token's scopes: {e}");
                return Ok(());
            }
        };
        let found = preflight::scopes(&info, &self.config);
        found.iter().for_each(Finding::log);
        match found.iter().find(|f| f.level == Level::Error) {
            Some(fatal) => Err(ClientError::Forbidden {
                path: "/api/token/test".to_owned(),
                message: fatal.text.clone(),
            }),
            None => Ok(()),
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Challenge { challenge, compat } => {
                // Lichess echoes our own challenges (matchmaking's, the
                // operator's) on the stream, with no direction: never
                // answered, they keep the slot they hold.
                let ours = challenge.direction == Some(Direction::Out)
                    || self.me.as_ref().is_some_and(|me| challenge.is_from(&me.id));
                if ours {
                    tracing::debug!(challenge = %challenge.id, "our own challenge");
                    return;
                }
                let stopping = self.phase != Phase::Running;
                self.on_challenge(&challenge, compat.as_ref(), stopping);
            }
            Event::ChallengeCanceled { challenge } => {
                if self.queue.remove(&challenge.id).is_some() {
                    self.queue_len.store(self.queue.len(), Ordering::Relaxed);
                    tracing::info!(challenge = %challenge.id, waiting = self.queue.len(), "challenge withdrawn while queued: removed from the queue");
                } else {
                    tracing::info!(challenge = %challenge.id, "challenge canceled");
                }
            }
            Event::ChallengeDeclined { challenge } => {
                let reason = challenge
                    .decline_reason_key
                    .clone()
                    .unwrap_or_else(|| "generic".to_owned());
                // Lichess echoes our declines of challenges to us too.
                let ours = self.me.as_ref().is_none_or(|me| {
                    challenge
                        .challenger_id()
                        .is_none_or(|id| id.eq_ignore_ascii_case(&me.id))
                });
                if !ours {
                    tracing::debug!(challenge = %challenge.id, reason = %reason, "declined (by us)");
                    return;
                }
                tracing::info!(challenge = %challenge.id, reason = %reason, "our challenge was declined");
                if self
                    .matchmaker
                    .settled(&challenge.id, Outcome::Declined(&reason), unix_now())
                {
                    self.games.remove(&challenge.id);
                    self.idle_since = Instant::now();
                    self.drain_queue();
                }
            }
            Event::GameStart { game } => self.on_game_start(game),
            Event::GameFinish { game } => self.on_game_finish(game),
            Event::Unknown { kind } => tracing::info!(%kind, "unknown event ignored"),
        }
    }
}

/// Waits until a stop is requested (or the sender is gone).
async fn stop_requested(signals: &mut Signals) {
    while *signals.borrow_and_update() == Stop::No {
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

/// The ratings of `account` in the metrics, by perf.
fn set_ratings(account: &crate::lichess::model::Account) {
    for (perf, p) in &account.perfs {
        if let Some(rating) = p.rating {
            metrics().set("kaissa_rating", &[("perf", perf)], f64::from(rating));
        }
    }
}
