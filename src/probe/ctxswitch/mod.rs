//! The `ctxswitch` probe: two SCHED_FIFO threads on one CPU hand a token
//! back and forth; each hand-over's latency is one sample.
//!
//! [Xu EPICS]'s "context switch latency" is the time from one task giving a
//! semaphore to the task waiting on it running. Here the two tasks are the
//! calling thread (the *measuring* thread: the runner pins it to
//! [`CtxswitchArgs::cpu`] and makes it SCHED_FIFO at
//! [`CtxswitchArgs::priority`] before calling [`run`]) and a *partner* thread
//! [`run`] starts on the same CPU with the same policy and priority. The token
//! travels through two eventfds (`ping`: measuring → partner, `pong`: partner
//! → measuring); `jitterlab_sys::eventfd` explains why eventfd and not a futex.
//!
//! **One hand-over.** The giver reads `CLOCK_MONOTONIC` just before its
//! eventfd write (`t_give`); the taker reads it as soon as its blocking read
//! returns (`t_take`). The sample is `t_take − t_give`. Both threads have the
//! same priority, so the woken taker does not preempt the giver: it runs
//! once the giver blocks in its own read. The sample therefore holds what a
//! hand-over between equal-priority tasks costs — the rest of the giver's
//! write, its entry into the wait, the scheduler's switch and the taker's
//! return to user space — the path `perf bench sched pipe` times with a pipe.
//!
//! **Who pushes.** Only the measuring thread pushes into the sink, so the
//! sink needs no synchronisation. The eventfd counter carries the token's
//! value, and with strict alternation a read returns exactly what the other
//! side wrote: each token *is* its giver's `t_give`. The partner stores its
//! `t_take` in one preallocated atomic slot (release) before it writes its
//! own `t_give` into `pong`; the measuring thread, once its read of `pong`
//! returns, loads the slot (acquire) and pushes two samples per round trip:
//! measuring → partner (`slot − its t_give`) and partner → measuring (`its
//! t_take − token`). With an odd `count` the last round's return hand-over
//! is made but not pushed. A sample's `at` is its `t_take`.
//!
//! **Pacing.** With [`CtxswitchArgs::interval`] 0 the round trips run back
//! to back, as `perf bench sched pipe` does — the CPU is then 100 % busy with
//! real-time work, other threads on it starve and RT throttling (when on)
//! shows as a stall of tens of milliseconds. A positive interval starts one
//! round trip per interval from absolute `clock_nanosleep` releases on the
//! measuring thread (a late round skips the releases it missed, never a
//! burst), which is how a control system meets the switch: once per event.
//!
//! **The loop** (design rule 2, with the probe's own event calls exempt)
//! makes the clock reads, the eventfd reads and writes, the sleep when
//! paced, one relaxed load of the stop flag, and the two pushes; it
//! allocates, prints and locks nothing. The partner's loop is a read, two
//! clock reads, a store and a write. The run ends after `count` samples, at
//! the end of `duration` (checked before each round), or when `stop` is
//! raised; then a last token, [`STOP_TOKEN`], ends the partner.
//!
//! What this probe shares with the `response` probe — the helper thread's
//! set-up, the argument checks, the paced sleep, why a run ended — is in
//! [`super::helper_thread`]; the eventfd token calls are in
//! [`super::token`]; the skip rule of a paced run is
//! [`jitterlab_core::cycle::next_release_after`].
//!
//! The design rules and documents cited here are in `docs/design.md`.

pub mod flags;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use jitterlab_core::cycle::next_release_after;
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;
use jitterlab_sys::eventfd::EventFd;
use serde::Serialize;

use super::helper_thread::{
    check_cpu, check_limits, check_priority, own_thread_warnings, setup_helper_thread, sleep_until,
    Ended, HELPER_STACK,
};
use super::plan::{fifo_priority, RunPlan};
use super::token::{read_token, token_now, write_token, FAILED_TOKEN, STOP_TOKEN};
use super::{Probe, Probes, Recorder, Report, Start};
use jitterlab_core::spec::{CellPlan, Spec};

// The metric table lives with the probe kinds: `ProbeKind::Ctxswitch.metrics()`.

