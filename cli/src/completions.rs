//! `reprise completions` and `reprise man`: shell completions and manual
//! pages, generated from the command line's own definition.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::error::Result;

/// Print a shell completion script.
///
/// bash: `reprise completions bash > ~/.local/share/bash-completion/completions/reprise`;
/// zsh: `reprise completions zsh > ~/.zfunc/_reprise` (with `~/.zfunc` in
/// `fpath`); fish: `reprise completions fish >
/// ~/.config/fish/completions/reprise.fish`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn completions(a: CompletionsArgs) -> Result<ExitCode> {
    // Shell generators offer hidden subcommands too (clap #1335): the
    // command is rebuilt without the internal ones.
    let full = crate::Cli::command();
    let mut cmd = full
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .cloned()
        .fold(
            clap::Command::new("reprise")
                .args(full.get_arguments().cloned())
                .disable_help_subcommand(full.is_disable_help_subcommand_set()),
            clap::Command::subcommand,
        );
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "reprise", &mut out);
    print(&out);
    Ok(ExitCode::SUCCESS)
}

/// Print the manual page (roff), or write one per command to a directory.
///
/// `reprise man | man -l -` reads it; `reprise man --dir DIR` writes
/// `reprise.1` and `reprise-COMMAND.1` for each command into DIR (for
/// `/usr/local/share/man/man1`, say).
#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page into this directory instead.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn man(a: ManArgs) -> Result<ExitCode> {
    let cmd = crate::Cli::command();
    match a.dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(|e| reprise::Error::io("the manual page", "render", e))?;
            print(&out);
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| reprise::Error::io(&dir, "create", e))?;
            clap_mangen::generate_to(cmd, &dir)
                .map_err(|e| reprise::Error::io(&dir, "write manual pages into", e))?;
            out!("manual pages written to {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to stdout, ending quietly when stdout closes.
fn print(bytes: &[u8]) {
    use std::io::Write as _;
    if std::io::stdout().write_all(bytes).is_err() {
        std::process::exit(141);
    }
}
