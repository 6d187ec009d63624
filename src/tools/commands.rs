//! The offline commands' glue: each runs its tool with the command
//! line's values and prints what came of it (`kaissa perft`, `bench`,
//! `datagen`, `chunk`). `src/main.rs` only dispatches to these.

use crate::chess::{self, Position};
use crate::cli::ChunkCommand;
use crate::engine::bench;
use crate::tools::{chunk, convert, datagen, manifest, packed};
use anyhow::{Context, Result};
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// `kaissa perft`: the node count of `depth` plies, its time and speed
/// (`divide`: each root move's count first).
pub fn perft(depth: u32, fen: Option<&str>, divide: bool, chess960: bool) -> Result<()> {
    let pos = match fen {
        Some(f) => Position::from_fen(f).context("invalid --fen")?,
        None => Position::startpos(),
    };
    let start = Instant::now();
    let nodes = if divide {
        let mut total = 0;
        for (m, n) in chess::divide(&pos, depth, chess960) {
            println!("{m}: {n}");
            total += n;
        }
        println!();
        total
    } else {
        chess::perft(&pos, depth)
    };
    let secs = start.elapsed().as_secs_f64();
    println!("nodes {nodes}");
    println!("time {:.3} s", secs);
    println!("speed {:.1} Mnps", nodes as f64 / secs.max(1e-9) / 1e6);
    Ok(())
}

/// `kaissa bench`: the fixed positions searched to `depth`, their nodes,
/// the total and the speed.
pub fn bench(
    depth: Option<u32>,
    eval_file: &str,
    syzygy: Option<&str>,
    endgames_only: bool,
) -> Result<()> {
    let depth = depth.unwrap_or(bench::DEFAULT_DEPTH).clamp(1, 64);
    let net = crate::engine::nnue::load_eval_file(eval_file)?;
    let tablebases = match syzygy {
        Some(dirs) => Some(std::sync::Arc::new(
            crate::engine::tablebase::Tablebases::open(dirs).context("--syzygy")?,
        )),
        None => None,
    };
    let options = bench::BenchOptions {
        net,
        tablebases,
        endgames_only,
    };
    let r = bench::run(depth, options, &mut |i, fen, nodes| {
        println!("position {:>2} nodes {:>10}  {fen}", i + 1, nodes);
    });
    println!();
    println!("Total time (ms) : {}", r.time.as_millis());
    println!("Nodes searched  : {}", r.nodes);
    println!("Nodes/second    : {}", r.nps());
    if syzygy.is_some() {
        println!("Table hits      : {}", r.tb_hits);
    }
    Ok(())
}

/// The positions of an openings file: a FEN a line (EPD-like: what
/// follows a `;` is ignored), unreadable lines skipped.
fn read_openings(path: &Path) -> Result<Vec<Position>> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut out = Vec::new();
    for line in std::io::BufReader::new(f).lines() {
        let line = line?;
        let fen = line.split(';').next().unwrap_or("").trim();
        if fen.is_empty() {
            continue;
        }
        if let Ok(p) = Position::from_fen(fen) {
            out.push(p);
        }
    }
    anyhow::ensure!(!out.is_empty(), "no valid positions in {}", path.display());
    Ok(out)
}

/// `kaissa datagen`: self-play into chunks in `out`, from the openings
/// file if given.
pub fn datagen(cfg: &datagen::DatagenConfig, openings: Option<&Path>, out: &Path) -> Result<()> {
    let book = match openings {
        Some(p) => read_openings(p)?,
        None => Vec::new(),
    };
    eprintln!(
        "datagen: seed {}, {} threads, {} nodes, chunks into {} every {:.0} min",
        cfg.seed,
        cfg.threads,
        cfg.nodes,
        out.display(),
        cfg.chunk_time.as_secs_f64() / 60.0
    );
    let report = datagen::run(out, &book, cfg, 100, &|games, positions, elapsed| {
        eprintln!(
            "games {games} positions {positions} ({:.0} s)",
            elapsed.as_secs_f64()
        );
    })
    .with_context(|| format!("datagen into {}", out.display()))?;
    println!(
        "{} games, {} positions in {:.0} s on {} threads: {:.0} positions per core-hour; \
         {} chunks, {:.2} bytes a position",
        report.games,
        report.positions,
        report.elapsed.as_secs_f64(),
        report.threads,
        report.per_core_hour(),
        report.chunks,
        report.bytes as f64 / report.positions.max(1) as f64
    );
    Ok(())
}

