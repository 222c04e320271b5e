//! Tests of `report --monitor`: the view of a series written through the
//! monitor's own calls (`store::monitor::tests::filled`: two segments, a
//! resumption, a 5-minute row both wrote to), printed as text, JSON and
//! HTML. The page is checked as the run pages are (`html/tests.rs`,
//! `tests/html_report.rs`): well-formed XML, no URL, no script, every plot
//! named, and the figures the plot keeps are those of the database.

use roxmltree::{Document, ParsingOptions};

use super::*;
use crate::store::monitor::tests::T;
use crate::store::Store;

/// The view of the filled series, its runs' uids made fixed (they are
/// random per database): run 1's begins `11111111`, run 2's `22222222`.
fn filled() -> (tempfile::TempDir, MonitorView) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("m.db")).unwrap();
    crate::store::monitor::tests::filled(&mut s);
    let mut v = s.monitor_view(None).unwrap();
    let uid = |run: i64| format!("{}-0000-4000-8000-000000000000", run.to_string().repeat(8));
    for seg in &mut v.segments {
        seg.uid = uid(seg.run);
    }
    let worsts = std::iter::once(&mut v.worst).chain(v.cpus.iter_mut().map(|c| &mut c.worst));
    for w in worsts {
        for x in [&mut w.ever, &mut w.week, &mut w.day].into_iter().flatten() {
            x.run_uid = uid(x.run);
        }
    }
    (dir, v)
}

const TEXT: &str = r#"monitor series plc-7 (series 1, 2 segments): wakeup latency on CPUs 1 and 3, up to 2026-11-17T01:00:00Z

worst            latency  at (UTC)                  CPU  run                    cycle
ever         20000.000us  2026-11-02T00:00:00.500Z    1  1 (11111111)        86400500
last week    11000.000us  2026-11-13T00:00:00.250Z    1  2 (22222222)       172620250
last day     10200.000us  2026-11-17T00:59:59.999Z    3  2 (22222222)       521819999
(ever: from the hourly rows, kept for ever; last week and last day: from the
 5-minute rows overlapping the 7 days and the 24 hours up to 2026-11-17T01:00:00Z)

per CPU             ever     last week      last day
CPU 1        20000.000us   11000.000us      60.000us
CPU 3        10200.000us   10200.000us   10200.000us

last hour's percentiles, us (1 us bins: v means v <= latency < v+1 us)
 CPU       samples     p50     p90     p99   p99.9  p99.99     max
   1         55000       3       5      12      12      25      25
   3          2000       2       2       2      40  beyond  beyond
CPU 1: 11 5-minute histograms, 55m 00s of data within the 1h 00m 00s from 2026-11-17T00:00:00Z to 2026-11-17T01:00:00Z
CPU 3: 2 5-minute histograms, 10m 00s of data from 2026-11-17T00:50:00Z to 2026-11-17T01:00:00Z
CPU 3: 2 samples at or beyond the histograms' last bin ("beyond"), the worst of them at most 10200.000us: the largest maximum of the 5-minute rows their spans overlap

segments
  run  uid       started               status       first window          last window end         windows
    1  11111111  2026-11-01T00:00:00Z  interrupted  2026-11-01T00:00:00Z  2026-11-11T00:01:30Z          6
    2  22222222  2026-11-11T00:03:00Z  running      2026-11-11T00:03:00Z  2026-11-17T01:00:00Z        128  resumed after 1m 30s

held now
window rows                 134  from 2026-11-01T00:00:00Z
5-minute histograms          14  from 2026-11-16T23:55:00Z
5-minute rows                36  from 2026-11-01T00:00:00Z
hourly rows                  14  from 2026-11-01T00:00:00Z
"#;

#[test]
fn the_text_is_the_monitoring_view() {
    let (_dir, v) = filled();
    assert_eq!(text(&v), TEXT);
    assert_eq!(render(&v, Format::Text).unwrap(), TEXT);
}

