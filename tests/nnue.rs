//! NNUE: the incrementally updated accumulators equal a full refresh
//! along random games (standard chess and Chess960: castling with
//! overlapping squares, en passant, promotions, captures, null moves);
//! every SIMD path gives the scalar path's results; the net loader refuses
//! bad files with a typed error; the trainer lowers the validation loss on
//! a small generated set, deterministically and resumably.

use kaissa::chess::{Color, Move, MoveKind, Position, chess960_start_fen};
use kaissa::engine::eval::evaluate;
use kaissa::engine::nnue::{
    Accumulator, AccumulatorStack, FNV_OFFSET, FormatError, HEADER_BYTES, HIDDEN, INPUTS, Network,
    OUTPUT_BUCKETS, Row, SimdLevel, V1_SCALE, encode_net, evaluate_position, fnv1a64, header_bytes,
    load_eval_file, output, output_bucket, update,
};
use kaissa::tools::packed::{GameResult, PackedBoard, read_records};
use kaissa::tools::train::{Data, TrainConfig, TrainError, Trainer};

use fastrand::Rng;

/// A net with random weights in the ranges a trained net uses.
fn random_net_bytes(seed: u64) -> Vec<u8> {
    random_net_bytes_with(seed, false)
}

/// The same, with king-mirrored inputs if `mirrored`.
fn random_net_bytes_with(seed: u64, mirrored: bool) -> Vec<u8> {
    let mut rng = Rng::with_seed(seed | 1);
    let mut small = |range: i64| rng.i64(-range..=range);
    let fw: Vec<i16> = (0..INPUTS * HIDDEN).map(|_| small(120) as i16).collect();
    let fb: Vec<i16> = (0..HIDDEN).map(|_| (small(100) + 80) as i16).collect();
    let ow: Vec<i16> = (0..2 * HIDDEN).map(|_| small(127) as i16).collect();
    encode_net(&fw, &fb, &ow, &[small(5000) as i32], 300, mirrored)
}

fn random_net(seed: u64) -> Network {
    Network::from_bytes(&random_net_bytes(seed)).unwrap()
}

#[derive(Default, Debug)]
struct Seen {
    castles: usize,
    /// Chess960 castles where a destination is the other piece's (or its
    /// own) start square.
    overlapping_castles: usize,
    en_passant: usize,
    promotions: usize,
    captures: usize,
    null_moves: usize,
    /// King moves between files a-d and e-h (castling included).
    king_crossings: usize,
}

/// Plays a random game from `fen`, pushing each move on the stack and
/// evaluating at irregular plies (so several pending updates are applied
/// at once), comparing with a full refresh.
fn check_playout(net: &Network, fen: &str, rng: &mut Rng, seen: &mut Seen) {
    let mut pos = Position::from_fen(fen).unwrap();
    let mut stack = AccumulatorStack::new();
    stack.reset(net, &pos);
    for ply in 1..120 {
        let moves = pos.legal_moves();
        if moves.is_empty() || pos.halfmove_clock() >= 100 {
            break;
        }
        // Prefer the rare kinds so each game exercises them.
        let special: Vec<Move> = moves
            .iter()
            .copied()
            .filter(|m| !matches!(m.kind(), MoveKind::Normal))
            .collect();
        let null = !pos.in_check() && rng.usize(..20) == 0;
        let m = if null {
            Move::NONE
        } else if !special.is_empty() && rng.usize(..2) == 0 {
            special[rng.usize(..special.len())]
        } else {
            moves[rng.usize(..moves.len())]
        };
        stack.push(ply, &pos, m);
        let next = if null {
            seen.null_moves += 1;
            pos.play_null()
        } else {
            match m.kind() {
                MoveKind::Castle => {
                    seen.castles += 1;
                    let us = pos.turn();
                    let (k, r) = kaissa::chess::castle_destinations(us, m.from(), m.to());
                    if k == m.to() || r == m.from() || k == m.from() || r == m.to() {
                        seen.overlapping_castles += 1;
                    }
                }
                MoveKind::EnPassant => seen.en_passant += 1,
                MoveKind::Promotion(_) => seen.promotions += 1,
                MoveKind::Normal => {}
            }
            if pos.piece_at(m.to()).is_some() && !m.is_castle() {
                seen.captures += 1;
            }
            let before = pos.king(pos.turn());
            let after = pos.play(m).king(pos.turn());
            if (before.file() >= 4) != (after.file() >= 4) {
                seen.king_crossings += 1;
            }
            pos.play(m)
        };
        pos = next;
        if rng.usize(..3) == 0 || ply % 7 == 0 {
            let incremental = stack.evaluate(net, &pos, ply);
            let full = Accumulator::refresh(net, &pos);
            assert_eq!(stack.accumulator(ply), Some(&full), "{fen} ply {ply}");
            assert_eq!(incremental, full.evaluate(net, &pos));
            assert_eq!(incremental, evaluate_position(net, &pos));
        }
    }
}

