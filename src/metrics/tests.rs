//! `--metrics`'s address grammar and refusals, the HTTP answers, the
//! exposition of a board byte for byte, and what slow, idle or stuck
//! clients cost the other scrapes and the command's end (on the loopback
//! address, every client loop bounded).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jitterlab_core::cell::{CellKey, SettingReport};
use jitterlab_core::recorder::{LiveStats, Recorder, RecorderConfig};
use jitterlab_core::result::{DefaultStatus, ProbeKind};
use jitterlab_core::sample::{slots, Sample, SampleSink};

use super::board::Board;
use super::{exposition, http, parse_addr, serve, Server};
use crate::error::BadInput;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn an_address_is_a_port_on_the_loopback_or_host_and_port() {
    assert_eq!(parse_addr("9464"), Ok(addr("127.0.0.1:9464")));
    assert_eq!(parse_addr(":9464"), Ok(addr("127.0.0.1:9464")));
    assert_eq!(parse_addr("localhost:0"), Ok(addr("127.0.0.1:0")));
    assert_eq!(parse_addr("0.0.0.0:9464"), Ok(addr("0.0.0.0:9464")));
    assert_eq!(parse_addr("192.0.2.7:80"), Ok(addr("192.0.2.7:80")));
    assert_eq!(parse_addr("[::1]:9464"), Ok(addr("[::1]:9464")));
}

#[test]
fn a_bad_address_is_named_with_the_grammar() {
    let grammar = "expected PORT, :PORT or HOST:PORT, HOST an IP address (127.0.0.1, 0.0.0.0 for every interface, [::1]) or localhost, e.g. 127.0.0.1:9464";
    assert_eq!(
        parse_addr("99999"),
        Err(format!("'99999' is not a port (0-65535); {grammar}"))
    );
    assert_eq!(
        parse_addr(":http"),
        Err(format!("'http' is not a port (0-65535); {grammar}"))
    );
    assert_eq!(
        parse_addr("metrics.example:9464"),
        Err(format!(
            "'metrics.example:9464' is not an address to listen on; {grammar}"
        ))
    );
    assert_eq!(
        parse_addr("::1:9464"),
        Err(format!(
            "'::1:9464' is not an address to listen on; {grammar}"
        ))
    );
}

#[test]
fn a_port_in_use_is_bad_input_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap();
    let Err(e) = serve(Some(at), Path::new("/"), "run") else {
        panic!("a taken port was served");
    };
    let bad = e.downcast_ref::<BadInput>().expect("bad input");
    assert_eq!(
        bad.0,
        format!(
            "--metrics {at}: the port {} is in use (another exporter, or another jitterlab?); give another port, or port 0 for any free one",
            at.port()
        )
    );
    let Err(e) = serve(Some(addr("192.0.2.1:9464")), Path::new("/"), "run") else {
        panic!("an address of another machine was served");
    };
    assert_eq!(
        e.to_string(),
        "--metrics 192.0.2.1:9464: 192.0.2.1 is not an address of this machine; give one of its addresses, 127.0.0.1, or 0.0.0.0 for every interface"
    );
    assert!(serve(None, Path::new("/"), "run").unwrap().is_none());
}

