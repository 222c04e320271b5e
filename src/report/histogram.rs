//! cyclictest's histogram text (`-h`/`-H`, `--histfile`), byte for byte.
//!
//! Years of plotting scripts (OSADL's latency plots, rteval, countless
//! gnuplot one-liners) read the histogram cyclictest prints after a run. We
//! write the same text from our 1 µs [`LatencyHistogram`], so those scripts
//! read a jitterlab file unchanged and the two tools can be plotted side by
//! side.
//!
//! # The format
//!
//! Reproduced from rt-tests' `print_hist()` (src/cyclictest/cyclictest.c) as
//! cyclictest V 2.40 (Debian's rt-tests 2.4) prints it, and checked against
//! its real output in the tests below:
//!
//! ```text
//! # Histogram
//! 000000 000000<TAB>000000                 one line per bucket, ALL buckets
//! 000001 000007<TAB>000012                 (zero lines too): "%06d " index,
//! …                                        then "%06lu" per thread, tab-separated
//! # Total: 000000490 000000659             " %09llu" per thread: bucket sum, no overflows
//! # Min Latencies: 00003 00003             " %05lu" per thread, µs
//! # Avg Latencies: 00015 00011             " %05lu" per thread, µs
//! # Max Latencies: 00264 00559             " %05lu" per thread, µs
//! # Histogram Overflows: 00510 00341       " %05lu" per thread
//! # Histogram Overflow at cycle number:
//! # Thread 0: 00000 00012 … # 00498 others
//! # Thread 1: 00000 00003 … # 00329 others
//! <empty line>
//! ```
//!
//! With `-H` (`--histofall`) and more than one thread, cyclictest adds a
//! summary column: the bucket's sum over threads on every bucket line, and one
//! more field on `# Total:` (the sum), `# Max Latencies:` (the largest) and
//! `# Histogram Overflows:` (the sum) — not on min and avg. With one thread
//! `-H` prints exactly what `-h` prints. [`write_cyclictest_histogram`] is `-h`,
//! [`write_cyclictest_histofall`] is `-H`. The `%0Nd` widths are minimum
//! widths: a larger number simply takes more digits, as in C.
//!
//! Newer rt-tests releases (which moved the histogram to `src/lib/histogram.c`)
//! skip all-zero bucket lines and drop `# Total:`; scripts written for either
//! split lines on whitespace and skip `#` lines, and the 2.4 form is the one
//! the distributions ship today, so it is the one we write.
//!
//! # Rounding
//!
//! cyclictest measures in whole microseconds, truncating each sample
//! (`calcdiff()` divides nanoseconds by 1000). We keep nanoseconds and
//! convert at the end:
//!
//! * bucket `i` counts latencies in `[i µs, i+1 µs)` — the same truncation, so
//!   the bucket lines are what cyclictest would have counted;
//! * min and max are `⌊ns / 1000⌋`: since truncation is monotonic this is
//!   exactly cyclictest's figure;
//! * avg is `⌊mean_ns / 1000⌋`. cyclictest averages the already-truncated
//!   samples, `⌊Σ⌊x/1000⌋ / n⌋`, which can be 1 µs lower than ours, never
//!   higher (each sample loses less than 1 µs to truncation);
//! * a negative latency (a clock bug; the kernel never wakes a sleeper early)
//!   is printed as 0, and a thread without samples prints min 0 where
//!   cyclictest prints its internal start value 1000000.
//!
//! # Overflow cycle numbers
//!
//! Cycle numbers are 0-based measured cycles, as cyclictest's. cyclictest keeps
//! as many overflow cycle numbers as the histogram has buckets and counts the
//! rest as `# NNNNN others`; we print at most that many of the numbers the
//! probe kept ([`LatencyHistogram::KEEP_OVERFLOWS`]) and count every other
//! overflow into `others`, so the line reads as cyclictest's would.

use std::fmt::Write as _;
use std::io::{self, Write};

use jitterlab_core::recorder::LatencyHistogram;
use jitterlab_core::stats::MetricSummary;

pub mod stored;

/// One probe thread's column of the histogram.
#[derive(Debug, Clone, Copy)]
pub struct HistThread<'a> {
    /// The thread's 1 µs latency histogram.
    pub hist: &'a LatencyHistogram,
    /// The thread's exact latency statistics (min, avg and max lines).
    pub latency: &'a MetricSummary,
}

