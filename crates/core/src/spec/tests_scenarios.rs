//! Tests of a probe's scope (`scenarios`, `duration` of a `[[probe]]`
//! table): the checks and their messages, the cells and the plan it
//! gives, the stored JSON, and `--duration` over it. Apart from `tests.rs`
//! so the two grow without touching each other.

use super::*;

const BUILTINS: &[&str] = &["idle", "cpu", "disk", "network"];

fn ok(text: &str) -> Spec {
    super::testing::ok(text, BUILTINS)
}

fn err(text: &str) -> String {
    super::testing::err(text, BUILTINS)
}

/// Two scenarios; a `sweep` probe with `keys`, then a cyclic probe that
/// runs everywhere.
fn two_scenarios(keys: &str) -> String {
    format!(
        "name = \"scoped\"\nduration = \"60s\"\nwarmup = \"5s\"\n\
         [[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
         [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\n\
         [[probe]]\nkind = \"wakeup\"\nname = \"sweep\"\n{keys}\
         [[probe]]\nkind = \"cyclic\"\n"
    )
}

fn names(s: &Spec) -> Vec<String> {
    s.cells().iter().map(|c| c.key.name()).collect()
}

#[test]
fn a_probe_limited_to_a_scenario_has_cells_there_only() {
    let s = ok(&two_scenarios("scenarios = [\"idle\"]\n"));
    assert_eq!(s.probes[0].scope.scenarios, ["idle"]);
    assert_eq!(s.probes[1].scope, ProbeScope::default());
    assert_eq!(
        names(&s),
        [
            "default/idle/host/sweep",
            "default/idle/host/cyclic",
            "default/cpu/host/cyclic"
        ]
    );
    assert_eq!(s.cell_count(), 3);
    let cells = s.cells();
    assert_eq!(
        (cells[2].scenario, cells[2].probe, cells[1].probe),
        (1, 1, 1)
    );
    // Repetitions repeat the same pairs.
    let s = ok(&two_scenarios("scenarios = [\"cpu\"]\n")
        .replace("warmup = \"5s\"\n", "warmup = \"5s\"\nrepetitions = 2\n"));
    assert_eq!(s.cell_count(), 6);
    assert_eq!(s.cells().len(), 6);
    assert_eq!(
        names(&s)[..3],
        [
            "default/idle/host/cyclic",
            "default/cpu/host/sweep",
            "default/cpu/host/cyclic"
        ]
    );
}

#[test]
fn listed_scenarios_keep_the_spec_order_and_every_one_is_no_limit_in_cells() {
    let s = ok(&two_scenarios("scenarios = [\"cpu\", \"idle\"]\n"));
    assert_eq!(s.probes[0].scope.scenarios, ["idle", "cpu"]);
    assert_eq!(s.cell_count(), 4);
    assert_eq!(s.cells().len(), 4);
}

#[test]
fn a_spec_without_scenarios_has_the_idle_one_to_name() {
    let text = "duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nscenarios = [\"idle\"]\n";
    assert_eq!(names(&ok(text)), ["default/idle/host/cyclic"]);
    assert_eq!(
        err(&text.replace("[\"idle\"]", "[\"cpu\"]")),
        "bench.toml:4: probe[0].scenarios[0]: \"cpu\" names no scenario of the spec (scenarios: idle)"
    );
}

#[test]
fn bad_scenario_lists_are_refused_with_their_line_and_key() {
    assert_eq!(
        err(&two_scenarios("scenarios = [\"idle\", \"disk\"]\n")),
        "bench.toml:13: probe[0].scenarios[1]: \"disk\" names no scenario of the spec (scenarios: idle, cpu)"
    );
    assert_eq!(
        err(&two_scenarios("scenarios = [\"cpu\", \"cpu\"]\n")),
        "bench.toml:13: probe[0].scenarios[1]: scenario cpu is listed twice"
    );
    assert_eq!(
        err(&two_scenarios("scenarios = []\n")),
        "bench.toml:13: probe[0].scenarios: no scenario listed; name at least one of the spec's scenarios (idle, cpu) or leave the key out to run in every one"
    );
    assert_eq!(
        err(&two_scenarios("scenarios = \"idle\"\n")),
        "bench.toml:13: probe[0].scenarios: invalid type: string \"idle\", expected an array"
    );
}

#[test]
fn a_probe_duration_is_a_positive_time_within_the_limits() {
    let s = ok(&two_scenarios("duration = \"10s\"\n"));
    assert_eq!(s.probes[0].scope.duration_ns, Some(10_000_000_000));
    assert_eq!(s.probes[1].scope.duration_ns, None);
    assert_eq!(s.probe_duration_ns(&s.probes[0]), 10_000_000_000);
    assert_eq!(s.probe_duration_ns(&s.probes[1]), 60_000_000_000);
    let cells = s.cells();
    assert_eq!(s.cell_duration_ns(&cells[0]), 10_000_000_000);
    assert_eq!(s.cell_duration_ns(&cells[1]), 60_000_000_000);
    assert_eq!(
        err(&two_scenarios("duration = \"0s\"\n")),
        "bench.toml:13: probe[0].duration: duration must be longer than 0"
    );
    assert_eq!(
        err(&two_scenarios("duration = \"8d\"\n")),
        "bench.toml:13: probe[0].duration: 8d is more than 7d, the longest time jitterlab takes"
    );
    assert!(
        err(&two_scenarios("duration = \"ten\"\n"))
            .starts_with("bench.toml:13: probe[0].duration: "),
        "names the key"
    );
}

#[test]
fn window_rows_are_bounded_by_the_probe_own_duration() {
    // 60s in windows of 1ms is 60 000 rows: fine; 2h is 7.2 million.
    let long = two_scenarios("duration = \"2h\"\nwindow = \"1ms\"\n");
    assert_eq!(
        err(&long),
        "bench.toml:14: probe[0].window: 2h in windows of 1ms makes 7200000 window rows, more than 1000000, the most one run keeps; use windows of at least 8ms or a shorter duration"
    );
    let mut s = ok(&two_scenarios("duration = \"1s\"\nwindow = \"1ms\"\n"));
    assert_eq!(s.check_limits(), Ok(()));
    // `--duration 2h` applies to every cell, the probe's own included.
    s.set_duration(7_200_000_000_000);
    assert_eq!(s.probes[0].scope.duration_ns, None);
    assert_eq!(
        s.check_limits(),
        Err("probe[0] (sweep): 2h in windows of 1ms makes 7200000 window rows, more than 1000000, the most one run keeps; use windows of at least 8ms or a shorter duration".into())
    );
}

#[test]
fn set_duration_makes_every_cell_that_long() {
    let mut s = ok(&two_scenarios(
        "scenarios = [\"idle\"]\nduration = \"10s\"\n",
    ));
    s.set_duration(3_000_000_000);
    assert_eq!(s.duration_ns, 3_000_000_000);
    assert!(s
        .cells()
        .iter()
        .all(|c| s.cell_duration_ns(c) == 3_000_000_000));
    // The limit to scenarios stays.
    assert_eq!(s.probes[0].scope.scenarios, ["idle"]);
}

#[test]
fn the_plan_counts_pairs_and_each_cell_time() {
    let s = ok(&two_scenarios(
        "scenarios = [\"idle\"]\nduration = \"10s\"\n",
    ));
    // 1 × (1s + 5s + 10s) + 2 × (1s + 5s + 60s) + 4s calibration.
    assert_eq!(
        s.planned_ns(1_000_000_000, 4_000_000_000),
        (16 + 2 * 66 + 4) * 1_000_000_000
    );
    assert_eq!(
        s.plan_text(1_000_000_000, 4_000_000_000),
        "plan: scoped
  3 cells (1 repetition × 1 configuration × 1 deployment × 3 scenario × probe pairs of 2 scenarios × 2 probes)
  each cell: set-up 1s + warm-up 5s + measured 10s (1 cell), 1m (2 cells)
  once: idle calibration 4s
  total: 2m 32s
  probe sweep runs in scenario idle only
  1/3  default/idle/host/sweep   rep 1  (warm-up 5s + 10s)
  2/3  default/idle/host/cyclic  rep 1  (warm-up 5s + 1m)
  3/3  default/cpu/host/cyclic   rep 1  (warm-up 5s + 1m)
"
    );
}

#[test]
fn a_spec_without_scopes_plans_as_before() {
    let s = ok(&two_scenarios(""));
    let plan = s.plan_text(0, 0);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines[1],
        "  4 cells (1 repetition × 1 configuration × 2 scenarios × 1 deployment × 2 probes)"
    );
    assert_eq!(
        lines[2],
        "  each cell: set-up 0s + warm-up 5s + 1m measured = 1m 05s"
    );
    assert_eq!(lines[3], "  total: 4m 20s");
    assert_eq!(lines.len(), 8);
}

