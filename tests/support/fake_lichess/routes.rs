//! The HTTP side: the router and one handler per bot API endpoint, all
//! behind the gatekeeper (`faults::gatekeeper`).

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use shakmaty::uci::UciMove;
use shakmaty::{Color, Position};
use tokio::time::Instant;

use super::bots::{Answer, OnlineBot};
use super::challenge::ChallengeState;
use super::faults::gatekeeper;
use super::game::{Game, STARTPOS_FEN, compat_json, speed_of};
use super::records::{ChatRecord, IllegalMove};
use super::setup::{AutoPlay, ChallengeSpec, FakeTime, FakeVariant, Opponent, Side};
use super::stream::Conn;
use super::world::{App, World};

/// Every route of the bot API the server answers, behind the gatekeeper.
pub(super) fn router(app: App) -> Router {
    Router::new()
        .route("/api/account", get(account))
        .route("/api/account/playing", get(playing))
        .route("/api/token/test", post(token_test))
        .route("/api/bot/online", get(super::bots::online))
        .route("/api/users/status", get(super::bots::users_status))
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
        .route("/api/tournament/{id}", get(super::tournament::info))
        .route("/api/tournament/{id}/join", post(super::tournament::join))
        .route(
            "/api/tournament/{id}/withdraw",
            post(super::tournament::withdraw),
        )
        .route("/team/{id}/join", post(super::tournament::join_team))
        .layer(middleware::from_fn_with_state(app.clone(), gatekeeper))
        // The public online sources: no token, so outside the gatekeeper.
        .merge(super::online::router())
        .with_state(app)
}

pub(super) fn ok() -> Response {
    axum::Json(json!({"ok": true})).into_response()
}

pub(super) fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}

pub(super) fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "Not found.")
}

