//! The online move sources: Lichess's tablebase server
//! (`{tablebase_url}/{standard|atomic|antichess}?fen=...`, up to 7 pieces,
//! and 8 where its partial `op1` tables cover the position), its cloud
//! evaluation (`{lichess}/api/cloud-eval?fen=...`) and its opening
//! explorer (`{explorer_url}/{masters|lichess|player}?fen=...`: masters'
//! games, Lichess's by speed and rating band, or one player's), used as
//! online books; and ChessDB (`{chessdb_url}?action=querypv&board=...`),
//! a book and, in endings, a tablebase.
//!
//! They have their own HTTP client, apart from the bot's
//! [`super::Client`], so that a slow or rate-limited answer here never
//! holds up a move post or pauses the bot's requests; every request has a
//! short timeout. The bot's token goes with the requests to Lichess's own
//! hosts (`*.lichess.org`, `*.lichess.ovh` and `lichess.url`'s host), which
//! accept it (the explorer requires one), never to another host.
//!
//! Answers are moves in UCI and what the source says of them; the bot
//! checks they are legal before playing one.

use super::Token;
use serde::Deserialize;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the online sources are and when they are asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnlineOptions {
    /// The tablebase server's base URL; `None`: not asked.
    pub tablebase_url: Option<String>,
    /// The most pieces (kings included) the tablebase is asked about (8:
    /// the server answers for the 8-piece positions its `op1` tables
    /// cover, "unknown" for the others).
    pub tablebase_pieces: u32,
    /// Also asked in atomic and antichess games (the server's other
    /// tables).
    pub tablebase_variants: bool,
    /// The opening explorer, if asked.
    pub explorer: Option<ExplorerOptions>,
    /// ChessDB, if asked.
    pub chessdb: Option<ChessDbOptions>,
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

/// Which games of the opening explorer count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExplorerDb {
    /// Over-the-board games of masters (`/masters`).
    Masters,
    /// Lichess's games of these speeds and rating bands (`/lichess`).
    Lichess {
        speeds: Vec<String>,
        ratings: Vec<u32>,
    },
    /// One player's games, with our colour (`/player`).
    Player { name: String },
}

impl ExplorerDb {
    pub fn name(&self) -> &'static str {
        match self {
            ExplorerDb::Masters => "masters",
            ExplorerDb::Lichess { .. } => "lichess",
            ExplorerDb::Player { .. } => "player",
        }
    }
}

/// How a move of the explorer is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplorerSort {
    /// The most played.
    Games,
    /// The best score for the side to move (wins and half the draws).
    Score,
}

/// The opening explorer as a book.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplorerOptions {
    pub url: String,
    pub db: ExplorerDb,
    /// Moves played in fewer games are not chosen.
    pub min_games: u32,
    pub sort: ExplorerSort,
    /// Asked while the game is shorter than this many plies.
    pub plies: u32,
}

/// ChessDB as a book and a tablebase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChessDbOptions {
    pub url: String,
    /// As a book while the game is shorter than this many plies.
    pub plies: u32,
    /// Lines shallower than this are not played.
    pub min_depth: u32,
    /// As a tablebase in endings of 7 pieces or fewer.
    pub tablebase: bool,
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

/// The explorer's choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplorerMove {
    pub uci: String,
    /// Games with the move, and the side to move's score in them, per mille.
    pub games: u32,
    pub score: u32,
}

/// ChessDB's best line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChessDbMove {
    pub uci: String,
    /// Centipawns from the side to move's view; beyond +-20000 a
    /// tablebase or mate result.
    pub score: i32,
    pub depth: u32,
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

#[derive(Deserialize)]
struct ExplorerJson {
    #[serde(default)]
    moves: Vec<ExplorerMoveJson>,
}

#[derive(Deserialize)]
struct ExplorerMoveJson {
    uci: String,
    #[serde(default)]
    white: u32,
    #[serde(default)]
    draws: u32,
    #[serde(default)]
    black: u32,
}

