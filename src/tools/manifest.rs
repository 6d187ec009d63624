//! The manifest of a training-data directory (`training/data/MANIFEST.tsv`):
//! one line a chunk, present or removed, written by `kaissa chunk
//! manifest` and checked against the files by a test.
//!
//! A chunk is immutable: a line, once written, never changes, except that
//! a chunk taken out of the checkout (`git rm`, when its generation is
//! superseded) is marked `removed`, and git's history keeps its bytes.

use super::chunk::{self, Chunk, ChunkError, Filter};
use std::fmt::Write as _;
use std::path::Path;

/// The manifest's file name in its directory.
pub const FILE: &str = "MANIFEST.tsv";
/// At most this many bytes of chunks are checked out.
pub const MAX_PRESENT_BYTES: u64 = 50 << 20;

const COLUMNS: &str =
    "file\tbytes\tgames\tplies\tpositions\tnodes\tnet\tseed\tcommit\tchecksum\tstate";

const PREAMBLE: &str = "\
# kaissa training data: one line a chunk (src/tools/chunk.rs), written by
# `kaissa chunk manifest DIR`. positions: those `kaissa train` keeps by
# default (scored, quiet, no mate). net: the checksum of the net that
# played (0: the classical eval). state: present, or removed (taken out of
# the checkout when superseded; git keeps it). To restore a removed chunk:
#   c=$(git log --diff-filter=D --format=%H -1 -- training/data/FILE)
#   git checkout \"$c^\" -- training/data/FILE
";

/// One line of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub file: String,
    pub bytes: u64,
    pub games: u64,
    pub plies: u64,
    pub positions: u64,
    pub nodes: u64,
    pub net: u64,
    pub seed: u64,
    pub commit: String,
    pub checksum: u64,
    pub present: bool,
}

impl Entry {
    /// The line of a chunk read from `file`.
    pub fn of_chunk(file: &str, c: &Chunk) -> Entry {
        let h = &c.header;
        Entry {
            file: file.to_owned(),
            bytes: c.bytes,
            games: h.games,
            plies: h.plies,
            positions: c.positions(&Filter::default()),
            nodes: h.nodes,
            net: h.net,
            seed: h.seed,
            commit: h.commit.clone(),
            checksum: h.checksum,
            present: true,
        }
    }

    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:016x}\t{}\t{}\t{:016x}\t{}",
            self.file,
            self.bytes,
            self.games,
            self.plies,
            self.positions,
            self.nodes,
            self.net,
            self.seed,
            self.commit,
            self.checksum,
            if self.present { "present" } else { "removed" }
        )
    }

    fn parse(line: &str) -> Result<Entry, String> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 {
            return Err(format!("{} fields, want 11", f.len()));
        }
        let num = |i: usize| {
            f[i].parse::<u64>()
                .map_err(|_| format!("bad number {:?}", f[i]))
        };
        let hex =
            |i: usize| u64::from_str_radix(f[i], 16).map_err(|_| format!("bad hex {:?}", f[i]));
        Ok(Entry {
            file: f[0].to_owned(),
            bytes: num(1)?,
            games: num(2)?,
            plies: num(3)?,
            positions: num(4)?,
            nodes: num(5)?,
            net: hex(6)?,
            seed: num(7)?,
            commit: f[8].to_owned(),
            checksum: hex(9)?,
            present: match f[10] {
                "present" => true,
                "removed" => false,
                s => return Err(format!("bad state {s:?}")),
            },
        })
    }
}