#[test]
fn incremental_accumulators_equal_a_full_refresh() {
    check_incremental_updates(&random_net(11));
}

#[test]
fn incremental_accumulators_of_a_king_mirrored_net_equal_a_full_refresh() {
    let net = Network::from_bytes(&random_net_bytes_with(11, true)).unwrap();
    assert!(net.mirrored);
    check_incremental_updates(&net);
}

fn check_incremental_updates(net: &Network) {
    let mut rng = Rng::with_seed(0x5eed_1234);
    let mut seen = Seen::default();
    let starts = [
        kaissa::chess::STARTPOS.to_string(),
        // Kiwipete: castling both ways, en passant, captures at once.
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1".to_string(),
        // Promotions with and without capture.
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1".to_string(),
        "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1".to_string(),
    ];
    for fen in &starts {
        for _ in 0..20 {
            check_playout(net, fen, &mut rng, &mut seen);
        }
    }
    for n in (0..960).step_by(7) {
        check_playout(net, &chess960_start_fen(n), &mut rng, &mut seen);
    }
    assert!(seen.castles > 20, "{seen:?}");
    assert!(seen.overlapping_castles > 5, "{seen:?}");
    assert!(seen.en_passant > 5, "{seen:?}");
    assert!(seen.promotions > 20, "{seen:?}");
    assert!(seen.captures > 100, "{seen:?}");
    assert!(seen.null_moves > 20, "{seen:?}");
    assert!(seen.king_crossings > 100, "{seen:?}");
}

#[test]
fn a_king_mirrored_net_sees_a_position_and_its_mirror_alike() {
    let mirrored = Network::from_bytes(&random_net_bytes_with(21, true)).unwrap();
    let plain = Network::from_bytes(&random_net_bytes_with(21, false)).unwrap();
    for (fen, mirror) in [
        (
            "6k1/1p6/8/3n4/5P2/8/6B1/5K2 w - - 0 40",
            "1k6/6p1/8/4n3/2P5/8/1B6/2K5 w - - 0 40",
        ),
        (
            "1k6/1p6/2q5/3n4/5P2/8/6B1/5K2 b - - 0 40",
            "6k1/6p1/5q2/4n3/2P5/8/1B6/2K5 b - - 0 40",
        ),
    ] {
        let (a, b) = (
            Position::from_fen(fen).unwrap(),
            Position::from_fen(mirror).unwrap(),
        );
        assert_eq!(
            evaluate_position(&mirrored, &a),
            evaluate_position(&mirrored, &b),
            "{fen}"
        );
        assert_ne!(
            evaluate_position(&plain, &a),
            evaluate_position(&plain, &b),
            "{fen}"
        );
    }
}

