//! The built-in scenarios: the noisy neighbours of the source documents, as
//! argument vectors.
//!
//! Each built-in reproduces one document's load with tools a Debian machine
//! installs from its archive (stress-ng, rt-tests' hackbench), pinned to the
//! neighbour CPUs unless said otherwise. Every stress-ng gets
//! `--metrics-brief`, so its bogo-ops prove that it worked.
//!
//! | scenario | source | load |
//! |---|---|---|
//! | `idle` | 004 | none: the reference |
//! | `cpu` | 004, cpuburn | `stress-ng --cpu N`: one full-load CPU worker per neighbour CPU (N = their number); stress-ng cycles through all its CPU methods, integer, floating point and bit work, as cpuburn kept every unit busy |
//! | `disk` | 004, dd | `stress-ng --hdd 1 --hdd-opts direct,wr-seq,rd-seq --temp-path DISKDIR`: large sequential writes and reads past the page cache, as dd did; on a file system that refuses `O_DIRECT`, without `direct` |
//! | `usb` | 004, dd on a USB drive | the `disk` load in `usb_path` |
//! | `network` | 004, flood ping; 003 | built by the network module |
//! | `scheduling` | 004, hackbench | `hackbench -P -g 4 -f 10 -l 100000000`: 4 groups of 20 processes passing messages, until stopped |
//! | `misc` | 004, kernel compile | stress-ng mix, see below |
//! | `codesys` | 000 | the document's stress-ng line, verbatim |
//! | `redhat` | 001 | four stress-ng instances, see below |
//!
//! **DISKDIR.** The `disk`, `misc` and `usb` loads must reach a block
//! device, and must not write where another user could have prepared the
//! place: they write in a fresh private directory (mode 0700) that the
//! bench makes in `/var/tmp` (`disk`, `misc`) or in `usb_path` (`usb`) —
//! see [`crate::system::workdir`]. Planning refuses a base directory that is
//! missing, not writable, or on tmpfs or ramfs (memory), and writes
//! nothing there.
//!
//! **misc.** A kernel compile creates and ends many short processes (make,
//! the compiler driver, cc1, as), keeps CPUs busy compiling, reads sources
//! and writes objects, and touches a lot of fresh memory: `--fork 2 --vfork 2`
//! (process creation and teardown), `--cpu N`, `--iomix 1 --iomix-bytes
//! 128M` (mixed file I/O in DISKDIR), `--vm 1 --vm-bytes 64M`.
//! stress-ng's `--exec` and `--spawn` would add real `execve`s, but they
//! refuse to run as root, and jitterlab runs as root.
//!
//! **redhat.** The document lists, for the best-effort cores, "1 CPU (80%),
//! 1 memory, 1 virtual memory, 5 LL2 cache, 5 LLC cache" and for the
//! real-time cores "1 CPU (80%)". On the neighbour CPUs: `stress-ng --cpu 1
//! --cpu-load 80 --memrate 1 --vm 1` (named `stress-ng`), `stress-ng
//! --cache 5 --cache-level 2` (`stress-ng-l2`) and `stress-ng --cache 5
//! --cache-level 3` (`stress-ng-llc`) — one stress-ng instance takes one
//! cache level only. On the probe CPUs, at normal priority (nice 0, below
//! the probe's real-time priority): `stress-ng --cpu 1 --cpu-load 80`
//! (`stress-ng-probe-cpus`).

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_sys as sys;

use super::NeighbourSpec;
use crate::error::bad;
use crate::system::workdir::{check_disk_base, DEFAULT_DISK_BASE};

/// The Debian package of stress-ng.
const STRESS_NG_PKG: &str = "stress-ng";
/// The Debian package of hackbench.
const HACKBENCH_PKG: &str = "rt-tests";

/// What a scenario needs to know about the cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioCtx {
    /// CPUs the probe runs on.
    pub probe_cpus: Vec<usize>,
    /// CPUs left to the neighbours.
    pub neighbour_cpus: Vec<usize>,
    /// Where the `disk` and `misc` loads write their files: when planning,
    /// the base directory ([`DEFAULT_DISK_BASE`]); in a running bench, the
    /// fresh private directory jitterlab made in it.
    pub disk_dir: PathBuf,
    /// The `usb` scenario's directory: when planning, its `usb_path`; in a
    /// running bench, the fresh private directory made in it.
    pub usb_path: Option<PathBuf>,
    /// True in a running bench, where the directories above are
    /// jitterlab's own fresh ones: the disk loads probe them for
    /// `O_DIRECT`. When planning (false) they are only checked — an
    /// existing, writable directory, not on tmpfs or ramfs — and nothing is
    /// written.
    pub ready: bool,
}

