//! The `response` probe: an event made on another CPU wakes the real-time
//! thread, which answers it; [Xu EPICS]'s "total response latency" and, for a
//! datagram, its "interrupt bottom half to user level" path.
//!
//! Two threads take part. The *event thread* runs on
//! [`ResponseArgs::event_cpu`] (SCHED_FIFO at the probe's priority, so that
//! nothing slips in between its clock read and its event call) and makes one
//! event per [`ResponseArgs::interval`] from absolute `clock_nanosleep`
//! releases. The *probe thread* is the calling thread of [`Response::run`],
//! which the runner has pinned to [`ResponseArgs::cpu`] and made SCHED_FIFO
//! at [`ResponseArgs::priority`]; it blocks until the event arrives, stamps
//! when it runs, sends its response and stamps again. Per event:
//!
//! | metric | value | eventfd | udp |
//! |---|---|---|---|
//! | `wakeup` | t_run − t_event | ✓ | ✓ |
//! | `response` | t_sent − t_event | ✓ | ✓ |
//! | `rx-to-thread` | thread running − kernel receive stamp | — | ✓ |
//!
//! `t_event` is read on the event thread just before its event call, and
//! travels with the event (the eventfd counter's value, or the datagram's
//! first 8 bytes), so the probe thread computes every value itself and is
//! the only one to push into the sink. `t_run` is read as soon as the
//! probe thread's blocking call returns, `t_sent` as soon as its response
//! call returns. All three are `CLOCK_MONOTONIC`, one clock for every CPU.
//!
//! **Sources** ([`ResponseSource`]):
//! - `eventfd`: the event is an eventfd write, the response a write to a
//!   second eventfd, on which the event thread waits.
//! - `udp`: the event is a 16-byte UDP datagram (t_event, sequence number)
//!   sent from namespace `jl<pid>ev` (198.18.0.5) through a veth pair to the
//!   probe thread's socket in `jl<pid>rs` (198.18.0.6, port [`PORT`]); the
//!   response is the same datagram sent back. `net::hosts` makes the pair
//!   (`jitterlab_core::response::PAIR`: its own names and its own /30, so a flood pair can
//!   run beside it), journaled through `before` first, deleted by
//!   [`Response::teardown`] and on drop. Each socket is created by a short
//!   helper thread that enters the namespace (`setns`) and ends; a socket
//!   stays in the namespace it was made in. The probe's socket has
//!   `SO_TIMESTAMPNS`: the kernel stamps the datagram when the veth hands it
//!   to the receiving stack. That receive work (the `NET_RX` softirq) runs
//!   on the sending CPU, the event CPU, as a NIC's interrupt would on its
//!   IRQ CPU, unless Receive Packet Steering moves it.
//!
//! **The receive stamp is on CLOCK_REALTIME.** It is compared with a
//! `CLOCK_REALTIME` read made as soon as `recvmsg` returns, *before* the
//! monotonic `t_run`: `rx-to-thread = realtime at run − stamp`. Both clocks
//! run at the same rate (one timekeeper), so this is the time from the
//! stamp to the moment the thread ran, without converting between clocks.
//! Because the stamp is made after `t_event` (inside the sender's
//! `sendmsg`) and the realtime read comes before `t_run`, `rx-to-thread ≤
//! wakeup` for every sample, and `rx-to-thread ≥ 0` — up to the 1 ns of
//! rounding between the two clocks, and unless the wall clock is stepped
//! (`settime`, a leap second) during the run, which only this metric would
//! show.
//!
//! **One event at a time.** The event thread waits for the response before
//! it makes the next event; a response later than the next release makes
//! the thread skip the releases it missed (counted in
//! [`ResponseOutcome::skipped`], never a burst of catch-up events). So
//! events never queue, and an eventfd's counter always holds one value. A
//! datagram cannot be lost on a veth pair unless a queue overflows; the
//! event thread still waits at most [`RESPONSE_TIMEOUT`] and counts an
//! event without a response as lost.
//!
//! **The loops** (design rule 2, with the probe's own event calls exempt):
//! the probe thread makes its blocking read, clock reads, its response call
//! and the push; the event thread its sleep, clock read, event call and
//! wait. Neither allocates, prints or locks. The run ends after `count`
//! events, at the end of `duration`, or when `stop` is raised (checked by
//! the event thread after each sleep); the event thread then sends a last
//! event, [`STOP_TOKEN`] or a datagram with sequence number `u64::MAX`, that
//! ends the probe thread's loop.
//!
//! The design rules and documents cited here are in `docs/design.md`.

pub mod flags;

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jitterlab_core::cycle::next_release_after;
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;
use jitterlab_sys::eventfd::EventFd;
use jitterlab_sys::{netns, rx_timestamp};
use serde::Serialize;