#[test]
fn a_series_without_data_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("m.db")).unwrap();
    let ids = s
        .begin_run_in(
            &crate::store::RunStart {
                started_at: "2026-11-21T12:00:00Z",
                probe: "wakeup",
                command_line: &[],
                params_json: "{}".into(),
                host_json: "{}".into(),
                hostname: "plc-7",
                kernel_release: "6.12",
                machine_id: None,
                realtime: Some(true),
                kind: crate::store::RunKind::Monitor,
                name: "fresh",
                spec_json: None,
            },
            "host",
        )
        .unwrap();
    s.monitor_begin("fresh", ids.run, ids.cell, "latency")
        .unwrap();
    let mut v = s.monitor_view(Some("fresh")).unwrap();
    v.segments[0].uid = "33333333-0000-4000-8000-000000000000".into();
    assert_eq!(
        text(&v),
        "monitor series fresh (series 1, 1 segment): wakeup latency on no CPU yet, no data stored yet\n\
         segments\n  \
         run  uid       started               status       first window          last window end         windows\n    \
         1  33333333  2026-11-21T12:00:00Z  running      -                     -                             0\n"
    );
    let page = render(&v, Format::Html).unwrap();
    assert!(page.contains("<p>nothing to plot yet: the series holds no 5-minute row.</p>"));
    check_page(&page);
}

#[test]
fn the_json_is_the_view_with_its_schema_versions() {
    let (_dir, v) = filled();
    let j: serde_json::Value = serde_json::from_str(&render(&v, Format::Json).unwrap()).unwrap();
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["database_schema"], crate::store::SCHEMA_VERSION);
    let m = &j["monitor"];
    assert_eq!(m["name"], "plc-7");
    assert_eq!(m["up_to_ns"], (T + 16 * 86_400 + 3_600) * 1_000_000_000);
    assert_eq!(m["worst"]["ever"]["max_ns"], 20_000_000);
    assert_eq!(m["worst"]["ever"]["cycle"], 86_400_500);
    assert_eq!(m["segments"][1]["resumed"], true);
    assert_eq!(m["segments"][1]["gap_before_ns"], 90_000_000_000i64);
    assert_eq!(m["last_hour"][1]["p99_9_us"], 40);
    assert_eq!(m["last_hour"][1]["p99_99_us"], serde_json::Value::Null);
    assert_eq!(m["last_hour"][1]["overflows"], 2);
    assert_eq!(m["held"]["hourly"]["rows"], 14);
    assert_eq!(m["plot"]["five_minute"][0]["rows_per_point"], 3);
    // Every field of the view, nothing else.
    assert_eq!(serde_json::to_value(&v).unwrap(), *m);
}

/// The text of a plot's first `tag` element (its `title`, its
/// `metadata`); empty when it has none.
fn node_text(svg: &Document, tag: &str) -> String {
    svg.descendants()
        .find(|n| n.tag_name().name() == tag)
        .and_then(|n| n.text())
        .unwrap_or_default()
        .to_string()
}

/// What a reader sees written in a plot: its `text` elements, trimmed.
fn texts<'a>(svg: &'a Document) -> Vec<&'a str> {
    svg.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect()
}

/// Checks a page as `tests/html_report.rs` does; returns its SVGs' text.
fn check_page(page: &str) -> Vec<String> {
    for bad in [
        "http:", "https:", "//", "url(", "<script", "@import", "src=", "href=",
    ] {
        assert!(!page.contains(bad), "the page holds {bad:?}");
    }
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(page, opts).expect("well-formed");
    let mut svgs = Vec::new();
    for s in doc.descendants().filter(|n| n.tag_name().name() == "svg") {
        Document::parse(&page[s.range()]).expect("each plot is well-formed");
        assert_eq!(s.attribute("class"), Some("plot"));
        assert!(s.children().any(|c| c.tag_name().name() == "title"));
        svgs.push(page[s.range()].to_string());
    }
    svgs
}

