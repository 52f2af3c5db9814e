//! `watch`: wait for the learner to save their file. File notifications (inotify) where they work;
//! polling where they do not (network and container file systems, an exhausted inotify limit), or on
//! request.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use notify::{Config, EventKind, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};

/// Saves often come as several events (write, then rename, then chmod): wait this long for quiet.
const SETTLE: Duration = Duration::from_millis(150);
const POLL_INTERVAL: Duration = Duration::from_millis(500);

pub struct FileWatcher {
    file: PathBuf,
    events: Receiver<notify::Result<notify::Event>>,
    _watcher: Box<dyn Watcher + Send>,
    /// "file notifications" or "polling every 500 ms".
    pub mode: &'static str,
    /// Why notifications were not used, when the watcher fell back to polling on its own.
    pub fallback_reason: Option<String>,
}

impl FileWatcher {
    /// Watch `file` (its folder, in fact: editors often save by renaming a new file over the old one).
    pub fn new(file: &Path, force_poll: bool) -> notify::Result<FileWatcher> {
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut fallback_reason = None;
        if !force_poll {
            let (tx, rx) = mpsc::channel();
            match RecommendedWatcher::new(tx, Config::default())
                .and_then(|mut w| w.watch(&dir, RecursiveMode::NonRecursive).map(|_| w))
            {
                Ok(w) => {
                    return Ok(FileWatcher {
                        file: file.to_path_buf(),
                        events: rx,
                        _watcher: Box::new(w),
                        mode: "file notifications",
                        fallback_reason,
                    })
                }
                Err(e) => fallback_reason = Some(e.to_string()),
            }
        }
        let (tx, rx) = mpsc::channel();
        let mut w = PollWatcher::new(
            tx,
            Config::default()
                .with_poll_interval(POLL_INTERVAL)
                .with_compare_contents(true),
        )?;
        w.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok(FileWatcher {
            file: file.to_path_buf(),
            events: rx,
            _watcher: Box::new(w),
            mode: "polling every 500 ms",
            fallback_reason,
        })
    }

    fn concerns_file(&self, event: &notify::Event) -> bool {
        let changed = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(_) | EventKind::Any
        );
        changed
            && event
                .paths
                .iter()
                .any(|p| p.file_name() == self.file.file_name())
    }

    /// Block until the file was saved (and the events about it have settled). Errors of the watcher
    /// itself are returned.
    pub fn wait_for_save(&self) -> notify::Result<()> {
        loop {
            match self.events.recv() {
                Ok(Ok(e)) if self.concerns_file(&e) => break,
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(notify::Error::generic("the file watcher stopped")),
            }
        }
        loop {
            match self.events.recv_timeout(SETTLE) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(notify::Error::generic("the file watcher stopped"))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved_is_seen(force_poll: bool) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reduce.cu");
        std::fs::write(&file, "a").unwrap();
        let w = FileWatcher::new(&file, force_poll).unwrap();
        // Another file of the folder is not a save of ours; a rename over ours is.
        let event = |kind, name: &str| notify::Event::new(kind).add_path(dir.path().join(name));
        let written = EventKind::Modify(notify::event::ModifyKind::Any);
        assert!(!w.concerns_file(&event(written, "other.txt")));
        assert!(w.concerns_file(&event(written, "reduce.cu")));
        assert!(w.concerns_file(&event(
            EventKind::Create(notify::event::CreateKind::File),
            "reduce.cu"
        )));
        assert!(!w.concerns_file(&event(
            EventKind::Access(notify::event::AccessKind::Any),
            "reduce.cu"
        )));
        // The real thing, another file's events first: the save wakes the watcher (a failure, not
        // a hang, where it does not).
        let (done, woke) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(w.wait_for_save().map(|_| w.mode));
        });
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        std::fs::write(&file, "changed").unwrap();
        let mode = woke
            .recv_timeout(Duration::from_secs(30))
            .expect("the save did not wake the watcher within 30 s")
            .unwrap();
        assert_eq!(
            mode,
            if force_poll {
                "polling every 500 ms"
            } else {
                "file notifications"
            }
        );
    }

    #[test]
    fn a_save_wakes_the_notifying_watcher() {
        saved_is_seen(false);
    }

    #[test]
    fn a_save_wakes_the_polling_watcher() {
        saved_is_seen(true);
    }
}
