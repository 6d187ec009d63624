//! Typed serde models of what Lichess sends a bot: the events of
//! `/api/stream/event`, the lines of `/api/bot/game/stream/{id}`, the
//! account, the ongoing games and the error bodies.
//!
//! Field names follow the lichess-org/api OpenAPI spec
//! (`doc/specs/schemas/`). The models are deliberately lenient, because
//! Lichess adds fields and omits many documented ones:
//! - unknown fields are ignored;
//! - a field the bot can live without is an `Option` or has a default
//!   (rating, title, winner, wdraw, the clock of a correspondence game...).
//!   A type whose every field is optional says so once, `#[serde(default)]`
//!   on the type; a type with a required field (an id, a player, a state)
//!   marks its optional fields one by one, so that a missing id is an
//!   error and not an empty string;
//! - an unknown `type` parses into an `Unknown` variant carrying the type
//!   name, and an unknown enum value (a new variant, speed, status or title)
//!   into that enum's `Unknown`/`Other` variant, so nothing new is fatal.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

/// A side of the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Color {
    White,
    Black,
}

impl Color {
    /// The other side.
    pub fn opposite(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }

    /// `"white"` or `"black"`, as Lichess spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Color::White => "white",
            Color::Black => "black",
        }
    }
}

/// The colour asked for in a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeColor {
    White,
    Black,
    Random,
}

impl ChallengeColor {
    /// The form value Lichess expects.
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeColor::White => "white",
            ChallengeColor::Black => "black",
            ChallengeColor::Random => "random",
        }
    }
}

/// A variant key (`VariantKey.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum VariantKey {
    Standard,
    Chess960,
    Crazyhouse,
    Antichess,
    Atomic,
    Horde,
    KingOfTheHill,
    RacingKings,
    ThreeCheck,
    FromPosition,
    /// A variant this version does not know.
    #[serde(other)]
    Unknown,
}

impl VariantKey {
    /// The key as Lichess spells it (`"unknown"` for [`VariantKey::Unknown`]).
    pub fn as_str(self) -> &'static str {
        match self {
            VariantKey::Standard => "standard",
            VariantKey::Chess960 => "chess960",
            VariantKey::Crazyhouse => "crazyhouse",
            VariantKey::Antichess => "antichess",
            VariantKey::Atomic => "atomic",
            VariantKey::Horde => "horde",
            VariantKey::KingOfTheHill => "kingOfTheHill",
            VariantKey::RacingKings => "racingKings",
            VariantKey::ThreeCheck => "threeCheck",
            VariantKey::FromPosition => "fromPosition",
            VariantKey::Unknown => "unknown",
        }
    }

    /// Chess by the standard rules, from the usual start or another
    /// (Chess960, a position): what the built-in engine plays.
    pub fn is_chess(self) -> bool {
        matches!(
            self,
            VariantKey::Standard | VariantKey::Chess960 | VariantKey::FromPosition
        )
    }
}

/// A variant as Lichess describes it (`Variant.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub key: VariantKey,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub short: Option<String>,
}

impl Default for Variant {
    fn default() -> Variant {
        Variant {
            key: VariantKey::Standard,
            name: None,
            short: None,
        }
    }
}

/// A speed category (`Speed.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Speed {
    UltraBullet,
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
    #[serde(other)]
    Unknown,
}

impl Speed {
    /// The speed as Lichess spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Speed::UltraBullet => "ultraBullet",
            Speed::Bullet => "bullet",
            Speed::Blitz => "blitz",
            Speed::Rapid => "rapid",
            Speed::Classical => "classical",
            Speed::Correspondence => "correspondence",
            Speed::Unknown => "unknown",
        }
    }
}

/// A title (`Title.yaml`); `BOT` marks a bot account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Title {
    Gm,
    Wgm,
    Im,
    Wim,
    Fm,
    Wfm,
    Nm,
    Cm,
    Wcm,
    Wnm,
    Lm,
    Bot,
    /// A title this version does not know.
    #[serde(other)]
    Other,
}

/// The status of a game (`GameStatusName.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GameStatus {
    Created,
    Started,
    Aborted,
    Mate,
    Resign,
    Stalemate,
    Timeout,
    Draw,
    Outoftime,
    Cheat,
    NoStart,
    UnknownFinish,
    InsufficientMaterialClaim,
    VariantEnd,
    #[serde(other)]
    Unknown,
}

impl GameStatus {
    /// Whether the game is still going on (`created` or `started`).
    ///
    /// An unknown status counts as finished: a status Lichess adds later is
    /// far more likely to be a new way of ending a game than of playing one.
    pub fn is_ongoing(self) -> bool {
        matches!(self, GameStatus::Created | GameStatus::Started)
    }
}

/// `status` arrives as a plain name in `gameState` and `nowPlaying`, but as
/// `{"id": 20, "name": "started"}` in `gameStart`/`gameFinish`: accept both.
fn status_name_or_object<'de, D>(deserializer: D) -> Result<Option<GameStatus>, D::Error>
where
    D: Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Name(GameStatus),
        Object { name: GameStatus },
    }
    Ok(
        Option::<Repr>::deserialize(deserializer)?.map(|repr| match repr {
            Repr::Name(status) | Repr::Object { name: status } => status,
        }),
    )
}

