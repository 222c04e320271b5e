//! The loop's change detection with scripted polls, each sink's bytes, the
//! terminal screen, and the live figures' text.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::stats::MetricSummary;

use super::*;

/// A sink that records what it was given.
#[derive(Default)]
struct Record {
    shown: Vec<String>,
    ended: Vec<Option<String>>,
}

impl Sink for Rc<RefCell<Record>> {
    fn show(&mut self, text: &str) -> Result<()> {
        self.borrow_mut().shown.push(text.to_string());
        Ok(())
    }
    fn end(&mut self, last: Option<&str>) -> Result<()> {
        self.borrow_mut().ended.push(last.map(str::to_string));
        Ok(())
    }
}

/// Polls that return `keys` in turn, running until the last one.
fn scripted(keys: &'static [u32]) -> impl FnMut() -> Result<Poll<u32>> {
    let mut k = 0;
    move || {
        let key = keys[k];
        k += 1;
        Ok(Poll {
            key,
            running: k < keys.len(),
            every: Duration::ZERO,
        })
    }
}

#[test]
fn renders_only_when_the_poll_changed_and_shows_only_new_text() {
    let renders = Cell::new(0);
    // Render i (0-based) of the key sequence below: keys 1, 2 and 2 render
    // "a"; key 3 renders "b"; key 4 renders "c".
    let texts = ["a", "a", "b", "c"];
    let rec = Rc::new(RefCell::new(Record::default()));
    let mut sink = Rc::clone(&rec);
    let stop = AtomicBool::new(false);
    let ended = watch(
        scripted(&[1, 1, 1, 2, 2, 3, 3, 3, 4]),
        || {
            let t = texts[renders.get()];
            renders.set(renders.get() + 1);
            Ok(t.to_string())
        },
        &mut sink,
        &stop,
    )
    .unwrap();
    assert_eq!(ended, Ended::Run(4));
    assert_eq!(renders.get(), 4, "one render per new key, not per poll");
    let r = rec.borrow();
    assert_eq!(r.shown, ["a", "b", "c"], "the same text is not shown twice");
    assert_eq!(r.ended, [Some("c".to_string())], "the final render ends it");
}

#[test]
fn a_run_already_ended_is_rendered_once() {
    let rec = Rc::new(RefCell::new(Record::default()));
    let mut sink = Rc::clone(&rec);
    let ended = watch(
        scripted(&[7]),
        || Ok("done".to_string()),
        &mut sink,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(ended, Ended::Run(7));
    assert_eq!(rec.borrow().shown, ["done"]);
}

#[test]
fn the_stop_flag_ends_the_watch_without_a_final_render() {
    let rec = Rc::new(RefCell::new(Record::default()));
    let mut sink = Rc::clone(&rec);
    let stop = AtomicBool::new(false);
    let polls = Cell::new(0);
    let ended = watch(
        || {
            polls.set(polls.get() + 1);
            if polls.get() == 3 {
                // Ctrl-C arrives during the third pause.
                stop.store(true, Ordering::Relaxed);
            }
            Ok(Poll {
                key: polls.get(),
                running: true,
                // An hour's pause would hang the test if the flag were
                // not read while pausing.
                every: if polls.get() < 3 {
                    Duration::ZERO
                } else {
                    Duration::from_secs(3600)
                },
            })
        },
        || Ok(format!("render {}", polls.get())),
        &mut sink,
        &stop,
    )
    .unwrap();
    assert_eq!(ended, Ended::Stopped);
    let r = rec.borrow();
    assert_eq!(r.shown, ["render 1", "render 2", "render 3"]);
    assert_eq!(r.ended, [None]);
}

#[test]
fn an_error_still_ends_the_sink() {
    let rec = Rc::new(RefCell::new(Record::default()));
    let mut sink = Rc::clone(&rec);
    let err = watch(
        scripted(&[1, 2]),
        || anyhow::bail!("database gone"),
        &mut sink,
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "database gone");
    assert_eq!(rec.borrow().ended, [None], "the terminal is restored");
}

#[test]
fn the_poll_follows_the_window_within_bounds() {
    assert_eq!(poll_every(1_000_000_000), Duration::from_secs(1));
    assert_eq!(poll_every(250_000_000), Duration::from_millis(250));
    assert_eq!(poll_every(10_000_000), Duration::from_millis(100));
    assert_eq!(poll_every(60_000_000_000), Duration::from_secs(1));
}

#[test]
fn the_pipe_sink_puts_a_time_line_before_each_render() {
    let mut out = Vec::new();
    let mut s = PipeSink::new(&mut out, || "2026-11-24T04:50:36Z".to_string());
    s.show("first\n").unwrap();
    s.show("second, no newline").unwrap();
    s.end(Some("second, no newline")).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "--- 2026-11-24T04:50:36Z ---\nfirst\n--- 2026-11-24T04:50:36Z ---\nsecond, no newline\n"
    );
}

