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
    let mut cmd = visible(&crate::Cli::command());
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "reprise", &mut out);
    print(&out);
    Ok(ExitCode::SUCCESS)
}

/// `cmd` rebuilt without its hidden subcommands and options, which shell
/// generators offer otherwise (clap #1335): internal flags are no user's
/// to complete.
fn visible(cmd: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name().to_string())
        .args(
            cmd.get_arguments()
                .filter(|a| !a.is_hide_set())
                // What an option needs or excludes may name a hidden one;
                // a completion has no use for either.
                .map(|a| {
                    a.clone()
                        .required_unless_present(clap::builder::Resettable::Reset)
                        .conflicts_with(clap::builder::Resettable::Reset)
                        .requires(clap::builder::Resettable::Reset)
                }),
        )
        .disable_help_subcommand(cmd.is_disable_help_subcommand_set());
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(visible)
        .fold(out, clap::Command::subcommand)
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
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    match a.dir {
        None => print(&page(&cmd)?),
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| reprise::Error::io(&dir, "create", e))?;
            write_pages(&cmd, &dir)?;
            out!("manual pages written to {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `cmd` and of each of its visible subcommands into
/// `dir`, named as `clap_mangen` names them (`reprise-list.1`).
fn write_pages(cmd: &clap::Command, dir: &std::path::Path) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let path = dir.join(clap_mangen::Man::new(cmd.clone()).get_filename());
    crate::side_files::write(&path, &page(cmd)?)
}

/// The manual page of `cmd` (roff), its synopsis naming each option's
/// value (`--image PATH`), which `clap_mangen` leaves out.
fn page(cmd: &clap::Command) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .map_err(|e| reprise::Error::io("the manual page", "render", e))?;
    let text = String::from_utf8_lossy(&out);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some(i) = lines.iter().position(|l| l == ".SH SYNOPSIS")
        && let Some(synopsis) = lines.get_mut(i + 1)
    {
        for arg in cmd
            .get_arguments()
            .filter(|a| a.get_action().takes_values())
        {
            let Some(long) = arg.get_long() else { continue };
            let value = arg.get_value_names().map_or_else(
                || arg.get_id().as_str().to_uppercase(),
                |names| names.join(" "),
            );
            let flag = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
            let value = format!("{flag} \\fI{}\\fR", value.replace('-', "\\-"));
            for end in ["]", ">"] {
                *synopsis = synopsis.replace(&format!("{flag}{end}"), &format!("{value}{end}"));
            }
        }
    }
    Ok((lines.join("\n") + "\n").into_bytes())
}

/// Writes `bytes` to stdout, ending quietly when stdout closes.
fn print(bytes: &[u8]) {
    use std::io::Write as _;
    if std::io::stdout().write_all(bytes).is_err() {
        std::process::exit(141);
    }
}
