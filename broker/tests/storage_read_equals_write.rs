//! A record read back by its offset has exactly the bytes that were written.

mod storage_support;

use booblik_protocol::AckPolicy;
use storage_support::{MODES, config, open, partition, payload, read_record, records};

#[tokio::test]
async fn five_hundred_records_of_varied_sizes_read_back_byte_for_byte_in_each_write_mode() {
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        // Small segments and a small index interval: reads cross segments and index entries.
        let mut config = config(dir.path(), mode, 64 * 1024);
        config.index_interval_bytes = 512;
        let storage = open(&config).unwrap();
        let partition = partition(&storage);
        let written: Vec<Vec<u8>> = (0..500u64)
            .map(|n| payload(n, 1 + (n as usize * 37) % 700))
            .collect();
        for chunk in written.chunks(7) {
            partition
                .append(records(chunk), AckPolicy::Written)
                .await
                .unwrap();
        }
        assert!(
            partition.stats().segments > 1,
            "{mode:?}: expected several segments"
        );
        // Read in a scrambled order so no read benefits from the previous one.
        for k in 0..500u64 {
            let offset = (k * 263) % 500;
            assert_eq!(
                read_record(&partition, offset as i64),
                written[offset as usize],
                "{mode:?}: record {offset}"
            );
        }
        storage.close().unwrap();
    }
}

#[tokio::test]
async fn a_slice_hands_over_the_framed_bytes_exactly_as_on_disk() {
    use std::os::unix::fs::FileExt;
    for mode in MODES {
        let dir = tempfile::tempdir().unwrap();
        let storage = open(&config(dir.path(), mode, 64 * 1024)).unwrap();
        let partition = partition(&storage);
        let written: Vec<Vec<u8>> = (0..5u64).map(|n| payload(n, 10 + n as usize)).collect();
        partition
            .append(records(&written), AckPolicy::Written)
            .await
            .unwrap();
        let mut framed = Vec::new();
        for payload in &written[2..] {
            booblik_protocol::encode_record(payload, &mut framed);
        }
        // What the server sends with sendfile: `len` bytes of `file` from `position`.
        let slice = partition.read(2, u32::MAX).unwrap();
        assert_eq!(slice.len() as usize, framed.len(), "{mode:?}");
        let mut sent = vec![0u8; slice.len() as usize];
        slice
            .file()
            .read_exact_at(&mut sent, slice.position())
            .unwrap();
        assert_eq!(sent, framed, "{mode:?}");
        assert_eq!(&slice.to_bytes().unwrap()[..], &framed[..], "{mode:?}");
        // The heap FETCH path reuses a buffer that an earlier, larger FETCH left longer (and full
        // of other bytes): it must hand over exactly the slice, nothing of the old contents.
        let mut reused = vec![0xAB; framed.len() * 3];
        assert_eq!(
            slice.read_into(&mut reused).unwrap(),
            &framed[..],
            "{mode:?}"
        );
        let mut empty = Vec::new();
        assert_eq!(
            slice.read_into(&mut empty).unwrap(),
            &framed[..],
            "{mode:?}"
        );
        storage.close().unwrap();
    }
}
