//! Async-signal-safe helpers for the sandbox's child: raw system calls on fixed buffers, nothing
//! that allocates or locks.

use std::os::unix::io::RawFd;

pub(super) unsafe fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        let r = libc::waitpid(-1, &mut status, 0);
        if r == pid {
            return status;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            return 0;
        }
    }
}

pub(super) unsafe fn reap_exited() {
    let mut status = 0;
    while libc::waitpid(-1, &mut status, libc::WNOHANG) > 0 {}
}

pub(super) unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let ok = libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
    libc::close(fd);
    ok
}

pub(super) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub(super) fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: nanosleep reads one timespec.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

/// Write the decimal digits of `n` at `buf[at..]`; returns the index after them.
fn put_decimal(buf: &mut [u8], mut at: usize, n: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = n;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in (0..len).rev() {
        buf[at] = digits[i];
        at += 1;
    }
    at
}

/// `/proc/self/fd/N`, NUL-terminated, in `buf`.
pub(super) fn fd_path(fd: RawFd, buf: &mut [u8; 32]) {
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let end = put_decimal(buf, prefix.len(), fd as u64);
    buf[end] = 0;
}

/// Call `f` with the pid of each child of this (single-threaded) process, read from
/// `/proc/self/task/<pid>/children`.
pub(super) unsafe fn for_each_child(mut f: impl FnMut(libc::pid_t)) {
    let mut path = [0u8; 64];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let at = put_decimal(&mut path, prefix.len(), libc::getpid() as u64);
    let suffix = b"/children\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    let mut pid: i64 = -1;
    for &c in &buf[..n.max(0) as usize] {
        if c.is_ascii_digit() {
            pid = pid.max(0) * 10 + (c - b'0') as i64;
        } else if pid >= 0 {
            f(pid as libc::pid_t);
            pid = -1;
        }
    }
    if pid >= 0 {
        f(pid as libc::pid_t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_fd_paths_are_written_without_allocating() {
        let mut buf = [0u8; 32];
        fd_path(1234, &mut buf);
        assert_eq!(&buf[..19], b"/proc/self/fd/1234\0");
        let mut b = [0u8; 8];
        assert_eq!(put_decimal(&mut b, 0, 0), 1);
        assert_eq!(b[0], b'0');
    }
}
