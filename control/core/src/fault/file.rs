//! The fault file: YAML, every field checked, every error naming the file and the field.

use super::{Fault, Flap, When};
use crate::topo::{LinkIx, SwitchIx, Topology};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFile {
    faults: Vec<FaultEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultEntry {
    link: Option<[String; 2]>,
    device: Option<String>,
    /// A device's ports, each named by the neighbour it leads to; default all.
    ports: Option<Vec<String>>,
    loss: Option<f64>,
    #[serde(default)]
    both_directions: bool,
    from_epoch: Option<u64>,
    until_epoch: Option<u64>,
    period: Option<u64>,
    duty: Option<f64>,
    flows: Option<f64>,
    #[serde(default)]
    corruption: bool,
    /// The link is taken out of service (both directions), not faulty.
    #[serde(default)]
    out_of_service: bool,
}

/// A fault file that could not be used; the message names the file and the entry or line.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}: {field}: {msg}")]
pub struct FaultFileError {
    pub file: String,
    pub field: String,
    pub msg: String,
}

/// Parses a fault file's text against a topology; `file` names it in errors.
pub fn parse(file: &str, text: &str, topo: &Topology) -> Result<Vec<Fault>, FaultFileError> {
    let err = |field: String, msg: String| FaultFileError {
        file: file.to_string(),
        field,
        msg,
    };
    let de = serde_norway::Deserializer::from_str(text);
    let parsed: FaultFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        err(
            if path == "." { "document".into() } else { path },
            crate::yaml_error::message(&e.into_inner().to_string()).to_string(),
        )
    })?;
    let mut out: Vec<Fault> = Vec::new();
    for (i, f) in parsed.faults.iter().enumerate() {
        let at = |field: &str| format!("faults[{i}].{field}");
        let (links, device) = targets(topo, f).map_err(|(field, msg)| err(at(&field), msg))?;
        if f.out_of_service {
            let both =
                out_of_service(topo, f, &links).map_err(|(field, msg)| err(at(field), msg))?;
            let when = when(f).map_err(|(field, msg)| err(at(field), msg))?;
            out.extend(both.into_iter().map(|link| Fault {
                link,
                loss: 0.0,
                when,
                flows: 1.0,
                device: None,
                corruption: false,
                out_of_service: true,
            }));
            continue;
        }
        let Some(loss) = f.loss else {
            return Err(err(
                at("loss"),
                "missing: a fault's per-packet loss in [0, 1] (or `out_of_service: true`)".into(),
            ));
        };
        if !(0.0..=1.0).contains(&loss) || loss.is_nan() {
            return Err(err(
                at("loss"),
                format!("{loss} is not a probability in [0, 1]"),
            ));
        }
        let when = when(f).map_err(|(field, msg)| err(at(field), msg))?;
        let flows = f.flows.unwrap_or(1.0);
        if !(flows > 0.0 && flows <= 1.0) {
            return Err(err(
                at("flows"),
                format!("{flows} is not a share of flows in (0, 1]"),
            ));
        }
        for link in links {
            if out
                .iter()
                .any(|x| !x.out_of_service && x.link == link && overlap(&x.when, &when))
            {
                let [a, b] = topo.link_names(link);
                return Err(err(
                    format!("faults[{i}]"),
                    format!("link [{a}, {b}] is given twice for the same epochs"),
                ));
            }
            out.push(Fault {
                link,
                loss,
                when,
                flows,
                device,
                corruption: f.corruption,
                out_of_service: false,
            });
        }
    }
    Ok(out)
}

