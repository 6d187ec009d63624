//! The one HTTP client for every Lichess request: every endpoint call,
//! here, each built from its line in `routes.rs`; the transport under
//! them (lanes, gates, retries, reading the answers) in `transport.rs`
//! ([`Token`] in `token.rs`, the [`Error`]s in `error.rs`, the rate-limit
//! gates in `gates.rs`).
//!
//! Every request goes through [`Client`], so these rules hold everywhere:
//! - **Auth**: each request carries `Authorization: Bearer <token>`, marked
//!   sensitive. The token lives in [`Token`], whose `Debug` and `Display`
//!   print `Token(***)`; no error or log line of this module contains it
//!   (errors name the request path, never headers). Plain `http://` is
//!   allowed for loopback hosts only (a test server), never over a network.
//! - **Lanes**: what keeps a game alive never waits behind anything else.
//!   *Queued* requests (challenges, chat, draw answers, account calls) go
//!   one at a time, as Lichess asks, and wait at the rate-limit gate. The
//!   *game* lane (game-stream opens, resign, abort, claims) and *move*
//!   posts skip the gate and the queue and have their own quick backoff.
//!   The event stream's open skips them too, with one attempt per call:
//!   its caller's reconnect loop is its backoff (and waits out a 429).
//! - **Rate limits**, per [`Endpoint`]: Lichess limits each kind of
//!   request on its own, so an HTTP 429 closes the gate of the endpoint
//!   that got it, shared by all clones of the client: its queued requests
//!   then wait what the answer asks (its `ratelimit.seconds`, else its
//!   `Retry-After`), else `rate_limit_pause` (60 s by default), doubled
//!   for each 429 in a row on that endpoint and clamped to [`MAX_PAUSE`],
//!   while the other endpoints go on (a 429 to a chat line or to our own
//!   challenge never holds up the accept of a challenge that expires in
//!   20 s). The bot-vs-bot daily
//!   cap (`bot.vsBot.day`) is a quota on games, not a request rate: it
//!   closes no gate, and its ratelimit body is kept in the error, so the
//!   caller can stop playing bots for `ratelimit.seconds`. A 400 to a
//!   challenge we create may carry a `ratelimit` too (the opponent's
//!   daily cap): [`Error::Status`] keeps it.
//! - **Retries**: transport errors, timeouts and 5xx answers are retried
//!   with exponential backoff and jitter. A move post retries quickly (a
//!   429 included) until the deadline the caller gives; a 400 reply ("Not
//!   your turn", an illegal move) comes back at once as
//!   [`Error::MoveRejected`].
//! - **Dead connections**: HTTP/2 keep-alive pings find a connection that
//!   silently stopped forwarding within [`H2_PING_INTERVAL`] +
//!   [`H2_PING_TIMEOUT`]. Streams get a connection of their own, and the
//!   retry of a game-lane request or move post goes to a fresh connection,
//!   so one dead socket never holds a game. A move-post attempt gets at
//!   most [`MOVE_ATTEMPT_TIMEOUT`], and half of what is left before its
//!   deadline when that is short (at least a second), so a retry fits.
//!
//! Streams (`/api/stream/event`, game streams) come back as
//! [`NdjsonStream`]s with the silence watchdog of [`ClientOptions`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER};
use reqwest::{Method, Response, StatusCode};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::error::{Error, chain, is_form_error, limit_key};
use super::gates::{Endpoint, Gates};
use super::model::{
    Account, ArenaTournament, Challenge, ChallengeColor, ChatMessage, ChatRoom, DeclineReason,
    ErrorBody, Event, GameEvent, NowPlaying, OnlineBot, TokenInfo, UserStatus, VariantKey,
};
use super::routes::{self, Route};
use super::stream::{DEFAULT_MAX_LINE_LEN, DEFAULT_SILENCE_TIMEOUT, NdjsonStream, StreamEvent};
use super::token::Token;

mod transport;

use transport::{Call, Lane, MAX_BODY_LEN};
pub use transport::{RetryPolicy, jittered};

/// The ratelimit key of the daily cap on bot-vs-bot games.
pub const BOT_VS_BOT_DAY: &str = "bot.vsBot.day";

/// Lichess asks to keep chat lines under 140 characters.
pub const MAX_CHAT_LEN: usize = 140;
/// The most games `GET /api/account/playing` is asked for (its `nb`; lila
/// allows 50).
pub const PLAYING_MAX: usize = 50;

