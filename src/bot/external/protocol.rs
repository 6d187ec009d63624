//! The text of the UCI protocol, apart from the process: bounded lines
//! read from any reader, the answer to `uci`, `info` and `bestmove`
//! lines, and the `position` and `go` commands. Nothing here panics on
//! what an engine writes.

use std::fmt::Write as _;
use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::{EngineId, Event, ExternalError, Go, Info, Score, SearchId};

/// One line without its `\n` (or `\r\n`), cut to `max` bytes, invalid
/// UTF-8 replaced; `None` at end of file. The rest of a long line is read
/// and dropped, so memory stays bounded whatever the engine writes.
pub(super) async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut any = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(any.then(|| finish_line(&line)));
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let end = newline.unwrap_or(chunk.len());
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..end.min(room)]);
        r.consume(newline.map_or(end, |i| i + 1));
        if newline.is_some() {
            return Ok(Some(finish_line(&line)));
        }
    }
}

fn finish_line(line: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(line).into_owned();
    if s.ends_with('\r') {
        s.pop();
    }
    s
}

/// The most options kept from the answer to `uci` (Stockfish lists about
/// 20, Fairy-Stockfish 30), and the most `var` values of one (Fairy-
/// Stockfish's `UCI_Variant` lists about 90): an engine that writes more
/// is not let grow the daemon's memory, on every probe, without bound.
pub(super) const MAX_OPTIONS: usize = 1024;
pub(super) const MAX_VARS: usize = 1024;

/// Reads the `id` and `option` lines of the answer to `uci`; options past
/// [`MAX_OPTIONS`] are dropped.
pub(super) fn parse_uci_line(line: &str, id: &mut EngineId) {
    let mut tokens = line.split_whitespace();
    match tokens.next() {
        Some("id") => match tokens.next() {
            Some("name") => id.name = tokens.collect::<Vec<_>>().join(" "),
            Some("author") => id.author = Some(tokens.collect::<Vec<_>>().join(" ")),
            _ => {}
        },
        Some("option") => {
            let Some((name, vars)) = parse_option(tokens) else {
                return;
            };
            if name.eq_ignore_ascii_case("UCI_Variant") {
                id.variants = vars;
            } else if name.eq_ignore_ascii_case("UCI_Chess960") {
                id.chess960 = true;
            }
            if id.options.len() < MAX_OPTIONS {
                id.options.push(name);
            }
        }
        _ => {}
    }
}

/// `name <words> type <t> [default ..] [min ..] [max ..] [var ..]*` after
/// `option`: the name and the `var` values.
fn parse_option<'a>(mut tokens: impl Iterator<Item = &'a str>) -> Option<(String, Vec<String>)> {
    if tokens.next()? != "name" {
        return None;
    }
    let mut name = Vec::new();
    for t in tokens.by_ref() {
        if t == "type" {
            break;
        }
        name.push(t);
    }
    if name.is_empty() {
        return None;
    }
    let mut vars = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for t in tokens {
        match t {
            "var" | "default" | "min" | "max" | "type" => {
                if let Some(v) = current.take()
                    && !v.is_empty()
                    && vars.len() < MAX_VARS
                {
                    vars.push(v.join(" "));
                }
                if t == "var" {
                    current = Some(Vec::new());
                }
            }
            _ => {
                if let Some(v) = &mut current {
                    v.push(t);
                }
            }
        }
    }
    if let Some(v) = current
        && !v.is_empty()
        && vars.len() < MAX_VARS
    {
        vars.push(v.join(" "));
    }
    Some((name.join(" "), vars))
}

/// The words that start a field of an `info` line (they end a `pv`).
const INFO_KEYWORDS: &[&str] = &[
    "depth",
    "seldepth",
    "time",
    "nodes",
    "pv",
    "multipv",
    "score",
    "currmove",
    "currmovenumber",
    "hashfull",
    "nps",
    "tbhits",
    "sbhits",
    "cpuload",
    "string",
    "refutation",
    "currline",
    "wdl",
];

