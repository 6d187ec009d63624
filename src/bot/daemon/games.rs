//! The games' lives seen from the daemon: `gameStart` starts a game task
//! (or takes a parked one up again), `gameFinish` and the task's end give
//! its slot back, and the hash files of finished games are swept.
//!
//! **Reconciling.** Lichess replays ongoing games as `gameStart` when the
//! event stream opens, but a replay can be missed (the stream dies right
//! after opening, a line is lost). So on start and after every reconnect
//! the daemon also asks `/api/account/playing` and starts a task for every
//! listed game that has none: a daemon restarted mid-game resumes it, the
//! game task rebuilding position and clocks from its game stream. The
//! registry guarantees one task per game id whichever source comes first.
//!
//! **Correspondence**: a game without a clock waiting for the opponent is
//! parked (no task, no slot); `gameStart` with `isMyTurn`, or the periodic
//! `/api/account/playing` check, takes it up again. The same check starts
//! a task for any other ongoing game that has none.

use super::{Daemon, GameEntry, Inbox, Phase, SPARE_GAMES};
use crate::bot::external::roster;
use crate::bot::game::{self, Exit, GameCommand, GameContext, Me, Notice};
use crate::bot::policy::matchmaker::Outcome;
use crate::bot::store::hashstore;
use crate::bot::store::state::unix_now;
use crate::config::GameKind;
use crate::lichess::client::{PLAYING_MAX, is_valid_id};
use crate::lichess::model::{GameInfo, GameOpponent, Speed, VariantKey};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The `/api/account/playing` check: one call at a time, and one more
/// after it if it was asked for meanwhile.
pub(super) struct PlayingCheck {
    /// A call is under way.
    pub(super) running: bool,
    /// Asked again while it ran.
    pub(super) again: bool,
    /// When it was last asked.
    pub(super) last: Instant,
    /// Asked for soon (a game task dropped its game), not before then.
    pub(super) soon: Option<Instant>,
    /// The games seen over lately, by when: an answer computed before a
    /// game ended may still list it, and it is not taken up again.
    pub(super) over: HashMap<String, Instant>,
}

/// How soon after the last check a dropped game asks for another: at most
/// one call this often while tasks keep dropping their games.
const DROPPED_RECHECK: Duration = Duration::from_secs(2);
/// How long a game seen over is not taken up again from the list.
const OVER_FOR: Duration = Duration::from_secs(600);

impl PlayingCheck {
    pub(super) fn new() -> PlayingCheck {
        PlayingCheck {
            running: false,
            again: false,
            last: Instant::now(),
            soon: None,
            over: HashMap::new(),
        }
    }

    /// Whether the check is due now, `every` being the periodic interval.
    pub(super) fn due(&self, every: Duration) -> bool {
        self.last.elapsed() >= every || self.soon.is_some_and(|t| Instant::now() >= t)
    }
}

/// The correspondence games waiting for the opponent (no task, no
/// slot), and those greeted already (not greeted again when taken up).
#[derive(Debug, Default)]
pub(super) struct Parking {
    pub(super) waiting: HashMap<String, Parked>,
    pub(super) greeted: HashSet<String>,
}

/// A correspondence game waiting for the opponent, without a task.
#[derive(Debug)]
pub(super) struct Parked {
    pub(super) info: GameInfo,
    /// Our turn came, but no slot was free yet.
    pub(super) due: bool,
}

impl Daemon {
    /// Asks `/api/account/playing` in the background (it waits behind the
    /// rate-limit gate like any request; the loop must not). One call at a
    /// time: asked again meanwhile, one more follows it.
    pub(super) fn reconcile_later(&mut self) {
        self.playing_check.last = Instant::now();
        self.playing_check.soon = None;
        if self.playing_check.running {
            self.playing_check.again = true;
            return;
        }
        self.playing_check.running = true;
        let client = self.client.clone();
        let tx = self.inbox_tx.clone();
        tokio::spawn(async move {
            let games = match client.playing().await {
                Ok(playing) => Some(playing.now_playing),
                Err(e) => {
                    tracing::warn!("cannot list the ongoing games: {e}");
                    None
                }
            };
            let _ = tx.send(Inbox::Playing(games));
        });
    }

