//! NNUE evaluation: a 768 -> N x 2 -> 1 perspective network with a
//! squared clipped ReLU (SCReLU), quantized to i16, evaluated from
//! accumulators that the search updates incrementally with its moves.
//!
//! One idea per file: `features` (which input a piece on a square is),
//! `format` (the net file: header, checksum, typed errors), `network`
//! (the loaded weights and the embedded default net), `simd` (the i16
//! kernels: AVX2, SSE2, scalar; chosen once), `accumulator` (the per-ply
//! stack of accumulators the searcher keeps, updated lazily).
//!
//! Why SCReLU and not CReLU: squaring the clipped activation is what the
//! small nets of this shape that gained the most over hand-crafted
//! evaluations use, and with the `(v * w) * v` trick (one i16 multiply,
//! then a multiply-add into i32) it costs no more than CReLU per node.

mod accumulator;
mod features;
mod format;
mod network;
mod simd;

pub use accumulator::{Accumulator, AccumulatorStack, Delta};
pub use features::{feature_index, king_flip};
pub use format::{
    FNV_OFFSET, FormatError, HEADER_BYTES, SCALES, V1_SCALE, V2_HEADER_BYTES, VERSION, encode_net,
    fnv1a64, header_bytes, payload_bytes,
};
pub use network::{Network, NetworkLoadError, Row, embedded, evaluate_position};
pub use simd::{SimdLevel, output, update};

use std::path::Path;
use std::sync::{Arc, RwLock};

/// The `EvalFile` value (and `engine.eval_file` key) that selects the
/// hand-crafted evaluation.
pub const CLASSICAL: &str = "classical";
/// The `EvalFile` value of the embedded net (also the empty value).
pub const EMBEDDED: &str = "<embedded>";

/// The evaluation an `EvalFile` value names: `classical` gives `None`
/// (the hand-crafted evaluation), empty or `<embedded>` the embedded net,
/// anything else is the path of a net file, loaded and checked.
pub fn load_eval_file(value: &str) -> Result<Option<Arc<Network>>, NetworkLoadError> {
    match value.trim() {
        v if v.eq_ignore_ascii_case(CLASSICAL) => Ok(None),
        "" | EMBEDDED => Ok(Some(embedded())),
        path => Network::load(Path::new(path)).map(|n| Some(Arc::new(n))),
    }
}

/// The evaluation new engines and searchers start with; `None` inside:
/// not set, the embedded net.
static DEFAULT: RwLock<Option<Option<Arc<Network>>>> = RwLock::new(None);

/// Sets the evaluation that engines and searchers created from now on
/// start with (`None`: hand-crafted), e.g. from the `engine.eval_file`
/// configuration key.
pub fn set_default(net: Option<Arc<Network>>) {
    if let Ok(mut d) = DEFAULT.write() {
        *d = Some(net);
    }
}

/// The evaluation new engines and searchers start with: the embedded net
/// unless `set_default` said otherwise (gen3 beats the hand-crafted
/// evaluation at 10+0.1; see scripts/README.md).
pub fn default_net() -> Option<Arc<Network>> {
    DEFAULT
        .read()
        .ok()
        .and_then(|d| d.clone())
        .unwrap_or_else(|| Some(embedded()))
}

/// Inputs: 2 colours (relative to the perspective) x 6 roles x 64 squares.
pub const INPUTS: usize = 768;
/// Hidden neurons per perspective (the accumulator width). The file
/// header records it; a net of another width is refused.
pub const HIDDEN: usize = 256;
/// Quantization of the feature layer: an activation of 1.0 is `QA`.
pub const QA: i32 = 255;
/// Quantization of the output weights: a weight of 1.0 is `QB`.
pub const QB: i32 = 64;
/// Output buckets of a bucketed net: the output layer is chosen by the
/// number of pieces on the board, `output_bucket`.
pub const OUTPUT_BUCKETS: usize = 8;

/// The output bucket of a position with `pieces` pieces (kings
/// included) in a net of `buckets` buckets (1 or `OUTPUT_BUCKETS`): four
/// piece counts a bucket, from 2-5 pieces to 30-32.
#[inline(always)]
pub fn output_bucket(pieces: u32, buckets: usize) -> usize {
    if buckets == 1 {
        0
    } else {
        (pieces.saturating_sub(2) as usize / 4).min(OUTPUT_BUCKETS - 1)
    }
}

/// The activation code of SCReLU in the file header.
pub const ACTIVATION_SCRELU: u32 = 1;
/// Largest magnitude of a float weight (feature and output layers); the
/// trainer clips to it, so quantized values stay inside i16 and `(v * w)`
/// of the output layer (v <= 255, |w| <= 127) inside i16 as well.
pub const WEIGHT_CLIP: f32 = 1.98;
/// Largest quantized output weight the loader accepts.
pub const MAX_OUTPUT_WEIGHT: i16 = 127;
