//! Lichess's online move sources: the tablebase server
//! (`{tablebase_url}/standard?fen=...`, up to 7 pieces) and the cloud
//! evaluation (`{lichess}/api/cloud-eval?fen=...`), used as an online
//! book. Both are public: no token is sent. They have their own HTTP
//! client, apart from the bot's [`super::Client`], so that a slow or
//! rate-limited answer here never holds up a move post or pauses the
//! bot's requests; every request has a short timeout.
//!
//! Answers are moves in UCI and what the source says of them; the bot
//! checks they are legal before playing one.

use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// What the online sources are and when they are asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnlineOptions {
    /// The tablebase server's base URL; `None`: not asked.
    pub tablebase_url: Option<String>,
    /// The most pieces (kings included) the tablebase is asked about.
    pub tablebase_pieces: u32,
    /// Lichess's base URL for the cloud evaluation; `None`: not asked.
    pub cloud_eval_url: Option<String>,
    /// The cloud evaluation is asked while the game is shorter than this
    /// many plies.
    pub cloud_eval_plies: u32,
    /// Evaluations shallower than this are not played.
    pub cloud_eval_min_depth: u32,
    /// The longest one request may take.
    pub timeout: Duration,
    /// Asked only with at least this much on our clock.
    pub min_clock: Duration,
}

/// Why an online source gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum OnlineError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("transport: {0}")]
    Transport(String),
    #[error("unreadable answer: {0}")]
    Parse(String),
}

/// The tablebase server's verdict on a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablebaseAnswer {
    /// The best move, in UCI.
    pub uci: String,
    /// The position's category from the side to move's view: `win`,
    /// `cursed-win`, `draw`, `blessed-loss`, `loss` (or `maybe-win`,
    /// `syzygy-win`, ... as the server says).
    pub category: String,
    pub dtz: Option<i32>,
}

/// A cloud evaluation's first line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudEval {
    /// The first move of the principal variation, in UCI.
    pub uci: String,
    /// Centipawns from White's view, or `None` for a mate score.
    pub cp: Option<i32>,
    /// Mate in this many moves from White's view (negative: Black mates).
    pub mate: Option<i32>,
    pub depth: u32,
}

#[derive(Deserialize)]
struct TablebaseJson {
    category: String,
    dtz: Option<i32>,
    #[serde(default)]
    moves: Vec<TablebaseMoveJson>,
}

#[derive(Deserialize)]
struct TablebaseMoveJson {
    uci: String,
}

#[derive(Deserialize)]
struct CloudEvalJson {
    depth: u32,
    #[serde(default)]
    pvs: Vec<PvJson>,
}

#[derive(Deserialize)]
struct PvJson {
    moves: String,
    cp: Option<i32>,
    mate: Option<i32>,
}

/// Consecutive failures of one online source, shared by every game, so
/// that a dead or moved host is said once, loudly, instead of once per
/// move at a low level (or not at all).
#[derive(Debug, Default)]
pub struct Health(AtomicU32);

impl Health {
    /// A request failed: the number of failures in a row, this one included.
    pub fn failed(&self) -> u32 {
        self.0.fetch_add(1, Ordering::Relaxed).saturating_add(1)
    }

    /// A request was answered: the failures in a row before it.
    pub fn answered(&self) -> u32 {
        self.0.swap(0, Ordering::Relaxed)
    }
}

/// The online sources' HTTP client.
#[derive(Clone, Debug)]
pub struct Online {
    pub options: OnlineOptions,
    http: reqwest::Client,
    /// How the tablebase server and the cloud evaluation have been doing.
    pub tablebase_health: Arc<Health>,
    pub cloud_eval_health: Arc<Health>,
}

impl Online {
    pub fn new(options: OnlineOptions) -> Result<Online, reqwest::Error> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("kaissa/", env!("CARGO_PKG_VERSION")))
            .timeout(options.timeout)
            .connect_timeout(options.timeout)
            .build()?;
        Ok(Online {
            options,
            http,
            tablebase_health: Arc::default(),
            cloud_eval_health: Arc::default(),
        })
    }

    /// The tablebase server's best move for `fen`; `Ok(None)` when it has
    /// no verdict (too many pieces, unknown) or no move.
    pub async fn tablebase(&self, fen: &str) -> Result<Option<TablebaseAnswer>, OnlineError> {
        let Some(base) = &self.options.tablebase_url else {
            return Ok(None);
        };
        let url = format!("{}/standard", base.trim_end_matches('/'));
        let Some(json): Option<TablebaseJson> = self.get(&url, &[("fen", fen)]).await? else {
            return Ok(None);
        };
        if json.category == "unknown" {
            return Ok(None);
        }
        Ok(json.moves.into_iter().next().map(|m| TablebaseAnswer {
            uci: m.uci,
            category: json.category,
            dtz: json.dtz,
        }))
    }

    /// The cloud evaluation of `fen`; `Ok(None)` when Lichess has none
    /// (404) or it is shallower than `cloud_eval_min_depth`.
    pub async fn cloud_eval(&self, fen: &str) -> Result<Option<CloudEval>, OnlineError> {
        let Some(base) = &self.options.cloud_eval_url else {
            return Ok(None);
        };
        let url = format!("{}/api/cloud-eval", base.trim_end_matches('/'));
        let Some(json): Option<CloudEvalJson> =
            self.get(&url, &[("fen", fen), ("multiPv", "1")]).await?
        else {
            return Ok(None);
        };
        if json.depth < self.options.cloud_eval_min_depth {
            return Ok(None);
        }
        let Some(pv) = json.pvs.into_iter().next() else {
            return Ok(None);
        };
        let Some(first) = pv.moves.split_whitespace().next() else {
            return Ok(None);
        };
        Ok(Some(CloudEval {
            uci: first.to_owned(),
            cp: pv.cp,
            mate: pv.mate,
            depth: json.depth,
        }))
    }

    /// GETs `url` and parses its JSON; `Ok(None)` on 404.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        query: &[(&str, &str)],
    ) -> Result<Option<T>, OnlineError> {
        let timeout = self.options.timeout;
        let request = self.http.get(url).query(query).send();
        // The client's own timeout covers the body too; this one bounds
        // the whole exchange whatever the transport does.
        let response = tokio::time::timeout(timeout, async {
            let response = request.await?;
            let status = response.status();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        })
        .await
        .map_err(|_| OnlineError::Timeout(timeout))?;
        let (status, body) = response.map_err(|e| {
            if e.is_timeout() {
                OnlineError::Timeout(timeout)
            } else {
                OnlineError::Transport(e.without_url().to_string())
            }
        })?;
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(OnlineError::Status(status.as_u16()));
        }
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| OnlineError::Parse(e.to_string()))
    }
}
