//! The switches file: where each switch of the topology answers, and which port faces which
//! neighbor. Written by hand for a lab, or by `testbed/` for a Mininet fabric.
//!
//! ```yaml
//! switches:
//!   edge0_0:
//!     grpc: 127.0.0.1:50001     # P4Runtime
//!     device_id: 1
//!     thrift: 127.0.0.1:9091    # BMv2 only: register harvest
//!     ports: {h0_0_0: 1, h0_0_1: 2, agg0_0: 3, agg0_1: 4}
//! ```

use crate::p4rt::TlsFiles;
use canary_core::topo::{PortMap, SwitchIx, SwitchPorts, Topology};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchEndpoint {
    /// `host:port` of the P4Runtime server.
    pub grpc: String,
    pub device_id: u64,
    /// `host:port` of BMv2's Thrift server (register harvest on BMv2).
    #[serde(default)]
    pub thrift: Option<String>,
    /// Data-plane port of each neighbor, switch or host, by its topology name.
    pub ports: BTreeMap<String, u32>,
    #[serde(default)]
    pub tls: Option<TlsFiles>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwitchesFile {
    pub switches: BTreeMap<String, SwitchEndpoint>,
}

#[derive(Debug, thiserror::Error)]
pub enum SwitchesError {
    #[error("cannot read switches file {0}: {1}")]
    Read(String, std::io::Error),
    #[error("switches file {file}: {detail}")]
    Parse { file: String, detail: String },
    #[error("switches file {file}: {field}: {detail}")]
    Invalid {
        file: String,
        field: String,
        detail: String,
    },
}

/// One switch's endpoint, checked against the topology.
#[derive(Clone, Debug)]
pub struct BoundSwitch {
    pub ix: SwitchIx,
    pub name: String,
    pub endpoint: SwitchEndpoint,
    pub ports: SwitchPorts,
}

/// Switch `s`'s entry in a switches file (one line, with its newline): where it answers and the
/// port facing each host and neighbour, as `ports` has them. For tests and tools that wire a
/// fabric themselves and hand `canary run` the file.
pub fn entry_yaml(
    topo: &Topology,
    ports: &PortMap,
    s: SwitchIx,
    grpc: &str,
    device_id: u64,
) -> String {
    let p = ports.of(s);
    let names: Vec<String> = topo
        .hosts_of(s)
        .iter()
        .map(|&h| format!("{}: {}", topo.hosts[h as usize].name, p.host_ports[&h]))
        .chain(
            p.switch_ports
                .iter()
                .map(|(&n, &port)| format!("{}: {port}", topo.name_of(n))),
        )
        .collect();
    format!(
        "  {}: {{grpc: {grpc}, device_id: {device_id}, ports: {{{}}}}}\n",
        topo.name_of(s),
        names.join(", ")
    )
}

/// The port map of bound switches (in topology order).
pub fn port_map(bound: &[BoundSwitch]) -> PortMap {
    PortMap {
        switches: bound.iter().map(|b| b.ports.clone()).collect(),
    }
}

/// What is wrong with an endpoint before anything connects to it: an address that is not
/// `HOST:PORT` with a port in 1..=65535, a TLS file that does not exist, a certificate without
/// its key. `(field, why)`.
fn endpoint_problem(ep: &SwitchEndpoint) -> Result<(), (String, String)> {
    let address = |field: &str, a: &str| -> Result<(), (String, String)> {
        let why = |w: String| Err((field.to_string(), format!("`{a}`: {w}")));
        let Some((host, port)) = a.rsplit_once(':') else {
            return why("not HOST:PORT (e.g. 127.0.0.1:9559)".into());
        };
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return why(format!("port `{port}` is not a number in 1..=65535")),
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name_ok = host.parse::<std::net::IpAddr>().is_ok()
            || (!host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'));
        if !name_ok {
            return why(format!("`{host}` is neither an IP address nor a host name"));
        }
        Ok(())
    };
    address("grpc", &ep.grpc)?;
    if let Some(t) = &ep.thrift {
        address("thrift", t)?;
    }
    if let Some(tls) = &ep.tls {
        let files = [
            ("ca", Some(&tls.ca)),
            ("cert", tls.cert.as_ref()),
            ("key", tls.key.as_ref()),
        ];
        for (field, path) in files {
            if let Some(p) = path.filter(|p| !p.is_file()) {
                return Err((
                    format!("tls.{field}"),
                    format!("{}: no such file", p.display()),
                ));
            }
        }
        if tls.cert.is_some() != tls.key.is_some() {
            return Err((
                "tls".into(),
                "a client certificate needs its key, and a key its certificate".into(),
            ));
        }
    }
    Ok(())
}

impl SwitchesFile {
    pub fn load(path: &str) -> Result<Self, SwitchesError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| SwitchesError::Read(path.into(), e))?;
        Self::parse(path, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Self, SwitchesError> {
        let de = serde_norway::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .location()
                .map(|l| format!(" (line {})", l.line()))
                .unwrap_or_default();
            SwitchesError::Parse {
                file: file.into(),
                detail: format!(
                    "{path}{line}: {}",
                    canary_core::yaml_error::without_location(&inner.to_string())
                ),
            }
        })
    }

    /// Checks every topology switch has an entry and every neighbor a distinct port; returns the
    /// switches in topology order.
    pub fn bind(&self, file: &str, topo: &Topology) -> Result<Vec<BoundSwitch>, SwitchesError> {
        let invalid = |field: String, detail: String| SwitchesError::Invalid {
            file: file.into(),
            field,
            detail,
        };
        for name in self.switches.keys() {
            if topo.switch(name).is_none() {
                return Err(invalid(
                    format!("switches.{name}"),
                    format!("no switch `{name}` in topology {}", topo.name),
                ));
            }
        }
        let mut seen_grpc: HashMap<(&str, u64), &str> = HashMap::new();
        let mut out = Vec::new();
        for (ix, sw) in topo.switches.iter().enumerate() {
            let ix = ix as SwitchIx;
            let ep = self.switches.get(&sw.name).ok_or_else(|| {
                invalid(
                    format!("switches.{}", sw.name),
                    "missing: every switch of the topology needs an entry".into(),
                )
            })?;
            if let Some(other) = seen_grpc.insert((ep.grpc.as_str(), ep.device_id), &sw.name) {
                return Err(invalid(
                    format!("switches.{}.grpc", sw.name),
                    format!(
                        "{} device {} is also given to `{other}`",
                        ep.grpc, ep.device_id
                    ),
                ));
            }
            endpoint_problem(ep).map_err(|(field, detail)| {
                invalid(format!("switches.{}.{field}", sw.name), detail)
            })?;
            let mut ports = SwitchPorts::default();
            let mut used: HashMap<u32, String> = HashMap::new();
            let mut take = |neighbor: &str| -> Result<u32, SwitchesError> {
                let port = *ep.ports.get(neighbor).ok_or_else(|| {
                    invalid(
                        format!("switches.{}.ports", sw.name),
                        format!("no port for neighbor `{neighbor}`"),
                    )
                })?;
                if port >= 511 {
                    return Err(invalid(
                        format!("switches.{}.ports.{neighbor}", sw.name),
                        format!("port {port} does not fit the 9-bit port field (511 is drop)"),
                    ));
                }
                if let Some(prev) = used.insert(port, neighbor.to_string()) {
                    return Err(invalid(
                        format!("switches.{}.ports.{neighbor}", sw.name),
                        format!("port {port} is also given to `{prev}`"),
                    ));
                }
                Ok(port)
            };
            for &n in topo.neighbors(ix) {
                ports.switch_ports.insert(n, take(topo.name_of(n))?);
            }
            for &h in topo.hosts_of(ix) {
                ports
                    .host_ports
                    .insert(h, take(&topo.hosts[h as usize].name)?);
            }
            if let Some(extra) = ep.ports.keys().find(|k| !used.values().any(|u| u == *k)) {
                return Err(invalid(
                    format!("switches.{}.ports.{extra}", sw.name),
                    format!("`{extra}` is not a neighbor of {} in the topology", sw.name),
                ));
            }
            out.push(BoundSwitch {
                ix,
                name: sw.name.clone(),
                endpoint: ep.clone(),
                ports,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::topo::yaml;

    const LINE: &str = "name: line2\nmonitors: top+bottom\nswitches:\n  - {name: s1, layer: 0, hosts: [{name: h1, addr: 10.0.1.2}]}\n  - {name: s2, layer: 0, hosts: [{name: h2, addr: 10.0.2.2}]}\nlinks:\n  - [s1, s2]\n";

    fn bind(text: &str) -> Result<Vec<BoundSwitch>, SwitchesError> {
        let topo = yaml::parse("line2.yaml", LINE).unwrap();
        SwitchesFile::parse("sw.yaml", text)?.bind("sw.yaml", &topo)
    }

    const GOOD: &str = "switches:\n  s1: {grpc: 127.0.0.1:50001, device_id: 1, thrift: 127.0.0.1:9091, ports: {h1: 1, s2: 2}}\n  s2: {grpc: 127.0.0.1:50002, device_id: 2, ports: {h2: 1, s1: 2}}\n";

    #[test]
    fn a_good_file_binds_ports_to_neighbors() {
        let b = bind(GOOD).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].ports.switch_ports[&1], 2);
        assert_eq!(b[0].ports.host_ports[&0], 1);
        assert_eq!(b[1].endpoint.thrift, None);
    }

    #[test]
    fn bad_files_name_the_field() {
        let cases = [
            (
                GOOD.replace(
                    "  s2: {grpc: 127.0.0.1:50002, device_id: 2, ports: {h2: 1, s1: 2}}\n",
                    "",
                ),
                "switches.s2: missing",
            ),
            (
                GOOD.replace("s1: 2}", "s1: 2, s9: 3}"),
                "switches.s2.ports.s9: `s9` is not a neighbor",
            ),
            (
                GOOD.replace("{h2: 1, s1: 2}", "{h2: 1, s1: 1}"),
                "port 1 is also given to",
            ),
            (
                GOOD.replace("{h2: 1, s1: 2}", "{h2: 1}"),
                "switches.s2.ports: no port for neighbor `s1`",
            ),
            (
                GOOD.replace("{h1: 1, s2: 2}", "{h1: 1, s2: 600}"),
                "does not fit the 9-bit port field",
            ),
            (
                GOOD.replace("device_id: 2", "device_id: 2, grcp: x"),
                "line 3",
            ),
            (
                GOOD.replace("device_id: 2", "device_id: two"),
                "switches.s2.device_id",
            ),
            (
                format!("{GOOD}  s3: {{grpc: a:1, device_id: 3, ports: {{}}}}\n"),
                "no switch `s3` in topology",
            ),
            (
                GOOD.replace("127.0.0.1:50002", "127.0.0.1:99999"),
                "switches.s2.grpc: `127.0.0.1:99999`: port `99999` is not a number in 1..=65535",
            ),
            (
                GOOD.replace("127.0.0.1:50002", "'not an address'"),
                "switches.s2.grpc: `not an address`: not HOST:PORT",
            ),
            (
                GOOD.replace("thrift: 127.0.0.1:9091", "thrift: '127.0.0.1:'"),
                "switches.s1.thrift",
            ),
            (
                GOOD.replace(
                    "device_id: 2,",
                    "device_id: 2, tls: {ca: /nonexistent/ca.pem},",
                ),
                "switches.s2.tls.ca: /nonexistent/ca.pem: no such file",
            ),
        ];
        for (text, want) in cases {
            let e = bind(&text).expect_err(want).to_string();
            assert!(
                e.contains("sw.yaml") && e.contains(want),
                "`{e}` should say `{want}`"
            );
        }
    }
}
