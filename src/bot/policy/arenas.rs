//! The arena tournaments the bot plays in: which arenas it is in, how
//! each stands (not started, running, over), when to join, the slots they
//! keep, and what a restart hands over. Pure state: the daemon
//! (`daemon/arena_requests.rs`) sends the requests this asks for and feeds
//! back what came of them.
//!
//! **Pairing.** lila pairs the bots of an arena that admits bots by
//! itself: every bot that is a player (not withdrawn) and not in a game of
//! the arena is in its waiting pool. So the bot joins once, before the
//! start or when it finds the arena running (with `pairMeAsap`, which
//! puts it in the pool at once), and joins again only when Lichess paused
//! it: a missed pairing (it did not move in time) or a withdraw. A join
//! refused for the pause is tried again after a growing wait. Joins are
//! counted: lila allows 30 in 10 minutes per account, and kaissa keeps
//! within that (an arena that would go over waits, and says so).
//!
//! **Slots.** Each arena the bot waits in keeps one of `bot.concurrency`'s
//! slots free of challenges (an arena gives a player one game at a time);
//! its game then takes that slot.
//!
//! **Where arenas come from**: `[[tournaments.arenas]]` (joined at every
//! start, unless Lichess says we are a player already),
//! `kaissa ctl tournament join`, and arenas joined elsewhere with the
//! bot's account, noticed at their first game. The last two are kept in
//! `state_dir/tournaments.json` across a restart; a stop withdraws from
//! every arena (`tournaments.leave_at_shutdown`) and forgets them.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::config::{ArenaEntry, TournamentsConfig};
use crate::lichess::model::ArenaTournament;

/// The state file of the arenas joined at run time.
pub const STATE_FILE: &str = "tournaments.json";
/// After a failed request (the network, a 5xx), the next try.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// lila's pause after a withdraw or a missed pairing lasts 10 s at first,
/// longer after each (up to 120 s); a join refused for it is tried again
/// after these, doubling.
const FIRST_PAUSE_RETRY: Duration = Duration::from_secs(10);
const MAX_PAUSE_RETRY: Duration = Duration::from_secs(120);
/// lila's limit on arena joins per account (`tournament.user.join`): 30
/// in 10 minutes.
pub const JOIN_LIMIT: (usize, Duration) = (30, Duration::from_secs(600));

/// Where the bot learned of an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// `[[tournaments.arenas]]`.
    Config,
    /// `kaissa ctl tournament join`.
    Ctl,
    /// Joined elsewhere; seen at a game of it.
    Noticed,
}

/// How an arena stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Not read yet.
    Unknown,
    /// Starts at this instant.
    Upcoming(Instant),
    Running,
}

/// One arena the bot is in (or joining).
#[derive(Clone, PartialEq, Eq)]
pub struct Arena {
    /// Its id, team and password (sent with each join, never logged or
    /// shown: `ArenaEntry`'s `Debug` hides it).
    pub entry: ArenaEntry,
    pub origin: Origin,
    /// Its name, once read.
    pub name: String,
    pub stage: Stage,
    /// Lichess took our join (we are a player, not paused).
    pub joined: bool,
    /// The team was joined (or need not be).
    team_ready: bool,
    /// The game of the arena under way.
    pub game: Option<String>,
    /// Games of it played in this run, and pairings missed.
    pub games: u32,
    pub missed: u32,
    /// A request about it is under way.
    in_flight: bool,
    /// When its state is read next.
    next_check: Instant,
    /// No request before this (after a failure).
    not_before: Option<Instant>,
    /// Lichess refused to let us in, and why: no more tries.
    pub refused: Option<String>,
    /// Lichess holds us off for now (a pause, a rate limit), and why:
    /// tried again at `not_before`.
    pub held: Option<String>,
    /// The wait after the next join refused for a pause.
    pause_retry: Duration,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("entry", &self.entry)
            .field("origin", &self.origin)
            .field("stage", &self.stage)
            .field("joined", &self.joined)
            .field("game", &self.game)
            .field("refused", &self.refused)
            .field("held", &self.held)
            .finish()
    }
}

