//! The Lichess token: never in the configuration nor on the command line;
//! read from `LICHESS_BOT_TOKEN`, else `lichess.token_file`, else the
//! systemd credential `$CREDENTIALS_DIRECTORY/lichess-token`.

use std::path::{Path, PathBuf};

use crate::lichess::{Token, TokenError};

use super::error::ConfigError;
use super::sections::Config;

/// Environment variable holding the token.
pub const TOKEN_ENV: &str = "LICHESS_BOT_TOKEN";
/// Name of the systemd credential holding the token.
pub const TOKEN_CREDENTIAL: &str = "lichess-token";

/// Where the token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `LICHESS_BOT_TOKEN`.
    Environment,
    /// `lichess.token_file`.
    File(PathBuf),
    /// `$CREDENTIALS_DIRECTORY/lichess-token`.
    Credential(PathBuf),
}

/// A token and what is worth knowing about it.
#[derive(Debug, Clone)]
pub struct LoadedToken {
    pub token: Token,
    pub source: TokenSource,
    /// Things to log at warn level (e.g. a token file others can read).
    pub warnings: Vec<String>,
}

impl Config {
    /// The token from the process environment or files; logs where it came
    /// from and any warning (never the token).
    pub fn token(&self) -> Result<Token, ConfigError> {
        let loaded = self.load_token(&|name| std::env::var_os(name))?;
        for warning in &loaded.warnings {
            tracing::warn!("{warning}");
        }
        tracing::debug!(source = ?loaded.source, "lichess token loaded");
        Ok(loaded.token)
    }

    /// Finds the token: `LICHESS_BOT_TOKEN`, else `lichess.token_file`,
    /// else `$CREDENTIALS_DIRECTORY/lichess-token`. `env` reads a variable.
    pub fn load_token(
        &self,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<LoadedToken, ConfigError> {
        if let Some(value) = env(TOKEN_ENV).filter(|v| !v.is_empty()) {
            let value = value.into_string().map_err(|_| ConfigError::BadToken {
                origin: TOKEN_ENV.to_owned(),
                error: TokenError::InvalidCharacters,
            })?;
            let token = Token::new(value).map_err(|error| ConfigError::BadToken {
                origin: TOKEN_ENV.to_owned(),
                error,
            })?;
            return Ok(LoadedToken {
                token,
                source: TokenSource::Environment,
                warnings: Vec::new(),
            });
        }
        if let Some(path) = &self.lichess.token_file {
            let (token, warnings) = read_token_file(path)?;
            return Ok(LoadedToken {
                token,
                source: TokenSource::File(path.clone()),
                warnings,
            });
        }
        if let Some(dir) = env("CREDENTIALS_DIRECTORY").filter(|v| !v.is_empty()) {
            let path = PathBuf::from(dir).join(TOKEN_CREDENTIAL);
            if path.exists() {
                let (token, warnings) = read_token_file(&path)?;
                return Ok(LoadedToken {
                    token,
                    source: TokenSource::Credential(path),
                    warnings,
                });
            }
        }
        Err(ConfigError::NoToken)
    }
}

/// Reads a token file, with a warning when group or others can read it.
fn read_token_file(path: &Path) -> Result<(Token, Vec<String>), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    let token = Token::new(text).map_err(|error| ConfigError::BadToken {
        origin: path.display().to_string(),
        error,
    })?;
    let mut warnings = Vec::new();
    if let Some(mode) = loose_mode(path) {
        warnings.push(format!(
            "token file {} is readable by group or others (mode {mode:o}); chmod 600 it",
            path.display()
        ));
    }
    Ok((token, warnings))
}

/// The permission bits of a file that group or others can read.
#[cfg(unix)]
fn loose_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_mode(_path: &Path) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn token_from_env_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_fromfile\n").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file.clone());
        let loaded = config
            .load_token(&|name| (name == TOKEN_ENV).then(|| OsString::from("lip_fromenv")))
            .unwrap();
        assert_eq!(loaded.source, TokenSource::Environment);
        assert_eq!(loaded.token, Token::new("lip_fromenv").unwrap());

        let loaded = config.load_token(&no_env).unwrap();
        assert_eq!(loaded.source, TokenSource::File(file));
        assert_eq!(loaded.token, Token::new("lip_fromfile").unwrap());
    }

    #[test]
    fn token_from_credentials_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TOKEN_CREDENTIAL), "lip_cred").unwrap();
        let dir_name = dir.path().as_os_str().to_owned();
        let loaded = Config::default()
            .load_token(&|name| (name == "CREDENTIALS_DIRECTORY").then(|| dir_name.clone()))
            .unwrap();
        assert_eq!(
            loaded.source,
            TokenSource::Credential(dir.path().join(TOKEN_CREDENTIAL))
        );
    }

    #[test]
    fn no_token_is_a_clear_error() {
        let error = Config::default().load_token(&no_env).unwrap_err();
        assert!(matches!(error, ConfigError::NoToken));
        assert!(error.to_string().contains(TOKEN_ENV));
        let mut config = Config::default();
        config.lichess.token_file = Some(PathBuf::from("/nonexistent/token"));
        let error = config.load_token(&no_env).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("token file /nonexistent/token")
        );
    }

    #[test]
    fn bad_token_error_does_not_echo_it() {
        let error = Config::default()
            .load_token(&|name| (name == TOKEN_ENV).then(|| OsString::from("lip secret")))
            .unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[cfg(unix)]
    #[test]
    fn loose_token_file_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_x").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file.clone());

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(config.load_token(&no_env).unwrap().warnings.is_empty());

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let loaded = config.load_token(&no_env).unwrap();
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("640"), "{:?}", loaded.warnings);
        assert!(!loaded.warnings[0].contains("lip_x"));
    }

    #[test]
    fn config_debug_has_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "lip_hidden").unwrap();
        let mut config = Config::default();
        config.lichess.token_file = Some(file);
        let loaded = config.load_token(&no_env).unwrap();
        let text = format!("{config:?} {loaded:?}");
        assert!(!text.contains("lip_hidden"), "{text}");
    }
}
