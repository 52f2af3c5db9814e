//! Reading what a sandboxed run left in its own folder (a tool's XML or CSV, a program's outputs):
//! never through a link, only a regular file. The folder is the program's to fill: a link it left
//! where the grader expects a file could point at the instructor's secret or another student's
//! work, and the grader reads as root.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The bytes of every file under `dir` (links not followed).
pub fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// Open `path` for reading, refusing a link (anywhere in its last component) and anything but a
/// regular file.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(f)
}

pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = open(path)?;
    // Sized once (a 256 MiB output is not grown by doubling); the file may still change meanwhile.
    let size = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

pub fn read_text(path: &Path) -> std::io::Result<String> {
    Ok(String::from_utf8_lossy(&read(path)?).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_a_fifo_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "seed = 1").unwrap();
        let link = dir.path().join("out.xml");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert!(read_text(&link).is_err(), "a link to the secret is refused");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(
            read(&fifo).is_err(),
            "a FIFO (which would block the reader) is refused"
        );
        std::fs::write(dir.path().join("plain"), "x").unwrap();
        assert_eq!(read_text(&dir.path().join("plain")).unwrap(), "x");
    }
}
