//! Games: the rules (shakmaty), the clocks as Lichess keeps them, and the
//! JSON of a game (`gameFull`, `gameState`, game info).

use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::variant::{Variant, VariantPosition};
use shakmaty::zobrist::Zobrist64;
use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, FromSetup, KnownOutcome, Move, Outcome, Position,
    Role,
};
use tokio::time::Instant;

use super::records::{ChatRecord, GameRecord, IllegalMove};
use super::setup::{AutoPlay, ChallengeSpec, FakeTime, Opponent};
use super::stream::Conn;

/// The standard starting position.
pub const STARTPOS_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The clock Lichess reports for games without one.
pub(super) const NO_CLOCK_MS: i64 = 2_147_483_647;

pub(super) struct Game {
    pub(super) id: String,
    pub(super) full_id: String,
    /// The Lichess key (`standard`, `crazyhouse`...); the rules are
    /// `pos.variant()`.
    pub(super) variant: &'static str,
    pub(super) mode: CastlingMode,
    /// What `gameFull.initialFen` says: `startpos`, or the FEN of a
    /// Chess960 or fromPosition game.
    pub(super) initial_fen: String,
    pub(super) start: VariantPosition,
    pub(super) pos: VariantPosition,
    pub(super) moves: Vec<String>,
    /// The same moves as the game streams write them (castling king
    /// takes rook unless `FakeConfig::legacy_castling`).
    pub(super) streamed: Vec<String>,
    /// Zobrist keys of every position so far, for threefold repetition.
    pub(super) keys: Vec<Zobrist64>,
    pub(super) bot_color: Color,
    pub(super) opponent: Opponent,
    pub(super) rated: bool,
    pub(super) speed: &'static str,
    /// Initial time and increment in ms; `None` without a clock.
    pub(super) clock: Option<(i64, i64)>,
    pub(super) days: Option<u32>,
    /// Time left, white then black, as of the last move.
    pub(super) times: [i64; 2],
    /// The mover's time left after each move (a PGN's `[%clk]`).
    pub(super) clocks: Vec<i64>,
    pub(super) last_move_at: Instant,
    pub(super) created_at_ms: u64,
    pub(super) status: &'static str,
    pub(super) winner: Option<Color>,
    pub(super) draw_offer: Option<Color>,
    pub(super) takeback_offer: Option<Color>,
    pub(super) gone_since: Option<Instant>,
    pub(super) autoplay: Option<AutoPlay>,
    /// Bumped on every change that makes pending timers stale.
    pub(super) generation: u64,
    pub(super) subscribers: Vec<Conn>,
    pub(super) chat: Vec<ChatRecord>,
    pub(super) illegal: Vec<IllegalMove>,
    pub(super) draw_answers: Vec<bool>,
    /// Claims refused (400: the opponent not gone long enough).
    pub(super) refused_claims: u32,
    /// Claims answered 200 that did nothing (lila's: on the bot's own
    /// turn, or before both sides moved).
    pub(super) ignored_claims: u32,
    pub(super) takeback_answers: Vec<bool>,
    pub(super) bot_draw_offers: usize,
    pub(super) dropped_draw_offers: usize,
    /// The plies of the bot's draw offers that counted.
    pub(super) bot_draw_offer_plies: Vec<usize>,
    pub(super) stream_connections: usize,
    /// The arena of an arena pairing.
    pub(super) tournament_id: Option<String>,
    /// The automatic opponent resigns after this many of its moves.
    pub(super) resign_after: Option<u32>,
}

pub(super) fn idx(color: Color) -> usize {
    match color {
        Color::White => 0,
        Color::Black => 1,
    }
}

pub(super) fn color_name(color: Color) -> &'static str {
    color.fold_wb("white", "black")
}

pub(super) fn role_value(role: Role) -> u32 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 100,
    }
}

impl Game {
    pub(super) fn started(&self) -> bool {
        self.status == "started"
    }

    pub(super) fn ply(&self) -> usize {
        self.moves.len()
    }