impl Arena {
    fn new(entry: &ArenaEntry, origin: Origin, now: Instant) -> Arena {
        Arena {
            entry: entry.clone(),
            origin,
            name: String::new(),
            stage: Stage::Unknown,
            joined: false,
            team_ready: !entry.join_team,
            game: None,
            games: 0,
            missed: 0,
            in_flight: false,
            next_check: now,
            not_before: None,
            refused: None,
            held: None,
            pause_retry: FIRST_PAUSE_RETRY,
        }
    }

    /// A read of the arena (`t`) came: its name and stage, and whether
    /// Lichess paused us or we are a player already; when to read it
    /// next. True when its conditions refuse us (nothing more to do).
    fn read(
        &mut self,
        id: &str,
        t: &ArenaTournament,
        check_every: Duration,
        now: Instant,
        notes: &mut Vec<Note>,
    ) -> bool {
        if t.verdicts.as_ref().is_some_and(|v| !v.accepted) && !self.joined {
            self.refused = Some("its conditions do not admit this account".to_owned());
            notes.push(Note::Refused {
                id: id.to_owned(),
                why: "its conditions do not admit this account".to_owned(),
            });
            return true;
        }
        let mut next = check_every;
        if t.running() {
            if self.stage != Stage::Running && self.stage != Stage::Unknown {
                notes.push(Note::Started(id.to_owned()));
            }
            self.stage = Stage::Running;
        } else if let Some(secs) = t.seconds_to_start.filter(|&s| s > 0) {
            let start = now + Duration::from_secs(secs);
            self.stage = Stage::Upcoming(start);
            next = next.min(Duration::from_secs(secs.max(1)));
        }
        if let Some(me) = &t.me {
            if me.withdraw && self.joined && self.game.is_none() {
                // Paused by Lichess (a missed pairing): join again.
                self.joined = false;
                notes.push(Note::PausedByLichess(id.to_owned()));
            }
            if !me.withdraw && !self.joined && self.team_ready {
                // A player already (joined elsewhere, or before a
                // restart): Lichess pairs us, no join needed.
                self.joined = true;
            }
        }
        self.next_check = now + next;
        false
    }

    /// Lichess holds us off for `after` (`why`): the note to log.
    fn hold(&mut self, why: String, after: Duration, now: Instant) -> Note {
        self.not_before = Some(now + after);
        self.held = Some(why.clone());
        Note::Held {
            id: self.entry.id.clone(),
            why,
            after,
        }
    }

    /// When it is tried again, if Lichess holds us off.
    pub fn retry_at(&self) -> Option<Instant> {
        self.held.as_ref().and(self.not_before)
    }

    /// It waits for a pairing: running (or starting), ours, no game of it
    /// under way.
    fn waiting(&self) -> bool {
        self.refused.is_none() && self.game.is_none() && self.stage == Stage::Running
    }
}

/// A request the daemon sends for an arena.
#[derive(Clone, PartialEq, Eq)]
pub enum Action {
    /// `GET /api/tournament/{id}`.
    Check(String),
    /// `POST /team/{team}/join` for the arena `id`.
    JoinTeam {
        id: String,
        team: String,
        password: Option<String>,
    },
    /// `POST /api/tournament/{id}/join`.
    Join {
        id: String,
        team: Option<String>,
        password: Option<String>,
        pair_me_asap: bool,
    },
    /// `POST /api/tournament/{id}/withdraw`.
    Withdraw(String),
}

impl std::fmt::Debug for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Check(id) => write!(f, "Check({id})"),
            Action::JoinTeam { id, team, .. } => write!(f, "JoinTeam({id}, {team})"),
            Action::Join {
                id, pair_me_asap, ..
            } => write!(f, "Join({id}, pair_me_asap: {pair_me_asap})"),
            Action::Withdraw(id) => write!(f, "Withdraw({id})"),
        }
    }
}

