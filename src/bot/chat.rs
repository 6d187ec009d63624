//! Chat: the greeting and goodbye templates, and the commands people type
//! in a game's chat (`!help`, `!eval`, `!name`). Pure text in, text out;
//! the game task posts the replies.

use crate::lichess::MAX_CHAT_LEN;

/// A chat room of a game.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Room {
    Player,
    Spectator,
}

impl Room {
    /// The room's name in the Lichess API.
    pub fn as_str(self) -> &'static str {
        match self {
            Room::Player => "player",
            Room::Spectator => "spectator",
        }
    }

    pub fn parse(s: &str) -> Option<Room> {
        match s {
            "player" => Some(Room::Player),
            "spectator" => Some(Room::Spectator),
            _ => None,
        }
    }
}

/// Fills `{me}` and `{opponent}` in a configured message and trims it to
/// what Lichess accepts.
pub fn fill_template(template: &str, me: &str, opponent: &str) -> String {
    let text = template.replace("{me}", me).replace("{opponent}", opponent);
    truncate(&text)
}

fn truncate(text: &str) -> String {
    text.chars().take(MAX_CHAT_LEN).collect()
}

/// What the engine last said about the game, for `!eval`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineView {
    /// "+0.35", "-1.20", "#3", "#-2".
    pub score: Option<String>,
    pub depth: Option<u32>,
    /// Principal variation in SAN or UCI.
    pub pv: Option<String>,
}

/// The reply to a chat line, if it is a command we answer. `!eval` is
/// answered only in the spectator room, so the opponent gets no help.
/// `waiting`: challenges in the queue, for `!queue`.
pub fn reply(
    text: &str,
    room: Room,
    me: &str,
    engine: &EngineView,
    waiting: usize,
    variants: &str,
) -> Option<String> {
    let command = text.split_whitespace().next()?.to_ascii_lowercase();
    let answer = match command.as_str() {
        "!help" => "Commands: !name, !eval (spectators), !queue, !variants, !help".to_string(),
        "!variants" => format!("I accept challenges in: {variants}."),
        "!queue" => match waiting {
            0 => "No challenge is waiting: challenge me!".to_string(),
            1 => "1 challenge is waiting for a free slot.".to_string(),
            n => format!("{n} challenges are waiting for a free slot."),
        },
        "!name" => format!(
            "{me} plays with kaissa {}, a Rust engine.",
            env!("CARGO_PKG_VERSION")
        ),
        "!eval" if room == Room::Spectator => match (&engine.score, engine.depth) {
            (Some(score), Some(depth)) => {
                let pv = engine
                    .pv
                    .as_deref()
                    .map(|p| format!(", line {p}"))
                    .unwrap_or_default();
                format!("Eval {score} at depth {depth}{pv}")
            }
            _ => "No evaluation yet.".to_string(),
        },
        "!eval" => "I keep my evaluation for the spectators.".to_string(),
        _ => return None,
    };
    Some(truncate(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_and_truncate() {
        assert_eq!(
            fill_template("Hi {opponent}, I am {me}. Good luck!", "kaissa", "bob"),
            "Hi bob, I am kaissa. Good luck!"
        );
        let long = "x".repeat(500);
        assert_eq!(fill_template(&long, "a", "b").chars().count(), MAX_CHAT_LEN);
    }

    #[test]
    fn commands() {
        let view = EngineView {
            score: Some("+0.35".into()),
            depth: Some(14),
            pv: Some("e4 e5 Nf3".into()),
        };
        assert!(
            reply("!help", Room::Player, "k", &view, 0, "standard, crazyhouse")
                .unwrap()
                .contains("!eval")
        );
        assert!(
            reply(
                "  !NAME please",
                Room::Player,
                "kbot",
                &view,
                0,
                "standard, crazyhouse"
            )
            .unwrap()
            .starts_with("kbot")
        );
        assert_eq!(
            reply(
                "!eval",
                Room::Spectator,
                "k",
                &view,
                0,
                "standard, crazyhouse"
            )
            .unwrap(),
            "Eval +0.35 at depth 14, line e4 e5 Nf3"
        );
        assert!(
            !reply("!eval", Room::Player, "k", &view, 0, "standard, crazyhouse")
                .unwrap()
                .contains("0.35")
        );
        assert_eq!(
            reply(
                "!eval",
                Room::Spectator,
                "k",
                &EngineView::default(),
                0,
                "standard, crazyhouse"
            )
            .unwrap(),
            "No evaluation yet."
        );
        assert_eq!(
            reply("hello", Room::Player, "k", &view, 0, "standard, crazyhouse"),
            None
        );
        assert!(
            reply(
                "!queue",
                Room::Player,
                "k",
                &view,
                3,
                "standard, crazyhouse"
            )
            .unwrap()
            .starts_with("3 challenges are waiting")
        );
        assert!(
            reply(
                "!queue",
                Room::Spectator,
                "k",
                &view,
                0,
                "standard, crazyhouse"
            )
            .unwrap()
            .starts_with("No challenge")
        );
        assert_eq!(
            reply("", Room::Player, "k", &view, 0, "standard, crazyhouse"),
            None
        );
        assert_eq!(
            reply(
                "!variants",
                Room::Player,
                "k",
                &view,
                0,
                "standard, crazyhouse"
            )
            .unwrap(),
            "I accept challenges in: standard, crazyhouse."
        );
        assert_eq!(Room::parse("spectator"), Some(Room::Spectator));
        assert_eq!(Room::parse("lobby"), None);
    }
}