/// The directory in which built-in scenario `name` needs a fresh private
/// directory for its load files, if it writes any: [`DEFAULT_DISK_BASE`]
/// for `disk` and `misc`, the scenario's `usb_path` for `usb`.
pub fn disk_base(name: &str, usb_path: Option<&Path>) -> Option<PathBuf> {
    match name {
        "disk" | "misc" => Some(PathBuf::from(DEFAULT_DISK_BASE)),
        "usb" => usb_path.map(Path::to_path_buf),
        _ => None,
    }
}

/// A built-in scenario, for listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinInfo {
    /// Its name.
    pub name: &'static str,
    /// One line on what it runs.
    pub summary: &'static str,
    /// The source document it comes from (number in `seeds/`).
    pub seed: &'static str,
}

/// Every built-in scenario, in the order of the listings.
pub const BUILTINS: &[BuiltinInfo] = &[
    BuiltinInfo {
        name: "idle",
        summary: "no neighbour: the reference the other scenarios are compared with",
        seed: "004",
    },
    BuiltinInfo {
        name: "cpu",
        summary: "stress-ng: one full-load CPU worker per neighbour CPU (cpuburn)",
        seed: "004",
    },
    BuiltinInfo {
        name: "disk",
        summary: "stress-ng: sequential direct writes and reads in the work directory (dd)",
        seed: "004",
    },
    BuiltinInfo {
        name: "usb",
        summary: "the disk load in a directory on a USB drive (usb_path)",
        seed: "004",
    },
    BuiltinInfo {
        name: "network",
        summary: "a flood of packets at the probe's network interface",
        seed: "004",
    },
    BuiltinInfo {
        name: "scheduling",
        summary: "hackbench: 80 processes passing messages (rt-tests)",
        seed: "004",
    },
    BuiltinInfo {
        name: "misc",
        summary: "stress-ng: a kernel compile's mix of process creation, CPU, file I/O, memory",
        seed: "004",
    },
    BuiltinInfo {
        name: "codesys",
        summary: "stress-ng: CPU, cache flush, memory thrash, stream, VM and fork workers",
        seed: "000",
    },
    BuiltinInfo {
        name: "redhat",
        summary: "stress-ng: CPU 80 %, memory, VM, L2 and LLC thrash; CPU 80 % on the probe CPUs",
        seed: "001",
    },
    BuiltinInfo {
        name: "cache",
        summary: "stress-ng: one cache-thrashing worker per neighbour CPU",
        seed: "002",
    },
];

/// What a scenario needs started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// These neighbours (none for `idle`).
    Neighbours(Vec<NeighbourSpec>),
    /// The network load, which the network module builds.
    Network,
    /// The scenario cannot run on this machine as configured: why.
    Skip(String),
}

