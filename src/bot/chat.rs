//! Chat: the greeting and goodbye templates, and the commands people type
//! in a game's chat (`!help` lists them). Pure text in, text out; the game
//! task posts the replies (and extends its wait for `!wait`).

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

/// A chat command we answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Name,
    /// The evaluation and its line (spectators only).
    Eval,
    /// The line alone (spectators only).
    Pv,
    Queue,
    Variants,
    /// How to get a game with us.
    Challenge,
    /// The opponent asks for more time before their first move.
    Wait,
}

/// Every command, in `!help`'s order, with its word.
const COMMANDS: [(Command, &str); 8] = [
    (Command::Name, "!name"),
    (Command::Eval, "!eval"),
    (Command::Pv, "!pv"),
    (Command::Queue, "!queue"),
    (Command::Variants, "!variants"),
    (Command::Challenge, "!challenge"),
    (Command::Wait, "!wait"),
    (Command::Help, "!help"),
];

impl Command {
    /// The command a chat line starts with, if any (any case).
    pub fn parse(text: &str) -> Option<Command> {
        let word = text.split_whitespace().next()?.to_ascii_lowercase();
        COMMANDS.iter().find(|(_, w)| *w == word).map(|(c, _)| *c)
    }
}

/// What the answers may tell.
#[derive(Clone, Debug)]
pub struct Context<'a> {
    /// Our name.
    pub me: &'a str,
    pub engine: &'a EngineView,
    /// Challenges waiting for a slot.
    pub waiting: usize,
    /// The variants we accept, e.g. "standard, chess960".
    pub variants: &'a str,
    /// The games we accept, e.g. "bullet, blitz; rated or casual".
    pub games: &'a str,
    /// `!wait`: the opponent's first-move wait was extended to this many
    /// seconds from now (`None`: nothing to extend: the game is under way,
    /// or the wait was extended enough already).
    pub wait_extended: Option<u64>,
}

/// The answer to `command` in `room`. `!eval` and `!pv` are answered
/// only in the spectator room, so the opponent gets no help.
pub fn reply(command: Command, room: Room, ctx: &Context<'_>) -> String {
    let answer = match command {
        Command::Help => {
            let words: Vec<&str> = COMMANDS.iter().map(|(_, w)| *w).collect();
            format!("Commands: {} (!eval and !pv: spectators)", words.join(", "))
        }
        Command::Variants => format!("I accept challenges in: {}.", ctx.variants),
        Command::Challenge => format!(
            "Challenge me from my profile, lichess.org/@/{}: {} in {}.",
            ctx.me, ctx.games, ctx.variants
        ),
        Command::Queue => match ctx.waiting {
            0 => "No challenge is waiting: challenge me!".to_string(),
            1 => "1 challenge is waiting for a free slot.".to_string(),
            n => format!("{n} challenges are waiting for a free slot."),
        },
        Command::Name => format!(
            "{} plays with kaissa {}, a Rust engine.",
            ctx.me,
            env!("CARGO_PKG_VERSION")
        ),
        Command::Eval | Command::Pv if room == Room::Player => {
            "I keep my evaluation for the spectators.".to_string()
        }
        Command::Eval => match (&ctx.engine.score, ctx.engine.depth) {
            (Some(score), Some(depth)) => {
                let pv = ctx
                    .engine
                    .pv
                    .as_deref()
                    .map(|p| format!(", line {p}"))
                    .unwrap_or_default();
                format!("Eval {score} at depth {depth}{pv}")
            }
            _ => "No evaluation yet.".to_string(),
        },
        Command::Pv => match &ctx.engine.pv {
            Some(pv) => format!("My line: {pv}"),
            None => "No line yet.".to_string(),
        },
        Command::Wait => match ctx.wait_extended {
            Some(secs) => format!("Sure: I wait {secs} seconds for your first move."),
            None => "Nothing to wait for: take your time.".to_string(),
        },
    };
    truncate(&answer)
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

    fn answer(text: &str, room: Room, ctx: &Context<'_>) -> Option<String> {
        Command::parse(text).map(|c| reply(c, room, ctx))
    }

    #[test]
    fn commands() {
        let view = EngineView {
            score: Some("+0.35".into()),
            depth: Some(14),
            pv: Some("e4 e5 Nf3".into()),
        };
        let ctx = Context {
            me: "kbot",
            engine: &view,
            waiting: 0,
            variants: "standard, crazyhouse",
            games: "blitz, rapid; rated or casual",
            wait_extended: None,
        };
        let help = answer("!help", Room::Player, &ctx).unwrap();
        // !help lists exactly the commands there are.
        for (command, word) in COMMANDS {
            assert!(help.contains(word), "{help}");
            assert_eq!(Command::parse(word), Some(command));
        }
        assert_eq!(help.matches('!').count(), COMMANDS.len() + 2, "{help}");
        assert!(
            answer("  !NAME please", Room::Player, &ctx)
                .unwrap()
                .starts_with("kbot")
        );
        assert_eq!(
            answer("!eval", Room::Spectator, &ctx).unwrap(),
            "Eval +0.35 at depth 14, line e4 e5 Nf3"
        );
        assert_eq!(
            answer("!pv", Room::Spectator, &ctx).unwrap(),
            "My line: e4 e5 Nf3"
        );
        for secret in ["!eval", "!pv"] {
            let text = answer(secret, Room::Player, &ctx).unwrap();
            assert!(!text.contains("0.35") && !text.contains("Nf3"), "{text}");
        }
        let none = EngineView::default();
        let blank = Context {
            engine: &none,
            ..ctx.clone()
        };
        assert_eq!(
            answer("!eval", Room::Spectator, &blank).unwrap(),
            "No evaluation yet."
        );
        assert_eq!(answer("hello", Room::Player, &ctx), None);
        assert_eq!(answer("!unknown", Room::Player, &ctx), None);
        assert_eq!(answer("", Room::Player, &ctx), None);
        let queued = Context {
            waiting: 3,
            ..ctx.clone()
        };
        assert!(
            answer("!queue", Room::Player, &queued)
                .unwrap()
                .starts_with("3 challenges are waiting")
        );
        assert!(
            answer("!queue", Room::Spectator, &ctx)
                .unwrap()
                .starts_with("No challenge")
        );
        assert_eq!(
            answer("!variants", Room::Player, &ctx).unwrap(),
            "I accept challenges in: standard, crazyhouse."
        );
        assert_eq!(
            answer("!challenge", Room::Spectator, &ctx).unwrap(),
            "Challenge me from my profile, lichess.org/@/kbot: blitz, rapid; rated or casual \
             in standard, crazyhouse."
        );
        assert_eq!(
            answer("!wait", Room::Player, &ctx).unwrap(),
            "Nothing to wait for: take your time."
        );
        let waiting = Context {
            wait_extended: Some(90),
            ..ctx.clone()
        };
        assert_eq!(
            answer("!wait", Room::Player, &waiting).unwrap(),
            "Sure: I wait 90 seconds for your first move."
        );
        assert_eq!(Room::parse("spectator"), Some(Room::Spectator));
        assert_eq!(Room::parse("lobby"), None);
    }
}
