//! Processes found from outside, in `/proc`: what a test reads instead of believing what a program
//! prints (shared by `hostile.rs` and `runner_cancel.rs`).

/// The processes whose command line, its arguments joined by spaces, holds `marker`.
pub fn with_command_line(marker: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
        })
        .collect()
}
