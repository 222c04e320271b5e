//! `jitterlab bench --preset powerlink` end to end without measuring: the
//! plan of both of [Baumgartner POWERLINK]'s tables, the load table's rows and columns a
//! user chooses (`--cycles`, `--cns`), and every refusal of them (exit 2,
//! nothing changed).
//!
//! The documents cited here are listed in `docs/design.md`.

use assert_cmd::Command;

#[path = "common/harness.rs"]
mod harness;
use harness::{jl_with, spec};

/// `jitterlab bench ARGS` with a fresh database: (exit code, stdout,
/// stderr); the database is never created by these.
fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let out = jl_with(&db).arg("bench").args(args).output().unwrap();
    assert!(!db.exists(), "{args:?} created the database");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_preset_plans_both_tables_in_twenty_eight_minutes() {
    let (code, out, err) = bench(&["--preset", "powerlink", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..6],
        [
            "plan: powerlink",
            "  38 cells (1 repetition × 1 configuration × 1 deployment × 38 scenario × probe pairs of 7 scenarios × 26 probes)",
            "  each cell: set-up 300ms + warm-up 5s + measured 1m (14 cells), 30s (21 cells)",
            "  once: idle calibration 200ms",
            "  total: 27m 36s",
            "  probes load-250us-3cn … load-10ms-40cn (24) run in scenario idle only",
        ]
    );
    assert!(
        out.contains("tuned/idle/host/load-500us-40cn   rep 1  (N/A (wire): 40 CNs need at least 551 µs of wire time per cycle at 100 Mbit/s, more than the 500 µs cycle; skipped)\n"),
        "{out}"
    );
}

#[test]
fn a_user_chooses_the_load_table_rows_and_columns() {
    let (code, out, err) = bench(&[
        "--preset",
        "powerlink",
        "--cycles",
        "1ms,2ms",
        "--cns",
        "3",
        "--cns",
        "10",
        "--dry-run",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..11],
        [
            "plan: powerlink",
            "  18 cells (1 repetition × 1 configuration × 1 deployment × 18 scenario × probe pairs of 7 scenarios × 6 probes)",
            "  each cell: set-up 300ms + warm-up 5s + measured 1m (14 cells), 30s (4 cells)",
            "  once: idle calibration 200ms",
            "  total: 17m 36s",
            "  probes load-1ms-3cn … load-2ms-10cn (4) run in scenario idle only",
            "  1/18   tuned/idle/host/soc-jitter        rep 1  (warm-up 5s + 1m)",
            "  2/18   tuned/idle/host/cyclic            rep 1  (warm-up 5s + 1m)",
            "  3/18   tuned/idle/host/load-1ms-3cn      rep 1  (warm-up 5s + 30s)",
            "  4/18   tuned/idle/host/load-1ms-10cn     rep 1  (warm-up 5s + 30s)",
            "  5/18   tuned/idle/host/load-2ms-3cn      rep 1  (warm-up 5s + 30s)",
        ]
    );
}

#[test]
fn bad_choices_are_refused_with_what_to_do() {
    for (args, message) in [
        (
            &["--preset", "codesys", "--cycles", "1ms"][..],
            "jitterlab: error: preset codesys has no load table to choose rows and columns of; --cycles and --cns apply to --preset powerlink\n",
        ),
        (
            &["--preset", "powerlink", "--cycles", "1ms,500us,1ms"][..],
            "jitterlab: error: --cycles lists 1ms twice; give each cycle time once\n",
        ),
        (
            &["--preset", "powerlink", "--cns", "3,3"][..],
            "jitterlab: error: --cns lists 3 twice; give each number of controlled nodes once\n",
        ),
        (
            &["--preset", "powerlink", "--cns", "240"][..],
            "jitterlab: error: invalid value '240' for '--cns <N,…>': 240 is not in 1..=239 (see jitterlab --help)\n",
        ),
        (
            &["--preset", "powerlink", "--cycles", "5us"][..],
            "jitterlab: error: invalid value '5us' for '--cycles <TIME,…>': 5us is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead) (see jitterlab --help)\n",
        ),
        (
            &["--preset", "powerlink", "--cycles", "0"][..],
            "jitterlab: error: invalid value '0' for '--cycles <TIME,…>': a cycle time must be longer than 0 (see jitterlab --help)\n",
        ),
    ] {
        let mut all = args.to_vec();
        all.push("--dry-run");
        let (code, out, err) = bench(&all);
        assert_eq!((code, out.as_str(), err.as_str()), (Some(2), "", message), "{args:?}");
    }
    let p = spec(
        "choice.toml",
        "duration = \"1s\"\n[[probe]]\nkind = \"cyclic\"\n",
    );
    let (code, _, err) = bench(&[p.to_str().unwrap(), "--cns", "10", "--dry-run"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "jitterlab: error: --cycles and --cns choose the rows and columns of a preset's load table (--preset powerlink); a spec file lists its [[probe]] tables itself\n"
    );
}

#[test]
fn presets_says_which_preset_takes_a_choice() {
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("presets")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let hints: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("--cycles"))
        .map(str::trim)
        .collect();
    assert_eq!(
        hints,
        ["choose its load table's rows and columns: bench --preset powerlink --cycles TIME,… --cns N,…"]
    );
}
