//! The exit status of `kaissa run` and `kaissa check`, and which errors
//! give which. The systemd units name the fatal ones in
//! `RestartPreventExitStatus=`: restarting cannot fix them.

use crate::config::ConfigError;
use crate::lichess::Error as ClientError;
use std::process::ExitCode;

/// Why the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Done, or stopped on request.
    Success = 0,
    /// Anything else (network, a bug): worth a restart.
    Failure = 1,
    /// A bad command line (clap's status for usage errors).
    Usage = 2,
    /// Lichess rejected the token (HTTP 401 or 403): fatal (sysexits
    /// `EX_NOPERM`).
    TokenRejected = 77,
    /// The configuration or the token file is unusable: fatal (sysexits
    /// `EX_CONFIG`).
    Config = 78,
}

impl Status {
    /// The status an error ends the process with, from the first error in
    /// its chain that says.
    pub fn of(error: &anyhow::Error) -> Status {
        error
            .chain()
            .find_map(|e| {
                if e.downcast_ref::<ConfigError>().is_some() {
                    return Some(Status::Config);
                }
                match e.downcast_ref::<ClientError>()? {
                    ClientError::Unauthorized { .. } | ClientError::Forbidden { .. } => {
                        Some(Status::TokenRejected)
                    }
                    ClientError::InvalidOptions(_) => Some(Status::Config),
                    _ => None,
                }
            })
            .unwrap_or(Status::Failure)
    }

    /// The numeric status.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> ExitCode {
        ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn errors_map_to_their_status() {
        let config: anyhow::Result<()> = Err(ConfigError::NoToken).context("token");
        assert_eq!(Status::of(&config.unwrap_err()), Status::Config);
        let rejected: anyhow::Result<()> = Err(ClientError::Unauthorized {
            path: "/api/account".into(),
        })
        .context("the daemon stopped");
        assert_eq!(Status::of(&rejected.unwrap_err()), Status::TokenRejected);
        let forbidden = anyhow::Error::new(ClientError::Forbidden {
            path: "/api/stream/event".into(),
            message: "not a bot".into(),
        });
        assert_eq!(Status::of(&forbidden), Status::TokenRejected);
        let other = anyhow::anyhow!("cannot start the async runtime");
        assert_eq!(Status::of(&other), Status::Failure);
        assert_eq!(
            [Status::Usage, Status::TokenRejected, Status::Config].map(Status::code),
            [2, 77, 78]
        );
    }
}
