//! What a compiled translation unit can reach, read from its host object with
//! `objdump -d -l -r -t -C`: the symbols it leaves undefined (what the linker will bind it to: the
//! C library, the CUDA runtime, the harness), the global symbols it defines (a C-linkage definition
//! takes that name for the whole program), `syscall` instructions, its sections, and every
//! reference each source line makes (calls included, to functions of its own that no relocation
//! names). Whatever the text hid (a digraph, a function reached through a pointer, an operator the
//! harness's macro calls), the object says what the code can do; `judge::reach` compares it with
//! the untouched exercise's and the reference fix's.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::runner::Job;

/// Where a piece of code came from, by the line information of the object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Origin {
    /// A line of the compiled exercise file (1-based).
    Source(usize),
    /// A line of the harness's headers (`cudabugs.cuh`, `timeline.cuh`): the grader's code.
    Harness,
    /// Anything else: the toolkit's and the C++ library's headers, nvcc's generated code.
    Library,
}

/// One reference from code to a symbol: a call, a jump, or a use of its address or value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub from: Origin,
    /// The function the reference is in (demangled).
    pub caller: String,
    /// The symbol referred to (demangled; `+0x..` offsets dropped).
    pub symbol: String,
}

/// What one host object can reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    /// Symbols left undefined, demangled.
    pub undefined: Vec<String>,
    /// Global and weak symbols defined here: name and whether it is a function.
    pub defined: Vec<(String, bool)>,
    /// Section names (`.text`, `.preinit_array`, ...).
    pub sections: Vec<String>,
    /// Each function's first line: where it was written.
    pub homes: BTreeMap<String, Origin>,
    /// Every reference, with the line it was made from.
    pub references: Vec<Reference>,
    /// Each `syscall`, `sysenter` or `int $0x80`, with its line and function.
    pub syscalls: Vec<(Origin, String)>,
    /// Source lines whose instructions sit inside a function written elsewhere (code inlined into
    /// it): the function and the line.
    pub inlined: Vec<(String, usize)>,
    /// Indirect functions (GNU IFUNC) it defines: their resolvers run while the program is being
    /// relocated, before any constructor and before the harness's filter.
    #[serde(default)]
    pub ifuncs: Vec<String>,
}

impl Reach {
    /// This (unoptimised) object's reach with what the optimised build of the same file adds to it:
    /// its symbols, system calls and sections (an optimiser can reach what `-O0` folded away).
    pub fn with_optimised(mut self, optimised: Reach) -> Reach {
        self.undefined.extend(optimised.undefined);
        self.defined.extend(optimised.defined);
        self.sections.extend(optimised.sections);
        self.syscalls.extend(optimised.syscalls);
        self.ifuncs.extend(optimised.ifuncs);
        self.ifuncs.sort();
        self.ifuncs.dedup();
        for list in [&mut self.undefined, &mut self.sections] {
            list.sort();
            list.dedup();
        }
        self.defined.sort();
        self.defined.dedup();
        self
    }
}

/// `objdump` over a host object: symbol table, disassembly with lines and relocations, demangled.
pub fn objdump_job(objdump: &Path, object: &Path, timeout: Duration) -> Job {
    Job::new(objdump, timeout)
        .args(["-d", "-l", "-r", "-t", "-C", "--no-show-raw-insn"])
        .arg(object)
}

/// The origin of an `objdump -l` location line (`/stage/reduce.cu:42 (discriminator 1)`), where
/// `source` is the compiled file's name.
fn origin(location: &str, source: &str) -> Option<Origin> {
    let location = location.split(" (discriminator").next()?.trim_end();
    let (path, line) = location.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    let name = Path::new(path).file_name()?.to_str()?;
    Some(if name == source {
        Origin::Source(line)
    } else if matches!(name, "cudabugs.cuh" | "timeline.cuh") {
        Origin::Harness
    } else {
        Origin::Library
    })
}

/// A symbol as a relocation or a call names it, without its offset: `getenv-0x4` -> `getenv`.
fn without_offset(symbol: &str) -> &str {
    let s = symbol.trim();
    match s.rfind(['+', '-']) {
        Some(i) if s[i + 1..].starts_with("0x") => &s[..i],
        _ => s,
    }
}

