//! The checker: turns the raw tables into the model value by value, with
//! every error pointing at `FILE:LINE: KEY`. Holds the value checks shared
//! by all tables (times, sizes, counts, CPU lists, names, frequencies) and
//! the top-level deployments, configurations, scenarios and probes. One
//! place for every refusal, so each error message reads the same way.

use std::ops::Range;

use toml::Spanned;

use super::cache::cache_settings;
use super::param::KindTable;
use super::raw::{RawConfiguration, RawProbe, RawScenario};
use super::{
    sched_fields, CommandSpec, ConfigSettings, Configuration, Deployment, Policy, ProbeScope,
    ProbeSpec, Scenario, SchedError, SpecContext, SpecError, NICES, PRIORITIES,
};
use crate::defaults;
use crate::limits::{self, Count};
use crate::probe::descriptor::MetricUnit;
use crate::probe::kind::ProbeKind;
use crate::units::{parse_duration, parse_size, CpuList};

// ---------------------------------------------------------------------------
// Checking.

/// Where errors point: the file name and the text the spans index.
pub(super) struct Checker<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
    pub(super) ctx: &'a SpecContext<'a>,
    pub(super) warnings: Vec<String>,
}

/// A checked value, or the error that refuses the spec.
pub type Check<T> = Result<T, SpecError>;