/// The most one move-post attempt waits for its answer: Lichess answers
/// in well under a second, so a silent connection is given up quickly and
/// the retry goes to a fresh one.
pub const MOVE_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest a daily bot-game quota is taken to last, whatever the
/// body says (a day and a minute).
pub const BOT_QUOTA_MAX: Duration = Duration::from_secs(86_400 + 60);

/// How long a kept challenge's stream may stay silent: longer than any
/// challenge waits (`matchmaking.challenge_timeout_secs` is at most an hour).
pub const KEPT_CHALLENGE_SILENCE: Duration = Duration::from_secs(2 * 3600);

/// The longest a 429 closes the gate, whatever `Retry-After` says.
pub const MAX_PAUSE: Duration = Duration::from_secs(15 * 60);

/// HTTP/2 keep-alive: a ping this often on every connection, idle or not...
pub const H2_PING_INTERVAL: Duration = Duration::from_secs(5);
/// ...and a connection whose ping is not answered in this long is dead.
pub const H2_PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings of a [`Client`].
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    /// `https://lichess.org`, or a test server.
    pub base_url: String,
    /// How long a 429 closes the gate (at least; `Retry-After` may say more).
    pub rate_limit_pause: Duration,
    /// A stream with no byte for this long is dead.
    pub stream_silence_timeout: Duration,
    /// Longest line kept on a stream.
    pub max_line_len: usize,
    /// Time allowed for one non-streamed request, and for a stream's headers.
    pub request_timeout: Duration,
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Retries of ordinary requests.
    pub retry: RetryPolicy,
    /// Retries of move posts (also bounded by the caller's deadline).
    pub urgent_retry: RetryPolicy,
    /// Retries of game-lane requests (game-stream opens, resign, abort,
    /// claims), which skip the rate-limit gate.
    pub game_retry: RetryPolicy,
    /// The `User-Agent` header.
    pub user_agent: String,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            base_url: "https://lichess.org".to_owned(),
            rate_limit_pause: Duration::from_secs(60),
            stream_silence_timeout: DEFAULT_SILENCE_TIMEOUT,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            request_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy {
                max_attempts: 5,
                initial_backoff: Duration::from_secs(1),
                max_backoff: Duration::from_secs(30),
            },
            urgent_retry: RetryPolicy {
                max_attempts: 30,
                initial_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(1),
            },
            game_retry: RetryPolicy {
                max_attempts: 4,
                initial_backoff: Duration::from_millis(250),
                max_backoff: Duration::from_secs(2),
            },
            user_agent: concat!("kaissa/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The raw bytes of a Lichess stream.
pub type ByteStream = BoxStream<'static, Result<Bytes, reqwest::Error>>;
/// `/api/stream/event`.
pub type EventStream = NdjsonStream<ByteStream, Event>;
/// `/api/bot/game/stream/{id}`.
pub type GameStream = NdjsonStream<ByteStream, GameEvent>;

/// The time of a challenge we create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeTime {
    /// Real time: initial time and increment in seconds.
    Clock {
        limit_secs: u32,
        increment_secs: u32,
    },
    /// Correspondence: days per move.
    Correspondence { days: u32 },
    /// No clock.
    Unlimited,
}

/// A challenge to create with [`Client::create_challenge`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateChallenge {
    pub time: ChallengeTime,
    pub rated: bool,
    pub color: ChallengeColor,
    pub variant: VariantKey,
    /// Starting position of a `fromPosition` game.
    pub fen: Option<String>,
}

/// The Lichess client. Cheap to clone; clones share the connection pool,
/// the rate-limit gate and the request queue.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// Pooled connections, for most requests.
    http: reqwest::Client,
    /// No pooling: a new connection per request (streams, retries).
    fresh: reqwest::Client,
    base_url: String,
    token: Token,
    options: ClientOptions,
    gates: Gates,
    /// One non-urgent request at a time, as Lichess asks.
    queue: Semaphore,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.inner.base_url)
            .field("token", &self.inner.token)
            .field("rate_limited", &self.inner.gates.closed())
            .finish_non_exhaustive()
    }
}

