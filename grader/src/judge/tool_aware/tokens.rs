//! Reading the text: a whole source as the preprocessor's first phases leave it (lines spliced,
//! comments dropped, escapes and `\u` names decoded, adjacent string literals joined), and the
//! brackets and qualifiers around a token.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TokKind {
    Ident,
    /// A string literal, escapes decoded, adjacent literals joined.
    Str,
    Punct,
    /// Numbers and character literals.
    Other,
}

#[derive(Debug, Clone)]
pub(super) struct Tok {
    pub(super) kind: TokKind,
    pub(super) text: String,
    pub(super) line: usize,
}

impl Tok {
    fn new(kind: TokKind, text: String, line: usize) -> Tok {
        Tok { kind, text, line }
    }
    pub(super) fn is(&self, kind: TokKind, text: &str) -> bool {
        self.kind == kind && self.text == text
    }
    pub(super) fn punct(&self, text: &str) -> bool {
        self.is(TokKind::Punct, text)
    }
}

/// Characters with their 1-based source line after translation phases 1 and 2, as the tamper
/// check reads them (`exercise::directives`).
fn spliced(source: &str) -> Vec<(char, usize)> {
    crate::exercise::directives::spliced(source).0
}

pub(super) fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// A `\uXXXX` or `\UXXXXXXXX` at `i`: the character and the length.
fn ucn(s: &[(char, usize)], i: usize) -> Option<(char, usize)> {
    if s.get(i)?.0 != '\\' {
        return None;
    }
    let digits = match s.get(i + 1)?.0 {
        'u' => 4,
        'U' => 8,
        _ => return None,
    };
    let hex: String = s.get(i + 2..i + 2 + digits)?.iter().map(|c| c.0).collect();
    let c = char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?;
    Some((c, 2 + digits))
}

/// The body of a (non-raw) string or character literal from just after its opening quote, escapes
/// decoded; returns the text and the index after the closing quote.
fn quoted(s: &[(char, usize)], mut i: usize, quote: char) -> (String, usize) {
    let mut text = String::new();
    while i < s.len() {
        let c = s[i].0;
        if c == quote {
            return (text, i + 1);
        }
        if c == '\n' {
            return (text, i); // unterminated: stop at the line's end
        }
        if c != '\\' || i + 1 >= s.len() {
            text.push(c);
            i += 1;
            continue;
        }
        if let Some((u, len)) = ucn(s, i) {
            text.push(u);
            i += len;
            continue;
        }
        let e = s[i + 1].0;
        i += 2;
        match e {
            'n' => text.push('\n'),
            't' => text.push('\t'),
            'r' => text.push('\r'),
            'a' => text.push('\x07'),
            'b' => text.push('\x08'),
            'f' => text.push('\x0c'),
            'v' => text.push('\x0b'),
            'x' => {
                let mut v = 0u32;
                while i < s.len() && s[i].0.is_ascii_hexdigit() {
                    v = v
                        .wrapping_mul(16)
                        .wrapping_add(s[i].0.to_digit(16).unwrap_or(0));
                    i += 1;
                }
                text.push(char::from_u32(v & 0xff).unwrap_or('?'));
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < s.len() && s[i].0.is_digit(8) {
                    v = v * 8 + s[i].0.to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                text.push(char::from_u32(v & 0xff).unwrap_or('?'));
            }
            other => text.push(other),
        }
    }
    (text, i)
}

/// A raw string literal from its opening quote: `R"delim( ... )delim"`.
fn raw_string(s: &[(char, usize)], i: usize) -> (String, usize) {
    let mut j = i + 1;
    let mut delim = String::new();
    while j < s.len() && s[j].0 != '(' && delim.len() <= 16 {
        delim.push(s[j].0);
        j += 1;
    }
    let close: Vec<char> = std::iter::once(')')
        .chain(delim.chars())
        .chain(std::iter::once('"'))
        .collect();
    let start = j + 1;
    let mut k = start;
    while k + close.len() <= s.len() {
        if s[k..k + close.len()]
            .iter()
            .map(|c| c.0)
            .eq(close.iter().copied())
        {
            return (s[start..k].iter().map(|c| c.0).collect(), k + close.len());
        }
        k += 1;
    }
    (
        s[start.min(s.len())..].iter().map(|c| c.0).collect(),
        s.len(),
    )
}

/// The tokens of a whole source, comments dropped and adjacent string literals joined.
pub(super) fn tokens(source: &str) -> Vec<Tok> {
    let s = spliced(source);
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    // A preprocessor directive ends at its line's end: a `;` there keeps a `#define`'s tokens from
    // reading on into the next line's.
    let (mut line_empty, mut in_directive) = (true, false);
    while i < s.len() {
        let (c, line) = s[i];
        if c == '\n' {
            if in_directive {
                out.push(Tok::new(TokKind::Punct, ";".into(), line));
            }
            (line_empty, in_directive) = (true, false);
        } else if !(c.is_whitespace() || comment_at(&s, i)) {
            in_directive |= line_empty && c == '#';
            line_empty = false;
        }
        if c.is_whitespace() {
            i += 1;
        } else if comment_at(&s, i) {
            i = past_comment(&s, i);
        } else {
            let (tok, end) = token_at(&s, i);
            out.push(tok);
            i = end;
        }
    }
    joined_literals(out)
}

/// Whether a `//` or `/*` comment starts at `i`.
fn comment_at(s: &[(char, usize)], i: usize) -> bool {
    s[i].0 == '/' && matches!(s.get(i + 1).map(|c| c.0), Some('/' | '*'))
}

/// The index past the comment at `i`: a `//` comment ends before its newline (which still ends a
/// directive), a `/*` comment after its `*/`.
fn past_comment(s: &[(char, usize)], mut i: usize) -> usize {
    let at = |i: usize| s.get(i).map(|c| c.0);
    if at(i + 1) == Some('/') {
        while i < s.len() && s[i].0 != '\n' {
            i += 1;
        }
    } else {
        i += 2;
        while i < s.len() && !(s[i].0 == '*' && at(i + 1) == Some('/')) {
            i += 1;
        }
        i += 2;
    }
    i
}

/// The token that starts at `i` (neither whitespace nor a comment) and the index after it.
fn token_at(s: &[(char, usize)], i: usize) -> (Tok, usize) {
    let (c, line) = s[i];
    let at = |i: usize| s.get(i).map(|c| c.0);
    if is_ident_start(c) || ucn(s, i).is_some() {
        word(s, i)
    } else if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) {
        number(s, i)
    } else if c == '"' || c == '\'' {
        literal(s, i, line)
    } else {
        let two: String = [Some(c), at(i + 1)].iter().flatten().collect();
        let text = if two == "::" || two == "->" {
            two
        } else {
            c.to_string()
        };
        let end = i + text.chars().count();
        (Tok::new(TokKind::Punct, text, line), end)
    }
}

