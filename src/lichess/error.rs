//! [`Error`]: everything that can go wrong with a Lichess request, with
//! what the caller needs to act on it (a rate limit's key and wait, a
//! form error, the daily bot quota). No variant holds the token.

use std::time::Duration;

use super::client::{BOT_QUOTA_MAX, BOT_VS_BOT_DAY};
use super::model::RateLimitInfo;

/// Everything that can go wrong with a request. No variant contains the
/// token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The options do not make a client (bad base URL...).
    #[error("invalid client options: {0}")]
    InvalidOptions(String),
    /// An id or move that cannot be part of a request path.
    #[error("invalid {what}: {value:?}")]
    InvalidArgument { what: &'static str, value: String },
    /// 401: the token is wrong or revoked.
    #[error("{path}: unauthorized (HTTP 401): the token is invalid or revoked")]
    Unauthorized { path: String },
    /// 403: e.g. a missing scope, or a bot endpoint with a non-bot account.
    #[error("{path}: forbidden (HTTP 403): {message}")]
    Forbidden { path: String, message: String },
    /// 404: unknown game or challenge (it may just have ended).
    #[error("{path}: not found (HTTP 404): {message}")]
    NotFound { path: String, message: String },
    /// HTTP 429: the gate is closed for `pause` for all non-urgent
    /// requests; the daily bot-game quota closes nothing (`pause` is 0).
    #[error("{path}: rate limited (HTTP 429){}; requests paused for {pause:?}: {message}", limit_key(.limit))]
    RateLimited {
        path: String,
        message: String,
        /// The `ratelimit` body, if any (e.g. `bot.vsBot.day`).
        limit: Option<RateLimitInfo>,
        /// The `Retry-After` header, if any.
        retry_after: Option<Duration>,
        /// How long the gate closed.
        pause: Duration,
    },
    /// 400 to a move post: not our turn, illegal move, game over.
    #[error("move {uci} rejected in game {game_id}: {message}")]
    MoveRejected {
        game_id: String,
        uci: String,
        message: String,
        /// The post was retried after a transport error, so an earlier
        /// attempt may have gone through (then "Not your turn" is no
        /// surprise); the game stream tells.
        after_retry: bool,
    },
    /// Any other 4xx answer.
    #[error("{path}: HTTP {status}: {message}{}", limit_key(.limit))]
    Status {
        path: String,
        status: u16,
        message: String,
        /// The `ratelimit` body, if any (a 400 to a challenge: the
        /// opponent's daily cap).
        limit: Option<RateLimitInfo>,
        /// The body names the request's own fields (`{"error": {"field":
        /// [...]}}` or the field map alone): Lichess's form errors.
        form: bool,
    },
    /// A 5xx answer, after the retries.
    #[error("{path}: server error (HTTP {status})")]
    Server { path: String, status: u16 },
    /// The connection failed, after the retries.
    #[error("{path}: transport error: {}", chain(.source))]
    Transport {
        path: String,
        #[source]
        source: reqwest::Error,
    },
    /// No answer in time, after the retries.
    #[error("{path}: no response within {after:?}")]
    Timeout { path: String, after: Duration },
    /// The answer was not the expected JSON.
    #[error("{path}: unexpected response body: {message}")]
    Decode { path: String, message: String },
    /// An urgent request ran out of time; `last` is the last failure.
    #[error("{path}: deadline passed; last error: {last}")]
    DeadlineExceeded { path: String, last: Box<Error> },
}

pub(super) fn limit_key(limit: &Option<RateLimitInfo>) -> String {
    match limit.as_ref().and_then(|l| l.key.as_deref()) {
        Some(key) => format!(" [{key}]"),
        None => String::new(),
    }
}

pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Error {
    /// Whether a later attempt may succeed: transport errors, timeouts, 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Transport { .. } | Error::Timeout { .. } | Error::Server { .. } => true,
            Error::DeadlineExceeded { last, .. } => last.is_transient(),
            _ => false,
        }
    }

    /// The HTTP status of the answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Unauthorized { .. } => Some(401),
            Error::Forbidden { .. } => Some(403),
            Error::NotFound { .. } => Some(404),
            Error::RateLimited { .. } => Some(429),
            Error::MoveRejected { .. } => Some(400),
            Error::Status { status, .. } | Error::Server { status, .. } => Some(*status),
            Error::DeadlineExceeded { last, .. } => last.status(),
            _ => None,
        }
    }

    /// The ratelimit key of the answer's body, e.g. [`BOT_VS_BOT_DAY`].
    pub fn rate_limit_key(&self) -> Option<&str> {
        match self {
            Error::RateLimited { limit, .. } | Error::Status { limit, .. } => {
                limit.as_ref()?.key.as_deref()
            }
            _ => None,
        }
    }

    /// A 400 (not a 429) with a `ratelimit` body: the other side's limit
    /// (a bot that played its games for the day), with how long it lasts
    /// if the body says.
    pub fn refused_by_limit(&self) -> Option<&RateLimitInfo> {
        match self {
            Error::Status {
                status: 400,
                limit: Some(limit),
                ..
            } => Some(limit),
            _ => None,
        }
    }

    /// A 400 that names the request's own fields (`{"error": {"field":
    /// [...]}}`, Lichess's form errors): the request was wrong, not the
    /// other side's answer.
    pub fn is_form_error(&self) -> bool {
        matches!(
            self,
            Error::Status {
                status: 400,
                form: true,
                ..
            }
        )
    }

    /// Lichess's message of a 4xx answer (its `error`), if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            Error::Forbidden { message, .. }
            | Error::NotFound { message, .. }
            | Error::RateLimited { message, .. }
            | Error::MoveRejected { message, .. }
            | Error::Status { message, .. } => Some(message),
            _ => None,
        }
    }

    /// If this is the bot-vs-bot daily cap, how long until it lifts.
    pub fn bot_vs_bot_daily_limit(&self) -> Option<Duration> {
        match self {
            Error::RateLimited {
                limit: Some(limit),
                retry_after,
                pause,
                ..
            } if limit.key.as_deref() == Some(BOT_VS_BOT_DAY) => Some(
                limit
                    .seconds
                    .map(Duration::from_secs)
                    .or(*retry_after)
                    .unwrap_or(*pause)
                    .min(BOT_QUOTA_MAX),
            ),
            _ => None,
        }
    }
}

/// Whether an error body is a form error: the request's fields with what
/// is wrong with each, under `error` or at the top level.
pub(super) fn is_form_error(body: &[u8]) -> bool {
    use serde_json::Value;
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => match map.get("error") {
            Some(error) => error.is_object(),
            None => {
                !map.is_empty()
                    && !map.contains_key("ratelimit")
                    && map.values().all(Value::is_array)
            }
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_errors_are_told_apart() {
        assert!(is_form_error(
            br#"{"error":{"clock.limit":["Invalid value"]}}"#
        ));
        assert!(is_form_error(
            br#"{"clock.limit":["Invalid value"],"error":{"clock.limit":["Invalid value"]}}"#
        ));
        assert!(is_form_error(br#"{"clock.limit":["Invalid value"]}"#));
        assert!(!is_form_error(br#"{"error":"Not your turn"}"#));
        assert!(!is_form_error(
            br#"{"error":"bob played 100 games","ratelimit":{"key":"bot.vsBot.day","seconds":9}}"#
        ));
        assert!(!is_form_error(b"not json"));
    }

    #[test]
    fn error_messages() {
        let e = Error::RateLimited {
            path: "/api/challenge/bob".into(),
            message: "You played 100 games".into(),
            limit: Some(RateLimitInfo {
                key: Some(BOT_VS_BOT_DAY.into()),
                seconds: Some(3600),
            }),
            retry_after: None,
            pause: Duration::from_secs(60),
        };
        assert_eq!(e.bot_vs_bot_daily_limit(), Some(Duration::from_secs(3600)));
        assert_eq!(e.rate_limit_key(), Some(BOT_VS_BOT_DAY));
        assert_eq!(e.status(), Some(429));
        assert!(e.to_string().contains("[bot.vsBot.day]"), "{e}");
    }
}
