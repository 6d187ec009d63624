//! The sections of the configuration (`[lichess]`, `[engine]`,
//! `[challenge]`, `[bot]`, `[chat]`; `[sources]` is in `sources`,
//! `[tournaments]` in `tournaments`), their
//! defaults (the same as the shipped `config/kaissa.toml`) and small
//! accessors.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::terms::ChallengeTerms;
use crate::engine::nnue;
use crate::lichess::ClientOptions;
use crate::lichess::client::ChallengeTime;
use crate::lichess::model::Speed;
use crate::lichess::model::VariantKey;

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub lichess: LichessConfig,
    pub engine: EngineConfig,
    pub challenge: ChallengeConfig,
    pub bot: BotConfig,
    pub matchmaking: MatchmakingConfig,
    pub chat: ChatConfig,
    pub sources: super::sources::SourcesConfig,
    /// `[engines.NAME]`: external UCI engines, by name.
    pub engines: std::collections::BTreeMap<String, super::engines::ExternalEngineConfig>,
    pub tournaments: super::tournaments::TournamentsConfig,
    pub web: WebConfig,
}

/// `[lichess]`: the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LichessConfig {
    /// Base URL of the server.
    pub url: String,
    /// File holding the token (used when `LICHESS_BOT_TOKEN` is unset).
    pub token_file: Option<PathBuf>,
    /// A stream with no byte (keep-alives included) for this long is dead.
    pub stream_timeout_secs: u64,
    /// How long every non-urgent request waits after an HTTP 429.
    pub rate_limit_pause_secs: u64,
}

impl Default for LichessConfig {
    fn default() -> LichessConfig {
        LichessConfig {
            url: "https://lichess.org".to_owned(),
            token_file: None,
            stream_timeout_secs: crate::lichess::stream::DEFAULT_SILENCE_TIMEOUT.as_secs(),
            rate_limit_pause_secs: 60,
        }
    }
}

impl LichessConfig {
    /// `stream_timeout_secs` as a duration.
    pub fn stream_timeout(&self) -> Duration {
        Duration::from_secs(self.stream_timeout_secs)
    }

    /// `rate_limit_pause_secs` as a duration.
    pub fn rate_limit_pause(&self) -> Duration {
        Duration::from_secs(self.rate_limit_pause_secs)
    }

    /// Options for [`crate::lichess::Client::new`].
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            base_url: self.url.clone(),
            rate_limit_pause: self.rate_limit_pause(),
            stream_silence_timeout: self.stream_timeout(),
            ..ClientOptions::default()
        }
    }
}

/// `[engine]`: the engine's resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Transposition table size in MiB, all games together: each game's
    /// engine gets `hash_mb / bot.concurrency` (at least 1).
    pub hash_mb: u32,
    /// The most search threads running at once, all games together.
    pub threads: u32,
    /// Subtracted from our clock for each move (network and lag).
    pub move_overhead_ms: u64,
    /// Think on the opponent's time.
    pub ponder: bool,
    /// Where the hash files are kept; none means not kept.
    pub state_dir: Option<PathBuf>,
    /// Stop each search at this depth (0: no limit). Weakens the bot, or
    /// keeps tests fast.
    pub max_depth: u32,
    /// Stop each search after about this many nodes (0: no limit).
    pub max_nodes: u64,
    /// The evaluation: `<embedded>` (the net built in), `classical` (the
    /// hand-crafted evaluation) or the path of a net file.
    pub eval_file: String,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            hash_mb: 64,
            threads: 1,
            move_overhead_ms: 200,
            ponder: false,
            state_dir: None,
            max_depth: 0,
            max_nodes: 0,
            eval_file: nnue::EMBEDDED.to_owned(),
        }
    }
}

impl EngineConfig {
    /// `move_overhead_ms` as a duration.
    pub fn move_overhead(&self) -> Duration {
        Duration::from_millis(self.move_overhead_ms)
    }

    /// The transposition table of one game's engine, in MiB.
    pub fn hash_mb_per_game(&self, concurrency: u32) -> usize {
        (self.hash_mb / concurrency.max(1)).max(1) as usize
    }
}

