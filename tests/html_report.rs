//! `jitterlab report --format html` from the command line, on databases
//! jitterlab wrote for real (`tests/fixtures/databases/`), and the pages it
//! writes rendered by a real browser.
//!
//! Every fixture database is reported as HTML; each page must be well
//! formed (parsed as XML by `roxmltree`: the page is written
//! XHTML-compatible so that a strict parser catches what an HTML parser
//! would repair), hold no URL, script or import, and carry its plots. One
//! page of each kind — a `jitterlab run`, a bench, two runs compared — is
//! then rendered by headless Chromium (Debian `chromium`) to a screenshot
//! whose pixels must vary: a blank or broken page is white, or one colour.
//! So are the plots a reviewer files: a chase's jitter per sample (one
//! run, and a bench's cells on one plot), a real round trip's budget on its
//! histogram, timeline and box chart (root only: it needs network
//! namespaces), and a bench of 16 cells, folded per cell, whose page must
//! end within a bound. Without Chromium those checks skip, saying so; CI
//! installs it.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/databases")
}

/// A copy of fixture `name` in `dir` (opening a database may migrate it:
/// never the fixture itself).
fn copy(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(format!("{name}.db"));
    std::fs::copy(fixtures().join(format!("{name}.db")), &to).unwrap();
    to
}

fn jl(dir: &Path, db: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .arg("--db")
        .arg(db);
    c
}

/// `jitterlab report ARGS --format html -o FILE`; the page.
fn html(dir: &Path, db: &Path, args: &[&str], file: &str) -> (PathBuf, String) {
    let out = dir.join(file);
    let o = jl(dir, db)
        .arg("report")
        .args(args)
        .args(["--format", "html", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {o:?}");
    assert!(o.stdout.is_empty(), "-o writes nothing on stdout");
    let page = std::fs::read_to_string(&out).unwrap();
    (out, page)
}

/// Checks a page's structure; returns its number of plots.
fn check_page(page: &str, what: &str) -> usize {
    for bad in [
        "http:", "https:", "//", "url(", "<script", "@import", "src=", "href=",
    ] {
        assert!(!page.contains(bad), "{what} holds {bad:?}");
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(page, opts)
        .unwrap_or_else(|e| panic!("{what} is not well-formed: {e}"));
    let svgs: Vec<roxmltree::Node<'_, '_>> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .collect();
    for s in &svgs {
        roxmltree::Document::parse(&page[s.range()])
            .unwrap_or_else(|e| panic!("an SVG of {what} is not well-formed: {e}"));
        assert_eq!(s.attribute("class"), Some("plot"), "{what}");
        let title = s.children().find(|c| c.tag_name().name() == "title");
        assert!(title.is_some(), "every plot of {what} is named");
    }
    svgs.len()
}

#[test]
fn every_stored_run_renders_as_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    // (fixture, plots at least): three per measured cell, box charts.
    for (name, min_plots) in [
        ("run-cyclic", 3),
        ("run-wakeup", 3),
        ("run-chase", 3),
        ("bench-epics", 12),
        ("bench-caterpillar", 4),
        ("bench-powerlink", 12),
        ("bench-killed", 1),
    ] {
        let db = copy(dir.path(), name);
        let (_, page) = html(dir.path(), &db, &[], &format!("{name}.html"));
        let plots = check_page(&page, name);
        assert!(plots >= min_plots, "{name}: {plots} plots");
        assert!(page.contains("<h3>Verdict</h3>"), "{name}");
        // A chase plots its jitter per sample; a bench of chases, also its
        // cells on one plot.
        let per_sample = page.matches("data-plot=\"per-sample\"").count();
        let want = match name {
            "run-chase" => 1,
            "bench-caterpillar" => 3,
            _ => 0,
        };
        assert_eq!(per_sample, want, "{name}");
        // A bench folds its cells.
        if name.starts_with("bench-") {
            assert!(page.contains("<details class=\"cell\""), "{name}");
        }
    }
}

#[test]
fn the_output_flag_writes_any_format_and_refuses_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy(dir.path(), "bench-epics");
    let stdout = jl(dir.path(), &db).arg("report").output().unwrap();
    let file = dir.path().join("r.txt");
    let o = jl(dir.path(), &db)
        .args(["report", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(&file).unwrap(), stdout.stdout);
    // Replaced, not appended.
    let o = jl(dir.path(), &db)
        .args(["report", "--format", "csv", "--output"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .starts_with("table,"));
    let missing = dir.path().join("no/such/dir/r.html");
    let o = jl(dir.path(), &db)
        .args(["report", "--format", "html", "-o"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "-o {}: directory {} does not exist; create it or choose another path",
            missing.display(),
            missing.parent().unwrap().display()
        )),
        "{err}"
    );
    assert!(!dir.path().join("no").exists());
}

/// Chromium's binary, or `None` after saying why the browser checks skip.
fn chromium() -> Option<&'static str> {
    for c in ["chromium", "chromium-browser"] {
        let ok = Process::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(c);
        }
    }
    eprintln!(
        "skipping the browser checks: chromium is not installed (apt-get install chromium; make test-deps installs it)"
    );
    None
}

