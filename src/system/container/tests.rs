//! The container module on fake trees: the engine's argument vectors (exact),
//! the image's files, every host quirk, and the real-time parent cgroup
//! applied and restored — by the setting and by `jitterlab restore` — with
//! the whole fake tree compared.

use std::fs;
use std::path::{Path, PathBuf};

use serial_test::serial;

use super::image::{build_args, build_id, containerfile, context_files, parse_ldd, tag};
use super::quirks::{hard_limits, has_capability, ulimits, CgroupLayout, Hard, Ulimits};
use super::rt_parent::{Budget, RtParent};
use super::run::{ContainerRun, RtLimits};
use super::*;
use crate::system::journal::undo::container::{
    self as undo, is_container_name, remove_parent, rm_args,
};
use crate::system::journal::{self, Journal};
use crate::system::settings::testing::journal_env;

/// `/proc/self/mountinfo` of the machine this was written on (Debian 12, a
/// hybrid cgroup layout) before the hugetlb fix: hugetlb has no v1 mount.
const MOUNTINFO_SPLIT: &str = "\
22 1 253:1 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

/// The same machine after `mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb`.
fn mountinfo_fixed() -> String {
    format!("{MOUNTINFO_SPLIT}42 31 0:39 / /sys/fs/cgroup/hugetlb rw,relatime - cgroup cgroup rw,hugetlb\n")
}

/// `/proc/cgroups` of that machine before the fix (hugetlb: hierarchy 0).
const PROC_CGROUPS_SPLIT: &str = "\
#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t3\t1\t1
cpu\t1\t1\t1
cpuacct\t2\t1\t1
blkio\t7\t1\t1
memory\t4\t7\t1
devices\t5\t1\t1
freezer\t6\t1\t1
net_cls\t0\t1\t1
perf_event\t0\t1\t1
net_prio\t0\t1\t1
hugetlb\t0\t1\t1
pids\t8\t1\t1
";

/// `/proc/self/limits` of a root shell on that machine: hard limits below
/// podman's defaults, RLIMIT_RTPRIO 0.
const LIMITS_LOW: &str = "\
Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max file size             unlimited            unlimited            bytes     
Max data size             unlimited            unlimited            bytes     
Max stack size            8388608              unlimited            bytes     
Max core file size        0                    unlimited            bytes     
Max resident set          unlimited            unlimited            bytes     
Max processes             96365                96365                processes 
Max open files            20000                20000                files     
Max locked memory         8388608              8388608              bytes     
Max address space         unlimited            unlimited            bytes     
Max file locks            unlimited            unlimited            locks     
Max pending signals       96365                96365                signals   
Max msgqueue size         819200               819200               bytes     
Max nice priority         0                    0                    
Max realtime priority     0                    0                    
Max realtime timeout      unlimited            unlimited            us        
";

/// `CapEff` without CAP_SYS_RESOURCE (bit 24), as that shell had it.
const STATUS_NO_SYS_RESOURCE: &str = "Name:\tbash\nUid:\t0\t0\t0\t0\nCapEff:\t000001fffeffffff\n";
/// Every capability.
const STATUS_ALL_CAPS: &str = "Name:\tbash\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n";

/// Writes `files` (path under the root, content) into a fresh tree.
fn tree_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    dir
}

