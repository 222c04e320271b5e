//! One table, built once and written in any format.
//!
//! A [`Sheet`] holds each cell twice: as a person reads it (`57.9 µs`,
//! `36.8–40.0%`, `failed`) and as a script reads it (integer ns, numbers,
//! `null`). A column says under which header it is printed (none: it is for
//! scripts only, like the scenario of a table whose title already names it)
//! and which machine columns it stands for (a spread is two: `_min`,
//! `_max`). So the text, Markdown, HTML, CSV and JSON of one table cannot
//! disagree about what is in it.
//!
//! Every printed cell, header, title and footnote goes through
//! [`shown`] (control characters escaped), in the Markdown after its
//! syntax is escaped, and so does every string field of the CSV: names
//! and notes come from the database, which anyone may have written.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::output::shown;

/// One column.
pub(crate) struct Col {
    /// The header text/md print; `None`: machine formats only.
    pub head: Option<String>,
    /// Right-aligned in text (figures).
    pub right: bool,
    /// The CSV/JSON column names this column fills, in order.
    pub names: Vec<String>,
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

impl Col {
    /// A left-aligned printed column.
    pub fn left(head: &str, n: &[&str]) -> Col {
        Col {
            head: Some(head.to_string()),
            right: false,
            names: names(n),
        }
    }

    /// A right-aligned printed column.
    pub fn right(head: impl Into<String>, n: &[&str]) -> Col {
        Col {
            head: Some(head.into()),
            right: true,
            names: names(n),
        }
    }

    /// A column for scripts only.
    pub fn hidden(n: &[&str]) -> Col {
        Col {
            head: None,
            right: false,
            names: names(n),
        }
    }
}

/// One cell: what is printed and the values of its machine columns.
pub(crate) struct Cell {
    /// Printed text.
    pub text: String,
    /// One value per name of its column.
    pub values: Vec<Value>,
}

impl Cell {
    /// A cell for the given text and values.
    pub fn new(text: impl Into<String>, values: Vec<Value>) -> Cell {
        Cell {
            text: text.into(),
            values,
        }
    }

    /// A machine-only cell.
    pub fn hidden(values: Vec<Value>) -> Cell {
        Cell {
            text: String::new(),
            values,
        }
    }
}

/// One table.
pub(crate) struct Sheet {
    /// `configurations`, `conditions`, `latency`, `chase`, `roundtrip`,
    /// `load` or `compare`.
    pub name: &'static str,
    /// The title line.
    pub title: String,
    /// Columns.
    pub cols: Vec<Col>,
    /// Rows, one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// Footnotes printed under the table.
    pub notes: Vec<String>,
}

/// A table as JSON writes it.
#[derive(Serialize)]
pub(crate) struct JsonTable {
    name: &'static str,
    title: String,
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
    notes: Vec<String>,
}

/// Text made literal in Markdown, whatever a stored name or hostname
/// holds: `<` and `&` as HTML's entities (no inline HTML such as
/// `<script>`, no autolink, no entity of the text's own: a `>` alone
/// opens nothing), a backslash before what would split a table cell
/// (`|`), start emphasis, a code span or strikethrough (`*`, `_`, `` ` ``,
/// `~`), a link (`[`, `]`) or an escape (`\`), and before a `#` or `>`
/// that starts the text (a heading, a quote); then the control characters
/// ([`shown`]), so that no newline starts a line of its own.
pub(crate) fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for (k, c) in s.chars().enumerate() {
        match c {
            '<' => o.push_str("&lt;"),
            '&' => o.push_str("&amp;"),
            '|' | '*' | '_' | '`' | '~' | '[' | ']' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '#' | '>' if k == 0 => {
                o.push('\\');
                o.push(c);
            }
            c => o.push(c),
        }
    }
    shown(&o).into_owned()
}

fn push_line(o: &mut String, cells: &[&str], widths: &[usize], right: &[bool]) {
    let mut l = String::new();
    for (k, c) in cells.iter().enumerate() {
        if k > 0 {
            l.push_str("  ");
        }
        let w = widths[k];
        // Writing into a String cannot fail.
        if right[k] {
            let _ = write!(l, "{c:>w$}");
        } else {
            let _ = write!(l, "{c:<w$}");
        }
    }
    o.push_str(l.trim_end());
    o.push('\n');
}

impl Sheet {
    /// True when people read it: some column is printed. A table may be
    /// printed in one layout and written for scripts in another (the load
    /// table: a cycle × nodes grid for people, a row per cell for
    /// scripts), as two sheets: one whose columns are all printed without
    /// machine names, one whose columns are all hidden.
    pub fn printed(&self) -> bool {
        self.cols.iter().any(|c| c.head.is_some())
    }

    /// True when scripts read it (CSV, JSON): some column has a machine
    /// name.
    pub fn for_scripts(&self) -> bool {
        self.cols.iter().any(|c| !c.names.is_empty())
    }

    fn shown(&self) -> Vec<usize> {
        (0..self.cols.len())
            .filter(|&i| self.cols[i].head.is_some())
            .collect()
    }