/// An identifier at `i`, or the string or character literal it prefixes (`R"(...)"`, `u8"..."`,
/// `L'x'`), which is on the identifier's line.
fn word(s: &[(char, usize)], mut i: usize) -> (Tok, usize) {
    let line = s[i].1;
    let mut name = String::new();
    while i < s.len() {
        if let Some((u, len)) = ucn(s, i) {
            name.push(u);
            i += len;
        } else if is_ident_char(s[i].0) {
            name.push(s[i].0);
            i += 1;
        } else {
            break;
        }
    }
    let next = s.get(i).map(|c| c.0);
    let encoding = matches!(name.as_str(), "u8" | "u" | "U" | "L");
    if next == Some('"') && matches!(name.as_str(), "R" | "u8R" | "uR" | "UR" | "LR") {
        let (text, end) = raw_string(s, i);
        (Tok::new(TokKind::Str, text, line), end)
    } else if matches!(next, Some('"' | '\'')) && encoding {
        literal(s, i, line)
    } else {
        (Tok::new(TokKind::Ident, name, line), i)
    }
}

/// The string (`"`) or character (`'`) literal whose opening quote is at `i`, on `line`.
fn literal(s: &[(char, usize)], i: usize, line: usize) -> (Tok, usize) {
    let quote = s[i].0;
    let (text, end) = quoted(s, i + 1, quote);
    let kind = if quote == '"' {
        TokKind::Str
    } else {
        TokKind::Other
    };
    (Tok::new(kind, text, line), end)
}

/// A number at `i` (`1.5e-3f`, `0x1'000`), with the sign of an exponent.
fn number(s: &[(char, usize)], mut i: usize) -> (Tok, usize) {
    let line = s[i].1;
    let mut text = String::new();
    while let Some(d) = s.get(i).map(|c| c.0) {
        let exponent = matches!(d, '+' | '-') && text.ends_with(['e', 'E', 'p', 'P']);
        if !(d.is_alphanumeric() || d == '_' || d == '.' || d == '\'' || exponent) {
            break;
        }
        text.push(d);
        i += 1;
    }
    (Tok::new(TokKind::Other, text, line), i)
}

/// "/pr" "oc" is "/proc": adjacent literals are one (on the first one's line).
fn joined_literals(out: Vec<Tok>) -> Vec<Tok> {
    let mut joined: Vec<Tok> = Vec::with_capacity(out.len());
    for t in out {
        match joined.last_mut() {
            Some(last) if last.kind == TokKind::Str && t.kind == TokKind::Str => {
                last.text.push_str(&t.text)
            }
            _ => joined.push(t),
        }
    }
    joined
}

/// The `(` of the parameter or argument list after the name at `i`, past template arguments.
pub(super) fn params_open(toks: &[Tok], i: usize) -> Option<usize> {
    let mut k = i + 1;
    if toks.get(k)?.punct("<") {
        let mut depth = 0usize;
        loop {
            let t = toks.get(k)?;
            if t.punct("<") {
                depth += 1;
            } else if t.punct(">") {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            } else if t.punct(";") || t.punct("{") || t.punct("}") || k > i + 40 {
                return None;
            }
            k += 1;
        }
        k += 1;
    }
    toks.get(k)?.punct("(").then_some(k)
}

/// The index of the token that closes the bracket opened at `open`.
pub(super) fn matching(toks: &[Tok], open: usize) -> Option<usize> {
    let (o, c) = match toks[open].text.as_str() {
        "(" => ("(", ")"),
        "{" => ("{", "}"),
        "[" => ("[", "]"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if t.punct(o) {
            depth += 1;
        } else if t.punct(c) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The names that qualify the name at `i` (`cb::Io::output`: `["cb", "Io"]`); a leading `::` is
/// the global scope and adds nothing.
pub(super) fn qualifiers(toks: &[Tok], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut k = i;
    while k >= 2 && toks[k - 1].punct("::") && toks[k - 2].kind == TokKind::Ident {
        out.push(toks[k - 2].text.clone());
        k -= 2;
    }
    out.reverse();
    out
}
