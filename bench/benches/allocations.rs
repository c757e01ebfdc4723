//! Allocations per call, counted by a global allocator of this bench's own: the tester's
//! call of a one-field `echo` (the pipeline without a transport: resolve, limits, decode +
//! validate, invoke, render, the call log), first with no log subscriber (the call event
//! is skipped), then with `fusion_runtime::log::init()`'s JSON log (its lines go to
//! stderr: run with `2>/dev/null`).
//!
//! Run: `cargo bench -p fusion-bench --bench allocations 2>/dev/null`. The whole process
//! over stdio (rmcp and the transport too) allocates more; bench/README.md says how that
//! was counted.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicU64, Ordering},
};

use fusion_runtime::{prelude::*, testing::Tester};
use serde_json::json;

/// The system allocator, counting the allocations (and reallocations) made through it.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's own arguments, so `System`'s
// guarantees hold; the counters are plain atomics.
#[allow(
    unsafe_code,
    reason = "a GlobalAlloc is an unsafe trait; this one only counts"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Echo.
#[mcp_tool]
async fn echo(
    /// The text to send back.
    text: String,
) -> String {
    text
}

const CALLS: u64 = 20_000;

/// Allocations and reallocations per call, over `CALLS` calls after a warm-up.
fn per_call(runtime: &tokio::runtime::Runtime, tester: &Tester<()>) -> (f64, f64) {
    let args = json!({"text": "hi"});
    runtime.block_on(async {
        for _ in 0..1_000 {
            tester.call("echo", args.clone()).await;
        }
        let (allocations, reallocations) = (
            ALLOCATIONS.load(Ordering::Relaxed),
            REALLOCATIONS.load(Ordering::Relaxed),
        );
        for _ in 0..CALLS {
            // The arguments' clone is the caller's, not the pipeline's: counted apart.
            let args = args.clone();
            tester.call("echo", args).await;
        }
        (
            (ALLOCATIONS.load(Ordering::Relaxed) - allocations) as f64 / CALLS as f64,
            (REALLOCATIONS.load(Ordering::Relaxed) - reallocations) as f64 / CALLS as f64,
        )
    })
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("allocations: no runtime: {error}");
            return;
        }
    };
    let tester = Tester::new(Server::builder("allocations", "0").tool(echo).build());
    let clone_cost = {
        let args = json!({"text": "hi"});
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..CALLS {
            std::hint::black_box(args.clone());
        }
        (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / CALLS as f64
    };
    let (off, off_re) = per_call(&runtime, &tester);
    fusion_runtime::log::init();
    let (on, on_re) = per_call(&runtime, &tester);
    println!("allocations per call of the tester's `echo` ({CALLS} calls):");
    println!("  the caller's clone of the arguments: {clone_cost:.2}");
    println!(
        "  log off: {:.2} (+ {off_re:.2} reallocations)",
        off - clone_cost
    );
    println!(
        "  log on:  {:.2} (+ {on_re:.2} reallocations)",
        on - clone_cost
    );
    fusion_runtime::log::flush();
}
