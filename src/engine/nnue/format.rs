//! The net file: a header (56 bytes in versions 1 and 2, 64 from
//! version 3), then the quantized weights, all little-endian.
//!
//! Header: magic `KAISSANN` (8 bytes), version (u32), inputs (u32),
//! hidden size N (u32), activation (u32, 1 = SCReLU), QA, QB (u32 each),
//! the output scale K (u32), output buckets B (u32: 1, or `OUTPUT_BUCKETS`
//! chosen by the number of pieces on the board; version 1: 0, one); from
//! version 3 the input layout (u32: 0 plain, 1 king-mirrored, see
//! `features::king_flip`) and a reserved u32 (0); then the payload
//! length in bytes (u64) and the checksum (u64: FNV-1a 64 of the header
//! bytes before it followed by the payload).
//!
//! K is the centipawns of a net output of 1.0: the trainer fits the net's
//! output `y` to win probabilities as `sigmoid(y)` and its search-score
//! targets as `sigmoid(cp / K)`, with K fitted to the data (the K that
//! best predicts the games' results from their scores), so `y * K` is in
//! the centipawns the data's scores were in, the ones every search margin
//! is set in. Version 1 files stored 400 there and the engine read 72% of
//! that (a fixed output scaling measured for generation 3); they load with
//! K = `V1_SCALE`, which evaluates them exactly as before.
//!
//! Payload: feature weights (i16, inputs x N, one row of N per input),
//! feature biases (i16, N), output weights (i16, B x 2N: per bucket, the
//! side to move's half first), output biases (i32, B). A file that does
//! not match this build (magic, version, architecture, quantization,
//! scale, buckets, layout, length, checksum, output weights above
//! `MAX_OUTPUT_WEIGHT`) is refused with a `FormatError`.

use super::{ACTIVATION_SCRELU, HIDDEN, INPUTS, MAX_OUTPUT_WEIGHT, OUTPUT_BUCKETS, QA, QB};

pub const MAGIC: [u8; 8] = *b"KAISSANN";
pub const VERSION: u32 = 3;
/// The output scale of a version 1 file: its header's 400 read at 72%.
pub const V1_SCALE: u32 = 288;
/// The output scales (K, centipawns) a file may declare.
pub const SCALES: std::ops::RangeInclusive<u32> = 50..=2000;
/// Header bytes of the files this build writes (version 3).
pub const HEADER_BYTES: usize = 64;
/// Header bytes of versions 1 and 2.
pub const V2_HEADER_BYTES: usize = 56;

/// Header bytes of a file of `version`.
pub const fn header_bytes(version: u32) -> usize {
    if version >= 3 {
        HEADER_BYTES
    } else {
        V2_HEADER_BYTES
    }
}
/// Payload bytes of a net of this build's architecture with `buckets`
/// output buckets.
pub const fn payload_bytes(buckets: usize) -> usize {
    2 * (INPUTS * HIDDEN + HIDDEN + buckets * 2 * HIDDEN) + 4 * buckets
}

/// Why a net file was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("net file too short: {len} bytes, the header alone is {V2_HEADER_BYTES} or more")]
    TooShort { len: usize },
    #[error("not a kaissa net file (bad magic)")]
    BadMagic,
    #[error("net file version {found}, this build reads versions 1 to {VERSION}")]
    Version { found: u32 },
    #[error(
        "net architecture {inputs} -> {hidden}x2 -> 1 (activation {activation}), this build needs \
         {INPUTS} -> {HIDDEN}x2 -> 1 (activation {ACTIVATION_SCRELU} = SCReLU)"
    )]
    Architecture {
        inputs: u32,
        hidden: u32,
        activation: u32,
    },
    #[error("net quantization QA={qa} QB={qb}, this build uses QA={QA} QB={QB}")]
    Quantization { qa: u32, qb: u32 },
    #[error(
        "net output scale K={scale} (version {version}), this build reads K from {} to {} \
         (version 1: 400)",
        SCALES.start(),
        SCALES.end()
    )]
    Scale { version: u32, scale: u32 },
    #[error("net with {found} output buckets, this build reads 1 or {OUTPUT_BUCKETS}")]
    Buckets { found: u32 },
    #[error("net input layout {found}, this build reads 0 (plain) or 1 (king-mirrored)")]
    Layout { found: u32 },
    #[error("net header's reserved field is {found}, not 0")]
    Reserved { found: u32 },
    #[error("net payload is {found} bytes, expected {expected} (truncated or padded file)")]
    Length { found: u64, expected: u64 },
    #[error(
        "net checksum mismatch: stored {stored:016x}, computed {computed:016x} (corrupted file)"
    )]
    Checksum { stored: u64, computed: u64 },
    #[error("net output weight {value} (index {index}) is outside ±{MAX_OUTPUT_WEIGHT}")]
    OutputWeight { index: usize, value: i16 },
}

/// FNV-1a, 64-bit, continued from `hash` (start with `FNV_OFFSET`).
pub fn fnv1a64(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The parts of a checked payload, as little-endian bytes.
pub(super) struct Payload<'a> {
    pub feature_weights: &'a [u8],
    pub feature_bias: &'a [u8],
    /// B x 2N weights.
    pub output_weights: &'a [u8],
    pub output_bias: Vec<i32>,
    /// Centipawns of a net output of 1.0 (K).
    pub scale: u32,
    /// King-mirrored inputs (layout 1).
    pub mirrored: bool,
    /// The stored checksum (identifies the net).
    pub checksum: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    (u32_at(b, at) as u64) | (u32_at(b, at + 4) as u64) << 32
}

