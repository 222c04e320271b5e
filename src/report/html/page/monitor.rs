//! The page of `jitterlab report --monitor --format html`: a monitor
//! series on one self-contained page, written like the run pages
//! ([`super`]: the same document, style sheet and escaping, no script, no
//! URL).
//!
//! Top to bottom: the 5-minute-maxima plot people know from OSADL's
//! latency farm ([`crate::report::html::plots`]' `monitor`), then the
//! monitoring view exactly as the text report prints it — worst ever, of
//! the last week and day, the last hour's percentiles, the segments with
//! their resumptions, and what the retention holds — in a `<pre>`, so the
//! page and the terminal never disagree.

use std::fmt::Write as _;

use anyhow::Result;

use super::{esc, figure, page as document};
use crate::render::safe::escape;
use crate::report::html::plots;
use crate::store::monitor::view::MonitorView;
use jitterlab_core::units::format_utc as utc;

/// The plot's caption: what is drawn and how it was reduced.
fn caption(view: &MonitorView) -> String {
    let mut c = String::from(
        "The largest latency of every 5 minutes, per CPU, on a log scale (OSADL's plot)",
    );
    if let Some(s) = view.plot.five_minute.first() {
        let _ = write!(
            c,
            ": {} rows of CPU {} in {} points",
            s.rows,
            s.cpu,
            s.points.len()
        );
        if s.rows_per_point > 1 {
            let _ = write!(
                c,
                ", each the largest of {} consecutive 5-minute rows, so that no maximum is lost",
                s.rows_per_point
            );
        }
    }
    c.push('.');
    let first_five = view.plot.five_minute_from_s;
    if let Some(first) = first_five.filter(|_| !view.plot.hourly.is_empty()) {
        let _ = write!(
            c,
            " Before {}, where the 5-minute rows held now begin, each line continues with the hourly maxima.",
            utc(first * 1_000_000_000, false)
        );
    }
    let resumed = view.segments.iter().filter(|s| s.resumed).count();
    if resumed > 0 {
        let _ = write!(
            c,
            " The dashed vertical lines mark the {resumed} time{} the monitor resumed the series.",
            if resumed == 1 { "" } else { "s" }
        );
    }
    let marks = view.marks.len();
    if marks > 0 {
        let _ = write!(
            c,
            " The dotted vertical line{} mark{} what happened to its task ({marks}, listed under \"marks\" below): a restart the monitor re-attached after.",
            if marks == 1 { "" } else { "s" },
            if marks == 1 { "s" } else { "" },
        );
    }
    if view.worst.ever.is_some() {
        c.push_str(" The black dot is the worst ever.");
    }
    c
}

/// The page of `view`, with `text` (its text report) below the plot.
pub(in crate::report::html) fn page(view: &MonitorView, text: &str) -> Result<String> {
    let title = format!(
        "jitterlab monitor: series {} ({} {})",
        view.name, view.probe, view.metric
    );
    let mut body = format!("<h1>{}</h1>\n", esc(&title));
    if let Some(up_to) = view.up_to_ns {
        let _ = writeln!(
            body,
            "<p class=\"note\">up to {}, the series' latest data; times are UTC.</p>",
            utc(up_to, false)
        );
    }
    body.push_str("<h2>Maxima over time</h2>\n");
    let plot_title = format!("5-minute maxima of the monitor series {}", view.name);
    match plots::monitor::maxima(view, &plot_title)? {
        Some(svg) => body.push_str(&figure(&svg, &caption(view))),
        None => body.push_str("<p>nothing to plot yet: the series holds no 5-minute row.</p>\n"),
    }
    let _ = writeln!(
        body,
        "<h2>The monitoring view</h2>\n<pre class=\"summary\">{}</pre>",
        escape(text)
    );
    Ok(document(&title, &body))
}