/// Renders `page` in headless Chromium at 1200 × 3000; the screenshot.
fn screenshot(browser: &str, page: &Path, dir: &Path) -> PathBuf {
    screenshot_of(browser, page, dir, 3000)
}

/// Renders `page` in headless Chromium at 1200 × `height`; the screenshot.
fn screenshot_of(browser: &str, page: &Path, dir: &Path, height: u32) -> PathBuf {
    let png = page.with_extension("png");
    let mut child = Process::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size=1200,{height}"))
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed on {}", page.display());
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {} in 120 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    png
}

/// What a screenshot shows.
struct Pixels {
    /// Distinct colours.
    colours: usize,
    /// The share of pixels that are not white.
    ink: f64,
    /// Pixels of run A's blue (#0072B2, anti-aliasing allowed for).
    blue: usize,
    /// Pixels of run B's vermilion (#D55E00).
    vermilion: usize,
    /// Width, height.
    size: (u32, u32),
    /// The row below the lowest pixel that is not white: how tall the page
    /// is, when it ends within the screenshot.
    ink_end: u32,
}

fn near(p: (u8, u8, u8), q: (u8, u8, u8)) -> bool {
    p.0.abs_diff(q.0) <= 24 && p.1.abs_diff(q.1) <= 24 && p.2.abs_diff(q.2) <= 24
}

/// Reads a screenshot.
fn pixels(png: &Path) -> Pixels {
    let file = std::io::BufReader::new(std::fs::File::open(png).unwrap());
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let mut ink_end = 0;
    let (mut ink, mut blue, mut vermilion) = (0usize, 0usize, 0usize);
    let data = &buf[..info.buffer_size()];
    for (k, px) in data.chunks(channels).enumerate() {
        let rgb = (px[0], px[1], px[2.min(channels - 1)]);
        colours.insert(rgb);
        if rgb != (255, 255, 255) {
            ink += 1;
            ink_end = (k / info.width as usize) as u32 + 1;
        }
        blue += usize::from(near(rgb, (0x00, 0x72, 0xB2)));
        vermilion += usize::from(near(rgb, (0xD5, 0x5E, 0x00)));
    }
    let total = data.len() / channels;
    Pixels {
        colours: colours.len(),
        ink: ink as f64 / total as f64,
        blue,
        vermilion,
        size: (info.width, info.height),
        ink_end,
    }
}