/// A variant the bot can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlayableVariant {
    Standard,
    Chess960,
    FromPosition,
    Crazyhouse,
    Antichess,
    Atomic,
    Horde,
    KingOfTheHill,
    RacingKings,
    ThreeCheck,
}

impl PlayableVariant {
    /// The Lichess variant key.
    pub fn key(self) -> VariantKey {
        match self {
            PlayableVariant::Standard => VariantKey::Standard,
            PlayableVariant::Chess960 => VariantKey::Chess960,
            PlayableVariant::FromPosition => VariantKey::FromPosition,
            PlayableVariant::Crazyhouse => VariantKey::Crazyhouse,
            PlayableVariant::Antichess => VariantKey::Antichess,
            PlayableVariant::Atomic => VariantKey::Atomic,
            PlayableVariant::Horde => VariantKey::Horde,
            PlayableVariant::KingOfTheHill => VariantKey::KingOfTheHill,
            PlayableVariant::RacingKings => VariantKey::RacingKings,
            PlayableVariant::ThreeCheck => VariantKey::ThreeCheck,
        }
    }
}

/// A speed the bot can accept (bots cannot play ultraBullet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AcceptedSpeed {
    Bullet,
    Blitz,
    Rapid,
    Classical,
    Correspondence,
}

impl AcceptedSpeed {
    /// The Lichess speed.
    pub fn speed(self) -> Speed {
        match self {
            AcceptedSpeed::Bullet => Speed::Bullet,
            AcceptedSpeed::Blitz => Speed::Blitz,
            AcceptedSpeed::Rapid => Speed::Rapid,
            AcceptedSpeed::Classical => Speed::Classical,
            AcceptedSpeed::Correspondence => Speed::Correspondence,
        }
    }
}

/// `[challenge]`: which challenges to accept. These are the inputs of the
/// policy, `bot::policy::challenge`, where the rules that read them live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChallengeConfig {
    /// Accepted variants; any other is declined.
    pub variants: Vec<PlayableVariant>,
    /// Accepted speeds.
    pub speeds: Vec<AcceptedSpeed>,
    /// Initial clock time bounds, seconds.
    pub min_base: u32,
    pub max_base: u32,
    /// Increment bounds, seconds.
    pub min_increment: u32,
    pub max_increment: u32,
    /// A bullet clock without increment is declined `timeControl`.
    pub bullet_requires_increment: bool,
    /// The longest game accepted, estimated as 2 x (base + 40 x
    /// increment) seconds (0: no limit); longer is declined `tooSlow`.
    pub max_game_secs: u32,
    /// Accept games without a real-time clock (correspondence, unlimited).
    pub correspondence: bool,
    /// Accept rated games.
    pub rated: bool,
    /// Accept casual games.
    pub casual: bool,
    /// Accept challenges from bots.
    pub accept_bots: bool,
    /// Accept challenges from bots only.
    pub only_bots: bool,
    /// Challenger rating bounds (a challenger without rating passes).
    pub min_rating: u32,
    pub max_rating: u32,
    /// Users always declined (ids, any case).
    pub block_list: Vec<String>,
    /// When not empty, only these users are accepted (ids, any case).
    pub allow_list: Vec<String>,
    /// URLs of shared block lists (one user id a line).
    pub online_block_lists: Vec<String>,
    /// How often the online block lists are fetched again.
    pub block_list_refresh_secs: u64,
    /// Days per move of a correspondence game accepted: fewer is
    /// declined `tooFast`, more `tooSlow`.
    pub min_days_per_turn: u32,
    pub max_days_per_turn: u32,
    /// The most rating points between the challenger and us (0: no
    /// limit); beyond it, declined `generic`.
    pub max_rating_diff: u32,
    /// Games at once against one opponent; more are declined `later`.
    pub max_games_per_opponent: u32,
    /// Games against one bot in 24 hours (0: no limit); its challenges
    /// beyond are declined `later`.
    pub max_games_per_bot_per_day: u32,
    /// Rematches in a row a bot gets (`rematchOf`); the next is declined
    /// `later`.
    pub max_bot_rematches: u32,
    /// Slots of `bot.concurrency` that bots cannot take: their challenges
    /// wait in the queue while only those slots are free.
    pub reserved_for_humans: u32,
    /// Acceptable challenges waiting for a slot, at most; more are
    /// declined `later` (0: no queue).
    pub queue_size: u32,
    /// Which waiting challenge gets the next free slot.
    pub queue_order: QueueOrder,
    /// Kinds of challenger served first from the queue, in this order
    /// (before `queue_order`).
    pub queue_first: Vec<QueueGroup>,
    /// `[challenge.humans]`: what humans may ask for, over the above.
    pub humans: Option<ChallengeTerms>,
    /// `[challenge.bots]`: what bots may ask for, over the above.
    pub bots: Option<ChallengeTerms>,
}

