//! From a spec file or a preset to a validated spec fitted to this machine,
//! and `jitterlab presets`.
//!
//! A spec file is read with a size limit ([`limits::MAX_SPEC_BYTES`]), a
//! preset is fitted to the machine (its online CPUs and what it offers for
//! cache allocation) and to the rows and columns of its load table the user
//! chose (`--cycles`, `--cns`: only a preset with a load table takes them),
//! both are parsed by the one spec parser in core, and the
//! command line's overrides (`--duration`, `--warmup`, `--repetitions`,
//! `--usb-path`) are applied and checked against the same limits. Everything
//! here only reads: a bench and `apply` start from [`load`]'s result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use jitterlab_core::chase::ChaseParams;
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::limits;
use jitterlab_core::preset::{self, PresetChoice, PresetMachine};
use jitterlab_core::spec::{self, Spec, SpecContext};
use jitterlab_core::units::format_duration_exact;
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::neighbour::scenario;
use crate::output::{out, outln};
use crate::system::{host, settings};

/// Where a spec comes from (a file or a preset), and the command line's
/// overrides of it (`bench`, `apply`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecSource {
    /// The spec file.
    pub spec: Option<PathBuf>,
    /// A built-in experiment instead of a spec file.
    pub preset: Option<String>,
    /// `--duration`: every cell's measured duration, ns.
    pub duration: Option<u64>,
    /// `--warmup`: the warm-up before each cell's probe, ns.
    pub warmup: Option<u64>,
    /// `--repetitions`.
    pub repetitions: Option<u32>,
    /// `--usb-path`: the `usb` scenario's directory when the spec gives none.
    pub usb_path: Option<PathBuf>,
    /// `--cycles`, `--cns`: the rows and columns of a preset's load table.
    pub choice: PresetChoice,
}

/// The spec, loaded and validated, with what the machine cannot run.
pub struct Loaded {
    /// The validated spec, with the command line's overrides.
    pub spec: Spec,
    /// Configurations this machine cannot run, with the reason.
    pub unavailable: Vec<(String, String)>,
}

/// Preset `name` fitted to this machine (its online CPUs and what it offers
/// for cache allocation) with the user's `choice` of its load table's rows
/// and columns: the spec text and the configurations it cannot run, with
/// the reason. BadInput for an unknown name, and for a choice the preset
/// takes none of.
fn fitted_preset(
    root: &Path,
    online: &CpuList,
    name: &str,
    choice: &PresetChoice,
) -> Result<(String, Vec<(String, String)>)> {
    let cache = settings::resctrl::capabilities(root)?;
    let machine = PresetMachine {
        online,
        cache: cache.as_ref(),
    };
    let text = preset::chosen_text(name, &machine, choice)
        .ok_or_else(|| {
            bad(format!(
                "there is no preset {name}; list them with: jitterlab presets"
            ))
        })?
        .map_err(bad)?;
    Ok((text, preset::unavailable(name, &machine)))
}

/// Refuses a `--cycles` or `--cns` that lists a value twice: the load
/// table would have the same row or column twice.
fn check_choice(choice: &PresetChoice) -> Result<()> {
    for (i, c) in choice.cycles_ns.iter().enumerate() {
        if choice.cycles_ns[..i].contains(c) {
            return Err(bad(format!(
                "--cycles lists {} twice; give each cycle time once",
                format_duration_exact(*c)
            )));
        }
    }
    for (i, n) in choice.cns.iter().enumerate() {
        if choice.cns[..i].contains(n) {
            return Err(bad(format!(
                "--cns lists {n} twice; give each number of controlled nodes once"
            )));
        }
    }
    Ok(())
}

