//! What a test asks of the fake server: its settings ([`FakeConfig`]),
//! the challenges it sends ([`ChallengeSpec`]), who plays them and how
//! ([`Opponent`], [`AutoPlay`]).

use std::time::Duration;

use shakmaty::variant::Variant;

/// Settings of the fake server.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The token the bot must present.
    pub token: String,
    /// The bot's username (its id is the lowercase form).
    pub username: String,
    /// Whether the account is a bot account (title BOT).
    pub is_bot: bool,
    /// Interval of the blank keep-alive lines on every stream.
    pub keepalive: Duration,
    /// A game whose first moves are not played within this is aborted.
    pub first_move_timeout: Duration,
    /// `claimWinInSeconds` announced when the opponent leaves.
    pub claim_win_secs: u32,
    /// Seed of the fake's random choices (colours, moves, ids).
    pub seed: u64,
    /// Announce with `gameStart` on the event stream when the bot's turn
    /// comes in a correspondence game. Off by default: lila announces a
    /// game once, when it starts (`userStartGame` from the game's
    /// `onStart`), and a bot finds its turns in `/api/account/playing`.
    pub correspondence_turn_events: bool,
    /// The token's scopes, as `POST /api/token/test` lists them.
    pub scopes: String,
    /// A real-time challenge the bot creates without `keepAliveStream`
    /// is canceled after this (Lichess: 20 s).
    pub challenge_expiry: Duration,
    /// Write castling on the game streams as e1g1 in standard chess (the
    /// legacy form). Off, as lila writes it now in every variant: king
    /// takes rook (e1h1).
    pub legacy_castling: bool,
    /// lila's cap on games between bots (`BotLimit`, 100 a day): past
    /// it, challenges to bots and accepts from them get its 429.
    pub bot_games_per_day: u32,
}

impl Default for FakeConfig {
    fn default() -> FakeConfig {
        FakeConfig {
            token: "lip_fake_token_0123456789".to_owned(),
            username: "KaissaBot".to_owned(),
            is_bot: true,
            keepalive: Duration::from_secs(1),
            first_move_timeout: Duration::from_secs(30),
            claim_win_secs: 10,
            seed: 0x5eed,
            correspondence_turn_events: false,
            challenge_expiry: Duration::from_secs(20),
            scopes: "bot:play,challenge:read,challenge:write".to_owned(),
            legacy_castling: false,
            bot_games_per_day: 100,
        }
    }
}

/// How the automatic opponent picks its moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Any legal move.
    Random,
    /// Mate if possible, else the biggest capture, else any move.
    Greedy,
}

/// The opponent plays by itself: `policy`, after `think` on each move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoPlay {
    pub policy: Policy,
    pub think: Duration,
    /// Accept the bot's draw offers (else they lapse when it moves).
    pub accept_draws: bool,
}

impl Default for AutoPlay {
    fn default() -> AutoPlay {
        AutoPlay {
            policy: Policy::Greedy,
            think: Duration::from_millis(20),
            accept_draws: false,
        }
    }
}

/// The variant of a challenge.
///
/// Every Lichess variant is playable, by shakmaty's rules: build one with
/// [`FakeVariant::from_key`] from its Lichess key (`"crazyhouse"`,
/// `"kingOfTheHill"`...), or name it with [`FakeVariant::Rules`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeVariant {
    Standard,
    /// A Chess960 start position by its number (0..960; 518 is the standard
    /// one), or a random one.
    Chess960 {
        position: Option<u32>,
    },
    /// A game from a FEN.
    FromPosition {
        fen: String,
    },
    /// One of Lichess's other variants (crazyhouse, antichess, atomic,
    /// horde, kingOfTheHill, racingKings, threeCheck), from the variant's
    /// own start position, played by shakmaty's rules of it.
    /// `Rules(Variant::Chess)` is [`FakeVariant::Standard`].
    Rules(Variant),
    /// A variant key Lichess does not have: the bot should decline it.
    /// Such a challenge cannot be accepted. (A known key here, e.g.
    /// `"atomic"`, is played as that variant.)
    Other {
        key: String,
    },
}