/// What the runner asks of the probe (for `jitterlab run ctxswitch` and a
/// bench cell alike), built from a cell of the typed spec in one place
/// ([`args`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtxswitchArgs {
    /// The CPU both threads run on.
    pub cpu: usize,
    /// Their SCHED_FIFO priority (1-99).
    pub priority: i32,
    /// Stop after this many hand-overs (samples).
    pub count: Option<u64>,
    /// Stop once this much time has passed since the first hand-over, ns.
    pub duration: Option<u64>,
    /// One round trip (two hand-overs) per interval, ns; 0: back to back.
    pub interval: u64,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CtxswitchOutcome {
    /// Samples pushed (measured hand-overs).
    pub handovers: u64,
    /// Round trips made (each is two hand-overs; the last may be pushed
    /// only half).
    pub round_trips: u64,
    /// Releases skipped because a round trip ran past the next one (paced
    /// runs only).
    pub skipped: u64,
    /// The partner thread's kernel thread id.
    pub partner_tid: i32,
    /// Why the run ended.
    pub ended: Ended,
    /// What did not go as asked (a thread not pinned, not SCHED_FIFO): the
    /// samples are then not the real-time figure they claim to be.
    pub warnings: Vec<String>,
}

/// Refuses (as bad input) arguments the probe cannot run with: a CPU that
/// is not in `online`, a priority outside 1-99, a zero count or duration.
pub fn validate(args: &CtxswitchArgs, online: &CpuList) -> Result<()> {
    check_cpu(args.cpu, online, "--cpu")?;
    check_priority(args.priority)?;
    check_limits(args.count, args.duration)
}

/// Runs the probe on the calling thread (already pinned to `args.cpu` and
/// SCHED_FIFO at `args.priority`): starts the partner, hands the token over
/// until `count`, `duration` or `stop`, pushes every hand-over into `sink`.
///
/// Fails when the eventfds cannot be made, the partner cannot be started,
/// or an eventfd call fails in the loop (nothing the kernel does to a
/// healthy eventfd).
pub fn run<S: SampleSink>(
    args: &CtxswitchArgs,
    stop: &AtomicBool,
    sink: &mut S,
) -> Result<CtxswitchOutcome> {
    check_priority(args.priority)?;
    check_limits(args.count, args.duration)?;
    let ping = EventFd::new().context("creating the ping eventfd")?;
    let pong = EventFd::new().context("creating the pong eventfd")?;
    let slot = AtomicU64::new(0);
    let mut warnings = own_thread_warnings("measuring thread", args.cpu, args.priority);

    std::thread::scope(|scope| -> Result<CtxswitchOutcome> {
        let (setup_tx, setup_rx) = mpsc::sync_channel(1);
        let (cpu, priority) = (args.cpu, args.priority);
        let (ping, pong, slot) = (&ping, &pong, &slot);
        let partner = std::thread::Builder::new()
            .name(format!("ctxswitch-cpu{cpu}"))
            .stack_size(HELPER_STACK)
            .spawn_scoped(scope, move || {
                let warnings = setup_helper_thread("partner thread", cpu, priority);
                let _ = setup_tx.send((sys::gettid(), warnings));
                let r = partner_loop(ping, pong, slot);
                if r.is_err() {
                    // Wake the measuring thread if it waits for this partner.
                    let _ = write_token(pong, FAILED_TOKEN);
                }
                r
            })
            .context("starting the partner thread")?;
        let Ok((partner_tid, partner_warnings)) = setup_rx.recv() else {
            // The partner died before reporting: join it to surface why.
            return match partner.join() {
                Ok(r) => r
                    .map_err(anyhow::Error::from)
                    .and_then(|()| bail!("the partner thread ended before it was set up")),
                Err(_) => bail!("the partner thread panicked while it was set up"),
            };
        };
        warnings.extend(partner_warnings);

        let looped = measure_loop(args, stop, sink, ping, pong, slot);
        // End the partner whatever happened: it waits in its read of `ping`
        // (the loop only leaves after the partner's answer came back).
        let stopped = write_token(ping, STOP_TOKEN);
        match partner.join() {
            Ok(r) => r.context("the partner thread's eventfd call failed")?,
            Err(_) => bail!("the partner thread panicked"),
        }
        let (handovers, round_trips, skipped, ended) = looped?;
        stopped.context("ending the partner thread")?;
        Ok(CtxswitchOutcome {
            handovers,
            round_trips,
            skipped,
            partner_tid,
            ended,
            warnings,
        })
    })
}

