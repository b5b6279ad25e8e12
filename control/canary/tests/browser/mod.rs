//! Headless Chromium driven over WebDriver (Debian `chromium` and `chromium-driver`), for the
//! page's tests: a driver process killed with its browser when the test ends, however it ends.

use fantoccini::{Client, ClientBuilder};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child killed with its whole process group on drop: chromedriver's Chromium goes with it
/// even when a failed assertion skips closing the session.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // SAFETY: signalling a process group we created; no memory is touched.
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGKILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `f` every 200 ms until it gives a value; fails the test naming `what` after `limit`.
pub async fn eventually<T>(
    what: &str,
    limit: Duration,
    mut f: impl AsyncFnMut() -> Option<T>,
) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(x) = f().await {
            return x;
        }
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A process started in its own process group (so [`Killed`] takes its children too).
pub fn spawn_grouped(cmd: &mut Command) -> Killed {
    Killed(cmd.process_group(0).spawn().expect("the process starts"))
}

/// chromedriver on `port` and a headless Chromium session of 1600 × 1000 through it.
pub async fn chromium(port: u16) -> (Killed, Client) {
    let driver = spawn_grouped(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1600,1000"]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let c = eventually(
        "chromedriver answers",
        Duration::from_secs(20),
        async || {
            ClientBuilder::new(connector.clone())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
                .ok()
        },
    )
    .await;
    (driver, c)
}
