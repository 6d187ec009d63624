//! Arena tournaments as lila runs them for a bot account: `GET
//! /api/tournament/{id}` (the spec's `ArenaTournamentFull` with lila's
//! `isStarted` and `me`), `POST /api/tournament/{id}/join` (password or
//! entry code, the team of a team battle, `pairMeAsap`; a join also ends
//! a pause; 30 joins in 10 minutes per account, then a 429), `POST
//! /api/tournament/{id}/withdraw` (leave before the start, pause after)
//! and `POST /team/{id}/join`. The arena calls need the token's
//! `tournament:write` or `bot:play` scope (lila takes either), the team
//! join `team:write`; else 403.
//!
//! Pairings: lila puts every bot of an arena that admits bots in its
//! waiting pool by itself (`StartedOrganizer.fetchWaitingBots`): a player,
//! not withdrawn (paused), not in a game of the arena, the arena running.
//! A test pairs the bot with [`FakeLichess::pair_arena`] (refused when the
//! bot is not in the pool), or lets the arena pair it whenever it is
//! ([`ArenaSpec::auto_pair`], as lila's pairing waves). A player who does
//! not start a pairing loses it (`noStart`) and is paused, as lila does.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use shakmaty::Color;
use tokio::time::Instant;

use super::FakeLichess;
use super::routes::{error, not_found, ok, parse_form};
use super::setup::{AutoPlay, ChallengeSpec, FakeTime, FakeVariant, Opponent};
use super::world::{App, World};

/// lila's `tournament.user.join` limit: 30 joins in 10 minutes.
const JOIN_LIMIT: (usize, Duration) = (30, Duration::from_secs(600));
/// How often an auto-pairing arena pairs its waiting bots.
const PAIRING_WAVE: Duration = Duration::from_millis(200);

/// An arena a test creates.
#[derive(Debug, Clone)]
pub struct ArenaSpec {
    pub id: String,
    pub name: String,
    /// Starts this long after its creation (zero: running).
    pub starts_in: Duration,
    pub minutes: u64,
    pub limit_secs: u32,
    pub increment_secs: u32,
    pub rated: bool,
    /// Its password (or entry code).
    pub password: Option<String>,
    /// A team battle: the team the bot may play for.
    pub team: Option<String>,
    /// Pair the bot whenever it is in the waiting pool (lila's pairing
    /// waves), against an opponent playing `opponent`.
    pub auto_pair: bool,
    pub opponent: AutoPlay,
    /// The opponent resigns after this many of its moves (keeps the
    /// games short).
    pub resign_after: Option<u32>,
    /// Its variant (its games are played in it).
    pub variant: FakeVariant,
}

impl ArenaSpec {
    pub fn new(id: &str) -> ArenaSpec {
        ArenaSpec {
            id: id.to_owned(),
            name: "Bot Arena".to_owned(),
            starts_in: Duration::ZERO,
            minutes: 60,
            limit_secs: 60,
            increment_secs: 1,
            rated: true,
            password: None,
            team: None,
            auto_pair: false,
            opponent: AutoPlay::default(),
            resign_after: None,
            variant: FakeVariant::Standard,
        }
    }
}

/// The bot as a player of an arena.
#[derive(Debug, Clone, Default)]
pub struct ArenaPlayer {
    pub team: Option<String>,
    /// Withdrawn after the start (lila's `withdraw`).
    pub paused: bool,
    /// Its pause lasts until then: a join before is refused ("Your pause
    /// is not over yet").
    pub paused_until: Option<Instant>,
    /// Its pauses so far (each longer, as lila's `Pause`).
    pub pauses: u32,
    /// The games it was paired in.
    pub games: Vec<String>,
}

