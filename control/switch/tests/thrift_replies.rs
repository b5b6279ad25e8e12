//! BMv2 Thrift replies that lie about their sizes: decoding one must fail naming the reply, and
//! never allocate by what the reply claims instead of by the bytes it holds. A global allocator
//! records the largest single request made while decoding on this thread.

use canary_switch::bmv2_thrift::{decode_reply, Call, Outcome, Reply, ThriftError};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Recording;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// Requests this large are refused while recording, so a regression fails the test instead of
/// taking the machine's memory.
const REFUSE: usize = 256 << 20;

unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if RECORDING.with(Cell::get) {
            LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
            if layout.size() >= REFUSE {
                return std::ptr::null_mut();
            }
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Recording = Recording;

/// Decodes with the allocator recording; returns the outcome (as text) and the largest request.
fn decode(call: &Call<'_>, bytes: &[u8]) -> (Result<Outcome, String>, usize) {
    LARGEST.store(0, Ordering::Relaxed);
    RECORDING.with(|r| r.set(true));
    let got = decode_reply(call, 7, bytes);
    RECORDING.with(|r| r.set(false));
    (
        got.map_err(|e| e.to_string()),
        LARGEST.load(Ordering::Relaxed),
    )
}

/// A strict-binary reply header: version and type, method name (its length as given), sequence.
fn header(name_len: i32, name: &str) -> Vec<u8> {
    let mut b = 0x8001_0002u32.to_be_bytes().to_vec();
    b.extend(name_len.to_be_bytes());
    b.extend(name.as_bytes());
    b.extend(7i32.to_be_bytes());
    b
}

/// `bm_register_read_all_result` whose list says `claimed` values and holds `values`.
fn read_all_reply(claimed: i32, values: &[i64]) -> Vec<u8> {
    let name = "bm_register_read_all";
    let mut b = header(name.len() as i32, name);
    b.extend([15, 0, 0, 10]); // field 0: list<i64>
    b.extend(claimed.to_be_bytes());
    for v in values {
        b.extend(v.to_be_bytes());
    }
    b.push(0); // stop
    b
}

const READ_ALL: Call<'static> = Call::ReadAll {
    cxt_id: 0,
    name: "MyIngress.reg",
};

#[test]
fn an_honest_reply_decodes() {
    let (got, _) = decode(&READ_ALL, &read_all_reply(3, &[1, -2, 3]));
    assert_eq!(got, Ok(Outcome::Ok(Reply::Values(vec![1, -2, 3]))));
}

#[test]
fn a_list_longer_than_its_reply_fails_without_allocating_for_it() {
    // 90 MiB of values claimed (the thrift crate refuses lists over 100 MiB itself), one sent.
    let claimed = (90 << 20) / 8;
    let (got, largest) = decode(&READ_ALL, &read_all_reply(claimed, &[5]));
    assert!(
        largest < 1 << 20,
        "decoding asked for {largest} bytes at once"
    );
    let e = got.unwrap_err();
    assert!(
        e.contains("bm_register_read_all reply lists 11796480 values but ends after 1"),
        "{e}"
    );
}

#[test]
fn a_method_name_longer_than_its_reply_fails_without_allocating_for_it() {
    // 90 MiB claimed: under the thrift crate's own 100 MiB limit for strings.
    let (got, largest) = decode(&READ_ALL, &header(90 << 20, "bm"));
    assert!(got.is_err());
    assert!(
        largest < 1 << 20,
        "decoding asked for {largest} bytes at once"
    );
}

#[test]
fn a_transport_error_shows_what_was_wrong_not_only_its_kind() {
    let e = decode_reply(&READ_ALL, 7, &read_all_reply(3, &[1])).unwrap_err();
    let e = ThriftError::Transport {
        switch: "s1".into(),
        addr: "127.0.0.1:9090".into(),
        call: READ_ALL.method(),
        register: READ_ALL.register().into(),
        source: Box::new(e.0),
    };
    assert_eq!(
        e.to_string(),
        "switch s1 (127.0.0.1:9090): bm_register_read_all MyIngress.reg: bad data: \
         bm_register_read_all reply lists 3 values but ends after 1: end of file: \
         failed to fill whole buffer"
    );
}
