//! The page at data-center size, in a real browser: `canary view` of a k = 48 fat-tree run
//! (2 880 switches, `simulate --synth-meters`, the adaptive watch plan) with faults in three
//! pods and one core group. The overview renders and exactly the faulty groups stand out;
//! searching a switch finds it; a click reaches a link, its history and its incidents; the
//! time control replays an epoch before any blame. Prints how long the page took to become
//! interactive. `CANARY_PAGE_SCREENSHOT=FILE` saves the overview. Prints `SKIP` where
//! Chromium or chromedriver is missing.

mod browser;

use browser::{chromium, eventually, spawn_grouped};
use canary_testkit::{free_port, runnable, tools_lacking};
use fantoccini::{Client, Locator};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

const FAULTS: &str = "faults:
  - {link: [edge3_0, agg3_1], loss: 0.05}
  - {link: [agg17_2, core50], loss: 0.02}
  - {link: [core50, agg17_2], loss: 0.02}
  - {link: [agg30_5, edge30_7], loss: 0.10}
";

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.expect("the script runs")
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

/// The overview's cells that show a blamed link, as `group name/layer`.
async fn lit_cells(c: &Client) -> Vec<String> {
    let v = js(
        c,
        "return [...document.querySelectorAll('#overview td.cell')] \
           .filter(td => Number(td.dataset.worst) > 0) \
           .map(td => state.fabric.groups[Number(td.dataset.group)].name + '/' + td.id.split('-')[2]);",
    )
    .await;
    let mut cells: Vec<String> = serde_json::from_value(v).unwrap();
    cells.sort();
    cells
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_k48_overview_shows_the_faulty_pods_and_drills_down_to_a_link() {
    let lacks = tools_lacking(
        &["chromium", "chromedriver"],
        "Debian chromium, chromium-driver",
    );
    if !runnable("page_at_scale", &lacks) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (faults, run) = (dir.path().join("faults.yaml"), dir.path().join("run.json"));
    std::fs::write(&faults, FAULTS).unwrap();
    canary_testkit::succeeded(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .args(["simulate", "--synth-meters", "--topology", "fattree:48"])
            .args(["--epochs", "10", "--seed", "1", "--watch-plan", "adaptive"])
            .arg("--quiet")
            .arg("--faults")
            .arg(&faults)
            .arg("--json")
            .arg(&run),
    );
    let (page, driver) = (free_port(), free_port());
    let _view = spawn_grouped(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .arg("view")
            .arg(&run)
            .args(["--serve", &format!("127.0.0.1:{page}")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    );
    let (_driver, c) = chromium(driver).await;
    let url = format!("http://127.0.0.1:{page}/");
    eventually("the page is served", Duration::from_secs(60), async || {
        let ok = c.goto(&url).await.is_ok();
        let ready = js(&c, "return document.body.dataset.ready === '1';").await;
        (ok && ready == true).then_some(())
    })
    .await;
    // Measured on a fresh load, now that the server answers.
    c.refresh().await.unwrap();
    let ms = eventually(
        "the page is interactive",
        Duration::from_secs(60),
        async || {
            js(&c, "return window.canaryInteractiveMs || null;")
                .await
                .as_f64()
        },
    )
    .await;
    eprintln!("k = 48 page interactive {ms:.0} ms after navigation began");
    assert_eq!(
        js(&c, "return [state.fabric.switches.length, state.big];").await,
        serde_json::json!([2880, true]),
        "a k = 48 fabric opens on the overview"
    );

    // Exactly the faulty pods and core group stand out, at the layers their links touch.
    let top = js(
        &c,
        "return state.fabric.groups[index.byName.get('core50').group].name;",
    )
    .await;
    let top = top.as_str().unwrap();
    let mut want: Vec<String> = ["pod 3/0", "pod 3/1", "pod 17/1", "pod 30/0", "pod 30/1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    want.push(format!("{top}/2"));
    want.sort();
    assert_eq!(lit_cells(&c).await, want);
    // The measurement's own counters are details, not warnings.
    assert_eq!(
        js(
            &c,
            "return [document.querySelectorAll('#epoch .warn').length, \
                     !!document.querySelector('#epoch details#details')];"
        )
        .await,
        serde_json::json!([0, true])
    );
    if let Ok(path) = std::env::var("CANARY_PAGE_SCREENSHOT") {
        std::fs::write(&path, c.screenshot().await.unwrap()).unwrap();
        eprintln!("screenshot: {path}");
    }

    // Searching a switch finds it and narrows the incidents to its links; a click opens it.
    let search = c.find(Locator::Id("search")).await.unwrap();
    search.send_keys("agg17_2").await.unwrap();
    let found = js(
        &c,
        "return [[...document.querySelectorAll('#search-results .result')].map(r => r.textContent), \
                 [...document.querySelectorAll('#incidents tr.incident')].map(r => r.cells[1].textContent).sort()];",
    )
    .await;
    assert_eq!(
        found[0][0], "agg17_2",
        "the switch of that name first: {found}"
    );
    assert_eq!(
        found[1],
        serde_json::json!(["agg17_2→core50", "core50→agg17_2"]),
        "its incidents, not agg17_20's"
    );
    click(&c, "#search-results .result").await;
    let row = c.find(Locator::Id("row-agg17_2-core50")).await.unwrap();
    assert_eq!(row.attr("data-blamed").await.unwrap().as_deref(), Some("1"));
    row.click().await.unwrap();
    let panel = js(
        &c,
        "return [document.getElementById('link-name').textContent, \
                 document.getElementById('link-now').textContent, \
                 document.querySelectorAll('.history-point').length, \
                 document.getElementById('crumbs').textContent];",
    )
    .await;
    assert_eq!(panel[0], "agg17_2→core50");
    assert!(
        panel[1].as_str().unwrap().starts_with("blamed now"),
        "{panel}"
    );
    assert!(panel[2].as_u64().unwrap() >= 3, "its history: {panel}");
    assert!(panel[3].as_str().unwrap().ends_with("agg17_2"), "{panel}");

    // From the grid down: pod 30's bottom layer, its lossy edge switch, the lossy link.
    click(&c, "#crumbs a[data-go='fabric']").await;
    let pod30 = js(
        &c,
        "return state.fabric.groups.findIndex(g => g.name === 'pod 30');",
    )
    .await;
    click(&c, &format!("#cell-{pod30}-0")).await;
    let tile = c.find(Locator::Id("tile-edge30_7")).await.unwrap();
    assert!(
        tile.attr("data-worst")
            .await
            .unwrap()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            > 0.05
    );
    tile.click().await.unwrap();
    click(&c, "#row-agg30_5-edge30_7").await;
    assert_eq!(
        c.find(Locator::Id("link-name"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "agg30_5→edge30_7"
    );

    // Replaying the first epoch (nothing blamed yet): no group lit, no incident begun.
    click(&c, "#crumbs a[data-go='fabric']").await;
    let replay = js(
        &c,
        "const s = document.getElementById('search'); s.value = ''; \
         s.dispatchEvent(new Event('input')); \
         const t = document.getElementById('time'); t.value = '0'; \
         t.dispatchEvent(new Event('input')); \
         return [document.querySelectorAll('#incidents tr.incident').length, \
                 document.getElementById('time-label').textContent];",
    )
    .await;
    assert_eq!(replay[0], 0, "{replay}");
    assert!(
        replay[1].as_str().unwrap().starts_with("replaying epoch 0"),
        "{replay}"
    );
    assert!(lit_cells(&c).await.is_empty());
    click(&c, "#live").await;
    assert_eq!(lit_cells(&c).await, want, "live again");
    c.close().await.unwrap();
}
