//! The other side of the board, driven by the test: challenges sent to
//! the bot and answers to its own, the opponent's moves, offers, chat,
//! resignation and absence.

use std::collections::HashMap;

use serde_json::json;
use shakmaty::{Color, Position};
use tokio::time::Instant;

use super::FakeLichess;
use super::challenge::ChallengeState;
use super::records::ChatRecord;
use super::setup::{AutoPlay, ChallengeSpec, FakeVariant, Side};

impl FakeLichess {
    /// Sends a challenge to the bot; returns its id (the game id if it is
    /// accepted).
    pub fn send_challenge(&self, spec: ChallengeSpec) -> String {
        self.app.with(|world, _| {
            let id = world.new_id();
            let challenger_color = match spec.color {
                Side::White => Color::White,
                Side::Black => Color::Black,
                Side::Random => {
                    if world.rng.bool() {
                        Color::White
                    } else {
                        Color::Black
                    }
                }
            };
            let spec = match spec.variant {
                // Fix the position now, so the challenge can show it.
                FakeVariant::Chess960 { position: None } => ChallengeSpec {
                    variant: FakeVariant::Chess960 {
                        position: Some(world.rng.u32(0..960)),
                    },
                    ..spec
                },
                _ => spec,
            };
            let state = ChallengeState {
                id: id.clone(),
                status: "created",
                direction: "in",
                spec,
                challenger_color,
                decline_reason: None,
                dest: None,
                form: HashMap::new(),
                game_id: None,
            };
            world.send_event(&json!({"type": "challenge",
                                     "challenge": world.challenge_json(&state),
                                     "compat": state.spec.compat_json()}));
            world.challenges.insert(id.clone(), state);
            world.challenge_order.push(id.clone());
            id
        })
    }

    /// The challenger withdraws a challenge (`challengeCanceled`).
    pub fn cancel_challenge(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let c = world.challenges.get_mut(id).ok_or("no such challenge")?;
            if c.status != "created" {
                return Err(format!("challenge {id} is {}", c.status));
            }
            c.status = "canceled";
            let c = &world.challenges[id];
            world.send_event(&json!({"type": "challengeCanceled",
                                     "challenge": world.challenge_json(c)}));
            Ok(())
        })
    }

    /// The opponent accepts a challenge the bot created; the game starts.
    pub fn accept_bot_challenge(&self, id: &str) -> Result<String, String> {
        self.app.with(|world, app| {
            let c = world.challenges.get(id).ok_or("no such challenge")?;
            if c.direction != "out" || c.status != "created" {
                return Err(format!("challenge {id} cannot be accepted"));
            }
            let (spec, bot_color) = (c.spec.clone(), c.challenger_color);
            let game_id = world.create_game(app, id.to_owned(), &spec, bot_color)?;
            if let Some(c) = world.challenges.get_mut(id) {
                c.status = "accepted";
                c.game_id = Some(game_id.clone());
            }
            Ok(game_id)
        })
    }

    /// The opponent declines a challenge the bot created
    /// (`challengeDeclined` with this reason, e.g. `"tooFast"`).
    pub fn decline_bot_challenge(&self, id: &str, reason: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let c = world.challenges.get_mut(id).ok_or("no such challenge")?;
            if c.direction != "out" || c.status != "created" {
                return Err(format!("challenge {id} cannot be declined"));
            }
            c.status = "declined";
            c.decline_reason = Some(reason.to_owned());
            let c = &world.challenges[id];
            world.send_event(&json!({"type": "challengeDeclined",
                                     "challenge": world.challenge_json(c)}));
            Ok(())
        })
    }

    /// Starts a game at once, as if a challenge had been accepted earlier;
    /// the bot plays `bot_color`. Returns the game id.
    pub fn start_game(&self, spec: ChallengeSpec, bot_color: Color) -> Result<String, String> {
        self.app.with(|world, app| {
            let id = world.new_id();
            world.create_game(app, id, &spec, bot_color)
        })
    }

    /// The opponent plays `uci` (in the game's castling notation).
    pub fn opponent_move(&self, id: &str, uci: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get(id).ok_or("no such game")?;
            if !game.started() || game.pos.turn() == game.bot_color {
                return Err(format!("not the opponent's turn in {id}"));
            }
            let m = game.parse_move(uci)?;
            if world.play(app, id, m) {
                Ok(())
            } else {
                Err(format!("the opponent's flag fell in {id}"))
            }
        })
    }

    /// Sets (or stops, with `None`) the automatic opponent of a game.
    pub fn set_autoplay(&self, id: &str, autoplay: Option<AutoPlay>) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            game.autoplay = autoplay;
            world.after_change(app, id);
            Ok(())
        })
    }

    /// The opponent offers a draw (`wdraw`/`bdraw` in the next state).
    pub fn opponent_offers_draw(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            if !game.started() {
                return Err("game over".into());
            }
            if game.draw_offer == Some(game.bot_color) {
                world.finish(app, id, "draw", None);
            } else {
                game.draw_offer = Some(!game.bot_color);
                world.after_change(app, id);
            }
            Ok(())
        })
    }

    /// The opponent proposes a takeback.
    pub fn opponent_proposes_takeback(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            if !game.started() || game.moves.is_empty() {
                return Err("nothing to take back".into());
            }
            game.takeback_offer = Some(!game.bot_color);
            world.after_change(app, id);
            Ok(())
        })
    }

    /// The opponent writes in the chat (`room`: player or spectator).
    pub fn opponent_says(&self, id: &str, room: &str, text: &str) -> Result<(), String> {
        self.app.with(|world, _| {
            let game = world.games.get_mut(id).ok_or("no such game")?;
            let username = game.opponent.name.clone();
            game.chat.push(ChatRecord {
                room: room.to_owned(),
                username: username.clone(),
                text: text.to_owned(),
                from_bot: false,
            });
            world.game_stream_line(
                id,
                &json!({"type": "chatLine", "room": room, "username": username, "text": text}),
            )
        })
    }

    /// The opponent resigns.
    pub fn opponent_resigns(&self, id: &str) -> Result<(), String> {
        self.app.with(|world, app| {
            let game = world.games.get(id).ok_or("no such game")?;
            if !game.started() {
                return Err("game over".into());
            }
            let bot = game.bot_color;
            world.finish(app, id, "resign", Some(bot));
            Ok(())
        })
    }

    /// The opponent leaves (`gone: true`, the bot may claim after
    /// `claim_win_secs`) or comes back (told only if it was gone that
    /// long, as lila's `setOnline` tells only of a player long gone).
    pub fn opponent_gone(&self, id: &str, gone: bool) -> Result<(), String> {
        self.app.with(|world, _| {
            if !gone {
                return world.opponent_back(id);
            }
            let claim = world.cfg.claim_win_secs;
            let game = world.games.get_mut(id).ok_or("no such game")?;
            game.gone_since = Some(Instant::now());
            let line = json!({"type": "opponentGone", "gone": true, "claimWinInSeconds": claim});
            world.game_stream_line(id, &line)
        })
    }
}
