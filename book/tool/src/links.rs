//! Links in the rendered book: every relative `<a href>` must reach a page of the book and, when it
//! names a fragment, an element with that id on the page. Checked on mdBook's HTML output, because
//! only there do heading ids exist (mdBook derives them from the heading text, numbering repeats).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// What one page offers (ids) and asks for (relative hrefs).
#[derive(Default)]
struct Page {
    ids: BTreeSet<String>,
    hrefs: Vec<String>,
}

#[derive(Default)]
struct Collector(RefCell<Page>);

impl TokenSink for Collector {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if let Token::TagToken(tag) = token {
            if tag.kind == TagKind::StartTag {
                let mut page = self.0.borrow_mut();
                for attr in &tag.attrs {
                    match &*attr.name.local {
                        "id" => {
                            page.ids.insert(attr.value.to_string());
                        }
                        "href" if &*tag.name == "a" => page.hrefs.push(attr.value.to_string()),
                        _ => {}
                    }
                }
            }
        }
        TokenSinkResult::Continue
    }
}

fn scan(html: &str) -> Page {
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(Collector::default(), TokenizerOpts::default());
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.0.take()
}

/// Pages that mdBook generates whole (the print page repeats every chapter with rewritten links).
const GENERATED: [&str; 3] = ["print.html", "toc.html", "404.html"];

fn html_pages(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir.join(rel))
        .into_iter()
        .flatten()
        .flatten()
    {
        let rel = rel.join(entry.file_name());
        if entry.path().is_dir() {
            html_pages(dir, &rel, out);
        } else if rel.extension().is_some_and(|e| e == "html")
            && !GENERATED.iter().any(|g| rel == Path::new(g))
        {
            out.push(rel);
        }
    }
}

/// The dead links of the book rendered into `html_dir`, as `page: message` lines.
pub fn dead_links(html_dir: &Path) -> Vec<String> {
    let mut rel_pages = Vec::new();
    html_pages(html_dir, Path::new(""), &mut rel_pages);
    let pages: BTreeMap<PathBuf, Page> = rel_pages
        .into_iter()
        .map(|rel| {
            let html = std::fs::read_to_string(html_dir.join(&rel)).unwrap_or_default();
            (rel, scan(&html))
        })
        .collect();
    let mut errors = Vec::new();
    for (rel, page) in &pages {
        let dir = rel.parent().unwrap_or(Path::new(""));
        for href in &page.hrefs {
            if href.contains("://")
                || href.starts_with("mailto:")
                || href.starts_with("javascript:")
                || href.starts_with('/')
            {
                continue;
            }
            let (file, fragment) = match href.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (href.as_str(), None),
            };
            let file = file.split('?').next().unwrap_or("");
            let target = if file.is_empty() {
                rel.clone()
            } else {
                crate::normalise(&dir.join(file))
            };
            let target = if target.as_os_str().is_empty() || html_dir.join(&target).is_dir() {
                target.join("index.html")
            } else {
                target
            };
            let found = pages.get(&target);
            if found.is_none() && !html_dir.join(&target).is_file() {
                errors.push(format!(
                    "{}: dead link `{href}` ({} is not in the book)",
                    rel.display(),
                    target.display()
                ));
            } else if let (Some(fragment), Some(target_page)) =
                (fragment.filter(|f| !f.is_empty()), found)
            {
                if !target_page.ids.contains(fragment) {
                    errors.push(format!("{}: dead link `{href}` ({} has no heading or element with id `{fragment}`)", rel.display(), target.display()));
                }
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_must_name_an_id_of_the_target_page() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/racecheck.html"), r##"<h2 id="what-it-catches">What</h2><a href="#what-it-catches">self</a><a href="">here</a>"##).unwrap();
        std::fs::write(
            dir.path().join("index.html"),
            r##"<a href="tools/racecheck.html#what-it-catches">ok</a> <a href="https://x.org/#y">web</a>
               <a href="tools/racecheck.html#what-it-misses">bad fragment</a> <a href="tools/memcheck.html">bad file</a>
               <a href="#nowhere">bad local</a> <link href="gone.css">"##,
        )
        .unwrap();
        let errors = dead_links(dir.path());
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].contains("`tools/racecheck.html#what-it-misses`")
                && errors[0].contains("no heading or element with id `what-it-misses`"),
            "{errors:#?}"
        );
        assert!(
            errors[1].contains("`tools/memcheck.html`") && errors[1].contains("is not in the book"),
            "{errors:#?}"
        );
        assert!(
            errors[2].contains("`#nowhere`") && errors[2].contains("index.html has no"),
            "{errors:#?}"
        );
    }
}
