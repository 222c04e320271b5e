use super::*;
use jitterlab_core::cell::CellKey;
use jitterlab_core::header::NOT_RECORDED;
use jitterlab_core::result::{HostDetails, HostSnapshot};

use crate::store::{BenchSpecJson, RunStart, RunStatus};

/// A fixed snapshot: a bare-metal PREEMPT_RT machine with every item.
fn host() -> HostSnapshot {
    HostSnapshot {
        hostname: "plc-7".into(),
        kernel_release: "6.16.3+deb14-rt-amd64".into(),
        kernel_version: "#1 SMP PREEMPT_RT Debian 6.16.3-1 (2025-08-25)".into(),
        machine: "x86_64".into(),
        cmdline: "quiet isolcpus=2-3 nohz_full=2-3".into(),
        preemption: "rt (/sys/kernel/realtime)".into(),
        realtime_kernel: true,
        cpu_model: "Intel(R) Atom(TM) x6425RE Processor @ 1.90GHz".into(),
        cpus_online: "0-3".into(),
        cpus_isolated: "2-3".into(),
        cpus_nohz_full: "2-3".into(),
        clocksource: "tsc".into(),
        sched_rt_runtime_us: Some(-1),
        sched_rt_period_us: Some(1_000_000),
        virtualized: false,
        machine_id: None,
        details: Some(HostDetails {
            microcode: "0x24000024".into(),
            cores: Some(4),
            smt: "notsupported".into(),
            hypervisor: String::new(),
            resctrl: true,
        }),
    }
}

fn header(source: Option<&str>) -> Header {
    Header::new(
        &host(),
        RunFacts {
            tool_version: "0.1.0 (commit 28a18f1)".into(),
            spec: "codesys".into(),
            spec_sha256: Some(
                "f15ef113d6e0c876b9ea9e90ebc36ad3f8b350d44634ba2fc407e978fb8cebeb".into(),
            ),
            source: source.and_then(jitterlab_core::preset::provenance),
            started_at: "2026-11-21T12:00:00Z".into(),
            duration_ns: Some(185_250_000_000),
        },
    )
}

const TEXT: &str = "\
Record
jitterlab    0.1.0 (commit 28a18f1)
host         plc-7
cpu          Intel(R) Atom(TM) x6425RE Processor @ 1.90GHz
microcode    0x24000024
cpus         4 online (0-3)
cores        4, SMT notsupported
kernel       6.16.3+deb14-rt-amd64 #1 SMP PREEMPT_RT Debian 6.16.3-1 (2025-08-25)
preemption   rt (/sys/kernel/realtime)
cmdline      quiet isolcpus=2-3 nohz_full=2-3
clocksource  tsc
virtualised  no
isolated     2-3
tickless     2-3
resctrl      present
spec         codesys, sha256 f15ef113d6e0c876b9ea9e90ebc36ad3f8b350d44634ba2fc407e978fb8cebeb
started      2026-11-21T12:00:00Z
duration     185.250s
";

#[test]
fn the_text_header_names_every_item() {
    assert_eq!(text(&header(None)), TEXT);
}

#[test]
fn the_markdown_header_is_a_list_under_a_title() {
    assert_eq!(
        md(&header(None)),
        "\
### Record

- jitterlab: 0.1.0 (commit 28a18f1)
- host: plc-7
- cpu: Intel(R) Atom(TM) x6425RE Processor @ 1.90GHz
- microcode: 0x24000024
- cpus: 4 online (0-3)
- cores: 4, SMT notsupported
- kernel: 6.16.3+deb14-rt-amd64 #1 SMP PREEMPT\\_RT Debian 6.16.3-1 (2025-08-25)
- preemption: rt (/sys/kernel/realtime)
- cmdline: quiet isolcpus=2-3 nohz\\_full=2-3
- clocksource: tsc
- virtualised: no
- isolated: 2-3
- tickless: 2-3
- resctrl: present
- spec: codesys, sha256 f15ef113d6e0c876b9ea9e90ebc36ad3f8b350d44634ba2fc407e978fb8cebeb
- started: 2026-11-21T12:00:00Z
- duration: 185.250s
"
    );
}

