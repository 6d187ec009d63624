//! The NNUE trainer: `kaissa train`. Fits the 768 -> N x 2 -> 1 SCReLU
//! net of `engine::nnue` to `datagen` records in f32 and writes it
//! quantized in the net file format.
//!
//! Target: a blend of the search score and the game result, both from
//! the side to move's view, `(1 - lambda) * sigmoid(score / K) + lambda *
//! result`; loss: the squared error of `sigmoid(net)` against it. K is
//! fitted to the data unless given (`fit_k`: the K with which the scores
//! best predict the results), so the two parts of the target agree on
//! what a centipawn is worth, and it goes into the net file: the engine
//! reads `net * K` centipawns, the scale of the data's scores. AdamW with
//! a cosine learning-rate decay, weights clipped to `WEIGHT_CLIP` after
//! each step so quantization cannot overflow.
//!
//! The first layer is sparse: a position's gradient touches only the rows
//! of its (at most 32 x 2) active features. A batch is split into one
//! contiguous chunk per thread, each with its own gradient buffer, summed
//! in thread order: the result is deterministic for a seed and a thread
//! count. Validation holds out whole games, by a hash of (file, game).
//! A checkpoint (f32 weights, Adam moments, epoch, K, input layout) resumes a run.

use super::chunk::{self, Filter};
use super::packed::{PackedBoard, read_records};
use crate::chess::{Color, Role, Square};
use crate::engine::nnue::{
    HIDDEN, INPUTS, QA, QB, SCALES, WEIGHT_CLIP, encode_net, feature_index, king_flip,
    output_bucket,
};
use anyhow::{Context, Result};
use fastrand::Rng;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

const H: usize = HIDDEN;
/// Offsets in the flat parameter vector: feature weights and biases,
/// then each output bucket's 2H weights, then the buckets' biases.
const FW: usize = 0;
const FB: usize = FW + INPUTS * H;
const OW: usize = FB + H;

/// Where the output biases start in a net of `buckets` buckets.
const fn output_biases(buckets: usize) -> usize {
    OW + buckets * 2 * H
}

/// Number of parameters of a net of `buckets` output buckets.
pub const fn params(buckets: usize) -> usize {
    output_biases(buckets) + buckets
}

const CHECKPOINT_MAGIC: &[u8; 8] = b"KAISSACK";
/// Version 2 records K and the input layout, so a resumed run trains
/// toward the targets it began with.
const CHECKPOINT_VERSION: u32 = 2;
const CHECKPOINT_HEADER: usize = 40;

/// Settings of a training run.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainConfig {
    pub epochs: usize,
    pub batch_size: usize,
    /// Peak AdamW learning rate (decays to 1% of it, cosine).
    pub lr: f32,
    pub weight_decay: f32,
    /// Weight of the game result in the target (0: score only).
    pub lambda: f32,
    /// Centipawns per unit of the sigmoid's argument (the net file's
    /// output scale); `None`: fitted to the training positions when they
    /// are loaded (`fit_k`).
    pub k: Option<u32>,
    /// Games held out for validation, per mille.
    pub val_permille: u64,
    pub seed: u64,
    pub threads: usize,
    /// Show each training position mirrored left-right half the time
    /// (chosen afresh each epoch): the net's inputs have no castling
    /// rights, so a mirrored position is as good a sample, and it halves
    /// the overfitting of small data sets.
    pub mirror: bool,
    /// Which positions of chunk games to learn from.
    pub filter: Filter,
    /// Output buckets: 1, or `OUTPUT_BUCKETS` chosen by the number of
    /// pieces (`nnue::output_bucket`).
    pub buckets: usize,
    /// King-mirrored inputs (`nnue::king_flip`): each perspective sees
    /// its king on files a-d.
    pub king_mirror: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            epochs: 10,
            batch_size: 16_384,
            lr: 0.001,
            weight_decay: 0.01,
            lambda: 0.25,
            k: Some(400),
            val_permille: 50,
            seed: 1,
            threads: 1,
            mirror: false,
            filter: Filter::default(),
            buckets: 1,
            king_mirror: false,
        }
    }
}