#[test]
fn simd_paths_equal_the_scalar_path() {
    let scalar = SimdLevel::scalar();
    let levels: Vec<SimdLevel> = SimdLevel::available().collect();
    let mut rng = Rng::with_seed(77);
    let row = |rng: &mut Rng, range: u64| {
        let mut r = Row::ZERO;
        for v in &mut r.0 {
            *v = rng.i16(-(range as i16)..=range as i16);
        }
        r
    };
    for round in 0..200 {
        // Wide ranges, so wrapping and clipping are exercised too.
        let range = if round % 2 == 0 { 600 } else { 32767 };
        let inp = row(&mut rng, range);
        let rows: Vec<Row> = (0..4).map(|_| row(&mut rng, range)).collect();
        let (na, ns) = (rng.usize(..3), rng.usize(..3));
        let add: Vec<&Row> = rows[..na].iter().collect();
        let sub: Vec<&Row> = rows[2..2 + ns].iter().collect();
        let mut expected = Row::ZERO;
        update(scalar, &mut expected, &inp, &add, &sub);
        let weights = [row(&mut rng, 127), row(&mut rng, 127)];
        let bias = rng.usize(..20_000) as i32 - 10_000;
        let out = output(scalar, &inp, &expected, &weights, bias, 288);
        for &level in &levels {
            let mut got = Row::ZERO;
            update(level, &mut got, &inp, &add, &sub);
            assert_eq!(got, expected, "{} update, round {round}", level.name());
            let o = output(level, &inp, &expected, &weights, bias, 288);
            assert_eq!(o, out, "{} output, round {round}", level.name());
        }
    }
    // Whole positions through each level.
    let mut net = random_net(5);
    let positions: Vec<Position> = (0..40)
        .map(|n| Position::from_fen(&chess960_start_fen(n * 23)).unwrap())
        .chain([Position::startpos()])
        .collect();
    net.simd = scalar;
    let expected: Vec<i32> = positions
        .iter()
        .map(|p| evaluate_position(&net, p))
        .collect();
    for &level in &levels {
        net.simd = level;
        let got: Vec<i32> = positions
            .iter()
            .map(|p| evaluate_position(&net, p))
            .collect();
        assert_eq!(got, expected, "{}", level.name());
    }
    println!(
        "levels: {:?}",
        levels.iter().map(|l| l.name()).collect::<Vec<_>>()
    );
}

/// `bytes` (version 3, one output bucket, plain inputs) as another
/// version and output scale, its checksum redone.
fn with_header(bytes: &[u8], version: u32, k: u32) -> Vec<u8> {
    let header = header_bytes(version);
    let mut b = bytes[..header - 16].to_vec();
    b[8..12].copy_from_slice(&version.to_le_bytes());
    b[32..36].copy_from_slice(&k.to_le_bytes());
    let buckets: u32 = if version == 1 { 0 } else { 1 };
    b[36..40].copy_from_slice(&buckets.to_le_bytes());
    b.extend_from_slice(&bytes[HEADER_BYTES - 16..HEADER_BYTES - 8]);
    let sum = fnv1a64(fnv1a64(FNV_OFFSET, &b), &bytes[HEADER_BYTES..]);
    b.extend_from_slice(&sum.to_le_bytes());
    b.extend_from_slice(&bytes[HEADER_BYTES..]);
    b
}

#[test]
fn the_output_scale_is_the_files_k_and_a_version_1_file_reads_at_288() {
    let bytes = random_net_bytes(11);
    let positions: Vec<Position> = (0..20)
        .map(|n| Position::from_fen(&chess960_start_fen(n * 37)).unwrap())
        .collect();
    let evals = |bytes: &[u8]| -> Vec<i64> {
        let net = Network::from_bytes(bytes).unwrap();
        positions
            .iter()
            .map(|p| evaluate_position(&net, p) as i64)
            .collect()
    };
    let (k300, k600) = (evals(&bytes), evals(&with_header(&bytes, 3, 600)));
    // Versions 2 and 3 differ in the header only.
    assert_eq!(k300, evals(&with_header(&bytes, 2, 300)));
    assert!(k300.iter().any(|&e| e.abs() > 50), "{k300:?}");
    for (a, b) in k300.iter().zip(&k600) {
        // Twice the K, twice the centipawns (to a truncation).
        assert!((b - 2 * a).abs() <= 1, "{a} {b}");
    }
    // The old header (400, read at 72%) is K = 288.
    let v1 = evals(&with_header(&bytes, 1, 400));
    assert_eq!(v1, evals(&with_header(&bytes, 2, V1_SCALE)));
    assert_ne!(v1, k300);
}

