//! `--metrics ADDR` end to end: a real `run wakeup` scraped while it runs
//! (exact names and labels, cumulative buckets, counts that grow,
//! `promtool check metrics`), a run whose end a trickling client does not
//! delay, a bench and an `apply` on a fake tree that
//! serve their progress, neighbours and settings, the Grafana dashboard
//! asking only for names a real scrape has, and the refusals of a bad
//! address and a port in use — exit 2, exact messages, nothing changed.
//!
//! The scrapes are plain `GET /metrics` over a `TcpStream` on the loopback
//! address; the port is the one jitterlab chose for port 0 and printed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serial_test::serial;

#[path = "common/fixtures.rs"]
#[allow(dead_code)] // shared with the other test crates
mod fixtures;
use fixtures::copy_fixture;

/// The `le` bounds of every `_seconds` histogram.
const LE: [&str; 17] = [
    "0.000001", "0.000002", "0.000005", "0.00001", "0.00002", "0.00005", "0.0001", "0.0002",
    "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "+Inf",
];

/// A jitterlab in the background, its stderr collected line by line.
struct Running {
    child: Option<Child>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Running {
    /// Starts `jitterlab ARGS` with its database and journal in `dir`.
    fn start(dir: &Path, args: &[&str]) -> Running {
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
            .env("JITTERLAB_DB", dir.join("j.db"))
            .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
            .env_remove("XDG_RUNTIME_DIR")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        Running {
            child: Some(child),
            stderr,
        }
    }

    /// The `host:port` it says it serves on (waits up to 30 s).
    fn address(&self) -> String {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let found = self.stderr.lock().unwrap().iter().find_map(|l| {
                l.strip_prefix("jitterlab: serving metrics on http://")
                    .and_then(|r| r.strip_suffix("/metrics"))
                    .map(str::to_string)
            });
            if let Some(a) = found {
                return a;
            }
            assert!(
                Instant::now() < end,
                "no serving line: {:?}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM.
    fn term(&self) {
        if let Some(c) = &self.child {
            let _ = StdCommand::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
        }
    }

    /// Waits for the end: exit status, stdout, stderr.
    fn wait(mut self) -> (Option<i32>, String, Vec<String>) {
        let child = self.child.take().unwrap();
        let out = child.wait_with_output().unwrap();
        // The reader thread has seen stderr's end once the child is gone.
        std::thread::sleep(Duration::from_millis(50));
        let stderr = self.stderr.lock().unwrap().clone();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `GET /metrics` at `addr`: the status line, the content type and the body.
fn scrape(addr: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().to_string();
    let kind = lines
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or_default()
        .to_string();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(length, body.len());
    (status, kind, body.to_string())
}

/// One sample line: its name, labels and value.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The sample lines of an exposition (label values without escapes).
fn samples(text: &str) -> Vec<Line> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}').unwrap()),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once("=\"").unwrap();
                    (k.to_string(), v.trim_end_matches('"').to_string())
                })
                .collect();
            Line {
                name: name.to_string(),
                labels,
                value: value.parse().unwrap(),
            }
        })
        .collect()
}

/// The value of the one sample named `name` whose labels include `with`.
fn value(lines: &[Line], name: &str, with: &[(&str, &str)]) -> f64 {
    let found: Vec<&Line> = lines
        .iter()
        .filter(|l| {
            l.name == name
                && with
                    .iter()
                    .all(|(k, v)| l.labels.get(*k).map(String::as_str) == Some(v))
        })
        .collect();
    assert_eq!(found.len(), 1, "{name} {with:?} in {lines:#?}");
    found[0].value
}

/// `promtool check metrics` on `text`: it must pass with no complaint.
/// Skipped, saying so, where promtool is missing.
fn promtool_passes(text: &str) {
    let child = StdCommand::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("skipping promtool check metrics: promtool is not installed (apt-get install prometheus)");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((out.status.code(), said.as_str()), (Some(0), ""), "{text}");
}

