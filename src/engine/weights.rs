//! The layout of the evaluation weights: the packed mid-game/end-game pair
//! `S`, the offset of every term's weights in `params::WEIGHTS`, their
//! count `N_PARAMS`, and `SECTIONS` (names and lengths, which the tuner
//! writes `params.rs` by). The generated `params.rs` and `eval` both
//! import this file; neither imports the other's layout.
//!
//! Adding an eval term, say "knight on the rim" with one weight:
//! 1. here, an offset after the last one (`pub const KNIGHT_RIM: usize =
//!    TEMPO + 1;`), `N_PARAMS` moved past it (`KNIGHT_RIM + 1`), and a row
//!    in `SECTIONS` (`("knight on the rim", KNIGHT_RIM, 1)`);
//! 2. in `params.rs`, its starting weight(s) under a matching comment, at
//!    the same place in the array (`s(-10, -10),`);
//! 3. in `eval`, count it: `self.add(c, KNIGHT_RIM, n)` (White's counts
//!    add, Black's subtract; the trace records them for the tuner);
//! 4. check the bench signature changed on purpose, then re-tune
//!    (`scripts/tune-eval.sh`) and measure with `scripts/match.py`.

/// A packed (mid-game, end-game) pair, as in Stockfish: the end-game half
/// in the upper 16 bits, so adding two `S` adds both halves at once.
pub type S = i32;

#[inline(always)]
pub const fn s(mg: i32, eg: i32) -> S {
    ((eg as u32) << 16) as i32 + mg
}

#[inline(always)]
pub const fn mg(v: S) -> i32 {
    v as u32 as u16 as i16 as i32
}

#[inline(always)]
pub const fn eg(v: S) -> i32 {
    ((v as u32).wrapping_add(0x8000) >> 16) as u16 as i16 as i32
}

pub const MATERIAL: usize = 0;
pub const PST: usize = MATERIAL + 6;
pub const MOB_KNIGHT: usize = PST + 6 * 64;
pub const MOB_BISHOP: usize = MOB_KNIGHT + 9;
pub const MOB_ROOK: usize = MOB_BISHOP + 14;
pub const MOB_QUEEN: usize = MOB_ROOK + 15;
pub const PASSED: usize = MOB_QUEEN + 28;
pub const PASSED_BLOCKED: usize = PASSED + 8;
pub const PASSED_OWN_KING: usize = PASSED_BLOCKED + 8;
pub const PASSED_THEIR_KING: usize = PASSED_OWN_KING + 8;
pub const CONNECTED: usize = PASSED_THEIR_KING + 8;
pub const ISOLATED: usize = CONNECTED + 8;
pub const DOUBLED: usize = ISOLATED + 1;
pub const BACKWARD: usize = DOUBLED + 1;
pub const SHIELD: usize = BACKWARD + 1;
pub const KING_SEMI_OPEN: usize = SHIELD + 2;
pub const KING_ATTACK: usize = KING_SEMI_OPEN + 1;
pub const SAFE_CHECK: usize = KING_ATTACK + 4;
pub const BISHOP_PAIR: usize = SAFE_CHECK + 4;
pub const ROOK_OPEN: usize = BISHOP_PAIR + 1;
pub const ROOK_SEMI: usize = ROOK_OPEN + 1;
pub const ROOK_7TH: usize = ROOK_SEMI + 1;
pub const OUTPOST: usize = ROOK_7TH + 1;
pub const THREAT_BY_PAWN: usize = OUTPOST + 2;
pub const THREAT_BY_MINOR: usize = THREAT_BY_PAWN + 1;
pub const THREAT_BY_ROOK: usize = THREAT_BY_MINOR + 6;
pub const HANGING: usize = THREAT_BY_ROOK + 6;
pub const TEMPO: usize = HANGING + 1;
pub const N_PARAMS: usize = TEMPO + 1;

/// Name, offset and length of each group of weights (for the tuner's
/// output and for reading the weights file).
pub const SECTIONS: &[(&str, usize, usize)] = &[
    (
        "material (pawn, knight, bishop, rook, queen, king)",
        MATERIAL,
        6,
    ),
    (
        "piece-square: pawn (a1..h1, a2..h2, ... a8..h8; White's view)",
        PST,
        64,
    ),
    ("piece-square: knight", PST + 64, 64),
    ("piece-square: bishop", PST + 128, 64),
    ("piece-square: rook", PST + 192, 64),
    ("piece-square: queen", PST + 256, 64),
    ("piece-square: king", PST + 320, 64),
    ("mobility: knight (safe squares 0..8)", MOB_KNIGHT, 9),
    ("mobility: bishop (0..13)", MOB_BISHOP, 14),
    ("mobility: rook (0..14)", MOB_ROOK, 15),
    ("mobility: queen (0..27)", MOB_QUEEN, 28),
    ("passed pawn by relative rank", PASSED, 8),
    (
        "passed pawn, stop square occupied, by rank",
        PASSED_BLOCKED,
        8,
    ),
    (
        "passed pawn: own king distance to stop square",
        PASSED_OWN_KING,
        8,
    ),
    (
        "passed pawn: enemy king distance to stop square",
        PASSED_THEIR_KING,
        8,
    ),
    (
        "connected pawn (supported or phalanx) by rank",
        CONNECTED,
        8,
    ),
    ("isolated pawn", ISOLATED, 1),
    ("doubled pawn", DOUBLED, 1),
    ("backward pawn", BACKWARD, 1),
    ("king shield pawns on ranks 2 and 3", SHIELD, 2),
    (
        "files next to the king without own pawns",
        KING_SEMI_OPEN,
        1,
    ),
    (
        "king zone squares attacked by knight, bishop, rook, queen",
        KING_ATTACK,
        4,
    ),
    ("safe checks by knight, bishop, rook, queen", SAFE_CHECK, 4),
    ("bishop pair", BISHOP_PAIR, 1),
    ("rook on open file", ROOK_OPEN, 1),
    ("rook on semi-open file", ROOK_SEMI, 1),
    ("rook on the 7th rank", ROOK_7TH, 1),
    ("outpost: knight, bishop", OUTPOST, 2),
    ("pawn attacks a piece", THREAT_BY_PAWN, 1),
    ("minor attacks a weak piece, by victim", THREAT_BY_MINOR, 6),
    ("rook attacks a weak piece, by victim", THREAT_BY_ROOK, 6),
    ("undefended piece attacked", HANGING, 1),
    ("tempo (side to move)", TEMPO, 1),
];
