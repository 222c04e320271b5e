//! The header every report starts with, in each format: the machine, the
//! jitterlab that measured, the spec and its hash, the document a preset
//! reproduces and what it emulates, start and duration
//! ([`jitterlab_core::header::Header`]: what each line says, and "not
//! recorded" for what an older run did not keep).
//!
//! The record is the header and, right under it, the verdict block with
//! every limit and what decided it ([`record`]): printed once, in text,
//! Markdown and JSON (the HTML page puts [`super::html`]'s verdict block in
//! the same place); no body prints the verdict again. [`assemble`] takes
//! the block already rendered for the format (`None` leaves the slot
//! empty), so the verdict's own renderer decides what it says and the
//! header only where it goes. In JSON the header is the first key of the
//! document (`"header"`) and the verdict the second (`"verdict"`).
//!
//! Where the header comes from: a `jitterlab run`'s own result
//! ([`of_result`]: what the run printed at its end is what `report` prints
//! again), a bench's stored row ([`crate::store::Store::run_header`]).

use anyhow::Result;
use jitterlab_core::cell::StoredRun;
use jitterlab_core::header::{Header, RunFacts};
use jitterlab_core::result::RunResult;
use jitterlab_core::verdict::CellVerdicts;

use super::tables::{md_escape, Format};
use crate::output::shown;
use crate::render::safe::escape;
use crate::store::{RunKind, Store};

/// The label column of the text header.
const LABEL: usize = 13;

/// The header of a `jitterlab run`'s result: its spec is its command line,
/// hashed as the store keeps it (its parameters).
pub fn of_result(r: &RunResult) -> Header {
    let params = serde_json::to_value(&r.params).ok();
    Header::new(
        &r.host,
        RunFacts {
            tool_version: r.tool_version.clone(),
            spec: format!("jitterlab run {}, from the command line", r.probe.name()),
            spec_sha256: params.as_ref().map(crate::store::spec_sha256),
            source: None,
            started_at: r.started_at.clone(),
            duration_ns: Some(r.elapsed_ns),
        },
    )
}

/// The header of a stored run: a finished `jitterlab run`'s from its
/// result (as it printed it), any other's from its stored row.
pub fn of_run(store: &Store, run: &StoredRun) -> Result<Header> {
    let single = RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1;
    match (single, run.cells.first().and_then(|c| c.result.as_ref())) {
        (true, Some(r)) if !r.host.hostname.is_empty() || !r.tool_version.is_empty() => {
            Ok(of_result(r))
        }
        _ => store.run_header(run.id),
    }
}

/// The header as text: one `label  value` line per item.
pub fn text(h: &Header) -> String {
    let mut o = String::from("Record\n");
    for (k, v) in h.lines() {
        o.push_str(&format!("{k:<LABEL$}{}\n", shown(&v)));
    }
    o
}

/// The header as Markdown: a `###` title and a list.
pub fn md(h: &Header) -> String {
    let mut o = String::from("### Record\n\n");
    for (k, v) in h.lines() {
        o.push_str(&format!("- {k}: {}\n", md_escape(&v)));
    }
    o
}

/// The header as HTML: a titled `<dl>`, every value escaped.
pub fn html(h: &Header) -> String {
    let mut o = String::from("<h3>Record</h3>\n<dl class=\"header\">\n");
    for (k, v) in h.lines() {
        o.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>\n",
            escape(k),
            escape(&shown(&v))
        ));
    }
    o.push_str("</dl>\n");
    o
}

/// `body` (a report in `format`) as a record: the header on top and the
/// verdict block of `cells` right under it ([`super::verdict::block`]).
pub fn record(format: Format, h: &Header, cells: &[CellVerdicts], body: &str) -> Result<String> {
    assemble(
        format,
        h,
        super::verdict::block(format, cells).as_deref(),
        body,
    )
}

/// `body` (a report in `format`) with the header on top and, under it,
/// the verdict block when one is given (text, Markdown or HTML as
/// rendered; JSON as a JSON text). JSON: `body` must be a pretty-printed
/// object; the header becomes its first key and the verdict its second.
/// CSV has no header: a spreadsheet's rows only.
pub fn assemble(format: Format, h: &Header, verdict: Option<&str>, body: &str) -> Result<String> {
    let block = |v: Option<&str>| v.map(|v| format!("{v}\n")).unwrap_or_default();
    Ok(match format {
        Format::Text => format!("{}\n{}{body}", text(h), block(verdict)),
        Format::Md => format!("{}\n{}{body}", md(h), block(verdict)),
        Format::Html => format!("{}{}{body}", html(h), verdict.unwrap_or_default()),
        Format::Csv => body.to_string(),
        Format::Json => {
            // The header's fields in their declared order.
            let mut keys = vec![("header", serde_json::to_string_pretty(h)?)];
            if let Some(v) = verdict {
                let v: serde_json::Value = serde_json::from_str(v)?;
                keys.push(("verdict", serde_json::to_string_pretty(&v)?));
            }
            first_keys(body, &keys)?
        }
    })
}

/// A comparison of two runs (`report A B`) with both runs' records on
/// top, each titled with its run: `a` and `b` are (run id, header). JSON:
/// `headers` becomes the first key, `[A, B]`. CSV: rows only.
pub fn assemble_pair(
    format: Format,
    a: (i64, &Header),
    b: (i64, &Header),
    body: &str,
) -> Result<String> {
    let titled = |(id, h): (i64, &Header), which: &str| match format {
        Format::Md => md(h).replacen(
            "### Record\n",
            &format!("### Record of run {which} (run {id})\n"),
            1,
        ),
        _ => text(h).replacen(
            "Record\n",
            &format!("Record of run {which} (run {id})\n"),
            1,
        ),
    };
    Ok(match format {
        Format::Text | Format::Md => {
            format!("{}\n{}\n{body}", titled(a, "A"), titled(b, "B"))
        }
        Format::Html => format!("{}{}{body}", html(a.1), html(b.1)),
        Format::Csv => body.to_string(),
        Format::Json => {
            let both = serde_json::to_string_pretty(&[a.1, b.1])?;
            first_keys(body, &[("headers", both)])?
        }
    })
}

/// `body`, a pretty-printed JSON object, with `keys` (name, pretty JSON
/// text) put first in that order, the rest of the object as it was (its
/// key order kept).
fn first_keys(body: &str, keys: &[(&str, String)]) -> Result<String> {
    let rest = body
        .strip_prefix('{')
        .ok_or_else(|| anyhow::anyhow!("the report's JSON is not an object"))?;
    let mut o = String::from("{");
    for (k, v) in keys {
        let pretty = v.replace('\n', "\n  ");
        o.push_str(&format!("\n  {}: {pretty},", serde_json::to_string(k)?));
    }
    if rest.trim_start().starts_with('}') {
        o.pop();
        o.push('\n');
        o.push_str(rest.trim_start());
    } else {
        o.push_str(rest);
    }
    Ok(o)
}

#[cfg(test)]
mod tests;