/// What came of a request.
#[derive(Debug)]
pub enum Outcome {
    Checked(Result<ArenaTournament, Failure>),
    TeamJoined(Result<(), Failure>),
    Joined {
        pair_me_asap: bool,
        result: Result<(), Failure>,
    },
    Withdrawn(Result<(), Failure>),
}

/// Why a request failed, as far as the arena's fate goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No such tournament (404, or lila's "no longer exists").
    Gone,
    /// Lichess said no for good (a 4xx with its reason): a wrong entry
    /// code, a team battle without the team, conditions not met, a ban,
    /// a missing scope.
    Refused(String),
    /// lila's pause after a withdraw or a missed pairing is not over:
    /// joined again after a growing wait.
    Paused(String),
    /// A rate limit (a 429, or lila's "joining too many tournaments"):
    /// tried again after `after` (from the answer where it says).
    Limited { why: String, after: Duration },
    /// The network, a 5xx: try again later.
    Transient(String),
}

/// What happened to an arena, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Joined {
        id: String,
        pair_me_asap: bool,
    },
    Started(String),
    Finished(String),
    Gone(String),
    Refused {
        id: String,
        why: String,
    },
    PausedByLichess(String),
    /// Held off (a pause, a rate limit): joined again after `after`.
    Held {
        id: String,
        why: String,
        after: Duration,
    },
    Failed {
        id: String,
        why: String,
    },
}

/// The arenas, by id.
#[derive(Debug)]
pub struct Tournaments {
    arenas: BTreeMap<String, Arena>,
    /// The joins sent in the last [`JOIN_LIMIT`] window, oldest first.
    joins: VecDeque<Instant>,
    check_every: Duration,
    /// The list a restart hands over changed since it was last saved.
    dirty: bool,
}