#[derive(Deserialize)]
struct ChessDbJson {
    status: String,
    #[serde(default)]
    score: i32,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    pv: Vec<String>,
}

/// Consecutive failures of one online source, shared by every game, so
/// that a dead or moved host is said once, loudly, instead of once per
/// move at a low level (or not at all); and its rest: after
/// [`RESTS_AFTER`] failures in a row it is not asked for a while
/// (30 s, doubled with each failure after, up to 10 minutes),
/// so a host that hangs does not cost every move its timeout. It is asked
/// again after the rest; an answer ends it.
#[derive(Debug, Default)]
pub struct Health {
    failures: AtomicU32,
    rest_until: Mutex<Option<Instant>>,
}

/// Failures in a row after which a source rests.
pub const RESTS_AFTER: u32 = 3;
const REST_FIRST: Duration = Duration::from_secs(30);
const REST_MAX: Duration = Duration::from_secs(600);

impl Health {
    /// A request failed: the number of failures in a row, this one included.
    pub fn failed(&self) -> u32 {
        let n = self
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        if n >= RESTS_AFTER {
            let doublings = (n - RESTS_AFTER).min(10);
            let rest = (REST_FIRST * (1 << doublings)).min(REST_MAX);
            *self.rest_until.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(Instant::now() + rest);
        }
        n
    }

    /// A request was answered: the failures in a row before it.
    pub fn answered(&self) -> u32 {
        *self.rest_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.failures.swap(0, Ordering::Relaxed)
    }

    /// Whether the source rests now (not to be asked).
    pub fn resting(&self) -> bool {
        let until = *self.rest_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }
}

/// The online sources' HTTP client.
#[derive(Clone, Debug)]
pub struct Online {
    pub options: OnlineOptions,
    http: reqwest::Client,
    /// The bot's token, and the hosts that get it besides Lichess's own.
    token: Option<(Token, String)>,
    /// How each source has been doing.
    pub tablebase_health: Arc<Health>,
    pub cloud_eval_health: Arc<Health>,
    pub explorer_health: Arc<Health>,
    pub chessdb_health: Arc<Health>,
}

