//! What one worker of each cluster stage sustains (`canary worker`, docs/design.md, "Past one
//! machine"): per k, the bytes a switch puts on the network per epoch and one thread's time per
//! switch (harvest), per record (join) and per segment (localizer), on a synthesized epoch at
//! the program's meter sizes (`canary_lab::cluster_rates`).
//!
//! Run: `cargo bench -p canary --bench cluster_stages` (optionally `-- K ...` for the radixes).

use canary_lab::cluster_rates::measure;

fn main() {
    let ks: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ks = if ks.is_empty() { vec![8, 16, 32] } else { ks };
    println!(
        "| k | switches | monitors | segments | round | image MB held (all) | records MB held | \
         registers B/switch | records B/switch | decode µs/switch | records | join µs/record | \
         segments localized | localize µs/segment | observation B/segment |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for k in ks {
        let r = measure(k, 1).expect("measured");
        println!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.2} | {:.0} | {:.0} | {:.1} | {} | {:.3} | {} | {:.2} | \
             {:.1} |",
            r.k,
            r.switches,
            r.monitors,
            r.segments,
            r.watched,
            r.image_mem_bytes_per_switch * r.monitors as f64 / 1e6,
            r.record_mem_bytes_per_switch * r.monitors as f64 / 1e6,
            r.register_bytes_per_switch,
            r.record_bytes_per_switch,
            r.decode_us_per_switch,
            r.records,
            r.join_us_per_record,
            r.localized_segments,
            r.localize_us_per_segment,
            r.observation_bytes_per_segment,
        );
    }
}
