//! From flags (or a bench cell) to an event probe the runner can measure:
//! one [`EventProbe`] adapter per probe module, and the `jitterlab run
//! chase|ctxswitch|response` planners.
//!
//! Every check that needs no change to the machine happens in the planner,
//! before anything starts (bad input → exit 2). What changes the machine —
//! the response probe's namespaces, the chase's IRQ role — happens in the
//! adapter's factory, once the journal is open, each change journaled
//! first, and is undone by [`EventProbe::teardown`].

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use jitterlab_core::chase::Roles;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::units::CpuList;

use crate::cli::{ChaseRunArgs, CommonArgs, CtxswitchRunArgs, ResponseRunArgs, SourceArg};
use crate::error::bad;
use crate::net::hosts::NetChange;
use crate::probe::chase::{self, Chase, ChaseArgs};
use crate::probe::ctxswitch::{self, CtxswitchArgs};
use crate::probe::response::{self, Response, ResponseArgs, ResponseSource};
use crate::system::host;
use crate::system::journal::{Journal, Undo};
use crate::system::settings::{apply_all, irq_settings, restore_all, Settings};

use super::event::{EventProbe, ProbeReport};
use super::{plan_common, probe_cpu, EventFactory, RunPlan};
use jitterlab_core::event::EventRecorder;

/// The chase, prepared on the probe thread; IRQ settings of `--roles`.
pub struct ChaseProbe {
    root: PathBuf,
    args: ChaseArgs,
    chase: Option<Chase>,
    settings: Settings,
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

    fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        self.chase = None;
        restore_all(&mut self.settings, root, journal)
            .unwrap_or_else(|e| vec![format!("restoring the IRQ role failed: {e:#}")])
    }
}

/// Two threads handing a token back and forth.
pub struct CtxswitchProbe {
    args: CtxswitchArgs,
}

