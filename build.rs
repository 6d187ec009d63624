//! Build script: computes the attack tables of `src/chess/attacks.rs` once,
//! at build time, so the hot paths read plain `static` arrays.
//!
//! Sliders use "fancy" magic bitboards. The magic numbers are found here by
//! a trial search with a fixed-seed generator, so the output is
//! deterministic and the repository carries no opaque constants.
//!
//! It also names the commit being built (`KAISSA_COMMIT`, from git, or
//! `unknown` outside a checkout), which training data records.

use std::fmt::Write as _;
use std::{env, fs, path::Path};

const ROOK_DIRS: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

fn on_board(f: i32, r: i32) -> bool {
    (0..8).contains(&f) && (0..8).contains(&r)
}

fn bit(f: i32, r: i32) -> u64 {
    1u64 << (r * 8 + f)
}

/// Attacks of a slider on `sq` along `dirs`, stopping at the first blocker.
fn slide(sq: usize, occ: u64, dirs: &[(i32, i32)]) -> u64 {
    let (f0, r0) = ((sq % 8) as i32, (sq / 8) as i32);
    let mut out = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (f0 + df, r0 + dr);
        while on_board(f, r) {
            out |= bit(f, r);
            if occ & bit(f, r) != 0 {
                break;
            }
            f += df;
            r += dr;
        }
    }
    out
}

/// Relevant occupancy mask: the rays without their last square.
fn mask(sq: usize, dirs: &[(i32, i32)]) -> u64 {
    let (f0, r0) = ((sq % 8) as i32, (sq / 8) as i32);
    let mut out = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (f0 + df, r0 + dr);
        while on_board(f + df, r + dr) {
            out |= bit(f, r);
            f += df;
            r += dr;
        }
    }
    out
}

fn leaper(sq: usize, deltas: &[(i32, i32)]) -> u64 {
    let (f0, r0) = ((sq % 8) as i32, (sq / 8) as i32);
    deltas
        .iter()
        .filter(|&&(df, dr)| on_board(f0 + df, r0 + dr))
        .fold(0, |acc, &(df, dr)| acc | bit(f0 + df, r0 + dr))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn sparse(&mut self) -> u64 {
        self.next() & self.next() & self.next()
    }
}

struct Magic {
    mask: u64,
    magic: u64,
    shift: u32,
    offset: usize,
}

/// Finds a magic for every square and fills the shared attack table.
fn find_magics(dirs: &[(i32, i32)], rng: &mut Rng, table: &mut Vec<u64>) -> Vec<Magic> {
    let mut out = Vec::with_capacity(64);
    for sq in 0..64 {
        let m = mask(sq, dirs);
        let bits = m.count_ones();
        let size = 1usize << bits;
        // Enumerate all subsets of the mask (Carry-Rippler).
        let mut occs = Vec::with_capacity(size);
        let mut sub = 0u64;
        loop {
            occs.push((sub, slide(sq, sub, dirs)));
            sub = sub.wrapping_sub(m) & m;
            if sub == 0 {
                break;
            }
        }
        let shift = 64 - bits;
        let mut slots = vec![0u64; size];
        let mut epoch = vec![0u32; size];
        let mut attempt = 0u32;
        let magic = loop {
            let magic = rng.sparse();
            if (m.wrapping_mul(magic) >> 56).count_ones() < 6 {
                continue;
            }
            attempt += 1;
            let ok = occs.iter().all(|&(occ, att)| {
                let idx = (occ.wrapping_mul(magic) >> shift) as usize;
                if epoch[idx] != attempt {
                    epoch[idx] = attempt;
                    slots[idx] = att;
                    true
                } else {
                    slots[idx] == att
                }
            });
            if ok {
                break magic;
            }
        };
        let offset = table.len();
        table.extend_from_slice(&slots);
        out.push(Magic {
            mask: m,
            magic,
            shift,
            offset,
        });
    }
    out
}

fn write_array(out: &mut String, name: &str, ty: &str, values: &[u64]) {
    writeln!(
        out,
        "pub(crate) static {name}: [{ty}; {}] = [",
        values.len()
    )
    .unwrap();
    for chunk in values.chunks(8) {
        for v in chunk {
            write!(out, "{v:#x},").unwrap();
        }
        out.push('\n');
    }
    out.push_str("];\n");
}

