//! Finding what the rules name in a source's marked regions: each token inside a region, read with
//! the tokens around it and what the whole file declares and calls.

use std::collections::BTreeSet;

use super::rules::{
    clock_registers, declared_names, hooked, rule_for, string_findings, ASM, ATTRIBUTES, KEYWORDS,
};
use super::tokens::{matching, params_open, qualifiers, tokens, Tok, TokKind};
use super::{CodeFinding, Kind, Suspect};
use crate::exercise::regions;

/// Every finding on the lines of `source`'s marked regions, before any allowlist.
pub(super) fn findings(source: &str) -> Vec<CodeFinding> {
    let Ok(marked) = regions::parse(source) else {
        return Vec::new();
    };
    let toks = tokens(source);
    let inside = |line: usize| {
        marked
            .iter()
            .any(|r| r.begin_line < line && line < r.end_line)
    };
    let code = Code {
        toks: &toks,
        declared: declared_names(&toks),
        called_outside: toks
            .iter()
            .enumerate()
            .filter(|(k, t)| {
                t.kind == TokKind::Ident && !inside(t.line) && params_open(&toks, *k).is_some()
            })
            .map(|(_, t)| t.text.clone())
            .collect(),
    };
    let mut found = Found::new(source);
    for (i, t) in toks.iter().enumerate() {
        if inside(t.line) {
            code.token_findings(i, &mut found);
        }
    }
    found.sorted()
}

/// A source's tokens, with what the rules need to know of the whole file.
struct Code<'t> {
    toks: &'t [Tok],
    /// The names the file declares as variables, fields or parameters (see `rule_for`).
    declared: BTreeSet<String>,
    /// The functions the code outside the regions calls: a region that defines one hooks it.
    called_outside: BTreeSet<String>,
}

