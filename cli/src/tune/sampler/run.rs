//! The search itself: its candidates, the shard's share, the results
//! file, the measuring and the ranking.

use super::*;

/// What tells candidate `c` apart in rows and shards: its geometry and
/// compile setting ([`shard::compiled_key`]).
pub fn key(compiles: &[Compile], c: &Candidate) -> String {
    shard::compiled_key(&c.config, compiles[c.compile].label().as_deref())
}

/// How many points the product holds, the candidates the search
/// measures (in the order drawn, the recorded configuration aside), and
/// the whole sweep's geometries, the recorded one first (the order of ties
/// in the table).
pub fn candidates(
    a: &TuneArgs,
    recorded: LaunchConfig,
    geometry: bool,
) -> Result<(u64, Vec<Candidate>, Vec<LaunchConfig>)> {
    let search = &a.search;
    if a.slurm.slurm && search.resume.is_some() {
        return Err(CliError::Usage(
            "--resume continues a study run here, not a --slurm job (its shards write their \
             rows files themselves)"
                .into(),
        ));
    }
    let space = space(a, recorded, geometry)?;
    let size = space.size();
    let wanted = search.trials.unwrap_or(size);
    let max = crate::tune::lists::MAX_CONFIGS as u64;
    if wanted.min(size) > max {
        return Err(CliError::Usage(if search.trials.is_some() {
            format!("--trials {wanted}: at most {max} configurations in one search")
        } else {
            format!(
                "{size} configurations: at most {max} in one search (--sampler random \
                 --trials N measures a sample of them)"
            )
        }));
    }
    if wanted > size {
        note!(
            "note: --trials {wanted} is more than the {size} configuration(s) the lists give: \
             capped at {size}"
        );
    }
    let candidates: Vec<Candidate> = draw(size, wanted, search.drawn())
        .into_iter()
        .map(|i| space.point(i, recorded))
        .collect();
    let geometries: Vec<LaunchConfig> = candidates.iter().map(|c| c.config).collect();
    let order = shard::full_list(&geometries, recorded);
    Ok((size, candidates, order))
}

