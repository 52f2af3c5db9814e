//! An exclusive `flock` on a file, held until the holder is dropped: across the grader's processes
//! on this machine, and across threads of one (each taker opens the file itself, and `flock` locks
//! an open file, not a process). A process that dies lets go with its descriptors.

use std::os::fd::AsRawFd;
use std::path::Path;

/// A lock taken by `exclusive`: it ends when the file is closed.
#[derive(Debug)]
pub struct Held(#[allow(dead_code)] std::fs::File);

/// The lock on `path` (created if missing, with its folder), waiting for whoever holds it. None
/// where the file cannot be made, opened or locked: the caller goes on unlocked.
pub fn exclusive(path: &Path) -> Option<Held> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    loop {
        // SAFETY: flock on a descriptor we own; it blocks until the lock is ours.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Some(Held(file));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether another open file of `path` could take the lock now (without waiting).
    fn free(path: &Path) -> bool {
        let file = std::fs::File::open(path).unwrap();
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    }

    #[test]
    fn the_lock_is_held_against_every_other_open_file_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = exclusive(&path).expect("free");
        // Another open file of this process, as another thread or process would have, is refused.
        assert!(!free(&path));
        drop(held);
        assert!(free(&path));
        let again = exclusive(&path).expect("free again");
        assert!(!free(&path));
        drop(again);
        // A missing folder is made; a file where the folder should be is no lock.
        assert!(exclusive(&dir.path().join("missing/lock")).is_some());
        assert!(exclusive(&path.join("lock")).is_none());
    }
}
