//! Rule tables: a full table refuses a new rule.

use super::*;

#[test]
fn a_full_table_refuses_a_new_rule_but_not_a_repeated_one() {
    let mut cap = Capacity::of_program();
    cap.usm_rules = 2;
    let mut m = SwitchModel::new(cap);
    let ins = |m: &mut SwitchModel, sport| {
        m.apply(&RuleOp::InstallUsm {
            switch: 0,
            flow: udp(sport),
        })
    };
    ins(&mut m, 1).unwrap();
    ins(&mut m, 2).unwrap();
    ins(&mut m, 2).unwrap();
    assert_eq!(
        ins(&mut m, 3),
        Err(RuleError::Full {
            table: "usm_table",
            size: 2
        })
    );
    m.apply(&RuleOp::RemoveUsm {
        switch: 0,
        flow: udp(1),
    })
    .unwrap();
    ins(&mut m, 3).unwrap();
    assert_eq!(m.rule_counts(), (2, 0, 0));
}