#[test]
fn only_get_and_head_of_the_metrics_are_answered_with_them() {
    let render = || "jitterlab_run_info 1\n".to_string();
    let r = http::route("GET /metrics HTTP/1.1", render);
    assert_eq!(
        (r.status, r.content_type, r.body.as_str(), r.head_only),
        (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            "jitterlab_run_info 1\n",
            false
        )
    );
    let r = http::route("GET /metrics?x=1 HTTP/1.0", render);
    assert_eq!(r.body, "jitterlab_run_info 1\n");
    let r = http::route("HEAD /metrics HTTP/1.1", render);
    assert_eq!((r.status, r.head_only), ("200 OK", true));
    let r = http::route("GET / HTTP/1.1", render);
    assert_eq!(
        (r.status, r.body.as_str()),
        (
            "200 OK",
            "jitterlab: the Prometheus metrics are at /metrics\n"
        )
    );
    let r = http::route("GET /favicon.ico HTTP/1.1", render);
    assert_eq!(
        (r.status, r.body.as_str()),
        ("404 Not Found", "not found; the metrics are at /metrics\n")
    );
    let r = http::route("POST /metrics HTTP/1.1", render);
    assert_eq!(r.status, "405 Method Not Allowed");
    for line in ["", "GET", "GET /metrics SPDY/3"] {
        assert_eq!(
            http::route(line, render).status,
            "400 Bad Request",
            "{line}"
        );
    }
}

fn key() -> CellKey {
    CellKey {
        configuration: "tuned".into(),
        scenario: "cpu".into(),
        deployment: "host".into(),
        probe: "ctxswitch".into(),
        repetition: 1,
    }
}

/// A ctxswitch thread on CPU 3 that measured 0.5 µs, 1.5 µs and 250 µs
/// in its first window and then ended.
fn measured_board() -> Board {
    let board = Board::new("rt-target".into(), "bench", Path::new("/"));
    board.cell_started(2, 4, &key());
    let [publisher] = <[_; 1]>::try_from(board.probe_threads(ProbeKind::Ctxswitch, &[3])).unwrap();
    let (tx, _rx) = rtrb::RingBuffer::new(4);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 3,
        window_ns: 1_000_000_000,
        threshold_ns: 100_000,
        outliers: 1,
        histogram_us: 1_000,
        main_latency: ProbeKind::Ctxswitch.main_latency(),
    };
    let kind = ProbeKind::Ctxswitch;
    let mut r = Recorder::new(kind.metrics(), &cfg, tx, Arc::new(LiveStats::new()));
    r.export_metrics(publisher);
    r.start_at(0);
    for (i, v) in [500i64, 1_500, 250_000].into_iter().enumerate() {
        let s = Sample {
            index: i as u64,
            at: i as u64,
            values: slots([Some(v)]),
        };
        SampleSink::push(&mut r, &s);
    }
    r.finish();
    board
}

