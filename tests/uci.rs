//! UCI transcripts against the real binary: handshake, searches, stop,
//! bad input, no legal moves, end of input.

use crate::support::uci as uci_driver;

use std::time::Duration;
use uci_driver::Uci;

fn bestmove(lines: &[String]) -> String {
    let last = lines.last().expect("a line");
    last.split_whitespace()
        .nth(1)
        .expect("bestmove arg")
        .to_string()
}

#[test]
fn handshake_search_and_bad_input() {
    let mut e = Uci::start();
    e.send("uci");
    let lines = e.until("uciok");
    assert!(lines.iter().any(|l| l.starts_with("id name kaissa")));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name Hash type spin"))
    );
    e.send("isready");
    e.until("readyok");

    e.send("position startpos moves e2e4 e7e5");
    e.send("go depth 6");
    let lines = e.until("bestmove");
    let info = lines
        .iter()
        .find(|l| l.starts_with("info depth 6"))
        .expect("depth 6 info");
    assert!(
        info.contains(" score cp ") || info.contains(" score mate "),
        "{info}"
    );
    assert!(info.contains(" pv "));
    let m = bestmove(&lines);
    let pos = kaissa::chess::Position::startpos();
    let pos = pos.play(pos.parse_uci("e2e4", false).unwrap());
    let pos = pos.play(pos.parse_uci("e7e5", false).unwrap());
    assert!(pos.parse_uci(&m, false).is_ok(), "illegal bestmove {m}");

    // Garbage is reported and ignored.
    e.send("flibbertigibbet 42");
    e.until("info string error");
    // A bad value is reported and ignored: this one searches until stopped.
    e.send("go depth banana");
    e.until("info string error");
    e.send("stop");
    e.until("bestmove");
    // A missing value does not eat the next parameter: depth 1 holds.
    e.send("go nodes depth 1");
    e.until("info string error");
    e.until("bestmove");
    e.send("setoption name Hash value lots");
    e.until("info string error");
    e.send("position fen not/a/fen w - - 0 1");
    e.until("info string error");
    e.send("isready");
    e.until("readyok");
    // A line that is not UTF-8 (a GUI's Latin-1 path) is an error, not
    // the end of the session; so is a line of megabytes.
    e.send_bytes(b"setoption name SyzygyPath value /home/jos\xe9/tb\n");
    e.send_bytes(&[b'x'; 3 << 20]);
    e.send_bytes(b"\nisready\n");
    e.until("readyok");

    // An illegal move keeps the position reached before it.
    e.send("position startpos moves e2e4 e2e4");
    e.until("info string error");
    e.send("go depth 3");
    let m = bestmove(&e.until("bestmove"));
    let after_e4 = kaissa::chess::Position::startpos();
    let after_e4 = after_e4.play(after_e4.parse_uci("e2e4", false).unwrap());
    assert!(
        after_e4.parse_uci(&m, false).is_ok(),
        "{m} not a Black move"
    );

    // Infinite search stops on request with a legal move.
    e.send("position startpos");
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(300));
    e.send("stop");
    let m = bestmove(&e.until("bestmove"));
    assert!(
        kaissa::chess::Position::startpos()
            .parse_uci(&m, false)
            .is_ok()
    );

    // Checkmated: nothing to play.
    e.send("position fen R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1");
    e.send("go depth 5");
    assert_eq!(bestmove(&e.until("bestmove")), "0000");

    // Clock-based search answers within the budget.
    e.send("setoption name Move Overhead value 10");
    e.send("position startpos");
    e.send("go wtime 2000 btime 2000 winc 0 binc 0");
    bestmove(&e.until("bestmove"));

    // End of input while searching: the bestmove is still printed.
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(100));
    let rest = e.close();
    assert!(rest.iter().any(|l| l.starts_with("bestmove ")), "{rest:?}");
}

#[test]
fn chess960_castling_notation() {
    let mut e = Uci::start();
    e.send("setoption name UCI_Chess960 value true");
    // Only castling (king takes rook) or king moves; the king is attacked
    // along the e-file... keep it simple: a legal king-takes-rook parse.
    e.send("position fen 4k3/8/8/8/8/8/8/4K2R w K - 0 1 moves e1h1");
    e.send("d");
    let lines = e.until("info string fen");
    assert!(lines.last().unwrap().contains("5RK1"), "{lines:?}");
    e.send("quit");
    e.close();
}

