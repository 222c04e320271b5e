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

fn run_json(dir: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let json = dir.join(format!("{}.json", args[1]));
    let out = jl(dir)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:?}: {}\n{stdout}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    (read_json(&json), stdout)
}

fn refused(args: &[&str], message: &str) {
    let dir = tempfile::tempdir().unwrap();
    // The 2-CPU fixture tree, so the messages are the same on every machine.
    let out = jl(dir.path())
        .arg("--sysroot")
        .arg(fixture("sysroot-vm"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("jitterlab: error: {message}\n"),
        "{args:?}"
    );
    assert!(!dir.path().join("tests.db").exists());
}

#[test]
fn event_probes_refuse_what_does_not_apply_to_them() {
    refused(
        &["run", "chase", "--max-latency", "1ms"],
        "--max-latency does not apply to a chase: it measures CPU cycles, not a latency",
    );
    refused(
        &["run", "chase", "--cycles", "5"],
        "a chase counts samples: use --samples instead of --cycles",
    );
    refused(
        &["run", "ctxswitch", "--break-trace", "1ms"],
        "--break-trace applies to the periodic probes (cyclic, wakeup); remove it from run ctxswitch",
    );
    refused(
        &["run", "response", "--max-jitter", "1ms"],
        "--max-jitter applies to the periodic probes (cyclic, wakeup); remove it from run response",
    );
    refused(
        &["run", "ctxswitch", "--cpu", "99"],
        "CPU 99 is not online (online CPUs: 0-1); choose one of them with --cpu",
    );
    refused(
        &["run", "chase", "--roles", "test=1,irq=99"],
        "--roles: the irq CPU 99 is not online (online CPUs: 0-1)",
    );
}

#[test]
#[serial]
fn chase_stores_every_chase_and_prints_the_sample_table() {
    let dir = tempfile::tempdir().unwrap();
    let (r, stdout) = run_json(
        dir.path(),
        &[
            "run",
            "chase",
            "--samples",
            "12",
            "--iterations",
            "25",
            "--buffer",
            "512KiB",
        ],
    );
    assert_eq!(r["probe"], "chase");
    let t = &r["threads"][0];
    // 12 samples × 25 timed chases; one jitter value per sample.
    assert_eq!(t["metrics"]["chase"]["count"], 300);
    assert_eq!(t["metrics"]["sample-jitter"]["count"], 12);
    let d = &r["detail"];
    assert_eq!(d["rows"].as_array().unwrap().len(), 12);
    assert_eq!(d["buffer_bytes"], 512 << 10);
    // A chase of 1024 dependent loads takes at least one cycle per load
    // and far less than a second.
    let hz = d["tsc_hz"].as_u64().unwrap();
    let min = t["metrics"]["chase"]["min"].as_u64().unwrap();
    let max = t["metrics"]["chase"]["max"].as_u64().unwrap();
    assert!(min >= 1024 && max < hz, "min {min} max {max} hz {hz}");
    assert!(stdout.contains("session jitter"), "{stdout}");
    assert!(stdout.contains(": 300 chases\n"), "{stdout}");
}

#[test]
#[serial]
fn ctxswitch_counts_every_hand_over() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = run_json(
        dir.path(),
        &["run", "ctxswitch", "--interval", "0", "--cycles", "2000"],
    );
    let h = &r["threads"][0]["metrics"]["handover"];
    assert_eq!(h["count"], 2000);
    let (min, max) = (h["min"].as_i64().unwrap(), h["max"].as_i64().unwrap());
    assert!(min > 0 && max < 1_000_000_000, "min {min} max {max}");
    assert_eq!(r["end"], "completed");
}

#[test]
#[serial]
fn response_answers_every_event_from_both_sources() {
    // The udp source makes network namespaces: root only.
    let sources: &[&str] = if jitterlab_sys::effective_uid() == 0 {
        &["eventfd", "udp"]
    } else {
        eprintln!("skipping the udp source: making network namespaces needs root");
        &["eventfd"]
    };
    for &source in sources {
        let dir = tempfile::tempdir().unwrap();
        let (r, _) = run_json(
            dir.path(),
            &[
                "run",
                "response",
                "--source",
                source,
                "--cycles",
                "300",
                "--interval",
                "1ms",
            ],
        );
        let m = &r["threads"][0]["metrics"];
        assert_eq!(m["wakeup"]["count"], 300, "{source}");
        assert_eq!(m["response"]["count"], 300, "{source}");
        // The answer is sent after the thread runs: never earlier.
        assert!(m["response"]["min"].as_i64() >= m["wakeup"]["min"].as_i64());
        let rx = m["rx-to-thread"]["count"].as_u64().unwrap();
        assert_eq!(rx, if source == "udp" { 300 } else { 0 }, "{source}");
    }
    // The namespaces of the udp run are gone.
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let me = String::from_utf8_lossy(&ns.stdout);
    assert!(
        !me.contains("ev ")
            && !me
                .lines()
                .any(|l| l.ends_with("ev") || l.starts_with("jl") && l.contains("rs")),
        "{me}"
    );
}