use super::helper_thread::{
    check_cpu, check_limits, check_priority, own_thread_warnings, setup_helper_thread, sleep_until,
    Ended, HELPER_STACK,
};
use super::plan::{fifo_priority, RunPlan};
use super::token::{read_token, token_now, write_token, FAILED_TOKEN, STOP_TOKEN};
use super::{Cell, Probe, Probes, Recorder, Report, Start};
use crate::error::bad;
use crate::net::hosts::{check_kind_environment, in_benchmark_range, NetChange, NetnsPair};
use crate::system::journal::{Journal, Undo};
use jitterlab_core::response::ResponseParams;
use jitterlab_core::spec::{CellPlan, Spec};
use std::path::Path;

// The metric table lives with the probe kinds: `ProbeKind::Response.metrics()`.

/// One event per millisecond unless told otherwise.
#[cfg(test)]
pub const DEFAULT_INTERVAL: u64 = jitterlab_core::defaults::PERIOD_NS;

/// The UDP port of both ends (the "echo" service: the probe sends back what
/// it got).
pub const PORT: u16 = 7;

/// How long the event thread waits for a datagram's response before it
/// counts the event as lost.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How often the probe thread's receive gives up waiting to see whether
/// the event thread has finished (only matters if the last datagram is lost).
const PROBE_POLL: Duration = Duration::from_millis(200);

/// The sequence number of the datagram that ends the probe thread.
const STOP_SEQ: u64 = u64::MAX;

/// Bytes of an event datagram: t_event and the sequence number, both
/// little-endian u64.
const DATAGRAM: usize = 16;

/// What makes the event: the spec model's one source type.
pub use jitterlab_core::response::ResponseSource;

/// What the runner asks of the probe (for `jitterlab run response` and a
/// bench cell alike), built from a cell of the typed spec in one place
/// ([`args`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseArgs {
    /// The probe thread's CPU.
    pub cpu: usize,
    /// The event thread's CPU.
    pub event_cpu: usize,
    /// SCHED_FIFO priority of both threads (1-99).
    pub priority: i32,
    /// What makes the event.
    pub source: ResponseSource,
    /// Time between events, ns (1 ms on the command line).
    pub interval: u64,
    /// Stop after this many events.
    pub count: Option<u64>,
    /// Stop making events once this much time has passed, ns.
    pub duration: Option<u64>,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResponseOutcome {
    /// What made the events.
    pub source: ResponseSource,
    /// Events made.
    pub events: u64,
    /// Events the probe thread answered: the samples pushed.
    pub responses: u64,
    /// Events whose response the event thread did not get within
    /// [`RESPONSE_TIMEOUT`] (udp only; a late response is still a sample).
    pub lost: u64,
    /// Releases skipped because a response came after the next release.
    pub skipped: u64,
    /// The event thread's kernel thread id.
    pub event_tid: i32,
    /// Why the run ended.
    pub ended: Ended,
    /// What did not go as asked (a thread not pinned or not SCHED_FIFO,
    /// the event on the probe's own CPU).
    pub warnings: Vec<String>,
}

/// Refuses (as bad input) arguments the probe cannot run with: a CPU that
/// is not in `online`, the event on the probe's own CPU while another CPU
/// is online, a priority outside 1-99, a zero interval, count or duration.
/// Returns the warnings of arguments that run but measure less than asked
/// (the event on the probe's CPU of a one-CPU machine).
pub fn validate(args: &ResponseArgs, online: &CpuList) -> Result<Vec<String>> {
    check_cpu(args.cpu, online, "--cpu")?;
    check_cpu(args.event_cpu, online, "--event-cpu")?;
    check_args(args)?;
    if args.cpu == args.event_cpu {
        if let Some(other) = online.iter().find(|&c| c != args.cpu) {
            return Err(bad(format!(
                "--event-cpu {} is the probe's own CPU; the event must come from another CPU, e.g. --event-cpu {other}",
                args.event_cpu
            )));
        }
        return Ok(vec![same_cpu_warning(args.cpu)]);
    }
    Ok(Vec::new())
}

/// Refuses (as bad input), before anything starts, what would make
/// [`prepare`] fail before any change: for the udp source, not root or no
/// `ip` (iproute2).
pub fn check_environment(args: &ResponseArgs) -> Result<()> {
    match args.source {
        ResponseSource::Eventfd => Ok(()),
        ResponseSource::Udp => check_kind_environment(&jitterlab_core::response::PAIR),
    }
}

/// The checks that need no CPU list.
fn check_args(args: &ResponseArgs) -> Result<()> {
    check_priority(args.priority)?;
    if args.interval == 0 {
        return Err(bad("--interval must be positive; give e.g. --interval 1ms"));
    }
    check_limits(args.count, args.duration)
}

/// The warning when the event thread shares the probe's CPU.
fn same_cpu_warning(cpu: usize) -> String {
    format!(
        "the event thread shares CPU {cpu} with the probe thread (no other CPU is online): wakeup measures a switch on one CPU, not a wake-up from another"
    )
}

/// A prepared probe: its eventfds, or its namespaces and sockets.
#[derive(Debug)]
pub struct Response {
    args: ResponseArgs,
    /// Warnings known before the run.
    warnings: Vec<String>,
    channel: Channel,
    /// A run failed: the channel may hold a stale token.
    failed: bool,
}

