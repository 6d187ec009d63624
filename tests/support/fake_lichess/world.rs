//! The server's state: the [`World`] (account, challenges, games, the
//! event stream, faults, the request log) behind one lock ([`Shared`]),
//! and what happens on a change (autoplay, flags, game ends).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use shakmaty::fen::Fen;
use shakmaty::variant::{Variant, VariantPosition};
use shakmaty::{CastlingMode, Color, EnPassantMode, KnownOutcome, Move, Outcome, Position};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::bots::OnlineBot;
use super::challenge::ChallengeState;
use super::faults::Faults;
use super::game::{
    Game, NO_CLOCK_MS, chess960_fen, color_name, end_of, idx, perf_name, role_value, speed_of,
    variant_json,
};
use super::records::RequestRecord;
use super::setup::{
    AutoPlay, ChallengeSpec, FakeConfig, FakeTime, FakeVariant, Opponent, Policy, Side, lichess_key,
};
use super::stream::Conn;

pub(super) struct World {
    pub(super) cfg: FakeConfig,
    pub(super) base_url: String,
    pub(super) is_bot: bool,
    pub(super) rng: fastrand::Rng,
    pub(super) challenges: HashMap<String, ChallengeState>,
    pub(super) challenge_order: Vec<String>,
    pub(super) games: HashMap<String, Game>,
    pub(super) game_order: Vec<String>,
    pub(super) event_stream: Option<Conn>,
    pub(super) event_connections: usize,
    /// When the event stream was opened in the last ten minutes (lila
    /// allows 30: `api.stream.event.user`).
    pub(super) event_opens: Vec<tokio::time::Instant>,
    pub(super) faults: Faults,
    pub(super) requests: Vec<RequestRecord>,
    pub(super) max_simultaneous: usize,
    pub(super) online_bots: Vec<OnlineBot>,
    pub(super) online: super::online::OnlineAnswers,
    pub(super) arenas: super::tournament::Arenas,
    /// Games started between the bot and another bot (lila's `BotLimit`
    /// counts them, whoever started them).
    pub(super) bot_games: u32,
}

pub(super) struct Shared {
    pub(super) world: Mutex<World>,
    pub(super) changed: Notify,
}

