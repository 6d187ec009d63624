//! The operator's commands from the control socket (`kaissa ctl`,
//! [`control`](crate::bot::control)), carried out on the daemon's loop:
//! the status, a challenge, matchmaking on and off, blocking a user,
//! aborting or resigning a game, joining and leaving an arena.

use super::{Daemon, GameEntry, Inbox};
use crate::bot::control::{ChallengeOrder, Order, Reply, Request};
use crate::bot::policy::arenas::Stage;
use crate::bot::policy::blocklists::BlockLists;
use crate::bot::policy::budget;
use crate::bot::policy::challenge::SlotGuard;
use crate::bot::store::state::{self, unix_now};
use crate::config::Config;
use crate::lichess::client::CreateChallenge;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tokio::time::Instant;

/// The file of the users blocked with `kaissa ctl block`.
pub const BLOCKED_FILE: &str = "ctl-blocked.json";

/// Who is blocked: the online block lists (and when they were last asked
/// for) and the users blocked with `kaissa ctl block`, kept in
/// `state_dir/ctl-blocked.json`.
pub(super) struct Blocks {
    pub(super) lists: BlockLists,
    pub(super) asked: Option<Instant>,
    pub(super) ctl: BTreeSet<String>,
    ctl_file: Option<PathBuf>,
}

impl Blocks {
    /// The lists as last fetched and the ctl blocks, from `state_dir`.
    pub(super) fn load(config: &Config, state_dir: Option<&Path>) -> Blocks {
        let ctl_file = state::path(state_dir, BLOCKED_FILE);
        Blocks {
            lists: BlockLists::load(&config.challenge.online_block_lists, state_dir),
            asked: None,
            ctl: ctl_file
                .as_deref()
                .and_then(state::load)
                .unwrap_or_default(),
            ctl_file,
        }
    }

    pub(super) fn blocks(&self, user: &str) -> bool {
        self.lists.blocks(user) || self.ctl.contains(&user.to_lowercase())
    }

    /// Every user blocked, by a list or by ctl.
    pub(super) fn all(&self) -> BTreeSet<String> {
        self.lists.users().union(&self.ctl).cloned().collect()
    }

    /// The ctl blocks, kept on disk.
    fn save(&self) {
        if let Some(file) = &self.ctl_file {
            state::save(file, &self.ctl);
        }
    }
}

/// What became of a `kaissa ctl challenge`.
#[derive(Debug)]
pub(super) enum OperatorEvent {
    /// Challenge `id` to `opponent` was created; it holds `slot` until it
    /// is settled or its game starts.
    Created {
        id: String,
        opponent: String,
        slot: SlotGuard,
    },
    /// It was answered, ended, or withdrawn after the timeout.
    Settled { id: String },
}

impl Daemon {
    pub(super) fn on_control(&mut self, Order { request, reply }: Order) {
        let answer = match request {
            Request::Status { json } => {
                let status = self.status();
                Reply::ok(if json {
                    status.to_string()
                } else {
                    status_text(&status)
                })
            }
            Request::Matchmaking(on) => {
                self.matchmaker.set_enabled(on);
                tracing::info!(on, "matchmaking switched by the control socket");
                Reply::ok(format!("matchmaking {}", if on { "on" } else { "off" }))
            }
            Request::Block(user) | Request::Unblock(user)
                if user.eq_ignore_ascii_case(&self.me_id()) =>
            {
                Reply::error(format!("{user} is this bot"))
            }
            Request::Block(user) => {
                self.blocks.ctl.insert(user.to_lowercase());
                self.blocked_changed();
                // Their waiting challenges go too.
                self.decline_queued(|c| c.is_from(&user), "blocked by ctl");
                Reply::ok(format!("{user} blocked"))
            }
            Request::Unblock(user) => {
                if self.blocks.ctl.remove(&user.to_lowercase()) {
                    self.blocked_changed();
                    Reply::ok(format!("{user} unblocked"))
                } else {
                    Reply::error(format!("{user} was not blocked here"))
                }
            }
            Request::Abort(game) | Request::Resign(game) if !self.games.contains_key(&game) => {
                Reply::error(format!("no game {game} is running"))
            }
            Request::Abort(game) => {
                let client = self.client.clone();
                tokio::spawn(async move {
                    match client.abort(&game).await {
                        Ok(()) => tracing::info!(game = %game, "aborted by the control socket"),
                        Err(e) => {
                            tracing::warn!(game = %game, "abort asked by the control socket failed: {e}")
                        }
                    }
                });
                Reply::ok("abort sent")
            }
            Request::Resign(game) => {
                let client = self.client.clone();
                tokio::spawn(async move {
                    match client.resign(&game).await {
                        Ok(()) => tracing::info!(game = %game, "resigned by the control socket"),
                        Err(e) => {
                            tracing::warn!(game = %game, "resign asked by the control socket failed: {e}")
                        }
                    }
                });
                Reply::ok("resign sent")
            }
            Request::Challenge(order) => self.challenge_for_operator(order),
            Request::TournamentJoin(entry) => {
                self.join_tournament(&entry);
                Reply::ok(format!(
                    "joining arena {} (kaissa ctl status shows how it goes)",
                    entry.id
                ))
            }
            Request::TournamentLeave(id) => {
                if self.leave_tournament(&id) {
                    Reply::ok(format!("left arena {id}"))
                } else {
                    Reply::error(format!("not in arena {id}"))
                }
            }
        };
        let _ = reply.send(answer);
    }

