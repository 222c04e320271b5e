//! `jitterlab report` for CI jobs and spreadsheets, through the command
//! line on the stored fixture databases (`tests/fixtures/databases/`):
//! `--table NAME --format csv` prints that table alone, tidy; `--against
//! BASE --max-regression PCT` exits 0 within PCT and 2 with one line naming
//! what to fix for a bad PCT or an unknown run. (The exact comparison
//! table and exit 1 on a regression are tested on crafted runs in
//! `src/report/against/tests.rs`.)

use std::path::Path;

use assert_cmd::Command;

/// `jitterlab --db COPY` of fixture database `name`, in `dir` (opening a
/// database migrates it: never the fixture itself).
fn jl(dir: &Path, name: &str) -> Command {
    let db = dir.join("copy.db");
    if !db.exists() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/databases")
            .join(name);
        std::fs::copy(fixture, &db).unwrap();
    }
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .arg("--db")
        .arg(&db);
    c
}

#[test]
fn one_table_as_csv_is_that_table_alone_and_tidy() {
    let dir = tempfile::tempdir().unwrap();
    jl(dir.path(), "bench-epics.db")
        .args(["report", "--table", "latency", "--format", "csv"])
        .assert()
        .code(0)
        .stderr("")
        .stdout(concat!(
            "configuration,scenario,deployment,probe,metric,reps,completed,status,threshold_ns,min_latency_ns_min,min_latency_ns_max,p50_latency_ns_min,p50_latency_ns_max,max_latency_ns_min,max_latency_ns_max,over_threshold_pct_min,over_threshold_pct_max,releases_min,releases_max,cycles_min,cycles_max,skipped_min,skipped_max,overruns_min,overruns_max,samples_min,samples_max\n",
            "tuned,idle,host,timerlat,thread,1,0,skipped,,,,,,,,,,,,,,,,,,,\n",
            "tuned,idle,host,ctxswitch,handover,1,1,completed,100000,2313,2313,2915,2915,7071,7071,0.0,0.0,,,,,,,,,2000,2000\n",
            "tuned,idle,host,response,wakeup,1,1,completed,100000,7416,7416,9215,9215,296580,296580,1.7017,1.7017,,,,,,,,,999,999\n",
            "tuned,idle,host,response,response,1,1,completed,100000,11943,11943,14527,14527,303010,303010,1.8018,1.8018,,,,,,,,,999,999\n",
            "tuned,idle,host,response,rx-to-thread,1,1,completed,100000,5063,5063,6287,6287,293746,293746,1.6016,1.6016,,,,,,,,,999,999\n",
            "tuned,network,host,timerlat,thread,1,0,skipped,,,,,,,,,,,,,,,,,,,\n",
            "tuned,network,host,ctxswitch,handover,1,1,completed,100000,2253,2253,3005,3005,131488,131488,0.1005,0.1005,,,,,,,,,1990,1990\n",
            "tuned,network,host,response,wakeup,1,1,completed,100000,7000,7000,8607,8607,250435,250435,0.4004,0.4004,,,,,,,,,999,999\n",
            "tuned,network,host,response,response,1,1,completed,100000,10956,10956,22047,22047,270766,270766,0.6006,0.6006,,,,,,,,,999,999\n",
            "tuned,network,host,response,rx-to-thread,1,1,completed,100000,5218,5218,6311,6311,248162,248162,0.4004,0.4004,,,,,,,,,999,999\n",
        ));
}