pub(super) fn percent_decode(text: &str) -> String {
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
pub(super) fn parse_form(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

pub(super) async fn account(State(app): State<App>) -> Response {
    let world = app.lock();
    let mut account = json!({
        "id": world.bot_id(),
        "username": world.cfg.username,
        "perfs": {
            "bullet": {"games": 50, "rating": 2000, "rd": 60, "prog": 0},
            "blitz": {"games": 50, "rating": 2000, "rd": 60, "prog": 0},
            "rapid": {"games": 0, "rating": 1500, "rd": 350, "prog": 0, "prov": true},
        },
        "createdAt": 1_700_000_000_000u64,
        "url": format!("{}/@/{}", world.base_url, world.cfg.username),
        "count": {"all": world.games.len()},
    });
    if world.is_bot {
        account["title"] = json!("BOT");
    }
    axum::Json(account).into_response()
}

pub(super) async fn upgrade(State(app): State<App>) -> Response {
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

/// `GET /api/account/playing`: the ongoing games, `nb` of them at most
/// (lila: 9 by default, 50 at most).
pub(super) async fn playing(
    State(app): State<App>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let nb = query
        .get("nb")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(9)
        .clamp(1, 50);
    let mut world = app.lock();
    let stale = world.faults.stale_playing > 0;
    if stale {
        world.faults.stale_playing -= 1;
    }
    let games: Vec<&Game> = world
        .game_order
        .iter()
        .filter_map(|id| world.games.get(id))
        .filter(|g| stale || g.started())
        .take(nb)
        .collect();
    let now_playing: Vec<Value> = games
        .iter()
        .map(|g| {
            let mut info = g.info_json();
            if !g.started() {
                // As it stood before the end.
                info["status"] = json!({"id": 20, "name": "started"});
            }
            info
        })
        .collect();
    let my_turn = games.iter().filter(|g| g.pos.turn() == g.bot_color).count();
    axum::Json(json!({"nowPlaying": now_playing, "nbMyTurn": my_turn})).into_response()
}

/// Event-stream opens lila allows a user in [`EVENT_OPENS_WINDOW`].
const EVENT_OPENS: usize = 30;
const EVENT_OPENS_WINDOW: Duration = Duration::from_secs(600);

pub(super) async fn event_stream(State(app): State<App>) -> Response {
    app.with(|world, _| {
        let now = Instant::now();
        world
            .event_opens
            .retain(|&t| now.duration_since(t) < EVENT_OPENS_WINDOW);
        if world.event_opens.len() >= EVENT_OPENS {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                "Please don't poll this endpoint, it is intended to be streamed.",
            );
        }
        world.event_opens.push(now);
        let (conn, response) = Conn::open(world.cfg.keepalive);
        // One stream per token: the new one closes the old.
        if let Some(old) = world.event_stream.replace(conn.clone()) {
            old.end();
        }
        world.event_connections += 1;
        // Like Lichess (`Api.eventStream`), replay what is open: the games
        // in progress, then the challenges to the bot (`createdByDestId`:
        // not those it made).
        for id in &world.game_order {
            if world.faults.no_game_replay {
                break;
            }
            if let Some(g) = world.games.get(id)
                && g.started()
            {
                conn.send(&json!({"type": "gameStart", "game": g.info_json()}));
            }
        }
        for id in &world.challenge_order {
            if let Some(c) = world.challenges.get(id)
                && c.status == "created"
                && c.direction == "in"
            {
                conn.send(
                    &json!({"type": "challenge", "challenge": world.challenge_json(c),
                                      "compat": c.spec.compat_json()}),
                );
            }
        }
        response
    })
}

pub(super) async fn game_stream(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, _| {
        let first_move_ms = world.cfg.first_move_timeout.as_millis() as u64;
        let bot = world.bot_json();
        let keepalive = world.cfg.keepalive;
        if !world.games.contains_key(&id) {
            return not_found();
        }
        let (conn, response) = Conn::open(keepalive);
        if world.faults.malformed_game_full > 0 {
            world.faults.malformed_game_full -= 1;
            conn.send_raw(Bytes::from_static(
                b"{\"type\":\"gameFull\",\"id\":\"x\",\"white\":[]}\n",
            ));
        } else {
            let game = &world.games[&id];
            let mut full = game.full_json(&bot, first_move_ms);
            if game.bot_to_move() && world.faults.unfit_moves > 0 {
                world.faults.unfit_moves -= 1;
                full["state"]["moves"] = json!(game.unfit_moves());
            }
            conn.send(&full);
        }
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        game.stream_connections += 1;
        if game.started() {
            game.subscribers.push(conn);
        } else {
            conn.end();
        }
        response
    })
}

pub(super) async fn bot_move(
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
        if let Some((refused, n)) = &mut world.faults.refuse_move
            && *refused == uci
            && *n > 0
        {
            *n -= 1;
            return refuse(game, format!("Illegal move: {uci}"));
        }
        let m = match game.parse_move(&uci) {
            Ok(m) => m,
            Err(reason) => return refuse(game, reason),
        };
        let bot = game.bot_color;
        // As lila's `Drawer.yes`, before the move: the opponent's offer
        // taken, or an offer of ours if one may be made now.
        let accepts_draw = offering_draw && game.draw_offer == Some(!bot);
        if accepts_draw {
            game.bot_draw_offers += 1;
        }
        let offers_draw = offering_draw && !accepts_draw && game.bot_offers_draw();
        if !world.play(app, &id, m) {
            if let Some(game) = world.games.get_mut(&id) {
                game.illegal.push(IllegalMove {
                    uci: uci.clone(),
                    ply,
                    reason: "out of time".to_owned(),
                });
            }
            // lila's `BotPlay` on a fallen flag: the game ends on time,
            // and the post is answered as done.
            return ok();
        }
        let Some(game) = world.games.get_mut(&id) else {
            return ok();
        };
        if game.started() && (accepts_draw || offers_draw) {
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

pub(super) async fn chat_post(
    State(app): State<App>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
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

pub(super) async fn chat_get(State(app): State<App>, Path(id): Path<String>) -> Response {
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

pub(super) async fn abort(State(app): State<App>, Path(id): Path<String>) -> Response {
    app.with(|world, app| {
        let Some(game) = world.games.get(&id) else {
            return not_found();
        };
        if !game.started() || game.ply() >= 2 || game.tournament_id.is_some() {
            return error(StatusCode::BAD_REQUEST, "This game cannot be aborted.");
        }
        world.finish(app, &id, "aborted", None);
        ok()
    })
}

pub(super) async fn resign(State(app): State<App>, Path(id): Path<String>) -> Response {
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

pub(super) fn yes(answer: &str) -> Option<bool> {
    match answer {
        "yes" | "true" | "accept" => Some(true),
        "no" | "false" | "decline" => Some(false),
        _ => None,
    }
}

pub(super) async fn draw(
    State(app): State<App>,
    Path((id, answer)): Path<(String, String)>,
) -> Response {
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
        } else if accept && game.bot_offers_draw() {
            // No offer to answer: "yes" makes one, if one may be made.
            game.draw_offer = Some(bot);
            world.after_change(app, &id);
        }
        ok()
    })
}

pub(super) async fn takeback(
    State(app): State<App>,
    Path((id, answer)): Path<(String, String)>,
) -> Response {
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
            game.streamed.truncate(keep);
            game.clocks.truncate(keep);
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
            if world.faults.cut_on_takeback > 0 {
                world.faults.cut_on_takeback -= 1;
                for conn in game.subscribers.drain(..) {
                    conn.cut();
                }
            }
        }
        world.after_change(app, &id);
        ok()
    })
}

