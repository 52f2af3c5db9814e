//! Preprocessing directives as the compiler finds them: the source is read through translation
//! phases 1 to 3 (trigraphs, lines joined at a backslash, comments replaced by a space, literals and
//! numbers as whole tokens), and a directive is a logical line whose first token is `#` or its
//! digraph `%:`. So `%:include`, `#` followed by a line splice, `# /* comment */ define` and a
//! directive whose comment runs over several lines are all directives, as they are for nvcc
//! (shared/cuda-facts.md, 2026-11-29). The `_Pragma("...")` operator counts as a `#pragma`.
//!
//! The reader also says where a line ends inside something that would carry on past it (a block
//! comment, a raw string, a line splice): a region that ends so swallows the code after it.

/// One directive: the physical lines it spans (1-based, the first holding its `#`), its name
/// (`include`, `define`, `pragma`; empty for the null directive `#` alone) and the rest of its
/// logical line with comments as spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub line: usize,
    pub last_line: usize,
    pub name: String,
    pub rest: String,
    /// How the `#` was spelled, where not plainly (`%:`, `??=`, `_Pragma`): for the message.
    pub spelled: Option<&'static str>,
}

/// What is still open at the end of a physical line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Open {
    BlockComment,
    RawString,
    /// The line ends with a backslash (or `??/`) that joins the next one to it.
    Splice,
}

/// The source after phases 1 and 2: each character with the physical line it came from, and the
/// lines that end in a splice.
pub fn spliced(source: &str) -> (Vec<(char, usize)>, Vec<usize>) {
    let raw: Vec<char> = source.chars().collect();
    let mut out = Vec::with_capacity(raw.len());
    let mut spliced_lines = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < raw.len() {
        // Phase 1: trigraphs (C++17 dropped them, but nvcc's host compiler can still be asked for
        // them; reading them costs honest code nothing).
        let (c, width) = match (raw[i], raw.get(i + 1), raw.get(i + 2)) {
            ('?', Some('?'), Some(&t)) => match trigraph(t) {
                Some(c) => (c, 3),
                None => ('?', 1),
            },
            (c, _, _) => (c, 1),
        };
        if c == '\\' {
            // Phase 2: a backslash, optional blanks (gcc accepts them, with a warning), newline.
            let mut j = i + width;
            while j < raw.len() && matches!(raw[j], ' ' | '\t' | '\x0b' | '\x0c' | '\r') {
                j += 1;
            }
            if j < raw.len() && raw[j] == '\n' {
                spliced_lines.push(line);
                line += 1;
                i = j + 1;
                continue;
            }
        }
        out.push((c, line));
        if c == '\n' {
            line += 1;
        }
        i += width;
    }
    (out, spliced_lines)
}

fn trigraph(third: char) -> Option<char> {
    Some(match third {
        '=' => '#',
        '/' => '\\',
        '\'' => '^',
        '(' => '[',
        ')' => ']',
        '!' => '|',
        '<' => '{',
        '>' => '}',
        '-' => '~',
        _ => return None,
    })
}

/// Phase 3 over the spliced text.
struct Reader {
    text: Vec<(char, usize)>,
    pos: usize,
    /// Lines that end inside a block comment or a raw string.
    open: Vec<(usize, Open)>,
}

impl Reader {
    fn peek(&self, k: usize) -> Option<char> {
        self.text.get(self.pos + k).map(|&(c, _)| c)
    }
    fn line(&self) -> usize {
        self.text
            .get(self.pos)
            .or(self.text.last())
            .map_or(1, |&(_, l)| l)
    }
    fn at(&self, s: &str) -> bool {
        s.chars().enumerate().all(|(k, c)| self.peek(k) == Some(c))
    }

    /// Skips a comment at the cursor (true if there was one); newlines inside a block comment do
    /// not end the logical line.
    fn comment(&mut self) -> bool {
        if self.at("//") {
            while self.peek(0).is_some_and(|c| c != '\n') {
                self.pos += 1;
            }
            true
        } else if self.at("/*") {
            self.pos += 2;
            while self.peek(0).is_some() && !self.at("*/") {
                if self.peek(0) == Some('\n') {
                    let line = self.line();
                    self.open.push((line, Open::BlockComment));
                }
                self.pos += 1;
            }
            self.pos = (self.pos + 2).min(self.text.len());
            true
        } else {
            false
        }
    }

    /// Skips blanks and comments within the logical line.
    fn blanks(&mut self) {
        loop {
            if self.peek(0).is_some_and(|c| c != '\n' && c.is_whitespace()) {
                self.pos += 1;
            } else if !self.comment() {
                return;
            }
        }
    }

