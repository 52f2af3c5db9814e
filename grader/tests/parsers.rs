//! The tool-output parsers against real output, captured on an NVIDIA H200 and an H100 (driver
//! 580.159.04, compute-sanitizer and ncu 2025.3.1) by `cargo xtask verify --keep` on this workbook's
//! exercises (07, 08, 12, 14 and 17 on the H100, built with `-G -g`: their host frames carry lines;
//! 12's file keeps the first of its 64 records; 52 and 54, the performance track's counters, on
//! the H100).

use std::path::Path;

use grader::exercise::manifest::{FindingKind, Tool};
use grader::exercise::metric::Metric;
use grader::exercise::regions;
use grader::judge::verdict as outcome;
use grader::tools::{counters, ncu, sanitizer};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(crate::repo().join("grader/tests/fixtures").join(name)).unwrap()
}

/// Parse an exercise's fixture and fold it the way `check` does, against the exercise's own regions.
fn findings(id: &str, source: &str, tool: Tool) -> Vec<outcome::Finding> {
    let records = sanitizer::parse(tool, &fixture(&format!("{id}-exercise-{tool}.xml"))).unwrap();
    assert!(!records.is_empty());
    let text =
        std::fs::read_to_string(crate::repo().join("exercises").join(id).join(source)).unwrap();
    let regions = regions::parse(&text).unwrap();
    outcome::findings(&records, Path::new(source), &regions)
}

fn only(found: &[outcome::Finding]) -> &outcome::Finding {
    assert_eq!(found.len(), 1, "{found:#?}");
    &found[0]
}

#[test]
fn memcheck_out_of_bounds_write_in_the_transpose() {
    let f = findings("01-index", "transpose.cu", Tool::Memcheck);
    let f = only(&f);
    // Every record up to the --print-limit the grader passes is the same bad write.
    assert_eq!(
        (f.kind, f.region.as_deref(), f.records),
        (
            FindingKind::OutOfBounds,
            Some("bug"),
            sanitizer::PRINT_LIMIT as usize
        )
    );
    assert!(f.text.starts_with("Invalid __global__ write"), "{}", f.text);
    assert_eq!(f.locations[0].line, 30);
    assert!(f.thread.is_some() && f.block.is_some());
}

#[test]
fn memcheck_reads_past_the_end_in_the_bounds_exercise() {
    let found = findings("02-bounds", "scale_bias_relu.cu", Tool::Memcheck);
    let oob: Vec<_> = found
        .iter()
        .filter(|f| f.kind == FindingKind::OutOfBounds)
        .collect();
    assert!(
        oob.iter().all(|f| f.region.as_deref() == Some("bug")),
        "{oob:#?}"
    );
    assert!(
        !oob.is_empty()
            && oob
                .iter()
                .any(|f| f.text.starts_with("Invalid __global__ read")),
        "{oob:#?}"
    );
}

#[test]
fn racecheck_reports_the_intra_warp_race_at_warning_level_inside_warp_sum() {
    let f = findings("03-race", "reduce.cu", Tool::Racecheck);
    // One finding per step of the unrolled warp sum: a lane's write on one line, another lane's
    // read of it on the next, with nothing ordering them.
    assert_eq!(f.len(), 5, "{f:#?}");
    for race in &f {
        assert_eq!(
            (race.kind, race.region.as_deref(), race.level.as_deref()),
            (FindingKind::SharedRace, Some("bug"), Some("Warning"))
        );
        let roles: Vec<(u32, &str)> = race
            .locations
            .iter()
            .map(|l| (l.line, l.role.as_str()))
            .collect();
        let write = roles
            .iter()
            .find(|(_, r)| *r == "write")
            .expect("a write")
            .0;
        assert!(
            roles.contains(&(write + 1, "read")) && (18..=22).contains(&write),
            "{roles:?}"
        );
        assert!(race.hazards.unwrap_or(0) > 0);
    }
}

#[test]
fn synccheck_divergent_barrier_reads_the_type_element() {
    let f = findings("04-sync", "smooth.cu", Tool::Synccheck);
    assert!(
        f.iter()
            .all(|f| f.kind == FindingKind::DivergentBarrier && f.region.as_deref() == Some("bug")),
        "{f:#?}"
    );
    assert_eq!(f[0].text, "Barrier error: Divergent thread(s) in block");
}

