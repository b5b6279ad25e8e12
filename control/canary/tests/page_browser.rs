//! The live page in a real browser: headless Chromium (Debian `chromium`, driven over WebDriver
//! by `chromedriver` from Debian `chromium-driver`) on `canary simulate --serve` with one lossy
//! link. The page loads; the fault appears on the right link after the epochs that find it; the
//! page follows the next epochs without reloading; clicking the link shows its history.
//! `CANARY_PAGE_SCREENSHOT=FILE` also saves a screenshot. Prints `SKIP` where Chromium or
//! chromedriver is missing.

mod browser;

use browser::{chromium, eventually, spawn_grouped};
use canary_testkit::{free_port, runnable, tools_lacking};
use fantoccini::Locator;
use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_fault_on_its_link_live_and_its_history_on_click() {
    let lacks = tools_lacking(
        &["chromium", "chromedriver"],
        "Debian chromium, chromium-driver",
    );
    if !runnable("page_browser", &lacks) {
        return;
    }
    let topology =
        std::env::var("CANARY_PAGE_TOPOLOGY").unwrap_or_else(|_| "fattree:4".to_string());
    let dir = tempfile::tempdir().unwrap();
    let faults = dir.path().join("faults.yaml");
    std::fs::write(
        &faults,
        "faults:\n  - {link: [edge1_0, agg1_1], loss: 0.1}\n  - {link: [agg0_0, core0], loss: 0.03}\n",
    )
    .unwrap();
    let (page, driver) = (free_port(), free_port());
    let _canary = spawn_grouped(
        Command::new(env!("CARGO_BIN_EXE_canary"))
            .args(["simulate", "--topology", &topology, "--epochs", "40", "-q"])
            .arg("--faults")
            .arg(&faults)
            .args(["--serve", &format!("127.0.0.1:{page}"), "--pace-ms", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    );
    let (_driver, c) = chromium(driver).await;
    let url = format!("http://127.0.0.1:{page}/");
    eventually("the page is served", Duration::from_secs(60), async || {
        c.goto(&url).await.ok()
    })
    .await;
    eventually("the fabric drawn", Duration::from_secs(60), async || {
        let name = c
            .find(Locator::Id("fabric-name"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        (!name.is_empty()).then_some(())
    })
    .await;
    assert_eq!(c.title().await.unwrap(), "Canary");

    // The fault shows on its own link once the epochs that find it are in. The page
    // repaints on every epoch, so what is compared is read in one script: one epoch's paint.
    let paint = async || -> Option<serde_json::Value> {
        c.execute(
            "const l = document.getElementById('link-edge1_0-agg1_1'); \
             return {blamed: l.dataset.blamed, stroke: l.getAttribute('stroke'), \
               labels: Array.from(document.querySelectorAll('.blame-label'), e => e.textContent), \
               all: Array.from(document.querySelectorAll(\".link[data-blamed='1']\"), e => e.id)};",
            vec![],
        )
        .await
        .ok()
    };
    let shown = eventually(
        "edge1_0→agg1_1 blamed",
        Duration::from_secs(40),
        async || paint().await.filter(|p| p["blamed"] == "1"),
    )
    .await;
    assert_eq!(
        shown["stroke"], "#b80000",
        "a 10 % link in the ≥ 5 % colour"
    );
    let labels: Vec<String> = serde_json::from_value(shown["labels"].clone()).unwrap();
    assert!(
        !labels.is_empty()
            && labels
                .iter()
                .all(|l| l.contains('%') && l.contains("stage")),
        "{labels:?}"
    );
    let blamed: Vec<String> = serde_json::from_value(shown["all"].clone()).unwrap();
    assert!(
        blamed
            .iter()
            .all(|b| b == "link-edge1_0-agg1_1" || b == "link-agg0_0-core0"),
        "only injected links blamed: {blamed:?}"
    );
    // The epoch's table names each blame with the epoch it has held since (one epoch's paint).
    let table = c
        .execute(
            "const r = state.epochs[state.epochs.length - 1]; \
             const b = r.blamed.find(x => x.link.join('-') === 'edge1_0-agg1_1'); \
             return {since: b ? b.since : null, \
               text: document.getElementById('epoch').textContent};",
            vec![],
        )
        .await
        .unwrap();
    let since = table["since"]
        .as_u64()
        .unwrap_or_else(|| panic!("the 10 % link blamed with its epoch: {table}"));
    let text = table["text"].as_str().unwrap();
    assert!(
        text.contains("edge1_0→agg1_1 ") && text.contains(&format!("since epoch {since}")),
        "{text}"
    );
    // A held blame and a correction, as the report carries them (`held`, `cleared[].corrected_to`),
    // painted by the page itself: an epoch like the last with those two fields set is shown,
    // read, and taken back (one script: no epoch from the stream comes in between).
    let marked = c
        .execute(
            "const r = JSON.parse(JSON.stringify(state.epochs[state.epochs.length - 1])); \
             r.blamed.find(x => x.link.join('-') === 'edge1_0-agg1_1').held = true; \
             r.cleared = [{link: ['agg0_0', 'core0'], since: 3, last: 7, \
                           corrected_to: ['agg0_0', 'core1']}]; \
             r.undecided = [[['edge2_0', 'agg2_1'], ['agg2_1', 'core2']]]; \
             state.epochs.push(r); render(); \
             const line = document.getElementById('link-edge1_0-agg1_1'); \
             const out = {text: document.getElementById('epoch').textContent, \
               held: line.dataset.held, \
               open: [...document.querySelectorAll('.link')] \
                 .filter(l => l.dataset.undecided === '1').map(l => l.id).sort(), \
               marks: document.querySelectorAll('.undecided-label').length, \
               labels: [...document.querySelectorAll('.blame-label')].map(t => t.textContent)}; \
             state.epochs.pop(); render(); \
             out.after = document.getElementById('link-edge1_0-agg1_1').dataset.held; \
             const real = state.epochs[state.epochs.length - 1].blamed \
               .find(x => x.link.join('-') === 'edge1_0-agg1_1'); \
             out.real = real && real.held ? '1' : '0'; \
             return out;",
            vec![],
        )
        .await
        .unwrap();
    let text = marked["text"].as_str().unwrap();
    assert!(
        text.contains("edge1_0→agg1_1 ")
            && text.contains("(held: not named this epoch, not cleared)"),
        "{text}"
    );
    assert!(
        text.contains("corrected")
            && text.contains(
                "agg0_0→core0 (blamed epochs 3–7): its segments' loss is on agg0_0→core1"
            ),
        "{text}"
    );
    assert_eq!(marked["held"], "1", "the held link is marked on the fabric");
    // A loss the counts cannot place: both candidates marked on the fabric and named.
    assert!(
        text.contains("edge2_0→agg2_1 or agg2_1→core2: a loss the counts cannot place"),
        "{text}"
    );
    assert_eq!(
        marked["open"],
        serde_json::json!(["link-agg2_1-core2", "link-edge2_0-agg2_1"]),
        "the candidates are marked"
    );
    assert_eq!(marked["marks"], 2);
    let labels: Vec<String> = serde_json::from_value(marked["labels"].clone()).unwrap();
    assert!(labels.iter().any(|l| l.ends_with(" held")), "{labels:?}");
    assert_eq!(
        marked["after"], marked["real"],
        "the real last epoch painted again"
    );
    // The line elements are drawn once and only repainted, so this handle stays good.
    let link = c.find(Locator::Css("#link-edge1_0-agg1_1")).await.unwrap();

    // The next epoch arrives without a reload.
    let epoch_no = async || -> Option<u64> {
        c.find(Locator::Id("epoch-no"))
            .await
            .ok()?
            .text()
            .await
            .ok()?
            .parse()
            .ok()
    };
    let before = epoch_no().await.unwrap();
    let after = eventually(
        "the next epoch shown",
        Duration::from_secs(10),
        async || epoch_no().await.filter(|&n| n > before),
    )
    .await;
    assert!(after > before);
    let loads = c
        .execute("return sessionStorage.canaryLoads;", vec![])
        .await
        .unwrap();
    assert_eq!(loads, serde_json::json!("1"), "the page was reloaded");

    if std::env::var_os("CANARY_PAGE_SCREENSHOT").is_some() {
        // A picture with some history in it.
        eventually("epoch 12", Duration::from_secs(120), async || {
            epoch_no().await.filter(|&n| n >= 12)
        })
        .await;
    }
    // Weak evidence is drawn as weak: every link is dashed exactly when the last epoch's
    // evidence map says it cannot show a 1 % loss or nobody watches it (one epoch's paint).
    let weak = c
        .execute(
            "const r = state.epochs[state.epochs.length - 1], m = new Map(); \
             for (const x of r.evidence_map.links) m.set(x.link.join('-'), x.min_loss >= 0.01); \
             for (const x of r.evidence_map.unwatched || []) m.set(x.join('-'), true); \
             return Array.from(document.querySelectorAll('.link'), l => { \
               const k = l.dataset.from + '-' + l.dataset.to; \
               return [k, m.has(k), m.get(k) === true, l.dataset.weak === '1', \
                 l.hasAttribute('stroke-dasharray')]; });",
            vec![],
        )
        .await
        .unwrap();
    let weak: Vec<(String, bool, bool, bool, bool)> = serde_json::from_value(weak).unwrap();
    assert!(!weak.is_empty());
    for (k, mapped, want, drawn, dashed) in &weak {
        assert!(mapped, "{k} not in the evidence map");
        assert!(
            want == drawn && drawn == dashed,
            "{k}: weak {want}, drawn {drawn}"
        );
    }
    let legend = c.find(Locator::Id("legend")).await.unwrap();
    assert!(legend.text().await.unwrap().contains("weak evidence"));
    // Clicking the link shows its history and the segments that implicate it.
    link.click().await.unwrap();
    let name = c
        .find(Locator::Id("link-name"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(name, "edge1_0→agg1_1");
    let points = c
        .find_all(Locator::Css("#history .history-point"))
        .await
        .unwrap();
    assert!(!points.is_empty(), "the link's blamed epochs are plotted");
    let now = c
        .find(Locator::Id("link-now"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(now.contains("blamed now") && now.contains("95 %"), "{now}");
    assert!(
        now.contains("evidence: ") && now.contains("packets"),
        "{now}"
    );
    let segs = c
        .find(Locator::Id("link-segments"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        segs.contains("edge1_0→agg1_1"),
        "segments over the link: {segs}"
    );
    // A link's address opens that link.
    c.goto(&format!("http://127.0.0.1:{page}/#link=agg0_0,core0"))
        .await
        .unwrap();
    assert_eq!(
        opened_link(&c, "agg0_0→core0").await,
        "agg0_0→core0",
        "the page opened on the address's link"
    );
    // What an alert links to (canary_link_incident's `page`): the incident, opened on its link.
    let incident = c
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch('/api/incidents').then(r => r.json()).then(all => { \
               const i = all.find(x => x.subject.kind === 'link' \
                 && x.subject.link[0] === 'edge1_0' && x.subject.link[1] === 'agg1_1'); \
               done(i ? i.id : null); });",
            vec![],
        )
        .await
        .unwrap()
        .as_u64()
        .expect("an incident for the blamed link");
    c.goto(&format!("http://127.0.0.1:{page}/#incident={incident}"))
        .await
        .unwrap();
    assert_eq!(
        opened_link(&c, "edge1_0→agg1_1").await,
        "edge1_0→agg1_1",
        "the page opened on the alert's incident"
    );
    if let Ok(path) = std::env::var("CANARY_PAGE_SCREENSHOT") {
        std::fs::write(&path, c.screenshot().await.unwrap()).unwrap();
        eprintln!("screenshot: {path}");
    }
    c.close().await.unwrap();
}

/// The link the page's panel shows, once it is `expected` or after 10 s.
async fn opened_link(c: &fantoccini::Client, expected: &str) -> String {
    let mut opened = String::new();
    for _ in 0..100 {
        opened = c
            .execute(
                "return document.getElementById('link-panel').hidden ? '' : \
                 document.getElementById('link-name').textContent;",
                vec![],
            )
            .await
            .unwrap()
            .as_str()
            .unwrap_or_default()
            .to_string();
        if opened == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    opened
}