/// A time control (`TimeControl.yaml`), tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TimeControl {
    /// A real-time clock: `limit` and `increment` in seconds.
    Clock {
        limit: u32,
        increment: u32,
        #[serde(default)]
        show: Option<String>,
    },
    /// Correspondence: days per move.
    #[serde(rename_all = "camelCase")]
    Correspondence {
        #[serde(default)]
        days_per_turn: Option<u32>,
    },
    /// No clock at all.
    Unlimited,
    #[serde(other)]
    Unknown,
}

/// Why we decline a challenge: the `reason` form value of
/// `POST /api/challenge/{id}/decline`. Lichess translates it for the
/// challenger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DeclineReason {
    Generic,
    Later,
    TooFast,
    TooSlow,
    TimeControl,
    Rated,
    Casual,
    Standard,
    Variant,
    NoBot,
    OnlyBot,
}

impl DeclineReason {
    /// All reasons, in the spec's order.
    pub const ALL: [DeclineReason; 11] = [
        DeclineReason::Generic,
        DeclineReason::Later,
        DeclineReason::TooFast,
        DeclineReason::TooSlow,
        DeclineReason::TimeControl,
        DeclineReason::Rated,
        DeclineReason::Casual,
        DeclineReason::Standard,
        DeclineReason::Variant,
        DeclineReason::NoBot,
        DeclineReason::OnlyBot,
    ];

    /// The form value (`"tooFast"`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineReason::Generic => "generic",
            DeclineReason::Later => "later",
            DeclineReason::TooFast => "tooFast",
            DeclineReason::TooSlow => "tooSlow",
            DeclineReason::TimeControl => "timeControl",
            DeclineReason::Rated => "rated",
            DeclineReason::Casual => "casual",
            DeclineReason::Standard => "standard",
            DeclineReason::Variant => "variant",
            DeclineReason::NoBot => "noBot",
            DeclineReason::OnlyBot => "onlyBot",
        }
    }

    /// Reads a reason in either spelling: the form value (`"tooFast"`) or
    /// the lowercase `declineReasonKey` of a `challengeDeclined` event
    /// (`"toofast"`).
    pub fn from_key(key: &str) -> Option<DeclineReason> {
        DeclineReason::ALL
            .into_iter()
            .find(|reason| reason.as_str().eq_ignore_ascii_case(key))
    }
}

impl fmt::Display for DeclineReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A user as shown in a challenge (`ChallengeUser.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChallengeUser {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub rating: Option<u32>,
    #[serde(default)]
    pub title: Option<Title>,
    #[serde(default)]
    pub provisional: bool,
    #[serde(default)]
    pub online: Option<bool>,
    #[serde(default)]
    pub lag: Option<u32>,
}

impl ChallengeUser {
    /// Whether this is a bot account.
    pub fn is_bot(&self) -> bool {
        self.title == Some(Title::Bot)
    }
}

/// Whether a challenge was sent to us or by us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    In,
    Out,
}

/// The state of a challenge (`ChallengeStatus.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeStatus {
    Created,
    Offline,
    Canceled,
    Declined,
    Accepted,
    #[serde(other)]
    Unknown,
}

/// The perf a challenge counts for (`perf` in `ChallengeJson.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ChallengePerf {
    pub icon: Option<String>,
    pub name: Option<String>,
}

/// Which clients a game can be played with (`GameCompat.yaml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Compat {
    pub bot: bool,
    pub board: bool,
}

/// A challenge (`ChallengeJson.yaml`, plus the decline fields of
/// `ChallengeDeclinedJson.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    pub id: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub status: Option<ChallengeStatus>,
    /// `null` for an anonymous challenger (lila's JsonView writes
    /// `challengerUser`, none for a player without an account).
    #[serde(default)]
    pub challenger: Option<ChallengeUser>,
    #[serde(default)]
    pub dest_user: Option<ChallengeUser>,
    #[serde(default)]
    pub variant: Variant,
    #[serde(default)]
    pub rated: bool,
    #[serde(default = "unknown_speed")]
    pub speed: Speed,
    #[serde(default = "unlimited")]
    pub time_control: TimeControl,
    #[serde(default)]
    pub color: Option<ChallengeColor>,
    #[serde(default)]
    pub final_color: Option<Color>,
    #[serde(default)]
    pub perf: Option<ChallengePerf>,
    /// Only in the answers about one challenge (its creation, `GET
    /// /api/challenge`), never on the event stream.
    #[serde(default)]
    pub direction: Option<Direction>,
    /// The starting FEN of a `fromPosition` (or Chess960) challenge.
    #[serde(default)]
    pub initial_fen: Option<String>,
    #[serde(default)]
    pub rematch_of: Option<String>,
    /// Human-readable reason, only in `challengeDeclined`.
    #[serde(default)]
    pub decline_reason: Option<String>,
    /// Machine-readable reason (lowercase, e.g. `"toofast"`), only in
    /// `challengeDeclined`.
    #[serde(default)]
    pub decline_reason_key: Option<String>,
}

