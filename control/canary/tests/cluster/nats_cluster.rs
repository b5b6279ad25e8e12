//! Three `nats-server -js` on loopback as one JetStream cluster, each with its own name, store
//! and ports, routed to the other two: killed and started again by name, asked who leads.

use super::*;
use std::collections::BTreeMap;

/// One server of the cluster.
pub struct Node {
    pub name: String,
    port: u16,
    route: u16,
    monitor: u16,
    proc: Option<Proc>,
}

pub struct NatsCluster {
    dir: PathBuf,
    pub nodes: Vec<Node>,
}

impl NatsCluster {
    /// Three servers, once they have elected a meta leader and see each other current.
    pub fn start(dir: &Path) -> Self {
        let nodes = (0..3)
            .map(|i| Node {
                name: format!("n{i}"),
                port: free_port(),
                route: free_port(),
                monitor: free_port(),
                proc: None,
            })
            .collect();
        let mut me = NatsCluster {
            dir: dir.to_path_buf(),
            nodes,
        };
        for i in 0..3 {
            me.restart(i);
        }
        let t = Instant::now();
        while !me
            .meta_leader()
            .is_some_and(|l| (0..3).all(|i| me.current(i) || i == l))
        {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the three NATS servers elected no meta leader\n{}",
                logs(dir)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        me
    }

    /// Every server's client URL, comma separated (`--cluster`).
    pub fn urls(&self) -> String {
        let urls: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("nats://127.0.0.1:{}", n.port))
            .collect();
        urls.join(",")
    }

    /// Starts server `i` (again: the same name, store and ports).
    pub fn restart(&mut self, i: usize) {
        let n = &self.nodes[i];
        let routes: Vec<String> = self
            .nodes
            .iter()
            .filter(|o| o.name != n.name)
            .map(|o| format!("nats://127.0.0.1:{}", o.route))
            .collect();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("nats-{}.log", n.name)))
            .unwrap();
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &n.port.to_string()])
            .args(["-m", &n.monitor.to_string(), "--name", &n.name])
            .arg("-sd")
            .arg(self.dir.join(format!("store-{}", n.name)))
            .args(["--cluster_name", "canary-test"])
            .args(["--cluster", &format!("nats://127.0.0.1:{}", n.route)])
            .args(["--routes", &routes.join(",")])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("nats-server starts");
        assert!(
            wait_listening(n.port, Duration::from_secs(10)),
            "nats-server {} did not listen",
            n.name
        );
        self.nodes[i].proc = Some(KillOnDrop(child));
    }

    /// SIGKILLs server `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut p) = self.nodes[i].proc.take() {
            sigkill(&mut p);
        }
    }

    fn alive(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.proc.is_some())
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The JetStream meta leader, as the live servers agree on it.
    pub fn meta_leader(&self) -> Option<usize> {
        let seen: Vec<Option<String>> = self
            .alive()
            .map(|n| {
                jsz(n.monitor, "")["meta_cluster"]["leader"]
                    .as_str()
                    .map(String::from)
            })
            .collect();
        let first = seen.first()?.clone()?;
        seen.iter()
            .all(|s| s.as_deref() == Some(first.as_str()))
            .then(|| self.index(&first))
            .flatten()
    }

    /// The server leading the run's stream (any stream: the run's is the only one), if one does.
    pub fn stream_leader(&self) -> Option<usize> {
        self.alive()
            .flat_map(|n| {
                let v = jsz(n.monitor, "?streams=true");
                streams(&v)
                    .into_iter()
                    .filter_map(|s| s["cluster"]["leader"].as_str().map(String::from))
                    .collect::<Vec<_>>()
            })
            .find_map(|l| self.index(&l))
    }

    /// Whether server `i` is current: as the meta leader sees it in the meta group, and as the
    /// leader of each stream and consumer (every one of which has a leader) sees it in theirs.
    pub fn current(&self, i: usize) -> bool {
        let name = self.nodes[i].name.as_str();
        let Some(leader) = self.meta_leader() else {
            return false;
        };
        let up_to_date = |group: &Value| {
            group["replicas"].as_array().into_iter().flatten().any(|r| {
                r["name"] == name && r["current"] == true && r["lag"].as_u64().unwrap_or(0) == 0
            })
        };
        if self.nodes[i].proc.is_none()
            || (leader != i && !up_to_date(&jsz(self.nodes[leader].monitor, "")["meta_cluster"]))
        {
            return false;
        }
        // Every group any server is in: its leader, and whether that leader sees `i` current.
        let mut groups: BTreeMap<(String, String), Option<bool>> = BTreeMap::new();
        for n in self.alive() {
            let v = jsz(n.monitor, "?streams=true&consumers=true");
            for s in streams(&v) {
                let stream = s["name"].as_str().unwrap_or_default().to_string();
                let mut of_stream = vec![(String::new(), s)];
                for c in s["consumer_detail"].as_array().into_iter().flatten() {
                    of_stream.push((c["name"].as_str().unwrap_or_default().to_string(), c));
                }
                for (consumer, g) in of_stream {
                    let c = &g["cluster"];
                    let Some(l) = c["leader"].as_str() else {
                        return false;
                    };
                    let seen = groups.entry((stream.clone(), consumer)).or_default();
                    if l == name {
                        *seen = Some(true);
                    } else if l == n.name {
                        *seen = Some(up_to_date(c));
                    }
                }
            }
        }
        groups.values().all(|&s| s == Some(true))
    }
}

/// The streams a server's `/jsz?streams=true` lists.
fn streams(v: &Value) -> Vec<&Value> {
    v["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["stream_detail"].as_array().into_iter().flatten())
        .collect()
}
