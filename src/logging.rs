//! Log output of the daemon commands: lines on stderr, `RUST_LOG`
//! choosing the level (default `info`). Under journald (`$JOURNAL_STREAM`
//! names our stderr) a line has no timestamp of its own, journald adding
//! one, and starts with its level as a syslog priority (`<4>` for a
//! warning), which journald reads (`journalctl -p warning`).

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, format};
use tracing_subscriber::registry::LookupSpan;

/// Installs the global subscriber (a second call does nothing).
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if stderr_is_journal() {
        builder
            .with_ansi(false)
            .event_format(Journald(format().without_time()))
            .try_init()
    } else {
        builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init()
    };
}

/// Prints `error: TEXT` on stderr: the last word of a command that
/// failed, at error priority under journald.
pub fn print_error(text: &str) {
    let priority = if stderr_is_journal() { "<3>" } else { "" };
    eprintln!("{priority}error: {text}");
}

/// Whether stderr is the stream systemd connected to journald:
/// `$JOURNAL_STREAM` is `DEVICE:INODE` of that stream (a child whose
/// stderr was redirected elsewhere inherits the variable but not the
/// stream).
fn stderr_is_journal() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Some(var) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let stderr = std::io::stderr();
    let Ok(fd) = stderr.as_fd().try_clone_to_owned() else {
        return false;
    };
    let Ok(meta) = std::fs::File::from(fd).metadata() else {
        return false;
    };
    names_stream(&var.to_string_lossy(), meta.dev(), meta.ino())
}

/// Whether `var` (`$JOURNAL_STREAM`) is `dev:ino`.
fn names_stream(var: &str, dev: u64, ino: u64) -> bool {
    var.split_once(':')
        .is_some_and(|(d, i)| d.parse() == Ok(dev) && i.parse() == Ok(ino))
}

/// The syslog priority journald reads from a `<N>` line prefix.
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// A line format with the event's priority in front.
struct Journald<F>(F);

impl<S, N, F> FormatEvent<S, N> for Journald<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[test]
    fn journal_stream_must_name_our_stream() {
        assert!(names_stream("8:12345", 8, 12345));
        assert!(!names_stream("8:12345", 8, 12346));
        assert!(!names_stream("9:12345", 8, 12345));
        assert!(!names_stream("8", 8, 12345));
        assert!(!names_stream("", 8, 12345));
        assert!(!names_stream("x:y", 8, 12345));
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn journal_lines_have_a_priority_and_no_timestamp() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .event_format(Journald(format().without_time()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("e");
            tracing::warn!(game = "abc", "w");
            tracing::info!("i");
            tracing::debug!("d");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        for (line, (prefix, level)) in lines.iter().zip([
            ("<3>", "ERROR"),
            ("<4>", "WARN"),
            ("<6>", "INFO"),
            ("<7>", "DEBUG"),
        ]) {
            let rest = line
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("{line:?} does not start with {prefix}"));
            assert!(rest.trim_start().starts_with(level), "{line:?}");
        }
        assert!(lines[1].ends_with("w game=\"abc\""), "{:?}", lines[1]);
    }
}
