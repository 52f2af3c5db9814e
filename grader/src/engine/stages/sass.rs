//! The SASS stage: a release build's device code read for clock reads (`cuobjdump -sass`, in the
//! submission's sandbox), and its file's compiled reach (`reach`). What cuobjdump read of a binary
//! is kept by the binary's content beside the reach records, so that the same binary (a
//! classmate's identical file, the reference fix in every chunk, a regrade, a resumed grade) is
//! disassembled once: nvdisasm costs 0.2-0.3 s a cubin (`device_code_reads` runs it on the
//! submission's own).

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, Submission};
use crate::exercise::workbook::Workbook;
use crate::tools::nvcc::Built;
use crate::tools::sass::{self, SassClockRead};

use super::reach;
use super::sandbox::{run_dir, sandboxed};
use super::{Output, SassError};

/// Bumped when the parse or the key change, so that kept reads are not reused.
const READS_VERSION: &str = "sass-2";

/// The release build's device code, read for clock reads, and the file's host object for what it
/// reaches. cuobjdump, nvcc and objdump read files the submission's code shaped, so they run in the
/// submission's sandbox; with no key, a replay runs them for real.
pub fn sass(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
) -> Output {
    let reads = match ctx.tools.cuobjdump.as_deref() {
        None => Err(SassError::Failed("cuobjdump was not found".into())),
        Some(cuobjdump) => kept_reads(&ctx.reach_cache, cuobjdump, &built.binary, || {
            device_code_reads(ctx, wb, sub, stage, cuobjdump, &built.binary)
        }),
    };
    let host = reach::analysed(sub).map(|ex| reach::reached(ctx, wb, sub, stage, ex, &[built]));
    Output::Sass { reads, host }
}

/// The clock reads of a binary's device code. cuobjdump writes out its cubins, and disassembles
/// each one but those that are the harness's own (byte for byte) or hold no code (the link's empty
/// stub): one nvdisasm where the whole binary took three, 0.3 s of CPU instead of 0.8 s for
/// 03-race. Where the cubins written out are not the ones cuobjdump named, the whole binary is
/// read, as before. Each job runs in the submission's sandbox, in the stage's fresh run folder.
fn device_code_reads(
    ctx: &Context,
    wb: &Workbook,
    sub: &Submission,
    stage: &Stage,
    cuobjdump: &Path,
    binary: &Path,
) -> Result<Vec<SassClockRead>, SassError> {
    let timeout = ctx.config.timeouts.build;
    let run = run_dir(sub, stage);
    let boxed = |job| sandboxed(ctx, wb, sub, stage, job);
    let disassembled = |file: &Path, cubin: Option<&[u8]>| {
        let job = boxed(sass::sass_job(cuobjdump, file, timeout));
        // The run folder is made afresh for each job: the cubin goes in once it is.
        if let Some(bytes) = cubin {
            std::fs::write(file, bytes)
                .map_err(|e| SassError::Failed(format!("{}: {e}", file.display())))?;
        }
        let finished = succeeded(ctx.launcher.launch(&job))?;
        Ok::<_, SassError>(sass::clock_reads_in_sass(&finished.stdout.text()))
    };
    let extract = boxed(sass::extract_job(cuobjdump, binary, timeout)).cwd(&run);
    let said = succeeded(ctx.launcher.launch(&extract))?.stdout.text();
    let Some(cubins) = sass::extracted_cubins(&run, &said) else {
        return disassembled(binary, None);
    };
    let ours = ctx.harness_cubins.get_or_init(|| {
        sass::harness_cubins(
            ctx.launcher.as_ref(),
            cuobjdump,
            &ctx.harness.object,
            timeout,
        )
    });
    let mut reads = Vec::new();
    for cubin in cubins.iter().filter(|c| sass::needs_reading(c, ours)) {
        reads.extend(disassembled(&run.join("device.cubin"), Some(cubin))?);
    }
    Ok(reads)
}

/// A cuobjdump job that ran to a zero exit, or why not.
fn succeeded(
    launched: Result<crate::tools::runner::Finished, crate::tools::runner::SpawnError>,
) -> Result<crate::tools::runner::Finished, SassError> {
    match launched {
        Ok(f) if f.success() => Ok(f),
        Ok(f) => Err(SassError::Failed(f.describe_exit())),
        Err(e) => Err(SassError::Spawn(e)),
    }
}