impl Challenge {
    /// Whether user `user_id` (in any case) sent this challenge. The
    /// event stream gives our own challenges too, without a `direction`
    /// (lila's EventStream sends every challenge we send or receive as
    /// `challengeJsonView(none)`): the challenger tells whose it is.
    pub fn is_from(&self, user_id: &str) -> bool {
        self.challenger_id()
            .is_some_and(|id| id.eq_ignore_ascii_case(user_id))
    }

    /// The challenger's user id; `None` for an anonymous challenger.
    pub fn challenger_id(&self) -> Option<&str> {
        self.challenger.as_ref().map(|user| user.id.as_str())
    }

    /// The challenger, for the log: its id, or `anonymous`.
    pub fn challenger_label(&self) -> &str {
        self.challenger_id().unwrap_or("anonymous")
    }

    /// Whether a bot account challenges (an anonymous challenger is not
    /// one).
    pub fn from_bot(&self) -> bool {
        self.challenger.as_ref().is_some_and(ChallengeUser::is_bot)
    }

    /// The challenger's rating, if it has an account and a rating.
    pub fn challenger_rating(&self) -> Option<u32> {
        self.challenger.as_ref().and_then(|user| user.rating)
    }
}

fn unknown_speed() -> Speed {
    Speed::Unknown
}

fn unlimited() -> TimeControl {
    TimeControl::Unlimited
}

/// The opponent as listed in `gameStart`/`gameFinish`/`nowPlaying`
/// (`GameEventOpponent.yaml`). `id` is null for the Lichess AI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct GameOpponent {
    pub id: Option<String>,
    pub username: String,
    pub rating: Option<u32>,
    pub rating_diff: Option<i32>,
    /// Lichess AI level (1 to 8) when playing the AI.
    pub ai: Option<u8>,
}

impl GameOpponent {
    /// Whether the opponent is a bot account: lila writes the name with
    /// its title (`Namer.playerTextBlocking`, the `titleName`: "BOT Name"),
    /// and a Lichess username holds no space.
    pub fn is_bot(&self) -> bool {
        self.username.starts_with("BOT ")
    }
}

/// A game as listed in `gameStart`, `gameFinish` and `nowPlaying`
/// (`GameEventInfo.yaml`). Only `gameId` and `fullId` are guaranteed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameInfo {
    pub game_id: String,
    pub full_id: String,
    #[serde(default)]
    pub fen: Option<String>,
    #[serde(default)]
    pub color: Option<Color>,
    #[serde(default)]
    pub last_move: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default, deserialize_with = "status_name_or_object")]
    pub status: Option<GameStatus>,
    #[serde(default)]
    pub variant: Option<Variant>,
    #[serde(default)]
    pub speed: Option<Speed>,
    #[serde(default)]
    pub perf: Option<String>,
    #[serde(default)]
    pub rating: Option<u32>,
    #[serde(default)]
    pub rated: bool,
    #[serde(default)]
    pub has_moved: bool,
    #[serde(default)]
    pub opponent: Option<GameOpponent>,
    #[serde(default)]
    pub is_my_turn: bool,
    /// Seconds left on our clock (absent against the AI in correspondence).
    #[serde(default)]
    pub seconds_left: Option<i64>,
    #[serde(default)]
    pub winner: Option<Color>,
    #[serde(default)]
    pub rating_diff: Option<i32>,
    #[serde(default)]
    pub compat: Option<Compat>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub tournament_id: Option<String>,
}

/// One line of `/api/stream/event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A challenge to us, or one of ours: the stream echoes those too,
    /// without a `direction` (see [`Challenge::is_from`]).
    Challenge {
        challenge: Challenge,
        compat: Option<Compat>,
    },
    /// The challenger cancelled a challenge to us.
    ChallengeCanceled { challenge: Challenge },
    /// Our challenge was declined.
    ChallengeDeclined { challenge: Challenge },
    /// A game started (or is still running when the stream opens).
    GameStart { game: GameInfo },
    /// A game finished.
    GameFinish { game: GameInfo },
    /// A `type` this version does not know; log it and go on.
    Unknown { kind: String },
}

#[derive(Deserialize)]
struct ChallengeBody {
    challenge: Challenge,
    #[serde(default)]
    compat: Option<Compat>,
}

#[derive(Deserialize)]
struct GameBody {
    game: GameInfo,
}

/// Reads the `type` field of a line, then the body of that type: an unknown
/// type is not an error, a known type with a bad body is.
fn tagged<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<(String, serde_json::Value), D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    let kind = match value.get("type") {
        Some(serde_json::Value::String(kind)) => kind.clone(),
        Some(_) => return Err(de::Error::custom("`type` is not a string")),
        None => return Err(de::Error::missing_field("type")),
    };
    Ok((kind, value))
}

fn body<T: DeserializeOwned, E: de::Error>(value: serde_json::Value) -> Result<T, E> {
    serde_json::from_value(value).map_err(E::custom)
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        let (kind, value) = tagged(deserializer)?;
        Ok(match kind.as_str() {
            "challenge" => {
                let ChallengeBody { challenge, compat } = body(value)?;
                Event::Challenge { challenge, compat }
            }
            "challengeCanceled" => Event::ChallengeCanceled {
                challenge: body::<ChallengeBody, _>(value)?.challenge,
            },
            "challengeDeclined" => Event::ChallengeDeclined {
                challenge: body::<ChallengeBody, _>(value)?.challenge,
            },
            "gameStart" => Event::GameStart {
                game: body::<GameBody, _>(value)?.game,
            },
            "gameFinish" => Event::GameFinish {
                game: body::<GameBody, _>(value)?.game,
            },
            _ => Event::Unknown { kind },
        })
    }
}