/// What a test reads of an arena.
#[derive(Debug, Clone)]
pub struct ArenaRecord {
    /// The bot is a player (joined, maybe paused).
    pub player: Option<ArenaPlayer>,
    /// Joins: whether each asked `pairMeAsap`.
    pub joins: Vec<bool>,
    pub withdraws: u32,
    /// Joins refused (wrong password, no team...; a 429 is not counted).
    pub refused: u32,
    /// The bot is in the waiting pool: lila would pair it now.
    pub in_pool: bool,
}

pub(super) struct Arena {
    spec: ArenaSpec,
    created: Instant,
    finished: bool,
    player: Option<ArenaPlayer>,
    joins: Vec<bool>,
    withdraws: u32,
    refused: u32,
}

/// lila's `Pause`: the first pause of a player lasts 10 s, the next ones
/// `pauses × the game's estimated seconds / 15`, between 10 and 120 s.
fn pause_delay(spec: &ArenaSpec, pauses: u32) -> Duration {
    if pauses <= 1 {
        return Duration::from_secs(10);
    }
    let total = u64::from(spec.limit_secs) + 40 * u64::from(spec.increment_secs);
    Duration::from_secs((u64::from(pauses) * total / 15).clamp(10, 120))
}

impl ArenaPlayer {
    /// Paused by a withdraw or a missed pairing, for lila's delay.
    fn pause(&mut self, spec: &ArenaSpec) {
        self.paused = true;
        self.pauses += 1;
        self.paused_until = Some(Instant::now() + pause_delay(spec, self.pauses));
    }
}

impl Arena {
    fn started(&self) -> bool {
        self.created.elapsed() >= self.spec.starts_in
    }

    fn running(&self) -> bool {
        self.started() && !self.finished
    }

    fn record(&self, world: &World) -> ArenaRecord {
        ArenaRecord {
            player: self.player.clone(),
            joins: self.joins.clone(),
            withdraws: self.withdraws,
            refused: self.refused,
            in_pool: self.waiting(world).is_ok(),
        }
    }

    /// Whether lila would pair the bot now (why not, if not).
    fn waiting(&self, world: &World) -> Result<(), &'static str> {
        if !self.running() {
            return Err("the arena is not running");
        }
        let player = self.player.as_ref().ok_or("the bot is not a player")?;
        if player.paused {
            return Err("the bot is paused");
        }
        let playing = player
            .games
            .iter()
            .any(|g| world.games.get(g).is_some_and(|g| g.started()));
        if playing {
            return Err("the bot is in a game of the arena");
        }
        Ok(())
    }
}

/// The arenas and the bot's teams.
#[derive(Default)]
pub(super) struct Arenas {
    arenas: HashMap<String, Arena>,
    teams: HashSet<String>,
    /// The bot's joins in the last [`JOIN_LIMIT`] window.
    join_times: VecDeque<Instant>,
}

impl FakeLichess {
    /// Creates an arena (and, for an auto-pairing one, its pairing
    /// waves, until it finishes).
    pub fn create_arena(&self, spec: ArenaSpec) {
        if spec.auto_pair {
            let app = self.app.clone();
            let id = spec.id.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(PAIRING_WAVE).await;
                    let over = app.with(|world, app| {
                        let _ = world.pair_arena(app, &id);
                        world.arenas.arenas.get(&id).is_none_or(|a| a.finished)
                    });
                    if over {
                        break;
                    }
                }
            });
        }
        self.app.with(|world, _| {
            world.arenas.arenas.insert(
                spec.id.clone(),
                Arena {
                    spec,
                    created: Instant::now(),
                    finished: false,
                    player: None,
                    joins: Vec::new(),
                    withdraws: 0,
                    refused: 0,
                },
            );
        });
    }

    /// Ends an arena.
    pub fn finish_arena(&self, id: &str) {
        self.app.with(|world, _| {
            if let Some(a) = world.arenas.arenas.get_mut(id) {
                a.finished = true;
            }
        });
    }

    pub fn arena(&self, id: &str) -> Option<ArenaRecord> {
        let world = self.app.lock();
        world.arenas.arenas.get(id).map(|a| a.record(&world))
    }

    pub fn teams(&self) -> HashSet<String> {
        self.app.lock().arenas.teams.clone()
    }

    /// The bot joins arena `id` on the website (the daemon is not told):
    /// a player, in the pool.
    pub fn join_arena_elsewhere(&self, id: &str) {
        self.app.with(|world, _| {
            if let Some(a) = world.arenas.arenas.get_mut(id) {
                a.player = Some(ArenaPlayer::default());
            }
        });
    }

    /// Pairs the bot in arena `id`, as lila's pairing would: only if it
    /// is in the waiting pool (a player, not paused, not in a game of the
    /// arena, the arena running). The game's id.
    pub fn pair_arena(&self, id: &str) -> Result<String, String> {
        self.app.with(|world, app| world.pair_arena(app, id))
    }
}