/// Every file and directory under `dir` (directories with `None`), without
/// `run/` (the machine lock of a fake sysroot).
fn tree(dir: &Path) -> Vec<(PathBuf, Option<String>)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, Option<String>)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            if rel == Path::new("run") {
                continue;
            }
            if p.is_dir() {
                out.push((rel, None));
                walk(base, &p, out);
            } else {
                out.push((rel, Some(fs::read_to_string(&p).unwrap())));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn engines_are_named_and_their_version_read() {
    assert_eq!(Engine::parse("podman"), Some(Engine::Podman));
    assert_eq!(Engine::parse("docker"), Some(Engine::Docker));
    assert_eq!(Engine::parse("lxc"), None);
    assert_eq!(Engine::Docker.package(), "docker.io");
    assert_eq!(
        version_of("Client:       Podman Engine\nVersion:      4.3.1\nAPI Version:  4.3.1\n"),
        "4.3.1"
    );
    assert_eq!(
        version_of("Client:\n Version:           28.2.2\n API version:       1.50\n"),
        "28.2.2"
    );
    assert_eq!(version_of("nothing"), "unknown version");
    let probe = |state| EngineProbe {
        engine: Engine::Docker,
        state,
    };
    assert_eq!(
        probe(EngineState::Missing).describe(),
        "docker: not installed"
    );
    assert_eq!(
        probe(EngineState::Broken(
            "/usr/local/bin/docker".into(),
            "Cannot connect to the Docker daemon".into()
        ))
        .describe(),
        "docker (/usr/local/bin/docker) does not answer `docker version`: Cannot connect to the Docker daemon"
    );
    assert_eq!(
        probe(EngineState::Working(
            "/usr/bin/docker".into(),
            "28.2.2".into()
        ))
        .describe(),
        "docker 28.2.2 (/usr/bin/docker) works"
    );
}

#[test]
fn the_argument_vector_is_exact() {
    let mut run = ContainerRun {
        engine: Engine::Podman,
        image: "localhost/jitterlab:abc".into(),
        name: ContainerRun::name_for(4242, 7),
        cpus: vec![1, 2, 3],
        rt: Some(RtLimits {
            parent: "/jitterlab-ctr-0123456789abcdef".into(),
            period_us: 1_000_000,
            runtime_us: 950_000,
        }),
        ulimits: vec!["nofile=1024:1024".into(), "nproc=1024:1024".into()],
        dma_device: Some("/dev/cpu_dma_latency".into()),
        network: None,
        mounts: Vec::new(),
        argv: vec![
            "run".into(),
            "cyclic".into(),
            "--no-db".into(),
            "--stream".into(),
        ],
    };
    assert_eq!(
        run.args().unwrap().join(" "),
        "--cgroup-manager=cgroupfs run --rm --pull=never --log-driver=none --name jitterlab-4242-7 \
--network none --cpuset-cpus 1-3 --cgroup-parent /jitterlab-ctr-0123456789abcdef \
--cpu-rt-period 1000000 --cpu-rt-runtime 950000 --cap-add SYS_NICE --cap-add IPC_LOCK \
--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --device /dev/cpu_dma_latency \
localhost/jitterlab:abc run cyclic --no-db --stream"
    );
    // Without RT group scheduling, with a namespace to join.
    run.rt = None;
    run.ulimits = vec!["rtprio=99:99".into(), "memlock=-1:-1".into()];
    run.dma_device = None;
    run.network = Some("jl-ctrl".into());
    run.cpus = vec![1];
    assert_eq!(
        run.args().unwrap().join(" "),
        "run --rm --pull=never --log-driver=none --name jitterlab-4242-7 \
--network ns:/run/netns/jl-ctrl --cpuset-cpus 1 --cap-add SYS_NICE --cap-add IPC_LOCK \
--ulimit rtprio=99:99 --ulimit memlock=-1:-1 localhost/jitterlab:abc run cyclic --no-db --stream"
    );
    run.engine = Engine::Docker;
    assert_eq!(
        run.args().unwrap_err().to_string(),
        "docker cannot join the network namespace jl-ctrl by its path; use --engine podman"
    );
    run.network = None;
    assert_eq!(
        run.args().unwrap()[..7].join(" "),
        "run --rm --pull=never --log-driver=none --name jitterlab-4242-7 --network"
    );
    assert_eq!(
        rm_args(Engine::Podman, "jitterlab-1-2").join(" "),
        "rm -f --time 0 jitterlab-1-2"
    );
    assert_eq!(
        rm_args(Engine::Docker, "jitterlab-1-2").join(" "),
        "rm -f jitterlab-1-2"
    );
}

#[test]
fn only_jitterlab_names_are_removed() {
    assert!(is_container_name("jitterlab-4242-1"));
    for bad in [
        "jitterlab-4242",
        "jitterlab--1",
        "jitterlab-a-1",
        "other-1-2",
        "jitterlab-1-2-3",
    ] {
        assert!(!is_container_name(bad), "{bad}");
    }
    assert_eq!(
        undo::remove_container("podman", "my-database"),
        (
            "left container my-database alone: it is not a name jitterlab gives its containers"
                .to_string(),
            true
        )
    );
    assert_eq!(
        undo::remove_container("lxc", "jitterlab-1-1"),
        (
            "left container jitterlab-1-1 alone: \"lxc\" is not an engine jitterlab drives"
                .to_string(),
            true
        )
    );
}

/// What `ldd` says of the debug binary on the machine this was written on.
const LDD: &str = "\
\tlinux-vdso.so.1 (0x00007f6a779f4000)
\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f6a779c3000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f6a76b20000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f6a7693e000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f6a779f6000)
";

