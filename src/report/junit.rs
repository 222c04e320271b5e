//! `--junit FILE` (`run`, `bench`, `report RUN`): the verdicts
//! (`jitterlab_core::verdict`) as a JUnit XML report, for the test-result
//! readers of CI servers (Jenkins, GitLab, GitHub Actions' reporters).
//!
//! The layout is the common one those readers accept: `<testsuites>` with
//! the totals, one `<testsuite>` per cell (a `jitterlab run` is one), one
//! `<testcase>` per verdict. A verdict that failed has a `<failure>` whose
//! message is what decided it (the figure against its limit); one not
//! measured is a failure too, of type `not-measured`, its message the
//! reason. A skipped cell is one test case `cell ran` marked `<skipped>`.
//! Times are seconds with three decimals: a suite's and each of its test
//! cases' is the cell's measured time (every verdict of a cell is judged
//! over the whole measurement); the `<testsuites>` time is their sum.
//! Stored texts are made printable ([`crate::output::shown`]) and escaped.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use jitterlab_core::verdict::{CellVerdicts, Status};

use crate::out_files;
use crate::output::shown;

/// What the report is of: the `<testsuites>` name, the suite name of an
/// unnamed cell, the start (RFC 3339) and the host.
pub struct Head<'a> {
    /// `jitterlab run cyclic`, `jitterlab bench seed-003`.
    pub title: &'a str,
    /// The suite of a cell without a name (a run's only cell).
    pub single: &'a str,
    /// RFC 3339 start of the run.
    pub started_at: &'a str,
    /// The machine's host name.
    pub hostname: &'a str,
}

/// Text made printable and escaped for an XML attribute or element.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in shown(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Nanoseconds as seconds with three decimals.
fn secs(ns: u64) -> String {
    let ms = ns / 1_000_000;
    format!("{}.{:03}", ms / 1_000, ms % 1_000)
}

/// The JUnit timestamp (`2026-11-27T06:00:00`, no zone: the schema's
/// form) of an RFC 3339 start, if it has one.
fn timestamp(rfc3339: &str) -> Option<&str> {
    let t = rfc3339.get(..19)?;
    let b = t.as_bytes();
    (b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':').then_some(t)
}

/// The JUnit XML of `cells`' verdicts.
pub fn render(head: &Head, cells: &[CellVerdicts]) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut skipped, mut time) = (0usize, 0usize, 0usize, 0u64);
    for c in cells {
        let name = c.cell.as_deref().unwrap_or(head.single);
        let t = secs(c.elapsed_ns);
        let mut cases = String::new();
        let (mut n, mut f, mut s) = (0usize, 0usize, 0usize);
        if let Some(why) = &c.skipped {
            n += 1;
            s += 1;
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"cell ran\" time=\"0.000\">\n      <skipped message=\"{}\"/>\n    </testcase>",
                xml(name),
                xml(why)
            );
        }
        for v in &c.verdicts {
            n += 1;
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{t}\"",
                xml(name),
                xml(&v.name)
            );
            let (kind, message) = match &v.status {
                Status::Pass => {
                    cases.push_str("/>\n");
                    continue;
                }
                Status::Fail => ("fail", v.decided.clone()),
                Status::NotMeasured { reason } => {
                    ("not-measured", format!("not measured: {reason}"))
                }
            };
            f += 1;
            let _ = writeln!(
                cases,
                ">\n      <failure type=\"{kind}\" message=\"{}\">{}</failure>\n    </testcase>",
                xml(&message),
                xml(&v.line())
            );
        }
        let mut attrs = format!(
            "name=\"{}\" tests=\"{n}\" failures=\"{f}\" errors=\"0\" skipped=\"{s}\" time=\"{t}\"",
            xml(name)
        );
        if let Some(ts) = timestamp(head.started_at) {
            let _ = write!(attrs, " timestamp=\"{ts}\"");
        }
        if !head.hostname.is_empty() {
            let _ = write!(attrs, " hostname=\"{}\"", xml(head.hostname));
        }
        let _ = writeln!(suites, "  <testsuite {attrs}>\n{cases}  </testsuite>");
        tests += n;
        failures += f;
        skipped += s;
        time += c.elapsed_ns;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\">\n{suites}</testsuites>\n",
        xml(head.title),
        secs(time)
    )
}

/// Writes the JUnit XML of `cells` to `path` (`-`: stdout), replacing it
/// as every output file is.
pub fn write(path: &Path, head: &Head, cells: &[CellVerdicts]) -> Result<()> {
    let text = render(head, cells);
    let mut f = out_files::create("--junit", path)?;
    f.write_all(text.as_bytes())?;
    f.finish()
}

#[cfg(test)]
mod tests;