#[test]
fn a_preset_says_what_it_reproduces_and_emulates_in_the_header() {
    let t = text(&header(Some("codesys")));
    assert!(t.contains(
        "\nreproduces   Improving Real-Time Performance of CODESYS Control Applications with Intel’s Real-Time Technologies, by Intel Corporation (no individual author named)\n"
    ), "{t}");
    assert!(t.contains(
        "\nemulates     the CODESYS task is jitterlab's cyclic probe (4 ms period, a 500 us scan over 1 MiB); Configuration 1 (Intel TCC mode disabled) is a time-sharing SCHED_OTHER task"
    ), "{t}");
    // Right after the spec, before the start.
    let labels: Vec<&str> = t.lines().skip(1).map(|l| &l[..13]).collect();
    let at = labels.iter().position(|l| l.trim() == "spec").unwrap();
    assert_eq!(
        labels[at..at + 4]
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>(),
        ["spec", "reproduces", "emulates", "started"]
    );
}

#[test]
fn the_json_header_has_every_field_and_null_for_not_recorded() {
    let j = serde_json::to_value(header(Some("redhat"))).unwrap();
    assert_eq!(j["tool_version"], "0.1.0 (commit 28a18f1)");
    assert_eq!(
        j["cpu_model"],
        "Intel(R) Atom(TM) x6425RE Processor @ 1.90GHz"
    );
    assert_eq!(j["microcode"], "0x24000024");
    assert_eq!(j["cores"], 4);
    assert_eq!(j["smt"], "notsupported");
    assert_eq!(j["kernel_release"], "6.16.3+deb14-rt-amd64");
    assert_eq!(j["cmdline"], "quiet isolcpus=2-3 nohz_full=2-3");
    assert_eq!(j["preemption"], "rt (/sys/kernel/realtime)");
    assert_eq!(j["clocksource"], "tsc");
    assert_eq!(j["virtualized"], false);
    assert_eq!(j["hypervisor"], "");
    assert_eq!(j["cpus_isolated"], "2-3");
    assert_eq!(j["cpus_nohz_full"], "2-3");
    assert_eq!(j["resctrl"], true);
    assert_eq!(j["spec"], "codesys");
    assert_eq!(
        j["spec_sha256"],
        "f15ef113d6e0c876b9ea9e90ebc36ad3f8b350d44634ba2fc407e978fb8cebeb"
    );
    assert_eq!(j["source"]["preset"], "redhat");
    assert_eq!(
        j["source"]["authors"],
        "Red Hat and Intel (no individual author named)"
    );
    assert_eq!(j["started_at"], "2026-11-21T12:00:00Z");
    assert_eq!(j["duration_ns"], 185_250_000_000u64);
    let old = Header::new(
        &HostSnapshot {
            details: None,
            ..host()
        },
        RunFacts::default(),
    );
    let j = serde_json::to_value(old).unwrap();
    for k in [
        "microcode",
        "cores",
        "smt",
        "hypervisor",
        "resctrl",
        "spec_sha256",
        "duration_ns",
    ] {
        assert_eq!(j[k], serde_json::Value::Null, "{k}");
    }
}

#[test]
fn the_html_header_escapes_every_item() {
    let mut h = header(Some("epics"));
    h.hostname = "<b>plc</b> & \"7\"".into();
    h.cmdline = "quiet\u{1b}[31m".into();
    let html = html(&h);
    assert!(html.starts_with("<h3>Record</h3>\n<dl class=\"header\">\n<dt>jitterlab</dt><dd>0.1.0 (commit 28a18f1)</dd>\n"), "{html}");
    assert!(
        html.contains("<dt>host</dt><dd>&lt;b&gt;plc&lt;/b&gt; &amp; &quot;7&quot;</dd>\n"),
        "{html}"
    );
    assert!(
        html.contains("<dt>cmdline</dt><dd>quiet\\u{1b}[31m</dd>\n"),
        "{html}"
    );
    for (label, value) in h.lines() {
        assert!(
            html.contains(&format!(
                "<dt>{label}</dt><dd>{}</dd>",
                escape(&shown(&value))
            )),
            "{label}"
        );
    }
    assert!(html.contains("<dt>reproduces</dt><dd>EPICS IOCcore Real Time Performance Measurements on Coldfire Module, by Shifu Xu, Hairong Shang, Robert Laird and Frank Lenkszus (Argonne National Laboratory)</dd>"));
    assert!(html.ends_with("</dl>\n"));
}

