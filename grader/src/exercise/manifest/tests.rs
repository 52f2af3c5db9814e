use super::*;

const RACE: &str = include_str!("../../../../exercises/15-global-race/exercise.toml");
const LEAK: &str = include_str!("../../../../exercises/07-leak/exercise.toml");
const MATMUL: &str = include_str!("../../../../exercises/54-matmul/exercise.toml");

#[test]
fn a_performance_exercise_names_its_target_metrics_and_baseline() {
    let m = parsed("54-matmul", MATMUL).unwrap();
    assert_eq!(
        (
            m.track(),
            m.detector(),
            m.region().get_ref().as_str(),
            m.expected_finding()
        ),
        (Track::Perf, Detector::Speed, "kernel", None)
    );
    let perf = m.manifest.perf.as_ref().unwrap();
    assert_eq!(
        (*perf.speedup.get_ref(), perf.baseline),
        (3.0, Some(Baseline::CublasSgemm))
    );
    assert_eq!(perf.goals[0].metric, Metric::ShareOfBaseline);
}

#[test]
fn the_call_clock_needs_repeats_and_the_timeline_metrics_need_the_call_clock() {
    let error = |text: &str| parsed("54-matmul", text).unwrap_err();
    let m = parsed("54-matmul", MATMUL).unwrap();
    assert_eq!(
        (
            m.manifest.perf.as_ref().unwrap().clock,
            m.manifest.host_memory
        ),
        (Clock::Kernel, HostMemory::Pageable),
        "the defaults"
    );
    let by_call = MATMUL.replace("[perf]\n", "[perf]\nclock = \"call\"\n");
    let m = parsed("54-matmul", &by_call).unwrap();
    assert_eq!(m.manifest.perf.as_ref().unwrap().clock, Clock::Call);
    let once = by_call.replace("repeat = 3", "repeat = 1");
    let e = error(&once);
    assert!(
        e.message.contains("fastest call after the first")
            && e.line == find_line(&once, "repeat = 1"),
        "{e}"
    );
    let e = error(&MATMUL.replace("\"dram-share\"", "\"launches\""));
    assert!(
        e.message.contains("read from the call's timeline") && e.message.contains("launches"),
        "{e}"
    );
    parsed(
        "54-matmul",
        &by_call.replace("\"dram-share\"", "\"copy-overlap\""),
    )
    .unwrap();
    let pinned = parsed("54-matmul", &format!("host_memory = \"pinned\"\n{MATMUL}")).unwrap();
    assert_eq!(pinned.manifest.harness_flags(), ["--pinned"]);
    let both = parsed("54-matmul", &format!("host_memory = \"pinned\"\n{by_call}")).unwrap();
    assert_eq!(
        (both.manifest.clock(), both.manifest.harness_flags()),
        (Clock::Call, vec!["--pinned", "--spin"])
    );
    let e = error(&format!("host_memory = \"locked\"\n{MATMUL}"));
    assert!(e.message.contains("locked") && e.line == Some(1), "{e}");
}

#[test]
fn each_track_refuses_the_other_tracks_fields_at_their_line() {
    let error = |text: &str| parsed("54-matmul", text).unwrap_err();
    // Format 1 knows only bug exercises.
    let e = error(&MATMUL.replace("format = 2", "format = 1"));
    assert!(
        e.message.contains("`kind` needs `format = 2`") && e.line == Some(2),
        "{e}"
    );
    let with_expect =
        format!("{MATMUL}\n[expect]\ntool = \"memcheck\"\nkind = \"leak\"\nregion = \"kernel\"\n");
    let e = error(&with_expect);
    assert!(
        e.message.contains("no bug to expect") && e.line == find_line(&with_expect, "[expect]"),
        "{e}"
    );
    let e = error(&MATMUL.replace("[timing]\n", "[timing]\nmax_ratio_to_reference = 1.5\n"));
    assert!(e.message.contains("judged by `[perf] speedup`"), "{e}");
    let e = error(&MATMUL.replace("speedup = 3.0", "speedup = 0.9"));
    assert!(
        e.message.contains("above 1.0") && e.line == find_line(MATMUL, "speedup = 3.0"),
        "{e}"
    );
    // An unknown metric is a serde error at its line.
    let e = error(&MATMUL.replace("\"dram-share\"", "\"dram-bandwidth\""));
    assert!(
        e.message.contains("dram-bandwidth") && e.line == find_line(MATMUL, "metrics = ["),
        "{e}"
    );
    let e = error(&MATMUL.replace("metric = \"share-of-baseline\"", "metric = \"occupancy\""));
    assert!(e.message.contains("add the metric to `metrics`"), "{e}");
    let e = error(&MATMUL.replace("baseline = \"cublas-sgemm\"\n", ""));
    assert!(e.message.contains("set `baseline`"), "{e}");
    let e = error(&MATMUL.replace("at_least = 30.0", "at_least = 30.0\nat_most = 90.0"));
    assert!(e.message.contains("exactly one finite bound"), "{e}");
    // A bug exercise still needs its ratio target and its [expect].
    let e = parsed(
        "07-leak",
        &LEAK.replace("max_ratio_to_reference = 1.5\n", ""),
    )
    .unwrap_err();
    assert!(
        e.message.contains("needs `timing.max_ratio_to_reference`"),
        "{e}"
    );
}

