//! Newline-delimited JSON over an HTTP byte stream, with a silence
//! watchdog.
//!
//! Lichess streams (`/api/stream/event`, game streams) are ndjson: one JSON
//! object per line, and blank lines as keep-alives. The bytes arrive in
//! chunks that have nothing to do with lines: a chunk may hold half a line,
//! several lines, or the end of one and the start of the next.
//! [`NdjsonStream`] turns such a chunk stream into a stream of
//! [`StreamEvent`]s:
//! - every complete line that parses becomes [`StreamEvent::Item`];
//! - a blank line becomes [`StreamEvent::KeepAlive`], so a caller can see
//!   that the stream is alive;
//! - a line that does not parse, or that is longer than the bound
//!   ([`DEFAULT_MAX_LINE_LEN`]), is skipped and reported as
//!   [`StreamEvent::Skipped`]; the stream goes on. An oversized line is
//!   discarded as it arrives, so memory stays bounded.
//!
//! Streams die silently in practice (the TCP connection stays up, nothing
//! arrives), so a watchdog ends the stream with [`StreamError::Silent`]
//! when no byte at all, keep-alives included, has arrived for the silence
//! timeout ([`DEFAULT_SILENCE_TIMEOUT`]). A transport error also ends it.
//! After an `Err` the stream yields `None`.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use serde::de::DeserializeOwned;
use tokio::time::{Instant, Sleep};

/// The longest line kept (1 MiB); longer lines are skipped.
pub const DEFAULT_MAX_LINE_LEN: usize = 1 << 20;

/// How long a stream may stay silent before it is declared dead: lila
/// sends a keep-alive every 7 s (6 s in older versions; the API spec says
/// 7), so two missed and a little more.
pub const DEFAULT_SILENCE_TIMEOUT: Duration = Duration::from_secs(16);

/// How much of a malformed line is kept for the log.
const SNIPPET_LEN: usize = 120;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One step of an ndjson stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent<T> {
    /// A line parsed into a `T`.
    Item(T),
    /// A blank line: the server's keep-alive.
    KeepAlive,
    /// A line that was skipped; the stream goes on.
    Skipped(SkippedLine),
}

/// Why a line was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkippedLine {
    /// Not valid JSON, or not the expected shape.
    Malformed {
        /// The parse error.
        error: String,
        /// Length of the line in bytes.
        len: usize,
        /// The start of the line (lossy UTF-8), for the log.
        snippet: String,
        /// The line's `type`, when it is a JSON object that has one: what
        /// was lost (a `gameState` may have carried a move).
        kind: Option<String>,
    },
    /// Longer than the bound; discarded unread.
    Oversized {
        /// Length of the line in bytes.
        len: usize,
    },
}

impl fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkippedLine::Malformed {
                error,
                len,
                snippet,
                ..
            } => write!(f, "malformed line ({len} bytes): {error}: {snippet:?}"),
            SkippedLine::Oversized { len } => write!(f, "oversized line ({len} bytes) discarded"),
        }
    }
}

/// Why a stream ended. The stream yields `None` after one of these.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The connection failed (reset, cut mid-chunk...).
    #[error("stream transport error: {0}")]
    Transport(#[source] BoxError),
    /// Nothing arrived, not even a keep-alive, for this long.
    #[error("stream silent for {0:?}: presumed dead")]
    Silent(Duration),
}

/// A line cut out of the byte stream.
#[derive(Debug, PartialEq, Eq)]
enum RawLine {
    Line(Vec<u8>),
    Oversized(usize),
}

/// Cuts a byte stream into lines of bounded length.
#[derive(Debug)]
struct LineSplitter {
    buf: Vec<u8>,
    max_len: usize,
    /// `Some(n)` while discarding an oversized line: `n` bytes so far.
    discarding: Option<usize>,
    ready: VecDeque<RawLine>,
}