impl CtxswitchProbe {
    /// The probe for these (validated) arguments.
    pub fn new(args: CtxswitchArgs) -> CtxswitchProbe {
        CtxswitchProbe { args }
    }
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

/// Makes the response probe, journaling its namespaces first.
pub fn make_response(args: ResponseArgs, journal: &mut Journal) -> Result<Box<dyn EventProbe>> {
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

/// Makes the chase probe, moving every IRQ to `irq_cpu` first when asked.
pub fn make_chase(
    root: &Path,
    args: ChaseArgs,
    irq_cpu: Option<usize>,
    journal: &mut Journal,
) -> Result<Box<dyn EventProbe>> {
    let mut settings: Settings = Vec::new();
    if let Some(irq) = irq_cpu {
        let (s, warnings) = irq_settings(&[irq], [args.cpu].into_iter().collect());
        for w in warnings {
            crate::output::errln!("jitterlab: warning: {w}");
        }
        settings = s;
        for r in apply_all(&mut settings, root, journal)? {
            for n in &r.notes {
                crate::output::errln!("jitterlab: {}: {n}", r.name);
            }
        }
    }
    Ok(Box::new(ChaseProbe {
        root: root.to_path_buf(),
        args,
        chase: None,
        settings,
    }))
}

/// Refuses the shared flags that mean nothing to an event probe.
fn refuse_periodic_flags(kind: ProbeKind, c: &CommonArgs) -> Result<()> {
    let name = kind.name();
    let refused = [
        (c.break_trace.is_some(), "--break-trace"),
        (c.histogram.is_some(), "--histogram"),
        (c.max_jitter.is_some(), "--max-jitter"),
        (c.max_exec.is_some(), "--max-exec"),
    ];
    for (given, flag) in refused {
        if given {
            return Err(bad(format!(
                "{flag} applies to the periodic probes (cyclic, wakeup); remove it from run {name}"
            )));
        }
    }
    Ok(())
}

/// Validates `jitterlab run chase`.
pub fn plan_chase<'a>(
    root: &'a Path,
    db: &Path,
    a: &ChaseRunArgs,
) -> Result<(RunPlan, EventFactory<'a>)> {
    let c = &a.common;
    refuse_periodic_flags(ProbeKind::Chase, c)?;
    if c.max_latency.is_some() {
        return Err(bad(
            "--max-latency does not apply to a chase: it measures CPU cycles, not a latency",
        ));
    }
    if c.cycles.is_some() {
        return Err(bad(
            "a chase counts samples: use --samples instead of --cycles",
        ));
    }
    let online = host::online_cpus(root)?;
    let roles: Option<Roles> = match &a.roles {
        Some(r) => Some(r.parse().map_err(|e| bad(format!("--roles: {e}")))?),
        None => None,
    };
    let cpu = probe_cpu(&online, roles.as_ref().map(|r| r.test).or(a.cpu), "--cpu")?;
    let mut neighbours: CpuList = online.iter().filter(|&c| c != cpu).collect();
    let mut irq = None;
    if let Some(r) = &roles {
        for (role, c) in [("neighbour", r.neighbour), ("irq", r.irq)] {
            if let Some(c) = c.filter(|c| !online.contains(*c)) {
                return Err(bad(format!(
                    "--roles: the {role} CPU {c} is not online (online CPUs: {online})"
                )));
            }
        }
        if let Some(n) = r.neighbour {
            neighbours = [n].into_iter().collect();
        }
        irq = r.irq;
    }
    if a.samples == Some(0) {
        return Err(bad("--samples must be at least 1"));
    }
    if let Some(bytes) = a.buffer {
        super::check_machine_memory(root, "--buffer ", bytes)?;
    }
    let mut plan = plan_common(
        (!c.no_db).then_some(db),
        ProbeKind::Chase,
        0,
        vec![cpu],
        None,
        c,
    )?;
    // A chase ends by its sample count unless a duration was given.
    plan.params.duration_ns = c.duration;
    plan.params.cycles = a.samples;
    let args = ChaseArgs {
        cpu,
        neighbours,
        buffer: a.buffer,
        iterations: a.iterations,
        samples: a.samples,
        duration_ns: c.duration,
        chase_length: a.chase_length,
        ..ChaseArgs::default()
    };
    Ok((
        plan,
        Box::new(move |journal: &mut Journal| make_chase(root, args, irq, journal)),
    ))
}

/// Validates `jitterlab run ctxswitch`.
pub fn plan_ctxswitch<'a>(
    root: &'a Path,
    db: &Path,
    a: &CtxswitchRunArgs,
) -> Result<(RunPlan, EventFactory<'a>)> {
    let c = &a.common;
    refuse_periodic_flags(ProbeKind::Ctxswitch, c)?;
    let online = host::online_cpus(root)?;
    let cpu = probe_cpu(&online, a.cpu, "--cpu")?;
    let plan = plan_common(
        (!c.no_db).then_some(db),
        ProbeKind::Ctxswitch,
        a.interval,
        vec![cpu],
        None,
        c,
    )?;
    let args = CtxswitchArgs {
        cpu,
        priority: plan
            .params
            .priority
            .unwrap_or(jitterlab_core::defaults::PRIORITY),
        count: c.cycles,
        duration: plan.params.duration_ns,
        interval: a.interval,
    };
    ctxswitch::validate(&args, &online)?;
    Ok((
        plan,
        Box::new(move |_: &mut Journal| {
            Ok(Box::new(CtxswitchProbe { args }) as Box<dyn EventProbe>)
        }),
    ))
}

/// Validates `jitterlab run response`.
pub fn plan_response<'a>(
    root: &'a Path,
    db: &Path,
    a: &ResponseRunArgs,
) -> Result<(RunPlan, EventFactory<'a>)> {
    let c = &a.common;
    refuse_periodic_flags(ProbeKind::Response, c)?;
    let online = host::online_cpus(root)?;
    let cpu = probe_cpu(&online, a.cpu, "--cpu")?;
    let event_cpu = match a.event_cpu {
        Some(e) => e,
        None => online.iter().find(|&e| e != cpu).unwrap_or(cpu),
    };
    let plan = plan_common(
        (!c.no_db).then_some(db),
        ProbeKind::Response,
        a.interval,
        vec![cpu],
        None,
        c,
    )?;
    let args = ResponseArgs {
        cpu,
        event_cpu,
        priority: plan
            .params
            .priority
            .unwrap_or(jitterlab_core::defaults::PRIORITY),
        source: match a.source {
            SourceArg::Eventfd => ResponseSource::Eventfd,
            SourceArg::Udp => ResponseSource::Udp,
        },
        interval: a.interval,
        count: c.cycles,
        duration: plan.params.duration_ns,
    };
    for w in response::validate(&args, &online)? {
        crate::output::errln!("jitterlab: warning: {w}");
    }
    response::check_environment(&args)?;
    Ok((
        plan,
        Box::new(move |journal: &mut Journal| make_response(args, journal)),
    ))
}