fn parsed(id: &str, text: &str) -> Result<LoadedManifest, ManifestError> {
    parse(id, Path::new("exercise.toml"), text)
}

#[test]
fn a_bug_no_tool_sees_names_the_cases_and_no_tool() {
    let m = parsed("15-global-race", RACE).unwrap();
    assert_eq!(
        (m.detector(), m.expected_finding()),
        (Detector::WrongOutput, None)
    );
    // Claiming a tool for it is refused, at the [expect] line.
    let claimed = RACE.replace(
        "detector = \"wrong-output\"",
        "detector = \"wrong-output\"\ntool = \"racecheck\"",
    );
    let e = parsed("15-global-race", &claimed).unwrap_err();
    assert!(
        e.message.contains("names no `tool` or `kind`")
            && e.line == find_line(&claimed, "[expect]"),
        "{e}"
    );
}

#[test]
fn a_sanitizer_detector_needs_its_tool_and_kind() {
    let m = parsed("07-leak", LEAK).unwrap();
    assert_eq!(
        m.expected_finding(),
        Some((Tool::Memcheck, FindingKind::Leak))
    );
    let e = parsed("07-leak", &LEAK.replace("kind = \"leak\"\n", "")).unwrap_err();
    assert!(e.message.contains("needs `tool` and `kind`"), "{e}");
}

/// The 07 manifest with its `[expect]` table replaced.
fn with_expect(expect: &str) -> String {
    let start = LEAK.find("[expect]").unwrap();
    let end = start + LEAK[start..].find("\n\n").unwrap();
    format!("{}{expect}{}", &LEAK[..start], &LEAK[end..])
}

#[test]
fn tool_options_are_checked_against_the_tools_allow_list_at_their_line() {
    let text = with_expect("[expect]\ntool = \"memcheck\"\nkind = \"stream-ordered-race\"\noptions = [\"--track-stream-ordered-races\", \"all\"]\nregion = \"alloc\"");
    let m = parsed("07-leak", &text).unwrap();
    assert_eq!(
        m.tool_options(Tool::Memcheck),
        ["--track-stream-ordered-races", "all"]
    );
    assert!(
        m.tool_options(Tool::Racecheck).is_empty(),
        "the options are the named tool's only"
    );
    let options_line = find_line(&text, "options = ");
    for (bad, says) in [
        (
            "[\"--racecheck-deadlock-timeout\", \"1000\"]",
            "belongs to racecheck, not memcheck",
        ),
        (
            "[\"--print-limit\", \"1\"]",
            "not one the grader passes to memcheck",
        ),
        ("[\"--track-stream-ordered-races\"]", "got nothing"),
        ("[\"--track-stream-ordered-races\", \"some\"]", "got `some`"),
        ("[\"--track-stream-ordered-races=all\"]", "as its own item"),
    ] {
        let e = parsed(
            "07-leak",
            &text.replace("[\"--track-stream-ordered-races\", \"all\"]", bad),
        )
        .unwrap_err();
        assert!(
            e.message.contains(says) && e.line == options_line,
            "{bad}: {e}"
        );
    }
    // A flag takes no value; a number must be one.
    assert!(check_options(
        Tool::Initcheck,
        &[
            "--track-unused-memory".into(),
            "--unused-memory-threshold".into(),
            "50".into()
        ]
    )
    .is_ok());
    assert!(check_options(
        Tool::Racecheck,
        &["--racecheck-deadlock-timeout".into(), "soon".into()]
    )
    .unwrap_err()
    .to_string()
    .contains("whole number"));
    // Options need a tool to go to.
    let e = parsed(
        "15-global-race",
        &RACE.replace(
            "detector = \"wrong-output\"",
            "detector = \"wrong-output\"\noptions = [\"--leak-check\", \"full\"]",
        ),
    )
    .unwrap_err();
    assert!(e.message.contains("names no `tool`"), "{e}");
}