impl LineSplitter {
    fn new(max_len: usize) -> LineSplitter {
        LineSplitter {
            buf: Vec::new(),
            max_len,
            discarding: None,
            ready: VecDeque::new(),
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&chunk[..i], &chunk[i + 1..]),
                None => (chunk, &[][..]),
            };
            if let Some(discarded) = self.discarding.as_mut() {
                *discarded += part.len();
            } else if self.buf.len() + part.len() > self.max_len {
                // Drop what we hold now rather than at the end of the line:
                // that is the point of the bound.
                self.discarding = Some(self.buf.len() + part.len());
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(part);
            }
            if newline.is_some() {
                self.end_line();
            }
            chunk = rest;
        }
    }

    fn end_line(&mut self) {
        match self.discarding.take() {
            Some(len) => self.ready.push_back(RawLine::Oversized(len)),
            None => self
                .ready
                .push_back(RawLine::Line(std::mem::take(&mut self.buf))),
        }
    }

    /// At end of input, a last line without its newline is still a line.
    fn finish(&mut self) {
        if self.discarding.is_some() || !self.buf.is_empty() {
            self.end_line();
        }
    }

    fn pop(&mut self) -> Option<RawLine> {
        self.ready.pop_front()
    }
}

/// An ndjson stream of `T` over a stream of byte chunks `S`, with a
/// silence watchdog. See the module documentation.
///
/// The watchdog uses the tokio timer: poll the stream inside a tokio
/// runtime.
pub struct NdjsonStream<S, T> {
    inner: S,
    splitter: LineSplitter,
    silence_timeout: Duration,
    /// Created on the first poll, so the stream can be built anywhere.
    watchdog: Option<Pin<Box<Sleep>>>,
    done: bool,
    _item: PhantomData<fn() -> T>,
}

impl<S, T> fmt::Debug for NdjsonStream<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NdjsonStream")
            .field("buffered", &self.splitter.buf.len())
            .field("max_line_len", &self.splitter.max_len)
            .field("silence_timeout", &self.silence_timeout)
            .field("done", &self.done)
            .finish()
    }
}

impl<S, T> NdjsonStream<S, T> {
    /// Wraps a chunk stream with the default bounds.
    pub fn new(inner: S) -> NdjsonStream<S, T> {
        NdjsonStream {
            inner,
            splitter: LineSplitter::new(DEFAULT_MAX_LINE_LEN),
            silence_timeout: DEFAULT_SILENCE_TIMEOUT,
            watchdog: None,
            done: false,
            _item: PhantomData,
        }
    }

    /// Sets how long the stream may stay silent before it is dead.
    pub fn silence_timeout(mut self, timeout: Duration) -> NdjsonStream<S, T> {
        self.silence_timeout = timeout;
        self
    }

    /// Sets the longest line kept, in bytes.
    pub fn max_line_len(mut self, max_len: usize) -> NdjsonStream<S, T> {
        self.splitter.max_len = max_len;
        self
    }

    fn feed(&mut self, chunk: &[u8]) {
        let deadline = Instant::now() + self.silence_timeout;
        match self.watchdog.as_mut() {
            Some(sleep) => sleep.as_mut().reset(deadline),
            None => self.watchdog = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
        self.splitter.push(chunk);
    }
}

impl<S, T: DeserializeOwned> NdjsonStream<S, T> {
    fn decode(raw: RawLine) -> StreamEvent<T> {
        let line = match raw {
            RawLine::Oversized(len) => return StreamEvent::Skipped(SkippedLine::Oversized { len }),
            RawLine::Line(line) => line,
        };
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            return StreamEvent::KeepAlive;
        }
        match serde_json::from_slice(trimmed) {
            Ok(item) => StreamEvent::Item(item),
            Err(error) => {
                let end = trimmed.len().min(SNIPPET_LEN);
                StreamEvent::Skipped(SkippedLine::Malformed {
                    error: error.to_string(),
                    len: line.len(),
                    snippet: String::from_utf8_lossy(&trimmed[..end]).into_owned(),
                    kind: line_type(trimmed),
                })
            }
        }
    }
}

/// The `type` field of a JSON object line, if it has a string one.
fn line_type(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_slice::<Typed>(line).ok().map(|t| t.kind)
}

