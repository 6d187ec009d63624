//! The Lichess layer: everything the daemon says to and hears from
//! lichess.org, and nothing about chess engines.
//!
//! - [`client`]: the one HTTP [`Client`] (auth, the shared rate-limit gate,
//!   retries, every bot endpoint) and the secret [`Token`];
//! - [`model`]: serde types of every event and response;
//! - [`stream`]: ndjson over a byte stream, with a silence watchdog;
//! - [`backoff`]: the reconnect backoff of every loop that reopens a stream;
//! - [`online`]: the online move sources (tablebase server, cloud
//!   evaluation), on their own HTTP client.

pub mod backoff;
pub mod client;
pub mod model;
pub mod online;
pub mod stream;

pub use client::{
    ChallengeTime, Client, ClientOptions, CreateChallenge, Error, EventStream, GameStream,
    MAX_CHAT_LEN, RetryPolicy, Token, TokenError,
};
pub use model::{
    Account, Challenge, ChallengeColor, ChatLine, ChatRoom, Color, DeclineReason, Event, GameEvent,
    GameFull, GameInfo, GameState, GameStatus, NowPlaying, Speed, TimeControl, Title, VariantKey,
};
pub use stream::{NdjsonStream, SkippedLine, StreamError, StreamEvent};
