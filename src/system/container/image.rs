//! The container image: the running jitterlab and the shared libraries it
//! links, built locally `FROM scratch`, tagged by the binary's build id.
//!
//! No registry is reachable from many plant networks (nor from CI here),
//! and a base image would put a second C library and a shell beside the
//! probe. So the image holds exactly what the binary needs to run:
//!
//! - `/jitterlab`: a copy of `/proc/self/exe` (the binary that runs now,
//!   even when its file was replaced since it started);
//! - the shared libraries it links and the dynamic loader, at the paths
//!   the loader looks for them, found from `ldd`'s answer for that copy
//!   ([`parse_ldd`]; `ldd` resolves the ELF's needed libraries as the
//!   loader would, which re-implementing the search would only imitate);
//! - empty `/tmp` and `/run`.
//!
//! The tag is `localhost/jitterlab:<build id>` ([`tag`]): the ELF
//! `.note.gnu.build-id` that the linker writes (read with the `object`
//! crate), or — for a binary without one — `h` and a 64-bit hash of its
//! bytes. An image with that tag is reused; a new binary gets a new image
//! ([`ensure`]), so what runs in the container is always the jitterlab
//! that started it. Building is said on stderr with what it holds. Old
//! images stay (`podman images localhost/jitterlab`; `podman rmi` removes
//! them).

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use object::Object;

use super::{output_within, Engine};
use crate::output::errln;

/// The image's repository.
pub const REPOSITORY: &str = "localhost/jitterlab";

/// Where the binary sits in the image (the entry point).
pub const BINARY: &str = "/jitterlab";

/// The label that carries the build id.
pub const LABEL: &str = "jitterlab.build-id";

/// How long an image build may take.
const BUILD_WAIT: Duration = Duration::from_secs(600);

/// How long `image inspect` and `ldd` may take.
const QUICK_WAIT: Duration = Duration::from_secs(60);

/// The build id of an ELF binary's bytes: its `.note.gnu.build-id` in hex,
/// else `h` and a hash of the bytes (std's SipHash with fixed keys: stable
/// for one binary, which is all a tag needs).
pub fn build_id(bytes: &[u8]) -> String {
    if let Ok(file) = object::File::parse(bytes) {
        if let Ok(Some(id)) = file.build_id() {
            if !id.is_empty() {
                return id.iter().map(|b| format!("{b:02x}")).collect();
            }
        }
    }
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    format!("h{:016x}", h.finish())
}

/// The image's tag for a build id.
pub fn tag(build_id: &str) -> String {
    format!("{REPOSITORY}:{build_id}")
}

