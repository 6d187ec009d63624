//! The `kaissa` command line: one binary for the bot daemon, the UCI
//! engine and the developer tools.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kaissa::chess::{self, Position};
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
