//! The flags of `jitterlab __generate-docs` (hidden): where the man pages
//! and shell completions generated from this command line go (see
//! [`super::docs_gen`]). `make deb` runs it before packaging.

use std::path::PathBuf;

use clap::Args;

/// `jitterlab __generate-docs DIR`.
#[derive(Debug, Args)]
pub struct GenerateDocsArgs {
    /// Directory to write `man/*.1` and `completions/` under (created when
    /// missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}