impl<'a> Checker<'a> {
    pub(super) fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub(super) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: self.file.to_string(),
            line: self.line(span.start),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// A time, at most [`limits::MAX_TIME_NS`].
    pub(super) fn duration(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        let ns = parse_duration(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        limits::check_time(ns).map_err(|e| self.err(v.span(), key, e))
    }

    /// A count within `bound` (see [`crate::limits`]).
    pub(super) fn count(&self, v: &Spanned<i64>, key: &str, bound: &Count) -> Check<u64> {
        bound
            .check_signed(*v.get_ref())
            .map_err(|e| self.err(v.span(), key, e))
    }

    /// A working set or buffer: the size grammar, at most
    /// [`limits::MAX_MEMORY_BYTES`].
    pub(super) fn memory(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        let b = parse_size(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        limits::check_memory(b).map_err(|e| self.err(v.span(), key, e))
    }

    pub(super) fn positive_duration(
        &self,
        v: &Spanned<String>,
        key: &str,
        what: &str,
    ) -> Check<u64> {
        let ns = self.duration(v, key)?;
        if ns == 0 {
            return Err(self.err(v.span(), key, format!("{what} must be longer than 0")));
        }
        Ok(ns)
    }

    pub(super) fn opt_duration(
        &self,
        v: &Option<Spanned<String>>,
        key: &str,
    ) -> Check<Option<u64>> {
        v.as_ref().map(|v| self.duration(v, key)).transpose()
    }

    /// A CPU list whose CPUs are all online; `None` when it is empty.
    pub(super) fn cpus(&self, v: &Spanned<String>, key: &str) -> Check<Option<Vec<usize>>> {
        let list =
            CpuList::parse(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        let offline: CpuList = list
            .iter()
            .filter(|&c| !self.ctx.online.contains(c))
            .collect();
        if !offline.is_empty() {
            let msg = if offline.len() == 1 {
                format!("CPU {offline} is not online")
            } else {
                format!("CPUs {offline} are not online")
            };
            return Err(self.err(
                v.span(),
                key,
                format!("{msg} (online CPUs: {})", self.ctx.online),
            ));
        }
        Ok((!list.is_empty()).then(|| list.iter().collect()))
    }

    /// A CPU list that must name at least one CPU.
    pub(super) fn nonempty_cpus(
        &self,
        v: &Spanned<String>,
        key: &str,
        what: &str,
    ) -> Check<Vec<usize>> {
        self.cpus(v, key)?.ok_or_else(|| {
            self.err(
                v.span(),
                key,
                format!(
                    "{what} CPU list is empty; name at least one online CPU (online CPUs: {})",
                    self.ctx.online
                ),
            )
        })
    }

    pub(super) fn name(&self, v: &Spanned<String>, key: &str) -> Check<String> {
        let s = v.get_ref();
        if s.is_empty() {
            return Err(self.err(
                v.span(),
                key,
                "name is empty; use ASCII letters, digits, _ and -",
            ));
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.err(
                v.span(),
                key,
                format!(
                    "name {s:?} may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
                ),
            ));
        }
        Ok(s.clone())
    }

    /// Refuses `name` when an earlier entry of the same array (`array`,
    /// e.g. `configuration`, whose names are `used`) already has it.
    pub(super) fn unique<'n>(
        &self,
        name: &str,
        span: Range<usize>,
        key: &str,
        mut used: impl Iterator<Item = &'n str>,
        array: &str,
        what: &str,
    ) -> Check<()> {
        match used.position(|u| u == name) {
            Some(j) => Err(self.err(
                span,
                key,
                format!(
                    "name {name:?} is already used by {array}[{j}]; give each {what} its own name"
                ),
            )),
            None => Ok(()),
        }
    }

    /// The `name` of a table that must have one (`example` shows one).
    pub(super) fn required_name(
        &self,
        v: &Option<Spanned<String>>,
        table: Range<usize>,
        key: &str,
        what: &str,
        example: &str,
    ) -> Check<String> {
        match v {
            Some(v) => self.name(v, key),
            None => Err(self.err(
                table,
                key,
                format!("missing; every {what} needs a name, e.g. name = \"{example}\""),
            )),
        }
    }

    /// A frequency in kHz (see the module doc), above 0.
    pub(super) fn khz(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        parse_khz(v.get_ref()).map_err(|m| self.err(v.span(), key, m))
    }

    pub(super) fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Check<i64> {
        let n = *v.get_ref();
        if n < lo || n > hi {
            return Err(self.err(v.span(), key, out_of_range(n, &(lo..=hi))));
        }
        Ok(n)
    }

    /// Warns when `cpus`, given explicitly as `who: key = "…"`, put
    /// neighbours on probe CPUs of any configuration.
    pub(super) fn warn_overlap(
        &mut self,
        who: &str,
        cpus: &[usize],
        configurations: &[Configuration],
    ) {
        let given: CpuList = cpus.iter().copied().collect();
        for c in configurations {
            let shared: CpuList = c
                .probe_cpus
                .iter()
                .copied()
                .filter(|&p| given.contains(p))
                .collect();
            if !shared.is_empty() {
                self.warnings.push(format!(
                    "{who} = \"{given}\" puts neighbours on probe {} of configuration {}; they compete with the probe directly",
                    cpu_words(&shared),
                    c.name
                ));
            }
        }
    }
}

/// Parses a frequency (`800MHz`, `2.4GHz`, `3600000kHz`) exactly into kHz;
/// the error message names what to write instead.
pub(super) fn parse_khz(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty frequency; give a number with a unit, e.g. 2.4GHz".into());
    }
    if t.starts_with('-') {
        return Err(format!("{t:?} is negative; give a frequency above 0"));
    }
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(format!("{t:?} is not a frequency (e.g. 800MHz, 2.4GHz)"));
    }
    let scale: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "khz" => 1,
        "mhz" => 1_000,
        "ghz" => 1_000_000,
        "" => {
            return Err(format!(
                "{t:?} has no unit; add kHz, MHz or GHz (e.g. {t}MHz)"
            ))
        }
        _ => {
            return Err(format!(
                "{t:?} has unknown unit {:?}; use kHz, MHz or GHz",
                unit.trim()
            ))
        }
    };
    let too_large = || format!("{t:?} is too large");
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_large())?
    };
    let mut khz = int.checked_mul(scale).ok_or_else(too_large)?;
    if !frac.is_empty() {
        let too_fine = || format!("{t:?} is finer than 1 kHz, the resolution of cpufreq");
        // Up to 30 digits: 10^30 times the largest scale still fits in u128.
        if frac.len() > 30 {
            return Err(too_fine());
        }
        let denom = 10u128.pow(frac.len() as u32);
        let scaled = frac.parse::<u128>().map_err(|_| too_fine())? * scale;
        if !scaled.is_multiple_of(denom) {
            return Err(too_fine());
        }
        khz += scaled / denom;
    }
    match u64::try_from(khz) {
        Ok(0) => Err(format!("{t:?} is zero; give a frequency above 0")),
        Ok(khz) => Ok(khz),
        Err(_) => Err(too_large()),
    }
}

/// `5 is out of range 1..=99`.
fn out_of_range(n: i64, range: &std::ops::RangeInclusive<i64>) -> String {
    format!("{n} is out of range {}..={}", range.start(), range.end())
}

