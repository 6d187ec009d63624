//! The Lichess layer: everything the daemon says to and hears from
//! lichess.org, and nothing about chess engines.
//!
//! - [`client`]: the one HTTP [`Client`] (auth, retries, every bot
//!   endpoint), with [`token`] (the secret [`Token`]), [`error`] (what a
//!   request's failure says), [`gates`] (the rate-limit gate of each
//!   [`Endpoint`]) and [`routes`] (every endpoint's method, path and
//!   gate, in one table);
//! - [`model`]: serde types of every event and response;
//! - [`stream`]: ndjson over a byte stream, with a silence watchdog;
//! - [`backoff`]: the reconnect backoff of every loop that reopens a stream;
//! - [`online`]: the online move sources (tablebase server, cloud
//!   evaluation), on their own HTTP client.

pub mod backoff;
pub mod client;
pub mod error;
pub mod gates;
pub mod model;
pub mod online;
pub mod routes;
pub mod stream;
pub mod token;

pub use client::{
    ChallengeTime, Client, ClientOptions, CreateChallenge, EventStream, GameStream, MAX_CHAT_LEN,
    RetryPolicy,
};
pub use error::Error;
pub use gates::Endpoint;
pub use model::{
    Account, Challenge, ChallengeColor, ChatLine, ChatRoom, Color, DeclineReason, Event, GameEvent,
    GameFull, GameInfo, GameState, GameStatus, NowPlaying, Speed, TimeControl, Title, VariantKey,
};
pub use stream::{NdjsonStream, SkippedLine, StreamError, StreamEvent};
pub use token::{Token, TokenError};