    fn me_id(&self) -> String {
        self.me.as_ref().map(|m| m.id.clone()).unwrap_or_default()
    }

    /// The users blocked by the lists or by `kaissa ctl` changed: kept on
    /// disk, and matchmaking leaves them alone.
    fn blocked_changed(&mut self) {
        self.blocks.save();
        self.matchmaker.set_online_blocked(&self.blocks.all());
    }

    /// Whether `user` is blocked by the lists or by `kaissa ctl`.
    pub(super) fn blocked(&self, user: &str) -> bool {
        self.blocks.blocks(user)
    }

    /// The online block lists changed.
    pub(super) fn block_lists_changed(&mut self) {
        self.blocked_changed();
    }

    /// `kaissa ctl challenge`: holds a slot while it waits, and is
    /// withdrawn when not answered in `matchmaking.challenge_timeout_secs`.
    fn challenge_for_operator(&mut self, order: ChallengeOrder) -> Reply {
        // Whether the user is a bot is not known here: a human's price.
        let now = unix_now();
        let wait = self.budget.wait(now, budget::HUMAN_COST);
        if wait > 0 {
            return Reply::error(format!(
                "Lichess's limit on challenges we create is reached \
                 ({} credits this minute, {} today): try again in {}",
                self.budget.spent(now, 60),
                self.budget.spent(now, budget::WINDOWS[1].0),
                duration_text(wait)
            ));
        }
        if order.pairs > 0 {
            let offer = CreateChallenge {
                time: order.time,
                rated: order.rated,
                color: order.color,
                variant: order.variant,
                fen: None,
            };
            self.matchmaker.plan(&order.user, offer, order.pairs);
            return Reply::ok(format!(
                "challenging {}: {} pairs of games, one at a time while no other game runs",
                order.user, order.pairs
            ));
        }
        let Some(slot) = self.slots.try_reserve() else {
            return Reply::error(
                "no free slot for a game (bot.concurrency): try again when a game ends",
            );
        };
        let timeout =
            std::time::Duration::from_secs(self.config.matchmaking.challenge_timeout_secs);
        let challenge = CreateChallenge {
            time: order.time,
            rated: order.rated,
            color: order.color,
            variant: order.variant,
            fen: None,
        };
        self.budget.spend(now, budget::HUMAN_COST);
        let client = self.client.clone();
        let user = order.user.clone();
        let inbox = self.inbox_tx.clone();
        tokio::spawn(async move {
            match client.create_challenge_kept(&user, &challenge).await {
                Ok((created, keep_alive)) => {
                    tracing::info!(challenge = %created.id, opponent = %user, "challenge sent by the control socket");
                    // The slot goes to the daemon's entry for the challenge,
                    // which its game takes over.
                    let id = created.id.clone();
                    let _ = inbox.send(Inbox::Operator(OperatorEvent::Created {
                        id: id.clone(),
                        opponent: user,
                        slot,
                    }));
                    // Held open until answered, Lichess ends it, or the
                    // timeout: then withdrawn.
                    match tokio::time::timeout(timeout, keep_alive.done()).await {
                        Ok(done) => {
                            tracing::info!(challenge = %id, done = done.as_deref().unwrap_or("-"), "operator's challenge settled")
                        }
                        Err(_) => {
                            tracing::info!(challenge = %id, timeout_s = timeout.as_secs(), "operator's challenge not answered: withdrawn");
                            if let Err(e) = client.cancel_challenge(&id).await {
                                tracing::warn!(challenge = %id, "cancelling it failed: {e}");
                            }
                        }
                    }
                    let _ = inbox.send(Inbox::Operator(OperatorEvent::Settled { id }));
                }
                Err(e) => {
                    tracing::warn!(opponent = %user, "challenge asked by the control socket failed: {e}")
                }
            }
        });
        Reply::ok(format!("challenging {}", order.user))
    }