/// Why training could not go on.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("checkpoint {path}: {why}")]
    Checkpoint { path: String, why: &'static str },
    #[error("no training positions (after holding out the validation games)")]
    NoData,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> TrainError + '_ {
    move |source| TrainError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Training and validation positions.
#[derive(Default)]
pub struct Data {
    pub train: Vec<PackedBoard>,
    pub val: Vec<PackedBoard>,
}

impl Data {
    /// Adds the records of file number `file`, holding out the games
    /// whose hash of (seed, file, game) falls below `val_permille`.
    pub fn add_file(&mut self, file: u64, records: Vec<PackedBoard>, cfg: &TrainConfig) {
        for r in records {
            let h = Rng::with_seed(cfg.seed ^ file.rotate_left(32) ^ r.game as u64).u64(..);
            if h % 1000 < cfg.val_permille {
                self.val.push(r);
            } else {
                self.train.push(r);
            }
        }
    }
}

/// What an epoch did.
#[derive(Clone, Copy, Debug)]
pub struct EpochReport {
    pub epoch: usize,
    pub train_loss: f64,
    pub val_loss: f64,
    pub lr: f32,
}

/// A record as the net sees it: active features of both perspectives
/// (side to move first), where its output bucket's weights and bias are,
/// and the target.
struct Sample {
    us: [u16; 32],
    them: [u16; 32],
    n: usize,
    /// Offsets of the bucket's output weights and bias.
    ow: usize,
    ob: usize,
    target: f32,
}

/// `r` as a sample; `mirror`: with the files mirrored (a <-> h).
fn sample(r: &PackedBoard, cfg: &TrainConfig, mirror: bool) -> Sample {
    let stm = r.side_to_move();
    let files = if mirror { 7 } else { 0 };
    let mut s = Sample {
        us: [0; 32],
        them: [0; 32],
        n: 0,
        ow: 0,
        ob: 0,
        target: 0.0,
    };
    let mut flips = [0u8; 2];
    for (sq, piece) in r.pieces().take(32) {
        let sq = Square::new(sq.index() as u8 ^ files);
        if piece.role == Role::King {
            flips[piece.color.index()] = king_flip(sq);
        }
        s.us[s.n] = feature_index(stm, piece, sq, 0) as u16;
        s.them[s.n] = feature_index(!stm, piece, sq, 0) as u16;
        s.n += 1;
    }
    if cfg.king_mirror {
        // A flip changes only the file bits of the square, below the
        // piece's multiple of 64: the index of a flipped square is the
        // plain index xor the flip.
        let (f_us, f_them) = (flips[stm.index()] as u16, flips[(!stm).index()] as u16);
        for i in 0..s.n {
            s.us[i] ^= f_us;
            s.them[i] ^= f_them;
        }
    }
    let bucket = output_bucket(s.n as u32, cfg.buckets);
    s.ow = OW + bucket * 2 * H;
    s.ob = output_biases(cfg.buckets) + bucket;
    let (score, result) = score_and_result(r);
    s.target = (1.0 - cfg.lambda) * sigmoid(score as f32 / cfg.k_cp()) + cfg.lambda * result as f32;
    s
}

impl TrainConfig {
    /// K in centipawns (400 before it is fitted).
    fn k_cp(&self) -> f32 {
        self.k.unwrap_or(400) as f32
    }
}

/// The side to move's score and result of a record.
fn score_and_result(r: &PackedBoard) -> (f64, f64) {
    match r.side_to_move() {
        Color::White => (r.score as f64, r.result.white_score() as f64),
        Color::Black => (-(r.score as f64), 1.0 - r.result.white_score() as f64),
    }
}

/// The mean squared error of `sigmoid(score / k)` against the results.
fn result_error(set: &[PackedBoard], k: f64) -> f64 {
    let sum: f64 = set
        .iter()
        .map(|r| {
            let (score, result) = score_and_result(r);
            let p = 1.0 / (1.0 + (-score / k).exp());
            (p - result) * (p - result)
        })
        .sum();
    sum / set.len().max(1) as f64
}

/// The K (centipawns, within the net file's `SCALES`) with which the
/// records' search scores best predict their games' results: a golden
/// section search of `result_error`, which is unimodal in K (too small a
/// K claims wins the games did not bring, too large a K claims draws).
pub fn fit_k(set: &[PackedBoard]) -> u32 {
    let (mut lo, mut hi) = (*SCALES.start() as f64, *SCALES.end() as f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut fa, mut fb) = (result_error(set, a), result_error(set, b));
    while hi - lo > 0.5 {
        if fa < fb {
            (hi, b, fb) = (b, a, fa);
            a = hi - g * (hi - lo);
            fa = result_error(set, a);
        } else {
            (lo, a, fa) = (a, b, fb);
            b = lo + g * (hi - lo);
            fb = result_error(set, b);
        }
    }
    (((lo + hi) / 2.0).round() as u32).clamp(*SCALES.start(), *SCALES.end())
}

#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The accumulator of one perspective, before the activation.
#[inline(always)]
fn accumulate(p: &[f32], features: &[u16], acc: &mut [f32; H]) {
    acc.copy_from_slice(&p[FB..FB + H]);
    for &f in features {
        let row = &p[FW + f as usize * H..FW + (f as usize + 1) * H];
        for (a, w) in acc.iter_mut().zip(row) {
            *a += w;
        }
    }
}

/// The forward pass of one sample: both accumulators (before the
/// activation) and the net's output.
fn forward(p: &[f32], s: &Sample) -> ([[f32; H]; 2], f32) {
    let mut acc = [[0f32; H]; 2];
    accumulate(p, &s.us[..s.n], &mut acc[0]);
    accumulate(p, &s.them[..s.n], &mut acc[1]);
    let mut out = p[s.ob];
    for (half, a) in acc.iter().enumerate() {
        let w = &p[s.ow + half * H..s.ow + (half + 1) * H];
        for (x, w) in a.iter().zip(w) {
            let c = x.clamp(0.0, 1.0);
            out += c * c * w;
        }
    }
    (acc, out)
}

/// Forward (and, with `grad`, backward) pass of one sample; returns its
/// squared error.
fn step_sample(p: &[f32], s: &Sample, grad: Option<&mut [f32]>) -> f32 {
    let (acc, out) = forward(p, s);
    let pred = sigmoid(out);
    let err = pred - s.target;
    if let Some(g) = grad {
        let d_out = 2.0 * err * pred * (1.0 - pred);
        g[s.ob] += d_out;
        for (half, a) in acc.iter().enumerate() {
            let features = if half == 0 {
                &s.us[..s.n]
            } else {
                &s.them[..s.n]
            };
            let mut d_acc = [0f32; H];
            for j in 0..H {
                let c = a[j].clamp(0.0, 1.0);
                g[s.ow + half * H + j] += d_out * c * c;
                if a[j] > 0.0 && a[j] < 1.0 {
                    d_acc[j] = d_out * p[s.ow + half * H + j] * 2.0 * a[j];
                }
            }
            for (gb, d) in g[FB..FB + H].iter_mut().zip(&d_acc) {
                *gb += d;
            }
            for &f in features {
                let row = &mut g[FW + f as usize * H..FW + (f as usize + 1) * H];
                for (gw, d) in row.iter_mut().zip(&d_acc) {
                    *gw += d;
                }
            }
        }
    }
    err * err
}

/// The f32 net and its optimizer state.
pub struct Trainer {
    pub cfg: TrainConfig,
    params: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    /// Adam steps taken.
    steps: u64,
    /// Epochs completed.
    pub epoch: usize,
    grads: Vec<Vec<f32>>,
}

impl Trainer {
    /// A fresh net, initialised from the seed.
    pub fn new(cfg: TrainConfig) -> Trainer {
        let mut rng = Rng::with_seed(cfg.seed);
        let mut uniform = |a: f32| {
            let u = (rng.u64(..) >> 40) as f32 / (1u64 << 24) as f32;
            (2.0 * u - 1.0) * a
        };
        let n = params(cfg.buckets);
        let mut params = vec![0f32; n];
        for w in &mut params[FW..FB] {
            *w = uniform(1.0 / (INPUTS as f32).sqrt());
        }
        for w in &mut params[OW..output_biases(cfg.buckets)] {
            *w = uniform(1.0 / ((2 * H) as f32).sqrt());
        }
        Trainer {
            params,
            m: vec![0.0; n],
            v: vec![0.0; n],
            steps: 0,
            epoch: 0,
            grads: Vec::new(),
            cfg,
        }
    }

    fn threads(&self) -> usize {
        self.cfg.threads.clamp(1, 256)
    }

    /// Learning rate of epoch `e` (0-based): cosine from `lr` to `lr/100`.
    pub fn lr_at(&self, e: usize) -> f32 {
        let t = e as f32 / self.cfg.epochs.max(1) as f32;
        let lo = self.cfg.lr * 0.01;
        lo + (self.cfg.lr - lo) * 0.5 * (1.0 + (std::f32::consts::PI * t).cos())
    }

    /// Mean loss over `set` (no training).
    pub fn loss(&self, set: &[PackedBoard]) -> f64 {
        if set.is_empty() {
            return f64::NAN;
        }
        let chunk = set.len().div_ceil(self.threads());
        let (p, cfg) = (&self.params, &self.cfg);
        let jobs = set.chunks(chunk).map(|c| {
            move || {
                c.iter()
                    .map(|r| step_sample(p, &sample(r, cfg, false), None) as f64)
                    .sum::<f64>()
            }
        });
        in_threads(jobs) / set.len() as f64
    }

    /// One pass over `data.train` in a seeded shuffled order; returns the
    /// mean training loss (measured during the pass) and the validation
    /// loss after it.
    pub fn train_epoch(&mut self, data: &Data) -> Result<EpochReport, TrainError> {
        if data.train.is_empty() {
            return Err(TrainError::NoData);
        }
        let n = data.train.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut rng =
            Rng::with_seed(self.cfg.seed ^ (self.epoch as u64 + 1).wrapping_mul(0x9E37_79B9));
        for i in (1..n).rev() {
            order.swap(i, rng.usize(..=i));
        }
        let threads = self.threads();
        let len = self.params.len();
        self.grads.resize_with(threads, || vec![0.0; len]);
        let lr = self.lr_at(self.epoch);
        let mut total = 0f64;
        for batch in order.chunks(self.cfg.batch_size.max(1)) {
            total += self.train_batch(batch, &data.train, lr);
        }
        self.epoch += 1;
        Ok(EpochReport {
            epoch: self.epoch,
            train_loss: total / n as f64,
            val_loss: self.loss(&data.val),
            lr,
        })
    }

    /// Gradient of one batch, then one AdamW step; returns the summed loss.
    fn train_batch(&mut self, batch: &[u32], set: &[PackedBoard], lr: f32) -> f64 {
        let chunk = batch.len().div_ceil(self.grads.len());
        let (p, cfg) = (&self.params, &self.cfg);
        let salt = cfg.seed ^ (self.epoch as u64).wrapping_mul(0xA24B_AED4_963E_E407);
        let mirrored = |i: u32| cfg.mirror && Rng::with_seed(salt ^ u64::from(i)).u64(..) & 1 == 1;
        let jobs = self
            .grads
            .iter_mut()
            .zip(batch.chunks(chunk))
            .map(|(g, idx)| {
                move || {
                    g.fill(0.0);
                    idx.iter()
                        .map(|&i| {
                            let s = sample(&set[i as usize], cfg, mirrored(i));
                            step_sample(p, &s, Some(g)) as f64
                        })
                        .sum::<f64>()
                }
            });
        let loss = in_threads(jobs);
        // Threads beyond the batch's chunks kept last batch's gradient.
        let used = batch.chunks(chunk).count();
        let (first, rest) = self.grads.split_at_mut(1);
        for g in &rest[..used - 1] {
            for (a, b) in first[0].iter_mut().zip(g) {
                *a += b;
            }
        }
        self.adamw(lr, 1.0 / batch.len() as f32);
        loss
    }

    fn adamw(&mut self, lr: f32, grad_scale: f32) {
        const B1: f32 = 0.9;
        const B2: f32 = 0.999;
        const EPS: f32 = 1e-8;
        self.steps += 1;
        let c1 = 1.0 - B1.powi(self.steps.min(1 << 20) as i32);
        let c2 = 1.0 - B2.powi(self.steps.min(1 << 20) as i32);
        let wd = self.cfg.weight_decay;
        let moments = self.m.iter_mut().zip(self.v.iter_mut());
        for ((p, (m, v)), g) in self.params.iter_mut().zip(moments).zip(&self.grads[0]) {
            let g = g * grad_scale;
            *m = B1 * *m + (1.0 - B1) * g;
            *v = B2 * *v + (1.0 - B2) * g * g;
            let update = (*m / c1) / ((*v / c2).sqrt() + EPS);
            *p = (*p - lr * (update + wd * *p)).clamp(-WEIGHT_CLIP, WEIGHT_CLIP);
        }
    }

    /// The net, quantized, as a net file.
    pub fn net_bytes(&self) -> Vec<u8> {
        let q = |x: f32, s: i32| (x * s as f32).round();
        let fw: Vec<i16> = self.params[FW..FB]
            .iter()
            .map(|&x| q(x, QA) as i16)
            .collect();
        let fb: Vec<i16> = self.params[FB..OW]
            .iter()
            .map(|&x| q(x, QA) as i16)
            .collect();
        let biases = output_biases(self.cfg.buckets);
        let ow: Vec<i16> = self.params[OW..biases]
            .iter()
            .map(|&x| q(x, QB).clamp(-127.0, 127.0) as i16)
            .collect();
        let ob: Vec<i32> = self.params[biases..]
            .iter()
            .map(|&x| q(x, QA * QB) as i32)
            .collect();
        encode_net(
            &fw,
            &fb,
            &ow,
            &ob,
            self.cfg.k_cp() as u32,
            self.cfg.king_mirror,
        )
    }

    /// The float net's evaluation of a record's position, in the engine's
    /// centipawns for the side to move (tests compare it with the
    /// quantized net).
    pub fn eval_cp(&self, r: &PackedBoard) -> f32 {
        forward(&self.params, &sample(r, &self.cfg, false)).1 * self.cfg.k_cp()
    }

    /// Writes the weights, Adam moments, epoch, K and input layout
    /// (atomically).
    pub fn save_checkpoint(&self, path: &Path) -> Result<(), TrainError> {
        let n = self.params.len();
        let mut b = Vec::with_capacity(CHECKPOINT_HEADER + 12 * n);
        b.extend_from_slice(CHECKPOINT_MAGIC);
        b.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        b.extend_from_slice(&(n as u32).to_le_bytes());
        b.extend_from_slice(&(self.epoch as u64).to_le_bytes());
        b.extend_from_slice(&self.steps.to_le_bytes());
        b.extend_from_slice(&(self.cfg.k_cp() as u32).to_le_bytes());
        b.extend_from_slice(&(self.cfg.king_mirror as u32).to_le_bytes());
        for x in self.params.iter().chain(&self.m).chain(&self.v) {
            b.extend_from_slice(&x.to_le_bytes());
        }
        write_atomically(path, &b)
    }

    /// Resumes from a checkpoint written with `save_checkpoint`. The
    /// run goes on with the checkpoint's K (`cfg.k` must be it or
    /// `None`) and must have its input layout.
    pub fn load_checkpoint(mut cfg: TrainConfig, path: &Path) -> Result<Trainer, TrainError> {
        let b = std::fs::read(path).map_err(io_error(path))?;
        let bad = |why| TrainError::Checkpoint {
            path: path.display().to_string(),
            why,
        };
        if b.len() < CHECKPOINT_HEADER || &b[..8] != CHECKPOINT_MAGIC {
            return Err(bad("not a checkpoint"));
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if u32_at(8) != CHECKPOINT_VERSION {
            return Err(bad("another checkpoint version (start the run afresh)"));
        }
        let n = params(cfg.buckets);
        if b.len() != CHECKPOINT_HEADER + 12 * n || u32_at(12) as usize != n {
            return Err(bad("another architecture or number of output buckets"));
        }
        let k = u32_at(32);
        if cfg.k.is_some_and(|given| given != k) {
            return Err(bad("another K than --k (leave --k out to resume)"));
        }
        cfg.k = Some(k);
        if (u32_at(36) == 1) != cfg.king_mirror {
            return Err(bad("trained with the other input layout (--king-mirror)"));
        }
        let u64_at = |i: usize| u32_at(i) as u64 | (u32_at(i + 4) as u64) << 32;
        let floats: Vec<f32> = b[CHECKPOINT_HEADER..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut t = Trainer::new(cfg);
        t.epoch = u64_at(16) as usize;
        t.steps = u64_at(24);
        t.params.copy_from_slice(&floats[..n]);
        t.m.copy_from_slice(&floats[n..2 * n]);
        t.v.copy_from_slice(&floats[2 * n..]);
        Ok(t)
    }
}

/// Runs each job on its own thread and sums the results in job order
/// (so the sum does not depend on which thread finishes first).
fn in_threads<F: FnOnce() -> f64 + Send>(jobs: impl Iterator<Item = F>) -> f64 {
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs.map(|job| scope.spawn(job)).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(f64::NAN))
            .sum()
    })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), TrainError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io_error(&tmp))?;
    f.write_all(bytes).map_err(io_error(&tmp))?;
    f.sync_all().map_err(io_error(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_error(path))
}

