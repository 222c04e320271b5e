//! The `roundtrip` probe: [Red Hat controls]'s screw-to-screw round trip over OPC UA
//! PubSub between an I/O simulator and a controller (a soft PLC), checked
//! against the worst-case budget computed from the loop periods.
//!
//! **Both ends here** (`--role both`, the default): the I/O simulator runs
//! in namespace `jl<pid>io` and the controller in `jl<pid>pl`, joined by a
//! veth pair (`jitterlab_core::roundtrip::PAIR`, made by `net::hosts`, journaled first, deleted on
//! teardown and on drop). The controller's task is the measuring thread
//! (the runner pinned it to the probe CPU and made it SCHED_FIFO); the I/O
//! simulator is a helper thread on `--io-cpu` at the same priority. Their
//! messages are real UADP (`jitterlab_core::uadp`) over UDP multicast
//! (`opc.udp://224.0.0.22:4840` in, `:4841` out) or raw Ethernet
//! (`opc.eth://01-00-5E-00-00-01` in, `…-02` out), through
//! `net::pubsub`'s sockets, each message stamped by the kernel on receive.
//!
//! **The samples** (the descriptor's metric table, `ROUNDTRIP`):
//!
//! | metric | from | when |
//! |---|---|---|
//! | `screw-to-screw` | T1 → T4 (the simulator's monotonic clock) | each completed round trip |
//! | `controller` | T2 → T3 (the controller's realtime clock) | each cycle that published a new input's output |
//! | `t1-t2` | T1 → T2 (realtime) | each round trip, both ends here |
//! | `t3-t4rx` | T3 → T4rx (realtime) | each round trip, both ends here |
//! | `latency`, `jitter`, `exec` | the controller task's release schedule | every cycle |
//!
//! The I/O thread hands each completed round trip (T1, T4, T4rx) to the
//! controller thread through a bounded lock-free queue; the controller
//! thread, the only one to push into the recorder, matches it with the T2
//! and T3 it measured for the same marker and records it after its cycle.
//!
//! **The budget** (`jitterlab_core::roundtrip::Budget`): OPC UA (the I/O
//! period) ×2 + network allowance ×2 + controller period + scan, or
//! `--budget`. Every screw-to-screw sample is counted against it
//! (`BudgetVerdict`: how many over, which, where the distribution
//! clusters); the budget is the probe's latency limit, so a sample over it
//! fails the run (exit 1), and its "% over" threshold unless another is
//! given.
//!
//! **One role per machine** (`--role io|controller --interface IF`): the
//! measuring thread runs that role alone in this namespace on `IF`; without
//! a shared clock only T1→T4 (io) or T2→T3 and the task's cycle (controller)
//! are measured, and the result says so.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::cycle::CycleSample;
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_core::result::RunResult;
use jitterlab_core::roundtrip::{
    Budget, BudgetVerdict, ChangeSchedule, Completed, Handled, Loss, Role, RoundtripParams,
    Transport,
};
use jitterlab_core::spec::{CellPlan, Spec};
use jitterlab_core::uadp::Address;
use jitterlab_core::units::{format_ns, CpuList};
use serde::Serialize;

use super::helper_thread::{
    check_cpu, check_priority, own_thread_warnings, setup_helper_thread, HELPER_STACK,
};
use super::plan::{fifo_priority, RunPlan};
use super::scan::Scan;
use super::{Cell, Prepared, Probe, Probes, Recorder, Report, ScheduleCounts, Start};
use crate::error::bad;
use crate::net::hosts::{check_kind_environment, NetChange, NetnsPair};
use crate::net::mac::mac_of;
use crate::system::journal::{Journal, Undo};
use jitterlab_core::roundtrip::PAIR;

pub mod container;
pub mod controller;
pub mod flags;
pub mod handoff;
pub mod io;
pub(crate) mod report;
pub mod wire;

use controller::{ControllerCounts, ControllerLoop};
use io::{IoCounts, IoLoop};
use wire::{wire, Link, Wire};

