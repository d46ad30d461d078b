//! A count or length read from the wire never sizes an allocation before it is checked against
//! the bytes actually present.
//!
//! A 15-byte METADATA request claiming 2^31 - 1 topics must be refused, not answered with a
//! 50 GiB `Vec::with_capacity` that aborts the broker. "It returned an error" is not enough
//! evidence (the allocation could happen first and fail later, or succeed on a big machine), so
//! this test binary installs an allocator that records the largest single request it sees.

// A global allocator must implement the unsafe `GlobalAlloc` trait; this one only forwards to
// the system allocator and records sizes.
#![allow(unsafe_code)]

#[path = "common/hex_frames.rs"]
mod hex_frames;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use booblik_protocol::{
    Decoded, FetchResponse, MetadataResponse, WireMessage, decode_request_frame,
};
use hex_frames::{hex_bytes, whole_frame};

/// Largest allocation a decode of these few-byte inputs may make. Far above anything a
/// legitimate decode of them needs, far below what any hostile count would ask for.
const MAX_ALLOCATION_BYTES: usize = 64 * 1024;

/// The system allocator, recording the largest size requested since the last reset.
struct LargestAllocation;

static LARGEST_BYTES: AtomicUsize = AtomicUsize::new(0);

fn record(size: usize) {
    LARGEST_BYTES.fetch_max(size, Ordering::Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; recording a size has no effect on the memory returned.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: the caller's obligations for `alloc` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

/// Decodes a response body and says whether it was refused.
type RefusesBody = fn(&[u8]) -> bool;

/// The largest allocation made while running `f`.
fn largest_allocation_during(f: impl FnOnce()) -> usize {
    LARGEST_BYTES.store(0, Ordering::Relaxed);
    f();
    LARGEST_BYTES.load(Ordering::Relaxed)
}

// One test function on purpose: the allocator is global, and a second test running on another
// thread would show up in the measurement.
#[test]
fn hostile_counts_and_lengths_allocate_nothing_large() {
    // The instrument works: a 1 MiB buffer is seen.
    let seen = largest_allocation_during(|| {
        black_box(Vec::<u8>::with_capacity(1024 * 1024));
    });
    assert!(
        seen >= 1024 * 1024,
        "the counting allocator saw only {seen} bytes"
    );

    let hostile_requests = [
        // METADATA claiming 2^31 - 1 topic names.
        "0000000c | 0003 0001 0000002a | 7fffffff",
        // METADATA claiming 2^31 - 1 names, with a few bytes present.
        "00000012 | 0003 0001 0000002a | 7fffffff | 0001 61 | 0001 62",
        // PRODUCE claiming 2^31 - 1 records, with one present.
        "00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 7fffffff | 00000001 61",
        // PRODUCE with one record claiming a 2 GiB payload.
        "00000019 | 0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 7fffffff 61",
    ];
    for literal in hostile_requests {
        let frame = whole_frame(literal);
        let mut refused = false;
        let largest = largest_allocation_during(|| {
            refused = matches!(
                decode_request_frame(&frame),
                Ok(Decoded::Complete { value: Err(_), .. })
            );
        });
        assert!(refused, "{literal} must be refused");
        assert!(
            largest <= MAX_ALLOCATION_BYTES,
            "{literal}: allocated {largest} bytes"
        );
    }

    // A frame prefix announcing the maximum length, with no body yet: nothing is reserved.
    let prefix = hex_bytes("00800000");
    let largest = largest_allocation_during(|| {
        assert!(matches!(
            decode_request_frame(&prefix),
            Ok(Decoded::Incomplete { .. })
        ));
    });
    assert!(largest <= MAX_ALLOCATION_BYTES, "allocated {largest} bytes");

    let hostile_response_bodies: [(&str, RefusesBody); 3] = [
        // METADATA response claiming 2^31 - 1 topics.
        ("7fffffff", |b| MetadataResponse::decode(b).is_err()),
        // One topic "a" claiming 2^31 - 1 partitions.
        ("00000001 | 0001 61 | 7fffffff", |b| {
            MetadataResponse::decode(b).is_err()
        }),
        // FETCH response claiming a 2 GiB payload, with 1 byte present.
        ("0000000000000000 | 7fffffff | 00", |b| {
            FetchResponse::decode(b).is_err()
        }),
    ];
    for (literal, refuses) in hostile_response_bodies {
        let body = hex_bytes(literal);
        let mut refused = false;
        let largest = largest_allocation_during(|| refused = refuses(&body));
        assert!(refused, "{literal} must be refused");
        assert!(
            largest <= MAX_ALLOCATION_BYTES,
            "{literal}: allocated {largest} bytes"
        );
    }
}
