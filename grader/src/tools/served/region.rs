//! The memory shared with the timed program: a sealed memfd, mapped here.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{MAGIC, PAGE};

/// The memory shared with the program: a memfd (closed at exec but for the timed program, which
/// the runner hands it to), mapped here.
#[derive(Debug)]
pub(super) struct SharedRegion {
    pub(super) fd: OwnedFd,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping lives as long as the Region; the grader's driver is its only user here, and
// what the other process does to it is read with volatile copies.
unsafe impl Send for SharedRegion {}
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    pub(super) fn new(len: usize) -> std::io::Result<SharedRegion> {
        // SAFETY: memfd_create, ftruncate, fcntl and mmap on a descriptor we own; results checked.
        unsafe {
            let fd = libc::memfd_create(
                c"cudabugs-served".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            );
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The program holds the same file: truncated under the grader's mapping, the grader's
            // next read of it would die of SIGBUS. Sealed, its size is fixed for good.
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
            if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let r = SharedRegion {
                fd,
                base: base.cast(),
                len,
            };
            r.word(0).store(MAGIC, Ordering::Release);
            Ok(r)
        }
    }

    pub(super) fn word(&self, at: usize) -> &AtomicU64 {
        assert!(at + 8 <= PAGE);
        // SAFETY: inside the control page, 8-byte aligned (offsets are multiples of 64).
        unsafe { &*(self.base.add(at) as *const AtomicU64) }
    }

    /// Write `bytes` at `offset`.
    pub(super) fn put(&self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len);
        // SAFETY: inside the mapping; the other process may read it meanwhile, which is its affair.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(offset), bytes.len()) }
    }

    pub(super) fn fill(&self, offset: usize, len: usize, byte: u8) {
        assert!(offset + len <= self.len);
        // SAFETY: as in `put`.
        unsafe { std::ptr::write_bytes(self.base.add(offset), byte, len) }
    }

    /// Allocate and map every page now, in one call, rather than one fault at a time in the first
    /// call's writes. Done when a process is about to start (`Driver::prepare`), not when the
    /// region is made: a run served from what was kept (`launcher::Kept`) never starts one, and
    /// 63's 512 MiB would be zeroed for nothing. A kernel without `MADV_POPULATE_WRITE` (before
    /// 5.14) faults the pages in as they are written, as before.
    pub(super) fn populate(&self) {
        // SAFETY: advice on the mapping this Region owns; a failure only means no prefaulting.
        unsafe {
            libc::madvise(self.base.cast(), self.len, libc::MADV_POPULATE_WRITE);
        }
    }

    /// The `len` bytes at `offset`, for a system call to copy (`write`): the other process may
    /// be writing them meanwhile, so nothing here reads them as values.
    pub(super) fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        assert!(offset + len <= self.len);
        // SAFETY: inside the mapping, which lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.base.add(offset), len) }
    }

    /// A copy of `len` bytes at `offset`.
    pub(super) fn get(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len);
        let mut out = vec![0u8; len];
        // SAFETY: inside the mapping; the other process may be writing it, so nothing here assumes
        // the bytes stay what they were.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(offset), out.as_mut_ptr(), len) };
        out
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the timed program can do with the descriptor it is handed: write, not resize. A
    /// truncated file under the grader's mapping killed the grader with SIGBUS at its next read.
    #[test]
    fn the_program_cannot_shrink_the_shared_memory_under_the_grader() {
        let r = SharedRegion::new(4 * PAGE).unwrap();
        // SAFETY: plain system calls on a descriptor this test owns.
        let (shrunk, errno, grown) = unsafe {
            let shrunk = libc::ftruncate(r.fd.as_raw_fd(), 0);
            let errno = std::io::Error::last_os_error().raw_os_error();
            let grown = libc::ftruncate(r.fd.as_raw_fd(), (8 * PAGE) as libc::off_t);
            (shrunk, errno, grown)
        };
        assert_eq!((shrunk, errno, grown), (-1, Some(libc::EPERM), -1));
        r.put(PAGE, b"still here");
        assert_eq!(r.get(PAGE, 10), b"still here");
    }
}
