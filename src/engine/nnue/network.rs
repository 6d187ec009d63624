//! The loaded network: quantized weights in 64-byte aligned rows, built
//! from a checked net file, and the default net embedded in the binary.
//! Engine threads share one `Arc<Network>`.

use super::accumulator::Accumulator;
use super::features::king_flip;
use super::format::{self, FormatError};
use super::simd::{self, SimdLevel};
use super::{HIDDEN, INPUTS, output_bucket};
use crate::chess::{Color, Position};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// One accumulator-wide row of i16, aligned for the SIMD loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Row(pub [i16; HIDDEN]);

impl Row {
    pub const ZERO: Row = Row([0; HIDDEN]);
}

/// A loaded net (see `format` for the file).
pub struct Network {
    /// One row per input feature.
    pub feature_weights: Box<[Row]>,
    pub feature_bias: Row,
    /// Output weights of each bucket: `[0]` for the side to move's half,
    /// `[1]` the other.
    pub output_weights: Box<[[Row; 2]]>,
    /// Output bias of each bucket.
    pub output_bias: Box<[i32]>,
    /// Centipawns of an output of 1.0 (the file's K).
    pub scale: i32,
    /// King-mirrored inputs: a perspective whose king is on files e-h
    /// sees the board mirrored left-right (`features::king_flip`).
    pub mirrored: bool,
    /// The kernels this machine runs, chosen when the net was built.
    pub simd: SimdLevel,
    /// FNV-1a checksum of the file (identifies the net in logs).
    pub checksum: u64,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Network({:016x}, {})", self.checksum, self.simd.name())
    }
}

/// A net file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum NetworkLoadError {
    #[error("cannot read net file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("net file {path}: {source}")]
    Format { path: PathBuf, source: FormatError },
}

fn rows(bytes: &[u8], into: &mut [Row]) {
    for (row, chunk) in into.iter_mut().zip(bytes.chunks_exact(2 * HIDDEN)) {
        for (v, b) in row.0.iter_mut().zip(chunk.chunks_exact(2)) {
            *v = i16::from_le_bytes([b[0], b[1]]);
        }
    }
}

impl Network {
    /// Builds a net from the bytes of a net file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Network, FormatError> {
        let p = format::parse(bytes)?;
        let mut feature_weights = vec![Row::ZERO; INPUTS].into_boxed_slice();
        rows(p.feature_weights, &mut feature_weights);
        let mut feature_bias = [Row::ZERO];
        rows(p.feature_bias, &mut feature_bias);
        let mut halves = vec![Row::ZERO; 2 * p.output_bias.len()];
        rows(p.output_weights, &mut halves);
        let output_weights = halves.chunks_exact(2).map(|h| [h[0], h[1]]).collect();
        Ok(Network {
            feature_weights,
            feature_bias: feature_bias[0],
            output_weights,
            output_bias: p.output_bias.into_boxed_slice(),
            scale: p.scale as i32,
            mirrored: p.mirrored,
            simd: SimdLevel::detect(),
            checksum: p.checksum,
        })
    }

    /// Reads and checks a net file.
    pub fn load(path: &Path) -> Result<Network, NetworkLoadError> {
        let bytes = std::fs::read(path).map_err(|source| NetworkLoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Network::from_bytes(&bytes).map_err(|source| NetworkLoadError::Format {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The file mirror (0 or 7) of `perspective`'s inputs in `pos`.
    #[inline(always)]
    pub fn flip(&self, pos: &Position, perspective: Color) -> u8 {
        if self.mirrored {
            king_flip(pos.king(perspective))
        } else {
            0
        }
    }

    /// The number of output buckets (1 or `OUTPUT_BUCKETS`).
    pub fn buckets(&self) -> usize {
        self.output_bias.len()
    }

    /// The evaluation (centipawns, side to move's view) of an accumulator
    /// pair in a position of `pieces` pieces: `us` is the side to move's
    /// half.
    #[inline(always)]
    pub fn output(&self, us: &Row, them: &Row, pieces: u32) -> i32 {
        let b = output_bucket(pieces, self.buckets());
        simd::output(
            self.simd,
            us,
            them,
            &self.output_weights[b],
            self.output_bias[b],
            self.scale,
        )
    }
}

/// The net embedded in the binary (`nets/default.nnue`), shared by every
/// searcher that was not given another one.
pub fn embedded() -> Arc<Network> {
    static NET: OnceLock<Arc<Network>> = OnceLock::new();
    NET.get_or_init(|| {
        let bytes = include_bytes!("../../../nets/default.nnue");
        // The build's own net: a unit test checks that it loads.
        Arc::new(Network::from_bytes(bytes).expect("the embedded net is valid"))
    })
    .clone()
}

/// Evaluates `pos` from scratch (side to move's view, centipawns).
pub fn evaluate_position(net: &Network, pos: &Position) -> i32 {
    Accumulator::refresh(net, pos).evaluate(net, pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_net_loads_and_is_symmetric() {
        let net = embedded();
        // Mirrored positions (colours swapped) evaluate the same for the
        // side to move: the perspective net sees the same features.
        let a =
            Position::from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
                .unwrap();
        let b =
            Position::from_fen("rnbqkb1r/pppp1ppp/5n2/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 2 3")
                .unwrap();
        assert_eq!(evaluate_position(&net, &a), evaluate_position(&net, &b));
    }
}