/// The depth, score, nodes and pv of an `info` line (the words after
/// `info`). `None` for lines about none of them (`info string`,
/// `currmove`) and for secondary lines (`multipv` above 1). Fields that do
/// not parse are left out; nothing here panics.
pub(super) fn parse_info(rest: &str) -> Option<Info> {
    let mut info = Info::default();
    let mut any = false;
    let mut tokens = rest.split_whitespace().peekable();
    while let Some(t) = tokens.next() {
        match t {
            "depth" => {
                if let Some(d) = tokens.next().and_then(|v| v.parse().ok()) {
                    info.depth = d;
                    any = true;
                }
            }
            "nodes" => {
                if let Some(n) = tokens.next().and_then(|v| v.parse().ok()) {
                    info.nodes = n;
                    any = true;
                }
            }
            // A secondary line; the guard reads the number either way.
            "multipv"
                if tokens
                    .next()
                    .and_then(|v| v.parse::<u32>().ok())
                    .is_some_and(|n| n > 1) =>
            {
                return None;
            }
            "score" => {
                let kind = tokens.next();
                let value = tokens.next().and_then(|v| v.parse::<i32>().ok());
                info.score = match (kind, value) {
                    (Some("cp"), Some(v)) => Some(Score::Cp(v)),
                    (Some("mate"), Some(v)) => Some(Score::Mate(v)),
                    _ => info.score,
                };
                any |= info.score.is_some();
            }
            "pv" => {
                info.pv.clear();
                while let Some(m) = tokens.next_if(|m| !INFO_KEYWORDS.contains(m)) {
                    info.pv.push(m.to_string());
                }
                any |= !info.pv.is_empty();
            }
            // The rest of the line is text.
            "string" => break,
            _ => {}
        }
    }
    any.then_some(info)
}

/// The final event of search `id` from the words after `bestmove`.
pub(super) fn parse_bestmove(engine: &str, id: SearchId, rest: &str) -> Event {
    let mut tokens = rest.split_whitespace();
    let best = tokens.next();
    let ponder = match (tokens.next(), tokens.next()) {
        (Some("ponder"), Some(p)) if p != "(none)" && p != "0000" => Some(p.to_string()),
        _ => None,
    };
    match best {
        Some(m) if m != "(none)" && m != "0000" => Event::BestMove {
            id,
            best: m.to_string(),
            ponder,
        },
        Some(m) => Event::Failed {
            id,
            error: format!("engine {engine}: no move (bestmove {m}): it sees the game as over"),
        },
        None => Event::Failed {
            id,
            error: ExternalError::Protocol {
                engine: engine.to_string(),
                line: format!("bestmove {rest}").trim_end().to_string(),
            }
            .to_string(),
        },
    }
}

/// Refuses a `go` whose strings would break the line protocol.
pub(super) fn check_go(go: &Go) -> Result<(), String> {
    if let Some(fen) = &go.fen
        && (fen.trim().is_empty() || fen.chars().any(char::is_control))
    {
        return Err(format!("bad FEN {fen:?}"));
    }
    if let Some(m) = go
        .moves
        .iter()
        .chain(&go.searchmoves)
        .find(|m| m.is_empty() || m.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(format!("bad move {m:?}"));
    }
    Ok(())
}

pub(super) fn position_command(go: &Go) -> String {
    let mut s = match &go.fen {
        Some(fen) => format!("position fen {}", fen.trim()),
        None => "position startpos".to_string(),
    };
    if !go.moves.is_empty() {
        s.push_str(" moves");
        for m in &go.moves {
            s.push(' ');
            s.push_str(m);
        }
    }
    s
}