/// `kaissa chunk ...`.
pub fn chunk(cmd: ChunkCommand) -> Result<ExitCode> {
    match cmd {
        ChunkCommand::Info { files } => {
            for f in files {
                let c = chunk::read_file(&f).with_context(|| format!("reading {}", f.display()))?;
                let h = &c.header;
                let positions = c.positions(&chunk::Filter::default());
                println!(
                    "{}: {} games, {} plies, {} scored, {} positions kept by default; \
                     {} bytes: {:.2} a ply, {:.2} a position kept; nodes {}, seed {}, \
                     net {:016x}, commit {}",
                    f.display(),
                    h.games,
                    h.plies,
                    h.scored,
                    positions,
                    c.bytes,
                    c.bytes as f64 / h.plies.max(1) as f64,
                    c.bytes as f64 / positions.max(1) as f64,
                    h.nodes,
                    h.seed,
                    h.net,
                    h.commit
                );
            }
        }
        ChunkCommand::Seal { dir } => {
            let leftovers = datagen::seal_leftovers(&dir)?;
            for (path, games) in leftovers.sealed {
                println!("sealed {} ({games} games)", path.display());
            }
            for path in leftovers.in_use {
                println!(
                    "left {} alone: a running datagen is writing it",
                    path.display()
                );
            }
        }
        ChunkCommand::Convert {
            input,
            output,
            seed,
            random_plies,
            nodes,
            commit,
            net,
        } => {
            let net = match net {
                Some(hex) => u64::from_str_radix(&hex, 16)
                    .with_context(|| format!("--net {hex:?} is not a hex checksum"))?,
                None => crate::engine::nnue::embedded().checksum,
            };
            let bytes =
                std::fs::read(&input).with_context(|| format!("reading {}", input.display()))?;
            let (records, bad) = packed::read_records(&bytes);
            anyhow::ensure!(bad == 0, "{}: {bad} bad records", input.display());
            let origin = convert::Origin { seed, random_plies };
            let (games, stats) = convert::convert(&records, &origin);
            let dir = output.parent().filter(|p| !p.as_os_str().is_empty());
            let dir = dir.unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let name = output
                .file_stem()
                .context("the output needs a file name")?
                .to_string_lossy();
            let header = chunk::Header {
                commit,
                net,
                nodes,
                seed,
                stride: 1,
                ..chunk::Header::default()
            };
            let mut w = chunk::ChunkWriter::create(dir, &name, header)?;
            for g in &games {
                w.append(g)?;
            }
            let sealed = w.seal()?;
            let size = std::fs::metadata(&sealed)?.len();
            println!(
                "{}: {} records of {} games -> {} games ({} breaks, {} openings not found, \
                 {} bridged plies); {size} bytes, {:.2} a record",
                sealed.display(),
                stats.records,
                stats.source_games,
                stats.games,
                stats.breaks,
                stats.openings_missed,
                stats.bridged,
                size as f64 / stats.records.max(1) as f64
            );
        }
        ChunkCommand::Manifest { dir, check } => {
            let t = if check {
                manifest::check(&dir)?
            } else {
                manifest::update(&dir)?
            };
            println!(
                "{}: {} chunks, {} games, {} positions, {} bytes ({:.2} a position), {} removed",
                dir.display(),
                t.chunks,
                t.games,
                t.positions,
                t.bytes,
                t.bytes as f64 / t.positions.max(1) as f64,
                t.removed
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
