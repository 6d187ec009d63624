//! Hash files: the transposition table saved to disk and loaded back, so
//! that a game resumed after a restart keeps its analysis.
//!
//! Format (little endian): a 40-byte header, magic `KAISSATT`, format
//! version (u32), entry layout tag (u32), word count (u64), generation
//! (u8, then 7 zero bytes), checksum (u64) of the header fields before it
//! and every word; then the table's words. A file is written to a
//! temporary name beside the target, synced, then renamed over it, so a
//! reader never sees half a file. A file that is missing, short, long,
//! of another version or whose checksum does not match is rejected with
//! the reason, and the table is left as it was.

use super::tt::TranspositionTable;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"KAISSATT";
/// Bumped whenever the file layout changes.
pub const VERSION: u32 = 1;
/// Bumped whenever the table's entry layout (`tt.rs`) changes.
const LAYOUT: u32 = 1;
const HEADER_LEN: usize = 40;
/// Refuse files claiming more than this (64 GiB): a corrupt count must
/// not make us allocate it.
const MAX_WORDS: u64 = 1 << 33;

/// Why a hash file was not written or not loaded.
#[derive(Debug, thiserror::Error)]
pub enum HashFileError {
    #[error("hash file {path}: not found")]
    Missing { path: PathBuf },
    #[error("hash file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("hash file {path}: not a kaissa hash file")]
    NotAHashFile { path: PathBuf },
    #[error("hash file {path}: format version {found} (this build reads {VERSION})")]
    WrongVersion { path: PathBuf, found: u32 },
    #[error("hash file {path}: truncated ({found} bytes, expected {expected})")]
    Truncated {
        path: PathBuf,
        found: u64,
        expected: u64,
    },
    #[error("hash file {path}: {found} bytes, expected {expected}")]
    WrongLength {
        path: PathBuf,
        found: u64,
        expected: u64,
    },
    #[error("hash file {path}: checksum mismatch (corrupted)")]
    Corrupted { path: PathBuf },
}

/// What was saved or loaded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HashFileInfo {
    /// Table size in bytes.
    pub bytes: u64,
    /// Entries in use (nonzero).
    pub used: u64,
}

/// Checksum over 64-bit words: a multiply-xorshift chain, so that any
/// changed, swapped or missing word changes the result.
#[derive(Copy, Clone)]
struct Checksum(u64);

impl Checksum {
    fn new() -> Checksum {
        Checksum(0x6A09_E667_F3BC_C908)
    }

    #[inline]
    fn add(&mut self, w: u64) {
        let x = (self.0 ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

fn header(words: u64, generation: u8, sum: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&LAYOUT.to_le_bytes());
    h[16..24].copy_from_slice(&words.to_le_bytes());
    h[24] = generation;
    h[32..40].copy_from_slice(&sum.to_le_bytes());
    h
}

fn start_sum(words: u64, generation: u8) -> Checksum {
    let mut c = Checksum::new();
    c.add(((VERSION as u64) << 32) | LAYOUT as u64);
    c.add(words);
    c.add(generation as u64);
    c
}

/// The length of the file `save` writes for a table of `mb` MiB: a
/// caller can refuse a file of another size before loading it.
pub fn file_len(mb: usize) -> u64 {
    HEADER_LEN as u64 + TranspositionTable::word_count_for(mb) as u64 * 8
}

/// Writes `tt` to `path` atomically (temporary file, sync, rename).
pub fn save(tt: &TranspositionTable, path: &Path) -> Result<HashFileInfo, HashFileError> {
    let io = |source| HashFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let words = tt.word_count() as u64;
    let generation = tt.generation();
    let mut sum = start_sum(words, generation);
    let mut used = 0;
    for w in tt.raw_words() {
        sum.add(w);
    }
    // Entries are word pairs: count those with data.
    for (i, w) in tt.raw_words().enumerate() {
        if i % 2 == 1 && w != 0 {
            used += 1;
        }
    }
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&header(words, generation, sum.0))?;
        for w in tt.raw_words() {
            out.write_all(&w.to_le_bytes())?;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(HashFileInfo {
        bytes: words * 8,
        used,
    })
}

/// Reads `path` and, only if it is a complete and intact hash file,
/// replaces `tt` with it (resizing the table to the file's size).
pub fn load(tt: &mut TranspositionTable, path: &Path) -> Result<HashFileInfo, HashFileError> {
    let p = || path.to_path_buf();
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => HashFileError::Missing { path: p() },
        _ => HashFileError::Io {
            path: p(),
            source: e,
        },
    })?;
    let len = file
        .metadata()
        .map_err(|e| HashFileError::Io {
            path: p(),
            source: e,
        })?
        .len();
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut h = [0u8; HEADER_LEN];
    if len < HEADER_LEN as u64 {
        return Err(if len >= 8 && !starts_with_magic(&mut input)? {
            HashFileError::NotAHashFile { path: p() }
        } else {
            HashFileError::Truncated {
                path: p(),
                found: len,
                expected: HEADER_LEN as u64,
            }
        });
    }
    input.read_exact(&mut h).map_err(|e| HashFileError::Io {
        path: p(),
        source: e,
    })?;
    if &h[0..8] != MAGIC {
        return Err(HashFileError::NotAHashFile { path: p() });
    }
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let version = u32_at(8);
    if version != VERSION || u32_at(12) != LAYOUT {
        return Err(HashFileError::WrongVersion {
            path: p(),
            found: version,
        });
    }
    let words = u64_at(16);
    let generation = h[24];
    let stored_sum = u64_at(32);
    if words == 0 || words > MAX_WORDS || words % 8 != 0 || h[25..32].iter().any(|&b| b != 0) {
        return Err(HashFileError::Corrupted { path: p() });
    }
    let expected = HEADER_LEN as u64 + words * 8;
    if len < expected {
        return Err(HashFileError::Truncated {
            path: p(),
            found: len,
            expected,
        });
    }
    if len > expected {
        return Err(HashFileError::WrongLength {
            path: p(),
            found: len,
            expected,
        });
    }
    let mut data = Vec::with_capacity(words as usize);
    let mut sum = start_sum(words, generation);
    let mut buf = [0u8; 8];
    for _ in 0..words {
        input.read_exact(&mut buf).map_err(|e| HashFileError::Io {
            path: p(),
            source: e,
        })?;
        let w = u64::from_le_bytes(buf);
        sum.add(w);
        data.push(w);
    }
    if sum.0 != stored_sum {
        return Err(HashFileError::Corrupted { path: p() });
    }
    tt.resize_words(words as usize);
    if !tt.load_words(&data, generation) {
        // resize_words gave the table exactly this many words.
        return Err(HashFileError::Corrupted { path: p() });
    }
    let used = data.iter().skip(1).step_by(2).filter(|&&w| w != 0).count() as u64;
    Ok(HashFileInfo {
        bytes: words * 8,
        used,
    })
}