/// Whether `url` is on `lichess_host` (the configured server) or one of
/// Lichess's hosts, over https or on this machine: never the token in
/// clear text over a network.
fn is_lichess(url: &str, lichess_host: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let private = url.scheme() == "https" || super::client::is_loopback(&url);
    private
        && (host == lichess_host
            || ["lichess.org", "lichess.ovh"]
                .iter()
                .any(|d| host == *d || host.ends_with(&format!(".{d}"))))
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
            token: None,
            tablebase_health: Arc::default(),
            cloud_eval_health: Arc::default(),
            explorer_health: Arc::default(),
            chessdb_health: Arc::default(),
        })
    }

    /// Sends `token` with the requests to Lichess's hosts and to the host
    /// of `lichess_url` (the bot's Lichess).
    pub fn authenticate(&mut self, token: Token, lichess_url: &str) {
        let host = reqwest::Url::parse(lichess_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        self.token = Some((token, host));
    }

    /// The tablebase server's best move for `fen` in `variant`
    /// (`standard`, `atomic` or `antichess`); `Ok(None)` when it has no
    /// verdict (too many pieces, not in its `op1` tables, unknown) or no
    /// move.
    pub async fn tablebase(
        &self,
        variant: &str,
        fen: &str,
    ) -> Result<Option<TablebaseAnswer>, OnlineError> {
        let Some(base) = &self.options.tablebase_url else {
            return Ok(None);
        };
        let url = format!("{}/{variant}", base.trim_end_matches('/'));
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

    /// The opening explorer's move for `fen` in `variant` (Lichess's key)
    /// with `us` to move: among the moves played in `min_games` games or
    /// more, the most played or the best scoring; `Ok(None)` when none is.
    pub async fn explorer(
        &self,
        variant: &str,
        fen: &str,
        us_white: bool,
    ) -> Result<Option<ExplorerMove>, OnlineError> {
        let Some(e) = &self.options.explorer else {
            return Ok(None);
        };
        let base = e.url.trim_end_matches('/');
        let url = format!("{base}/{}", e.db.name());
        let mut query: Vec<(&str, String)> = vec![
            ("fen", fen.to_owned()),
            ("moves", "20".to_owned()),
            ("topGames", "0".to_owned()),
            ("recentGames", "0".to_owned()),
        ];
        match &e.db {
            ExplorerDb::Masters => {}
            ExplorerDb::Lichess { speeds, ratings } => {
                query.push(("variant", variant.to_owned()));
                if !speeds.is_empty() {
                    query.push(("speeds", speeds.join(",")));
                }
                if !ratings.is_empty() {
                    let bands: Vec<String> = ratings.iter().map(u32::to_string).collect();
                    query.push(("ratings", bands.join(",")));
                }
            }
            ExplorerDb::Player { name } => {
                query.push(("variant", variant.to_owned()));
                query.push(("player", name.clone()));
                let color = if us_white { "white" } else { "black" };
                query.push(("color", color.to_owned()));
            }
        }
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let Some(body) = self.get_text(&url, &query).await? else {
            return Ok(None);
        };
        // `/player` streams its counts as NDJSON, each line more complete:
        // the last whole line is the answer. The others send one object.
        let Some(line) = body.lines().rev().find(|l| !l.trim().is_empty()) else {
            return Ok(None);
        };
        let json: ExplorerJson =
            serde_json::from_str(line).map_err(|e| OnlineError::Parse(e.to_string()))?;
        Ok(choose_explorer_move(
            json.moves,
            us_white,
            e.min_games,
            e.sort,
        ))
    }

    /// ChessDB's best line for `fen`, if it knows the position at
    /// `min_depth` or deeper (a tablebase result always counts).
    pub async fn chessdb(&self, fen: &str) -> Result<Option<ChessDbMove>, OnlineError> {
        let Some(c) = &self.options.chessdb else {
            return Ok(None);
        };
        let query = [("action", "querypv"), ("board", fen), ("json", "1")];
        let Some(json): Option<ChessDbJson> = self.get(&c.url, &query).await? else {
            return Ok(None);
        };
        if json.status != "ok" {
            return Ok(None);
        }
        let Some(first) = json.pv.into_iter().next() else {
            return Ok(None);
        };
        let decisive = json.score.abs() >= CHESSDB_DECISIVE;
        if json.depth < c.min_depth && !decisive {
            return Ok(None);
        }
        Ok(Some(ChessDbMove {
            uci: first,
            score: json.score,
            depth: json.depth,
        }))
    }

    /// GETs `url` and parses its JSON; `Ok(None)` on 404.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        query: &[(&str, &str)],
    ) -> Result<Option<T>, OnlineError> {
        let Some(body) = self.get_text(url, query).await? else {
            return Ok(None);
        };
        serde_json::from_str(&body)
            .map(Some)
            .map_err(|e| OnlineError::Parse(e.to_string()))
    }

    /// GETs `url`'s body; `Ok(None)` on 404. The token goes only to
    /// Lichess's hosts.
    async fn get_text(
        &self,
        url: &str,
        query: &[(&str, &str)],
    ) -> Result<Option<String>, OnlineError> {
        let timeout = self.options.timeout;
        let mut request = self.http.get(url).query(query);
        if let Some((token, host)) = &self.token
            && is_lichess(url, host)
        {
            request = request.bearer_auth(token.expose());
        }
        let request = request.send();
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
        String::from_utf8(body.to_vec())
            .map(Some)
            .map_err(|e| OnlineError::Parse(e.to_string()))
    }
}

