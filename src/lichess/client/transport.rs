//! The transport under every endpoint call: a [`Call`] described once
//! and sent (possibly several times) down its lane, behind its rate-limit
//! gate, with the retries its lane allows and each failure turned into an
//! [`Error`]; the answers read as `{"ok": true}`, JSON, a whole body or an
//! ndjson stream.

use super::*;
use crate::metrics::metrics;

/// The most we read of a non-streamed response body.
pub(super) const MAX_BODY_LEN: usize = 4 << 20;

/// The least time an urgent attempt gets, even past its deadline.
const MIN_URGENT_ATTEMPT: Duration = Duration::from_millis(100);
/// A move-post attempt gets half of what is left before its deadline,
/// so that a retry on a fresh connection fits in the rest when the first
/// hangs on a dead one, but not less than this (any round trip), unless
/// the deadline is nearer.
const MOVE_ATTEMPT_FLOOR: Duration = Duration::from_secs(1);

/// How to retry a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Delay before the first retry; doubled at each retry.
    pub initial_backoff: Duration,
    /// The longest delay between attempts.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// The delay before retry `retry` (1-based): exponential, capped, and
    /// jittered to between half and all of it, so that clients that failed
    /// together do not come back together.
    pub(super) fn backoff(&self, retry: u32) -> Duration {
        let exp = 2u32.saturating_pow(retry.saturating_sub(1));
        let full = self
            .initial_backoff
            .saturating_mul(exp)
            .min(self.max_backoff);
        jittered(full)
    }
}

/// `delay` jittered to between half and all of it, so that clients (or
/// streams) that failed together do not come back together.
pub fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(0.5 + 0.5 * fastrand::f64())
}

/// Which path a request takes (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// One at a time, behind its endpoint's rate-limit gate.
    Queued,
    /// Keeps a game alive: no gate, no queue, quick retries.
    Game,
    /// A move post, retried until its deadline.
    Move { deadline: Instant },
    /// The event stream's open: no gate, no queue, one attempt.
    Events,
}

