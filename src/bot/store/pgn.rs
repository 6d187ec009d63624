//! PGN export of a finished game: the seven-tag roster plus the Lichess
//! extras (Elo, TimeControl, Variant, FEN, ECO and Opening), moves in SAN,
//! each followed by the comment `bot.pgn_comments` asks for: the mover's
//! clock after it (`[%clk 0:02:58]`, both sides), and for our moves the
//! engine's evaluation (`[%eval 0.25]`), depth (`depth 18`) and principal
//! variation (`pv: Nf3 Nc6 Bb5`), as lichess.org and python-chess read
//! them. The file it goes to (`bot.pgn_file`) is the game's own, or the
//! opponent's or the one of all games, where it is appended whole.

use crate::bot::board::opening::Opening;
use crate::bot::board::standard::GameRecord;
use crate::bot::board::variant::{VariantRecord, pgn_name};
use crate::chess::Color;
use crate::config::{PgnComment, PgnFile};
use std::fmt::Write as _;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The engine's evaluation after one of our moves, from White's side.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Eval {
    Cp(i32),
    /// Mate in n moves (negative: White is mated).
    Mate(i32),
}

/// What our engine said of one of our moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineNote {
    pub eval: Eval,
    /// The depth of the search; 0 when the engine did not say.
    pub depth: u32,
    /// The principal variation from the move itself, in SAN (empty when
    /// the engine gave none).
    pub pv: String,
}

/// What a PGN needs besides the moves.
#[derive(Clone, Debug, Default)]
pub struct PgnHeaders {
    pub event: String,
    pub site: String,
    /// `YYYY.MM.DD`.
    pub date: String,
    pub white: String,
    pub black: String,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    /// Seconds + increment (`180+2`), or `-` for correspondence.
    pub time_control: String,
    /// The `ECO` and `Opening` tags (standard games only).
    pub opening: Option<Opening>,
    pub termination: Option<String>,
}

/// The moves of a game as a PGN writes them, in any variant.
#[derive(Clone, Debug)]
pub struct PgnMoves {
    /// The `Variant` tag, none for standard chess.
    pub variant: Option<&'static str>,
    /// The initial FEN, none for the (variant's) start position.
    pub initial_fen: Option<String>,
    pub first_number: u32,
    pub first_turn: Color,
    pub sans: Vec<String>,
}

impl PgnMoves {
    /// A game of standard chess, Chess960 or from a position.
    pub fn of_chess(record: &GameRecord) -> PgnMoves {
        PgnMoves {
            variant: record.chess960().then_some("Chess960"),
            initial_fen: record.initial_fen(),
            first_number: record.initial().fullmove_number(),
            first_turn: record.initial().turn(),
            sans: record.san_moves(),
        }
    }

    /// A game in one of the other variants.
    pub fn of_variant(record: &VariantRecord) -> PgnMoves {
        PgnMoves {
            variant: pgn_name(record.variant()),
            initial_fen: record.initial_fen().map(str::to_owned),
            first_number: record.initial_move_number(),
            first_turn: record.initial_turn(),
            sans: record.san_moves(),
        }
    }
}

/// What is known of each ply besides its move, and which of it the
/// comments say.
#[derive(Clone, Copy, Debug, Default)]
pub struct Notes<'a> {
    /// `engine[i]`: what our engine said of ply `i`, if it was ours.
    pub engine: &'a [Option<EngineNote>],
    /// `clocks[i]`: the mover's clock after ply `i`, where known.
    pub clocks: &'a [Option<Duration>],
    /// What the comments say (`bot.pgn_comments`).
    pub say: &'a [PgnComment],
}

impl Notes<'_> {
    /// The comment after ply `i`, if it has anything to say: the
    /// commands first (`[%eval]`, `[%clk]`, as lichess.org writes them),
    /// then the depth and the line. In the pieces a line may break
    /// between: a command is never cut.
    fn comment(&self, i: usize) -> Option<Vec<String>> {
        let engine = self.engine.get(i).and_then(Option::as_ref);
        let clock = self.clocks.get(i).copied().flatten();
        let says = |what| self.say.contains(&what);
        let mut parts = Vec::new();
        if let Some(note) = engine.filter(|_| says(PgnComment::Eval)) {
            parts.push(match note.eval {
                Eval::Cp(cp) => format!("[%eval {:.2}]", f64::from(cp) / 100.0),
                Eval::Mate(n) => format!("[%eval #{n}]"),
            });
        }
        if let Some(clock) = clock.filter(|_| says(PgnComment::Clock)) {
            parts.push(format!("[%clk {}]", clock_text(clock)));
        }
        if let Some(note) = engine.filter(|n| n.depth > 0 && says(PgnComment::Depth)) {
            parts.push(format!("depth {}", note.depth));
        }
        if let Some(note) = engine.filter(|n| !n.pv.is_empty() && says(PgnComment::Pv)) {
            parts.push("pv:".to_owned());
            parts.extend(note.pv.split_whitespace().map(str::to_owned));
        }
        // The braces hold on to the first and last pieces.
        let first = parts.first_mut()?;
        *first = format!("{{ {first}");
        if let Some(last) = parts.last_mut() {
            last.push_str(" }");
        }
        Some(parts)
    }
}

