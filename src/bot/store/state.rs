//! The daemon's small state files in `engine.state_dir` (the daily bot
//! quota, the bots that declined us, the arenas joined): JSON, written
//! atomically (a temporary file renamed over the old one), so a crash
//! never leaves half a file. A missing file is an empty state; a file
//! that cannot be read or parsed is logged and ignored, never fatal.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The path of state file `name` in `dir`, if there is a state directory.
pub fn path(dir: Option<&Path>, name: &str) -> Option<PathBuf> {
    dir.map(|d| d.join(name))
}

/// Reads a state file: `None` when it is missing, or (logged) unreadable
/// or corrupt.
pub fn load<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), "state file not read ({e}); starting afresh");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            tracing::warn!(path = %path.display(), "state file ignored: not valid ({e})");
            None
        }
    }
}

/// Writes a state file atomically; a failure is logged (the state then
/// lives in memory only).
pub fn save<T: Serialize>(path: &Path, value: &T) {
    if let Err(e) = try_save(path, value) {
        tracing::warn!(path = %path.display(), "state file not written: {e}");
    }
}

/// [`save`] for a file that may hold a secret (an arena's password):
/// readable by the service user alone (mode 0600).
pub fn save_private<T: Serialize>(path: &Path, value: &T) {
    if let Err(e) = try_save_mode(path, value, 0o600) {
        tracing::warn!(path = %path.display(), "state file not written: {e}");
    }
}

fn try_save<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    try_save_mode(path, value, 0o666)
}

fn try_save_mode<T: Serialize>(path: &Path, value: &T, mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    file.write_all(&text)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn round_trip_missing_and_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/x.json");
        assert_eq!(load::<BTreeMap<String, u64>>(&file), None);
        let value: BTreeMap<String, u64> = [("a".to_owned(), 1)].into();
        save(&file, &value);
        assert_eq!(load(&file), Some(value));
        assert!(!dir.path().join("sub/x.json.tmp").exists());
        std::fs::write(&file, b"{not json").unwrap();
        assert_eq!(load::<BTreeMap<String, u64>>(&file), None);
    }

    #[test]
    fn a_private_file_is_the_owner_s_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret.json");
        save_private(&file, &vec!["pw"]);
        save_private(&file, &vec!["pw2"]);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load::<Vec<String>>(&file), Some(vec!["pw2".to_owned()]));
    }
}
