//! The `kaissa` command line: one binary for the bot daemon, the UCI
//! engine and the developer tools.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kaissa::chess::{self, Position};
use kaissa::engine::bench;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "kaissa",
    version,
    about = "A Lichess bot with its own chess engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaf nodes of the legal move tree (move generator check
    /// and speed test).
    Perft {
        /// Depth in plies.
        depth: u32,
        /// Position to start from (default: the start position).
        #[arg(long)]
        fen: Option<String>,
        /// Print the count below each root move.
        #[arg(long)]
        divide: bool,
        /// Write castling moves king-takes-rook (Chess960 style).
        #[arg(long)]
        chess960: bool,
    },
    /// Speak UCI on stdin/stdout (for chess GUIs and engine matches).
    Uci,
    /// Search a fixed set of positions to a fixed depth and print the
    /// total node count (the search signature) and speed.
    Bench {
        /// Depth in plies.
        depth: Option<u32>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Perft {
            depth,
            fen,
            divide,
            chess960,
        } => run_perft(depth, fen.as_deref(), divide, chess960),
        Command::Uci => {
            kaissa::uci::run(std::io::stdin().lock(), Box::new(std::io::stdout()));
            Ok(())
        }
        Command::Bench { depth } => run_bench(depth),
    }
}

fn run_perft(depth: u32, fen: Option<&str>, divide: bool, chess960: bool) -> Result<()> {
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

fn run_bench(depth: Option<u32>) -> Result<()> {
    let depth = depth.unwrap_or(bench::DEFAULT_DEPTH).clamp(1, 64);
    let r = bench::run(depth, &mut |i, fen, nodes| {
        println!("position {:>2} nodes {:>10}  {fen}", i + 1, nodes);
    });
    println!();
    println!("Total time (ms) : {}", r.time.as_millis());
    println!("Nodes searched  : {}", r.nodes);
    println!("Nodes/second    : {}", r.nps());
    Ok(())
}