#[test]
fn a_kind_belongs_to_its_tool() {
    let e = parsed(
        "07-leak",
        &with_expect("[expect]\ntool = \"memcheck\"\nkind = \"deadlock\"\nregion = \"alloc\""),
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("kind `deadlock` is a record of racecheck, not of memcheck")
            && e.line.is_some(),
        "{e}"
    );
    for kind in [
        "heap-error",
        "heap-leak",
        "stream-ordered-race",
        "bulk-copy",
        "stack-overflow",
    ] {
        parsed(
            "07-leak",
            &with_expect(&format!(
                "[expect]\ntool = \"memcheck\"\nkind = \"{kind}\"\nregion = \"alloc\""
            )),
        )
        .unwrap();
    }
    parsed("07-leak", &with_expect("[expect]\ntool = \"racecheck\"\nkind = \"async-copy-race\"\noptions = [\"--racecheck-memcpy-async\", \"yes\"]\nregion = \"alloc\"")).unwrap();
    parsed("07-leak", &with_expect("[expect]\ntool = \"initcheck\"\nkind = \"unused-memory\"\noptions = [\"--track-unused-memory\"]\nregion = \"alloc\"")).unwrap();
}

#[test]
fn a_hang_has_a_limit_and_may_name_the_tool_that_reports_it() {
    let hang = with_expect("[expect]\ndetector = \"hang\"\nregion = \"alloc\"\ntimeout_s = 2\ntool = \"racecheck\"\nkind = \"deadlock\"\noptions = [\"--racecheck-deadlock-timeout\", \"1000\"]");
    let m = parsed("07-leak", &hang).unwrap();
    assert_eq!(
        (m.detector(), m.expected_finding(), m.hang_timeout()),
        (
            Detector::Hang,
            Some((Tool::Racecheck, FindingKind::Deadlock)),
            Some(std::time::Duration::from_secs(2))
        )
    );
    assert_eq!(
        m.tool_options(Tool::Racecheck),
        ["--racecheck-deadlock-timeout", "1000"]
    );
    // Without a tool: a timeout is the only evidence; the default limit applies.
    let bare = with_expect("[expect]\ndetector = \"hang\"\nregion = \"alloc\"");
    let m = parsed("07-leak", &bare).unwrap();
    assert_eq!(
        (m.expected_finding(), m.hang_timeout()),
        (
            None,
            Some(std::time::Duration::from_secs_f64(DEFAULT_HANG_TIMEOUT_S))
        )
    );
    assert_eq!(shown_by(None, Detector::Hang), "timeout");
    let e = parsed("07-leak", &hang.replace("kind = \"deadlock\"\n", "")).unwrap_err();
    assert!(e.message.contains("both `tool` and `kind`"), "{e}");
    let e = parsed("07-leak", &hang.replace("timeout_s = 2", "timeout_s = 600")).unwrap_err();
    assert!(
        e.message.contains("between 0.5 and 60") && e.line == find_line(&hang, "timeout_s"),
        "{e}"
    );
    // A limit belongs to hangs only.
    let e = parsed(
        "07-leak",
        &LEAK.replace("kind = \"leak\"", "kind = \"leak\"\ntimeout_s = 3"),
    )
    .unwrap_err();
    assert!(e.message.contains("limit of a hang"), "{e}");
}

