//! The i16 kernels of the hot path, in three versions that give the same
//! results bit for bit: AVX2 (chosen at run time when the CPU has it),
//! SSE2 (the x86-64 baseline) and scalar (other architectures, and the
//! reference the tests compare against). The choice is made once, when a
//! net is loaded (`SimdLevel::detect`); a call is then one `match` on a
//! value that never changes, no per-node feature test.
//!
//! Integer semantics are fixed so every path agrees: accumulator updates
//! wrap in i16; the output layer computes `(v * w)` truncated to i16 (the
//! loader keeps |w| <= 127, so with v <= QA = 255 nothing is truncated)
//! times `v`, summed with wrapping i32 adds, which are order-independent.

use super::network::Row;
use super::{HIDDEN, QA, QB};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Level {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Sse2,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

/// The instruction set the kernels use. Only obtainable for a level this
/// CPU supports, so the kernels can rely on it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SimdLevel(Level);

impl SimdLevel {
    /// The best level this CPU runs.
    pub fn detect() -> SimdLevel {
        Self::available().last().unwrap_or(SimdLevel(Level::Scalar))
    }

    /// The portable reference.
    pub fn scalar() -> SimdLevel {
        SimdLevel(Level::Scalar)
    }

    /// Every level this CPU runs, slowest first.
    pub fn available() -> impl Iterator<Item = SimdLevel> {
        let mut levels = vec![SimdLevel(Level::Scalar)];
        #[cfg(target_arch = "x86_64")]
        {
            levels.push(SimdLevel(Level::Sse2));
            if std::arch::is_x86_feature_detected!("avx2") {
                levels.push(SimdLevel(Level::Avx2));
            }
        }
        levels.into_iter()
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            Level::Scalar => "scalar",
            #[cfg(target_arch = "x86_64")]
            Level::Sse2 => "sse2",
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => "avx2",
        }
    }
}

