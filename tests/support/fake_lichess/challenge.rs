//! Challenges: one challenge, in either direction, and its record; and
//! the life of a challenge the bot creates, as Lichess keeps it: canceled
//! after 20 s unless created with `keepAliveStream`, then open as long as
//! its stream is, which ends with `{"done": status}`.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use serde_json::json;
use shakmaty::Color;
use tokio::time::Instant;

use super::records::ChallengeRecord;
use super::setup::ChallengeSpec;
use super::stream::Conn;
use super::world::App;

/// How often a challenge's life is checked.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// Settles challenge `id` (created by the bot through the API) when it
/// expires or its keep-alive stream closes, and ends the stream with the
/// challenge's fate once it has one.
pub(super) fn watch_created(app: &App, id: String, keep_alive: Option<Conn>, expiry: Duration) {
    let app = app.clone();
    let created = Instant::now();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let over = app.with(|world, _| {
                let Some(c) = world.challenges.get_mut(&id) else {
                    return true;
                };
                if c.status != "created" {
                    if let Some(conn) = &keep_alive {
                        let done = json!({"done": c.status}).to_string();
                        conn.send_raw(Bytes::from(format!("{done}\n")));
                        conn.end();
                    }
                    return true;
                }
                let expired = match &keep_alive {
                    Some(conn) => conn.closed(),
                    None => created.elapsed() >= expiry,
                };
                if expired {
                    c.status = "canceled";
                    let c = &world.challenges[&id];
                    world.send_event(&json!({"type": "challengeCanceled",
                                             "challenge": world.challenge_json(c)}));
                }
                expired
            });
            if over {
                return;
            }
        }
    });
}

pub(super) struct ChallengeState {
    pub(super) id: String,
    pub(super) status: &'static str,
    pub(super) direction: &'static str,
    pub(super) spec: ChallengeSpec,
    /// The challenger's final colour (incoming) / the bot's (outgoing).
    pub(super) challenger_color: Color,
    pub(super) decline_reason: Option<String>,
    pub(super) dest: Option<String>,
    pub(super) form: HashMap<String, String>,
    pub(super) game_id: Option<String>,
}

impl ChallengeState {
    pub(super) fn record(&self) -> ChallengeRecord {
        ChallengeRecord {
            id: self.id.clone(),
            status: self.status.to_owned(),
            direction: self.direction.to_owned(),
            decline_reason: self.decline_reason.clone(),
            dest: self.dest.clone(),
            form: self.form.clone(),
            game_id: self.game_id.clone(),
        }
    }
}
