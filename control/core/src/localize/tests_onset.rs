//! Epochs at a fault's onset on the k = 4 testbed, replayed from the runs' observations
//! (`canary run --report-observations`): where the counts cannot yet tell the faulty link from
//! its neighbour, nothing may be blamed.

use super::segments::Canary;
use crate::detect::{Observations, ObservedSegment};

fn seg(segment: u32, links: [u32; 2], sent: u64, lost: u64, background: bool) -> ObservedSegment {
    let declared = !background && lost * 20 > sent;
    ObservedSegment {
        segment,
        subproblem: 0,
        links: links.to_vec(),
        sent,
        lost,
        success: if declared {
            1.0 - lost as f64 / sent as f64
        } else {
            1.0
        },
        background,
        flows: Vec::new(),
    }
}

/// A 10 % fault on edge1_0→agg1_1 (link 18), epoch 4 of a loaded run. Its segment through
/// agg1_1→core3 (link 30) lost 8 of 64 and was declared; its segment through agg1_1→core2
/// lost 1 of 80, not yet declared (set aside); link 30's other segment carried 57 clean packets.
/// Weighed at the segment's own 12.5 %, 57 clean packets against 80 made link 30 the loss's home
/// 22 to 1 and it was blamed; each link weighed at its likeliest rate, it is 4 to 1, and nothing
/// is blamed yet. Had link 30 been pinned by 20 packets only, 90 to 1: it is blamed.
#[test]
fn a_neighbour_pinned_a_little_less_is_not_blamed_for_the_loss() {
    let blamed = |pin30: u64| {
        let obs = Observations {
            segments: vec![
                seg(13, [18, 28], 80, 1, false),
                seg(14, [18, 30], 64, 8, false),
                seg(20, [22, 30], pin30, 0, true),
                seg(68, [29, 19], 17, 0, true),
                seg(69, [29, 23], 132, 0, true),
                seg(76, [31, 19], 22, 0, true),
                seg(77, [31, 23], 45, 0, true),
            ],
        };
        assert!(obs.segments[0].set_aside() && obs.segments[1].success < 1.0);
        let canary = Canary::default();
        let v = canary.verdict(canary.diagnose(&obs));
        v.blamed.iter().map(|b| b.link).collect::<Vec<u32>>()
    };
    assert_eq!(blamed(57), Vec::<u32>::new());
    assert_eq!(blamed(20), vec![30]);
}
