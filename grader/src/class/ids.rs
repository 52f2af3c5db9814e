//! A student's id: unique, stable and safe in a path, a CSV cell and a recording key, spelt from
//! the student's folder name (`roster` finds the folders).

use std::collections::BTreeMap;

/// How many hex digits of the name's hash an id carries: 24 bits, so that two lossy names with
/// the same readable part share an id by chance once in millions; `unique_ids` lengthens it then.
pub(super) const SHORT_HASH: usize = 6;
/// The hash's length where the short one collided: 64 bits.
pub(super) const LONG_HASH: usize = 16;
/// The most characters of a lossy name kept before its hash (the id is a file name).
const MAX_READABLE: usize = 48;

/// The variants the grade plan gives its own submissions beside the students' ones
/// (`plans::grade::worker`): a student with one of these ids would share their work folder and
/// recording keys, so such a name is treated as lossy (it gets a hash). Compared ignoring ASCII
/// case, as a case-insensitive file system would.
const RESERVED: [&str; 2] = ["reference", "original"];

fn id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Whether `name` is its own id: non-empty ASCII letters, digits, '-', '_' and '.', not starting
/// with '.' and not reserved. Such a name keeps the id the grader always gave it.
fn is_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(id_char)
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// The ASCII spelling of a Latin letter with a diacritic (or a ligature), for people to read.
const LATIN: &[(&str, &str)] = &[
    ("ÀÁÂÃÄÅĀĂĄǍ", "A"),
    ("àáâãäåāăąǎ", "a"),
    ("ÆǼ", "AE"),
    ("æǽ", "ae"),
    ("ÇĆĈĊČ", "C"),
    ("çćĉċč", "c"),
    ("ĎĐÐ", "D"),
    ("ďđð", "d"),
    ("ÈÉÊËĒĔĖĘĚ", "E"),
    ("èéêëēĕėęě", "e"),
    ("ĜĞĠĢ", "G"),
    ("ĝğġģ", "g"),
    ("ĤĦ", "H"),
    ("ĥħ", "h"),
    ("ÌÍÎÏĨĪĬĮİǏ", "I"),
    ("ìíîïĩīĭįıǐ", "i"),
    ("Ĳ", "IJ"),
    ("ĳ", "ij"),
    ("Ĵ", "J"),
    ("ĵ", "j"),
    ("Ķ", "K"),
    ("ķĸ", "k"),
    ("ĹĻĽĿŁ", "L"),
    ("ĺļľŀł", "l"),
    ("ÑŃŅŇŊ", "N"),
    ("ñńņňŉŋ", "n"),
    ("ÒÓÔÕÖØŌŎŐƠǑ", "O"),
    ("òóôõöøōŏőơǒ", "o"),
    ("Œ", "OE"),
    ("œ", "oe"),
    ("ŔŖŘ", "R"),
    ("ŕŗř", "r"),
    ("ŚŜŞŠȘ", "S"),
    ("śŝşšșſ", "s"),
    ("ẞ", "SS"),
    ("ß", "ss"),
    ("ŢŤŦȚ", "T"),
    ("ţťŧț", "t"),
    ("Þ", "TH"),
    ("þ", "th"),
    ("ÙÚÛÜŨŪŬŮŰŲƯǓ", "U"),
    ("ùúûüũūŭůűųưǔ", "u"),
    ("Ŵ", "W"),
    ("ŵ", "w"),
    ("ÝŶŸ", "Y"),
    ("ýÿŷ", "y"),
    ("ŹŻŽ", "Z"),
    ("źżž", "z"),
];

/// The readable part of a lossy name's id: Latin letters with diacritics spelt in ASCII,
/// combining marks (a decomposed "é") dropped, each run of anything else one '_', no '.' or '_'
/// at the start and no '_' at the end, at most `MAX_READABLE` characters; "student" where
/// nothing is left ("日本").
fn readable(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if id_char(c) {
            out.push(c);
        } else if let Some((_, ascii)) = LATIN.iter().find(|(from, _)| from.contains(c)) {
            out.push_str(ascii);
        } else if ('\u{300}'..='\u{36f}').contains(&c) {
            // A combining diacritical mark: the letter before it is already spelt.
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out: String = out
        .trim_start_matches(['.', '_'])
        .trim_end_matches('_')
        .chars()
        .take(MAX_READABLE)
        .collect();
    if out.is_empty() {
        "student".into()
    } else {
        out
    }
}

/// The first `digits` hex digits of the BLAKE3 hash of `exact` (a name's exact bytes), under this
/// use's own prefix: the same on every run, machine and platform (BLAKE3 is specified on bytes,
/// and its hex is the bytes in order).
pub(super) fn name_hash(exact: &[u8], digits: usize) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cudabugs student id\xff");
    hasher.update(exact);
    hasher.finalize().to_hex()[..digits].to_string()
}

