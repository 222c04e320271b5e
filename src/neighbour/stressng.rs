//! stress-ng's `--metrics-brief` table: the bogo-ops each stressor did,
//! jitterlab's proof that a stress-ng neighbour really made noise.
//!
//! stress-ng 0.15 writes the table to **stderr** when it ends (also when it
//! ends on `SIGINT`), every line prefixed with `stress-ng: metrc: [PID] `
//! (versions before 0.14 said `info:` instead of `metrc:`):
//!
//! ```text
//! stress-ng: metrc: [18725] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
//! stress-ng: metrc: [18725]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
//! stress-ng: metrc: [18725] cpu                1497      3.13      0.87      0.02       477.83        1696.00
//! stress-ng: metrc: [18725] miscellaneous metrics:
//! stress-ng: metrc: [18725] cache          167988104.23 cache ops per second (geometic mean of 4 instances)
//! ```
//!
//! A row counts only between the header (`stressor … bogo ops …`, then the
//! `(secs)` line) and the first line of another shape (`miscellaneous
//! metrics:`, whose lines also start with a stressor name but carry other
//! figures). Lines of other kinds (`info:` lines of workers) in between are
//! skipped.

use std::collections::BTreeMap;

/// Parses stress-ng output into stressor → bogo ops. A stressor listed twice
/// (two tables in one text) is summed. Text without a table gives an empty
/// map.
pub fn parse_metrics(text: &str) -> BTreeMap<String, u64> {
    #[derive(PartialEq)]
    enum State {
        Before,
        Header,
        Rows,
    }
    let mut ops = BTreeMap::new();
    let mut state = State::Before;
    for line in text.lines() {
        let Some(content) = metrics_content(line) else {
            continue;
        };
        let words: Vec<&str> = content.split_whitespace().collect();
        if words.first() == Some(&"stressor") && content.contains("bogo ops") {
            state = State::Header;
            continue;
        }
        match state {
            State::Before => {}
            State::Header => {
                state = if words.first() == Some(&"(secs)") {
                    State::Rows
                } else {
                    State::Before
                };
            }
            State::Rows => match row(&words) {
                Some((name, n)) => *ops.entry(name.to_string()).or_insert(0) += n,
                None => state = State::Before,
            },
        }
    }
    ops
}

/// The text after `stress-ng: metrc: [PID] ` (or `info:`), or `None` for
/// other lines.
fn metrics_content(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("stress-ng:")?.trim_start();
    let rest = rest
        .strip_prefix("metrc:")
        .or_else(|| rest.strip_prefix("info:"))?
        .trim_start();
    let rest = rest.strip_prefix('[')?;
    let (_pid, after) = rest.split_once(']')?;
    Some(after.strip_prefix(' ').unwrap_or(after))
}