    fn identifier(&mut self) -> String {
        let start = self.pos;
        while self
            .peek(0)
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii())
        {
            self.pos += 1;
        }
        self.text[start..self.pos].iter().map(|&(c, _)| c).collect()
    }

    /// A quoted literal from the cursor (at its opening quote); escapes honoured.
    fn quoted(&mut self) -> String {
        let quote = self.peek(0).unwrap_or('"');
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek(0) {
            if c == '\\' {
                self.pos += 2;
                continue;
            }
            if c == quote || c == '\n' {
                break;
            }
            self.pos += 1;
        }
        let body = self.text[start..self.pos.min(self.text.len())]
            .iter()
            .map(|&(c, _)| c)
            .collect();
        if self.peek(0) == Some(quote) {
            self.pos += 1;
        }
        body
    }

    /// A raw string from the cursor (at its `"`): `"delim( ... )delim"`.
    fn raw_string(&mut self) {
        self.pos += 1;
        let mut delim = String::new();
        while let Some(c) = self.peek(0).filter(|&c| c != '(' && c != '\n') {
            delim.push(c);
            self.pos += 1;
        }
        let end = format!("){delim}\"");
        while self.peek(0).is_some() && !self.at(&end) {
            if self.peek(0) == Some('\n') {
                let line = self.line();
                self.open.push((line, Open::RawString));
            }
            self.pos += 1;
        }
        self.pos = (self.pos + end.chars().count()).min(self.text.len());
    }

    /// A pp-number from the cursor: digits, letters, `.`, exponent signs and digit separators
    /// (`1'000'000` holds no character literal).
    fn number(&mut self) {
        while let Some(c) = self.peek(0) {
            let sign = matches!(c, '+' | '-')
                && self.pos > 0
                && matches!(self.text[self.pos - 1].0, 'e' | 'E' | 'p' | 'P');
            let separator = c == '\''
                && self
                    .peek(1)
                    .is_some_and(|n| n.is_ascii_alphanumeric() || n == '_');
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || sign || separator {
                self.pos += 1;
            } else {
                return;
            }
        }
    }

    /// One token (or comment, or blank) from the cursor; `_Pragma` operators are collected.
    fn token(&mut self, pragmas: &mut Vec<Directive>) {
        let Some(c) = self.peek(0) else { return };
        if self.comment() {
            return;
        }
        if c.is_ascii_digit() || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) {
            return self.number();
        }
        if c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii() {
            let line = self.line();
            let word = self.identifier();
            match (word.as_str(), self.peek(0)) {
                ("R" | "u8R" | "uR" | "UR" | "LR", Some('"')) => self.raw_string(),
                ("u8" | "u" | "U" | "L", Some('"' | '\'')) => {
                    self.quoted();
                }
                ("_Pragma", _) => {
                    self.blanks();
                    if self.peek(0) == Some('(') {
                        self.pos += 1;
                        self.blanks();
                        let text = match self.peek(0) {
                            Some('"') => self.quoted(),
                            Some('L') => {
                                self.pos += 1;
                                self.quoted()
                            }
                            _ => String::new(),
                        };
                        let text = text.replace("\\\"", "\"").replace("\\\\", "\\");
                        let (name, rest) = split_name(text.trim());
                        pragmas.push(Directive {
                            line,
                            last_line: self.line(),
                            name: "pragma".into(),
                            rest: format!("{name} {rest}").trim().to_string(),
                            spelled: Some("_Pragma"),
                        });
                    }
                }
                _ => {}
            }
            return;
        }
        if c == '"' || c == '\'' {
            self.quoted();
            return;
        }
        self.pos += 1;
    }

    /// The directive whose `#` (of `width` characters) is at the cursor.
    fn directive(&mut self, width: usize, spelled: Option<&'static str>) -> Directive {
        let line = self.line();
        self.pos += width;
        self.blanks();
        let name = self.identifier();
        let mut rest = String::new();
        while let Some(c) = self.peek(0).filter(|&c| c != '\n') {
            if self.comment() {
                rest.push(' ');
            } else if c == '"' || c == '\'' {
                let body = self.quoted();
                rest.push(c);
                rest.push_str(&body);
                rest.push(c);
            } else {
                rest.push(c);
                self.pos += 1;
            }
        }
        let last_line = self.text[..self.pos].last().map_or(line, |&(_, l)| l);
        Directive {
            line,
            last_line,
            name,
            rest: rest.split_whitespace().collect::<Vec<_>>().join(" "),
            spelled,
        }
    }
}

fn split_name(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim())
}

