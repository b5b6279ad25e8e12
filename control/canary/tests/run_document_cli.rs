//! The run document as a user meets it: `simulate --json` (with or without `--synth-meters`)
//! writes it, `view` and `draw` read it with the fabric it was measured on, and refuse another
//! fabric or a document they do not know.

use canary_controller::run_document::{RunDocument, RunKind, VERSION};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn canary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canary"))
        .args(args)
        .output()
        .expect("runs canary")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `canary simulate ARGS -q --json DIR/NAME`, its document's path.
fn simulate(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let json = dir.join(name);
    let mut all = vec!["simulate", "-q", "--json"];
    all.push(json.to_str().unwrap());
    all.extend(args);
    ok(&canary(&all));
    json
}

/// `canary view RUN ARGS` on a free port, once the page answers.
struct Viewed {
    child: Child,
    port: u16,
}

impl Viewed {
    fn start(run: &Path, args: &[&str]) -> Viewed {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_canary"))
            .arg("view")
            .arg(run)
            .args(args)
            .args(["--serve", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if canary_testkit::http_get(port, "/api/fabric").is_some() {
                return Viewed { child, port };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("canary view exited with {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = child.kill();
        panic!("canary view never answered");
    }

    fn get(&self, path: &str) -> serde_json::Value {
        let body = canary_testkit::http_get(self.port, path).expect("the page answers");
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Viewed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `canary draw --json RUN --out RUN.svg`, the SVG it wrote.
fn draw(json: &Path) -> String {
    let svg = json.with_extension("svg");
    ok(&canary(&[
        "draw",
        "--json",
        json.to_str().unwrap(),
        "--out",
        svg.to_str().unwrap(),
    ]));
    std::fs::read_to_string(&svg).unwrap()
}

fn read(json: &Path) -> RunDocument {
    RunDocument::load(json).unwrap()
}

#[test]
fn view_and_draw_show_a_run_on_the_fabric_it_ran_on() {
    let dir = tempfile::tempdir().unwrap();
    let json = simulate(
        dir.path(),
        "k8.json",
        &["--topology", "fattree:8", "--epochs", "2"],
    );
    let doc = read(&json);
    assert_eq!((doc.version, doc.kind), (VERSION, RunKind::Packets));

    // No --topology: the page is the run's k=8 fabric, with the run's epochs as they are.
    let page = Viewed::start(&json, &[]);
    let fabric = page.get("/api/fabric");
    assert_eq!(fabric["name"], "fattree:8");
    assert_eq!(fabric["switches"].as_array().unwrap().len(), 80);
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(page.get("/api/epochs"), run["epochs"]);
    drop(page);

    let svg = draw(&json);
    assert!(
        svg.contains(">core15<") && svg.contains("fattree:8: 2 epochs"),
        "k=8 drawn"
    );

    // Another fabric than the run's is refused, by name, before anything is served.
    for cmd in ["view", "draw"] {
        let mut args = vec![cmd];
        if cmd == "draw" {
            args.extend(["--out", "/dev/null", "--json"]);
        }
        args.extend([json.to_str().unwrap(), "--topology", "fattree:4"]);
        let out = canary(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd} took the wrong fabric");
        assert!(
            err.contains("--topology fattree:4") && err.contains("fattree:8"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_synthesized_run_is_the_same_document() {
    let dir = tempfile::tempdir().unwrap();
    let json = simulate(
        dir.path(),
        "synth.json",
        &[
            "--synth-meters",
            "--topology",
            "fattree:8",
            "--epochs",
            "5",
            "--seed",
            "2",
        ],
    );
    let doc = read(&json);
    assert_eq!(doc.kind, RunKind::Synthesized);
    assert!(!doc.summary.blamed.is_empty(), "{:?}", doc.summary);
    let page = Viewed::start(&json, &[]);
    assert_eq!(page.get("/api/fabric")["name"], "fattree:8");
    let epochs = page.get("/api/epochs");
    assert_eq!(epochs.as_array().unwrap().len(), 5);
    drop(page);
    let svg = draw(&json);
    let [a, b] = &doc.summary.blamed[0].link;
    assert!(
        svg.contains(&format!("{a} → {b}")),
        "the blamed link is marked"
    );
}

#[test]
fn a_run_on_a_topology_file_needs_the_file_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("leaf-spine.yaml");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../topologies/leaf-spine.yaml");
    std::fs::copy(repo, &topo).unwrap();
    let json = simulate(
        dir.path(),
        "ls.json",
        &["--topology", topo.to_str().unwrap(), "--epochs", "2"],
    );
    std::fs::remove_file(&topo).unwrap();
    let page = Viewed::start(&json, &[]);
    let fabric = page.get("/api/fabric");
    assert_eq!(fabric["name"], "leaf-spine-4x2");
    assert_eq!(fabric["switches"].as_array().unwrap().len(), 6);
    drop(page);
    assert!(draw(&json).contains(">spine1<"));
}

#[test]
fn a_document_canary_does_not_know_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let json = simulate(dir.path(), "run.json", &["--epochs", "1"]);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    v["version"] = (VERSION + 1).into();
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, v.to_string()).unwrap();
    v["version"] = VERSION.into();
    v["epochs"][0]["blamed"] = serde_json::json!([{"link": ["edge0_0", "nowhere"], "loss": 0.1}]);
    let unknown = dir.path().join("unknown-link.json");
    std::fs::write(&unknown, v.to_string()).unwrap();
    let cases = [
        ("/nonexistent/run.json", "/nonexistent/run.json"),
        (newer.to_str().unwrap(), "newer.json: version"),
        (
            unknown.to_str().unwrap(),
            "unknown-link.json: epochs[0].blamed[0]",
        ),
    ];
    for (file, says) in cases {
        let out = canary(&["view", file, "--serve", "127.0.0.1:0"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file} was served");
        assert!(err.contains(says), "{file}: {err}");
    }
    // `canary incidents` reads the document as `view` does, and says so once.
    let out = canary(&["incidents", newer.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a newer document's incidents were listed"
    );
    assert!(err.contains("newer.json: version"), "{err}");
    assert_eq!(err.matches("newer.json").count(), 1, "said once: {err}");
}