/// The clock of a real-time game in `gameFull`, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameClock {
    pub initial: u64,
    pub increment: u64,
}

/// A player in `gameFull` (`GameEventPlayer.yaml`). The Lichess AI has no
/// id or name, only `aiLevel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GamePlayer {
    pub id: String,
    pub name: String,
    pub title: Option<Title>,
    pub rating: Option<u32>,
    pub provisional: bool,
    pub ai_level: Option<u8>,
}

impl GamePlayer {
    /// Whether this is a bot account.
    pub fn is_bot(&self) -> bool {
        self.title == Some(Title::Bot)
    }
}

/// `perf` in `gameFull`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct GamePerf {
    pub name: Option<String>,
}

/// The first line of a game stream: everything immutable plus the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GameFull {
    pub id: String,
    #[serde(default)]
    pub variant: Variant,
    /// Absent for correspondence and unlimited games.
    #[serde(default)]
    pub clock: Option<GameClock>,
    #[serde(default = "unknown_speed")]
    pub speed: Speed,
    #[serde(default)]
    pub perf: Option<GamePerf>,
    #[serde(default)]
    pub rated: bool,
    #[serde(default)]
    pub created_at: Option<u64>,
    pub white: GamePlayer,
    pub black: GamePlayer,
    /// `"startpos"` or a FEN.
    #[serde(default = "startpos")]
    pub initial_fen: String,
    pub state: GameState,
    /// Set for correspondence games.
    #[serde(default)]
    pub days_per_turn: Option<u32>,
    #[serde(default)]
    pub tournament_id: Option<String>,
}

fn startpos() -> String {
    "startpos".to_owned()
}

impl GameFull {
    /// The starting FEN, or `None` for the standard starting position.
    pub fn initial_fen(&self) -> Option<&str> {
        match self.initial_fen.as_str() {
            "" | "startpos" => None,
            fen => Some(fen),
        }
    }

    /// The colour the player with this id plays (ids compare
    /// case-insensitively), or `None` if they do not play this game.
    pub fn color_of(&self, user_id: &str) -> Option<Color> {
        if self.white.id.eq_ignore_ascii_case(user_id) {
            Some(Color::White)
        } else if self.black.id.eq_ignore_ascii_case(user_id) {
            Some(Color::Black)
        } else {
            None
        }
    }
}

/// "Aborted if nobody moves in time": only present for the first moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expiration {
    pub idle_millis: u64,
    pub millis_to_move: u64,
}

/// The mutable state of a game, sent on every move (`GameStateEvent.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameState {
    /// Every move from the initial position, space-separated UCI.
    #[serde(default)]
    pub moves: String,
    /// Milliseconds left for White (huge in correspondence games).
    pub wtime: u64,
    pub btime: u64,
    #[serde(default)]
    pub winc: u64,
    #[serde(default)]
    pub binc: u64,
    #[serde(deserialize_with = "required_status")]
    pub status: GameStatus,
    #[serde(default)]
    pub winner: Option<Color>,
    #[serde(default)]
    pub wdraw: bool,
    #[serde(default)]
    pub bdraw: bool,
    #[serde(default)]
    pub wtakeback: bool,
    #[serde(default)]
    pub btakeback: bool,
    #[serde(default)]
    pub expiration: Option<Expiration>,
}

fn required_status<'de, D: Deserializer<'de>>(deserializer: D) -> Result<GameStatus, D::Error> {
    status_name_or_object(deserializer)?.ok_or_else(|| de::Error::custom("`status` is null"))
}

impl GameState {
    /// The moves, one UCI string each.
    pub fn moves(&self) -> impl Iterator<Item = &str> {
        self.moves.split_ascii_whitespace()
    }

    /// How many plies have been played.
    pub fn ply(&self) -> usize {
        self.moves().count()
    }

    /// Milliseconds left for `color`.
    pub fn time_left(&self, color: Color) -> u64 {
        match color {
            Color::White => self.wtime,
            Color::Black => self.btime,
        }
    }

    /// Increment of `color` in milliseconds.
    pub fn increment(&self, color: Color) -> u64 {
        match color {
            Color::White => self.winc,
            Color::Black => self.binc,
        }
    }

    /// Whether `color` is offering a draw.
    pub fn offers_draw(&self, color: Color) -> bool {
        match color {
            Color::White => self.wdraw,
            Color::Black => self.bdraw,
        }
    }

    /// Whether `color` is proposing a takeback.
    pub fn proposes_takeback(&self, color: Color) -> bool {
        match color {
            Color::White => self.wtakeback,
            Color::Black => self.btakeback,
        }
    }
}

/// The two chat rooms of a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRoom {
    Player,
    Spectator,
    #[serde(other)]
    Unknown,
}

impl ChatRoom {
    /// The form value Lichess expects.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRoom::Player => "player",
            ChatRoom::Spectator => "spectator",
            ChatRoom::Unknown => "unknown",
        }
    }
}

