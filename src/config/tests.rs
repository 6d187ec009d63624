//! Loading, overrides, validation and the token, end to end.

use super::*;
use std::io::Write;
use std::time::Duration;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load_str(toml: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(toml.as_bytes()).unwrap();
    Config::load_with_env(Some(file.path()), env(vars))
}

fn error_text(result: Result<Config, ConfigError>) -> String {
    result.expect_err("expected an error").to_string()
}

#[test]
fn defaults_without_file() {
    let config = Config::load_with_env(None, env(&[])).unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(config.lichess.url, "https://lichess.org");
    assert_eq!(config.lichess.stream_timeout(), Duration::from_secs(16));
    assert_eq!(config.lichess.rate_limit_pause(), Duration::from_secs(60));
    assert_eq!(config.bot.concurrency, 1);
    // The host the API specification documents (the old .ovh one is gone).
    assert_eq!(
        config.sources.online_tablebase_url,
        "https://tablebase.lichess.org"
    );
    config.validate().unwrap();
}

#[test]
fn load_reads_the_process_environment() {
    // No KAISSA_<SECTION>__ variables are expected in a test run.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kaissa.toml");
    Config::load(Some(&path)).unwrap();
}

#[test]
fn shipped_file_documents_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/kaissa.toml");
    let config = Config::load_with_env(Some(&path), env(&[])).unwrap();
    assert_eq!(config, Config::default());
}

#[test]
fn file_values_and_env_overrides() {
    let config = load_str(
        "[bot]\nconcurrency = 2\n[challenge]\nvariants = [\"standard\"]\nmin_base = 60\n",
        &[
            ("KAISSA_BOT__CONCURRENCY", "3"),
            ("KAISSA_ENGINE__PONDER", "true"),
            ("KAISSA_CHALLENGE__SPEEDS", "blitz, rapid"),
            ("KAISSA_CHALLENGE__BLOCK_LIST", "12345,Bob"),
            ("KAISSA_CHALLENGE__ALLOW_LIST", ""),
            ("KAISSA_LICHESS__URL", "http://127.0.0.1:9999"),
            ("KAISSA_CHAT__GOODBYE", "42"),
            ("KAISSA_LOG", "debug"),
            ("KAISSA_BOT__PGN_COMMENTS", "clock,pv"),
            ("OTHER_BOT__CONCURRENCY", "9"),
        ],
    )
    .unwrap();
    assert_eq!(config.bot.concurrency, 3);
    assert!(config.engine.ponder);
    assert_eq!(config.challenge.min_base, 60);
    assert_eq!(config.challenge.variants, vec![PlayableVariant::Standard]);
    assert_eq!(
        config.challenge.speeds,
        vec![AcceptedSpeed::Blitz, AcceptedSpeed::Rapid]
    );
    assert_eq!(config.challenge.block_list, vec!["12345", "Bob"]);
    assert!(config.challenge.allow_list.is_empty());
    assert_eq!(config.lichess.url, "http://127.0.0.1:9999");
    assert_eq!(config.chat.goodbye, "42");
    assert_eq!(
        config.bot.pgn_comments,
        vec![PgnComment::Clock, PgnComment::Pv]
    );
}

#[test]
fn single_underscore_env_is_an_error() {
    let text = error_text(Config::load_with_env(
        None,
        env(&[("KAISSA_BOT_CONCURRENCY", "3")]),
    ));
    assert!(text.contains("KAISSA_BOT__CONCURRENCY"), "{text}");
    // Every section: the web server's too.
    let text = error_text(Config::load_with_env(
        None,
        env(&[("KAISSA_WEB_ENABLED", "true")]),
    ));
    assert!(text.contains("KAISSA_WEB__ENABLED"), "{text}");
}

#[test]
fn unknown_keys_are_named() {
    let text = error_text(load_str("[challenge]\nmin_bse = 3\n", &[]));
    assert_eq!(text, "unknown key challenge.min_bse");
    let text = error_text(load_str("colour = 3\n", &[]));
    assert_eq!(text, "unknown key colour");
    let text = error_text(load_str("[enigne]\nthreads = 3\n", &[]));
    assert_eq!(text, "unknown key enigne");
    let text = error_text(Config::load_with_env(
        None,
        env(&[("KAISSA_BOT__CONCURENCY", "3")]),
    ));
    assert_eq!(text, "unknown key bot.concurency");
}