#[test]
fn a_browser_renders_a_run_a_bench_and_a_comparison() {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = copy(dir.path(), "run-cyclic");
    let bench = copy(dir.path(), "bench-epics");
    // A second real run beside the stored one, to compare with.
    let o = jl(dir.path(), &run)
        .args(["run", "cyclic", "--period", "1ms", "--duration", "1s"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    let pages = [
        html(dir.path(), &run, &["1"], "run.html"),
        html(dir.path(), &bench, &[], "bench.html"),
        html(dir.path(), &run, &["1", "2"], "compare.html"),
    ];
    for (k, (path, page)) in pages.iter().enumerate() {
        check_page(page, &path.display().to_string());
        let png = screenshot(browser, path, dir.path());
        let p = pixels(&png);
        let what = path.display();
        eprintln!(
            "{what}: {} colours, {:.1}% not white, {} blue and {} vermilion pixels, {:?}",
            p.colours,
            p.ink * 100.0,
            p.blue,
            p.vermilion,
            p.size
        );
        assert_eq!(p.size, (1200, 3000));
        assert!(p.colours >= 16, "{what}: {} colours", p.colours);
        assert!(
            p.ink > 0.01 && p.ink < 0.9,
            "{what}: {:.3} of the pixels are not white",
            p.ink
        );
        // The plots were drawn: run A's series are blue, and in the
        // comparison run B's are vermilion.
        assert!(p.blue > 300, "{what}: {} blue pixels", p.blue);
        if k == 2 {
            assert!(
                p.vermilion > 300,
                "{what}: {} vermilion pixels",
                p.vermilion
            );
        }
    }
}

/// Runs the command `make` builds, again while another jitterlab holds
/// the machine (for up to 10 minutes); its output.
fn when_free(make: impl Fn() -> Command) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let o = make().output().unwrap();
        let busy = String::from_utf8_lossy(&o.stderr).contains("another jitterlab");
        if !busy || Instant::now() > deadline {
            return o;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Screenshots `page` and checks that it shows plots; its pixels.
fn rendered(browser: &str, page: &Path, dir: &Path, height: u32) -> Pixels {
    let png = screenshot_of(browser, page, dir, height);
    let p = pixels(&png);
    let what = page.display();
    eprintln!(
        "{what}: {} colours, {:.1}% not white, {} blue and {} vermilion pixels, {:?}, ink to row {}",
        p.colours,
        p.ink * 100.0,
        p.blue,
        p.vermilion,
        p.size,
        p.ink_end
    );
    assert_eq!(p.size, (1200, height));
    assert!(p.colours >= 16, "{what}: {} colours", p.colours);
    assert!(
        p.ink > 0.005 && p.ink < 0.9,
        "{what}: {:.3} not white",
        p.ink
    );
    assert!(p.blue > 300, "{what}: {} blue pixels", p.blue);
    p
}

/// A bench spec of 4 configurations × 4 scenarios: 16 short cyclic cells.
const SIXTEEN_CELLS: &str = r#"
duration = "300ms"
warmup = "0s"

[[configuration]]
name = "a"
[[configuration]]
name = "b"
[[configuration]]
name = "c"
[[configuration]]
name = "d"

[[scenario]]
name = "idle"
builtin = "idle"
[[scenario]]
name = "quiet"
builtin = "idle"
[[scenario]]
name = "still"
builtin = "idle"
[[scenario]]
name = "calm"
builtin = "idle"

[[probe]]
kind = "cyclic"
period = "1ms"
"#;

#[test]
fn a_browser_renders_the_chase_the_round_trip_and_a_folded_large_bench() {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The chase's jitter per sample: one run, then a bench's two cells on
    // one plot (the second dashed in vermilion).
    let chase = copy(dir.path(), "run-chase");
    let (page, html_text) = html(dir.path(), &chase, &[], "chase.html");
    check_page(&html_text, "chase");
    rendered(browser, &page, dir.path(), 3000);
    let bench = copy(dir.path(), "bench-caterpillar");
    let (page, html_text) = html(dir.path(), &bench, &[], "caterpillar.html");
    check_page(&html_text, "caterpillar");
    let p = rendered(browser, &page, dir.path(), 3000);
    assert!(p.vermilion > 300, "{} vermilion pixels", p.vermilion);
    // 16 cells, each folded: the page ends within 10 000 px, header and
    // verdict table (a row per cell and verdict) included; unfolded, each
    // cell's three plots take about 1300 px, 26 000 px in all.
    let spec = dir.path().join("sixteen.toml");
    std::fs::write(&spec, SIXTEEN_CELLS).unwrap();
    let db = dir.path().join("sixteen.db");
    let o = when_free(|| {
        let mut c = jl(dir.path(), &db);
        c.arg("bench").arg(&spec);
        c
    });
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    let (page, html_text) = html(dir.path(), &db, &[], "sixteen.html");
    assert_eq!(check_page(&html_text, "sixteen cells"), 16 * 3 + 4);
    assert_eq!(html_text.matches("<details class=\"cell\"").count(), 16);
    let p = rendered(browser, &page, dir.path(), 12000);
    assert!(
        p.ink_end > 1500 && p.ink_end < 10_000,
        "the page of 16 folded cells is {} px tall",
        p.ink_end
    );
    // A real round trip: its budget on the histogram, timeline and box
    // chart, and its milliseconds-wide histogram in merged bins.
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!(
            "skipping the round trip in the browser: it needs root for its network namespaces"
        );
        return;
    }
    let db = dir.path().join("roundtrip.db");
    let o = when_free(|| {
        let mut c = jl(dir.path(), &db);
        c.args(["run", "roundtrip", "--duration", "3s"]);
        c
    });
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
    let (page, html_text) = html(dir.path(), &db, &[], "roundtrip.html");
    check_page(&html_text, "round trip");
    for kind in ["histogram", "percentiles", "timeline", "boxes"] {
        let at = html_text
            .find(&format!("data-plot=\"{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} plot"));
        let end = at + html_text[at..].find("</svg>").unwrap();
        assert!(
            html_text[at..end].contains("<metadata>")
                && html_text[at..end].contains("line budget "),
            "the {kind} plot draws the budget"
        );
    }
    assert!(html_text.contains(" µs bins (1 µs bins merged for display)"));
    // The record header and the verdict come first: the plots start below
    // 3000 px.
    rendered(browser, &page, dir.path(), 6000);
}
