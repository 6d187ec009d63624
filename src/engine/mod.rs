//! The engine: a searcher over `chess` positions and the thread that runs
//! it. Nothing here is async and the search does no I/O; the two front
//! ends (`uci` and the bot) drive it through `Engine`, the offline tools
//! (`crate::tools`: datagen, tune, clocktest) from outside.
//!
//! One idea per file: `score` (values and mate arithmetic), `tt`
//! (transposition table), `see` (static exchange), `history` (move
//! ordering statistics), `movepick` (staged move ordering), `eval`,
//! `weights` and `params` (the evaluation, the layout of its weights and
//! the tuned weights; the hand-crafted evaluation), `nnue` (the neural
//! evaluation the search uses by default, and its net file), `search`
//! (iterative deepening and alpha-beta), `limits` and `timeman` (what the
//! caller asked for and how much time to use), `thread` (the engine
//! thread and its handle), `hashfile` (the table on disk), `bench` (the
//! search signature), `book` (Polyglot opening books), `tablebase`
//! (Syzygy endgame tables), `sources` (the move a book or the tables
//! give without a search) and `tune` (the search constants SPSA tunes).

pub mod bench;
pub mod book;
pub mod eval;
pub mod hashfile;
pub mod history;
pub mod limits;
pub mod movepick;
pub mod nnue;
pub mod pages;
pub mod params;
pub mod score;
pub mod search;
pub mod see;
pub mod sources;
pub mod tablebase;
pub mod thread;
pub mod timeman;
pub mod tt;
pub mod tune;
pub mod weights;

pub use limits::{Limits, ThreadShare};
pub use score::Score;
pub use search::{SearchInfo, SearchResult};
pub use thread::{BestMove, Engine, EngineOptions, Event, GoRequest, SearchId, panic_message};
