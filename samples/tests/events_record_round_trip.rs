//! Every `UserEvent` decodes back to itself, and no byte string — truncated events, random bytes
//! — makes decoding panic: it is an event or a typed error.

use booblik_samples::events::event::{DecodeError, EventKind, UserEvent};
use proptest::prelude::*;
use uuid::Uuid;

fn kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        Just(EventKind::SignedUp),
        Just(EventKind::LoggedIn),
        Just(EventKind::ViewedPage),
        Just(EventKind::AddedToCart),
        Just(EventKind::Purchased),
        Just(EventKind::LoggedOut),
    ]
}

fn event() -> impl Strategy<Value = UserEvent> {
    (any::<u128>(), ".{0,40}", any::<u64>(), kind(), any::<u64>()).prop_map(
        |(id, user_id, seq, kind, at_ms)| UserEvent {
            publisher_id: Uuid::from_u128(id),
            user_id,
            seq,
            kind,
            at_ms,
        },
    )
}

proptest! {
    #[test]
    fn every_event_decodes_back_to_itself(event in event()) {
        prop_assert_eq!(UserEvent::decode(&event.encode()).unwrap(), event);
    }

    #[test]
    fn a_truncated_event_is_an_error(event in event(), cut in any::<prop::sample::Index>()) {
        let bytes = event.encode();
        let cut = cut.index(bytes.len());
        let decoded = UserEvent::decode(&bytes[..cut]);
        prop_assert!(decoded.is_err(), "{} of {} bytes decoded", cut, bytes.len());
        if cut == 0 {
            prop_assert!(matches!(decoded, Err(DecodeError::Empty)));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = UserEvent::decode(&bytes);
    }
}