/// A kind of challenger the queue may serve first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueueGroup {
    /// Titled players (GM, IM, ... but not BOT).
    Titled,
    /// Humans.
    Humans,
    /// Bots.
    Bots,
}

impl QueueGroup {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueGroup::Titled => "titled",
            QueueGroup::Humans => "humans",
            QueueGroup::Bots => "bots",
        }
    }
}

/// The order of the challenge queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueueOrder {
    /// First come, first served.
    Arrival,
    /// The highest-rated challenger first (then by arrival).
    Rating,
}

impl QueueOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueOrder::Arrival => "arrival",
            QueueOrder::Rating => "rating",
        }
    }
}

impl Default for ChallengeConfig {
    fn default() -> ChallengeConfig {
        ChallengeConfig {
            variants: vec![
                PlayableVariant::Standard,
                PlayableVariant::Chess960,
                PlayableVariant::FromPosition,
            ],
            speeds: vec![
                AcceptedSpeed::Bullet,
                AcceptedSpeed::Blitz,
                AcceptedSpeed::Rapid,
                AcceptedSpeed::Classical,
                AcceptedSpeed::Correspondence,
            ],
            min_base: 0,
            max_base: 10800,
            min_increment: 0,
            max_increment: 180,
            bullet_requires_increment: false,
            max_game_secs: 0,
            correspondence: false,
            rated: true,
            casual: true,
            accept_bots: true,
            only_bots: false,
            min_rating: 0,
            max_rating: 4000,
            block_list: Vec::new(),
            allow_list: Vec::new(),
            online_block_lists: Vec::new(),
            block_list_refresh_secs: 3600,
            min_days_per_turn: 1,
            max_days_per_turn: 14,
            max_rating_diff: 0,
            max_games_per_opponent: 1,
            max_games_per_bot_per_day: 10,
            max_bot_rematches: 3,
            reserved_for_humans: 0,
            queue_size: 10,
            queue_order: QueueOrder::Arrival,
            queue_first: Vec::new(),
            humans: None,
            bots: None,
        }
    }
}

/// What a PGN's comment on a move may say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PgnComment {
    /// Our engine's evaluation after our move: `[%eval 0.25]`, `[%eval #3]`.
    Eval,
    /// The mover's clock after the move, both sides: `[%clk 0:02:58]`.
    Clock,
    /// The depth of our engine's search: `d18`.
    Depth,
    /// Our engine's principal variation, from the move itself, in SAN:
    /// `pv: Nf3 Nc6 Bb5`.
    Pv,
}

impl PgnComment {
    pub fn as_str(self) -> &'static str {
        match self {
            PgnComment::Eval => "eval",
            PgnComment::Clock => "clock",
            PgnComment::Depth => "depth",
            PgnComment::Pv => "pv",
        }
    }
}

/// Which file a finished game's PGN goes to in `bot.pgn_dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PgnFile {
    /// `<game id>.pgn`, one for each game.
    Game,
    /// `<opponent>.pgn`, the games against each opponent appended.
    Opponent,
    /// `games.pgn`, every game appended.
    All,
}

