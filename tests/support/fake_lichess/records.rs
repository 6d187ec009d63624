//! What a test reads back: per-game, per-challenge and per-request
//! records, and the read-only [`View`] of the server that
//! `FakeLichess::wait_for` conditions look at.

use std::collections::HashMap;

use shakmaty::variant::{Variant, VariantPosition};
use shakmaty::{Color, Position};
use tokio::time::Instant;

use super::setup::Opponent;
use super::world::World;

/// A move the server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IllegalMove {
    pub uci: String,
    /// Plies played when it was tried.
    pub ply: usize,
    pub reason: String,
}

/// A chat message in a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRecord {
    pub room: String,
    pub username: String,
    pub text: String,
    pub from_bot: bool,
}

/// What happened in a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameRecord {
    pub id: String,
    /// The Lichess key: `standard`, `chess960`, `fromPosition`,
    /// `crazyhouse`, `antichess`, `atomic`, `horde`, `kingOfTheHill`,
    /// `racingKings`, `threeCheck`.
    pub variant: String,
    /// shakmaty's rules the game is played by (`Chess` for standard,
    /// chess960 and fromPosition).
    pub rules: Variant,
    /// `startpos` (also for the variants with a start of their own: horde,
    /// racing kings) or the FEN of a Chess960 or fromPosition game, as
    /// `gameFull.initialFen`.
    pub initial_fen: String,
    pub bot_color: Color,
    pub opponent: Opponent,
    /// UCI, as reported in `gameState.moves` (crazyhouse drops as `P@e4`;
    /// castling as e1g1 but in Chess960, king takes rook there).
    pub moves: Vec<String>,
    /// `started`, `mate`, `resign`, `stalemate`, `draw`, `outoftime`,
    /// `timeout`, `aborted`, `noStart`, `variantEnd` (the variant's own
    /// win: see `game::end_of`).
    pub status: String,
    pub winner: Option<Color>,
    /// The current position, as lila writes it (crazyhouse pockets after a
    /// slash, three-check's checks given at the end: `... 0 1 +1+0`).
    pub fen: String,
    pub wtime_ms: i64,
    pub btime_ms: i64,
    /// The mover's time left after each move, as `gameState` said it.
    pub clocks_ms: Vec<i64>,
    /// Moves the bot posted that were refused (illegal or not its turn).
    pub illegal_moves: Vec<IllegalMove>,
    pub chat: Vec<ChatRecord>,
    /// The bot's answers to draw offers (`true`: accepted).
    pub draw_answers: Vec<bool>,
    /// Claims refused (400: the opponent not gone long enough).
    pub refused_claims: u32,
    /// Claims answered 200 that did nothing (on the bot's own turn, or
    /// before both sides moved: lila's `mightClaimWin` / `drawable`).
    pub ignored_claims: u32,
    /// The bot's answers to takeback proposals.
    pub takeback_answers: Vec<bool>,
    /// Draw offers the bot made (with a move or `draw/yes`) that counted.
    pub bot_draw_offers: usize,
    /// Draw offers the bot made that lila drops without a word: before
    /// ply 2, or within 20 plies of its last (`playerCanOfferDraw`).
    pub dropped_draw_offers: usize,
    /// Game streams opened for this game.
    pub stream_connections: usize,
}

impl GameRecord {
    pub fn is_over(&self) -> bool {
        self.status != "started"
    }

    /// The bot's chat lines in `room`.
    pub fn bot_chat(&self, room: &str) -> Vec<String> {
        self.chat
            .iter()
            .filter(|c| c.from_bot && c.room == room)
            .map(|c| c.text.clone())
            .collect()
    }
}

/// A challenge as the fake sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeRecord {
    pub id: String,
    /// `created`, `accepted`, `declined`, `canceled`.
    pub status: String,
    /// `in` (to the bot) or `out` (from the bot).
    pub direction: String,
    /// The reason the bot gave (`tooFast`...), if it declined.
    pub decline_reason: Option<String>,
    /// For challenges the bot created: who, and the form it sent.
    pub dest: Option<String>,
    pub form: HashMap<String, String>,
    /// The game it became, once accepted.
    pub game_id: Option<String>,
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub status: u16,
    pub at: Instant,
}

/// A read-only view of the server, for [`FakeLichess::wait_for`].
pub struct View<'a>(pub(super) &'a World);

impl View<'_> {
    pub fn game(&self, id: &str) -> Option<GameRecord> {
        self.0.games.get(id).map(|g| g.record())
    }

    /// The current position of game `id`, with shakmaty's rules of its
    /// variant.
    pub fn position(&self, id: &str) -> Option<VariantPosition> {
        self.0.games.get(id).map(|g| g.pos.clone())
    }

    /// The legal moves of the side to move in game `id`, in UCI as the
    /// game stream writes them (drops `P@e4`, castling e1g1 / king takes
    /// rook in Chess960). Empty once the game is over by the rules.
    pub fn legal_moves(&self, id: &str) -> Option<Vec<String>> {
        self.0
            .games
            .get(id)
            .map(|g| g.pos.legal_moves().iter().map(|m| g.uci(*m)).collect())
    }

    pub fn challenge(&self, id: &str) -> Option<ChallengeRecord> {
        self.0.challenges.get(id).map(|c| c.record())
    }

    pub fn challenges(&self) -> Vec<ChallengeRecord> {
        self.0
            .challenge_order
            .iter()
            .filter_map(|id| self.challenge(id))
            .collect()
    }

    pub fn requests(&self) -> &[RequestRecord] {
        &self.0.requests
    }

    pub fn event_stream_connected(&self) -> bool {
        self.0.event_stream.as_ref().is_some_and(|c| !c.closed())
    }

    pub fn event_stream_connections(&self) -> usize {
        self.0.event_connections
    }

    /// Whether the account is a BOT account now.
    pub fn is_bot(&self) -> bool {
        self.0.is_bot
    }

    /// Whether a game stream of game `id` is open now.
    pub fn game_stream_open(&self, id: &str) -> bool {
        self.0
            .games
            .get(id)
            .is_some_and(|g| g.subscribers.iter().any(|c| !c.closed()))
    }

    /// Games in progress right now.
    pub fn games_in_progress(&self) -> usize {
        self.0.in_progress()
    }

    /// The most games ever in progress at once.
    pub fn max_simultaneous_games(&self) -> usize {
        self.0.max_simultaneous
    }
}