    /// A side's clock now, as lila writes it in `gameFull` and
    /// `gameState` (`Clock.remainingTime`): the clock of the side to move
    /// runs from the last move once both sides have moved, so a stream
    /// opened late sees it lower.
    pub(super) fn remaining_ms(&self, color: Color) -> i64 {
        let left = self.times[idx(color)];
        if self.clock.is_some() && self.started() && self.ply() >= 2 && self.pos.turn() == color {
            (left - self.last_move_at.elapsed().as_millis() as i64).max(0)
        } else {
            left
        }
    }

    /// The game is on, a move was played, and the bot is to move.
    pub(super) fn bot_to_move(&self) -> bool {
        self.started() && self.ply() > 0 && self.pos.turn() == self.bot_color
    }

    /// The streamed moves with the last one replaced by a move no piece
    /// can make (from a square to itself).
    pub(super) fn unfit_moves(&self) -> String {
        let mut moves = self.streamed.clone();
        moves.pop();
        moves.push("a1a1".to_owned());
        moves.join(" ")
    }

    /// A draw offer of the bot's, now: whether it counts (lila's
    /// `playerCanOfferDraw`: from ply 2, and not within 20 plies of the
    /// last one), recorded either way.
    pub(super) fn bot_offers_draw(&mut self) -> bool {
        let ply = self.ply();
        let counts = ply >= 2 && (self.bot_draw_offer_plies.last()).is_none_or(|&at| at + 20 < ply);
        if counts {
            self.bot_draw_offers += 1;
            self.bot_draw_offer_plies.push(ply);
        } else {
            self.dropped_draw_offers += 1;
        }
        counts
    }

    /// The current position as lila writes it (scalachess `Fen.write`).
    pub(super) fn fen(&self) -> String {
        lila_fen(&self.pos)
    }

    pub(super) fn uci(&self, m: Move) -> String {
        UciMove::from_move(m, self.mode).to_string()
    }

    /// `m` as the game streams write it.
    pub(super) fn streamed_uci(&self, m: Move, legacy: bool) -> String {
        let mode = if legacy {
            self.mode
        } else {
            CastlingMode::Chess960
        };
        UciMove::from_move(m, mode).to_string()
    }

    pub(super) fn record(&self) -> GameRecord {
        GameRecord {
            id: self.id.clone(),
            variant: self.variant.to_owned(),
            rules: self.pos.variant(),
            initial_fen: self.initial_fen.clone(),
            bot_color: self.bot_color,
            opponent: self.opponent.clone(),
            moves: self.moves.clone(),
            status: self.status.to_owned(),
            winner: self.winner,
            fen: self.fen(),
            wtime_ms: self.times[0],
            btime_ms: self.times[1],
            clocks_ms: self.clocks.clone(),
            illegal_moves: self.illegal.clone(),
            chat: self.chat.clone(),
            draw_answers: self.draw_answers.clone(),
            refused_claims: self.refused_claims,
            ignored_claims: self.ignored_claims,
            takeback_answers: self.takeback_answers.clone(),
            bot_draw_offers: self.bot_draw_offers,
            dropped_draw_offers: self.dropped_draw_offers,
            stream_connections: self.stream_connections,
        }
    }

    pub(super) fn player_json(&self, color: Color, bot: &Value) -> Value {
        if color == self.bot_color {
            bot.clone()
        } else {
            let o = &self.opponent;
            json!({"id": o.id, "name": o.name, "title": o.title, "rating": o.rating,
                   "provisional": o.provisional})
        }
    }