#[test]
fn a_bucketed_net_reads_the_output_layer_of_the_positions_piece_count() {
    // Zero weights; bucket b's bias is worth (b + 1) x 100 centipawns.
    let (qa, qb) = (255, 64);
    let fw = vec![0i16; INPUTS * HIDDEN];
    let fb = vec![0i16; HIDDEN];
    let ow = vec![0i16; OUTPUT_BUCKETS * 2 * HIDDEN];
    let ob: Vec<i32> = (0..OUTPUT_BUCKETS as i32)
        .map(|b| (b + 1) * qa * qb / 2)
        .collect();
    let net = Network::from_bytes(&encode_net(&fw, &fb, &ow, &ob, 200, false)).unwrap();
    assert_eq!(net.buckets(), OUTPUT_BUCKETS);
    for (fen, bucket) in [
        (
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            7,
        ),
        ("4k3/8/8/8/8/8/8/Q3K3 b - - 0 1", 0),
        ("4k3/p7/8/8/8/8/P7/R3K3 w - - 0 1", 0),
        ("4k3/pp6/8/8/8/8/PP6/R3K2R w - - 0 1", 1),
        ("4k3/ppp5/8/8/8/8/PPP5/R3K2R w - - 0 1", 2),
        ("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w - - 0 1", 5),
    ] {
        let pos = Position::from_fen(fen).unwrap();
        assert_eq!(
            output_bucket(pos.occupied().count(), OUTPUT_BUCKETS),
            bucket
        );
        let expected = (bucket as i32 + 1) * 100;
        assert_eq!(evaluate_position(&net, &pos), expected, "{fen}");
        let mut stack = AccumulatorStack::new();
        stack.reset(&net, &pos);
        assert_eq!(stack.evaluate(&net, &pos, 0), expected, "{fen}");
    }
}

#[test]
fn the_loader_refuses_bad_files() {
    let good = random_net_bytes(3);
    assert!(Network::from_bytes(&good).is_ok());

    for len in [
        0,
        7,
        HEADER_BYTES - 1,
        HEADER_BYTES,
        good.len() / 2,
        good.len() - 1,
    ] {
        let err = Network::from_bytes(&good[..len]).err();
        assert!(
            matches!(
                err,
                Some(FormatError::TooShort { .. } | FormatError::Length { .. })
            ),
            "truncated to {len}: {err:?}"
        );
    }
    let mut padded = good.clone();
    padded.push(0);
    assert!(matches!(
        Network::from_bytes(&padded),
        Err(FormatError::Length { .. })
    ));

    // One flipped bit anywhere in the weights: the checksum catches it.
    for at in [
        HEADER_BYTES,
        HEADER_BYTES + 1000,
        good.len() / 2,
        good.len() - 1,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        assert!(
            matches!(Network::from_bytes(&bad), Err(FormatError::Checksum { .. })),
            "flip at {at}"
        );
    }

    let mut bad = good.clone();
    bad[0] = b'X';
    assert_eq!(Network::from_bytes(&bad).err(), Some(FormatError::BadMagic));

    let mut bad = good.clone();
    bad[8..12].copy_from_slice(&4u32.to_le_bytes());
    assert_eq!(
        Network::from_bytes(&bad).err(),
        Some(FormatError::Version { found: 4 })
    );

    // The output scale K: in range from version 2, 400 for version 1.
    for (version, k) in [(3u32, 10u32), (3, 5000), (2, 10), (1, 288)] {
        let mut bad = good.clone();
        bad[8..12].copy_from_slice(&version.to_le_bytes());
        bad[32..36].copy_from_slice(&k.to_le_bytes());
        let err = Network::from_bytes(&bad).err();
        assert_eq!(err, Some(FormatError::Scale { version, scale: k }));
        assert!(err.unwrap().to_string().contains(&format!("K={k}")));
    }

    // Output buckets: 1 or 8, and the payload that goes with them.
    let mut bad = good.clone();
    bad[36..40].copy_from_slice(&3u32.to_le_bytes());
    assert_eq!(
        Network::from_bytes(&bad).err(),
        Some(FormatError::Buckets { found: 3 })
    );
    bad[36..40].copy_from_slice(&8u32.to_le_bytes());
    assert!(matches!(
        Network::from_bytes(&bad),
        Err(FormatError::Length { .. })
    ));

    // The input layout: 0 or 1, and a reserved 0 after it.
    let mut bad = good.clone();
    bad[40..44].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(
        Network::from_bytes(&bad).err(),
        Some(FormatError::Layout { found: 2 })
    );
    let mut bad = good.clone();
    bad[44..48].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(
        Network::from_bytes(&bad).err(),
        Some(FormatError::Reserved { found: 1 })
    );
    // Layout 1 is a king-mirrored net: a valid header, so only the
    // checksum stands in the way.
    let mut bad = good.clone();
    bad[40..44].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        Network::from_bytes(&bad),
        Err(FormatError::Checksum { .. })
    ));

    let mut bad = good.clone();
    bad[16..20].copy_from_slice(&128u32.to_le_bytes());
    let err = Network::from_bytes(&bad).err();
    assert!(
        matches!(err, Some(FormatError::Architecture { hidden: 128, .. })),
        "{err:?}"
    );
    assert!(err.unwrap().to_string().contains("256"));

    let mut bad = good.clone();
    bad[20..24].copy_from_slice(&0u32.to_le_bytes());
    assert!(matches!(
        Network::from_bytes(&bad),
        Err(FormatError::Architecture { activation: 0, .. })
    ));

    // Output weights out of range, with a valid checksum.
    let fw = vec![0i16; INPUTS * HIDDEN];
    let fb = vec![0i16; HIDDEN];
    let mut ow = vec![0i16; 2 * HIDDEN];
    ow[7] = 300;
    assert!(matches!(
        Network::from_bytes(&encode_net(&fw, &fb, &ow, &[0], 300, false)),
        Err(FormatError::OutputWeight {
            index: 7,
            value: 300
        })
    ));

    // Through the EvalFile path: a clear error naming the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.nnue");
    std::fs::write(&path, &good[..1000]).unwrap();
    let msg = load_eval_file(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("bad.nnue") && msg.contains("truncated"),
        "{msg}"
    );
    let missing = dir.path().join("missing.nnue");
    let msg = load_eval_file(missing.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing.nnue"), "{msg}");
    std::fs::write(&path, &good).unwrap();
    assert!(load_eval_file(path.to_str().unwrap()).unwrap().is_some());
    assert!(load_eval_file("classical").unwrap().is_none());
    assert!(load_eval_file("<embedded>").unwrap().is_some());
}