/// `h:mm:ss`, whole seconds (tenths dropped).
fn clock_text(clock: Duration) -> String {
    let s = clock.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The PGN of a game, with the comments `notes` makes; it ends with a
/// blank line, so that games written one after another stay apart.
pub fn write_pgn(headers: &PgnHeaders, moves: &PgnMoves, notes: &Notes) -> String {
    let mut out = String::new();
    let tag = |out: &mut String, name: &str, value: &str| {
        let value = value.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = writeln!(out, "[{name} \"{value}\"]");
    };
    tag(&mut out, "Event", &headers.event);
    tag(&mut out, "Site", &headers.site);
    tag(&mut out, "Date", &headers.date);
    tag(&mut out, "Round", "-");
    tag(&mut out, "White", &headers.white);
    tag(&mut out, "Black", &headers.black);
    tag(&mut out, "Result", &headers.result);
    if let Some(elo) = headers.white_elo {
        tag(&mut out, "WhiteElo", &elo.to_string());
    }
    if let Some(elo) = headers.black_elo {
        tag(&mut out, "BlackElo", &elo.to_string());
    }
    tag(&mut out, "TimeControl", &headers.time_control);
    if let Some(variant) = moves.variant {
        tag(&mut out, "Variant", variant);
    }
    if let Some(fen) = &moves.initial_fen {
        tag(&mut out, "SetUp", "1");
        tag(&mut out, "FEN", fen);
    }
    if let Some(opening) = &headers.opening {
        tag(&mut out, "ECO", opening.eco);
        tag(&mut out, "Opening", opening.name);
    }
    if let Some(t) = &headers.termination {
        tag(&mut out, "Termination", t);
    }
    out.push('\n');

    let mut tokens = Vec::new();
    let mut number = moves.first_number;
    let mut turn = moves.first_turn;
    // After a comment, Black's move is numbered again (`1... e5`).
    let mut renumber = true;
    for (i, san) in moves.sans.iter().cloned().enumerate() {
        match turn {
            Color::White => tokens.push(format!("{number}.")),
            Color::Black if renumber => tokens.push(format!("{number}...")),
            Color::Black => {}
        }
        tokens.push(san);
        let comment = notes.comment(i);
        renumber = comment.is_some();
        tokens.extend(comment.into_iter().flatten());
        if turn == Color::Black {
            number += 1;
        }
        turn = !turn;
    }
    tokens.push(headers.result.clone());

    // Wrap at 80 columns.
    let mut line_len = 0;
    for t in tokens {
        if line_len > 0 && line_len + 1 + t.len() > 80 {
            out.push('\n');
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(&t);
        line_len += t.len();
    }
    out.push_str("\n\n");
    out
}

/// The file in `dir` that a game's PGN goes to: `<game id>.pgn`,
/// `<opponent>.pgn` (the name with anything but letters, digits, `-` and
/// `_` as `_`) or `games.pgn`.
pub fn file_for(dir: &Path, file: PgnFile, game_id: &str, opponent: &str) -> PathBuf {
    let name = match file {
        PgnFile::Game => game_id.to_owned(),
        PgnFile::Opponent => opponent
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect(),
        PgnFile::All => "games".to_owned(),
    };
    let name = if name.is_empty() { "opponent" } else { &name };
    dir.join(format!("{name}.pgn"))
}

/// Games appending to the files at once take turns here, so that two
/// games ending together never mix their lines.
static APPENDING: Mutex<()> = Mutex::new(());

/// Writes a game's PGN `text` to `path` (its directory made if need be):
/// as the whole file when `file` is [`PgnFile::Game`], else appended in
/// one write, after a blank line if the file does not end with one.
pub async fn save(path: PathBuf, file: PgnFile, text: String) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    if file == PgnFile::Game {
        return tokio::fs::write(&path, text).await;
    }
    tokio::task::spawn_blocking(move || {
        let _turn = APPENDING.lock().unwrap_or_else(|e| e.into_inner());
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)?;
        let len = f.metadata()?.len();
        let mut tail = Vec::new();
        if len > 0 {
            f.seek(SeekFrom::Start(len.saturating_sub(2)))?;
            f.read_to_end(&mut tail)?;
        }
        let gap = match tail.as_slice() {
            [] | [.., b'\n', b'\n'] => "",
            [.., b'\n'] => "\n",
            _ => "\n\n",
        };
        f.write_all(format!("{gap}{text}").as_bytes())
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> PgnHeaders {
        PgnHeaders {
            event: "Rated blitz game".into(),
            site: "https://lichess.org/abcd1234".into(),
            date: "2026.11.21".into(),
            white: "kaissa".into(),
            black: "Opp \"quoted\"".into(),
            white_elo: Some(2000),
            black_elo: None,
            result: "1-0".into(),
            time_control: "180+2".into(),
            opening: None,
            termination: Some("Normal".into()),
        }
    }

    const ALL: [PgnComment; 4] = [
        PgnComment::Eval,
        PgnComment::Clock,
        PgnComment::Depth,
        PgnComment::Pv,
    ];

    /// Fool's mate, our engine on White's moves; Black's first clock
    /// unknown.
    fn fools_mate() -> (GameRecord, Vec<Option<EngineNote>>, Vec<Option<Duration>>) {
        let mut r = GameRecord::new("startpos", false).unwrap();
        r.sync("f2f3 e7e5 g2g4 d8h4").unwrap();
        let note = |eval, depth, pv: &str| {
            Some(EngineNote {
                eval,
                depth,
                pv: pv.to_owned(),
            })
        };
        let engine = vec![
            note(Eval::Cp(-35), 12, "f3 e5 g4"),
            None,
            note(Eval::Mate(-1), 0, ""),
            None,
        ];
        let s = Duration::from_secs;
        let clocks = vec![
            Some(s(180)),
            None,
            Some(s(3725) + Duration::from_millis(900)),
            Some(s(9)),
        ];
        (r, engine, clocks)
    }

    #[test]
    fn tags_and_evals() {
        let (r, engine, _) = fools_mate();
        let notes = Notes {
            engine: &engine,
            say: &[PgnComment::Eval],
            ..Notes::default()
        };
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &notes);
        assert!(pgn.contains("[Black \"Opp \\\"quoted\\\"\"]"), "{pgn}");
        assert!(pgn.contains("[WhiteElo \"2000\"]"));
        assert!(!pgn.contains("BlackElo"));
        assert!(!pgn.contains("[FEN"));
        assert!(!pgn.contains("[ECO"));
        assert!(
            pgn.contains("1. f3 { [%eval -0.35] } 1... e5 2. g4 { [%eval #-1] } 2... Qh4# 1-0"),
            "{pgn}"
        );
    }

    #[test]
    fn comments_say_what_is_asked() {
        let (r, engine, clocks) = fools_mate();
        let moves = PgnMoves::of_chess(&r);
        let text = |say: &[PgnComment]| {
            let notes = Notes {
                engine: &engine,
                clocks: &clocks,
                say,
            };
            let pgn = write_pgn(&headers(), &moves, &notes);
            pgn.split("\n\n").nth(1).unwrap().replace('\n', " ")
        };
        assert_eq!(
            text(&ALL),
            "1. f3 { [%eval -0.35] [%clk 0:03:00] depth 12 pv: f3 e5 g4 } 1... e5 2. g4 \
             { [%eval #-1] [%clk 1:02:05] } 2... Qh4# { [%clk 0:00:09] } 1-0"
        );
        assert_eq!(text(&[]), "1. f3 e5 2. g4 Qh4# 1-0");
        assert_eq!(
            text(&[PgnComment::Clock]),
            "1. f3 { [%clk 0:03:00] } 1... e5 2. g4 { [%clk 1:02:05] } 2... Qh4# \
             { [%clk 0:00:09] } 1-0"
        );
        assert_eq!(
            text(&[PgnComment::Pv, PgnComment::Depth]),
            "1. f3 { depth 12 pv: f3 e5 g4 } 1... e5 2. g4 Qh4# 1-0"
        );
    }

    #[test]
    fn the_opening_tags_come_after_the_time_control() {
        let (r, ..) = fools_mate();
        let headers = PgnHeaders {
            opening: Some(Opening {
                eco: "A00",
                name: "Barnes Opening: Fool's Mate",
            }),
            ..headers()
        };
        let pgn = write_pgn(&headers, &PgnMoves::of_chess(&r), &Notes::default());
        assert!(
            pgn.contains(
                "[TimeControl \"180+2\"]\n[ECO \"A00\"]\n\
                 [Opening \"Barnes Opening: Fool's Mate\"]\n[Termination \"Normal\"]\n"
            ),
            "{pgn}"
        );
    }

    #[test]
    fn black_to_move_from_a_fen_and_chess960_tags() {
        let mut r = GameRecord::new("4k3/8/8/8/8/8/4P3/4K3 b - - 0 30", false).unwrap();
        r.sync("e8d7 e2e4").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &Notes::default());
        assert!(pgn.contains("[SetUp \"1\"]"));
        assert!(pgn.contains("[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 30\"]"));
        assert!(pgn.contains("30... Kd7 31. e4 1-0"), "{pgn}");

        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let r = GameRecord::new(fen, true).unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &Notes::default());
        assert!(pgn.contains("[Variant \"Chess960\"]"));
    }

    #[test]
    fn variant_games_carry_their_tag_and_drops() {
        use crate::lichess::model::VariantKey;
        let mut r = VariantRecord::new(VariantKey::Crazyhouse, "startpos").unwrap();
        r.sync("e2e4 d7d5 e4d5 d8d5 P@e6").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_variant(&r), &Notes::default());
        assert!(pgn.contains("[Variant \"Crazyhouse\"]"), "{pgn}");
        assert!(!pgn.contains("[FEN"), "{pgn}");
        assert!(pgn.contains("1. e4 d5 2. exd5 Qxd5 3. P@e6 1-0"), "{pgn}");
        let r =
            VariantRecord::new(VariantKey::KingOfTheHill, "4k3/8/8/8/8/4K3/8/8 w - - 0 1").unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_variant(&r), &Notes::default());
        assert!(pgn.contains("[Variant \"King of the Hill\"]"), "{pgn}");
        assert!(
            pgn.contains("[FEN \"4k3/8/8/8/8/4K3/8/8 w - - 0 1\"]"),
            "{pgn}"
        );
    }

    #[test]
    fn long_games_wrap_at_80_columns() {
        let mut r = GameRecord::new("startpos", false).unwrap();
        let moves = "g1f3 g8f6 f3g1 f6g8 ".repeat(10);
        r.sync(&moves).unwrap();
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &Notes::default());
        assert!(pgn.lines().all(|l| l.len() <= 80));
        assert!(pgn.lines().filter(|l| !l.starts_with('[')).count() > 2);
        // Long comments too, never inside a command.
        let engine = vec![
            Some(EngineNote {
                eval: Eval::Cp(5),
                depth: 30,
                pv: "Nf3 Nf6 Ng1 Ng8 ".repeat(6),
            });
            40
        ];
        let clocks = vec![Some(Duration::from_secs(59)); 40];
        let notes = Notes {
            engine: &engine,
            clocks: &clocks,
            say: &ALL,
        };
        let pgn = write_pgn(&headers(), &PgnMoves::of_chess(&r), &notes);
        assert!(pgn.lines().all(|l| l.len() <= 80), "{pgn}");
        assert_eq!(pgn.matches("[%clk 0:00:59]").count(), 40, "{pgn}");
        assert_eq!(pgn.matches("[%eval 0.05]").count(), 40, "{pgn}");
    }

    #[test]
    fn files_by_game_opponent_or_all() {
        let dir = Path::new("/pgn");
        let at = |file| file_for(dir, file, "abcd1234", "Stockfish level 3");
        assert_eq!(at(PgnFile::Game), Path::new("/pgn/abcd1234.pgn"));
        assert_eq!(
            at(PgnFile::Opponent),
            Path::new("/pgn/Stockfish_level_3.pgn")
        );
        assert_eq!(at(PgnFile::All), Path::new("/pgn/games.pgn"));
        let at = file_for(dir, PgnFile::Opponent, "x", "../../etc/passwd");
        assert_eq!(at, Path::new("/pgn/______etc_passwd.pgn"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn appended_games_stay_whole_and_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("games.pgn");
        // A file left without its final blank line (edited by hand).
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = "[Event \"old\"]\n\n1. e4 *\n";
        std::fs::write(&path, old).unwrap();
        let games: Vec<String> = (0..8)
            .map(|i| format!("[Event \"{i}\"]\n\n{}*\n\n", "1. e4 e5 ".repeat(5000)))
            .collect();
        let saves: Vec<_> = games
            .iter()
            .map(|g| tokio::spawn(save(path.clone(), PgnFile::All, g.clone())))
            .collect();
        for s in saves {
            s.await.unwrap().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(&format!("{old}\n[Event")));
        for g in &games {
            assert!(text.contains(g.as_str()), "a game was cut");
        }
        let whole = old.len() + 1 + games.iter().map(String::len).sum::<usize>();
        assert_eq!(text.len(), whole);
        // One file per game: the whole file, written again.
        let own = dir.path().join("g.pgn");
        save(own.clone(), PgnFile::Game, "a\n\n".into())
            .await
            .unwrap();
        save(own.clone(), PgnFile::Game, "b\n\n".into())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&own).unwrap(), "b\n\n");
    }
}