/// A table row: name, integer bogo ops, then five decimal figures.
fn row<'a>(words: &[&'a str]) -> Option<(&'a str, u64)> {
    if words.len() != 7 {
        return None;
    }
    let ops = words[1].parse().ok()?;
    words[2..]
        .iter()
        .all(|w| w.parse::<f64>().is_ok())
        .then_some((words[0], ops))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stress-ng --cpu 8 --cpu-load 100 --cache 4 --cache-flush --memthrash 4
    /// --stream 10 --vm 4 --vm-bytes 128M --fork 4 --metrics-brief`, stopped
    /// with SIGINT after 3 s (stress-ng 0.15.06, stderr).
    const CODESYS: &str = "\
stress-ng: info:  [18725] defaulting to a 86400 second (1 day, 0.00 secs) run per stressor
stress-ng: info:  [18725] dispatching hogs: 8 cpu, 4 cache, 4 memthrash, 10 stream, 4 vm, 4 fork
stress-ng: info:  [18735] cache: cache flags used: clflush
stress-ng: info:  [18743] stream: stressor loosely based on a variant of the STREAM benchmark code
stress-ng: info:  [18743] stream: do NOT submit any of these results to the STREAM benchmark results
stress-ng: info:  [18743] stream: Using CPU cache size of 491520K
stress-ng: info:  [18739] memthrash: starting 1 thread on each of the 4 stressors on a 2 CPU system
stress-ng: info:  [18739] memthrash: this is not an optimal choice of stressors, try 2 instead
stress-ng: info:  [18743] stream: run duration too short to determine memory rate
stress-ng: metrc: [18725] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [18725]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [18725] cpu                1497      3.13      0.87      0.02       477.83        1696.00
stress-ng: metrc: [18725] cache              1547      3.00      0.26      0.16       515.28        3735.61
stress-ng: metrc: [18725] memthrash             0      5.36      0.00      0.98         0.00           0.00
stress-ng: metrc: [18725] stream               10     11.91      3.97      5.61         0.84           1.04
stress-ng: metrc: [18725] vm                  512      3.17      0.15      0.28       161.67        1200.02
stress-ng: metrc: [18725] fork                250      3.08      0.11      0.10        81.17        1183.87
stress-ng: metrc: [18725] miscellaneous metrics:
stress-ng: metrc: [18725] cache          167988104.23 cache ops per second (geometic mean of 4 instances)
stress-ng: metrc: [18725] cache                  0.00 shared cache reads per second (geometic mean of 4 instances)
stress-ng: metrc: [18725] cache                  0.00 shared cache writes per second (geometic mean of 4 instances)
stress-ng: info:  [18725] successful run completed in 12.37s
";

    /// `stress-ng --cpu 1 --cpu-load 80 --memrate 1 --vm 1 --metrics-brief`:
    /// a worker's info line comes first, and the miscellaneous metrics of
    /// memrate follow the table.
    const REDHAT: &str = "\
stress-ng: info:  [19355] memrate: cache flushing can be enabled with --memrate-flush option
stress-ng: metrc: [19353] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [19353]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [19353] cpu                1167      3.01      0.69      0.00       387.75        1683.64
stress-ng: metrc: [19353] memrate               0      3.05      0.70      0.08         0.00           0.00
stress-ng: metrc: [19353] vm                 1024      3.52      0.34      0.45       290.96        1300.82
stress-ng: metrc: [19353] miscellaneous metrics:
stress-ng: metrc: [19353] memrate             2438.26 write64stoq MB per sec (geometic mean of 1 instances)
stress-ng: metrc: [19353] memrate             1932.45 read128pf MB per sec (geometic mean of 1 instances)
stress-ng: info:  [19353] successful run completed in 3.52s
";

    fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn codesys_table_is_read_and_miscellaneous_metrics_are_not() {
        assert_eq!(
            parse_metrics(CODESYS),
            map(&[
                ("cache", 1547),
                ("cpu", 1497),
                ("fork", 250),
                ("memthrash", 0),
                ("stream", 10),
                ("vm", 512),
            ])
        );
    }

    #[test]
    fn worker_lines_before_the_table_are_skipped() {
        assert_eq!(
            parse_metrics(REDHAT),
            map(&[("cpu", 1167), ("memrate", 0), ("vm", 1024)])
        );
    }

    #[test]
    fn old_info_prefix_is_read_too() {
        let text = "\
stress-ng: info:  [99] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: info:  [99]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: info:  [99] hdd               27120      3.64      0.58      0.32      7459.16       30176.72
stress-ng: info:  [99] successful run completed in 3.64s
";
        assert_eq!(parse_metrics(text), map(&[("hdd", 27120)]));
    }

    #[test]
    fn no_table_no_ops() {
        // Killed before it printed, or a header without its (secs) line.
        assert_eq!(parse_metrics(""), BTreeMap::new());
        let cut = "\
stress-ng: info:  [7] dispatching hogs: 1 cpu
stress-ng: metrc: [7] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [7] cpu                1497      3.13      0.87      0.02       477.83        1696.00
";
        assert_eq!(parse_metrics(cut), BTreeMap::new());
        // A row-shaped line outside a table.
        let stray = "stress-ng: metrc: [7] cpu  1497  3.13  0.87  0.02  477.83  1696.00\n";
        assert_eq!(parse_metrics(stray), BTreeMap::new());
    }
}
