//! The Texel tuner: fits every evaluation weight to game results.
//!
//! Each training position is reduced once to its trace (the coefficient
//! of every weight, White minus Black, plus phase and end-game scale), so
//! the evaluation is a dot product and its gradient is the trace itself.
//! The logistic scale K is fitted first (so the current weights are
//! judged in their own units), then the mean squared error of
//! `sigmoid(K * eval)` against the result is minimised by full-batch Adam.
//! The result is written back as Rust source (`params.rs`), so tuned
//! weights are committed and reproducible.

use crate::chess::Position;
use crate::engine::eval::{PHASE_MAX, Trace, evaluate_terms};
use crate::engine::params::WEIGHTS;
use crate::engine::weights::{MATERIAL, N_PARAMS, S, SECTIONS, eg, mg};
use crate::tools::packed;
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One position's trace, stored compactly in `Dataset`.
#[derive(Clone, Copy, Debug)]
struct Sample {
    start: u32,
    len: u16,
    phase: u8,
    /// End-game scale, out of 64.
    scale: u8,
    /// Result for White: 1, 0.5 or 0.
    result: f32,
    /// Search score for White in centipawns, if the data has one (NaN if
    /// not).
    score: f32,
    /// What the prediction is fitted to: the result, blended with the
    /// search score's win probability (`set_targets`).
    target: f32,
}

/// Traces of all training positions.
#[derive(Default)]
pub struct Dataset {
    samples: Vec<Sample>,
    idx: Vec<u16>,
    coef: Vec<i16>,
}

struct DenseTrace {
    coef: Vec<i32>,
    seen: Vec<bool>,
    touched: Vec<usize>,
}

impl Trace for DenseTrace {
    fn add(&mut self, idx: usize, c: i32) {
        if !self.seen[idx] {
            self.seen[idx] = true;
            self.touched.push(idx);
        }
        self.coef[idx] += c;
    }
}

/// Reads `FEN [1.0]` (also `[0.5]`, `[0.0]`, `[1-0]`...), optionally
/// followed by White's search score in centipawns (`FEN [1.0] 35`), EPD
/// lines with `c9 "1-0";`, or `FEN;1.0` (`scripts/datagen.py`, optionally
/// `FEN;1.0;35`); returns the position, White's result and the score if
/// present.
pub fn parse_line(line: &str) -> Option<(Position, f32, Option<i32>)> {
    let line = line.trim();
    if let Some(parsed) = parse_semicolon_line(line) {
        return Some(parsed);
    }
    let result = if line.contains("\"1-0\"") || line.contains("[1-0]") || line.contains("[1.0]") {
        1.0
    } else if line.contains("\"0-1\"") || line.contains("[0-1]") || line.contains("[0.0]") {
        0.0
    } else if line.contains("\"1/2-1/2\"") || line.contains("[1/2-1/2]") || line.contains("[0.5]") {
        0.5
    } else {
        return None;
    };
    let score = line
        .rsplit_once(']')
        .and_then(|(_, tail)| tail.trim().parse::<i32>().ok());
    let end = line.find(['[', ';', '"']).unwrap_or(line.len());
    let head = line[..end].trim_end();
    let head = head.strip_suffix(" c9").unwrap_or(head);
    let fields: Vec<&str> = head.split_whitespace().collect();
    let pos = Position::from_fen(&fields[..fields.len().min(6)].join(" "))
        .or_else(|_| Position::from_fen(&fields[..fields.len().min(4)].join(" ")))
        .ok()?;
    Some((pos, result, score))
}

