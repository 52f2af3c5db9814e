//! Build the book and load a lesson in headless Chromium: the page must have its title, the
//! exercise's code (from the include) and the record's ncu table, as the browser sees them (DOM).
//! Needs Debian's chromium; CI installs it and sets CUDABUGS_REQUIRE_CHROMIUM=1 so that this test
//! cannot skip there.

use std::path::Path;
use std::time::Duration;

use grader::environment::TestDepth;
use grader::plans::verify::VerificationRecord;
use grader::tools::runner::{self, Job};

/// The browser, or None (the test `test` says SKIPPED) where there is none and none is required.
fn chromium(test: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("CHROMIUM").map(Into::into).or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|n| which(n))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_CHROMIUM").is_none(),
            "CUDABUGS_REQUIRE_CHROMIUM is set but no chromium was found"
        );
        eprintln!("SKIPPED {test}: no chromium (apt-get install chromium)");
    }
    found
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

#[test]
fn a_lesson_renders_with_its_title_code_and_record_table() {
    let Some(browser) = chromium("a_lesson_renders_with_its_title_code_and_record_table") else {
        return;
    };
    let (repo, html) = crate::repo_book::built();
    let page = html.join("lessons/03-race.html");
    let profile = tempfile::tempdir().unwrap();
    let job = headless(&browser, profile.path(), 3000)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()));
    let done = runner::run(&job).unwrap();
    assert!(done.success(), "chromium failed: {}", done.output());
    let dom = done.stdout.text();
    assert!(
        dom.contains("<title>03-race: the warp that was never synchronised"),
        "title missing:\n{}",
        &dom[..dom.len().min(2000)]
    );
    // The bug region, included from exercises/03-race/reduce.cu and highlighted by the page's script.
    assert!(
        dom.contains("language-cpp") && dom.contains("hljs"),
        "no highlighted C++ block"
    );
    assert!(dom.contains("warp_sum"), "the included code is missing");
    // The record's ncu table, with the times of the committed record.
    let record: VerificationRecord = serde_json::from_str(
        &std::fs::read_to_string(repo.join("book/verification.json")).unwrap(),
    )
    .unwrap();
    let t = record
        .exercises
        .iter()
        .find(|e| e.id == "03-race")
        .and_then(|e| e.timing.clone())
        .unwrap();
    // A figure and its unit are bound in a table (`tables::bind_units`).
    let fix = format!("{:.1}\u{a0}µs", t.reference_ns / 1e3);
    assert!(
        dom.contains("<table>")
            && dom.contains("the fix, second process")
            // A serialised DOM writes a no-break space as an entity.
            && dom.contains(&fix.replace('\u{a0}', "&nbsp;")),
        "no record table with {fix}"
    );
}