/// One request, described before it is sent (possibly several times).
#[derive(Debug)]
pub(super) struct Call {
    pub(super) method: Method,
    pub(super) path: String,
    /// Whose rate-limit gate it waits at and closes.
    pub(super) endpoint: Endpoint,
    pub(super) query: Vec<(&'static str, String)>,
    pub(super) form: Option<Vec<(&'static str, String)>>,
    /// A plain-text body (never logged: it may be the token).
    pub(super) text: Option<String>,
    pub(super) lane: Lane,
    /// Keep the body open: no timeout past the headers.
    pub(super) stream: bool,
    /// For a move post: game id and move, to build `MoveRejected`.
    pub(super) mv: Option<(String, String)>,
}

impl Call {
    /// A call to `route`, its path filled in with `args`.
    pub(super) fn to(route: &Route, args: &[&str]) -> Call {
        debug_assert_eq!(route.params(), args.len(), "{}", route.path);
        Call {
            method: route.method.clone(),
            path: route.path_with(args),
            endpoint: route.endpoint,
            query: Vec::new(),
            form: None,
            text: None,
            lane: Lane::Queued,
            stream: false,
            mv: None,
        }
    }
}

impl Client {
    /// Sends a call and expects `{"ok": true}` (or any 2xx).
    pub(super) async fn ok(&self, call: Call) -> Result<(), Error> {
        let timeout = self.attempt_timeout(&call);
        let response = self.send(&call).await?;
        // Drain the body so the connection can be reused; its content does
        // not matter once the status is 2xx. A move's caller does not wait
        // for it: its game may have the next position to search already.
        let drain = tokio::time::timeout(timeout, read_body(response));
        if matches!(call.lane, Lane::Move { .. }) {
            tokio::spawn(drain);
        } else {
            let _ = drain.await;
        }
        Ok(())
    }

    /// Sends a call and parses the JSON answer.
    pub(super) async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T, Error> {
        let body = self.body(&call).await?;
        serde_json::from_slice(&body).map_err(|e| Error::Decode {
            path: call.path,
            message: e.to_string(),
        })
    }

    /// Sends a call and reads the whole (bounded) answer.
    pub(super) async fn body(&self, call: &Call) -> Result<Vec<u8>, Error> {
        let timeout = self.attempt_timeout(call);
        let response = self.send(call).await?;
        match tokio::time::timeout(timeout, read_body(response)).await {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(error)) => Err(Error::Transport {
                path: call.path.clone(),
                source: error.without_url(),
            }),
            Err(_) => Err(Error::Timeout {
                path: call.path.clone(),
                after: timeout,
            }),
        }
    }

    /// Opens an ndjson stream.
    pub(super) async fn stream<T>(
        &self,
        mut call: Call,
    ) -> Result<NdjsonStream<ByteStream, T>, Error> {
        call.stream = true;
        let response = self.send(&call).await?;
        let options = &self.inner.options;
        Ok(NdjsonStream::new(response.bytes_stream().boxed())
            .silence_timeout(options.stream_silence_timeout)
            .max_line_len(options.max_line_len))
    }

    fn attempt_timeout(&self, call: &Call) -> Duration {
        let timeout = self.inner.options.request_timeout;
        match call.lane {
            Lane::Move { deadline } => {
                let left = deadline.saturating_duration_since(Instant::now());
                (left / 2)
                    .max(MOVE_ATTEMPT_FLOOR)
                    .min(left)
                    .max(MIN_URGENT_ATTEMPT)
                    .min(timeout)
                    .min(MOVE_ATTEMPT_TIMEOUT)
            }
            Lane::Queued | Lane::Game | Lane::Events => timeout,
        }
    }

    /// Sends a call on its lane, with the retries; returns the 2xx
    /// response or the last error.
    async fn send(&self, call: &Call) -> Result<Response, Error> {
        let inner = &*self.inner;
        let policy = match call.lane {
            Lane::Queued => inner.options.retry,
            Lane::Game => inner.options.game_retry,
            Lane::Move { .. } => inner.options.urgent_retry,
            Lane::Events => RetryPolicy {
                max_attempts: 1,
                ..inner.options.game_retry
            },
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let permit = match call.lane {
                Lane::Queued => loop {
                    inner.gates.wait(call.endpoint).await;
                    // The semaphore is never closed; if it were, go on
                    // without it rather than fail.
                    let permit = inner.queue.acquire().await.ok();
                    // The gate may have closed while we queued: then the
                    // queue goes to the others while we wait again.
                    if inner.gates.remaining(call.endpoint).is_none() {
                        break permit;
                    }
                },
                Lane::Game | Lane::Move { .. } | Lane::Events => None,
            };
            let timeout = self.attempt_timeout(call);
            let started = Instant::now();
            // A stream gets a connection of its own; a retry goes to a
            // fresh one (the last may be dead).
            let fresh = call.stream || attempt > 1;
            let result = tokio::time::timeout(timeout, self.request(call, fresh).send()).await;
            drop(permit);
            let endpoint = call.endpoint.name();
            match &result {
                Ok(Ok(response)) => {
                    let status = response.status().as_u16().to_string();
                    metrics().inc(
                        "kaissa_requests_total",
                        &[("endpoint", endpoint), ("status", &status)],
                    );
                    if response.status().as_u16() == 429 {
                        metrics().inc("kaissa_rate_limited_total", &[("endpoint", endpoint)]);
                    }
                }
                _ => metrics().inc("kaissa_request_failures_total", &[("endpoint", endpoint)]),
            }
            let error = match result {
                Ok(Ok(response)) if response.status().is_success() => {
                    inner.gates.cleared(call.endpoint);
                    debug!(
                        method = %call.method,
                        path = %call.path,
                        status = response.status().as_u16(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "lichess request"
                    );
                    return Ok(response);
                }
                Ok(Ok(response)) => self.error_from(call, response, attempt > 1).await,
                Ok(Err(error)) => Error::Transport {
                    path: call.path.clone(),
                    source: error.without_url(),
                },
                Err(_) => Error::Timeout {
                    path: call.path.clone(),
                    after: timeout,
                },
            };
            let retry = match error {
                Error::RateLimited { .. } => call.lane != Lane::Queued,
                ref other => other.is_transient(),
            };
            if !retry || attempt >= policy.max_attempts {
                return Err(error);
            }
            let delay = policy.backoff(attempt);
            if let Lane::Move { deadline } = call.lane
                && Instant::now() + delay >= deadline
            {
                return Err(Error::DeadlineExceeded {
                    path: call.path.clone(),
                    last: Box::new(error),
                });
            }
            warn!(
                method = %call.method,
                path = %call.path,
                attempt,
                retry_in_ms = delay.as_millis() as u64,
                "lichess request failed, retrying: {error}"
            );
            tokio::time::sleep(delay).await;
        }
    }

    fn request(&self, call: &Call, fresh: bool) -> reqwest::RequestBuilder {
        let inner = &*self.inner;
        let url = format!("{}{}", inner.base_url, call.path);
        let http = if fresh { &inner.fresh } else { &inner.http };
        let mut request = http
            .request(call.method.clone(), url)
            .header(AUTHORIZATION, inner.token.header());
        if call.stream {
            request = request.header(ACCEPT, "application/x-ndjson");
        } else {
            request = request.header(ACCEPT, "application/json");
        }
        if !call.query.is_empty() {
            request = request.query(&call.query);
        }
        if let Some(form) = &call.form {
            request = request.form(form);
        }
        if let Some(text) = &call.text {
            request = request.body(text.clone());
        }
        request
    }

    /// Turns a non-2xx answer into an [`Error`], closing the gate on 429.
    async fn error_from(&self, call: &Call, response: Response, after_retry: bool) -> Error {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(|secs| Duration::from_secs(secs.min(MAX_PAUSE.as_secs())));
        // Within the call's own bound: a move post's is its deadline.
        let body = tokio::time::timeout(self.attempt_timeout(call), read_body(response))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let parsed: Option<ErrorBody> = serde_json::from_slice(&body).ok();
        let message = match &parsed {
            Some(parsed) if parsed.error.is_some() => parsed.message(),
            _ => String::from_utf8_lossy(&body).trim().to_owned(),
        };
        let message = truncate_chars(&message, 300).to_owned();
        let path = call.path.clone();
        match status {
            StatusCode::UNAUTHORIZED => Error::Unauthorized { path },
            StatusCode::FORBIDDEN => Error::Forbidden { path, message },
            StatusCode::NOT_FOUND => Error::NotFound { path, message },
            StatusCode::TOO_MANY_REQUESTS => {
                let limit = parsed.and_then(|p| p.ratelimit);
                // The daily cap on bot games is a quota on games, not on
                // requests: everything else goes on (the caller stops
                // playing bots until it lifts).
                let quota = limit.as_ref().and_then(|l| l.key.as_deref()) == Some(BOT_VS_BOT_DAY);
                // The wait the answer asks for (its `ratelimit.seconds`,
                // else `Retry-After`), else the configured pause; doubled
                // for each 429 in a row on this endpoint.
                let asked = limit
                    .as_ref()
                    .and_then(|l| l.seconds)
                    .map(|s| Duration::from_secs(s.clamp(1, MAX_PAUSE.as_secs())))
                    .or(retry_after.filter(|d| !d.is_zero()));
                let base = asked.unwrap_or(self.inner.options.rate_limit_pause);
                let pause = if quota {
                    Duration::ZERO
                } else {
                    self.inner.gates.strike(call.endpoint, base)
                };
                if quota {
                    warn!(
                        method = %call.method,
                        path = %call.path,
                        "lichess daily bot-game quota reached (429 [{BOT_VS_BOT_DAY}]); other requests go on"
                    );
                } else {
                    warn!(
                        method = %call.method,
                        path = %call.path,
                        endpoint = ?call.endpoint,
                        pause_s = pause.as_secs(),
                        "lichess rate limit (429){}: pausing these requests (others go on)",
                        limit_key(&limit)
                    );
                }
                Error::RateLimited {
                    path,
                    message,
                    limit,
                    retry_after,
                    pause,
                }
            }
            StatusCode::BAD_REQUEST if call.mv.is_some() => {
                let (game_id, uci) = call.mv.clone().unwrap_or_default();
                Error::MoveRejected {
                    game_id,
                    uci,
                    message,
                    after_retry,
                }
            }
            status if status.is_server_error() => Error::Server {
                path,
                status: status.as_u16(),
            },
            status => Error::Status {
                path,
                status: status.as_u16(),
                message,
                limit: parsed.and_then(|p| p.ratelimit),
                form: is_form_error(&body),
            },
        }
    }
}