/// `[bot]`: how the daemon plays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BotConfig {
    /// Games played at once.
    pub concurrency: u32,
    /// Abort a game whose opponent has not made a first move after this.
    pub abort_time_secs: u64,
    /// A challenge we accepted whose game has not started after this
    /// gives its slot back.
    pub game_start_timeout_secs: u64,
    /// On shutdown, how long running games may go on before being
    /// resigned or aborted.
    pub shutdown_deadline_secs: u64,
    /// Where finished games are written as PGN; none means not written.
    pub pgn_dir: Option<PathBuf>,
    /// What the PGN's comments say of each move (none: no comments).
    pub pgn_comments: Vec<PgnComment>,
    /// One PGN file per game, per opponent, or one for all games.
    pub pgn_file: PgnFile,
    /// Accept a draw offer when the position is dead equal.
    pub accept_draw: bool,
    /// Offer a draw when the position is dead equal.
    pub offer_draw: bool,
    /// "Dead equal": the score stays within this many centipawns of 0...
    pub draw_score_cp: u32,
    /// ...for this many of our moves in a row.
    pub draw_moves: u32,
    /// Whom draws are offered to and accepted from.
    pub draw_opponents: super::Opponents,
    /// Resign lost positions (off by default, as in the other bridges).
    pub resign_enabled: bool,
    /// Whom we resign against.
    pub resign_opponents: super::Opponents,
    /// "Lost": the score stays at or below minus this many centipawns...
    pub resign_score_cp: u32,
    /// ...for this many of our moves in a row.
    pub resign_moves: u32,
    /// Our moves in a game before we offer a draw or resign.
    pub draw_resign_min_moves: u32,
    /// With no increment for the opponent: no resignation and no draw
    /// (offered or accepted) while their clock is under this many seconds,
    /// as they may lose on time first. 0: off.
    pub opponent_low_time_secs: u64,
    /// Offer and accept a draw at once where the endgame tables (local or
    /// Lichess's) say the position is drawn.
    pub tablebase_draws: bool,
    /// Takeback requests accepted per game (0: none).
    pub max_takebacks: u32,
    /// Thinking time per move in games without a clock (correspondence).
    pub correspondence_move_secs: u64,
    /// After our move in a game without a clock, how long the game stream
    /// stays open for a quick reply before the game is parked.
    pub correspondence_park_secs: u64,
    /// How often `/api/account/playing` is checked: correspondence games
    /// whose turn came, and any ongoing game without a task.
    pub playing_check_secs: u64,
    /// Games against bots per rolling 24 hours (Lichess allows 100);
    /// counted in `engine.state_dir` when set.
    pub bot_games_per_day: u32,
    /// The control socket's path; empty: `control.sock` in systemd's
    /// `$RUNTIME_DIRECTORY`; `none`: no socket.
    pub control_socket: String,
}

impl Default for BotConfig {
    fn default() -> BotConfig {
        BotConfig {
            concurrency: 1,
            abort_time_secs: 30,
            game_start_timeout_secs: 20,
            shutdown_deadline_secs: 300,
            pgn_dir: None,
            pgn_comments: vec![PgnComment::Eval, PgnComment::Clock, PgnComment::Depth],
            pgn_file: PgnFile::Game,
            accept_draw: true,
            offer_draw: true,
            draw_score_cp: 10,
            draw_moves: 10,
            draw_opponents: super::Opponents::Any,
            resign_enabled: false,
            resign_opponents: super::Opponents::Any,
            resign_score_cp: 1000,
            resign_moves: 5,
            draw_resign_min_moves: 20,
            opponent_low_time_secs: 60,
            tablebase_draws: true,
            max_takebacks: 0,
            correspondence_move_secs: 20,
            correspondence_park_secs: 60,
            playing_check_secs: 60,
            bot_games_per_day: 100,
            control_socket: String::new(),
        }
    }
}

impl BotConfig {
    /// `abort_time_secs` as a duration.
    pub fn abort_time(&self) -> Duration {
        Duration::from_secs(self.abort_time_secs)
    }

    /// `game_start_timeout_secs` as a duration.
    pub fn game_start_timeout(&self) -> Duration {
        Duration::from_secs(self.game_start_timeout_secs)
    }

    /// `shutdown_deadline_secs` as a duration.
    pub fn shutdown_deadline(&self) -> Duration {
        Duration::from_secs(self.shutdown_deadline_secs)
    }

    /// `correspondence_move_secs` as a duration.
    pub fn correspondence_move_time(&self) -> Duration {
        Duration::from_secs(self.correspondence_move_secs)
    }

