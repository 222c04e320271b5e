//! `jitterlab run …`: from a checked one-cell spec to a stored, printed
//! result.
//!
//! The command line turns `jitterlab run X`'s flags into a one-cell spec
//! (one configuration, the `idle` scenario, the `host` deployment, one
//! probe) and [`RunOptions`]; a bench's cells come from the spec the user
//! wrote. Both are planned by [`plan::plan`], get their probes from the
//! registry ([`crate::probe::build`]) and are measured by the one
//! lifecycle ([`lifecycle::measure`]): the same typed values, the same
//! code. The order of a run is the contract with the user:
//!
//! 1. **Validate** everything that can be wrong with the input — units,
//!    ranges (the parser's bounds of `jitterlab_core::limits`, then the
//!    window rows a run makes and a working set or buffer against half of
//!    the machine's `MemTotal`), CPUs against the machine's online list, the
//!    policy/priority pair, every output path — and refuse with a one-line
//!    error naming the fix (exit 2) before any thread starts or anything is
//!    written. The command line does this while it builds the spec.
//! 2. **Set up** the process-wide real-time defaults (mlockall, the PM QoS
//!    request), start one probe thread per CPU, let each apply its own
//!    defaults and calibrate, and collect what held. `--strict` aborts here.
//!    (rtla, for `run timerlat`, sets itself up.)
//! 3. **Measure**: release every thread at one common first release `t0`.
//!    The controlling thread — SCHED_OTHER, kept off the probe CPUs where
//!    the machine has others — is the low-priority writer of design rule 2:
//!    it drains window rows from each thread's wait-free queue every 100 ms
//!    into the CSV file, redraws the live view, and turns every terminating
//!    signal (`crate::termination`) into the stop flag.
//! 4. **Store and report**: the run row is in the results database before the
//!    first release, window rows are committed as they are drained, and the
//!    versioned `RunResult` with its histograms is stored at the end; the
//!    exporters (`report::*`) never measure. Exit 1 when a verdict of the
//!    result did not pass (`jitterlab_core::verdict`: a `--max-*` limit
//!    exceeded or not measured, the budget broken, the cycle time not
//!    held, the main metric without a sample), 0 otherwise; `--junit`
//!    writes the verdicts for CI servers.
//!
//! A run refuses to start while a killed jitterlab's journal is unreplayed.
//! One that changes nothing on the machine takes no machine lock and so
//! measures beside a live `jitterlab apply`; a run that changes something
//! (the settings of its configuration — the chase's IRQ role —, the
//! response probe's namespaces, timerlat's work directory) takes the lock
//! and the journal at its first change (`Journal::on_demand`).
//!
//! The design rules cited here are in `docs/design.md`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use jitterlab_core::result::RunResult;
use jitterlab_core::spec::{CellPlan, Configuration, Spec};
use jitterlab_sys as sys;

use crate::error::bad;
use crate::out_files;
use crate::output::{errln, out};
use crate::probe::{self, Cell, Probes, Recorder};
use crate::report;
use crate::store::{Db, RunIds, RunKind, RunStart, Store};
use crate::system::host;
use crate::system::journal::Journal;
use crate::system::rt;
use crate::system::settings::{apply_all, config_settings, restore_all, Settings};

pub mod apply;
pub mod assemble;
pub mod bench;
pub mod lifecycle;
pub mod monitor;
pub use crate::probe::plan;
pub mod spec_source;

use crate::probe::container::stream;
use lifecycle::{measure, MeasureInput, RowWriter};
pub use plan::{plan, RunOptions, RunPlan, Stop};

/// Runs `jitterlab run`'s one-cell spec, checked by the command line, and
/// reports it. Returns the exit code.
pub fn run(root: &Path, db: &Db, spec: &Spec, opts: &RunOptions) -> Result<ExitCode> {
    let cells = spec.cells();
    let [cell] = cells.as_slice() else {
        anyhow::bail!("a run measures one cell, and this spec has {}", cells.len());
    };
    // One monitor per series and database, refused before anything starts.
    if let (Some(m), Some(db)) = (&opts.monitor, db.path()) {
        if let Some((other, pid)) = Store::open(db)?.live_monitor(&m.series, None)? {
            return Err(bad(crate::store::monitor::two_monitors(
                &m.series, db, other, pid,
            )));
        }
    }
    execute(root, db, spec, cell, opts)
}

