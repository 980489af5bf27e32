//! The capture directory that `record`, `list`, `du` and `gc` share by
//! default, and what they say when nothing is there.

use std::path::Path;

use crate::error::{CliError, Result};

/// Where `record` writes captures, and where the others look, unless told.
pub const DEFAULT: &str = "reprise-captures";

/// The variable that names another default directory.
pub const VAR: &str = "REPRISE_RECORD_DIR";

/// Where `record` puts captures, for a message: the directory, and how it
/// was chosen.
fn where_record_writes() -> String {
    match std::env::var_os(VAR) {
        Some(v) => format!("{} (as {VAR} says)", Path::new(&v).display()),
        None => format!("{DEFAULT}/ (or where {VAR} says)"),
    }
}

/// The hint after a listing of `dir` that found nothing.
pub fn nothing_here(dir: &Path) -> String {
    format!(
        "no captures in {}: `reprise record -- ./app` writes them to {}; \
         `reprise demo` writes one to reprise-demo/",
        dir.display(),
        where_record_writes()
    )
}

/// `dir` as a command's directory: when it is the default and does not
/// exist, an error saying where captures are looked for and how they get
/// there (a directory given that does not exist is the command's ordinary
/// "no such file").
pub fn existing(dir: &Path) -> Result<()> {
    let default = std::env::var_os(VAR).unwrap_or_else(|| DEFAULT.into());
    if dir.exists() || dir != Path::new(&default) {
        return Ok(());
    }
    Err(CliError::file(
        dir,
        format!(
            "no such directory; captures are looked for in {}, where \
             `reprise record -- ./app` writes them; name another directory \
             as the command's argument",
            where_record_writes()
        ),
    ))
}
