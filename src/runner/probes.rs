//! The event probes (`chase`, `ctxswitch`, `response`) the runner
//! measures: one [`EventProbe`] adapter per probe module, and the one place
//! each probe's own arguments are built from a cell of the typed spec
//! ([`chase_args`], [`ctxswitch_args`], [`response_args`]), for `jitterlab
//! run` and a bench cell alike.
//!
//! Everything here expects a checked spec: the command line and the spec
//! checker refused bad input before anything started (exit 2). What
//! changes the machine — the response probe's namespaces — happens in
//! [`make`], once the journal is open, each change journaled first, and is
//! undone by [`EventProbe::teardown`]. (The chase's IRQ role is a setting
//! of the cell's configuration, applied and restored by the caller.)

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use jitterlab_core::defaults;
use jitterlab_core::spec::{CellPlan, ProbeParams, ResponseSource, Spec};
use jitterlab_core::units::CpuList;

use crate::net::hosts::NetChange;
use crate::probe::chase::{self, Chase, ChaseArgs};
use crate::probe::ctxswitch::{self, CtxswitchArgs};
use crate::probe::response::{self, Response, ResponseArgs};
use crate::system::journal::{Journal, Undo};

use super::event::{EventProbe, ProbeReport};
use super::plan::{fifo_priority, RunPlan, Stop};
use jitterlab_core::event::EventRecorder;

/// The chase, prepared on the probe thread.
pub struct ChaseProbe {
    root: PathBuf,
    args: ChaseArgs,
    chase: Option<Chase>,
}

impl EventProbe for ChaseProbe {
    fn prepare(&mut self) -> Result<Vec<String>> {
        let c = chase::prepare(&self.root, &self.args)?;
        let w = c.warnings().to_vec();
        self.chase = Some(c);
        Ok(w)
    }

    fn run(&mut self, stop: &AtomicBool, sink: &mut EventRecorder) -> Result<ProbeReport> {
        let c = self.chase.as_mut().context("the chase was not prepared")?;
        let out = c.run(stop, sink);
        Ok(ProbeReport {
            warnings: out.warnings.clone(),
            detail: serde_json::to_value(&out)?,
        })
    }

    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        self.chase = None;
        Vec::new()
    }
}

/// Two threads handing a token back and forth.
pub struct CtxswitchProbe {
    args: CtxswitchArgs,
}

impl EventProbe for CtxswitchProbe {
    fn run(&mut self, stop: &AtomicBool, sink: &mut EventRecorder) -> Result<ProbeReport> {
        let out = ctxswitch::run(&self.args, stop, sink)?;
        Ok(ProbeReport {
            warnings: out.warnings.clone(),
            detail: serde_json::to_value(&out)?,
        })
    }
}

/// Events made on another CPU; for UDP, the namespaces and their journal
/// entries.
pub struct ResponseProbe {
    response: Option<Response>,
    journaled: Vec<u64>,
}

