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

/// The run's counts on the testbed, where a fault on half the flows of edge1_0→agg1_1 (link
/// 18) caught only two flows, both through agg1_1→core2 (link 28): segment 13 lost 16 of 313.
/// The faulty link's other segments carried 247 clean packets, its neighbour's 99. By packets
/// link 28 is the likelier home (about 150 to 1) and the run's verdict blamed it, while every
/// epoch, weighing the flows, left the loss undecided. By flows the two links are alike (2
/// lossy of 10 flows against 2 of 9): nothing is blamed. The flows are epoch 8's window; the
/// packets the window did not hold are one more clean flow of each segment.
#[test]
fn the_runs_verdict_weighs_the_flows_as_each_epoch_does() {
    let flows = |v: &[(u32, u32)]| -> Vec<crate::detect::FlowCount> {
        v.iter()
            .map(|&(sent, lost)| crate::detect::FlowCount { sent, lost })
            .collect()
    };
    let run = |with_flows: bool| {
        let mut segments = vec![
            seg(12, [18, 23], 43, 0, true),
            seg(13, [18, 28], 313, 16, false),
            seg(14, [18, 30], 204, 0, true),
            seg(19, [22, 28], 99, 0, true),
            seg(20, [22, 30], 403, 0, true),
            seg(68, [29, 19], 182, 0, true),
            seg(69, [29, 23], 351, 0, true),
            seg(76, [31, 19], 147, 0, true),
            seg(77, [31, 23], 325, 0, true),
        ];
        if with_flows {
            let per_segment: [&[(u32, u32)]; 9] = [
                &[(36, 0), (7, 0)],
                &[
                    (20, 0),
                    (47, 0),
                    (20, 0),
                    (41, 8),
                    (47, 8),
                    (103, 0),
                    (35, 0),
                ],
                &[(91, 0), (46, 0), (51, 0), (16, 0)],
                &[(10, 0), (50, 0), (13, 0), (26, 0)],
                &[
                    (66, 0),
                    (73, 0),
                    (6, 0),
                    (86, 0),
                    (54, 0),
                    (37, 0),
                    (22, 0),
                    (59, 0),
                ],
                &[(38, 0), (18, 0), (85, 0), (41, 0)],
                &[(59, 0), (37, 0), (66, 0), (84, 0), (76, 0), (29, 0)],
                &[(77, 0), (56, 0), (14, 0)],
                &[(29, 0), (71, 0), (85, 0), (24, 0), (40, 0), (76, 0)],
            ];
            for (s, f) in segments.iter_mut().zip(per_segment) {
                s.flows = flows(f);
                let sent: u32 = s.flows.iter().map(|f| f.sent).sum();
                assert_eq!(u64::from(sent), s.sent, "segment {}", s.segment);
            }
        }
        let canary = Canary::default();
        let v = canary.verdict(canary.diagnose(&Observations { segments }));
        let blamed: Vec<u32> = v.blamed.iter().map(|b| b.link).collect();
        (blamed, v.undecided)
    };
    assert_eq!(run(false).0, vec![28], "by packets, the neighbour");
    assert_eq!(run(true), (vec![], vec![vec![18, 28]]));
}