impl Code<'_> {
    /// The findings of the token at `i`, which is inside a marked region.
    fn token_findings(&self, i: usize, found: &mut Found) {
        let toks = self.toks;
        let t = &toks[i];
        let next = toks.get(i + 1);
        match t.kind {
            TokKind::Str => {
                for (kind, token) in string_findings(&t.text) {
                    let never = kind == Kind::Clock;
                    found.add_finding(t.line, kind, token, Vec::new(), never);
                }
            }
            TokKind::Ident if ASM.contains(&t.text.as_str()) => self.inline_assembly(i, found),
            TokKind::Ident
                if t.text == "extern" && next.is_some_and(|n| n.is(TokKind::Str, "C")) =>
            {
                let token = if self.extern_c_defines(i + 2) {
                    "extern \"C\" definition"
                } else {
                    "extern \"C\""
                };
                found.add(t.line, Kind::Symbols, token.to_string());
            }
            TokKind::Ident
                if t.text == "operator"
                    && next.is_some_and(|n| n.text == "new" || n.text == "delete") =>
            {
                let token = format!("operator {}", next.map(|n| n.text.as_str()).unwrap_or(""));
                found.add(t.line, Kind::Symbols, token);
            }
            TokKind::Ident
                if t.text == "namespace"
                    && next.is_some_and(|n| matches!(n.text.as_str(), "std" | "cb" | "cuda")) =>
            {
                let token = format!("namespace {}", next.map(|n| n.text.as_str()).unwrap_or(""));
                found.add(t.line, Kind::Symbols, token);
            }
            TokKind::Punct if t.punct("[") && next.is_some_and(|n| n.punct("[")) => {
                let end = matching(toks, i).unwrap_or(toks.len() - 1);
                found.attributes(&toks[i..=end], |name| name);
            }
            _ => {}
        }
        if t.kind == TokKind::Ident
            && matches!(t.text.as_str(), "__attribute__" | "__attribute")
            && next.is_some_and(|n| n.punct("("))
        {
            let end = matching(toks, i + 1).unwrap_or(toks.len() - 1);
            found.attributes(&toks[i + 1..=end], |name| name.trim_matches('_'));
        }
        if t.kind == TokKind::Ident {
            self.name_findings(i, found);
        }
    }

    /// `asm [volatile|inline|goto]* ( "template" ... )`: a finding with the template's
    /// instructions unless the template is empty (a compiler barrier); never allowed where it
    /// reads a clock.
    fn inline_assembly(&self, i: usize, found: &mut Found) {
        let toks = self.toks;
        let mut k = i + 1;
        while toks.get(k).is_some_and(|q| {
            q.kind == TokKind::Ident
                && matches!(
                    q.text.as_str(),
                    "volatile" | "__volatile__" | "__volatile" | "inline" | "__inline__" | "goto"
                )
        }) {
            k += 1;
        }
        let template = toks
            .get(k)
            .filter(|q| q.punct("("))
            .and_then(|_| toks.get(k + 1))
            .filter(|q| q.kind == TokKind::Str);
        let (instrs, reads_clock) = match template {
            Some(tpl) => (mnemonics(&tpl.text), !clock_registers(&tpl.text).is_empty()),
            None => (vec![String::new()], false),
        };
        if !instrs.is_empty() || reads_clock {
            let t = &toks[i];
            let kind = Kind::InlineAssembly;
            found.add_finding(t.line, kind, t.text.clone(), instrs, reads_clock);
        }
    }

    /// Whether the `extern "C" { ... }` block, or the `extern "C"` declaration-or-definition, that
    /// starts at `body` defines a function.
    fn extern_c_defines(&self, body: usize) -> bool {
        let toks = self.toks;
        if toks.get(body).is_some_and(|b| b.punct("{")) {
            let end = matching(toks, body).unwrap_or(toks.len() - 1);
            return (body + 1..end)
                .any(|k| toks[k].kind == TokKind::Ident && is_definition(toks, k));
        }
        let mut k = body;
        while let Some(q) = toks.get(k) {
            if q.punct(";") {
                return false;
            }
            if q.kind == TokKind::Ident && is_definition(toks, k) {
                return true;
            }
            if q.punct("(") {
                k = matching(toks, k).unwrap_or(toks.len());
            }
            k += 1;
        }
        false
    }

    /// The findings of the name at `i`: a rule's name, a `read`/`write` of a raw descriptor, and a
    /// definition that stands in for, or specialises, what is not the student's own.
    fn name_findings(&self, i: usize, found: &mut Found) {
        let toks = self.toks;
        let t = &toks[i];
        if let Some((kind, token)) = rule_for(toks, i, &self.declared) {
            found.add(t.line, kind, token);
        }
        if matches!(t.text.as_str(), "read" | "write") && raw_fd_call(toks, i) {
            found.add(t.line, Kind::Files, format!("{}(fd)", t.text));
        }
        let member = i
            .checked_sub(1)
            .is_some_and(|p| toks[p].punct(".") || toks[p].punct("->"));
        let scope = qualifiers(toks, i);
        if !member && is_definition(toks, i) {
            if scope
                .iter()
                .any(|q| matches!(q.as_str(), "cb" | "std" | "cuda"))
            {
                // A member or specialisation of the harness's, the standard library's or CUDA's, defined here.
                let token = format!("{}::{}(...) {{...}}", scope.join("::"), t.text);
                found.add(t.line, Kind::Symbols, token);
            } else if scope.is_empty() && hooked(&t.text, &self.called_outside) {
                found.add(t.line, Kind::Symbols, format!("{}(...) {{...}}", t.text));
            }
        }
    }
}

/// The findings so far, each (line, kind, token) once, with its line of the source.
struct Found<'s> {
    lines: Vec<&'s str>,
    seen: BTreeSet<(usize, Kind, String)>,
    out: Vec<CodeFinding>,
}