#[test]
fn the_exposition_of_a_board_is_exact() {
    let board = measured_board();
    board.set_settings(
        &[SettingReport {
            name: "kernel.timer_migration".into(),
            requested: "0".into(),
            before: "1".into(),
            applied: "0".into(),
            verified: "0".into(),
            ok: true,
            notes: Vec::new(),
        }],
        Some(&DefaultStatus {
            name: "cpu_dma_latency".into(),
            requested: "0 us".into(),
            applied: false,
            detail: "no permission".into(),
            required: true,
        }),
    );
    board.set_neighbours(vec![("hog".into(), true), ("disk \"a\"".into(), false)]);
    let labels =
        r#"host="rt-target",cell="tuned/cpu/host/ctxswitch",probe="ctxswitch",thread="0",cpu="3""#;
    let m = format!(r#"{labels},metric="handover""#);
    let le = [
        "0.000001", "0.000002", "0.000005", "0.00001", "0.00002", "0.00005", "0.0001", "0.0002",
        "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "+Inf",
    ];
    let cumulative = [1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3];
    let buckets: String = le
        .iter()
        .zip(cumulative)
        .map(|(le, c)| format!("jitterlab_sample_seconds_bucket{{{m},le=\"{le}\"}} {c}\n"))
        .collect();
    let version = crate::version::TOOL_VERSION;
    let want = format!(
        r#"# HELP jitterlab_run_info The jitterlab command serving these metrics (always 1).
# TYPE jitterlab_run_info gauge
jitterlab_run_info{{host="rt-target",command="bench",version="{version}"}} 1
# HELP jitterlab_cells_planned Cells the command measures (a run: 1).
# TYPE jitterlab_cells_planned gauge
jitterlab_cells_planned{{host="rt-target"}} 4
# HELP jitterlab_cells_done Cells measured (or skipped) so far.
# TYPE jitterlab_cells_done gauge
jitterlab_cells_done{{host="rt-target"}} 2
# HELP jitterlab_cell_info The cell being measured (always 1).
# TYPE jitterlab_cell_info gauge
jitterlab_cell_info{{host="rt-target",cell="tuned/cpu/host/ctxswitch",configuration="tuned",scenario="cpu",deployment="host",probe="ctxswitch",repetition="1"}} 1
# HELP jitterlab_neighbour_running A neighbour of the current cell: 1 while it runs, 0 once it died.
# TYPE jitterlab_neighbour_running gauge
jitterlab_neighbour_running{{host="rt-target",cell="tuned/cpu/host/ctxswitch",neighbour="hog"}} 1
jitterlab_neighbour_running{{host="rt-target",cell="tuned/cpu/host/ctxswitch",neighbour="disk \"a\""}} 0
# HELP jitterlab_setting_info A setting of the configuration in effect: 1 when the machine holds the value, 0 when it was asked for but could not be had.
# TYPE jitterlab_setting_info gauge
jitterlab_setting_info{{host="rt-target",setting="kernel.timer_migration",value="0"}} 1
jitterlab_setting_info{{host="rt-target",setting="cpu_dma_latency",value="0 us"}} 0
# HELP jitterlab_samples_total Samples measured in the closed windows (a periodic probe: cycles).
# TYPE jitterlab_samples_total counter
jitterlab_samples_total{{{labels}}} 3
# HELP jitterlab_windows_total Windows closed (one row each).
# TYPE jitterlab_windows_total counter
jitterlab_windows_total{{{labels}}} 1
# HELP jitterlab_dropped_rows_total Window rows the writer could not take in time (counted, never waited for).
# TYPE jitterlab_dropped_rows_total counter
jitterlab_dropped_rows_total{{{labels}}} 0
# HELP jitterlab_sample_seconds Samples of each metric of each probe thread, seconds; signed metrics (jitter) by magnitude.
# TYPE jitterlab_sample_seconds histogram
{buckets}jitterlab_sample_seconds_sum{{{m}}} 0.000252
jitterlab_sample_seconds_count{{{m}}} 3
# HELP jitterlab_max_seconds The largest value of each metric since the start, seconds.
# TYPE jitterlab_max_seconds gauge
jitterlab_max_seconds{{{m}}} 0.00025
# HELP jitterlab_window_max_seconds The largest value of each metric in the last closed window, seconds.
# TYPE jitterlab_window_max_seconds gauge
jitterlab_window_max_seconds{{{m}}} 0.00025
# HELP jitterlab_window_min_seconds The smallest value of each metric in the last closed window, seconds.
# TYPE jitterlab_window_min_seconds gauge
jitterlab_window_min_seconds{{{m}}} 0.0000005
# HELP jitterlab_window_mean_seconds The mean value of each metric in the last closed window, seconds.
# TYPE jitterlab_window_mean_seconds gauge
jitterlab_window_mean_seconds{{{m}}} 0.000084
"#
    );
    assert_eq!(exposition::render(&board), want);
}

#[test]
fn a_cell_that_ends_takes_its_settings_and_neighbours_along() {
    let board = measured_board();
    board.set_neighbours(vec![("hog".into(), true)]);
    board.add_setting(&DefaultStatus {
        name: "cpu_dma_latency".into(),
        requested: "0 us".into(),
        applied: true,
        detail: String::new(),
        required: true,
    });
    board.cell_ended(3, 4);
    let text = exposition::render(&board);
    assert!(
        text.contains("jitterlab_cells_done{host=\"rt-target\"} 3\n"),
        "{text}"
    );
    for gone in [
        "jitterlab_cell_info",
        "jitterlab_neighbour_running",
        "jitterlab_setting_info",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    // The last measurement's threads stay until the next one starts.
    assert!(text.contains("jitterlab_samples_total{"), "{text}");
    let publishers = board.probe_threads(ProbeKind::Chase, &[0, 1]);
    assert_eq!(publishers.len(), 2);
    let text = exposition::render(&board);
    assert!(!text.contains("jitterlab_sample_seconds"), "{text}");
    assert!(
        text.contains("jitterlab_sample_cycles_bucket{host=\"rt-target\",cell=\"\",probe=\"chase\",thread=\"1\",cpu=\"1\",metric=\"sample-jitter\",le=\"100000000\"} 0\n"),
        "{text}"
    );
    assert_eq!(board.lock().probe_cpus, vec![0, 1]);
    // A chase has no overruns to count, and no maxima before a window.
    assert!(!text.contains("jitterlab_overruns_total"), "{text}");
    assert!(!text.contains("jitterlab_max_cycles"), "{text}");
}

/// `promtool check metrics` on `text` passes with no complaint; skipped,
/// saying so, where promtool is missing.
fn promtool_passes(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
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

#[test]
fn a_monitor_s_alerts_are_counted_per_cpu_from_zero() {
    let board = Board::new("rt-target".into(), "monitor", Path::new("/"));
    let version = crate::version::TOOL_VERSION;
    let run_info = format!(
        r#"# HELP jitterlab_run_info The jitterlab command serving these metrics (always 1).
# TYPE jitterlab_run_info gauge
jitterlab_run_info{{host="rt-target",command="monitor",version="{version}"}} 1
"#
    );
    // Nothing about alerts before the monitor watches for them.
    assert_eq!(exposition::render(&board), run_info);
    board.alerts_armed(&[1, 3]);
    let armed = exposition::render(&board);
    assert_eq!(
        armed,
        format!(
            r#"{run_info}# HELP jitterlab_alerts_total Windows whose latency exceeded --max-latency, each logged to the system log at priority warning.
# TYPE jitterlab_alerts_total counter
jitterlab_alerts_total{{host="rt-target",cpu="1"}} 0
jitterlab_alerts_total{{host="rt-target",cpu="3"}} 0
# HELP jitterlab_alert_log_failures_total Alerts the system log (journal or /dev/log) refused; each was written to stderr instead.
# TYPE jitterlab_alert_log_failures_total counter
jitterlab_alert_log_failures_total{{host="rt-target"}} 0
"#
        )
    );
    promtool_passes(&armed);
    board.alert(3);
    board.alert(3);
    // A CPU it was not armed for is counted all the same.
    board.alert(12);
    board.alert_log_failed();
    // Cells coming and going leave the counts be.
    board.cell_started(0, 1, &key());
    board.cell_ended(1, 1);
    board.alerts_armed(&[3]);
    let counted = exposition::render(&board);
    let want_alerts = r#"# HELP jitterlab_alerts_total Windows whose latency exceeded --max-latency, each logged to the system log at priority warning.
# TYPE jitterlab_alerts_total counter
jitterlab_alerts_total{host="rt-target",cpu="1"} 0
jitterlab_alerts_total{host="rt-target",cpu="3"} 2
jitterlab_alerts_total{host="rt-target",cpu="12"} 1
# HELP jitterlab_alert_log_failures_total Alerts the system log (journal or /dev/log) refused; each was written to stderr instead.
# TYPE jitterlab_alert_log_failures_total counter
jitterlab_alert_log_failures_total{host="rt-target"} 1
"#;
    assert!(counted.contains(want_alerts), "{counted}");
    assert!(
        counted.starts_with(&format!("{}# HELP jitterlab_cells_planned", run_info)),
        "{counted}"
    );
    promtool_passes(&counted);
}

#[test]
fn a_first_alert_or_failure_arms_the_counters_by_itself() {
    let board = Board::new("h".into(), "monitor", Path::new("/"));
    board.alert_log_failed();
    let text = exposition::render(&board);
    assert!(
        text.ends_with("# TYPE jitterlab_alert_log_failures_total counter\njitterlab_alert_log_failures_total{host=\"h\"} 1\n"),
        "{text}"
    );
    assert!(!text.contains("jitterlab_alerts_total{"), "{text}");
    board.alert(0);
    assert!(exposition::render(&board).contains("jitterlab_alerts_total{host=\"h\",cpu=\"0\"} 1\n"));
}

/// A metrics server on a free loopback port serving an empty board,
/// clients held to `limits`; and its address.
fn loopback_server(limits: http::Limits) -> (Server, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let board = Arc::new(Board::new("h".into(), "run", Path::new("/")));
    (Server::start(listener, board, limits).unwrap(), at)
}

/// `GET /metrics` at `at`, each read given `within`: the status line of
/// the answer, or why none came.
fn scrape_status(at: SocketAddr, within: Duration) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&at, within).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(within)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Whether the server closed `s` (end of stream or reset), looking
/// without waiting.
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let r = s.read(&mut byte);
    s.set_nonblocking(false).unwrap();
    match r {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// A client that connects to `at` and sends one byte of a request head
/// that never ends every 200 ms, 30 times at most (6 s): how long after
/// connecting it saw the server close it, `None` when it never did.
fn trickle(at: SocketAddr) -> std::thread::JoinHandle<Option<Duration>> {
    let mut s = TcpStream::connect(at).unwrap();
    let start = Instant::now();
    std::thread::spawn(move || {
        for _ in 0..30 {
            if s.write_all(b"x").is_err() || closed(&mut s) {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        None
    })
}

#[test]
fn a_trickling_client_neither_delays_a_scrape_nor_outlives_its_deadline() {
    let limits = http::Limits {
        deadline: Duration::from_secs(1),
        max_connections: 16,
    };
    let (_server, at) = loopback_server(limits);
    let slow = trickle(at);
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    assert_eq!(
        scrape_status(at, Duration::from_secs(2)),
        Ok("HTTP/1.1 200 OK".to_string())
    );
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
    // One deadline for the whole request: the bytes that keep coming do
    // not extend it.
    let held = slow
        .join()
        .unwrap()
        .expect("the trickling client was never closed");
    assert!(
        held >= Duration::from_secs(1) && held < Duration::from_millis(2500),
        "the trickling client was closed after {held:?}"
    );
}

#[test]
fn idle_connections_beyond_the_cap_evict_the_oldest_and_never_starve_a_scrape() {
    let limits = http::Limits {
        deadline: Duration::from_secs(30),
        max_connections: 16,
    };
    let (_server, at) = loopback_server(limits);
    let mut idle: Vec<TcpStream> = (0..24).map(|_| TcpStream::connect(at).unwrap()).collect();
    let t = Instant::now();
    assert_eq!(
        scrape_status(at, Duration::from_secs(3)),
        Ok("HTTP/1.1 200 OK".to_string())
    );
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "the scrape took {took:?}");
    // 24 idle and the scrape for 16 places: the 9 oldest were closed, the
    // 15 newest are still waiting for their request.
    let shut: Vec<bool> = idle.iter_mut().map(closed).collect();
    let mut want = vec![true; 9];
    want.extend([false; 15]);
    assert_eq!(shut, want);
}

#[test]
fn stopping_the_server_does_not_wait_for_a_stuck_client() {
    let (server, at) = loopback_server(http::LIMITS);
    let slow = trickle(at);
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    drop(server);
    let took = t.elapsed();
    assert!(
        took <= Duration::from_millis(1500),
        "stopping took {took:?}"
    );
    assert!(
        TcpStream::connect(at).is_err(),
        "the listener is still open after the server stopped"
    );
    assert!(
        slow.join().unwrap().is_some(),
        "the stuck client was never closed"
    );
}