impl super::records::View<'_> {
    /// An arena as [`FakeLichess::arena`] gives it.
    pub fn arena(&self, id: &str) -> Option<ArenaRecord> {
        self.0.arenas.arenas.get(id).map(|a| a.record(self.0))
    }
}

impl World {
    fn pair_arena(&mut self, app: &App, id: &str) -> Result<String, String> {
        let arena = self.arenas.arenas.get(id).ok_or("no such arena")?;
        arena.waiting(self)?;
        let spec = &arena.spec;
        let n = arena.player.as_ref().map_or(0, |p| p.games.len());
        let challenge = ChallengeSpec {
            time: FakeTime::Clock {
                limit_secs: spec.limit_secs,
                increment_secs: spec.increment_secs,
            },
            rated: spec.rated,
            challenger: Opponent::human(&format!("arenaPlayer{n}")),
            autoplay: Some(spec.opponent),
            resign_after: spec.resign_after,
            variant: spec.variant.clone(),
            ..ChallengeSpec::default()
        }
        .tournament(id);
        let color = if n % 2 == 0 {
            Color::White
        } else {
            Color::Black
        };
        let game = self.new_id();
        if let Some(p) = self
            .arenas
            .arenas
            .get_mut(id)
            .and_then(|a| a.player.as_mut())
        {
            p.games.push(game.clone());
        }
        self.create_game(app, game.clone(), &challenge, color)?;
        Ok(game)
    }

    /// An arena game ended: a player who did not start it is paused
    /// (lila withdraws who misses a pairing).
    pub(super) fn arena_game_over(&mut self, tournament: &str, no_start_by_bot: bool) {
        if let Some(a) = self.arenas.arenas.get_mut(tournament)
            && let Some(p) = a.player.as_mut()
            && no_start_by_bot
        {
            p.pause(&a.spec);
        }
    }

    fn has_scope(&self, scope: &str) -> bool {
        self.cfg.scopes.split(',').any(|s| s.trim() == scope)
    }
}

fn missing_scope(scope: &str) -> Response {
    error(StatusCode::FORBIDDEN, &format!("Missing scope: {scope}"))
}

/// `GET /api/tournament/{id}`.
pub(super) async fn info(State(app): State<App>, Path(id): Path<String>) -> Response {
    let world = app.lock();
    let Some(a) = world.arenas.arenas.get(&id) else {
        return not_found();
    };
    let spec = &a.spec;
    let elapsed = a.created.elapsed();
    let mut body = json!({
        "id": spec.id, "fullName": spec.name, "rated": spec.rated,
        "clock": {"limit": spec.limit_secs, "increment": spec.increment_secs},
        "minutes": spec.minutes, "createdBy": "lichess", "system": "arena",
        "variant": spec.variant.key(), "berserkable": true,
        "nbPlayers": usize::from(a.player.is_some()) + 10,
        "isStarted": a.running(), "isFinished": a.finished,
        "verdicts": {"list": [], "accepted": true},
        "perf": {"key": "bullet", "name": "Bullet", "icon": "T"},
        "duels": [], "standing": {"page": 1, "players": []},
        "stats": {"games": 0, "moves": 0, "whiteWins": 0, "blackWins": 0, "draws": 0,
                  "berserks": 0, "averageRating": 1500}
    });
    if a.started() {
        let left = (spec.minutes * 60).saturating_sub(elapsed.as_secs() - spec.starts_in.as_secs());
        if !a.finished {
            body["secondsToFinish"] = json!(left);
        }
    } else {
        body["secondsToStart"] = json!((spec.starts_in - elapsed).as_secs().max(1));
    }
    if let Some(p) = &a.player {
        let mut me = json!({"rank": 5, "withdraw": p.paused});
        if let Some(g) = p
            .games
            .iter()
            .rfind(|g| world.games.get(*g).is_some_and(|g| g.started()))
        {
            me["gameId"] = json!(g);
        }
        body["me"] = me;
    }
    axum::Json(body).into_response()
}