/// Whether `id` can be a Lichess id (game, challenge, user): 1 to 64
/// ASCII letters, digits, `_` or `-`. Ids go into URL paths, and the
/// daemon checks an id before it allocates anything for it.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_id(what: &'static str, id: &str) -> Result<(), Error> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what,
            value: id.chars().take(80).collect(),
        })
    }
}

/// A UCI move: `e2e4`, `e7e8q`, `e1h1`.
fn check_uci(uci: &str) -> Result<(), Error> {
    let b = uci.as_bytes();
    let square = |f: u8, r: u8| (b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r);
    // A crazyhouse drop is `P@e4` (the game stream's form, role upper
    // case); a king promotes only in antichess.
    let drop = b.len() == 4 && b"PNBRQ".contains(&b[0]) && b[1] == b'@' && square(b[2], b[3]);
    let ok = drop
        || (b.len() == 4 || b.len() == 5)
            && square(b[0], b[1])
            && square(b[2], b[3])
            && (b.len() == 4 || b"qrbnk".contains(&b[4]));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: "move",
            value: uci.chars().take(80).collect(),
        })
    }
}

/// Whether the URL's host is this machine (`localhost`, 127.0.0.0/8, ::1).
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The first `max` characters of `text`.
fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

impl Client {
    /// Builds a client. Fails on a base URL that is not http(s).
    pub fn new(token: Token, options: ClientOptions) -> Result<Client, Error> {
        let base_url = options.base_url.trim_end_matches('/').to_owned();
        let url = reqwest::Url::parse(&base_url)
            .map_err(|e| Error::InvalidOptions(format!("base URL {base_url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
            return Err(Error::InvalidOptions(format!(
                "base URL {base_url:?}: expected http:// or https://"
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Error::InvalidOptions(
                "base URL: credentials in the URL are not allowed".to_owned(),
            ));
        }
        if url.scheme() == "http" && !is_loopback(&url) {
            return Err(Error::InvalidOptions(format!(
                "base URL {base_url:?}: plain http:// is allowed for loopback hosts only (the token would travel in clear); use https://"
            )));
        }
        // No client-wide timeout: streams stay open for hours. Timeouts are
        // per request. No redirects: the token must not follow one.
        let builder = || {
            reqwest::Client::builder()
                .user_agent(options.user_agent.clone())
                .connect_timeout(options.connect_timeout)
                .redirect(reqwest::redirect::Policy::none())
                .tcp_keepalive(Duration::from_secs(30))
                .http2_keep_alive_interval(H2_PING_INTERVAL)
                .http2_keep_alive_timeout(H2_PING_TIMEOUT)
                .http2_keep_alive_while_idle(true)
        };
        let build =
            |b: reqwest::ClientBuilder| b.build().map_err(|e| Error::InvalidOptions(chain(&e)));
        let http = build(builder())?;
        let fresh = build(builder().pool_max_idle_per_host(0))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                fresh,
                base_url,
                token,
                options,
                gates: Gates::default(),
                queue: Semaphore::new(1),
            }),
        })
    }

    /// The base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The options the client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// How long `endpoint`'s requests still wait after a 429 there, if
    /// they do.
    pub fn rate_limited_for(&self, endpoint: Endpoint) -> Option<Duration> {
        self.inner.gates.remaining(endpoint)
    }

    /// The endpoints paused by a 429 now, with their time left.
    pub fn rate_limited(&self) -> Vec<(Endpoint, Duration)> {
        self.inner.gates.closed()
    }

    /// `GET /api/account`: who we are. Use it to check the token at startup.
    pub async fn account(&self) -> Result<Account, Error> {
        self.json(Call::to(&routes::ACCOUNT, &[])).await
    }

    /// `POST /api/bot/account/upgrade`: turn the account into a bot account.
    /// Irreversible, and only for an account that never played a game.
    pub async fn upgrade_to_bot(&self) -> Result<(), Error> {
        self.ok(Call::to(&routes::UPGRADE, &[])).await
    }

    /// `POST /api/token/test`: what our token is (its scopes, its user,
    /// when it expires); `None` if Lichess does not know it. The answer
    /// is keyed by the token itself: only the value is kept, and no error
    /// of this call quotes the body.
    pub async fn token_info(&self) -> Result<Option<TokenInfo>, Error> {
        let mut call = Call::to(&routes::TOKEN_TEST, &[]);
        call.text = Some(self.inner.token.expose().to_owned());
        let body = self.body(&call).await?;
        let tokens: HashMap<String, Option<TokenInfo>> =
            serde_json::from_slice(&body).map_err(|_| Error::Decode {
                path: call.path.clone(),
                message: "not a map of tokens".to_owned(),
            })?;
        Ok(tokens.into_values().next().flatten())
    }