#[test]
fn ponder_transcript() {
    let mut e = Uci::start();
    e.send("uci");
    let lines = e.until("uciok");
    assert!(
        lines
            .iter()
            .any(|l| l == "option name Ponder type check default false")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("option name TimeManager type combo"))
    );
    e.send("setoption name Ponder value true");
    e.send("setoption name TimeManager value fixed");
    e.send("setoption name TimeManager value sometimes");
    e.until("info string error");
    e.send("setoption name TimeManager value adaptive");

    // Our move with a ponder move, as a GUI sees it.
    e.send("position startpos moves e2e4");
    e.send("go depth 6");
    let last = e.until("bestmove").pop().expect("bestmove");
    let words: Vec<&str> = last.split_whitespace().collect();
    assert_eq!(words.len(), 4, "{last}");
    assert_eq!(words[2], "ponder");
    let (ours, reply) = (words[1], words[3]);

    // Ponder on the expected reply; a hit turns it into a clock search.
    let moves = format!("position startpos moves e2e4 {ours} {reply}");
    e.send(&moves);
    e.send("go ponder wtime 2000 btime 2000 winc 0 binc 0");
    std::thread::sleep(Duration::from_millis(300));
    e.send("isready");
    let lines = e.until("readyok");
    assert!(
        !lines.iter().any(|l| l.starts_with("bestmove")),
        "{lines:?}"
    );
    e.send("ponderhit");
    let m = bestmove(&e.until("bestmove"));
    let mut pos = kaissa::chess::Position::startpos();
    for mv in ["e2e4", ours, reply] {
        pos = pos.play(pos.parse_uci(mv, false).unwrap());
    }
    assert!(pos.parse_uci(&m, false).is_ok(), "illegal bestmove {m}");

    // A miss: stop (the ponder search answers), then the real position.
    e.send(&moves);
    e.send("go ponder wtime 2000 btime 2000");
    e.send("stop");
    let m = bestmove(&e.until("bestmove"));
    assert!(pos.parse_uci(&m, false).is_ok(), "illegal bestmove {m}");
    e.send("position startpos moves e2e4 e7e5 g1f3");
    e.send("go wtime 2000 btime 2000");
    bestmove(&e.until("bestmove"));
    e.send("quit");
    e.close();
}

#[test]
fn hash_file_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("uci table.hash");
    let mut e = Uci::start();
    e.send("setoption name Save Hash");
    e.until("info string error: set HashFile first");
    e.send(&format!("setoption name HashFile value {}", path.display()));
    e.send("setoption name Load Hash");
    let l = e.until("info string error");
    assert!(l.last().unwrap().contains("not found"), "{l:?}");
    e.send("position startpos");
    e.send("go depth 6");
    e.until("bestmove");
    e.send("setoption name Save Hash");
    let l = e.until("info string hash saved");
    assert!(l.last().unwrap().contains("16 MiB"), "{l:?}");
    e.send("setoption name Load Hash");
    e.until("info string hash loaded");
    std::fs::write(&path, b"garbage").expect("write");
    e.send("setoption name Load Hash");
    let l = e.until("info string error");
    assert!(l.last().unwrap().contains("table unchanged"), "{l:?}");
    e.send("quit");
    e.close();
}

#[test]
fn eval_file_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.nnue");
    std::fs::write(&bad, b"KAISSANN but not a net").expect("write");
    let mut e = Uci::start();
    e.send("uci");
    let l = e.until("uciok");
    assert!(
        l.iter()
            .any(|x| x == "option name EvalFile type string default <embedded>"),
        "{l:?}"
    );
    e.send("eval");
    let nnue = e.until("info string static eval").pop().unwrap();
    assert!(nnue.ends_with("nnue)"), "{nnue}");
    // A bad file: a clear error, the net in use stays.
    e.send(&format!("setoption name EvalFile value {}", bad.display()));
    let l = e.until("info string error");
    assert!(l.last().unwrap().contains("bad.nnue"), "{l:?}");
    assert!(l.last().unwrap().contains("evaluation unchanged"), "{l:?}");
    e.send("eval");
    assert_eq!(e.until("info string static eval").pop().unwrap(), nnue);
    e.send("setoption name EvalFile value classical");
    e.until("info string evaluation: classical");
    e.send("eval");
    let classical = e.until("info string static eval").pop().unwrap();
    assert!(classical.ends_with("classical)"), "{classical}");
    e.send("go depth 5");
    e.until("bestmove");
    e.send("setoption name EvalFile value <embedded>");
    e.until("info string evaluation: nnue");
    e.send("eval");
    assert_eq!(e.until("info string static eval").pop().unwrap(), nnue);
    e.send("quit");
    e.close();
}

/// The search constants are UCI options only in a `--features tune` build.
#[test]
fn tunables_are_options_only_in_a_tune_build() {
    let mut e = Uci::start();
    e.send("uci");
    let lines = e.until("uciok");
    let listed: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("option name tune_"))
        .collect();
    e.send("setoption name tune_rfp_margin value 95");
    e.send("setoption name tune_rfp_margin value 100000");
    e.send("isready");
    let replies = e.until("readyok");
    let errors: Vec<&String> = replies
        .iter()
        .filter(|l| l.starts_with("info string error"))
        .collect();
    if cfg!(feature = "tune") {
        assert!(
            listed
                .iter()
                .any(|l| l.starts_with("option name tune_rfp_margin type spin default 80 ")),
            "{listed:?}"
        );
        // The value in range is taken, the other refused with its range.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("tune_rfp_margin: expected"),
            "{errors:?}"
        );
    } else {
        assert!(listed.is_empty(), "{listed:?}");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("unknown option"), "{errors:?}");
    }
}
