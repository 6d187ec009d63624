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
//! **Shutdown** comes as a [`Stop`] request (see `crate::shutdown` for
//! the signals). [`Stop::Finish`] stops accepting challenges (new ones
//! are declined with `later`), keeps the event stream open for
//! `gameFinish`, and waits for the running games to end;
//! `bot.shutdown_deadline_secs` bounds that wait. [`Stop::Resign`], or
//! the deadline, asks every remaining game to resign (or abort, where it
//! still can) and exits once they ended or after [`RESIGN_GRACE`].
//! [`Stop::HandOver`] (a restart) asks every game task to save its hash
//! table and stop without a word to Lichess; the daemon exits once they
//! stopped or after [`HANDOVER_GRACE`], and the next run resumes the
//! games (reconciling, above).
//!
//! **The queue and the fair limits.** A challenge the policy accepts
//! ([`decide`]) then meets the fair limits ([`fair`]): a per-opponent cap,
//! the daily bot quota, and the slots (some kept for humans). One that may
//! play but finds no slot waits in the [`ChallengeQueue`], and is accepted
//! when a slot frees ([`Daemon::drain_queue`]); withdrawn meanwhile
//! (`challengeCanceled`), it leaves the queue.
//!
//! **The daily bot quota** ([`BotQuota`]): a `bot.vsBot.day` 429 (or our
//! own count) stops bot games until it resets; everything else goes on.
//!
//! **Matchmaking** ([`Matchmaker`]): idle long enough, the daemon
//! challenges an online bot; our pending challenge holds a slot, and is
//! cancelled when an incoming challenge needs it or after its timeout.
//!
//! **Correspondence**: a game without a clock waiting for the opponent is
//! parked (no task, no slot); `gameStart` with `isMyTurn`, or the periodic
//! `/api/account/playing` check, takes it up again. The same check starts
//! a task for any other ongoing game that has none.
//!
//! **systemd**: `READY=1` when the event stream first opens, `WATCHDOG=1`
//! while the event stream is open or was within the last 5 minutes,
//! `STATUS=` with the games in progress, `STOPPING=1` on shutdown.

use super::challenge::{Decision, Fair, Load, SlotGuard, Slots, decide, fair, may_take_slot};
use super::engines::{self, Engines};
use super::game::sources::MoveSources;
use super::game::{self, Exit, GameCommand, GameContext, GameHandle, Me};
use super::hashstore;
use super::matchmaking::{self, MatchEvent, Matchmaker};
use super::queue::{ChallengeQueue, Pushed};
use super::quota::BotQuota;
use super::scopes;
use super::state::unix_now;
use crate::config::{Config, GameKind};
use crate::lichess::backoff::Backoff;
use crate::lichess::client::{
    ChallengeKeepAlive, Client, Endpoint, Error as ClientError, EventStream, is_valid_id,
};
use crate::lichess::model::{
    Account, Challenge, Compat, DeclineReason, Direction, Event, GameInfo, OnlineBot, Speed,
    VariantKey,
};
use crate::lichess::stream::StreamEvent;
use crate::systemd::Notifier;
use futures::StreamExt;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
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
/// After asking the games to stop for the next run, how long they get to
/// save their hash tables (a save is bounded at 10 s) before the daemon
/// exits regardless.
pub const HANDOVER_GRACE: Duration = Duration::from_secs(12);
/// The event stream may be down this long before the watchdog pings stop
/// (systemd then restarts the daemon, which is all it can do).
const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);

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
    /// Our own challenge (matchmaking), not answered yet.
    outgoing: bool,
    /// A correspondence game whose turn came while its task was parking:
    /// take it up again at once.
    recheck: bool,
    /// The game as `gameStart` gave it (to take a parked game up again).
    info: Option<GameInfo>,
}

impl GameEntry {
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
        }
    }
}