/// The neighbours of built-in scenario `name` for the cell `ctx`.
///
/// Refuses (BadInput) an unknown name, a scenario that needs neighbour CPUs
/// when there are none, and a disk directory that cannot take the load
/// (see [`ScenarioCtx::ready`]). In a running bench, `disk` and `usb` probe
/// their private directory for `O_DIRECT` (see [`direct_io_works`]), which
/// writes and removes one empty file there.
pub fn plan(name: &str, ctx: &ScenarioCtx) -> Result<Planned> {
    let ncpu = || -> Result<String> {
        if ctx.neighbour_cpus.is_empty() {
            return Err(bad(format!(
                "scenario {name} needs at least one neighbour CPU, but every CPU is a probe CPU; leave a CPU for the neighbours"
            )));
        }
        Ok(ctx.neighbour_cpus.len().to_string())
    };
    let on_neighbours = |spec_name: &str, args: &[&str]| {
        stress_ng(spec_name, args, ctx.neighbour_cpus.clone(), None)
    };
    let planned = match name {
        "idle" => Planned::Neighbours(Vec::new()),
        "network" => Planned::Network,
        "cpu" => {
            let n = ncpu()?;
            Planned::Neighbours(vec![on_neighbours("stress-ng", &["--cpu", &n])])
        }
        "disk" => {
            ncpu()?;
            check_disk_dir(name, ctx)?;
            Planned::Neighbours(vec![disk_load(
                "disk",
                &ctx.disk_dir,
                ctx.neighbour_cpus.clone(),
                ctx.ready,
            )?])
        }
        "usb" => {
            ncpu()?;
            let Some(dir) = &ctx.usb_path else {
                return Ok(Planned::Skip(
                    "scenario usb needs a directory on the USB drive: set usb_path = \"/media/usb\" in the scenario".into(),
                ));
            };
            if !dir.is_dir() {
                return Err(bad(format!(
                    "usb_path {} is not a directory; mount the USB drive and name a directory on it",
                    dir.display()
                )));
            }
            if !ctx.ready {
                check_disk_base(dir).map_err(|why| {
                    bad(format!(
                        "usb_path {} {why}; name a writable directory on the USB drive",
                        dir.display()
                    ))
                })?;
            }
            Planned::Neighbours(vec![disk_load(
                "usb",
                dir,
                ctx.neighbour_cpus.clone(),
                ctx.ready,
            )?])
        }
        "scheduling" => {
            ncpu()?;
            Planned::Neighbours(vec![NeighbourSpec {
                name: "hackbench".into(),
                argv: strings(&["hackbench", "-P", "-g", "4", "-f", "10", "-l", "100000000"]),
                cpus: ctx.neighbour_cpus.clone(),
                nice: None,
                package: Some(HACKBENCH_PKG),
            }])
        }
        "misc" => {
            let n = ncpu()?;
            check_disk_dir(name, ctx)?;
            let dir = ctx.disk_dir.to_string_lossy();
            Planned::Neighbours(vec![on_neighbours(
                "stress-ng",
                &[
                    "--fork",
                    "2",
                    "--vfork",
                    "2",
                    "--cpu",
                    &n,
                    "--iomix",
                    "1",
                    "--iomix-bytes",
                    "128M",
                    "--vm",
                    "1",
                    "--vm-bytes",
                    "64M",
                    "--temp-path",
                    &dir,
                ],
            )])
        }
        "codesys" => {
            ncpu()?;
            Planned::Neighbours(vec![on_neighbours(
                "stress-ng",
                &[
                    "--cpu",
                    "8",
                    "--cpu-load",
                    "100",
                    "--cache",
                    "4",
                    "--cache-flush",
                    "--memthrash",
                    "4",
                    "--stream",
                    "10",
                    "--vm",
                    "4",
                    "--vm-bytes",
                    "128M",
                    "--fork",
                    "4",
                ],
            )])
        }
        "cache" => {
            let n = ncpu()?;
            Planned::Neighbours(vec![on_neighbours("stress-ng", &["--cache", &n])])
        }
        "redhat" => {
            ncpu()?;
            if ctx.probe_cpus.is_empty() {
                return Err(bad(
                    "scenario redhat also loads the probe CPUs, but there are none; give the probe a CPU",
                ));
            }
            Planned::Neighbours(vec![
                on_neighbours(
                    "stress-ng",
                    &[
                        "--cpu",
                        "1",
                        "--cpu-load",
                        "80",
                        "--memrate",
                        "1",
                        "--vm",
                        "1",
                    ],
                ),
                on_neighbours("stress-ng-l2", &["--cache", "5", "--cache-level", "2"]),
                on_neighbours("stress-ng-llc", &["--cache", "5", "--cache-level", "3"]),
                stress_ng(
                    "stress-ng-probe-cpus",
                    &["--cpu", "1", "--cpu-load", "80"],
                    ctx.probe_cpus.clone(),
                    Some(0),
                ),
            ])
        }
        _ => {
            let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
            return Err(bad(format!(
                "unknown scenario `{name}`; the built-in scenarios are {}",
                names.join(", ")
            )));
        }
    };
    Ok(planned)
}

