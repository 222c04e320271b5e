//! What the metrics thread serves besides the snapshots themselves: the
//! command and host, the current cell and a bench's progress, the settings
//! in effect, the neighbours' health, and the probe threads' snapshot
//! readers — written by the controlling thread at the few moments they
//! change, read under one lock at each scrape — and a monitor's alerts,
//! counted by its writer thread once per window over `--max-latency`.
//!
//! The probe threads never take this lock: they publish through their own
//! triple buffers, whose reading ends live here. The lock is held for a
//! scrape's encoding (microseconds) and for the controller's updates, both
//! on non-real-time threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use jitterlab_core::cell::{CellKey, SettingReport};
use jitterlab_core::metrics_snapshot::{channel, Publisher, Reader};
use jitterlab_core::probe::MetricDef;
use jitterlab_core::result::{DefaultStatus, ProbeKind};

/// The shared state of the metrics of one command.
#[derive(Debug)]
pub struct Board {
    /// The machine's hostname (the `host` label of every series).
    pub host: String,
    /// `run`, `bench` or `apply`.
    pub command: &'static str,
    /// The sysroot: where the online CPUs are read.
    pub root: PathBuf,
    /// Bumped whenever the probe CPUs change, for the metrics thread to
    /// move off them.
    pub cpus_changed: AtomicU64,
    state: Mutex<State>,
}

/// The changing part of the board.
#[derive(Debug, Default)]
pub struct State {
    /// The cell being measured.
    pub cell: Option<CellKey>,
    /// Cells done and planned (a run: one).
    pub cells: Option<(usize, usize)>,
    /// The probe threads of the latest measurement.
    pub threads: Vec<ProbeThread>,
    /// Neighbours of the current cell: name, and whether it still runs.
    pub neighbours: Vec<(String, bool)>,
    /// Settings in effect.
    pub settings: Vec<Setting>,
    /// The probe CPUs of the latest measurement.
    pub probe_cpus: Vec<usize>,
    /// A monitor's alerts, once it watches for them.
    pub alerts: Option<Alerts>,
}

/// The alerts of `jitterlab monitor --max-latency`. They count for the
/// whole command: cells and measurements coming and going leave them be.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Alerts {
    /// Windows over the limit, per CPU.
    pub windows: BTreeMap<usize, u64>,
    /// Alerts the system log refused (written to stderr instead).
    pub log_failures: u64,
}

/// One probe thread whose snapshots are served.
#[derive(Debug)]
pub struct ProbeThread {
    /// The probe's name.
    pub probe: &'static str,
    /// Whether it is periodic (it has overruns).
    pub periodic: bool,
    /// The name of the cell it measures (`configuration/scenario/deployment/probe`).
    pub cell: String,
    /// Index of the thread.
    pub thread: u32,
    /// CPU it runs on.
    pub cpu: usize,
    /// Its metric table (slot `i` of a snapshot is `metrics[i]`).
    pub metrics: &'static [MetricDef],
    /// The reading end of its snapshots.
    pub reader: Reader,
}

/// One setting in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// What it sets (`kernel.timer_migration`, `irq_affinity`,
    /// `cpu_dma_latency`).
    pub name: String,
    /// The value it holds (as read back), or asked for when it could not
    /// be had.
    pub value: String,
    /// Whether the machine holds what was asked for.
    pub in_effect: bool,
}

impl Board {
    /// A board for `command` on the machine called `host`, its system
    /// paths under `root`.
    pub fn new(host: String, command: &'static str, root: &Path) -> Board {
        Board {
            host,
            command,
            root: root.to_path_buf(),
            cpus_changed: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        }
    }

    /// The state, for a scrape or an update. A panic elsewhere while it
    /// was held leaves plain data behind: serving goes on.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cell `key` starts; `done` of `planned` cells are done.
    pub fn cell_started(&self, done: usize, planned: usize, key: &CellKey) {
        let mut s = self.lock();
        s.cell = Some(key.clone());
        s.cells = Some((done, planned));
        s.neighbours.clear();
    }

    /// The current cell ended: `done` of `planned` cells are done, and
    /// neither its neighbours nor its settings are there any more.
    pub fn cell_ended(&self, done: usize, planned: usize) {
        let mut s = self.lock();
        s.cell = None;
        s.cells = Some((done, planned));
        s.neighbours.clear();
        s.settings.clear();
    }

    /// The settings now in effect: `reports` as applied and read back, and
    /// the PM QoS request when one was made or asked for.
    pub fn set_settings(&self, reports: &[SettingReport], dma: Option<&DefaultStatus>) {
        let v: Vec<Setting> = reports
            .iter()
            .map(|r| Setting {
                name: r.name.clone(),
                value: if r.ok {
                    r.verified.clone()
                } else {
                    r.requested.clone()
                },
                in_effect: r.ok,
            })
            .collect();
        self.lock().settings = v;
        if let Some(d) = dma {
            self.add_setting(d);
        }
    }

    /// Adds `status` (the PM QoS request) to the settings in effect.
    pub fn add_setting(&self, status: &DefaultStatus) {
        let mut s = self.lock();
        s.settings.retain(|x| x.name != status.name);
        s.settings.push(Setting {
            name: status.name.clone(),
            value: status.requested.clone(),
            in_effect: status.applied,
        });
    }

    /// The neighbours' health: name, and whether it still runs.
    pub fn set_neighbours(&self, health: Vec<(String, bool)>) {
        self.lock().neighbours = health;
    }

    /// A measurement of `kind` starts on `cpus`, one thread each: replaces
    /// the served threads with new ones, labelled with the current cell,
    /// and returns their publishers (allocated here, on the controller).
    pub fn probe_threads(&self, kind: ProbeKind, cpus: &[usize]) -> Vec<Publisher> {
        let mut s = self.lock();
        let cell = s.cell.as_ref().map(CellKey::name).unwrap_or_default();
        let mut publishers = Vec::with_capacity(cpus.len());
        s.threads.clear();
        for (i, &cpu) in cpus.iter().enumerate() {
            let (publisher, reader) = channel();
            publishers.push(publisher);
            s.threads.push(ProbeThread {
                probe: kind.name(),
                periodic: kind.periodic(),
                cell: cell.clone(),
                thread: i as u32,
                cpu,
                metrics: kind.metrics(),
                reader,
            });
        }
        if s.probe_cpus != cpus {
            s.probe_cpus = cpus.to_vec();
            self.cpus_changed.fetch_add(1, Relaxed);
        }
        publishers
    }

    /// The monitor watches `cpus` for windows over its limit: their
    /// counters are served from 0 on, so the first alert is an increase a
    /// query sees (a series born at 1 is not one).
    pub fn alerts_armed(&self, cpus: &[usize]) {
        let mut s = self.lock();
        let alerts = s.alerts.get_or_insert_with(Alerts::default);
        for &cpu in cpus {
            alerts.windows.entry(cpu).or_insert(0);
        }
    }

    /// A window on `cpu` was over the limit.
    pub fn alert(&self, cpu: usize) {
        let mut s = self.lock();
        let alerts = s.alerts.get_or_insert_with(Alerts::default);
        *alerts.windows.entry(cpu).or_insert(0) += 1;
    }

    /// The system log refused an alert.
    pub fn alert_log_failed(&self) {
        let mut s = self.lock();
        s.alerts.get_or_insert_with(Alerts::default).log_failures += 1;
    }
}