    /// The operator's challenge was created, or settled.
    pub(super) fn on_operator_event(&mut self, event: OperatorEvent) {
        match event {
            OperatorEvent::Created { id, opponent, slot } => match self.games.get_mut(&id) {
                // Accepted, and its game started, before this: the game
                // runs on the challenge's slot if it found none free.
                Some(entry) => {
                    if entry.slot.is_none() {
                        entry.slot = Some(slot);
                    }
                }
                None => {
                    let mut entry = GameEntry::new(Some(slot));
                    entry.opponent = Some(opponent.to_lowercase());
                    entry.outgoing = true;
                    self.games.insert(id, entry);
                }
            },
            OperatorEvent::Settled { id } => {
                if self.games.get(&id).is_some_and(|e| e.task.is_none()) {
                    self.games.remove(&id);
                    self.drain_queue();
                }
            }
        }
    }

    /// The daemon as `kaissa ctl status --json` shows it; the text
    /// form is made from it ([`status_text`]).
    fn status(&self) -> serde_json::Value {
        let now = unix_now();
        let mut games: Vec<serde_json::Value> = self
            .games
            .iter()
            .filter(|(_, e)| e.task.as_ref().is_some_and(|t| !t.is_finished()))
            .map(|(id, e)| {
                let summary = e
                    .summary
                    .as_ref()
                    .map(|s| s.borrow().clone())
                    .unwrap_or_default();
                let mut game = serde_json::to_value(summary).unwrap_or_default();
                game["id"] = json!(id);
                game
            })
            .collect();
        games.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        let queue: Vec<serde_json::Value> = self
            .queue
            .iter()
            .map(|c| json!({"id": c.id, "challenger": c.challenger_label(), "rating": c.challenger_rating()}))
            .collect();
        let matchmaking = json!({
            "enabled": self.matchmaker.enabled(),
            "pending": self.matchmaker.pending().map(|p| json!({"id": p.id, "opponent": p.opponent})),
        });
        let blocked: Vec<&String> = self.blocks.ctl.iter().collect();
        let tournaments: Vec<serde_json::Value> = self
            .arenas
            .plan
            .iter()
            .map(|a| {
                let stage = match a.stage {
                    Stage::Unknown => "unknown".to_owned(),
                    Stage::Running => "running".to_owned(),
                    Stage::Upcoming(at) => format!(
                        "starts in {}",
                        duration_text(
                            at.saturating_duration_since(tokio::time::Instant::now())
                                .as_secs()
                        )
                    ),
                };
                json!({"id": a.entry.id, "name": a.name, "origin": a.origin, "stage": stage,
                "joined": a.joined, "team": a.entry.team, "game": a.game, "games": a.games,
                "missed": a.missed, "refused": a.refused, "held": a.held,
                "retry_in_s": a.retry_at().map(|t| {
                    t.saturating_duration_since(tokio::time::Instant::now()).as_secs()
                })})
            })
            .collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_secs": self.started.elapsed().as_secs(),
            "concurrency": self.slots.total(),
            "slots_in_use": self.slots.in_use(),
            "games": games,
            "queue": queue,
            "bot_games_today": self.quota.count(now),
            "bot_games_per_day": self.quota.per_day(now),
            "challenge_credits": {"minute": self.budget.spent(now, 60),
                                  "day": self.budget.spent(now, budget::WINDOWS[1].0)},
            "matchmaking": matchmaking,
            "parked": self.parking.waiting.len(),
            "tournaments": tournaments,
            "slots_kept_for_arenas": self.slots.kept(),
            "blocked": blocked,
            "online_blocked": self.blocks.lists.users().len(),
            "results": self.results.recent(50),
            "ratings": self.results.ratings(),
        })
    }
}