    /// Starts a task for every ongoing game that has none (a parked
    /// correspondence game only when its turn came), and wraps up parked
    /// games that are no longer listed (they ended while the event stream
    /// was down: its `gameFinish` was missed). A full list may leave games
    /// out: then no parked game is taken for ended.
    pub(super) fn reconcile(&mut self, games: Option<Vec<GameInfo>>) {
        self.playing_check.running = false;
        let Some(games) = games else {
            return;
        };
        let complete = games.len() < PLAYING_MAX;
        let over = &mut self.playing_check.over;
        over.retain(|_, at| at.elapsed() < OVER_FOR);
        let games: Vec<GameInfo> = games
            .into_iter()
            .filter(|g| !over.contains_key(&g.game_id))
            .collect();
        let listed: HashSet<&str> = games.iter().map(|g| g.game_id.as_str()).collect();
        let mut ended = Vec::new();
        self.parking.waiting.retain(|id, parked| {
            let ongoing = listed.contains(id.as_str()) || !complete;
            if !ongoing {
                tracing::info!(game = %id, "parked correspondence game no longer ongoing: reading its end");
                ended.push(parked.info.clone());
            }
            ongoing
        });
        self.parking
            .greeted
            .retain(|id| listed.contains(id.as_str()) || self.games.contains_key(id));
        let missing: Vec<GameInfo> = games
            .into_iter()
            .filter(|g| {
                self.games
                    .get(&g.game_id)
                    .is_none_or(|entry| entry.task.is_none())
            })
            .filter(|g| !self.parking.waiting.contains_key(&g.game_id) || g.is_my_turn)
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
                parked = self.parking.waiting.len(),
                "reconciled with the ongoing games"
            );
        } else {
            tracing::debug!(
                ongoing = self.running_games(),
                parked = self.parking.waiting.len(),
                "reconciled with the ongoing games"
            );
        }
        for info in ended {
            // Its task reads the final state and writes the PGN (or, were
            // it still on after all, parks it again).
            self.wrap_up_parked(info);
        }
        for info in missing {
            if self.parking.waiting.contains_key(&info.game_id) {
                tracing::info!(game = %info.game_id, "correspondence: our turn (playing check)");
            } else if !is_correspondence(&info) || info.is_my_turn {
                tracing::info!(game = %info.game_id, "resuming a game nobody watched");
            }
            self.on_game_start(info);
        }
        self.drain_queue();
    }

    /// Starts the game's task, exactly once per game id. A correspondence
    /// game that waits for the opponent is parked instead; one whose turn
    /// came waits for a free slot.
    pub(super) fn on_game_start(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        if !is_valid_id(&id) {
            tracing::warn!(game = %id.chars().take(80).collect::<String>(), "gameStart with an invalid game id ignored");
            return;
        }
        if self.matchmaker.settled(&id, Outcome::Accepted, unix_now()) {
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
        if correspondence && self.phase != Phase::Running {
            // Days on its clock: the next run plays it, rather than the
            // deadline resigning it.
            self.games.remove(&id);
            tracing::info!(game = %id, "shutting down: correspondence game left for the next run");
            return;
        }
        // A game we accepted has its slot already; any other counts
        // against the cap.
        let accepted = self.games.get(&id).is_some_and(|e| e.slot.is_some());
        if correspondence && !info.is_my_turn && !accepted {
            // Nothing to do until the opponent moves: no task, no slot.
            // (One just accepted gets its task, which waits a while for
            // the opponent's first move: Lichess will not say it came.)
            if self.games.remove(&id).is_some() || !self.parking.waiting.contains_key(&id) {
                tracing::info!(game = %id, "correspondence game parked until our turn");
            }
            self.parking.waiting.insert(id, Parked { info, due: false });
            return;
        }
        if correspondence && !accepted {
            // Its turn came: it needs a slot (it waits for one, days
            // are plenty).
            match self.slots.try_reserve() {
                Some(slot) => {
                    self.parking.waiting.remove(&id);
                    self.games.insert(id.clone(), GameEntry::new(Some(slot)));
                }
                None => {
                    tracing::info!(game = %id, "correspondence: our turn; waiting for a free slot");
                    self.parking.waiting.insert(id, Parked { info, due: true });
                    return;
                }
            }
        }
        let cap = self.slots.total() + SPARE_GAMES;
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
        self.start_game_task(id, info, me);
    }

    /// Starts the task of game `id`: its slot (the one it was accepted
    /// with, its arena's, or any free one), its opponent counted against
    /// the quota and matchmaking's cooldowns, and the task itself.
    fn start_game_task(&mut self, id: String, info: GameInfo, me: Me) {
        self.parking.waiting.remove(&id);
        let slots = &self.slots;
        let entry = self
            .games
            .entry(id.clone())
            .or_insert_with(|| GameEntry::new(None));
        if entry.slot.is_none() {
            // An arena game takes the slot its arena kept.
            entry.slot = if info.tournament_id.is_some() {
                slots.try_reserve_kept()
            } else {
                slots.try_reserve()
            };
            if entry.slot.is_none() {
                tracing::warn!(game = %id, "game started beyond the concurrency limit; playing it anyway");
            }
        }
        // A game that came without our challenge (an arena's, one found
        // after a restart, a parked one taken up) tells by the name.
        entry.bot |= info.opponent.as_ref().is_some_and(GameOpponent::is_bot);
        if entry.opponent.is_none() {
            entry.opponent = info
                .opponent
                .as_ref()
                .and_then(|o| o.id.clone())
                .map(|o| o.to_lowercase());
        }
        if entry.bot && (entry.accepted_at.is_some() || entry.outgoing) {
            // A new game against a bot: it counts against the daily quota
            // (the game task tells of the others, arena games and those a
            // `kaissa ctl` challenge started, once it reads the players),
            // and matchmaking leaves that bot alone for a while.
            let now = unix_now();
            self.quota.game_started(now, &id, now);
            if let Some(opponent) = &entry.opponent {
                self.matchmaker.played.record(opponent, now);
            }
        }
        entry.accepted_at = None;
        entry.outgoing = false;
        entry.info = Some(info.clone());
        self.tournament_game_started(&info);
        let Some(entry) = self.games.get_mut(&id) else {
            return;
        };
        let bot = entry.bot;
        let ctx = self.game_context(me, !self.parking.greeted.contains(&id), &info, bot);
        let summary = ctx.summary.subscribe();
        let task = game::spawn(ctx, info, self.inbox_tx.clone());
        let Some(entry) = self.games.get_mut(&id) else {
            return;
        };
        entry.summary = Some(summary);
        if matches!(self.phase, Phase::Resigning { .. }) {
            task.send(GameCommand::Resign);
        }
        entry.task = Some(task);
    }

    pub(super) fn on_game_finish(&mut self, info: GameInfo) {
        let id = info.game_id.clone();
        tracing::info!(
            game = %id,
            status = ?info.status,
            winner = info.winner.map(|w| w.as_str()),
            rating = info.rating,
            rating_diff = info.rating_diff,
            "game finished on Lichess"
        );
        self.results.record(&info, unix_now());
        self.tournament_game_finished(&info);
        if self.parking.waiting.remove(&id).is_some() {
            // Over while it waited (the opponent resigned, or mated us):
            // a task takes it up for the PGN and the goodbye.
            tracing::info!(game = %id, "parked correspondence game finished");
            self.wrap_up_parked(info);
            return;
        }
        self.parking.greeted.remove(&id);
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
    pub(super) fn game_context(
        &self,
        me: Me,
        greet: bool,
        info: &GameInfo,
        bot: bool,
    ) -> GameContext {
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
            Ok(roster::Player::External(choice)) => Some(choice),
            Ok(roster::Player::BuiltIn) => None,
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
            scheduler: self.scheduler.clone(),
            queue_len: Arc::clone(&self.queue_len),
            sources: Arc::clone(&self.sources),
            greet,
            summary: Arc::new(watch::channel(game::Summary::default()).0),
        }
    }

    /// Starts a task, holding no slot, for a parked game that ended: it
    /// reads the final state and writes the PGN.
    pub(super) fn wrap_up_parked(&mut self, info: GameInfo) {
        let Some(me) = self.me.clone() else {
            return;
        };
        let id = info.game_id.clone();
        let bot = info.opponent.as_ref().is_some_and(GameOpponent::is_bot);
        let ctx = self.game_context(me, false, &info, bot);
        let mut entry = GameEntry::new(None);
        // Its info: were it still on after all, it parks again as one.
        entry.info = Some(info.clone());
        entry.task = Some(game::spawn(ctx, info, self.inbox_tx.clone()));
        self.parking.greeted.remove(&id);
        self.games.insert(id, entry);
    }

    /// What a game task tells.
    pub(super) fn on_game_notice(&mut self, id: &str, notice: Notice) {
        match notice {
            Notice::Opponent { bot, created_at } => {
                if bot {
                    // Every game between two bots counts, as on Lichess.
                    let now = unix_now();
                    let at = created_at.map_or(now, |ms| ms / 1000);
                    self.quota.game_started(now, id, at);
                }
            }
            Notice::Done(exit) => self.game_done(id, exit),
        }
    }

    /// A game task ended: the game is over, or (correspondence) parked
    /// until our turn.
    fn game_done(&mut self, id: &str, exit: Exit) {
        if let Some(entry) = self.games.remove(id) {
            tracing::debug!(game = %id, in_use = self.slots.in_use(), ?exit, "game task ended");
            if exit == Exit::Parked && self.phase == Phase::Running {
                self.parking.greeted.insert(id.to_owned());
                let Some(mut info) = entry.info else {
                    return;
                };
                info.is_my_turn = entry.recheck;
                self.parking.waiting.insert(
                    id.to_owned(),
                    Parked {
                        info,
                        due: entry.recheck,
                    },
                );
            } else {
                self.parking.greeted.remove(id);
            }
        }
        match exit {
            Exit::Over => {
                self.playing_check
                    .over
                    .insert(id.to_owned(), Instant::now());
            }
            Exit::Dropped if self.phase == Phase::Running => {
                let at = self.playing_check.last + DROPPED_RECHECK;
                self.playing_check.soon = Some(at.max(Instant::now()));
            }
            _ => {}
        }
        self.drain_queue();
    }

    /// Deletes stale hash files and keeps their total under twice the
    /// configured table memory (the files of running games are kept).
    pub(super) fn sweep_hash_files(&self) {
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

/// A game without a clock: correspondence (or unlimited, which Lichess
/// lists with the correspondence speed).
pub(super) fn is_correspondence(info: &GameInfo) -> bool {
    info.speed == Some(Speed::Correspondence)
}
