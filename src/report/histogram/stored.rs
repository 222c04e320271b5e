//! cyclictest's `-h` text from the database: what `run --histogram` wrote,
//! written again at any time from a stored cell (`jitterlab report RUN
//! --histogram FILE`).
//!
//! The bins, overflow counts and overflow cycle numbers are the cell's
//! stored 1 µs histograms (`histograms_1us`, one per probe thread), the
//! min, avg and max lines its stored result's statistics of the same
//! metric — exactly what the run handed [`write_cyclictest_histogram`]
//! when it wrote the file, so the two texts are the same byte for byte
//! (`tests/stored_reports.rs` runs a wake-up probe and compares them).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};
use jitterlab_core::cell::StoredCell;
use jitterlab_core::recorder::FineHistogram;

use super::{write_cyclictest_histogram, HistThread};
use crate::error::BadInput;
use crate::out_files;
use crate::output::shown;
use crate::store::Store;

/// Writes the `-h` text of `cell` from its stored 1 µs histograms `fine`
/// (one list of [`Store::load_histograms_1us`]): one column per probe
/// thread, in thread order. An error says why a cell has none.
pub fn write_stored_histogram(
    w: &mut impl Write,
    cell: &StoredCell,
    fine: &[FineHistogram],
) -> Result<()> {
    let key = cell.key.name();
    let name = shown(&key);
    let Some(result) = &cell.result else {
        bail!("cell {name} has no stored result: it did not finish");
    };
    let per_thread: Vec<&FineHistogram> = fine.iter().filter(|h| h.thread.is_some()).collect();
    if per_thread.is_empty() {
        bail!(
            "cell {name} has no 1 µs histogram: it was stored before jitterlab kept them (schema 5), \
             its probe measures no latency (chase), or an external tool measured it (timerlat)"
        );
    }
    let mut threads = Vec::with_capacity(per_thread.len());
    for h in per_thread {
        let summary = result
            .threads
            .iter()
            .find(|t| Some(t.thread) == h.thread)
            .and_then(|t| t.metrics.get(&h.metric));
        let Some(latency) = summary else {
            bail!(
                "cell {name} has a 1 µs histogram of {} for thread {}, and no statistics of it",
                shown(&h.metric),
                h.thread.unwrap_or_default()
            );
        };
        threads.push(HistThread {
            hist: &h.hist,
            latency,
        });
    }
    write_cyclictest_histogram(w, &threads)?;
    Ok(())
}

/// `jitterlab report [RUN] --histogram FILE`: the `-h` text of the one
/// cell of run `runs` (empty: the latest) into `path`. Bad input (exit 2,
/// nothing written) when more than one run is named, the run has several
/// cells, or its cell has no 1 µs histogram.
pub fn write_stored_file(store: &Store, runs: &[i64], path: &Path) -> Result<ExitCode> {
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    let run = match runs {
        [] => match store.latest_run()? {
            Some(id) => id,
            None => return Err(bad("no runs stored; run a probe first".into())),
        },
        [id] => *id,
        _ => {
            return Err(bad(
                "--histogram writes one run's histogram; name one run".into()
            ))
        }
    };
    let stored = store.load_run(run).map_err(|e| bad(format!("{e:#}")))?;
    if stored.cells.len() != 1 {
        return Err(bad(format!(
            "--histogram writes the histogram of a run of one cell (jitterlab run …); run {run} has {} cells",
            stored.cells.len()
        )));
    }
    let fine = store.load_histograms_1us(run)?;
    let mut text = Vec::new();
    write_stored_histogram(&mut text, &stored.cells[0], &fine[0]).map_err(|e| {
        bad(format!(
            "run {run}: {e:#}; there is nothing to write to --histogram"
        ))
    })?;
    out_files::check_output("--histogram", path)?;
    let mut f = out_files::create("--histogram", path)?;
    f.write_all(&text)?;
    f.finish()?;
    Ok(ExitCode::SUCCESS)
}
