use super::*;

const LINE: &str = "name: line\nswitches:\n  - {name: s1, layer: 0, hosts: 1}\n  - {name: s2, layer: 0, hosts: 1}\n  - {name: t, layer: 1}\nlinks:\n  - [s1, t]\n  - [t, s2]\n";

#[test]
fn parses_a_small_fabric() {
    let t = parse("line.yaml", LINE).unwrap();
    assert_eq!(t.switches.len(), 3);
    assert_eq!(t.hosts.len(), 2);
    assert_eq!(t.links.len(), 4);
    assert_eq!(t.monitors().count(), 3);
}

#[test]
fn unknown_switch_names_the_file_and_link() {
    let bad = LINE.replace("[t, s2]", "[t, s3]");
    let e = parse("line.yaml", &bad).unwrap_err().to_string();
    assert!(e.starts_with("line.yaml: links[1]:"), "{e}");
    assert!(e.contains("unknown switch `s3`"), "{e}");
}

#[test]
fn bad_field_type_names_the_field_and_line() {
    let bad = LINE.replace("{name: t, layer: 1}", "{name: t, layer: top}");
    let e = parse("line.yaml", &bad).unwrap_err().to_string();
    assert!(e.contains("line.yaml: switches[2].layer"), "{e}");
    assert!(e.contains("line 5"), "{e}");
}

#[test]
fn unknown_field_is_rejected() {
    let bad = LINE.replace("layer: 1}", "layer: 1, colour: red}");
    let e = parse("line.yaml", &bad).unwrap_err().to_string();
    assert!(e.contains("unknown field `colour`"), "{e}");
}

/// Two leaves under one spine, hosts of the first leaf given as `hosts`.
fn two_leaves(hosts_a: &str, hosts_b: &str) -> String {
    format!(
        "name: two\nswitches:\n  - {{name: a, layer: 0, hosts: {hosts_a}}}\n  \
         - {{name: b, layer: 0, hosts: {hosts_b}}}\n  - {{name: t, layer: 1}}\n\
         links:\n  - [a, t]\n  - [b, t]\n"
    )
}

#[test]
fn a_rack_holds_253_assigned_addresses_and_no_more() {
    let t = parse("big.yaml", &two_leaves("253", "1")).unwrap();
    let last = t.hosts[252].addr;
    assert_eq!(crate::topo::ipv4(last).to_string(), "10.0.0.254");
    // The 254th host would get 10.0.0.255 (broadcast), the 255th wrap to 10.0.0.0.
    let e = parse("big.yaml", &two_leaves("300", "1"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("big.yaml: switches[0].hosts:"), "{e}");
    assert!(e.contains("switch `a`") && e.contains("300 hosts"), "{e}");
    assert!(e.contains("253"), "{e}");
}

#[test]
fn hosts_with_their_own_addresses_are_not_limited_by_the_plan() {
    let many: Vec<String> = (0..300)
        .map(|i| format!("{{name: h{i}, addr: 10.1.{}.{}}}", i / 200, i % 200 + 1))
        .collect();
    let t = parse(
        "own.yaml",
        &two_leaves(&format!("[{}]", many.join(", ")), "1"),
    )
    .unwrap();
    assert_eq!(t.hosts.len(), 301);
    // A host without `addr` past the plan's 253 is named with its position.
    let mut mixed = many.clone();
    mixed[260] = "h260".into();
    let e = parse(
        "own.yaml",
        &two_leaves(&format!("[{}]", mixed.join(", ")), "1"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("switches[0].hosts[260]") && e.contains("`h260`"),
        "{e}"
    );
}

#[test]
fn a_huge_host_count_is_an_error_not_an_allocation() {
    let e = parse("huge.yaml", &two_leaves("4000000000", "1"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("4000000000 hosts"), "{e}");
}

#[test]
fn duplicate_host_names_are_rejected_naming_both_entries() {
    let e = parse("dup.yaml", &two_leaves("[x, y]", "[z, y]"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("dup.yaml: switches[1].hosts[1]:"), "{e}");
    assert!(
        e.contains("`y`") && e.contains("switches[0].hosts[1]"),
        "{e}"
    );
    // A counted host's generated name can collide with a listed one too.
    let e = parse("dup.yaml", &two_leaves("2", "[a_h1]"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("switches[1].hosts[0]") && e.contains("switches[0].hosts[1]"),
        "{e}"
    );
}

#[test]
fn duplicate_host_addresses_are_rejected_naming_both_entries() {
    // b's first host would be 10.0.1.2; give a's host that address by hand.
    let e = parse("dup.yaml", &two_leaves("[{name: x, addr: 10.0.1.2}]", "1"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("dup.yaml: switches[1].hosts[0]:"), "{e}");
    assert!(
        e.contains("10.0.1.2") && e.contains("`x`") && e.contains("switches[0].hosts[0]"),
        "{e}"
    );
    let e = parse(
        "dup6.yaml",
        &two_leaves(
            "[{name: x, addr: 10.9.0.1, addr6: \"fd00::1\"}]",
            "[{name: y, addr: 10.9.0.2, addr6: \"fd00::1\"}]",
        ),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("fd00::1") && e.contains("`x`") && e.contains("`y`"),
        "{e}"
    );
}

#[test]
fn fat_tree_round_trips_through_yaml() {
    let t = crate::topo::fattree::fattree(4, MonitorPlacement::TopAndBottom).unwrap();
    let text = to_yaml(&t, MonitorPlacement::TopAndBottom);
    let back = parse("k4.yaml", &text).unwrap();
    assert_eq!(back.switches, t.switches);
    assert_eq!(back.hosts, t.hosts);
    assert_eq!(back.links.len(), t.links.len());
}
