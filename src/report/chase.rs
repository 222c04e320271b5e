//! The chase's per-sample table: the columns users of Intel's caterpillar
//! know — each sample's min, max and jitter (max − min of its timed
//! chases), and the session's running min, max and jitter — in TSC cycles,
//! then the same six in microseconds at the measured TSC frequency. It is
//! printed after `jitterlab run chase` and rebuilt by `jitterlab report`
//! from the stored result's `detail` (the probe's `ChaseOutcome`).

use std::fmt::Write as _;

use jitterlab_core::chase::{cycles_to_ns, SampleRow};
use jitterlab_core::result::{ProbeKind, RunResult};

/// The rows and TSC frequency of a chase result, if it is one.
pub fn rows_of(r: &RunResult) -> Option<(Vec<SampleRow>, u64)> {
    if r.probe != ProbeKind::Chase {
        return None;
    }
    let d = r.detail.as_ref()?;
    let rows: Vec<SampleRow> = serde_json::from_value(d.get("rows")?.clone()).ok()?;
    let hz = d.get("tsc_hz")?.as_u64()?;
    Some((rows, hz))
}

/// Microseconds with three decimals (whole nanoseconds) for `cycles`.
fn micros(cycles: u64, tsc_hz: u64) -> String {
    let ns = cycles_to_ns(cycles, tsc_hz);
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// The per-sample table with caterpillar's columns — the sample's min, max
/// and jitter, the session's so far — in TSC cycles, then the same six
/// values in microseconds at `tsc_hz`. Columns are right-aligned and
/// separated by two spaces; a first line names the unit of each group.
pub fn sample_table(rows: &[SampleRow], tsc_hz: u64) -> String {
    const HEAD: [&str; 13] = [
        "sample",
        "min",
        "max",
        "jitter",
        "session min",
        "session max",
        "session jitter",
        "min",
        "max",
        "jitter",
        "session min",
        "session max",
        "session jitter",
    ];
    let cells: Vec<[String; 13]> = rows
        .iter()
        .map(|r| {
            let v = [
                r.min,
                r.max,
                r.jitter,
                r.session_min,
                r.session_max,
                r.session_jitter,
            ];
            std::array::from_fn(|c| match c {
                0 => r.number.to_string(),
                1..=6 => v[c - 1].to_string(),
                _ => micros(v[c - 7], tsc_hz),
            })
        })
        .collect();
    let width: [usize; 13] = std::array::from_fn(|c| {
        cells
            .iter()
            .map(|row| row[c].len())
            .chain([HEAD[c].len()])
            .max()
            .unwrap_or(0)
    });
    let group =
        |from: usize, to: usize| width[from..to].iter().sum::<usize>() + 2 * (to - from - 1);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:w0$}  {:<wc$}  {}",
        "",
        "cycles",
        format_args!("us (TSC {tsc_hz} Hz)"),
        w0 = width[0],
        wc = group(1, 7),
    );
    let line = |out: &mut String, row: &[&str]| {
        let cols: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:>w$}", w = width[c]))
            .collect();
        let _ = writeln!(out, "{}", cols.join("  "));
    };
    line(&mut out, &HEAD);
    for row in &cells {
        let refs: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&mut out, &refs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_table_has_caterpillar_columns_in_cycles_and_microseconds() {
        let rows = [
            SampleRow {
                number: 1,
                chases: 100,
                min: 20_312,
                max: 24_412,
                jitter: 4_100,
                session_min: 20_312,
                session_max: 24_412,
                session_jitter: 4_100,
            },
            SampleRow {
                number: 2,
                chases: 100,
                min: 20_100,
                max: 29_600,
                jitter: 9_500,
                session_min: 20_100,
                session_max: 29_600,
                session_jitter: 9_500,
            },
        ];
        let want = [
            "        cycles                                                          us (TSC 2600000000 Hz)",
            "sample    min    max  jitter  session min  session max  session jitter    min     max  jitter  session min  session max  session jitter",
            "     1  20312  24412    4100        20312        24412            4100  7.812   9.389   1.577        7.812        9.389           1.577",
            "     2  20100  29600    9500        20100        29600            9500  7.731  11.385   3.654        7.731       11.385           3.654",
            "",
        ];
        assert_eq!(sample_table(&rows, 2_600_000_000), want.join("\n"));
        // Without rows the header keeps the width of the column names.
        let want = [
            "        cycles                                                      us (TSC 1000000000 Hz)",
            "sample  min  max  jitter  session min  session max  session jitter  min  max  jitter  session min  session max  session jitter",
            "",
        ];
        assert_eq!(sample_table(&[], 1_000_000_000), want.join("\n"));
    }
}