/// Completed round trips the I/O thread can hand over before the
/// controller thread takes them (it takes them every cycle).
const COMPLETIONS: usize = 4096;
/// T2/T3 pairs the controller thread remembers to match completions with.
const HANDLED: usize = 64;

/// What the probe is asked for, from the cell.
#[derive(Debug, Clone)]
pub struct RoundtripArgs {
    /// The controller's CPU (the probe CPU).
    pub cpu: usize,
    /// The I/O simulator's CPU.
    pub io_cpu: usize,
    /// SCHED_FIFO priority of both loops.
    pub priority: i32,
    /// The controller's period, ns.
    pub period_ns: u64,
    /// How long to measure, ns.
    pub duration_ns: Option<u64>,
    /// The probe's own parameters.
    pub params: RoundtripParams,
}

/// The probe's arguments for one cell.
pub fn args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> Result<RoundtripArgs> {
    let probe = &spec.probes[cell.probe];
    let params = probe
        .params
        .get::<RoundtripParams>()
        .context("roundtrip arguments of a probe that is no roundtrip probe")?
        .clone();
    let cpu = plan.cpus[0];
    let neighbours: CpuList = spec.neighbour_cpus(cell).into_iter().collect();
    Ok(RoundtripArgs {
        cpu,
        io_cpu: params
            .io_cpu
            .or_else(|| neighbours.iter().next())
            .unwrap_or(cpu),
        priority: fifo_priority(plan),
        period_ns: probe.period_ns,
        duration_ns: plan.params.duration_ns,
        params,
    })
}

/// Both directions' wires, checked (bad input names the flag).
pub fn wires(p: &RoundtripParams) -> Result<(Wire, Wire)> {
    let input = wire(&p.input, p.transport, "input")?;
    let output = wire(&p.output, p.transport, "output")?;
    if input.marker_type != output.marker_type {
        return Err(bad(format!(
            "--map: input field {} is a {} and output field {} a {}; the controller copies one to the other, so give fields of one type",
            p.input.marker_field,
            input.marker_type.name(),
            p.output.marker_field,
            output.marker_type.name()
        )));
    }
    Ok((input, output))
}

/// Refuses (as bad input) CPUs that are not online, a bad priority and bad
/// wire settings; warns when both loops share a CPU.
pub fn validate(args: &RoundtripArgs, online: &CpuList) -> Result<Vec<String>> {
    check_cpu(args.cpu, online, "--cpu")?;
    check_cpu(args.io_cpu, online, "--io-cpu")?;
    check_priority(args.priority)?;
    wires(&args.params)?;
    let mut warnings = Vec::new();
    if args.params.role == Role::Both && args.cpu == args.io_cpu {
        warnings.push(format!(
            "the I/O simulator shares CPU {} with the controller (no other CPU is online): each loop delays the other",
            args.cpu
        ));
    }
    Ok(warnings)
}

/// Refuses, before anything changes, what would make set-up fail: for
/// both ends here, not root or no `ip`; for one role, an interface that
/// does not exist (looked up under the sysroot `root`).
pub fn check_environment(root: &Path, args: &RoundtripArgs) -> Result<()> {
    match (&args.params.role, &args.params.interface) {
        (Role::Both, _) => check_kind_environment(&PAIR),
        (_, Some(ifname)) => {
            if root.join("sys/class/net").join(ifname).exists() {
                Ok(())
            } else {
                Err(bad(format!(
                    "--interface {ifname}: no such network interface; list them with `ip link`"
                )))
            }
        }
        (role, None) => Err(bad(format!("--role {} needs --interface IF", role.name()))),
    }
}

