//! Format version 1 is pinned byte for byte: records already in a log must stay readable, so an
//! accidental change to the layout (a reordered field or enum variant) has to fail here.
//!
//! Layout: `[version = 1][postcard body]`; postcard writes a UUID as a 16-byte byte string
//! (length varint 0x10, then the bytes), unsigned integers as LEB128 varints, signed integers as
//! zigzag varints, byte vectors as length varint + bytes, and an enum variant index as a varint.

use booblik_samples::queue::record::{Claim, ClaimsRecord, Done, Extend, Heartbeat, Release, Task};
use uuid::Uuid;

const TASK_ID: u128 = 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10;
const WORKER_ID: u128 = 0x1112_1314_1516_1718_191A_1B1C_1D1E_1F20;

fn uuid_bytes(id: u128) -> Vec<u8> {
    let mut bytes = vec![0x10];
    bytes.extend_from_slice(&id.to_be_bytes());
    bytes
}

fn expected(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn a_task_record_has_the_version_1_layout() {
    let task = Task {
        task_id: Uuid::from_u128(TASK_ID),
        payload: vec![0xAB, 0xCD],
        submitted_at_ms: 300,
    };
    let bytes = expected(&[
        &[0x01],
        &uuid_bytes(TASK_ID),
        &[0x02, 0xAB, 0xCD], // payload: length 2, bytes
        &[0xAC, 0x02],       // 300 as a varint
    ]);
    assert_eq!(task.encode(), bytes);
    assert_eq!(Task::decode(&bytes).expect("pinned bytes decode"), task);
}

#[test]
fn claims_records_have_the_version_1_layout() {
    let claim = ClaimsRecord::Claim(Claim {
        task_id: Uuid::from_u128(TASK_ID),
        worker_id: Uuid::from_u128(WORKER_ID),
        claimed_at_ms: 1,
        lease_ms: 128,
    });
    let claim_bytes = expected(&[
        &[0x01, 0x00], // version, variant 0 = Claim
        &uuid_bytes(TASK_ID),
        &uuid_bytes(WORKER_ID),
        &[0x01],       // claimed_at_ms
        &[0x80, 0x01], // lease_ms = 128
    ]);
    let extend = ClaimsRecord::Extend(Extend {
        task_id: Uuid::from_u128(TASK_ID),
        worker_id: Uuid::from_u128(WORKER_ID),
        token: 3,
        extended_at_ms: 2,
        lease_ms: 4,
    });
    let extend_bytes = expected(&[
        &[0x01, 0x01], // version, variant 1 = Extend
        &uuid_bytes(TASK_ID),
        &uuid_bytes(WORKER_ID),
        &[0x06], // token 3, zigzag
        &[0x02], // extended_at_ms
        &[0x04], // lease_ms
    ]);
    let done = ClaimsRecord::Done(Done {
        task_id: Uuid::from_u128(TASK_ID),
        worker_id: Uuid::from_u128(WORKER_ID),
        token: -1,
        done_at_ms: 5,
        result: vec![0xEE],
    });
    let done_bytes = expected(&[
        &[0x01, 0x02], // version, variant 2 = Done
        &uuid_bytes(TASK_ID),
        &uuid_bytes(WORKER_ID),
        &[0x01],       // token -1, zigzag
        &[0x05],       // done_at_ms
        &[0x01, 0xEE], // result: length 1, byte
    ]);
    // Variant 3, written from protocol level 2 on: appended after the others, so the bytes
    // of the first three kinds are unchanged.
    let release = ClaimsRecord::Release(Release {
        task_id: Uuid::from_u128(TASK_ID),
        worker_id: Uuid::from_u128(WORKER_ID),
        token: 64,
        released_at_ms: 6,
    });
    let release_bytes = expected(&[
        &[0x01, 0x03], // version, variant 3 = Release
        &uuid_bytes(TASK_ID),
        &uuid_bytes(WORKER_ID),
        &[0x80, 0x01], // token 64, zigzag = 128
        &[0x06],       // released_at_ms
    ]);
    // Variant 4, also from protocol level 2 on: about no task, so no task id.
    let heartbeat = ClaimsRecord::Heartbeat(Heartbeat {
        worker_id: Uuid::from_u128(WORKER_ID),
        at_ms: 7,
        lease_ms: 300,
    });
    let heartbeat_bytes = expected(&[
        &[0x01, 0x04], // version, variant 4 = Heartbeat
        &uuid_bytes(WORKER_ID),
        &[0x07],       // at_ms
        &[0xAC, 0x02], // lease_ms = 300
    ]);
    for (record, bytes) in [
        (claim, claim_bytes),
        (extend, extend_bytes),
        (done, done_bytes),
        (release, release_bytes),
        (heartbeat, heartbeat_bytes),
    ] {
        assert_eq!(record.encode(), bytes, "{record:?}");
        assert_eq!(
            ClaimsRecord::decode(&bytes).expect("pinned bytes decode"),
            record
        );
    }
}
