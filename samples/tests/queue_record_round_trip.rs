//! Every task and claims record decodes to exactly what was encoded.

use booblik_samples::queue::record::{
    Claim, ClaimsRecord, Done, Extend, FORMAT_VERSION, Heartbeat, Release, Task,
};
use proptest::prelude::*;
use uuid::Uuid;

const MAX_BLOB_BYTES: usize = 256;

fn uuid() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(Uuid::from_u128)
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..MAX_BLOB_BYTES)
}

fn task() -> impl Strategy<Value = Task> {
    (uuid(), blob(), any::<u64>()).prop_map(|(task_id, payload, submitted_at_ms)| Task {
        task_id,
        payload,
        submitted_at_ms,
    })
}

fn claims_record() -> impl Strategy<Value = ClaimsRecord> {
    prop_oneof![
        (uuid(), uuid(), any::<u64>(), any::<u64>()).prop_map(
            |(task_id, worker_id, claimed_at_ms, lease_ms)| Claim {
                task_id,
                worker_id,
                claimed_at_ms,
                lease_ms,
            }
            .into()
        ),
        (uuid(), uuid(), any::<i64>(), any::<u64>(), any::<u64>()).prop_map(
            |(task_id, worker_id, token, extended_at_ms, lease_ms)| Extend {
                task_id,
                worker_id,
                token,
                extended_at_ms,
                lease_ms,
            }
            .into()
        ),
        (uuid(), uuid(), any::<i64>(), any::<u64>(), blob()).prop_map(
            |(task_id, worker_id, token, done_at_ms, result)| Done {
                task_id,
                worker_id,
                token,
                done_at_ms,
                result,
            }
            .into()
        ),
        (uuid(), uuid(), any::<i64>(), any::<u64>()).prop_map(
            |(task_id, worker_id, token, released_at_ms)| Release {
                task_id,
                worker_id,
                token,
                released_at_ms,
            }
            .into()
        ),
        (uuid(), any::<u64>(), any::<u64>()).prop_map(|(worker_id, at_ms, lease_ms)| {
            Heartbeat {
                worker_id,
                at_ms,
                lease_ms,
            }
            .into()
        }),
    ]
}

proptest! {
    #[test]
    fn a_task_decodes_to_what_was_encoded(task in task()) {
        let bytes = task.encode();
        prop_assert_eq!(bytes[0], FORMAT_VERSION);
        prop_assert_eq!(Task::decode(&bytes).expect("a fresh encoding decodes"), task);
    }

    #[test]
    fn a_claims_record_decodes_to_what_was_encoded(record in claims_record()) {
        let bytes = record.encode();
        prop_assert_eq!(bytes[0], FORMAT_VERSION);
        prop_assert_eq!(ClaimsRecord::decode(&bytes).expect("a fresh encoding decodes"), record);
    }

    #[test]
    fn encode_into_appends_the_same_bytes_after_what_is_in_the_buffer(
        record in claims_record(),
        prefix in blob(),
    ) {
        let mut buf = prefix.clone();
        record.encode_into(&mut buf);
        prop_assert_eq!(&buf[..prefix.len()], &prefix[..]);
        prop_assert_eq!(&buf[prefix.len()..], &record.encode()[..]);
    }
}