/// The measuring thread's loop; returns (samples, round trips, skipped
/// releases, why it ended).
fn measure_loop<S: SampleSink>(
    args: &CtxswitchArgs,
    stop: &AtomicBool,
    sink: &mut S,
    ping: &EventFd,
    pong: &EventFd,
    slot: &AtomicU64,
) -> Result<(u64, u64, u64, Ended)> {
    let count = args.count.unwrap_or(u64::MAX);
    let start = sys::monotonic_ns();
    let deadline = args.duration.map_or(u64::MAX, |d| start.saturating_add(d));
    let mut release = start;
    let (mut index, mut rounds, mut skipped) = (0u64, 0u64, 0u64);
    let ended = loop {
        if stop.load(Ordering::Relaxed) {
            break Ended::Stopped;
        }
        if index >= count {
            break Ended::Count;
        }
        if args.interval > 0 && rounds > 0 {
            let (next, missed) = next_release_after(release, args.interval, sys::monotonic_ns());
            skipped += missed;
            release = next;
            if release >= deadline {
                break Ended::Duration;
            }
            sleep_until(release);
        }
        let give = token_now();
        if give >= deadline {
            break Ended::Duration;
        }
        write_token(ping, give).context("handing the token to the partner")?;
        let back = read_token(pong).context("waiting for the partner's token")?;
        if back == FAILED_TOKEN {
            bail!("the partner thread failed");
        }
        let take_back = sys::monotonic_ns();
        let take = slot.load(Ordering::Acquire);
        rounds += 1;
        sink.push(&sample(index, take, give));
        index += 1;
        if index < count {
            sink.push(&sample(index, take_back, back));
            index += 1;
        }
    };
    Ok((index, rounds, skipped, ended))
}

/// The partner's loop: take the token, stamp, store the stamp, give a new
/// token (its own stamp) back; ends on [`STOP_TOKEN`].
fn partner_loop(ping: &EventFd, pong: &EventFd, slot: &AtomicU64) -> io::Result<()> {
    loop {
        let token = read_token(ping)?;
        let take = sys::monotonic_ns();
        if token == STOP_TOKEN {
            return Ok(());
        }
        slot.store(take, Ordering::Release);
        write_token(pong, token_now())?;
    }
}

/// One hand-over as a sample: taken at `take`, given at `give`.
#[inline(always)]
fn sample(index: u64, take: u64, give: u64) -> Sample {
    Sample {
        index,
        at: take,
        values: slots([Some(take as i64 - give as i64)]),
    }
}

// ---------------------------------------------------------------------------
// The probe the runner measures.

/// The context-switch probe's arguments for a cell.
pub fn args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> CtxswitchArgs {
    CtxswitchArgs {
        cpu: plan.cpus[0],
        priority: fifo_priority(plan),
        count: plan.params.cycles,
        duration: plan.params.duration_ns,
        interval: spec.probes[cell.probe].period_ns,
    }
}

/// The context-switch probe of a cell, on one thread.
pub fn build(
    cell: &super::Cell<'_>,
    _journal: &mut crate::system::journal::Journal,
) -> Result<Probes> {
    Ok(Probes::threads(vec![Box::new(CtxswitchProbe {
        args: args(cell.spec, cell.cell, cell.plan),
    })]))
}

/// Two threads handing a token back and forth; the partner is started by
/// [`run`] on the measuring thread.
pub struct CtxswitchProbe {
    args: CtxswitchArgs,
}

impl Probe for CtxswitchProbe {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let out = run(&self.args, start.stop, recorder)?;
        Ok(Report {
            warnings: out.warnings.clone(),
            detail: Some(serde_json::to_value(&out)?),
            ..Report::default()
        })
    }
}

