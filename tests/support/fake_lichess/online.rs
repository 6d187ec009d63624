//! Lichess's online move sources, faked: the tablebase server
//! (`/standard?fen=`) and the cloud evaluation (`/api/cloud-eval?fen=`),
//! both public (outside the gatekeeper: no token needed, none expected).
//! A test sets the JSON answered for a position (by the first four FEN
//! fields); other positions get 404. An answer can be delayed, to test
//! the bot's timeout. Every request is logged like the bot API's.
//!
//! Not Lichess, but served here too: a shared block list as a user would
//! host it elsewhere (plain text at `/test/block-list`; 503 while unset).

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
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
        .route("/api/cloud-eval", get(cloud_eval))
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

async fn tablebase(State(app): State<App>, Query(q): Query<HashMap<String, String>>) -> Response {
    answer(app, "/standard", q, |a| &a.tablebase).await
}

async fn cloud_eval(State(app): State<App>, Query(q): Query<HashMap<String, String>>) -> Response {
    answer(app, "/api/cloud-eval", q, |a| &a.cloud_eval).await
}

async fn answer(
    app: App,
    path: &str,
    query: HashMap<String, String>,
    table: impl Fn(&OnlineAnswers) -> &HashMap<String, Value>,
) -> Response {
    let fen = query.get("fen").cloned().unwrap_or_default();
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
        world.requests.push(RequestRecord {
            method: "GET".to_owned(),
            path: path.to_owned(),
            query: Some(format!("fen={fen}")),
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