    pub(super) fn state_json(&self) -> Value {
        let (winc, binc) = match self.clock {
            Some((_, inc)) => (inc, inc),
            None => (0, 0),
        };
        let mut state = json!({
            "type": "gameState",
            "moves": self.streamed.join(" "),
            "wtime": self.remaining_ms(Color::White),
            "btime": self.remaining_ms(Color::Black),
            "winc": winc,
            "binc": binc,
            "status": self.status,
        });
        if let Some(winner) = self.winner {
            state["winner"] = json!(color_name(winner));
        }
        match self.draw_offer {
            Some(Color::White) => state["wdraw"] = json!(true),
            Some(Color::Black) => state["bdraw"] = json!(true),
            None => {}
        }
        match self.takeback_offer {
            Some(Color::White) => state["wtakeback"] = json!(true),
            Some(Color::Black) => state["btakeback"] = json!(true),
            None => {}
        }
        if self.started() && self.ply() < 2 {
            state["expiration"] = json!({
                "idleMillis": self.last_move_at.elapsed().as_millis() as u64,
                "millisToMove": 0, // filled in by the caller, who knows the config
            });
        }
        state
    }

    pub(super) fn full_json(&self, bot: &Value, first_move_ms: u64) -> Value {
        let mut state = self.state_json();
        if let Some(expiration) = state.get_mut("expiration") {
            expiration["millisToMove"] = json!(first_move_ms);
        }
        let mut full = json!({
            "type": "gameFull",
            "id": self.id,
            "variant": variant_json(self.variant),
            "speed": self.speed,
            "perf": {"name": perf_name(self.speed, self.variant)},
            "rated": self.rated,
            "createdAt": self.created_at_ms,
            "white": self.player_json(Color::White, bot),
            "black": self.player_json(Color::Black, bot),
            "initialFen": self.initial_fen,
            "state": state,
        });
        if let Some((initial, inc)) = self.clock {
            full["clock"] = json!({"initial": initial, "increment": inc});
        }
        if let Some(days) = self.days {
            full["daysPerTurn"] = json!(days);
        }
        if let Some(t) = &self.tournament_id {
            full["tournamentId"] = json!(t);
        }
        full
    }

    /// The game as `gameStart`/`gameFinish`/`nowPlaying` list it.
    pub(super) fn info_json(&self) -> Value {
        let status_id = match self.status {
            "started" => 20,
            "aborted" => 25,
            "mate" => 30,
            "resign" => 31,
            "stalemate" => 32,
            "timeout" => 33,
            "draw" => 34,
            "outoftime" => 35,
            "noStart" => 37,
            "variantEnd" => 60,
            _ => 38,
        };
        let seconds_left = self.times[idx(self.bot_color)] / 1000;
        let mut info = json!({
            "gameId": self.id,
            "fullId": self.full_id,
            "id": self.id,
            "color": color_name(self.bot_color),
            "fen": self.fen(),
            "hasMoved": self.moves.len() > usize::from(self.bot_color == Color::Black),
            "isMyTurn": self.started() && self.pos.turn() == self.bot_color,
            "lastMove": self.streamed.last().cloned().unwrap_or_default(),
            // lila's `Namer.playerTextBlocking`: the titled name.
            "opponent": {"id": self.opponent.id, "username": self.opponent.title_name(),
                         "rating": self.opponent.rating},
            "perf": perf_key(self.speed, self.variant),
            "rated": self.rated,
            "source": if self.tournament_id.is_some() { "arena" } else { "friend" },
            "speed": self.speed,
            // lila's ownerPreview writes the variant's key and name only.
            "variant": {"key": self.variant, "name": variant_names(self.variant).0},
            "status": {"id": status_id, "name": self.status},
            "compat": compat_json(self.speed),
        });
        if let Some(t) = &self.tournament_id {
            info["tournamentId"] = json!(t);
        }
        if self.rated {
            // The bot's rating (the fake's account: 2000) and, once the
            // game is over, its change: +8 for a win, -8 for a loss.
            info["rating"] = json!(2000);
            if !self.started() && self.status != "aborted" {
                let diff = match self.winner {
                    Some(w) if w == self.bot_color => 8,
                    Some(_) => -8,
                    None => 0,
                };
                info["ratingDiff"] = json!(diff);
            }
        }
        if self.clock.is_some() {
            info["secondsLeft"] = json!(seconds_left);
        }
        if let Some(winner) = self.winner {
            info["winner"] = json!(color_name(winner));
        }
        info
    }