    /// `GET /api/bot/online`: bots online now (up to `nb`), ndjson. Lines
    /// that do not parse are skipped.
    pub async fn online_bots(&self, nb: u32) -> Result<Vec<OnlineBot>, Error> {
        let mut call = Call::to(&routes::ONLINE_BOTS, &[]);
        call.query.push(("nb", nb.to_string()));
        let body = self.body(&call).await?;
        Ok(body
            .split(|b| *b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect())
    }

    /// `GET /api/users/status?ids=`: whether these users (at most 100)
    /// are online and playing. Behind the online bots' gate (matchmaking
    /// asks both).
    pub async fn users_status(&self, ids: &[String]) -> Result<Vec<UserStatus>, Error> {
        for id in ids {
            check_id("username", id)?;
        }
        let mut call = Call::to(&routes::USERS_STATUS, &[]);
        call.query.push((
            "ids",
            ids.iter().take(100).cloned().collect::<Vec<_>>().join(","),
        ));
        self.json(call).await
    }

    /// `GET /api/account/playing`: our ongoing games (up to
    /// [`PLAYING_MAX`]; a list that long may leave some out).
    pub async fn playing(&self) -> Result<NowPlaying, Error> {
        let mut call = Call::to(&routes::PLAYING, &[]);
        call.query.push(("nb", PLAYING_MAX.to_string()));
        self.json(call).await
    }

    /// `GET /api/stream/event`: challenges and game starts/finishes. On
    /// connect Lichess replays open challenges and ongoing games. Opening
    /// it closes any other event stream of the same token.
    pub async fn stream_events(&self) -> Result<EventStream, Error> {
        let mut call = Call::to(&routes::EVENTS, &[]);
        call.lane = Lane::Events;
        self.stream(call).await
    }

    /// `GET /api/bot/game/stream/{id}`: `gameFull`, then `gameState` on
    /// every move, chat lines and opponent-gone notices.
    pub async fn stream_game(&self, game_id: &str) -> Result<GameStream, Error> {
        check_id("game id", game_id)?;
        let mut call = Call::to(&routes::GAME_STREAM, &[game_id]);
        call.lane = Lane::Game;
        self.stream(call).await
    }

    /// `POST /api/bot/game/{id}/move/{uci}`, optionally offering (or
    /// accepting) a draw. Urgent: retried until `deadline` on transport
    /// errors, 5xx and 429, without waiting for the gate. A 400 answer is
    /// [`Error::MoveRejected`] at once.
    pub async fn make_move(
        &self,
        game_id: &str,
        uci: &str,
        offering_draw: bool,
        deadline: Instant,
    ) -> Result<(), Error> {
        check_id("game id", game_id)?;
        check_uci(uci)?;
        let mut call = Call::to(&routes::MOVE, &[game_id, uci]);
        if offering_draw {
            call.query.push(("offeringDraw", "true".to_owned()));
        }
        call.lane = Lane::Move { deadline };
        call.mv = Some((game_id.to_owned(), uci.to_owned()));
        self.ok(call).await
    }

    /// `POST /api/bot/game/{id}/chat`. The text is cut to
    /// [`MAX_CHAT_LEN`] characters.
    pub async fn chat(&self, game_id: &str, room: ChatRoom, text: &str) -> Result<(), Error> {
        check_id("game id", game_id)?;
        if room == ChatRoom::Unknown {
            return Err(Error::InvalidArgument {
                what: "chat room",
                value: room.as_str().to_owned(),
            });
        }
        let mut call = Call::to(&routes::CHAT, &[game_id]);
        call.form = Some(vec![
            ("room", room.as_str().to_owned()),
            ("text", truncate_chars(text, MAX_CHAT_LEN).to_owned()),
        ]);
        self.ok(call).await
    }

    /// `GET /api/bot/game/{id}/chat`: the player chat so far.
    pub async fn chat_history(&self, game_id: &str) -> Result<Vec<ChatMessage>, Error> {
        check_id("game id", game_id)?;
        self.json(Call::to(&routes::CHAT_HISTORY, &[game_id])).await
    }

    /// `POST /api/bot/game/{id}/abort` (only before both sides moved).
    /// On the game lane.
    pub async fn abort(&self, game_id: &str) -> Result<(), Error> {
        self.game_action(&routes::ABORT, game_id, &[], Lane::Game)
            .await
    }

    /// `POST /api/bot/game/{id}/resign`. On the game lane.
    pub async fn resign(&self, game_id: &str) -> Result<(), Error> {
        self.game_action(&routes::RESIGN, game_id, &[], Lane::Game)
            .await
    }

    /// `POST /api/bot/game/{id}/draw/{yes|no}`: answer (or, with yes,
    /// make) a draw offer.
    pub async fn answer_draw(&self, game_id: &str, accept: bool) -> Result<(), Error> {
        self.game_action(&routes::DRAW, game_id, &[yes_no(accept)], Lane::Queued)
            .await
    }

    /// `POST /api/bot/game/{id}/takeback/{yes|no}`.
    pub async fn answer_takeback(&self, game_id: &str, accept: bool) -> Result<(), Error> {
        self.game_action(&routes::TAKEBACK, game_id, &[yes_no(accept)], Lane::Queued)
            .await
    }

    /// `POST /api/bot/game/{id}/claim-victory`, after `opponentGone` and
    /// `claimWinInSeconds`. On the game lane.
    pub async fn claim_victory(&self, game_id: &str) -> Result<(), Error> {
        self.game_action(&routes::CLAIM_VICTORY, game_id, &[], Lane::Game)
            .await
    }

    /// `POST /api/bot/game/{id}/claim-draw`, after `opponentGone`. On the
    /// game lane.
    pub async fn claim_draw(&self, game_id: &str) -> Result<(), Error> {
        self.game_action(&routes::CLAIM_DRAW, game_id, &[], Lane::Game)
            .await
    }

    /// A `POST` to a game's `route` (its checked id, then `rest`).
    async fn game_action(
        &self,
        route: &Route,
        game_id: &str,
        rest: &[&str],
        lane: Lane,
    ) -> Result<(), Error> {
        check_id("game id", game_id)?;
        let args: Vec<&str> = std::iter::once(game_id)
            .chain(rest.iter().copied())
            .collect();
        let mut call = Call::to(route, &args);
        call.lane = lane;
        self.ok(call).await
    }

    /// `POST /api/challenge/{id}/accept`. [`Error::NotFound`] if the
    /// challenge is gone.
    pub async fn accept_challenge(&self, challenge_id: &str) -> Result<(), Error> {
        check_id("challenge id", challenge_id)?;
        self.ok(Call::to(&routes::CHALLENGE_ACCEPT, &[challenge_id]))
            .await
    }

    /// `POST /api/challenge/{id}/decline` with a reason.
    pub async fn decline_challenge(
        &self,
        challenge_id: &str,
        reason: DeclineReason,
    ) -> Result<(), Error> {
        check_id("challenge id", challenge_id)?;
        let mut call = Call::to(&routes::CHALLENGE_DECLINE, &[challenge_id]);
        call.form = Some(vec![("reason", reason.as_str().to_owned())]);
        self.ok(call).await
    }

    /// `POST /api/challenge/{id}/cancel`: withdraw our own challenge.
    pub async fn cancel_challenge(&self, challenge_id: &str) -> Result<(), Error> {
        check_id("challenge id", challenge_id)?;
        self.ok(Call::to(&routes::CHALLENGE_CANCEL, &[challenge_id]))
            .await
    }

    /// `POST /api/challenge/{username}`: challenge someone. A real-time
    /// challenge made this way expires after 20 s unless accepted: see
    /// [`Client::create_challenge_kept`] for one that waits longer. A bot
    /// that played its daily bot games gets [`Error::RateLimited`] with
    /// [`Error::bot_vs_bot_daily_limit`] set; an opponent that played its
    /// own gets a 400 with [`Error::refused_by_limit`].
    pub async fn create_challenge(
        &self,
        username: &str,
        challenge: &CreateChallenge,
    ) -> Result<Challenge, Error> {
        let call = challenge_call(username, challenge, false)?;
        let path = call.path.clone();
        let value: serde_json::Value = self.json(call).await?;
        challenge_from(value, &path)
    }

    /// `POST /api/challenge/{username}` with `keepAliveStream=true`: the
    /// answer is a stream, and Lichess keeps the challenge open (past its
    /// usual 20 s) as long as the stream is: drop the returned
    /// [`ChallengeKeepAlive`] to let the challenge go.
    pub async fn create_challenge_kept(
        &self,
        username: &str,
        challenge: &CreateChallenge,
    ) -> Result<(Challenge, ChallengeKeepAlive), Error> {
        let call = challenge_call(username, challenge, true)?;
        let path = call.path.clone();
        let stream: NdjsonStream<ByteStream, serde_json::Value> = self.stream(call).await?;
        // Whether Lichess sends keep-alive lines here is not documented:
        // silence must not end the stream (and with it the challenge),
        // only the caller, who settles the challenge, does.
        let mut stream = stream.silence_timeout(KEPT_CHALLENGE_SILENCE);
        loop {
            match stream.next().await {
                Some(Ok(StreamEvent::Item(value))) => {
                    let challenge = challenge_from(value, &path)?;
                    return Ok((challenge, ChallengeKeepAlive { stream }));
                }
                Some(Ok(StreamEvent::KeepAlive | StreamEvent::Skipped(_))) => {}
                Some(Err(e)) => {
                    return Err(Error::Decode {
                        path,
                        message: e.to_string(),
                    });
                }
                None => {
                    return Err(Error::Decode {
                        path,
                        message: "the stream ended before the challenge".to_owned(),
                    });
                }
            }
        }
    }

    /// `GET /api/tournament/{id}`: an arena's state (with `me` when we
    /// play in it).
    pub async fn tournament(&self, id: &str) -> Result<ArenaTournament, Error> {
        check_id("tournament id", id)?;
        self.json(Call::to(&routes::TOURNAMENT, &[id])).await
    }

    /// `POST /api/tournament/{id}/join`: join an arena (or come back from
    /// a pause). `pair_me_asap`: pair us now although we are not on the
    /// tournament page; Lichess forgets it after a minute, so a bot
    /// waiting for a pairing calls again. The password is sent, never
    /// logged.
    pub async fn join_tournament(
        &self,
        id: &str,
        team: Option<&str>,
        password: Option<&str>,
        pair_me_asap: bool,
    ) -> Result<(), Error> {
        check_id("tournament id", id)?;
        let mut call = Call::to(&routes::TOURNAMENT_JOIN, &[id]);
        let mut form = Vec::new();
        if let Some(team) = team {
            form.push(("team", team.to_owned()));
        }
        if let Some(password) = password {
            form.push(("password", password.to_owned()));
        }
        if pair_me_asap {
            form.push(("pairMeAsap", "true".to_owned()));
        }
        call.form = Some(form);
        self.ok(call).await
    }

    /// `POST /api/tournament/{id}/withdraw`: leave an arena that has not
    /// started, or pause in one that has.
    pub async fn withdraw_tournament(&self, id: &str) -> Result<(), Error> {
        check_id("tournament id", id)?;
        self.ok(Call::to(&routes::TOURNAMENT_WITHDRAW, &[id])).await
    }

    /// `POST /team/{teamId}/join` (lila's route has no `/api`): become a
    /// member of a team (for its team battles); a team that asks for a
    /// password gets it.
    pub async fn join_team(&self, team: &str, password: Option<&str>) -> Result<(), Error> {
        check_id("team id", team)?;
        let mut call = Call::to(&routes::TEAM_JOIN, &[team]);
        if let Some(password) = password {
            call.form = Some(vec![("password", password.to_owned())]);
        }
        self.ok(call).await
    }
}

/// The request that creates a challenge to `username`.
fn challenge_call(
    username: &str,
    challenge: &CreateChallenge,
    keep_alive: bool,
) -> Result<Call, Error> {
    check_id("username", username)?;
    let mut form = vec![
        ("rated", challenge.rated.to_string()),
        ("color", challenge.color.as_str().to_owned()),
        ("variant", challenge.variant.as_str().to_owned()),
    ];
    match challenge.time {
        ChallengeTime::Clock {
            limit_secs,
            increment_secs,
        } => {
            form.push(("clock.limit", limit_secs.to_string()));
            form.push(("clock.increment", increment_secs.to_string()));
        }
        ChallengeTime::Correspondence { days } => form.push(("days", days.to_string())),
        ChallengeTime::Unlimited => {}
    }
    if let Some(fen) = &challenge.fen {
        form.push(("fen", fen.clone()));
    }
    if keep_alive {
        form.push(("keepAliveStream", "true".to_owned()));
    }
    let mut call = Call::to(&routes::CHALLENGE_CREATE, &[username]);
    call.form = Some(form);
    Ok(call)
}

/// The challenge of a create answer. The spec documents the challenge
/// itself; lila has also answered `{"challenge": {...}}`. Both are taken.
fn challenge_from(value: serde_json::Value, path: &str) -> Result<Challenge, Error> {
    let value = match value {
        serde_json::Value::Object(mut map) if map.contains_key("challenge") => {
            map.remove("challenge").unwrap_or_default()
        }
        other => other,
    };
    serde_json::from_value(value).map_err(|e| Error::Decode {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// The open answer to a challenge created with `keepAliveStream`: the
/// challenge lives while this does.
#[derive(Debug)]
pub struct ChallengeKeepAlive {
    stream: NdjsonStream<ByteStream, serde_json::Value>,
}

impl ChallengeKeepAlive {
    /// Reads the stream until Lichess says how the challenge ended
    /// (`{"done": "accepted"}`: that word), or until it ends or fails
    /// (`None`).
    pub async fn done(mut self) -> Option<String> {
        while let Some(Ok(event)) = self.stream.next().await {
            if let StreamEvent::Item(value) = event
                && let Some(done) = value.get("done").and_then(|d| d.as_str())
            {
                return Some(done.to_owned());
            }
        }
        None
    }
}

/// Reads a whole (bounded) body.
async fn read_body(mut response: Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_BODY_LEN.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY_LEN {
            break;
        }
    }
    Ok(body)
}

fn yes_no(accept: bool) -> &'static str {
    if accept { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_debug_hides_token() {
        let token = Token::new("lip_supersecret").unwrap();
        let client = Client::new(token, ClientOptions::default()).unwrap();
        let debug = format!("{client:?}");
        assert!(!debug.contains("supersecret"), "{debug}");
        assert!(debug.contains("Token(***)"), "{debug}");
    }

    #[test]
    fn base_url_is_checked() {
        let token = Token::new("t").unwrap();
        let with = |url: &str| {
            Client::new(
                token.clone(),
                ClientOptions {
                    base_url: url.to_owned(),
                    ..ClientOptions::default()
                },
            )
        };
        assert_eq!(
            with("http://127.0.0.1:8080/").unwrap().base_url(),
            "http://127.0.0.1:8080"
        );
        assert!(with("http://localhost:9/").is_ok());
        assert!(with("http://[::1]:9").is_ok());
        assert!(with("http://127.0.0.2").is_ok());
        assert!(with("https://lichess.org").is_ok());
        let e = with("http://lichess.org").unwrap_err().to_string();
        assert!(e.contains("loopback"), "{e}");
        assert!(with("http://10.0.0.1").is_err());
        assert!(with("ftp://example.org").is_err());
        assert!(with("not a url").is_err());
        assert!(with("https://user:pw@lichess.org").is_err());
    }

    #[test]
    fn ids_and_moves_are_checked() {
        assert!(check_id("game id", "abcDEF12").is_ok());
        assert!(check_id("username", "Some_User-1").is_ok());
        assert!(check_id("game id", "").is_err());
        assert!(check_id("game id", "../account").is_err());
        assert!(check_id("game id", "a?b").is_err());
        for good in ["e2e4", "e7e8q", "e1h1", "a7a8n", "P@e4", "Q@h8", "b2b1k"] {
            assert!(check_uci(good).is_ok(), "{good}");
        }
        for bad in [
            "", "e2", "e2e9", "i2e4", "e7e8x", "e2e4e4", "0000", "e2e4 ", "K@e4", "p@e4", "P@e9",
            "P@e44",
        ] {
            assert!(check_uci(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn chat_is_cut_on_a_character_boundary() {
        let text = "é".repeat(200);
        let cut = truncate_chars(&text, MAX_CHAT_LEN);
        assert_eq!(cut.chars().count(), MAX_CHAT_LEN);
        assert_eq!(truncate_chars("short", MAX_CHAT_LEN), "short");
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for _ in 0..100 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = policy.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            assert!(policy.backoff(40) <= Duration::from_secs(1));
        }
    }
}