#[test]
fn the_verdict_slot_is_right_under_the_header() {
    let h = header(None);
    assert_eq!(
        assemble(Format::Text, &h, None, "body\n").unwrap(),
        format!("{TEXT}\nbody\n")
    );
    assert_eq!(
        assemble(Format::Text, &h, Some("VERDICT: held"), "body\n").unwrap(),
        format!("{TEXT}\nVERDICT: held\nbody\n")
    );
    assert_eq!(assemble(Format::Csv, &h, None, "a,b\n").unwrap(), "a,b\n");
    let json = assemble(
        Format::Json,
        &h,
        Some(r#"{"held": true}"#),
        "{\n  \"run\": 3,\n  \"a\": [\n    1\n  ]\n}\n",
    )
    .unwrap();
    let keys: Vec<&str> = json
        .lines()
        .filter(|l| l.starts_with("  \""))
        .map(|l| l.trim().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(keys, ["header", "verdict", "run", "a"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["header"], serde_json::to_value(&h).unwrap());
    assert_eq!(v["verdict"]["held"], true);
    assert_eq!(v["a"][0], 1);
    let empty = assemble(Format::Json, &h, None, "{}").unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&empty).unwrap(),
        serde_json::json!({ "header": serde_json::to_value(&h).unwrap() })
    );
}

#[test]
fn a_comparison_has_both_records_each_titled_with_its_run() {
    let (a, b) = (header(None), header(Some("codesys")));
    let text = assemble_pair(Format::Text, (3, &a), (7, &b), "body\n").unwrap();
    let ta = TEXT.replacen("Record\n", "Record of run A (run 3)\n", 1);
    let tb = super::text(&b).replacen("Record\n", "Record of run B (run 7)\n", 1);
    assert_eq!(text, format!("{ta}\n{tb}\nbody\n"));
    let md = assemble_pair(Format::Md, (3, &a), (7, &b), "body\n").unwrap();
    assert!(
        md.starts_with("### Record of run A (run 3)\n\n- jitterlab: "),
        "{md}"
    );
    assert!(md.contains("\n### Record of run B (run 7)\n\n"), "{md}");
    assert_eq!(
        assemble_pair(Format::Csv, (3, &a), (7, &b), "a,b\n").unwrap(),
        "a,b\n"
    );
    let json = assemble_pair(Format::Json, (3, &a), (7, &b), "{\n  \"a\": 1\n}\n").unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["headers"],
        serde_json::json!([
            serde_json::to_value(&a).unwrap(),
            serde_json::to_value(&b).unwrap()
        ])
    );
    assert_eq!(v["a"], 1);
}

/// A bench stored with a preset's source reports it; one stored before
/// sources (and host details) were kept says "not recorded".
#[test]
fn a_stored_bench_reports_its_preset_and_an_old_one_says_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let bench = |store: &mut Store, host: &HostSnapshot, source: Option<&str>| {
        let spec = BenchSpecJson {
            configurations: vec!["baseline".into()],
            scenarios: vec!["idle".into()],
            unavailable: vec![],
            spec: serde_json::json!({"name": "epics", "duration_ns": 60}),
            source: crate::store::preset_source(source),
        };
        let (id, _) = store
            .begin_bench(
                &RunStart {
                    started_at: "2026-11-21T12:00:00Z",
                    probe: "bench",
                    command_line: &cmd,
                    params_json: "{}".into(),
                    host_json: serde_json::to_string(host).unwrap(),
                    hostname: &host.hostname,
                    kernel_release: &host.kernel_release,
                    machine_id: None,
                    realtime: None,
                    kind: RunKind::Bench,
                    name: "epics",
                    spec_json: Some(serde_json::to_string(&spec).unwrap()),
                },
                &[CellKey {
                    configuration: "baseline".into(),
                    scenario: "idle".into(),
                    deployment: "host".into(),
                    probe: "wakeup".into(),
                    repetition: 0,
                }],
            )
            .unwrap();
        store
            .finish_run_row(id, RunStatus::Completed, None, 65_000_000_000, None)
            .unwrap();
        id
    };
    let new = bench(&mut store, &host(), Some("epics"));
    let h = store.run_header(new).unwrap();
    assert_eq!(h.source, jitterlab_core::preset::provenance("epics"));
    assert_eq!(
        h.spec_sha256.as_deref(),
        // printf '{"duration_ns":60,"name":"epics"}' | sha256sum
        Some("66b287b088e362b7688c82e2638e934800874bf5dae9b55d834427b17277995f")
    );
    assert_eq!(h.duration_ns, Some(65_000_000_000));
    assert_eq!(h.microcode.as_deref(), Some("0x24000024"));
    let old_host = HostSnapshot {
        details: None,
        ..host()
    };
    let old = bench(&mut store, &old_host, None);
    let h = store.run_header(old).unwrap();
    let t = text(&h);
    for label in ["microcode", "cores", "resctrl"] {
        assert!(
            t.contains(&format!("\n{label:<13}{NOT_RECORDED}\n")),
            "{label}: {t}"
        );
    }
    assert!(!t.contains("reproduces"), "{t}");
}