#[test]
fn token_in_config_is_refused_without_echo() {
    let text = error_text(load_str("[lichess]\ntoken = \"lip_secret123\"\n", &[]));
    assert!(text.starts_with("lichess.token:"), "{text}");
    assert!(!text.contains("lip_secret123"), "{text}");
}

#[test]
fn bad_values_are_named() {
    let text = error_text(load_str("[challenge]\nmin_base = \"abc\"\n", &[]));
    assert!(text.starts_with("challenge.min_base: expected"), "{text}");
    let text = error_text(Config::load_with_env(
        None,
        env(&[("KAISSA_CHALLENGE__MIN_BASE", "abc")]),
    ));
    assert!(text.starts_with("challenge.min_base: expected"), "{text}");
    let text = error_text(load_str("[bot]\nconcurrency = -1\n", &[]));
    assert!(text.starts_with("bot.concurrency:"), "{text}");
    let text = error_text(load_str("[engine]\nponder = \"maybe\"\n", &[]));
    assert!(text.starts_with("engine.ponder:"), "{text}");
    let text = error_text(load_str("[challenge]\nvariants = [\"crazyhous\"]\n", &[]));
    assert_eq!(
        text,
        "challenge.variants[0]: unknown value \"crazyhous\"; expected one of: standard, \
         chess960, fromPosition, crazyhouse, antichess, atomic, horde, kingOfTheHill, \
         racingKings, threeCheck"
    );
    let text = error_text(Config::load_with_env(
        None,
        env(&[("KAISSA_CHALLENGE__VARIANTS", "standard,atomc")]),
    ));
    assert!(
        text.starts_with("challenge.variants[1]: unknown value \"atomc\""),
        "{text}"
    );
    let text = error_text(load_str("[bot]\npgn_comments = [\"eval\", \"clk\"]\n", &[]));
    assert_eq!(
        text,
        "bot.pgn_comments[1]: unknown value \"clk\"; expected one of: eval, clock, depth, pv"
    );
    let text = error_text(load_str("[bot]\npgn_file = \"month\"\n", &[]));
    assert_eq!(
        text,
        "bot.pgn_file: unknown value \"month\"; expected one of: game, opponent, all"
    );
    let text = error_text(load_str("[challenge]\nspeeds = [\"ultraBullet\"]\n", &[]));
    assert!(text.starts_with("challenge.speeds"), "{text}");
    let text = error_text(load_str("[bot]\nconcurrency = 3\nconcurrency = 4\n", &[]));
    assert!(text.contains("concurrency"), "{text}");
}

#[test]
fn syntax_error_names_the_file() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(b"[bot\nconcurrency = 1\n").unwrap();
    let text = error_text(Config::load_with_env(Some(file.path()), env(&[])));
    assert!(
        text.starts_with(&file.path().display().to_string()),
        "{text}"
    );
}

#[test]
fn missing_file_is_an_error() {
    let text = error_text(Config::load_with_env(
        Some(Path::new("/nonexistent/kaissa.toml")),
        env(&[]),
    ));
    assert!(text.starts_with("/nonexistent/kaissa.toml:"), "{text}");
}