fn starts_with_magic(input: &mut impl Read) -> Result<bool, HashFileError> {
    let mut m = [0u8; 8];
    Ok(input.read_exact(&mut m).is_ok() && &m == MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Move;
    use crate::engine::tt::Bound;

    fn filled() -> TranspositionTable {
        let mut tt = TranspositionTable::new(1);
        tt.new_search();
        tt.new_search();
        for k in 0..20_000u64 {
            tt.store(
                k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
                0,
                Move::NONE,
                (k % 300) as i32 - 150,
                7,
                (k % 20) as i32,
                Bound::Lower,
            );
        }
        tt
    }

    #[test]
    fn round_trip_and_rejections() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("table.hash");
        let tt = filled();
        let info = save(&tt, &path).expect("saved");
        assert_eq!(info.bytes, 1 << 20);
        assert!(info.used > 10_000);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        // Loaded into a table of another size: it takes the file's.
        let mut other = TranspositionTable::new(2);
        let back = load(&mut other, &path).expect("loaded");
        assert_eq!(back, info);
        assert_eq!(other.generation(), tt.generation());
        assert!(other.raw_words().eq(tt.raw_words()));

        let bytes = std::fs::read(&path).unwrap();
        let sentinel = || {
            let t = TranspositionTable::new(1);
            t.store(99, 0, Move::NONE, 5, 5, 5, Bound::Exact);
            t
        };
        let check = |name: &str, content: &[u8], want: &dyn Fn(&HashFileError) -> bool| {
            let p = dir.path().join(name);
            std::fs::write(&p, content).unwrap();
            let mut t = sentinel();
            let err = load(&mut t, &p).expect_err(name);
            assert!(want(&err), "{name}: {err}");
            assert!(!err.to_string().is_empty());
            // The table is untouched.
            assert!(t.raw_words().eq(sentinel().raw_words()), "{name}");
        };
        check("truncated", &bytes[..bytes.len() - 8], &|e| {
            matches!(e, HashFileError::Truncated { .. })
        });
        check("header-only", &bytes[..20], &|e| {
            matches!(e, HashFileError::Truncated { .. })
        });
        check("empty", &[], &|e| {
            matches!(e, HashFileError::Truncated { .. })
        });
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 8]);
        check("longer", &longer, &|e| {
            matches!(e, HashFileError::WrongLength { .. })
        });
        let mut flipped = bytes.clone();
        let mid = HEADER_LEN + (bytes.len() - HEADER_LEN) / 2;
        flipped[mid] ^= 0x10;
        check("flipped", &flipped, &|e| {
            matches!(e, HashFileError::Corrupted { .. })
        });
        let mut generation = bytes.clone();
        generation[24] ^= 1;
        check("generation", &generation, &|e| {
            matches!(e, HashFileError::Corrupted { .. })
        });
        let mut count = bytes.clone();
        count[16..24].copy_from_slice(&(u64::MAX / 16).to_le_bytes());
        check("huge count", &count, &|e| {
            matches!(e, HashFileError::Corrupted { .. })
        });
        let mut version = bytes.clone();
        version[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        check(
            "version",
            &version,
            &|e| matches!(e, HashFileError::WrongVersion { found, .. } if *found == VERSION + 1),
        );
        check(
            "text",
            b"this is not a hash file at all, really not.",
            &|e| matches!(e, HashFileError::NotAHashFile { .. }),
        );
        let mut t = sentinel();
        assert!(matches!(
            load(&mut t, &dir.path().join("absent")),
            Err(HashFileError::Missing { .. })
        ));
        // Saving where it cannot be written is an error, not a panic.
        assert!(save(&tt, &dir.path().join("no/such/dir/t.hash")).is_err());
    }
}
