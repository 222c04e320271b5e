use jitterlab_core::verdict::{CellVerdicts, Status, Verdict};

use super::*;

fn verdict(name: &str, status: Status, decided: &str) -> Verdict {
    Verdict {
        name: name.into(),
        limit_ns: None,
        observed_ns: None,
        samples: None,
        status,
        decided: decided.into(),
    }
}

/// A bench of three cells: one passed, one with a failure and a figure
/// not measured, one skipped.
fn cells() -> Vec<CellVerdicts> {
    vec![
        CellVerdicts {
            cell: Some("base/idle/host/cyclic rep 0".into()),
            elapsed_ns: 10_000_000_000,
            skipped: None,
            verdicts: vec![verdict(
                "latency",
                Status::Pass,
                "max 80.000us of 10000 samples <= limit 500.000us",
            )],
        },
        CellVerdicts {
            cell: Some("base/cpu/host/netcycle rep 0".into()),
            elapsed_ns: 2_500_000_000,
            skipped: None,
            verdicts: vec![
                verdict(
                    "cycle time held",
                    Status::Fail,
                    "4000 cycles, 3 late; 4000 PRes polled, 0 missed: late cycles: 3 of 4000 (allowed 0)",
                ),
                verdict(
                    "latency",
                    Status::NotMeasured {
                        reason: "no cycle recorded a latency sample".into(),
                    },
                    "no sample, limit 500.000us: no cycle recorded a latency sample",
                ),
            ],
        },
        CellVerdicts {
            cell: Some("rt/idle/host/cyclic rep 0".into()),
            elapsed_ns: 0,
            skipped: Some("N/A: no isolated CPU <here> & \"there\"".into()),
            verdicts: Vec::new(),
        },
    ]
}

/// A test case as read back: classname, name, the failure's type, message
/// and text, the skipped message.
type Case = (
    String,
    String,
    Option<(String, String, String)>,
    Option<String>,
);

#[test]
fn junit_has_a_suite_per_cell_and_a_case_per_verdict_with_exact_failures() {
    let head = Head {
        title: "jitterlab bench demo",
        single: "demo",
        started_at: "2026-11-27T06:00:00.123456Z",
        hostname: "rig-1",
    };
    let text = render(&head, &cells());
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let attr = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().to_string();
    assert_eq!(
        ["name", "tests", "failures", "errors", "skipped", "time"].map(|a| attr(root, a)),
        ["jitterlab bench demo", "4", "2", "0", "1", "12.500"]
    );
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(
        suites
            .iter()
            .map(|s| vec![
                attr(*s, "name"),
                attr(*s, "tests"),
                attr(*s, "failures"),
                attr(*s, "skipped"),
                attr(*s, "time"),
                attr(*s, "timestamp"),
                attr(*s, "hostname"),
            ])
            .collect::<Vec<_>>(),
        [
            ["base/idle/host/cyclic rep 0", "1", "0", "0", "10.000"],
            ["base/cpu/host/netcycle rep 0", "2", "2", "0", "2.500"],
            ["rt/idle/host/cyclic rep 0", "1", "0", "1", "0.000"],
        ]
        .map(|v| {
            let mut v = v.map(String::from).to_vec();
            v.extend(["2026-11-27T06:00:00".into(), "rig-1".into()]);
            v
        })
        .to_vec()
    );
    let cases: Vec<Case> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            let failure = c.children().find(|n| n.has_tag_name("failure")).map(|f| {
                (
                    attr(f, "type"),
                    attr(f, "message"),
                    f.text().unwrap().to_string(),
                )
            });
            let skipped = c
                .children()
                .find(|n| n.has_tag_name("skipped"))
                .map(|s| attr(s, "message"));
            (attr(c, "classname"), attr(c, "name"), failure, skipped)
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("base/idle/host/cyclic rep 0".into(), "latency".into(), None, None),
            (
                "base/cpu/host/netcycle rep 0".into(),
                "cycle time held".into(),
                Some((
                    "fail".into(),
                    "4000 cycles, 3 late; 4000 PRes polled, 0 missed: late cycles: 3 of 4000 (allowed 0)".into(),
                    "FAIL cycle time held: 4000 cycles, 3 late; 4000 PRes polled, 0 missed: late cycles: 3 of 4000 (allowed 0)".into(),
                )),
                None,
            ),
            (
                "base/cpu/host/netcycle rep 0".into(),
                "latency".into(),
                Some((
                    "not-measured".into(),
                    "not measured: no cycle recorded a latency sample".into(),
                    "NOT MEASURED latency: no sample, limit 500.000us: no cycle recorded a latency sample".into(),
                )),
                None,
            ),
            (
                "rt/idle/host/cyclic rep 0".into(),
                "cell ran".into(),
                None,
                Some("N/A: no isolated CPU <here> & \"there\"".into()),
            ),
        ]
    );
}

#[test]
fn a_run_is_one_suite_named_after_its_probe_and_control_characters_are_shown() {
    let head = Head {
        title: "jitterlab run cyclic",
        single: "cyclic",
        started_at: "not a time",
        hostname: "",
    };
    let one = vec![CellVerdicts {
        cell: None,
        elapsed_ns: 1_234_000_000,
        skipped: None,
        verdicts: vec![verdict("latency", Status::Fail, "said \u{1b}[2J")],
    }];
    let text = render(&head, &one);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("name"), Some("cyclic"));
    assert_eq!(suite.attribute("time"), Some("1.234"));
    assert_eq!(suite.attribute("timestamp"), None);
    assert_eq!(suite.attribute("hostname"), None);
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert_eq!(failure.attribute("message"), Some("said \\u{1b}[2J"));
}