#[test]
fn the_page_has_the_maxima_plot_and_the_view() {
    let (_dir, v) = filled();
    let page = render(&v, Format::Html).unwrap();
    let svgs = check_page(&page);
    assert_eq!(svgs.len(), 1);
    let doc = Document::parse_with_options(
        &page,
        ParsingOptions {
            allow_dtd: true,
            ..ParsingOptions::default()
        },
    )
    .unwrap();
    let text_of = |tag: &str| -> Vec<String> {
        doc.descendants()
            .filter(|n| n.tag_name().name() == tag)
            .map(|n| n.text().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(text_of("pre"), vec![TEXT.to_string()]);
    assert_eq!(
        text_of("h1"),
        vec!["jitterlab monitor: series plc-7 (wakeup latency)".to_string()]
    );
    let svg = Document::parse(&svgs[0]).unwrap();
    let root = svg.root_element();
    assert_eq!(root.attribute("data-plot"), Some("maxima"));
    assert_eq!(
        node_text(&svg, "title"),
        "5-minute maxima of the monitor series plc-7"
    );
    // The figures drawn: every point of the store's reduction, the
    // resumption at segment 2's start, the worst ever.
    let data = node_text(&svg, "metadata");
    let mut expected = format!("up_to_s {}\n", T + 16 * 86_400 + 3_600);
    for s in &v.plot.five_minute {
        expected.push_str(&format!(
            "# CPU {} maxima per 300 s: 18 rows, 3 row starts per point\nstart_s max_ns\n",
            s.cpu
        ));
        for p in &s.points {
            expected.push_str(&format!("{} {}\n", p.start_s, p.max_ns));
        }
    }
    expected.push_str(&format!(
        "resumption_s {}\nworst_ever 20000000 {} 1\n",
        T + 10 * 86_400 + 180,
        (T + 86_400) as i128 * 1_000_000_000 + 500_000_000
    ));
    assert_eq!(data, expected);
    assert!(data.contains(&format!("\n{} 20000000\n", T + 86_400)));
    // What a reader sees: the axes, the legend, the worst ever labelled,
    // the resumption dashed, the date on the time axis.
    let texts = texts(&svg);
    for t in [
        "latency, max per 5 minutes (µs, log scale)",
        "time (UTC)",
        "CPU 1",
        "CPU 3",
        "monitor resumed",
        "worst ever",
        "worst ever 20000 µs, 2026-11-02 00:00 UTC, CPU 1",
        // 16 days: a tick every 7 days, on whole UTC days.
        "2026-11-05",
        "2026-11-12",
    ] {
        assert!(texts.contains(&t), "{t:?} not among {texts:?}");
    }
    assert!(svgs[0].contains("stroke=\"#666666\" stroke-dasharray=\"5 4\""));
}

#[test]
fn times_and_spans_read_as_people_write_them() {
    assert_eq!(format_utc(T * 1_000_000_000, false), "2026-11-01T00:00:00Z");
    assert_eq!(
        format_utc(T * 1_000_000_000 + 1_234_567_890, true),
        "2026-11-01T00:00:01.234Z"
    );
    assert_eq!(span(999_999_999), "999.999ms");
    assert_eq!(span(45_000_000_000), "45s");
    assert_eq!(span(90_000_000_000), "1m 30s");
    assert_eq!(span(3_600_000_000_000), "1h 00m 00s");
    assert_eq!(
        span((3 * 86_400 + 4 * 3_600 + 5 * 60 + 6) * 1_000_000_000),
        "3d 04h 05m 06s"
    );
    assert_eq!(span(-5), "0ns");
}

#[test]
fn markdown_and_csv_are_refused_before_the_database_is_read() {
    let dir = tempfile::tempdir().unwrap();
    for f in [Format::Md, Format::Csv] {
        let e = report(&dir.path().join("none.db"), None, f, None).unwrap_err();
        assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--monitor prints text, json or html; choose one of them with --format"
        );
    }
    assert!(!dir.path().join("none.db").exists());
}

#[test]
fn a_mark_of_the_task_is_a_dotted_line_on_the_plot_and_a_line_under_the_segments() {
    let (_dir, mut v) = filled();
    let at = (T + 12 * 86_400 + 600) * 1_000_000_000;
    let what = "task restarted: tid 41 (plc) of comm plc was gone; re-attached to the thread(s) named plc: tid 57";
    v.marks.push((at, what.to_string()));
    let page = render(&v, Format::Html).unwrap();
    let svgs = check_page(&page);
    let svg = Document::parse(&svgs[0]).unwrap();
    let metadata = node_text(&svg, "metadata");
    assert!(
        metadata.contains(&format!(
            "resumption_s {}\nmark_s {} {what}\nworst_ever ",
            T + 10 * 86_400 + 180,
            T + 12 * 86_400 + 600
        )),
        "{metadata}"
    );
    let texts = texts(&svg);
    assert!(
        texts.contains(&"task mark (listed under marks)"),
        "{texts:?}"
    );
    // Its line is dotted, in a colour of its own; the resumption's
    // stays dashed grey.
    assert!(svgs[0].contains("stroke=\"#A02020\" stroke-dasharray=\"2 3\""));
    assert!(svgs[0].contains("stroke=\"#666666\" stroke-dasharray=\"5 4\""));
    assert!(page.contains(
        "The dotted vertical line marks what happened to its task (1, listed under &quot;marks&quot; below): a restart the monitor re-attached after."
    ));
    assert!(page.contains(&format!("marks\n  2026-11-13T00:10:00Z  {what}\n")));
}