/// The id of the student shown as `shown`, whose name's exact bytes are `exact` (the shown text's,
/// or a folder name's own where it is not UTF-8 and the shown text lost them), with `digits` hex
/// digits of hash where the name is not its own id.
fn id_with(shown: &str, exact: &[u8], digits: usize) -> String {
    if is_safe(shown) && shown.as_bytes() == exact {
        shown.to_string()
    } else {
        format!("{}-{}", readable(shown), name_hash(exact, digits))
    }
}

/// A student's id from their name: unique, stable and safe in a path, a CSV cell and a recording
/// key (`[A-Za-z0-9._-]`, not starting with '.', never empty).
///
/// A safe name (`is_safe`: "alice", "a_b", "submission_1001") is its own id, as it always was, so
/// journals and recordings of such classes keep their keys. Any other name is lossy: its id is a
/// readable ASCII spelling and a hash of the exact name ("José" -> "Jose-<6 hex>", "a b" ->
/// "a_b-<6 hex>", "日本" -> "student-<6 hex>"), whatever other students the class has, so that
/// the id never changes when a classmate appears. Two different names thus share an id only if
/// both are lossy with the same readable part and the same 24 bits of hash, or one is a safe
/// name spelt exactly like another's hashed id (a folder named "Jose-3fa2c1" beside "José"): both
/// are improbable, but not impossible (every id is itself a safe name, so no scheme that keeps
/// safe names can be collision-free by construction), and `unique_ids` settles them.
pub fn student_id(name: &str) -> String {
    id_with(name, name.as_bytes(), SHORT_HASH)
}

/// What a student's id is spelt from: the name as shown (a folder name, less any GitHub Classroom
/// prefix; a Gradescope submission folder, never the submitters' names) and its exact bytes.
pub(super) struct IdSource {
    pub(super) shown: String,
    pub(super) exact: Vec<u8>,
}

impl IdSource {
    pub(super) fn id(&self, digits: usize) -> String {
        id_with(&self.shown, &self.exact, digits)
    }
}

/// Two students still left with one id after `unique_ids`: their places in the list.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct SameId(pub usize, pub usize);

/// Make the students' `ids` unique; `sources[i]` is what `ids[i]` is spelt from. Where ids
/// collide, the lossy names among them take a 64-bit hash (a safe name keeps its id: at most one
/// safe name has a given id, since a safe name is its own id). The result does not depend on the
/// order of the students. Should two ids still be equal (a 64-bit hash collision of two names with
/// the same readable part), the two are named, and the roster is refused rather than two students
/// merged.
pub(super) fn unique_ids(ids: &mut [String], sources: &[IdSource]) -> Result<(), SameId> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for id in ids.iter() {
        *count.entry(id.clone()).or_default() += 1;
    }
    for (id, source) in ids.iter_mut().zip(sources) {
        if count[id.as_str()] > 1 && id.as_bytes() != source.exact.as_slice() {
            *id = source.id(LONG_HASH);
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, id) in ids.iter().enumerate() {
        if let Some(first) = seen.insert(id, k) {
            return Err(SameId(first, k));
        }
    }
    Ok(())
}

/// Whether `id` is spelt as an id may be (for the tests of `ids` and `roster`).
#[cfg(test)]
pub(super) fn assert_safe(id: &str) {
    assert!(
        !id.is_empty() && !id.starts_with('.') && id.chars().all(id_char),
        "`{id}` is not a safe id"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_spellings_decomposed_marks_and_reserved_names_get_a_hash() {
        assert_eq!(readable("Søren Kierkegaard"), "Soren_Kierkegaard");
        assert_eq!(readable("Straße-Œuvre"), "Strasse-OEuvre");
        assert_eq!(
            readable("Jose\u{301}"),
            "Jose",
            "a decomposed é loses its mark"
        );
        assert_ne!(
            student_id("Jose\u{301}"),
            student_id("José"),
            "but not its hash: they are two names"
        );
        assert_eq!(readable(".hidden"), "hidden");
        assert_eq!(readable("  "), "student");
        assert_eq!(readable(&"é".repeat(200)).len(), MAX_READABLE);
        // The grade plan's own variants are never a student's id.
        assert!(
            student_id("reference").starts_with("reference-")
                && student_id("Original").starts_with("Original-")
        );
        assert_eq!(student_id("submission_1001"), "submission_1001");
        for name in [
            "", ".", "..", "-", "a/b", "a\\b", "\"q\",x", "\u{feff}", "\n",
        ] {
            assert_safe(&student_id(name));
        }
    }
}
