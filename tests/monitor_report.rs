//! `jitterlab report --monitor` from the command line, on a day of a
//! synthetic monitor series (`jitterlab __synth-monitor --days 1`, written
//! through the monitor's own store calls): the text, the JSON, the page —
//! well-formed, self-contained, rendered by headless Chromium (Debian
//! `chromium`; the browser check skips, saying so, without it) — and the
//! refusals of bad input (exit 2, one line naming what to do).

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn jl(db: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env(
        "JITTERLAB_JOURNAL",
        db.with_file_name("journal.json").as_os_str(),
    )
    .arg("--db")
    .arg(db);
    c
}

/// A database with one synthetic day on CPUs 0 and 1, made once for every
/// test here (a test only reads it).
fn day() -> &'static Path {
    static DB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, db) = DB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("day.db");
        let o = jl(&db)
            .args(["__synth-monitor", "--days", "1", "--cpus", "2", "--name", "line-3"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            format!(
                "series line-3 (run 1): 1 day of 1 s windows on 2 CPUs from 2025-01-01T00:00:00Z, 172800 window rows and 576 5-minute histograms written to {}\n",
                db.display()
            )
        );
        (dir, db)
    });
    db
}

fn report(args: &[&str]) -> (i32, String, String) {
    let o = jl(day()).arg("report").args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_text_view_of_the_latest_series() {
    let (code, out, err) = report(&["--monitor"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "monitor series line-3 (series 1, 1 segment): wakeup latency on CPUs 0 and 1, up to 2025-01-02T00:00:00Z"
    );
    for l in [
        "worst            latency  at (UTC)                  CPU  run                    cycle",
        "last hour's percentiles, us (1 us bins: v means v <= latency < v+1 us)",
        "CPU 0: 12 5-minute histograms, 1h 00m 00s of data from 2025-01-01T23:00:00Z to 2025-01-02T00:00:00Z",
        "window rows              172800  from 2025-01-01T00:00:00Z",
        "5-minute histograms         576  from 2025-01-01T00:00:00Z",
        "hourly rows                  48  from 2025-01-01T00:00:00Z",
    ] {
        assert!(lines.contains(&l), "{l:?} not in:\n{out}");
    }
    // Named, the same series.
    assert_eq!(report(&["--monitor", "line-3"]).1, out);
}

#[test]
fn the_json_is_schema_versioned() {
    let (code, out, err) = report(&["--monitor", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["database_schema"], 7);
    // No restart of its task: no mark.
    assert_eq!(j["monitor"]["marks"], serde_json::json!([]));
    assert_eq!(j["monitor"]["name"], "line-3");
    assert_eq!(j["monitor"]["last_hour"][1]["samples"], 3_600_000);
    assert_eq!(j["monitor"]["held"]["five_minute"]["rows"], 576);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let db = day().display().to_string();
    for (args, message) in [
        (
            &["--monitor", "line-4"][..],
            format!("jitterlab: error: no monitor series named line-4 in {db}; it holds: line-3 (jitterlab report --monitor NAME)\n"),
        ),
        (
            &["--monitor", "--format", "csv"][..],
            "jitterlab: error: --monitor prints text, json or html; choose one of them with --format\n".to_string(),
        ),
    ] {
        let (code, out, err) = report(args);
        assert_eq!((code, out.as_str(), err), (2, "", message), "{args:?}");
    }
    let (code, _, err) = report(&["1", "--monitor"]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "jitterlab: error: the argument '[RUN]...' cannot be used with '--monitor [<SERIES>]' (see jitterlab --help)\n"
    );
    let o = jl(day())
        .args(["__synth-monitor", "--days", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("jitterlab: error: {db} exists; __synth-monitor fills a new database: remove it or give another --db\n")
    );
}

/// Chromium's binary, or `None` after saying why the browser check skips.
fn chromium() -> Option<&'static str> {
    let ok = |c: &str| {
        Process::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let found = ["chromium", "chromium-browser"].into_iter().find(|c| ok(c));
    if found.is_none() {
        eprintln!(
            "skipping the browser check: chromium is not installed (apt-get install chromium; make test-deps installs it)"
        );
    }
    found
}

#[test]
fn the_page_is_self_contained_and_a_browser_draws_its_plot() {
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("monitor.html");
    let (code, out, err) = report(&[
        "--monitor",
        "--format",
        "html",
        "-o",
        page_path.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    for bad in [
        "http:", "https:", "//", "url(", "<script", "@import", "src=", "href=",
    ] {
        assert!(!page.contains(bad), "the page holds {bad:?}");
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&page, opts).expect("well-formed");
    let svgs: Vec<_> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .collect();
    assert_eq!(svgs.len(), 1);
    assert_eq!(svgs[0].attribute("data-plot"), Some("maxima"));
    roxmltree::Document::parse(&page[svgs[0].range()]).expect("the plot is well-formed");

    let Some(browser) = chromium() else {
        return;
    };
    let png = dir.path().join("monitor.png");
    let mut child = Process::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--window-size=1000,900",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("chromium").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page_path.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let file = std::io::BufReader::new(std::fs::File::open(&png).unwrap());
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let near = |p: &[u8], q: (u8, u8, u8)| {
        p[0].abs_diff(q.0) <= 24 && p[1].abs_diff(q.1) <= 24 && p[2].abs_diff(q.2) <= 24
    };
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let ink = px.iter().filter(|p| p[..3] != [255, 255, 255]).count();
    // CPU 0 is drawn in blue (#0072B2), CPU 1 in vermilion (#D55E00).
    let blue = px.iter().filter(|p| near(p, (0x00, 0x72, 0xB2))).count();
    let vermilion = px.iter().filter(|p| near(p, (0xD5, 0x5E, 0x00))).count();
    eprintln!(
        "{} of {} pixels not white, {blue} blue, {vermilion} vermilion",
        ink,
        px.len()
    );
    assert_eq!((info.width, info.height), (1000, 900));
    assert!(ink > px.len() / 50, "a blank page: {ink} pixels of ink");
    assert!(
        blue > 300 && vermilion > 300,
        "{blue} blue, {vermilion} vermilion"
    );
}