/// `POST /api/tournament/{id}/join`.
pub(super) async fn join(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let form = parse_form(&body);
    app.with(|world, _| {
        // lila: `ScopedBody(_.Tournament.Write, _.Bot.Play, ...)`.
        if !world.has_scope("tournament:write") && !world.has_scope("bot:play") {
            return missing_scope("tournament:write");
        }
        // lila's `JoinLimitPerUser`, before anything else.
        let (limit, window) = JOIN_LIMIT;
        let times = &mut world.arenas.join_times;
        times.retain(|at| at.elapsed() < window);
        if times.len() >= limit {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests. Try again later.",
            );
        }
        times.push_back(Instant::now());
        let teams = world.arenas.teams.clone();
        let Some(a) = world.arenas.arenas.get_mut(&id) else {
            return not_found();
        };
        // lila's `JoinResult` errors, as `Tournament.apiJoin` answers them.
        let refuse = |a: &mut Arena, message: &str| {
            a.refused += 1;
            (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"joined": false, "error": message})),
            )
                .into_response()
        };
        if a.finished {
            return refuse(a, "This tournament no longer exists");
        }
        let returning = a.player.is_some();
        if !returning
            && a.spec.password.is_some()
            && form.get("password") != a.spec.password.as_ref()
        {
            return refuse(a, "Wrong entry code");
        }
        let team = form.get("team").cloned();
        if let Some(battle) = &a.spec.team
            && !returning
        {
            match &team {
                Some(t) if t == battle && teams.contains(t) => {}
                // lila's `JoinResult.MissingTeam` for both.
                _ => return refuse(a, "Missing team"),
            }
        }
        if a.player
            .as_ref()
            .and_then(|p| p.paused_until)
            .is_some_and(|until| Instant::now() < until)
        {
            return refuse(a, "Your pause is not over yet");
        }
        a.joins
            .push(form.get("pairMeAsap").is_some_and(|v| v == "true"));
        let player = a.player.get_or_insert_with(|| ArenaPlayer {
            team,
            ..ArenaPlayer::default()
        });
        player.paused = false;
        player.paused_until = None;
        ok()
    })
}

/// `POST /api/tournament/{id}/withdraw`.
pub(super) async fn withdraw(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, _| {
        // lila: `ScopedBody(_.Tournament.Write, _.Bot.Play, ...)`.
        if !world.has_scope("tournament:write") && !world.has_scope("bot:play") {
            return missing_scope("tournament:write");
        }
        let Some(a) = world.arenas.arenas.get_mut(&id) else {
            return not_found();
        };
        a.withdraws += 1;
        if a.started() {
            if let Some(p) = &mut a.player {
                p.pause(&a.spec);
            }
        } else {
            a.player = None;
        }
        ok()
    })
}

/// `POST /team/{id}/join`.
pub(super) async fn join_team(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, _| {
        if !world.has_scope("team:write") {
            return missing_scope("team:write");
        }
        world.arenas.teams.insert(id);
        ok()
    })
}
