//! `jitterlab bench SPEC`: every cell of an experiment's matrix, measured and
//! stored, with its neighbours, and the seeds' tables at the end.
//!
//! The order is the contract with the user (the design's data flow):
//!
//! 1. **Plan** — the spec (a TOML file or a preset fitted to this machine) is
//!    parsed and validated (`jitterlab_core::spec`: every error names the
//!    file, the line and the key); every scenario is planned for every
//!    configuration and the tools it needs are looked up, so a missing
//!    `stress-ng` is reported with its Debian package before anything
//!    starts. The spec is at most 1MiB, and the bounds of
//!    `jitterlab_core::limits` hold after the command line's overrides
//!    (cells, window rows), as does every working set and chase buffer
//!    against the machine's memory.
//! 2. **Lock and journal** — `Journal::begin_as` takes the machine lock
//!    and refuses to start while another jitterlab changes the machine or
//!    a journal of an earlier, killed jitterlab is unreplayed (`jitterlab
//!    restore`), before the plan is printed, so a refusal is one line.
//!    Then the plan is printed: cells, total time including warm-ups and
//!    set-up, the directories the bench will make, and how the neighbours
//!    are contained (a cgroup per cell, or process groups only, and why).
//!    `--dry-run` takes nothing and stops here, with a note when a real run
//!    would be refused now. Nothing on the machine changed yet: the disk
//!    loads' base directories (`/var/tmp`, a `usb_path`) are checked
//!    (existing, writable, not tmpfs or ramfs), nothing is written there.
//!    Stdout is written through `output`: a reader that went away ends the
//!    bench quietly, through the same cleanup as any error.
//!    The bench then makes its private directories, each journaled
//!    ([`crate::system::workdir`]): a work directory in jitterlab's runtime
//!    directory (one `cell-N` directory per cell, for the neighbours' and
//!    rtla's output) and one directory per disk base for the disk loads;
//!    they are removed at the end, on every path.
//! 3. **Calibrate** — the scan of each cyclic probe is calibrated once per
//!    set of probe CPUs, idle, before any neighbour starts; every cell
//!    reuses it, so a cell's scan does the same work under any load.
//! 4. **Cells**, in plan order (repetitions outermost). Per cell: the
//!    configuration's PM QoS request; the cell's cgroup made (journaled,
//!    see [`crate::neighbour::cgroup`]) and the neighbours started in it
//!    (each journaled, own process group, pinned, parent-death signal,
//!    joining the cgroup before `exec`), then the warm-up
//!    during which they are health-checked; the kernel's per-CPU counters
//!    and the neighbours' CPU time are read; the probe measures
//!    ([`measure_cell`]: the one lifecycle, exactly as `jitterlab run` does, rows committed
//!    every 100 ms); the counters are read again; the neighbours are
//!    checked once more and stopped with their whole group, and whatever
//!    is left in the cell's cgroup is killed and the group removed; the network
//!    namespaces are deleted; the cell is stored with its context. A
//!    neighbour that died early fails the cell (its stderr tail is kept).
//! 5. **End** — a terminating signal (SIGINT, SIGTERM, SIGHUP…;
//!    `crate::termination`) ends the current cell (interrupted) and skips
//!    the rest; every path stops the neighbours and deletes what was
//!    created. The run's tables are printed from the store (`report::tables`
//!    reads only the database). Exit 1, once every cell has run, when a
//!    verdict of a cell did not pass (`jitterlab_core::verdict`: a limit
//!    exceeded or not measured, a cycle time not held, a main metric
//!    without a sample) or a cell failed, 0 otherwise.
//!
//! Timing: the plan counts, per cell, [`SETUP_NS`] of set-up beside the
//! warm-up and the measured duration, and [`CALIBRATION_NS`] per
//! calibration. Both are what this orchestration measured on a 2-CPU machine
//! (BENCHMARKS.md, "Orchestration overhead").
//!
//! The design rules cited here are in `docs/design.md`.

use self::progress::Progress;
use super::lifecycle::{measure, MeasureInput, RowWriter};
use super::plan::{plan, RunOptions, Stop};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::Result;
use jitterlab_core::cell::{
    CellContext, CellKey, CellStatus, NeighbourReport, StoredCell, StoredRun,
};
use jitterlab_core::defaults;
use jitterlab_core::result::{Calibration, DefaultStatus, RunResult};
use jitterlab_core::spec::{CellPlan, Policy, Spec};
use jitterlab_core::units::{format_duration_exact, CpuList};

use super::rfc3339_now;
use super::spec_source::{load, Loaded, SpecSource};
use crate::error::bad;
use crate::neighbour::cgroup::{self, CellGroup, Hierarchy};
use crate::neighbour::scenario::{self, Planned, ScenarioCtx};
use crate::neighbour::{self, NeighbourSpec, Running};
use crate::net::hosts::{NetChange, NetFlood};
use crate::out_files::{check_database, check_outputs};
use crate::output::{errln, out, outln};
use crate::probe::{self, periodic, Cell, Probes};
use crate::report;
use crate::store::{BenchSpecJson, RunKind, RunStart, RunStatus, Store};
use crate::system::container::Engine;
use crate::system::journal::{self, Holder, Journal, Undo};
use crate::system::rt::keep_off_probe_cpus;
use crate::system::rt::{self, SchedRequest};
use crate::system::settings::{apply_all, config_settings, restore_all};
use crate::system::workdir::{self, WorkDir, DEFAULT_DISK_BASE};
use crate::system::{counters, host};