impl Tournaments {
    /// The configured arenas, and those a previous run handed over.
    pub fn new(config: &TournamentsConfig, saved: Vec<(ArenaEntry, Origin)>) -> Tournaments {
        let now = Instant::now();
        let mut arenas = BTreeMap::new();
        for entry in &config.arenas {
            arenas.insert(entry.id.clone(), Arena::new(entry, Origin::Config, now));
        }
        for (entry, origin) in saved {
            if crate::config::is_tournament_id(&entry.id) {
                arenas
                    .entry(entry.id.clone())
                    .or_insert_with(|| Arena::new(&entry, origin, now));
            }
        }
        Tournaments {
            arenas,
            joins: VecDeque::new(),
            check_every: Duration::from_secs(config.check_every_secs),
            dirty: false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arena> {
        self.arenas.values()
    }

    pub fn get(&self, id: &str) -> Option<&Arena> {
        self.arenas.get(id)
    }

    pub fn is_empty(&self) -> bool {
        self.arenas.is_empty()
    }

    /// Adds an arena (`kaissa ctl tournament join`); one already there
    /// gets the new team and password and is tried again.
    pub fn add(&mut self, entry: &ArenaEntry, origin: Origin) {
        let now = Instant::now();
        match self.arenas.get_mut(&entry.id) {
            Some(arena) => {
                arena.entry = entry.clone();
                arena.team_ready = !entry.join_team;
                arena.refused = None;
                arena.held = None;
                arena.joined = false;
                arena.not_before = None;
                arena.next_check = now;
            }
            None => {
                self.arenas
                    .insert(entry.id.clone(), Arena::new(entry, origin, now));
            }
        }
        self.dirty = true;
    }

    /// Forgets an arena (`kaissa ctl tournament leave`): the withdraw to
    /// send, if we were in it.
    pub fn remove(&mut self, id: &str) -> Option<Action> {
        let arena = self.arenas.remove(id)?;
        self.dirty = true;
        Some(Action::Withdraw(arena.entry.id))
    }

    /// A game of arena `id` started: an arena we did not know was joined
    /// elsewhere.
    pub fn game_started(&mut self, id: &str, game: &str) -> bool {
        let noticed = !self.arenas.contains_key(id);
        if noticed {
            let entry = ArenaEntry {
                id: id.to_owned(),
                ..ArenaEntry::default()
            };
            self.arenas.insert(
                id.to_owned(),
                Arena::new(&entry, Origin::Noticed, Instant::now()),
            );
            self.dirty = true;
        }
        if let Some(arena) = self.arenas.get_mut(id) {
            arena.game = Some(game.to_owned());
            arena.stage = Stage::Running;
            arena.joined = true;
            arena.refused = None;
        }
        noticed
    }

    /// Joins sent in the window before `now` (lila's limit counts them).
    pub fn joins_sent(&mut self, now: Instant) -> usize {
        let (_, window) = JOIN_LIMIT;
        while self
            .joins
            .front()
            .is_some_and(|&at| now.duration_since(at) >= window)
        {
            self.joins.pop_front();
        }
        self.joins.len()
    }

    /// A game of arena `id` ended; `missed`: we did not move in time, and
    /// Lichess withdrew us: we join again (Lichess pairs us again by
    /// itself otherwise).
    pub fn game_over(&mut self, id: &str, game: &str, missed: bool) {
        let Some(arena) = self.arenas.get_mut(id) else {
            return;
        };
        if arena.game.as_deref() == Some(game) {
            arena.game = None;
        }
        if missed {
            arena.missed += 1;
            arena.joined = false;
        } else {
            arena.games += 1;
        }
    }

    /// The slots kept free for arenas: one for each it waits in.
    pub fn kept_slots(&self) -> usize {
        self.arenas
            .values()
            .filter(|a| a.waiting() && a.team_ready)
            .count()
    }

    /// The requests due now. `free`: a slot is free for an arena game;
    /// without one a running arena is not joined (Lichess would pair us
    /// at once).
    pub fn due(&mut self, now: Instant, free: bool) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut joins = self.joins_sent(now);
        let (limit, window) = JOIN_LIMIT;
        for arena in self.arenas.values_mut() {
            if arena.in_flight
                || arena.refused.is_some()
                || arena.not_before.is_some_and(|t| now < t)
            {
                continue;
            }
            let starting = matches!(arena.stage, Stage::Upcoming(at) if now >= at);
            let running = arena.stage == Stage::Running;
            let entry = &arena.entry;
            // At its start it is read: a read finds a pause, and says
            // whether we are a player already.
            let action = if now >= arena.next_check || arena.stage == Stage::Unknown || starting {
                Action::Check(entry.id.clone())
            } else if !arena.team_ready {
                Action::JoinTeam {
                    id: entry.id.clone(),
                    team: entry.team.clone().unwrap_or_default(),
                    password: entry.password.clone(),
                }
            } else if !arena.joined && (free || !running) {
                if joins >= limit {
                    // Kept within lila's limit: tried when the oldest
                    // join leaves the window.
                    let oldest = self.joins.front().copied().unwrap_or(now);
                    let after = (oldest + window).saturating_duration_since(now);
                    arena.hold(
                        format!(
                            "keeping within Lichess's limit of {limit} joins in {} minutes",
                            window.as_secs() / 60
                        ),
                        after.max(Duration::from_secs(1)),
                        now,
                    );
                    continue;
                }
                joins += 1;
                self.joins.push_back(now);
                Action::Join {
                    id: entry.id.clone(),
                    team: entry.team.clone(),
                    password: entry.password.clone(),
                    pair_me_asap: running,
                }
            } else {
                continue;
            };
            arena.in_flight = true;
            actions.push(action);
        }
        actions
    }

    /// What came of a request about arena `id`, and what to log.
    pub fn outcome(&mut self, id: &str, outcome: Outcome, now: Instant) -> Vec<Note> {
        let mut notes = Vec::new();
        let Some(arena) = self.arenas.get_mut(id) else {
            return notes;
        };
        arena.in_flight = false;
        let failure = match outcome {
            Outcome::Checked(Ok(t)) => {
                if !t.full_name.is_empty() {
                    arena.name = t.full_name.clone();
                }
                if t.is_finished {
                    self.arenas.remove(id);
                    self.dirty = true;
                    notes.push(Note::Finished(id.to_owned()));
                    return notes;
                }
                if arena.read(id, &t, self.check_every, now, &mut notes) {
                    return notes;
                }
                None
            }
            Outcome::Checked(Err(f)) => {
                arena.next_check = now + RETRY_AFTER;
                Some(f)
            }
            Outcome::TeamJoined(Ok(())) => {
                arena.team_ready = true;
                None
            }
            Outcome::TeamJoined(Err(f)) => Some(f),
            Outcome::Joined {
                pair_me_asap,
                result: Ok(()),
            } => {
                if !arena.joined {
                    notes.push(Note::Joined {
                        id: id.to_owned(),
                        pair_me_asap,
                    });
                }
                arena.joined = true;
                arena.pause_retry = FIRST_PAUSE_RETRY;
                None
            }
            Outcome::Joined { result: Err(f), .. } => Some(f),
            Outcome::Withdrawn(_) => None,
        };
        match failure {
            None => {
                arena.not_before = None;
                arena.held = None;
            }
            Some(Failure::Gone) => {
                self.arenas.remove(id);
                self.dirty = true;
                notes.push(Note::Gone(id.to_owned()));
            }
            Some(Failure::Refused(why)) => {
                arena.refused = Some(why.clone());
                notes.push(Note::Refused {
                    id: id.to_owned(),
                    why,
                });
            }
            Some(Failure::Paused(why)) => {
                let after = arena.pause_retry;
                arena.pause_retry = (after * 2).min(MAX_PAUSE_RETRY);
                notes.push(arena.hold(why, after, now));
            }
            Some(Failure::Limited { why, after }) => notes.push(arena.hold(why, after, now)),
            Some(Failure::Transient(why)) => {
                arena.not_before = Some(now + RETRY_AFTER);
                notes.push(Note::Failed {
                    id: id.to_owned(),
                    why,
                });
            }
        }
        notes
    }

    /// Withdraws from every arena we are in (a stop); the run-time ones
    /// are forgotten.
    pub fn leave_all(&mut self) -> Vec<Action> {
        let actions = self
            .arenas
            .values()
            .filter(|a| a.refused.is_none())
            .map(|a| Action::Withdraw(a.entry.id.clone()))
            .collect();
        self.arenas.clear();
        self.dirty = true;
        actions
    }

    /// The arenas a restart hands over (those not in the configuration),
    /// when that list changed since the last call.
    pub fn to_save(&mut self) -> Option<Vec<SavedArena>> {
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        Some(
            self.arenas
                .values()
                .filter(|a| a.origin != Origin::Config)
                .map(|a| SavedArena {
                    entry: a.entry.clone(),
                    origin: a.origin,
                })
                .collect(),
        )
    }
}

/// An arena in the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedArena {
    #[serde(flatten)]
    pub entry: ArenaEntry,
    pub origin: Origin,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(ids: &[&str]) -> TournamentsConfig {
        TournamentsConfig {
            arenas: ids
                .iter()
                .map(|id| ArenaEntry {
                    id: (*id).to_owned(),
                    password: Some("pw".to_owned()),
                    ..ArenaEntry::default()
                })
                .collect(),
            ..TournamentsConfig::default()
        }
    }

