//! The chunk file: whole self-play games in under 3 bytes a position, as
//! `kaissa datagen` writes them into `training/data/` and `kaissa train`
//! reads them (choosing its positions at load, see [`Filter`]).
//!
//! A chunk is a 128-byte header and then its games, back to back.
//! Header (little-endian):
//!
//! | bytes    | field                                                      |
//! |----------|------------------------------------------------------------|
//! | 0..8     | magic `KSGAMES\0`                                          |
//! | 8..12    | format version (1)                                         |
//! | 12..16   | header length (128)                                        |
//! | 16..56   | the generator's git commit, ASCII, zero-padded             |
//! | 56..64   | checksum of the net that played (0: the classical eval)    |
//! | 64..72   | soft node limit a move                                     |
//! | 72..80   | seed                                                       |
//! | 80..88   | number of the first game (game i of the chunk is numbered  |
//! |          | first + i * stride; unusable openings leave gaps)          |
//! | 88..92   | stride (u32)                                               |
//! | 92..96   | 1 when sealed, 0 while being written (`.part`)             |
//! | 96..104  | games                                                      |
//! | 104..112 | plies (moves stored)                                       |
//! | 112..120 | scored positions                                           |
//! | 120..128 | FNV-1a 64 of the games' bytes, continued over bytes 0..120 |
//!
//! A game: one byte, the start (bits 0-1: 0 the standard start position,
//! 1 a FEN follows as a length byte and ASCII) and the result (bits 2-3:
//! 0 Black won, 1 draw, 2 White won); the number of moves (varint); per
//! move, its index among the legal moves of the position sorted by
//! [`move_key`] (one byte; no position has more than 218) and the score
//! of the position before it; then the score of the final position.
//! A score is a varint: 0 for none (the random opening plies, a bridged
//! gap), otherwise the zigzag of its difference from the last score
//! given, in centipawns from White's view, plus one.
//!
//! Every searched position is stored with its score, checks, captures
//! and mate scores included: which of them to learn from is the reader's
//! choice, not the file's.

use super::packed::{GameResult, PackedBoard};
use crate::chess::{CastlingNotation, Move, Position};
use crate::engine::movepick::is_noisy;
use crate::engine::nnue::{FNV_OFFSET, fnv1a64};
use crate::engine::score::{MATE_BOUND, is_mate};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub const MAGIC: [u8; 8] = *b"KSGAMES\0";
pub const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 128;
/// Extension of a sealed chunk; one being written ends in `.part`.
pub const EXTENSION: &str = "kgc";
pub const PART_EXTENSION: &str = "part";

/// The commit this binary was built from (`unknown` outside a checkout).
pub const BUILD_COMMIT: &str = env!("KAISSA_COMMIT");

/// Why bytes are not a chunk.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    #[error("not a chunk file (bad magic)")]
    Magic,
    #[error("chunk format version {0}, this build reads {VERSION}")]
    Version(u32),
    #[error("truncated: {0}")]
    Truncated(&'static str),
    #[error("checksum mismatch: stored {stored:016x}, computed {computed:016x}")]
    Checksum { stored: u64, computed: u64 },
    #[error("game {game}: {what}")]
    Game { game: u64, what: String },
    #[error("header says {header} {what}, the games have {found}")]
    Count {
        what: &'static str,
        header: u64,
        found: u64,
    },
    #[error("the chunk is not sealed (a .part file: `kaissa chunk seal` it)")]
    Unsealed,
    #[error("a running datagen is writing it (it holds the file's lock)")]
    InUse,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What a chunk says of itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub commit: String,
    pub net: u64,
    pub nodes: u64,
    pub seed: u64,
    pub first_game: u64,
    pub stride: u32,
    pub sealed: bool,
    pub games: u64,
    pub plies: u64,
    pub scored: u64,
    pub checksum: u64,
}

