//! Measuring in this process: the candidates grouped by compile setting,
//! each setting's image loaded (or compiled) once.

use super::*;

/// How [`measure_here`] measures.
pub(super) struct Here<'p> {
    /// Where each row goes as it is measured.
    pub(super) results: Option<&'p Path>,
    /// The compile settings (indices) whose recorded configuration's row
    /// is written.
    pub(super) write_recorded: Vec<usize>,
    /// When to stop drawing candidates.
    pub(super) deadline: Option<Instant>,
    /// The progress bar, if one is shown.
    pub(super) bar: Option<crate::ui::LazyProgress>,
}

/// Measures `todo` (and the recorded configuration with each compile
/// setting of `how.write_recorded`) in this process, on the device `a`
/// names: the candidates are grouped by compile setting, and each
/// setting's image is loaded (or compiled) once for all its geometries.
pub(super) fn measure_here(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    compiles: &[Compile],
    todo: Vec<Candidate>,
    how: &mut Here<'_>,
) -> Result<Outcome> {
    let mut groups: Vec<usize> = Vec::new();
    for c in todo
        .iter()
        .map(|c| c.compile)
        .chain(how.write_recorded.iter().copied())
    {
        if !groups.contains(&c) {
            groups.push(c);
        }
    }
    let mut out = Outcome::default();
    for g in groups {
        if out.stopped() {
            break;
        }
        let configs: Vec<LaunchConfig> = todo
            .iter()
            .filter(|c| c.compile == g)
            .map(|c| c.config)
            .collect();
        let before = out.rows.len();
        let o = measure_group(a, capture, backend, configs, (compiles, g), how, before)?;
        out.join(o);
    }
    Ok(out)
}

/// The registers and spill bytes (stores, loads) of a JIT load.
pub(super) type Loaded = (Option<u32>, Option<(u64, u64)>);

/// Measures `configs` (and the recorded configuration) with the compile
/// setting `compiles[g]`, `before` rows after the first: its module is
/// loaded, or its image compiled, once.
fn measure_group(
    a: &TuneArgs,
    capture: &Capture,
    backend: BackendKind,
    configs: Vec<LaunchConfig>,
    (compiles, g): (&[Compile], usize),
    how: &mut Here<'_>,
    before: usize,
) -> Result<Outcome> {
    let (compile, recorded_row) = (&compiles[g], how.write_recorded.contains(&g));
    let (results, deadline, bar) = (how.results, how.deadline, &mut how.bar);
    let compiled_capture;
    let capture = match compile.level {
        Some(level) => {
            compiled_capture = crate::tune::opt_levels::open_at(a, level)?.0;
            if compile.jit.is_some() {
                // The JIT options load the image compiled from IR: PTX.
                crate::tune::jit::check(&a.file, backend, Some(&compiled_capture))?;
            }
            &compiled_capture
        }
        None => capture,
    };
    if !reprise::executors::capabilities(backend).launch_geometry {
        // A kernel without a launch geometry (the host's): one replay of
        // the recorded configuration with this compile setting.
        let mut row = crate::tune::opt_levels::replay_row(a, capture);
        compile.stamp(&mut row);
        write_row(results, &row)?;
        if let Some(bar) = bar {
            bar.set(before as u64 + 1);
        }
        let spent = deadline.is_some_and(|d| Instant::now() >= d);
        return Ok(Outcome {
            rows: vec![row],
            device_times: false,
            budget_spent: spent,
            ..Outcome::default()
        });
    }
    // What the JIT makes of the kernel, reported by the executor the sweep
    // opens with this setting.
    let compiled = reprise::cuda_jit::CompiledKernels::new();
    let kernel = capture.record.name.to_string();
    // The registers and spills of this setting's one load, taken when the
    // first configuration is measured (the module is loaded by then).
    let mut loaded: Option<Loaded> = None;
    let mut builder = crate::tune::tuner(a, capture);
    if let Some(jit) = &compile.jit {
        builder = builder.cuda(
            reprise::CudaOptions::new()
                .jit(jit.clone())
                .report_compiled(compiled.clone()),
        );
    }
    let mut rows = Vec::new();
    let mut write_error = None;
    let mut spent = false;
    let result = {
        let (rows, write_error, spent, loaded) =
            (&mut rows, &mut write_error, &mut spent, &mut loaded);
        let builder = builder
            .options(crate::tune::tune_options(a, configs))
            .on_config(move |_, _, m: &Measured| {
                if !m.recorded || recorded_row {
                    let mut row = Row::of(m);
                    compile.stamp(&mut row);
                    if compile.jit.is_some() {
                        let (registers, spills) = *loaded.get_or_insert_with(|| {
                            compiled
                                .take()
                                .into_iter()
                                .rev()
                                .find(|(name, _)| *name == kernel)
                                .map_or((None, None), |(_, c)| (c.registers, c.spills))
                        });
                        row.registers = registers;
                        row.spills = spills;
                    }
                    if let Err(e) = write_row(results, &row) {
                        write_error.get_or_insert(e);
                    }
                    rows.push(row);
                    if let Some(bar) = bar {
                        bar.step((before + rows.len()) as u64, report::config_text(&m.config));
                    }
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    *spent = true;
                }
                write_error.is_none() && !*spent && !crate::tune::INTERRUPTED.load(Ordering::SeqCst)
            });
        reprise::block_on(std::future::IntoFuture::into_future(builder))
    };
    if let Some(e) = write_error {
        return Err(e);
    }
    let mut out = Outcome {
        rows,
        budget_spent: spent,
        ..Outcome::default()
    };
    match result {
        Ok(r) => {
            out.device_times = r.device_times;
            match r.stopped {
                Some(Stopped::Interrupted) => {
                    out.interrupted = !spent && crate::tune::INTERRUPTED.load(Ordering::SeqCst)
                }
                Some(other) => out.lost = Some(other.to_string()),
                None => {}
            }
        }
        Err(e) => match crate::tune::jit::jit_failure(&e) {
            // The JIT refused this setting: a failed row (of the recorded
            // geometry) and the search goes on with the next setting.
            Some(failure) if out.rows.is_empty() => {
                let mut row = Row::failed(
                    crate::tune::recorded_config(capture),
                    Some(failure.to_string()),
                );
                compile.stamp(&mut row);
                write_row(results, &row)?;
                out.rows.push(row);
            }
            _ if out.rows.is_empty() && before == 0 => return Err(e.into()),
            _ => out.lost = Some(CliError::from(e).to_string()),
        },
    }
    Ok(out)
}