/// The audit the harness page runs in Chromium: every page of the book in a 1280 px frame (light
/// theme, sidebar open) and in a 390 px one (a phone; the dark `coal` theme), its folds opened,
/// each code block, table and picture measured and each table cell's words checked; then each
/// lesson searched for by its bug class through mdBook's own search (`?search=`), the results read
/// back.
const HARNESS: &str = r#"<!doctype html><html><body>
<iframe id="f" style="width:1280px;height:900px;border:0"></iframe>
<pre id="result"></pre>
<script>
const PAGES = __PAGES__;
const SEARCHES = __SEARCHES__;
const frame = document.getElementById('f');
const load = src => new Promise(done => { frame.onload = done; frame.src = src; });
const pause = ms => new Promise(done => setTimeout(done, ms));
const text = el => (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 80);
// The words of a cell that the browser broke across two lines: a word is a run of letters,
// digits and the marks of a number, a figure with its unit one word (a dash, a slash or a space
// is a place a line may break; the book binds a figure to its unit with a no-break space).
// On a phone a path or command in code may break anywhere (`phone`); a word or a number may not.
function splitWords(doc, cell, phone) {
  const split = [];
  const walk = doc.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    if (phone && node.parentElement.closest('code')) continue;
    for (const m of node.data.matchAll(/[\p{L}\p{N}.,%µ_]+(?:\u00a0[\p{L}µ][\p{L}\/]*)?/gu)) {
      if (m[0].length < 2) continue;
      const range = doc.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(m[0]);
    }
  }
  return split;
}
async function run() {
  const result = { width: {}, wide: {}, search: {} };
  for (const [width, theme] of [[1280, 'light'], [390, 'coal']]) {
    frame.style.width = width + 'px';
    for (const page of PAGES) {
      await load(page);
      await pause(100);
      const doc = frame.contentDocument;
      doc.documentElement.classList.remove('light', 'navy', 'coal', 'ayu', 'rust');
      doc.documentElement.classList.add(theme);
      doc.querySelectorAll('details').forEach(d => { d.open = true; });
      await pause(50);
      const main = doc.querySelector('main');
      if (width === 1280) result.width[page] = main.clientWidth;
      const right = main.getBoundingClientRect().right;
      const wide = [];
      for (const pre of main.querySelectorAll('pre')) {
        const code = pre.querySelector('code') || pre;
        const over = Math.max(code.scrollWidth - code.clientWidth, pre.scrollWidth - pre.clientWidth);
        if (over > 1) wide.push('code block ' + over + ' px too wide: ' + text(pre));
      }
      // At 1280 px a table fits its column whole; at 390 px one with more columns than a phone
      // can show scrolls inside its own box, which must itself stay inside the column.
      for (const table of main.querySelectorAll('table')) {
        const box = table.parentElement;
        const inside = box.getBoundingClientRect().right - right;
        const over = width === 1280
          ? Math.max(box.scrollWidth - box.clientWidth, table.getBoundingClientRect().right - right)
          : inside;
        if (over > 1) wide.push('table ' + Math.round(over) + ' px too wide: ' + text(table));
        if (main.scrollWidth - main.clientWidth > 1) wide.push('the page scrolls sideways');
        for (const cell of table.querySelectorAll('td')) {
          const split = splitWords(doc, cell, width !== 1280);
          if (split.length) wide.push('words split in a cell: ' + split.slice(0, 3).join(', ') + ' in ' + text(cell));
        }
      }
      for (const svg of main.querySelectorAll('svg[width]')) {
        // A figure in a scrolling box (a phone) may be wider than the column; its box may not,
        // and it may not shrink below the 480 px (or its own width) that keeps its labels legible.
        const frameBox = svg.closest('.cudabugs-layout, .cudabugs-chart');
        const scrolls = frameBox && frameBox.scrollWidth > frameBox.clientWidth;
        const box = (scrolls ? frameBox : svg).getBoundingClientRect();
        if (box.right - right > 1 || box.width < 1) wide.push('picture cut off: ' + Math.round(box.right - right) + ' px past the column');
        const drawn = svg.getBoundingClientRect().width;
        const legible = Math.min(480, svg.width.baseVal.value);
        if (width !== 1280 && frameBox && drawn < legible - 1) wide.push('picture shrunk to ' + Math.round(drawn) + ' px, below ' + Math.round(legible) + ' px');
        if (!frameBox) wide.push('picture outside a figure box: ' + (svg.getAttribute('aria-label') || '').slice(0, 60));
        const bg = frame.contentWindow.getComputedStyle(svg).backgroundColor;
        if (bg !== 'rgb(255, 255, 255)') wide.push('picture without its white background: ' + bg);
      }
      if (wide.length) result.wide[width + ' ' + theme + ' ' + page] = wide;
    }
  }
  frame.style.width = '1280px';
  for (const [id, query] of SEARCHES) {
    await load('index.html?search=' + encodeURIComponent(query));
    let found = [];
    for (let i = 0; i < 50 && found.length === 0; i++) {
      await pause(100);
      found = [...frame.contentDocument.querySelectorAll('#mdbook-searchresults a')]
        .map(a => a.getAttribute('href'));
    }
    result.search[id] = found;
  }
  document.getElementById('result').textContent = 'RESULT' + JSON.stringify(result) + 'END';
}
run();
</script></body></html>"#;

fn headless(browser: &Path, profile: &Path, budget_ms: u32) -> Job {
    Job::new(browser, Duration::from_secs(300))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={budget_ms}"))
}