impl Header {
    fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
        let commit = self.commit.as_bytes();
        let n = commit.len().min(40);
        b[16..16 + n].copy_from_slice(&commit[..n]);
        b[56..64].copy_from_slice(&self.net.to_le_bytes());
        b[64..72].copy_from_slice(&self.nodes.to_le_bytes());
        b[72..80].copy_from_slice(&self.seed.to_le_bytes());
        b[80..88].copy_from_slice(&self.first_game.to_le_bytes());
        b[88..92].copy_from_slice(&self.stride.to_le_bytes());
        b[92..96].copy_from_slice(&u32::from(self.sealed).to_le_bytes());
        b[96..104].copy_from_slice(&self.games.to_le_bytes());
        b[104..112].copy_from_slice(&self.plies.to_le_bytes());
        b[112..120].copy_from_slice(&self.scored.to_le_bytes());
        b[120..128].copy_from_slice(&self.checksum.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Result<Header, ChunkError> {
        if b.len() < 16 || b[0..8] != MAGIC {
            return Err(if b.len() < 8 || b[0..8] == MAGIC {
                ChunkError::Truncated("header")
            } else {
                ChunkError::Magic
            });
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(ChunkError::Version(version));
        }
        if b.len() < HEADER_BYTES || u32_at(12) as usize != HEADER_BYTES {
            return Err(ChunkError::Truncated("header"));
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let commit = &b[16..56];
        let end = commit.iter().position(|&c| c == 0).unwrap_or(40);
        Ok(Header {
            commit: String::from_utf8_lossy(&commit[..end]).into_owned(),
            net: u64_at(56),
            nodes: u64_at(64),
            seed: u64_at(72),
            first_game: u64_at(80),
            stride: u32_at(88),
            sealed: u32_at(92) == 1,
            games: u64_at(96),
            plies: u64_at(104),
            scored: u64_at(112),
            checksum: u64_at(120),
        })
    }

    /// The checksum of a chunk with this header and these games' bytes.
    fn checksum_of(&self, payload_hash: u64) -> u64 {
        fnv1a64(payload_hash, &self.to_bytes()[..120])
    }
}

/// One game as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    pub start: Position,
    pub result: GameResult,
    pub moves: Vec<Move>,
    /// The score of the position before each move and of the final one
    /// (`moves.len() + 1` entries), centipawns from White's view.
    pub scores: Vec<Option<i32>>,
}

impl Game {
    /// A game from `start` with nothing played yet.
    pub fn new(start: Position) -> Game {
        Game {
            start,
            result: GameResult::Draw,
            moves: Vec::new(),
            scores: vec![None],
        }
    }

    /// Plays `m` (legal in the current position), which was chosen with
    /// `score` for the position before it.
    pub fn push(&mut self, m: Move, score: Option<i32>) {
        *self.scores.last_mut().expect("one score a position") = score;
        self.moves.push(m);
        self.scores.push(None);
    }

    /// Every position of the game, the start first.
    pub fn positions(&self) -> Vec<Position> {
        let mut out = Vec::with_capacity(self.moves.len() + 1);
        let mut pos = self.start.clone();
        for &m in &self.moves {
            let next = pos.play(m);
            out.push(pos);
            pos = next;
        }
        out.push(pos);
        out
    }

    /// How many positions have a score.
    pub fn scored(&self) -> u64 {
        self.scores.iter().filter(|s| s.is_some()).count() as u64
    }
}

/// Which stored positions a trainer learns from. Always left out: those
/// without a score, in check, with a mate score, or whose move played (the
/// search's best) is a capture or a promotion: the evaluation would be
/// taken mid-exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Positions before this ply (counted from the game's start) are
    /// left out too.
    pub min_ply: usize,
}

impl Filter {
    /// Whether the position at `ply`, scored `score`, followed by `next`
    /// (`None` at the end of the game), is one to learn from.
    pub fn keeps(&self, ply: usize, pos: &Position, next: Option<Move>, score: i32) -> bool {
        ply >= self.min_ply
            && !pos.in_check()
            && !is_mate(score)
            && score.abs() < MATE_BOUND
            && next.is_none_or(|m| !is_noisy(pos, m) && !m.is_promotion())
    }

    /// The positions of `game` it keeps, as training records numbered
    /// `number`.
    pub fn records(&self, game: &Game, number: u32) -> Vec<PackedBoard> {
        let positions = game.positions();
        let mut out = Vec::new();
        for (ply, pos) in positions.iter().enumerate() {
            let Some(score) = game.scores[ply] else {
                continue;
            };
            if self.keeps(ply, pos, game.moves.get(ply).copied(), score) {
                let s = score.clamp(i16::MIN as i32, i16::MAX as i32) as i16;
                out.push(PackedBoard::from_position(pos, s, game.result, number));
            }
        }
        out
    }
}