/// One symbol-table line: `VALUE FLAGS SECTION\tSIZE NAME`.
fn symbol_line(line: &str, reach: &mut Reach) {
    let Some((left, right)) = line.split_once('\t') else {
        return;
    };
    if left.len() < 17 || !left.as_bytes()[..16].iter().all(u8::is_ascii_hexdigit) {
        return;
    }
    let flags = left.get(17..24).unwrap_or("");
    let section = left.split_whitespace().last().unwrap_or("");
    let name = right
        .trim_start()
        .split_once(char::is_whitespace)
        .map_or("", |(_, n)| n.trim());
    // objdump prints a symbol's visibility before its name: `.hidden __dso_handle`.
    let name = [".hidden ", ".protected ", ".internal "]
        .iter()
        .find_map(|v| name.strip_prefix(v))
        .unwrap_or(name);
    if flags.contains('d') && !flags.contains('f') {
        reach.sections.push(section.to_string());
    } else if section == "*UND*" {
        if !name.is_empty() {
            reach.undefined.push(name.to_string());
        }
    } else if flags.starts_with('g') || flags.starts_with('w') || flags.starts_with('u') {
        reach.defined.push((name.to_string(), flags.contains('F')));
    }
    // The fifth flag: `i` for an indirect function, whatever its binding.
    if flags.as_bytes().get(4) == Some(&b'i') {
        reach.ifuncs.push(name.to_string());
    }
}

/// The reach in `objdump -d -l -r -t -C` output for the file named `source`.
pub fn parse(dump: &str, source: &str) -> Reach {
    let mut reach = Reach::default();
    let mut function = String::new();
    let mut home: Option<Origin> = None;
    let mut here = Origin::Library;
    // A call or jump whose target objdump named: kept until a relocation line says otherwise.
    let mut pending: Option<Reference> = None;
    let mut in_symbols = false;
    for line in dump.lines() {
        if line.starts_with("SYMBOL TABLE:") {
            in_symbols = true;
            continue;
        }
        if line.starts_with("Disassembly of section") {
            in_symbols = false;
        }
        if in_symbols {
            symbol_line(line, &mut reach);
            continue;
        }
        // `0000000000000165 <cudaMemcpy(float*, ...)>:` opens a function.
        if let Some(name) = line
            .split_once(" <")
            .filter(|(addr, rest)| {
                addr.len() == 16
                    && addr.chars().all(|c| c.is_ascii_hexdigit())
                    && rest.ends_with(">:")
            })
            .map(|(_, rest)| &rest[..rest.len() - 2])
        {
            reach.references.extend(pending.take());
            function = name.to_string();
            home = None;
            continue;
        }
        if !line.starts_with([' ', '\t']) {
            if let Some(o) = origin(line, source) {
                here = o.clone();
                match (&home, &o) {
                    (None, _) => {
                        reach.homes.insert(function.clone(), o.clone());
                        home = Some(o);
                    }
                    // Code of the file inside a function that begins in a header, or at a later
                    // line of the file: a function's own body never comes before its first line,
                    // so only inlined code does (a region inside the function's body comes after).
                    (Some(h), Origin::Source(l)) if !matches!(h, Origin::Source(first) if first <= l) =>
                    {
                        reach.inlined.push((function.clone(), *l));
                    }
                    _ => {}
                }
            }
            continue;
        }
        let body = line.trim();
        // `159: R_X86_64_PLT32	getenv-0x4`
        if let Some((_, rest)) = body.split_once(": R_") {
            let symbol = rest.split_once('\t').map_or("", |(_, s)| without_offset(s));
            pending = None;
            if !symbol.is_empty() && !symbol.starts_with('.') {
                reach.references.push(Reference {
                    from: here.clone(),
                    caller: function.clone(),
                    symbol: symbol.to_string(),
                });
            }
            continue;
        }
        reach.references.extend(pending.take());
        let Some((_, insn)) = body.split_once(":\t") else {
            continue;
        };
        let mnemonic = insn.split_whitespace().next().unwrap_or("");
        if mnemonic == "syscall" || mnemonic == "sysenter" || insn.starts_with("int    $0x80") {
            reach.syscalls.push((here.clone(), function.clone()));
        }
        if mnemonic.starts_with("call") || mnemonic.starts_with("jmp") {
            if let Some(target) = insn.split_once('<').and_then(|(_, t)| t.strip_suffix('>')) {
                let target = without_offset(target);
                if target != function {
                    pending = Some(Reference {
                        from: here.clone(),
                        caller: function.clone(),
                        symbol: target.to_string(),
                    });
                }
            }
        }
    }
    reach.references.extend(pending);
    for list in [&mut reach.undefined, &mut reach.sections] {
        list.sort();
        list.dedup();
    }
    reach
}

/// The name a function is known by, without its parameters, template arguments or qualifiers:
/// `cb::Io::output<float>(char const*, unsigned long*)` -> `cb::Io::output`; an operator keeps its
/// symbol (`operator!=`).
pub fn base_name(demangled: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let chars: Vec<char> = demangled.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest: String = chars[i..].iter().collect();
        if depth == 0 && rest.starts_with("operator") {
            // operator<, operator(), operator new: up to the parameter list.
            let tail = &rest["operator".len()..];
            let end = if let Some(stripped) = tail.strip_prefix("()") {
                tail.len() - stripped.len()
            } else {
                tail.find('(').unwrap_or(tail.len())
            };
            out.push_str("operator");
            out.push_str(tail[..end].trim());
            break;
        }
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => break,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        i += 1;
    }
    out.trim().to_string()
}