/// Lichess's variant keys, with shakmaty's rules of each (`None`: the
/// standard rules from a position of their own).
pub const LICHESS_VARIANTS: [(&str, Option<Variant>); 10] = [
    ("standard", Some(Variant::Chess)),
    ("chess960", None),
    ("fromPosition", None),
    ("crazyhouse", Some(Variant::Crazyhouse)),
    ("antichess", Some(Variant::Antichess)),
    ("atomic", Some(Variant::Atomic)),
    ("horde", Some(Variant::Horde)),
    ("kingOfTheHill", Some(Variant::KingOfTheHill)),
    ("racingKings", Some(Variant::RacingKings)),
    ("threeCheck", Some(Variant::ThreeCheck)),
];

impl FakeVariant {
    /// The variant of Lichess key `key`: `standard`, `chess960` (a random
    /// start position), `fromPosition` (the standard start position),
    /// `crazyhouse`, `antichess`, `atomic`, `horde`, `kingOfTheHill`,
    /// `racingKings`, `threeCheck`; any other key is [`FakeVariant::Other`].
    pub fn from_key(key: &str) -> FakeVariant {
        match key {
            "standard" => FakeVariant::Standard,
            "chess960" => FakeVariant::Chess960 { position: None },
            "fromPosition" => FakeVariant::FromPosition {
                fen: super::game::STARTPOS_FEN.to_owned(),
            },
            _ => match LICHESS_VARIANTS.iter().find(|(k, _)| *k == key) {
                Some((_, Some(rules))) => FakeVariant::Rules(*rules),
                _ => FakeVariant::Other {
                    key: key.to_owned(),
                },
            },
        }
    }

    /// The Lichess key.
    pub fn key(&self) -> &str {
        match self {
            FakeVariant::Standard | FakeVariant::Rules(Variant::Chess) => "standard",
            FakeVariant::Chess960 { .. } => "chess960",
            FakeVariant::FromPosition { .. } => "fromPosition",
            FakeVariant::Rules(rules) => lichess_key(*rules),
            FakeVariant::Other { key } => key,
        }
    }

    /// shakmaty's rules of the variant (`Variant::Chess` for standard,
    /// chess960 and fromPosition), `None` for an unknown key.
    pub fn rules(&self) -> Option<Variant> {
        match self {
            FakeVariant::Standard
            | FakeVariant::Chess960 { .. }
            | FakeVariant::FromPosition { .. } => Some(Variant::Chess),
            FakeVariant::Rules(rules) => Some(*rules),
            FakeVariant::Other { key } => match FakeVariant::from_key(key) {
                FakeVariant::Other { .. } => None,
                known => known.rules(),
            },
        }
    }
}

/// Lichess's key of shakmaty's variant.
pub fn lichess_key(rules: Variant) -> &'static str {
    match rules {
        Variant::Chess => "standard",
        Variant::Atomic => "atomic",
        Variant::Antichess => "antichess",
        Variant::KingOfTheHill => "kingOfTheHill",
        Variant::ThreeCheck => "threeCheck",
        Variant::Crazyhouse => "crazyhouse",
        Variant::RacingKings => "racingKings",
        Variant::Horde => "horde",
    }
}

/// The time control of a challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeTime {
    Clock {
        limit_secs: u32,
        increment_secs: u32,
    },
    Correspondence {
        days: u32,
    },
    Unlimited,
}

/// Who challenges (or is challenged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opponent {
    pub id: String,
    pub name: String,
    /// `Some("BOT")` for a bot, `Some("GM")`...
    pub title: Option<String>,
    pub rating: Option<u32>,
    pub provisional: bool,
}

impl Opponent {
    /// A human player named `name`, rated 1500.
    pub fn human(name: &str) -> Opponent {
        Opponent {
            id: name.to_lowercase(),
            name: name.to_owned(),
            title: None,
            rating: Some(1500),
            provisional: false,
        }
    }

    /// A player without an account (no id): its challenge shows
    /// `challenger: null`, as lila's challenge JsonView writes it.
    pub fn anonymous() -> Opponent {
        Opponent {
            id: String::new(),
            name: "Anonymous".to_owned(),
            title: None,
            rating: None,
            provisional: false,
        }
    }

