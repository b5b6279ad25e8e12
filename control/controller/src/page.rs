//! The live fabric page: what `canary run --serve`, `canary simulate --serve` and `canary view`
//! serve. One HTML file with its script and style inline (no build chain, no CDN: it works
//! offline), and three JSON endpoints it reads:
//!
//! * `GET /api/fabric`: switches (name, layer, monitor, position) and directed links;
//! * `GET /api/epochs`: every epoch report so far (the JSON lines of `--report`);
//! * `GET /api/events`: server-sent events, one per new epoch report, so the page updates
//!   without reloading.
//!
//! Positions come from the same layout as `canary draw` (`draw::layout`).

use crate::draw;
use crate::report::EpochReport;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use canary_core::topo::Topology;
use futures::Stream;
use serde::Serialize;
use std::convert::Infallible;
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

const INDEX: &str = include_str!("page/index.html");

#[derive(Serialize)]
struct FabricView {
    name: String,
    width: f64,
    height: f64,
    switches: Vec<SwitchView>,
    /// Directed links `[from, to]`.
    links: Vec<[String; 2]>,
}

#[derive(Serialize)]
struct SwitchView {
    name: String,
    layer: u8,
    monitor: bool,
    x: f64,
    y: f64,
}

/// The page's state: the fabric, the epochs so far, and the subscribers to new ones.
#[derive(Clone)]
pub struct Page {
    fabric: Arc<String>,
    epochs: Arc<RwLock<Vec<Arc<String>>>>,
    tx: broadcast::Sender<Arc<String>>,
}

impl Page {
    pub fn new(topo: &Topology) -> Self {
        let l = draw::layout_with(topo, false);
        let view = FabricView {
            name: topo.name.clone(),
            width: l.width,
            height: l.height,
            switches: topo
                .switches
                .iter()
                .zip(&l.pos)
                .map(|(s, &(x, y))| SwitchView {
                    name: s.name.clone(),
                    layer: s.layer,
                    monitor: s.monitor,
                    x,
                    y,
                })
                .collect(),
            links: topo
                .links
                .iter()
                .map(|k| {
                    [
                        topo.switches[k.from as usize].name.clone(),
                        topo.switches[k.to as usize].name.clone(),
                    ]
                })
                .collect(),
        };
        let (tx, _) = broadcast::channel(256);
        Page {
            fabric: Arc::new(serde_json::to_string(&view).expect("plain data")),
            epochs: Arc::default(),
            tx,
        }
    }

    /// A new epoch report: kept, and sent to every open page.
    pub fn push(&self, r: &EpochReport) {
        let line = Arc::new(serde_json::to_string(r).expect("plain data"));
        self.epochs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.clone());
        // No page open: nobody to tell.
        let _ = self.tx.send(line);
    }

    fn epochs_json(&self) -> String {
        let list = self.epochs.read().unwrap_or_else(|e| e.into_inner());
        let mut out = String::from("[");
        for (i, e) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(e);
        }
        out.push(']');
        out
    }

    fn events(&self) -> impl Stream<Item = Result<Event, Infallible>> {
        let rx = self.tx.subscribe();
        futures::stream::unfold(rx, |mut rx| async move {
            let event = match rx.recv().await {
                Ok(line) => Event::default().data(line.as_str()),
                // A page too slow to keep up reloads the list instead.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    Event::default().event("reload").data("")
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((Ok(event), rx))
        })
    }
}

fn json(body: String) -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
}

/// Serves the page on `addr` until the process ends; returns the bound address.
pub async fn serve(addr: &str, page: Page) -> crate::Result<std::net::SocketAddr> {
    use axum::routing::get;
    let what = || format!("{addr}: cannot listen for the page");
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| crate::Error::io(what(), e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| crate::Error::io(what(), e))?;
    let (p1, p2, p3) = (page.clone(), page.clone(), page);
    let app = axum::Router::new()
        .route("/", get(|| async { Html(INDEX) }))
        .route(
            "/api/fabric",
            get(move || {
                let f = p1.fabric.clone();
                async move { json(f.as_str().to_string()) }
            }),
        )
        .route(
            "/api/epochs",
            get(move || {
                let p = p2.clone();
                async move { json(p.epochs_json()) }
            }),
        )
        .route(
            "/api/events",
            get(move || {
                let p = p3.clone();
                async move { Sse::new(p.events()).keep_alive(KeepAlive::default()) }
            }),
        );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("page server stopped: {e}");
        }
    });
    Ok(bound)
}
