//! The report layer reaches a kind's own code only through the registry
//! (`probe::parts`): no production file under `src/report/` names a
//! kind's variant, its core module or its probe folder. The kinds with
//! parts of their own are listed from the registry, so a new one is
//! checked too.

use std::path::{Path, PathBuf};

use crate::probe::REGISTRY;

/// Every `.rs` file under `dir` that is not a test file.
fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            production_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !p.file_name().unwrap().to_str().unwrap().contains("tests")
        {
            out.push(p);
        }
    }
}

#[test]
fn no_report_file_names_a_kind_with_parts_of_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report");
    let mut files = Vec::new();
    production_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    let kinds: Vec<_> = REGISTRY
        .iter()
        .filter(|r| {
            let p = &r.report;
            p.summary.is_some() || p.summary_head.is_some() || !p.tables.is_empty()
        })
        .map(|r| (format!("{:?}", r.kind), r.kind.name()))
        .collect();
    // The test-only probe has its summary line too, when compiled.
    let expected: &[&str] = match cfg!(feature = "test-probe") {
        true => &["roundtrip", "netcycle", "observe", "sleep"],
        false => &["roundtrip", "netcycle", "observe"],
    };
    assert_eq!(kinds.iter().map(|(_, n)| *n).collect::<Vec<_>>(), expected);
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (variant, name) in &kinds {
            for needle in [
                format!("ProbeKind::{variant}"),
                format!("jitterlab_core::{name}"),
                format!("probe::{name}"),
            ] {
                if text.contains(&needle) {
                    offenders.push(format!(
                        "{}: {needle}",
                        f.strip_prefix(&root).unwrap().display()
                    ));
                }
            }
        }
    }
    assert_eq!(offenders, Vec::<String>::new());
}
