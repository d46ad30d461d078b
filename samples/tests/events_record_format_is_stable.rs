//! The bytes of a `UserEvent` at rest are pinned: one format-version byte, then postcard. A change
//! of layout must come with a new version byte, and a reader refuses versions it does not know —
//! records outlive the code that wrote them.

use booblik_samples::events::event::{DecodeError, EventKind, FORMAT_VERSION, UserEvent};
use uuid::Uuid;

fn pinned_event() -> UserEvent {
    UserEvent {
        publisher_id: Uuid::from_u128(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff),
        user_id: "user-007".into(),
        seq: 300,
        kind: EventKind::Purchased,
        at_ms: 1_700_000_000_000,
    }
}

#[rustfmt::skip]
const PINNED_BYTES: &[u8] = &[
    0x01,                                           // format version
    0x10,                                           // publisher_id: 16 bytes
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
    0x08, b'u', b's', b'e', b'r', b'-', b'0', b'0', b'7', // user_id: 8 bytes
    0xac, 0x02,                                     // seq 300 (varint)
    0x04,                                           // kind: variant 4, Purchased
    0x80, 0xd0, 0x95, 0xff, 0xbc, 0x31,             // at_ms 1_700_000_000_000 (varint)
];

#[test]
fn an_event_encodes_to_the_pinned_bytes() {
    assert_eq!(FORMAT_VERSION, 1);
    assert_eq!(pinned_event().encode(), PINNED_BYTES);
}

#[test]
fn the_pinned_bytes_decode_to_the_event() {
    assert_eq!(UserEvent::decode(PINNED_BYTES).unwrap(), pinned_event());
}

#[test]
fn an_unknown_version_is_refused_not_misread() {
    let mut bytes = PINNED_BYTES.to_vec();
    bytes[0] = 2;
    assert!(matches!(
        UserEvent::decode(&bytes),
        Err(DecodeError::UnsupportedVersion { found: 2 })
    ));
}

#[test]
fn bytes_after_a_whole_event_are_refused() {
    let mut bytes = PINNED_BYTES.to_vec();
    bytes.push(0);
    assert!(matches!(
        UserEvent::decode(&bytes),
        Err(DecodeError::TrailingBytes { count: 1 })
    ));
}