#[test]
fn the_image_holds_the_binary_its_libraries_and_the_loader() {
    let libs = parse_ldd(LDD).unwrap();
    let files: Vec<(String, String)> = context_files(Path::new("/proc/self/exe"), &libs)
        .into_iter()
        .map(|f| (f.from.display().to_string(), f.to.display().to_string()))
        .collect();
    let same = |p: &str| (p.to_string(), p.to_string());
    assert_eq!(
        files,
        [
            ("/proc/self/exe".to_string(), "/jitterlab".to_string()),
            same("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
            same("/lib/x86_64-linux-gnu/libm.so.6"),
            same("/lib/x86_64-linux-gnu/libc.so.6"),
            same("/lib64/ld-linux-x86-64.so.2"),
        ]
    );
    assert_eq!(
        parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err(),
        "the loader cannot find libfoo.so.1, which jitterlab links; install it"
    );
    assert_eq!(
        parse_ldd("\tstatically linked\n").unwrap(),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        parse_ldd("\tnot a dynamic executable\n").unwrap(),
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        containerfile("abc"),
        format!(
            "# jitterlab {}: the running binary and the libraries it links, nothing else\nFROM scratch\nCOPY . /\nLABEL jitterlab.build-id=\"abc\"\nENTRYPOINT [\"/jitterlab\"]\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(tag("abc"), "localhost/jitterlab:abc");
    assert_eq!(
        build_args(Engine::Podman, Path::new("/t/Containerfile"), Path::new("/t/rootfs"), "localhost/jitterlab:abc").join(" "),
        "build --pull=never --quiet --file /t/Containerfile --tag localhost/jitterlab:abc /t/rootfs"
    );
    assert_eq!(
        build_args(
            Engine::Docker,
            Path::new("/t/Containerfile"),
            Path::new("/t/rootfs"),
            "localhost/jitterlab:abc"
        )
        .join(" "),
        "build --quiet --file /t/Containerfile --tag localhost/jitterlab:abc /t/rootfs"
    );
}

#[test]
fn the_tag_is_the_build_id_or_a_hash() {
    let me = fs::read("/proc/self/exe").unwrap();
    let id = build_id(&me);
    // The linker's note: 20 bytes of SHA-1 (Debian's default), in hex.
    assert!(
        id.len() >= 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert!(!id.starts_with('h'), "{id}");
    let other = build_id(b"not an ELF file");
    assert_eq!(other, build_id(b"not an ELF file"));
    assert!(other.starts_with('h') && other.len() == 17, "{other}");
    assert_ne!(other, build_id(b"not an ELF file either"));
}

#[test]
fn a_controller_in_cgroup_v2_beside_v1_is_the_split_crun_refuses() {
    let root = tree_with(&[
        ("proc/self/mountinfo", MOUNTINFO_SPLIT),
        ("proc/cgroups", PROC_CGROUPS_SPLIT),
        ("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"),
    ]);
    let layout = CgroupLayout::read(root.path());
    assert_eq!(layout.cpu_v1(), Some(Path::new("/sys/fs/cgroup/cpu")));
    assert_eq!(
        layout.v2.as_deref(),
        Some(Path::new("/sys/fs/cgroup/unified"))
    );
    let split = layout.split().expect("hugetlb is split");
    assert_eq!(split.controllers, ["hugetlb"]);
    assert_eq!(
        split.summary(),
        "the hugetlb controller sits in cgroup v2 (/sys/fs/cgroup/unified) while the others are v1: the container runtime (crun) refuses this hybrid mode (\"cgroups in hybrid mode not supported, drop all controllers from cgroupv2\"), so no container can start"
    );
    assert_eq!(
        split.fix(),
        "mkdir -p /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb"
    );
    let e = refuse_host(root.path(), 0).unwrap_err();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        format!("{}; fix: {}", split.summary(), split.fix())
    );

    // Without the v2 controllers file, /proc/cgroups says it (hierarchy 0);
    // net_cls and friends are v1-only and not counted.
    fs::remove_file(root.path().join("sys/fs/cgroup/unified/cgroup.controllers")).unwrap();
    assert_eq!(
        CgroupLayout::read(root.path()).split().unwrap().controllers,
        ["hugetlb"]
    );

    // After the fix: hugetlb has its v1 hierarchy, v2 holds nothing.
    let fixed = tree_with(&[
        ("proc/self/mountinfo", &mountinfo_fixed()),
        (
            "proc/cgroups",
            &PROC_CGROUPS_SPLIT.replace("hugetlb\t0", "hugetlb\t10"),
        ),
        ("sys/fs/cgroup/unified/cgroup.controllers", "\n"),
    ]);
    assert_eq!(CgroupLayout::read(fixed.path()).split(), None);
    refuse_host(fixed.path(), 0).unwrap();

    // Pure cgroup v2 (io is blkio's v2 name): no split, no cpu v1.
    let v2 = tree_with(&[
        (
            "proc/self/mountinfo",
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        ),
        (
            "sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory hugetlb pids rdma misc\n",
        ),
    ]);
    let layout = CgroupLayout::read(v2.path());
    assert_eq!((layout.split(), layout.cpu_v1()), (None, None));
    assert_eq!(
        layout.v2_controllers.unwrap(),
        ["cpuset", "cpu", "blkio", "memory", "hugetlb", "pids", "rdma", "misc"]
    );
    assert_eq!(
        refuse_host(v2.path(), 1000).unwrap_err().to_string(),
        "deployment container needs root: jitterlab journals a parent cgroup and starts the container with SYS_NICE and IPC_LOCK, which a rootless engine cannot grant beyond your own limits; run jitterlab as root (sudo)"
    );
}

#[test]
fn low_hard_limits_become_flags_of_the_container_not_host_changes() {
    let hard = hard_limits(LIMITS_LOW);
    assert_eq!(hard["Max open files"], Hard::Value(20_000));
    assert_eq!(hard["Max cpu time"], Hard::Unlimited);
    assert_eq!(hard["Max nice priority"], Hard::Value(0));
    assert_eq!(has_capability(STATUS_NO_SYS_RESOURCE, 24), Some(false));
    assert_eq!(has_capability(STATUS_ALL_CAPS, 24), Some(true));
    assert_eq!(has_capability("Name:\tx\n", 24), None);

    let low = ulimits(
        Engine::Podman,
        Some(LIMITS_LOW),
        Some(STATUS_NO_SYS_RESOURCE),
    );
    assert_eq!(low.flags, ["nofile=1024:1024", "nproc=1024:1024"]);
    assert_eq!(
        low.notes,
        [
            "the hard limits of this process (open files 20000, processes 96365) are below podman's default of 1048576 and it lacks CAP_SYS_RESOURCE to raise them, so podman could not start a container with its defaults: jitterlab passes --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 itself (a flag of the container, not a change to the host)",
            "RLIMIT_RTPRIO's hard limit here is 0 and this process lacks CAP_SYS_RESOURCE to raise it: the container gets no --ulimit rtprio=99:99, and its root sets SCHED_FIFO through CAP_SYS_NICE (--cap-add SYS_NICE)",
            "RLIMIT_MEMLOCK's hard limit here is 8388608 bytes and this process lacks CAP_SYS_RESOURCE to raise it: the container gets no --ulimit memlock=-1:-1, and its root locks memory through CAP_IPC_LOCK (--cap-add IPC_LOCK)",
        ]
    );
    // With CAP_SYS_RESOURCE the engine raises what it needs.
    assert_eq!(
        ulimits(Engine::Podman, Some(LIMITS_LOW), Some(STATUS_ALL_CAPS)),
        Ulimits {
            flags: vec!["rtprio=99:99".into(), "memlock=-1:-1".into()],
            notes: vec![],
        }
    );
    // High hard limits need nothing either.
    let high = LIMITS_LOW
        .replace(
            "96365                96365  ",
            "4194304              4194304",
        )
        .replace(
            "20000                20000  ",
            "1048576              1048576",
        )
        .replace(
            "8388608              8388608",
            "unlimited            unlimited",
        )
        .replace(
            "Max realtime priority     0                    0",
            "Max realtime priority     99                   99",
        );
    assert_eq!(
        ulimits(Engine::Podman, Some(&high), Some(STATUS_NO_SYS_RESOURCE)).flags,
        ["rtprio=99:99", "memlock=-1:-1"]
    );
    // Docker's daemon starts containers with its own limits.
    assert_eq!(
        ulimits(
            Engine::Docker,
            Some(LIMITS_LOW),
            Some(STATUS_NO_SYS_RESOURCE)
        ),
        Ulimits {
            flags: vec!["rtprio=99:99".into(), "memlock=-1:-1".into()],
            notes: vec![],
        }
    );
}

/// A fake `cpu` hierarchy with RT group scheduling: the root's 950000 µs
/// per 1000000 µs, podman's parent with none, another group with 100000 µs
/// per 500000 µs (200000 µs of the root's period).
fn rt_tree() -> tempfile::TempDir {
    tree_with(&[
        ("proc/self/mountinfo", &mountinfo_fixed()),
        (
            "proc/cgroups",
            &PROC_CGROUPS_SPLIT.replace("hugetlb\t0", "hugetlb\t10"),
        ),
        ("sys/fs/cgroup/unified/cgroup.controllers", "\n"),
        ("sys/fs/cgroup/cpu/cpu.rt_runtime_us", "950000\n"),
        ("sys/fs/cgroup/cpu/cpu.rt_period_us", "1000000\n"),
        ("sys/fs/cgroup/cpu/tasks", ""),
        ("sys/fs/cgroup/cpu/libpod_parent/cpu.rt_runtime_us", "0\n"),
        (
            "sys/fs/cgroup/cpu/libpod_parent/cpu.rt_period_us",
            "1000000\n",
        ),
        ("sys/fs/cgroup/cpu/plc/cpu.rt_runtime_us", "100000\n"),
        ("sys/fs/cgroup/cpu/plc/cpu.rt_period_us", "500000\n"),
        ("sys/fs/cgroup/memory/tasks", ""),
    ])
}

#[test]
fn the_budget_is_what_the_root_and_the_other_groups_leave() {
    let root = rt_tree();
    let cpu = root.path().join("sys/fs/cgroup/cpu");
    assert_eq!(
        Budget::read(&cpu).unwrap(),
        Some(Budget {
            period_us: 1_000_000,
            runtime_us: 750_000,
            root_runtime_us: 950_000,
            taken: vec![("plc".into(), 200_000)],
        })
    );
    // RT throttling off: the whole period.
    fs::write(cpu.join("cpu.rt_runtime_us"), "-1\n").unwrap();
    assert_eq!(Budget::read(&cpu).unwrap().unwrap().runtime_us, 1_000_000);
    // Nothing left.
    fs::write(cpu.join("cpu.rt_runtime_us"), "200000\n").unwrap();
    assert_eq!(
        Budget::read(&cpu).unwrap_err(),
        format!(
            "no real-time budget is left in {c}: its 200000 µs per 1000000 µs are held by plc (200000 µs); give some back (echo 0 > {c}/GROUP/cpu.rt_runtime_us) or raise kernel.sched_rt_runtime_us",
            c = cpu.display()
        )
    );
    // No RT group scheduling.
    fs::remove_file(cpu.join("cpu.rt_runtime_us")).unwrap();
    assert_eq!(Budget::read(&cpu).unwrap(), None);
    assert!(RtParent::plan(root.path()).unwrap().is_none());
}

#[test]
#[serial]
fn the_parent_cgroup_is_journaled_given_its_budget_and_removed() {
    let (_jdir, journal_path) = journal_env();
    let root = rt_tree();
    let before = tree(root.path());
    let mut j = Journal::begin(root.path()).unwrap();
    let mut p = RtParent::plan(root.path())
        .unwrap()
        .expect("RT group scheduling");
    assert!(p.cgroup_parent().starts_with("/jitterlab-ctr-"));
    let group = p.path();
    let name = group.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(
        p.apply(root.path(), &mut j).unwrap(),
        format!(
            "cgroup {}: real-time runtime 750000 µs per 1000000 µs for the containers made in it",
            group.display()
        )
    );
    // The group, as the kernel would show it, with its budget; the period
    // already held the root's and was not written.
    let rel = PathBuf::from("sys/fs/cgroup/cpu").join(&name);
    let mut after = before.clone();
    after.extend([
        (rel.clone(), None),
        (rel.join("cpu.rt_period_us"), Some("1000000\n".to_string())),
        (rel.join("cpu.rt_runtime_us"), Some("750000\n".to_string())),
    ]);
    after.sort();
    assert_eq!(tree(root.path()), after);
    assert_eq!(j.pending(), 2);
    let doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&journal_path).unwrap()).unwrap();
    assert_eq!(
        doc["entries"],
        serde_json::json!([
            { "id": 1, "kind": "container-cgroup", "path": group, "files": ["cpu.rt_period_us", "cpu.rt_runtime_us"] },
            { "id": 2, "kind": "file", "path": group.join("cpu.rt_runtime_us"), "old": "0\n" },
        ])
    );
    assert_eq!(
        p.restore(root.path(), &mut j),
        [
            format!(
                "restored {} to \"0\"",
                group.join("cpu.rt_runtime_us").display()
            ),
            format!("removed the containers' cgroup {name} (1 hierarchy)"),
        ]
    );
    assert_eq!(tree(root.path()), before);
    assert_eq!(j.pending(), 0);
    assert_eq!(p.restore(root.path(), &mut j), Vec::<String>::new());
    j.finish().unwrap();
}

/// The environment variable that makes [`crash_child`] run, naming the
/// tree it changes.
const CRASH_ROOT: &str = "JITTERLAB_TEST_CONTAINER_CRASH_ROOT";

/// Not a test of its own: the child process of
/// [`restore_after_a_crash_removes_the_parent_from_every_hierarchy`]. It
/// makes the parent cgroup, plays the engine (which makes the parent in
/// another hierarchy, with conmon's group inside) and dies of SIGKILL, as
/// `kill -9` would, leaving the journal behind.
#[test]
#[ignore = "run as a child process by restore_after_a_crash_removes_the_parent_from_every_hierarchy"]
fn crash_child() {
    let root =
        PathBuf::from(std::env::var_os(CRASH_ROOT).expect("JITTERLAB_TEST_CONTAINER_CRASH_ROOT"));
    let mut j = Journal::begin(&root).unwrap();
    let mut p = RtParent::plan(&root).unwrap().unwrap();
    p.apply(&root, &mut j).unwrap();
    let name = p.path().file_name().unwrap().to_owned();
    let memory = root.join("sys/fs/cgroup/memory").join(name);
    fs::create_dir_all(memory.join("conmon")).unwrap();
    jitterlab_sys::kill_process(std::process::id() as i32, jitterlab_sys::SIGKILL).unwrap();
    unreachable!("SIGKILL ends the process");
}

#[test]
#[serial]
fn restore_after_a_crash_removes_the_parent_from_every_hierarchy() {
    use std::os::unix::process::ExitStatusExt;
    let (_jdir, journal_path) = journal_env();
    let root = rt_tree();
    let before = tree(root.path());
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "system::container::tests::crash_child",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CRASH_ROOT, root.path())
        .env(journal::JOURNAL_ENV, &journal_path)
        .output()
        .unwrap();
    assert_eq!(
        child.status.signal(),
        Some(9),
        "the child must die of SIGKILL; it said: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&journal_path).unwrap()).unwrap();
    let group = PathBuf::from(doc["entries"][0]["path"].as_str().unwrap());
    let name = group.file_name().unwrap().to_str().unwrap().to_string();
    assert!(root
        .path()
        .join("sys/fs/cgroup/memory")
        .join(&name)
        .join("conmon")
        .is_dir());
    assert_eq!(
        journal::restore(root.path()).unwrap(),
        [
            format!(
                "restored {} to \"0\"",
                group.join("cpu.rt_runtime_us").display()
            ),
            format!("removed the containers' cgroup {name} (2 hierarchies)"),
        ]
    );
    assert_eq!(tree(root.path()), before);
    assert!(!journal_path.exists());
}

#[test]
fn a_parent_jitterlab_did_not_make_is_left_alone() {
    let root = rt_tree();
    let cpu = root.path().join("sys/fs/cgroup/cpu");
    for (path, why) in [
        (
            cpu.join("plc"),
            "it is not a name jitterlab gives its containers' cgroup",
        ),
        (
            root.path().join("elsewhere/jitterlab-ctr-0123456789abcdef"),
            "it is not directly in a cgroup mount point",
        ),
    ] {
        assert_eq!(
            remove_parent(root.path(), &path, &[]),
            (format!("left {} alone: {why}", path.display()), true)
        );
    }
    let ours = cpu.join("jitterlab-ctr-0123456789abcdef");
    assert_eq!(
        remove_parent(root.path(), &ours, &["tasks".into()]),
        (
            format!(
                "left {} alone: its journal entry lists files jitterlab never creates",
                ours.display()
            ),
            true
        )
    );
    assert!(cpu.join("plc/cpu.rt_runtime_us").exists());
}