/// The clock reads kept in `dir` for this content of `binary` read by this `cuobjdump`, or `read`'s,
/// kept there when the binary was the same before and after it (a binary changed under the read
/// is read, not kept). A binary the grader cannot read is read by `read` alone.
fn kept_reads(
    dir: &Path,
    cuobjdump: &Path,
    binary: &Path,
    read: impl FnOnce() -> Result<Vec<SassClockRead>, SassError>,
) -> Result<Vec<SassClockRead>, SassError> {
    let Some(key) = content_key(cuobjdump, binary) else {
        return read();
    };
    let kept: PathBuf = dir.join(format!("{READS_VERSION}-{}.json", &key[..24]));
    reach::kept_record(&kept, || {
        let reads = read()?;
        let unchanged = content_key(cuobjdump, binary).as_deref() == Some(key.as_str());
        Ok((reads, unchanged))
    })
}

/// The key of what cuobjdump reads: its path, and the binary's content.
fn content_key(cuobjdump: &Path, binary: &Path) -> Option<String> {
    let content = crate::tools::nvcc::file_hash(binary)?.to_hex();
    let mut hasher = blake3::Hasher::new();
    crate::hash::feed(
        &mut hasher,
        &[READS_VERSION, &cuobjdump.to_string_lossy(), &content],
    );
    Some(hasher.finalize().to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(function: &str) -> SassClockRead {
        SassClockRead {
            function: function.into(),
            instruction: "CS2R R6, SR_CLOCKLO".into(),
        }
    }

    /// A scratch folder: where reads are kept, and a binary holding "one".
    fn folder_with_binary() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (kept, binary) = (dir.path().join("kept"), dir.path().join("a.out"));
        std::fs::write(&binary, b"one").unwrap();
        (dir, kept, binary)
    }

    #[test]
    fn a_binary_is_read_once_and_a_changed_one_is_read_again() {
        let (_dir, kept, binary) = folder_with_binary();
        let cuobjdump = Path::new("/opt/cuda/bin/cuobjdump");
        let first = kept_reads(&kept, cuobjdump, &binary, || Ok(vec![read("_Z1fv")])).unwrap();
        assert_eq!(first, [read("_Z1fv")]);
        let again = kept_reads(&kept, cuobjdump, &binary, || panic!("read again")).unwrap();
        assert_eq!(again, first, "the same bytes are not read again");
        // Other bytes, or another cuobjdump, are read.
        std::fs::write(&binary, b"two").unwrap();
        let other = kept_reads(&kept, cuobjdump, &binary, || Ok(vec![])).unwrap();
        assert!(other.is_empty());
        let other_tool = Path::new("/usr/local/cuda/bin/cuobjdump");
        let fresh = kept_reads(&kept, other_tool, &binary, || Ok(vec![read("_Z1gv")])).unwrap();
        assert_eq!(fresh, [read("_Z1gv")]);
    }

    #[test]
    fn a_failed_read_or_a_binary_changed_under_it_is_not_kept() {
        let (_dir, kept, binary) = folder_with_binary();
        let cuobjdump = Path::new("/opt/cuda/bin/cuobjdump");
        let failed = kept_reads(&kept, cuobjdump, &binary, || {
            Err(SassError::Failed("exit status 1".into()))
        });
        assert!(failed.is_err());
        // Rewritten while it was read: what was read is returned, and nothing is kept for either.
        let changed = kept_reads(&kept, cuobjdump, &binary, || {
            std::fs::write(&binary, b"two").unwrap();
            Ok(vec![read("_Z1fv")])
        })
        .unwrap();
        assert_eq!(changed, [read("_Z1fv")]);
        for bytes in [&b"one"[..], b"two"] {
            std::fs::write(&binary, bytes).unwrap();
            let fresh = kept_reads(&kept, cuobjdump, &binary, || Ok(vec![])).unwrap();
            assert!(fresh.is_empty(), "nothing kept for {bytes:?}");
        }
    }
}