/// The fixed order of moves the stored indices refer to: from square,
/// then destination (a castling move is king takes own rook), then the
/// promotion role (none first).
pub fn move_key(m: Move) -> u16 {
    let promo = m.promotion_role().map_or(0, |r| r as u16 + 1);
    m.from().index() as u16 | (m.to().index() as u16) << 6 | promo << 12
}

fn sorted_moves(pos: &Position) -> Vec<Move> {
    let mut moves: Vec<Move> = pos.legal_moves().iter().copied().collect();
    moves.sort_unstable_by_key(|&m| move_key(m));
    moves
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_score(out: &mut Vec<u8>, score: Option<i32>, last: &mut i32) {
    match score {
        None => out.push(0),
        Some(s) => {
            let d = i64::from(s) - i64::from(*last);
            let zigzag = ((d << 1) ^ (d >> 63)) as u64;
            put_varint(out, zigzag + 1);
            *last = s;
        }
    }
}

/// Appends the encoding of `game` to `out`.
pub fn encode_game(game: &Game, out: &mut Vec<u8>) {
    let start_fen = game.start.to_fen(CastlingNotation::Shredder);
    let standard = game.start == Position::startpos();
    out.push(u8::from(!standard) | (game.result as u8) << 2);
    if !standard {
        let fen = start_fen.as_bytes();
        out.push(fen.len() as u8);
        out.extend_from_slice(fen);
    }
    put_varint(out, game.moves.len() as u64);
    let mut pos = game.start.clone();
    let mut last = 0;
    for (ply, &m) in game.moves.iter().enumerate() {
        let index = sorted_moves(&pos)
            .iter()
            .position(|&x| x == m)
            .expect("a stored move is legal");
        out.push(index as u8);
        put_score(out, game.scores[ply], &mut last);
        pos = pos.play(m);
    }
    put_score(out, game.scores[game.moves.len()], &mut last);
}

/// A reader of games' bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.bytes.get(self.at).ok_or("cut short")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    }

    fn score(&mut self, last: &mut i32) -> Result<Option<i32>, String> {
        let v = self.varint()?;
        if v == 0 {
            return Ok(None);
        }
        let z = v - 1;
        let d = (z >> 1) as i64 ^ -((z & 1) as i64);
        let s = i32::try_from(i64::from(*last) + d).map_err(|_| "score out of range")?;
        *last = s;
        Ok(Some(s))
    }

    fn game(&mut self) -> Result<Game, String> {
        let first = self.byte()?;
        let result = match first >> 2 {
            0 => GameResult::BlackWon,
            1 => GameResult::Draw,
            2 => GameResult::WhiteWon,
            x => return Err(format!("bad result {x}")),
        };
        let start = match first & 3 {
            0 => Position::startpos(),
            1 => {
                let n = self.byte()? as usize;
                let fen = self
                    .bytes
                    .get(self.at..self.at + n)
                    .ok_or("cut short in the FEN")?;
                self.at += n;
                let fen = std::str::from_utf8(fen).map_err(|_| "FEN not ASCII")?;
                Position::from_fen(fen).map_err(|e| format!("start FEN {fen:?}: {e}"))?
            }
            x => return Err(format!("bad start kind {x}")),
        };
        let n = self.varint()? as usize;
        if n > 100_000 {
            return Err(format!("{n} moves"));
        }
        let mut game = Game::new(start);
        game.result = result;
        let mut pos = game.start.clone();
        let mut last = 0;
        for ply in 0..n {
            let index = self.byte()? as usize;
            let moves = sorted_moves(&pos);
            let m = *moves
                .get(index)
                .ok_or_else(|| format!("ply {ply}: move {index} of {}", moves.len()))?;
            let score = self.score(&mut last)?;
            game.push(m, score);
            pos = pos.play(m);
        }
        let final_score = self.score(&mut last)?;
        *game.scores.last_mut().expect("one score a position") = final_score;
        Ok(game)
    }
}

/// A whole chunk, read and checked.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub header: Header,
    pub games: Vec<Game>,
    /// The file's length in bytes.
    pub bytes: u64,
}

impl Chunk {
    /// Positions that `filter` keeps.
    pub fn positions(&self, filter: &Filter) -> u64 {
        self.games
            .iter()
            .map(|g| filter.records(g, 0).len() as u64)
            .sum()
    }
}

