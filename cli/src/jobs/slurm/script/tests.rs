use super::*;

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

#[test]
fn the_submitting_options_are_left_out() {
    let args = os(&[
        "corpus",
        "--slurm",
        "--array-size",
        "4",
        "--partition=gpu",
        "--sbatch-arg",
        "--hold",
        "--timeout",
        "5",
        "--results",
        "r.jsonl",
        "--dtype=f32",
        "--no-wait",
        "--",
        "--slurm",
    ]);
    let mut values = SLURM_VALUES.to_vec();
    values.push("--results");
    let kept = forwarded(&args, &values, SLURM_FLAGS).unwrap();
    assert_eq!(
        kept,
        ["corpus", "--timeout", "5", "--dtype=f32", "--", "--slurm"]
    );
}

#[test]
fn words_are_quoted_for_the_shell() {
    assert_eq!(quoted("a/b.json"), "a/b.json");
    assert_eq!(quoted("it's here"), r"'it'\''s here'");
    assert_eq!(quoted("$HOME"), "'$HOME'");
    assert_eq!(quoted(""), "''");
}

/// What `sh` makes of `words`, each quoted: the words themselves.
#[test]
fn quoted_words_reach_the_command_as_they_were() {
    let words = [
        "it's",
        "'",
        "''",
        "a b",
        "$(touch PWNED)",
        "`touch PWNED`",
        "\"x\"",
        "a\\b",
        "100%a",
        "*",
        "~",
        "-n",
        ";&|<>(){}[]!#",
        "é ünï",
    ];
    let script: Vec<String> = words.iter().map(|w| quoted(w)).collect();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {}", script.join(" ")))
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let got: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .split_terminator('\0')
        .collect();
    assert_eq!(got, words);
}

fn slurm(partition: &str, extra: &[&str]) -> SlurmArgs {
    SlurmArgs {
        slurm: true,
        partition: Some(partition.into()),
        gpus_per_task: Some(2),
        array_size: Some(4),
        sbatch_args: extra.iter().map(|s| s.to_string()).collect(),
        no_wait: false,
    }
}

fn script<'a>(dir: &'a Path, cwd: &'a Path, command: &[&str], s: &'a SlurmArgs) -> Script<'a> {
    Script {
        job_name: "reprise-check",
        dir,
        cwd,
        command: command.iter().map(|w| w.to_string()).collect(),
        results_option: "--results",
        shards: 4,
        task_flags: "--resume --json",
        cpus_per_task: Some(3),
        slurm: s,
    }
}

#[test]
fn every_control_character_is_refused_naming_the_value_and_where_it_came_from() {
    let controls: Vec<char> = (0..=0x10ffff)
        .filter_map(char::from_u32)
        .filter(|c| c.is_control())
        .collect();
    // C0, DEL and C1.
    assert_eq!(controls.len(), 65);
    for c in controls {
        let bad = format!("a{c}touch PWNED");
        let e = checked("--results", &bad).unwrap_err().to_string();
        assert!(e.starts_with("--results: \"a"), "{e}");
        assert!(e.contains(&format!("U+{:04X}", u32::from(c))), "{e}");
        assert!(!e.contains(c), "the value is escaped: {e:?}");
        let e = checked_path("--rows", Path::new(&bad)).unwrap_err();
        assert!(e.to_string().starts_with("--rows: "), "{e}");

        // In each value of a script: neither its text nor its sbatch
        // options are made.
        let ok = Path::new("/job/r.slurm");
        let plain = slurm("debug", &["--time=5"]);
        let bad_partition = slurm(&bad, &[]);
        let bad_arg = slurm("p", &["--hold", &bad]);
        let bad_path = Path::new(&bad);
        let cases: [(&str, Script<'_>); 6] = [
            (
                "the job directory",
                script(bad_path, ok, &["/bin/reprise"], &plain),
            ),
            (
                "the working directory",
                script(ok, bad_path, &["/bin/reprise"], &plain),
            ),
            ("the reprise executable", script(ok, ok, &[&bad], &plain)),
            (
                "an argument",
                script(ok, ok, &["/bin/reprise", "check", &bad], &plain),
            ),
            ("--partition", script(ok, ok, &["/r"], &bad_partition)),
            ("--sbatch-arg", script(ok, ok, &["/r"], &bad_arg)),
        ];
        for (what, s) in &cases {
            for e in [
                s.text().unwrap_err(),
                s.sbatch_args().unwrap_err(),
                s.check().unwrap_err(),
            ] {
                let e = e.to_string();
                assert!(e.starts_with(&format!("{what}: ")), "{e}");
                assert!(
                    e.contains("cannot be written into a Slurm batch script"),
                    "{e}"
                );
            }
        }
    }
    // Text without one passes as it is.
    assert_eq!(checked("--partition", "gpu 'a' é").unwrap(), "gpu 'a' é");
}

#[test]
fn a_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/a\xffb"));
    let e = checked_path("the working directory", p)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the working directory") && e.contains("not UTF-8"),
        "{e}"
    );
    assert!(e.contains("\\xFF"), "{e}");
}

