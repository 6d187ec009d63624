//! The transposition table: what earlier searches learned about each
//! position (best move, depth, score and bound, static eval), shared by
//! reference between search threads and kept between the moves of a game.
//!
//! Lock-free: an entry is two `u64`s, `key ^ data` and `data`. A reader
//! accepts an entry only if the two words xor back to its own key, so an
//! entry torn by a concurrent writer is simply a miss (the "xor trick" of
//! Hyatt and Mann). Four entries make a 64-byte bucket, one cache line.
//!
//! The table is a plain array of integers, so it can be written to a file
//! and read back as is (`raw_words`/`load_words`).
//!
//! Data word layout (low bit first): move 16 | score 16 | eval 16 |
//! depth 8 | bound 2 | generation 6.

use super::pages::{Pages, Zeroable};
use super::score::{from_tt, to_tt};
use crate::chess::Move;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a stored score says about the true value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    None = 0,
    /// The true value is at most the score (all moves failed low).
    Upper = 1,
    /// The true value is at least the score (a move failed high).
    Lower = 2,
    Exact = 3,
}

impl Bound {
    fn from_bits(b: u64) -> Bound {
        match b & 3 {
            1 => Bound::Upper,
            2 => Bound::Lower,
            3 => Bound::Exact,
            _ => Bound::None,
        }
    }
}

/// Depths are stored offset so that quiescence depths (0, -1) fit a byte.
const DEPTH_OFFSET: i32 = 8;
const ENTRIES: usize = 4;
const GEN_BITS: u32 = 6;
const GEN_MASK: u8 = (1 << GEN_BITS) - 1;

/// A probe hit, with the score already made root-relative.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TtHit {
    pub mv: Move,
    pub score: i32,
    pub eval: i32,
    pub depth: i32,
    pub bound: Bound,
}

impl TtHit {
    /// The stored score decides a node searched with (`alpha`, `beta`):
    /// exact, or a bound on the side of the window it proves.
    #[inline(always)]
    pub fn cuts(&self, alpha: i32, beta: i32) -> bool {
        match self.bound {
            Bound::Exact => true,
            Bound::Lower => self.score >= beta,
            Bound::Upper => self.score <= alpha,
            Bound::None => false,
        }
    }

    /// The stored score is a better guess than the static evaluation
    /// `eval`: exact, or a bound beyond `eval` on its own side.
    #[inline(always)]
    pub fn refines(&self, eval: i32) -> bool {
        match self.bound {
            Bound::Exact => true,
            Bound::Lower => self.score > eval,
            Bound::Upper => self.score < eval,
            Bound::None => false,
        }
    }
}

#[repr(align(64))]
struct Bucket([AtomicU64; 2 * ENTRIES]);

// SAFETY: atomics, all zero: an empty bucket.
unsafe impl Zeroable for Bucket {}

pub struct TranspositionTable {
    buckets: Pages<Bucket>,
    generation: u8,
}

#[inline(always)]
fn pack(mv: Move, score: i32, eval: i32, depth: i32, bound: Bound, generation: u8) -> u64 {
    let depth = (depth + DEPTH_OFFSET).clamp(0, 255) as u64;
    mv.to_bits() as u64
        | (score as i16 as u16 as u64) << 16
        | (eval as i16 as u16 as u64) << 32
        | depth << 48
        | (bound as u64) << 56
        | ((generation & GEN_MASK) as u64) << 58
}

#[inline(always)]
fn data_depth(d: u64) -> i32 {
    ((d >> 48) & 0xFF) as i32 - DEPTH_OFFSET
}

#[inline(always)]
fn data_generation(d: u64) -> u8 {
    (d >> 58) as u8 & GEN_MASK
}

impl TranspositionTable {
    /// A table of about `mb` mebibytes (at least one bucket).
    pub fn new(mb: usize) -> TranspositionTable {
        let mut tt = TranspositionTable {
            buckets: Pages::default(),
            generation: 0,
        };
        tt.resize(mb);
        tt
    }

    /// Reallocates to about `mb` mebibytes; the contents are lost.
    /// A size the system cannot give is halved until it can (`Hash`
    /// beyond the machine's memory): the engine plays on, with what it got
    /// ([`size_mb`](Self::size_mb)).
    pub fn resize(&mut self, mb: usize) {
        // The old table goes first: two never live at once.
        self.buckets = Pages::default();
        let mut want = mb.max(1);
        self.buckets = loop {
            match Pages::try_zeroed(Self::buckets_for(want)) {
                Some(pages) => break pages,
                None if want > 1 => want /= 2,
                None => break Pages::zeroed(Self::buckets_for(1)),
            }
        };
        self.generation = 0;
    }