/// Reads a sealed chunk, checking its checksum and counts.
pub fn read(bytes: &[u8]) -> Result<Chunk, ChunkError> {
    let header = Header::from_bytes(bytes)?;
    if !header.sealed {
        return Err(ChunkError::Unsealed);
    }
    let payload = &bytes[HEADER_BYTES..];
    let computed = header.checksum_of(fnv1a64(FNV_OFFSET, payload));
    if computed != header.checksum {
        return Err(ChunkError::Checksum {
            stored: header.checksum,
            computed,
        });
    }
    let (games, _) = read_games(payload, true)?;
    let plies: u64 = games.iter().map(|g| g.moves.len() as u64).sum();
    let scored: u64 = games.iter().map(Game::scored).sum();
    for (what, stated, found) in [
        ("games", header.games, games.len() as u64),
        ("plies", header.plies, plies),
        ("scored positions", header.scored, scored),
    ] {
        if stated != found {
            return Err(ChunkError::Count {
                what,
                header: stated,
                found,
            });
        }
    }
    Ok(Chunk {
        header,
        games,
        bytes: bytes.len() as u64,
    })
}

/// Reads a chunk file.
pub fn read_file(path: &Path) -> Result<Chunk, ChunkError> {
    read(&std::fs::read(path)?)
}

/// Whether `bytes` begin like a chunk.
pub fn is_chunk(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// The games of `payload` and the length of its whole games; `strict`:
/// a damaged or cut game is an error, otherwise where reading stops.
fn read_games(payload: &[u8], strict: bool) -> Result<(Vec<Game>, usize), ChunkError> {
    let mut cur = Cursor {
        bytes: payload,
        at: 0,
    };
    let mut games = Vec::new();
    while cur.at < payload.len() {
        let at = cur.at;
        match cur.game() {
            Ok(g) => games.push(g),
            Err(what) if strict => {
                return Err(ChunkError::Game {
                    game: games.len() as u64,
                    what,
                });
            }
            Err(_) => return Ok((games, at)),
        }
    }
    Ok((games, cur.at))
}

/// Writes one chunk: games are appended to `NAME.part` (each flushed
/// whole), and [`ChunkWriter::seal`] writes the final header and renames
/// it `NAME.kgc`.
pub struct ChunkWriter {
    out: BufWriter<File>,
    part: PathBuf,
    header: Header,
    payload_hash: u64,
    buf: Vec<u8>,
}

impl ChunkWriter {
    /// Starts `dir/name.part` (replacing one a stopped run left there).
    /// The writer holds the file's lock until it is sealed or dropped, so
    /// neither another run's `seal_leftovers` nor `kaissa chunk seal`
    /// seals it under it.
    pub fn create(dir: &Path, name: &str, header: Header) -> io::Result<ChunkWriter> {
        let part = dir.join(format!("{name}.{PART_EXTENSION}"));
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&part)?;
        lock(&file).map_err(|e| match e {
            ChunkError::Io(e) => e,
            e => io::Error::other(format!("{}: {e}", part.display())),
        })?;
        file.set_len(0)?;
        let header = Header {
            sealed: false,
            games: 0,
            plies: 0,
            scored: 0,
            checksum: 0,
            ..header
        };
        file.write_all(&header.to_bytes())?;
        Ok(ChunkWriter {
            out: BufWriter::new(file),
            part,
            header,
            payload_hash: FNV_OFFSET,
            buf: Vec::new(),
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Appends a game and flushes it to the file.
    pub fn append(&mut self, game: &Game) -> io::Result<()> {
        self.buf.clear();
        encode_game(game, &mut self.buf);
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        self.payload_hash = fnv1a64(self.payload_hash, &self.buf);
        self.header.games += 1;
        self.header.plies += game.moves.len() as u64;
        self.header.scored += game.scored();
        Ok(())
    }

    /// Writes the final header, syncs and renames the file to its sealed
    /// name, which is returned.
    pub fn seal(mut self) -> io::Result<PathBuf> {
        self.header.sealed = true;
        self.header.checksum = self.header.checksum_of(self.payload_hash);
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&self.header.to_bytes())?;
        file.sync_all()?;
        let sealed = self.part.with_extension(EXTENSION);
        std::fs::rename(&self.part, &sealed)?;
        Ok(sealed)
    }
}

/// Takes `file`'s exclusive lock without waiting: `InUse` if a running
/// datagen (a `ChunkWriter`) holds it.
fn lock(file: &File) -> Result<(), ChunkError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(ChunkError::InUse),
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Seals a `.part` file left by a stopped run: its whole games are kept,
/// a game cut short is dropped. Returns the sealed path and its games.
/// A file a running datagen still writes is refused (`InUse`).
pub fn seal_part(part: &Path) -> Result<(PathBuf, u64), ChunkError> {
    let mut file = OpenOptions::new().read(true).write(true).open(part)?;
    lock(&file)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let mut header = Header::from_bytes(&bytes)?;
    let (games, len) = read_games(&bytes[HEADER_BYTES..], false)?;
    let payload = &bytes[HEADER_BYTES..HEADER_BYTES + len];
    header.sealed = true;
    header.games = games.len() as u64;
    header.plies = games.iter().map(|g| g.moves.len() as u64).sum();
    header.scored = games.iter().map(Game::scored).sum();
    header.checksum = header.checksum_of(fnv1a64(FNV_OFFSET, payload));
    file.set_len((HEADER_BYTES + len) as u64)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header.to_bytes())?;
    file.sync_all()?;
    let sealed = part.with_extension(EXTENSION);
    std::fs::rename(part, &sealed)?;
    Ok((sealed, header.games))
}

/// The `.part` files of `dir`, sorted.
pub fn parts_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    files_in(dir, PART_EXTENSION)
}