/// A correspondence game waiting for the opponent, without a task.
#[derive(Debug)]
struct Parked {
    info: GameInfo,
    /// Our turn came, but no slot was free yet.
    due: bool,
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

/// The event loop's state.
pub struct Daemon {
    client: Client,
    config: Arc<Config>,
    slots: Slots,
    games: HashMap<String, GameEntry>,
    search_permits: Arc<Semaphore>,
    done_tx: mpsc::UnboundedSender<(String, Exit)>,
    done_rx: mpsc::UnboundedReceiver<(String, Exit)>,
    me: Option<Me>,
    notifier: Arc<Notifier>,
    /// Books, tables and online sources, shared by every game.
    sources: Arc<MoveSources>,
    /// The external engines (`[engines.NAME]`) and their health.
    engines: Arc<Engines>,
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
    reconcile_tx: mpsc::UnboundedSender<Option<Vec<GameInfo>>>,
    reconcile_rx: mpsc::UnboundedReceiver<Option<Vec<GameInfo>>>,
    /// When `/api/account/playing` was last asked.
    last_playing_check: Instant,
    /// Challenges waiting for a slot, and their count for `!queue`.
    queue: ChallengeQueue,
    queue_len: Arc<AtomicUsize>,
    quota: BotQuota,
    matchmaker: Matchmaker,
    match_tx: mpsc::UnboundedSender<MatchEvent>,
    match_rx: mpsc::UnboundedReceiver<MatchEvent>,
    /// Since when nothing was under way (no game, nothing queued).
    idle_since: Instant,
    /// Correspondence games waiting for the opponent.
    parked: HashMap<String, Parked>,
    /// Parked games greeted already (not greeted again when taken up).
    greeted: HashSet<String>,
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
        let (reconcile_tx, reconcile_rx) = mpsc::unbounded_channel();
        let (match_tx, match_rx) = mpsc::unbounded_channel();
        let state_dir = config.engine.state_dir.clone();
        let queue = ChallengeQueue::new(
            config.challenge.queue_order,
            config.challenge.queue_size as usize,
        );
        let quota = BotQuota::load(state_dir.as_deref(), config.bot.bot_games_per_day);
        let matchmaker = Matchmaker::new(config.matchmaking.clone(), state_dir.as_deref());
        let engines = Engines::new(&config);
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
            engines,
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
            reconcile_tx,
            reconcile_rx,
            last_playing_check: Instant::now(),
            queue,
            queue_len: Arc::new(AtomicUsize::new(0)),
            quota,
            matchmaker,
            match_tx,
            match_rx,
            idle_since: Instant::now(),
            parked: HashMap::new(),
            greeted: HashSet::new(),
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