pub(super) type App = Arc<Shared>;

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` on the world, then wakes the waiters.
    pub(super) fn with<T>(self: &Arc<Self>, f: impl FnOnce(&mut World, &App) -> T) -> T {
        let result = {
            let mut world = self.lock();
            f(&mut world, self)
        };
        self.changed.notify_waiters();
        result
    }
}

impl World {
    pub(super) fn bot_id(&self) -> String {
        self.cfg.username.to_lowercase()
    }

    pub(super) fn bot_json(&self) -> Value {
        json!({"id": self.bot_id(), "name": self.cfg.username,
               "title": if self.is_bot { Some("BOT") } else { None },
               "rating": 2000, "provisional": false})
    }

    pub(super) fn new_id(&mut self) -> String {
        loop {
            let id: String = (0..8).map(|_| self.rng.alphanumeric()).collect();
            if !self.games.contains_key(&id) && !self.challenges.contains_key(&id) {
                return id;
            }
        }
    }

    pub(super) fn in_progress(&self) -> usize {
        self.games.values().filter(|g| g.started()).count()
    }

    pub(super) fn send_event(&self, event: &Value) {
        if let Some(conn) = &self.event_stream {
            conn.send(event);
        }
    }

    /// A challenge as the event stream writes it: lila's EventStream
    /// writes `challengeJsonView(none)`, no `direction`, for the
    /// challenges to the bot and for the bot's own alike (the answer to
    /// creating one adds `direction: out`).
    pub(super) fn challenge_json(&self, c: &ChallengeState) -> Value {
        let challenger_json = |o: &Opponent| {
            if o.id.is_empty() {
                // Anonymous: lila writes `challengerUser`, none.
                return Value::Null;
            }
            json!({"id": o.id, "name": o.name, "title": o.title, "rating": o.rating,
                   "provisional": o.provisional, "online": true, "lag": 4})
        };
        let bot = self.bot_json();
        let (challenger, dest) = if c.direction == "in" {
            (challenger_json(&c.spec.challenger), bot)
        } else {
            (bot, challenger_json(&c.spec.challenger))
        };
        let time_control = match c.spec.time {
            FakeTime::Clock {
                limit_secs,
                increment_secs,
            } => json!({"type": "clock", "limit": limit_secs, "increment": increment_secs,
                         "show": format!("{}+{}", limit_secs / 60, increment_secs)}),
            FakeTime::Correspondence { days } => {
                json!({"type": "correspondence", "daysPerTurn": days})
            }
            FakeTime::Unlimited => json!({"type": "unlimited"}),
        };
        // lila's challenge JSON has an `initialFen` only for a Chess960 or
        // fromPosition challenge (the other variants start from their own
        // position, which the key implies).
        let key = c.spec.variant.key().to_owned();
        let fen = match &c.spec.variant {
            FakeVariant::Chess960 { position } => position.map(chess960_fen),
            FakeVariant::FromPosition { fen } => Some(fen.clone()),
            _ => None,
        };
        let speed = speed_of(c.spec.time);
        let mut json = json!({
            "id": c.id,
            "url": format!("{}/{}", self.base_url, c.id),
            "status": c.status,
            "challenger": challenger,
            "destUser": dest,
            "variant": variant_json(&key),
            "rated": c.spec.rated,
            "speed": speed,
            "timeControl": time_control,
            "color": match c.spec.color { Side::White => "white", Side::Black => "black",
                                          Side::Random => "random" },
            "finalColor": color_name(c.challenger_color),
            "perf": {"icon": "", "name": perf_name(speed, &key)},
        });
        if let Some(fen) = fen {
            json["initialFen"] = json!(fen);
        }
        if let Some(game) = &c.spec.rematch_of {
            json["rematchOf"] = json!(game);
        }
        if let Some(reason) = &c.decline_reason {
            json["declineReason"] = json!(format!("Declined: {reason}"));
            json["declineReasonKey"] = json!(reason.to_lowercase());
        }
        json
    }

    /// Creates and starts a game; the bot plays `bot_color`.
    pub(super) fn create_game(
        &mut self,
        app: &App,
        id: String,
        spec: &ChallengeSpec,
        bot_color: Color,
    ) -> Result<String, String> {
        // `initialFen` in `gameFull`: lila's BotJsonView writes
        // `fen.fold("startpos")(_.value)`, the game's stored initial FEN
        // (GameRepo.initialFen), and GameRepo.insertDenormalized stores one
        // only for fromPosition and Chess960 games (lichess-org/lila,
        // modules/game/src/main/GameRepo.scala: `(g2.variant.fromPosition ||
        // g2.variant.chess960).option(Fen.write(g2.chess))`). So a horde or
        // racing kings game, whose start is not the standard one, says
        // `startpos` too, meaning the variant's own start position.
        // (lila before 2023 stored the FEN of every variant without the
        // standard start, and sent the horde/racing kings FEN there.)
        let (variant, initial_fen, mode, rules) = match &spec.variant {
            FakeVariant::Standard => (
                "standard",
                "startpos".to_owned(),
                CastlingMode::Standard,
                Variant::Chess,
            ),
            FakeVariant::Chess960 { position } => {
                let n = position.unwrap_or_else(|| self.rng.u32(0..960));
                (
                    "chess960",
                    chess960_fen(n),
                    CastlingMode::Chess960,
                    Variant::Chess,
                )
            }
            FakeVariant::FromPosition { fen } => {
                let parsed = Fen::from_ascii(fen.as_bytes()).map_err(|e| e.to_string())?;
                let mode = CastlingMode::detect(parsed.as_setup());
                ("fromPosition", fen.clone(), mode, Variant::Chess)
            }
            other => match other.rules() {
                Some(rules) => (
                    lichess_key(rules),
                    "startpos".to_owned(),
                    CastlingMode::Standard,
                    rules,
                ),
                None => return Err(format!("cannot play variant {}", other.key())),
            },
        };
        let start = if initial_fen == "startpos" {
            VariantPosition::new(rules)
        } else {
            let setup = Fen::from_ascii(initial_fen.as_bytes())
                .map_err(|e| e.to_string())?
                .into_setup();
            // lila's non-strict check admits more than 16 pieces or 8
            // pawns a side (scalachess `Fen.read`, `strict = false`).
            VariantPosition::from_setup(rules, setup, mode)
                .or_else(|e| e.ignore_too_much_material().map_err(|e| e.to_string()))?
        };
        if self.is_bot && spec.challenger.title.as_deref() == Some("BOT") {
            self.bot_games += 1;
        }
        let (clock, days, times) = match spec.time {
            FakeTime::Clock {
                limit_secs,
                increment_secs,
            } => {
                let initial = i64::from(limit_secs) * 1000;
                (
                    Some((initial, i64::from(increment_secs) * 1000)),
                    None,
                    [initial, initial],
                )
            }
            FakeTime::Correspondence { days } => (None, Some(days), [NO_CLOCK_MS; 2]),
            FakeTime::Unlimited => (None, None, [NO_CLOCK_MS; 2]),
        };
        let suffix: String = (0..4).map(|_| self.rng.alphanumeric()).collect();
        let game = Game {
            full_id: format!("{id}{suffix}"),
            id: id.clone(),
            variant,
            mode,
            initial_fen,
            keys: vec![start.zobrist_hash(EnPassantMode::Legal)],
            pos: start.clone(),
            start,
            moves: Vec::new(),
            streamed: Vec::new(),
            bot_color,
            opponent: spec.challenger.clone(),
            rated: spec.rated,
            speed: speed_of(spec.time),
            clock,
            days,
            times,
            clocks: Vec::new(),
            last_move_at: Instant::now(),
            created_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            status: "started",
            winner: None,
            draw_offer: None,
            takeback_offer: None,
            gone_since: None,
            autoplay: spec.autoplay,
            generation: 0,
            subscribers: Vec::new(),
            chat: Vec::new(),
            illegal: Vec::new(),
            draw_answers: Vec::new(),
            refused_claims: 0,
            ignored_claims: 0,
            takeback_answers: Vec::new(),
            bot_draw_offers: 0,
            dropped_draw_offers: 0,
            bot_draw_offer_plies: Vec::new(),
            stream_connections: 0,
            tournament_id: spec.tournament.clone(),
            resign_after: spec.resign_after,
        };
        if self.faults.drop_game_starts > 0 {
            self.faults.drop_game_starts -= 1;
        } else {
            self.send_event(&json!({"type": "gameStart", "game": game.info_json()}));
        }
        self.games.insert(id.clone(), game);
        self.game_order.push(id.clone());
        self.max_simultaneous = self.max_simultaneous.max(self.in_progress());
        self.after_change(app, &id);
        Ok(id)
    }

    /// Sends the state to the game's streams and arms the timers and the
    /// automatic opponent. Call after every change to a game.
    pub(super) fn after_change(&mut self, app: &App, id: &str) {
        let first_move_ms = self.cfg.first_move_timeout.as_millis() as u64;
        let first_move_timeout = self.cfg.first_move_timeout;
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        game.generation += 1;
        let mut state = game.state_json();
        if let Some(expiration) = state.get_mut("expiration") {
            expiration["millisToMove"] = json!(first_move_ms);
        }
        game.subscribers.retain(|c| !c.closed());
        if game.bot_to_move()
            && !game.subscribers.is_empty()
            && self.faults.malformed_turn_state > 0
        {
            self.faults.malformed_turn_state -= 1;
            state["wtime"] = json!("soon");
        }
        if game.bot_to_move() && !game.subscribers.is_empty() && self.faults.unfit_moves > 0 {
            self.faults.unfit_moves -= 1;
            state["moves"] = json!(game.unfit_moves());
        }
        if game.started()
            && game.ply() > 0
            && game.pos.turn() != game.bot_color
            && !game.subscribers.is_empty()
            && self.faults.stick_after_bot_move > 0
        {
            self.faults.stick_after_bot_move -= 1;
            for conn in &game.subscribers {
                conn.stick();
            }
        }
        for conn in &game.subscribers {
            conn.send(&state);
        }
        if !game.started() {
            for conn in game.subscribers.drain(..) {
                conn.end();
            }
            let finish = json!({"type": "gameFinish", "game": game.info_json()});
            self.send_event(&finish);
            return;
        }
        let generation = game.generation;
        let to_move = game.pos.turn();
        // A correspondence game whose turn comes announced on the event
        // stream, if the test asks (lila does not).
        if game.clock.is_none()
            && to_move == game.bot_color
            && game.ply() > 0
            && self.cfg.correspondence_turn_events
        {
            let start = json!({"type": "gameStart", "game": game.info_json()});
            if let Some(conn) = &self.event_stream {
                conn.send(&start);
            }
        }
        // The flag: before both sides moved, the first-move timeout aborts;
        // after, the clock of the side to move runs from the last move.
        // Games without a clock have neither.
        let deadline = match game.clock {
            None => None,
            Some(_) if game.ply() < 2 => Some(game.last_move_at + first_move_timeout),
            Some(_) => Some(
                game.last_move_at + Duration::from_millis(game.times[idx(to_move)].max(0) as u64),
            ),
        };
        if let Some(deadline) = deadline {
            let app = app.clone();
            let id = id.to_owned();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline).await;
                app.with(|world, app| world.flag(app, &id, generation));
            });
        }
        if to_move != game.bot_color
            && let Some(auto) = game.autoplay
        {
            let app = app.clone();
            let id = id.to_owned();
            tokio::spawn(async move {
                tokio::time::sleep(auto.think).await;
                app.with(|world, app| world.auto_move(app, &id, generation, auto));
            });
        }
    }

    /// A timer fired: if nothing happened since it was armed, the side to
    /// move lost on time (or the game is aborted before the first moves).
    pub(super) fn flag(&mut self, app: &App, id: &str, generation: u64) {
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        if game.generation != generation || !game.started() {
            return;
        }
        if game.ply() < 2 && game.tournament_id.is_some() {
            // An arena game is not aborted: who did not start it loses,
            // and is paused in the arena.
            game.status = "noStart";
            game.winner = Some(!game.pos.turn());
            let missed_by_bot = game.pos.turn() == game.bot_color;
            if let Some(t) = game.tournament_id.clone() {
                self.arena_game_over(&t, missed_by_bot);
            }
        } else if game.ply() < 2 {
            game.status = "aborted";
        } else {
            let loser = game.pos.turn();
            game.times[idx(loser)] = 0;
            game.status = "outoftime";
            // No win on time with a lone king (or too little to mate).
            game.winner = (!game.pos.has_insufficient_material(!loser)).then_some(!loser);
        }
        self.after_change(app, id);
    }

    pub(super) fn auto_move(&mut self, app: &App, id: &str, generation: u64, auto: AutoPlay) {
        let Some(game) = self.games.get_mut(id) else {
            return;
        };
        if game.generation != generation || !game.started() || game.pos.turn() == game.bot_color {
            return;
        }
        if let Some(n) = game.resign_after {
            let theirs = game.moves.len() / 2;
            if theirs >= n as usize {
                let bot = game.bot_color;
                self.finish(app, id, "resign", Some(bot));
                return;
            }
        }
        if game.draw_offer == Some(game.bot_color) && auto.accept_draws {
            game.status = "draw";
            game.draw_offer = None;
            self.after_change(app, id);
            return;
        }
        let moves = game.pos.legal_moves();
        let choice = match auto.policy {
            Policy::Random => None,
            Policy::Greedy => moves
                .iter()
                .find(|m| {
                    // A move that wins at once: mate, or the variant's win.
                    let mover = game.pos.turn();
                    let mut after = game.pos.clone();
                    after.play_unchecked(**m);
                    after.outcome() == Outcome::Known(KnownOutcome::Decisive { winner: mover })
                })
                .or_else(|| {
                    moves
                        .iter()
                        .filter(|m| m.is_capture())
                        .max_by_key(|m| m.capture().map(role_value))
                })
                .copied(),
        };
        let choice = match choice {
            Some(m) => m,
            None if moves.is_empty() => return,
            None => moves[self.rng.usize(0..moves.len())],
        };
        self.play(app, id, choice);
    }

    /// Plays a legal move for the side to move: clocks, offers, game end.
    /// Returns false if the mover's flag had fallen (the game is then lost
    /// on time and the move not played).
    pub(super) fn play(&mut self, app: &App, id: &str, m: Move) -> bool {
        let Some(game) = self.games.get_mut(id) else {
            return false;
        };
        let mover = game.pos.turn();
        let now = Instant::now();
        if let Some((_, inc)) = game.clock {
            // Lichess starts the clocks once both sides have moved.
            if game.ply() >= 2 {
                let spent = now.duration_since(game.last_move_at).as_millis() as i64;
                let left = game.times[idx(mover)] - spent;
                if left <= 0 {
                    game.times[idx(mover)] = 0;
                    game.status = "outoftime";
                    game.winner = (!game.pos.has_insufficient_material(!mover)).then_some(!mover);
                    self.after_change(app, id);
                    return false;
                }
                game.times[idx(mover)] = left + inc;
            }
        }
        game.last_move_at = now;
        let uci = game.uci(m);
        let streamed = game.streamed_uci(m, self.cfg.legacy_castling);
        game.moves.push(uci);
        game.streamed.push(streamed);
        game.clocks.push(game.times[idx(mover)]);
        game.pos.play_unchecked(m);
        game.keys.push(game.pos.zobrist_hash(EnPassantMode::Legal));
        // Moving declines the other side's pending offers.
        if game.draw_offer == Some(!mover) {
            game.draw_offer = None;
        }
        game.takeback_offer = None;
        let key = game.keys[game.keys.len() - 1];
        let repetitions = game.keys.iter().filter(|k| **k == key).count();
        if let Some((status, winner)) = end_of(&game.pos, repetitions) {
            game.status = status;
            game.winner = winner;
        }
        if !game.started() {
            game.draw_offer = None;
        }
        self.after_change(app, id);
        true
    }

    pub(super) fn finish(
        &mut self,
        app: &App,
        id: &str,
        status: &'static str,
        winner: Option<Color>,
    ) {
        if let Some(game) = self.games.get_mut(id) {
            game.status = status;
            game.winner = winner;
            game.draw_offer = None;
            game.takeback_offer = None;
        }
        self.after_change(app, id);
    }

    /// Tells the event stream that challenge `id` was declined or
    /// canceled (`kind`), as lila does both players (`isMyChallenge`:
    /// the challenger and the challenged), our own answers included.
    pub(super) fn echo_challenge(&mut self, id: &str, kind: &str) {
        if let Some(c) = self.challenges.get(id) {
            let event = json!({"type": kind, "challenge": self.challenge_json(c)});
            self.send_event(&event);
        }
    }

    /// The opponent is online again: `gone: false` goes out only if it
    /// had been gone long enough to be claimed against (lila's
    /// `setOnline`: `isLongGone`), else nothing is said.
    pub(super) fn opponent_back(&mut self, id: &str) -> Result<(), String> {
        let claim = Duration::from_secs(self.cfg.claim_win_secs.into());
        let game = self.games.get_mut(id).ok_or("no such game")?;
        let long_gone = game.gone_since.take().is_some_and(|t| t.elapsed() >= claim);
        if long_gone {
            let line = json!({"type": "opponentGone", "gone": false});
            return self.game_stream_line(id, &line);
        }
        Ok(())
    }

    pub(super) fn game_stream_line(&mut self, id: &str, line: &Value) -> Result<(), String> {
        let game = self.games.get_mut(id).ok_or("no such game")?;
        game.subscribers.retain(|c| !c.closed());
        for conn in &game.subscribers {
            conn.send(line);
        }
        Ok(())
    }
}
