//! The systemd units: `systemd-analyze verify` is clean and the offline
//! security analysis reports an exposure of at most 2.0. The units are
//! checked as shipped, with only ExecStart pointed at the freshly built
//! binary (verify insists that the executable exists; the shipped units
//! name a bare `kaissa`, which systemd looks up in its fixed path). The ignored test
//! runs `scripts/systemd-test.sh`: the units installed by the README's
//! steps on a real systemd (as root, with debootstrap and systemd-nspawn).

use std::path::Path;
use std::process::Command;

fn prepare(unit: &str, installed_as: &str, dir: &Path) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("systemd")
        .join(unit);
    let text = std::fs::read_to_string(&src).expect("unit file readable");
    // A bare `kaissa`: systemd finds it in /usr/local/bin (the README's
    // install) or /usr/bin (the .deb).
    assert!(text.contains("\nExecStart=kaissa "));
    let text = text.replace(
        "\nExecStart=kaissa ",
        &format!("\nExecStart={} ", env!("CARGO_BIN_EXE_kaissa")),
    );
    let dest = dir.join(installed_as);
    std::fs::write(&dest, text).expect("write unit copy");
    dest
}

fn analyze(args: &[&str]) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .args(args)
        .output()
        .expect("systemd-analyze must be installed (apt-get install systemd)");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn check(unit: &str, installed_as: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = prepare(unit, installed_as, dir.path());
    let path = path.to_str().expect("utf-8 path");

    let (ok, text) = analyze(&["verify", path]);
    assert!(
        ok && text.trim().is_empty(),
        "systemd-analyze verify {unit}:\n{text}"
    );

    let (ok, text) = analyze(&["security", "--offline=true", "--no-pager", path]);
    assert!(ok, "systemd-analyze security {unit}:\n{text}");
    let level: f64 = text
        .lines()
        .find_map(|l| {
            let rest = l.split("Overall exposure level for ").nth(1)?;
            rest.split(':')
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no exposure level in:\n{text}"));
    assert!(level <= 2.0, "{unit}: exposure {level} > 2.0\n{text}");
}

#[test]
fn kaissa_service_is_valid_and_hardened() {
    check("kaissa.service", "kaissa.service");
}

#[test]
fn kaissa_template_is_valid_and_hardened() {
    check("kaissa@.service", "kaissa@alice.service");
}

/// `scripts/systemd-test.sh`, with the binaries cargo built:
/// `cargo build --profile tests --example fake_lichess && cargo test
/// --profile tests --test integration -- --ignored systemd::` (as root;
/// `cargo test --example` would build the example as a test only).
#[test]
#[ignore = "boots a Debian container: needs root, debootstrap and systemd-nspawn"]
fn real_systemd() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(env!("CARGO_BIN_EXE_kaissa"));
    let built = bin.parent().expect("the binary's directory");
    assert!(
        built.join("examples/fake_lichess").exists(),
        "build with --example fake_lichess"
    );
    let status = Command::new("bash")
        .arg(repo.join("scripts/systemd-test.sh"))
        .env("KAISSA_BUILT", built)
        .status()
        .expect("run scripts/systemd-test.sh");
    assert!(status.success(), "scripts/systemd-test.sh failed: {status}");
}