    /// Runs until shutdown is complete (see [`Stop`]). Errors only on a fatal problem (the token
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
            _ = stop_requested(signals) => return Ok(()),
        });
        self.check_scopes().await?;
        // Before the first challenge: which external engines can play.
        self.engines.probe_all().await;
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
                        self.reconcile_later();
                        conn = Conn::Open(stream);
                    }
                    Step::Opened(Err(
                        e @ (ClientError::Unauthorized { .. } | ClientError::Forbidden { .. }),
                    )) => return Err(e),
                    Step::Opened(Err(e)) => {
                        tracing::warn!("cannot open the event stream: {e}");
                        conn = self.wait_to_reopen(&mut backoff);
                        // A 429 to the open itself: wait as Lichess asks.
                        if let (ClientError::RateLimited { .. }, Some(pause), Conn::Waiting(at)) =
                            (&e, self.client.rate_limited_for(Endpoint::Events), &mut conn)
                        {
                            *at = (*at).max(Instant::now() + pause);
                        }
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
                Some((id, exit)) = self.done_rx.recv() => self.game_done(&id, exit),
                Some(games) = self.reconcile_rx.recv() => {
                    self.reconcile(games);
                    if std::mem::take(&mut self.reconcile_again) {
                        self.reconcile_later();
                    }
                }
                Some(event) = self.match_rx.recv() => self.on_match_event(event),
                Some(answered) = self.answered_rx.recv() => self.on_answered(answered),
                _ = housekeeping.tick() => {
                    if matches!(conn, Conn::Open(_)) {
                        self.mark_open();
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
    fn reconcile_later(&mut self) {
        self.last_playing_check = Instant::now();
        if self.reconciling {
            self.reconcile_again = true;
            return;
        }
        self.reconciling = true;
        let client = self.client.clone();
        let tx = self.reconcile_tx.clone();
        tokio::spawn(async move {
            let games = match client.playing().await {
                Ok(playing) => Some(playing.now_playing),
                Err(e) => {
                    tracing::warn!("cannot list the ongoing games: {e}");
                    None
                }
            };
            let _ = tx.send(games);
        });
    }

    /// Starts a task for every ongoing game that has none (a parked
    /// correspondence game only when its turn came), and forgets parked
    /// games that are no longer listed (they ended).
    fn reconcile(&mut self, games: Option<Vec<GameInfo>>) {
        self.reconciling = false;
        let Some(games) = games else {
            return;
        };
        let listed: HashSet<&str> = games.iter().map(|g| g.game_id.as_str()).collect();
        self.parked.retain(|id, _| {
            let ongoing = listed.contains(id.as_str());
            if !ongoing {
                tracing::info!(game = %id, "parked correspondence game no longer ongoing");
            }
            ongoing
        });
        self.greeted
            .retain(|id| listed.contains(id.as_str()) || self.games.contains_key(id));
        let missing: Vec<GameInfo> = games
            .into_iter()
            .filter(|g| {
                self.games
                    .get(&g.game_id)
                    .is_none_or(|entry| entry.task.is_none())
            })
            .filter(|g| !self.parked.contains_key(&g.game_id) || g.is_my_turn)
            .collect();
        let level = if missing.is_empty() {
            tracing::Level::DEBUG
        } else {
            tracing::Level::INFO
        };
        if level == tracing::Level::INFO {
            tracing::info!(
                ongoing = self.running_games() + missing.len(),
                missing = missing.len(),
                parked = self.parked.len(),
                "reconciled with the ongoing games"
            );
        } else {
            tracing::debug!(
                ongoing = self.running_games(),
                parked = self.parked.len(),
                "reconciled with the ongoing games"
            );
        }
        for info in missing {
            if self.parked.contains_key(&info.game_id) {
                tracing::info!(game = %info.game_id, "correspondence: our turn (playing check)");
            } else if !is_correspondence(&info) || info.is_my_turn {
                tracing::info!(game = %info.game_id, "resuming a game nobody watched");
            }
            self.on_game_start(info);
        }
        self.drain_queue();
    }

    /// Whether shutdown is complete.
    fn done(&self) -> bool {
        match self.phase {
            Phase::Running => false,
            Phase::Draining { .. } => self.games.is_empty(),
            Phase::Resigning { exit_by } | Phase::HandingOver { exit_by } => {
                self.running_games() == 0 || Instant::now() >= exit_by
            }
        }
    }

    fn on_stop(&mut self, stop: Stop) {
        match stop {
            // Nothing more will be accepted: the waiting challenges go,
            // and our own pending challenge. A restart leaves the waiting
            // ones to the next run (Lichess resends them).
            Stop::Finish | Stop::Resign => {
                self.decline_queued(|_| true, "shutting down");
                self.cancel_our_challenge();
            }
            Stop::HandOver => {
                self.cancel_our_challenge();
            }
            Stop::No => {}
        }
        match (stop, self.phase) {
            (Stop::No, _) | (_, Phase::Resigning { .. }) => {}
            (Stop::Resign, _) => {
                tracing::info!("second signal: resigning the games in progress");
                self.resign_all();
            }
            (Stop::HandOver, Phase::HandingOver { .. }) => {}
            (Stop::HandOver, _) => self.hand_over_all(),
            (Stop::Finish, Phase::Running) => {
                let deadline = Instant::now() + self.config.bot.shutdown_deadline();
                tracing::info!(
                    games = self.running_games(),
                    deadline_s = self.config.bot.shutdown_deadline().as_secs(),
                    "shutting down: new challenges declined, running games finish (a second signal resigns them)"
                );
                let _ = self.notifier.stopping();
                self.phase = Phase::Draining { deadline };
            }
            (Stop::Finish, _) => {}
        }
        self.update_status();
    }

    /// Asks every game task to stop for the next run.
    fn hand_over_all(&mut self) {
        let _ = self.notifier.stopping();
        tracing::info!(
            games = self.running_games(),
            "restarting: the games in progress are left for the next run"
        );
        // Accepted challenges that have not started yet start in the next
        // run (Lichess replays them as gameStart).
        self.games.retain(|_, entry| entry.task.is_some());
        for entry in self.games.values() {
            if let Some(task) = &entry.task {
                task.send(GameCommand::HandOver);
            }
        }
        self.phase = Phase::HandingOver {
            exit_by: Instant::now() + HANDOVER_GRACE,
        };
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
        if self.last_playing_check.elapsed() >= self.config.bot.playing_check() {
            self.reconcile_later();
        }
        self.drain_queue();
        self.matchmaking();
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

    /// Logs the token's scopes and what the configuration needs of them;
    /// a token that cannot play is fatal. If Lichess cannot say (a network
    /// error), the bot goes on: the endpoints will tell.
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
        tracing::info!(scopes = info.scopes.as_deref().unwrap_or(""), "token");
        for need in scopes::missing(&info, &self.config) {
            if need.required {
                tracing::error!(
                    scope = need.scope,
                    "the token lacks {}, needed for {}: create a token with it",
                    need.scope,
                    need.purpose
                );
                return Err(ClientError::Forbidden {
                    path: "/api/token/test".to_owned(),
                    message: format!("the token lacks the {} scope", need.scope),
                });
            }
            tracing::warn!(
                scope = need.scope,
                "the token lacks {}, needed for {}",
                need.scope,
                need.purpose
            );
        }
        Ok(())
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Challenge { challenge, compat } => {
                if challenge.direction == Some(Direction::Out) {
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
                tracing::info!(challenge = %challenge.id, reason = %reason, "our challenge was declined");
                if self
                    .matchmaker
                    .settled(&challenge.id, Some(&reason), unix_now())
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

    /// Starts the game's task, exactly once per game id. A correspondence
    /// game that waits for the opponent is parked instead; one whose turn
    /// came waits for a free slot.
    fn on_game_start(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        if !is_valid_id(&id) {
            tracing::warn!(game = %id.chars().take(80).collect::<String>(), "gameStart with an invalid game id ignored");
            return;
        }
        if self.matchmaker.settled(&id, None, unix_now()) {
            tracing::info!(game = %id, "matchmaking: our challenge was accepted");
        }
        let correspondence = is_correspondence(&info);
        if let Some(entry) = self.games.get_mut(&id)
            && entry.task.is_some()
        {
            if correspondence && info.is_my_turn {
                // The task may be parking: take the game up again after.
                entry.recheck = true;
            }
            tracing::debug!(game = %id, "game already being played");
            return;
        }
        if matches!(self.phase, Phase::HandingOver { .. }) {
            tracing::info!(game = %id, "game left for the next run");
            return;
        }
        if correspondence && !info.is_my_turn {
            // Nothing to do until the opponent moves: no task, no slot.
            if self.games.remove(&id).is_some() || !self.parked.contains_key(&id) {
                tracing::info!(game = %id, "correspondence game parked until our turn");
            }
            self.parked.insert(id, Parked { info, due: false });
            return;
        }
        // A game we accepted has its slot already; any other counts
        // against the cap.
        let accepted = self.games.get(&id).is_some_and(|e| e.slot.is_some());
        if correspondence && !accepted {
            // Its turn came: it needs a slot (it waits for one, days
            // are plenty).
            match self.slots.try_reserve() {
                Some(slot) => {
                    self.parked.remove(&id);
                    self.games.insert(id.clone(), GameEntry::new(Some(slot)));
                }
                None => {
                    tracing::info!(game = %id, "correspondence: our turn; waiting for a free slot");
                    self.parked.insert(id, Parked { info, due: true });
                    return;
                }
            }
        }
        let cap = self.slots.capacity() + SPARE_GAMES;
        if !accepted && !correspondence && self.running_games() >= cap {
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
        self.parked.remove(&id);
        let slots = &self.slots;
        let entry = self
            .games
            .entry(id.clone())
            .or_insert_with(|| GameEntry::new(None));
        if entry.slot.is_none() {
            entry.slot = slots.try_reserve();
            if entry.slot.is_none() {
                tracing::warn!(game = %id, "game started beyond the concurrency limit; playing it anyway");
            }
        }
        if entry.opponent.is_none() {
            entry.opponent = info
                .opponent
                .as_ref()
                .and_then(|o| o.id.clone())
                .map(|o| o.to_lowercase());
        }
        if entry.bot && (entry.accepted_at.is_some() || entry.outgoing) {
            // A new game against a bot: it counts against the daily quota.
            self.quota.game_started(unix_now());
        }
        entry.accepted_at = None;
        entry.outgoing = false;
        entry.info = Some(info.clone());
        let bot = entry.bot;
        let ctx = self.game_context(me, !self.greeted.contains(&id), &info, bot);
        let task = game::spawn(ctx, info, self.done_tx.clone());
        let Some(entry) = self.games.get_mut(&id) else {
            return;
        };
        if matches!(self.phase, Phase::Resigning { .. }) {
            task.send(GameCommand::Resign);
        }
        entry.task = Some(task);
    }

    fn on_game_finish(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        tracing::info!(
            game = %id,
            status = ?info.status,
            winner = info.winner.map(|w| w.as_str()),
            rating = info.rating,
            rating_diff = info.rating_diff,
            "game finished on Lichess"
        );
        if self.parked.remove(&id).is_some() {
            // Over while it waited (the opponent resigned, or mated us):
            // a task takes it up for the PGN and the goodbye.
            tracing::info!(game = %id, "parked correspondence game finished");
            self.wrap_up_parked(info);
            return;
        }
        self.greeted.remove(&id);
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
        self.drain_queue();
    }

    /// What a game task gets; `greet`: say hello when it starts. The
    /// engine that plays `info` (against a bot if `bot`) is chosen here;
    /// when the external engine chosen for a game of standard chess is
    /// not usable, the built-in engine plays.
    fn game_context(&self, me: Me, greet: bool, info: &GameInfo, bot: bool) -> GameContext {
        let kind = GameKind {
            variant: info
                .variant
                .as_ref()
                .map_or(VariantKey::Standard, |v| v.key),
            speed: info.speed.unwrap_or(Speed::Unknown),
            against_bot: bot,
            rated: info.rated,
        };
        let external = match self.engines.player(kind) {
            Ok(engines::Player::External(choice)) => Some(choice),
            Ok(engines::Player::BuiltIn) => None,
            Err(why) => {
                tracing::warn!(game = %info.game_id, "{why}: the built-in engine plays if it can");
                None
            }
        };
        GameContext {
            external,
            client: self.client.clone(),
            config: Arc::clone(&self.config),
            me,
            search_permits: Arc::clone(&self.search_permits),
            queue_len: Arc::clone(&self.queue_len),
            sources: Arc::clone(&self.sources),
            greet,
        }
    }

    /// Starts a task, holding no slot, for a parked game that ended: it
    /// reads the final state and writes the PGN.
    fn wrap_up_parked(&mut self, info: GameInfo) {
        let Some(me) = self.me.clone() else {
            return;
        };
        let id = info.game_id.clone();
        let ctx = self.game_context(me, false, &info, false);
        let mut entry = GameEntry::new(None);
        entry.task = Some(game::spawn(ctx, info, self.done_tx.clone()));
        self.greeted.remove(&id);
        self.games.insert(id, entry);
    }

    /// A game task ended: the game is over, or (correspondence) parked
    /// until our turn.
    fn game_done(&mut self, id: &str, exit: Exit) {
        if let Some(entry) = self.games.remove(id) {
            tracing::debug!(game = %id, in_use = self.slots.in_use(), ?exit, "game task ended");
            if exit == Exit::Parked && self.phase == Phase::Running {
                self.greeted.insert(id.to_owned());
                let Some(mut info) = entry.info else {
                    return;
                };
                info.is_my_turn = entry.recheck;
                self.parked.insert(
                    id.to_owned(),
                    Parked {
                        info,
                        due: entry.recheck,
                    },
                );
            } else {
                self.greeted.remove(id);
            }
        }
        self.drain_queue();
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

    fn on_challenge(
        &mut self,
        challenge: &Challenge,
        compat: Option<&Compat>,
        shutting_down: bool,
    ) {
        if self.queue.contains(&challenge.id) {
            tracing::debug!(challenge = %challenge.id, "challenge already queued");
            return;
        }
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
        let config = Arc::clone(&self.config);
        let policy = &config.challenge;
        let (reason, rule) = if shutting_down {
            (DeclineReason::Later, "shutting down")
        } else {
            match decide(challenge, compat, policy) {
                Decision::Decline(reason) => (reason, "policy"),
                Decision::Accept if let Err(why) = self.engines.player(kind_of(challenge)) => {
                    tracing::warn!(challenge = %challenge.id, variant = challenge.variant.key.as_str(), "no engine can play it: {why}");
                    let reason = if challenge.variant.key == VariantKey::Standard {
                        DeclineReason::Generic
                    } else {
                        DeclineReason::Variant
                    };
                    (reason, "engine")
                }
                Decision::Accept => {
                    let mut verdict = fair(challenge, policy, self.load_for(challenge));
                    if verdict == Fair::Wait && self.cancel_our_challenge() {
                        // Incoming challenges come first: ours gave way.
                        verdict = fair(challenge, policy, self.load_for(challenge));
                    }
                    match verdict {
                        Fair::Play => {
                            self.accept(challenge);
                            return;
                        }
                        Fair::Wait => match self.queue.push(challenge.clone()) {
                            Pushed::Queued(position) => {
                                self.queue_len.store(self.queue.len(), Ordering::Relaxed);
                                tracing::info!(
                                    challenge = %challenge.id,
                                    challenger = %challenge.challenger.id,
                                    bot = challenge.challenger.is_bot(),
                                    rating = challenge.challenger.rating,
                                    position,
                                    waiting = self.queue.len(),
                                    "queued: every slot is taken"
                                );
                                return;
                            }
                            Pushed::Already => return,
                            Pushed::Full => (DeclineReason::Later, "queue full"),
                        },
                        Fair::Decline(reason, rule) => (reason, rule),
                    }
                }
            }
        };
        self.decline(challenge, reason, rule);
    }

    /// Where the slots stand for `challenge`: slots in use, those bots
    /// hold, and the games and queued challenges of its challenger.
    fn load_for(&self, challenge: &Challenge) -> Load {
        let who = challenge.challenger.id.to_lowercase();
        // Games that still hold a slot: a finished game whose task writes
        // its PGN does not count (a rematch is not refused).
        let games = self
            .games
            .values()
            .filter(|e| e.slot.is_some() && e.opponent.as_deref() == Some(who.as_str()))
            .count();
        let queued = self
            .queue
            .iter()
            .filter(|c| c.id != challenge.id && c.challenger.id.eq_ignore_ascii_case(&who))
            .count();
        Load {
            concurrency: self.slots.capacity(),
            in_use: self.slots.in_use(),
            bots: self.bot_slots(),
            with_challenger: games + queued,
            bot_quota_reached: self.quota.reached(unix_now()),
        }
    }

    /// Slots held by games (or challenges) against bots.
    fn bot_slots(&self) -> usize {
        self.games
            .values()
            .filter(|e| e.bot && e.slot.is_some())
            .count()
    }

    /// Accepts a challenge that may take a free slot; the slot is held
    /// from now, until the game starts (then by the game), the accept is
    /// refused, or the start timeout passes.
    fn accept(&mut self, challenge: &Challenge) {
        let Some(slot) = self.slots.try_reserve() else {
            // Cannot happen (the load said a slot is free); decline
            // rather than overbook.
            self.decline(challenge, DeclineReason::Later, "no free slot");
            return;
        };
        tracing::info!(
            challenge = %challenge.id,
            challenger = %challenge.challenger.id,
            bot = challenge.challenger.is_bot(),
            variant = challenge.variant.key.as_str(),
            speed = challenge.speed.as_str(),
            rated = challenge.rated,
            in_use = self.slots.in_use(),
            "accept"
        );
        let mut entry = GameEntry::new(Some(slot));
        entry.accepted_at = Some(Instant::now());
        entry.opponent = Some(challenge.challenger.id.to_lowercase());
        entry.bot = challenge.challenger.is_bot();
        self.games.entry(challenge.id.clone()).or_insert(entry);
        self.answers.push_back(Answer {
            id: challenge.id.clone(),
            decline: None,
            tries: 0,
            not_before: Instant::now(),
        });
    }

    fn decline(&mut self, challenge: &Challenge, reason: DeclineReason, rule: &str) {
        tracing::info!(
            challenge = %challenge.id,
            challenger = %challenge.challenger.id,
            variant = challenge.variant.key.as_str(),
            speed = challenge.speed.as_str(),
            rated = challenge.rated,
            reason = reason.as_str(),
            rule,
            "decline"
        );
        self.answers.push_back(Answer {
            id: challenge.id.clone(),
            decline: Some(reason),
            tries: 0,
            not_before: Instant::now(),
        });
    }

    /// Declines (`later`) the queued challenges for which `which` holds.
    fn decline_queued(&mut self, which: impl FnMut(&Challenge) -> bool, rule: &str) {
        for challenge in self.queue.drain_where(which) {
            self.decline(&challenge, DeclineReason::Later, rule);
        }
        self.queue_len.store(self.queue.len(), Ordering::Relaxed);
    }

    /// Hands the free slots out: first to correspondence games whose turn
    /// came, then to the queued challenges that may take them, in queue
    /// order. Bot challenges are declined while the bot quota is reached.
    fn drain_queue(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        if self.quota.reached(unix_now()) {
            self.decline_queued(|c| c.challenger.is_bot(), "daily bot quota");
        }
        let due: Vec<String> = self
            .parked
            .iter()
            .filter(|(_, p)| p.due)
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            if self.slots.in_use() >= self.slots.capacity() {
                break;
            }
            if let Some(parked) = self.parked.remove(&id) {
                tracing::info!(game = %id, "correspondence: a slot is free, taking the game up");
                self.on_game_start(parked.info);
            }
        }
        while !self.queue.is_empty() && self.slots.in_use() < self.slots.capacity() {
            let policy = &self.config.challenge;
            let mut per_opponent: HashMap<String, usize> = HashMap::new();
            for e in self.games.values().filter(|e| e.slot.is_some()) {
                if let Some(o) = &e.opponent {
                    *per_opponent.entry(o.clone()).or_default() += 1;
                }
            }
            let load = Load {
                concurrency: self.slots.capacity(),
                in_use: self.slots.in_use(),
                bots: self.bot_slots(),
                with_challenger: 0,
                bot_quota_reached: false,
            };
            let cap = policy.max_games_per_opponent as usize;
            let next = self.queue.take_next(|c| {
                let playing = per_opponent
                    .get(&c.challenger.id.to_lowercase())
                    .copied()
                    .unwrap_or(0);
                playing < cap && may_take_slot(c.challenger.is_bot(), policy, load)
            });
            let Some(challenge) = next else {
                break;
            };
            self.queue_len.store(self.queue.len(), Ordering::Relaxed);
            tracing::info!(
                challenge = %challenge.id,
                challenger = %challenge.challenger.id,
                waiting = self.queue.len(),
                "a slot is free: taking the next queued challenge"
            );
            self.accept(&challenge);
        }
    }

    /// Withdraws our pending matchmaking challenge to free its slot; whether
    /// there was one.
    fn cancel_our_challenge(&mut self) -> bool {
        let Some(pending) = self.matchmaker.pending().cloned() else {
            return false;
        };
        if self.games.get(&pending.id).is_none_or(|e| e.task.is_some()) {
            return false;
        }
        tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: an incoming challenge comes first; cancelling ours");
        self.games.remove(&pending.id);
        self.matchmaker.settled(&pending.id, None, unix_now());
        matchmaking::spawn_cancel(&self.client, pending.id);
        true
    }

    /// Matchmaking's turn: cancel a challenge of ours that waited too long,
    /// or look for an opponent when idle.
    fn matchmaking(&mut self) {
        if !self.matchmaker.enabled() {
            return;
        }
        let now = unix_now();
        if let Some(pending) = self.matchmaker.timed_out().cloned() {
            tracing::info!(challenge = %pending.id, opponent = %pending.opponent, "matchmaking: no answer in time; cancelling our challenge");
            self.games.remove(&pending.id);
            self.matchmaker.settled(&pending.id, Some("timeout"), now);
            matchmaking::spawn_cancel(&self.client, pending.id);
            self.idle_since = Instant::now();
        }
        let busy = !self.games.is_empty()
            || !self.queue.is_empty()
            || self.parked.values().any(|p| p.due)
            || self.matchmaker.busy();
        if busy || self.phase != Phase::Running {
            self.idle_since = Instant::now();
            return;
        }
        let paused = [Endpoint::OnlineBots, Endpoint::ChallengeCreate]
            .into_iter()
            .any(|e| self.client.rate_limited_for(e).is_some());
        if self.quota.reached(now) || paused {
            return;
        }
        if self.matchmaker.due(self.idle_since) {
            tracing::info!(
                idle_s = self.idle_since.elapsed().as_secs(),
                "matchmaking: idle; looking for a bot online"
            );
            self.matchmaker.search(&self.client, &self.match_tx);
        }
    }

    fn on_bots_found(&mut self, found: Result<(Vec<OnlineBot>, Account), ClientError>, now: u64) {
        match found {
            Ok((bots, account)) => {
                let busy = !self.games.is_empty() || !self.queue.is_empty();
                if busy || self.phase != Phase::Running || self.quota.reached(now) {
                    self.matchmaker.failed();
                    return;
                }
                if self
                    .matchmaker
                    .found(&bots, &account, &self.client, &self.match_tx, now)
                    .is_none()
                {
                    self.idle_since = Instant::now();
                }
            }
            Err(e) => {
                tracing::warn!("matchmaking: cannot list the bots online: {e}");
                self.matchmaker.failed();
                self.idle_since = Instant::now();
            }
        }
    }

    fn on_match_event(&mut self, event: MatchEvent) {
        let now = unix_now();
        match event {
            MatchEvent::Found(found) => self.on_bots_found(*found, now),
            MatchEvent::Created { opponent, result } => match *result {
                Ok((challenge, keep_alive)) => {
                    self.on_challenge_created(opponent, challenge, keep_alive)
                }
                Err(e) => self.on_challenge_not_created(&opponent, &e, now),
            },
        }
    }

    /// Our matchmaking challenge was created: it holds a slot until it is
    /// answered (an incoming challenge that needs the slot cancels it).
    fn on_challenge_created(
        &mut self,
        opponent: String,
        challenge: Challenge,
        keep_alive: ChallengeKeepAlive,
    ) {
        let id = challenge.id.clone();
        if !is_valid_id(&id) {
            self.matchmaker.failed();
            return;
        }
        if self.phase != Phase::Running {
            // Created while shutting down: withdrawn at once.
            self.matchmaker.failed();
            matchmaking::spawn_cancel(&self.client, id);
            return;
        }
        // Our challenge holds a slot until it is answered; an
        // incoming challenge that needs it cancels ours.
        let slot = if self.games.contains_key(&id) {
            None
        } else {
            self.slots.try_reserve()
        };
        let Some(slot) = slot else {
            tracing::info!(challenge = %id, "matchmaking: no slot left for our challenge; cancelling it");
            self.matchmaker.failed();
            matchmaking::spawn_cancel(&self.client, id);
            return;
        };
        tracing::info!(challenge = %id, opponent = %opponent, "matchmaking: challenge sent; waiting for an answer");
        let mut entry = GameEntry::new(Some(slot));
        entry.opponent = Some(opponent.to_lowercase());
        entry.bot = true;
        entry.outgoing = true;
        self.games.insert(id.clone(), entry);
        self.matchmaker.created(id, opponent, keep_alive);
    }

    fn on_challenge_not_created(&mut self, opponent: &str, e: &ClientError, now: u64) {
        self.idle_since = Instant::now();
        if let Some(wait) = e.bot_vs_bot_daily_limit() {
            self.quota.hit(now, Some(wait.as_secs()));
            tracing::warn!(
                resets_in_s = self.quota.resets_in(now),
                "matchmaking: daily bot-game quota reached; stopped until it resets"
            );
            self.matchmaker.failed();
            self.decline_queued(|c| c.challenger.is_bot(), "daily bot quota");
        } else if e.status() == Some(429) || e.is_transient() {
            tracing::warn!("matchmaking: challenge not sent: {e}");
            self.matchmaker.failed();
        } else if let Some(limit) = e.refused_by_limit() {
            // The opponent's own limit (its bot games for the day): it is
            // skipped for as long as Lichess says.
            let reason = format!("limit {}", limit.key.as_deref().unwrap_or("unknown"));
            tracing::info!(opponent = %opponent, "matchmaking: challenge refused: {e}");
            self.matchmaker
                .refused(opponent, &reason, limit.seconds, now);
        } else if e.is_form_error() {
            // Our challenge's settings, not the opponent: nobody is skipped.
            tracing::error!(
                "matchmaking: Lichess refused the settings of our challenge ({e}); \
                 check matchmaking.time_controls and matchmaking.variants"
            );
            self.matchmaker.failed();
        } else {
            tracing::warn!(opponent = %opponent, "matchmaking: challenge refused: {e}");
            self.matchmaker.refused(opponent, "refused", None, now);
        }
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
        if answer.decline.is_none()
            && let Some(wait) = e.bot_vs_bot_daily_limit()
        {
            // A quota on bot games, not a request rate: this challenge is
            // declined, the other bot challenges too; the rest goes on.
            let now = unix_now();
            self.quota.hit(now, Some(wait.as_secs()));
            tracing::warn!(
                challenge = %answer.id,
                resets_in_s = self.quota.resets_in(now),
                "daily bot-game quota reached: bot challenges declined until it resets"
            );
            self.games.remove(&answer.id);
            self.answers.push_back(Answer {
                id: answer.id,
                decline: Some(DeclineReason::Later),
                tries: 0,
                not_before: Instant::now(),
            });
            self.drain_queue();
            return;
        }
        let retry =
            (e.is_transient() || e.status() == Some(429)) && answer.tries < MAX_ANSWER_TRIES;
        tracing::warn!(challenge = %answer.id, tries = answer.tries, retry, "{what} failed: {e}");
        if retry {
            let wait = self
                .client
                .rate_limited_for(Endpoint::ChallengeAnswer)
                .unwrap_or_default()
                .max(ANSWER_RETRY);
            answer.not_before = Instant::now() + wait;
            self.answers.push_back(answer);
            return;
        }
        if answer.decline.is_none() {
            // The retry of an accept that went through gets 404: keep the
            // slot until the game starts or the start timeout passes. Any
            // other refusal frees it, a 404 to the first try too (the
            // challenge is gone: withdrawn while its cancel event was lost).
            let retried_404 = matches!(e, ClientError::NotFound { .. }) && answer.tries > 1;
            let gone = !retried_404
                && self
                    .games
                    .get(&answer.id)
                    .is_some_and(|entry| entry.task.is_none());
            if gone {
                self.games.remove(&answer.id);
                self.drain_queue();
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

/// A game without a clock: correspondence (or unlimited, which Lichess
/// lists with the correspondence speed).
/// What decides who plays a challenge's game.
fn kind_of(challenge: &Challenge) -> GameKind {
    GameKind {
        variant: challenge.variant.key,
        speed: challenge.speed,
        against_bot: challenge.challenger.is_bot(),
        rated: challenge.rated,
    }
}

fn is_correspondence(info: &GameInfo) -> bool {
    info.speed == Some(Speed::Correspondence)
}