/// Records fabricated from random playouts, scored by the hand-crafted
/// evaluation (White's view) with the result its sign: diverse positions
/// whose labels are mostly material, which even a tiny set teaches.
/// Two files of 32-byte records: random games' quiet positions scored
/// by the hand-crafted evaluation, results by the score.
fn small_files() -> Vec<Vec<u8>> {
    let mut rng = Rng::with_seed(0xda7a);
    let mut files = Vec::new();
    for _ in 0..2 {
        let mut records = Vec::new();
        for game in 0..150u32 {
            let mut pos = Position::startpos();
            let plies = 20 + rng.usize(..60);
            for _ in 0..plies {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos = pos.play(moves[rng.usize(..moves.len())]);
                if pos.in_check() || rng.usize(..4) != 0 {
                    continue;
                }
                let stm = evaluate(&pos).clamp(-3000, 3000);
                let white = if pos.turn() == Color::White {
                    stm
                } else {
                    -stm
                };
                let result = match white {
                    w if w > 150 => GameResult::WhiteWon,
                    w if w < -150 => GameResult::BlackWon,
                    _ => GameResult::Draw,
                };
                records.push(PackedBoard::from_position(&pos, white as i16, result, game));
            }
        }
        files.push(records.iter().flat_map(|r| r.to_bytes()).collect());
    }
    files
}

fn small_data(cfg: &TrainConfig) -> Data {
    let mut data = Data::default();
    for (file, bytes) in small_files().iter().enumerate() {
        // Through the file format, as `kaissa train` reads it.
        let (records, bad) = read_records(bytes);
        assert_eq!(bad, 0);
        data.add_file(file as u64, records, cfg);
    }
    data
}

