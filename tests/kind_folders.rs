//! A probe kind is one folder: no production file outside a kind's own
//! folders names the kind, except its registration lines (docs/design.md,
//! "The probe model"). This test lists the files that do and fails when the
//! list is not exactly the one written here — a new offender fails it, and
//! so does an offender that was cleaned up without being struck from the
//! list, so the list only shrinks.
//!
//! "Names the kind" is read from the code: a line whose identifiers or
//! text hold the kind's name (`netcycle`, `Netcycle`, `NETCYCLE`), with
//! comments and the items compiled only for tests (`#[cfg(test)]`) left
//! out. A registration line is one of the exact lines [`REGISTRATION`]
//! allows in its file; the same text anywhere else is an offender.
//!
//! Left out of "production": unit-test files (`tests.rs`, `*_tests.rs`,
//! `tests/` folders) and the presets (`crates/core/src/preset/`): a preset
//! is an experiment written in the spec language, data that names the
//! probes it runs as `examples/*.toml` does, not code a kind adds.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The kinds held to one folder, and their folders (path prefixes).
const KINDS: &[(&str, &[&str])] = &[
    (
        "netcycle",
        &["src/probe/netcycle/", "crates/core/src/netcycle/"],
    ),
    (
        "roundtrip",
        &["src/probe/roundtrip/", "crates/core/src/roundtrip/"],
    ),
];

/// Folders that are not production code a kind adds (see the module doc).
const NOT_PRODUCTION: &[&str] = &["crates/core/src/preset/"];

/// The registration lines, per file, with `{kind}`, `{Kind}` and `{KIND}`
/// standing for the kind's name (trimmed lines, compared whole).
const REGISTRATION: &[(&str, &[&str])] = &[
    // The binary's registry: the module, and the kind's `Registration`.
    (
        "src/probe/mod.rs",
        &[
            "pub mod {kind};",
            "kind: ProbeKind::{Kind},",
            "build: {kind}::build,",
            "unavailable: Some({kind}::unavailable),",
            "flags: {kind}::flags::flags,",
            "one_cell: {kind}::flags::one_cell,",
            "report: {kind}::report::PARTS,",
        ],
    ),
    // Core's registry: the variant (alone in its file, below every kind),
    // its place in `ALL`, its descriptor.
    ("crates/core/src/probe/kind.rs", &["{Kind},"]),
    (
        "crates/core/src/probe/mod.rs",
        &[
            "ProbeKind::{Kind},",
            "ProbeKind::{Kind} => &crate::{kind}::{KIND},",
        ],
    ),
    // Core's module.
    ("crates/core/src/lib.rs", &["pub mod {kind};"]),
    // `jitterlab analyze`, the netcycle probe's capture reader: the
    // command line's flags call it in the kind's folder.
    (
        "src/cli/analyze.rs",
        &["use crate::probe::{kind}::analyze::{self, AnalyzeFormat, AnalyzeRequest};"],
    ),
];

/// Files outside the kinds' folders that still name a kind: (kind, file).
///
/// `src/net/hosts.rs` holds every pair of network namespaces jitterlab
/// makes (`ROUNDTRIP_PAIR`, `NETCYCLE_PAIR`: their names, their /30 and
/// their messages), because `jitterlab restore` deletes only namespaces
/// whose suffix is one of them and sits below the probes. Moving each pair
/// into its kind's folder needs the restore to learn the suffixes from the
/// registry (and `tests/net.rs`, `tests/rps.rs` to stop borrowing the
/// round trip's pair).
const KNOWN: &[(&str, &str)] = &[
    ("netcycle", "src/net/hosts.rs"),
    ("roundtrip", "src/net/hosts.rs"),
];

fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "tests" && name != "benches" && name != "fuzz" {
                production_files(&p, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(p);
        }
    }
}

/// The code lines of a file: comment lines dropped, and every item marked
/// `#[cfg(test)]` (a `mod tests { … }`, a `mod x;`, a test-only constant
/// or function) with its attributes and its braced body.
fn code(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let t = l.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            skip_item(&mut lines);
            continue;
        }
        out.push(l);
    }
    out
}

/// Skips one item: its further attributes, then its lines up to the `;`
/// or the closing brace that ends it.
fn skip_item<'a>(lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = 0i64;
    let mut opened = false;
    for l in lines {
        let t = l.trim();
        if !opened && (t.starts_with("#[") || t.starts_with("//") || t.is_empty()) {
            continue;
        }
        for c in t.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if (opened && depth <= 0) || (!opened && t.ends_with(';')) {
            return;
        }
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next().unwrap().to_uppercase().chain(c).collect()
}

/// The registration lines `rel` may hold for `kind`.
fn allowed(rel: &str, kind: &str) -> Vec<String> {
    REGISTRATION
        .iter()
        .filter(|(f, _)| *f == rel)
        .flat_map(|(_, ls)| ls.iter())
        .map(|l| {
            l.replace("{kind}", kind)
                .replace("{Kind}", &capital(kind))
                .replace("{KIND}", &kind.to_uppercase())
        })
        .collect()
}

/// The (kind, file) pairs of files outside the kind's folders whose code
/// names it on a line that is not one of the file's registration lines.
fn offenders(root: &Path) -> BTreeSet<(String, String)> {
    let mut files = Vec::new();
    production_files(&root.join("src"), &mut files);
    production_files(&root.join("crates/core/src"), &mut files);
    let mut found = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if NOT_PRODUCTION.iter().any(|d| rel.starts_with(d)) {
            continue;
        }
        let text = fs::read_to_string(f).unwrap();
        let code = code(&text);
        for (kind, folders) in KINDS {
            if folders.iter().any(|d| rel.starts_with(d)) {
                continue;
            }
            let words = [kind.to_string(), capital(kind), kind.to_uppercase()];
            let allowed = allowed(&rel, kind);
            let names = code.iter().any(|l| {
                words.iter().any(|w| l.contains(w.as_str()))
                    && !allowed.iter().any(|a| a == l.trim())
            });
            if names {
                found.insert((kind.to_string(), rel.clone()));
            }
        }
    }
    found
}

#[test]
fn no_file_outside_a_kinds_folders_names_it_but_its_registration() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(k, f)| (k.to_string(), f.to_string()))
        .collect();
    assert_eq!(
        offenders(root),
        known,
        "files outside a kind's folders that name it (left) against the list of known ones (right)"
    );
}

#[test]
fn the_reading_of_a_file_leaves_out_comments_and_test_items() {
    let text = "use a;\n// netcycle\n#[cfg(test)]\n#[path = \"x.rs\"]\nmod x;\nconst A: u8 = 1;\n#[cfg(test)]\npub const B: [u8; 2] =\n    [1, 2];\nfn f() {}\n#[cfg(test)]\nmod tests {\n    fn g() {\n        netcycle();\n    }\n}\nfn h() {}\n";
    assert_eq!(
        code(text),
        ["use a;", "const A: u8 = 1;", "fn f() {}", "fn h() {}"]
    );
}

#[test]
fn a_registration_line_is_allowed_only_in_its_own_file() {
    assert_eq!(
        allowed("crates/core/src/lib.rs", "netcycle"),
        ["pub mod netcycle;"]
    );
    assert_eq!(
        allowed("crates/core/src/probe/mod.rs", "roundtrip"),
        [
            "ProbeKind::Roundtrip,",
            "ProbeKind::Roundtrip => &crate::roundtrip::ROUNDTRIP,"
        ]
    );
    assert!(allowed("src/runner/mod.rs", "netcycle").is_empty());
}