/// A chat message in a game stream (the bot's own ones included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLine {
    pub room: ChatRoom,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub text: String,
}

/// The opponent left (or came back); a win can be claimed after
/// `claim_win_in_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpponentGone {
    pub gone: bool,
    /// Any JSON number: fractions are rounded up, negatives count as 0 and
    /// huge values as [`MAX_CLAIM_WAIT_SECS`].
    #[serde(default, deserialize_with = "claim_seconds")]
    pub claim_win_in_seconds: Option<u32>,
}

/// The longest wait before claiming a win that we believe (an hour).
pub const MAX_CLAIM_WAIT_SECS: u32 = 3600;

fn claim_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n: Option<serde_json::Number> = Option::deserialize(d)?;
    Ok(n.map(|n| {
        let secs = n.as_f64().unwrap_or(f64::from(MAX_CLAIM_WAIT_SECS)).ceil();
        secs.clamp(0.0, f64::from(MAX_CLAIM_WAIT_SECS)) as u32
    }))
}

/// One line of `/api/bot/game/stream/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GameEvent {
    /// Always the first line.
    GameFull(Box<GameFull>),
    GameState(GameState),
    ChatLine(ChatLine),
    OpponentGone(OpponentGone),
    /// A `type` this version does not know; log it and go on.
    Unknown {
        kind: String,
    },
}

impl<'de> Deserialize<'de> for GameEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<GameEvent, D::Error> {
        let (kind, value) = tagged(deserializer)?;
        Ok(match kind.as_str() {
            "gameFull" => GameEvent::GameFull(Box::new(body(value)?)),
            "gameState" => GameEvent::GameState(body(value)?),
            "chatLine" => GameEvent::ChatLine(body(value)?),
            "opponentGone" => GameEvent::OpponentGone(body(value)?),
            _ => GameEvent::Unknown { kind },
        })
    }
}

/// The logged-in account (`/api/account`, `UserExtended.yaml`); only what
/// a bot needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub title: Option<Title>,
    #[serde(default)]
    pub disabled: bool,
    #[serde(default)]
    pub tos_violation: bool,
    #[serde(default)]
    pub created_at: Option<u64>,
    #[serde(default)]
    pub url: Option<String>,
    /// Ratings by perf key (`bullet`, `blitz`, `chess960`...).
    #[serde(default)]
    pub perfs: HashMap<String, Perf>,
}

/// One perf of a user (`Perf.yaml`): only the rating matters here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Perf {
    pub rating: Option<u32>,
    pub games: Option<u32>,
    pub prov: bool,
}

/// A user of `/api/bot/online` (`User.yaml`, one per ndjson line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnlineBot {
    pub id: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub title: Option<Title>,
    #[serde(default)]
    pub perfs: HashMap<String, Perf>,
    #[serde(default, rename = "tosViolation")]
    pub tos_violation: bool,
    #[serde(default)]
    pub disabled: bool,
    /// Playing a game now (not in `/api/bot/online`'s answer: from
    /// `/api/users/status`, filled in by matchmaking).
    #[serde(skip)]
    pub playing: bool,
}

/// One user of `GET /api/users/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct UserStatus {
    pub id: String,
    /// Absent when false.
    #[serde(default)]
    pub online: bool,
    #[serde(default)]
    pub playing: bool,
}

/// The rating of a perf in a `perfs` map, if there is one.
pub fn perf_rating(perfs: &HashMap<String, Perf>, perf: &str) -> Option<u32> {
    perfs.get(perf).and_then(|p| p.rating)
}

impl Account {
    /// Whether the account is a bot account (title `BOT`).
    pub fn is_bot(&self) -> bool {
        self.title == Some(Title::Bot)
    }
}

/// `/api/account/playing`: the ongoing games, most urgent first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NowPlaying {
    pub now_playing: Vec<GameInfo>,
    pub nb_my_turn: Option<u32>,
}

/// One message of the chat history (`PlayerGameChat.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ChatMessage {
    pub text: String,
    pub user: String,
}

/// `{"ok": true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct OkBody {
    pub ok: bool,
}

/// What `POST /api/token/test` says of one token. The answer maps each
/// token sent to one of these, or to `null` for an invalid token:
/// `HashMap<String, Option<TokenInfo>>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct TokenInfo {
    pub user_id: Option<String>,
    /// Comma-separated scopes (`"bot:play,challenge:write"`); empty if
    /// the token has none.
    pub scopes: Option<String>,
    /// When the token expires, in milliseconds since the epoch; `None`:
    /// never.
    pub expires: Option<u64>,
}

impl TokenInfo {
    /// Whether the token has `scope` (e.g. `"bot:play"`).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes
            .as_deref()
            .is_some_and(|scopes| scopes.split(',').any(|s| s.trim() == scope))
    }
}