/// The objects the events travel through.
#[derive(Debug)]
enum Channel {
    Eventfd {
        event: EventFd,
        response: EventFd,
    },
    // Field order is drop order: the sockets close before the namespaces go.
    Udp {
        event: UdpSocket,
        probe: UdpSocket,
        /// Boxed: the names are far larger than two descriptors.
        pair: Box<NetnsPair>,
    },
}

/// Makes what `args` needs: two eventfds, or (udp) the namespace pair —
/// each namespace journaled through `before` before it is made — and a
/// socket in each. Refused (as bad input, before any change) with a bad
/// priority, interval, count or duration, and for udp without root or
/// `ip`. CPUs are checked by [`validate`].
pub fn prepare(
    args: &ResponseArgs,
    before: &mut dyn FnMut(&NetChange) -> Result<()>,
) -> Result<Response> {
    check_args(args)?;
    let mut warnings = Vec::new();
    if args.cpu == args.event_cpu {
        warnings.push(same_cpu_warning(args.cpu));
    }
    let channel = match args.source {
        ResponseSource::Eventfd => Channel::Eventfd {
            event: EventFd::new().context("creating the event eventfd")?,
            response: EventFd::new().context("creating the response eventfd")?,
        },
        ResponseSource::Udp => {
            let pair = Box::new(NetnsPair::setup(jitterlab_core::response::PAIR, before)?);
            // On error `pair` is dropped, which deletes the namespaces.
            let (event, probe) = udp_sockets(&pair)?;
            Channel::Udp { event, probe, pair }
        }
    };
    Ok(Response {
        args: *args,
        warnings,
        channel,
        failed: false,
    })
}

/// Refuses a destination outside 198.18.0.0/15: the probe sends only
/// between its own namespaces.
fn check_destination(addr: Ipv4Addr) -> Result<()> {
    if in_benchmark_range(addr) {
        Ok(())
    } else {
        Err(bad(format!(
            "refusing to send to {addr}: the response probe sends only within 198.18.0.0/15, between its own network namespaces"
        )))
    }
}

/// The event thread's socket (in namespace a, connected to the probe) and
/// the probe thread's (in namespace b, connected back, with receive stamps).
fn udp_sockets(pair: &NetnsPair) -> Result<(UdpSocket, UdpSocket)> {
    let (a, b) = (
        SocketAddrV4::new(pair.ip_a(), PORT),
        SocketAddrV4::new(pair.ip_b(), PORT),
    );
    check_destination(*a.ip())?;
    check_destination(*b.ip())?;
    let event = socket_in(pair.netns_a(), a)?;
    let probe = socket_in(pair.netns_b(), b)?;
    event
        .connect(b)
        .with_context(|| format!("connecting the event socket to {b}"))?;
    probe
        .connect(a)
        .with_context(|| format!("connecting the probe socket to {a}"))?;
    event
        .set_read_timeout(Some(RESPONSE_TIMEOUT))
        .context("setting the event socket's receive timeout")?;
    probe
        .set_read_timeout(Some(PROBE_POLL))
        .context("setting the probe socket's receive timeout")?;
    rx_timestamp::enable_rx_timestamps(probe.as_fd())
        .context("asking for receive stamps (SO_TIMESTAMPNS)")?;
    Ok((event, probe))
}

/// A UDP socket bound to `addr` inside network namespace `netns`: made by
/// a helper thread that enters the namespace and ends, so no thread of
/// jitterlab stays in it.
fn socket_in(netns: &str, addr: SocketAddrV4) -> Result<UdpSocket> {
    let path = format!("/run/netns/{netns}");
    std::thread::scope(|s| {
        s.spawn(|| -> Result<UdpSocket> {
            let ns = File::open(&path).with_context(|| format!("opening {path}"))?;
            netns::enter_net_namespace(ns.as_fd())
                .with_context(|| format!("entering network namespace {netns}"))?;
            UdpSocket::bind(addr).with_context(|| format!("binding {addr} in {netns}"))
        })
        .join()
        .unwrap_or_else(|_| bail!("the thread making a socket in {netns} panicked"))
    })
}

impl Response {
    /// The namespaces of the udp source (event, probe); `None` for eventfd.
    pub fn namespaces(&self) -> Option<(&str, &str)> {
        match &self.channel {
            Channel::Eventfd { .. } => None,
            Channel::Udp { pair, .. } => Some((pair.netns_a(), pair.netns_b())),
        }
    }

    /// Runs the probe on the calling thread (already pinned to `cpu` and
    /// SCHED_FIFO at `priority`): starts the event thread, answers every
    /// event until `count`, `duration` or `stop`, pushes one sample per
    /// answered event into `sink`.
    ///
    /// A failed run may leave a token or datagram behind; the probe then
    /// refuses to run again (prepare a new one).
    pub fn run<S: SampleSink>(
        &mut self,
        stop: &AtomicBool,
        sink: &mut S,
    ) -> Result<ResponseOutcome> {
        if self.failed {
            bail!("this response probe failed in an earlier run; prepare it again");
        }
        let outcome = self.run_once(stop, sink);
        self.failed = outcome.is_err();
        outcome
    }

