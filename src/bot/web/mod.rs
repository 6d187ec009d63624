//! The daemon's opt-in HTTP server (`[web]`, off by default, on
//! 127.0.0.1 unless configured), read-only, serving nothing that holds
//! the token:
//! - `GET /`: the status page ([`PAGE`], no external asset), which polls
//!   `/api/status` every two seconds: each live game as a board drawn by
//!   kaissa ([`svg`]) with the clocks, the last move, an evaluation bar
//!   and graph and the principal variation; the queue, the quotas, the
//!   arenas, the last 50 results and a rating chart per speed;
//! - `GET /api/status`: `kaissa ctl status --json`, asked of the daemon's
//!   loop the way the control socket asks it, with the drawings added;
//! - `GET /metrics`: the [`metrics`] in Prometheus's text format;
//! - `GET /healthz`: 200 while the event stream is connected and the
//!   daemon's loop turns, 503 (with the reason) otherwise.
//!
//! It runs on the daemon's tokio runtime with axum (the tokio project's
//! HTTP framework, on the hyper server reqwest's client already uses).
//!
//! [`metrics`]: crate::metrics

pub mod svg;

use crate::bot::control::{Order, Request};
use crate::metrics::metrics;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The status page.
pub const PAGE: &str = include_str!("page.html");

/// Whether the daemon is healthy now: `Err` with the reason if not.
pub type Health = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// How long `/api/status` waits for the daemon's loop.
const STATUS_WAIT: Duration = Duration::from_secs(5);

/// Binds `listen` and serves in a task of its own; the address bound
/// (the port, when `listen` asked for port 0). The status is asked of
/// the daemon through `tx`, as the control socket asks it.
pub async fn serve<M: From<Order> + Send + 'static>(
    listen: SocketAddr,
    health: Health,
    tx: mpsc::UnboundedSender<M>,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let bound = listener.local_addr()?;
    let ask = Arc::new(move |order: Order| tx.send(M::from(order)).is_ok());
    let app = Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route(
            "/api/status",
            get(move || {
                let ask = Arc::clone(&ask);
                async move { status(ask.as_ref()).await }
            }),
        )
        .route("/metrics", get(metrics_text))
        .route(
            "/healthz",
            get(move || {
                let health = Arc::clone(&health);
                async move { healthz(&health) }
            }),
        );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("web server stopped: {e}");
        }
    });
    Ok(bound)
}

async fn metrics_text() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics().render(),
    )
}

fn healthz(health: &Health) -> (StatusCode, String) {
    match health() {
        Ok(()) => (StatusCode::OK, "ok\n".to_owned()),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {why}\n"),
        ),
    }
}

/// The daemon's status, with the drawings.
async fn status(ask: &(dyn Fn(Order) -> bool + Send + Sync)) -> Response {
    let (reply, answer) = oneshot::channel();
    let order = Order {
        request: Request::Status { json: true },
        reply,
    };
    if !ask(order) {
        return (StatusCode::SERVICE_UNAVAILABLE, "the daemon is stopping").into_response();
    }
    let text = match tokio::time::timeout(STATUS_WAIT, answer).await {
        Ok(Ok(reply)) if reply.ok => reply.text,
        _ => {
            return (StatusCode::SERVICE_UNAVAILABLE, "the daemon did not answer").into_response();
        }
    };
    let Ok(mut status) = serde_json::from_str::<Value>(&text) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "bad status").into_response();
    };
    drawn(&mut status);
    axum::Json(status).into_response()
}

/// Adds to `status` each game's board and evaluation graph and a rating
/// chart per speed, as SVG text.
pub fn drawn(status: &mut Value) {
    if let Some(games) = status["games"].as_array_mut() {
        for game in games {
            let fen = game["fen"].as_str().unwrap_or("").to_owned();
            let last = game["last_move"].as_str().map(str::to_owned);
            let flipped = game["color"] == "black";
            let evals: Vec<Option<i32>> = game["evals"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_i64().map(|v| v as i32)).collect())
                .unwrap_or_default();
            game["board_svg"] = Value::from(svg::board(&fen, last.as_deref(), flipped));
            game["graph_svg"] = Value::from(svg::eval_graph(&evals));
        }
    }
    let charts: serde_json::Map<String, Value> = status["ratings"]
        .as_object()
        .map(|ratings| {
            ratings
                .iter()
                .map(|(speed, points)| {
                    let points: Vec<(u64, u32)> = points
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| Some((p[0].as_u64()?, p[1].as_u64()? as u32)))
                        .collect();
                    (speed.clone(), Value::from(svg::rating_chart(&points)))
                })
                .collect()
        })
        .unwrap_or_default();
    status["rating_svgs"] = Value::Object(charts);
}