#[test]
fn the_time_line_is_utc_to_the_second() {
    let t = now_utc();
    assert_eq!(t.len(), "2026-11-24T04:50:36Z".len(), "{t}");
    assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
}

#[test]
fn the_terminal_screen_redraws_in_place_and_clips() {
    assert_eq!(
        screen("ab\ncdef\n", 24, 80),
        "\x1b[Hab\x1b[K\ncdef\x1b[K\n\x1b[J"
    );
    // 3 columns: lines are cut; 4 rows: 3 lines of room, the last says
    // how many are left out.
    assert_eq!(
        screen("l1\nline2\nl3\nl4\nl5\n", 4, 3),
        "\x1b[Hl1\x1b[K\nlin\x1b[K\n… 3\x1b[K\n\x1b[J"
    );
    assert_eq!(
        screen("l1\nl2\nl3\nl4\nl5\n", 4, 80),
        "\x1b[Hl1\x1b[K\nl2\x1b[K\n… 3 more lines: the whole report is printed when the run ends\x1b[K\n\x1b[J"
    );
    // Exactly as many lines as there is room for: nothing cut.
    assert_eq!(
        screen("l1\nl2\nl3\n", 4, 80),
        "\x1b[Hl1\x1b[K\nl2\x1b[K\nl3\x1b[K\n\x1b[J"
    );
}

#[test]
fn the_terminal_sink_hides_the_cursor_and_ends_with_the_whole_report() {
    let mut out = Vec::new();
    {
        let mut s = TerminalSink::new(&mut out, || Some((3, 80)));
        s.show("a\n").unwrap();
        s.show("a\nb\nc\n").unwrap();
        s.end(Some("a\nb\nc\n")).unwrap();
    }
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            "\x1b[?25l\x1b[Ha\x1b[K\n\x1b[J",
            "\x1b[Ha\x1b[K\n… 2 more lines: the whole report is printed when the run ends\x1b[K\n\x1b[J",
            "\x1b[H\x1b[2Ja\nb\nc\n\x1b[?25h",
        )
    );
}