/// Set-up time the plan counts per cell: starting and stopping the
/// neighbours, the probe threads' set-up and the store's commits.
pub const SETUP_NS: u64 = 300_000_000;

/// Time the plan counts per idle scan calibration.
pub const CALIBRATION_NS: u64 = 200_000_000;

/// What one cell's scenario will start.
struct CellLoad {
    neighbours: Vec<NeighbourSpec>,
    network: Option<Vec<usize>>,
    skip: Option<String>,
}

/// The fresh private directories a running bench made for the disk loads,
/// by the base directory they are in.
type DiskDirs = BTreeMap<PathBuf, WorkDir>;

/// Plans the scenario of a cell (nothing starts). `made`: the bench's disk
/// directories once they exist; `None` when planning, where the base
/// directories are only checked.
fn plan_load(spec: &Spec, cp: &CellPlan, made: Option<&DiskDirs>) -> Result<CellLoad> {
    let config = &spec.configurations[cp.configuration];
    let sc = &spec.scenarios[cp.scenario];
    let ncpus = spec.neighbour_cpus(cp);
    let fresh = |base: PathBuf| match made.and_then(|m| m.get(&base)) {
        Some(dir) => dir.path().to_path_buf(),
        None => base,
    };
    let ctx = ScenarioCtx {
        probe_cpus: config.probe_cpus.clone(),
        neighbour_cpus: ncpus.clone(),
        disk_dir: fresh(PathBuf::from(DEFAULT_DISK_BASE)),
        usb_path: sc.usb_path.as_ref().map(PathBuf::from).map(fresh),
        ready: made.is_some(),
    };
    let mut load = CellLoad {
        neighbours: Vec::new(),
        network: None,
        skip: None,
    };
    if let Some(b) = &sc.builtin {
        match scenario::plan(b, &ctx)? {
            Planned::Neighbours(v) => load.neighbours = v,
            Planned::Network => {
                load.network = Some(
                    sc.rps_cpus
                        .clone()
                        .unwrap_or_else(|| config.probe_cpus.clone()),
                )
            }
            Planned::Skip(why) => load.skip = Some(why),
        }
    }
    for c in &sc.neighbours {
        load.neighbours.push(NeighbourSpec {
            name: c.name.clone(),
            argv: c.argv.clone(),
            cpus: c.cpus.clone().unwrap_or_else(|| ncpus.clone()),
            nice: None,
            package: None,
        });
    }
    Ok(load)
}

/// Refuses, before anything starts, a spec whose neighbours cannot run
/// here — a missing tool (named with its Debian package), the network
/// scenario without root or `ip` — or whose settings this machine refuses.
fn check_environment(root: &Path, spec: &Spec, cells: &[CellPlan]) -> Result<()> {
    for c in &spec.configurations {
        for setting in config_settings(c)?.0 {
            setting.validate(root).map_err(|e| {
                let bad_input = e.downcast_ref::<crate::error::BadInput>().is_some();
                let e = e.context(format!("configuration {}", c.name));
                if bad_input {
                    bad(format!("{e:#}"))
                } else {
                    e
                }
            })?;
        }
    }
    let mut specs = Vec::new();
    let mut network = false;
    for cp in cells {
        let load = plan_load(spec, cp, None)?;
        specs.extend(load.neighbours);
        network |= load.network.is_some();
    }
    neighbour::check_tools(&specs)?;
    if network {
        crate::net::hosts::check_environment()?;
    }
    Ok(())
}

/// Everything a bench holds while its cells run.
struct Bench<'a> {
    root: &'a Path,
    spec: &'a Spec,
    journal: Journal,
    store: Option<Store>,
    /// The first failure to store window rows; ends the bench.
    store_failure: Option<String>,
    /// The private work directory: one `cell-N` directory per cell.
    workdir: WorkDir,
    /// The disk loads' private directories, by base directory.
    disk_dirs: DiskDirs,
    /// Where each cell's neighbours are contained, or why they cannot be.
    cgroups: std::result::Result<Hierarchy, String>,
    signalled: &'a AtomicBool,
    calibrations: BTreeMap<(usize, Vec<usize>), Vec<Calibration>>,
    progress: Progress,
    /// The engine of the container cells.
    engine: Option<Engine>,
    /// Every cell that ended, as it is stored — kept here too, so that
    /// the results reach `--json` and the terminal when the database
    /// cannot take them (a full disk).
    ended: Vec<StoredCell>,
}

/// What ran beside a cell's probe, to be stopped on every path.
#[derive(Default)]
struct Rig {
    running: Vec<Running>,
    /// The cell's cgroup, made before its first neighbour starts.
    cgroup: Option<CellGroup>,
    net: Option<(NetFlood, Vec<u64>)>,
    reports: Vec<NeighbourReport>,
    notes: Vec<String>,
}