/// Refuses a buffer larger than half of the machine's memory (the spec
/// checker's; the command line's checks call it too).
pub use crate::probe::flags::check_machine_memory;

/// Runs the one cell of a run and reports it. Returns the exit code.
fn execute(
    root: &Path,
    db: &Db,
    spec: &Spec,
    cell: &CellPlan,
    opts: &RunOptions,
) -> Result<ExitCode> {
    let plan = plan(spec, cell, opts);
    crate::metrics::cell_started(0, 1, &cell.key);
    // A journal left by a killed bench means the machine is not as it was;
    // a run that changes nothing runs beside `apply` and takes the machine
    // lock only if it changes something (its settings, namespaces, a work
    // directory). Every terminating signal ends it through the same path
    // from before its first change on.
    crate::termination::stop_flag()?;
    let mut journal = Journal::on_demand(root)?;
    let config = &spec.configurations[cell.configuration];
    let mut settings = apply_settings(root, config, &mut journal)?;
    let measured = measure_run(root, db, spec, cell, opts, &plan, &mut journal);
    // What the run changed goes back on every path, before anything else.
    let restored = restore_all(&mut settings, root, &mut journal)
        .unwrap_or_else(|e| vec![format!("restoring the IRQ role failed: {e:#}")]);
    crate::metrics::cell_ended(1, 1);
    for line in restored {
        errln!("jitterlab: {}", crate::output::shown(&line));
    }
    let RunMeasured {
        measured,
        mut writer,
        ids,
        dma_guard,
    } = measured?;
    drop(dma_guard);
    journal.finish()?;
    let result = &measured.result;
    // A result that cannot be stored is an error (exit 2), but only after
    // everything else that can keep it is written: --json, --csv, the summary.
    let mut failure = writer.error.take();
    // A monitor's rows its last drains could not store: written once more,
    // or counted as lost.
    if let Some(w) = writer.monitor.as_mut() {
        if let Some(lost) = w.finish(writer.store.as_mut(), writer.t0) {
            failure.get_or_insert(lost);
        }
    }
    if let (Some(s), Some(ids)) = (writer.store.as_mut(), ids) {
        if let Some(f) = store_result(s, ids, result, &measured.histograms) {
            failure.get_or_insert(f);
        }
    }
    write_files(opts, result, &measured.recorders)?;
    if let Some(w) = writer.csv.take() {
        if let Err(e) = w.into_inner().finish() {
            failure.get_or_insert(e.to_string());
        }
    }
    if opts.stream {
        // Inside a container: the result goes to the host, which reports.
        let line = stream::Line::Result {
            result: Box::new(result.clone()),
            histograms: stream::encode_histograms(&measured.histograms)?,
        };
        stream::write_line(&mut std::io::stdout().lock(), &line).context("streaming the result")?;
    } else {
        let header = report::header::of_result(result);
        let summary = report::text::summary(result);
        let cells = report::verdict::of_result(result);
        out!(
            "{}",
            report::header::record(report::tables::Format::Text, &header, &cells, &summary)?
        )?;
    }
    if let Some(f) = failure {
        return Err(not_stored(&f, opts.outputs.json.as_deref()));
    }
    // Every verdict that did not pass (jitterlab_core::verdict) is exit 1;
    // a monitor ends 0 (service managers rely on it), its alerts logged.
    Ok(if result.failed() && opts.monitor.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Applies the machine settings of a run's configuration (the chase's
/// `--roles` IRQ CPU), saying what each did.
fn apply_settings(root: &Path, config: &Configuration, journal: &mut Journal) -> Result<Settings> {
    let (mut settings, warnings) = config_settings(config)?;
    for w in warnings {
        errln!("jitterlab: warning: {w}");
    }
    let reports = apply_all(&mut settings, root, journal)?;
    for r in &reports {
        for n in &r.notes {
            errln!("jitterlab: {}: {n}", r.name);
        }
    }
    crate::metrics::settings(&reports, None);
    Ok(settings)
}

/// What [`measure_run`] hands back for storing and reporting.
struct RunMeasured {
    measured: lifecycle::Measured,
    writer: RowWriter,
    ids: Option<RunIds>,
    dma_guard: Option<sys::DmaLatencyGuard>,
}

/// Measures a run once its settings are applied: builds its probe(s)
/// through the registry, measures them through the one lifecycle (the run
/// recorded in the store when every thread is ready), and tears them down
/// on every path; on failure the run is marked abandoned.
fn measure_run(
    root: &Path,
    db: &Db,
    spec: &Spec,
    cell: &CellPlan,
    opts: &RunOptions,
    plan: &RunPlan,
    journal: &mut Journal,
) -> Result<RunMeasured> {
    let mut probes = probe::build(
        &Cell {
            root,
            spec,
            cell,
            plan,
            stop: opts.stop,
            calibrated: opts.calibrated.as_deref(),
            workdir: None,
            engine: opts.engine,
            number: 1,
        },
        journal,
    )?;
    let measured = measure_built(root, db, spec, cell, opts, plan, &mut probes);
    // What the probe changed goes back on every path, before anything else.
    for line in probes.teardown(root, journal) {
        errln!("jitterlab: {}", crate::output::shown(&line));
    }
    measured
}

/// [`measure_run`] once the probes are built.
fn measure_built(
    root: &Path,
    db: &Db,
    spec: &Spec,
    cell: &CellPlan,
    opts: &RunOptions,
    plan: &RunPlan,
    probes: &mut Probes,
) -> Result<RunMeasured> {
    let store = db.open()?;
    let host = host::snapshot(root);
    let started_at = rfc3339_now();

    // Process-wide defaults, for probes measured on threads of ours (an
    // external tool applies its own).
    let (dma_guard, defaults) = match probes {
        Probes::Threads(_) => {
            let mlock = rt::lock_memory();
            let config = &spec.configurations[cell.configuration];
            let (dma_guard, dma) = rt::hold_dma_latency(root, !config.dma_latency);
            crate::metrics::setting_held(&dma);
            rt::keep_off_probe_cpus(root, &plan.cpus);
            (dma_guard, vec![mlock, dma])
        }
        Probes::External(_) => {
            // A container's client and its monitor start off the probe
            // CPUs; the container itself gets them (--cpuset-cpus).
            if cell.in_container() {
                rt::keep_off_probe_cpus(root, &plan.cpus);
            }
            (None, Vec::new())
        }
    };
    let signalled = crate::termination::stop_flag()?;

    let mut writer = RowWriter::new(store, None);
    writer.fine_every = opts
        .monitor
        .as_ref()
        .map(|_| monitor::histogram_every(plan.params.window_ns));
    if opts.stream {
        writer.stream = Some(Box::new(std::io::stdout()));
    }
    if let Some(p) = &opts.outputs.csv {
        writer.csv = Some(report::csv::WindowCsv::new(
            out_files::create_streamed("--csv", p)?,
            plan.kind.metrics(),
        )?);
    }
    let command_line: Vec<String> = std::env::args().collect();
    let params_json = serde_json::to_string(&probes.params(plan))?;
    let host_json = serde_json::to_string(&host)?;
    let mut ids: Option<RunIds> = None;
    let mut ready = |w: &mut RowWriter, realtime: bool| -> Result<()> {
        if let Some(out) = w.stream.as_mut() {
            stream::write_line(out.as_mut(), &stream::Line::Ready { realtime })
                .context("streaming the start")?;
        }
        if let Some(s) = w.store.as_mut() {
            let run = RunStart {
                started_at: &started_at,
                probe: plan.kind.name(),
                command_line: &command_line,
                params_json: params_json.clone(),
                host_json: host_json.clone(),
                hostname: &host.hostname,
                kernel_release: &host.kernel_release,
                machine_id: host.machine_id.as_deref(),
                realtime: Some(realtime),
                kind: match opts.monitor {
                    Some(_) => RunKind::Monitor,
                    None => RunKind::Run,
                },
                name: opts
                    .monitor
                    .as_ref()
                    .map_or(plan.kind.name(), |m| m.series.as_str()),
                spec_json: None,
            };
            let started = s.begin_run_in(&run, &cell.key.deployment);
            let started = started.context("recording the run")?;
            w.cell = Some(started.cell);
            ids = Some(started);
            if let Some(m) = &opts.monitor {
                let readers = std::mem::take(&mut w.fine_readers);
                let watch = monitor::Watch::begin(
                    s,
                    root,
                    m.clone(),
                    (started.run, started.cell),
                    plan.params.window_ns,
                    readers,
                )?;
                w.monitor = Some(watch);
            }
        }
        Ok(())
    };
    let measured = measure(
        MeasureInput {
            plan,
            host: host.clone(),
            started_at: started_at.clone(),
            defaults,
            warnings: Vec::new(),
            signalled: &signalled,
            live: !opts.stream,
            progress: opts.progress,
        },
        probes,
        &mut writer,
        &mut ready,
        &mut || {},
    );
    match measured {
        Ok(measured) => Ok(RunMeasured {
            measured,
            writer,
            ids,
            dma_guard,
        }),
        Err(e) => {
            if let (Some(s), Some(ids)) = (writer.store.as_mut(), ids) {
                let _ = s.abandon_run(ids);
            }
            Err(e)
        }
    }
}

/// Stores a finished run's result and says so; when that fails, marks the
/// run interrupted and returns what failed, for [`not_stored`].
pub fn store_result(
    s: &mut Store,
    ids: RunIds,
    result: &RunResult,
    histograms: &[crate::store::StoredHistogram],
) -> Option<String> {
    match s.finish_run(ids, result, histograms) {
        Ok(()) => {
            errln!(
                "jitterlab: stored as run {} in {}",
                ids.run,
                s.path().display()
            );
            None
        }
        Err(e) => {
            let _ = s.abandon_run(ids);
            Some(format!("storing the result failed: {e:#}"))
        }
    }
}

/// The error of a run whose result could not be stored (or streamed):
/// says what failed and where the result is kept all the same.
pub fn not_stored(failure: &str, json: Option<&Path>) -> anyhow::Error {
    let kept = match json {
        Some(p) => format!("the result is in --json {}", p.display()),
        None => "the result is only in the summary above; pass --json FILE to keep a copy whatever happens to the database".into(),
    };
    anyhow::anyhow!("{failure}; {kept}")
}

/// The current time, RFC 3339.
pub fn rfc3339_now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Writes a whole versioned result (a run's, a bench's stored run) to
/// `--json`'s file.
pub fn write_json(p: &Path, result: &impl serde::Serialize) -> Result<()> {
    // Serialized first: a write error (`--json -` to a closed pipe) then
    // reaches the caller as itself, not inside a serde_json error.
    let mut text = serde_json::to_vec_pretty(result)?;
    text.push(b'\n');
    let mut f = out_files::create("--json", p)?;
    f.write_all(&text)?;
    f.finish()
}

/// The JSON `--json` writes of a run's result, as `report RUN --format
/// json` prints it: the record (`header`, then the `verdict` block) first,
/// then the result's own fields. A reader of the result alone (an older
/// file has neither key) ignores both.
pub fn result_json(result: &RunResult) -> Result<String> {
    let mut body = serde_json::to_string_pretty(result)?;
    body.push('\n');
    report::header::record(
        report::tables::Format::Json,
        &report::header::of_result(result),
        &report::verdict::of_result(result),
        &body,
    )
}

/// Writes a JSON text, already rendered, to `--json`'s file.
pub fn write_json_text(p: &Path, text: &str) -> Result<()> {
    let mut f = out_files::create("--json", p)?;
    f.write_all(text.as_bytes())?;
    f.finish()
}

/// Writes `--json` and `--histogram` (from the threads' recorders) from
/// the finished result.
fn write_files(opts: &RunOptions, result: &RunResult, recorders: &[Recorder]) -> Result<()> {
    if let Some(p) = &opts.outputs.json {
        write_json_text(p, &result_json(result)?)?;
    }
    if let Some(p) = &opts.outputs.junit {
        report::junit::write(
            p,
            &report::junit::Head {
                title: &format!("jitterlab run {}", result.probe.name()),
                single: result.probe.name(),
                started_at: &result.started_at,
                hostname: &result.host.hostname,
            },
            &report::verdict::of_result(result),
        )?;
    }
    if let Some(p) = &opts.outputs.histogram {
        let mut f = out_files::create("--histogram", p)?;
        // Each recorder's 1 µs histogram of its main latency (the
        // periodic probes', which alone take --histogram: the wake-up
        // latency), with that metric's statistics.
        let kept: Vec<_> = recorders
            .iter()
            .filter_map(|r| {
                let slot = r.histogram_slot()?;
                Some((r.histogram.as_ref()?, r.stats.get(slot)?.summary()))
            })
            .collect();
        let threads: Vec<report::histogram::HistThread> = kept
            .iter()
            .map(|(hist, latency)| report::histogram::HistThread { hist, latency })
            .collect();
        report::histogram::write_cyclictest_histogram(&mut f, &threads)?;
        f.finish()?;
    }
    Ok(())
}