/// The training records of one file: a chunk's positions that the
/// filter keeps (its games numbered in order), or a record file's
/// records; and the count of bad records.
pub fn load_file(path: &Path, filter: &Filter) -> Result<(Vec<PackedBoard>, usize)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if !chunk::is_chunk(&bytes) {
        return Ok(read_records(&bytes));
    }
    let c = chunk::read(&bytes).with_context(|| format!("reading {}", path.display()))?;
    let records = c
        .games
        .iter()
        .enumerate()
        .flat_map(|(i, g)| filter.records(g, i as u32))
        .collect();
    Ok((records, 0))
}

/// `kaissa train`: loads the data (files in the order given,
/// directories' `*.kgc` and `*.bin` sorted), trains, writes the net every
/// epoch to `out`, and the net of the epoch with the lowest validation
/// loss so far (of this run: a resumed run starts counting again) to
/// `NAME-best.EXT` beside it.
pub fn run(
    data: &[PathBuf],
    cfg: TrainConfig,
    out: &Path,
    checkpoint: &Path,
    resume: bool,
) -> Result<()> {
    let mut files = Vec::new();
    for p in data {
        if p.is_dir() {
            let mut in_dir: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension()
                        .is_some_and(|e| e == "bin" || e == chunk::EXTENSION)
                })
                .collect();
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(p.clone());
        }
    }
    let mut set = Data::default();
    let mut bad = 0;
    for (i, f) in files.iter().enumerate() {
        let (records, b) = load_file(f, &cfg.filter)?;
        bad += b;
        set.add_file(i as u64, records, &cfg);
    }
    println!(
        "{} files: {} training positions, {} validation positions, {bad} bad records skipped",
        files.len(),
        set.train.len(),
        set.val.len()
    );
    let mut cfg = cfg;
    if cfg.k.is_none() && !resume {
        let k = fit_k(&set.train);
        println!(
            "K fitted to the results: {k} cp (result error {:.6}; at 400: {:.6})",
            result_error(&set.train, k as f64),
            result_error(&set.train, 400.0)
        );
        cfg.k = Some(k);
    }
    let mut trainer = if resume {
        Trainer::load_checkpoint(cfg, checkpoint)?
    } else {
        Trainer::new(cfg)
    };
    if trainer.epoch == 0 {
        println!("epoch 0  val loss {:.6}", trainer.loss(&set.val));
    }
    let best = best_path(out);
    let mut lowest = f64::INFINITY;
    while trainer.epoch < trainer.cfg.epochs {
        let start = Instant::now();
        let r = trainer.train_epoch(&set)?;
        let secs = start.elapsed().as_secs_f64();
        let net = trainer.net_bytes();
        let improved = r.val_loss < lowest;
        println!(
            "epoch {}/{}  train loss {:.6}  val loss {:.6}{}  lr {:.6}  {:.0} pos/s",
            r.epoch,
            trainer.cfg.epochs,
            r.train_loss,
            r.val_loss,
            if improved { " (best)" } else { "" },
            r.lr,
            set.train.len() as f64 / secs.max(1e-9)
        );
        trainer.save_checkpoint(checkpoint)?;
        write_atomically(out, &net)?;
        if improved {
            lowest = r.val_loss;
            write_atomically(&best, &net)?;
        }
    }
    println!(
        "net written to {} (the lowest validation loss of this run, {lowest:.6}: {})",
        out.display(),
        best.display()
    );
    Ok(())
}