    /// Reallocates to exactly `words / 8` buckets (a hash file's size);
    /// the contents are lost.
    pub fn resize_words(&mut self, words: usize) {
        let n = (words / (2 * ENTRIES)).max(1);
        if n != self.buckets.len() {
            self.buckets = Pages::default();
            self.buckets = Pages::zeroed(n);
        } else {
            self.clear();
        }
    }

    /// Size in mebibytes.
    pub fn size_mb(&self) -> usize {
        (self.buckets.len() * std::mem::size_of::<Bucket>()) >> 20
    }

    /// Forgets everything (new game, or "Clear Hash").
    pub fn clear(&mut self) {
        self.buckets.zero();
        self.generation = 0;
    }

    /// Starts a new search: entries of older searches become preferred
    /// victims for replacement, but stay usable.
    pub fn new_search(&mut self) {
        self.generation = (self.generation + 1) & GEN_MASK;
    }

    pub fn generation(&self) -> u8 {
        self.generation
    }

    #[inline(always)]
    fn bucket(&self, key: u64) -> &Bucket {
        // Multiply-high maps the key uniformly onto any table size.
        let i = ((key as u128 * self.buckets.len() as u128) >> 64) as usize;
        &self.buckets[i]
    }

    /// Asks the CPU to bring `key`'s bucket into the cache, ahead of the
    /// probe that will want it (a hint: it reads nothing, cannot fault).
    #[inline(always)]
    pub fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let p = self.bucket(key) as *const Bucket as *const i8;
            // SAFETY: prefetching is a hint; any address is allowed.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Looks `key` up; `ply` and `halfmove` make mate scores root-relative.
    #[inline]
    pub fn probe(&self, key: u64, ply: usize, halfmove: u32) -> Option<TtHit> {
        let b = self.bucket(key);
        for e in b.0.chunks_exact(2) {
            let k = e[0].load(Ordering::Relaxed);
            let d = e[1].load(Ordering::Relaxed);
            if k ^ d == key && d != 0 {
                let bound = Bound::from_bits(d >> 56);
                return Some(TtHit {
                    mv: Move::from_bits(d as u16),
                    score: from_tt((d >> 16) as u16 as i16 as i32, ply, halfmove),
                    eval: (d >> 32) as u16 as i16 as i32,
                    depth: data_depth(d),
                    bound,
                });
            }
        }
        None
    }