/// Runs the search `a` asks for over `capture` on `backend`.
pub fn run(
    a: &TuneArgs,
    capture: &Capture,
    recorded: LaunchConfig,
    backend: BackendKind,
) -> Result<ExitCode> {
    let start = Instant::now();
    let search = &a.search;
    let geometry = reprise::executors::capabilities(backend).launch_geometry;
    let compiles = compiles(a);
    if let Some(plan) = &search.worker_plan {
        return serve_plan(a, capture, backend, &compiles, plan, start);
    }
    let kernel = capture.record.name.to_string();
    let (size, candidates, order) = candidates(a, recorded, geometry)?;
    let key_of = |c: &Candidate| key(&compiles, c);
    // A shard holds the (geometry, compile setting) pairs its keys hash
    // to; without compile settings the key is the geometry's, as a sweep's.
    let held: Vec<Candidate> = study(&candidates, recorded, geometry)
        .into_iter()
        .filter(|c| a.shard.is_none_or(|s| s.holds(&key_of(c))))
        .collect();
    // The results file: the one resumed, else --rows, else the shard's.
    let shard_file =
        |s: Shard| PathBuf::from(format!("reprise-tune-{}-of-{}.jsonl", s.index, s.count));
    let results = search
        .resume
        .clone()
        .or_else(|| a.rows.clone())
        .or_else(|| a.shard.map(shard_file));
    if let (Some(r), Some(rows)) = (&search.resume, &a.rows)
        && r != rows
    {
        return Err(CliError::Usage(format!(
            "--resume {} appends to the file it continues: give --rows {} only to start a study",
            r.display(),
            rows.display()
        )));
    }
    if a.device_id.is_some() && !matches!(search.workers, None | Some(Workers::Count(1))) {
        return Err(CliError::Usage(
            "--workers use devices 0 to N-1: give --device-id or --workers, not both".into(),
        ));
    }
    let mut old: Vec<Row> = Vec::new();
    if let Some(path) = &search.resume {
        let prev = read_results(path, &kernel)?;
        if let (Some(h), Some(s)) = (&prev.header, a.shard)
            && h.tune_shard != s.to_string()
        {
            return Err(CliError::file(
                path,
                format!("the results of shard {}, not of --shard {s}", h.tune_shard),
            ));
        }
        if prev.header.is_none() {
            append(path, &header_line(a, &kernel, held.len()))?;
        }
        old = prev.rows;
    } else if let Some(path) = &results {
        if path.exists() {
            return Err(CliError::file(
                path,
                format!(
                    "the results file exists: continue its study with --resume {}, or remove it",
                    path.display()
                ),
            ));
        }
        append(path, &header_line(a, &kernel, held.len()))?;
    }
    let done: HashSet<String> = old.iter().map(Row::key).collect();
    let todo: Vec<Candidate> = held
        .iter()
        .copied()
        .filter(|c| !done.contains(&key_of(c)) && c.config != recorded)
        .collect();
    // The recorded configuration is measured by every worker, with each
    // compile setting (the speed-ups are over it); its row is written
    // once for each setting drawn, by the shard that holds it, where the
    // study has no row of it yet.
    let write_recorded: Vec<usize> = held
        .iter()
        .filter(|c| c.config == recorded && !done.contains(&key_of(c)))
        .map(|c| c.compile)
        .collect();

    // The driver is asked only when workers are.
    let devices = || reprise::executors::device_count(backend);
    let (asked, devices) = match search.workers {
        None => (1, 1),
        Some(Workers::Auto) => {
            let d = devices();
            (d, d)
        }
        Some(Workers::Count(n)) => (n, devices()),
    };
    let workers = asked.min(devices).min(todo.len().max(1)).max(1);
    if !a.json {
        let how = match search.sampler {
            Sampler::Grid => "grid".to_string(),
            Sampler::Random => format!("random sample (seed {})", search.seed),
        };
        out!(
            "tuning {kernel} ({backend} executor): {how} of {} of the {size} configurations, {} \
             timed runs each after {} warm-up{}",
            candidates.len(),
            a.repetitions,
            a.warmup,
            if a.warmup == 1 { "" } else { "s" }
        );
        out!(
            "search space: {} = {size}",
            space(a, recorded, geometry)?.shape()
        );
        if let Some(s) = a.shard {
            out!("shard {s}: {} of them", held.len());
        }
        if let Some(path) = &search.resume {
            out!(
                "resuming {}: {} configuration(s) already measured, {} to measure",
                path.display(),
                old.len(),
                todo.len() + write_recorded.len()
            );
        }
        if capture.output.is_none() {
            out!("the capture has no recorded output: configurations are timed, not verified");
        }
        if workers > 1 {
            out!(
                "{workers} workers, one configuration at a time on each of devices 0 to {}",
                workers - 1
            );
        }
    }
    if asked > devices {
        note!(
            "note: workers capped at the device count ({devices} visible device{})",
            if devices == 1 { "" } else { "s" }
        );
    }

    let _ = ctrlc::set_handler(|| crate::tune::INTERRUPTED.store(true, Ordering::SeqCst));
    let deadline = search.time_budget.map(|b| start + b);
    let total = todo.len() + write_recorded.len();
    let measured = todo.len();
    let temporary;
    let outcome = if total == 0 {
        Outcome::default()
    } else if workers == 1 {
        let mut here = Here {
            results: results.as_deref(),
            write_recorded,
            deadline,
            bar: Some(crate::ui::LazyProgress::new(total as u64, "tuning")),
        };
        measure_here(a, capture, backend, &compiles, todo, &mut here)?
    } else {
        let path = match &results {
            Some(p) => p.as_path(),
            None => {
                // The workers' rows meet in a file of this run's own,
                // removed when it is dropped.
                temporary = tempfile::Builder::new()
                    .prefix("reprise-tune-")
                    .suffix(".jsonl")
                    .tempfile()
                    .map_err(|e| reprise::Error::io(std::env::temp_dir(), "create a file in", e))?
                    .into_temp_path();
                append(&temporary, &header_line(a, &kernel, held.len()))?;
                &temporary
            }
        };
        let had = old.len();
        measure_in_workers(todo, &kernel, path, write_recorded, deadline, workers, had)?
    };
    let Outcome {
        rows: new,
        device_times,
        lost,
        interrupted,
        budget_spent,
    } = outcome;
    let spent = budget_spent.then(|| {
        format!(
            "time budget of {} spent after {} of {measured} new configuration(s): no new \
             candidates were drawn",
            crate::ui::human_time(search.time_budget.unwrap_or_default()),
            new.iter().filter(|r| !r.recorded).count()
        )
    });
    let stopped = lost.clone().or(spent);
    let stopped = stopped.or_else(|| interrupted.then(|| "interrupted".to_string()));
    let mut rows = old;
    rows.extend(new);
    let ranked = shard::ranking(&rows, &order);
    // A setting the JIT refused: its log, after the table.
    let mut after = Vec::new();
    for r in &ranked {
        if let (Some(jit), Some(detail), "failed") = (&r.jit, &r.detail, r.status.as_str())
            && detail.starts_with("the driver's JIT could not compile")
        {
            after.push(format!("the JIT failed with {jit}:"));
            after.extend(detail.lines().skip(1).map(|line| format!("  {line}")));
        }
    }
    if let Some(path) = &results {
        after.push(format!(
            "results in {} ({} rows)",
            path.display(),
            rows.len()
        ));
    }
    let sweep = report::Sweep {
        kernel: &kernel,
        capture: capture.paths.descriptor.display().to_string(),
        runs: Some((a.repetitions, a.warmup)),
        device_times,
        stopped,
    };
    report::show(a, &sweep, &ranked, &after, true)?;
    Ok(if interrupted && !budget_spent {
        ExitCode::from(130)
    } else if lost.is_some() {
        ExitCode::from(2)
    } else {
        report::verdict_exit(&a.file, &ranked)
    })
}
