#!/usr/bin/env python3
"""Writes the committed seed corpus: a handful of valid inputs per fuzz target.

The frames are written out from the wire layout in docs/protocol.md (the same bytes as the
literals in broker/protocol/tests/frames_match_the_spec_byte_for_byte.rs), not produced by the
crate under test. Seeds only give libFuzzer a head start into the interesting branches; it
mutates them from there. Run from the fuzz/ directory: `python3 make_seeds.py`.
"""

import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent


def hexbytes(literal: str) -> bytes:
    """Bytes of a hex literal laid out field by field (whitespace and '|' ignored)."""
    return bytes.fromhex("".join(c for c in literal if c not in " |\n"))


def framed(body: bytes) -> bytes:
    """Prefixes `body` (header included) with its int32 length."""
    return struct.pack(">i", len(body)) + body


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected 0x82F63B78), bit by bit: slow and obviously right."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def record(payload: bytes) -> bytes:
    """One record as on disk: int32 length, int32 crc32c(payload), payload."""
    return struct.pack(">iI", len(payload), crc32c(payload)) + payload


assert crc32c(b"123456789") == 0xE3069283, "CRC-32C check value"

REQUESTS = {
    "produce-v1-forced-two-records": "0001 0001 00000007 | 0006 6f7264657273 | 00000003 | 02"
    " | 00000002 | 00000002 6869 | 00000003 616263",
    "produce-v1-none-one-record": "0001 0001 00000001 | 0001 74 | 00000000 | 00"
    " | 00000001 | 00000001 61",
    "fetch-v1": "0002 0001 00000008 | 0006 6f7264657273 | 00000001 | 0000000000000102 | 00100000",
    "fetch-v2-long-poll": "0002 0002 00000009 | 0006 6f7264657273 | 00000001"
    " | 0000000000000102 | 00100000 | 000001f4 | 00000001",
    "metadata-v1-two-topics": "0003 0001 0000000a | 00000002 | 0001 61 | 0006 6f7264657273",
    "metadata-v1-all-topics": "0003 0001 0000000a | 00000000",
    "unsupported-version": "0001 0009 0000000b | 00000000",
    "empty-record-refused": "0001 0001 0000002a | 0001 74 | 00000000 | 01 | 00000001 | 00000000",
}

FETCHED = record(b"a") + record(b"hello") + bytes.fromhex("000000")
RESPONSES = {
    "produce": hexbytes("00000007 0000 | 0000000000000064 | 0000000000000066"),
    "fetch-records-and-a-partial-tail": hexbytes("00000009 0000 | 0000000000000003")
    + struct.pack(">i", len(FETCHED))
    + FETCHED,
    "fetch-caught-up": hexbytes("00000009 0000 | 0000000000000003 | 00000000"),
    "metadata": hexbytes(
        "0000000b 0000 | 00000001 | 0006 6f7264657273 | 00000002"
        " | 00000000 0000000000000000 0000000000000005"
        " | 00000001 0000000000000002 0000000000000007"
    ),
    "error-offset-out-of-range": hexbytes("0000000d 0002"),
}

RECORDS = {
    "three-records": record(b"a") + record(b"bc") + record(b"\x00\xff" * 8),
    "records-then-unwritten-zeroes": record(b"x") + record(b"yz") + bytes(32),
    "record-then-partial": record(b"first") + record(b"second")[:7],
    "negative-length": record(b"ok") + struct.pack(">i", -5) + b"\xaa" * 8,
}


def write(target: str, seeds: dict) -> None:
    directory = HERE / "corpus" / target
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        (directory / name).write_bytes(data)


write("request_frame", {n: framed(hexbytes(h)) for n, h in REQUESTS.items()})
write("response_frame", {n: framed(b) for n, b in RESPONSES.items()})
write("record_scanner", RECORDS)
