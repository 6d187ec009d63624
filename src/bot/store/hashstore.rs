//! Where each game's transposition table is kept between runs: one file per
//! game id under `engine.state_dir/hash/`, saved while the game goes on,
//! loaded when the game is resumed after a restart, deleted when it ends,
//! swept when stale (at start and periodically), and kept under a total
//! size: the oldest files go first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Files not written for this long belong to games long over (a running
/// game rewrites its file every few moves); they are deleted at start.
pub const STALE_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);

/// Save the table after every this many of our moves. A SIGKILL loses at
/// most the moves since; the save itself runs on the engine thread after
/// our move has been posted, on the opponent's time.
pub const SAVE_EVERY_MOVES: usize = 4;

/// A periodic save is made only with at least this much on our clock...
const SAVE_MIN_CLOCK: Duration = Duration::from_secs(30);
/// ... and this many times what a save takes: it runs on the opponent's
/// time, but a quick reply (a premove, a bot) waits for it.
const SAVE_CLOCK_FACTOR: u32 = 100;
/// A saved table is loaded on resuming a game only with this many times
/// what the load is reckoned to take on our clock (it delays the first
/// search).
const LOAD_CLOCK_FACTOR: u32 = 20;
/// The disk speed a load, or a save before one was timed, is reckoned
/// at: a slow disk's, written and synced.
const RECKONED_BYTES_PER_SEC: f64 = 100.0 * 1024.0 * 1024.0;

const EXTENSION: &str = "hash";

/// What reading or writing a table file of `bytes` is reckoned to take.
pub fn reckoned_io(bytes: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / RECKONED_BYTES_PER_SEC)
}

/// Whether a periodic save that takes `took` (the last one's time, else
/// [`reckoned_io`]) fits our clock `left` (`None`: no clock).
pub fn save_fits(left: Option<Duration>, took: Duration) -> bool {
    left.is_none_or(|left| left >= SAVE_MIN_CLOCK.max(took * SAVE_CLOCK_FACTOR))
}

/// Whether loading a table file of `bytes` fits our clock `left` when a
/// game is resumed (`None`: no clock).
pub fn load_fits(left: Option<Duration>, bytes: u64) -> bool {
    left.is_none_or(|left| left >= reckoned_io(bytes) * LOAD_CLOCK_FACTOR)
}

/// The directory of the hash files, `state_dir/hash`.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("hash")
}

/// The file of one game, or `None` for a game id that is not a plain
/// Lichess id (letters and digits): a hostile id never names a path.
pub fn path(state_dir: &Path, game_id: &str) -> Option<PathBuf> {
    let plain = !game_id.is_empty()
        && game_id.len() <= 32
        && game_id.bytes().all(|b| b.is_ascii_alphanumeric());
    plain.then(|| dir(state_dir).join(format!("{game_id}.{EXTENSION}")))
}

/// Creates the directory (owner-only) if needed.
pub fn prepare(state_dir: &Path) -> std::io::Result<()> {
    let dir = dir(state_dir);
    std::fs::create_dir_all(&dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Deletes the hash files (and leftover temporary files) not modified for
/// `older_than`; returns how many were deleted. Errors on single files are
/// skipped: a sweep never stops the daemon.
pub fn sweep(state_dir: &Path, older_than: Duration, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir(state_dir)) else {
        return 0;
    };
    let mut deleted = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if age >= older_than && std::fs::remove_file(entry.path()).is_ok() {
            deleted += 1;
        }
    }
    deleted
}

/// Deletes the oldest files until the directory holds at most
/// `max_bytes` of them (the files of `keep`, games being played, are not
/// touched); returns how many were deleted.
pub fn cap_total(state_dir: &Path, max_bytes: u64, keep: &[&str]) -> usize {
    let Ok(entries) = std::fs::read_dir(dir(state_dir)) else {
        return 0;
    };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            Some((modified, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    let mut deleted = 0;
    for (_, len, path) in files {
        if total <= max_bytes {
            break;
        }
        let kept = path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|stem| keep.contains(&stem));
        if !kept && std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
            deleted += 1;
        }
    }
    deleted
}