/// Why a manifest does not match its directory.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{FILE} line {line}: {what}")]
    Line { line: usize, what: String },
    #[error("{file}: {source}")]
    Chunk { file: String, source: ChunkError },
    #[error("{0}")]
    Mismatch(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads `dir`'s manifest (none yet: empty).
pub fn read(dir: &Path) -> Result<Vec<Entry>, ManifestError> {
    let text = match std::fs::read_to_string(dir.join(FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty() && *l != COLUMNS)
        .map(|(i, l)| Entry::parse(l).map_err(|what| ManifestError::Line { line: i + 1, what }))
        .collect()
}

/// Reads every sealed chunk of `dir` as a manifest line.
fn scan(dir: &Path) -> Result<Vec<Entry>, ManifestError> {
    chunk::chunks_in(dir)?
        .iter()
        .map(|p| {
            let file = p
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            chunk::read_file(p)
                .map(|c| Entry::of_chunk(&file, &c))
                .map_err(|source| ManifestError::Chunk { file, source })
        })
        .collect()
}

/// The totals of a checked manifest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub chunks: u64,
    pub games: u64,
    pub positions: u64,
    pub bytes: u64,
    pub removed: u64,
}

fn totals(entries: &[Entry]) -> Totals {
    let mut t = Totals::default();
    for e in entries {
        if e.present {
            t.chunks += 1;
            t.games += e.games;
            t.positions += e.positions;
            t.bytes += e.bytes;
        } else {
            t.removed += 1;
        }
    }
    t
}

/// Rewrites `dir`'s manifest: a line for every chunk there (the lines of
/// chunks already listed are checked, not rewritten), and the lines of
/// listed chunks that are gone marked removed.
pub fn update(dir: &Path) -> Result<Totals, ManifestError> {
    let mut entries = read(dir)?;
    let found = scan(dir)?;
    for e in &mut entries {
        e.present = found.iter().any(|f| f.file == e.file);
    }
    for f in found {
        match entries.iter().find(|e| e.file == f.file) {
            Some(e) if *e != f => {
                return Err(ManifestError::Mismatch(format!(
                    "{} differs from its line: chunks are immutable (a new run writes a new chunk)",
                    f.file
                )));
            }
            Some(_) => {}
            None => entries.push(f),
        }
    }
    let mut text = String::from(PREAMBLE);
    text.push_str(COLUMNS);
    text.push('\n');
    for e in &entries {
        let _ = writeln!(text, "{}", e.line());
    }
    std::fs::write(dir.join(FILE), text)?;
    Ok(totals(&entries))
}

/// Checks that `dir`'s manifest lists exactly its chunks, each as it is
/// (size, counts, checksum), that no removed chunk is there, and that
/// the chunks checked out stay within [`MAX_PRESENT_BYTES`].
pub fn check(dir: &Path) -> Result<Totals, ManifestError> {
    let entries = read(dir)?;
    let found = scan(dir)?;
    let mut wrong = Vec::new();
    for e in &entries {
        match (found.iter().find(|f| f.file == e.file), e.present) {
            (Some(f), true) if f != e => {
                wrong.push(format!("{}: the file is not its line", e.file))
            }
            (None, true) => wrong.push(format!("{}: listed present, not there", e.file)),
            (Some(_), false) => wrong.push(format!("{}: listed removed, still there", e.file)),
            _ => {}
        }
    }
    for f in &found {
        if !entries.iter().any(|e| e.file == f.file) {
            wrong.push(format!("{}: not in {FILE}", f.file));
        }
    }
    let t = totals(&entries);
    if t.bytes > MAX_PRESENT_BYTES {
        wrong.push(format!(
            "{} bytes of chunks checked out, more than {MAX_PRESENT_BYTES}: remove a superseded generation",
            t.bytes
        ));
    }
    if wrong.is_empty() {
        Ok(t)
    } else {
        Err(ManifestError::Mismatch(wrong.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Position;
    use crate::tools::chunk::{ChunkWriter, Game, Header};

    fn chunk(dir: &Path, name: &str, seed: u64) {
        let mut w = ChunkWriter::create(
            dir,
            name,
            Header {
                seed,
                nodes: 5000,
                ..Header::default()
            },
        )
        .unwrap();
        let pos = Position::startpos();
        let mut g = Game::new(pos.clone());
        g.push(pos.legal_moves().as_slice()[0], Some(12));
        w.append(&g).unwrap();
        w.seal().unwrap();
    }

    /// The repository's own data: every chunk checked out is listed as it
    /// is, and the checkout stays within its size.
    #[test]
    fn the_repository_training_data_matches_its_manifest() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("training/data");
        let t = check(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(t.chunks > 0 && t.positions > 0, "{t:?}");
    }

    #[test]
    fn a_manifest_lists_its_chunks_and_keeps_the_removed_ones() {
        let dir = tempfile::tempdir().unwrap();
        chunk(dir.path(), "a", 1);
        chunk(dir.path(), "b", 2);
        assert!(matches!(check(dir.path()), Err(ManifestError::Mismatch(_))));
        let t = update(dir.path()).unwrap();
        assert_eq!((t.chunks, t.games, t.positions), (2, 2, 2));
        assert_eq!(check(dir.path()).unwrap(), t);

        std::fs::remove_file(dir.path().join("a.kgc")).unwrap();
        let err = check(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a.kgc: listed present, not there"), "{err}");
        let t = update(dir.path()).unwrap();
        assert_eq!((t.chunks, t.removed), (1, 1));
        check(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(
            text.contains("a.kgc\t") && text.contains("\tremoved\n"),
            "{text}"
        );

        // A chunk rewritten under a listed name is refused.
        chunk(dir.path(), "b", 3);
        assert!(check(dir.path()).is_err());
        assert!(update(dir.path()).is_err());
    }
}