/// The chase table alone: each row with the samples (timed chases) its
/// figures come from.
#[test]
fn the_chase_table_as_csv_says_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    jl(dir.path(), "bench-caterpillar.db")
        .args(["report", "--table", "chase", "--format", "csv"])
        .assert()
        .code(0)
        .stderr("")
        .stdout(concat!(
            "configuration,scenario,deployment,probe,reps,completed,status,note,baseline,min_chase_cycles_min,min_chase_cycles_max,p50_chase_cycles_min,p50_chase_cycles_max,p99_chase_cycles_min,p99_chase_cycles_max,max_chase_cycles_min,max_chase_cycles_max,p50_sample_jitter_cycles_min,p50_sample_jitter_cycles_max,max_sample_jitter_cycles_min,max_sample_jitter_cycles_max,p50_sample_jitter_vs_baseline_pct_min,p50_sample_jitter_vs_baseline_pct_max,samples_min,samples_max\n",
            "baseline,idle,host,chase,1,1,completed,,baseline,299910,299910,382463,382463,519423,519423,130809978,130809978,160511,160511,130452114,130452114,100.0,100.0,20000,20000\n",
            "baseline,neighbour,host,chase,1,1,completed,,baseline,182572,182572,376575,376575,511487,511487,131088438,131088438,149503,149503,130740506,130740506,100.0,100.0,20000,20000\n",
            "cache-reserved,idle,host,chase,0,0,unavailable,\"needs cache allocation (resctrl on CAT hardware), and this machine has none (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo, no resctrl info directory; a virtual machine usually hides it)\",,,,,,,,,,,,,,,,,\n",
            "cache-reserved,neighbour,host,chase,0,0,unavailable,\"needs cache allocation (resctrl on CAT hardware), and this machine has none (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo, no resctrl info directory; a virtual machine usually hides it)\",,,,,,,,,,,,,,,,,\n",
        ));
}

#[test]
fn a_table_the_run_does_not_have_is_refused_with_why() {
    let dir = tempfile::tempdir().unwrap();
    jl(dir.path(), "bench-epics.db")
        .args(["report", "--table", "chase", "--format", "csv"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("jitterlab: error: no chase table: no cell of run 1 ran the chase probe\n");
}

#[test]
fn a_run_against_itself_is_within_any_allowance() {
    let dir = tempfile::tempdir().unwrap();
    let out = jl(dir.path(), "bench-epics.db")
        .args(["report", "1", "--against", "1", "--max-regression", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.ends_with("within 10%: 16 figures compared, none regressed; 2 not measured\n"),
        "{text}"
    );
    assert!(text.contains(
        "tuned/idle/host/timerlat      -             -               -          -       -  not measured (no completed repetition in either run)\n"
    ), "{text}");
}

#[test]
fn bad_max_regression_or_unknown_runs_exit_2_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    jl(dir.path(), "bench-epics.db")
        .args(["report", "1", "--against", "1", "--max-regression", "-5"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("jitterlab: error: --max-regression -5: give the largest allowed increase as a percentage of the baseline, 0 or more (e.g. 10)\n");
    jl(dir.path(), "bench-epics.db")
        .args(["report", "1", "--against", "9", "--max-regression", "5"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("jitterlab: error: there is no run 9 in the database; list the runs with: jitterlab runs\n");
    jl(dir.path(), "bench-epics.db")
        .args(["report", "1", "--against", "1", "--format", "html"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("jitterlab: error: --against prints text, csv or json; give --format text, csv or json\n");
}

/// `presets` and a preset's plan name the document it reproduces, by title
/// and authors, and what it emulates.
#[test]
fn presets_and_their_plans_name_their_document() {
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("presets")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(
        "\n             of: POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications, by Josef Baumgartner and Stefan Schoenegger (Bernecker + Rainer Industrie-Elektronik)\n"
    ), "{text}");
    assert!(text.contains(
        "\n             emulates: the managing node is jitterlab's own POWERLINK MN (the netcycle probe), not openPOWERLINK,"
    ), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let out = jl(dir.path(), "bench-epics.db")
        .args(["bench", "--preset", "redhat", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains(
        "\npreset redhat reproduces: Real-time Linux for controls: Industrial control performance testing with Red Hat and Intel, by Red Hat and Intel (no individual author named)\n  emulates: the I/O simulator and the soft-PLC controller are jitterlab threads"
    ), "{plan}");
}