    /// Stores what the search learned at a node. `score` is root-relative
    /// (made node-relative here). An existing entry for the same position
    /// keeps its move if none is given and is only overwritten by an exact
    /// bound, a similar or deeper search, or a newer search.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn store(
        &self,
        key: u64,
        ply: usize,
        mv: Move,
        score: i32,
        eval: i32,
        depth: i32,
        bound: Bound,
    ) {
        let b = self.bucket(key);
        let gen_now = self.generation;
        // Pick the slot: the same key if present, else the least valuable
        // entry (shallow and old).
        let mut victim = 0;
        let mut victim_worth = i32::MAX;
        let mut same: Option<(usize, u64)> = None;
        for (i, e) in b.0.chunks_exact(2).enumerate() {
            let k = e[0].load(Ordering::Relaxed);
            let d = e[1].load(Ordering::Relaxed);
            if k ^ d == key && d != 0 {
                same = Some((i, d));
                break;
            }
            let age = (gen_now.wrapping_sub(data_generation(d)) & GEN_MASK) as i32;
            let worth = if d == 0 {
                i32::MIN
            } else {
                data_depth(d) - 8 * age
            };
            if worth < victim_worth {
                victim_worth = worth;
                victim = i;
            }
        }
        let (slot, mv) = match same {
            Some((i, old)) => {
                let old_depth = data_depth(old);
                let old_gen = data_generation(old);
                if bound != Bound::Exact && depth + 4 <= old_depth && old_gen == gen_now {
                    return;
                }
                let mv = if mv.is_none() {
                    Move::from_bits(old as u16)
                } else {
                    mv
                };
                (i, mv)
            }
            None => (victim, mv),
        };
        let data = pack(mv, to_tt(score, ply), eval, depth, bound, gen_now);
        b.0[2 * slot].store(key ^ data, Ordering::Relaxed);
        b.0[2 * slot + 1].store(data, Ordering::Relaxed);
    }

    /// Permille of sampled entries written by the current search.
    pub fn hashfull(&self) -> u32 {
        let sample = self.buckets.len().min(250);
        let mut used = 0;
        for b in &self.buckets[..sample] {
            for e in b.0.chunks_exact(2) {
                let d = e[1].load(Ordering::Relaxed);
                if d != 0 && data_generation(d) == self.generation {
                    used += 1;
                }
            }
        }
        (used * 1000 / (sample * ENTRIES).max(1)) as u32
    }

    /// The table as a flat sequence of words (for saving to a file).
    pub fn raw_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.buckets
            .iter()
            .flat_map(|b| b.0.iter().map(|w| w.load(Ordering::Relaxed)))
    }

    fn buckets_for(mb: usize) -> usize {
        ((mb.max(1) << 20) / std::mem::size_of::<Bucket>()).max(1)
    }

    /// The `word_count` of a table of `mb` MiB, without allocating it.
    pub fn word_count_for(mb: usize) -> usize {
        Self::buckets_for(mb) * 2 * ENTRIES
    }

    /// Number of words `raw_words` yields.
    pub fn word_count(&self) -> usize {
        self.buckets.len() * 2 * ENTRIES
    }

    /// Overwrites the table from words in `raw_words` order; returns false
    /// (and leaves the table cleared) if the count does not match.
    pub fn load_words(&mut self, words: &[u64], generation: u8) -> bool {
        if words.len() != self.word_count() {
            self.clear();
            return false;
        }
        for (w, &v) in self
            .buckets
            .iter_mut()
            .flat_map(|b| b.0.iter_mut())
            .zip(words)
        {
            *w.get_mut() = v;
        }
        self.generation = generation & GEN_MASK;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Position;
    use crate::engine::score::{MATE, mate_in, mated_in};

    #[test]
    fn a_table_beyond_the_machine_is_as_big_as_it_can_be() {
        // An exbibyte: no machine maps it; the engine must not abort.
        let huge = 1 << 40;
        let mut tt = TranspositionTable::new(huge);
        assert!((1..huge).contains(&tt.size_mb()), "{}", tt.size_mb());
        tt.resize(2);
        assert_eq!(tt.size_mb(), 2);
    }

    #[test]
    fn store_probe_round_trip() {
        let tt = TranspositionTable::new(1);
        let pos = Position::startpos();
        let mv = pos.legal_moves()[3];
        tt.store(pos.key(), 0, mv, 37, -12, 9, Bound::Exact);
        let hit = tt.probe(pos.key(), 0, 0).expect("hit");
        assert_eq!(
            hit,
            TtHit {
                mv,
                score: 37,
                eval: -12,
                depth: 9,
                bound: Bound::Exact
            }
        );
        assert!(tt.probe(pos.key() ^ 1, 0, 0).is_none());
    }

    #[test]
    fn mate_scores_are_node_relative() {
        let tt = TranspositionTable::new(1);
        // Found at ply 5: we mate at ply 9 of the root, 4 plies from here.
        tt.store(42, 5, Move::NONE, mate_in(9), 0, 3, Bound::Lower);
        // Reached again at ply 2: the mate is 4 plies from here, 6 from root.
        let hit = tt.probe(42, 2, 0).expect("hit");
        assert_eq!(hit.score, mate_in(6));
        tt.store(43, 3, Move::NONE, mated_in(7), 0, 3, Bound::Upper);
        assert_eq!(tt.probe(43, 10, 0).expect("hit").score, mated_in(14));
        // qsearch depth fits.
        tt.store(44, 1, Move::NONE, -5, 0, -1, Bound::Upper);
        assert_eq!(tt.probe(44, 1, 0).expect("hit").depth, -1);
        // A mate too far for the 50-move clock is not trusted as a mate.
        tt.store(45, 0, Move::NONE, mate_in(21), 0, 3, Bound::Lower);
        assert!(tt.probe(45, 0, 90).expect("hit").score < MATE - 21);
    }

    #[test]
    fn generation_and_hashfull() {
        let mut tt = TranspositionTable::new(1);
        assert_eq!(tt.hashfull(), 0);
        for k in 0..200_000u64 {
            tt.store(
                k.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                0,
                Move::NONE,
                1,
                1,
                1,
                Bound::Lower,
            );
        }
        assert!(tt.hashfull() > 900);
        tt.new_search();
        assert_eq!(tt.hashfull(), 0);
        let words: Vec<u64> = tt.raw_words().collect();
        let g = tt.generation();
        let mut other = TranspositionTable::new(1);
        assert!(other.load_words(&words, g));
        assert_eq!(other.raw_words().collect::<Vec<_>>(), words);
        tt.clear();
        assert_eq!(tt.raw_words().filter(|&w| w != 0).count(), 0);
    }
}
