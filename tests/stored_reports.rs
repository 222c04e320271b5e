//! Runs stored by an earlier jitterlab render exactly as they did when they
//! were stored: every database under `tests/fixtures/databases/` (written by
//! jitterlab at schema 3, see its README) is reported in every format and
//! compared with the output recorded beside it. A change of the store, the
//! migrations or the reports that alters what a user already stored fails
//! here.

use std::path::Path;

use assert_cmd::Command;
use serial_test::serial;

const FORMATS: [&str; 4] = ["text", "md", "csv", "json"];

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/databases")
}

#[test]
fn stored_runs_render_as_they_did_in_every_format() {
    let mut dbs: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    dbs.sort();
    assert!(dbs.len() >= 7, "the fixture databases are there: {dbs:?}");
    for db in dbs {
        let name = db.file_stem().unwrap().to_string_lossy().into_owned();
        for format in FORMATS {
            // Opening a database migrates it and marks orphaned runs: work
            // on a copy, never on the fixture.
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("copy.db");
            std::fs::copy(&db, &copy).unwrap();
            let out = Command::cargo_bin("jitterlab")
                .unwrap()
                .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
                .arg("--db")
                .arg(&copy)
                .args(["report", "--format", format])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{name} {format}: {out:?}");
            let want =
                std::fs::read_to_string(fixtures().join("golden").join(format!("{name}.{format}")))
                    .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                want,
                "{name} reported as {format}"
            );
        }
    }
}

/// `jitterlab` with its database and journal in `dir`.
fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .arg("--db")
        .arg(dir.join("j.db"));
    c
}

/// The file `run wakeup --histogram` writes is, byte for byte, what
/// `report --histogram` writes from the database afterwards: the bins, the
/// overflows and their cycle numbers from the stored 1 µs histograms, the
/// min, avg and max lines from the stored statistics. Every online CPU
/// measures (two threads on a two-CPU machine), with 40 bins, so that the
/// slower wake-ups of a shared machine overflow. Serial with the other
/// test that runs a probe: both take the machine's lock.
#[test]
#[serial]
fn the_histogram_a_run_wrote_is_rendered_again_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let (ran, stored) = (dir.path().join("ran.txt"), dir.path().join("stored.txt"));
    let out = jl(dir.path())
        .args(["run", "wakeup", "--cycles", "2000", "--interval", "200us"])
        .args(["--histogram-buckets", "40", "--cpus", online.trim()])
        .arg("--histogram")
        .arg(&ran)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    jl(dir.path())
        .args(["report", "--histogram"])
        .arg(&stored)
        .assert()
        .success()
        .stdout("");
    let (ran, stored) = (
        std::fs::read(&ran).unwrap(),
        std::fs::read(&stored).unwrap(),
    );
    assert_eq!(
        String::from_utf8_lossy(&stored),
        String::from_utf8_lossy(&ran)
    );
    // Not an empty agreement: 40 bin lines, and every cycle of every
    // thread in a bin or an overflow.
    let text = String::from_utf8(ran).unwrap();
    let bins = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty());
    assert_eq!(bins.count(), 40);
    let numbers = |prefix: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap();
        line[prefix.len()..]
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let (totals, overflows) = (numbers("# Total:"), numbers("# Histogram Overflows:"));
    assert!(!totals.is_empty());
    for (t, o) in totals.iter().zip(&overflows) {
        assert_eq!(t + o, 2000, "{text}");
    }
}

/// A run's record (its header and, right under it, its verdict block) is
/// printed once, in every format: the JSON `run --json` writes is, byte for
/// byte, what `report RUN --format json` prints, with `header` and
/// `verdict` its first keys; the text has the verdict block once, between
/// the header and the summary, and no line of the header again; the HTML
/// page has one record and one verdict block, and its summary repeats
/// neither.
#[test]
#[serial]
fn a_runs_record_is_printed_once_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpu = online.trim().rsplit(['-', ',']).next().unwrap().to_string();
    let out = jl(dir.path())
        .args(["run", "wakeup", "--cycles", "50", "--cpus", &cpu, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let block = "\n\nverdict: every verdict passed (1 of 1), exit status 0\n  PASS latency measured: 50 samples\n\nprobe        wakeup\n";
    assert!(printed.starts_with("Record\njitterlab    "), "{printed}");
    assert!(printed.contains(block), "{printed}");
    assert_eq!(printed.matches("verdict:").count(), 1, "{printed}");
    for label in ["kernel", "clocksource", "duration", "elapsed"] {
        let lines = printed.lines().filter(|l| l.starts_with(label)).count();
        assert_eq!(lines, usize::from(label != "elapsed"), "{label}: {printed}");
    }
    let written = std::fs::read_to_string(&json).unwrap();
    let report = |format: &str| {
        let out = jl(dir.path())
            .args(["report", "1", "--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(report("json"), written);
    assert_eq!(report("text"), printed);
    let keys: Vec<&str> = written
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim().split('"').nth(1).unwrap())
        .take(3)
        .collect();
    assert_eq!(keys, ["header", "verdict", "schema_version"]);
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        v["header"]["spec"],
        "jitterlab run wakeup, from the command line"
    );
    assert_eq!(v["verdict"]["headline"], "every verdict passed (1 of 1)");
    assert_eq!(v["verdict"]["exit_status"], 0);
    assert_eq!(
        v["verdict"]["cells"][0]["verdicts"][0]["decided"],
        "50 samples"
    );
    assert!(v.get("verdicts").is_none(), "{written}");
    let md = report("md");
    assert_eq!(md.matches("### Record\n").count(), 1, "{md}");
    assert_eq!(md.matches("### Verdict\n").count(), 1, "{md}");
    assert!(md.contains("\n- duration: "), "{md}");
    let html = report("html");
    assert_eq!(html.matches("<h3>Record</h3>").count(), 1, "{html}");
    assert_eq!(html.matches("<h3>Verdict</h3>").count(), 1, "{html}");
    assert!(
        html.find("<h3>Record</h3>") < html.find("<h3>Verdict</h3>"),
        "{html}"
    );
    let summary = &html[html.find("<pre class=\"summary\">").unwrap()..];
    let summary = &summary[..summary.find("</pre>").unwrap()];
    assert!(
        summary.starts_with("<pre class=\"summary\">probe        wakeup\n"),
        "{summary}"
    );
    for word in ["verdict", "kernel", "clocksource", "elapsed"] {
        assert!(!summary.contains(word), "{word}: {summary}");
    }
}

/// `report --histogram` writes nothing and exits 2 when there is nothing
/// to write: two runs named, a run that is not there, a probe without a
/// main latency.
#[test]
#[serial]
fn report_histogram_refuses_what_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    jl(dir.path())
        .args(["run", "chase", "--samples", "5", "--buffer", "64KiB"])
        .assert()
        .success();
    let file = dir.path().join("h.txt");
    for (runs, why) in [
        (
            &["1", "1"][..],
            "--histogram writes one run's histogram; name one run".to_string(),
        ),
        (
            &["9"][..],
            "there is no run 9 in the database; list the runs with: jitterlab runs".into(),
        ),
        (
            &[][..],
            "run 1: cell default/none/host/chase has no 1 µs histogram: it was stored before \
             jitterlab kept them (schema 5), its probe measures no latency (chase), or an \
             external tool measured it (timerlat); there is nothing to write to --histogram"
                .into(),
        ),
    ] {
        jl(dir.path())
            .arg("report")
            .args(runs)
            .arg("--histogram")
            .arg(&file)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!("jitterlab: error: {why}\n"));
        assert!(!file.exists());
    }
}
