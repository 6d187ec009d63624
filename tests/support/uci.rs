//! A UCI engine driven over its standard input and output, for the
//! tests that talk to `kaissa uci` (and to Stockfish).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

pub struct Uci {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Uci {
    /// `kaissa uci`.
    pub fn start() -> Uci {
        Uci::command(env!("CARGO_BIN_EXE_kaissa"), &["uci"])
    }

    /// Any UCI engine.
    pub fn command(program: &str, args: &[&str]) -> Uci {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Uci {
            child,
            stdin,
            lines: rx,
        }
    }

    /// Writes raw bytes (a line that need not be UTF-8).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Lines up to and including the first that starts with `prefix`.
    pub fn until(&self, prefix: &str) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no {prefix:?} line; got {out:?}"));
            let done = line.starts_with(prefix);
            out.push(line);
            if done {
                return out;
            }
        }
    }

    pub fn close(mut self) -> Vec<String> {
        self.stdin.take();
        let mut rest = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(30)) {
            rest.push(l);
        }
        let status = self.child.wait().expect("exit");
        assert!(status.success());
        rest
    }
}