/// Every directive of `source`, and every `_Pragma`, in order; and where lines end with something
/// open that carries past them.
pub fn read(source: &str) -> (Vec<Directive>, Vec<(usize, Open)>) {
    let (text, splices) = spliced(source);
    let trigraph_hash: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("??="))
        .map(|(i, _)| i + 1)
        .collect();
    let mut r = Reader {
        text,
        pos: 0,
        open: Vec::new(),
    };
    let mut found = Vec::new();
    let mut pragmas = Vec::new();
    let mut line_start = true;
    while let Some(c) = r.peek(0) {
        if c == '\n' {
            line_start = true;
            r.pos += 1;
            continue;
        }
        if c.is_whitespace() || r.comment() {
            if c.is_whitespace() {
                r.pos += 1;
            }
            continue;
        }
        if line_start && (c == '#' || (r.at("%:") && !r.at("%:%:"))) {
            let spelled = match c {
                '%' => Some("%:"),
                _ if trigraph_hash.contains(&r.line()) => Some("??="),
                _ => None,
            };
            let width = if c == '%' { 2 } else { 1 };
            found.push(r.directive(width, spelled));
            continue;
        }
        line_start = false;
        r.token(&mut pragmas);
    }
    found.extend(pragmas);
    found.sort_by_key(|d| d.line);
    let mut open = r.open;
    open.extend(splices.into_iter().map(|l| (l, Open::Splice)));
    open.sort();
    open.dedup();
    (found, open)
}

impl Directive {
    /// The directive as the compiler reads it, whatever its spelling: `#include <mma.h>`.
    pub fn canonical(&self) -> String {
        format!("#{} {}", self.name, self.rest).trim().to_string()
    }

    /// The header an `#include` names (`mma.h` for `<mma.h>`), where it is one written in angle
    /// brackets; `None` for anything else, a quoted (local) include included.
    pub fn system_header(&self) -> Option<&str> {
        (self.name == "include")
            .then(|| self.rest.strip_prefix('<')?.strip_suffix('>'))
            .flatten()
            .map(str::trim)
    }

    /// A `#pragma` that acts on the code beside it alone: loop unrolling and nvcc's diagnostics.
    /// Others reach further (`push_macro`, `redefine_extname`, `weak`, `GCC poison`, ...).
    pub fn local_pragma(&self) -> bool {
        if self.name != "pragma" {
            return false;
        }
        let (word, _) = split_name(&self.rest);
        matches!(word, "unroll" | "nounroll")
            || word.starts_with("nv_diag_")
            || word.starts_with("diag_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<(usize, String)> {
        read(src).0.into_iter().map(|d| (d.line, d.name)).collect()
    }

    #[test]
    fn every_spelling_of_a_directive_is_one() {
        let src = "int a;\n%:include <x.h>\n#\\\ndefine A 1\n# /* c */ include \"y.h\"\n  ??=undef A\n#/*\n*/define B\nint b; // # not\n";
        assert_eq!(
            names(src),
            vec![
                (2, "include".into()),
                (3, "define".into()),
                (5, "include".into()),
                (6, "undef".into()),
                (7, "define".into()),
            ]
        );
        let d = &read(src).0;
        assert_eq!(d[0].spelled, Some("%:"));
        assert_eq!(d[1].last_line, 4);
        assert_eq!(d[4].last_line, 8);
        assert_eq!(d[2].canonical(), "#include \"y.h\"");
    }

    #[test]
    fn a_hash_inside_text_is_no_directive() {
        let src = "const char* s = \"# no\";\nauto r = R\"x(\n#include <a>\n)x\";\n/*\n#define C\n*/\nint n = 1'000'000;\n#define D\nchar c = '#';\nx = a %:%: b;\n";
        assert_eq!(names(src), vec![(9, "define".into())]);
        let (_, open) = read(src);
        assert!(open.contains(&(2, Open::RawString)), "{open:?}");
        assert!(open.contains(&(5, Open::BlockComment)), "{open:?}");
    }

    #[test]
    fn pragma_operators_are_pragmas() {
        let src = "int x;\n_Pragma(\"push_macro(\\\"CB_CHECK\\\")\") int y;\n#pragma unroll 4\n";
        let d = read(src).0;
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].line, d[0].name.as_str()), (2, "pragma"));
        assert!(!d[0].local_pragma(), "{d:?}");
        assert!(d[1].local_pragma());
    }

    #[test]
    fn headers_and_splices_are_read() {
        let d = read("#include <cuda/barrier>\n#include \"mine.h\"\n").0;
        assert_eq!(d[0].system_header(), Some("cuda/barrier"));
        assert_eq!(d[1].system_header(), None);
        let (_, open) = read("int a; // x \\\nint b;\nint c; \\  \nint d;\n");
        assert_eq!(open, vec![(1, Open::Splice), (3, Open::Splice)]);
    }
}
