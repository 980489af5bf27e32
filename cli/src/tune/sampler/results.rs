//! The study's results file: its header, reading it back for `--resume`
//! (a line cut short dropped), and a row appended as each is measured.

use super::*;

/// What a results file held.
pub(super) struct Previous {
    pub(super) header: Option<Header>,
    pub(super) rows: Vec<Row>,
}

/// Reads the results file `path` (a header line, then rows). A last line
/// cut short (a kill while it was written) is dropped from the file.
pub(super) fn read_results(path: &Path, kernel: &str) -> Result<Previous> {
    let text = crate::side_files::read_text(path, "results file")?;
    let mut prev = Previous {
        header: None,
        rows: Vec::new(),
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim();
        if body.is_empty() {
            kept += line.len();
            continue;
        }
        if let Ok(h) = serde_json::from_str::<Header>(body) {
            if h.kernel != kernel {
                return Err(CliError::file(
                    path,
                    format!(
                        "the results of kernel {:?}, not of this capture's {kernel:?}",
                        h.kernel
                    ),
                ));
            }
            prev.header = Some(h);
        } else if let Ok(r) = serde_json::from_str::<Row>(body) {
            prev.rows.push(r);
        } else if i + 1 == lines.len() && !line.ends_with('\n') {
            note!(
                "warning: {}: its last line was cut short (the run was stopped while writing \
                 it) and is dropped",
                path.display()
            );
            let f = crate::side_files::open_append(path, false)?;
            f.set_len(kept as u64)
                .map_err(|e| reprise::Error::io(path, "truncate", e))?;
            break;
        } else {
            return Err(CliError::file(
                path,
                format!(
                    "line {} is neither a header nor a row of tune results",
                    i + 1
                ),
            ));
        }
        kept += line.len();
    }
    if !text.is_empty() && !text.ends_with('\n') && kept == text.len() {
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
        Some(p) => append(p, &serde_json::to_string(row).expect("a row serializes")),
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
    serde_json::to_string(&header).expect("a header serializes")
}