#[test]
fn initcheck_points_through_atomic_add_into_the_merge() {
    let f = findings("05-memset", "histogram.cu", Tool::Initcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::UninitializedRead, Some("merge"))
    );
    // The record's own `where` is inside atomicAdd; the exercise's line comes from the device stack.
    assert_eq!(
        f.locations.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![25]
    );
}

#[test]
fn a_leak_is_placed_by_the_host_frame_of_its_allocation() {
    let f = findings("07-leak", "center.cu", Tool::Memcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::Leak, Some("alloc"))
    );
    assert!(f.text.starts_with("Leaked"), "{}", f.text);
    // The cudaMalloc line in alloc_partials, then the call in cb_run: host frames, with lines from -g.
    let at: Vec<(u32, &str, Option<&str>)> = f
        .locations
        .iter()
        .map(|l| (l.line, l.role.as_str(), l.function.as_deref()))
        .collect();
    assert_eq!(at[0], (41, "host", Some("alloc_partials")), "{at:?}");
    assert!(at.iter().all(|(_, role, _)| *role == "host"));
}

#[test]
fn an_invalid_launch_is_an_api_error_at_the_launch_line_without_the_kernel_stub() {
    let found = findings("08-launch", "softmax.cu", Tool::Memcheck);
    let launch = found
        .iter()
        .find(|f| f.text.contains("cudaLaunchKernel"))
        .expect("the launch");
    assert_eq!(
        (launch.kind, launch.region.as_deref()),
        (FindingKind::ApiError, Some("bug"))
    );
    // The launch in launch_softmax (50), then cb_run; not the host stub at the kernel's definition (38).
    let lines: Vec<u32> = launch.locations.iter().map(|l| l.line).collect();
    assert_eq!(lines, vec![50, 65]);
}

#[test]
fn a_fault_is_told_at_the_device_line_and_its_launch() {
    let found = findings("14-async-error", "minmax.cu", Tool::Memcheck);
    let fault = found
        .iter()
        .find(|f| f.kind == FindingKind::OutOfBounds)
        .expect("the null write");
    assert_eq!(fault.region.as_deref(), Some("kernel"));
    let at: Vec<(u32, &str)> = fault
        .locations
        .iter()
        .map(|l| (l.line, l.role.as_str()))
        .collect();
    // The store in block_minmax, the call in minmax_blocks, then the launch line on the host.
    assert_eq!(
        at[..3],
        [(27, "access"), (39, "frame"), (73, "host")],
        "{at:?}"
    );
    // The follow-on API errors are placed by their host lines, outside the kernel region.
    assert!(found
        .iter()
        .filter(|f| f.kind == FindingKind::ApiError)
        .all(|f| f.region.as_deref() != Some("kernel")));
}

#[test]
fn initcheck_host_api_access_is_an_uninitialized_copy_at_the_copy() {
    let f = findings("17-partial-copy", "chunks.cu", Tool::Initcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::UninitializedCopy, Some("bug"))
    );
    assert_eq!(
        (f.locations[0].line, f.locations[0].role.as_str()),
        (24, "host")
    );
}

#[test]
fn a_trap_at_a_bad_syncwarp_mask_is_a_device_exception_in_the_bug_region() {
    // The first of memcheck's 64 records on the untouched 12-syncwarp (-G build), kept as written.
    let f = findings("12-syncwarp", "rowsum16.cu", Tool::Memcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref(), f.text.as_str()),
        (
            FindingKind::DeviceException,
            Some("bug"),
            "Illegal instruction"
        )
    );
    // The record's `where` is inside sm_30_intrinsics.hpp; the exercise's line is the device frame.
    assert_eq!(
        (f.locations[0].line, f.locations[0].role.as_str()),
        (21, "frame")
    );
}