#[test]
fn training_lowers_the_validation_loss_deterministically() {
    let cfg = TrainConfig {
        epochs: 6,
        batch_size: 64,
        lr: 0.002,
        val_permille: 250,
        threads: 2,
        ..TrainConfig::default()
    };
    let data = small_data(&cfg);
    assert!(data.train.len() > 200, "{}", data.train.len());
    assert!(!data.val.is_empty());

    let mut t = Trainer::new(cfg.clone());
    let before = t.loss(&data.val);
    let first = t.train_epoch(&data).unwrap();
    let ckpt_dir = tempfile::tempdir().unwrap();
    let ckpt = ckpt_dir.path().join("t.ck");
    t.save_checkpoint(&ckpt).unwrap();
    let mut last = first;
    while t.epoch < cfg.epochs {
        last = t.train_epoch(&data).unwrap();
    }
    assert!(
        last.val_loss < before * 0.9,
        "validation loss {before} -> {}",
        last.val_loss
    );
    assert!(last.train_loss < first.train_loss);
    // A mean per position: the first pass starts at the untrained loss.
    assert!(
        first.train_loss > before * 0.3 && first.train_loss < before * 1.2,
        "{before} {}",
        first.train_loss
    );
    println!("validation loss {before:.5} -> {:.5}", last.val_loss);

    // Same seed and threads: the same net, also when resumed.
    let mut again = Trainer::new(cfg.clone());
    while again.epoch < cfg.epochs {
        again.train_epoch(&data).unwrap();
    }
    assert_eq!(again.net_bytes(), t.net_bytes());
    // The checkpoint keeps K and the input layout: a resumed run without
    // --k goes on with its K; another K or layout is refused.
    let unset = TrainConfig {
        k: None,
        ..cfg.clone()
    };
    let mut resumed = Trainer::load_checkpoint(unset, &ckpt).unwrap();
    assert_eq!(resumed.cfg.k, cfg.k);
    for other in [
        TrainConfig {
            k: Some(300),
            ..cfg.clone()
        },
        TrainConfig {
            king_mirror: true,
            ..cfg.clone()
        },
        TrainConfig {
            buckets: OUTPUT_BUCKETS,
            ..cfg.clone()
        },
    ] {
        let err = Trainer::load_checkpoint(other.clone(), &ckpt).err();
        assert!(
            matches!(err, Some(TrainError::Checkpoint { .. })),
            "{other:?}: {err:?}"
        );
    }
    assert_eq!(resumed.epoch, 1);
    while resumed.epoch < cfg.epochs {
        resumed.train_epoch(&data).unwrap();
    }
    assert_eq!(resumed.net_bytes(), t.net_bytes());

    // The written net loads, and it has learned which side is ahead.
    let net = Network::from_bytes(&t.net_bytes()).unwrap();
    let up = Position::from_fen("4k3/8/8/8/8/8/8/QQQ1K3 w - - 0 1").unwrap();
    let down = Position::from_fen("4k3/8/8/8/8/8/8/qqq1K3 w - - 0 1").unwrap();
    assert!(evaluate_position(&net, &up) > evaluate_position(&net, &down));
}

#[test]
fn kaissa_train_fits_k_and_keeps_the_best_epochs_net() {
    let dir = tempfile::tempdir().unwrap();
    for (i, bytes) in small_files().iter().enumerate() {
        std::fs::write(dir.path().join(format!("d{i}.bin")), bytes).unwrap();
    }
    let cfg = TrainConfig {
        epochs: 4,
        batch_size: 64,
        lr: 0.002,
        val_permille: 250,
        k: None,
        buckets: OUTPUT_BUCKETS,
        ..TrainConfig::default()
    };
    let (out, ck) = (dir.path().join("n.nnue"), dir.path().join("n.ck"));
    kaissa::tools::train::run(&[dir.path().to_path_buf()], cfg, &out, &ck, false).unwrap();
    let last = Network::from_bytes(&std::fs::read(&out).unwrap()).unwrap();
    let best =
        Network::from_bytes(&std::fs::read(dir.path().join("n-best.nnue")).unwrap()).unwrap();
    // Results here follow the score at +-150 cp: a small K, fitted, in
    // both files, with their 8 buckets.
    for net in [&last, &best] {
        assert!((50..=200).contains(&net.scale), "K = {}", net.scale);
        assert_eq!(net.buckets(), OUTPUT_BUCKETS);
    }
    assert_eq!(last.scale, best.scale);
}
