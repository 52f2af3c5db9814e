//! `cudabugs-book BOOK_DIR WORKBOOK [--out DIR] [--serve ADDR]`: what `cargo xtask book` builds (with
//! cargo, on demand) and runs, so that the mdbook crates are compiled for the book, never for `check`.
//! A build prints one JSON line on stdout: `{"book": HTML_DIR}` or `{"error": MESSAGE}` (exit 1).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(book), Some(workbook)) = (
        args.next().map(PathBuf::from),
        args.next().map(PathBuf::from),
    ) else {
        eprintln!("usage: cudabugs-book BOOK_DIR WORKBOOK [--out DIR] [--serve ADDR]");
        return ExitCode::from(2);
    };
    let (mut out, mut serve) = (None, None);
    while let Some(flag) = args.next() {
        match (flag.to_str(), args.next()) {
            (Some("--out"), Some(v)) => out = Some(PathBuf::from(v)),
            (Some("--serve"), Some(v)) => serve = Some(v.to_string_lossy().into_owned()),
            _ => {
                eprintln!("usage: cudabugs-book BOOK_DIR WORKBOOK [--out DIR] [--serve ADDR]");
                return ExitCode::from(2);
            }
        }
    }
    let result = match &serve {
        Some(addr) => {
            cudabugs_book::serve(&book, &workbook, addr, |line| eprintln!("{line}")).map(|()| None)
        }
        None => cudabugs_book::build(&book, &workbook, out.as_deref()).map(Some),
    };
    match result {
        Ok(dir) => {
            if let Some(dir) = dir {
                println!("{}", serde_json::json!({ "book": dir }));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{}", serde_json::json!({ "error": format!("{e:#}") }));
            ExitCode::FAILURE
        }
    }
}