/// `FEN;result` or `FEN;result;score`, result 1.0 / 0.5 / 0.0 (or 1 /
/// 0). `None` when the line is not in this format.
fn parse_semicolon_line(line: &str) -> Option<(Position, f32, Option<i32>)> {
    let mut parts = line.split(';');
    let fen = parts.next()?.trim();
    let result = match parts.next()?.trim() {
        "1.0" | "1" => 1.0,
        "0.5" => 0.5,
        "0.0" | "0" => 0.0,
        _ => return None,
    };
    let score = match parts.next().map(str::trim) {
        None | Some("") => None,
        Some(t) => Some(t.parse::<i32>().ok()?),
    };
    if parts.next().is_some() {
        return None;
    }
    let pos = Position::from_fen(fen).ok()?;
    Some((pos, result, score))
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Adds a position (skipped when in check: its static eval means
    /// little). `weights` fixes the end-game scale.
    pub fn push(&mut self, pos: &Position, result: f32, score: Option<i32>, weights: &[S]) -> bool {
        if pos.in_check() {
            return false;
        }
        let mut t = DenseTrace {
            coef: vec![0; N_PARAMS],
            seen: vec![false; N_PARAMS],
            touched: Vec::with_capacity(128),
        };
        let (_, phase, scale) = evaluate_terms(pos, weights, &mut t);
        let start = self.idx.len() as u32;
        let mut len = 0u16;
        t.touched.sort_unstable();
        for &i in &t.touched {
            let c = t.coef[i];
            if c != 0 {
                self.idx.push(i as u16);
                self.coef
                    .push(c.clamp(i16::MIN as i32, i16::MAX as i32) as i16);
                len += 1;
            }
        }
        self.samples.push(Sample {
            start,
            len,
            phase: phase as u8,
            scale: scale as u8,
            result,
            score: score.map_or(f32::NAN, |s| s as f32),
            target: result,
        });
        true
    }

    /// Sets each sample's target to `lambda * result + (1 - lambda) *
    /// sigmoid(k * score)` (just the result where there is no score).
    pub fn set_targets(&mut self, k: f64, lambda: f64) {
        for s in &mut self.samples {
            s.target = if s.score.is_nan() {
                s.result
            } else {
                (lambda * s.result as f64 + (1.0 - lambda) * sigmoid(k * s.score as f64)) as f32
            };
        }
    }

    fn terms(&self, s: &Sample) -> impl Iterator<Item = (usize, f64)> + '_ {
        let a = s.start as usize;
        let b = a + s.len as usize;
        self.idx[a..b]
            .iter()
            .zip(&self.coef[a..b])
            .map(|(&i, &c)| (i as usize, c as f64))
    }

    /// Weights of the mid-game and end-game halves of this sample.
    fn taper(s: &Sample) -> (f64, f64) {
        let ph = s.phase as f64 / PHASE_MAX as f64;
        (ph, (1.0 - ph) * s.scale as f64 / 64.0)
    }

    fn eval(&self, s: &Sample, w: &[[f64; 2]]) -> f64 {
        let (fm, fe) = Self::taper(s);
        let (mut m, mut e) = (0.0, 0.0);
        for (i, c) in self.terms(s) {
            m += w[i][0] * c;
            e += w[i][1] * c;
        }
        m * fm + e * fe
    }

    /// Mean squared error of the predicted score against the results.
    pub fn error(&self, w: &[[f64; 2]], k: f64) -> f64 {
        let sum: f64 = self
            .samples
            .iter()
            .map(|s| {
                let p = sigmoid(k * self.eval(s, w));
                (p - s.target as f64).powi(2)
            })
            .sum();
        sum / self.samples.len().max(1) as f64
    }

    fn gradient(&self, w: &[[f64; 2]], k: f64, grad: &mut [[f64; 2]]) {
        for g in grad.iter_mut() {
            *g = [0.0; 2];
        }
        for s in &self.samples {
            let p = sigmoid(k * self.eval(s, w));
            let d = (p - s.target as f64) * p * (1.0 - p);
            let (fm, fe) = Self::taper(s);
            for (i, c) in self.terms(s) {
                grad[i][0] += d * c * fm;
                grad[i][1] += d * c * fe;
            }
        }
        let n = self.samples.len().max(1) as f64;
        for g in grad.iter_mut() {
            g[0] *= 2.0 * k / n;
            g[1] *= 2.0 * k / n;
        }
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Unpacks weights into (mg, eg) floats.
pub fn unpack(weights: &[S]) -> Vec<[f64; 2]> {
    weights
        .iter()
        .map(|&s| [mg(s) as f64, eg(s) as f64])
        .collect()
}

/// The K that best maps the current evaluation onto results (ternary
/// search; the error is unimodal in K).
pub fn fit_k(ds: &Dataset, w: &[[f64; 2]]) -> f64 {
    let (mut lo, mut hi) = (0.0005f64, 0.02f64);
    for _ in 0..60 {
        let a = lo + (hi - lo) / 3.0;
        let b = hi - (hi - lo) / 3.0;
        if ds.error(w, a) < ds.error(w, b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    (lo + hi) / 2.0
}

/// Settings of `optimise`.
pub struct TuneConfig {
    pub epochs: usize,
    /// Adam step size (centipawns).
    pub lr: f64,
    /// L2 pull towards the starting weights (per centipawn squared); keeps
    /// rarely seen weights (odd piece-square entries) from running wild.
    pub l2: f64,
}

/// Minimises the training error (plus the L2 term) by Adam; `frozen`
/// parameters keep their values. Every 50 epochs `report` gets (epoch,
/// training error, validation error) and the weights with the lowest
/// validation error so far are kept (early stopping); with an empty
/// validation set the last weights are kept.
pub fn optimise(
    train: &Dataset,
    valid: &Dataset,
    w: &mut [[f64; 2]],
    k: f64,
    cfg: &TuneConfig,
    frozen: &[bool],
    report: &mut dyn FnMut(usize, f64, f64),
) {
    let n = w.len();
    let start: Vec<[f64; 2]> = w.to_vec();
    let mut best = w.to_vec();
    let mut best_valid = if valid.is_empty() {
        f64::INFINITY
    } else {
        valid.error(w, k)
    };
    let mut grad = vec![[0.0; 2]; n];
    let mut m = vec![[0.0; 2]; n];
    let mut v = vec![[0.0; 2]; n];
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
    for epoch in 1..=cfg.epochs {
        train.gradient(w, k, &mut grad);
        let t = epoch as i32;
        for i in 0..n {
            if frozen[i] {
                continue;
            }
            for h in 0..2 {
                let g = grad[i][h] + 2.0 * cfg.l2 * (w[i][h] - start[i][h]);
                m[i][h] = b1 * m[i][h] + (1.0 - b1) * g;
                v[i][h] = b2 * v[i][h] + (1.0 - b2) * g * g;
                let mh = m[i][h] / (1.0 - b1.powi(t));
                let vh = v[i][h] / (1.0 - b2.powi(t));
                w[i][h] -= cfg.lr * mh / (vh.sqrt() + eps);
            }
        }
        if epoch % 50 == 0 || epoch == cfg.epochs {
            let ve = if valid.is_empty() {
                f64::NAN
            } else {
                valid.error(w, k)
            };
            if ve < best_valid {
                best_valid = ve;
                best.copy_from_slice(w);
            }
            report(epoch, train.error(w, k), ve);
        }
    }
    if !valid.is_empty() {
        w.copy_from_slice(&best);
    }
}

/// Rust source of `params.rs` for weights `w`, with `header` lines
/// (commands, data, error) in the module doc.
pub fn params_source(w: &[[f64; 2]], header: &[String]) -> String {
    let mut out = String::new();
    out.push_str("//! Evaluation weights (mid-game, end-game), laid out as `weights::SECTIONS`\n");
    out.push_str("//! says. This file is written by `kaissa tune`; edit by re-tuning.\n//!\n");
    for h in header {
        let _ = writeln!(out, "//! {h}");
    }
    out.push_str("\nuse super::weights::{N_PARAMS, S, s};\n\n#[rustfmt::skip]\n");
    out.push_str("pub static WEIGHTS: [S; N_PARAMS] = [\n");
    for &(name, off, len) in SECTIONS {
        let _ = writeln!(out, "    // {name}");
        for row in (off..off + len).collect::<Vec<_>>().chunks(8) {
            out.push_str("   ");
            for &i in row {
                let _ = write!(
                    out,
                    " s({}, {}),",
                    w[i][0].round() as i32,
                    w[i][1].round() as i32
                );
            }
            out.push('\n');
        }
    }
    out.push_str("];\n");
    out
}

/// `kaissa tune` settings beyond the optimiser's.
pub struct TuneOptions {
    /// Weight of the game result against the search score in the target.
    pub lambda: f64,
    /// Hold out a tenth of the data and keep the best weights on it.
    pub validate: bool,
    /// Use at most this many positions.
    pub limit: Option<usize>,
    /// Section name prefixes whose weights stay fixed.
    pub freeze: Vec<String>,
}

/// `kaissa tune`: reads the training files (text lines, see [`parse_line`],
/// or `kaissa datagen` records, `.bin`), fits the weights and writes them
/// to `out` as `params.rs` source, with `note` and the command in its
/// header.
pub fn run(
    data: &[PathBuf],
    cfg: &TuneConfig,
    opts: &TuneOptions,
    out: &Path,
    note: &[String],
) -> Result<()> {
    let TuneOptions {
        lambda,
        validate,
        limit,
        ..
    } = *opts;
    let mut ds = Dataset::default();
    let mut valid = Dataset::default();
    let mut skipped = 0usize;
    let mut line_no = 0usize;
    'files: for path in data {
        if path.extension().is_some_and(|e| e == "bin") {
            // `kaissa datagen` records; the validation split is by game.
            let bytes = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
            let (records, bad) = packed::read_records(&bytes);
            skipped += bad;
            for r in records {
                let set = if validate && r.game % 10 == 9 {
                    &mut valid
                } else {
                    &mut ds
                };
                let score = Some(i32::from(r.score));
                match r.to_position() {
                    Some(pos) if set.push(&pos, r.result.white_score(), score, &WEIGHTS) => {}
                    _ => skipped += 1,
                }
                if limit.is_some_and(|l| ds.len() + valid.len() >= l) {
                    break 'files;
                }
            }
            continue;
        }
        let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
        for line in std::io::BufReader::new(f).lines() {
            let line = line?;
            line_no += 1;
            let set = if validate && (line_no / 100) % 10 == 9 {
                &mut valid
            } else {
                &mut ds
            };
            match parse_line(&line) {
                Some((pos, r, score)) if set.push(&pos, r, score, &WEIGHTS) => {}
                _ => skipped += 1,
            }
            if limit.is_some_and(|l| ds.len() + valid.len() >= l) {
                break 'files;
            }
        }
    }
    anyhow::ensure!(!ds.is_empty(), "no usable positions");
    eprintln!(
        "{} training and {} validation positions ({skipped} lines skipped)",
        ds.len(),
        valid.len()
    );
    let mut w = unpack(&WEIGHTS);
    // K is fitted on the results alone, then the targets are blended.
    let k = fit_k(&ds, &w);
    ds.set_targets(k, lambda);
    valid.set_targets(k, lambda);
    let start_err = ds.error(&w, k);
    if valid.is_empty() {
        eprintln!("K = {k:.6}, error {start_err:.6}");
    } else {
        eprintln!(
            "K = {k:.6}, error {start_err:.6} validation {:.6}",
            valid.error(&w, k)
        );
    }
    // The king's material is a constant: keep it at zero.
    let mut frozen = vec![false; N_PARAMS];
    frozen[MATERIAL + 5] = true;
    for prefix in &opts.freeze {
        let mut matched = false;
        for &(name, start, len) in SECTIONS {
            if name.starts_with(prefix.as_str()) {
                frozen[start..start + len].fill(true);
                matched = true;
            }
        }
        anyhow::ensure!(
            matched,
            "--freeze {prefix:?}: no section name starts with it"
        );
    }
    let t0 = Instant::now();
    optimise(&ds, &valid, &mut w, k, cfg, &frozen, &mut |e, err, verr| {
        eprintln!(
            "epoch {e:>5} error {err:.6} validation {verr:.6} ({:.0} s)",
            t0.elapsed().as_secs_f64()
        );
    });
    let end_err = ds.error(&w, k);
    let cmd: Vec<String> = std::env::args().collect();
    let mut header: Vec<String> = note.to_vec();
    header.extend([
        format!("Tuned by: {}", cmd.join(" ")),
        format!(
            "{} training + {} validation positions, K = {k:.6}, error {start_err:.6} -> {end_err:.6}",
            ds.len(),
            valid.len()
        ),
    ]);
    let mut f = BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    f.write_all(params_source(&w, &header).as_bytes())?;
    f.flush()?;
    println!(
        "wrote {} (error {start_err:.6} -> {end_err:.6})",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::eval::{evaluate, taper};
    use crate::engine::params::WEIGHTS;

    #[test]
    fn parses_common_formats() {
        let (p, r, sc) = parse_line("8/8/4k3/8/8/3K4/8/7R w - - 0 1 [1.0]").unwrap();
        assert_eq!((r, sc), (1.0, None));
        assert!(
            p.pieces(crate::chess::Color::White, crate::chess::Role::Rook)
                .any()
        );
        let (_, r, _) = parse_line("8/8/4k3/8/8/3K4/8/7R b - - c9 \"0-1\";").unwrap();
        assert_eq!(r, 0.0);
        let (_, r, sc) = parse_line("8/8/4k3/8/8/3K4/8/7R w - - 3 40 [0.5] -35").unwrap();
        assert_eq!((r, sc), (0.5, Some(-35)));
        assert!(parse_line("8/8/4k3/8/8/3K4/8/7R w - - 0 1").is_none());
        assert!(parse_line("garbage [1.0]").is_none());
        // scripts/datagen.py: FEN;result, optionally ;score.
        let (p, r, sc) =
            parse_line("rnb1kb1r/pp3pp1/3qpn2/2pp3p/3P4/6P1/PPPKPPBP/RNBQ2NR w kq - 0 7;0.0\n")
                .unwrap();
        assert_eq!((r, sc, p.turn()), (0.0, None, crate::chess::Color::White));
        let (_, r, sc) = parse_line("8/8/4k3/8/8/3K4/8/7R b - - 0 1;0.5;-12").unwrap();
        assert_eq!((r, sc), (0.5, Some(-12)));
        let (_, r, _) = parse_line("8/8/4k3/8/8/3K4/8/7R b - - 0 1;1.0").unwrap();
        assert_eq!(r, 1.0);
        assert!(parse_line("8/8/4k3/8/8/3K4/8/7R b - - 0 1;0.7").is_none());
        assert!(parse_line("8/8/4k3/8/8/3K4/8/7R b - - 0 1;1.0;x").is_none());
        assert!(parse_line("8/8/4k9/8/8/3K4/8/7R b - - 0 1;1.0").is_none());
        assert!(parse_line(";1.0").is_none());
        assert!(parse_line("").is_none());
    }

    #[test]
    fn trace_matches_the_engine_eval() {
        let mut ds = Dataset::default();
        let fens = [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 b - - 0 1",
            "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP1BBPPP/R2QK2R b KQ - 0 8",
        ];
        let w = unpack(&WEIGHTS);
        for fen in fens {
            let pos = Position::from_fen(fen).unwrap();
            assert!(ds.push(&pos, 0.5, None, &WEIGHTS));
            let s = *ds.samples.last().unwrap();
            let white = ds.eval(&s, &w);
            let (score, phase, scale) =
                evaluate_terms(&pos, &WEIGHTS, &mut crate::engine::eval::NoTrace);
            let exact = taper(score, phase, scale) as f64;
            assert!((white - exact).abs() <= 1.5, "{fen}: {white} vs {exact}");
            let stm = evaluate(&pos) as f64;
            let stm_white = if pos.turn() == crate::chess::Color::White {
                stm
            } else {
                -stm
            };
            assert_eq!(stm_white, exact);
        }
    }

    #[test]
    fn descent_lowers_the_error() {
        let mut ds = Dataset::default();
        // White wins whenever it has the extra knight.
        for (fen, r) in [
            ("4k3/8/8/8/8/8/3N4/4K3 w - - 0 1", 1.0),
            ("4k3/8/8/8/8/8/8/4K3 w - - 0 1", 0.5),
            ("4k3/3n4/8/8/8/8/8/4K3 w - - 0 1", 0.0),
        ] {
            ds.push(&Position::from_fen(fen).unwrap(), r, Some(0), &WEIGHTS);
        }
        let mut w = unpack(&WEIGHTS);
        let before = ds.error(&w, 0.01);
        ds.set_targets(0.01, 1.0);
        let frozen = vec![false; w.len()];
        let cfg = TuneConfig {
            epochs: 100,
            lr: 2.0,
            l2: 0.0,
        };
        let empty = Dataset::default();
        optimise(&ds, &empty, &mut w, 0.01, &cfg, &frozen, &mut |_, _, _| {});
        assert!(ds.error(&w, 0.01) < before);
        let src = params_source(&w, &["test".into()]);
        assert!(src.contains("pub static WEIGHTS"));
        assert_eq!(src.matches(" s(").count(), N_PARAMS);
    }
}