/// The probe of a cell: its namespaces (journaled first) and sockets, made
/// now.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let args = args(cell.spec, cell.cell, cell.plan)?;
    let (input, output) = wires(&args.params)?;
    let mut journaled = Vec::new();
    let eth = args.params.transport == Transport::Eth;
    let made = (|| -> Result<Ends> {
        match (&args.params.role, &args.params.interface) {
            (Role::Both, _) => {
                let pair = NetnsPair::setup(PAIR, &mut |change: &NetChange| {
                    let NetChange::Netns(name) = change;
                    journaled.push(journal.record(Undo::Netns { name: name.clone() })?);
                    Ok(())
                })?;
                let (io_ns, pl_ns) = (pair.netns_a().to_string(), pair.netns_b().to_string());
                let mac = |ns: &str, ifname: &str| -> Result<Option<[u8; 6]>> {
                    eth.then(|| mac_of(Some(ns), ifname)).transpose()
                };
                let io_mac = mac(&io_ns, pair.veth_a())?;
                let io_link =
                    Link::open(Some(&io_ns), pair.veth_a(), &input, &output, io_mac, false)
                        .context("the I/O simulator's sockets")?;
                // The controller: in a container joined to its namespace
                // (deployment `container`), else on a thread of ours there.
                let (controller, container, where_) = if cell.cell.in_container() {
                    let end = container::prepare_end(cell, &pl_ns, pair.veth_b(), journal)?;
                    (None, Some(end), format!("a container in {pl_ns}"))
                } else {
                    let pl_mac = mac(&pl_ns, pair.veth_b())?;
                    let pl_link =
                        Link::open(Some(&pl_ns), pair.veth_b(), &output, &input, pl_mac, true)
                            .context("the controller's sockets")?;
                    (Some(pl_link), None, pl_ns.clone())
                };
                crate::output::errln!(
                    "jitterlab: roundtrip: I/O simulator in namespace {io_ns}, controller in {where_}, over a veth pair ({})",
                    args.params.transport.name()
                );
                Ok(Ends {
                    io: Some(io_link),
                    controller,
                    container,
                    pair: Some(pair),
                })
            }
            (Role::Io, Some(ifname)) => {
                let mac = eth.then(|| mac_of(None, ifname)).transpose()?;
                Ok(Ends {
                    io: Some(Link::open(None, ifname, &input, &output, mac, false)?),
                    controller: None,
                    container: None,
                    pair: None,
                })
            }
            (Role::Controller, Some(ifname)) => {
                let mac = eth.then(|| mac_of(None, ifname)).transpose()?;
                Ok(Ends {
                    io: None,
                    controller: Some(Link::open(None, ifname, &output, &input, mac, true)?),
                    container: None,
                    pair: None,
                })
            }
            (role, None) => Err(bad(format!("--role {} needs --interface IF", role.name()))),
        }
    })();
    let ends = match made {
        Ok(e) => e,
        Err(e) => {
            // The pair (if made) was dropped, which deleted its namespaces.
            for line in journal.done_all(journaled) {
                crate::output::errln!("jitterlab: warning: {line}");
            }
            return Err(e);
        }
    };
    let seed = args
        .params
        .seed
        .unwrap_or_else(jitterlab_sys::rx_timestamp::realtime_ns);
    Ok(Probes::threads(vec![Box::new(RoundtripProbe {
        budget: args.params.budget(args.period_ns),
        args,
        input,
        output,
        ends: Some(ends),
        journaled,
        seed,
        scan: None,
    })]))
}

/// The sockets of the ends that run here, and the namespaces of both.
struct Ends {
    io: Option<Link>,
    controller: Option<Link>,
    /// The controller in a container (deployment `container`).
    container: Option<container::ContainerEnd>,
    /// Field order is drop order: the sockets close before the namespaces go.
    pair: Option<NetnsPair>,
}

/// The round trip of one cell.
pub struct RoundtripProbe {
    args: RoundtripArgs,
    budget: Budget,
    input: Wire,
    output: Wire,
    ends: Option<Ends>,
    journaled: Vec<u64>,
    seed: u64,
    scan: Option<Scan>,
}

/// What a roundtrip run reports beyond its metrics (the result's
/// `detail`).
#[derive(Debug, Serialize)]
struct Detail {
    role: &'static str,
    transport: &'static str,
    input_url: String,
    output_url: String,
    /// `shared` when both ends read one clock (T1→T2 and T3→T4rx are
    /// measured), else `separate`.
    clock: &'static str,
    budget_terms: String,
    budget_formula: String,
    budget: BudgetVerdict,
    seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    io: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    controller: Option<serde_json::Value>,
    stamps: Vec<String>,
    /// The controller's container (deployment `container`).
    #[serde(skip_serializing_if = "Option::is_none")]
    container: Option<serde_json::Value>,
}