/// Where the net of the epoch with the lowest validation loss goes:
/// `NAME-best.EXT` beside `out`.
fn best_path(out: &Path) -> PathBuf {
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let name = match out.extension() {
        Some(ext) => format!("{stem}-best.{}", ext.to_string_lossy()),
        None => format!("{stem}-best"),
    };
    out.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Position;
    use crate::engine::nnue::OUTPUT_BUCKETS;
    use crate::tools::packed::GameResult;

    fn record(fen: &str, score: i16, result: GameResult) -> PackedBoard {
        PackedBoard::from_position(&Position::from_fen(fen).unwrap(), score, result, 0)
    }

    #[test]
    fn a_mirrored_sample_is_the_mirrored_position() {
        let cfg = TrainConfig::default();
        let r = record(
            "4k3/1p6/8/3n4/5P2/8/6B1/1K6 b - - 0 40",
            -35,
            GameResult::Draw,
        );
        let m = record(
            "3k4/6p1/8/4n3/2P5/8/1B6/6K1 b - - 0 40",
            -35,
            GameResult::Draw,
        );
        let (a, b) = (sample(&r, &cfg, true), sample(&m, &cfg, false));
        let sorted = |f: &[u16]| {
            let mut v = f.to_vec();
            v.sort();
            v
        };
        assert_eq!(a.n, 6);
        assert_eq!(sorted(&a.us[..a.n]), sorted(&b.us[..b.n]));
        assert_eq!(sorted(&a.them[..a.n]), sorted(&b.them[..b.n]));
        assert_eq!(a.target, b.target);
        let plain = sample(&r, &cfg, false);
        assert_ne!(sorted(&plain.us[..plain.n]), sorted(&a.us[..a.n]));
    }

    #[test]
    fn k_is_fitted_to_the_results_the_scores_predict() {
        // Results drawn as sigmoid(score / 300) says, from both sides.
        let fens = [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        ];
        let mut set = Vec::new();
        for score in (-900..=900).step_by(25) {
            let p = 1.0 / (1.0 + (-(score as f64) / 300.0).exp());
            let wins = (p * 200.0).round() as usize;
            for (i, fen) in fens.iter().enumerate() {
                // Black to move: the same game seen from the other side.
                let white = if i == 0 { score } else { -score };
                for n in 0..200 {
                    let result = match (n < wins, i == 0) {
                        (true, true) | (false, false) => GameResult::WhiteWon,
                        _ => GameResult::BlackWon,
                    };
                    set.push(record(fen, white as i16, result));
                }
            }
        }
        let k = fit_k(&set);
        assert!((295..=305).contains(&k), "{k}");
        assert!(result_error(&set, k as f64) < result_error(&set, 400.0));
        // Results that follow the scores less closely: a larger K.
        let draws: Vec<PackedBoard> = set
            .iter()
            .enumerate()
            .map(|(i, r)| match i % 3 {
                0 => PackedBoard {
                    result: GameResult::Draw,
                    ..*r
                },
                _ => *r,
            })
            .collect();
        assert!(fit_k(&draws) > k + 50, "{}", fit_k(&draws));
    }

    #[test]
    fn gradients_match_finite_differences() {
        for buckets in [1, OUTPUT_BUCKETS] {
            let cfg = TrainConfig {
                buckets,
                ..TrainConfig::default()
            };
            let mut t = Trainer::new(cfg.clone());
            // Push some accumulators into the SCReLU's curved range.
            for (i, b) in t.params[FB..OW].iter_mut().enumerate() {
                *b = (i % 7) as f32 * 0.1;
            }
            let r = record(
                "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 2 3",
                150,
                GameResult::WhiteWon,
            );
            let s = sample(&r, &cfg, false);
            // 32 pieces: the last bucket.
            assert_eq!(s.ow, OW + (buckets - 1) * 2 * H);
            let mut g = vec![0f32; params(buckets)];
            step_sample(&t.params, &s, Some(&mut g));
            let active = FW + s.us[3] as usize * H + 5;
            let checked = [active, FB + 3, FB + 10, s.ow + 4, s.ow + H + 9, s.ob];
            for i in checked {
                let e = 1e-2;
                let keep = t.params[i];
                t.params[i] = keep + e;
                let up = step_sample(&t.params, &s, None) as f64;
                t.params[i] = keep - e;
                let down = step_sample(&t.params, &s, None) as f64;
                t.params[i] = keep;
                let numeric = (up - down) / (2.0 * e as f64);
                let analytic = g[i] as f64;
                assert!(
                    (numeric - analytic).abs() <= 1e-3 * numeric.abs().max(1e-3) + 1e-6,
                    "param {i}: numeric {numeric} analytic {analytic}"
                );
            }
            // Inactive feature rows and the other buckets get no gradient.
            let inactive = (0..INPUTS)
                .find(|f| {
                    !s.us[..s.n].contains(&(*f as u16)) && !s.them[..s.n].contains(&(*f as u16))
                })
                .unwrap();
            assert!(
                g[FW + inactive * H..FW + (inactive + 1) * H]
                    .iter()
                    .all(|&x| x == 0.0)
            );
            let others = (OW..s.ow)
                .chain(s.ow + 2 * H..s.ob)
                .chain(s.ob + 1..g.len());
            assert!(others.map(|i| g[i]).all(|x| x == 0.0));
        }
    }

    #[test]
    fn king_mirrored_inputs_show_each_king_on_files_a_to_d() {
        let cfg = TrainConfig {
            king_mirror: true,
            ..TrainConfig::default()
        };
        let sorted = |f: &[u16]| {
            let mut v = f.to_vec();
            v.sort();
            v
        };
        // Both kings on e-h, then both on a-d: the same inputs.
        let r = record(
            "6k1/1p6/8/3n4/5P2/8/6B1/5K2 w - - 0 40",
            20,
            GameResult::Draw,
        );
        let m = record(
            "1k6/6p1/8/4n3/2P5/8/1B6/2K5 w - - 0 40",
            20,
            GameResult::Draw,
        );
        let (a, b) = (sample(&r, &cfg, false), sample(&m, &cfg, false));
        assert_eq!(sorted(&a.us[..a.n]), sorted(&b.us[..b.n]));
        assert_eq!(sorted(&a.them[..a.n]), sorted(&b.them[..b.n]));
        // Each perspective by its own king: White's on f1 mirrors, Black's
        // on b8 does not.
        let mixed = record(
            "1k6/1p6/8/3n4/5P2/8/6B1/5K2 w - - 0 40",
            20,
            GameResult::Draw,
        );
        let s = sample(&mixed, &cfg, false);
        let plain = sample(&mixed, &TrainConfig::default(), false);
        assert_ne!(sorted(&s.us[..s.n]), sorted(&plain.us[..plain.n]));
        assert_eq!(sorted(&s.them[..s.n]), sorted(&plain.them[..plain.n]));
    }

    #[test]
    fn the_quantized_net_evaluates_like_the_float_net() {
        for (buckets, king_mirror) in [(1, false), (OUTPUT_BUCKETS, false), (1, true)] {
            let mut t = Trainer::new(TrainConfig {
                buckets,
                king_mirror,
                k: Some(250),
                ..TrainConfig::default()
            });
            for (i, b) in t.params[FB..OW].iter_mut().enumerate() {
                *b = (i % 5) as f32 * 0.1;
            }
            let net = crate::engine::nnue::Network::from_bytes(&t.net_bytes()).unwrap();
            assert_eq!(
                (net.buckets(), net.scale, net.mirrored),
                (buckets, 250, king_mirror)
            );
            for fen in [
                "1k6/1p6/8/3n4/5P2/8/6B1/5K2 w - - 0 40",
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1",
                "4k3/1p6/8/3n4/5P2/8/6B1/1K6 b - - 0 40",
            ] {
                let pos = Position::from_fen(fen).unwrap();
                let float = t.eval_cp(&record(fen, 0, GameResult::Draw));
                let quant = crate::engine::nnue::evaluate_position(&net, &pos) as f32;
                // Rounding the weights costs a few centipawns, not more.
                assert!((float - quant).abs() <= 10.0, "{fen}: {float} vs {quant}");
            }
        }
    }
}
