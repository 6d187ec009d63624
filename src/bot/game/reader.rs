//! The game-stream reader: a task of its own that keeps the game stream
//! open and hands each line to the game with the instant it arrived, so
//! the game never stops reading while it posts a move or answers an offer,
//! and its clock counts from when a state really came.
//!
//! It reopens the stream (with a [`Backoff`]) when it fails, goes silent
//! or closes, and at once when the game asks for a resync
//! ([`Reader::resync`]). A `gameFull` that does not parse reopens the
//! stream too: the game must not play blind. A 4xx answer to the open
//! (other than 429) means the game is not ours to play: the reader reports
//! [`Line::Refused`] and ends.

use super::spawn_here;
use crate::lichess::backoff::Backoff;
use crate::lichess::client::Client;
use crate::lichess::model::GameEvent;
use crate::lichess::stream::{SkippedLine, StreamEvent};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Pauses between attempts to open the game stream.
const RECONNECT_MIN: Duration = Duration::from_millis(250);
const RECONNECT_MAX: Duration = Duration::from_secs(2);
/// A stream open this long resets the backoff.
const HEALTHY_AFTER: Duration = Duration::from_secs(10);
/// Lines read ahead of the game.
const BUFFER: usize = 256;

/// What the reader hands to the game.
#[derive(Debug)]
pub(super) enum Line {
    /// A line of the stream and when it arrived.
    Event(GameEvent, Instant),
    /// The stream cannot be opened for this game (a non-429 4xx).
    Refused,
}

/// The game's side of the reader; dropping it stops the task.
pub(super) struct Reader {
    pub(super) lines: mpsc::Receiver<Line>,
    resync: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Reader {
    /// Starts reading game `id`'s stream.
    pub(super) fn spawn(client: Client, id: String) -> Reader {
        let (tx, lines) = mpsc::channel(BUFFER);
        let resync = Arc::new(Notify::new());
        let task = spawn_here(read(client, id, tx, Arc::clone(&resync)));
        Reader {
            lines,
            resync,
            task,
        }
    }

    /// Stops reading (the game is over: no more reopening).
    pub(super) fn stop(&self) {
        self.task.abort();
    }

    /// Reopens the stream now: its `gameFull` tells where the game stands.
    pub(super) fn resync(&self) {
        self.resync.notify_one();
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a skipped line was a `gameFull` or a `gameState`: a line that
/// may have carried a move, which Lichess will not send again (after the
/// opponent's move, nothing comes until ours). Reopening the stream
/// brings a `gameFull` with every move.
fn lost_a_move(why: &SkippedLine) -> bool {
    matches!(why, SkippedLine::Malformed { kind: Some(kind), .. } if kind == "gameFull" || kind == "gameState")
}

/// Whether Lichess refuses the game's stream for good: not there (404,
/// 410). A refused token (401) is tried again for as long as it lasts:
/// the daemon, whose event stream meets it too, decides when it is
/// revoked and then hands the game over. Another 4xx (403, a proxy's 408
/// or 400) is tried again, up to [`MAX_ODD_REFUSALS`] in a row: giving
/// the game up mid-game loses it on time.
fn refused_for_good(status: u16) -> bool {
    matches!(status, 404 | 410)
}

/// Other 4xx answers in a row after which the game is given up.
const MAX_ODD_REFUSALS: u32 = 5;

async fn read(client: Client, id: String, tx: mpsc::Sender<Line>, resync: Arc<Notify>) {
    let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX, HEALTHY_AFTER);
    let mut odd_refusals = 0;
    loop {
        let mut stream = match client.stream_game(&id).await {
            Ok(stream) => stream,
            Err(e)
                if e.status().is_some_and(|s| {
                    let odd =
                        (400..500).contains(&s) && !matches!(s, 401 | 429) && !refused_for_good(s);
                    odd_refusals = if odd { odd_refusals + 1 } else { 0 };
                    refused_for_good(s) || odd_refusals >= MAX_ODD_REFUSALS
                }) =>
            {
                tracing::warn!("game stream refused: {e}");
                let _ = tx.send(Line::Refused).await;
                return;
            }
            Err(e) => {
                let delay = backoff.failed();
                tracing::warn!(
                    retry_in_ms = delay.as_millis() as u64,
                    "cannot open the game stream: {e}"
                );
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        backoff.up();
        odd_refusals = 0;
        // A resync asked before this open is answered by this open.
        let _ = tokio::time::timeout(Duration::ZERO, resync.notified()).await;
        let mut first = true;
        let healthy = loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(Ok(StreamEvent::Item(event))) => {
                        first = false;
                        if tx.send(Line::Event(event, Instant::now())).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(StreamEvent::KeepAlive)) => {}
                    Some(Ok(StreamEvent::Skipped(why))) => {
                        tracing::warn!("game stream: line skipped: {why}");
                        if first || lost_a_move(&why) {
                            tracing::warn!("gameFull or gameState unreadable: reopening the game stream");
                            break false;
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!("game stream failed: {e}");
                        break false;
                    }
                    None => {
                        tracing::debug!("game stream closed");
                        break false;
                    }
                },
                _ = resync.notified() => {
                    tracing::info!("resync: reopening the game stream");
                    break true;
                }
            }
        };
        if !healthy {
            let delay = backoff.failed();
            tracing::info!(
                retry_in_ms = delay.as_millis() as u64,
                "reopening the game stream"
            );
            tokio::time::sleep(delay).await;
        }
    }
}