fn write_magics(out: &mut String, name: &str, magics: &[Magic]) {
    writeln!(out, "pub(crate) static {name}: [Magic; 64] = [").unwrap();
    for m in magics {
        writeln!(
            out,
            "Magic {{ mask: {:#x}, magic: {:#x}, shift: {}, offset: {} }},",
            m.mask, m.magic, m.shift, m.offset
        )
        .unwrap();
    }
    out.push_str("];\n");
}

/// The checkout's HEAD commit, if this is a git checkout.
fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && commit.len() == 40).then_some(commit)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KAISSA_COMMIT");
    let commit = env::var("KAISSA_COMMIT")
        .ok()
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    if let Ok(out) = std::process::Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
    {
        let git_dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && !git_dir.is_empty() {
            // A new commit moves HEAD or the branch it names. Only paths
            // that exist: cargo takes a missing one (a checkout without
            // packed-refs) for changed, and rebuilds every time.
            for path in ["HEAD", "refs/heads", "packed-refs"] {
                let path = Path::new(&git_dir).join(path);
                if path.exists() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
    }
    println!("cargo:rustc-env=KAISSA_COMMIT={commit}");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut slider_table = Vec::new();
    let rook = find_magics(&ROOK_DIRS, &mut rng, &mut slider_table);
    let bishop = find_magics(&BISHOP_DIRS, &mut rng, &mut slider_table);

    let knight: Vec<u64> = (0..64)
        .map(|s| {
            leaper(
                s,
                &[
                    (1, 2),
                    (2, 1),
                    (2, -1),
                    (1, -2),
                    (-1, -2),
                    (-2, -1),
                    (-2, 1),
                    (-1, 2),
                ],
            )
        })
        .collect();
    let king: Vec<u64> = (0..64)
        .map(|s| {
            leaper(
                s,
                &[
                    (1, 0),
                    (1, 1),
                    (0, 1),
                    (-1, 1),
                    (-1, 0),
                    (-1, -1),
                    (0, -1),
                    (1, -1),
                ],
            )
        })
        .collect();
    let mut pawn = Vec::with_capacity(128);
    pawn.extend((0..64).map(|s| leaper(s, &[(-1, 1), (1, 1)])));
    pawn.extend((0..64).map(|s| leaper(s, &[(-1, -1), (1, -1)])));

    // between[a][b]: squares strictly between a and b on a shared line;
    // line[a][b]: the whole line through a and b (both included), or 0.
    let mut between = vec![0u64; 64 * 64];
    let mut line = vec![0u64; 64 * 64];
    for a in 0..64 {
        for (dirs, _) in [(&ROOK_DIRS, 0), (&BISHOP_DIRS, 1)] {
            for b in 0..64 {
                if a == b || slide(a, 0, dirs) & (1u64 << b) == 0 {
                    continue;
                }
                line[a * 64 + b] =
                    (slide(a, 0, dirs) & slide(b, 0, dirs)) | (1u64 << a) | (1u64 << b);
                between[a * 64 + b] = slide(a, 1u64 << b, dirs) & slide(b, 1u64 << a, dirs);
            }
        }
    }

    let mut out = String::with_capacity(4 << 20);
    out.push_str("// Generated by build.rs. Do not edit.\n");
    write_magics(&mut out, "ROOK_MAGICS", &rook);
    write_magics(&mut out, "BISHOP_MAGICS", &bishop);
    write_array(&mut out, "SLIDER_ATTACKS", "u64", &slider_table);
    write_array(&mut out, "KNIGHT_ATTACKS", "u64", &knight);
    write_array(&mut out, "KING_ATTACKS", "u64", &king);
    write_array(&mut out, "PAWN_ATTACKS", "u64", &pawn);
    write_array(&mut out, "BETWEEN", "u64", &between);
    write_array(&mut out, "LINE", "u64", &line);

    let dest = Path::new(&env::var("OUT_DIR").unwrap()).join("attack_tables.rs");
    fs::write(dest, out).unwrap();
}
