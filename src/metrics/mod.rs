//! Live metrics: `--metrics ADDR` on `run`, `bench`, `apply` and
//! `monitor` serves what is being measured in the Prometheus text
//! exposition format, so a long run is watched in Grafana and a fleet of
//! machines is one scrape configuration away (`docs/metrics.md`,
//! `contrib/`).
//!
//! **Who does what.** The probe threads never touch this module: each
//! recorder counts its values into fixed buckets and, at every window's
//! end, publishes a snapshot into a triple buffer
//! (`jitterlab_core::metrics_snapshot`) — no lock, no allocation, no block
//! on the probe. The controlling thread tells the [`Board`] what else is
//! going on: the cell (and a bench's progress), the settings in effect,
//! the neighbours' health, the probe threads' snapshot readers
//! ([`probe_threads`]); a monitor's writer thread counts its alerts
//! ([`alert`]). A metrics thread of its own, SCHED_OTHER and kept
//! off the probe CPUs, answers `GET /metrics` ([`http`]) by reading the
//! board under its lock and the latest snapshots, and encoding them
//! ([`exposition`]).
//!
//! **One board per process.** The board is installed once, by [`serve`],
//! in a process-wide cell, and the call sites in the runner are one-line
//! calls of this module's functions, which do nothing when no `--metrics`
//! was given: like a logger, the metrics are a sink the whole command
//! shares, and threading a handle through every layer of the lifecycle
//! would touch every signature for an optional side view.
//!
//! **Binding first.** [`serve`] binds the address before the command
//! changes anything on the machine: an address in use or not on this
//! machine is bad input (exit 2) naming it, and nothing has changed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use jitterlab_core::cell::{CellKey, SettingReport};
use jitterlab_core::metrics_snapshot::Publisher;
use jitterlab_core::result::{DefaultStatus, ProbeKind};

use crate::error::bad;
use crate::neighbour::Running;
use crate::output::errln;

pub mod board;
pub mod exposition;
pub mod http;

pub use board::Board;

/// The board of this process, once [`serve`] installed it.
static BOARD: OnceLock<Arc<Board>> = OnceLock::new();

/// Parses `--metrics`'s ADDR: `PORT` or `:PORT` (on the loopback address
/// 127.0.0.1), `HOST:PORT` with an IPv4 address, `[IPv6]:PORT`, or
/// `localhost:PORT`. Port 0 lets the system choose a free port (printed
/// when serving starts).
pub fn parse_addr(s: &str) -> std::result::Result<SocketAddr, String> {
    let expected = "expected PORT, :PORT or HOST:PORT, HOST an IP address (127.0.0.1, 0.0.0.0 for every interface, [::1]) or localhost, e.g. 127.0.0.1:9464";
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("'{p}' is not a port (0-65535); {expected}"))
    };
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    if !s.contains(':') {
        return Ok(SocketAddr::new(loopback, port(s)?));
    }
    if let Some(p) = s.strip_prefix(':').filter(|p| !p.contains(':')) {
        return Ok(SocketAddr::new(loopback, port(p)?));
    }
    if let Some(p) = s.strip_prefix("localhost:") {
        return Ok(SocketAddr::new(loopback, port(p)?));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("'{s}' is not an address to listen on; {expected}"))
}

/// The metrics server of this command: stops serving when dropped (at the
/// command's end, after everything it changed is put back).
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// How long the end of a command waits for the metrics thread to stop.
/// It never blocks on a client, so it stops within one poll (50 ms); the
/// bound keeps that promise should the thread ever be held up, as the
/// command's end must not wait for any client.
const STOP_WAIT: Duration = Duration::from_secs(1);

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        let Some(t) = self.thread.take() else {
            return;
        };
        let end = Instant::now() + STOP_WAIT;
        while !t.is_finished() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        if t.is_finished() {
            let _ = t.join();
        }
        // Otherwise the thread is left to end with the process.
    }
}