impl<'s> Found<'s> {
    fn new(source: &'s str) -> Found<'s> {
        Found {
            lines: source.lines().collect(),
            seen: BTreeSet::new(),
            out: Vec::new(),
        }
    }

    /// A finding that carries no instructions and that the allowlist may drop.
    fn add(&mut self, line: usize, kind: Kind, token: String) {
        self.add_finding(line, kind, token, Vec::new(), false);
    }

    fn add_finding(
        &mut self,
        line: usize,
        kind: Kind,
        token: String,
        mnemonics: Vec<String>,
        never_allowed: bool,
    ) {
        if self.seen.insert((line, kind, token.clone())) {
            self.out.push(CodeFinding {
                suspect: Suspect {
                    line,
                    kind,
                    token,
                    excerpt: self.excerpt(line),
                },
                mnemonics,
                never_allowed,
            });
        }
    }

    /// The attributes among `toks` that run code before `main` or play with symbols, each by its
    /// name as `spelled` reads it (`__constructor__` inside `__attribute__` is `constructor`).
    fn attributes(&mut self, toks: &[Tok], spelled: fn(&str) -> &str) {
        for q in toks {
            let name = spelled(&q.text);
            if q.kind == TokKind::Ident && ATTRIBUTES.contains(&name) {
                self.add(q.line, Kind::Symbols, format!("attribute {name}"));
            }
        }
    }

    /// The source's line (1-based), trimmed and shortened.
    fn excerpt(&self, line: usize) -> String {
        let text = self
            .lines
            .get(line.wrapping_sub(1))
            .copied()
            .unwrap_or("")
            .trim();
        if text.chars().count() > 120 {
            format!("{}...", text.chars().take(117).collect::<String>())
        } else {
            text.to_string()
        }
    }

    fn sorted(mut self) -> Vec<CodeFinding> {
        self.out.sort_by_key(|f| (f.suspect.line, f.suspect.kind));
        self.out
    }
}

/// Whether the name at `i`, followed by a parameter list, is a function definition: after the
/// closing parenthesis, a `{` comes before any `;`, `,`, `)`, `=` or `}` (qualifiers, attributes and
/// a trailing return type may come between).
fn is_definition(toks: &[Tok], i: usize) -> bool {
    if toks[i].kind != TokKind::Ident || KEYWORDS.contains(&toks[i].text.as_str()) {
        return false;
    }
    let Some(open) = params_open(toks, i) else {
        return false;
    };
    let Some(close) = matching(toks, open) else {
        return false;
    };
    let mut k = close + 1;
    while let Some(t) = toks.get(k) {
        if t.punct("{") {
            return true;
        }
        if t.punct("(") {
            // throw(...), noexcept(...), __attribute__((...)) after the parameters.
            match matching(toks, k) {
                Some(end) => k = end + 1,
                None => return false,
            }
            continue;
        }
        if t.punct(";")
            || t.punct(",")
            || t.punct(")")
            || t.punct("=")
            || t.punct("}")
            || t.kind == TokKind::Str
            || k > close + 40
        {
            return false;
        }
        k += 1;
    }
    false
}

/// `read(` or `write(` called (not as a member) with a literal descriptor or `STD*_FILENO` first.
fn raw_fd_call(toks: &[Tok], i: usize) -> bool {
    let member = i
        .checked_sub(1)
        .is_some_and(|p| toks[p].punct(".") || toks[p].punct("->"));
    let qualified = i.checked_sub(1).is_some_and(|p| toks[p].punct("::"))
        && i.checked_sub(2)
            .is_some_and(|q| toks[q].kind == TokKind::Ident && toks[q].text != "std");
    if member || qualified || !toks.get(i + 1).is_some_and(|t| t.punct("(")) {
        return false;
    }
    let Some(arg) = toks.get(i + 2) else {
        return false;
    };
    let then_comma = toks.get(i + 3).is_some_and(|t| t.punct(","));
    let literal = arg.kind == TokKind::Other && arg.text.chars().all(|c| c.is_ascii_digit());
    let named = arg.kind == TokKind::Ident && arg.text.ends_with("_FILENO");
    then_comma && (literal || named)
}

/// Mnemonics of an inline-assembly template: the first word of each statement, labels, predicates,
/// braces and directives (`.reg`) left out.
pub(super) fn mnemonics(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in template.split([';', '\n']) {
        let mut s = stmt.trim().trim_start_matches(['{', '}']).trim();
        if let Some((label, rest)) = s.split_once(':') {
            if !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                && !rest.starts_with(':')
            {
                s = rest.trim();
            }
        }
        if s.starts_with('@') {
            s = s
                .split_once(char::is_whitespace)
                .map(|(_, r)| r.trim())
                .unwrap_or("");
        }
        let word = s
            .split(|c: char| c.is_whitespace() || c == ',')
            .next()
            .unwrap_or("")
            .trim_end_matches(['{', '}']);
        if word.is_empty()
            || word.starts_with('.')
            || word.starts_with("//")
            || word.starts_with('#')
        {
            continue;
        }
        out.push(word.to_string());
    }
    out
}