/// At 1280 px (the sidebar open, light) and at 390 px (dark) no code block, table or picture of any
/// page, folds opened, is wider than its column, no table cell breaks a word or a number, and
/// every picture sits on its white background: before the book's stylesheet, 279 code blocks and
/// 20 tables scrolled sideways and hid their lines' ends. Search finds every lesson by its bug
/// class. Five lessons are kept as screenshots at both widths under `target/book-screenshots/`
/// (CI's artefacts). That is at full depth (`CUDABUGS_TESTS=full`); a quick `cargo test` audits a
/// sample of the pages and searches, and keeps one lesson's screenshots.
#[test]
fn every_page_fits_1280_px_and_search_finds_each_lesson_by_its_bug_class() {
    let Some(browser) =
        chromium("every_page_fits_1280_px_and_search_finds_each_lesson_by_its_bug_class")
    else {
        return;
    };
    let (repo, html) = crate::repo_book::built();
    let pages = pages_of(html);
    let exercises = grader::exercise::catalog::discover(repo).unwrap();
    let searches: Vec<(String, String)> = exercises
        .iter()
        .map(|d| (d.manifest.id.clone(), d.manifest.manifest.bug_class.clone()))
        .collect();
    assert!(pages.len() > 50 && searches.len() >= 43);
    // Every page at two widths and every search take the browser about a minute: at quick depth
    // a sample of each, 03-race's lesson among the pages.
    let test = "every_page_fits_1280_px_and_search_finds_each_lesson_by_its_bug_class";
    let depth = TestDepth::from_env();
    let mut pages = depth.sample(test, pages, 8);
    if !pages.iter().any(|p| p == "lessons/03-race.html") {
        pages.push("lessons/03-race.html".into());
    }
    let searches = depth.sample(test, searches, 6);
    let harness = html.join("cudabugs-audit.html");
    std::fs::write(
        &harness,
        HARNESS
            .replace("__PAGES__", &serde_json::to_string(&pages).unwrap())
            .replace("__SEARCHES__", &serde_json::to_string(&searches).unwrap()),
    )
    .unwrap();
    let profile = tempfile::tempdir().unwrap();
    let job = headless(&browser, profile.path(), 600_000)
        .args([
            "--allow-file-access-from-files",
            "--window-size=1400,1000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", harness.display()));
    let done = runner::run(&job).unwrap();
    assert!(done.success(), "chromium failed: {}", done.output());
    let dom = done.stdout.text();
    let json = dom
        .split_once("RESULT")
        .and_then(|(_, r)| r.split_once("END"))
        .map(|(j, _)| {
            j.replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
        })
        .unwrap_or_else(|| panic!("the audit did not finish:\n{}", &dom[..dom.len().min(3000)]));
    let result: serde_json::Value = serde_json::from_str(&json).unwrap();
    let widths = result["width"].as_object().unwrap();
    assert_eq!(widths.len(), pages.len(), "every page was measured");
    assert!(
        widths["lessons/03-race.html"].as_f64().unwrap() > 800.0,
        "the lesson column at 1280 px: {}",
        widths["lessons/03-race.html"]
    );
    let wide = result["wide"].as_object().unwrap();
    assert!(
        wide.is_empty(),
        "wider than the column, a word split or a picture cut off: {wide:#?}"
    );
    let search = result["search"].as_object().unwrap();
    // Among the first three results: what a reader sees without scrolling the list.
    let missed: Vec<String> = searches
        .iter()
        .filter(|(id, _)| {
            !search[id.as_str()]
                .as_array()
                .unwrap()
                .iter()
                .take(3)
                .any(|h| h.as_str().unwrap().contains(&format!("lessons/{id}.html")))
        })
        .map(|(id, class)| format!("{id} ({class}): {}", search[id.as_str()]))
        .collect();
    assert!(
        missed.is_empty(),
        "search for the bug class did not find the lesson in its first three results: {missed:#?}"
    );

    screenshots(&browser, profile.path(), html, depth);
}

/// Every page of the book a reader opens, relative to `html`.
fn pages_of(html: &Path) -> Vec<String> {
    let mut pages: Vec<String> = Vec::new();
    for dir in ["", "lessons", "tools"] {
        for e in std::fs::read_dir(html.join(dir)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let skip = ["print.html", "404.html", "toc.html"].contains(&name.as_str());
            if name.ends_with(".html") && !skip {
                pages.push(if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                });
            }
        }
    }
    pages.sort();
    pages
}

/// Screenshots of five lessons at 1280 px and at 390 px, kept for people to look at (at quick
/// depth, the first of them).
fn screenshots(browser: &Path, profile: &Path, html: &Path, depth: TestDepth) {
    let shots = crate::repo().join("target/book-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let lessons = vec![
        "03-race",
        "31-pitch",
        "41-wmma-layout",
        "54-matmul",
        "63-transfers",
    ];
    for (id, width) in depth
        .sample("screenshots", lessons, 1)
        .into_iter()
        .flat_map(|id| [(id, 1280), (id, 390)])
    {
        let png = shots.join(format!("{id}-{width}.png"));
        let _ = std::fs::remove_file(&png);
        let job = headless(browser, profile, 3000)
            .arg(format!("--window-size={width},2000"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!(
                "file://{}",
                html.join(format!("lessons/{id}.html")).display()
            ));
        let done = runner::run(&job).unwrap();
        assert!(done.success(), "chromium failed: {}", done.output());
        let bytes = std::fs::read(&png).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
            "{id}: no screenshot"
        );
    }
}
