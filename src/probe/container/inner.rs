//! What a container cell hands the jitterlab inside its container: the
//! cell itself, not flags ([`InnerCell`]).
//!
//! It is the cell's one-cell spec — the probe as the spec has it, the
//! configuration's CPUs and scheduling without its settings (IRQ moves,
//! cpufreq, sysctls stay on the host, which applies them), the idle
//! scenario (the host runs the neighbours), the host deployment (inside,
//! the probe runs where it is) — with how it ends, `--strict`, and the
//! scan calibrations a bench made once, idle, so a container cell's scan
//! does the same work as the host cells'. The spec travels in its own
//! serde form, the one a bench stores in `runs.spec_json`, so a new
//! parameter of a probe crosses without a line here.
//!
//! It goes over as JSON in one argument: `jitterlab __cell JSON`
//! ([`InnerCell::argv`]). One argument rather than a file, because a
//! container cell then needs no file, mount or journal entry of its own,
//! and the stored result records what was handed over (the `args` of its
//! `container` detail); the JSON is a few KB, and one longer than the
//! kernel's limit on one argument (128 KiB) is refused before anything
//! starts. Inside, `__cell` ([`InnerCell::parse`]) runs the cell with
//! [`InnerCell::options`]: the lifecycle `jitterlab run KIND` goes through,
//! its window rows and result streamed on stdout
//! (`probe::container::stream`), nothing stored (the host stores).

use anyhow::{Context, Result};
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::Calibration;
use jitterlab_core::spec::{
    CellPlan, ConfigSettings, Configuration, Deployment, ProbeScope, Scenario, Spec,
};
use serde::{Deserialize, Serialize};

use super::not_applicable;
use crate::error::bad;
use crate::probe::plan::{RunOptions, RunPlan, Stop};
use crate::store::Db;

/// The internal command that runs a handed-over cell.
pub const COMMAND: &str = "__cell";

/// The longest argument the kernel passes to a program (`MAX_ARG_STRLEN`,
/// 32 pages of 4 KiB).
const MAX_ARGUMENT_BYTES: usize = 128 * 1024;

/// A container cell as the jitterlab inside measures it (module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnerCell {
    /// The one-cell spec: the cell's configuration, the idle scenario, the
    /// host deployment, its probe.
    pub spec: Spec,
    /// How the measurement ends: the host cell's.
    pub stop: Stop,
    /// `--strict`: fail when a real-time default cannot be applied.
    #[serde(default)]
    pub strict: bool,
    /// The scan calibrations to measure with, by thread (a bench's, for a
    /// probe with a scan); `None`: calibrate inside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<Vec<Calibration>>,
}

impl InnerCell {
    /// The inner cell of `cell` of `spec`, planned as `plan`, ending as
    /// `stop`, with a bench's `calibrated` scans. Refuses a probe that
    /// cannot run in a container, with the reason.
    pub fn of(
        spec: &Spec,
        cell: &CellPlan,
        plan: &RunPlan,
        stop: Stop,
        calibrated: Option<&[Calibration]>,
    ) -> Result<InnerCell> {
        let probe = &spec.probes[cell.probe];
        if let InContainer::NotApplicable(why) = probe.kind().descriptor().container {
            return Err(bad(why));
        }
        if let Some(why) = not_applicable(probe) {
            return Err(bad(why));
        }
        let config = &spec.configurations[cell.configuration];
        let configuration = Configuration {
            probe_cpus: plan.cpus.clone(),
            neighbour_cpus: spec.neighbour_cpus(cell),
            settings: ConfigSettings::default(),
            ..config.clone()
        };
        let probe = jitterlab_core::spec::ProbeSpec {
            scope: ProbeScope::default(),
            ..probe.clone()
        };
        Ok(InnerCell {
            spec: Spec {
                name: spec.name.clone(),
                duration_ns: spec.cell_duration_ns(cell),
                warmup_ns: 0,
                repetitions: 1,
                deployments: vec![Deployment::Host.name().into()],
                baseline: configuration.name.clone(),
                configurations: vec![configuration],
                scenarios: vec![Scenario::idle()],
                probes: vec![probe],
                warnings: Vec::new(),
            },
            // A monitor never runs in a container; a cell that does not end
            // on its own would end at its duration there.
            stop: match stop {
                Stop::Never => Stop::Duration,
                s => s,
            },
            strict: plan.params.strict,
            calibrated: calibrated
                .filter(|_| plan.scan.is_some())
                .map(<[Calibration]>::to_vec),
        })
    }

    /// The arguments of `jitterlab` inside the container: `__cell` and
    /// this cell as JSON.
    pub fn argv(&self) -> Result<Vec<String>> {
        let json = serde_json::to_string(self).context("writing the container cell as JSON")?;
        if json.len() > MAX_ARGUMENT_BYTES {
            return Err(bad(format!(
                "the container cell's spec is {} bytes of JSON, more than the {MAX_ARGUMENT_BYTES} one argument may have; shorten the probe's parameters",
                json.len()
            )));
        }
        Ok(vec![COMMAND.into(), json])
    }

    /// Reads the cell `__cell` was handed: the JSON of [`InnerCell::argv`],
    /// whose spec has exactly one cell, on the host.
    pub fn parse(json: &str) -> Result<InnerCell> {
        let inner: InnerCell = serde_json::from_str(json).map_err(|e| {
            bad(format!(
                "{COMMAND}: not the JSON of a container cell ({e}); {COMMAND} runs what a container cell hands over, use `jitterlab run` or `jitterlab bench`"
            ))
        })?;
        let cells = inner.spec.cells();
        match cells.as_slice() {
            [c] if !c.in_container() => Ok(inner),
            [_] => Err(bad(format!(
                "{COMMAND}: the cell's deployment is container; the cell inside a container runs on its host"
            ))),
            _ => Err(bad(format!(
                "{COMMAND}: the spec has {} cells; a container cell hands over exactly one",
                cells.len()
            ))),
        }
    }

    /// Where the run inside stores its result: nowhere (`--no-db`), its
    /// host side stores it.
    pub fn db(&self) -> Db {
        Db::Off
    }

    /// What the run inside asks for beside the spec: `--stream`, the
    /// stop, `--strict` and the calibrations.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            stop: self.stop,
            strict: self.strict,
            stream: true,
            calibrated: self.calibrated.clone(),
            ..RunOptions::default()
        }
    }
}