    /// Parses a move posted as UCI, the way Lichess takes it: in standard
    /// chess castling as e1g1 or e1h1, in Chess960 only king-takes-rook.
    pub(super) fn parse_move(&self, uci: &str) -> Result<Move, String> {
        let parsed: UciMove = uci.parse().map_err(|_| format!("Invalid UCI: {uci}"))?;
        let m = parsed
            .to_move(&self.pos)
            .map_err(|_| format!("Illegal move: {uci}"))?;
        if let (CastlingMode::Chess960, Move::Castle { rook, .. }, UciMove::Normal { to, .. }) =
            (self.mode, m, parsed)
            && to != rook
        {
            return Err(format!(
                "Illegal move: {uci} (Chess960 castles king-takes-rook)"
            ));
        }
        Ok(m)
    }
}

impl ChallengeSpec {
    /// The challenge event's `compat`.
    pub(super) fn compat_json(&self) -> Value {
        let mut compat = compat_json(speed_of(self.time));
        if let Some(bot) = self.bot_compatible {
            compat["bot"] = json!(bot);
        }
        compat
    }
}

/// Which APIs can play a game of this speed (`GameCompat.yaml`): bots
/// cannot play ultraBullet, the Board API neither bullet.
pub(super) fn compat_json(speed: &str) -> Value {
    json!({"bot": speed != "ultraBullet", "board": !matches!(speed, "ultraBullet" | "bullet")})
}

/// The name and short name of a variant, as scalachess's `Variant`s have
/// them (lichess-org/scalachess, `core/src/main/scala/variant/*.scala`:
/// `name`, `shortName`).
pub(super) fn variant_names(key: &str) -> (&str, &str) {
    match key {
        "standard" => ("Standard", "Std"),
        "chess960" => ("Chess960", "960"),
        "fromPosition" => ("From Position", "FEN"),
        "crazyhouse" => ("Crazyhouse", "Crazy"),
        "antichess" => ("Antichess", "Anti"),
        "atomic" => ("Atomic", "Atom"),
        "horde" => ("Horde", "Horde"),
        "kingOfTheHill" => ("King of the Hill", "KotH"),
        "racingKings" => ("Racing Kings", "Racing"),
        "threeCheck" => ("Three-check", "3check"),
        other => (other, other),
    }
}

/// `{key, name, short}`, as the challenge and `gameFull` write a variant.
pub(super) fn variant_json(key: &str) -> Value {
    let (name, short) = variant_names(key);
    json!({"key": key, "name": name, "short": short})
}

/// lila's `perfKey` of a game (the `perf` of `gameStart`): the variant's
/// for Chess960 and the other variants, else the speed's.
pub(super) fn perf_key<'a>(speed: &'a str, variant: &'a str) -> &'a str {
    match variant {
        "standard" | "fromPosition" => speed,
        other => other,
    }
}

/// The perf's name (`perf.name` of `gameFull` and challenges): for a
/// variant its name (lila's `PerfType` names are the variants' names),
/// else the speed's, capitalised.
pub(super) fn perf_name(speed: &str, variant: &str) -> String {
    if !matches!(variant, "standard" | "fromPosition") {
        return variant_names(variant).0.to_owned();
    }
    let mut chars = speed.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Lichess's speed of a clock: estimated duration = limit + 40 × increment.
pub(super) fn speed_of(time: FakeTime) -> &'static str {
    match time {
        FakeTime::Clock {
            limit_secs,
            increment_secs,
        } => {
            let estimate = limit_secs + 40 * increment_secs;
            match estimate {
                0..30 => "ultraBullet",
                30..180 => "bullet",
                180..480 => "blitz",
                480..1500 => "rapid",
                _ => "classical",
            }
        }
        FakeTime::Correspondence { .. } | FakeTime::Unlimited => "correspondence",
    }
}