/// `GET /api/tournament/{id}`: an arena tournament, as much of it as the
/// bot needs (the spec's `ArenaTournamentFull`; lila adds `isStarted`
/// and, to a player, `me`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArenaTournament {
    pub id: String,
    #[serde(default)]
    pub full_name: String,
    #[serde(default)]
    pub rated: bool,
    #[serde(default)]
    pub clock: Option<ArenaClock>,
    /// The variant's key (`standard`, `chess960`...).
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub minutes: Option<u64>,
    /// Present while the tournament has not started.
    #[serde(default)]
    pub seconds_to_start: Option<u64>,
    /// Present while it runs.
    #[serde(default)]
    pub seconds_to_finish: Option<u64>,
    #[serde(default)]
    pub is_started: bool,
    #[serde(default)]
    pub is_finished: bool,
    #[serde(default)]
    pub nb_players: u64,
    /// Whether the conditions let us in (`verdicts.accepted`).
    #[serde(default)]
    pub verdicts: Option<ArenaVerdicts>,
    /// Our place in it, when we are a player.
    #[serde(default)]
    pub me: Option<ArenaMe>,
}

impl ArenaTournament {
    /// Running now: started and not finished.
    pub fn running(&self) -> bool {
        !self.is_finished && (self.is_started || self.seconds_to_start.is_none_or(|s| s == 0))
    }

    /// Its variant (standard when not said), None if unknown to us.
    pub fn variant_key(&self) -> Option<VariantKey> {
        let key = self.variant.as_deref().unwrap_or("standard");
        serde_json::from_value(serde_json::Value::String(key.to_owned())).ok()
    }

    /// Its speed, from its clock as Lichess reckons it (the initial time
    /// plus 40 increments); None without a clock.
    pub fn speed(&self) -> Option<Speed> {
        let c = self.clock.as_ref()?;
        let total = c.limit + 40 * c.increment;
        Some(match total {
            t if t < 30 => Speed::UltraBullet,
            t if t < 180 => Speed::Bullet,
            t if t < 480 => Speed::Blitz,
            t if t < 1500 => Speed::Rapid,
            _ => Speed::Classical,
        })
    }
}

/// An arena's clock, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaClock {
    pub limit: u64,
    pub increment: u64,
}

/// `verdicts` of an arena: whether its conditions let the user in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ArenaVerdicts {
    #[serde(default = "yes")]
    pub accepted: bool,
}

fn yes() -> bool {
    true
}

/// `me` of an arena: where the user stands in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ArenaMe {
    pub rank: Option<u64>,
    /// Paused (or left, before the start).
    pub withdraw: bool,
    /// The game being played in it.
    pub game_id: Option<String>,
}

/// The `ratelimit` object of a 429 body, e.g. the bot-vs-bot daily cap:
/// `{"key": "bot.vsBot.day", "seconds": 86398}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RateLimitInfo {
    pub key: Option<String>,
    pub seconds: Option<u64>,
}

/// An error body (`Error.yaml`). `error` is usually a string, but form
/// validation errors arrive as `{"error": {"field": ["message"]}}` and
/// some endpoints answer with the field map at the top level; hence the
/// raw value and [`ErrorBody::message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ErrorBody {
    pub error: Option<serde_json::Value>,
    pub ratelimit: Option<RateLimitInfo>,
}

impl ErrorBody {
    /// The error as one line of text (empty if there is none).
    pub fn message(&self) -> String {
        match &self.error {
            None => String::new(),
            Some(value) => flatten(value),
        }
    }
}

