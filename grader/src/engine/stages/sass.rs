//! The SASS stage: a release build's device code read for clock reads (`cuobjdump -sass`, in the
//! submission's sandbox), and its file's compiled reach (`reach`). What cuobjdump read of a binary
//! is kept by the binary's content beside the reach records, so that the same binary (a
//! classmate's identical file, the reference fix in every chunk, a regrade, a resumed grade) is
//! disassembled once: nvdisasm costs 0.3-0.9 s a cubin, about 2 s of CPU a binary.

use std::path::{Path, PathBuf};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, Submission};
use crate::exercise::workbook::Workbook;
use crate::tools::nvcc::Built;
use crate::tools::sass::SassClockRead;

use super::reach;
use super::sandbox::sandboxed;
use super::{Output, SassError};

/// Bumped when the parse or the key change, so that kept reads are not reused.
const READS_VERSION: &str = "sass-1";

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
            let job = sandboxed(
                ctx,
                wb,
                sub,
                stage,
                crate::tools::sass::sass_job(cuobjdump, &built.binary, ctx.config.timeouts.build),
            );
            match ctx.launcher.launch(&job) {
                Ok(f) if f.success() => {
                    Ok(crate::tools::sass::clock_reads_in_sass(&f.stdout.text()))
                }
                Ok(f) => Err(SassError::Failed(f.describe_exit())),
                Err(e) => Err(SassError::Spawn(e)),
            }
        }),
    };
    let host = reach::analysed(sub).map(|ex| reach::reached(ctx, wb, sub, stage, ex, &[built]));
    Output::Sass { reads, host }
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