#[test]
fn validation_names_the_key() {
    let cases = [
        (
            "[challenge]\nmin_base = 600\nmax_base = 300\n",
            "challenge.min_base: 600 is more than challenge.max_base (300)",
        ),
        (
            "[challenge]\nmin_increment = 5\nmax_increment = 2\n",
            "challenge.min_increment:",
        ),
        (
            "[challenge]\nmin_rating = 2500\nmax_rating = 2000\n",
            "challenge.min_rating:",
        ),
        (
            "[bot]\nconcurrency = 0\n",
            "bot.concurrency: must be at least 1",
        ),
        ("[engine]\nthreads = 0\n", "engine.threads:"),
        ("[engine]\nhash_mb = 0\n", "engine.hash_mb:"),
        ("[lichess]\nurl = \"lichess.org\"\n", "lichess.url:"),
        (
            "[web]\nlisten = \"localhost\"\n",
            "web.listen: \"localhost\" is not an address and port",
        ),
        (
            "[lichess]\nstream_timeout_secs = 0\n",
            "lichess.stream_timeout_secs:",
        ),
        (
            "[bot]\nresign_score_cp = 4294967295\n",
            "bot.resign_score_cp: 4294967295 is out of range 1..=100000",
        ),
        ("[bot]\ndraw_score_cp = 200000\n", "bot.draw_score_cp:"),
        (
            "[lichess]\nrate_limit_pause_secs = 99999999999\n",
            "lichess.rate_limit_pause_secs:",
        ),
        (
            "[bot]\nabort_time_secs = 9223372036854775807\n",
            "bot.abort_time_secs:",
        ),
        (
            "[bot]\nshutdown_deadline_secs = 100000\n",
            "bot.shutdown_deadline_secs:",
        ),
        (
            "[engine]\nmove_overhead_ms = 60000\n",
            "engine.move_overhead_ms:",
        ),
        (
            "[challenge]\naccept_bots = false\nonly_bots = true\n",
            "challenge.only_bots:",
        ),
        (
            "[challenge]\nrated = false\ncasual = false\n",
            "challenge.rated",
        ),
        (
            "[challenge]\nblock_list = [\"a b\"]\n",
            "challenge.block_list:",
        ),
        ("[chat]\ngreeting = \"hi {them}\"\n", "chat.greeting:"),
        ("[chat]\ngoodbye = \"{opponent\"\n", "chat.goodbye:"),
        (
            "[sources]\nbook_selection = \"random\"\n",
            "sources.book_selection:",
        ),
        (
            "[sources]\nbook_depth = 1001\n",
            "sources.book_depth: 1001 is out of range 0..=1000",
        ),
        (
            "[sources.books.zh]\nvariants = [\"crazyhouse\"]\n",
            "sources.books.zh.file: is missing",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nvariants = []\n",
            "sources.books.zh.variants: is empty",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nvariants = [\"bughouse\"]\n",
            "sources.books.zh.variants[0]: unknown value \"bughouse\"; expected one of: standard,",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nspeeds = [\"ultraBullet\"]\n",
            "sources.books.zh.speeds[0]: unknown value \"ultraBullet\"; expected one of: bullet,",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\ncolors = [\"red\"]\n",
            "sources.books.zh.colors[0]: unknown value \"red\"; expected one of: white, black",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nselection = \"random\"\n",
            "sources.books.zh.selection: \"random\": use \"weighted\", \"best\" or \"uniform\"",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\ndepth = 1001\n",
            "sources.books.zh.depth: 1001 is out of range 0..=1000",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nmin_weight = 65536\n",
            "sources.books.zh.min_weight: 65536 is out of range 0..=65535",
        ),
        (
            "[sources.books.zh]\nfile = \"zh.bin\"\nweight = 1\n",
            "unknown key sources.books.zh.weight",
        ),
        (
            "[sources.books.\"z h\"]\nfile = \"zh.bin\"\n",
            "sources.books.z h: a book's name is letters",
        ),
        (
            "[matchmaking]\ntime_controls = [\"3+2\", \"2.5+0\"]\n",
            "matchmaking.time_controls: \"2.5+0\" is not a clock Lichess allows (Lichess takes a base of 0, 0.25, 0.5, 0.75, 1 or 1.5 minutes or whole minutes up to 180",
        ),
        (
            "[matchmaking]\ntime_controls = [\"3+61\"]\n",
            "matchmaking.time_controls: \"3+61\" is not a clock",
        ),
        (
            "[matchmaking]\ntime_controls = [\"181+0\"]\n",
            "matchmaking.time_controls: \"181+0\" is not a clock",
        ),
        (
            "[matchmaking]\ntime_controls = [\"0.25+0\"]\n",
            "matchmaking.time_controls: \"0.25+0\" is too fast for a bot",
        ),
        (
            "[sources]\nonline_tablebase_url = \"ftp://x\"\n",
            "sources.online_tablebase_url:",
        ),
        (
            "[sources]\nonline_tablebase_pieces = 9\n",
            "sources.online_tablebase_pieces:",
        ),
        (
            "[sources]\nexplorer_db = \"lichess\"\nexplorer_ratings = [2100]\n",
            "sources.explorer_ratings:",
        ),
        (
            "[sources]\nexplorer_db = \"player\"\n",
            "sources.explorer_player:",
        ),
        (
            "[sources]\nexplorer_sort = \"random\"\n",
            "sources.explorer_sort:",
        ),
        (
            "[sources]\nchessdb_url = \"ftp://x\"\n",
            "sources.chessdb_url:",
        ),
        (
            "[matchmaking]\nmin_rating_diff = 100\nmax_rating_diff = 0\n",
            "matchmaking.min_rating_diff:",
        ),
        (
            "[matchmaking]\ntarget_rating_diff = 500\n",
            "matchmaking.target_rating_diff:",
        ),
        (
            "[matchmaking]\ntime_controls = [\"4d\"]\n",
            "matchmaking.time_controls:",
        ),
        (
            "[challenge.humans]\nmin_rating = 3000\nmax_rating = 2000\n",
            "challenge.humans.min_rating:",
        ),
        (
            "[sources]\ncloud_eval_min_depth = 101\n",
            "sources.cloud_eval_min_depth:",
        ),
        (
            "[sources]\nonline_timeout_ms = 50\n",
            "sources.online_timeout_ms: 50 is out of range 100..=10000",
        ),
        (
            "[sources]\nonline_min_clock_secs = 3601\n",
            "sources.online_min_clock_secs:",
        ),
    ];
    for (toml, expected) in cases {
        let text = error_text(load_str(toml, &[]));
        assert!(text.starts_with(expected), "{toml:?} gave {text:?}");
    }
    let long = format!("[chat]\ngoodbye_spectator = \"{}\"\n", "x".repeat(141));
    let text = error_text(load_str(&long, &[]));
    assert!(text.starts_with("chat.goodbye_spectator:"), "{text}");
}

#[test]
fn books_are_asked_by_name_then_book_files_each_for_its_games() {
    use crate::lichess::model::{Color, Speed, VariantKey};
    let book = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gnuchess-2ply.bin");
    let config = load_str(
        &format!(
            "[sources]\nbook_files = [\"{book}\"]\nbook_selection = \"best\"\nbook_depth = 8\n\
             [sources.books.zh]\nfile = \"{book}\"\nvariants = [\"crazyhouse\", \"atomic\"]\n\
             speeds = [\"blitz\"]\ncolors = [\"black\"]\nselection = \"uniform\"\n\
             depth = 4\nmin_weight = 100\n\
             [sources.books.a960]\nfile = \"{book}\"\nvariants = [\"chess960\"]\n\
             [sources.books.off]\nfile = \"{book}\"\ndepth = 0\n"
        ),
        &[],
    )
    .unwrap();
    let books = config.sources.open_books().unwrap();
    let names: Vec<&str> = books.iter().map(|b| b.name.as_str()).collect();
    // By name, `book_files` last; depth 0 is no book.
    assert_eq!(names, ["a960", "zh", "book_files"]);
    let (a960, zh, files) = (&books[0], &books[1], &books[2]);
    use crate::engine::book::Selection;
    assert_eq!(
        (
            zh.played.selection,
            zh.played.max_plies,
            zh.played.min_weight
        ),
        (Selection::Uniform, 8, 100)
    );
    assert_eq!(
        (files.played.selection, files.played.max_plies),
        (Selection::Best, 16)
    );
    let admits = |b: &GameBook, v, s, c| b.admits(v, s, c);
    assert!(admits(zh, VariantKey::Atomic, Speed::Blitz, Color::Black));
    assert!(!admits(zh, VariantKey::Atomic, Speed::Blitz, Color::White));
    assert!(!admits(zh, VariantKey::Atomic, Speed::Rapid, Color::Black));
    assert!(!admits(zh, VariantKey::Horde, Speed::Blitz, Color::Black));
    // Chess960 only where a book names it; book_files in standard chess
    // and games from a position, at every speed, for both colours.
    assert!(admits(
        a960,
        VariantKey::Chess960,
        Speed::Bullet,
        Color::White
    ));
    assert!(!admits(
        a960,
        VariantKey::Standard,
        Speed::Bullet,
        Color::White
    ));
    for v in [VariantKey::Standard, VariantKey::FromPosition] {
        assert!(admits(files, v, Speed::Correspondence, Color::Black));
    }
    assert!(!admits(
        files,
        VariantKey::Chess960,
        Speed::Blitz,
        Color::White
    ));
    assert!(!admits(
        files,
        VariantKey::Crazyhouse,
        Speed::Blitz,
        Color::White
    ));
}

#[test]
fn sources_that_cannot_be_opened_name_their_key() {
    let config = load_str("[sources]\nbook_files = [\"/nonexistent/book.bin\"]\n", &[]).unwrap();
    let text = config.sources.open_books().unwrap_err().to_string();
    assert!(
        text.starts_with("sources.book_files: cannot read /nonexistent/book.bin"),
        "{text}"
    );
    let config = load_str(
        "[sources.books.zh]\nfile = \"/nonexistent/zh.bin\"\nvariants = [\"crazyhouse\"]\n",
        &[],
    )
    .unwrap();
    let text = config.sources.open_books().unwrap_err().to_string();
    assert!(
        text.starts_with("sources.books.zh.file: cannot read /nonexistent/zh.bin"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let config = load_str(
        &format!(
            "[sources]\nbook_files = []\nsyzygy_path = \"{}\"\n",
            dir.path().display()
        ),
        &[],
    )
    .unwrap();
    let text = config.sources.open().unwrap_err().to_string();
    assert!(
        text.starts_with("sources.syzygy_path: no Syzygy table"),
        "{text}"
    );
    // An empty list: no book, even where gnuchess-book is installed.
    let config = load_str("[sources]\nbook_files = []\n", &[]).unwrap();
    assert!(config.sources.open_books().unwrap().is_empty());
    // Lists from the environment.
    let config =
        Config::load_with_env(None, env(&[("KAISSA_SOURCES__BOOK_FILES", "a.bin,b.bin")])).unwrap();
    assert_eq!(config.sources.book_paths().len(), 2);
}

#[test]
fn external_engines_keep_their_option_names_and_claim_their_games() {
    let config = load_str(
        r#"
[challenge]
variants = ["standard", "crazyhouse", "atomic"]

[engines.fairy]
command = "/usr/games/fairy-stockfish"
options = { Hash = 32, "Skill Level" = "10", UCI_AnalyseMode = false }
variants = ["crazyhouse", "atomic"]
speeds = ["blitz"]

[engines.sf]
command = "/usr/games/stockfish"
variants = ["standard"]
opponents = "bots"
rated = "casual"
"#,
        &[],
    )
    .unwrap();
    let fairy = &config.engines["fairy"];
    let options: Vec<(String, String)> = fairy
        .options
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    assert_eq!(
        options,
        [
            ("Hash".to_owned(), "32".to_owned()),
            ("Skill Level".to_owned(), "10".to_owned()),
            ("UCI_AnalyseMode".to_owned(), "false".to_owned()),
        ]
    );
    // No overhead of its own: the built-in engine's.
    assert_eq!(fairy.move_overhead_ms, None);
    let builtin = config.engine.move_overhead();
    assert_eq!(fairy.move_overhead(builtin), Duration::from_millis(200));
    let kind = |variant, speed, against_bot, rated| GameKind {
        variant,
        speed,
        against_bot,
        rated,
    };
    use crate::lichess::model::{Speed, VariantKey};
    let who = |k| engine_for(&config.engines, k).map(|(name, _)| name);
    assert_eq!(
        who(kind(VariantKey::Crazyhouse, Speed::Blitz, false, true)),
        Some("fairy")
    );
    assert_eq!(
        who(kind(VariantKey::Crazyhouse, Speed::Rapid, false, true)),
        None
    );
    assert_eq!(
        who(kind(VariantKey::Standard, Speed::Blitz, true, false)),
        Some("sf")
    );
    // The built-in engine keeps the rest of standard chess.
    assert_eq!(
        who(kind(VariantKey::Standard, Speed::Blitz, true, true)),
        None
    );
    assert_eq!(
        who(kind(VariantKey::Standard, Speed::Blitz, false, false)),
        None
    );
}

#[test]
fn a_variant_without_an_engine_and_a_bad_engine_section_are_named() {
    let text = error_text(load_str("[challenge]\nvariants = [\"atomic\"]\n", &[]));
    assert!(
        text.starts_with("challenge.variants: atomic needs an engine"),
        "{text}"
    );
    let text = error_text(load_str(
        "[matchmaking]\nvariants = [\"horde\"]\n[engines.fairy]\ncommand = \"fsf\"\nvariants = [\"atomic\"]\n",
        &[],
    ));
    assert!(
        text.starts_with("matchmaking.variants: horde needs an engine"),
        "{text}"
    );
    let text = error_text(load_str("[engines.fairy]\nvariants = [\"atomic\"]\n", &[]));
    assert!(
        text.starts_with("engines.fairy.command: is missing"),
        "{text}"
    );
    let text = error_text(load_str("[engines.fairy]\ncommand = \"fsf\"\n", &[]));
    assert!(
        text.starts_with("engines.fairy.variants: is empty"),
        "{text}"
    );
    let text = error_text(load_str(
        "[engines.fairy]\ncommand = \"fsf\"\nvariants = [\"atomic\"]\nponderr = true\n",
        &[],
    ));
    assert!(text.contains("ponderr"), "{text}");
}

#[test]
fn arenas_are_read_with_their_case_and_bad_ones_named() {
    let config = load_str(
        "[tournaments]\ncheck_every_secs = 30\n\
         [[tournaments.arenas]]\nid = \"hL7vMrFQ\"\npassword = \"Code\"\n\
         [[tournaments.arenas]]\nid = \"Ab12Cd34\"\nteam = \"Coders-Club\"\njoin_team = true\n",
        &[("KAISSA_TOURNAMENTS__CHECK_EVERY_SECS", "120")],
    )
    .unwrap();
    let t = &config.tournaments;
    assert_eq!(t.check_every_secs, 120, "the environment wins");
    assert_eq!(t.retired_warning(), None);
    assert_eq!(t.arenas[0].id, "hL7vMrFQ", "ids keep their case");
    assert_eq!(t.arenas[0].password.as_deref(), Some("Code"));
    assert_eq!(t.arenas[1].team.as_deref(), Some("Coders-Club"));
    assert!(t.arenas[1].join_team);
    assert!(
        !format!("{config:?}").contains("Code\""),
        "the password is hidden"
    );

    let text = error_text(load_str(
        "[[tournaments.arenas]]\nid = \"hL7vMrFQ\"\n[[tournaments.arenas]]\nid = \"short\"\n",
        &[],
    ));
    assert!(text.starts_with("tournaments.arenas[1].id:"), "{text}");
    let text = error_text(load_str(
        "[[tournaments.arenas]]\nid = \"hL7vMrFQ\"\njoin_team = true\n",
        &[],
    ));
    assert!(
        text.starts_with("tournaments.arenas[0].join_team:"),
        "{text}"
    );
    // A retired key still loads, with a warning.
    let config = load_str("[tournaments]\npair_every_secs = 60\n", &[]).unwrap();
    let warning = config.tournaments.retired_warning().unwrap();
    assert!(warning.contains("pair_every_secs is ignored"), "{warning}");
    let text = error_text(load_str(
        "[[tournaments.arenas]]\nid = \"hL7vMrFQ\"\npasword = \"x\"\n",
        &[],
    ));
    assert!(text.contains("pasword"), "{text}");
}