/// The sealed chunks of `dir`, sorted.
pub fn chunks_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    files_in(dir, EXTENSION)
}

fn files_in(dir: &Path, ext: &str) -> io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short game with a castle, a capture, a promotion, an unscored
    /// ply and a mate score.
    fn sample_game(start: &str, moves: &[&str]) -> Game {
        let mut g = Game::new(Position::from_fen(start).unwrap());
        let mut pos = g.start.clone();
        for (i, uci) in moves.iter().enumerate() {
            let m = *pos
                .legal_moves()
                .iter()
                .find(|m| m.to_uci(false) == *uci)
                .unwrap_or_else(|| panic!("{uci} is legal"));
            let score = match i {
                0 => None,
                1 => Some(-31_990),
                _ => Some(i as i32 * 37 - 100),
            };
            g.push(m, score);
            pos = pos.play(m);
        }
        *g.scores.last_mut().unwrap() = Some(5);
        g.result = GameResult::WhiteWon;
        g
    }

    fn games() -> Vec<Game> {
        vec![
            sample_game(
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                &[
                    "e2e4", "d7d5", "e4d5", "g8f6", "g1f3", "f6d5", "f1c4", "e7e6", "e1g1",
                ],
            ),
            sample_game("8/P7/8/8/8/8/6k1/K7 w - - 0 1", &["a7a8q", "g2g3", "a8b8"]),
            sample_game(
                "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
                &["g1f2", "b8c7", "f2g1"],
            ),
        ]
    }

    fn write_chunk(dir: &Path, games: &[Game]) -> PathBuf {
        let header = Header {
            commit: "0123abc".into(),
            net: 0xfeed,
            nodes: 5000,
            seed: 77,
            first_game: 3,
            stride: 2,
            ..Header::default()
        };
        let mut w = ChunkWriter::create(dir, "t", header).unwrap();
        for g in games {
            w.append(g).unwrap();
        }
        w.seal().unwrap()
    }

    #[test]
    fn games_round_trip_through_a_sealed_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let games = games();
        let path = write_chunk(dir.path(), &games);
        assert_eq!(path.extension().unwrap(), EXTENSION);
        let chunk = read_file(&path).unwrap();
        assert_eq!(chunk.games, games);
        let h = &chunk.header;
        assert_eq!(
            (h.commit.as_str(), h.net, h.nodes, h.seed),
            ("0123abc", 0xfeed, 5000, 77)
        );
        assert_eq!((h.first_game, h.stride, h.games, h.plies), (3, 2, 3, 15));
        // Every position but each game's first is scored.
        assert_eq!(h.scored, 9 + 3 + 3);
    }

    #[test]
    fn a_damaged_chunk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_chunk(dir.path(), &games());
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(read(&flipped), Err(ChunkError::Checksum { .. })));
        let mut count = good.clone();
        count[96] += 1;
        assert!(matches!(read(&count), Err(ChunkError::Checksum { .. })));
        assert!(matches!(read(&good[..100]), Err(ChunkError::Truncated(_))));
        assert!(matches!(read(b"KSGAMEZ\0rest"), Err(ChunkError::Magic)));
    }

    #[test]
    fn a_part_left_by_a_stopped_run_is_sealed_without_its_cut_game() {
        let dir = tempfile::tempdir().unwrap();
        let games = games();
        let mut w = ChunkWriter::create(dir.path(), "cut", Header::default()).unwrap();
        for g in &games {
            w.append(g).unwrap();
        }
        drop(w);
        let part = dir.path().join("cut.part");
        let len = std::fs::metadata(&part).unwrap().len();
        // Cut the last game short, as a kill mid-write would.
        OpenOptions::new()
            .write(true)
            .open(&part)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        assert!(matches!(read_file(&part), Err(ChunkError::Unsealed)));
        assert_eq!(parts_in(dir.path()).unwrap(), vec![part.clone()]);
        let (sealed, n) = seal_part(&part).unwrap();
        assert_eq!(n, 2);
        assert_eq!(read_file(&sealed).unwrap().games, games[..2]);
        assert!(parts_in(dir.path()).unwrap().is_empty());
        assert_eq!(chunks_in(dir.path()).unwrap(), vec![sealed]);
    }

    #[test]
    fn a_part_file_being_written_is_never_sealed_under_its_writer() {
        // Two runs may share a directory: one run's start (or `kaissa
        // chunk seal`) must seal what stopped runs left, never the file
        // a live writer still appends to.
        let dir = tempfile::tempdir().unwrap();
        let games = games();
        let mut live = ChunkWriter::create(dir.path(), "live", Header::default()).unwrap();
        live.append(&games[0]).unwrap();
        let part = dir.path().join("live.part");
        assert!(matches!(seal_part(&part), Err(ChunkError::InUse)));
        let again = ChunkWriter::create(dir.path(), "live", Header::default());
        assert!(again.is_err());
        let leftovers = crate::tools::datagen::seal_leftovers(dir.path()).unwrap();
        assert!(leftovers.sealed.is_empty());
        assert_eq!(leftovers.in_use, vec![part.clone()]);
        // Still whole and still its writer's.
        live.append(&games[1]).unwrap();
        let sealed = live.seal().unwrap();
        assert_eq!(read_file(&sealed).unwrap().games, games[..2]);

        // Once its run stops, the file is a leftover like any other.
        let mut stopped = ChunkWriter::create(dir.path(), "stopped", Header::default()).unwrap();
        stopped.append(&games[2]).unwrap();
        drop(stopped);
        let leftovers = crate::tools::datagen::seal_leftovers(dir.path()).unwrap();
        assert_eq!(leftovers.sealed.len(), 1);
        assert!(leftovers.in_use.is_empty());
        assert_eq!(
            read_file(&leftovers.sealed[0].0).unwrap().games,
            games[2..3]
        );
    }

    #[test]
    fn the_filter_keeps_quiet_scored_positions_only() {
        let g = &games()[0];
        let records = Filter::default().records(g, 9);
        // Ply 0 has no score, ply 1 a mate score; then 2 (e4xd5, a
        // capture), 5 (Nxd5, a capture) and 8 (castling, quiet) ...
        let fens: Vec<String> = records.iter().map(|r| r.to_fen()).collect();
        assert_eq!(records.len(), 6, "{fens:#?}");
        assert!(
            records
                .iter()
                .all(|r| r.game == 9 && r.result == GameResult::WhiteWon)
        );
        let from_ply_5 = Filter { min_ply: 5 }.records(g, 9);
        assert_eq!(from_ply_5.len(), 4);
        // a7a8q (scored here), then g2g3 with a mate score, Qa8b8 (kept),
        // and the final position, Black in check: the promotion is left out.
        let mut promo = games()[1].clone();
        promo.scores[0] = Some(900);
        let kept = Filter::default().records(&promo, 0);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].to_fen(), "Q7/8/8/8/8/6k1/8/K7 w - - 0 1");
    }

    #[test]
    fn moves_are_indexed_in_key_order() {
        let pos = Position::startpos();
        let sorted = sorted_moves(&pos);
        assert_eq!(sorted.len(), 20);
        assert!(sorted.windows(2).all(|w| move_key(w[0]) < move_key(w[1])));
        assert_eq!(sorted[0].to_uci(false), "b1a3");
    }
}
