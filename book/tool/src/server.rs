//! `--serve`: the built book over HTTP, rebuilt when a source changes.

use std::path::Path;

use anyhow::Result;

use crate::{build, normalise, RECORD_FILE};

/// The newest modification time under the book's sources, the exercises and the record: the
/// served book is rebuilt when it moves.
fn newest_source(book_root: &Path, workbook: &Path) -> std::time::SystemTime {
    fn walk(p: &Path, newest: &mut std::time::SystemTime) {
        let Ok(meta) = std::fs::metadata(p) else {
            return;
        };
        if let Ok(m) = meta.modified() {
            *newest = (*newest).max(m);
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                walk(&e.path(), newest);
            }
        }
    }
    let mut newest = std::time::UNIX_EPOCH;
    for p in [
        book_root.join("src"),
        book_root.join("book.toml"),
        book_root.join("theme"),
        book_root.join(RECORD_FILE),
        workbook.join("exercises"),
        workbook.join("solutions"),
    ] {
        walk(&p, &mut newest);
    }
    newest
}

/// Serve the built book on `addr`, rebuilding it when a source changed since the last build (checked
/// on each page request). Runs until the process is stopped.
pub fn serve(
    book_root: &Path,
    workbook: &Path,
    addr: &str,
    mut say: impl FnMut(&str),
) -> Result<()> {
    let mut built_at = newest_source(book_root, workbook);
    let mut dir = build(book_root, workbook, None)?;
    let server = tiny_http::Server::http(addr)
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    say(&format!(
        "serving the book on http://{addr}/ (Ctrl-C to stop)"
    ));
    for request in server.incoming_requests() {
        let url = request
            .url()
            .split(['?', '#'])
            .next()
            .unwrap_or("/")
            .to_string();
        if url.ends_with('/') || url.ends_with(".html") {
            let newest = newest_source(book_root, workbook);
            if newest > built_at {
                built_at = newest;
                match build(book_root, workbook, None) {
                    Ok(d) => {
                        dir = d;
                        say("rebuilt the book");
                    }
                    Err(e) => say(&format!("the book does not build: {e:#}")),
                }
            }
        }
        let rel = normalise(Path::new(url.trim_start_matches('/')));
        let mut path = dir.join(rel);
        if path.is_dir() {
            path = path.join("index.html");
        }
        let response = match std::fs::read(&path) {
            Ok(bytes) => {
                let kind = match path.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html; charset=utf-8",
                    Some("css") => "text/css",
                    Some("js") => "application/javascript",
                    Some("svg") => "image/svg+xml",
                    Some("png") => "image/png",
                    Some("woff2") => "font/woff2",
                    Some("json") => "application/json",
                    _ => "application/octet-stream",
                };
                tiny_http::Response::from_data(bytes).with_header(
                    tiny_http::Header::from_bytes("Content-Type", kind).expect("valid header"),
                )
            }
            Err(_) => tiny_http::Response::from_string("not found").with_status_code(404),
        };
        let _ = request.respond(response);
    }
    Ok(())
}
