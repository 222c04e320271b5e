//! Command-line tests of the event probes (`chase`, `ctxswitch`,
//! `response`) and of `timerlat`: exact refusals, and short real runs whose
//! stored results must hold the asked number of samples with physically
//! possible values.
//!
//! `timerlat` cannot measure on a kernel without the timerlat tracer (this
//! VM); its stored path is exercised with the fixture tracefs tree and the
//! stand-in `tests/fixtures/timerlat/fake-rtla`, which prints a histogram
//! in rtla's own format.

use std::path::Path;

use assert_cmd::Command;
use serial_test::serial;

#[path = "common/fixtures.rs"]
#[allow(dead_code)] // shared with the other test crates; this one copies no tree
mod fixtures;
use fixtures::fixture;

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("tests.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"));
    c
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// A sysroot with tracefs offering timerlat, two online CPUs, and a
/// directory holding `rtla` (the stand-in) set to print `hist`.
fn timerlat_rig(dir: &Path, hist: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = dir.join("root");
    let tracing = root.join("sys/kernel/tracing");
    std::fs::create_dir_all(&tracing).unwrap();
    for f in ["available_tracers", "tracing_on", "trace_marker"] {
        std::fs::copy(
            fixture("tracing-timerlat/sys/kernel/tracing").join(f),
            tracing.join(f),
        )
        .unwrap();
    }
    let cpu = root.join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("online"), "0-1\n").unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(fixture("timerlat/fake-rtla"), bin.join("rtla")).unwrap();
    let t = fixture("timerlat");
    std::fs::copy(t.join("rtla-6.1-version.txt"), bin.join("version")).unwrap();
    std::fs::copy(t.join("rtla-6.1-hist-help.txt"), bin.join("help")).unwrap();
    std::fs::copy(t.join(hist), bin.join("hist")).unwrap();
    std::fs::write(bin.join("mode"), "finish\n").unwrap();
    (root, bin)
}

#[test]
#[serial]
fn timerlat_stores_rtla_histograms_as_metrics_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let (root, bin) = timerlat_rig(dir.path(), "rtla-6.1-cpu0-1-ns.txt");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let json = dir.path().join("r.json");
    let out = jl(dir.path())
        .env("PATH", &path)
        .arg("--sysroot")
        .arg(&root)
        .args([
            "run",
            "timerlat",
            "--cpus",
            "0-1",
            "--duration",
            "5s",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    // rtla got the command line the module documents.
    let args = std::fs::read_to_string(bin.join("args")).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "timerlat",
            "hist",
            "-c",
            "0-1",
            "-p",
            "1000",
            "-d",
            "5",
            "-P",
            "f:95",
            "--dma-latency",
            "0",
            "--nano",
            "-b",
            "100",
            "-E",
            "100000"
        ]
    );
    let r = read_json(&json);
    assert_eq!(r["probe"], "timerlat");
    let threads = r["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    for (i, t) in threads.iter().enumerate() {
        assert_eq!(t["cpu"], i);
        assert_eq!(t["metrics"]["irq"]["count"], 5001);
        assert_eq!(t["metrics"]["thread"]["count"], 5001);
    }
    // rtla's exact extremes are kept (the fixture's min/max lines, ns).
    assert_eq!(threads[0]["metrics"]["irq"]["min"], 600);
    assert_eq!(threads[1]["metrics"]["thread"]["max"], 10_512_345);
    assert_eq!(r["combined"]["irq"]["count"], 10_002);
    assert!(stdout.contains("probe        timerlat\n"), "{stdout}");
    // Stored, and reported from the store like any run.
    let rep = jl(dir.path()).args(["report"]).output().unwrap();
    let text = String::from_utf8_lossy(&rep.stdout);
    assert_eq!(rep.status.code(), Some(0));
    assert!(text.contains("\nthread "), "{text}");
}

#[test]
fn timerlat_says_plainly_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sys/devices/system/cpu")).unwrap();
    std::fs::write(root.join("sys/devices/system/cpu/online"), "0-1\n").unwrap();
    let out = jl(dir.path())
        .env("PATH", dir.path())
        .arg("--sysroot")
        .arg(&root)
        .args(["run", "timerlat", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("jitterlab: error: cannot measure interrupt latency here: "),
        "{err}"
    );
    assert!(err.contains("rtla"), "{err}");
    assert!(!dir.path().join("tests.db").exists());
}