/// Reads and validates the spec or preset, with the command line's
/// overrides applied.
pub fn load(root: &Path, a: &SpecSource) -> Result<Loaded> {
    let online = host::online_cpus(root)?;
    let (text, file, unavailable) = match (&a.spec, &a.preset) {
        (Some(_), None) if !a.choice.is_empty() => {
            return Err(bad(
                "--cycles and --cns choose the rows and columns of a preset's load table (--preset powerlink); a spec file lists its [[probe]] tables itself",
            ))
        }
        (Some(p), None) => (read_spec(p)?, p.display().to_string(), Vec::new()),
        (None, Some(name)) => {
            check_choice(&a.choice)?;
            let (text, unavailable) = fitted_preset(root, &online, name, &a.choice)?;
            (text, format!("preset {name}"), unavailable)
        }
        (None, None) => {
            return Err(bad(
                "give a SPEC file (e.g. examples/codesys.toml) or --preset NAME (list them with: jitterlab presets)",
            ))
        }
        (Some(_), Some(_)) => return Err(bad("give a spec file or --preset NAME, not both")),
    };
    let builtins: Vec<&str> = scenario::BUILTINS.iter().map(|b| b.name).collect();
    let mut spec = spec::parse(
        &text,
        &file,
        &SpecContext {
            online: &online,
            builtins: &builtins,
        },
    )
    .map_err(|e| bad(e.to_string()))?;
    if let Some(d) = a.duration {
        if d == 0 {
            return Err(bad("--duration must be positive; give e.g. --duration 10s"));
        }
        spec.set_duration(d);
    }
    if let Some(w) = a.warmup {
        spec.warmup_ns = w;
    }
    if let Some(r) = a.repetitions {
        if r == 0 {
            return Err(bad("--repetitions must be at least 1"));
        }
        spec.repetitions = r;
    }
    spec.check_limits().map_err(|e| {
        let flags = match (a.duration.is_some(), a.repetitions.is_some()) {
            (true, true) => "--duration and --repetitions",
            (true, false) => "--duration",
            (false, true) => "--repetitions",
            (false, false) => "",
        };
        // The spec alone was checked by the parser: an override made it so.
        bad(format!("{flags} with {file}: {e}"))
    })?;
    for (i, p) in spec.probes.iter().enumerate() {
        let (key, bytes) = if let Some(c) = p.params.get::<CyclicParams>() {
            ("working_set", Some(c.working_set_bytes))
        } else if let Some(c) = p.params.get::<ChaseParams>() {
            ("buffer", c.buffer_bytes)
        } else {
            continue;
        };
        if let Some(bytes) = bytes {
            super::check_machine_memory(root, &format!("{file}: probe[{i}].{key}: "), bytes)?;
        }
    }
    if let Some(p) = &a.usb_path {
        if !p.is_dir() {
            return Err(bad(format!(
                "--usb-path {} is not a directory; give a directory on the USB drive",
                p.display()
            )));
        }
        for s in spec.scenarios.iter_mut() {
            if s.builtin.as_deref() == Some("usb") && s.usb_path.is_none() {
                s.usb_path = Some(p.display().to_string());
            }
        }
    }
    Ok(Loaded { spec, unavailable })
}

/// Reads a spec file of at most [`limits::MAX_SPEC_BYTES`]; anything else
/// (missing, unreadable, not UTF-8, larger — `/dev/zero` among them) is bad
/// input naming the file.
fn read_spec(p: &Path) -> Result<String> {
    use std::io::Read;
    let refuse = |why: String| {
        bad(format!(
            "cannot read the spec {}: {why}; give the path of a TOML spec (examples/ has some) or use --preset",
            p.display()
        ))
    };
    let file = std::fs::File::open(p).map_err(|e| refuse(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(limits::MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > limits::MAX_SPEC_BYTES {
        return Err(refuse(format!(
            "it is larger than {}, the largest spec jitterlab reads",
            limits::format_size(limits::MAX_SPEC_BYTES)
        )));
    }
    String::from_utf8(bytes).map_err(|_| refuse("it is not UTF-8 text".into()))
}

/// `jitterlab presets`: every preset with what it reproduces; `--show NAME`
/// prints its spec fitted to this machine (a starting point for your own).
pub fn presets(root: &Path, show: Option<&str>) -> Result<ExitCode> {
    let online: CpuList = host::online_cpus(root)?;
    match show {
        Some(name) => out!(
            "{}",
            fitted_preset(root, &online, name, &PresetChoice::default())?.0
        )?,
        None => {
            let cache = settings::resctrl::capabilities(root)?;
            let machine = PresetMachine {
                online: &online,
                cache: cache.as_ref(),
            };
            let w = preset::PRESETS
                .iter()
                .map(|p| p.name.len())
                .max()
                .unwrap_or(0);
            for p in preset::PRESETS {
                outln!("{:<w$}  {}", p.name, p.summary)?;
                outln!("{:<w$}  reproduces: {}", "", p.reproduces)?;
                if let Some(s) = preset::provenance(p.name) {
                    outln!("{:<w$}  of: {}, by {}", "", s.title, s.authors)?;
                    outln!("{:<w$}  emulates: {}", "", s.emulates)?;
                }
                if p.choice {
                    outln!(
                        "{:<w$}  choose its load table's rows and columns: bench --preset {} --cycles TIME,… --cns N,…",
                        "",
                        p.name
                    )?;
                }
                for (c, why) in preset::unavailable(p.name, &machine) {
                    outln!("{:<w$}  configuration {c}: N/A: {why}", "")?;
                }
            }
            outln!(
                "\nrun one with: jitterlab bench --preset NAME (add --dry-run to see its plan)"
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
