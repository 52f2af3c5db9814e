//! Compiler diagnostics as the learner reads them: naming their file by the path they would open
//! it by (nvcc names the copy it built, `reduce.cu(21)` or a path in the work folder), and each
//! said once, though the -G and the -O3 builds both report it.

use std::collections::HashSet;

/// `text` (nvcc's output) with the file `name` (nvcc's `reduce.cu`, or a path ending in
/// `/reduce.cu`) written as `shown`, where a line starts with it (`reduce.cu(21): error`,
/// `reduce.cu:21:5: error`) and in nvcc's "in the compilation of" line.
pub fn renamed(text: &str, name: &str, shown: &str) -> String {
    text.lines()
        .map(|l| rename_line(l, name, shown) + "\n")
        .collect()
}

fn rename_line(line: &str, name: &str, shown: &str) -> String {
    let names_it = |prefix: &str| {
        prefix.is_empty() || (prefix.ends_with('/') && !prefix.contains(char::is_whitespace))
    };
    for after in ["(", ":"] {
        if let Some(at) = line.find(&format!("{name}{after}")) {
            if names_it(&line[..at]) {
                return format!("{shown}{}", &line[at + name.len()..]);
            }
        }
    }
    // `1 error detected in the compilation of "reduce.cu".`
    if let Some(open) = line.find("in the compilation of \"") {
        let from = open + "in the compilation of \"".len();
        if let Some(len) = line[from..].find('"') {
            let quoted = &line[from..from + len];
            if quoted == name || quoted.ends_with(&format!("/{name}")) {
                return format!("{}{shown}{}", &line[..from], &line[from + len..]);
            }
        }
    }
    line.to_string()
}

/// The diagnostics of `text` that `seen` does not hold yet, which it then holds: a diagnostic is a
/// line that does not start with a blank and the indented (or empty) lines after it. None where
/// every one was seen before.
pub fn unseen(text: &str, seen: &mut HashSet<String>) -> Option<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in text.lines() {
        match blocks.last_mut() {
            Some(block) if line.is_empty() || line.starts_with(char::is_whitespace) => {
                block.push('\n');
                block.push_str(line);
            }
            _ => blocks.push(line.to_string()),
        }
    }
    let new: Vec<String> = blocks
        .into_iter()
        .filter(|b| seen.insert(b.trim_end().to_string()))
        .collect();
    (!new.is_empty()).then(|| new.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVCC: &str = "reduce.cu(21): error: identifier \"x\" is undefined\n    int y = x;\n            ^\n\n1 error detected in the compilation of \"reduce.cu\".\n";

    #[test]
    fn the_file_is_named_as_the_learner_opens_it_and_nothing_else_changes() {
        let text = renamed(NVCC, "reduce.cu", "exercises/03-race/reduce.cu");
        assert!(
            text.starts_with("exercises/03-race/reduce.cu(21): error"),
            "{text}"
        );
        assert!(
            text.contains("compilation of \"exercises/03-race/reduce.cu\"."),
            "{text}"
        );
        assert!(text.contains("    int y = x;"), "{text}");
        // A path of the work folder, and the host compiler's form.
        let work = "/w/.cudabugs/work/check/03-race/reduce.cu:21:5: error: no\n";
        assert_eq!(
            renamed(work, "reduce.cu", "r/reduce.cu"),
            "r/reduce.cu:21:5: error: no\n"
        );
        // Another file, or the name inside a message, stays.
        let other = "cudabugs.cuh(3): warning: see reduce.cu(4)\n";
        assert_eq!(renamed(other, "reduce.cu", "x.cu"), other);
    }

    #[test]
    fn a_diagnostic_is_said_once() {
        let mut seen = HashSet::new();
        assert_eq!(unseen(NVCC, &mut seen).as_deref(), Some(NVCC));
        assert_eq!(unseen(NVCC, &mut seen), None);
        let more = format!("{NVCC}reduce.cu(30): warning: unused\n");
        assert_eq!(
            unseen(&more, &mut seen).as_deref(),
            Some("reduce.cu(30): warning: unused\n")
        );
    }
}