/// ChessDB's scores at or beyond this are tablebase or mate results.
pub const CHESSDB_DECISIVE: i32 = 20_000;

/// The explorer's move: among those played at least `min_games` times,
/// the most played (`Games`) or the best scoring for the side to move
/// (`Score`, then the most played).
fn choose_explorer_move(
    moves: Vec<ExplorerMoveJson>,
    us_white: bool,
    min_games: u32,
    sort: ExplorerSort,
) -> Option<ExplorerMove> {
    moves
        .into_iter()
        .filter_map(|m| {
            let games = m.white + m.draws + m.black;
            let wins = if us_white { m.white } else { m.black };
            let score = (2 * u64::from(wins) + u64::from(m.draws)) * 500 / u64::from(games.max(1));
            (games >= min_games.max(1)).then_some(ExplorerMove {
                uci: m.uci,
                games,
                score: score as u32,
            })
        })
        .max_by_key(|m| match sort {
            ExplorerSort::Games => (m.games, m.score),
            ExplorerSort::Score => (m.score, m.games),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_failing_in_a_row_rests_until_it_answers() {
        let h = Health::default();
        for n in 1..RESTS_AFTER {
            assert_eq!(h.failed(), n);
            assert!(!h.resting(), "after {n}");
        }
        assert_eq!(h.failed(), RESTS_AFTER);
        assert!(h.resting());
        assert_eq!(h.answered(), RESTS_AFTER);
        assert!(!h.resting());
        assert_eq!(h.failed(), 1);
        assert!(!h.resting());
    }

    fn mv(uci: &str, white: u32, draws: u32, black: u32) -> ExplorerMoveJson {
        ExplorerMoveJson {
            uci: uci.to_owned(),
            white,
            draws,
            black,
        }
    }

    #[test]
    fn explorer_moves_by_games_or_by_score() {
        let moves = || {
            vec![
                mv("e2e4", 500, 300, 400),
                mv("d2d4", 450, 400, 250),
                mv("h2h4", 9, 0, 0),
            ]
        };
        let pick = |us_white, min, sort| {
            choose_explorer_move(moves(), us_white, min, sort).map(|m| (m.uci, m.score))
        };
        assert_eq!(
            pick(true, 10, ExplorerSort::Games),
            Some(("e2e4".into(), 541))
        );
        assert_eq!(
            pick(true, 10, ExplorerSort::Score),
            Some(("d2d4".into(), 590))
        );
        // Nine games are too few for the 10 asked, enough for 5.
        assert_eq!(
            pick(true, 5, ExplorerSort::Score),
            Some(("h2h4".into(), 1000))
        );
        // Black's view of the same counts.
        assert_eq!(
            pick(false, 10, ExplorerSort::Score),
            Some(("e2e4".into(), 458))
        );
        assert_eq!(pick(true, 2000, ExplorerSort::Games), None);
    }

    #[test]
    fn the_token_goes_to_lichess_hosts_only() {
        for (url, ok) in [
            ("https://explorer.lichess.ovh/masters", true),
            ("https://tablebase.lichess.ovh/standard", true),
            ("https://lichess.org/api/cloud-eval", true),
            ("http://127.0.0.1:9000/lichess", true),
            ("http://[::1]:9000/lichess", false),
            ("https://www.chessdb.cn/cdb.php", false),
            ("https://evil-lichess.org/x", false),
            ("https://lichess.org.evil.com/x", false),
            ("http://explorer.lichess.ovh/masters", false),
            ("http://lichess.org/api/cloud-eval", false),
        ] {
            assert_eq!(is_lichess(url, "127.0.0.1"), ok, "{url}");
        }
        // The configured server's own host, but in clear text.
        assert!(!is_lichess(
            "http://lichess.org/api/cloud-eval",
            "lichess.org"
        ));
        assert!(is_lichess(
            "https://lichess.org/api/cloud-eval",
            "lichess.org"
        ));
    }
}
