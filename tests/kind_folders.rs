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
//! out. A kind whose name is an English word (`observe`, `sleep`) is
//! named by a word of an identifier outside string literals instead
//! ([`Names::Word`]: `ObserveParams`, `observe::X`, but not `observer_cpu`,
//! `observed_ns` or a message's "sleep"). A registration line is one of the exact lines [`REGISTRATION`]
//! allows in its file; the same text anywhere else is an offender.
//!
//! Left out of "production": unit-test files (`tests.rs`, `*_tests.rs`,
//! `tests/` folders) and the presets (`crates/core/src/preset/`): a preset
//! is an experiment written in the spec language, data that names the
//! probes it runs as `examples/*.toml` does, not code a kind adds.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// How a line names a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    /// Anywhere in its code or text (a name no English word holds).
    Text,
    /// As a word of an identifier outside string literals ([`words`]),
    /// std's `thread::sleep` aside.
    Word,
}

/// The kinds held to one folder, how a line names each, and their folders
/// (path prefixes).
const KINDS: &[(&str, Names, &[&str])] = &[
    (
        "netcycle",
        Names::Text,
        &["src/probe/netcycle/", "crates/core/src/netcycle/"],
    ),
    (
        "roundtrip",
        Names::Text,
        &["src/probe/roundtrip/", "crates/core/src/roundtrip/"],
    ),
    (
        "observe",
        Names::Word,
        &["src/probe/observe/", "crates/core/src/observe/"],
    ),
    (
        "sleep",
        Names::Word,
        &["src/probe/sleep/", "crates/core/src/sleep/"],
    ),
];

/// Folders that are not production code a kind adds (see the module doc).
const NOT_PRODUCTION: &[&str] = &["crates/core/src/preset/"];

/// The registration lines, per file, with `{kind}`, `{Kind}` and `{KIND}`
/// standing for the kind's name (trimmed lines, compared whole).
const REGISTRATION: &[(&str, &[&str])] = &[
    // The binary's list of kinds: the module, and its `REGISTRATION`.
    ("src/probe/mod.rs", &["{kind},"]),
    // Core's list of kinds: the module, the `ProbeKind` variant, its place
    // in `ALL`, its descriptor.
    ("crates/core/src/lib.rs", &["{Kind} => {kind}::{KIND},"]),
    // `jitterlab analyze`, the netcycle probe's capture reader: the
    // command line's flags call it in the kind's folder.
    (
        "src/cli/analyze.rs",
        &["use crate::probe::{kind}::analyze::{self, AnalyzeFormat, AnalyzeRequest};"],
    ),
];

/// Files outside the kinds' folders that still name a kind: (kind, file).
/// None: each kind's pair of network namespaces is its core folder's
/// (`PAIR`, named by its descriptor), and `jitterlab restore` learns the
/// namespaces it may delete from the descriptors.
const KNOWN: &[(&str, &str)] = &[];

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
        for &(kind, how, folders) in KINDS {
            if folders.iter().any(|d| rel.starts_with(d)) {
                continue;
            }
            let allowed = allowed(&rel, kind);
            let mut in_string = false;
            for l in &code {
                if names(l, kind, how, &mut in_string) && !allowed.iter().any(|a| a == l.trim()) {
                    found.insert((kind.to_string(), rel.clone()));
                }
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
        ["Netcycle => netcycle::NETCYCLE,"]
    );
    assert_eq!(allowed("src/probe/mod.rs", "roundtrip"), ["roundtrip,"]);
    assert!(allowed("src/runner/mod.rs", "netcycle").is_empty());
}

/// The words of a code line's identifiers outside string literals: each
/// identifier, and a camel-case one's words too (`ObserveParams`:
/// `Observe`, `Params`; `sleep_until` is one word), std's `thread::sleep`
/// left out. `in_string` carries a string literal that
/// goes on past the end of the line into the next.
fn words(line: &str, in_string: &mut bool) -> Vec<String> {
    let line = line.replace("'\\\"'", "' '").replace("'\"'", "' '");
    let mut code = String::new();
    let mut escaped = false;
    for c in line.chars() {
        if *in_string {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => *in_string = false,
                _ => escaped = false,
            }
            code.push(' ');
        } else {
            if c == '"' {
                *in_string = true;
            }
            code.push(c);
        }
    }
    let code = code.replace("thread::sleep", "thread::");
    let mut out = Vec::new();
    for ident in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if ident.is_empty() {
            continue;
        }
        out.push(ident.to_string());
        if ident.contains('_') {
            continue;
        }
        let mut parts = Vec::new();
        let mut word = String::new();
        let mut prev_lower = false;
        for c in ident.chars() {
            if c.is_ascii_uppercase() && prev_lower {
                parts.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c);
        }
        if !parts.is_empty() {
            parts.push(word);
            out.extend(parts);
        }
    }
    out
}

