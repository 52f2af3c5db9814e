//! The system calls a sandboxed program may not make: a seccomp filter, built once with
//! `seccompiler` before any fork and installed in the sandboxed child just before `exec`, after
//! `no_new_privs`. The program, the tool around it and everything they start inherit it.
//!
//! What is refused (EPERM) is what no exercise, nvcc, compute-sanitizer or ncu needs and what a
//! program would use to leave the sandbox, reach another process or change the machine: mounts
//! and namespaces (`mount`, `umount2`, `pivot_root`, `chroot`, `setns`, `unshare`, `clone` with a
//! namespace flag, the new mount API), other processes' memory (`ptrace`, `process_vm_*`,
//! `pidfd_getfd`), kernel interfaces (`bpf`, `perf_event_open`, keys, modules, `kexec`, `reboot`,
//! `syslog`, `acct`, swap, quotas, `iopl`/`ioperm`), the clock (`settimeofday`, `clock_settime`,
//! `adjtimex`, `clock_adjtime`), the CPUs it was started on (`sched_setaffinity`: `grade` keeps
//! cores for the timed calls alone, `tools::cpus`), file handles that bypass paths
//! (`open_by_handle_at`), `userfaultfd` and io_uring (its operations would not pass through this
//! filter). CUDA keeps what it needs: `ioctl` on `/dev/nvidia*`, `mmap`, `memfd_create`, sockets
//! and threads.
//!
//! Exec and fork cannot be refused here: compute-sanitizer and ncu must start the program. The
//! harness refuses them in the program itself, with a filter of its own installed before any
//! constructor runs (harness/harness.cu, asked for by `NO_SPAWN_ENV`). So the program may install
//! filters (`seccomp`, `prctl(PR_SET_SECCOMP)`): a filter stacked on this one can only take away.
//! The kernel runs every filter of a process on every call and the most restrictive answer wins
//! (kill, then trap, then an errno, then a user notification or a tracer, then allow): whatever a
//! filter of the program's says, a call refused here stays refused, and `no_new_privs` is already
//! set, so no filter can outlive an exec into more privilege.
//!
//! `clone3` answers ENOSYS (its flags live in memory a filter cannot read; glibc then falls back
//! to `clone`, whose flags it can), and so does any x32 system call number on x86-64, which would
//! otherwise name a refused call by another number.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The calls refused outright.
fn refused() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_quotactl,
        libc::SYS_quotactl_fd,
        libc::SYS_acct,
        libc::SYS_syslog,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_userfaultfd,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_vhangup,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_fanotify_init,
        libc::SYS_sched_setaffinity,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_iopl,
        libc::SYS_ioperm,
        libc::SYS_uselib,
        libc::SYS__sysctl,
        libc::SYS_lookup_dcookie,
    ]);
    calls
}

/// Every namespace flag `clone` could be given.
const NAMESPACE_FLAGS: [i32; 8] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
    0x80, // CLONE_NEWTIME
];

/// The variable the sandbox sets for every run of learner code: the harness (linked into every
/// exercise's program) then refuses exec, fork and vfork in that program.
pub const NO_SPAWN_ENV: (&str, &str) = ("CUDABUGS_NO_SPAWN", "1");

fn arch() -> seccompiler::TargetArch {
    std::env::consts::ARCH
        .try_into()
        .expect("seccomp filters are built for x86_64, aarch64 and riscv64")
}

/// The deny list: the calls above and `clone` with any namespace flag.
fn deny_list() -> Result<BpfProgram, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused().into_iter().map(|nr| (nr, Vec::new())).collect();
    let flag_rule = |flag: i32| {
        SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag as u64),
            flag as u64,
        )?])
    };
    rules.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .iter()
            .map(|&f| flag_rule(f))
            .collect::<Result<_, _>>()?,
    );
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch(),
    )?
    .try_into()
}

/// `clone3` answers ENOSYS, so that glibc falls back to `clone`.
fn clone3_fallback() -> Result<BpfProgram, seccompiler::BackendError> {
    let rules = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch(),
    )?
    .try_into()
}

/// x32 system calls (numbers with bit 30 set, on x86-64 kernels built with x32) answer ENOSYS:
/// the deny list names the x86-64 numbers only. Four instructions by hand: seccompiler keys its
/// rules by exact numbers.
#[cfg(target_arch = "x86_64")]
fn x32_guard() -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, seccomp_data.nr at offset 0
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    vec![
        sock_filter {
            code: LD_NR,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: JGE,
            jt: 0,
            jf: 1,
            k: 0x4000_0000,
        },
        sock_filter {
            code: RET,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        sock_filter {
            code: RET,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ]
}

/// The filters every sandboxed child installs, built once per process (before any fork: the child
/// may not allocate).
pub fn filters() -> &'static [BpfProgram] {
    static FILTERS: OnceLock<Vec<BpfProgram>> = OnceLock::new();
    FILTERS.get_or_init(|| {
        let mut all = vec![clone3_fallback().expect("a valid clone3 filter")];
        #[cfg(target_arch = "x86_64")]
        all.push(x32_guard());
        all.push(deny_list().expect("a valid deny list"));
        all
    })
}

/// Set `no_new_privs` and install `filters`. Async-signal-safe (seccompiler's `apply_filter` makes
/// two system calls and allocates nothing on success). Err: the errno of the call that failed.
///
/// # Safety
/// Runs between `fork` and `exec` of a threaded process: only async-signal-safe calls.
pub unsafe fn install(filters: &[BpfProgram]) -> Result<(), i32> {
    for f in filters {
        if seccompiler::apply_filter(f).is_err() {
            return Err(*libc::__errno_location());
        }
    }
    Ok(())
}

/// The names of the refused calls, for the book and the report.
pub const REFUSED_NAMES: &str = "mount, umount2, pivot_root, chroot, setns, unshare, clone with a namespace flag, ptrace, process_vm_readv/writev, pidfd_getfd, bpf, perf_event_open, keyctl, add_key, request_key, init/finit/delete_module, kexec_load, kexec_file_load, reboot, settimeofday, clock_settime, clock_adjtime, adjtimex, swapon/off, quotactl, acct, syslog, open_by_handle_at, name_to_handle_at, userfaultfd, the new mount API, sethostname, setdomainname, vhangup, io_uring, fanotify_init, iopl/ioperm";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_build_and_every_refused_call_is_a_real_number() {
        let f = filters();
        assert!(f.len() >= 2 && f.iter().all(|p| !p.is_empty()));
        let calls = refused();
        let unique: std::collections::BTreeSet<_> = calls.iter().collect();
        assert_eq!(unique.len(), calls.len(), "no call listed twice");
        assert!(calls.iter().all(|&nr| nr >= 0));
    }
}
