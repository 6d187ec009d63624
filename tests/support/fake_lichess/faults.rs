//! Fault injection: what a test can break ([`Faults`], set through the
//! `FakeLichess` methods here: cut or silent streams, 429s, 5xx,
//! rejected moves, raw lines), and the gatekeeper middleware that applies
//! the request faults, with auth and the request log, around every route.
//!
//! A new fault: a field in [`Faults`], a method that sets it, and its
//! check where it applies (the gatekeeper for whole requests).

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::FakeLichess;
use super::records::RequestRecord;
use super::routes::error;
use super::world::App;

/// 429s to the requests whose path contains `part`.
pub(super) struct Matching429 {
    part: String,
    /// How many more.
    n: u32,
    /// The `Retry-After` header.
    retry_after: Option<u64>,
    /// The body's `ratelimit.seconds` (lila's `Limited` answers).
    ratelimit_secs: Option<u64>,
}

#[derive(Default)]
pub(super) struct Faults {
    /// Answer 429 to this many requests, with this Retry-After.
    pub(super) fail_429: u32,
    pub(super) retry_after: Option<u64>,
    /// Answer 503 to this many move posts / requests of any kind.
    pub(super) fail_5xx_moves: u32,
    pub(super) fail_5xx_any: u32,
    /// Creating a challenge against a bot gets the daily-cap 429.
    pub(super) bot_vs_bot_exhausted: bool,
    /// This many accepts of challenges from bots get the daily-cap 429.
    pub(super) bot_vs_bot_accepts: u32,
    /// This many accepts of challenges from bots get the 400 of the
    /// challenger's own daily cap (lila's `BotLimit.OpponentLimit`).
    pub(super) opponent_cap_accepts: u32,
    /// The `gameStart` events of this many new games are not sent.
    pub(super) drop_game_starts: u32,
    /// Accepts answered 200 without a game ever starting.
    pub(super) accept_without_game: u32,
    /// Accepts that start the game but answer 503 (the bot cannot tell).
    pub(super) accept_then_5xx: u32,
    /// The event stream does not replay ongoing games on connect (only
    /// `/api/account/playing` lists them).
    pub(super) no_game_replay: bool,
    /// Answer 400 "Not your turn" to this many move posts (not played).
    pub(super) reject_moves: u32,
    /// This many challenge creations get the form error of a refused
    /// clock, whatever their clock.
    pub(super) refuse_challenge_form: u32,
    /// Refuse this move (UCI, as posted) this many times with Lichess's
    /// 400 for a move it will not play, as for a rule the bot got wrong.
    pub(super) refuse_move: Option<(String, u32)>,
    /// Answer 429 to some requests whose path contains a text.
    pub(super) fail_429_matching: Option<Matching429>,
    /// Answer a status (a proxy's 408, say) to the next requests whose
    /// path contains a text: the text, how many more, the status.
    pub(super) fail_status_matching: Option<(String, u32, StatusCode)>,
    /// Answer the next requests whose path contains a text this late (a
    /// slow Lichess): the text, how many more, the delay.
    pub(super) delay_matching: Option<(String, u32, std::time::Duration)>,
    /// This many game-stream opens send a `gameFull` that does not parse.
    pub(super) malformed_game_full: u32,
    /// This many `gameState` lines that give the bot the move do not parse.
    pub(super) malformed_turn_state: u32,
    /// This many lines that give the bot the move (a `gameState`, or
    /// the `gameFull` of a stream opened then) carry a move list whose
    /// last move is not a legal one.
    pub(super) unfit_moves: u32,
    /// This many claims made on the opponent's turn cross the opponent's
    /// move: the move is played first, so the claim comes on the bot's
    /// own turn.
    pub(super) move_crosses_claim: u32,
    /// This many accepted takebacks cut the game's streams before their
    /// state goes out: the connection dropped as the takeback went through.
    pub(super) cut_on_takeback: u32,
    /// This many answers of `/api/account/playing` still list the games
    /// that ended, as an answer computed just before they did.
    pub(super) stale_playing: u32,
    /// Every request is refused 401, as for a revoked token.
    pub(super) token_revoked: bool,
    /// This many of the bot's moves leave the game's open streams stuck
    /// from the move's echo on: they keep alive and carry nothing.
    pub(super) stick_after_bot_move: u32,
}

