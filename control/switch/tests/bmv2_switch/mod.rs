//! One real `simple_switch_grpc` running Canary's v1model program, for the Thrift tests and the
//! harvest benchmark: compiled once per binary (bmv2/build.sh), started without ports on free
//! Thrift and gRPC ports (bmv2/run-switch.sh), killed by PID on drop.

use canary_switch::bmv2_thrift::{ThriftClient, Timeouts};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use canary_testkit::repo_root;

/// Why these tests cannot run here.
pub fn missing() -> Vec<canary_testkit::Lack> {
    canary_testkit::tools_lacking(
        &["p4c", "simple_switch_grpc"],
        "p4c and BMv2, built from their public sources, DEVELOPERS.md",
    )
}

/// The compiled program, built once per test binary into a temporary directory.
pub fn program() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("canary-bmv2-thrift")
            .tempdir()
            .unwrap();
        canary_testkit::build_bmv2(dir.path());
        dir
    });
    dir.path()
}

pub use canary_testkit::free_port;

/// One simple_switch_grpc without ports; killed by PID on drop.
pub struct Switch {
    pid: i32,
    thrift: u16,
    _logs: tempfile::TempDir,
}

impl Switch {
    pub fn start(device: u32) -> Switch {
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().join("switch.log");
        let (grpc, thrift) = (free_port(), free_port());
        let out = Command::new(repo_root().join("bmv2/run-switch.sh"))
            .arg(program().join("canary.json"))
            .args([device.to_string(), grpc.to_string(), thrift.to_string()])
            .arg(&log)
            .output()
            .expect("run bmv2/run-switch.sh");
        let pid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("run-switch.sh printed no PID: {out:?}"));
        Switch {
            pid,
            thrift,
            _logs: logs,
        }
    }

    pub fn thrift_port(&self) -> u16 {
        self.thrift
    }

    /// A client, once the Thrift server answers (it starts after the program is loaded).
    pub fn client(&self, name: &str) -> ThriftClient {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let c = ThriftClient::connect(name, ("127.0.0.1", self.thrift), Timeouts::default());
            match c {
                Ok(c) => return c,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(e) => {
                    let stdout =
                        std::fs::read_to_string(self._logs.path().join("switch.log.stdout"))
                            .unwrap_or_default();
                    panic!("switch did not come up: {e}\n{stdout}");
                }
            }
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        // SAFETY: kill(2) of the process this test started, by its PID.
        unsafe { libc::kill(self.pid, libc::SIGTERM) };
    }
}