pub(super) async fn claim(
    State(app): State<App>,
    Path((id, what)): Path<(String, String)>,
) -> Response {
    app.with(|world, app| {
        let claim_after = Duration::from_secs(world.cfg.claim_win_secs.into());
        let Some(game) = world.games.get(&id) else {
            return not_found();
        };
        let bot = game.bot_color;
        if world.faults.move_crosses_claim > 0 && game.started() && game.pos.turn() != bot {
            // The opponent's move, on its way when the bot claimed, is in
            // first.
            world.faults.move_crosses_claim -= 1;
            if let Some(m) = game.pos.legal_moves().first().copied() {
                world.play(app, &id, m);
            }
        }
        let Some(game) = world.games.get_mut(&id) else {
            return not_found();
        };
        let victory = what == "claim-victory";
        // lila's BotPlayer: `claimVictory` is `pov.mightClaimWin.so(...)`
        // (the game resignable, so both sides moved, with a clock, and not
        // the claimer's turn), `claimDraw` is `pov.game.drawable.so(...)`
        // (playable, both sides moved): where that is false, 200 and
        // nothing done.
        let both_moved = game.started() && game.ply() >= 2;
        let may = if victory {
            both_moved && game.clock.is_some() && game.pos.turn() != bot
        } else {
            both_moved
        };
        if !may {
            game.ignored_claims += 1;
            return ok();
        }
        // The round's ResignForce/DrawForce: the opponent gone long
        // enough, on the opponent's turn; else lila's clientError.
        let claimable = game.pos.turn() != bot
            && game
                .gone_since
                .is_some_and(|since| since.elapsed() >= claim_after);
        if !claimable {
            game.refused_claims += 1;
            let message = if victory {
                "You cannot claim the win on this game"
            } else {
                "You cannot claim draw on this game"
            };
            return error(StatusCode::BAD_REQUEST, message);
        }
        if victory && game.pos.has_insufficient_material(bot) {
            // Nothing to win with: only a draw can be claimed.
            return error(
                StatusCode::BAD_REQUEST,
                "You cannot claim the win on this game",
            );
        }
        // Both end as lila's `rageQuit`: `timeout`, with no winner for
        // a draw (`DrawForce`).
        world.finish(app, &id, "timeout", victory.then_some(bot));
        ok()
    })
}