    /// One run of [`Response::run`].
    fn run_once<S: SampleSink>(
        &mut self,
        stop: &AtomicBool,
        sink: &mut S,
    ) -> Result<ResponseOutcome> {
        let args = self.args;
        let mut warnings = self.warnings.clone();
        warnings.extend(own_thread_warnings("probe thread", args.cpu, args.priority));
        let halt = AtomicBool::new(false);
        let channel = &self.channel;
        let halt = &halt;

        std::thread::scope(|scope| -> Result<ResponseOutcome> {
            let (setup_tx, setup_rx) = mpsc::sync_channel(1);
            let event_thread = std::thread::Builder::new()
                .name(format!("response-event-cpu{}", args.event_cpu))
                .stack_size(HELPER_STACK)
                .spawn_scoped(scope, move || {
                    let w = setup_helper_thread("event thread", args.event_cpu, args.priority);
                    let _ = setup_tx.send((sys::gettid(), w));
                    let mut pacer = Pacer::new(&args, sys::monotonic_ns());
                    let r = match channel {
                        Channel::Eventfd { event, response } => {
                            eventfd_events(&mut pacer, stop, halt, event, response)
                        }
                        Channel::Udp { event, .. } => udp_events(&mut pacer, stop, halt, event),
                    };
                    (pacer, r)
                })
                .context("starting the event thread")?;
            let Ok((event_tid, event_warnings)) = setup_rx.recv() else {
                // Joined here, so that its panic is reported, not re-raised.
                let _ = event_thread.join();
                bail!("the event thread ended before it was set up");
            };
            warnings.extend(event_warnings);

            let answered = match channel {
                Channel::Eventfd { event, response } => {
                    eventfd_answers(sink, event, response, halt)
                }
                Channel::Udp { probe, .. } => udp_answers(sink, probe, halt),
            };
            let Ok((pacer, made)) = event_thread.join() else {
                bail!("the event thread panicked");
            };
            let (ended, lost) = made.context("the event thread's event call failed")?;
            let responses = answered?;
            Ok(ResponseOutcome {
                source: args.source,
                events: pacer.made,
                responses,
                lost,
                skipped: pacer.skipped,
                event_tid,
                ended,
                warnings,
            })
        })
    }

    /// Deletes what [`prepare`] made: closes the sockets, deletes the
    /// namespaces; returns the namespaces deleted (none for eventfd).
    pub fn teardown(self) -> Result<Vec<String>> {
        match self.channel {
            Channel::Eventfd { .. } => Ok(Vec::new()),
            Channel::Udp { event, probe, pair } => {
                drop(event);
                drop(probe);
                pair.teardown()
            }
        }
    }
}

/// The event thread's releases: one per interval from the start, a late
/// response skipping what it missed, until the count, the duration or the
/// stop flag.
#[derive(Debug)]
struct Pacer {
    interval: u64,
    /// The current (or first) release.
    release: u64,
    deadline: u64,
    count: u64,
    /// Events made.
    made: u64,
    /// Releases skipped.
    skipped: u64,
}

impl Pacer {
    /// The first release is one interval after `start`, which gives the
    /// probe thread time to reach its blocking call.
    fn new(args: &ResponseArgs, start: u64) -> Pacer {
        Pacer {
            interval: args.interval,
            release: start.saturating_add(args.interval),
            deadline: args.duration.map_or(u64::MAX, |d| start.saturating_add(d)),
            count: args.count.unwrap_or(u64::MAX),
            made: 0,
            skipped: 0,
        }
    }

    /// Before the next event: the release it is due at, or why the run
    /// ends instead. `now` is the clock after the last response.
    fn next(&mut self, now: u64) -> Result<u64, Ended> {
        if self.made >= self.count {
            return Err(Ended::Count);
        }
        if self.made > 0 {
            let (next, missed) = next_release_after(self.release, self.interval, now);
            self.release = next;
            self.skipped += missed;
        }
        if self.release >= self.deadline {
            return Err(Ended::Duration);
        }
        Ok(self.release)
    }

    /// Sleeps until the next release; `Err(why)` when the run ends instead.
    #[inline(always)]
    fn wait(&mut self, stop: &AtomicBool, halt: &AtomicBool) -> Result<(), Ended> {
        let release = self.next(sys::monotonic_ns())?;
        sleep_until(release);
        if stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
            return Err(Ended::Stopped);
        }
        Ok(())
    }
}