pub(super) fn go_command(go: &Go) -> String {
    let mut s = String::from("go");
    if go.ponder {
        s.push_str(" ponder");
    }
    for (key, value) in [
        ("wtime", go.wtime),
        ("btime", go.btime),
        ("winc", go.winc),
        ("binc", go.binc),
        ("movetime", go.movetime),
    ] {
        if let Some(d) = value {
            let _ = write!(s, " {key} {}", d.as_millis());
        }
    }
    if let Some(d) = go.depth {
        let _ = write!(s, " depth {d}");
    }
    if let Some(n) = go.nodes {
        let _ = write!(s, " nodes {n}");
    }
    // Last: the engine reads moves up to the end of the line.
    if !go.searchmoves.is_empty() {
        s.push_str(" searchmoves");
        for m in &go.searchmoves {
            s.push(' ');
            s.push_str(m);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::BufReader;

    #[test]
    fn info_lines() {
        let info = parse_info(
            "depth 12 seldepth 18 multipv 1 score cp -35 upperbound nodes 123456 nps 1000 hashfull 3 tbhits 0 time 120 pv e2e4 e7e5 g1f3",
        )
        .unwrap();
        assert_eq!(
            info,
            Info {
                depth: 12,
                score: Some(Score::Cp(-35)),
                nodes: 123456,
                pv: vec!["e2e4".into(), "e7e5".into(), "g1f3".into()],
            }
        );
        let info = parse_info("depth 3 score mate -2 lowerbound pv P@f7 e8f7").unwrap();
        assert_eq!(info.score, Some(Score::Mate(-2)));
        assert_eq!(info.pv, ["P@f7", "e8f7"]);
        // A pv followed by more fields.
        let info = parse_info("pv e2e4 e7e5 nodes 10").unwrap();
        assert_eq!((info.pv.len(), info.nodes), (2, 10));
        assert_eq!(parse_info("string NNUE evaluation enabled"), None);
        assert_eq!(parse_info("currmove e2e4 currmovenumber 1"), None);
        assert_eq!(parse_info("depth 5 multipv 2 score cp 3 pv d2d4"), None);
        for garbage in [
            "",
            "depth",
            "depth x score",
            "score cp",
            "score mate x",
            "score banana 3",
            "nodes -1",
            "depth 99999999999999999999",
            "pv",
            "\u{0}\u{fffd} depth",
        ] {
            assert_eq!(parse_info(garbage), None, "{garbage:?}");
        }
        let info = parse_info("depth 4 score cp 99999999999 nodes 7").unwrap();
        assert_eq!((info.depth, info.score, info.nodes), (4, None, 7));
    }

    #[test]
    fn bestmove_lines() {
        assert_eq!(
            parse_bestmove("e", 3, " e2e4 ponder e7e5"),
            Event::BestMove {
                id: 3,
                best: "e2e4".into(),
                ponder: Some("e7e5".into())
            }
        );
        assert_eq!(
            parse_bestmove("e", 3, " P@e4"),
            Event::BestMove {
                id: 3,
                best: "P@e4".into(),
                ponder: None
            }
        );
        assert_eq!(
            parse_bestmove("e", 1, " e2e4 ponder (none)"),
            Event::BestMove {
                id: 1,
                best: "e2e4".into(),
                ponder: None
            }
        );
        for rest in [" (none)", " 0000", "", "  "] {
            let Event::Failed { id: 4, error } = parse_bestmove("fairy", 4, rest) else {
                panic!("{rest:?} is not a move");
            };
            assert!(error.contains("fairy"), "{error}");
        }
    }

    #[test]
    fn uci_answer() {
        let mut id = EngineId::default();
        for line in [
            "Fairy-Stockfish 11.1 LB 64 by Fabian Fichter",
            "id name Fairy-Stockfish 11.1 LB 64",
            "id author Fabian Fichter",
            "option name Skill Level type spin default 20 min -20 max 20",
            "option name UCI_Chess960 type check default false",
            "option name UCI_Variant type combo default chess var 3check var crazyhouse var my variant",
            "option name",
            "option type spin",
            "option name Clear Hash type button",
        ] {
            parse_uci_line(line, &mut id);
        }
        assert_eq!(id.name, "Fairy-Stockfish 11.1 LB 64");
        assert_eq!(id.author.as_deref(), Some("Fabian Fichter"));
        assert_eq!(id.variants, ["3check", "crazyhouse", "my variant"]);
        assert!(id.chess960);
        assert_eq!(
            id.options,
            ["Skill Level", "UCI_Chess960", "UCI_Variant", "Clear Hash"]
        );
        assert!(id.has_option("skill level"));
        assert_eq!(id.variant("CrazyHouse"), Some("crazyhouse"));
        assert_eq!(id.variant("atomic"), None);
        let chess_only = EngineId::default();
        assert_eq!(chess_only.variant("chess"), Some("chess"));
        assert_eq!(chess_only.variant("crazyhouse"), None);
    }

    /// An engine that lists options without end grows nothing past the
    /// caps, and the options it needs are still read.
    #[test]
    fn a_flood_of_options_is_capped() {
        let mut id = EngineId::default();
        let vars: String = (0..5000).map(|i| format!(" var v{i}")).collect();
        parse_uci_line(
            &format!("option name UCI_Variant type combo default chess{vars}"),
            &mut id,
        );
        for i in 0..5000 {
            parse_uci_line(
                &format!("option name O{i} type check default false"),
                &mut id,
            );
        }
        parse_uci_line("option name UCI_Chess960 type check default false", &mut id);
        assert_eq!(id.variants.len(), MAX_VARS);
        assert_eq!(id.variants[0], "v0");
        assert_eq!(id.options.len(), MAX_OPTIONS);
        assert!(id.chess960, "a known option past the cap is still seen");
    }

    #[test]
    fn commands() {
        let go = Go {
            fen: Some("8/8/8/8/8/8/8/K1k5 w - - 0 1".into()),
            moves: vec!["a1a2".into(), "P@e4".into()],
            wtime: Some(Duration::from_millis(60_000)),
            btime: Some(Duration::from_secs(59)),
            winc: Some(Duration::from_secs(2)),
            binc: Some(Duration::ZERO),
            depth: Some(9),
            ponder: true,
            ..Go::default()
        };
        assert_eq!(
            position_command(&go),
            "position fen 8/8/8/8/8/8/8/K1k5 w - - 0 1 moves a1a2 P@e4"
        );
        assert_eq!(
            go_command(&go),
            "go ponder wtime 60000 btime 59000 winc 2000 binc 0 depth 9"
        );
        let go = Go {
            movetime: Some(Duration::from_millis(100)),
            nodes: Some(5000),
            ..Go::default()
        };
        assert_eq!(position_command(&go), "position startpos");
        assert_eq!(go_command(&go), "go movetime 100 nodes 5000");
        let go = Go {
            depth: Some(3),
            searchmoves: vec!["e2e4".into(), "P@e6".into()],
            ..Go::default()
        };
        assert_eq!(go_command(&go), "go depth 3 searchmoves e2e4 P@e6");
        assert!(check_go(&go).is_ok());
        for bad in [
            Go {
                moves: vec!["e2e4\nquit".into()],
                ..Go::default()
            },
            Go {
                moves: vec![String::new()],
                ..Go::default()
            },
            Go {
                fen: Some("8/8 w\n".into()),
                ..Go::default()
            },
        ] {
            assert!(check_go(&bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn lines_are_bounded() {
        let mut input = Vec::new();
        input.extend_from_slice(b"uciok\r\n");
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend_from_slice(b"\nbad \xff\xfe utf8\nlast without newline");
        let mut r = BufReader::with_capacity(1024, &input[..]);
        assert_eq!(read_line(&mut r, 50).await.unwrap().unwrap(), "uciok");
        assert_eq!(
            read_line(&mut r, 50).await.unwrap().unwrap(),
            "x".repeat(50)
        );
        let bad = read_line(&mut r, 50).await.unwrap().unwrap();
        assert!(bad.starts_with("bad ") && bad.ends_with(" utf8"), "{bad}");
        assert_eq!(
            read_line(&mut r, 50).await.unwrap().unwrap(),
            "last without newline"
        );
        assert_eq!(read_line(&mut r, 50).await.unwrap(), None);
    }
}