/// True when a code line names `kind`, read as `how` says.
fn names(line: &str, kind: &str, how: Names, in_string: &mut bool) -> bool {
    let forms = [kind.to_string(), capital(kind), kind.to_uppercase()];
    match how {
        Names::Text => forms.iter().any(|w| line.contains(w.as_str())),
        Names::Word => words(line, in_string).iter().any(|w| forms.contains(w)),
    }
}

/// Every production code line outside the `sleep` kind's two folders that
/// names it: (file, trimmed line).
fn sleep_lines(root: &Path) -> Vec<(String, String)> {
    let folders = ["src/probe/sleep/", "crates/core/src/sleep/"];
    let mut files = Vec::new();
    production_files(&root.join("src"), &mut files);
    production_files(&root.join("crates/core/src"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if folders.iter().any(|d| rel.starts_with(d)) {
            continue;
        }
        let text = fs::read_to_string(f).unwrap();
        let mut in_string = false;
        for l in code(&text) {
            if names(l, "sleep", Names::Word, &mut in_string) {
                out.push((rel.clone(), l.trim().to_string()));
            }
        }
    }
    out
}

/// A kind is one folder per crate and one line per crate: the test-only
/// `sleep` probe, with its parameters and its summary line, is named
/// outside `src/probe/sleep/` and `crates/core/src/sleep/` by exactly its
/// line in each crate's list of kinds (and the feature gate above each).
#[test]
fn the_sleep_probe_is_named_outside_its_folders_by_one_line_per_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        sleep_lines(root),
        [
            (
                "crates/core/src/lib.rs".to_string(),
                "Sleep => sleep::SLEEP,".to_string()
            ),
            ("src/probe/mod.rs".to_string(), "sleep,".to_string()),
        ]
    );
}

#[test]
fn a_word_kind_is_read_only_where_code_names_it() {
    for yes in [
        "sleep,",
        "Sleep => sleep::SLEEP,",
        "ProbeKind::Sleep => 1,",
        "use crate::sleep::SleepParams;",
        "x(\"a\", sleep::build)",
        "if c == '\"' { sleep::X }",
    ] {
        assert!(names(yes, "sleep", Names::Word, &mut false), "{yes}");
    }
    for no in [
        "std::thread::sleep(Duration::from_millis(5));",
        "\"Sleep until a frame comes\",",
        "\"then sleep (a \\\"CN\\\" answering\",",
        "sys::sleep_until_ns(t)",
        "let asleep = 1;",
    ] {
        assert!(!names(no, "sleep", Names::Word, &mut false), "{no}");
    }
    // A string that goes on into the next line.
    let mut in_string = false;
    assert!(!names(
        "f(\"a message that",
        "sleep",
        Names::Word,
        &mut in_string
    ));
    assert!(in_string);
    assert!(names(
        "goes on to sleep\", sleep)",
        "sleep",
        Names::Word,
        &mut in_string
    ));
    assert!(!in_string);
}

#[test]
fn a_word_kind_is_a_word_of_an_identifier() {
    assert_eq!(
        words(
            "use a::observe::ObserveParams; let x = OBSERVE_X;",
            &mut false
        ),
        [
            "use",
            "a",
            "observe",
            "ObserveParams",
            "Observe",
            "Params",
            "let",
            "x",
            "OBSERVE_X"
        ]
    );
    for yes in ["observe,", "ObserveParams::default()", "crate::observe::x"] {
        assert!(names(yes, "observe", Names::Word, &mut false), "{yes}");
    }
    for no in [
        "use jitterlab_core::observer::observer_cpu;",
        "fn observe_throttling() {}",
        "l.observed_ns",
        "\"observe\"",
    ] {
        assert!(!names(no, "observe", Names::Word, &mut false), "{no}");
    }
    // A text kind is named anywhere, an identifier's part or a string.
    for yes in ["NetcycleParams", "\"netcycle\"", "x.netcycles"] {
        assert!(names(yes, "netcycle", Names::Text, &mut false), "{yes}");
    }
}