/// Checks the header and the checksum and splits the payload.
pub(super) fn parse(bytes: &[u8]) -> Result<Payload<'_>, FormatError> {
    if bytes.len() < V2_HEADER_BYTES {
        return Err(FormatError::TooShort { len: bytes.len() });
    }
    if bytes[..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let version = u32_at(bytes, 8);
    if !(1..=VERSION).contains(&version) {
        return Err(FormatError::Version { found: version });
    }
    let (inputs, hidden, activation) = (u32_at(bytes, 12), u32_at(bytes, 16), u32_at(bytes, 20));
    if (inputs, hidden, activation) != (INPUTS as u32, HIDDEN as u32, ACTIVATION_SCRELU) {
        return Err(FormatError::Architecture {
            inputs,
            hidden,
            activation,
        });
    }
    let (qa, qb) = (u32_at(bytes, 24), u32_at(bytes, 28));
    if (qa, qb) != (QA as u32, QB as u32) {
        return Err(FormatError::Quantization { qa, qb });
    }
    let scale = match (version, u32_at(bytes, 32)) {
        (1, 400) => V1_SCALE,
        (2.., k) if SCALES.contains(&k) => k,
        (version, scale) => return Err(FormatError::Scale { version, scale }),
    };
    let buckets = match (version, u32_at(bytes, 36)) {
        (1, 0) => 1,
        (2.., b) if b == 1 || b == OUTPUT_BUCKETS as u32 => b as usize,
        (_, found) => return Err(FormatError::Buckets { found }),
    };
    let header = header_bytes(version);
    if bytes.len() < header {
        return Err(FormatError::TooShort { len: bytes.len() });
    }
    let mirrored = version >= 3
        && match (u32_at(bytes, 40), u32_at(bytes, 44)) {
            (layout @ (0 | 1), 0) => layout == 1,
            (0 | 1, found) => return Err(FormatError::Reserved { found }),
            (found, _) => return Err(FormatError::Layout { found }),
        };
    let declared = u64_at(bytes, header - 16);
    let actual = (bytes.len() - header) as u64;
    let expected = payload_bytes(buckets) as u64;
    if declared != expected || actual != declared {
        return Err(FormatError::Length {
            found: actual,
            expected,
        });
    }
    let payload = &bytes[header..];
    let stored = u64_at(bytes, header - 8);
    let computed = fnv1a64(fnv1a64(FNV_OFFSET, &bytes[..header - 8]), payload);
    if stored != computed {
        return Err(FormatError::Checksum { stored, computed });
    }
    let (feature_weights, rest) = payload.split_at(2 * INPUTS * HIDDEN);
    let (feature_bias, rest) = rest.split_at(2 * HIDDEN);
    let (output_weights, rest) = rest.split_at(buckets * 4 * HIDDEN);
    let output_bias = (0..buckets).map(|b| u32_at(rest, 4 * b) as i32).collect();
    for (index, w) in output_weights.chunks_exact(2).enumerate() {
        let value = i16::from_le_bytes([w[0], w[1]]);
        if value.unsigned_abs() > MAX_OUTPUT_WEIGHT as u16 {
            return Err(FormatError::OutputWeight { index, value });
        }
    }
    Ok(Payload {
        feature_weights,
        feature_bias,
        output_weights,
        output_bias,
        scale,
        mirrored,
        checksum: stored,
    })
}

/// Writes a net file (version 3) of this build's architecture and output
/// scale `k` (centipawns of an output of 1.0, within `SCALES`), with as
/// many output buckets as `output_bias` has biases and king-mirrored
/// inputs if `mirrored`. The slices must have the
/// payload's lengths (`INPUTS * HIDDEN`, `HIDDEN`, buckets x `2 * HIDDEN`).
pub fn encode_net(
    feature_weights: &[i16],
    feature_bias: &[i16],
    output_weights: &[i16],
    output_bias: &[i32],
    k: u32,
    mirrored: bool,
) -> Vec<u8> {
    let buckets = output_bias.len();
    assert_eq!(feature_weights.len(), INPUTS * HIDDEN);
    assert_eq!(feature_bias.len(), HIDDEN);
    assert_eq!(output_weights.len(), buckets * 2 * HIDDEN);
    let mut out = Vec::with_capacity(HEADER_BYTES + payload_bytes(buckets));
    out.extend_from_slice(&MAGIC);
    for v in [
        VERSION,
        INPUTS as u32,
        HIDDEN as u32,
        ACTIVATION_SCRELU,
        QA as u32,
        QB as u32,
        k,
        buckets as u32,
        mirrored as u32,
        0,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(payload_bytes(buckets) as u64).to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    for w in feature_weights
        .iter()
        .chain(feature_bias)
        .chain(output_weights)
    {
        out.extend_from_slice(&w.to_le_bytes());
    }
    for b in output_bias {
        out.extend_from_slice(&b.to_le_bytes());
    }
    let sum = fnv1a64(
        fnv1a64(FNV_OFFSET, &out[..HEADER_BYTES - 8]),
        &out[HEADER_BYTES..],
    );
    out[HEADER_BYTES - 8..HEADER_BYTES].copy_from_slice(&sum.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }
}