#[test]
fn a_stopped_or_dropped_terminal_sink_shows_the_cursor_again() {
    let mut out = Vec::new();
    {
        let mut s = TerminalSink::new(&mut out, || None);
        s.show("x\n").unwrap();
        s.end(None).unwrap();
    }
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\x1b[?25l\x1b[Hx\x1b[K\n\x1b[J\x1b[?25h"
    );
    let mut out = Vec::new();
    {
        let mut s = TerminalSink::new(&mut out, || None);
        s.show("x\n").unwrap();
        // Dropped without end (an error between two renders).
    }
    assert!(String::from_utf8(out).unwrap().ends_with("\x1b[?25h"));
}

#[test]
fn the_file_sink_replaces_the_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.txt");
    let mut s = FileSink::new(&path);
    s.show("first render\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "first render\n");
    // A reader that opened the file keeps the old text; the path has the
    // new one; no temporary file is left beside it.
    let mut old = std::fs::File::open(&path).unwrap();
    s.show("second\n").unwrap();
    s.end(Some("second\n")).unwrap();
    let mut kept = String::new();
    std::io::Read::read_to_string(&mut old, &mut kept).unwrap();
    assert_eq!(kept, "first render\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["report.txt"]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o644, 0o644, "readable like any new file: {mode:o}");
}

fn live(windows: u64, plan: bool) -> LiveCell {
    let params = Params {
        duration_ns: Some(4_000_000_000),
        cpus: vec![1],
        ..Params::default()
    };
    let s = |count, min, max, mean| MetricSummary {
        count,
        min: Some(min),
        max: Some(max),
        mean: Some(mean),
        ..MetricSummary::default()
    };
    let mut metrics = BTreeMap::new();
    if windows > 0 {
        metrics.insert("latency".to_string(), s(2000, 12_065, 47_368, 17_498));
        metrics.insert("jitter".to_string(), s(1998, -9_912, 30_101, -3));
    }
    LiveCell {
        name: "default/none/host/wakeup".into(),
        position: 1,
        of: 1,
        plan: plan.then_some((ProbeKind::Wakeup, params)),
        windows,
        cycles: windows * 1000,
        measured_ns: windows * 1_000_000_000,
        metrics,
    }
}

#[test]
fn a_running_run_shows_its_figures_so_far() {
    assert_eq!(
        running_run(3, "wakeup", "2026-11-24T04:50:36Z", &[live(2, true)]),
        concat!(
            "run 3 (wakeup, started 2026-11-24T04:50:36Z) is running: 2.000s of 4.000s measured: 2 window rows, 2000 cycles.\n",
            "Figures so far, from the stored windows: count, min, max and mean (percentiles, outliers and limits come with the result at the end).\n",
            "\n",
            "CPU 1 (us, threshold 100.000us)\n",
            "metric        count        min        max       mean\n",
            "latency        2000     12.065     47.368     17.498\n",
            "jitter         1998     -9.912     30.101     -0.003\n",
        )
    );
}

#[test]
fn a_run_before_its_first_window_says_when_it_comes() {
    assert_eq!(
        running_run(3, "wake\u{1b}up", "t", &[live(0, true)]),
        "run 3 (wake\\u{1b}up, started t) is running: no window stored yet: the first comes after 1.000s.\n"
    );
    assert_eq!(
        running_run(3, "wakeup", "t", &[live(2, false)]),
        "run 3 (wakeup, started t) is running: 2 window rows, 2000 cycles stored; its probe and parameters were not, so their figures cannot be named.\n"
    );
    assert_eq!(
        running_run(3, "wakeup", "t", &[]),
        "run 3 (wakeup, started t) is running: no cell is measuring now.\n"
    );
}

#[test]
fn lengths_read_at_a_glance() {
    assert_eq!(span(250_000_000), "250.000ms");
    assert_eq!(span(2_000_000_000), "2.000s");
    assert_eq!(span(59_999_000_000), "59.999s");
    assert_eq!(span(60_000_000_000), "1m 00s");
    assert_eq!(span(125_500_000_000), "2m 05s");
    assert_eq!(span(172_799_000_000_000), "47h 59m 59s");
    assert_eq!(span(172_800_000_000_000), "48h 00m 00s");
}

#[test]
fn a_bench_names_the_cell_it_measures() {
    let mut c = live(1, true);
    c.name = "tuned/cpu/host/wakeup".into();
    c.position = 7;
    c.of = 20;
    let text = measuring_cells(&[c]);
    assert!(
        text.starts_with(
            "\nmeasuring cell 7 of 20, tuned/cpu/host/wakeup: 1.000s of 4.000s measured: 1 window rows, 1000 cycles.\n"
        ),
        "{text}"
    );
    assert_eq!(measuring_cells(&[]), "");
}