/// `CPU 1` or `CPUs 0-1`.
pub(super) fn cpu_words(list: &CpuList) -> String {
    if list.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

pub(super) fn deployments(
    ck: &Checker,
    raw: &Option<Spanned<Vec<Spanned<String>>>>,
) -> Check<Vec<String>> {
    let Some(list) = raw else {
        return Ok(vec!["host".to_string()]);
    };
    if list.get_ref().is_empty() {
        return Err(ck.err(
            list.span(),
            "deployments",
            "no deployment listed; give deployments = [\"host\"] or leave the key out",
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, d) in list.get_ref().iter().enumerate() {
        let key = format!("deployments[{i}]");
        if Deployment::parse(d.get_ref()).is_none() {
            return Err(ck.err(
                d.span(),
                &key,
                format!(
                    "unknown deployment {:?}; use {}",
                    d.get_ref(),
                    Deployment::names()
                ),
            ));
        }
        if out.contains(d.get_ref()) {
            return Err(ck.err(
                d.span(),
                &key,
                format!("deployment {} is listed twice", d.get_ref()),
            ));
        }
        out.push(d.get_ref().clone());
    }
    Ok(out)
}

pub(super) fn configurations(
    ck: &mut Checker,
    raw: &[Spanned<RawConfiguration>],
) -> Check<Vec<Configuration>> {
    let online: Vec<usize> = ck.ctx.online.iter().collect();
    let Some(&last) = online.last() else {
        return Err(ck.err(0..0, "", "no online CPU is known; cannot place the probe"));
    };
    if raw.is_empty() {
        let probe_cpus = vec![last];
        let mut neighbour_cpus: Vec<usize> =
            online.iter().copied().filter(|&c| c != last).collect();
        if neighbour_cpus.is_empty() {
            neighbour_cpus = probe_cpus.clone();
            ck.warnings.push(alone_warning("default", &probe_cpus));
        }
        return Ok(vec![Configuration {
            name: "default".into(),
            probe_cpus,
            neighbour_cpus,
            policy: Policy::Fifo,
            priority: Some(defaults::PRIORITY),
            nice: None,
            dma_latency: true,
            settings: ConfigSettings::default(),
        }]);
    }
    let mut out: Vec<Configuration> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("configuration[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let c = t.get_ref();
        let name = ck.required_name(&c.name, t.span(), &k("name"), "configuration", "tuned")?;
        let span = c.name.as_ref().expect("checked above").span();
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(
            &name,
            span,
            &k("name"),
            used,
            "configuration",
            "configuration",
        )?;
        let probe_cpus = match &c.probe_cpus {
            Some(v) => ck.nonempty_cpus(v, &k("probe_cpus"), "probe")?,
            None => vec![last],
        };
        let neighbour_cpus = match &c.neighbour_cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("neighbour_cpus"), "neighbour")?;
                let given: CpuList = cpus.iter().copied().collect();
                let shared: CpuList = probe_cpus
                    .iter()
                    .copied()
                    .filter(|&p| given.contains(p))
                    .collect();
                if !shared.is_empty() {
                    ck.warnings.push(format!(
                        "configuration {name}: neighbour_cpus = \"{given}\" puts neighbours on probe {}; they compete with the probe directly",
                        cpu_words(&shared)
                    ));
                }
                cpus
            }
            None => {
                let rest: Vec<usize> = online
                    .iter()
                    .copied()
                    .filter(|c| !probe_cpus.contains(c))
                    .collect();
                if rest.is_empty() {
                    ck.warnings.push(alone_warning(&name, &probe_cpus));
                    probe_cpus.clone()
                } else {
                    rest
                }
            }
        };
        let policy = match &c.policy {
            None => Policy::Fifo,
            Some(v) => Policy::parse(v.get_ref()).ok_or_else(|| {
                ck.err(
                    v.span(),
                    &k("policy"),
                    format!("unknown policy {:?}; use fifo, rr or other", v.get_ref()),
                )
            })?,
        };
        let span = |v: &Option<Spanned<i64>>| v.as_ref().map_or(0..0, |v| v.span());
        let value = |v: &Option<Spanned<i64>>| v.as_ref().map(|v| *v.get_ref());
        let (priority, nice) =
            sched_fields(policy, value(&c.priority), value(&c.nice)).map_err(|e| match e {
                SchedError::PriorityWithOther(_) => ck.err(
                    span(&c.priority),
                    &k("priority"),
                    "priority applies only to policy fifo or rr; give nice for policy other",
                ),
                SchedError::NiceWithRealtime(_) => ck.err(
                    span(&c.nice),
                    &k("nice"),
                    format!(
                        "nice applies only to policy other; give priority for policy {}",
                        policy.name()
                    ),
                ),
                SchedError::Priority(n) => ck.err(
                    span(&c.priority),
                    &k("priority"),
                    out_of_range(n, &PRIORITIES),
                ),
                SchedError::Nice(n) => ck.err(span(&c.nice), &k("nice"), out_of_range(n, &NICES)),
            })?;
        let dma_latency = c.dma_latency.as_ref().is_none_or(|v| *v.get_ref());
        let (cache, cache_default) = cache_settings(ck, c, &p)?;
        let irq_cpus = match &c.irq_cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("irq_cpus"), "IRQ")?;
                let shared: CpuList = probe_cpus
                    .iter()
                    .copied()
                    .filter(|p| cpus.contains(p))
                    .collect();
                if !shared.is_empty() {
                    ck.warnings.push(format!(
                        "configuration {name}: irq_cpus includes probe {}; interrupts will still reach the probe",
                        cpu_words(&shared)
                    ));
                }
                Some(cpus)
            }
            None => None,
        };
        let governor = match &c.governor {
            Some(v) => {
                let g = v.get_ref();
                if g.is_empty() || !g.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(ck.err(
                        v.span(),
                        &k("governor"),
                        format!("governor {g:?} is not a cpufreq governor name (e.g. performance, schedutil)"),
                    ));
                }
                Some(g.clone())
            }
            None => None,
        };
        let rt_runtime_us = match &c.rt_runtime_us {
            Some(v) => Some(ck.int(v, &k("rt_runtime_us"), -1, i64::from(i32::MAX))?),
            None => None,
        };
        let min_freq_khz = match &c.min_freq {
            Some(v) => Some(ck.khz(v, &k("min_freq"))?),
            None => None,
        };
        let max_freq_khz = match &c.max_freq {
            Some(v) => Some(ck.khz(v, &k("max_freq"))?),
            None => None,
        };
        if let (Some(min), Some(max), Some(v)) = (min_freq_khz, max_freq_khz, &c.min_freq) {
            if min > max {
                return Err(ck.err(
                    v.span(),
                    &k("min_freq"),
                    format!(
                        "min_freq ({min} kHz) is above max_freq ({max} kHz); lower min_freq or raise max_freq"
                    ),
                ));
            }
        }
        let fair_server_runtime_ns =
            ck.opt_duration(&c.fair_server_runtime, &k("fair_server_runtime"))?;
        out.push(Configuration {
            name,
            probe_cpus,
            neighbour_cpus,
            policy,
            priority,
            nice,
            dma_latency,
            settings: ConfigSettings {
                cache,
                cache_default,
                irq_cpus,
                governor,
                timer_migration: c.timer_migration.as_ref().map(|v| *v.get_ref()),
                rt_runtime_us,
                min_freq_khz,
                max_freq_khz,
                fair_server_runtime_ns,
            },
        });
    }
    Ok(out)
}