/// The event thread with eventfds; returns why it ended and 0 lost.
fn eventfd_events(
    pacer: &mut Pacer,
    stop: &AtomicBool,
    halt: &AtomicBool,
    event: &EventFd,
    response: &EventFd,
) -> io::Result<(Ended, u64)> {
    let r = loop {
        if let Err(ended) = pacer.wait(stop, halt) {
            break Ok(ended);
        }
        let t_event = token_now();
        if let Err(e) = write_token(event, t_event) {
            break Err(e);
        }
        pacer.made += 1;
        match read_token(response) {
            Ok(FAILED_TOKEN) => break Ok(Ended::Stopped),
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    // The probe thread waits in its read: end it (on every path).
    let stopped = write_token(event, STOP_TOKEN);
    let ended = r?;
    stopped?;
    Ok((ended, 0))
}

/// The probe thread with eventfds; returns the samples pushed.
fn eventfd_answers<S: SampleSink>(
    sink: &mut S,
    event: &EventFd,
    response: &EventFd,
    halt: &AtomicBool,
) -> Result<u64> {
    let mut index = 0;
    loop {
        let t_event = match read_token(event) {
            Ok(t) => t,
            Err(e) => return Err(fail_eventfd(halt, response, e)),
        };
        let t_run = sys::monotonic_ns();
        if t_event == STOP_TOKEN {
            return Ok(index);
        }
        if let Err(e) = write_token(response, t_run.max(1)) {
            return Err(fail_eventfd(halt, response, e));
        }
        let t_sent = sys::monotonic_ns();
        sink.push(&sample(index, t_event, t_run, t_sent, None));
        index += 1;
    }
}

/// Stops the event thread after the probe thread's eventfd call failed.
fn fail_eventfd(halt: &AtomicBool, response: &EventFd, e: io::Error) -> anyhow::Error {
    halt.store(true, Ordering::Relaxed);
    let _ = write_token(response, FAILED_TOKEN);
    anyhow::Error::new(e).context("the probe thread's eventfd call failed")
}

/// The event thread with datagrams; returns why it ended and how many
/// events got no response.
fn udp_events(
    pacer: &mut Pacer,
    stop: &AtomicBool,
    halt: &AtomicBool,
    socket: &UdpSocket,
) -> io::Result<(Ended, u64)> {
    let mut lost = 0;
    let mut buf = [0u8; DATAGRAM];
    let r = loop {
        if let Err(ended) = pacer.wait(stop, halt) {
            break Ok(ended);
        }
        let seq = pacer.made;
        let t_event = sys::monotonic_ns();
        if let Err(e) = send_retrying(socket, &datagram(t_event, seq)) {
            break Err(e);
        }
        pacer.made += 1;
        // Wait for this event's response; older ones (late, after a
        // timeout) are passed over.
        let waited = loop {
            match socket.recv(&mut buf) {
                Ok(DATAGRAM) if parse(&buf).1 == seq => break Ok(()),
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => {
                    lost += 1;
                    break Ok(());
                }
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = waited {
            break Err(e);
        }
        if halt.load(Ordering::Relaxed) {
            break Ok(Ended::Stopped);
        }
    };
    // The probe thread waits in its receive: end it. Should this datagram be
    // lost, the halt flag ends it at its next receive timeout.
    let stopped = send_retrying(socket, &datagram(0, STOP_SEQ));
    halt.store(true, Ordering::Relaxed);
    let ended = r?;
    stopped?;
    Ok((ended, lost))
}

/// The probe thread with datagrams; returns the samples pushed.
fn udp_answers<S: SampleSink>(sink: &mut S, socket: &UdpSocket, halt: &AtomicBool) -> Result<u64> {
    let mut index = 0;
    let mut buf = [0u8; DATAGRAM];
    loop {
        let (n, stamp) = match rx_timestamp::recv_with_timestamp(socket.as_fd(), &mut buf) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => {
                if halt.load(Ordering::Relaxed) {
                    return Ok(index);
                }
                continue;
            }
            Err(e) => {
                halt.store(true, Ordering::Relaxed);
                return Err(anyhow::Error::new(e).context("the probe thread's receive failed"));
            }
        };
        // Realtime first, then monotonic: see the module doc.
        let real_run = rx_timestamp::realtime_ns();
        let t_run = sys::monotonic_ns();
        if n != DATAGRAM {
            continue;
        }
        let (t_event, seq) = parse(&buf);
        if seq == STOP_SEQ {
            return Ok(index);
        }
        if let Err(e) = send_retrying(socket, &buf) {
            halt.store(true, Ordering::Relaxed);
            return Err(anyhow::Error::new(e).context("the probe thread's response failed"));
        }
        let t_sent = sys::monotonic_ns();
        let rx = stamp.map(|s| rx_to_thread(s, real_run));
        sink.push(&sample(index, t_event, t_run, t_sent, rx));
        index += 1;
    }
}

/// Sends one datagram on a connected socket, again after a signal.
#[inline(always)]
fn send_retrying(socket: &UdpSocket, payload: &[u8]) -> io::Result<()> {
    loop {
        match socket.send(payload) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A receive timeout (`SO_RCVTIMEO` ends a receive with `EAGAIN`).
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// An event datagram: t_event and the sequence number, little-endian.
#[inline(always)]
fn datagram(t_event: u64, seq: u64) -> [u8; DATAGRAM] {
    let mut d = [0u8; DATAGRAM];
    d[..8].copy_from_slice(&t_event.to_le_bytes());
    d[8..].copy_from_slice(&seq.to_le_bytes());
    d
}

/// The (t_event, sequence number) of an event datagram.
#[inline(always)]
fn parse(d: &[u8; DATAGRAM]) -> (u64, u64) {
    let mut t = [0u8; 8];
    let mut s = [0u8; 8];
    t.copy_from_slice(&d[..8]);
    s.copy_from_slice(&d[8..]);
    (u64::from_le_bytes(t), u64::from_le_bytes(s))
}

/// Receive stamp → thread running, both on CLOCK_REALTIME: the realtime
/// read made as soon as the receive returned, minus the kernel's stamp.
#[inline(always)]
pub fn rx_to_thread(stamp_realtime: u64, realtime_at_run: u64) -> i64 {
    realtime_at_run as i64 - stamp_realtime as i64
}

/// One answered event as a sample, placed at `t_event`.
#[inline(always)]
fn sample(index: u64, t_event: u64, t_run: u64, t_sent: u64, rx: Option<i64>) -> Sample {
    Sample {
        index,
        at: t_event,
        values: slots([
            Some(t_run as i64 - t_event as i64),
            Some(t_sent as i64 - t_event as i64),
            rx,
        ]),
    }
}

// ---------------------------------------------------------------------------
// The probe the runner measures.

/// The response probe's arguments for a cell: events from its `event_cpu`,
/// else from the cell's first neighbour CPU, else from the probe's own.
pub fn args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> ResponseArgs {
    let probe = &spec.probes[cell.probe];
    let Some(&ResponseParams { source, event_cpu }) = probe.params.get() else {
        unreachable!("response arguments of a probe that is no response probe")
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

/// The response probe of a cell, on one thread: its eventfds, or its
/// namespaces (each journaled first) and sockets, made now.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let args = args(cell.spec, cell.cell, cell.plan);
    let mut journaled = Vec::new();
    let response = prepare(&args, &mut |change: &NetChange| {
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
            Ok(Probes::threads(vec![Box::new(ResponseProbe {
                response: Some(r),
                journaled,
            })]))
        }
        Err(e) => {
            // `prepare` deleted what it had made; forget the entries.
            for line in journal.done_all(journaled) {
                crate::output::errln!("jitterlab: warning: {line}");
            }
            Err(e)
        }
    }
}

/// Events made on another CPU; for UDP, the namespaces and their journal
/// entries.
pub struct ResponseProbe {
    response: Option<Response>,
    journaled: Vec<u64>,
}

impl Probe for ResponseProbe {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let r = self
            .response
            .as_mut()
            .context("the response probe is gone")?;
        let out = r.run(start.stop, recorder)?;
        Ok(Report {
            warnings: out.warnings.clone(),
            detail: Some(serde_json::to_value(&out)?),
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = match self.response.take().map(Response::teardown) {
            Some(Ok(l)) if l.is_empty() => l,
            Some(Ok(l)) => vec![format!("response namespaces deleted: {}", l.join(", "))],
            Some(Err(e)) => vec![format!("tearing the response probe down failed: {e:#}")],
            None => Vec::new(),
        };
        lines.extend(journal.done_all(self.journaled.drain(..)));
        lines
    }
}

/// How the runner measures the `response` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Response,
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
    use crate::net::hosts::namespaces;
    use crate::probe::helper_thread::test_support::{can_run_realtime, probe_cpu};
    use jitterlab_core::probe::MetricUnit;

    fn args(source: ResponseSource) -> ResponseArgs {
        ResponseArgs {
            cpu: 1,
            event_cpu: 0,
            priority: 90,
            source,
            interval: DEFAULT_INTERVAL,
            count: Some(200),
            duration: None,
        }
    }

    fn refusal<T: std::fmt::Debug>(r: Result<T>) -> String {
        let e = r.unwrap_err();
        assert!(
            e.downcast_ref::<BadInput>().is_some(),
            "{e:#} is not bad input"
        );
        e.to_string()
    }

    #[test]
    fn three_thresholded_metrics_in_ns() {
        assert_eq!(
            jitterlab_core::result::ProbeKind::Response
                .metrics()
                .iter()
                .map(|m| (m.name, m.unit, m.signed, m.thresholded))
                .collect::<Vec<_>>(),
            [
                ("wakeup", MetricUnit::Ns, false, true),
                ("response", MetricUnit::Ns, false, true),
                ("rx-to-thread", MetricUnit::Ns, false, true),
            ]
        );
        assert_eq!(
            serde_json::to_string(&ResponseSource::Udp).unwrap(),
            "\"udp\""
        );
        assert_eq!(ResponseSource::Eventfd.name(), "eventfd");
    }

    #[test]
    fn cpus_must_be_online_and_apart_unless_only_one_is() {
        let two = CpuList::parse("0-1").unwrap();
        let a = args(ResponseSource::Eventfd);
        assert_eq!(validate(&a, &two).unwrap(), Vec::<String>::new());
        assert_eq!(
            refusal(validate(&ResponseArgs { cpu: 4, ..a }, &two)),
            "CPU 4 is not online (online CPUs: 0-1); choose one of them with --cpu"
        );
        assert_eq!(
            refusal(validate(&ResponseArgs { event_cpu: 2, ..a }, &two)),
            "CPU 2 is not online (online CPUs: 0-1); choose one of them with --event-cpu"
        );
        assert_eq!(
            refusal(validate(&ResponseArgs { event_cpu: 1, ..a }, &two)),
            "--event-cpu 1 is the probe's own CPU; the event must come from another CPU, e.g. --event-cpu 0"
        );
        let one = CpuList::parse("0").unwrap();
        assert_eq!(
            validate(
                &ResponseArgs {
                    cpu: 0,
                    event_cpu: 0,
                    ..a
                },
                &one
            )
            .unwrap(),
            ["the event thread shares CPU 0 with the probe thread (no other CPU is online): wakeup measures a switch on one CPU, not a wake-up from another"]
        );
    }

    #[test]
    fn bad_numbers_are_refused_before_anything_is_made() {
        let two = CpuList::parse("0-1").unwrap();
        let a = args(ResponseSource::Udp);
        let cases = [
            (
                ResponseArgs { interval: 0, ..a },
                "--interval must be positive; give e.g. --interval 1ms",
            ),
            (
                ResponseArgs { priority: 0, ..a },
                "--priority 0 is outside SCHED_FIFO's 1-99; choose a priority in that range",
            ),
            (
                ResponseArgs {
                    count: Some(0),
                    ..a
                },
                "--count must be positive; give e.g. --count 10000",
            ),
            (
                ResponseArgs {
                    duration: Some(0),
                    ..a
                },
                "--duration must be positive; give e.g. --duration 10s",
            ),
        ];
        for (bad_args, msg) in cases {
            assert_eq!(refusal(validate(&bad_args, &two)), msg);
            let mut journaled = 0;
            assert_eq!(
                refusal(prepare(&bad_args, &mut |_| {
                    journaled += 1;
                    Ok(())
                })),
                msg
            );
            assert_eq!(journaled, 0);
        }
    }

    #[test]
    fn destinations_outside_the_benchmarking_range_are_refused() {
        for ok in ["198.18.0.6", "198.19.255.254", "198.18.0.5"] {
            check_destination(ok.parse().unwrap()).unwrap();
        }
        for no in ["198.20.0.1", "198.17.255.255", "127.0.0.1", "10.0.0.1"] {
            assert_eq!(
                refusal(check_destination(no.parse().unwrap())),
                format!("refusing to send to {no}: the response probe sends only within 198.18.0.0/15, between its own network namespaces")
            );
        }
    }

    #[test]
    fn datagram_round_trips_and_samples_are_differences() {
        let d = datagram(0x0102_0304_0506_0708, 9);
        assert_eq!(d, [8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse(&d), (0x0102_0304_0506_0708, 9));
        assert_eq!(
            sample(3, 1_000, 1_250, 1_900, Some(180)),
            Sample {
                index: 3,
                at: 1_000,
                values: slots([Some(250), Some(900), Some(180)])
            }
        );
        // Realtime stamps near 2025 (1.7e18 ns) subtract exactly.
        assert_eq!(
            rx_to_thread(1_735_689_600_000_000_000, 1_735_689_600_000_012_345),
            12_345
        );
        assert_eq!(rx_to_thread(1_000, 999), -1);
    }

    #[test]
    fn pacer_counts_skips_and_ends_by_count_or_duration() {
        let a = ResponseArgs {
            interval: 100,
            count: Some(3),
            duration: None,
            ..args(ResponseSource::Eventfd)
        };
        let mut p = Pacer::new(&a, 1_000);
        assert_eq!(p.next(1_000), Ok(1_100));
        p.made = 1;
        // The response came at 1_150: next release 1_200, none skipped.
        assert_eq!(p.next(1_150), Ok(1_200));
        p.made = 2;
        // The response came at 1_420: 1_300 and 1_400 skipped.
        assert_eq!(p.next(1_420), Ok(1_500));
        assert_eq!(p.skipped, 2);
        p.made = 3;
        assert_eq!(p.next(1_510), Err(Ended::Count));

        let d = ResponseArgs {
            count: None,
            duration: Some(250),
            ..a
        };
        let mut p = Pacer::new(&d, 1_000);
        assert_eq!(p.next(1_000), Ok(1_100));
        p.made = 1;
        assert_eq!(p.next(1_101), Ok(1_200));
        p.made = 2;
        assert_eq!(p.next(1_201), Err(Ended::Duration));
    }

    /// Runs a prepared probe as the runner would: on a thread pinned to the
    /// probe CPU and SCHED_FIFO, with a sink preallocated for `n` samples.
    fn run_pinned(mut r: Response, n: usize) -> (Response, ResponseOutcome, Vec<Sample>) {
        std::thread::spawn(move || {
            let setup = setup_helper_thread("probe thread", r.args.cpu, r.args.priority);
            assert!(setup.is_empty(), "{setup:?}");
            let stop = AtomicBool::new(false);
            let mut sink = Vec::with_capacity(n);
            let outcome = r.run(&stop, &mut sink).unwrap();
            (r, outcome, sink)
        })
        .join()
        .unwrap()
    }

    /// Arguments for a real run on this machine: the probe on the last CPU,
    /// the event on the first (the same one on a one-CPU machine).
    fn real_args(source: ResponseSource) -> ResponseArgs {
        ResponseArgs {
            cpu: probe_cpu(),
            event_cpu: 0,
            ..args(source)
        }
    }

    #[test]
    fn eventfd_source_answers_every_event() {
        if !can_run_realtime() {
            return;
        }
        let a = real_args(ResponseSource::Eventfd);
        check_environment(&a).unwrap();
        let r = prepare(&a, &mut |c| panic!("eventfd journals nothing, got {c:?}")).unwrap();
        assert_eq!(r.namespaces(), None);
        let (r, outcome, samples) = run_pinned(r, 200);
        assert_eq!(samples.len(), 200);
        assert_eq!(
            (outcome.events, outcome.responses, outcome.lost),
            (200, 200, 0)
        );
        assert_eq!(outcome.ended, Ended::Count);
        assert_eq!(outcome.source, ResponseSource::Eventfd);
        if a.cpu != a.event_cpu {
            assert_eq!(outcome.warnings, Vec::<String>::new());
        }
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.index, i as u64);
            let (wakeup, response) = (s.values[0].unwrap(), s.values[1].unwrap());
            // The event is written after t_event, read before t_run, and
            // answered before t_sent: one monotonic clock orders them.
            assert!(
                0 < wakeup && wakeup <= response,
                "sample {i}: {wakeup} {response}"
            );
            assert!(s.values[2..].iter().all(Option::is_none));
        }
        // A finished run leaves nothing behind: the next one starts clean.
        let (r, again, samples) = run_pinned(r, 200);
        assert_eq!((again.events, again.responses), (200, 200));
        assert_eq!(samples.first().map(|s| s.index), Some(0));
        assert_eq!(r.teardown().unwrap(), Vec::<String>::new());
    }

    /// This process's response namespaces among the named ones.
    fn ours_now() -> Vec<String> {
        let pid = std::process::id();
        let mut v: Vec<String> = namespaces("ip")
            .unwrap()
            .into_iter()
            .filter(|n| *n == format!("jl{pid}ev") || *n == format!("jl{pid}rs"))
            .collect();
        v.sort();
        v
    }

    #[test]
    #[serial_test::serial(netns)]
    fn udp_source_answers_every_datagram_with_a_receive_stamp() {
        if !can_run_realtime() {
            return;
        }
        if std::process::Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipping: `ip` is not installed (package iproute2)");
            return;
        }
        let pid = std::process::id();
        let (evns, rsns) = (format!("jl{pid}ev"), format!("jl{pid}rs"));
        let a = real_args(ResponseSource::Udp);
        check_environment(&a).unwrap();
        let mut journaled = Vec::new();
        let r = prepare(&a, &mut |c| {
            journaled.push(c.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            journaled,
            [
                NetChange::Netns(evns.clone()),
                NetChange::Netns(rsns.clone())
            ]
        );
        assert_eq!(r.namespaces(), Some((evns.as_str(), rsns.as_str())));
        assert_eq!(ours_now(), [evns.clone(), rsns.clone()]);

        let (r, outcome, samples) = run_pinned(r, 200);
        assert_eq!(samples.len(), 200);
        assert_eq!(
            (outcome.events, outcome.responses, outcome.lost),
            (200, 200, 0)
        );
        assert_eq!(outcome.ended, Ended::Count);
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.index, i as u64);
            let (wakeup, response) = (s.values[0].unwrap(), s.values[1].unwrap());
            let rx = s.values[2].expect("SO_TIMESTAMPNS gives every datagram a stamp");
            // t_event < kernel stamp < realtime read < t_run ≤ t_sent.
            assert!(
                0 <= rx && rx <= wakeup && wakeup <= response,
                "sample {i}: rx {rx} wakeup {wakeup} response {response}"
            );
        }
        assert_eq!(r.teardown().unwrap(), [evns, rsns]);
        assert!(ours_now().is_empty());
    }

    #[test]
    #[serial_test::serial(netns)]
    fn dropping_a_prepared_udp_probe_deletes_its_namespaces() {
        if !can_run_realtime() {
            return;
        }
        if std::process::Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipping: `ip` is not installed (package iproute2)");
            return;
        }
        let r = prepare(&real_args(ResponseSource::Udp), &mut |_| Ok(())).unwrap();
        assert_eq!(ours_now().len(), 2);
        drop(r);
        assert!(ours_now().is_empty());
    }

    #[test]
    fn a_raised_stop_flag_ends_the_run_before_any_event() {
        if !can_run_realtime() {
            return;
        }
        let a = ResponseArgs {
            count: None,
            ..real_args(ResponseSource::Eventfd)
        };
        let mut r = prepare(&a, &mut |_| Ok(())).unwrap();
        let (outcome, samples) = std::thread::spawn(move || {
            setup_helper_thread("probe thread", a.cpu, a.priority);
            let stop = AtomicBool::new(true);
            let mut sink = Vec::new();
            (r.run(&stop, &mut sink).unwrap(), sink)
        })
        .join()
        .unwrap();
        assert!(samples.is_empty());
        assert_eq!(
            (outcome.events, outcome.responses, outcome.ended),
            (0, 0, Ended::Stopped)
        );
    }
}