/// Whether a defined symbol's name is a C one (no `::`, no parameter list, no spaces): a C-linkage
/// function, or a variable at global scope, which C++ does not mangle either.
pub fn unmangled(name: &str) -> bool {
    !name.contains("::") && !name.contains('(') && !name.contains(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = include_str!("../../tests/fixtures/reach/profiler-aware-03-O0.dump");

    #[test]
    fn an_object_is_read_for_symbols_lines_and_calls() {
        let r = parse(DUMP, "pa.cu");
        assert!(
            r.undefined.iter().any(|s| s == "getenv"),
            "{:?}",
            r.undefined
        );
        assert!(r.undefined.iter().any(|s| s == "environ"));
        assert!(r
            .defined
            .iter()
            .any(|(s, f)| *f
                && s == "cudaMemcpy(float*, float const*, unsigned long, cudaMemcpyKind)"));
        assert_eq!(
            r.homes
                .get("cudaMemcpy(float*, float const*, unsigned long, cudaMemcpyKind)"),
            Some(&Origin::Source(35))
        );
        // getenv is called from line 28, in under_ncu().
        assert!(r.references.iter().any(|x| x.symbol == "getenv"
            && x.from == Origin::Source(28)
            && x.caller == "under_ncu()"));
        // cb_run (line 73, after the region, 13-51) calls the overload from line 83.
        assert!(r.references.iter().any(|x| x.caller == "cb_run(cb::Io&)"
            && x.from == Origin::Source(83)
            && x.symbol == "cudaMemcpy(float*, float const*, unsigned long, cudaMemcpyKind)"));
        assert_eq!(r.homes.get("cb_run(cb::Io&)"), Some(&Origin::Source(73)));
        // A local call that no relocation names is still seen.
        assert!(r
            .references
            .iter()
            .any(|x| x.caller == "under_ncu()"
                && x.symbol == "starts_with(char const*, char const*)"));
        assert!(r.syscalls.is_empty());
    }

    #[test]
    fn code_forced_inline_into_a_later_function_is_seen() {
        // g++ -O0 -g of a file whose line 5 defines an always_inline `operator!=` that `cb_run`
        // (line 10) uses: no call is left, only line 5's instructions inside `cb_run`.
        let dump = include_str!("../../tests/fixtures/reach/inline-hook-gcc.dump");
        let r = parse(dump, "t.cpp");
        assert!(
            r.inlined.contains(&("cb_run(float*)".to_string(), 5)),
            "{:?}",
            r.inlined
        );
        assert!(r.references.iter().any(|x| x.caller == "cb_run(float*)"
            && x.from == Origin::Source(13)
            && x.symbol == "hooked(float*, float const*, unsigned long, int)"));
        // Nothing of the file's own functions reads as inlined into themselves.
        assert!(
            !r.inlined.iter().any(|(f, _)| f.starts_with("hooked")),
            "{:?}",
            r.inlined
        );
    }

    #[test]
    fn an_indirect_function_is_seen() {
        // `objdump -t -C` of `extern "C" int f(void) __attribute__((ifunc("resolve")));` (g++ 12).
        let dump = "SYMBOL TABLE:\n000000000000000b g     F .text\t000000000000000d resolve\n000000000000000b g   i   .text\t000000000000000d f\n0000000000000000         *UND*\t0000000000000000 .hidden __dso_handle\n";
        let r = parse(dump, "x.cu");
        assert_eq!(r.ifuncs, ["f"]);
        // A static object's destructor: the visibility is not part of the name.
        assert_eq!(r.undefined, ["__dso_handle"]);
        assert!(r.defined.contains(&("resolve".to_string(), true)));
    }

    #[test]
    fn names_are_reduced_to_what_overloads_share() {
        assert_eq!(
            base_name("cb::Io::output<float>(char const*, unsigned long*)"),
            "cb::Io::output"
        );
        assert_eq!(base_name("operator!=(cudaError, cudaError)"), "operator!=");
        assert_eq!(base_name("operator()(int) const"), "operator()");
        assert_eq!(base_name("launch_sum(float const*, int)"), "launch_sum");
        assert!(unmangled("clock_gettime") && !unmangled("cb::x") && !unmangled("f(int)"));
        assert_eq!(without_offset("getenv-0x4"), "getenv");
        assert_eq!(without_offset("f(int)+0x1a"), "f(int)");
    }
}
