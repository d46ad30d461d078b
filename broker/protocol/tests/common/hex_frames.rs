//! Hand-written frames as hex literals.
//!
//! The literals are laid out field by field (spaces, newlines and `|` are ignored) so a reader
//! can check them against the layout in `docs/protocol.md` without running anything. They are
//! written from the specification, not produced by the encoder: that is what lets them catch an
//! encoder and a decoder that are wrong in the same way.

/// The bytes of a hex literal, ignoring whitespace and `|` separators.
pub fn hex_bytes(literal: &str) -> Vec<u8> {
    let digits: String = literal
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '|')
        .collect();
    hex::decode(&digits).unwrap_or_else(|e| panic!("bad hex literal {literal:?}: {e}"))
}

/// A whole frame from a hex literal. Checks that its `int32 len` prefix counts exactly the bytes
/// after it, so a miscounted literal fails here instead of silently testing another rule.
pub fn whole_frame(literal: &str) -> Vec<u8> {
    let bytes = hex_bytes(literal);
    let prefix: [u8; 4] = bytes[..4]
        .try_into()
        .expect("a frame starts with int32 len");
    let len = i32::from_be_bytes(prefix);
    assert_eq!(
        usize::try_from(len).ok(),
        Some(bytes.len() - 4),
        "the literal's length prefix {len} does not count its {} body bytes",
        bytes.len() - 4
    );
    bytes
}