/// Writes the histogram as `cyclictest -h` does: one column per thread.
///
/// Threads are expected to share one bucket count; if they do not, the
/// longest decides the number of lines and shorter ones print 0 beyond their
/// end.
pub fn write_cyclictest_histogram(w: &mut impl Write, threads: &[HistThread]) -> io::Result<()> {
    write_hist(w, threads, false)
}

/// Writes the histogram as `cyclictest -H` (`--histofall`) does: with more
/// than one thread, a summary column follows the per-thread columns.
// Not offered on the command line yet; remove the allow when it is.
#[allow(dead_code)]
pub fn write_cyclictest_histofall(w: &mut impl Write, threads: &[HistThread]) -> io::Result<()> {
    write_hist(w, threads, true)
}

/// Whole microseconds, truncated as cyclictest's `calcdiff()` truncates;
/// negative and missing values print as 0.
fn whole_us(ns: Option<i64>) -> u64 {
    ns.map_or(0, |v| v.max(0).unsigned_abs() / 1_000)
}

fn write_hist(w: &mut impl Write, threads: &[HistThread], histofall: bool) -> io::Result<()> {
    // cyclictest: `if (histofall && nthreads > 1)`.
    let sum_column = histofall && threads.len() > 1;
    let buckets = threads
        .iter()
        .map(|t| t.hist.buckets.len())
        .max()
        .unwrap_or(0);

    // Formatting into a String cannot fail; the `let _ =` below say so.
    let mut line = String::with_capacity(16 + 8 * (threads.len() + 1));
    let mut totals = vec![0u64; threads.len()];

    w.write_all(b"# Histogram\n")?;
    for i in 0..buckets {
        line.clear();
        let _ = write!(line, "{i:06} ");
        let mut all = 0u64;
        for (j, t) in threads.iter().enumerate() {
            let c = t.hist.buckets.get(i).copied().unwrap_or(0);
            if j > 0 {
                line.push('\t');
            }
            let _ = write!(line, "{c:06}");
            totals[j] += c;
            all += c;
        }
        if sum_column {
            let _ = write!(line, "\t{all:06}");
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }

    line.clear();
    line.push_str("# Total:");
    for t in &totals {
        let _ = write!(line, " {t:09}");
    }
    if sum_column {
        let _ = write!(line, " {:09}", totals.iter().sum::<u64>());
    }
    line.push_str("\n# Min Latencies:");
    for t in threads {
        let _ = write!(line, " {:05}", whole_us(t.latency.min));
    }
    line.push_str("\n# Avg Latencies:");
    for t in threads {
        let _ = write!(line, " {:05}", whole_us(t.latency.mean));
    }
    line.push_str("\n# Max Latencies:");
    let mut maxmax = 0;
    for t in threads {
        let m = whole_us(t.latency.max);
        maxmax = maxmax.max(m);
        let _ = write!(line, " {m:05}");
    }
    if sum_column {
        let _ = write!(line, " {maxmax:05}");
    }
    line.push_str("\n# Histogram Overflows:");
    for t in threads {
        let _ = write!(line, " {:05}", t.hist.overflows);
    }
    if sum_column {
        let all: u64 = threads.iter().map(|t| t.hist.overflows).sum();
        let _ = write!(line, " {all:05}");
    }
    line.push_str("\n# Histogram Overflow at cycle number:\n");
    w.write_all(line.as_bytes())?;

    for (i, t) in threads.iter().enumerate() {
        line.clear();
        let _ = write!(line, "# Thread {i}:");
        // cyclictest's outlier buffer holds as many entries as there are buckets.
        let shown = t.hist.overflow_cycles.len().min(t.hist.buckets.len());
        for c in &t.hist.overflow_cycles[..shown] {
            let _ = write!(line, " {c:05}");
        }
        if (shown as u64) < t.hist.overflows {
            let _ = write!(line, " # {:05} others", t.hist.overflows - shown as u64);
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(min: i64, mean: i64, max: i64) -> MetricSummary {
        MetricSummary {
            count: 1,
            min: Some(min),
            max: Some(max),
            mean: Some(mean),
            stddev: Some(0),
            p50: Some(mean),
            p90: Some(max),
            p99: Some(max),
            p99_9: Some(max),
            p99_99: Some(max),
            threshold: Some(100_000),
            over_threshold: Some(0),
            over_threshold_pct: Some(0.0),
        }
    }

    fn hist(buckets: &[u64], overflows: u64, cycles: &[u64]) -> LatencyHistogram {
        LatencyHistogram {
            buckets: buckets.to_vec(),
            overflows,
            overflow_cycles: cycles.to_vec(),
        }
    }

    fn render(threads: &[HistThread], histofall: bool) -> String {
        let mut out = Vec::new();
        if histofall {
            write_cyclictest_histofall(&mut out, threads).unwrap();
        } else {
            write_cyclictest_histogram(&mut out, threads).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    /// Two threads, five 1 µs buckets; thread 1 had one 1.5 ms wake-up.
    fn two_threads() -> (Vec<LatencyHistogram>, Vec<MetricSummary>) {
        (
            vec![
                hist(&[0, 3, 5, 1, 0], 0, &[]),
                hist(&[0, 0, 4, 2, 0], 1, &[6]),
            ],
            vec![
                // 1.2 µs … 3.999 µs: truncated to 1 and 3; mean 2.150 µs → 2.
                summary(1_200, 2_150, 3_999),
                // 4 × 2.5 µs, 2 × 3.2 µs, 1 × 1500 µs: mean 216.629 µs → 216.
                summary(2_500, 216_629, 1_500_000),
            ],
        )
    }

    fn pair<'a>(h: &'a [LatencyHistogram], s: &'a [MetricSummary]) -> [HistThread<'a>; 2] {
        [
            HistThread {
                hist: &h[0],
                latency: &s[0],
            },
            HistThread {
                hist: &h[1],
                latency: &s[1],
            },
        ]
    }

    #[test]
    fn two_threads_with_an_overflow_print_as_cyclictest_h() {
        let (h, s) = two_threads();
        let t = pair(&h, &s);
        let want = "\
# Histogram
000000 000000\t000000
000001 000003\t000000
000002 000005\t000004
000003 000001\t000002
000004 000000\t000000
# Total: 000000009 000000006
# Min Latencies: 00001 00002
# Avg Latencies: 00002 00216
# Max Latencies: 00003 01500
# Histogram Overflows: 00000 00001
# Histogram Overflow at cycle number:
# Thread 0:
# Thread 1: 00006

";
        assert_eq!(render(&t, false), want);
    }

    #[test]
    fn histofall_adds_the_summary_column_only_with_several_threads() {
        let (h, s) = two_threads();
        let t = pair(&h, &s);
        let want = "\
# Histogram
000000 000000\t000000\t000000
000001 000003\t000000\t000003
000002 000005\t000004\t000009
000003 000001\t000002\t000003
000004 000000\t000000\t000000
# Total: 000000009 000000006 000000015
# Min Latencies: 00001 00002
# Avg Latencies: 00002 00216
# Max Latencies: 00003 01500 01500
# Histogram Overflows: 00000 00001 00001
# Histogram Overflow at cycle number:
# Thread 0:
# Thread 1: 00006

";
        assert_eq!(render(&t, true), want);
        // One thread: -H prints what -h prints.
        assert_eq!(render(&t[1..], true), render(&t[1..], false));
    }

    #[test]
    fn overflow_list_is_capped_at_the_bucket_count_and_the_rest_counted() {
        let h = hist(&[0, 2], 4, &[5, 9, 11]);
        let s = summary(1_000, 800_000, 2_000_000);
        let got = render(
            &[HistThread {
                hist: &h,
                latency: &s,
            }],
            false,
        );
        assert!(
            got.ends_with("# Thread 0: 00005 00009 # 00002 others\n\n"),
            "{got}"
        );
        // Wider numbers than the C widths take more digits, as printf does.
        let big = hist(&[1_234_567], 0, &[]);
        let got = render(
            &[HistThread {
                hist: &big,
                latency: &s,
            }],
            false,
        );
        assert!(
            got.contains("\n000000 1234567\n# Total: 001234567\n"),
            "{got}"
        );
    }

    /// Rebuilds our inputs from a real cyclictest histogram file and checks
    /// that we print it back byte for byte. Only the figures the file shows can
    /// be recovered, which is all the format needs: bucket counts, overflow
    /// counts and cycles, and min/avg/max in whole µs.
    fn round_trip(real: &str, histofall: bool) {
        let field = |prefix: &str| -> Vec<u64> {
            let line = real.lines().find(|l| l.starts_with(prefix)).unwrap();
            line[prefix.len()..]
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect()
        };
        let (min, avg, max, over) = (
            field("# Min Latencies:"),
            field("# Avg Latencies:"),
            field("# Max Latencies:"),
            field("# Histogram Overflows:"),
        );
        let n = min.len();
        let mut cols: Vec<Vec<u64>> = vec![Vec::new(); n];
        for line in real
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let v: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .map(|v| v.parse().unwrap())
                .collect();
            for (j, c) in v.iter().take(n).enumerate() {
                cols[j].push(*c);
            }
        }
        let hists: Vec<LatencyHistogram> = (0..n)
            .map(|j| {
                let line = real
                    .lines()
                    .find(|l| l.starts_with(&format!("# Thread {j}:")))
                    .unwrap();
                let listed = line.split(": ").nth(1).unwrap_or("");
                let listed = listed.split(" # ").next().unwrap();
                let cycles: Vec<u64> = listed
                    .split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect();
                hist(&cols[j], over[j], &cycles)
            })
            .collect();
        let sums: Vec<MetricSummary> = (0..n)
            .map(|j| {
                summary(
                    min[j] as i64 * 1_000,
                    avg[j] as i64 * 1_000 + 999,
                    max[j] as i64 * 1_000 + 999,
                )
            })
            .collect();
        let t: Vec<HistThread> = (0..n)
            .map(|j| HistThread {
                hist: &hists[j],
                latency: &sums[j],
            })
            .collect();
        assert_eq!(render(&t, histofall), real);
    }

    #[test]
    fn reproduces_real_cyclictest_2_40_output() {
        // `cyclictest -m -p80 -i1000 -t2 -a0,1 -D1 -q -h 12 --histfile=…`,
        // cyclictest V 2.40 (Debian rt-tests 2.4), a busy 2-CPU VM.
        let real_h = "\
# Histogram
000000 000000\t000000
000001 000000\t000000
000002 000000\t000000
000003 000040\t000061
000004 000075\t000163
000005 000060\t000114
000006 000066\t000122
000007 000059\t000068
000008 000050\t000041
000009 000055\t000031
000010 000050\t000033
000011 000035\t000026
# Total: 000000490 000000659
# Min Latencies: 00003 00003
# Avg Latencies: 00015 00011
# Max Latencies: 00264 00559
# Histogram Overflows: 00510 00341
# Histogram Overflow at cycle number:
# Thread 0: 00000 00012 00013 00016 00022 00024 00026 00028 00029 00030 00033 00034 # 00498 others
# Thread 1: 00000 00003 00009 00011 00012 00013 00014 00016 00017 00019 00020 00021 # 00329 others

";
        round_trip(real_h, false);
        // The same with -H 12.
        let real_hh = "\
# Histogram
000000 000000\t000000\t000000
000001 000000\t000000\t000000
000002 000000\t000000\t000000
000003 000014\t000061\t000075
000004 000097\t000120\t000217
000005 000083\t000137\t000220
000006 000069\t000122\t000191
000007 000064\t000063\t000127
000008 000072\t000039\t000111
000009 000048\t000025\t000073
000010 000054\t000024\t000078
000011 000042\t000015\t000057
# Total: 000000543 000000606 000001149
# Min Latencies: 00003 00003
# Avg Latencies: 00021 00018
# Max Latencies: 01702 01318 01702
# Histogram Overflows: 00455 00392 00847
# Histogram Overflow at cycle number:
# Thread 0: 00000 00001 00002 00003 00010 00011 00014 00016 00017 00018 00019 00020 # 00443 others
# Thread 1: 00000 00013 00015 00022 00061 00082 00092 00093 00094 00119 00120 00121 # 00380 others

";
        round_trip(real_hh, true);
    }
}
