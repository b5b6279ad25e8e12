//! P4Runtime over TLS against a real `simple_switch_grpc` started with `--grpc-server-ssl`
//! (certificates made with the `openssl` command for this test). Skips loudly without
//! simple_switch_grpc, p4c or openssl.

mod common;

use canary_switch::contract::Program;
use canary_switch::drivers::p4runtime::write_update;
use canary_switch::entries;
use canary_switch::p4info::P4InfoFile;
use canary_switch::p4rt::{P4RtClient, P4RtConfig, P4RtError, TlsFiles};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use canary_testkit::{free_port, tools_lacking};

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a server certificate it signed for `localhost` / 127.0.0.1.
fn certificates(dir: &Path) {
    let d = |f: &str| dir.join(f);
    run(Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=canary-test-ca",
        ])
        .arg("-keyout")
        .arg(d("ca.key"))
        .arg("-out")
        .arg(d("ca.pem")));
    run(Command::new("openssl")
        .args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(d("server.key"))
        .arg("-out")
        .arg(d("server.csr")));
    std::fs::write(d("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").unwrap();
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "1", "-CAcreateserial"])
        .arg("-in")
        .arg(d("server.csr"))
        .arg("-CA")
        .arg(d("ca.pem"))
        .arg("-CAkey")
        .arg(d("ca.key"))
        .arg("-extfile")
        .arg(d("ext.cnf"))
        .arg("-out")
        .arg(d("server.pem")));
}

struct Switch(Child);

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn pipeline_push_and_write_errors_over_tls() {
    let mut lacks = tools_lacking(
        &["simple_switch_grpc", "p4c"],
        "p4c and BMv2, built from their public sources, DEVELOPERS.md",
    );
    lacks.extend(tools_lacking(&["openssl"], "Debian openssl"));
    if !common::runnable("p4rt_tls", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let p4 = dir.path().join("p4");
    canary_testkit::build_bmv2(&p4);
    let (grpc, thrift) = (free_port(), free_port());
    let d = |f: &str| dir.path().join(f);
    let _sw = Switch(
        Command::new("simple_switch_grpc")
            .args([
                "--device-id",
                "7",
                "--thrift-port",
                &thrift.to_string(),
                "--no-p4",
            ])
            .arg("--notifications-addr")
            .arg(format!("ipc://{}", d("n.ipc").display()))
            .arg("--")
            .arg("--grpc-server-addr")
            .arg(format!("127.0.0.1:{grpc}"))
            .arg("--grpc-server-ssl")
            .arg("--grpc-server-cert")
            .arg(d("server.pem"))
            .arg("--grpc-server-key")
            .arg(d("server.key"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let idx = P4InfoFile::load(&p4.join("canary.p4info.bin")).unwrap();
    let json = std::fs::read(p4.join("canary.json")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cfg = P4RtConfig::new("tls-switch", &format!("127.0.0.1:{grpc}"), 7);
        cfg.tls = Some(TlsFiles {
            ca: d("ca.pem"),
            cert: None,
            key: None,
            domain: Some("localhost".into()),
        });
        // The server needs a moment to listen.
        let mut client = None;
        for _ in 0..50 {
            match P4RtClient::connect_primary(cfg.clone()).await {
                Ok(c) => {
                    client = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let mut c = client.expect("TLS connection to simple_switch_grpc");
        assert!(c.primary);
        c.set_pipeline(&idx.bytes, &json, 42).await.unwrap();
        assert_eq!(c.pipeline_cookie().await.unwrap(), Some(42));

        // A batch whose second update fails: the error names the switch and says which update
        // failed and why (google.rpc.Status details, one p4.v1.Error per update).
        let prog = Program::from_p4info(&idx.path, &idx.info).unwrap();
        let insert = |bf: u32| {
            let op = canary_core::fabric::RuleOp::InstallHh {
                switch: 0,
                path_bf: bf,
                eta: 4,
            };
            write_update(&prog, &entries::rule(&op, 0, false)).unwrap()
        };
        let e = c
            .write(vec![insert(0x11), insert(0x11), insert(0x22)], 10)
            .await
            .expect_err("a duplicate insert fails");
        match &e {
            P4RtError::Rpc {
                switch, details, ..
            } => {
                assert_eq!(switch, "tls-switch");
                assert_eq!(details.len(), 1, "{e}");
                assert_eq!(details[0].0, 1, "{e}");
                assert_eq!(
                    tonic::Code::from(details[0].1),
                    tonic::Code::AlreadyExists,
                    "{e}"
                );
            }
            other => panic!("expected an RPC error with details, got {other}"),
        }
        assert!(e.to_string().contains("update 1: AlreadyExists"), "{e}");

        // Plain text against the TLS server fails, and says where.
        let mut plain = cfg.clone();
        plain.tls = None;
        plain.timeout = Duration::from_secs(1);
        let e = P4RtClient::connect(plain)
            .await
            .err()
            .expect("plaintext must fail")
            .to_string();
        assert!(e.contains("tls-switch"), "{e}");
    });
}
