//! The filesystem the program sees, mounted by the sandbox's init inside the new namespaces, phase
//! by phase: mounts made private, handles on what is bound back, the root read-only, the hidden
//! files and folders and the covers, the folders bound back, then /dev/shm and /proc of its own.

use std::ffi::CString;
use std::os::unix::io::RawFd;

use super::raw::fd_path;
use super::{Prepared, SetupStep, MAX_BINDS};

const NULL: *const libc::c_char = std::ptr::null::<libc::c_char>();

impl Prepared {
    /// The filesystem the program sees. Runs in the init, inside the new namespaces.
    pub(super) unsafe fn mount_view(&self) -> Result<(), SetupStep> {
        // Nothing mounted here may propagate back to the machine.
        if libc::mount(
            NULL,
            c"/".as_ptr(),
            NULL,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(SetupStep::MountPrivate);
        }
        let fds = self.open_bound_back()?;
        read_only_root()?;
        self.hide()?;
        self.bind_back(&fds)?;
        for fd in fds.iter().filter(|fd| **fd >= 0) {
            libc::close(*fd);
        }
        own_shm_and_proc()?;
        // The working folder again: the old handle points below the read-only root.
        if let Some(cwd) = &self.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(SetupStep::Chdir);
            }
        }
        Ok(())
    }

    /// Handles on everything to bind back, before anything hides it: the readable folders, then
    /// the writable ones.
    unsafe fn open_bound_back(&self) -> Result<[RawFd; MAX_BINDS], SetupStep> {
        let mut fds = [-1; MAX_BINDS];
        for (i, p) in self
            .readable
            .iter()
            .chain(&self.writable)
            .take(MAX_BINDS)
            .enumerate()
        {
            fds[i] = libc::open(
                p.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if fds[i] < 0 {
                return Err(SetupStep::OpenWritable);
            }
        }
        Ok(fds)
    }

    /// /dev/null over each hidden file, then the hidden folders, then the covers.
    unsafe fn hide(&self) -> Result<(), SetupStep> {
        for f in &self.hidden_files {
            if libc::mount(
                self.dev_null.as_ptr(),
                f.as_ptr(),
                NULL,
                libc::MS_BIND,
                std::ptr::null(),
            ) != 0
            {
                return Err(SetupStep::Hide);
            }
        }
        empty_over(&self.hidden, &self.mkdirs)?;
        // Covers over what the sandbox user cannot enter, after the hidden folders (which may lie
        // below a cover: the readable folder bound back brings them along).
        empty_over(&self.covers, &self.cover_mkdirs)
    }

    /// The folders opened by `open_bound_back` bound back in, from their handles `fds`.
    unsafe fn bind_back(&self, fds: &[RawFd; MAX_BINDS]) -> Result<(), SetupStep> {
        // The readable folders, parents first, with what is mounted below them (the hidden
        // folders' tmpfs): read-only, as their source is by now.
        let mut path = [0u8; 32];
        for (i, r) in self.readable.iter().enumerate() {
            fd_path(fds[i], &mut path);
            if !bind(&path, r, libc::MS_REC) {
                return Err(SetupStep::Bind);
            }
        }
        // The writable folders, bound back over themselves. A bind copies the source mount's
        // flags, read-only by now: remount it writable.
        let writable_at = self.readable.len();
        for (i, w) in self.writable.iter().enumerate() {
            fd_path(fds[writable_at + i], &mut path);
            if !bind(&path, w, 0)
                || libc::mount(
                    NULL,
                    w.as_ptr(),
                    NULL,
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | libc::MS_NODEV,
                    std::ptr::null(),
                ) != 0
            {
                return Err(SetupStep::Bind);
            }
        }
        Ok(())
    }
}

/// Bind `source` (a `/proc/self/fd/N` path) over `target`.
unsafe fn bind(source: &[u8; 32], target: &CString, flags: libc::c_ulong) -> bool {
    libc::mount(
        source.as_ptr().cast(),
        target.as_ptr(),
        NULL,
        libc::MS_BIND | flags,
        std::ptr::null(),
    ) == 0
}

/// Every mount read-only, recursively (mount_setattr, Linux 5.12); else the root alone.
unsafe fn read_only_root() -> Result<(), SetupStep> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_int = 0x8000;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let r = libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        c"/".as_ptr(),
        AT_RECURSIVE,
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    );
    if r != 0
        && libc::mount(
            NULL,
            c"/".as_ptr(),
            NULL,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            std::ptr::null(),
        ) != 0
    {
        return Err(SetupStep::ReadOnlyRoot);
    }
    Ok(())
}

/// An empty tmpfs over each of `over`, with the paths `inside` made in them (to the folders
/// below that must be seen), then read-only.
unsafe fn empty_over(over: &[CString], inside: &[CString]) -> Result<(), SetupStep> {
    for at in over {
        if libc::mount(
            c"tmpfs".as_ptr(),
            at.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"size=64k,mode=755".as_ptr().cast(),
        ) != 0
        {
            return Err(SetupStep::Hide);
        }
    }
    for d in inside {
        libc::mkdir(d.as_ptr(), 0o755);
    }
    for at in over {
        if libc::mount(
            NULL,
            at.as_ptr(),
            NULL,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            std::ptr::null(),
        ) != 0
        {
            return Err(SetupStep::Hide);
        }
    }
    Ok(())
}

/// A private /dev/shm (CUDA and the tools may use it) and a /proc of this namespace only.
unsafe fn own_shm_and_proc() -> Result<(), SetupStep> {
    libc::mount(
        c"tmpfs".as_ptr(),
        c"/dev/shm".as_ptr(),
        c"tmpfs".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV,
        c"size=256m,mode=1777".as_ptr().cast(),
    );
    if libc::mount(
        c"proc".as_ptr(),
        c"/proc".as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ) != 0
    {
        return Err(SetupStep::Proc);
    }
    Ok(())
}