/// The directed links an entry drops on, and its device; or the field at fault and why.
fn targets(
    topo: &Topology,
    f: &FaultEntry,
) -> Result<(Vec<LinkIx>, Option<SwitchIx>), (String, String)> {
    let fail = |field: &str, msg: String| Err((field.to_string(), msg));
    match (&f.link, &f.device) {
        (Some([a, b]), None) => {
            if f.ports.is_some() {
                return fail("ports", "only a `device` has ports".into());
            }
            let Some(link) = topo.link_by_names(a, b) else {
                let which = if topo.switch(a).is_none() {
                    format!("unknown switch `{a}`")
                } else if topo.switch(b).is_none() {
                    format!("unknown switch `{b}`")
                } else {
                    format!("no link between `{a}` and `{b}`")
                };
                return fail("link", which);
            };
            let mut links = vec![link];
            if f.both_directions {
                links.push(topo.reverse(link));
            }
            Ok((links, None))
        }
        (None, Some(name)) => {
            let Some(sw) = topo.switch(name) else {
                return fail("device", format!("unknown switch `{name}`"));
            };
            if f.both_directions {
                return fail(
                    "both_directions",
                    "a device drops on its own links out; name links to fault both ways".into(),
                );
            }
            let neighbors = topo.neighbors(sw);
            let towards: Vec<SwitchIx> = match &f.ports {
                None => neighbors.to_vec(),
                Some(ports) if ports.is_empty() => {
                    return fail("ports", "an empty list: leave it out for every port".into())
                }
                Some(ports) => {
                    let mut v = Vec::new();
                    for (j, p) in ports.iter().enumerate() {
                        let field = format!("ports[{j}]");
                        match topo.switch(p) {
                            Some(n) if neighbors.contains(&n) => {
                                if v.contains(&n) {
                                    return fail(&field, format!("`{p}` is given twice"));
                                }
                                v.push(n)
                            }
                            Some(_) => {
                                return fail(&field, format!("`{name}` has no port to `{p}`"))
                            }
                            None => return fail(&field, format!("unknown switch `{p}`")),
                        }
                    }
                    v
                }
            };
            if towards.is_empty() {
                return fail("device", format!("`{name}` has no links to other switches"));
            }
            let links = towards
                .iter()
                .map(|&n| topo.link(sw, n).expect("a neighbour has a link"))
                .collect();
            Ok((links, Some(sw)))
        }
        (Some(_), Some(_)) => fail("device", "give either `link` or `device`, not both".into()),
        (None, None) => Err((
            "link".to_string(),
            "missing: give `link: [FROM, TO]` or `device: NAME`".into(),
        )),
    }
}

/// An out-of-service entry's directed links (the physical link, both ways), or the field that
/// does not belong in one.
fn out_of_service(
    topo: &Topology,
    f: &FaultEntry,
    links: &[LinkIx],
) -> Result<Vec<LinkIx>, (&'static str, String)> {
    let not = |field: &'static str| {
        Err((
            field,
            "an out-of-service link drops nothing: leave it out".to_string(),
        ))
    };
    if f.device.is_some() {
        return Err((
            "device",
            "take links out of service one by one (`link: [FROM, TO]`)".into(),
        ));
    }
    if f.loss.is_some() {
        return not("loss");
    }
    if f.flows.is_some() {
        return not("flows");
    }
    if f.corruption {
        return not("corruption");
    }
    if f.period.is_some() || f.duty.is_some() {
        return Err((
            "period",
            "a link goes out of service once: give from_epoch and until_epoch".into(),
        ));
    }
    let mut both = links.to_vec();
    for &l in links {
        both.push(topo.reverse(l));
    }
    both.sort_unstable();
    both.dedup();
    Ok(both)
}

fn when(f: &FaultEntry) -> Result<When, (&'static str, String)> {
    let from = f.from_epoch.unwrap_or(0);
    if let Some(u) = f.until_epoch {
        if u <= from {
            return Err((
                "until_epoch",
                format!("{u} is not after from_epoch {from}: the fault would never drop"),
            ));
        }
    }
    let flap = match (f.period, f.duty) {
        (None, None) => None,
        (Some(_), None) => return Err(("duty", "missing: a flapping fault needs `duty`".into())),
        (None, Some(_)) => {
            return Err(("period", "missing: a flapping fault needs `period`".into()))
        }
        (Some(0), _) => return Err(("period", "0 epochs: give at least 1".into())),
        (Some(period), Some(duty)) => {
            if !(duty > 0.0 && duty <= 1.0) {
                return Err((
                    "duty",
                    format!("{duty} is not a share of the period in (0, 1]"),
                ));
            }
            let on = (duty * period as f64).round() as u64;
            if on == 0 {
                return Err((
                    "duty",
                    format!("{duty} of {period} epochs rounds to no lossy epoch"),
                ));
            }
            Some(Flap { period, on })
        }
    };
    Ok(When {
        from,
        until: f.until_epoch,
        flap,
    })
}

/// Whether two schedules' ranges of epochs overlap (flaps aside: one link, one fault at a time).
fn overlap(a: &When, b: &When) -> bool {
    let end = |w: &When| w.until.unwrap_or(u64::MAX);
    a.from < end(b) && b.from < end(a)
}