/// One end's counts with their loss beside them (`loss`: `lost` and `gaps`,
/// or `null` and the reason it is `not_measurable`).
fn with_loss(mut end: serde_json::Value) -> serde_json::Value {
    let loss = Loss::of_end(&end);
    if let Some(o) = end.as_object_mut() {
        o.insert(
            "loss".into(),
            serde_json::to_value(loss).expect("a Loss serializes"),
        );
    }
    end
}

/// A container cell's I/O loop events: completions into the books, and at
/// every tick the controller's cycles from its container.
struct ContainerEvents<'a> {
    books: &'a mut Books,
    recorder: &'a mut Recorder,
    samples: &'a mut handoff::Receiver,
    sched: &'a mut ScheduleCounts,
}

impl io::IoEvents for ContainerEvents<'_> {
    fn completed(&mut self, c: Completed) -> bool {
        self.books.completion(self.recorder, c, true);
        true
    }

    fn tick(&mut self) {
        let (books, rec, sched) = (&mut *self.books, &mut *self.recorder, &mut *self.sched);
        self.samples.poll(&mut |r| books.record(rec, &r, sched));
    }
}

/// What stamps one end's sockets had, for the result.
fn stamp_line(end: &str, link: &Link) -> String {
    let (rx, tx) = link.stamps();
    format!("{end}: subscriber {rx}; publisher {tx}")
}

/// The controller thread's books: the budget verdict and the T2/T3 of the
/// last changes it handled, to match the completions with.
struct Books {
    verdict: BudgetVerdict,
    handled: [Option<Handled>; HANDLED],
    next: usize,
    completions: u64,
    t0: u64,
    last_at: u64,
}

impl Books {
    fn handled(&mut self, h: Handled) {
        self.handled[self.next % HANDLED] = Some(h);
        self.next += 1;
    }

    /// Records one completed round trip.
    fn completion(&mut self, rec: &mut Recorder, c: Completed, shared_clock: bool) {
        let s2s = c.screw_to_screw_ns();
        let since = c.change.t1_ns.saturating_sub(self.t0);
        self.verdict.add(self.completions, since, s2s);
        let h = shared_clock
            .then(|| {
                self.handled
                    .iter()
                    .flatten()
                    .find(|h| h.marker == c.change.marker)
                    .copied()
            })
            .flatten();
        let t1_t2 = h.map(|h| h.t2_real_ns as i64 - c.change.t1_real_ns as i64);
        let t3_t4rx = match (h, c.t4_rx_real_ns) {
            (Some(h), Some(rx)) => Some(rx as i64 - h.t3_real_ns as i64),
            _ => None,
        };
        self.last_at = self.last_at.max(c.t4_ns);
        rec.push(&Sample {
            index: self.completions,
            at: self.last_at,
            values: slots([Some(s2s as i64), None, t1_t2, t3_t4rx]),
        });
        self.completions += 1;
    }

    /// Records one cycle the controller's container handed over, counting
    /// its schedule.
    fn record(&mut self, rec: &mut Recorder, r: &handoff::CycleRecord, sched: &mut ScheduleCounts) {
        sched.cycles += 1;
        sched.skipped += r.skipped;
        sched.releases = sched.cycles + sched.skipped;
        sched.overruns += u64::from(r.overrun);
        self.push_cycle(rec, r);
    }

    /// Records one cycle of the controller's task.
    fn cycle(&mut self, rec: &mut Recorder, s: &CycleSample, h: Option<Handled>) {
        self.push_cycle(rec, &handoff::CycleRecord::of(s, h));
    }

    /// Pushes one cycle of the controller's task, wherever it ran.
    fn push_cycle(&mut self, rec: &mut Recorder, r: &handoff::CycleRecord) {
        if let Some(h) = r.handled {
            self.handled(h);
        }
        self.last_at = self.last_at.max(r.start);
        rec.push(&Sample {
            index: r.cycle,
            at: self.last_at,
            values: slots([
                None,
                r.handled.map(|h| h.controller_ns() as i64),
                None,
                None,
                Some(r.latency),
                r.jitter,
                Some(r.exec),
            ]),
        });
    }
}