    /// A bot named `name`, rated 2000.
    pub fn bot(name: &str) -> Opponent {
        Opponent {
            title: Some("BOT".to_owned()),
            rating: Some(2000),
            ..Opponent::human(name)
        }
    }

    /// The name with its title, as lila writes a game's players
    /// (`LightUser.titleName`: "BOT Name").
    pub fn title_name(&self) -> String {
        match &self.title {
            Some(title) => format!("{title} {}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The challenger's colour choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    White,
    Black,
    Random,
}

/// A challenge sent to the bot (see [`FakeLichess::send_challenge`]) or a
/// game started directly ([`FakeLichess::start_game`]).
#[derive(Debug, Clone)]
pub struct ChallengeSpec {
    pub variant: FakeVariant,
    pub time: FakeTime,
    pub rated: bool,
    /// The challenger's colour; the bot gets the other one.
    pub color: Side,
    pub challenger: Opponent,
    /// How the challenger plays once the game starts; `None`: by hand.
    pub autoplay: Option<AutoPlay>,
    /// An arena pairing (`start_game` only): the game carries this
    /// `tournamentId`, cannot be aborted, and a player who does not make
    /// a first move in time loses it (`noStart`).
    pub tournament: Option<String>,
    /// Overrides the event's `compat.bot` (else: not ultraBullet), for a
    /// game the Bot API cannot play for another reason.
    pub bot_compatible: Option<bool>,
    /// A rematch of this game (`rematchOf`, as lila sends the challenge
    /// of a rematch).
    pub rematch_of: Option<String>,
    /// The automatic opponent resigns instead of its move after this
    /// many of its moves (short games).
    pub resign_after: Option<u32>,
}

impl Default for ChallengeSpec {
    fn default() -> ChallengeSpec {
        ChallengeSpec {
            variant: FakeVariant::Standard,
            time: FakeTime::Clock {
                limit_secs: 180,
                increment_secs: 2,
            },
            rated: false,
            color: Side::Random,
            challenger: Opponent::human("Alice"),
            autoplay: Some(AutoPlay::default()),
            tournament: None,
            bot_compatible: None,
            rematch_of: None,
            resign_after: None,
        }
    }
}

impl ChallengeSpec {
    pub fn variant(mut self, variant: FakeVariant) -> ChallengeSpec {
        self.variant = variant;
        self
    }

    /// The variant of Lichess key `key` (see [`FakeVariant::from_key`]):
    /// `ChallengeSpec::default().variant_key("crazyhouse")`.
    pub fn variant_key(self, key: &str) -> ChallengeSpec {
        self.variant(FakeVariant::from_key(key))
    }

    pub fn clock(mut self, limit_secs: u32, increment_secs: u32) -> ChallengeSpec {
        self.time = FakeTime::Clock {
            limit_secs,
            increment_secs,
        };
        self
    }

    pub fn time(mut self, time: FakeTime) -> ChallengeSpec {
        self.time = time;
        self
    }

    /// An arena game of tournament `id` (see [`ChallengeSpec::tournament`]).
    pub fn tournament(mut self, id: &str) -> ChallengeSpec {
        self.tournament = Some(id.to_owned());
        self
    }

    /// The event's `compat.bot`, whatever the clock.
    pub fn bot_compatible(mut self, compatible: bool) -> ChallengeSpec {
        self.bot_compatible = Some(compatible);
        self
    }

    pub fn rated(mut self, rated: bool) -> ChallengeSpec {
        self.rated = rated;
        self
    }

    /// The challenger's colour.
    pub fn challenger_color(mut self, color: Side) -> ChallengeSpec {
        self.color = color;
        self
    }

    pub fn challenger(mut self, challenger: Opponent) -> ChallengeSpec {
        self.challenger = challenger;
        self
    }

    pub fn rematch_of(mut self, game: &str) -> ChallengeSpec {
        self.rematch_of = Some(game.to_owned());
        self
    }

    pub fn autoplay(mut self, autoplay: Option<AutoPlay>) -> ChallengeSpec {
        self.autoplay = autoplay;
        self
    }
}