/// A stress-ng neighbour: `stress-ng ARGS --metrics-brief`.
fn stress_ng(name: &str, args: &[&str], cpus: Vec<usize>, nice: Option<i32>) -> NeighbourSpec {
    let mut argv = vec!["stress-ng".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.push("--metrics-brief".into());
    NeighbourSpec {
        name: name.into(),
        argv,
        cpus,
        nice,
        package: Some(STRESS_NG_PKG),
    }
}

/// When planning, refuses a base directory for the `disk` and `misc` loads
/// that cannot take them ([`check_disk_base`]), naming it and the fix.
fn check_disk_dir(name: &str, ctx: &ScenarioCtx) -> Result<()> {
    if ctx.ready {
        return Ok(());
    }
    let dir = ctx.disk_dir.display();
    check_disk_base(&ctx.disk_dir).map_err(|why| {
        bad(format!(
            "scenario {name} writes its load files in {dir}, which {why}; it needs a writable directory on a block device: mount one at {dir}, or use builtin = \"usb\" with usb_path = a directory on a disk"
        ))
    })
}

/// The dd-like disk load in `dir`: direct I/O when its file system takes it
/// (probed only when `ready`; when planning, the argument vector assumes it).
fn disk_load(name: &str, dir: &Path, cpus: Vec<usize>, ready: bool) -> Result<NeighbourSpec> {
    let direct = if ready { direct_io_works(dir)? } else { true };
    Ok(disk_spec(name, dir, cpus, direct))
}

/// `stress-ng --hdd 1 --hdd-opts [direct,]wr-seq,rd-seq --temp-path DIR`:
/// one worker writing and reading its file (1 GB by default) sequentially.
fn disk_spec(name: &str, dir: &Path, cpus: Vec<usize>, direct: bool) -> NeighbourSpec {
    let opts = if direct {
        "direct,wr-seq,rd-seq"
    } else {
        "wr-seq,rd-seq"
    };
    let dir = dir.to_string_lossy();
    stress_ng(
        name,
        &["--hdd", "1", "--hdd-opts", opts, "--temp-path", &dir],
        cpus,
        None,
    )
}

/// Whether the file system of `dir` (a private directory jitterlab made)
/// accepts `O_DIRECT`: creates the new probe file `.jitterlab-direct-io`
/// there with `O_DIRECT` (and `O_EXCL | O_NOFOLLOW`: never an existing file
/// or a symbolic link) and removes it — only when it made it. File systems
/// without direct I/O refuse the open with `EINVAL` (tmpfs before Linux
/// 6.6, some FUSE and network file systems); stress-ng's `direct` option
/// would then make its hdd workers fail. Any other failure means the
/// directory cannot be written: BadInput naming it.
pub fn direct_io_works(dir: &Path) -> Result<bool> {
    let probe = dir.join(".jitterlab-direct-io");
    let opened = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(sys::O_DIRECT | sys::O_NOFOLLOW)
        .mode(0o600)
        .open(&probe);
    if opened.is_ok() {
        let _ = fs::remove_file(&probe);
    }
    match opened {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::InvalidInput => Ok(false),
        Err(e) => Err(bad(format!(
            "cannot write a file in {} ({e}); choose a directory jitterlab can write to",
            dir.display()
        ))),
    }
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;

    /// A running bench's context: `disk_dir` is a private directory.
    fn ctx(disk_dir: &Path) -> ScenarioCtx {
        ScenarioCtx {
            probe_cpus: vec![3],
            neighbour_cpus: vec![0, 1, 2],
            disk_dir: disk_dir.to_path_buf(),
            usb_path: None,
            ready: true,
        }
    }

    fn neighbours(name: &str, ctx: &ScenarioCtx) -> Vec<NeighbourSpec> {
        match plan(name, ctx).unwrap() {
            Planned::Neighbours(n) => n,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn sng(name: &str, argv: &str, cpus: Vec<usize>, nice: Option<i32>) -> NeighbourSpec {
        NeighbourSpec {
            name: name.into(),
            argv: argv.split(' ').map(String::from).collect(),
            cpus,
            nice,
            package: Some("stress-ng"),
        }
    }

    fn bad_msg(name: &str, ctx: &ScenarioCtx) -> String {
        let e = plan(name, ctx).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        e.to_string()
    }

    #[test]
    fn every_builtin_plans_its_exact_argument_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().display().to_string();
        let c = ctx(dir.path());
        let n = vec![0, 1, 2];
        assert_eq!(neighbours("idle", &c), vec![]);
        assert_eq!(plan("network", &c).unwrap(), Planned::Network);
        assert_eq!(
            neighbours("cpu", &c),
            vec![sng(
                "stress-ng",
                "stress-ng --cpu 3 --metrics-brief",
                n.clone(),
                None
            )]
        );
        assert_eq!(
            neighbours("scheduling", &c),
            vec![NeighbourSpec {
                name: "hackbench".into(),
                argv: strings(&["hackbench", "-P", "-g", "4", "-f", "10", "-l", "100000000"]),
                cpus: n.clone(),
                nice: None,
                package: Some("rt-tests"),
            }]
        );
        assert_eq!(
            neighbours("misc", &c),
            vec![sng(
                "stress-ng",
                &format!("stress-ng --fork 2 --vfork 2 --cpu 3 --iomix 1 --iomix-bytes 128M --vm 1 --vm-bytes 64M --temp-path {w} --metrics-brief"),
                n.clone(),
                None
            )]
        );
        assert_eq!(
            neighbours("codesys", &c),
            vec![sng(
                "stress-ng",
                "stress-ng --cpu 8 --cpu-load 100 --cache 4 --cache-flush --memthrash 4 --stream 10 --vm 4 --vm-bytes 128M --fork 4 --metrics-brief",
                n.clone(),
                None
            )]
        );
        assert_eq!(
            neighbours("redhat", &c),
            vec![
                sng(
                    "stress-ng",
                    "stress-ng --cpu 1 --cpu-load 80 --memrate 1 --vm 1 --metrics-brief",
                    n.clone(),
                    None
                ),
                sng(
                    "stress-ng-l2",
                    "stress-ng --cache 5 --cache-level 2 --metrics-brief",
                    n.clone(),
                    None
                ),
                sng(
                    "stress-ng-llc",
                    "stress-ng --cache 5 --cache-level 3 --metrics-brief",
                    n.clone(),
                    None
                ),
                sng(
                    "stress-ng-probe-cpus",
                    "stress-ng --cpu 1 --cpu-load 80 --metrics-brief",
                    vec![3],
                    Some(0)
                ),
            ]
        );
        assert_eq!(
            neighbours("cache", &c),
            vec![sng(
                "stress-ng",
                "stress-ng --cache 3 --metrics-brief",
                n.clone(),
                None
            )]
        );
        let direct = direct_io_works(dir.path()).unwrap();
        assert_eq!(
            neighbours("disk", &c),
            vec![disk_spec("disk", dir.path(), n.clone(), direct)]
        );
        // The O_DIRECT probe leaves nothing behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);

        let usb = tempfile::tempdir().unwrap();
        let with_usb = ScenarioCtx {
            usb_path: Some(usb.path().to_path_buf()),
            ..c.clone()
        };
        let direct = direct_io_works(usb.path()).unwrap();
        assert_eq!(
            neighbours("usb", &with_usb),
            vec![disk_spec("usb", usb.path(), n.clone(), direct)]
        );
        assert_eq!(
            BUILTINS.iter().map(|b| b.name).collect::<Vec<_>>(),
            [
                "idle",
                "cpu",
                "disk",
                "usb",
                "network",
                "scheduling",
                "misc",
                "codesys",
                "redhat",
                "cache"
            ]
        );
    }

    #[test]
    fn disk_load_drops_direct_where_the_file_system_refuses_it() {
        let dir = Path::new("/mnt/usb/load");
        assert_eq!(
            disk_spec("usb", dir, vec![1], true),
            sng(
                "usb",
                "stress-ng --hdd 1 --hdd-opts direct,wr-seq,rd-seq --temp-path /mnt/usb/load --metrics-brief",
                vec![1],
                None
            )
        );
        assert_eq!(
            disk_spec("disk", dir, vec![1], false),
            sng(
                "disk",
                "stress-ng --hdd 1 --hdd-opts wr-seq,rd-seq --temp-path /mnt/usb/load --metrics-brief",
                vec![1],
                None
            )
        );
    }

    #[test]
    fn the_direct_io_probe_never_follows_or_removes_what_it_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let planted = dir.path().join(".jitterlab-direct-io");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let e = direct_io_works(dir.path()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot write a file in {} (File exists (os error 17)); choose a directory jitterlab can write to",
                dir.path().display()
            )
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(fs::symlink_metadata(&planted)
            .unwrap()
            .file_type()
            .is_symlink());
        fs::remove_file(&planted).unwrap();
        let direct = direct_io_works(dir.path()).unwrap();
        assert_eq!(direct, direct_io_works(dir.path()).unwrap());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn refusals_name_what_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        assert_eq!(
            plan("usb", &c).unwrap(),
            Planned::Skip(
                "scenario usb needs a directory on the USB drive: set usb_path = \"/media/usb\" in the scenario".into()
            )
        );
        let missing = dir.path().join("not-mounted");
        let no_usb = ScenarioCtx {
            usb_path: Some(missing.clone()),
            ..c.clone()
        };
        assert_eq!(
            bad_msg("usb", &no_usb),
            format!(
                "usb_path {} is not a directory; mount the USB drive and name a directory on it",
                missing.display()
            )
        );
        let no_workdir = ScenarioCtx {
            disk_dir: missing.clone(),
            ..c.clone()
        };
        assert_eq!(
            bad_msg("disk", &no_workdir),
            format!(
                "cannot write a file in {} (No such file or directory (os error 2)); choose a directory jitterlab can write to",
                missing.display()
            )
        );
        // When planning, the base is checked and nothing is written.
        let planning = ScenarioCtx {
            ready: false,
            ..no_workdir.clone()
        };
        for name in ["disk", "misc"] {
            assert_eq!(
                bad_msg(name, &planning),
                format!(
                    "scenario {name} writes its load files in {0}, which cannot be used (No such file or directory (os error 2)); it needs a writable directory on a block device: mount one at {0}, or use builtin = \"usb\" with usb_path = a directory on a disk",
                    missing.display()
                )
            );
        }
        if sys::filesystem_type(Path::new("/dev/shm")).ok() == Some(sys::TMPFS_MAGIC) {
            let shm = ScenarioCtx {
                disk_dir: PathBuf::from("/dev/shm"),
                usb_path: Some(PathBuf::from("/dev/shm")),
                ready: false,
                ..c.clone()
            };
            assert_eq!(
                bad_msg("disk", &shm),
                "scenario disk writes its load files in /dev/shm, which is on tmpfs (memory, not a block device); it needs a writable directory on a block device: mount one at /dev/shm, or use builtin = \"usb\" with usb_path = a directory on a disk"
            );
            assert_eq!(
                bad_msg("usb", &shm),
                "usb_path /dev/shm is on tmpfs (memory, not a block device); name a writable directory on the USB drive"
            );
        } else {
            eprintln!("skipping the tmpfs refusals: /dev/shm is not tmpfs here");
        }
        let base = tempfile::tempdir().unwrap();
        let fine = ScenarioCtx {
            disk_dir: base.path().to_path_buf(),
            ready: false,
            ..c.clone()
        };
        // The argument vector assumes direct I/O; nothing was written.
        assert_eq!(
            neighbours("disk", &fine),
            vec![disk_spec("disk", base.path(), vec![0, 1, 2], true)]
        );
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0);
        assert_eq!(
            [
                disk_base("disk", None),
                disk_base("misc", Some(Path::new("/x"))),
                disk_base("usb", Some(Path::new("/media/usb"))),
                disk_base("usb", None),
                disk_base("cpu", None),
            ],
            [
                Some(PathBuf::from("/var/tmp")),
                Some(PathBuf::from("/var/tmp")),
                Some(PathBuf::from("/media/usb")),
                None,
                None
            ]
        );
        let all_probe = ScenarioCtx {
            probe_cpus: vec![0, 1],
            neighbour_cpus: vec![],
            ..c.clone()
        };
        for name in [
            "cpu",
            "disk",
            "usb",
            "scheduling",
            "misc",
            "codesys",
            "redhat",
            "cache",
        ] {
            assert_eq!(
                bad_msg(name, &all_probe),
                format!("scenario {name} needs at least one neighbour CPU, but every CPU is a probe CPU; leave a CPU for the neighbours")
            );
        }
        // Neither idle nor network needs neighbour CPUs.
        assert_eq!(
            plan("idle", &all_probe).unwrap(),
            Planned::Neighbours(vec![])
        );
        assert_eq!(plan("network", &all_probe).unwrap(), Planned::Network);
        let no_probe = ScenarioCtx {
            probe_cpus: vec![],
            ..c.clone()
        };
        assert_eq!(
            bad_msg("redhat", &no_probe),
            "scenario redhat also loads the probe CPUs, but there are none; give the probe a CPU"
        );
        assert_eq!(
            bad_msg("cpuburn", &c),
            "unknown scenario `cpuburn`; the built-in scenarios are idle, cpu, disk, usb, network, scheduling, misc, codesys, redhat, cache"
        );
    }
}