    /// `correspondence_park_secs` as a duration.
    pub fn correspondence_park_after(&self) -> Duration {
        Duration::from_secs(self.correspondence_park_secs)
    }

    /// `playing_check_secs` as a duration.
    pub fn playing_check(&self) -> Duration {
        Duration::from_secs(self.playing_check_secs)
    }
}

/// `[matchmaking]`: challenging online bots when idle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchmakingConfig {
    /// Off by default.
    pub enabled: bool,
    /// Challenge someone after this long without a game.
    pub idle_secs: u64,
    /// The opponent's rating minus ours, in the perf offered: at least
    /// `min_rating_diff`, at most `max_rating_diff`, and the nearer
    /// `target_rating_diff` the better.
    pub min_rating_diff: i32,
    pub max_rating_diff: i32,
    pub target_rating_diff: i32,
    /// Time controls offered: `minutes+seconds` (e.g. "3+2", "0.5+0") or
    /// correspondence days per move (`"3d"`).
    pub time_controls: Vec<String>,
    /// Variants offered (standard, chess960).
    pub variants: Vec<PlayableVariant>,
    /// Rated games (else casual).
    pub rated: bool,
    /// A challenge not answered in this long is cancelled.
    pub challenge_timeout_secs: u64,
    /// A bot that did not answer (or declined for a reason not below) is
    /// not challenged again for this long.
    pub decline_cooldown_secs: u64,
    /// A bot that declined `later` or `generic` is left alone this long.
    pub later_cooldown_secs: u64,
    /// A bot that declined our time control (`timeControl`, `tooFast`,
    /// `tooSlow`) or variant (`variant`, `standard`) is not offered that
    /// one again for this long (others it may get).
    pub offer_cooldown_secs: u64,
    /// A bot that declines this many of our challenges in a row (0: never)
    /// is not challenged for `block_secs`.
    pub block_after_declines: u32,
    pub block_secs: u64,
    /// How the opponent is chosen among the bots that fit.
    pub selection: Selection,
    /// After a game against a bot, it is not challenged for this long,
    /// times the games against it in the last 24 hours. 0: off.
    pub played_cooldown_secs: u64,
    /// Games in pairs: after a game our challenge started, the same bot
    /// gets the return game, same clock and variant, colours swapped.
    pub pairs: bool,
}

/// How matchmaking chooses among the bots in the rating range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Selection {
    /// At random, the closer in rating and the fewer recent games against
    /// it, the likelier.
    Weighted,
    /// The bot played least recently (never first), the closest among
    /// equals.
    Rotate,
    /// Always the closest in rating.
    Nearest,
}

impl Default for MatchmakingConfig {
    fn default() -> MatchmakingConfig {
        MatchmakingConfig {
            enabled: false,
            idle_secs: 300,
            min_rating_diff: -300,
            max_rating_diff: 300,
            target_rating_diff: 0,
            time_controls: vec!["3+2".to_owned(), "5+3".to_owned()],
            variants: vec![PlayableVariant::Standard],
            rated: false,
            challenge_timeout_secs: 30,
            decline_cooldown_secs: 3600,
            later_cooldown_secs: 4 * 3600,
            offer_cooldown_secs: 86_400,
            block_after_declines: 3,
            block_secs: 7 * 86_400,
            selection: Selection::Weighted,
            played_cooldown_secs: 1800,
            pairs: false,
        }
    }
}

impl MatchmakingConfig {
    /// The time controls offered; the invalid ones (refused by
    /// validation) are left out.
    pub fn times(&self) -> Vec<ChallengeTime> {
        self.time_controls
            .iter()
            .filter_map(|tc| parse_challenge_time(tc).ok())
            .collect()
    }
}

/// The clock limits (seconds) Lichess takes for a challenge: 0, 15, 30,
/// 45, 60 or 90 seconds, or whole minutes up to three hours (the API
/// specification of `POST /api/challenge/{username}`).
pub fn is_challenge_clock_limit(secs: u32) -> bool {
    matches!(secs, 0 | 15 | 30 | 45 | 60 | 90) || (secs.is_multiple_of(60) && secs <= 10_800)
}