/// `out = inp + sum(add) - sum(sub)`, lane by lane, wrapping.
#[inline(always)]
pub fn update(level: SimdLevel, out: &mut Row, inp: &Row, add: &[&Row], sub: &[&Row]) {
    match level.0 {
        Level::Scalar => scalar::update(out, inp, add, sub),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of every x86-64 CPU.
        Level::Sse2 => unsafe { sse2::update(out, inp, add, sub) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an Avx2 level exists only when the CPU has AVX2.
        Level::Avx2 => unsafe { avx2::update(out, inp, add, sub) },
    }
}

/// The output layer: SCReLU of both halves (side to move first) against
/// the output weights, plus the bias, scaled to centipawns (`scale` of
/// them to an output of 1.0, the net file's K).
#[inline(always)]
pub fn output(
    level: SimdLevel,
    us: &Row,
    them: &Row,
    weights: &[Row; 2],
    bias: i32,
    scale: i32,
) -> i32 {
    let sum = match level.0 {
        Level::Scalar => {
            scalar::screlu_dot(us, &weights[0]).wrapping_add(scalar::screlu_dot(them, &weights[1]))
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of every x86-64 CPU.
        Level::Sse2 => unsafe {
            sse2::screlu_dot(us, &weights[0]).wrapping_add(sse2::screlu_dot(them, &weights[1]))
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an Avx2 level exists only when the CPU has AVX2.
        Level::Avx2 => unsafe {
            avx2::screlu_dot(us, &weights[0]).wrapping_add(avx2::screlu_dot(them, &weights[1]))
        },
    };
    finish(sum, bias, scale)
}

/// From the output sum (scale QA * QA * QB) to the engine's centipawns,
/// `scale` of them to an output of 1.0.
#[inline(always)]
fn finish(sum: i32, bias: i32, scale: i32) -> i32 {
    let v = (sum / QA) as i64 + bias as i64;
    let cp = v * scale as i64 / (QA * QB) as i64;
    cp.clamp(-20_000, 20_000) as i32
}

mod scalar {
    use super::*;

    pub fn update(out: &mut Row, inp: &Row, add: &[&Row], sub: &[&Row]) {
        out.0 = inp.0;
        for a in add {
            for (o, w) in out.0.iter_mut().zip(&a.0) {
                *o = o.wrapping_add(*w);
            }
        }
        for s in sub {
            for (o, w) in out.0.iter_mut().zip(&s.0) {
                *o = o.wrapping_sub(*w);
            }
        }
    }

    pub fn screlu_dot(acc: &Row, w: &Row) -> i32 {
        let mut sum = 0i32;
        for (&a, &w) in acc.0.iter().zip(&w.0) {
            let v = a.clamp(0, QA as i16);
            let t = v.wrapping_mul(w);
            sum = sum.wrapping_add(t as i32 * v as i32);
        }
        sum
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::*;
    use std::arch::x86_64::*;

    const LANES: usize = 8;

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(r: &Row, i: usize) -> __m128i {
        debug_assert!(i + LANES <= HIDDEN);
        // SAFETY: i + 8 <= HIDDEN and rows are 64-byte aligned.
        unsafe { _mm_load_si128(r.0.as_ptr().add(i).cast()) }
    }

    #[target_feature(enable = "sse2")]
    pub fn update(out: &mut Row, inp: &Row, add: &[&Row], sub: &[&Row]) {
        for i in (0..HIDDEN).step_by(LANES) {
            let mut v = load(inp, i);
            for a in add {
                v = _mm_add_epi16(v, load(a, i));
            }
            for s in sub {
                v = _mm_sub_epi16(v, load(s, i));
            }
            // SAFETY: as in `load`.
            unsafe { _mm_store_si128(out.0.as_mut_ptr().add(i).cast(), v) };
        }
    }

    #[target_feature(enable = "sse2")]
    pub fn screlu_dot(acc: &Row, w: &Row) -> i32 {
        let zero = _mm_setzero_si128();
        let qa = _mm_set1_epi16(QA as i16);
        let mut sum = _mm_setzero_si128();
        for i in (0..HIDDEN).step_by(LANES) {
            let v = _mm_min_epi16(_mm_max_epi16(load(acc, i), zero), qa);
            let t = _mm_mullo_epi16(v, load(w, i));
            sum = _mm_add_epi32(sum, _mm_madd_epi16(t, v));
        }
        let hi = _mm_shuffle_epi32::<0b01_00_11_10>(sum);
        let s = _mm_add_epi32(sum, hi);
        let hi = _mm_shuffle_epi32::<0b10_11_00_01>(s);
        _mm_cvtsi128_si32(_mm_add_epi32(s, hi))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    const LANES: usize = 16;

    #[inline]
    #[target_feature(enable = "avx2")]
    fn load(r: &Row, i: usize) -> __m256i {
        debug_assert!(i + LANES <= HIDDEN);
        // SAFETY: i + 16 <= HIDDEN and rows are 64-byte aligned.
        unsafe { _mm256_load_si256(r.0.as_ptr().add(i).cast()) }
    }

    #[target_feature(enable = "avx2")]
    pub fn update(out: &mut Row, inp: &Row, add: &[&Row], sub: &[&Row]) {
        for i in (0..HIDDEN).step_by(LANES) {
            let mut v = load(inp, i);
            for a in add {
                v = _mm256_add_epi16(v, load(a, i));
            }
            for s in sub {
                v = _mm256_sub_epi16(v, load(s, i));
            }
            // SAFETY: as in `load`.
            unsafe { _mm256_store_si256(out.0.as_mut_ptr().add(i).cast(), v) };
        }
    }

    #[target_feature(enable = "avx2")]
    pub fn screlu_dot(acc: &Row, w: &Row) -> i32 {
        let zero = _mm256_setzero_si256();
        let qa = _mm256_set1_epi16(QA as i16);
        let mut sum = _mm256_setzero_si256();
        for i in (0..HIDDEN).step_by(LANES) {
            let v = _mm256_min_epi16(_mm256_max_epi16(load(acc, i), zero), qa);
            let t = _mm256_mullo_epi16(v, load(w, i));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(t, v));
        }
        let s = _mm_add_epi32(
            _mm256_castsi256_si128(sum),
            _mm256_extracti128_si256::<1>(sum),
        );
        let hi = _mm_shuffle_epi32::<0b01_00_11_10>(s);
        let s = _mm_add_epi32(s, hi);
        let hi = _mm_shuffle_epi32::<0b10_11_00_01>(s);
        _mm_cvtsi128_si32(_mm_add_epi32(s, hi))
    }
}
