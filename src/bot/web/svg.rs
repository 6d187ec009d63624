//! kaissa's drawings for the status page, as SVG text with no external
//! asset: a board from a FEN (seen from our side, the last move marked),
//! a game's evaluation graph and a rating chart. Pure: text in, text out.

use std::fmt::Write;

const SQUARE: u32 = 40;
const LIGHT: &str = "#f0d9b5";
const DARK: &str = "#b58863";
const MARK: &str = "rgba(155,199,0,0.45)";
/// A score beyond this (centipawns) is drawn at the graph's edge.
const GRAPH_CAP: i32 = 1000;

/// The board of `fen`'s placement field (any variant's: `~` marks are
/// left out; a crazyhouse pocket is drawn in a strip below the board,
/// White's on the left, Black's on the right), with `last_move`'s squares
/// (UCI, drops as `P@e4`) marked, Black at the bottom when `flipped`.
pub fn board(fen: &str, last_move: Option<&str>, flipped: bool) -> String {
    let field = fen.split_whitespace().next().unwrap_or("");
    let (placement, pocket) = match field.split_once('[') {
        Some((placement, pocket)) => (placement, Some(pocket.trim_end_matches(']'))),
        None => (field, None),
    };
    let marked = last_move.map(marked_squares).unwrap_or_default();
    let size = SQUARE * 8;
    let height = size + if pocket.is_some() { SQUARE } else { 0 };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {height}\" class=\"board\">"
    );
    if let Some(pocket) = pocket {
        let side = |white: bool| -> String {
            pocket
                .chars()
                .filter(|c| c.is_ascii_uppercase() == white)
                .filter_map(glyph)
                .collect()
        };
        let _ = write!(
            out,
            "<rect y=\"{size}\" width=\"{size}\" height=\"{SQUARE}\" fill=\"#3a3835\"/>\
             <text x=\"4\" y=\"{}\" font-size=\"28\" fill=\"#fff\" stroke=\"#000\">{}</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"28\" text-anchor=\"end\" fill=\"#000\" \
             stroke=\"#fff\" stroke-width=\"0.6\">{}</text>",
            size + SQUARE - 10,
            side(true),
            size - 4,
            size + SQUARE - 10,
            side(false)
        );
    }
    for rank in 0..8u32 {
        for file in 0..8u32 {
            let (x, y) = at(file, rank, flipped);
            let colour = if (file + rank) % 2 == 0 { DARK } else { LIGHT };
            let _ = write!(
                out,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{SQUARE}\" height=\"{SQUARE}\" fill=\"{colour}\"/>"
            );
            if marked.contains(&(file, rank)) {
                let _ = write!(
                    out,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{SQUARE}\" height=\"{SQUARE}\" fill=\"{MARK}\"/>"
                );
            }
        }
    }
    for (row, text) in placement.split('/').take(8).enumerate() {
        let rank = 7 - row as u32;
        let mut file = 0u32;
        for c in text.chars() {
            if let Some(skip) = c.to_digit(10) {
                file += skip;
                continue;
            }
            let Some(glyph) = glyph(c) else {
                continue;
            };
            if file < 8 {
                let (x, y) = at(file, rank, flipped);
                let (fill, stroke) = if c.is_ascii_uppercase() {
                    ("#fff", "#000")
                } else {
                    ("#000", "#000")
                };
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\" font-size=\"34\" text-anchor=\"middle\" \
                     fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.2\">{glyph}</text>",
                    x + SQUARE / 2,
                    y + SQUARE - 7
                );
            }
            file += 1;
        }
    }
    out.push_str("</svg>");
    out
}

/// The top-left corner of a square.
fn at(file: u32, rank: u32, flipped: bool) -> (u32, u32) {
    if flipped {
        ((7 - file) * SQUARE, rank * SQUARE)
    } else {
        (file * SQUARE, (7 - rank) * SQUARE)
    }
}

/// The filled glyph of a FEN piece letter (white pieces are drawn white
/// with a black outline).
fn glyph(c: char) -> Option<char> {
    Some(match c.to_ascii_lowercase() {
        'k' => '\u{265A}',
        'q' => '\u{265B}',
        'r' => '\u{265C}',
        'b' => '\u{265D}',
        'n' => '\u{265E}',
        'p' => '\u{265F}',
        _ => return None,
    })
}

/// The squares (file, rank) of a UCI move or drop.
fn marked_squares(mv: &str) -> Vec<(u32, u32)> {
    let square = |s: &[u8]| -> Option<(u32, u32)> {
        let (f, r) = (*s.first()?, *s.get(1)?);
        ((b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r))
            .then(|| (u32::from(f - b'a'), u32::from(r - b'1')))
    };
    let b = mv.as_bytes();
    if b.get(1) == Some(&b'@') {
        return square(&b[2..]).into_iter().collect();
    }
    [square(b), b.get(2..).and_then(square)]
        .into_iter()
        .flatten()
        .collect()
}

