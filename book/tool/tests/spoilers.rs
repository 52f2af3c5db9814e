//! A lesson keeps its answer folded. The answer is read from the fix itself, not from a list: the
//! code-shaped names the reference solution's marked regions add (`__syncwarp`, `col_major`,
//! `cudaMemPrefetchAsync`, `cluster.sync`, `size_t` where the exercise has none), and none of them
//! may appear in the lesson outside a `<details>` fold: not in its text, captions, pictures
//! (inline SVG), code or tool output, not in its page title or its entry in the sidebar that every
//! page shows, and not in what search indexes and previews of the lesson.
//!
//! The filter, and why each step is there:
//! - only the lines the diff adds inside the marked regions (what the learner edits), code only:
//!   comments and string literals are prose about the fix, not names a reader could spot;
//! - a name is dropped when the untouched exercise already has it anywhere, comments included:
//!   the lesson shows that file, so naming what is in it gives nothing away;
//! - only *code-shaped* names count: with an underscore, a digit, a capital letter, a scope or
//!   member access (`wmma::col_major`, `cluster.sync`), or a hex literal. A lowercase word
//!   (`offset`, `lane`, `graph`) cannot be told from English prose, where the lessons need it;
//! - C++'s keywords (`static_cast`, `reinterpret_cast`, `char16_t`, ...) say nothing about one fix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The keywords of C++ that are code-shaped (the all-lowercase ones are dropped as words anyway).
const CPP_KEYWORDS: &[&str] = &[
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "dynamic_cast",
    "static_assert",
    "thread_local",
    "char8_t",
    "char16_t",
    "char32_t",
    "wchar_t",
    "co_await",
    "co_return",
    "co_yield",
];