/// The libraries (and the loader) of `ldd`'s output, in its order; an
/// error naming a library the loader cannot find. A static binary has
/// none.
pub fn parse_ldd(text: &str) -> std::result::Result<Vec<PathBuf>, String> {
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)`,
        // `/lib64/ld-linux-x86-64.so.2 (0x…)`, `linux-vdso.so.1 (0x…)`.
        let (name, path) = match line.split_once(" => ") {
            Some((name, rest)) => (name.trim(), rest.trim()),
            None => (line, line),
        };
        if path.starts_with("not found") {
            return Err(format!(
                "the loader cannot find {name}, which jitterlab links; install it"
            ));
        }
        let path = path.split(" (").next().unwrap_or(path).trim();
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    Ok(out)
}

/// One file of the image: where it comes from on the host and where it
/// goes in the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// The host file.
    pub from: PathBuf,
    /// Its absolute path in the image.
    pub to: PathBuf,
}

/// The image's files (module doc): the binary `exe` at [`BINARY`], then
/// each library at its own path.
pub fn context_files(exe: &Path, libraries: &[PathBuf]) -> Vec<ContextFile> {
    let mut out = vec![ContextFile {
        from: exe.to_path_buf(),
        to: PathBuf::from(BINARY),
    }];
    for lib in libraries {
        if !out.iter().any(|f| &f.to == lib) {
            out.push(ContextFile {
                from: lib.clone(),
                to: lib.clone(),
            });
        }
    }
    out
}

/// The Containerfile of the image.
pub fn containerfile(build_id: &str) -> String {
    format!(
        "# jitterlab {version}: the running binary and the libraries it links, nothing else\nFROM scratch\nCOPY . /\nLABEL {LABEL}=\"{build_id}\"\nENTRYPOINT [\"{BINARY}\"]\n",
        version = env!("CARGO_PKG_VERSION")
    )
}

/// The engine's argument vector that builds the image `tag` from the
/// build context `context` and its Containerfile `file`, contacting no
/// registry.
pub fn build_args(engine: Engine, file: &Path, context: &Path, tag: &str) -> Vec<String> {
    let mut v = vec!["build".to_string()];
    if engine == Engine::Podman {
        v.push("--pull=never".into());
    }
    v.extend([
        "--quiet".to_string(),
        "--file".to_string(),
        file.display().to_string(),
        "--tag".to_string(),
        tag.to_string(),
        context.display().to_string(),
    ]);
    v
}

/// The image jitterlab runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `localhost/jitterlab:<build id>`.
    pub tag: String,
    /// The binary's build id.
    pub build_id: String,
    /// Built now (else it existed).
    pub built: bool,
}

/// The images this process has made sure of, by engine.
static ENSURED: Mutex<Vec<(Engine, String)>> = Mutex::new(Vec::new());

/// Makes sure `engine` has the image of the running binary: reuses it when
/// its tag exists, else builds it (saying so on stderr).
pub fn ensure(engine: Engine) -> Result<Image> {
    let build_id = own_build_id()?;
    let tag = tag(&build_id);
    let known = ENSURED
        .lock()
        .map(|v| v.contains(&(engine, tag.clone())))
        .unwrap_or(false);
    if known || exists(engine, &tag) {
        return Ok(Image {
            tag,
            build_id,
            built: false,
        });
    }
    let bytes = fs::read("/proc/self/exe").context("cannot read /proc/self/exe")?;
    build(engine, &bytes, &build_id, &tag)?;
    if let Ok(mut v) = ENSURED.lock() {
        v.push((engine, tag.clone()));
    }
    Ok(Image {
        tag,
        build_id,
        built: true,
    })
}

/// The running binary's build id, read once.
pub fn own_build_id() -> Result<String> {
    static ID: OnceLock<String> = OnceLock::new();
    if let Some(id) = ID.get() {
        return Ok(id.clone());
    }
    let bytes = fs::read("/proc/self/exe").context("cannot read /proc/self/exe")?;
    Ok(ID.get_or_init(|| build_id(&bytes)).clone())
}

/// True when `engine` has an image tagged `tag`.
fn exists(engine: Engine, tag: &str) -> bool {
    let mut cmd = Command::new(engine.name());
    cmd.args(["image", "inspect", "--format", "{{.Id}}", tag]);
    matches!(output_within(&mut cmd, QUICK_WAIT), Ok((true, _, _)))
}

/// Builds the image (module doc) in a private directory in `/var/tmp`,
/// removed afterwards.
fn build(engine: Engine, bytes: &[u8], build_id: &str, tag: &str) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("jitterlab-image-")
        .tempdir_in(Path::new("/var/tmp"))
        .or_else(|_| {
            tempfile::Builder::new()
                .prefix("jitterlab-image-")
                .tempdir()
        })
        .context("cannot make a directory for the image's build context")?;
    let rootfs = dir.path().join("rootfs");
    fs::create_dir(&rootfs)?;
    let exe = rootfs.join(BINARY.trim_start_matches('/'));
    fs::write(&exe, bytes).with_context(|| format!("cannot write {}", exe.display()))?;
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755))?;
    let (ok, out, err) = output_within(Command::new("ldd").arg(&exe), QUICK_WAIT)
        .map_err(|e| anyhow!("{e}; ldd is in the Debian package libc-bin"))?;
    let text = format!("{out}{err}");
    if !ok && !text.contains("not a dynamic executable") {
        bail!("ldd {} failed: {}", exe.display(), text.trim());
    }
    let libraries = parse_ldd(&text).map_err(|e| anyhow!(e))?;
    let files = context_files(Path::new("/proc/self/exe"), &libraries);
    for f in files.iter().skip(1) {
        let to = rootfs.join(f.to.strip_prefix("/").unwrap_or(&f.to));
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(&f.from, &to)
            .with_context(|| format!("cannot copy {} into the image", f.from.display()))?;
    }
    for d in ["tmp", "run"] {
        fs::create_dir_all(rootfs.join(d))?;
    }
    fs::set_permissions(rootfs.join("tmp"), fs::Permissions::from_mode(0o1777))?;
    let file = dir.path().join("Containerfile");
    fs::write(&file, containerfile(build_id))?;
    let names: Vec<String> = libraries
        .iter()
        .map(|l| {
            l.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string()
        })
        .collect();
    errln!(
        "jitterlab: container: building image {tag} with {}: FROM scratch, /proc/self/exe as {BINARY} ({:.1} MB, build id {build_id}) and {}; no registry is contacted",
        engine.name(),
        bytes.len() as f64 / 1e6,
        if names.is_empty() { "no library (a static binary)".to_string() } else { names.join(", ") }
    );
    let args = build_args(engine, &file, &rootfs, tag);
    match output_within(Command::new(engine.name()).args(&args), BUILD_WAIT) {
        Ok((true, _, _)) => Ok(()),
        Ok((false, out, err)) => bail!(
            "`{} {}` failed: {}",
            engine.name(),
            args.join(" "),
            format!("{out}{err}").trim()
        ),
        Err(e) => bail!("building the image failed: {e}"),
    }
}