/// Scrapes `addr` every 100 ms until `ready` holds for the samples (up to
/// `within`); returns that scrape's body. A refused connection (the
/// command ended) fails with what `cmd` printed.
fn scrape_until(
    cmd: &Running,
    addr: &str,
    within: Duration,
    ready: impl Fn(&[Line]) -> bool,
) -> String {
    let end = Instant::now() + within;
    loop {
        if TcpStream::connect(addr).is_err() {
            panic!("nothing serves on {addr}: {:?}", cmd.stderr.lock().unwrap());
        }
        let (status, _, body) = scrape(addr);
        assert_eq!(status, "HTTP/1.1 200 OK");
        if ready(&samples(&body)) {
            return body;
        }
        assert!(Instant::now() < end, "never ready: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn windows_closed(lines: &[Line]) -> f64 {
    lines
        .iter()
        .filter(|l| l.name == "jitterlab_windows_total")
        .map(|l| l.value)
        .sum()
}

#[test]
#[serial]
fn a_live_run_serves_growing_histograms_that_promtool_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(
        dir.path(),
        &[
            "run",
            "wakeup",
            "--cpus",
            "1",
            "--duration",
            "3s",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let addr = run.address();
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    let first = scrape_until(&run, &addr, Duration::from_secs(20), |l| {
        windows_closed(l) >= 1.0
    });
    let (status, kind, _) = scrape(&addr);
    assert_eq!(
        (status.as_str(), kind.as_str()),
        (
            "HTTP/1.1 200 OK",
            "text/plain; version=0.0.4; charset=utf-8"
        )
    );
    let before = windows_closed(&samples(&first));
    let second = scrape_until(&run, &addr, Duration::from_secs(20), |l| {
        windows_closed(l) > before
    });
    promtool_passes(&first);
    promtool_passes(&second);

    let (a, b) = (samples(&first), samples(&second));
    let names: BTreeSet<&str> = b.iter().map(|l| l.name.as_str()).collect();
    let mut want: BTreeSet<&str> = [
        "jitterlab_run_info",
        "jitterlab_cells_planned",
        "jitterlab_cells_done",
        "jitterlab_cell_info",
        "jitterlab_samples_total",
        "jitterlab_windows_total",
        "jitterlab_overruns_total",
        "jitterlab_dropped_rows_total",
        "jitterlab_sample_seconds_bucket",
        "jitterlab_sample_seconds_sum",
        "jitterlab_sample_seconds_count",
        "jitterlab_max_seconds",
        "jitterlab_window_max_seconds",
        "jitterlab_window_min_seconds",
        "jitterlab_window_mean_seconds",
    ]
    .into();
    // The PM QoS request, held or not, is a setting of every run.
    want.insert("jitterlab_setting_info");
    assert_eq!(names, want);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    assert_eq!(
        value(
            &b,
            "jitterlab_run_info",
            &[("command", "run"), ("host", host)]
        ),
        1.0
    );
    assert_eq!(value(&b, "jitterlab_cells_planned", &[]), 1.0);
    assert_eq!(
        value(
            &b,
            "jitterlab_cell_info",
            &[("cell", "default/idle/host/wakeup"), ("probe", "wakeup")]
        ),
        1.0
    );
    let thread: BTreeMap<String, String> = [
        ("host", host),
        ("cell", "default/idle/host/wakeup"),
        ("probe", "wakeup"),
        ("thread", "0"),
        ("cpu", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for l in b
        .iter()
        .filter(|l| l.name.starts_with("jitterlab_sample_seconds"))
    {
        let keys: Vec<&str> = l.labels.keys().map(String::as_str).collect();
        let want: &[&str] = if l.name.ends_with("_bucket") {
            &["cell", "cpu", "host", "le", "metric", "probe", "thread"]
        } else {
            &["cell", "cpu", "host", "metric", "probe", "thread"]
        };
        assert_eq!(keys, want, "{l:?}");
        assert!(thread.iter().all(|(k, v)| &l.labels[k] == v), "{l:?}");
    }
    for metric in ["latency", "period", "jitter", "exec"] {
        for lines in [&a, &b] {
            let buckets: Vec<&Line> = lines
                .iter()
                .filter(|l| {
                    l.name == "jitterlab_sample_seconds_bucket" && l.labels["metric"] == metric
                })
                .collect();
            let le: Vec<&str> = buckets.iter().map(|l| l.labels["le"].as_str()).collect();
            assert_eq!(le, LE, "{metric}");
            let counts: Vec<f64> = buckets.iter().map(|l| l.value).collect();
            assert!(
                counts.windows(2).all(|w| w[0] <= w[1]),
                "{metric}: {counts:?}"
            );
            let count = value(
                lines,
                "jitterlab_sample_seconds_count",
                &[("metric", metric)],
            );
            assert_eq!(counts[16], count, "{metric}: +Inf is the count");
        }
    }
    let latency = |lines: &[Line]| {
        value(
            lines,
            "jitterlab_sample_seconds_count",
            &[("metric", "latency")],
        )
    };
    assert!(
        latency(&b) > latency(&a),
        "the count grows: {} then {}",
        latency(&a),
        latency(&b)
    );
    assert_eq!(
        latency(&b),
        value(&b, "jitterlab_samples_total", &[]),
        "one latency per cycle"
    );
    // A wake-up is at least 1 µs late and no later than the period's
    // many times over: the window's maximum is among the buckets'.
    let max = value(&b, "jitterlab_window_max_seconds", &[("metric", "latency")]);
    assert!(max > 0.0 && max < 1.0, "{max}");

    let (code, stdout, stderr) = run.wait();
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    assert!(
        stderr.contains(&format!(
            "jitterlab: serving metrics on http://{addr}/metrics"
        )),
        "{stderr:?}"
    );
    // Serving ends with the command.
    assert!(
        TcpStream::connect(&addr).is_err(),
        "still serving on {addr}"
    );
}

/// A bench on a fake tree: a configuration with one sysctl, an idle cell
/// and a cell with a neighbour, `sleep 86417`.
const BENCH: &str = r#"
name = "live"
duration = "3s"
warmup = "300ms"
[[configuration]]
name = "quiet"
timer_migration = false
[[scenario]]
name = "idle"
builtin = "idle"
[[scenario]]
name = "sleeper"
[[scenario.neighbour]]
name = "sleeper"
command = ["sleep", "86417"]
[[probe]]
kind = "wakeup"
"#;

#[test]
#[serial]
fn a_trickling_client_neither_stalls_a_scrape_nor_delays_the_run_s_end() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let run = Running::start(
        dir.path(),
        &[
            "run",
            "wakeup",
            "--cpus",
            "1",
            "--duration",
            "2s",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let addr = run.address();
    // A client sending one byte of a request that never ends every
    // 500 ms, for 20 s at most.
    let mut slow = TcpStream::connect(&addr).unwrap();
    let trickler = std::thread::spawn(move || {
        for _ in 0..40 {
            if slow.write_all(b"x").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    let (status, _, _) = scrape(&addr);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (code, _, stderr) = run.wait();
    let took = started.elapsed();
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        took < Duration::from_secs(4),
        "a 2 s run with a trickling metrics client took {took:?}"
    );
    trickler.join().unwrap();
}

/// One scrape of the bench's second cell while its neighbour runs, made
/// once for the tests that read it.
fn bench_scrape() -> &'static str {
    static SCRAPE: OnceLock<String> = OnceLock::new();
    SCRAPE.get_or_init(|| {
        let tree = copy_fixture("settings-vm");
        let root = tree.path();
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("live.toml");
        std::fs::write(&spec, BENCH).unwrap();
        let bench = Running::start(
            dir.path(),
            &[
                "--sysroot",
                root.to_str().unwrap(),
                "bench",
                spec.to_str().unwrap(),
                "--metrics",
                ":0",
            ],
        );
        let addr = bench.address();
        let body = scrape_until(&bench, &addr, Duration::from_secs(60), |l| {
            l.iter().any(|l| l.name == "jitterlab_neighbour_running")
                && l.iter().any(|l| {
                    l.name == "jitterlab_windows_total"
                        && l.labels["cell"] == "quiet/sleeper/host/wakeup"
                        && l.value >= 1.0
                })
        });
        let (code, stdout, stderr) = bench.wait();
        assert_eq!(code, Some(0), "{stdout}{stderr:?}");
        assert_eq!(
            std::fs::read_to_string(root.join("proc/sys/kernel/timer_migration")).unwrap(),
            "1\n",
            "put back"
        );
        body
    })
}

#[test]
#[serial]
fn a_bench_serves_its_progress_neighbours_and_settings() {
    let text = bench_scrape();
    promtool_passes(text);
    let l = samples(text);
    // The fake tree has no hostname: the label is empty.
    assert_eq!(
        value(
            &l,
            "jitterlab_run_info",
            &[("command", "bench"), ("host", "")]
        ),
        1.0
    );
    assert_eq!(value(&l, "jitterlab_cells_planned", &[]), 2.0);
    assert_eq!(value(&l, "jitterlab_cells_done", &[]), 1.0);
    let cell = value(
        &l,
        "jitterlab_cell_info",
        &[
            ("cell", "quiet/sleeper/host/wakeup"),
            ("configuration", "quiet"),
            ("scenario", "sleeper"),
            ("deployment", "host"),
            ("probe", "wakeup"),
            ("repetition", "0"),
        ],
    );
    assert_eq!(cell, 1.0);
    assert_eq!(
        value(
            &l,
            "jitterlab_neighbour_running",
            &[
                ("cell", "quiet/sleeper/host/wakeup"),
                ("neighbour", "sleeper")
            ]
        ),
        1.0
    );
    assert_eq!(
        value(
            &l,
            "jitterlab_setting_info",
            &[("setting", "kernel.timer_migration"), ("value", "0")]
        ),
        1.0
    );
    // The fake tree has no /dev/cpu_dma_latency: asked for, not had.
    assert_eq!(
        value(
            &l,
            "jitterlab_setting_info",
            &[("setting", "cpu_dma_latency"), ("value", "0 us")]
        ),
        0.0
    );
    assert!(
        value(
            &l,
            "jitterlab_samples_total",
            &[("cell", "quiet/sleeper/host/wakeup")]
        ) >= 1.0
    );
}

/// Every `jitterlab_…` name in `text` (a PromQL expression).
fn names_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("jitterlab_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// Every string under a key `key` anywhere in `v`.
fn strings_under(v: &serde_json::Value, key: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match x {
                    serde_json::Value::String(s) if k == key => out.push(s.clone()),
                    _ => strings_under(x, key, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_under(x, key, out)),
        _ => {}
    }
}

#[test]
#[serial]
fn the_dashboard_asks_only_for_names_a_real_scrape_has() {
    let served: BTreeSet<String> = samples(bench_scrape())
        .into_iter()
        .map(|l| l.name)
        .collect();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contrib/grafana/jitterlab.json"
    ))
    .unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut exprs = Vec::new();
    strings_under(&dashboard, "expr", &mut exprs);
    strings_under(&dashboard, "definition", &mut exprs);
    assert!(exprs.len() >= 12, "{exprs:?}");
    assert!(
        exprs.iter().any(|e| e.starts_with(
            "histogram_quantile(0.99, sum by (le, cpu) (rate(jitterlab_sample_seconds_bucket"
        )),
        "percentiles from the buckets"
    );
    let mut asked = BTreeSet::new();
    for e in &exprs {
        let names = names_in(e);
        assert!(!names.is_empty(), "no jitterlab metric in {e}");
        asked.extend(names);
    }
    let unknown: Vec<&String> = asked.difference(&served).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard asks for {unknown:?}, not served"
    );
    // One row per machine.
    let rows: Vec<&serde_json::Value> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "row")
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["repeat"], "host");
}

#[test]
fn the_sample_scrape_configuration_is_valid() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contrib/prometheus/jitterlab.yml"
    );
    let Ok(out) = StdCommand::new("promtool")
        .args(["check", "config", path])
        .output()
    else {
        eprintln!("skipping: promtool is not installed (apt-get install prometheus)");
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
#[serial]
fn apply_serves_the_settings_it_holds() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("quiet.toml");
    std::fs::write(
        &spec,
        "duration = \"1s\"\n[[configuration]]\nname = \"quiet\"\ntimer_migration = false\n[[probe]]\nkind = \"wakeup\"\n",
    )
    .unwrap();
    let apply = Running::start(
        dir.path(),
        &[
            "--sysroot",
            root.to_str().unwrap(),
            "apply",
            spec.to_str().unwrap(),
            "--metrics",
            "0",
        ],
    );
    let addr = apply.address();
    let text = scrape_until(&apply, &addr, Duration::from_secs(20), |l| {
        l.iter().any(|l| l.name == "jitterlab_setting_info")
    });
    apply.term();
    let (code, stdout, stderr) = apply.wait();
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    promtool_passes(&text);
    // The version the binary records: `--version` without its build day,
    // `0.1.0 (commit 28a18f1)`.
    let long = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("--version")
        .output()
        .unwrap();
    let long = String::from_utf8(long.stdout).unwrap();
    let version = format!(
        "{})",
        long.strip_prefix("jitterlab ")
            .and_then(|v| v.split_once(", built "))
            .unwrap_or_else(|| panic!("{long:?}"))
            .0
    );
    assert_eq!(
        samples(&text)
            .iter()
            .map(|l| format!("{} {:?} {}", l.name, l.labels, l.value))
            .collect::<Vec<_>>(),
        [
            format!(r#"jitterlab_run_info {{"command": "apply", "host": "", "version": "{version}"}} 1"#),
            r#"jitterlab_setting_info {"host": "", "setting": "kernel.timer_migration", "value": "0"} 1"#.to_string(),
            r#"jitterlab_setting_info {"host": "", "setting": "cpu_dma_latency", "value": "0 us"} 0"#.to_string(),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("proc/sys/kernel/timer_migration")).unwrap(),
        "1\n"
    );
}

#[test]
fn a_bad_address_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(
        dir.path(),
        &["run", "wakeup", "--metrics", "127.0.0.1:http"],
    );
    let (code, stdout, stderr) = run.wait();
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        ["jitterlab: error: invalid value '127.0.0.1:http' for '--metrics <ADDR>': '127.0.0.1:http' is not an address to listen on; expected PORT, :PORT or HOST:PORT, HOST an IP address (127.0.0.1, 0.0.0.0 for every interface, [::1]) or localhost, e.g. 127.0.0.1:9464 (see jitterlab --help)"]
    );
    assert!(!dir.path().join("j.db").exists());
}

#[test]
#[serial]
fn a_port_in_use_is_refused_and_nothing_changes() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let migration = root.join("proc/sys/kernel/timer_migration");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("quiet.toml");
    std::fs::write(
        &spec,
        "duration = \"1s\"\n[[configuration]]\nname = \"quiet\"\ntimer_migration = false\n[[probe]]\nkind = \"wakeup\"\n",
    )
    .unwrap();
    let want = format!(
        "jitterlab: error: --metrics 127.0.0.1:{port}: the port {port} is in use (another exporter, or another jitterlab?); give another port, or port 0 for any free one"
    );
    let at = format!(":{port}");
    let root = root.to_str().unwrap();
    let spec = spec.to_str().unwrap();
    for args in [
        vec!["--sysroot", root, "apply", spec, "--metrics", &at],
        vec!["--sysroot", root, "bench", spec, "--metrics", &at],
        vec![
            "--sysroot",
            root,
            "run",
            "--metrics",
            &at,
            "wakeup",
            "--duration",
            "1s",
        ],
    ] {
        let (code, stdout, stderr) = Running::start(dir.path(), &args).wait();
        assert_eq!((code, stdout.as_str()), (Some(2), ""), "{args:?}");
        assert_eq!(stderr, std::slice::from_ref(&want), "{args:?}");
        assert_eq!(std::fs::read_to_string(&migration).unwrap(), "1\n");
        assert!(!dir.path().join("journal.json").exists());
        assert!(!dir.path().join("j.db").exists());
    }
}

/// The last online CPU (the monitor measures there).
fn last_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online.trim().rsplit([',', '-']).next().unwrap().to_string()
}