/// Serves live metrics at `addr` for `command` (`run`, `bench`, `apply`)
/// when one is given: binds it (an address in use, not on this machine or
/// not allowed is bad input, naming it), says where it serves, and starts
/// the metrics thread. `root`: the sysroot (the hostname, the online CPUs
/// the thread keeps to).
pub fn serve(
    addr: Option<SocketAddr>,
    root: &Path,
    command: &'static str,
) -> Result<Option<Server>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr).map_err(|e| bind_error(addr, &e))?;
    let bound = listener
        .local_addr()
        .context("reading the metrics address")?;
    listener
        .set_nonblocking(true)
        .context("setting up the metrics listener")?;
    let hostname = std::fs::read_to_string(root.join("proc/sys/kernel/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let board = Arc::new(Board::new(hostname, command, root));
    if BOARD.set(Arc::clone(&board)).is_err() {
        anyhow::bail!("metrics are served once per process; this is a bug in jitterlab");
    }
    let server = Server::start(listener, board, http::LIMITS)?;
    errln!("jitterlab: serving metrics on http://{bound}/metrics");
    Ok(Some(server))
}

impl Server {
    /// Starts the metrics thread serving `board` on `listener`
    /// (non-blocking), each client held to `limits`.
    pub fn start(listener: TcpListener, board: Arc<Board>, limits: http::Limits) -> Result<Server> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || http::serve(listener, &board, &stop, &limits)
            })
            .context("starting the metrics thread")?;
        Ok(Server {
            stop,
            thread: Some(thread),
        })
    }
}

/// The refusal for an address that cannot be bound, with what to do.
fn bind_error(addr: SocketAddr, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let what = match e.kind() {
        ErrorKind::AddrInUse => format!(
            "the port {} is in use (another exporter, or another jitterlab?); give another port, or port 0 for any free one",
            addr.port()
        ),
        ErrorKind::AddrNotAvailable => format!(
            "{} is not an address of this machine; give one of its addresses, 127.0.0.1, or 0.0.0.0 for every interface",
            addr.ip()
        ),
        ErrorKind::PermissionDenied => format!(
            "listening on port {} needs root (CAP_NET_BIND_SERVICE); give a port of 1024 or more",
            addr.port()
        ),
        _ => format!("cannot listen there: {e}"),
    };
    bad(format!("--metrics {addr}: {what}"))
}

/// The board, when metrics are served.
fn board() -> Option<&'static Board> {
    BOARD.get().map(Arc::as_ref)
}

/// Cell `key` starts; `done` of `planned` cells are done (a run: 0 of 1).
pub fn cell_started(done: usize, planned: usize, key: &CellKey) {
    if let Some(b) = board() {
        b.cell_started(done, planned, key);
    }
}

/// The current cell ended; `done` of `planned` cells are done. Its
/// settings and neighbours are gone.
pub fn cell_ended(done: usize, planned: usize) {
    if let Some(b) = board() {
        b.cell_ended(done, planned);
    }
}

/// The settings now in effect: a configuration's, as applied and read
/// back, and the PM QoS request (`cpu_dma_latency`) when it is made with
/// them.
pub fn settings(reports: &[SettingReport], dma: Option<&DefaultStatus>) {
    if let Some(b) = board() {
        b.set_settings(reports, dma);
    }
}

/// The PM QoS request (`cpu_dma_latency`) made after the settings (a
/// run's, when its probe threads start).
pub fn setting_held(dma: &DefaultStatus) {
    if let Some(b) = board() {
        b.add_setting(dma);
    }
}

/// Checks the neighbours' health (running, or died) for the board. Called
/// by the controller while a cell runs; nothing without metrics.
pub fn neighbours(running: &mut [Running]) {
    if let Some(b) = board() {
        let health = running
            .iter_mut()
            .map(|r| (r.name().to_string(), r.check().is_ok()))
            .collect();
        b.set_neighbours(health);
    }
}

/// A measurement of `kind` starts on `cpus`, one probe thread each: the
/// snapshot publishers for their recorders (none without metrics), and
/// the metrics thread keeps off those CPUs from now on.
pub fn probe_threads(kind: ProbeKind, cpus: &[usize]) -> Vec<Option<Publisher>> {
    match board() {
        Some(b) => b.probe_threads(kind, cpus).into_iter().map(Some).collect(),
        None => Vec::new(),
    }
}

/// `jitterlab monitor --max-latency` watches `cpus`: their alert counters
/// are served from 0 on (see [`Board::alerts_armed`]).
pub fn alerts_armed(cpus: &[usize]) {
    if let Some(b) = board() {
        b.alerts_armed(cpus);
    }
}

/// A window on `cpu` was over `--max-latency`: one more in
/// `jitterlab_alerts_total`. Called by the monitor's writer thread, once
/// per window over the limit; nothing without metrics.
pub fn alert(cpu: usize) {
    if let Some(b) = board() {
        b.alert(cpu);
    }
}

/// The system log refused an alert (it went to stderr): one more in
/// `jitterlab_alert_log_failures_total`.
pub fn alert_log_failed() {
    if let Some(b) = board() {
        b.alert_log_failed();
    }
}

#[cfg(test)]
mod tests;
