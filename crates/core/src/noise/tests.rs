//! The documents cited here are listed in `docs/design.md`.

use std::collections::BTreeMap;

use super::*;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn ops(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn the_seed_001_probe_cpu_neighbour_asks_for_80_percent_of_a_cpu() {
    let i = stress_ng_intent(
        &argv(&[
            "stress-ng",
            "--cpu",
            "1",
            "--cpu-load",
            "80",
            "--metrics-brief",
        ]),
        1,
    )
    .unwrap();
    assert_eq!(
        i,
        Intent {
            cpu_milli: 800,
            stressors: vec!["cpu".into()],
            basis: "--cpu 1 --cpu-load 80 = 0.80 CPU".into(),
        }
    );
}

#[test]
fn cpu_bound_stressors_ask_a_cpu_each_and_the_sum_is_capped_at_the_pinned_cpus() {
    let i = stress_ng_intent(
        &argv(&[
            "/usr/bin/stress-ng",
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
            "--metrics-brief",
        ]),
        1,
    )
    .unwrap();
    assert_eq!(i.cpu_milli, 1000);
    assert_eq!(
        i.stressors,
        ["cpu", "cache", "memthrash", "stream", "vm", "fork"]
    );
    assert_eq!(
        i.basis,
        "--cpu 8 + --cache 4 + --memthrash 4 + --stream 10 + --vm 4 = 30.00 CPU, capped at the 1 CPU it is pinned to"
    );
    // --cpu 0: one worker per pinned CPU.
    let i = stress_ng_intent(&argv(&["stress-ng", "--cpu", "0"]), 2).unwrap();
    assert_eq!(
        (i.cpu_milli, i.basis.as_str()),
        (2000, "--cpu 2 = 2.00 CPU")
    );
    // Waiting stressors ask no CPU time but are still expected to work.
    let i = stress_ng_intent(
        &argv(&[
            "stress-ng",
            "--hdd",
            "1",
            "--hdd-opts",
            "direct,wr-seq,rd-seq",
        ]),
        1,
    )
    .unwrap();
    assert_eq!(
        (i.cpu_milli, i.stressors, i.basis),
        (0, vec!["hdd".to_string()], "no stated CPU time".to_string())
    );
}

#[test]
fn commands_without_a_stated_request_get_no_intent() {
    assert_eq!(
        stress_ng_intent(&argv(&["hackbench", "-P", "-g", "4"]), 1),
        None
    );
    assert_eq!(
        stress_ng_intent(&argv(&["stress-ng", "--version"]), 1),
        None
    );
    assert_eq!(stress_ng_intent(&[], 1), None);
}

#[test]
fn neighbours_on_the_same_cpus_share_them_out() {
    // [Red Hat controls] on two CPUs: three neighbours on CPU 0 each asking (capped)
    // the whole of it, one on the probe CPU asking 0.8.
    let asks = vec![
        (vec![0], 1000),
        (vec![0], 1000),
        (vec![0], 1000),
        (vec![1], 800),
    ];
    assert_eq!(share_out(&asks), vec![333, 333, 333, 800]);
    assert_eq!(
        share_out(&[(vec![0], 800), (vec![0], 1000)]),
        vec![444, 555]
    );
    assert_eq!(
        share_out(&[(vec![], 3000), (vec![0, 1], 1500)]),
        vec![3000, 1500]
    );
}

#[test]
fn a_neighbour_at_a_few_percent_of_its_request_is_short_of_its_load() {
    let intent =
        stress_ng_intent(&argv(&["stress-ng", "--cpu", "1", "--cpu-load", "80"]), 1).unwrap();
    // Measured on this machine: 390 ms of CPU time in 15.058 s.
    let c = LoadCheck::judge(
        &intent,
        800,
        390_000_000,
        15_058_000_000,
        &ops(&[("cpu", 595)]),
    )
    .unwrap();
    assert_eq!(
        c,
        LoadCheck {
            asked_milli: 800,
            basis: "--cpu 1 --cpu-load 80 = 0.80 CPU".into(),
            achieved_milli: 25,
            tolerance_percent: 20,
            idle_stressors: vec![],
            short: true,
        }
    );
    assert_eq!(
        c.text(),
        "short of its load: 0.03 CPU of the 0.80 asked (3 %; tolerance 20 %)"
    );
}

#[test]
fn the_tolerance_is_exactly_20_percent_of_the_request() {
    let intent =
        stress_ng_intent(&argv(&["stress-ng", "--cpu", "1", "--cpu-load", "80"]), 1).unwrap();
    let judge = |cpu_ns| {
        LoadCheck::judge(&intent, 800, cpu_ns, 1_000_000_000, &ops(&[("cpu", 1)])).unwrap()
    };
    // 0.64 CPU is 80 % of 0.80: delivered; one thousandth less: short.
    assert!(!judge(640_000_000).short);
    assert_eq!(
        judge(640_000_000).text(),
        "delivered its load: 0.64 CPU of the 0.80 asked (80 %; tolerance 20 %)"
    );
    assert!(judge(639_000_000).short);
}

#[test]
fn a_stressor_without_bogo_ops_is_short_even_at_full_cpu() {
    let intent = stress_ng_intent(&argv(&["stress-ng", "--cpu", "1", "--vm", "1"]), 2).unwrap();
    let c = LoadCheck::judge(
        &intent,
        2000,
        2_000_000_000,
        1_000_000_000,
        &ops(&[("cpu", 9)]),
    )
    .unwrap();
    assert!(c.short);
    assert_eq!(
        c.text(),
        "short of its load: 2.00 CPU of the 2.00 asked (100 %; tolerance 20 %); no bogo-ops from vm"
    );
    let hdd = stress_ng_intent(&argv(&["stress-ng", "--hdd", "1"]), 1).unwrap();
    let c = LoadCheck::judge(&hdd, 0, 10_000_000, 1_000_000_000, &ops(&[("hdd", 3)])).unwrap();
    assert_eq!(
        (c.short, c.text()),
        (
            false,
            "delivered its load: every stressor reported bogo-ops".to_string()
        )
    );
}

#[test]
fn a_shared_request_says_the_share_and_no_wall_time_is_not_measured() {
    let intent = stress_ng_intent(&argv(&["stress-ng", "--cache", "5"]), 1).unwrap();
    let c = LoadCheck::judge(
        &intent,
        390,
        320_000_000,
        1_000_000_000,
        &ops(&[("cache", 7)]),
    )
    .unwrap();
    assert_eq!(
        c.basis,
        "--cache 5 = 5.00 CPU, capped at the 1 CPU it is pinned to, its share of CPUs it shares with other neighbours: 0.39 CPU"
    );
    assert!(!c.short);
    assert_eq!(LoadCheck::judge(&intent, 390, 0, 0, &ops(&[])), None);
}
