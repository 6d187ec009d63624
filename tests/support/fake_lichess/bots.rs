//! Other bots online (`GET /api/bot/online`) and how each answers a
//! challenge the bot sends it: accept (the game starts), decline with a
//! reason (`challengeDeclined`), or never answer.

use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::FakeLichess;
use super::setup::Opponent;
use super::world::App;

/// How long an online bot takes to answer a challenge.
const ANSWER_AFTER: Duration = Duration::from_millis(50);

/// How an online bot answers the bot's challenges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Accept,
    /// Declines with this reason key (`"tooFast"`, `"later"`...).
    Decline(String),
    /// Never answers.
    Ignore,
    /// Has played its bot games for the day: creating a challenge to it
    /// gets Lichess's 400 with a `ratelimit` (lila's `BotLimit`), lifting
    /// in this many seconds.
    DailyCapReached(u64),
}

/// A bot listed by `/api/bot/online`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlineBot {
    /// Rated `opponent.rating` in every perf.
    pub opponent: Opponent,
    pub answer: Answer,
    /// In a game now (`/api/users/status` says `playing`).
    pub playing: bool,
}

impl OnlineBot {
    pub fn new(name: &str, rating: u32, answer: Answer) -> OnlineBot {
        OnlineBot {
            opponent: Opponent {
                rating: Some(rating),
                ..Opponent::bot(name)
            },
            answer,
            playing: false,
        }
    }

    /// The same bot, in a game now.
    pub fn playing(self) -> OnlineBot {
        OnlineBot {
            playing: true,
            ..self
        }
    }
}

impl FakeLichess {
    /// The bots `/api/bot/online` lists from now on.
    pub fn set_online_bots(&self, bots: Vec<OnlineBot>) {
        self.app.with(|world, _| world.online_bots = bots);
    }
}

/// `GET /api/users/status?ids=`: the online bots among `ids`, with
/// `playing` when they are in a game (lila omits `online` and `playing`
/// when false); unknown ids are left out, as lila does.
pub(super) async fn users_status(
    State(app): State<App>,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let world = app.lock();
    let ids = query.get("ids").cloned().unwrap_or_default();
    // The spec: "Up to 100 IDs".
    if ids.split(',').count() > 100 {
        return super::routes::error(
            axum::http::StatusCode::BAD_REQUEST,
            "Too many ids: 100 at most",
        );
    }
    let answer: Vec<serde_json::Value> = ids
        .split(',')
        .filter_map(|id| find(&world.online_bots, id))
        .map(|bot| {
            let mut user = json!({"id": bot.opponent.id, "name": bot.opponent.name, "title": "BOT",
                                  "online": true});
            if bot.playing {
                user["playing"] = json!(true);
            }
            user
        })
        .collect();
    axum::Json(answer).into_response()
}

/// `GET /api/bot/online`: one user per line, `nb` of them (the spec: 1 to
/// 512, 100 by default).
pub(super) async fn online(
    State(app): State<App>,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let nb = match query.get("nb").map(|n| n.parse::<usize>()) {
        None => 100,
        Some(Ok(n)) if (1..=512).contains(&n) => n,
        Some(_) => {
            return super::routes::error(
                axum::http::StatusCode::BAD_REQUEST,
                "nb: between 1 and 512",
            );
        }
    };
    let world = app.lock();
    let mut body = String::new();
    for bot in world.online_bots.iter().take(nb) {
        let o = &bot.opponent;
        let perf = json!({"rating": o.rating, "games": 100, "rd": 60, "prog": 0, "prov": false});
        let mut perfs = serde_json::Map::new();
        for key in [
            "bullet",
            "blitz",
            "rapid",
            "classical",
            "correspondence",
            "chess960",
        ] {
            perfs.insert(key.to_owned(), perf.clone());
        }
        let line = json!({"id": o.id, "username": o.name, "title": "BOT", "perfs": perfs});
        body.push_str(&line.to_string());
        body.push('\n');
    }
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// The 400 Lichess answers a challenge to a bot that played its daily bot
/// games (lila's `BotLimit.OpponentLimit`).
/// The body is the spec fixture's, with this bot's name and time.
pub(super) fn opponent_daily_cap(name: &str, seconds: u64) -> Response {
    let mut body: serde_json::Value = serde_json::from_str(include_str!(
        "../../data/lichess/errors/400-opponent-bot-vs-bot-day.json"
    ))
    .unwrap_or_default();
    body["error"] = json!(format!(
        "{name} played 100 games against other bots today, please wait until \
         2026-11-25T07:06:08.826Z to challenge them."
    ));
    body["ratelimit"]["seconds"] = json!(seconds);
    (axum::http::StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// The online bot `username`, if there is one.
pub(super) fn find(bots: &[OnlineBot], username: &str) -> Option<OnlineBot> {
    bots.iter()
        .find(|b| b.opponent.id.eq_ignore_ascii_case(username))
        .cloned()
}

/// Has the online bot answer challenge `id` shortly, as it is set to.
pub(super) fn answer_later(app: &App, id: String, answer: Answer) {
    if matches!(answer, Answer::Ignore | Answer::DailyCapReached(_)) {
        return;
    }
    let app = app.clone();
    tokio::spawn(async move {
        tokio::time::sleep(ANSWER_AFTER).await;
        let fake_app = app.clone();
        app.with(|world, _| {
            let Some(c) = world.challenges.get(&id) else {
                return;
            };
            if c.status != "created" {
                return;
            }
            match answer {
                Answer::Accept => {
                    let (spec, bot_color) = (c.spec.clone(), c.challenger_color);
                    if let Ok(game_id) = world.create_game(&fake_app, id.clone(), &spec, bot_color)
                        && let Some(c) = world.challenges.get_mut(&id)
                    {
                        c.status = "accepted";
                        c.game_id = Some(game_id);
                    }
                }
                Answer::Decline(reason) => {
                    if let Some(c) = world.challenges.get_mut(&id) {
                        c.status = "declined";
                        c.decline_reason = Some(reason);
                    }
                    let c = &world.challenges[&id];
                    world.send_event(&json!({"type": "challengeDeclined",
                                             "challenge": world.challenge_json(c)}));
                }
                Answer::Ignore | Answer::DailyCapReached(_) => {}
            }
        });
    });
}