/// Auth, fault injection and the request log, around every handler.
pub(super) async fn gatekeeper(State(app): State<App>, request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let expected = app.lock().cfg.token.clone();
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {expected}").as_str());
    let delay = app.with(|world, _| {
        let (part, n, delay) = world.faults.delay_matching.as_mut()?;
        (*n > 0 && path.contains(part.as_str())).then(|| {
            *n -= 1;
            *delay
        })
    });
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let early = app.with(|world, _| {
        let faults = &mut world.faults;
        if faults.fail_429 > 0 {
            faults.fail_429 -= 1;
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests. Try again later.",
            );
            if let Some(secs) = faults.retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            return Some(response);
        }
        if let Some(m) = &mut faults.fail_429_matching
            && m.n > 0
            && path.contains(m.part.as_str())
        {
            m.n -= 1;
            let mut body = serde_json::json!({"error": "Too many requests. Try again later."});
            if let Some(secs) = m.ratelimit_secs {
                body["ratelimit"] = serde_json::json!({"key": "test.limit", "seconds": secs});
            }
            let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
            if let Some(secs) = m.retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            return Some(response);
        }
        if let Some((part, n, status)) = &mut faults.fail_status_matching
            && *n > 0
            && path.contains(part.as_str())
        {
            *n -= 1;
            return Some((*status, status.canonical_reason().unwrap_or("")).into_response());
        }
        if !authorized || faults.token_revoked {
            return Some(error(StatusCode::UNAUTHORIZED, "No such token"));
        }
        if faults.fail_5xx_any > 0 {
            faults.fail_5xx_any -= 1;
            return Some((StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response());
        }
        let is_move = method == "POST" && path.contains("/move/");
        if is_move && faults.reject_moves > 0 {
            faults.reject_moves -= 1;
            return Some(error(
                StatusCode::BAD_REQUEST,
                "Not your turn, or game already over",
            ));
        }
        if is_move && faults.fail_5xx_moves > 0 {
            faults.fail_5xx_moves -= 1;
            return Some((StatusCode::BAD_GATEWAY, "Bad Gateway").into_response());
        }
        if path.starts_with("/api/bot/") && path != "/api/bot/account/upgrade" && !world.is_bot {
            return Some(error(
                StatusCode::BAD_REQUEST,
                "This endpoint can only be used with a Bot account.",
            ));
        }
        None
    });
    let response = match early {
        Some(response) => response,
        None => next.run(request).await,
    };
    let status = response.status().as_u16();
    app.with(|world, _| {
        world.requests.push(RequestRecord {
            method,
            path,
            query,
            status,
            at: Instant::now(),
        })
    });
    response
}

impl FakeLichess {
    /// Refuses the bot's token (401 to every request, the streams open
    /// already going on), as when it is revoked; `false` accepts it again.
    pub fn revoke_token(&self, revoked: bool) {
        self.app
            .with(|world, _| world.faults.token_revoked = revoked)
    }

    /// Aborts the event stream's connection.
    pub fn cut_event_stream(&self) {
        self.app.with(|world, _| {
            if let Some(conn) = world.event_stream.take() {
                conn.cut();
            }
        })
    }

    /// The next `n` requests whose path contains `part` get 429, with
    /// `Retry-After: retry_after_secs` if given.
    pub fn fail_matching_with_429(&self, part: &str, n: u32, retry_after_secs: Option<u64>) {
        self.app.with(|world, _| {
            world.faults.fail_429_matching = Some(Matching429 {
                part: part.to_owned(),
                n,
                retry_after: retry_after_secs,
                ratelimit_secs: None,
            })
        })
    }

    /// The next `n` requests whose path contains `part` get 429 with a
    /// `ratelimit` body that says to wait `seconds` (no `Retry-After`).
    pub fn fail_matching_with_ratelimit(&self, part: &str, n: u32, seconds: u64) {
        self.app.with(|world, _| {
            world.faults.fail_429_matching = Some(Matching429 {
                part: part.to_owned(),
                n,
                retry_after: None,
                ratelimit_secs: Some(seconds),
            })
        })
    }