fn flatten(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items.iter().map(flatten).collect::<Vec<_>>().join("; "),
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", flatten(v)))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: &str) -> Event {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn game_start_spec_example() {
        let e = event(
            r#"{"type":"gameStart","game":{"fullId":"0FgNPGRzhDaW","gameId":"0FgNPGRz",
            "fen":"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1","color":"white",
            "lastMove":"","source":"friend","status":{"id":20,"name":"started"},
            "variant":{"key":"standard","name":"Standard"},"speed":"blitz","perf":"blitz",
            "rated":true,"hasMoved":false,"opponent":{"id":"aaron","username":"Aaron","rating":776},
            "isMyTurn":true,"secondsLeft":300,"rating":724,"compat":{"bot":false,"board":true},
            "id":"0FgNPGRz"}}"#,
        );
        let Event::GameStart { game } = e else {
            panic!("not a gameStart: {e:?}")
        };
        assert_eq!(game.game_id, "0FgNPGRz");
        assert_eq!(game.color, Some(Color::White));
        assert_eq!(game.status, Some(GameStatus::Started));
        assert_eq!(game.speed, Some(Speed::Blitz));
        assert!(game.is_my_turn);
        assert_eq!(game.opponent.unwrap().rating, Some(776));
    }

    #[test]
    fn game_start_against_ai_has_null_opponent_id() {
        let e = event(
            r#"{"type":"gameStart","game":{"fullId":"RwDo6DN68b8x","gameId":"RwDo6DN6",
            "color":"black","opponent":{"id":null,"username":"Stockfish level 1","ai":1}}}"#,
        );
        let Event::GameStart { game } = e else {
            panic!("not a gameStart")
        };
        let opponent = game.opponent.unwrap();
        assert_eq!(opponent.id, None);
        assert_eq!(opponent.ai, Some(1));
        assert_eq!(game.seconds_left, None);
    }

    #[test]
    fn challenge_with_unknown_fields_and_missing_rating() {
        let e = event(
            r#"{"type":"challenge","challenge":{"id":"jWAgu6ga","url":"https://lichess.org/jWAgu6ga",
            "status":"created","challenger":{"name":"Adriana","flair":"x","id":"adriana"},
            "destUser":null,"variant":{"key":"chess960","name":"Chess960"},"rated":false,
            "speed":"blitz","timeControl":{"type":"clock","limit":180,"increment":2,"show":"3+2"},
            "color":"random","finalColor":"black","perf":{"icon":"","name":"Chess960"},
            "direction":"in","somethingNew":[1,2,3]},"compat":{"bot":true,"board":false}}"#,
        );
        let Event::Challenge { challenge, compat } = e else {
            panic!("not a challenge")
        };
        let challenger = challenge.challenger.as_ref().expect("a challenger");
        assert_eq!(challenger.rating, None);
        assert_eq!(challenger.title, None);
        assert_eq!(challenge.dest_user, None);
        assert_eq!(challenge.variant.key, VariantKey::Chess960);
        assert_eq!(
            challenge.time_control,
            TimeControl::Clock {
                limit: 180,
                increment: 2,
                show: Some("3+2".into())
            }
        );
        assert_eq!(challenge.direction, Some(Direction::In));
        assert!(compat.unwrap().bot);
    }

    #[test]
    fn declined_challenge_has_reason_key() {
        let e = event(
            r#"{"type":"challengeDeclined","challenge":{"id":"a","challenger":{"id":"x","name":"X","title":"BOT"},
            "variant":{"key":"standard"},"speed":"correspondence","timeControl":{"type":"unlimited"},
            "declineReason":"Too fast","declineReasonKey":"toofast"}}"#,
        );
        let Event::ChallengeDeclined { challenge } = e else {
            panic!("not a challengeDeclined")
        };
        assert!(challenge.from_bot());
        assert_eq!(challenge.decline_reason_key.as_deref(), Some("toofast"));
        assert_eq!(challenge.time_control, TimeControl::Unlimited);
    }

    #[test]
    fn unknown_values_do_not_fail() {
        let e = event(
            r#"{"type":"challenge","challenge":{"id":"a","challenger":{"id":"x","title":"XX"},
            "variant":{"key":"spaceChess"},"speed":"hyperBullet","timeControl":{"type":"hourglass"}}}"#,
        );
        let Event::Challenge { challenge, .. } = e else {
            panic!("not a challenge")
        };
        assert_eq!(
            challenge.challenger.and_then(|user| user.title),
            Some(Title::Other)
        );
        assert_eq!(challenge.variant.key, VariantKey::Unknown);
        assert_eq!(challenge.speed, Speed::Unknown);
        assert_eq!(challenge.time_control, TimeControl::Unknown);
    }

    #[test]
    fn an_anonymous_challenger_is_null() {
        let e = event(
            r#"{"type":"challenge","challenge":{"id":"a","challenger":null,
            "destUser":{"id":"kaissa","name":"Kaissa","title":"BOT"},"variant":{"key":"standard"},
            "speed":"blitz","timeControl":{"type":"clock","limit":180,"increment":2}}}"#,
        );
        let Event::Challenge { challenge, .. } = e else {
            panic!("not a challenge")
        };
        assert_eq!(challenge.challenger, None);
        assert_eq!(challenge.challenger_id(), None);
        assert_eq!(challenge.challenger_label(), "anonymous");
        assert!(!challenge.from_bot());
        assert!(!challenge.is_from("anonymous"));
        assert_eq!(challenge.challenger_rating(), None);
    }

    #[test]
    fn unknown_event_type() {
        assert_eq!(
            event(r#"{"type":"newThing","x":1}"#),
            Event::Unknown {
                kind: "newThing".into()
            }
        );
        assert!(serde_json::from_str::<Event>(r#"{"x":1}"#).is_err());
        assert!(serde_json::from_str::<Event>(r#"{"type":"gameStart"}"#).is_err());
    }

    #[test]
    fn game_full_correspondence_without_clock() {
        let e: GameEvent = serde_json::from_str(
            r#"{"type":"gameFull","id":"abc","variant":{"key":"standard"},"speed":"correspondence",
            "rated":false,"white":{"id":"me","name":"Me","title":"BOT"},"black":{"aiLevel":3},
            "initialFen":"startpos","daysPerTurn":3,
            "state":{"type":"gameState","moves":"","wtime":2147483647,"btime":2147483647,
            "winc":0,"binc":0,"status":"started"}}"#,
        )
        .unwrap();
        let GameEvent::GameFull(full) = e else {
            panic!("not gameFull")
        };
        assert_eq!(full.clock, None);
        assert_eq!(full.days_per_turn, Some(3));
        assert_eq!(full.initial_fen(), None);
        assert_eq!(full.black.ai_level, Some(3));
        assert_eq!(full.color_of("ME"), Some(Color::White));
        assert_eq!(full.state.ply(), 0);
    }

    #[test]
    fn game_state_with_offers_and_expiration() {
        let e: GameEvent = serde_json::from_str(
            r#"{"type":"gameState","moves":"e2e4 e7e5 e1g1","wtime":1000,"btime":2000,"winc":10,
            "binc":20,"status":"started","bdraw":true,"wtakeback":true,
            "expiration":{"idleMillis":5,"millisToMove":30000}}"#,
        )
        .unwrap();
        let GameEvent::GameState(state) = e else {
            panic!("not gameState")
        };
        assert_eq!(state.moves().collect::<Vec<_>>(), ["e2e4", "e7e5", "e1g1"]);
        assert!(state.offers_draw(Color::Black));
        assert!(!state.offers_draw(Color::White));
        assert!(state.proposes_takeback(Color::White));
        assert_eq!(state.time_left(Color::Black), 2000);
        assert_eq!(state.expiration.unwrap().millis_to_move, 30000);
        assert_eq!(state.winner, None);
    }

    #[test]
    fn game_state_finished() {
        let e: GameEvent = serde_json::from_str(
            r#"{"type":"gameState","moves":"f2f3 e7e5 g2g4 d8h4","wtime":1,"btime":2,"winc":0,"binc":0,"status":"mate","winner":"black"}"#,
        )
        .unwrap();
        let GameEvent::GameState(state) = e else {
            panic!("not gameState")
        };
        assert_eq!(state.status, GameStatus::Mate);
        assert!(!state.status.is_ongoing());
        assert_eq!(state.winner, Some(Color::Black));
    }

    #[test]
    fn chat_line_and_opponent_gone() {
        let e: GameEvent = serde_json::from_str(
            r#"{"type":"chatLine","username":"thibault","text":"Good luck","room":"spectator"}"#,
        )
        .unwrap();
        assert_eq!(
            e,
            GameEvent::ChatLine(ChatLine {
                room: ChatRoom::Spectator,
                username: "thibault".into(),
                text: "Good luck".into()
            })
        );
        let e: GameEvent =
            serde_json::from_str(r#"{"type":"opponentGone","gone":true,"claimWinInSeconds":8}"#)
                .unwrap();
        assert_eq!(
            e,
            GameEvent::OpponentGone(OpponentGone {
                gone: true,
                claim_win_in_seconds: Some(8)
            })
        );
        for (json, secs) in [
            ("7.2", 8),
            ("-3", 0),
            ("1e300", 3600),
            ("99999999999", 3600),
        ] {
            let line =
                format!(r#"{{"type":"opponentGone","gone":true,"claimWinInSeconds":{json}}}"#);
            let e: GameEvent = serde_json::from_str(&line).unwrap();
            assert_eq!(
                e,
                GameEvent::OpponentGone(OpponentGone {
                    gone: true,
                    claim_win_in_seconds: Some(secs)
                }),
                "{json}"
            );
        }
        let e: GameEvent = serde_json::from_str(r#"{"type":"opponentGone","gone":false}"#).unwrap();
        assert!(matches!(
            e,
            GameEvent::OpponentGone(OpponentGone { gone: false, .. })
        ));
    }

    #[test]
    fn now_playing_status_as_name() {
        let p: NowPlaying = serde_json::from_str(
            r#"{"nbMyTurn":1,"nowPlaying":[{"gameId":"rCRw1AuO","fullId":"rCRw1AuOvonq","color":"black",
            "fen":"8/8/8/8/8/8/8/8 w - - 0 1","hasMoved":true,"isMyTurn":false,"lastMove":"b8c6",
            "opponent":{"id":"philippe","rating":1790,"username":"Philippe"},"perf":"correspondence",
            "rated":false,"secondsLeft":1209600,"source":"friend","speed":"correspondence",
            "status":"started","variant":{"key":"standard","name":"Standard"}}]}"#,
        )
        .unwrap();
        assert_eq!(p.now_playing.len(), 1);
        assert_eq!(p.now_playing[0].status, Some(GameStatus::Started));
        assert_eq!(p.now_playing[0].last_move.as_deref(), Some("b8c6"));
    }

    #[test]
    fn account_and_error_bodies() {
        let a: Account =
            serde_json::from_str(r#"{"id":"kaissa","username":"Kaissa","title":"BOT","perfs":{}}"#)
                .unwrap();
        assert!(a.is_bot());
        let a: Account = serde_json::from_str(r#"{"id":"bob","username":"Bob"}"#).unwrap();
        assert!(!a.is_bot());

        let e: ErrorBody = serde_json::from_str(
            r#"{"error":"You played 100 games against other bots today","ratelimit":{"key":"bot.vsBot.day","seconds":86398}}"#,
        )
        .unwrap();
        assert_eq!(
            e.ratelimit.as_ref().unwrap().key.as_deref(),
            Some("bot.vsBot.day")
        );
        assert_eq!(e.ratelimit.unwrap().seconds, Some(86398));
        let e: ErrorBody =
            serde_json::from_str(r#"{"error":{"clock.limit":["required"]}}"#).unwrap();
        assert_eq!(e.message(), "clock.limit: required");
    }

    #[test]
    fn decline_reasons_both_spellings() {
        assert_eq!(
            DeclineReason::from_key("toofast"),
            Some(DeclineReason::TooFast)
        );
        assert_eq!(
            DeclineReason::from_key("tooFast"),
            Some(DeclineReason::TooFast)
        );
        assert_eq!(DeclineReason::from_key("nobot"), Some(DeclineReason::NoBot));
        assert_eq!(DeclineReason::from_key("nope"), None);
        for reason in DeclineReason::ALL {
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, format!("\"{}\"", reason.as_str()));
        }
    }
}