#[test]
fn runs_of_limited_probes_are_summed_up_in_one_line() {
    let mut text = String::from(
        "duration = \"10s\"\n[[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
         [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\n",
    );
    for i in 0..5 {
        text.push_str(&format!(
            "[[probe]]\nkind = \"wakeup\"\nname = \"w{i}\"\nscenarios = [\"idle\"]\n"
        ));
    }
    text.push_str("[[probe]]\nkind = \"cyclic\"\nscenarios = [\"idle\", \"cpu\"]\n");
    text.push_str("[[probe]]\nkind = \"ctxswitch\"\nscenarios = [\"cpu\"]\n");
    let plan = ok(&text).plan_text(0, 0);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines[1],
        "  8 cells (1 repetition × 1 configuration × 1 deployment × 8 scenario × probe pairs of 2 scenarios × 7 probes)"
    );
    assert_eq!(
        lines[4..7],
        [
            "  probes w0 … w4 (5) run in scenario idle only",
            "  probe cyclic runs in scenarios idle, cpu only",
            "  probe ctxswitch runs in scenario cpu only",
        ]
    );
}

#[test]
fn too_many_cells_counts_the_pairs() {
    let mut text = String::from(
        "duration = \"1s\"\nrepetitions = 1000\n[[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
         [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\n",
    );
    for i in 0..11 {
        text.push_str(&format!(
            "[[probe]]\nkind = \"wakeup\"\nname = \"w{i}\"\nscenarios = [\"idle\"]\n"
        ));
    }
    assert_eq!(
        err(&text),
        "bench.toml:2: repetitions: the bench has 11000 cells (1000 repetitions × 1 configuration × 1 deployment × 11 scenario × probe pairs of 2 scenarios × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec"
    );
    // Limited to idle, 900 repetitions fit (unlimited they would be 19 800 cells).
    assert_eq!(
        ok(&text.replace("repetitions = 1000", "repetitions = 900")).cell_count(),
        9900
    );
}

#[test]
fn the_stored_spec_round_trips_its_scopes_and_leaves_them_out_when_unset() {
    let s = ok(&two_scenarios(
        "scenarios = [\"cpu\"]\nduration = \"10s\"\n",
    ));
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["probes"][0]["scenarios"], serde_json::json!(["cpu"]));
    assert_eq!(v["probes"][0]["duration_ns"], 10_000_000_000u64);
    let object = v["probes"][1].as_object().unwrap();
    assert!(!object.contains_key("scenarios"), "{object:?}");
    assert!(!object.contains_key("duration_ns"), "{object:?}");
    let back: Spec = serde_json::from_value(v).unwrap();
    assert_eq!(back, s);
    assert_eq!(names(&back), names(&s));
}
