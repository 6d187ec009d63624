//! Lichess's online move sources, faked: the tablebase server
//! (`/standard`, `/atomic`, `/antichess` `?fen=`), the cloud evaluation
//! (`/api/cloud-eval?fen=`) and the opening explorer (`/masters`,
//! `/lichess`, `/player`; `/player` streams NDJSON as Lichess's does),
//! outside the gatekeeper (a token is taken, not required; the paths asked
//! with the bot's token are noted); and ChessDB (`/cdb.php?action=querypv
//! &board=`), not Lichess, in the spec's shapes. A test sets the JSON
//! answered for a position (by the first four FEN fields); other
//! positions get 404 (ChessDB: `{"status": "unknown"}`). An answer can be
//! delayed, to test the bot's timeout. Every request is logged like the
//! bot API's, with its whole query.
//!
//! Not Lichess, but served here too: a shared block list as a user would
//! host it elsewhere (plain text at `/test/block-list`; 503 while unset).

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use tokio::time::Instant;

use super::FakeLichess;
use super::records::RequestRecord;
use super::routes::not_found;
use super::world::App;

/// The canned answers and the delay.
#[derive(Default)]
pub(super) struct OnlineAnswers {
    tablebase: HashMap<String, Value>,
    cloud_eval: HashMap<String, Value>,
    explorer: HashMap<String, Value>,
    chessdb: HashMap<String, Value>,
    /// The paths asked with the bot's token.
    with_token: Vec<String>,
    delay: Duration,
    block_list: Option<String>,
}

/// The position part of a FEN (board, turn, castling, en passant).
fn position_key(fen: &str) -> String {
    fen.split_whitespace().take(4).collect::<Vec<_>>().join(" ")
}

pub(super) fn router() -> Router<App> {
    Router::new()
        .route("/standard", get(tablebase))
        .route("/atomic", get(tablebase_atomic))
        .route("/antichess", get(tablebase_antichess))
        .route("/api/cloud-eval", get(cloud_eval))
        .route("/masters", get(explorer_masters))
        .route("/lichess", get(explorer_lichess))
        .route("/player", get(explorer_player))
        .route("/cdb.php", get(chessdb))
        .route("/test/block-list", get(block_list))
}

async fn block_list(State(app): State<App>) -> Response {
    app.with(|world, _| {
        let response = match &world.online.block_list {
            Some(text) => text.clone().into_response(),
            None => (StatusCode::SERVICE_UNAVAILABLE, "down").into_response(),
        };
        world.requests.push(RequestRecord {
            method: "GET".to_owned(),
            path: "/test/block-list".to_owned(),
            query: None,
            status: response.status().as_u16(),
            at: Instant::now(),
        });
        response
    })
}

type Q = Query<Vec<(String, String)>>;

/// Whether the request carries the bot's token.
fn with_token(app: &App, headers: &HeaderMap) -> bool {
    let token = app.lock().cfg.token.clone();
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {token}"))
}

async fn tablebase(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/standard", q, |a| &a.tablebase).await
}

async fn tablebase_atomic(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/atomic", q, |a| &a.tablebase).await
}

async fn tablebase_antichess(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/antichess", q, |a| &a.tablebase).await
}

async fn cloud_eval(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/api/cloud-eval", q, |a| &a.cloud_eval).await
}

async fn explorer_masters(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/masters", q, |a| &a.explorer).await
}

async fn explorer_lichess(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    answer(app, &h, "/lichess", q, |a| &a.explorer).await
}

/// `/player` streams: the counts so far, then the whole (as NDJSON).
async fn explorer_player(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    let response = answer(app, &h, "/player", q, |a| &a.explorer).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let whole: Value = serde_json::from_slice(&body).unwrap_or_default();
    let partial = serde_json::json!({"white": 0, "draws": 0, "black": 0, "moves": []});
    format!("{partial}\n{whole}\n").into_response()
}

/// ChessDB answers 200 with a status, never 404.
async fn chessdb(State(app): State<App>, h: HeaderMap, Query(q): Q) -> Response {
    let board = q
        .iter()
        .find(|(k, _)| k == "board")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let mut q = q;
    q.push(("fen".to_owned(), board));
    let response = answer(app, &h, "/cdb.php", q, |a| &a.chessdb).await;
    if response.status() == StatusCode::NOT_FOUND {
        return axum::Json(serde_json::json!({"status": "unknown"})).into_response();
    }
    response
}

async fn answer(
    app: App,
    headers: &HeaderMap,
    path: &str,
    query: Vec<(String, String)>,
    table: impl Fn(&OnlineAnswers) -> &HashMap<String, Value>,
) -> Response {
    let authorized = with_token(&app, headers);
    let fen = query
        .iter()
        .find(|(k, _)| k == "fen")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let whole_query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let (json, delay) = {
        let world = app.lock();
        let answers = &world.online;
        (
            table(answers).get(&position_key(&fen)).cloned(),
            answers.delay,
        )
    };
    tokio::time::sleep(delay).await;
    let response = match json {
        Some(json) => axum::Json(json).into_response(),
        None if fen.is_empty() => (StatusCode::BAD_REQUEST, "fen missing").into_response(),
        None => not_found(),
    };
    let status = response.status().as_u16();
    app.with(|world, _| {
        if authorized {
            world.online.with_token.push(path.to_owned());
        }
        world.requests.push(RequestRecord {
            method: "GET".to_owned(),
            path: path.to_owned(),
            query: Some(whole_query),
            status,
            at: Instant::now(),
        })
    });
    response
}

impl FakeLichess {
    /// The tablebase server answers `json` for the position of `fen`.
    pub fn set_tablebase_answer(&self, fen: &str, json: Value) {
        self.app.with(|world, _| {
            world.online.tablebase.insert(position_key(fen), json);
        });
    }

    /// The cloud evaluation answers `json` for the position of `fen`.
    pub fn set_cloud_eval(&self, fen: &str, json: Value) {
        self.app.with(|world, _| {
            world.online.cloud_eval.insert(position_key(fen), json);
        });
    }

    /// The opening explorer (every database) answers `json` for `fen`.
    pub fn set_explorer_answer(&self, fen: &str, json: Value) {
        self.app.with(|world, _| {
            world.online.explorer.insert(position_key(fen), json);
        });
    }

    /// ChessDB answers `json` for `fen`.
    pub fn set_chessdb_answer(&self, fen: &str, json: Value) {
        self.app.with(|world, _| {
            world.online.chessdb.insert(position_key(fen), json);
        });
    }

    /// The online sources' paths asked with the bot's token, in order.
    pub fn online_asked_with_token(&self) -> Vec<String> {
        self.app.with(|world, _| world.online.with_token.clone())
    }

    /// The block list served at `/test/block-list` (`None`: the host is
    /// down, 503).
    pub fn set_block_list(&self, text: Option<&str>) {
        self.app
            .with(|world, _| world.online.block_list = text.map(str::to_owned));
    }

    /// The online sources answer only after `delay`.
    pub fn delay_online_answers(&self, delay: Duration) {
        self.app.with(|world, _| world.online.delay = delay);
    }
}
