//! `--workers`: the search spread over processes of this executable, one
//! per device, each given its share as a plan (`--worker-plan`).

use super::*;

/// `--worker-plan FILE`: measures a worker's share on its device (given
/// with --device-id), appending rows to the study's results file.
pub(super) fn serve_plan(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    compiles: &[Compile],
    plan: &Path,
    start: Instant,
) -> Result<ExitCode> {
    let text = crate::side_files::read_text(plan, "worker plan")?;
    let p: Plan = serde_json::from_str(&text)
        .map_err(|e| CliError::file(plan, format!("not a worker plan: {e}")))?;
    if let Some(&(.., c)) = p.configs.iter().find(|t| t.3 >= compiles.len()) {
        return Err(CliError::file(
            plan,
            format!("compile setting {c} of a search with {}", compiles.len()),
        ));
    }
    let configs = p.candidates();
    let _ = ctrlc::set_handler(|| crate::tune::INTERRUPTED.store(true, Ordering::SeqCst));
    let mut here = Here {
        results: Some(&p.results),
        write_recorded: p.write_recorded.clone(),
        deadline: p.deadline(start),
        bar: None,
    };
    let end = measure_here(a, capture, backend, compiles, configs, &mut here)?;
    out_text!(
        "{}",
        serde_json::to_string(&end).expect("an end serializes")
    );
    Ok(ExitCode::SUCCESS)
}

/// Measures `todo` in `workers` processes of this executable, worker W on
/// device W, one configuration at a time each; they append their rows to
/// `results` (of `kernel`), whose rows after the first `old` are returned.
pub(super) fn measure_in_workers(
    todo: Vec<Candidate>,
    kernel: &str,
    results: &Path,
    write_recorded: Vec<usize>,
    deadline: Option<Instant>,
    workers: usize,
    old: usize,
) -> Result<Outcome> {
    let command = crate::jobs::slurm::task_command(
        "tune",
        &[
            "--workers",
            "--resume",
            "--rows",
            "--csv",
            "--plot",
            "--device-id",
            "--time-budget",
            "--shard",
            "--worker-plan",
        ],
        &["--json"],
    )?;
    let mut children = Vec::new();
    let mut plans = Vec::new();
    let shares = Plan::deal(
        todo,
        workers,
        results.to_path_buf(),
        write_recorded,
        deadline,
    );
    for (w, plan) in shares.into_iter().enumerate() {
        let mut name = results.as_os_str().to_owned();
        name.push(format!(".worker-{w}.plan.json"));
        let path = PathBuf::from(name);
        let plan = serde_json::to_string(&plan).expect("a plan serializes");
        crate::side_files::write(&path, plan.as_bytes())?;
        let child = std::process::Command::new(&command[0])
            .args(&command[1..])
            .args(["--json", "--device-id", &w.to_string(), "--worker-plan"])
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| reprise::Error::io(&command[0], "start a worker", e))?;
        plans.push(path);
        children.push(child);
    }
    let mut out = Outcome::default();
    for (w, child) in children.into_iter().enumerate() {
        let done = child.wait_with_output();
        let end = done.as_ref().ok().and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout);
            text.lines()
                .last()
                .and_then(|l| serde_json::from_str::<Outcome>(l).ok())
        });
        match end {
            Some(mut e) => {
                e.lost = e.lost.map(|why| format!("worker {w} (device {w}): {why}"));
                out.join(e);
            }
            None => {
                let how = done.map_or_else(|e| e.to_string(), |o| o.status.to_string());
                if crate::tune::INTERRUPTED.load(Ordering::SeqCst) {
                    out.interrupted = true;
                } else {
                    out.lost
                        .get_or_insert(format!("worker {w} (device {w}) ended with {how}"));
                }
            }
        }
    }
    for p in plans {
        let _ = std::fs::remove_file(p);
    }
    let all = read_results(results, kernel)?.rows;
    out.rows = all.into_iter().skip(old).collect();
    Ok(out)
}
