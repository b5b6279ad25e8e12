use super::*;

#[test]
fn sweep_specs_parse_and_apply() {
    let (a, v) = parse_sweep("probes=10, 50,100").unwrap();
    assert_eq!((a, v), (Axis::Probes, vec![10.0, 50.0, 100.0]));
    assert!(parse_sweep("probez=1").is_err());
    assert!(parse_sweep("loss=").is_err());
    assert!(parse_sweep("loss=x").is_err());
    let mut o = EvalOptions::default();
    o.sim.faults = "links:4@0.001..0.01".into();
    Axis::Loss.apply(0.05, &mut o).unwrap();
    assert_eq!(o.sim.faults, "links:4@0.05");
    Axis::Faults.apply(7.0, &mut o).unwrap();
    assert_eq!(o.sim.faults, "links:7@0.05");
    Axis::K.apply(16.0, &mut o).unwrap();
    assert_eq!(o.sim.topology, "fattree:16");
    assert!(Axis::Probes.apply(2.5, &mut o).is_err());
    o.sim.faults = "random:10%".into();
    assert!(Axis::Faults.apply(3.0, &mut o).is_err());
    Axis::Loss.apply(0.01, &mut o).unwrap();
    assert_eq!(o.sim.faults, "random:10%@0.01");
    o.sim.faults = "none".into();
    assert!(Axis::Loss.apply(0.01, &mut o).is_err());
}