/// The largest increment (seconds) Lichess takes for a challenge.
pub const MAX_CHALLENGE_INCREMENT: u32 = 60;

/// The days per move Lichess takes for a correspondence challenge.
pub const CHALLENGE_DAYS: [u32; 7] = [1, 2, 3, 5, 7, 10, 14];

/// Parses a time control of a challenge we make: `minutes+seconds`
/// ([`parse_time_control`]) or days per move of a correspondence game
/// (`"3d"`: 1, 2, 3, 5, 7, 10 or 14).
pub fn parse_challenge_time(text: &str) -> Result<ChallengeTime, String> {
    if let Some(days) = text.strip_suffix('d') {
        return match days.trim().parse::<u32>() {
            Ok(days) if CHALLENGE_DAYS.contains(&days) => {
                Ok(ChallengeTime::Correspondence { days })
            }
            _ => Err(format!(
                "{text:?} is not a number of days per move Lichess allows (1, 2, 3, 5, 7, 10 \
                 or 14, as \"3d\")"
            )),
        };
    }
    let (limit_secs, increment_secs) = parse_time_control(text)?;
    Ok(ChallengeTime::Clock {
        limit_secs,
        increment_secs,
    })
}

/// Parses `minutes+seconds` ("3+2", "0.5+0") into base and increment
/// seconds, and checks it is a clock Lichess lets a bot offer: a base of
/// 0, 1/4, 1/2, 3/4, 1 or 1.5 minutes or whole minutes up to 180, an
/// increment of 0 to 60 seconds, and not ultraBullet (bots cannot play it:
/// base + 40 x increment under 30 s).
pub fn parse_time_control(text: &str) -> Result<(u32, u32), String> {
    let (minutes, seconds) = text
        .split_once('+')
        .ok_or_else(|| format!("{text:?} is not minutes+seconds"))?;
    let minutes: f64 = minutes
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: {minutes:?} is not a number of minutes"))?;
    let increment: u32 = seconds
        .trim()
        .parse()
        .map_err(|_| format!("{text:?}: {seconds:?} is not a number of seconds"))?;
    const ALLOWED: &str = "Lichess takes a base of 0, 0.25, 0.5, 0.75, 1 or 1.5 minutes or whole \
                           minutes up to 180, and an increment of 0 to 60 seconds";
    let base = minutes * 60.0;
    if !(0.0..=10_800.0).contains(&base)
        || base.fract() != 0.0
        || !is_challenge_clock_limit(base as u32)
        || increment > MAX_CHALLENGE_INCREMENT
    {
        return Err(format!(
            "{text:?} is not a clock Lichess allows ({ALLOWED})"
        ));
    }
    let base = base as u32;
    if base + 40 * increment < 30 {
        return Err(format!(
            "{text:?} is too fast for a bot (ultraBullet: base + 40 x increment under 30 s)"
        ));
    }
    Ok((base, increment))
}

/// `[chat]`: what the bot says. `{me}` and `{opponent}` are replaced by the
/// names; an empty message is not sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChatConfig {
    /// To the opponent when a game starts.
    pub greeting: String,
    /// To spectators when a game starts.
    pub greeting_spectator: String,
    /// To the opponent when a game ends.
    pub goodbye: String,
    /// To spectators when a game ends.
    pub goodbye_spectator: String,
}

impl Default for ChatConfig {
    fn default() -> ChatConfig {
        ChatConfig {
            greeting: "Hi {opponent}, I am {me}, a chess engine. Good luck!".to_owned(),
            greeting_spectator: "{me} plays {opponent}. Enjoy the game!".to_owned(),
            goodbye: "Good game, {opponent}!".to_owned(),
            goodbye_spectator: "Thanks for watching!".to_owned(),
        }
    }
}

/// `[web]`: the HTTP server for `/metrics` and `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// Serve at all.
    pub enabled: bool,
    /// The address and port to listen on.
    pub listen: String,
}

impl Default for WebConfig {
    fn default() -> WebConfig {
        WebConfig {
            enabled: false,
            listen: "127.0.0.1:8089".to_owned(),
        }
    }
}