/// Whether `path` is a file of exactly `len` bytes (a table saved with
/// our table size); any other file is refused, not loaded.
pub fn has_len(path: &Path, len: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == len)
}

/// Deletes a finished game's file; a missing file is fine.
pub fn remove(state_dir: &Path, game_id: &str) {
    if let Some(p) = path(state_dir, game_id)
        && let Err(e) = std::fs::remove_file(&p)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(game = %game_id, "cannot delete the hash file {}: {e}", p.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads_fit_the_clock_by_the_table_size() {
        let mib = |n: u64| n << 20;
        let secs = |s: u64| Some(Duration::from_secs(s));
        // 64 MiB: reckoned 0.64 s; a save needs the 30 s floor once timed
        // fast, 64 s before.
        assert_eq!(reckoned_io(mib(64)), Duration::from_millis(640));
        assert!(!save_fits(secs(63), reckoned_io(mib(64))));
        assert!(save_fits(secs(64), reckoned_io(mib(64))));
        assert!(save_fits(secs(30), Duration::from_millis(50)));
        assert!(!save_fits(secs(29), Duration::from_millis(50)));
        // 1 GiB timed at 3 s: five minutes on the clock.
        assert!(!save_fits(secs(299), Duration::from_secs(3)));
        assert!(save_fits(secs(300), Duration::from_secs(3)));
        assert!(save_fits(None, Duration::from_secs(3)));
        // A resumed bullet game does not load a 1 GiB table (10.24 s
        // reckoned: 205 s needed), a 64 MiB one with 13 s left.
        assert!(!load_fits(secs(204), mib(1024)));
        assert!(load_fits(secs(205), mib(1024)));
        assert!(load_fits(secs(13), mib(64)));
        assert!(!load_fits(secs(12), mib(64)));
        assert!(load_fits(None, mib(1024)));
    }

    #[test]
    fn only_plain_game_ids_name_a_file() {
        let dir = Path::new("/state");
        assert_eq!(
            path(dir, "abcd1234"),
            Some(PathBuf::from("/state/hash/abcd1234.hash"))
        );
        for bad in ["", "../etc", "a/b", "a.b", "x y", &"a".repeat(33)] {
            assert_eq!(path(dir, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn sweep_deletes_only_old_files() {
        let state = std::env::temp_dir().join(format!("kaissa-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        prepare(&state).unwrap();
        let file = path(&state, "game0001").unwrap();
        std::fs::write(&file, b"x").unwrap();
        let now = SystemTime::now();
        assert_eq!(sweep(&state, STALE_AFTER, now), 0);
        assert!(file.exists());
        assert_eq!(sweep(&state, STALE_AFTER, now + STALE_AFTER * 2), 1);
        assert!(!file.exists());
        remove(&state, "game0001"); // already gone: no error
        std::fs::remove_dir_all(&state).unwrap();
    }

    #[test]
    fn total_size_is_capped_oldest_first_but_not_played_games() {
        let state = std::env::temp_dir().join(format!("kaissa-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        prepare(&state).unwrap();
        for id in ["old1", "old2", "new3"] {
            std::fs::write(path(&state, id).unwrap(), [0u8; 100]).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(has_len(&path(&state, "old2").unwrap(), 100));
        assert!(!has_len(&path(&state, "old2").unwrap(), 101));
        assert_eq!(cap_total(&state, 300, &[]), 0);
        // old1 is being played: old2 goes instead.
        assert_eq!(cap_total(&state, 200, &["old1"]), 1);
        assert!(path(&state, "old1").unwrap().exists());
        assert!(!path(&state, "old2").unwrap().exists());
        assert_eq!(cap_total(&state, 0, &[]), 2);
        std::fs::remove_dir_all(&state).unwrap();
    }
}
