//! Streams: one open ndjson response ([`Conn`]) with keep-alives, which a
//! test can end, cut mid-stream, silence or leave stuck (keeping alive).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::mpsc;

pub(super) enum Frame {
    Data(Bytes),
    /// Close the connection cleanly (end of the chunked body).
    End,
    /// Abort the connection mid-stream.
    Cut,
}

/// One open ndjson response.
#[derive(Clone)]
pub(super) struct Conn {
    pub(super) tx: mpsc::UnboundedSender<Frame>,
    /// Silent: nothing is sent any more, not even keep-alives; the
    /// connection stays open.
    pub(super) silent: Arc<AtomicBool>,
    /// Stuck: keep-alives go on, lines do not (a proxy stuck upstream).
    pub(super) stuck: Arc<AtomicBool>,
}

impl Conn {
    pub(super) fn open(keepalive: Duration) -> (Conn, Response) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Frame>();
        let conn = Conn {
            tx,
            silent: Arc::new(AtomicBool::new(false)),
            stuck: Arc::new(AtomicBool::new(false)),
        };
        let ticker = conn.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(keepalive);
            interval.tick().await;
            loop {
                interval.tick().await;
                if ticker.closed() {
                    return;
                }
                ticker.send_raw(Bytes::from_static(b"\n"));
            }
        });
        let stream =
            futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).scan(false, |ended, frame| {
                let item = match frame {
                    _ if *ended => None,
                    Frame::Data(bytes) => Some(Ok(bytes)),
                    Frame::End => None,
                    Frame::Cut => {
                        *ended = true;
                        Some(Err(std::io::Error::other("connection cut by the test")))
                    }
                };
                std::future::ready(item)
            });
        let mut response = Response::new(Body::from_stream(stream));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        (conn, response)
    }

    pub(super) fn closed(&self) -> bool {
        self.tx.is_closed()
    }

    pub(super) fn send_raw(&self, bytes: Bytes) {
        if !self.silent.load(Ordering::SeqCst) {
            let _ = self.tx.send(Frame::Data(bytes));
        }
    }

    pub(super) fn send(&self, value: &Value) {
        if !self.stuck.load(Ordering::SeqCst) {
            self.send_raw(Bytes::from(format!("{value}\n")));
        }
    }

    pub(super) fn end(&self) {
        let _ = self.tx.send(Frame::End);
    }

    pub(super) fn cut(&self) {
        let _ = self.tx.send(Frame::Cut);
    }

    pub(super) fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    pub(super) fn stick(&self) {
        self.stuck.store(true, Ordering::SeqCst);
    }
}