    /// The machine column names, in order.
    pub fn machine_columns(&self) -> Vec<String> {
        self.cols.iter().flat_map(|c| c.names.clone()).collect()
    }

    /// One row's machine values, in [`Sheet::machine_columns`] order.
    pub fn machine_row(&self, row: &[Cell]) -> Vec<Value> {
        debug_assert_eq!(row.len(), self.cols.len(), "{}", self.title);
        row.iter()
            .zip(&self.cols)
            .flat_map(|(cell, col)| {
                debug_assert_eq!(cell.values.len(), col.names.len(), "{:?}", col.names);
                cell.values.clone()
            })
            .collect()
    }

    /// Title, aligned columns (width of the widest cell, two spaces between,
    /// figures right-aligned), footnotes. Widths count characters, so `µ`
    /// and `–` take one column as on a terminal.
    pub fn write_text(&self, o: &mut String) {
        o.push_str(&shown(&self.title));
        o.push('\n');
        let cols = self.shown();
        let heads: Vec<String> = cols
            .iter()
            .map(|&i| shown(self.cols[i].head.as_deref().unwrap_or("")).into_owned())
            .collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                cols.iter()
                    .map(|&i| shown(&row[i].text).into_owned())
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (k, cell) in row.iter().enumerate() {
                widths[k] = widths[k].max(cell.chars().count());
            }
        }
        let right: Vec<bool> = cols.iter().map(|&i| self.cols[i].right).collect();
        let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
        push_line(o, &heads, &widths, &right);
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            push_line(o, &cells, &widths, &right);
        }
        for n in &self.notes {
            o.push_str(&shown(n));
            o.push('\n');
        }
    }

    /// `### title`, a pipe table, footnotes as paragraphs.
    pub fn write_md(&self, o: &mut String) {
        let _ = writeln!(o, "### {}\n", md_escape(&self.title));
        let shown = self.shown();
        o.push('|');
        for &i in &shown {
            let _ = write!(
                o,
                " {} |",
                md_escape(self.cols[i].head.as_deref().unwrap_or(""))
            );
        }
        o.push_str("\n|");
        for &i in &shown {
            o.push_str(if self.cols[i].right { "---:|" } else { "---|" });
        }
        o.push('\n');
        for row in &self.rows {
            o.push('|');
            for &i in &shown {
                let _ = write!(o, " {} |", md_escape(&row[i].text));
            }
            o.push('\n');
        }
        for n in &self.notes {
            let _ = write!(o, "\n{}\n", md_escape(n));
        }
    }

    /// `<table>` with the title as its caption, the printed columns
    /// (figures right-aligned, class `num`) and the footnotes after it as
    /// paragraphs: the cells text and Markdown print, escaped for HTML
    /// after their control characters ([`shown`]).
    pub fn write_html(&self, o: &mut String) {
        let esc = |s: &str| crate::render::safe::escape(&shown(s));
        let shown = self.shown();
        let class = |i: usize| {
            if self.cols[i].right {
                " class=\"num\""
            } else {
                ""
            }
        };
        let _ = write!(
            o,
            "<table class=\"sheet\" data-table=\"{}\">\n<caption>{}</caption>\n<thead><tr>",
            self.name,
            esc(&self.title)
        );
        for &i in &shown {
            let _ = write!(
                o,
                "<th{}>{}</th>",
                class(i),
                esc(self.cols[i].head.as_deref().unwrap_or(""))
            );
        }
        o.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            o.push_str("<tr>");
            for &i in &shown {
                let _ = write!(o, "<td{}>{}</td>", class(i), esc(&row[i].text));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody>\n</table>\n");
        for n in &self.notes {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(n));
        }
    }

    /// The table as JSON writes it.
    pub fn json(&self) -> JsonTable {
        JsonTable {
            name: self.name,
            title: self.title.clone(),
            columns: self.machine_columns(),
            rows: self.rows.iter().map(|r| self.machine_row(r)).collect(),
            notes: self.notes.clone(),
        }
    }
}

/// One CSV field: numbers as JSON prints them, strings with their control
/// characters escaped ([`shown`]: so never a line break) and quoted only
/// when they hold a comma or a quote, `null` as an empty field.
pub(crate) fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => {
            let s = shown(s);
            if s.contains([',', '"']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.into_owned()
            }
        }
        other => other.to_string(),
    }
}

/// One CSV document: the header `table,<columns>` and every sheet's rows,
/// each value under its column's name (empty where a sheet has no such
/// column). Lines end with `\n`.
pub(crate) fn csv(columns: &[String], sheets: &[&Sheet]) -> String {
    let mut o = String::from("table");
    for c in columns {
        o.push(',');
        o.push_str(c);
    }
    o.push('\n');
    for s in sheets {
        let names = s.machine_columns();
        debug_assert!(
            names.iter().all(|n| columns.contains(n)),
            "{names:?} not in the CSV header"
        );
        for row in &s.rows {
            let values = s.machine_row(row);
            o.push_str(s.name);
            for c in columns {
                o.push(',');
                if let Some(k) = names.iter().position(|n| n == c) {
                    o.push_str(&csv_field(&values[k]));
                }
            }
            o.push('\n');
        }
    }
    o
}