    fn arena(json: serde_json::Value) -> ArenaTournament {
        let mut base = serde_json::json!({"id": "arena001", "fullName": "Bot Arena",
            "clock": {"limit": 60, "increment": 0}, "isFinished": false, "nbPlayers": 2});
        for (k, v) in json.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    /// Lichess took a join of arena001.
    fn joined(t: &mut Tournaments, pair_me_asap: bool, now: Instant) -> Vec<Note> {
        let result = Ok(());
        let outcome = Outcome::Joined {
            pair_me_asap,
            result,
        };
        t.outcome("arena001", outcome, now)
    }

    /// Lichess's answer to a read of arena001.
    fn read(t: &mut Tournaments, json: serde_json::Value, now: Instant) -> Vec<Note> {
        t.outcome("arena001", Outcome::Checked(Ok(arena(json))), now)
    }

    fn join(pair: bool) -> Action {
        Action::Join {
            id: "arena001".to_owned(),
            team: None,
            password: Some("pw".to_owned()),
            pair_me_asap: pair,
        }
    }

    #[test]
    fn an_arena_is_read_then_joined_once() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let now = Instant::now();
        assert_eq!(t.due(now, true), [Action::Check("arena001".to_owned())]);
        assert_eq!(t.due(now, true), [], "one request at a time");
        let notes = read(&mut t, serde_json::json!({"isStarted": true}), now);
        assert_eq!(notes, []);
        assert_eq!(t.kept_slots(), 1, "a running arena keeps a slot");
        // Running and no slot free: not joined (Lichess would pair us).
        assert_eq!(t.due(now, false), []);
        assert_eq!(t.due(now, true), [join(true)]);
        joined(&mut t, true, now);
        // Lichess pairs us by itself from now on: no more joins.
        for secs in [10, 40, 100, 1000] {
            let later = now + Duration::from_secs(secs);
            for action in t.due(later, true) {
                assert_eq!(action, Action::Check("arena001".to_owned()));
                read(&mut t, serde_json::json!({"isStarted": true}), later);
            }
        }
        // A game: its slot is the game's; over, still no join.
        let later = now + Duration::from_secs(1000);
        assert!(!t.game_started("arena001", "game0001"));
        assert_eq!(t.kept_slots(), 0);
        t.game_over("arena001", "game0001", false);
        assert_eq!(t.kept_slots(), 1);
        assert_eq!(t.due(later, true), []);
        assert_eq!(t.get("arena001").unwrap().games, 1);
    }

