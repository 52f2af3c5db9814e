//! Hashes of several strings: the journal's fingerprints of submissions, the bench files' names and
//! the kept measurements' keys (unkeyed), and the secret's draws (keyed, in `class::secret`); and
//! length-framed parts, for the keys of what is built and kept (`feed_framed`).

/// Between the parts of a hashed message; no UTF-8 string holds this byte, so the join is
/// unambiguous: ("ab", "c") and ("a", "bc") differ.
const SEPARATOR: u8 = 0xff;

/// Feed `parts` to a hasher, separated by `SEPARATOR`.
pub(crate) fn feed(hasher: &mut blake3::Hasher, parts: &[&str]) {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update(&[SEPARATOR]);
        }
        hasher.update(part.as_bytes());
    }
}

/// Feed `part` to a hasher with its length before it (8 bytes, little-endian), so that parts of
/// any bytes hash unambiguously one after another: the build cache's keys, the harness's and the
/// kept analyses' names, a binary's recipe line.
pub(crate) fn feed_framed(hasher: &mut blake3::Hasher, part: &[u8]) {
    hasher
        .update(&(part.len() as u64).to_le_bytes())
        .update(part);
}

pub(crate) fn first_u64(hash: &blake3::Hash) -> u64 {
    u64::from_le_bytes(
        hash.as_bytes()[..8]
            .try_into()
            .expect("a BLAKE3 hash has 32 bytes"),
    )
}

/// A stable 64-bit hash of several strings: unkeyed
/// BLAKE3 of the parts separated by 0xff, its first 8 bytes little-endian. Not secret.
pub fn stable(parts: &[&str]) -> u64 {
    let mut hasher = blake3::Hasher::new();
    feed(&mut hasher, parts);
    first_u64(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_journal_s_hash_is_unkeyed_blake3_of_the_parts_separated_by_0xff() {
        let want = blake3::hash(b"a\xffbc");
        assert_eq!(
            super::stable(&["a", "bc"]),
            u64::from_le_bytes(want.as_bytes()[..8].try_into().unwrap())
        );
        assert_eq!(super::stable(&["a", "bc"]), super::stable(&["a", "bc"]));
        assert_ne!(super::stable(&["a", "bc"]), super::stable(&["ab", "c"]));
    }

    #[test]
    fn a_framed_part_is_its_length_in_8_little_endian_bytes_then_itself() {
        let framed = |parts: &[&[u8]]| {
            let mut h = blake3::Hasher::new();
            for p in parts {
                super::feed_framed(&mut h, p);
            }
            h.finalize()
        };
        assert_eq!(
            framed(&[b"ab", b"c"]),
            blake3::hash(b"\x02\0\0\0\0\0\0\0ab\x01\0\0\0\0\0\0\0c")
        );
        assert_ne!(framed(&[b"ab", b"c"]), framed(&[b"a", b"bc"]));
    }
}
