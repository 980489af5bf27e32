//! The study's results file: its header, reading it back for `--resume`
//! (a line cut short dropped), and a row appended as each is measured.

use super::*;

/// Reads the results file `path` (a header line, then rows). A last line
/// cut short (a kill while it was written) is dropped from the file.
pub(super) fn read_results(path: &Path, kernel: &str) -> Result<Previous> {
    let text = crate::side_files::read_text(path, "results file")?;
    let parse = |l: &str| {
        let header = serde_json::from_str(l).map(Line::Header);
        header
            .or_else(|_| serde_json::from_str(l).map(Line::Row))
            .ok()
    };
    let prev = reprise::tune::study::read(&text, kernel, parse)
        .map_err(|e| CliError::file(path, e.to_string()))?;
    if let Some(kept) = prev.cut_short {
        note!(
            "warning: {}: its last line was cut short (the run was stopped while writing \
             it) and is dropped",
            path.display()
        );
        let f = crate::side_files::open_append(path, false)?;
        f.set_len(kept as u64)
            .map_err(|e| reprise::Error::io(path, "truncate", e))?;
    } else if prev.unterminated {
        // A whole last line without its newline: add it before appending.
        append(path, "")?;
    }
    Ok(prev)
}

/// Appends `line` and a newline to `path`, in one write.
pub(super) fn append(path: &Path, line: &str) -> Result<()> {
    let mut f = crate::side_files::open_append(path, true)?;
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| reprise::Error::io(path, "write", e))?;
    Ok(())
}

/// Appends `row` to the results file, if there is one.
pub(super) fn write_row(path: Option<&Path>, row: &Row) -> Result<()> {
    match path {
        Some(p) => append(p, &line(row)),
        None => Ok(()),
    }
}

/// The results file's first line.
pub(super) fn header_line(a: &TuneArgs, kernel: &str, configs: usize) -> String {
    let header = Header {
        tune_shard: a.shard.unwrap_or(Shard::ALL).to_string(),
        kernel: kernel.to_string(),
        capture: a.file.display().to_string(),
        configs,
        device_times: true,
        stopped: None,
    };
    line(&header)
}

/// `value` (a header or a row) as one line of a results file.
fn line<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("a header or row serializes")
}