impl<S, B, E, T> Stream for NdjsonStream<S, T>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: Into<BoxError>,
    T: DeserializeOwned,
{
    type Item = Result<StreamEvent<T>, StreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(raw) = this.splitter.pop() {
                return Poll::Ready(Some(Ok(Self::decode(raw))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            // Read everything the connection has before looking at the
            // watchdog: bytes that arrived while nobody polled still count.
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let chunk = chunk.as_ref();
                    if !chunk.is_empty() {
                        this.feed(chunk);
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    // A partial line cut by the error is not worth reporting.
                    this.done = true;
                    return Poll::Ready(Some(Err(StreamError::Transport(error.into()))));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    this.splitter.finish();
                }
                Poll::Pending => {
                    let timeout = this.silence_timeout;
                    let watchdog = this
                        .watchdog
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                    if watchdog.as_mut().poll(cx).is_ready() {
                        this.done = true;
                        return Poll::Ready(Some(Err(StreamError::Silent(timeout))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde::Deserialize;
    use tokio::sync::mpsc;

    #[derive(Debug, PartialEq, Eq, Deserialize)]
    struct Msg {
        n: u32,
    }

    type Chunk = Result<Vec<u8>, std::io::Error>;

    /// A stream fed by hand through the returned sender.
    fn channel_stream(
        timeout: Duration,
    ) -> (
        mpsc::UnboundedSender<Chunk>,
        NdjsonStream<impl Stream<Item = Chunk> + Unpin, Msg>,
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Chunk>();
        let inner = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        (tx, NdjsonStream::new(inner).silence_timeout(timeout))
    }

    async fn collect(chunks: &[&[u8]], max_len: usize) -> Vec<StreamEvent<Msg>> {
        let owned: Vec<Chunk> = chunks.iter().map(|c| Ok(c.to_vec())).collect();
        let stream =
            NdjsonStream::<_, Msg>::new(futures::stream::iter(owned)).max_line_len(max_len);
        stream.map(|item| item.unwrap()).collect().await
    }

    fn item(n: u32) -> StreamEvent<Msg> {
        StreamEvent::Item(Msg { n })
    }

    #[tokio::test]
    async fn lines_split_across_chunks() {
        let got = collect(
            &[
                b"{\"n\"",
                b":1}\n{\"n\":2",
                b"}\n",
                b"{",
                b"\"n\":3}\n{\"n\":4}\n",
            ],
            100,
        )
        .await;
        assert_eq!(got, vec![item(1), item(2), item(3), item(4)]);
    }

    #[tokio::test]
    async fn one_byte_chunks_and_crlf() {
        let text = b"{\"n\":7}\r\n\r\n{\"n\":8}\r\n";
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        let got = collect(&chunks, 100).await;
        assert_eq!(got, vec![item(7), StreamEvent::KeepAlive, item(8)]);
    }

    #[tokio::test]
    async fn keep_alives_are_reported() {
        let got = collect(&[b"\n", b"\n{\"n\":1}\n\n"], 100).await;
        assert_eq!(
            got,
            vec![
                StreamEvent::KeepAlive,
                StreamEvent::KeepAlive,
                item(1),
                StreamEvent::KeepAlive
            ]
        );
    }

    #[tokio::test]
    async fn malformed_line_is_skipped_and_stream_continues() {
        let got = collect(&[b"{\"n\":1}\n{not json\n{\"x\":2}\n{\"n\":3}\n"], 100).await;
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], item(1));
        let StreamEvent::Skipped(SkippedLine::Malformed { len, snippet, .. }) = &got[1] else {
            panic!("expected malformed, got {:?}", got[1]);
        };
        assert_eq!(*len, 9);
        assert_eq!(snippet, "{not json");
        assert!(matches!(
            got[2],
            StreamEvent::Skipped(SkippedLine::Malformed { kind: None, .. })
        ));
        assert_eq!(got[3], item(3));
    }

    #[tokio::test]
    async fn a_malformed_line_says_its_type() {
        // Lichess puts `type` first, a serializer may not: it is found
        // wherever it stands, beyond the snippet too.
        let pad = "x".repeat(200);
        let line = format!("{{\"n\":\"{pad}\",\"type\":\"gameState\"}}\n");
        let got = collect(&[line.as_bytes(), b"\"text\"\n{\"type\":3}\n"], 1000).await;
        let kinds: Vec<_> = got
            .iter()
            .map(|e| match e {
                StreamEvent::Skipped(SkippedLine::Malformed { kind, .. }) => kind.clone(),
                other => panic!("expected malformed, got {other:?}"),
            })
            .collect();
        assert_eq!(kinds, [Some("gameState".to_owned()), None, None]);
    }

    #[tokio::test]
    async fn oversized_line_is_discarded_and_stream_continues() {
        let big = [b'x'; 50];
        let got = collect(
            &[b"{\"n\":1}\n", &big[..20], &big[20..], b"\n{\"n\":2}\n"],
            16,
        )
        .await;
        assert_eq!(
            got,
            vec![
                item(1),
                StreamEvent::Skipped(SkippedLine::Oversized { len: 50 }),
                item(2)
            ]
        );
        // Exactly at the bound is fine.
        let got = collect(&[b"{\"n\":12345678}\n"], 14).await;
        assert_eq!(got, vec![item(12345678)]);
        let got = collect(&[b"{\"n\":12345678}\n"], 13).await;
        assert_eq!(
            got,
            vec![StreamEvent::Skipped(SkippedLine::Oversized { len: 14 })]
        );
    }

    #[test]
    fn oversized_line_does_not_grow_the_buffer() {
        let mut splitter = LineSplitter::new(10);
        for _ in 0..1000 {
            splitter.push(&[b'y'; 100]);
            assert!(splitter.buf.capacity() <= 10);
        }
        splitter.push(b"\n");
        assert_eq!(splitter.pop(), Some(RawLine::Oversized(100_000)));
        assert_eq!(splitter.pop(), None);
    }

    #[tokio::test]
    async fn last_line_without_newline_is_kept() {
        let got = collect(&[b"{\"n\":1}\n{\"n\":2}"], 100).await;
        assert_eq!(got, vec![item(1), item(2)]);
    }

    #[tokio::test]
    async fn transport_error_ends_the_stream() {
        let chunks: Vec<Chunk> = vec![
            Ok(b"{\"n\":1}\n{\"n\"".to_vec()),
            Err(std::io::Error::other("reset")),
            Ok(b":2}\n".to_vec()),
        ];
        let mut stream = NdjsonStream::<_, Msg>::new(futures::stream::iter(chunks));
        assert_eq!(stream.next().await.unwrap().unwrap(), item(1));
        assert!(matches!(
            stream.next().await,
            Some(Err(StreamError::Transport(_)))
        ));
        assert!(stream.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn watchdog_fires_after_silence() {
        let (tx, mut stream) = channel_stream(Duration::from_secs(20));
        tx.send(Ok(b"{\"n\":1}\n".to_vec())).unwrap();
        assert_eq!(stream.next().await.unwrap().unwrap(), item(1));
        let start = Instant::now();
        let result = stream.next().await;
        assert!(matches!(result, Some(Err(StreamError::Silent(_)))));
        assert!(start.elapsed() >= Duration::from_secs(20));
        assert!(stream.next().await.is_none());
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn keep_alives_feed_the_watchdog() {
        let (tx, mut stream) = channel_stream(Duration::from_secs(20));
        let feeder = tokio::spawn(async move {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(15)).await;
                if tx.send(Ok(b"\n".to_vec())).is_err() {
                    return;
                }
            }
            // Then silence, with the connection still open.
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(tx);
        });
        let start = Instant::now();
        for _ in 0..5 {
            assert_eq!(
                stream.next().await.unwrap().unwrap(),
                StreamEvent::KeepAlive
            );
        }
        assert!(matches!(
            stream.next().await,
            Some(Err(StreamError::Silent(_)))
        ));
        // 75 s of keep-alives, then 20 s of silence.
        assert!(start.elapsed() >= Duration::from_secs(95));
        assert!(start.elapsed() < Duration::from_secs(100));
        feeder.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn partial_lines_count_as_life() {
        let (tx, mut stream) = channel_stream(Duration::from_secs(20));
        let feeder = tokio::spawn(async move {
            for part in [&b"{\"n\""[..], b":", b"4", b"2}", b"\n"] {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let _ = tx.send(Ok(part.to_vec()));
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        });
        assert_eq!(stream.next().await.unwrap().unwrap(), item(42));
        feeder.abort();
    }
}