#[test]
#[serial]
fn a_monitor_counts_its_alerts_per_cpu() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: the monitor's probe needs root (SCHED_FIFO, mlockall)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    // Every window's maximum wake-up latency is over 1 µs.
    let monitor = Running::start(
        dir.path(),
        &[
            "monitor",
            "--cpus",
            &cpu,
            "--window",
            "100ms",
            "--max-latency",
            "1us",
            "--metrics",
            "0",
        ],
    );
    let addr = monitor.address();
    let text = scrape_until(&monitor, &addr, Duration::from_secs(20), |l| {
        l.iter()
            .any(|l| l.name == "jitterlab_alerts_total" && l.value >= 2.0)
    });
    monitor.term();
    let (code, stdout, stderr) = monitor.wait();
    assert_eq!(code, Some(0), "{stdout}{stderr:?}");
    promtool_passes(&text);
    let lines = samples(&text);
    let host = lines
        .iter()
        .find(|l| l.name == "jitterlab_run_info")
        .map(|l| l.labels["host"].clone())
        .unwrap();
    let alerts: Vec<&Line> = lines
        .iter()
        .filter(|l| l.name == "jitterlab_alerts_total")
        .collect();
    assert_eq!(alerts.len(), 1, "{text}");
    assert_eq!(
        alerts[0].labels,
        BTreeMap::from([("host".into(), host.clone()), ("cpu".into(), cpu.clone())])
    );
    assert_eq!(
        value(
            &lines,
            "jitterlab_alert_log_failures_total",
            &[("host", &host)]
        ),
        0.0
    );
    // Where the alerts went: the journal where journald runs (CI may not
    // run it), else stderr, one line each.
    let destination = stderr
        .iter()
        .find_map(|l| l.strip_prefix("jitterlab: monitor: alerts go to "))
        .unwrap_or_else(|| panic!("{stderr:#?}"));
    assert!(
        ["the journal", "syslog (/dev/log)", "stderr"].contains(&destination),
        "{destination}"
    );
    if destination == "stderr" {
        let warned = stderr
            .iter()
            .filter(|l| {
                l.starts_with("jitterlab: warning: wake-up latency ")
                    && l.contains(&format!(" over --max-latency 1.000us on CPU {cpu} at "))
                    && l.contains(&format!(" JITTERLAB_CPU={cpu} "))
            })
            .count();
        assert!(warned as f64 >= alerts[0].value, "{stderr:#?}");
    }
}