impl Probe for RoundtripProbe {
    fn prepare(&mut self) -> Result<Prepared> {
        let ends = self.ends.as_ref().context("the roundtrip probe is gone")?;
        if ends.container.is_some() {
            // The controller has the probe CPU, in its container; this
            // thread is the I/O simulator's, on its own CPU.
            jitterlab_sys::pin_to_cpu(self.args.io_cpu)
                .with_context(|| format!("moving the I/O simulator to CPU {}", self.args.io_cpu))?;
            return Ok(Prepared::default());
        }
        if ends.controller.is_none() || self.args.params.scan_ns == 0 {
            return Ok(Prepared::default());
        }
        let mut scan = Scan::new(self.args.params.working_set_bytes);
        let cal = scan.calibrate(self.args.cpu, self.args.params.scan_ns);
        self.scan = Some(scan);
        Ok(Prepared {
            calibration_note: cal.note.clone(),
            calibration: Some(cal),
            ..Prepared::default()
        })
    }

    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let ends = self.ends.as_mut().context("the roundtrip probe is gone")?;
        let a = &self.args;
        let mut ran = Ran {
            warnings: match ends.container {
                Some(_) => own_thread_warnings("I/O simulator", a.io_cpu, a.priority),
                None => own_thread_warnings("controller", a.cpu, a.priority),
            },
            ..Ran::default()
        };
        let mut round = Round::new(
            a,
            &self.budget,
            (&self.input, &self.output),
            self.seed,
            start,
        );
        match (ends.io.take(), ends.controller.take()) {
            (Some(io_link), Some(pl_link)) => {
                let links = (io_link, pl_link);
                round.both_ends(ends, links, self.scan.take(), recorder, &mut ran)?;
            }
            (Some(io_link), None) if ends.container.is_some() => {
                round.with_container(ends, io_link, recorder, &mut ran)?;
            }
            (Some(io_link), None) => round.io_alone(ends, io_link, recorder, &mut ran),
            (None, Some(pl_link)) => {
                round.controller_alone(ends, pl_link, self.scan.take(), recorder, &mut ran)?;
            }
            (None, None) => unreachable!("build makes at least one end"),
        }
        round.findings(&mut ran);
        self.report(round.books, ran)
    }

    fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(mut ends) = self.ends.take() {
            if let Some(c) = ends.container.as_mut() {
                lines.extend(c.teardown(root, journal));
            }
            drop(ends.io);
            drop(ends.controller);
            if let Some(pair) = ends.pair {
                match pair.teardown() {
                    Ok(l) if l.is_empty() => {}
                    Ok(l) => lines.push(format!("roundtrip namespaces deleted: {}", l.join(", "))),
                    Err(e) => lines.push(format!("deleting the roundtrip namespaces: {e:#}")),
                }
            }
        }
        lines.extend(journal.done_all(self.journaled.drain(..)));
        lines
    }
}

/// What one measurement of the round trip shares, whichever ends run
/// here: the probe's arguments and wires, the books every sample goes
/// into, and the run's bounds.
struct Round<'a> {
    args: &'a RoundtripArgs,
    input: &'a Wire,
    output: &'a Wire,
    /// The common first release.
    t0: u64,
    /// Raised to end the measurement.
    stop: &'a AtomicBool,
    books: Books,
    /// How long an input change may take to come back before it is given
    /// up: four budgets, at least 100 ms.
    give_up_ns: u64,
    /// The end of a run of a duration (CLOCK_MONOTONIC).
    end: Option<u64>,
    /// The controller's releases in a run of a duration.
    releases: Option<u64>,
    changes: ChangeSchedule,
    /// Both ends read one clock (`--role both`).
    shared_clock: bool,
}