impl Rig {
    /// The first neighbour that is no longer alive, as a failure message.
    fn check(&mut self) -> Option<String> {
        for r in self.running.iter_mut() {
            if let Err(report) = r.check() {
                let tail = if report.stderr_tail.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; its stderr ended with: {}",
                        report.stderr_tail.join(" | ")
                    )
                };
                let msg = format!(
                    "neighbour {} ({}) {} before the cell ended{tail}",
                    report.name,
                    report.argv.join(" "),
                    report.end
                );
                return Some(msg);
            }
        }
        None
    }

    /// Stops every neighbour with its group, kills what is left in the
    /// cell's cgroup (workers that left their process group) and removes
    /// it, and deletes the namespaces.
    fn stop(&mut self, journal: &mut Journal) {
        for r in self.running.drain(..) {
            self.reports.push(r.stop(journal));
        }
        if let Some(group) = self.cgroup.take() {
            match group.stop(journal) {
                Ok(line) if line.ends_with("(empty)") => {}
                Ok(line) => self.notes.push(line),
                Err(e) => self.notes.push(format!("{e:#}")),
            }
        }
        if let Some((net, ids)) = self.net.take() {
            match net.teardown() {
                Ok(names) => {
                    let lines = journal.done_all(ids);
                    self.notes.extend(lines);
                    self.notes
                        .push(format!("network namespaces deleted: {}", names.join(", ")));
                }
                Err(e) => self.notes.push(format!(
                    "deleting the network namespaces failed ({e:#}); `jitterlab restore` deletes them"
                )),
            }
        }
    }
}

/// What `jitterlab bench` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchRequest {
    /// The spec, a preset, and overrides.
    pub source: SpecSource,
    /// Validate the spec and print the plan only; change nothing.
    pub dry_run: bool,
    /// Write the stored run as JSON to this file.
    pub json: Option<PathBuf>,
    /// Write every cell's verdicts as JUnit XML to this file.
    pub junit: Option<PathBuf>,
    /// Format of the tables printed at the end.
    pub format: report::tables::Format,
    /// The engine of the container cells (`--engine`).
    pub engine: Option<Engine>,
}

