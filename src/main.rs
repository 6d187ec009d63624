//! The `kaissa` command line.

fn main() {}