#[test]
fn a_clean_run_has_no_records() {
    assert!(
        sanitizer::parse(Tool::Memcheck, &fixture("03-race-solution-memcheck.xml"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn ncu_csv_of_one_target_sums_its_two_passes() {
    let launches = ncu::parse(&fixture("ncu-one-target.csv")).unwrap();
    assert_eq!(launches.len(), 6, "3 repeats x 2 passes");
    assert!(launches
        .iter()
        .all(|l| l.process == "03-reference" && l.kernel == "block_sum"));
}

#[test]
fn ncu_csv_of_a_crashed_program_keeps_the_launches_before_the_crash() {
    let text = fixture("ncu-crashed-original.csv");
    assert!(text.contains("LaunchFailed"));
    let launches = ncu::parse(&text).unwrap();
    // The failed launch is reported as "nan" and dropped; `ncu::run` drops a failed program's time.
    assert_eq!(launches.len(), 1);
    assert_eq!(launches[0].kernel, "transpose_tiled");
}

#[test]
fn ncu_csv_from_one_session_of_three_processes() {
    let launches = ncu::parse(&fixture("ncu-three-processes.csv")).unwrap();
    for p in ["03-original", "03-reference", "03-learner"] {
        let mine: Vec<_> = launches.iter().filter(|l| l.process == p).collect();
        assert_eq!(mine.len(), 6, "{p}: 3 repeats x 2 passes");
        assert!(mine
            .iter()
            .all(|l| l.kernel == "block_sum" && l.nanoseconds > 1000.0));
    }
}

#[test]
fn ncu_skips_the_nan_of_a_crashed_launch() {
    let launches = ncu::parse(&fixture("ncu-session-ended-by-crash.csv")).unwrap();
    assert_eq!(launches.len(), 1);
    assert_eq!(
        (launches[0].process.as_str(), launches[0].nanoseconds),
        ("01-original", 78_272.0)
    );
}

#[test]
fn a_busy_profiler_is_told_apart_from_a_crashed_program() {
    // Captured on an H200 with six ncu processes at once: the 03 original was never profiled.
    let busy = fixture("ncu-profiler-busy.log");
    assert!(ncu::profiler_was_busy(&busy));
    assert!(matches!(ncu::parse(&busy), Err(ncu::CsvError::NoHeader(_))));
    for other in [
        "ncu-crashed-original.csv",
        "ncu-one-target.csv",
        "ncu-session-ended-by-crash.csv",
    ] {
        assert!(!ncu::profiler_was_busy(&fixture(other)), "{other}");
    }
}

#[test]
fn a_performance_exercise_s_counters_come_from_the_same_ncu_pass_as_its_time() {
    // 52-bank-conflicts untouched, five repeats, with every counter its metrics and the roofline
    // need (`verify --keep` on the H100).
    let launches = ncu::parse_metrics(&fixture("ncu-52-original-counters.csv")).unwrap();
    assert_eq!(launches.len(), 5);
    let c = counters::aggregate(&launches, &["transpose_half".into()], 5).unwrap();
    let mut times: Vec<f64> = launches.iter().map(|l| l.metrics[ncu::METRIC]).collect();
    times.sort_by(f64::total_cmp);
    assert_eq!(c.nanoseconds, times[2], "the median repeat");
    let peaks = counters::Peaks {
        bandwidth_gbps: 2988.7,
        fp32_gflops: 51_400.0,
    };
    let conflicts = Metric::BankConflicts.value(&c, peaks, None).unwrap();
    assert!(
        (15.0..16.5).contains(&conflicts),
        "a 32-way conflict on every tile load, none on the stores: {conflicts}"
    );
    let dram = Metric::DramShare.value(&c, peaks, None).unwrap();
    assert!((40.0..50.0).contains(&dram), "{dram}");
    // One FMUL (0.5 *) per element of the 8192 x 8192 matrix: the roofline's FLOP count.
    assert_eq!(counters::flops(&c), Some(8192.0 * 8192.0));
    // 54-matmul's fix, three repeats: 2 x 4096^3 FLOP, counted from the FFMA instructions.
    let launches = ncu::parse_metrics(&fixture("ncu-54-reference-counters.csv")).unwrap();
    let c = counters::aggregate(&launches, &["matmul".into()], 3).unwrap();
    assert_eq!(counters::flops(&c), Some(2.0 * 4096f64.powi(3)));
    assert!(
        counters::dram_bytes(&c).unwrap() > 3.0 * 4.0 * 4096.0 * 4096.0,
        "at least A and B read and C written once"
    );
}

// The option-enabled modes, captured on an H100 by `verify --survey --keep` of exercises 18-30
// (compute-sanitizer 2025.3.1; each file keeps the first three of its records).

#[test]
fn a_device_side_double_free_is_a_heap_error_in_the_bug_region() {
    let f = findings("18-heap-double-free", "softmax.cu", Tool::Memcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::HeapError, Some("bug"))
    );
    assert!(f.text.contains("Device-side double free"), "{}", f.text);
}

#[test]
fn a_device_heap_leak_names_no_line_and_a_host_leak_stays_a_leak() {
    let records = sanitizer::parse(
        Tool::Memcheck,
        &fixture("19-heap-leak-exercise-memcheck.xml"),
    )
    .unwrap();
    assert!(
        records
            .iter()
            .all(|r| r.kind == FindingKind::HeapLeak && r.locations.is_empty()),
        "{records:#?}"
    );
    let found = findings("19-heap-leak", "median.cu", Tool::Memcheck);
    assert!(
        found.iter().all(|f| outcome::in_region(f, "bug")),
        "a heap leak is evidence without a line"
    );
    // 29's host-side leak (type generic) after its failed launch is an ordinary leak.
    let host = sanitizer::parse(
        Tool::Memcheck,
        &fixture("29-tma-bulk-exercise-memcheck.xml"),
    )
    .unwrap();
    assert!(
        host.iter().any(|r| r.kind == FindingKind::Leak),
        "{host:#?}"
    );
}

#[test]
fn a_stream_ordered_race_is_placed_by_the_host_stacks_of_the_launch_and_the_free() {
    let f = findings("20-stream-free", "streams.cu", Tool::Memcheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::StreamOrderedRace, Some("bug"))
    );
    let lines: Vec<u32> = f.locations.iter().map(|l| l.line).collect();
    assert!(
        lines.contains(&28) && lines.contains(&31),
        "the launch and the cudaFreeAsync: {lines:?}"
    );
}

#[test]
fn unused_memory_and_stack_overflow_are_their_own_kinds() {
    let unused = findings("23-oversized-scratch", "dot.cu", Tool::Initcheck);
    assert_eq!(
        (only(&unused).kind, only(&unused).region.as_deref()),
        (FindingKind::UnusedMemory, Some("bug"))
    );
    let overflow = findings("26-stack-overflow", "poly.cu", Tool::Memcheck);
    assert_eq!(
        (only(&overflow).kind, only(&overflow).region.as_deref()),
        (FindingKind::StackOverflow, Some("bug"))
    );
}

#[test]
fn a_bulk_copy_past_the_end_is_told_by_the_copy_it_points_at() {
    let found = findings("29-tma-bulk", "bulk.cu", Tool::Memcheck);
    let bulk = found
        .iter()
        .find(|f| f.kind == FindingKind::BulkCopy)
        .expect("the bulk copy");
    // memcheck points into CCCL's cp_async_bulk; the device stack's frame in bulk.cu places it.
    assert_eq!(bulk.region.as_deref(), Some("bug"));
    assert_eq!(bulk.locations[0].line, 39, "{:?}", bulk.locations);
    assert!(bulk.text.contains("out of bounds"), "{}", bulk.text);
}

#[test]
fn a_race_against_a_cp_async_write_is_an_async_copy_race_and_a_cluster_race_a_shared_race() {
    // racecheck wrote one record with two `destination`s: the cp_async writes of the tile.
    let f = findings("27-async-copy", "rowsum.cu", Tool::Racecheck);
    let f = only(&f);
    assert_eq!(
        (f.kind, f.region.as_deref()),
        (FindingKind::AsyncCopyRace, Some("bug"))
    );
    assert_eq!(
        f.locations[0].line, 39,
        "the read of the tile before its wait: {:?}",
        f.locations
    );
    let cluster = findings("28-cluster-dsmem", "diffuse.cu", Tool::Racecheck);
    assert!(
        !cluster.is_empty()
            && cluster
                .iter()
                .all(|f| f.kind == FindingKind::SharedRace && f.region.as_deref() == Some("bug")),
        "{cluster:#?}"
    );
}