/// A game's evaluations (centipawns, White's view, one a ply; `None`
/// where none is known) as a graph: White's advantage above the middle,
/// capped at ±10 pawns.
pub fn eval_graph(evals: &[Option<i32>]) -> String {
    let (w, h) = (320.0, 80.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" class=\"graph\">\
         <rect width=\"{w}\" height=\"{h}\" fill=\"#333\"/>\
         <line x1=\"0\" y1=\"{}\" x2=\"{w}\" y2=\"{}\" stroke=\"#777\"/>",
        h / 2.0,
        h / 2.0
    );
    let points: Vec<String> = evals
        .iter()
        .enumerate()
        .filter_map(|(ply, e)| {
            let cp = (*e)?.clamp(-GRAPH_CAP, GRAPH_CAP);
            let x = if evals.len() > 1 {
                ply as f64 * w / (evals.len() - 1) as f64
            } else {
                0.0
            };
            let y = h / 2.0 - f64::from(cp) / f64::from(GRAPH_CAP) * (h / 2.0);
            Some(format!("{x:.1},{y:.1}"))
        })
        .collect();
    if !points.is_empty() {
        let _ = write!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#fff\" stroke-width=\"1.5\"/>",
            points.join(" ")
        );
    }
    out.push_str("</svg>");
    out
}

/// Ratings over time (Unix seconds, rating), oldest first, as a line
/// with its lowest and highest values written.
pub fn rating_chart(points: &[(u64, u32)]) -> String {
    let (w, h) = (320.0, 100.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" class=\"graph\">\
         <rect width=\"{w}\" height=\"{h}\" fill=\"#222\"/>"
    );
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        let lo = points.iter().map(|p| p.1).min().unwrap_or(0);
        let hi = points.iter().map(|p| p.1).max().unwrap_or(0).max(lo + 1);
        let span = (last.0.saturating_sub(first.0)).max(1) as f64;
        let line: Vec<String> = points
            .iter()
            .map(|&(t, r)| {
                let x = (t.saturating_sub(first.0)) as f64 / span * (w - 40.0) + 30.0;
                let y = h - 10.0 - f64::from(r - lo) / f64::from(hi - lo) * (h - 20.0);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = write!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#9bc700\" stroke-width=\"1.5\"/>\
             <text x=\"2\" y=\"12\" font-size=\"10\" fill=\"#ccc\">{hi}</text>\
             <text x=\"2\" y=\"{}\" font-size=\"10\" fill=\"#ccc\">{lo}</text>",
            line.join(" "),
            h - 4.0
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_position_has_32_pieces_and_64_squares() {
        let svg = board(
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            Some("e2e4"),
            false,
        );
        assert_eq!(svg.matches("<text").count(), 32);
        assert_eq!(svg.matches(&format!("fill=\"{MARK}\"")).count(), 2);
        assert_eq!(svg.matches("<rect").count(), 64 + 2);
        // White's king on e1, at the bottom: x 160..200, y 280..320.
        assert!(svg.contains("<text x=\"180\" y=\"313\""), "{svg}");
        // Flipped, e1 is at the top right of d... x 120, y 0.
        let flipped = board("8/8/8/8/8/8/8/4K3 w - - 0 1", None, true);
        assert!(flipped.contains("<text x=\"140\" y=\"33\""), "{flipped}");
    }

    #[test]
    fn variant_fens_and_drops_are_drawn() {
        let svg = board(
            "rnb1kbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKB~NR[Qq] w KQkq - 0 3",
            Some("Q@h5"),
            false,
        );
        // 31 pieces, and the two pockets (a queen each) below the board.
        assert_eq!(svg.matches("<text").count(), 33);
        assert!(svg.contains("viewBox=\"0 0 320 360\""), "{svg}");
        assert_eq!(
            svg.matches('\u{265B}').count(),
            1 + 2,
            "the queen on the board and two in hand"
        );
        assert_eq!(svg.matches(&format!("fill=\"{MARK}\"")).count(), 1);
        assert!(board("not a fen", Some("zz"), false).ends_with("</svg>"));
    }

    #[test]
    fn graphs_scale_and_cap() {
        let g = eval_graph(&[Some(0), None, Some(5000), Some(-1000)]);
        assert!(
            g.contains("points=\"0.0,40.0 213.3,0.0 320.0,80.0\""),
            "{g}"
        );
        assert!(!eval_graph(&[]).contains("polyline"));
        let r = rating_chart(&[(0, 1500), (100, 1600)]);
        assert!(r.contains("30.0,90.0 310.0,10.0"), "{r}");
        assert!(r.contains(">1600<") && r.contains(">1500<"));
    }
}