impl EventProbe for ResponseProbe {
    fn run(&mut self, stop: &AtomicBool, sink: &mut EventRecorder) -> Result<ProbeReport> {
        let r = self
            .response
            .as_mut()
            .context("the response probe is gone")?;
        let out = r.run(stop, sink)?;
        Ok(ProbeReport {
            warnings: out.warnings.clone(),
            detail: serde_json::to_value(&out)?,
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = match self.response.take().map(Response::teardown) {
            Some(Ok(l)) if l.is_empty() => l,
            Some(Ok(l)) => vec![format!("response namespaces deleted: {}", l.join(", "))],
            Some(Err(e)) => vec![format!("tearing the response probe down failed: {e:#}")],
            None => Vec::new(),
        };
        for id in self.journaled.drain(..) {
            if let Err(e) = journal.done(id) {
                lines.push(format!("journal: {e:#}"));
            }
        }
        lines
    }
}

/// Makes the event probe of a cell (`plan` is its plan, `stop` how it
/// ends), journaling what it changes on the machine first.
pub fn make(
    root: &Path,
    spec: &Spec,
    cell: &CellPlan,
    plan: &RunPlan,
    stop: Stop,
    journal: &mut Journal,
) -> Result<Box<dyn EventProbe>> {
    match spec.probes[cell.probe].params {
        ProbeParams::Chase { .. } => Ok(Box::new(ChaseProbe {
            root: root.to_path_buf(),
            args: chase_args(spec, cell, plan, stop),
            chase: None,
        })),
        ProbeParams::Ctxswitch => Ok(Box::new(CtxswitchProbe {
            args: ctxswitch_args(spec, cell, plan),
        })),
        ProbeParams::Response { .. } => make_response(response_args(spec, cell, plan), journal),
        ref other => anyhow::bail!(
            "{} is not an event probe; this is a bug in jitterlab",
            other.kind().name()
        ),
    }
}

/// The chase's arguments for a cell: the probe CPU, the cell's neighbour
/// CPUs (their shared cache sizes the default buffer), and how it ends — by
/// its samples, else at the spec's duration (a run without `--duration`
/// ends by the default sample count, with no deadline).
pub fn chase_args(spec: &Spec, cell: &CellPlan, plan: &RunPlan, stop: Stop) -> ChaseArgs {
    let ProbeParams::Chase {
        buffer_bytes,
        iterations,
        samples,
        chase_length,
    } = spec.probes[cell.probe].params
    else {
        unreachable!("chase_args of a probe that is no chase")
    };
    ChaseArgs {
        cpu: plan.cpus[0],
        neighbours: spec.neighbour_cpus(cell).into_iter().collect(),
        buffer: buffer_bytes,
        iterations: iterations.unwrap_or(defaults::ITERATIONS),
        samples,
        duration_ns: match (stop, samples) {
            (Stop::Duration, None) => Some(spec.duration_ns),
            _ => None,
        },
        chase_length,
        ..ChaseArgs::default()
    }
}

/// The context-switch probe's arguments for a cell.
pub fn ctxswitch_args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> CtxswitchArgs {
    CtxswitchArgs {
        cpu: plan.cpus[0],
        priority: fifo_priority(plan),
        count: plan.params.cycles,
        duration: plan.params.duration_ns,
        interval: spec.probes[cell.probe].period_ns,
    }
}

/// The response probe's arguments for a cell: events from its `event_cpu`,
/// else from the cell's first neighbour CPU, else from the probe's own.
pub fn response_args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> ResponseArgs {
    let probe = &spec.probes[cell.probe];
    let ProbeParams::Response { source, event_cpu } = probe.params else {
        unreachable!("response_args of a probe that is no response probe")
    };
    let cpu = plan.cpus[0];
    let neighbours: CpuList = spec.neighbour_cpus(cell).into_iter().collect();
    ResponseArgs {
        cpu,
        event_cpu: event_cpu
            .or_else(|| neighbours.iter().next())
            .unwrap_or(cpu),
        priority: fifo_priority(plan),
        source: source.unwrap_or(ResponseSource::Eventfd),
        interval: probe.period_ns,
        count: plan.params.cycles,
        duration: plan.params.duration_ns,
    }
}

/// Makes the response probe, journaling its namespaces first.
fn make_response(args: ResponseArgs, journal: &mut Journal) -> Result<Box<dyn EventProbe>> {
    let mut journaled = Vec::new();
    let response = response::prepare(&args, &mut |change: &NetChange| {
        let NetChange::Netns(name) = change;
        journaled.push(journal.record(Undo::Netns { name: name.clone() })?);
        Ok(())
    });
    match response {
        Ok(r) => {
            if let Some((a, b)) = r.namespaces() {
                crate::output::errln!(
                    "jitterlab: response: {} events from namespace {a} to namespace {b} over a veth pair",
                    args.source.name()
                );
            }
            Ok(Box::new(ResponseProbe {
                response: Some(r),
                journaled,
            }))
        }
        Err(e) => {
            // `prepare` deleted what it had made; forget the entries.
            for id in journaled {
                let _ = journal.done(id);
            }
            Err(e)
        }
    }
}