/// The names and hex literals in `text`. `code`: C++ source, whose comments and string and
/// character literals are skipped; otherwise prose (a lesson's text), read whole. A qualified
/// name (`a::b`, `a.b`, `a->b`) gives itself and each of its parts.
fn tokens(text: &str, code: bool) -> Vec<String> {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let (mut i, mut out) = (0, Vec::new());
    while i < b.len() {
        let rest = &b[i..];
        if code && rest.starts_with(b"//") {
            i += rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        } else if code && rest.starts_with(b"/*") {
            i += text[i..].find("*/").map_or(rest.len(), |e| e + 2);
        } else if code && (b[i] == b'"' || (b[i] == b'\'' && (i == 0 || !ident(b[i - 1])))) {
            let quote = b[i];
            i += 1;
            while i < b.len() && b[i] != quote && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && (ident(b[i]) || b[i] == b'.') {
                i += 1;
            }
            let number = text[start..i].to_ascii_lowercase();
            if number.starts_with("0x") && number.len() > 2 {
                out.push(number.trim_end_matches(['u', 'l']).to_string());
            }
        } else if ident(b[i]) {
            let start = i;
            let mut parts = 0;
            loop {
                let part = i;
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                out.push(text[part..i].to_string());
                parts += 1;
                let sep = [&b"::"[..], b"->", b"."]
                    .into_iter()
                    .find(|s| b[i..].starts_with(s))
                    .map_or(0, <[u8]>::len);
                let next = b.get(i + sep).copied();
                if sep == 0 || !next.is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
                    break;
                }
                i += sep;
            }
            if parts > 1 {
                out.push(text[start..i].to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// A name a reader could spot as code (see the module's comment).
fn code_shaped(t: &str) -> bool {
    !CPP_KEYWORDS.contains(&t)
        && (t.starts_with("0x")
            || t.chars()
                .any(|c| c == '_' || c.is_ascii_digit() || c.is_ascii_uppercase())
            || t.contains([':', '.', '>']))
}

/// The code-shaped names the reference fix adds inside the marked regions of `original`.
fn fix_names(original: &str, solution: &str) -> BTreeSet<String> {
    let region_lines = |text: &str| -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        grader::exercise::regions::parse(text)
            .unwrap()
            .iter()
            .flat_map(|r| lines[r.begin_line..r.end_line - 1].iter())
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let (old, new) = (region_lines(original), region_lines(solution));
    let old: Vec<&str> = old.iter().map(String::as_str).collect();
    let new: Vec<&str> = new.iter().map(String::as_str).collect();
    let known: BTreeSet<String> = tokens(original, false).into_iter().collect();
    let added: String = similar::TextDiff::from_slices(&old, &new)
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Insert)
        .map(|c| c.value())
        .collect();
    tokens(&added, true)
        .into_iter()
        .filter(|t| code_shaped(t) && !known.contains(t))
        .collect()
}

/// `html` without the elements that open with `open` and close with `close` (nested ones too).
fn without(html: &str, open: &str, close: &str) -> String {
    let mut kept = String::new();
    let mut rest = html;
    while let Some(at) = rest.find(open) {
        kept.push_str(&rest[..at]);
        let mut depth = 0;
        let mut i = at;
        loop {
            let (o, c) = (rest[i..].find(open), rest[i..].find(close));
            match (o, c) {
                (Some(o), Some(c)) if o < c => {
                    depth += 1;
                    i += o + open.len();
                }
                (_, Some(c)) => {
                    depth -= 1;
                    i += c + close.len();
                    if depth == 0 {
                        break;
                    }
                }
                (_, None) => {
                    i = rest.len();
                    break;
                }
            }
        }
        rest = &rest[i..];
    }
    kept.push_str(rest);
    kept
}

/// The text of `html`, tags dropped and the common entities read back.
fn text_of(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// A lesson's page outside its folds: the `<main>` element without its `<details>`, and the title.
/// What `check` prints to the learner on the untouched exercise is left out too: the tool's output
/// (`text` blocks) and what the metrics count (`cudabugs-check-says`). The learner has read it in
/// their terminal before the lesson; it is the evidence, and stays open.
fn outside_the_folds(page: &str) -> String {
    let main = &page[page.find("<main>").unwrap()..page.find("</main>").unwrap()];
    let title = &page[page.find("<title>").unwrap()..page.find("</title>").unwrap()];
    let main = without(main, "<details>", "</details>");
    let main = without(&main, "<pre><code class=\"language-text", "</pre>");
    let main = without(&main, "<div class=\"cudabugs-check-says\">", "</div>");
    text_of(&format!("{title}\n{main}"))
}

/// Where each of `names` occurs in `text` as a whole token.
fn found<'a>(names: &'a BTreeSet<String>, text: &str) -> Vec<&'a str> {
    let words: BTreeSet<String> = tokens(text, false).into_iter().collect();
    names
        .iter()
        .filter(|n| words.contains(*n))
        .map(String::as_str)
        .collect()
}

/// The lesson's own entry in the sidebar (every page shows it; another lesson's title may name
/// what is that lesson's bug, as 06's names the `float4` that 54's fix uses).
fn sidebar_entry(toc: &str, id: &str) -> String {
    let at = toc
        .find(&format!("lessons/{id}.html\""))
        .unwrap_or_else(|| panic!("{id} is not in the sidebar"));
    let entry = &toc[at..];
    text_of(&entry[..entry.find("</a>").unwrap()])
}

/// Each search document's text (title, body and breadcrumbs), by the page it belongs to.
fn search_documents(html: &Path) -> BTreeMap<String, String> {
    // mdBook writes the index as a script: `window.search = Object.assign(window.search,
    // JSON.parse('...'));`, the JSON's backslashes doubled and its quotes escaped.
    let script = std::fs::read_dir(html)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("searchindex") && name.ends_with(".js")
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("a search index");
    let quoted = &script
        [script.find("JSON.parse('").unwrap() + "JSON.parse('".len()..script.rfind("')").unwrap()];
    let mut json = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        json.push(if c == '\\' { chars.next().unwrap() } else { c });
    }
    let index: serde_json::Value = serde_json::from_str(&json).unwrap();
    let urls = index["doc_urls"].as_array().unwrap();
    let docs = index["index"]["documentStore"]["docs"].as_object().unwrap();
    let mut by_page: BTreeMap<String, String> = BTreeMap::new();
    for (n, doc) in docs {
        let url = urls[n.parse::<usize>().unwrap()].as_str().unwrap();
        let page = url.split('#').next().unwrap().to_string();
        let entry = by_page.entry(page).or_default();
        for field in ["title", "body", "breadcrumbs"] {
            entry.push_str(doc[field].as_str().unwrap_or_default());
            entry.push('\n');
        }
    }
    by_page
}

#[test]
fn the_fix_names_are_read_from_the_diff() {
    let original = "// ANCHOR: bug\n  // uses row_major\n  load(fb, row_major, b + k);\n  f(x);\n// ANCHOR_END: bug\nsize_t n;\n";
    let solution = "// ANCHOR: bug\n  // now col_major_note\n  load(fb, wmma::col_major, b + k);\n  __syncwarp(0xffffffffu); static_cast<size_t>(k); g(\"GPU_NAME\");\n  cluster.sync();\n// ANCHOR_END: bug\nsize_t n;\nextra_outside();\n";
    let names: Vec<String> = fix_names(original, solution).into_iter().collect();
    assert_eq!(
        names,
        [
            "0xffffffff",
            "__syncwarp",
            "cluster.sync",
            "col_major",
            "wmma::col_major"
        ],
        "comments, strings, keywords, lowercase words, names the exercise has and lines outside \
         the regions are left out"
    );
    assert_eq!(
        found(
            &fix_names(original, solution),
            "use `wmma::col_major` or a cluster.sync()"
        ),
        ["cluster.sync", "col_major", "wmma::col_major"]
    );
    assert!(found(&fix_names(original, solution), "a col_majors x").is_empty());
    let folded = "<main><p>open</p><details><summary>s</summary><details>in</details>col_major</details>after</main>";
    let text = outside_the_folds(&format!("<title>t</title>{folded}"));
    assert!(text.contains("open") && text.contains("after") && !text.contains("col_major"));
}

#[test]
fn no_lesson_names_its_fix_outside_the_fold() {
    let (repo, html) = crate::repo_book::built();
    let exercises = grader::exercise::catalog::discover(repo).unwrap();
    assert_eq!(exercises.len(), 66);
    let sidebar = std::fs::read_to_string(html.join("toc.html")).unwrap();
    let search = search_documents(html);
    let mut spoilers = Vec::new();
    let mut checked = 0;
    for d in &exercises {
        let id = &d.manifest.id;
        let names = fix_names(&d.original, &d.solution);
        let page = std::fs::read_to_string(html.join(format!("lessons/{id}.html"))).unwrap();
        let page_names = found(&names, &outside_the_folds(&page));
        if !page_names.is_empty() {
            spoilers.push(format!("{id}: {page_names:?} outside the fold"));
        }
        let sidebar_names = found(&names, &sidebar_entry(&sidebar, id));
        if !sidebar_names.is_empty() {
            spoilers.push(format!("{id}: {sidebar_names:?} in the sidebar"));
        }
        let searched = search
            .get(&format!("lessons/{id}.html"))
            .unwrap_or_else(|| panic!("{id} is not in the search index"));
        // Search indexes the page outside its folds: no fix name the open page does not show,
        // and no fold (its summary line is the first thing in it).
        let main = &page[page.find("<main>").unwrap()..page.find("</main>").unwrap()];
        let open = found(&names, &text_of(&without(main, "<details>", "</details>")));
        let search_names: Vec<&str> = found(&names, searched)
            .into_iter()
            .filter(|n| !open.contains(n))
            .collect();
        if !search_names.is_empty() {
            spoilers.push(format!("{id}: {search_names:?} in the search index"));
        }
        if searched.contains("Show the fix") || searched.contains("Hint 1 of") {
            spoilers.push(format!("{id}: a fold's text in the search index"));
        }
        // The grader's region markers are not part of the lesson's code or of its fix.
        if page.contains("ANCHOR:") || page.contains("ANCHOR_END:") {
            spoilers.push(format!("{id}: region markers (`// ANCHOR:`) in the page"));
        }
        // The other fixes of "Another fix, and a half-fix" are folded too.
        let heading = "Another fix, and a half-fix</a></h2>";
        if let Some(at) = page.find(heading) {
            let section = &page[at + heading.len()..];
            let section = &section[..section.find("<h2").unwrap_or(section.len())];
            if !text_of(&without(section, "<details>", "</details>"))
                .trim()
                .is_empty()
            {
                spoilers.push(format!("{id}: the other fixes outside the fold"));
            }
        }
        checked += usize::from(!names.is_empty());
    }
    // The lessons' index names each bug's class, not the line it is on (the GPU record's page does).
    let index = std::fs::read_to_string(html.join("lessons/index.html")).unwrap();
    if index.contains(".cu:") {
        spoilers.push("the lessons' index gives a bug's file and line".into());
    }
    assert!(spoilers.is_empty(), "{}", spoilers.join("\n"));
    // Most fixes add a name a reader could spot (36 of the 66 when this test was written); the
    // filter must not have emptied them.
    assert!(checked >= 30, "only {checked} lessons have fix names");
}