    #[test]
    fn an_upcoming_arena_is_joined_early_and_not_again_at_its_start() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let now = Instant::now();
        t.due(now, true);
        read(&mut t, serde_json::json!({"secondsToStart": 120}), now);
        assert_eq!(t.kept_slots(), 0, "nothing kept before the start");
        assert_eq!(t.due(now, false), [join(false)], "registered early");
        joined(&mut t, false, now);
        assert_eq!(t.due(now + Duration::from_secs(30), true), []);
        // The start: read, and Lichess pairs us from there.
        let start = now + Duration::from_secs(120);
        assert_eq!(t.due(start, true), [Action::Check("arena001".to_owned())]);
        let notes = read(&mut t, serde_json::json!({"isStarted": true}), start);
        assert_eq!(notes, [Note::Started("arena001".to_owned())]);
        assert_eq!(t.due(start, true), []);
        assert_eq!(t.kept_slots(), 1);
    }

    #[test]
    fn a_missed_pairing_and_a_pause_bring_a_new_join() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let now = Instant::now();
        t.due(now, true);
        read(&mut t, serde_json::json!({"isStarted": true}), now);
        t.due(now, true);
        joined(&mut t, true, now);
        t.game_started("arena001", "game0001");
        t.game_over("arena001", "game0001", true);
        assert_eq!(t.get("arena001").unwrap().missed, 1);
        assert_eq!(t.due(now, true), [join(true)]);
        joined(&mut t, true, now);
        // Lichess says we are paused (seen on a read): joined again.
        let check = now + Duration::from_secs(60);
        assert_eq!(t.due(check, true), [Action::Check("arena001".to_owned())]);
        let me = serde_json::json!({"isStarted": true, "me": {"rank": 3, "withdraw": true}});
        let notes = read(&mut t, me, check);
        assert_eq!(notes, [Note::PausedByLichess("arena001".to_owned())]);
        assert_eq!(t.due(check, true), [join(true)]);
    }

    #[test]
    fn a_player_already_is_not_joined_again() {
        // After a restart, Lichess says we are a player: no join.
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let now = Instant::now();
        t.due(now, true);
        let me = serde_json::json!({"isStarted": true, "me": {"rank": 3, "withdraw": false}});
        read(&mut t, me, now);
        assert!(t.get("arena001").unwrap().joined);
        assert_eq!(t.due(now, true), []);
    }

    #[test]
    fn joins_keep_within_lichess_limit() {
        let (limit, window) = JOIN_LIMIT;
        let ids: Vec<String> = (0..limit + 2).map(|i| format!("arena{i:03}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut t = Tournaments::new(&config(&refs), Vec::new());
        let now = Instant::now();
        t.due(now, true);
        for id in &ids {
            t.outcome(
                id,
                Outcome::Checked(Ok(arena(serde_json::json!({"isStarted": true})))),
                now,
            );
        }
        let joins = t.due(now, true);
        assert_eq!(joins.len(), limit, "{joins:?}");
        assert_eq!(t.joins_sent(now), limit);
        let held: Vec<_> = t.iter().filter(|a| a.held.is_some()).collect();
        assert_eq!(held.len(), 2);
        assert!(
            held[0]
                .held
                .as_deref()
                .unwrap()
                .contains("30 joins in 10 minutes")
        );
        assert_eq!(held[0].retry_at(), Some(now + window));
        // When the window has passed (and the arenas are read again), the
        // two are joined.
        let later = now + window;
        for action in t.due(later, true) {
            let Action::Check(id) = action else {
                panic!("{action:?}");
            };
            t.outcome(
                &id,
                Outcome::Checked(Ok(arena(serde_json::json!({"isStarted": true})))),
                later,
            );
        }
        let actions = t.due(later, true);
        assert_eq!(actions.len(), 2, "{actions:?}");
        assert!(actions.iter().all(|a| matches!(a, Action::Join { .. })));
        assert_eq!(t.joins_sent(later), 2);
    }

    #[test]
    fn refusals_failures_and_the_end() {
        let mut t = Tournaments::new(&config(&["arena001", "arena002"]), Vec::new());
        let now = Instant::now();
        assert_eq!(t.due(now, true).len(), 2);
        // A wrong password: no more tries, no slot kept.
        read(&mut t, serde_json::json!({"isStarted": true}), now);
        t.due(now, true);
        let notes = t.outcome(
            "arena001",
            Outcome::Joined {
                pair_me_asap: true,
                result: Err(Failure::Refused("Wrong entry code".to_owned())),
            },
            now,
        );
        assert!(matches!(&notes[..], [Note::Refused { .. }]));
        assert_eq!(t.kept_slots(), 0);
        assert_eq!(t.due(now + Duration::from_secs(3600), true), []);
        // A network failure: tried again after RETRY_AFTER.
        t.outcome(
            "arena002",
            Outcome::Checked(Err(Failure::Transient("timeout".to_owned()))),
            now,
        );
        assert_eq!(t.due(now + Duration::from_secs(5), true), []);
        assert_eq!(
            t.due(now + RETRY_AFTER, true),
            [Action::Check("arena002".to_owned())]
        );
        // Over: forgotten.
        let notes = t.outcome(
            "arena002",
            Outcome::Checked(Ok(arena(serde_json::json!({"isFinished": true})))),
            now,
        );
        assert_eq!(notes, [Note::Finished("arena002".to_owned())]);
        assert!(t.get("arena002").is_none());
    }

    #[test]
    fn a_pause_and_a_rate_limit_hold_the_join_off_for_a_while() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let mut now = Instant::now();
        t.due(now, true);
        read(&mut t, serde_json::json!({"isStarted": true}), now);
        // The join due now (its state read first when that is due too).
        let join_due = |t: &mut Tournaments, now: Instant| loop {
            match &t.due(now, true)[..] {
                [Action::Join { .. }] => return,
                [Action::Check(_)] => {
                    read(t, serde_json::json!({"isStarted": true}), now);
                }
                other => panic!("{other:?}"),
            }
        };
        let refuse = |t: &mut Tournaments, failure: Failure, now: Instant| {
            join_due(t, now);
            t.outcome(
                "arena001",
                Outcome::Joined {
                    pair_me_asap: true,
                    result: Err(failure),
                },
                now,
            )
        };
        // lila's pause: 10 s, then longer, up to 120 s.
        for wait in [10, 20, 40, 80, 120, 120] {
            let notes = refuse(&mut t, Failure::Paused("paused".to_owned()), now);
            let after = Duration::from_secs(wait);
            assert!(matches!(&notes[..], [Note::Held { after: a, .. }] if *a == after));
            assert_eq!(t.get("arena001").unwrap().held.as_deref(), Some("paused"));
            assert_eq!(t.due(now + after - Duration::from_millis(1), true), []);
            now += after;
        }
        // A rate limit: what the answer says.
        let limited = Failure::Limited {
            why: "rate limited".to_owned(),
            after: Duration::from_secs(7),
        };
        refuse(&mut t, limited, now);
        assert_eq!(t.due(now + Duration::from_secs(6), true), []);
        now += Duration::from_secs(7);
        // In at last: no longer held, and the pause wait starts over.
        join_due(&mut t, now);
        t.outcome(
            "arena001",
            Outcome::Joined {
                pair_me_asap: true,
                result: Ok(()),
            },
            now,
        );
        let arena = t.get("arena001").unwrap();
        assert_eq!((arena.held.as_ref(), arena.refused.as_ref()), (None, None));
        assert_eq!(arena.pause_retry, FIRST_PAUSE_RETRY);
    }

    #[test]
    fn noticed_and_ctl_arenas_are_handed_over_config_ones_are_not() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        assert!(t.game_started("noticed1", "game0001"));
        t.add(
            &ArenaEntry {
                id: "byctl001".to_owned(),
                team: Some("team-a".to_owned()),
                password: None,
                join_team: true,
            },
            Origin::Ctl,
        );
        let saved = t.to_save().unwrap();
        assert_eq!(
            saved
                .iter()
                .map(|s| (s.entry.id.as_str(), s.origin))
                .collect::<Vec<_>>(),
            [("byctl001", Origin::Ctl), ("noticed1", Origin::Noticed)]
        );
        assert_eq!(t.to_save(), None, "saved once per change");
        let entries = saved.into_iter().map(|s| (s.entry, s.origin)).collect();
        let mut next = Tournaments::new(&config(&["arena001"]), entries);
        assert_eq!(next.iter().count(), 3);
        // The team is joined before the arena.
        let now = Instant::now();
        let actions = next.due(now, true);
        assert_eq!(actions.len(), 3, "{actions:?}");
        next.outcome(
            "byctl001",
            Outcome::Checked(Ok(arena(serde_json::json!({"isStarted": true})))),
            now,
        );
        assert!(matches!(
            &next.due(now, true)[..],
            [Action::JoinTeam { team, .. }] if team == "team-a"
        ));
        assert_eq!(
            next.remove("byctl001"),
            Some(Action::Withdraw("byctl001".to_owned()))
        );
        let leave = next.leave_all();
        assert_eq!(leave.len(), 2);
        assert_eq!(next.to_save(), Some(Vec::new()));
    }

    #[test]
    fn the_password_is_never_shown() {
        let mut t = Tournaments::new(&config(&["arena001"]), Vec::new());
        let text = format!("{t:?} {:?}", t.due(Instant::now(), true));
        assert!(!text.contains("pw"), "{text}");
        let join = format!("{:?}", join(true));
        assert!(!join.contains("pw"), "{join}");
    }
}