/// `kaissa ctl status` as text, from its JSON form.
fn status_text(status: &serde_json::Value) -> String {
    let count = |key: &str| status[key].as_array().map_or(0, Vec::len);
    let kept = match status["slots_kept_for_arenas"].as_u64().unwrap_or(0) {
        0 => String::new(),
        n => format!(", {n} kept for arenas"),
    };
    let mut text = format!(
        "kaissa {}, up {}\nslots: {} of {} in use{kept}; parked correspondence games: {}\n",
        status["version"].as_str().unwrap_or(""),
        duration_text(status["uptime_secs"].as_u64().unwrap_or(0)),
        status["slots_in_use"],
        status["concurrency"],
        status["parked"],
    );
    text.push_str(&format!("games: {}\n", count("games")));
    for g in status["games"].as_array().into_iter().flatten() {
        text.push_str(&game_line(g));
    }
    text.push_str(&format!("queue: {}\n", count("queue")));
    for c in status["queue"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  {} from {}\n",
            c["id"].as_str().unwrap_or(""),
            c["challenger"].as_str().unwrap_or("")
        ));
    }
    text.push_str(&format!(
        "bot games today: {} of {}\n",
        status["bot_games_today"], status["bot_games_per_day"]
    ));
    let [(_, per_minute), (_, per_day)] = budget::WINDOWS;
    let credits = &status["challenge_credits"];
    text.push_str(&format!(
        "challenges sent: {} of {per_minute} credits this minute, {} of {per_day} today\n",
        credits["minute"], credits["day"],
    ));
    let matchmaking = &status["matchmaking"];
    text.push_str(&format!(
        "matchmaking: {}{}\n",
        if matchmaking["enabled"] == true {
            "on"
        } else {
            "off"
        },
        match &matchmaking["pending"] {
            serde_json::Value::Null => String::new(),
            p => format!(
                ", challenge {} to {} pending",
                p["id"].as_str().unwrap_or(""),
                p["opponent"].as_str().unwrap_or("")
            ),
        }
    ));
    text.push_str(&format!("tournaments: {}\n", count("tournaments")));
    for t in status["tournaments"].as_array().into_iter().flatten() {
        text.push_str(&arena_line(t));
    }
    let blocked: Vec<&str> = status["blocked"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str())
        .collect();
    text.push_str(&format!(
        "blocked: {} by kaissa ctl{}, {} by online lists",
        blocked.len(),
        if blocked.is_empty() {
            String::new()
        } else {
            format!(" ({})", blocked.join(", "))
        },
        status["online_blocked"]
    ));
    text
}

/// One game of `status`, as text.
fn game_line(g: &serde_json::Value) -> String {
    let clock = |v: &serde_json::Value| {
        v.as_u64()
            .map_or("-".to_owned(), |ms| duration_text(ms / 1000))
    };
    format!(
        "  {} vs {} ({} {} {}{}): {} plies, clocks {} / {}, score {}\n",
        g["id"].as_str().unwrap_or(""),
        g["opponent"].as_str().unwrap_or(""),
        g["color"].as_str().unwrap_or(""),
        g["speed"].as_str().unwrap_or(""),
        g["variant"].as_str().unwrap_or(""),
        if g["rated"] == true { ", rated" } else { "" },
        g["plies"],
        clock(&g["our_clock_ms"]),
        clock(&g["their_clock_ms"]),
        g["score"].as_str().unwrap_or("-"),
    )
}

/// One arena of `status`, as text.
fn arena_line(t: &serde_json::Value) -> String {
    let state = match (&t["refused"], &t["game"], t["joined"] == true) {
        (serde_json::Value::String(why), _, _) => format!("refused for good: {why}"),
        _ if t["held"].is_string() => format!(
            "held off: {}; joining again in {} s",
            t["held"].as_str().unwrap_or(""),
            t["retry_in_s"]
        ),
        (_, serde_json::Value::String(game), _) => format!("playing {game}"),
        (_, _, true) => "waiting for a pairing".to_owned(),
        (_, _, false) => "joining".to_owned(),
    };
    format!(
        "  {} {} ({}, {}): {}; {} game(s), {} missed\n",
        t["id"].as_str().unwrap_or(""),
        t["name"].as_str().filter(|n| !n.is_empty()).unwrap_or("-"),
        t["origin"].as_str().unwrap_or(""),
        t["stage"].as_str().unwrap_or(""),
        state,
        t["games"],
        t["missed"],
    )
}

/// `1h02m03s`, `4m05s`, `7s`.
fn duration_text(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}s")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}