/// A position as lila writes it (scalachess `Fen.write`): crazyhouse
/// pockets after a slash (`RNBQKBNR/Pn w`, shakmaty writes `[Pn]`), and in
/// three-check the checks given so far at the end, White's then Black's
/// (`... 0 1 +1+0`, where shakmaty writes the checks left, `2+3`, before
/// the clocks). Both forms parse with shakmaty.
pub(super) fn lila_fen(pos: &VariantPosition) -> String {
    let fen = Fen::from_position(pos, EnPassantMode::Legal).to_string();
    match pos.variant() {
        Variant::Crazyhouse => fen.replacen('[', "/", 1).replacen(']', "", 1),
        Variant::ThreeCheck => {
            let mut fields: Vec<&str> = fen.split(' ').collect();
            if fields.len() == 7 {
                fields.remove(4);
            }
            let given = pos.remaining_checks().map_or([0, 0], |left| {
                [3 - u32::from(left.white), 3 - u32::from(left.black)]
            });
            format!("{} +{}+{}", fields.join(" "), given[0], given[1])
        }
        _ => fen,
    }
}

/// Whether the side to move is checkmated. A variant end stops shakmaty's
/// move generation (no legal moves after the third check, or once a king
/// is on the hill), so there mate is asked of the standard rules, as
/// scalachess does (both variants move by `Standard.validMoves`).
fn is_mate(pos: &VariantPosition) -> bool {
    if pos.checkers().is_empty() {
        return false;
    }
    if !pos.is_variant_end() {
        return pos.legal_moves().is_empty();
    }
    match pos.variant() {
        Variant::ThreeCheck | Variant::KingOfTheHill => {
            let mut setup = pos.to_setup(EnPassantMode::Legal);
            setup.remaining_checks = None;
            Chess::from_setup(setup, pos.castles().mode()).is_ok_and(|c| c.is_checkmate())
        }
        _ => false,
    }
}

/// How a game ends in `pos` (after the move just played), by the
/// variant's rules, with lila's status names, and who won.
///
/// lila (lichess-org/scalachess `Position.status`): `Mate` if checkmate,
/// else `VariantEnd` if the variant's `specialEnd`, else `Stalemate`, else
/// `Draw` if `autoDraw` (insufficient material, the fifty moves, the
/// variant's `specialDraw`). So: checkmate is `mate` in every variant
/// (atomic, three-check, horde included); the variant's own ends are
/// `variantEnd`: a king on the hill, the third check (when it is not
/// mate), an exploded king, the horde captured, a king on the eighth rank
/// (racing kings; both kings there is `draw`, lila's `specialDraw`), and in
/// antichess both losing all pieces and being stalemated (a win for the
/// side with no moves: `Antichess.specialEnd` / `winner`). Crazyhouse has
/// no fifty-move rule (`Crazyhouse.fiftyMoves = false`). Threefold
/// repetition ends the game as in the fake's standard games.
pub(super) fn end_of(
    pos: &VariantPosition,
    repetitions: usize,
) -> Option<(&'static str, Option<Color>)> {
    let mover = !pos.turn();
    if is_mate(pos) {
        return Some(("mate", Some(mover)));
    }
    if let Outcome::Known(outcome) = pos.variant_outcome() {
        return Some(match outcome {
            KnownOutcome::Decisive { winner } => ("variantEnd", Some(winner)),
            KnownOutcome::Draw => ("draw", None),
        });
    }
    if pos.legal_moves().is_empty() {
        return Some(("stalemate", None));
    }
    let fifty = pos.variant() != Variant::Crazyhouse && pos.halfmoves() >= 100;
    if pos.is_insufficient_material() || fifty || repetitions >= 3 {
        return Some(("draw", None));
    }
    None
}

/// The back rank (White's) of Chess960 start position `n` (Scharnagl
/// numbering).
pub fn chess960_back_rank(n: u32) -> String {
    let fen = chess960_fen(n);
    fen[fen.rfind('/').map_or(0, |i| i + 1)..fen.find(' ').unwrap_or(fen.len())].to_owned()
}

/// The FEN of Chess960 start position `n`.
pub fn chess960_fen(n: u32) -> String {
    kaissa::chess::chess960_start_fen(n)
}