/// How the runner measures the `ctxswitch` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Ctxswitch,
    build,
    unavailable: None,
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: super::ReportParts::NONE,
    placement: super::Placement::ProbeCpus,
    task: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;
    use crate::probe::helper_thread::test_support::{can_run_realtime, probe_cpu};
    use jitterlab_core::probe::{MetricDef, MetricUnit};

    fn args(cpu: usize) -> CtxswitchArgs {
        CtxswitchArgs {
            cpu,
            priority: 90,
            count: Some(1000),
            duration: None,
            interval: 0,
        }
    }

    fn refusal(r: Result<()>) -> String {
        let e = r.unwrap_err();
        assert!(
            e.downcast_ref::<BadInput>().is_some(),
            "{e:#} is not bad input"
        );
        e.to_string()
    }

    #[test]
    fn bad_arguments_are_refused_with_the_fix() {
        let online = CpuList::parse("0-1").unwrap();
        validate(&args(1), &online).unwrap();
        assert_eq!(
            refusal(validate(&args(2), &online)),
            "CPU 2 is not online (online CPUs: 0-1); choose one of them with --cpu"
        );
        for p in [0, 100, -1] {
            assert_eq!(
                refusal(validate(
                    &CtxswitchArgs {
                        priority: p,
                        ..args(0)
                    },
                    &online
                )),
                format!(
                    "--priority {p} is outside SCHED_FIFO's 1-99; choose a priority in that range"
                )
            );
        }
        assert_eq!(
            refusal(validate(
                &CtxswitchArgs {
                    count: Some(0),
                    ..args(0)
                },
                &online
            )),
            "--count must be positive; give e.g. --count 10000"
        );
        assert_eq!(
            refusal(validate(
                &CtxswitchArgs {
                    count: None,
                    duration: Some(0),
                    ..args(0)
                },
                &online
            )),
            "--duration must be positive; give e.g. --duration 10s"
        );
    }

    #[test]
    fn one_thresholded_metric_in_ns() {
        assert_eq!(
            jitterlab_core::result::ProbeKind::Ctxswitch.metrics(),
            [MetricDef {
                name: "handover",
                unit: MetricUnit::Ns,
                signed: false,
                thresholded: true,
            }]
        );
    }

    #[test]
    fn a_sample_is_take_minus_give_at_take() {
        assert_eq!(
            sample(7, 5_000, 3_200),
            Sample {
                index: 7,
                at: 5_000,
                values: slots([Some(1_800)])
            }
        );
    }

    /// Runs `args` as the runner would: in a thread pinned to the CPU and
    /// SCHED_FIFO, with a sink preallocated for `capacity` samples.
    fn run_pinned(args: CtxswitchArgs, capacity: usize) -> (CtxswitchOutcome, Vec<Sample>) {
        std::thread::spawn(move || {
            let setup = setup_helper_thread("measuring thread", args.cpu, args.priority);
            assert!(setup.is_empty(), "{setup:?}");
            let stop = AtomicBool::new(false);
            let mut sink = Vec::with_capacity(capacity);
            let outcome = run(&args, &stop, &mut sink).unwrap();
            (outcome, sink)
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_thousand_handovers_make_a_thousand_samples() {
        if !can_run_realtime() {
            return;
        }
        let (outcome, samples) = run_pinned(args(probe_cpu()), 1000);
        assert_eq!(samples.len(), 1000);
        assert_eq!(outcome.handovers, 1000);
        assert_eq!(outcome.round_trips, 500);
        assert_eq!(outcome.skipped, 0);
        assert_eq!(outcome.ended, Ended::Count);
        assert_eq!(outcome.warnings, Vec::<String>::new());
        assert!(outcome.partner_tid > 0);
        let mut last_at = 0;
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.index, i as u64);
            let v = s.values[0].unwrap();
            assert!(v > 0 && v < 1_000_000_000, "sample {i}: {v} ns");
            assert!(s.values[1..].iter().all(Option::is_none));
            // One CPU, one monotonic clock: hand-overs are taken in order.
            assert!(s.at >= last_at, "sample {i} at {} before {last_at}", s.at);
            last_at = s.at;
        }
    }

    #[test]
    fn a_paced_run_with_an_odd_count_pushes_exactly_that_many() {
        if !can_run_realtime() {
            return;
        }
        let (outcome, samples) = run_pinned(
            CtxswitchArgs {
                count: Some(11),
                interval: 200_000,
                ..args(probe_cpu())
            },
            11,
        );
        assert_eq!(samples.len(), 11);
        assert_eq!(
            samples.iter().map(|s| s.index).collect::<Vec<_>>(),
            (0..11).collect::<Vec<_>>()
        );
        assert_eq!((outcome.handovers, outcome.round_trips), (11, 6));
        assert_eq!(outcome.ended, Ended::Count);
    }

    #[test]
    fn a_raised_stop_flag_ends_the_run_before_any_handover() {
        if !can_run_realtime() {
            return;
        }
        let a = CtxswitchArgs {
            count: None,
            ..args(probe_cpu())
        };
        let (outcome, samples) = std::thread::spawn(move || {
            setup_helper_thread("measuring thread", a.cpu, a.priority);
            let stop = AtomicBool::new(true);
            let mut sink = Vec::new();
            (run(&a, &stop, &mut sink).unwrap(), sink)
        })
        .join()
        .unwrap();
        assert!(samples.is_empty());
        assert_eq!((outcome.handovers, outcome.ended), (0, Ended::Stopped));
    }

    #[test]
    fn an_unprepared_calling_thread_is_named_in_the_warnings() {
        if !can_run_realtime() {
            return;
        }
        let a = CtxswitchArgs {
            count: Some(2),
            ..args(probe_cpu())
        };
        // The calling thread stays SCHED_OTHER: the probe runs and says so.
        let (outcome, samples) = std::thread::spawn(move || {
            sys::pin_to_cpu(a.cpu).unwrap();
            let stop = AtomicBool::new(false);
            let mut sink = Vec::new();
            (run(&a, &stop, &mut sink).unwrap(), sink)
        })
        .join()
        .unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(
            outcome.warnings,
            ["measuring thread: runs with policy 0 priority 0, not SCHED_FIFO priority 90"]
        );
    }
}