#[test]
fn a_crash_names_no_tool() {
    let crash = with_expect("[expect]\ndetector = \"crash\"\nregion = \"alloc\"");
    let m = parsed("07-leak", &crash).unwrap();
    assert_eq!(
        (m.detector(), m.expected_finding(), m.hang_timeout()),
        (Detector::Crash, None, None)
    );
    let e = parsed(
        "07-leak",
        &crash.replace("region", "tool = \"memcheck\"\nkind = \"leak\"\nregion"),
    )
    .unwrap_err();
    assert!(
        e.message.contains("`detector = \"crash\"` names no `tool`"),
        "{e}"
    );
}

#[test]
fn a_level_is_one_to_three() {
    assert_eq!(parsed("07-leak", LEAK).unwrap().level(), Some(1));
    let unleveled = LEAK.replacen("level = 1\n", "", 1);
    assert_eq!(parsed("07-leak", &unleveled).unwrap().level(), None);
    let e = parsed("07-leak", &LEAK.replacen("level = 1", "level = 4", 1)).unwrap_err();
    assert!(e.message.contains("level = 4") && e.line == Some(3), "{e}");
}

#[test]
fn a_loop_count_past_its_references_limit_is_refused_at_its_case() {
    const ZERO_COPY: &str = include_str!("../../../../exercises/67-zero-copy/exercise.toml");
    assert!(parsed("67-zero-copy", ZERO_COPY).is_ok());
    let many = ZERO_COPY.replacen("sweeps = 300", "sweeps = 2147483648", 1);
    let e = parsed("67-zero-copy", &many).unwrap_err();
    assert!(
        e.message
            .contains("`sweeps` = 2147483648 is more than 1024")
            && e.line == find_line(&many, "\"4096 cells, 300 sweeps"),
        "{e:?}"
    );
}

#[test]
fn build_options_name_features_not_flags() {
    let plain = parsed("07-leak", LEAK).unwrap().manifest.build;
    assert_eq!(
        (plain.flags(), plain.arch("sm_90")),
        (&[][..], "sm_90".to_string())
    );
    let both = format!("requires = \"9.0\"\n{LEAK}\n[build]\nrdc = true\narch_specific = true\n");
    let options = parsed("07-leak", &both).unwrap().manifest.build;
    assert_eq!(
        (
            options.flags(),
            options.arch("sm_90"),
            options.arch("sm_90a")
        ),
        (
            &["-rdc=true", "-lcudadevrt"][..],
            "sm_90a".to_string(),
            "sm_90a".to_string()
        )
    );
    // Architecture-specific code runs on one architecture: the manifest must gate on it.
    let ungated = format!("{LEAK}\n[build]\narch_specific = true\n");
    let e = parsed("07-leak", &ungated).unwrap_err();
    assert!(
        e.message.contains("requires") && e.line == find_line(&ungated, "arch_specific"),
        "{e:?}"
    );
    // A raw flag is not a key.
    let raw = format!("{LEAK}\n[build]\nflags = [\"-Xptxas\"]\n");
    let e = parsed("07-leak", &raw).unwrap_err();
    assert!(e.message.contains("unknown field"), "{e:?}");
}

#[test]
fn requires_is_a_compute_capability() {
    let gated = format!("requires = \"9.0\"\n{LEAK}");
    let m = parsed("07-leak", &gated).unwrap();
    let cap = m.requires().unwrap();
    assert_eq!(
        (cap, cap.to_string(), cap.family(), cap.tag()),
        (
            Capability { major: 9, minor: 0 },
            "9.0".into(),
            "Hopper",
            "sm_90+".into()
        )
    );
    assert!(
        Capability { major: 8, minor: 0 } < cap
            && Capability {
                major: 10,
                minor: 0
            } > cap
            && Capability { major: 9, minor: 1 } > cap
    );
    assert_eq!(parsed("07-leak", LEAK).unwrap().requires(), None);
    for bad in ["9", "sm_90", "9.0.1", "nine"] {
        let e = parsed(
            "07-leak",
            &format!(
                "format = 1\nrequires = \"{bad}\"\n{}",
                LEAK.replacen("format = 1\n", "", 1)
            ),
        )
        .unwrap_err();
        assert!(
            e.message.contains("major.minor") && e.line == Some(2),
            "{bad}: {e}"
        );
    }
}