    /// The next `n` requests whose path contains `part` get `status`
    /// with its reason as a plain-text body, as a proxy in front of
    /// Lichess answers (a 408, a 400 of its own).
    pub fn fail_matching_with_status(&self, part: &str, n: u32, status: u16) {
        let status = StatusCode::from_u16(status).expect("an HTTP status");
        self.app
            .with(|world, _| world.faults.fail_status_matching = Some((part.to_owned(), n, status)))
    }

    /// The next `n` requests whose path contains `part` are answered
    /// `delay` late (then as usual), as by a slow Lichess.
    pub fn delay_matching(&self, part: &str, n: u32, delay: std::time::Duration) {
        self.app
            .with(|world, _| world.faults.delay_matching = Some((part.to_owned(), n, delay)))
    }

    /// The next `n` game-stream opens send a `gameFull` line that does
    /// not parse (then the game's lines as usual).
    pub fn malformed_game_full(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.malformed_game_full = n)
    }

    /// The next `n` `gameState` lines that give the bot the move carry a
    /// clock that does not parse (sent to every subscriber as usual).
    pub fn malformed_turn_states(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.malformed_turn_state = n)
    }

    /// The next `n` lines that give the bot the move (a `gameState`, or
    /// the `gameFull` of a stream opened while it is the bot's turn)
    /// carry the moves with the last one replaced by one that is not
    /// legal, as a board that disagrees with the bot's would.
    pub fn unfit_move_lists(&self, n: u32) {
        self.app.with(|world, _| world.faults.unfit_moves = n)
    }

    /// Sends the `challenge` event of challenge `id` again, as Lichess
    /// does for open challenges when the event stream reconnects.
    pub fn resend_challenge_event(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let c = world.challenges.get(id).ok_or("no such challenge")?;
            let line =
                serde_json::json!({"type": "challenge", "challenge": world.challenge_json(c)});
            world.send_event(&line);
            Ok(())
        })
    }

    /// The event stream stays open but sends nothing any more.
    pub fn silence_event_stream(&self) {
        self.app.with(|world, _| {
            if let Some(conn) = &world.event_stream {
                conn.silence();
            }
        })
    }

    /// Aborts the connections of a game's streams.
    pub fn cut_game_stream(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            for conn in game.subscribers.drain(..) {
                conn.cut();
            }
            Ok(())
        })
    }

    /// A game's streams stay open but send nothing any more.
    pub fn silence_game_stream(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            for conn in game.subscribers.drain(..) {
                conn.silence();
            }
            Ok(())
        })
    }

    /// The game streams open when the bot makes its next `n` moves get
    /// stuck there, before the move's echo: open and keeping alive, they
    /// carry no line any more (a proxy stuck on the upstream). Streams
    /// opened after are not.
    pub fn stick_game_streams_after_bot_moves(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.stick_after_bot_move = n)
    }

    /// The next `n` requests (of any kind) get 429, with `Retry-After` if
    /// given.
    pub fn fail_requests_with_429(&self, n: u32, retry_after_secs: Option<u64>) {
        self.app.with(|world, _| {
            world.faults.fail_429 = n;
            world.faults.retry_after = retry_after_secs;
        })
    }

    /// The next `n` requests (of any kind) get 503.
    pub fn fail_requests_with_5xx(&self, n: u32) {
        self.app.with(|world, _| world.faults.fail_5xx_any = n)
    }

    /// The next `n` move posts get 502 (and are not played).
    pub fn fail_moves_with_5xx(&self, n: u32) {
        self.app.with(|world, _| world.faults.fail_5xx_moves = n)
    }

    /// The next `n` games start without a `gameStart` event (only
    /// `/api/account/playing` lists them).
    pub fn drop_game_starts(&self, n: u32) {
        self.app.with(|world, _| world.faults.drop_game_starts = n)
    }

    /// The next `n` accepts of challenges from bots get the
    /// `bot.vsBot.day` 429 (the challenge stays open).
    pub fn bot_vs_bot_day_on_accept(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.bot_vs_bot_accepts = n)
    }

    /// The next `n` accepts of challenges from bots get the 400 of the
    /// challenger's daily cap (`ratelimit.key` `bot.vsBot.day`); the
    /// challenge stays open, as on lila.
    pub fn opponent_cap_on_accept(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.opponent_cap_accepts = n)
    }

    /// The next `n` takebacks the bot accepts cut the game's streams
    /// before the state without the moves goes out, as a connection that
    /// drops as the takeback goes through: the bot learns of the takeback
    /// only from the `gameFull` of its next stream.
    pub fn cut_game_stream_on_takeback(&self, n: u32) {
        self.app.with(|world, _| world.faults.cut_on_takeback = n)
    }

    /// The next `n` answers of `/api/account/playing` list the games that
    /// ended too (as ongoing), as answers computed just before they ended.
    pub fn stale_playing(&self, n: u32) {
        self.app.with(|world, _| world.faults.stale_playing = n)
    }

    /// Creating a challenge gets the `bot.vsBot.day` 429 from now on.
    pub fn exhaust_bot_vs_bot_games(&self, exhausted: bool) {
        self.app
            .with(|world, _| world.faults.bot_vs_bot_exhausted = exhausted)
    }

    /// The next `n` accepts are answered 200, but no game ever starts.
    pub fn accept_without_game(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.accept_without_game = n)
    }

    /// The next `n` accepts start the game but are answered 503, so the
    /// bot's retry then gets 404: it cannot know its accept went through.
    pub fn accept_then_fail(&self, n: u32) {
        self.app.with(|world, _| world.faults.accept_then_5xx = n)
    }

    /// Whether a new event stream replays the ongoing games as
    /// `gameStart` (Lichess does; `false` leaves `/api/account/playing`
    /// as the only way to find them).
    pub fn replay_games_on_connect(&self, replay: bool) {
        self.app
            .with(|world, _| world.faults.no_game_replay = !replay)
    }

    /// The next `n` move posts get 400 "Not your turn" (and are not
    /// played), as when the bot's view of the game is stale.
    pub fn reject_moves_not_your_turn(&self, n: u32) {
        self.app.with(|world, _| world.faults.reject_moves = n)
    }

    /// The next `n` claims the bot makes on the opponent's turn cross the
    /// opponent's move (a legal move is played just before the claim is
    /// judged): they come on the bot's own turn, where lila answers 200
    /// and does nothing.
    pub fn move_crosses_claim(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.move_crosses_claim = n)
    }

    /// The next `n` challenges the bot creates are refused with Lichess's
    /// form error for their clock (`{"error": {"clock.limit": [...]}}`).
    pub fn refuse_challenge_form(&self, n: u32) {
        self.app
            .with(|world, _| world.faults.refuse_challenge_form = n)
    }

    /// The next `n` posts of move `uci` are refused as illegal (400,
    /// recorded as illegal moves), whatever the position: a rule the bot
    /// does not know.
    pub fn refuse_move(&self, uci: &str, n: u32) {
        self.app
            .with(|world, _| world.faults.refuse_move = Some((uci.to_owned(), n)))
    }

    /// Writes a raw line (a newline is added) on the event stream.
    pub fn inject_event_line(&self, line: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let conn = world.event_stream.as_ref().ok_or("no event stream")?;
            conn.send_raw(Bytes::from(format!("{line}\n")));
            Ok(())
        })
    }

    /// Writes a raw line (a newline is added) on a game's streams.
    pub fn inject_game_line(&self, id: &str, line: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get(id).ok_or("no such game")?;
            for conn in &game.subscribers {
                conn.send_raw(Bytes::from(format!("{line}\n")));
            }
            Ok(())
        })
    }

    /// A line that is not JSON, on the event stream.
    pub fn inject_malformed_event_line(&self) -> Result<(), String> {
        self.inject_event_line(r#"{"type":"challenge","challenge":{"id":"#)
    }

    /// A JSON line of `len` bytes, on the event stream.
    pub fn inject_oversized_event_line(&self, len: usize) -> Result<(), String> {
        let prefix = r#"{"type":"gameStart","padding":""#;
        let suffix = r#""}"#;
        let pad = len.saturating_sub(prefix.len() + suffix.len());
        self.inject_event_line(&format!("{prefix}{}{suffix}", "x".repeat(pad)))
    }

    /// An event of a type Lichess might add one day.
    pub fn inject_unknown_event(&self) -> Result<(), String> {
        self.inject_event_line(r#"{"type":"tournamentPairing","tournament":{"id":"abc"}}"#)
    }
}