/// The warning for a configuration whose probe CPUs leave no CPU for
/// neighbours.
pub(super) fn alone_warning(name: &str, probe_cpus: &[usize]) -> String {
    let list: CpuList = probe_cpus.iter().copied().collect();
    format!(
        "configuration {name}: no online CPU is left besides probe {}, so neighbours share it; the figures show direct contention, not isolation",
        cpu_words(&list)
    )
}

pub(super) fn scenarios(
    ck: &mut Checker,
    raw: &[Spanned<RawScenario>],
    configurations: &[Configuration],
) -> Check<Vec<Scenario>> {
    if raw.is_empty() {
        return Ok(vec![Scenario::idle()]);
    }
    let mut out: Vec<Scenario> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("scenario[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let s = t.get_ref();
        let name = ck.required_name(&s.name, t.span(), &k("name"), "scenario", "cpu")?;
        let span = s.name.as_ref().expect("checked above").span();
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(&name, span, &k("name"), used, "scenario", "scenario")?;
        let builtin = match &s.builtin {
            Some(v) => {
                if !ck.ctx.builtins.contains(&v.get_ref().as_str()) {
                    return Err(ck.err(
                        v.span(),
                        &k("builtin"),
                        format!(
                            "unknown builtin {:?}; use one of {}",
                            v.get_ref(),
                            ck.ctx.builtins.join(", ")
                        ),
                    ));
                }
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let cpus = match &s.cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("cpus"), "neighbour")?;
                ck.warn_overlap(&format!("scenario {name}: cpus"), &cpus, configurations);
                Some(cpus)
            }
            None => None,
        };
        let usb_path = match &s.usb_path {
            Some(v) => {
                if builtin.as_deref() != Some("usb") {
                    return Err(ck.err(
                        v.span(),
                        &k("usb_path"),
                        "usb_path applies only to builtin = \"usb\"; remove it or set builtin = \"usb\"",
                    ));
                }
                if v.get_ref().is_empty() {
                    return Err(ck.err(
                        v.span(),
                        &k("usb_path"),
                        "usb_path is empty; give a directory on the USB drive, e.g. \"/media/usb\"",
                    ));
                }
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let rps_cpus = match &s.rps_cpus {
            Some(v) => {
                if builtin.as_deref() != Some("network") {
                    return Err(ck.err(
                        v.span(),
                        &k("rps_cpus"),
                        "rps_cpus applies only to builtin = \"network\"; remove it or set builtin = \"network\"",
                    ));
                }
                Some(ck.nonempty_cpus(v, &k("rps_cpus"), "RPS")?)
            }
            None => None,
        };
        if let Some(extra) = s.neighbour.get(limits::MAX_NEIGHBOURS) {
            return Err(ck.err(
                extra.span(),
                &format!("{p}.neighbour[{}]", limits::MAX_NEIGHBOURS),
                format!(
                    "scenario {name} has {} neighbours, more than {}, the most one scenario starts; split the load over scenarios",
                    s.neighbour.len(),
                    limits::MAX_NEIGHBOURS
                ),
            ));
        }
        let mut neighbours: Vec<CommandSpec> = Vec::new();
        for (j, nt) in s.neighbour.iter().enumerate() {
            let np = format!("{p}.neighbour[{j}]");
            let nk = |key: &str| format!("{np}.{key}");
            let n = nt.get_ref();
            let argv: Vec<String> = match &n.command {
                Some(v) if v.get_ref().is_empty() => {
                    return Err(ck.err(
                        v.span(),
                        &nk("command"),
                        "command is empty; give the program and its arguments, e.g. [\"stress-ng\", \"--cpu\", \"1\"]",
                    ))
                }
                Some(v) => {
                    let first = &v.get_ref()[0];
                    if first.get_ref().is_empty() {
                        return Err(ck.err(
                            first.span(),
                            &format!("{np}.command[0]"),
                            "the program name is empty; give the program to start, e.g. \"stress-ng\"",
                        ));
                    }
                    v.get_ref().iter().map(|a| a.get_ref().clone()).collect()
                }
                None => {
                    return Err(ck.err(
                        nt.span(),
                        &nk("command"),
                        "missing; give the argument vector, e.g. command = [\"stress-ng\", \"--cpu\", \"1\"]",
                    ))
                }
            };
            let (nname, nspan) = match &n.name {
                Some(v) => (ck.name(v, &nk("name"))?, v.span()),
                None => (
                    argv[0].rsplit('/').next().unwrap_or(&argv[0]).to_string(),
                    nt.span(),
                ),
            };
            let used = neighbours.iter().map(|o| o.name.as_str());
            ck.unique(
                &nname,
                nspan,
                &nk("name"),
                used,
                &format!("{p}.neighbour"),
                "neighbour",
            )?;
            let ncpus = match &n.cpus {
                Some(v) => {
                    let cpus = ck.nonempty_cpus(v, &nk("cpus"), "neighbour")?;
                    ck.warn_overlap(
                        &format!("scenario {name}, neighbour {nname}: cpus"),
                        &cpus,
                        configurations,
                    );
                    Some(cpus)
                }
                None => None,
            };
            neighbours.push(CommandSpec {
                name: nname,
                argv,
                cpus: ncpus,
            });
        }
        if builtin.is_none() && neighbours.is_empty() {
            return Err(ck.err(
                t.span(),
                &p,
                format!("scenario {name} has no load: give builtin = \"idle\" for none, or a [[scenario.neighbour]]"),
            ));
        }
        out.push(Scenario {
            name,
            builtin,
            cpus,
            usb_path,
            rps_cpus,
            neighbours,
        });
    }
    Ok(out)
}

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

pub(super) fn probes(ck: &Checker, raw: &[Spanned<RawProbe>]) -> Check<Vec<ProbeSpec>> {
    if raw.is_empty() {
        return Err(ck.err(
            0..0,
            "probe",
            "no probe; add a [[probe]] table, e.g. kind = \"cyclic\"",
        ));
    }
    let mut out: Vec<ProbeSpec> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("probe[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let r = t.get_ref();
        let kind = match &r.kind {
            None => {
                return Err(ck.err(
                    t.span(),
                    &k("kind"),
                    "missing; give kind = \"cyclic\" or kind = \"wakeup\"",
                ))
            }
            Some(v) => match ProbeKind::parse(v.get_ref()) {
                Some(kind) => kind,
                None => {
                    let kinds: Vec<&str> = ProbeKind::listed().map(ProbeKind::name).collect();
                    return Err(ck.err(
                        v.span(),
                        &k("kind"),
                        format!(
                            "unknown probe kind {:?}; use {}",
                            v.get_ref(),
                            or_list(&kinds)
                        ),
                    ));
                }
            },
        };
        let name = match &r.name {
            Some(v) => ck.name(v, &k("name"))?,
            None => kind.name().to_string(),
        };
        let span = r.name.as_ref().map_or(t.span(), |v| v.span());
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(&name, span, &k("name"), used, "probe", "probe")?;
        let descriptor = kind.descriptor();
        let period_ns = match &r.period {
            Some(v) => {
                let ns = ck.positive_duration(v, &k("period"), "period")?;
                limits::check_period(ns).map_err(|e| ck.err(v.span(), &k("period"), e))?
            }
            None => descriptor.params.default_period_ns,
        };
        // A key that only some kinds take (their tables say which):
        // refused, with the kinds that take it, elsewhere.
        let only = |span: Option<Range<usize>>, key: &str| -> Check<()> {
            match span {
                Some(span) if !descriptor.accepts_spec_key(key) => {
                    // Every kind that takes it: an unlisted kind (the
                    // test-only probe) takes only keys of its own.
                    let names: Vec<String> = ProbeKind::ALL
                        .iter()
                        .filter(|k| k.descriptor().accepts_spec_key(key))
                        .map(|k| format!("kind = \"{}\"", k.name()))
                        .collect();
                    Err(ck.err(
                        span,
                        &k(key),
                        format!(
                            "{key} applies only to {}; remove it from this {} probe",
                            names.join(" or "),
                            kind.name()
                        ),
                    ))
                }
                _ => Ok(()),
            }
        };
        let sp = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.span());
        only(sp(&r.max_exec), "max_exec")?;
        only(sp(&r.max_jitter), "max_jitter")?;
        only(sp(&r.period), "period")?;
        let mut own: Vec<(&String, Range<usize>)> =
            r.own.iter().map(|(key, v)| (key, v.span())).collect();
        own.sort_by_key(|(_, span)| span.start);
        for (key, span) in own {
            only(Some(span), key)?;
        }
        if let Some(v) = &r.max_latency {
            // A probe that counts CPU cycles has no latency to limit.
            let cycles = descriptor
                .metrics
                .first()
                .is_some_and(|m| m.unit == MetricUnit::Cycles);
            if descriptor.main_latency.is_none() && cycles {
                return Err(ck.err(
                    v.span(),
                    &k("max_latency"),
                    format!(
                        "a {0} measures CPU cycles, not a latency; remove max_latency from this {0} probe",
                        kind.name()
                    ),
                ));
            }
            only(Some(v.span()), "max_latency")?;
        }
        let table = KindTable {
            ck,
            kind,
            table: descriptor.params,
            raw: r,
            prefix: p.clone(),
            span: t.span(),
            given: None,
        };
        let params = (descriptor.params.check)(&table, period_ns)?;
        match params.validate(period_ns) {
            Err(e) if !e.when_written || table.has(e.key) => return Err(table.rule(e)),
            _ => {}
        }
        let threshold_ns = match &r.threshold {
            Some(v) => Some(ck.positive_duration(v, &k("threshold"), "threshold")?),
            None => None,
        };
        let window_ns = match &r.window {
            Some(v) => {
                let ns = ck.positive_duration(v, &k("window"), "window")?;
                limits::check_window(ns).map_err(|e| ck.err(v.span(), &k("window"), e))?
            }
            None => defaults::WINDOW_NS,
        };
        let outliers = match &r.outliers {
            Some(v) => ck.count(v, &k("outliers"), &limits::OUTLIERS)? as usize,
            None => defaults::OUTLIERS,
        };
        out.push(ProbeSpec {
            name,
            period_ns,
            threshold_ns,
            window_ns,
            outliers,
            max_latency_ns: ck.opt_duration(&r.max_latency, &k("max_latency"))?,
            max_jitter_ns: ck.opt_duration(&r.max_jitter, &k("max_jitter"))?,
            max_exec_ns: ck.opt_duration(&r.max_exec, &k("max_exec"))?,
            params,
            scope: ProbeScope::default(), // `scope::probe_scopes` fills it in
        });
    }
    Ok(out)
}