pub(super) async fn game_action(
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

pub(super) async fn challenge_action(
    State(app): State<App>,
    Path((id, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = parse_form(&body);
    app.with(|world, app| {
        let open = world
            .challenges
            .get(&id)
            .is_some_and(|c| c.status == "created");
        if !open {
            return match action.as_str() {
                "cancel" => cancel_game(world, app, &id),
                _ => not_found(),
            };
        }
        let Some(challenge) = world.challenges.get_mut(&id) else {
            return not_found();
        };
        match action.as_str() {
            "accept" if challenge.direction == "in" => {
                let from_bot = challenge.spec.challenger.title.as_deref() == Some("BOT");
                let cap = world.cfg.bot_games_per_day;
                if from_bot && world.faults.bot_vs_bot_accepts > 0 {
                    world.faults.bot_vs_bot_accepts -= 1;
                    return bot_vs_bot_day(cap);
                }
                if from_bot && world.bot_games >= cap {
                    return bot_vs_bot_day(cap);
                }
                if world.faults.opponent_cap_accepts > 0
                    && challenge.spec.challenger.title.as_deref() == Some("BOT")
                {
                    world.faults.opponent_cap_accepts -= 1;
                    let name = challenge.spec.challenger.name.clone();
                    return super::bots::opponent_daily_cap(&name, 3600);
                }
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
                world.echo_challenge(&id, "challengeDeclined");
                ok()
            }
            "cancel" if challenge.direction == "out" => {
                challenge.status = "canceled";
                world.echo_challenge(&id, "challengeCanceled");
                ok()
            }
            // lila's `apiCancel` of a challenge to us declines it.
            "cancel" => {
                challenge.status = "declined";
                challenge.decline_reason = Some("generic".to_owned());
                world.echo_challenge(&id, "challengeDeclined");
                ok()
            }
            // lila's `apiAccept` and `apiDecline` look for a challenge
            // to us (`isForMe`, `activeByIdFor`), then a rematch offer:
            // our own challenge is neither, a 404.
            "accept" | "decline" => not_found(),
            _ => error(StatusCode::BAD_REQUEST, "Not allowed."),
        }
    })
}

/// lila's `apiCancel` of a challenge that is no longer open (accepted,
/// say, a moment before): it looks for the game of that id. One that may
/// still be aborted (`abortableByUser`: fewer than two plies, not an
/// arena game) is aborted, 200; one under way needs the opponent's token,
/// 400; none, or one over, 404.
fn cancel_game(world: &mut World, app: &App, id: &str) -> Response {
    let Some(game) = world.games.get(id).filter(|g| g.started()) else {
        return not_found();
    };
    if game.ply() >= 2 || game.tournament_id.is_some() {
        return error(StatusCode::BAD_REQUEST, "Missing opponentToken");
    }
    world.finish(app, id, "aborted", None);
    ok()
}

pub(super) async fn create_challenge(
    State(app): State<App>,
    Path(username): Path<String>,
    body: Bytes,
) -> Response {
    let form = parse_form(&body);
    app.with(|world, app| {
        let cap = world.cfg.bot_games_per_day;
        let to_bot = super::bots::find(&world.online_bots, &username).is_some();
        if world.faults.bot_vs_bot_exhausted || (to_bot && world.bot_games >= cap) {
            return bot_vs_bot_day(cap);
        }
        if world.faults.refuse_challenge_form > 0 {
            world.faults.refuse_challenge_form -= 1;
            return form_error("clock.limit", "Invalid value");
        }
        let time = match (
            form.get("clock.limit"),
            form.get("clock.increment"),
            form.get("days"),
        ) {
            (Some(l), Some(i), _) => match (l.parse::<u32>(), i.parse::<u32>()) {
                // The challenge form's rules (API specification): a limit
                // of 0, 15, 30, 45, 60, 90 s or whole minutes up to 3 h,
                // an increment up to 60 s; refused as a form error.
                (Ok(limit), _)
                    if !(matches!(limit, 0 | 15 | 30 | 45 | 60 | 90)
                        || (limit.is_multiple_of(60) && limit <= 10_800)) =>
                {
                    return form_error("clock.limit", "Invalid value");
                }
                (_, Ok(increment)) if increment > 60 => {
                    return form_error("clock.increment", "Must be less than or equal to 60");
                }
                (Ok(limit_secs), Ok(increment_secs)) => FakeTime::Clock {
                    limit_secs,
                    increment_secs,
                },
                _ => return form_error("clock.limit", "Numeric value expected"),
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
                fen: form
                    .get("fen")
                    .cloned()
                    .unwrap_or_else(|| STARTPOS_FEN.to_owned()),
            },
            // Any other Lichess variant, or an unknown key.
            Some(other) => FakeVariant::from_key(other),
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
        let online = super::bots::find(&world.online_bots, &username);
        if let Some(OnlineBot {
            answer: Answer::DailyCapReached(seconds),
            opponent,
            ..
        }) = &online
        {
            return super::bots::opponent_daily_cap(&opponent.name, *seconds);
        }
        let id = world.new_id();
        let spec = ChallengeSpec {
            variant,
            time,
            rated: form.get("rated").is_some_and(|r| r == "true"),
            color: Side::Random,
            challenger: online
                .as_ref()
                .map_or_else(|| Opponent::human(&username), |b| b.opponent.clone()),
            autoplay: Some(AutoPlay::default()),
            tournament: None,
            bot_compatible: None,
            rematch_of: None,
            resign_after: None,
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
        // The event stream echoes our own challenge too (lila's
        // EventStream: `isMyChallenge`), without a direction; the answer
        // here has `direction: out`.
        let event = world.challenge_json(&state);
        world.send_event(&json!({"type": "challenge", "challenge": event,
                                 "compat": compat_json(speed_of(time))}));
        let mut json = event;
        json["direction"] = json!("out");

        world.challenges.insert(id.clone(), state);
        world.challenge_order.push(id.clone());
        if let Some(bot) = online {
            super::bots::answer_later(app, id.clone(), bot.answer);
        }
        let expiry = match time {
            FakeTime::Clock { .. } => world.cfg.challenge_expiry,
            FakeTime::Correspondence { .. } | FakeTime::Unlimited => Duration::MAX,
        };
        if form.get("keepAliveStream").is_some_and(|v| v == "true") {
            let (conn, response) = Conn::open(world.cfg.keepalive);
            conn.send_raw(Bytes::from(format!("{json}\n")));
            super::challenge::watch_created(app, id, Some(conn), expiry);
            return response;
        }
        super::challenge::watch_created(app, id, None, expiry);
        axum::Json(json).into_response()
    })
}

/// A 400 of Lichess's form validation, in the shape of the spec fixture
/// (lila's `doubleJsonFormError`: the fields at the top level and under
/// `error`).
fn form_error(field: &str, message: &str) -> Response {
    let fixture: Value = serde_json::from_str(include_str!(
        "../../data/lichess/errors/400-clock-limit.json"
    ))
    .unwrap_or_default();
    let mut body = serde_json::Map::new();
    for key in fixture.as_object().into_iter().flat_map(|o| o.keys()) {
        let errors = json!({field: [message]});
        if key == "error" {
            body.insert("error".to_owned(), errors);
        } else {
            body.insert(field.to_owned(), errors[field].clone());
        }
    }
    (StatusCode::BAD_REQUEST, axum::Json(Value::Object(body))).into_response()
}

/// `POST /api/token/test`: the body names tokens, comma-separated; each
/// maps to what it is, or null.
pub(super) async fn token_test(State(app): State<App>, body: Bytes) -> Response {
    let world = app.lock();
    let text = String::from_utf8_lossy(&body);
    let mut tokens = serde_json::Map::new();
    for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let info = (token == world.cfg.token).then(|| {
            json!({"userId": world.cfg.username.to_lowercase(), "scopes": world.cfg.scopes,
                   "expires": null})
        });
        tokens.insert(token.to_owned(), info.unwrap_or(Value::Null));
    }
    axum::Json(Value::Object(tokens)).into_response()
}

/// The 429 of Lichess's daily cap of `cap` bot-vs-bot games.
pub(super) fn bot_vs_bot_day(cap: u32) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({
            "error": format!("You played {cap} games against other bots today, please wait before challenging another bot."),
            "ratelimit": {"key": "bot.vsBot.day", "seconds": 86398}
        })),
    )
        .into_response()
}