/// `jitterlab bench`.
pub fn bench(root: &Path, db: &Path, a: &BenchRequest) -> Result<ExitCode> {
    let Loaded { spec, unavailable } = load(root, &a.source)?;
    let cells = spec.cells();
    check_database(db)?;
    crate::store::check_for_writing(db)?;
    check_outputs(&[
        ("--json", a.json.as_deref()),
        ("--junit", a.junit.as_deref()),
    ])?;
    // Validation plans with the disk loads' base directories, which are
    // checked; the private directories are made only when the bench starts.
    check_environment(root, &spec, &cells)?;
    let containers = probe::container::check_bench(root, &spec, &cells, a.engine)?;
    // The machine lock and the journal before the plan is printed: a bench
    // that will be refused says only why. A dry run changes nothing, so it
    // only looks, and says after the plan why a real run would be refused.
    let (journal, refused) = match a.dry_run {
        true => {
            let why = journal::would_refuse(root).unwrap_or_else(|e| Some(format!("{e:#}")));
            (None, why)
        }
        // Every terminating signal ends the bench through its cleanup from
        // before its first change on.
        false => {
            crate::termination::stop_flag()?;
            (Some(Journal::begin_as(root, Holder::Bench)?), None)
        }
    };
    let calibration_sets = calibration_sets(&spec, &cells);
    let once_ns = calibration_sets.len() as u64 * CALIBRATION_NS;
    out!("{}", spec.plan_text(SETUP_NS, once_ns))?;
    if let Some(s) = crate::store::preset_source(a.source.preset.as_deref()) {
        outln!(
            "preset {} reproduces: {}, by {}",
            s.preset,
            s.title,
            s.authors
        )?;
        outln!("  emulates: {}", s.emulates)?;
    }
    // Cells this machine will skip (e.g. usb without a path) take no time.
    let (mut skipped, mut skipped_ns) = (0u64, 0u64);
    for (i, cp) in cells.iter().enumerate() {
        let skip = plan_load(&spec, cp, None)?.skip;
        let skip = skip.or_else(|| {
            cp.in_container()
                .then(|| probe::cell_unavailable(&spec, cp, root, a.engine))
                .flatten()
        });
        if let Some(why) = skip {
            skipped += 1;
            // The plan's total already leaves out the cells N/A everywhere.
            if spec.cell_na(cp).is_none() {
                skipped_ns += SETUP_NS + spec.warmup_ns + spec.cell_duration_ns(cp);
            }
            outln!("  {}/{} will be skipped: {why}", i + 1, cells.len())?;
        }
    }
    let planned_ns = spec
        .planned_ns(SETUP_NS, once_ns)
        .saturating_sub(skipped_ns);
    if skipped > 0 {
        outln!(
            "  total without the skipped cells: {}",
            format_duration_exact(planned_ns / 1_000_000 * 1_000_000)
        )?;
    }
    for (c, why) in &unavailable {
        outln!("configuration {c}: N/A here: {why}")?;
    }
    let disk_bases = disk_bases(&spec, &cells);
    let cgroups = cgroup::find();
    out!("{}", files_text(&spec, &cells, &disk_bases, &cgroups))?;
    match &containers {
        probe::container::BenchContainers::Run(line)
        | probe::container::BenchContainers::Skipped(line) => outln!("{line}")?,
        probe::container::BenchContainers::None => {}
    }
    let Some(mut journal) = journal else {
        if let Some(why) = refused {
            outln!("note: a real run would be refused now: {why}")?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let mut store = Store::open(db)?;
    let host = host::snapshot(root);
    let spec_json = BenchSpecJson {
        configurations: spec.configurations.iter().map(|c| c.name.clone()).collect(),
        scenarios: spec.scenarios.iter().map(|s| s.name.clone()).collect(),
        unavailable: unavailable.clone(),
        spec: serde_json::to_value(&spec)?,
        source: crate::store::preset_source(a.source.preset.as_deref()),
    };
    let command_line: Vec<String> = std::env::args().collect();
    let keys: Vec<CellKey> = cells.iter().map(|c| c.key.clone()).collect();
    let started_at = rfc3339_now();
    let (run, cell_ids) = store.begin_bench(
        &RunStart {
            started_at: &started_at,
            probe: "bench",
            command_line: &command_line,
            params_json: "{}".into(),
            host_json: serde_json::to_string(&host)?,
            hostname: &host.hostname,
            kernel_release: &host.kernel_release,
            machine_id: host.machine_id.as_deref(),
            realtime: None,
            kind: RunKind::Bench,
            name: &spec.name,
            spec_json: Some(serde_json::to_string(&spec_json)?),
        },
        &keys,
    )?;
    errln!("jitterlab: bench stored as run {run} in {}", db.display());

    if matches!(containers, probe::container::BenchContainers::Run(_)) {
        // Before the first cell: building it takes a while, and must not
        // happen beside a cell's neighbours.
        probe::container::prepare_image(a.engine)?;
    }
    let mlock = rt::lock_memory();
    let signalled = crate::termination::stop_flag()?;
    let (workdir, disk_dirs) = make_dirs(root, &disk_bases, &mut journal)?;
    let mut b = Bench {
        root,
        spec: &spec,
        journal,
        store: Some(store),
        store_failure: None,
        workdir,
        disk_dirs,
        cgroups,
        signalled: &signalled,
        calibrations: BTreeMap::new(),
        progress: Progress::new(planned_ns),
        engine: a.engine,
        ended: Vec::new(),
    };
    let started = Instant::now();
    for set in &calibration_sets {
        b.calibrate(set);
    }
    let mut exceeded: Vec<String> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut interrupted = false;
    let mut run_cells = || -> Result<()> {
        for (i, (cp, &cell_id)) in cells.iter().zip(&cell_ids).enumerate() {
            if signalled.load(Relaxed) {
                interrupted = true;
                break;
            }
            b.progress.cell(i, cells.len(), &cp.key);
            crate::metrics::cell_started(i, cells.len(), &cp.key);
            let (status, limits) = b.run_cell(cp, cell_id, mlock.clone())?;
            crate::metrics::cell_ended(i + 1, cells.len());
            match status {
                CellStatus::Failed => {
                    failed.push(format!("{} rep {}", cp.key.name(), cp.key.repetition))
                }
                CellStatus::Interrupted => interrupted = true,
                _ => {}
            }
            exceeded.extend(limits);
        }
        Ok(())
    };
    let ran = run_cells();
    b.progress.finish();
    let elapsed_ns = started.elapsed().as_nanos() as u64;
    let Bench {
        mut journal,
        store,
        workdir,
        disk_dirs,
        ended,
        ..
    } = b;
    // On every path, the private directories go (a failure keeps their
    // journal entries, and `journal.finish` below says to restore).
    for dir in std::iter::once(workdir).chain(disk_dirs.into_values()) {
        if let Err(e) = dir.remove(&mut journal) {
            errln!("jitterlab: warning: {e:#}");
        }
    }
    let mut store = store.expect("store is open for the whole bench");
    let stored = ran.and_then(|()| {
        store.finish_run_row(
            run,
            if interrupted {
                RunStatus::Interrupted
            } else {
                RunStatus::Completed
            },
            None,
            elapsed_ns,
            None,
        )
    });
    if let Err(e) = stored {
        // The cells that ended are in memory: they reach --json and the
        // terminal though the database could not take them.
        let memory = StoredRun {
            id: run,
            started_at: started_at.clone(),
            kind: RunKind::Bench.name().into(),
            name: spec.name.clone(),
            status: RunStatus::Interrupted.name().into(),
            hostname: host.hostname.clone(),
            kernel_release: host.kernel_release.clone(),
            configurations: spec_json.configurations.clone(),
            scenarios: spec_json.scenarios.clone(),
            unavailable: spec_json.unavailable.clone(),
            cells: ended,
            probes: spec.probes.clone(),
        };
        return Err(rescue(&memory, a, e));
    }
    journal.finish()?;
    errln!(
        "jitterlab: bench took {} of a planned {}",
        format_duration_exact(elapsed_ns / 1_000_000 * 1_000_000),
        format_duration_exact(planned_ns / 1_000_000 * 1_000_000)
    );

    let stored = store.load_run(run)?;
    let header = store.run_header(run)?;
    let verdicts = report::verdict::of_run(&stored);
    if let Some(p) = &a.json {
        // The record first (header, verdict), then the stored run.
        let mut body = serde_json::to_string_pretty(&stored)?;
        body.push('\n');
        let text = report::header::record(report::tables::Format::Json, &header, &verdicts, &body)?;
        super::write_json_text(p, &text)?;
    }
    if let Some(p) = &a.junit {
        report::junit::write(
            p,
            &report::junit::Head {
                title: &format!("jitterlab bench {}", stored.name),
                single: &stored.name,
                started_at: &stored.started_at,
                hostname: &stored.hostname,
            },
            &verdicts,
        )?;
    }
    let text = match a.format {
        report::tables::Format::Html => {
            report::html::render(&store, &[run], &report::html::HtmlOptions::default())?
        }
        f => {
            let tables =
                report::tables::render(&stored, &report::tables::TableOptions::default(), f)?;
            report::header::record(f, &header, &verdicts, &tables)?
        }
    };
    out!("{text}")?;
    for f in &failed {
        errln!("jitterlab: cell {f} failed (see its explanation above)");
    }
    for e in &exceeded {
        errln!("jitterlab: did not pass: {}", crate::output::shown(e));
    }
    if interrupted {
        errln!("jitterlab: the bench was interrupted; the cells that ran are stored");
    }
    Ok(if failed.is_empty() && exceeded.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The end of a bench whose database failed (`e`): the cells that ended,
/// from memory (`run`), are written to `--json` and printed as the
/// bench's tables, and the error says where they are.
fn rescue(run: &StoredRun, a: &BenchRequest, e: anyhow::Error) -> anyhow::Error {
    if run.cells.is_empty() {
        return e;
    }
    let mut kept = Vec::new();
    if let Some(p) = &a.json {
        match super::write_json(p, run) {
            Ok(()) => kept.push(format!("--json {}", p.display())),
            Err(w) => errln!("jitterlab: {w:#}"),
        }
    }
    let format = match a.format {
        // HTML reads the database; the tables do not.
        report::tables::Format::Html => report::tables::Format::Text,
        f => f,
    };
    if let Ok(text) = report::tables::render(run, &report::tables::TableOptions::default(), format)
    {
        // The verdict block above the tables, as in the record (the
        // header needs the database; a JSON document stays the tables').
        let verdict = match format {
            report::tables::Format::Text | report::tables::Format::Md => {
                report::verdict::block(format, &report::verdict::of_run(run))
                    .map(|v| format!("{v}\n"))
                    .unwrap_or_default()
            }
            _ => String::new(),
        };
        if out!("{verdict}{text}").is_ok() {
            kept.push("the tables above".into());
        }
    }
    match kept.is_empty() {
        true => e,
        false => anyhow::anyhow!(
            "{e:#}; the {} that ended {} in {}",
            match run.cells.len() {
                1 => "result of the 1 cell".to_string(),
                n => format!("results of the {n} cells"),
            },
            if run.cells.len() == 1 { "is" } else { "are" },
            kept.join(" and ")
        ),
    }
}

/// The base directories in which the cells' disk loads need a private
/// directory (see [`scenario::disk_base`]), in plan order.
fn disk_bases(spec: &Spec, cells: &[CellPlan]) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    for cp in cells {
        let sc = &spec.scenarios[cp.scenario];
        let Some(b) = &sc.builtin else { continue };
        if let Some(base) = scenario::disk_base(b, sc.usb_path.as_deref().map(Path::new)) {
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
    }
    bases
}

/// The plan's lines on what the bench creates on the machine besides its
/// settings: the work directory, the disk loads' directories, and how the
/// neighbours are contained.
fn files_text(
    spec: &Spec,
    cells: &[CellPlan],
    disk_bases: &[PathBuf],
    cgroups: &std::result::Result<Hierarchy, String>,
) -> String {
    let mut out = String::from(
        "  work directory: a fresh private directory (0700) in jitterlab's runtime directory\n",
    );
    for base in disk_bases {
        out.push_str(&format!(
            "  disk load directory: a fresh private directory (0700) in {}\n",
            base.display()
        ));
    }
    let any_neighbours = cells.iter().any(|cp| {
        let sc = &spec.scenarios[cp.scenario];
        !sc.neighbours.is_empty() || sc.builtin.as_deref().is_some_and(|b| b != "idle")
    });
    if any_neighbours {
        out.push_str(&match cgroups {
            Ok(h) => format!(
                "  neighbours: each cell's in a cgroup of their own ({})\n",
                h.describe()
            ),
            Err(why) => {
                format!("  neighbours: in their own process groups only, not in a cgroup: {why}\n")
            }
        });
    }
    out
}

/// Makes the bench's private work directory and one private directory per
/// disk base, journaled; on failure removes what it made.
fn make_dirs(
    root: &Path,
    disk_bases: &[PathBuf],
    journal: &mut Journal,
) -> Result<(WorkDir, DiskDirs)> {
    let work = workdir::create_work_dir(root, journal)?;
    let mut disk = DiskDirs::new();
    for base in disk_bases {
        let what = format!("the disk load directory {}", base.display());
        match workdir::create_disk_dir(base, &what, journal) {
            Ok(d) => {
                disk.insert(base.clone(), d);
            }
            Err(e) => {
                for d in std::iter::once(work).chain(disk.into_values()) {
                    let _ = d.remove(journal);
                }
                return Err(e);
            }
        }
    }
    let mut made = vec![work.path().display().to_string()];
    made.extend(disk.values().map(|d| d.path().display().to_string()));
    errln!("jitterlab: work directories: {}", made.join(", "));
    Ok((work, disk))
}

/// The distinct (probe with a scan, probe CPUs) pairs whose scan needs a
/// calibration, in plan order.
fn calibration_sets(spec: &Spec, cells: &[CellPlan]) -> Vec<(usize, Vec<usize>)> {
    let mut sets: Vec<(usize, Vec<usize>)> = Vec::new();
    for cp in cells {
        if spec.probes[cp.probe].scan().is_none() {
            continue;
        }
        let cpus = spec.probes[cp.probe].cpus(&spec.configurations[cp.configuration].probe_cpus);
        if !sets.contains(&(cp.probe, cpus.clone())) {
            sets.push((cp.probe, cpus));
        }
    }
    sets
}

impl Bench<'_> {
    /// Calibrates one probe's scan on its CPUs, idle, at FIFO 95 where the
    /// machine allows it.
    fn calibrate(&mut self, set: &(usize, Vec<usize>)) {
        let Some(scan) = self.spec.probes[set.0].scan() else {
            return;
        };
        let sched = SchedRequest {
            policy: Policy::Fifo,
            priority: defaults::PRIORITY,
            nice: defaults::NICE,
        };
        let cals: Vec<Calibration> = set
            .1
            .iter()
            .filter_map(|&cpu| periodic::calibrate_idle(cpu, sched, scan))
            .collect();
        for cal in &cals {
            if let Some(n) = &cal.note {
                self.progress
                    .say(&format!("jitterlab: warning: scan calibration: {n}"));
            }
        }
        if cals.len() == set.1.len() {
            self.calibrations.insert(set.clone(), cals);
        }
    }

    /// Runs one cell and stores it. Returns its status and the verdicts
    /// that did not pass.
    fn run_cell(
        &mut self,
        cp: &CellPlan,
        cell_id: i64,
        mlock: DefaultStatus,
    ) -> Result<(CellStatus, Vec<String>)> {
        let spec = self.spec;
        let config = &spec.configurations[cp.configuration];
        let mut context = CellContext::default();
        let mut rig = Rig::default();
        let store = self.store.as_mut().expect("open store");
        store.start_cell(cell_id)?;

        let mut load = plan_load(spec, cp, Some(&self.disk_dirs))?;
        if load.skip.is_none() {
            load.skip = spec
                .cell_na(cp)
                .or_else(|| probe::cell_unavailable(spec, cp, self.root, self.engine));
        }
        if let Some(why) = load.skip {
            context.notes.push(why.clone());
            self.progress
                .say(&format!("jitterlab: cell skipped: {why}"));
            self.ended.push(StoredCell {
                status: CellStatus::Skipped,
                key: cp.key.clone(),
                result: None,
                context: context.clone(),
            });
            store.finish_cell(cell_id, CellStatus::Skipped, None, &context, &[])?;
            return Ok((CellStatus::Skipped, Vec::new()));
        }
        keep_off_probe_cpus(self.root, &config.probe_cpus);
        let (mut settings, warnings) = config_settings(config)?;
        context.notes.extend(warnings);
        let applied = apply_all(&mut settings, self.root, &mut self.journal);
        let (dma_guard, dma) = rt::hold_dma_latency(self.root, !config.dma_latency);

        let outcome = match applied {
            Ok(reports) => {
                crate::metrics::settings(&reports, Some(&dma));
                context.settings = reports;
                self.start_and_measure(cp, cell_id, load, &mut rig, &mut context, vec![mlock, dma])
            }
            Err(e) => Ok(CellEnd::Failed(format!(
                "applying the settings of configuration {} failed: {e:#}",
                config.name
            ))),
        };
        // Every path: stop what runs beside the probe, then put the settings back.
        let healthy_at_end = rig.check();
        rig.stop(&mut self.journal);
        match restore_all(&mut settings, self.root, &mut self.journal) {
            Ok(lines) => {
                // One line for what went back; every failure verbatim.
                let (done, failed): (Vec<String>, Vec<String>) =
                    lines.into_iter().partition(|l| l.starts_with("restored "));
                if !done.is_empty() {
                    context.notes.push(format!(
                        "settings restored: {} values written back",
                        done.len()
                    ));
                }
                context.notes.extend(failed);
            }
            Err(e) => context.notes.push(format!(
                "restoring the settings failed ({e:#}); `jitterlab restore` puts them back"
            )),
        }
        drop(dma_guard);
        context.neighbours = std::mem::take(&mut rig.reports);
        context.notes.append(&mut rig.notes);
        neighbour::judge_loads(&mut context.neighbours);
        for n in &context.neighbours {
            if let Some(l) = n.load.as_ref().filter(|l| l.short) {
                self.progress.say(&format!(
                    "jitterlab: neighbour {} {}",
                    crate::output::shown(&n.name),
                    l.text()
                ));
            }
        }

        let store = self.store.as_mut().expect("open store");
        let (status, measured) = match outcome {
            Ok(CellEnd::Measured(m)) => {
                let throttling = throttling_around(self.root, &m.result, config.policy);
                for l in throttling.lines() {
                    self.progress.say(&format!("jitterlab: {l}"));
                }
                context.throttling = Some(throttling);
                let status = if let Some(f) = context.failure.clone().or(healthy_at_end) {
                    context.failure = Some(f);
                    CellStatus::Failed
                } else if m.result.interrupted {
                    CellStatus::Interrupted
                } else {
                    CellStatus::Completed
                };
                (status, Some(m))
            }
            Ok(CellEnd::Interrupted) => (CellStatus::Interrupted, None),
            Ok(CellEnd::Failed(f)) => {
                context.failure = Some(f);
                (CellStatus::Failed, None)
            }
            Err(e) => {
                context.failure = Some(format!("{e:#}"));
                (CellStatus::Failed, None)
            }
        };
        self.ended.push(StoredCell {
            status,
            key: cp.key.clone(),
            result: measured.as_ref().map(|m| m.result.clone()),
            context: context.clone(),
        });
        let mut limits = Vec::new();
        match &measured {
            Some(m) => {
                store.finish_cell(cell_id, status, Some(&m.result), &context, &m.histograms)?;
                // Every verdict that did not pass (jitterlab_core::verdict)
                // makes the bench's exit status 1, once the sweep is done.
                for v in jitterlab_core::verdict::cell_verdicts(&m.result, &context)
                    .iter()
                    .filter(|v| !v.status.passed())
                {
                    limits.push(format!(
                        "{} rep {}: {}",
                        cp.key.name(),
                        cp.key.repetition,
                        v.line()
                    ));
                }
            }
            None => store.finish_cell(cell_id, status, None, &context, &[])?,
        }
        if let Some(f) = &context.failure {
            // The failure may quote a neighbour's stderr: escaped.
            self.progress.say(&format!(
                "jitterlab: cell {} failed: {}",
                cp.key.name(),
                crate::output::shown(f)
            ));
        }
        if let Some(e) = self.store_failure.take() {
            anyhow::bail!(
                "{e}; the bench stopped after cell {} (its settings are restored): fix the database or give another --db",
                cp.key.name()
            );
        }
        Ok((status, limits))
    }

    /// Starts the neighbours, warms up, measures ([`measure_cell`]).
    /// Whatever it started is in `rig`, for the caller to stop on every
    /// path.
    fn start_and_measure(
        &mut self,
        cp: &CellPlan,
        cell_id: i64,
        load: CellLoad,
        rig: &mut Rig,
        context: &mut CellContext,
        defaults: Vec<DefaultStatus>,
    ) -> Result<CellEnd> {
        let spec = self.spec;
        let cell_dir = workdir::create_subdir(self.workdir.path(), &format!("cell-{cell_id}"))?;

        let mut starting = load.neighbours;
        if let Some(rps) = &load.network {
            let journal = &mut self.journal;
            let mut ids = Vec::new();
            let net = NetFlood::setup(&mut |change: &NetChange| {
                let NetChange::Netns(name) = change;
                ids.push(journal.record(Undo::Netns { name: name.clone() })?);
                Ok(())
            })?;
            let ncpus = spec.neighbour_cpus(cp);
            context.notes.push(format!(
                "network: UDP flood from namespace {} to namespace {} over a veth pair, receive work steered by RPS to CPUs {}",
                net.tx_netns(),
                net.rx_netns(),
                rps.iter().copied().collect::<CpuList>()
            ));
            starting.push(NeighbourSpec {
                name: "net-sink".into(),
                argv: net.sink_argv(rps),
                cpus: ncpus.clone(),
                nice: None,
                package: Some("iproute2"),
            });
            starting.push(NeighbourSpec {
                name: "net-flood".into(),
                argv: net.flood_argv(),
                cpus: ncpus,
                nice: None,
                package: Some("iproute2"),
            });
            rig.net = Some((net, ids));
        }
        if !starting.is_empty() {
            if let Ok(h) = &self.cgroups {
                rig.cgroup = Some(CellGroup::create(h, &mut self.journal)?);
            }
        }
        for n in &starting {
            rig.running.push(neighbour::start(
                n,
                &mut self.journal,
                &cell_dir,
                rig.cgroup.as_ref(),
            )?);
        }

        // Warm-up: the neighbours run alone; a neighbour that dies fails the cell.
        let warm_end = Instant::now() + Duration::from_nanos(spec.warmup_ns);
        while Instant::now() < warm_end {
            if self.signalled.load(Relaxed) {
                return Ok(CellEnd::Interrupted);
            }
            if let Some(f) = rig.check() {
                return Ok(CellEnd::Failed(f));
            }
            crate::metrics::neighbours(&mut rig.running);
            self.progress.tick();
            std::thread::sleep(Duration::from_millis(100).min(warm_end - Instant::now()));
        }
        if let Some(f) = rig.check() {
            return Ok(CellEnd::Failed(f));
        }

        let probe = &spec.probes[cp.probe];
        let cpus = probe.cpus(&spec.configurations[cp.configuration].probe_cpus);
        let calibrated = self.calibrations.get(&(cp.probe, cpus));
        for r in rig.running.iter_mut() {
            r.mark();
        }
        let progress = &self.progress;
        let measured = measure_cell(
            CellRequest {
                root: self.root,
                spec,
                cell: cp,
                id: cell_id,
                calibrated: calibrated.map(Vec::as_slice),
                defaults,
                signalled: self.signalled,
                workdir: &cell_dir,
                engine: self.engine,
            },
            CellState {
                store: &mut self.store,
                journal: &mut self.journal,
                store_failure: &mut self.store_failure,
                context,
            },
            &mut probe::build,
            &mut || {
                progress.tick();
                crate::metrics::neighbours(&mut rig.running);
            },
        )?;
        Ok(CellEnd::Measured(Box::new(measured)))
    }
}

/// Real-time throttling around a measured cell
/// ([`crate::system::rt_throttle`]), with the TSC frequency for a chase's
/// cycles.
fn throttling_around(
    root: &Path,
    result: &RunResult,
    policy: Policy,
) -> jitterlab_core::rt_throttle::Throttling {
    use crate::system::rt_throttle::{around_cell, kernel_log};
    // Only a real-time probe that never sleeps (the chase) is held off for
    // whole hold-offs; a probe that sleeps each cycle is not.
    let realtime = matches!(policy, Policy::Fifo | Policy::RoundRobin)
        && result.probe == jitterlab_core::result::ProbeKind::Chase;
    let cycles = result
        .probe
        .metrics()
        .iter()
        .any(|m| m.unit == jitterlab_core::probe::MetricUnit::Cycles);
    let tsc_hz = cycles.then(|| probe::chase::tsc_frequency(root).0);
    let log = if realtime {
        kernel_log()
    } else {
        String::new()
    };
    around_cell(root, result, realtime, &log, tsc_hz)
}

/// One cell's measurement, as the bench asks for it.
struct CellRequest<'a> {
    root: &'a Path,
    spec: &'a Spec,
    cell: &'a CellPlan,
    /// The cell's id in the store.
    id: i64,
    /// The scan calibrations the bench made once, idle, for its probe CPUs.
    calibrated: Option<&'a [Calibration]>,
    /// Process-wide defaults already applied (mlockall, PM QoS).
    defaults: Vec<DefaultStatus>,
    signalled: &'a AtomicBool,
    /// The cell's directory (rtla's output).
    workdir: &'a Path,
    /// The engine of a container cell.
    engine: Option<Engine>,
}

/// What of the bench a cell's measurement writes to.
struct CellState<'a> {
    /// The results database (lent to the row writer while it measures).
    store: &'a mut Option<Store>,
    journal: &'a mut Journal,
    /// The first failure to store window rows; ends the bench.
    store_failure: &'a mut Option<String>,
    /// The cell's context: the probe's teardown notes, the counters.
    context: &'a mut CellContext,
}

/// Measures one cell whose neighbours run, exactly as `jitterlab run`
/// measures: plans it with a bench cell's options (to its duration) and
/// records the plan, builds its probe(s) with `build` (the registry's),
/// measures them through the one lifecycle with rows committed under the
/// cell, tears them down (their lines become notes of the cell), and reads
/// the kernel's per-CPU counters around it all.
fn measure_cell(
    req: CellRequest<'_>,
    st: CellState<'_>,
    build: &mut dyn FnMut(&Cell<'_>, &mut Journal) -> Result<Probes>,
    tick: &mut dyn FnMut(),
) -> Result<CellMeasured> {
    let plan = plan(req.spec, req.cell, &RunOptions::default());
    if let Some(s) = st.store.as_mut() {
        s.record_cell_plan(req.id, plan.kind, &plan.params)?;
    }
    let before = counters::read(req.root);
    let mut writer = RowWriter::new(st.store.take(), Some(req.id));
    let built = build(
        &Cell {
            root: req.root,
            spec: req.spec,
            cell: req.cell,
            plan: &plan,
            stop: Stop::Duration,
            calibrated: req.calibrated,
            workdir: Some(req.workdir),
            engine: req.engine,
            number: req.id,
        },
        st.journal,
    );
    let measured = built.and_then(|mut probes| {
        let measured = measure(
            MeasureInput {
                plan: &plan,
                host: host::snapshot(req.root),
                started_at: rfc3339_now(),
                defaults: req.defaults,
                warnings: Vec::new(),
                signalled: req.signalled,
                live: false,
                progress: false,
            },
            &mut probes,
            &mut writer,
            &mut |_, _| Ok(()),
            tick,
        );
        st.context
            .notes
            .extend(probes.teardown(req.root, st.journal));
        measured
    });
    *st.store = writer.store.take();
    // Window rows that could not be stored end the bench after this
    // cell (design rule 7): its later cells would be lost the same way.
    if let Some(e) = writer.error.take() {
        st.store_failure.get_or_insert(e);
    }
    let after = counters::read(req.root);
    let missing = before.missing();
    if !missing.is_empty() {
        st.context.notes.push(format!(
            "unknown (unreadable): {}; the explanations lack those counters",
            missing.join(", ")
        ));
    }
    let (cpus, net_rx) = counters::delta(&before, &after, &plan.cpus);
    st.context.cpus = cpus;
    st.context.net_rx = net_rx;
    let m = measured?;
    Ok(CellMeasured {
        result: m.result,
        histograms: m.histograms,
    })
}

/// What a measured cell stores.
struct CellMeasured {
    result: RunResult,
    histograms: Vec<crate::store::StoredHistogram>,
}

/// How the part of a cell before storing ended.
enum CellEnd {
    Measured(Box<CellMeasured>),
    Interrupted,
    Failed(String),
}

mod progress;
#[cfg(test)]
mod tests;