/// What the ends that ran here measured, for the report.
#[derive(Default)]
struct Ran {
    warnings: Vec<String>,
    stamps: Vec<String>,
    io: Option<IoCounts>,
    controller: Option<ControllerCounts>,
    schedule: Option<ScheduleCounts>,
    /// The controller's counts as its container reported them.
    container_controller: Option<serde_json::Value>,
    /// The controller's container (deployment `container`).
    container: Option<serde_json::Value>,
}

impl<'a> Round<'a> {
    /// The books and bounds of a measurement released at `start`.
    fn new(
        args: &'a RoundtripArgs,
        budget: &Budget,
        (input, output): (&'a Wire, &'a Wire),
        seed: u64,
        start: &Start<'a>,
    ) -> Round<'a> {
        let p = &args.params;
        Round {
            args,
            input,
            output,
            t0: start.t0,
            stop: start.stop,
            books: Books {
                verdict: BudgetVerdict::new(budget.clone()),
                handled: [None; HANDLED],
                next: 0,
                completions: 0,
                t0: start.t0,
                last_at: start.t0,
            },
            give_up_ns: budget.total_ns().saturating_mul(4).max(100_000_000),
            end: args.duration_ns.map(|d| start.t0 + d),
            releases: args.duration_ns.map(|d| d.div_ceil(args.period_ns)),
            changes: ChangeSchedule::new(seed, p.io_period_ns, args.period_ns + p.io_period_ns),
            shared_clock: p.role == Role::Both,
        }
    }

    /// The I/O simulator's loop on `link`.
    fn io_loop(&self, link: Link) -> IoLoop {
        IoLoop {
            link,
            input: self.input.clone(),
            output: self.output.clone(),
            period_ns: self.args.params.io_period_ns,
            changes: self.changes.clone(),
            give_up_ns: self.give_up_ns,
        }
    }

    /// The controller's loop on `link`, scanning with `scan`.
    fn controller_loop(&self, link: Link, scan: Option<Scan>) -> ControllerLoop {
        ControllerLoop {
            link,
            input: self.input.clone(),
            output: self.output.clone(),
            period_ns: self.args.period_ns,
            scan,
        }
    }

    /// Both ends here: the I/O simulator on its helper thread hands each
    /// completed round trip to the controller on this thread, which
    /// records it after its cycle.
    fn both_ends(
        &mut self,
        ends: &mut Ends,
        (io_link, pl_link): (Link, Link),
        scan: Option<Scan>,
        recorder: &mut Recorder,
        ran: &mut Ran,
    ) -> Result<()> {
        ran.stamps.push(stamp_line("I/O simulator", &io_link));
        ran.stamps.push(stamp_line("controller", &pl_link));
        let mut io = self.io_loop(io_link);
        let mut ctl = self.controller_loop(pl_link, scan);
        let (mut tx, mut rx) = rtrb::RingBuffer::<Completed>::new(COMPLETIONS);
        let io_stop = AtomicBool::new(false);
        let (io_cpu, prio) = (self.args.io_cpu, self.args.priority);
        let (t0, end, releases, stop) = (self.t0, self.end, self.releases, self.stop);
        let shared_clock = self.shared_clock;
        let books = &mut self.books;
        let (counts, io_warnings) = std::thread::scope(|s| -> Result<_> {
            let io_thread = std::thread::Builder::new()
                .name("jl-io-sim".into())
                .stack_size(HELPER_STACK)
                .spawn_scoped(s, || {
                    let w = setup_helper_thread("I/O simulator", io_cpu, prio);
                    let c = io.run(t0, end, &io_stop, &mut |c| tx.push(c).is_ok());
                    (c, w)
                })
                .context("starting the I/O simulator's thread")?;
            let (c, sched) = ctl.run(t0, releases, stop, &mut |sample, h| {
                while let Ok(done) = rx.pop() {
                    books.completion(recorder, done, shared_clock);
                }
                books.cycle(recorder, sample, h);
                true
            });
            io_stop.store(true, Relaxed);
            let (ioc, w) = io_thread
                .join()
                .map_err(|_| anyhow!("the I/O simulator's thread panicked"))?;
            while let Ok(done) = rx.pop() {
                books.completion(recorder, done, shared_clock);
            }
            Ok(((ioc, c, sched), w))
        })?;
        ran.warnings.extend(io_warnings);
        ran.io = Some(counts.0);
        ran.controller = Some(counts.1);
        ran.schedule = Some(counts.2);
        ends.io = Some(io.link);
        ends.controller = Some(ctl.link);
        Ok(())
    }

    /// The I/O simulator here and the controller in its container: the
    /// container starts, sets its task up and sends its first cycle; the
    /// round trips start once the task has settled.
    fn with_container(
        &mut self,
        ends: &mut Ends,
        io_link: Link,
        recorder: &mut Recorder,
        ran: &mut Ran,
    ) -> Result<()> {
        ran.stamps.push(stamp_line("I/O simulator", &io_link));
        let ce = ends.container.as_mut().expect("checked");
        let mut io = self.io_loop(io_link);
        let a = self.args;
        let stop = self.stop;
        let books = &mut self.books;
        // The controller first: its container starts, sets its task
        // up and sends its first cycle; the round trips start then.
        let outcome = (|| -> Result<(IoCounts, RunResult, ScheduleCounts)> {
            ce.start(stop)?;
            let mut sched = ScheduleCounts::default();
            let mut first = false;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !first && !stop.load(Relaxed) {
                ce.samples.poll(&mut |r| {
                    first = true;
                    books.record(recorder, &r, &mut sched);
                });
                if std::time::Instant::now() > deadline {
                    bail!("the controller in its container sent no cycle within 60 s");
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // Let the freshly started task settle for a few of its
            // periods before the first change.
            let settle = jitterlab_sys::monotonic_ns() + 4 * a.period_ns;
            while jitterlab_sys::monotonic_ns() < settle && !stop.load(Relaxed) {
                ce.samples
                    .poll(&mut |r| books.record(recorder, &r, &mut sched));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let t0 = jitterlab_sys::monotonic_ns();
            let end = a.duration_ns.map(|d| t0 + d);
            let mut events = ContainerEvents {
                books,
                recorder,
                samples: &mut ce.samples,
                sched: &mut sched,
            };
            let c = io.run(t0, end, stop, &mut events);
            let result = ce.finish(&mut |r| books.record(recorder, &r, &mut sched))?;
            Ok((c, result, sched))
        })();
        ends.io = Some(io.link);
        let (c, inner, sched) = outcome?;
        ran.io = Some(c);
        ran.schedule = Some(sched);
        if let Some(d) = &inner.detail {
            ran.container_controller = d.get("controller").cloned();
            for s in d
                .get("stamps")
                .and_then(|s| s.as_array())
                .into_iter()
                .flatten()
            {
                if let Some(s) = s.as_str() {
                    ran.stamps.push(format!("{s} (in the container)"));
                }
            }
        }
        let mut cd = ce.detail();
        cd["realtime"] = serde_json::to_value(&inner.realtime)?;
        cd["calibration"] =
            serde_json::to_value(inner.threads.first().and_then(|t| t.calibration.clone()))?;
        cd["io_cpu"] = a.io_cpu.into();
        ran.container = Some(cd);
        ran.warnings
            .extend(inner.warnings.iter().map(|w| format!("container: {w}")));
        Ok(())
    }

    /// The I/O simulator alone (`--role io`): T1→T4 of each round trip.
    fn io_alone(&mut self, ends: &mut Ends, io_link: Link, recorder: &mut Recorder, ran: &mut Ran) {
        ran.stamps.push(stamp_line("I/O simulator", &io_link));
        let mut io = self.io_loop(io_link);
        let books = &mut self.books;
        let c = io.run(self.t0, self.end, self.stop, &mut |c| {
            books.completion(recorder, c, false);
            true
        });
        ran.io = Some(c);
        ends.io = Some(io.link);
    }

    /// The controller alone (`--role controller`): T2→T3 and the task's
    /// cycle, each cycle handed to the host's samples pipe when asked.
    fn controller_alone(
        &mut self,
        ends: &mut Ends,
        pl_link: Link,
        scan: Option<Scan>,
        recorder: &mut Recorder,
        ran: &mut Ran,
    ) -> Result<()> {
        ran.stamps.push(stamp_line("controller", &pl_link));
        let mut handoff = match &self.args.params.samples_to {
            Some(path) => Some(handoff::Sender::open(Path::new(path))?),
            None => None,
        };
        let mut ctl = self.controller_loop(pl_link, scan);
        let books = &mut self.books;
        let (c, sched) = ctl.run(self.t0, self.releases, self.stop, &mut |sample, h| {
            if let Some(s) = handoff.as_mut() {
                s.send(&handoff::CycleRecord::of(sample, h));
            }
            books.cycle(recorder, sample, h);
            true
        });
        if let Some(s) = &handoff {
            if s.dropped > 0 {
                ran.warnings.push(format!(
                    "{} controller cycles found the host's samples pipe full and were not handed over",
                    s.dropped
                ));
            }
        }
        ran.controller = Some(c);
        ran.schedule = Some(sched);
        ends.controller = Some(ctl.link);
        Ok(())
    }

    /// The warnings of what was measured: samples over the budget, changes
    /// given up, and what one role per machine cannot measure.
    fn findings(&self, ran: &mut Ran) {
        let v = &self.books.verdict;
        if v.over > 0 {
            ran.warnings.push(format!(
                "{} of {} screw-to-screw samples went beyond the budget of {} (worst first listed at {} after the start)",
                v.over,
                v.samples,
                format_ns(v.budget_ns as i64),
                format_ns(v.over_samples[0].since_start_ns as i64)
            ));
        }
        if let Some(c) = &ran.io {
            if c.lost > 0 {
                ran.warnings.push(format!(
                    "{} input changes never came back within {} and were given up",
                    c.lost,
                    format_ns(self.give_up_ns as i64)
                ));
            }
        }
        if !self.shared_clock && self.args.params.samples_to.is_none() {
            ran.warnings.push(
                "one role per machine: no shared clock, so only T1→T4 (io) or T2→T3 (controller) is measured"
                    .into(),
            );
        }
    }
}

impl RoundtripProbe {
    /// The report of a measurement: its detail (the wires, the clock, the
    /// budget's verdict, each end's counts) and its warnings.
    fn report(&self, books: Books, ran: Ran) -> Result<Report> {
        let p = &self.args.params;
        let url = |w: &Wire| match w.address {
            Address::Udp {
                ip: IpAddr::V4(ip),
                port,
            } => format!("opc.udp://{ip}:{port}"),
            Address::Udp { ip, port } => format!("opc.udp://[{ip}]:{port}"),
            Address::Eth { mac, vlan } => {
                let m: Vec<String> = mac.iter().map(|b| format!("{b:02X}")).collect();
                match vlan {
                    Some(v) => format!("opc.eth://{}:{}.{}", m.join("-"), v.id, v.pcp),
                    None => format!("opc.eth://{}", m.join("-")),
                }
            }
        };
        let detail = Detail {
            role: p.role.name(),
            transport: p.transport.name(),
            input_url: url(&self.input),
            output_url: url(&self.output),
            clock: if p.role == Role::Both {
                "shared"
            } else {
                "separate"
            },
            budget_terms: self.budget.names_line(),
            budget_formula: self.budget.formula(),
            budget: books.verdict,
            seed: self.seed,
            io: ran.io.map(serde_json::to_value).transpose()?.map(with_loss),
            controller: match ran.controller {
                Some(c) => Some(serde_json::to_value(c)?),
                None => ran.container_controller,
            }
            .map(with_loss),
            stamps: ran.stamps,
            container: ran.container,
        };
        Ok(Report {
            detail: Some(serde_json::to_value(&detail)?),
            warnings: ran.warnings,
            schedule: ran.schedule,
            ..Report::default()
        })
    }
}

/// How the runner measures the `roundtrip` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Roundtrip,
    build,
    unavailable: None,
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: report::PARTS,
    placement: super::Placement::ProbeCpus,
    task: None,
};

#[cfg(test)]
mod tests;