#[test]
fn quotes_are_quoted_and_no_sbatch_line_holds_a_value_from_the_user() {
    let dir = Path::new("/home/it's 100%a here/r's.slurm");
    let cwd = Path::new("/home/it's $(touch PWNED) here");
    let s = slurm("QUEUE 'q'", &["--time=5"]);
    let sc = script(dir, cwd, &["/opt/it's/reprise", "check", "c'orpus dir"], &s);
    let text = sc.text().unwrap();
    assert!(
        text.contains(r"cd '/home/it'\''s $(touch PWNED) here' || exit 2"),
        "{text}"
    );
    assert!(
        text.contains(
            r#"exec '/opt/it'\''s/reprise' check 'c'\''orpus dir' --shard "$SLURM_ARRAY_TASK_ID/4" --results '/home/it'\''s 100%a here/r'\''s.slurm/shard-'"$SLURM_ARRAY_TASK_ID"-of-4.jsonl --resume --json"#
        ),
        "{text}"
    );
    let sbatch: Vec<&str> = text.lines().filter(|l| l.starts_with("#SBATCH")).collect();
    assert_eq!(
        sbatch,
        [
            "#SBATCH --job-name=reprise-check",
            "#SBATCH --ntasks=1",
            "#SBATCH --cpus-per-task=3",
            "#SBATCH --gpus-per-task=2",
        ],
        "{text}"
    );
    // The lines sbatch reads (every comment before the first command)
    // are the fixed ones and the words of reprise.
    for l in text.lines().take_while(|l| l.starts_with('#')) {
        for v in ["home", "QUEUE", "opt", "orpus", "--time", "PWNED"] {
            assert!(!l.contains(v), "{l:?} holds {v}");
        }
    }
    // The values go on sbatch's command line, whole; a % in the
    // directory doubled (sbatch's pattern for a %).
    assert_eq!(
        sc.sbatch_args().unwrap(),
        [
            "--output=/home/it's 100%%a here/r's.slurm/logs/task-%a.out",
            "--partition=QUEUE 'q'",
            "--time=5",
        ]
    );
}

#[test]
fn a_job_directory_with_a_backslash_is_refused() {
    let s = SlurmArgs::default();
    let sc = script(Path::new("/a\\b/r.slurm"), Path::new("/a"), &["/r"], &s);
    let e = sc.sbatch_args().unwrap_err().to_string();
    assert!(
        e.starts_with("the job directory: ") && e.contains("backslash"),
        "{e}"
    );
    // Elsewhere it is quoted.
    let sc = script(Path::new("/a/r.slurm"), Path::new("/a\\b"), &["/r"], &s);
    assert!(sc.text().unwrap().contains(r"cd '/a\b' || exit 2"));
}
