//! The live fabric page: what `canary run --serve`, `canary simulate --serve` and `canary view`
//! serve. Static HTML, style and scripts compiled into the binary (no build chain, no CDN: it
//! works offline), and the JSON endpoints they read:
//!
//! * `GET /api/fabric`: switches (name, layer, monitor, position, group) and directed links,
//!   and the groups (pods, top-layer blocks) the overview of a large fabric shows;
//! * `GET /api/epochs`: every epoch report so far (the JSON lines of `--report`);
//! * `GET /api/incidents`: the incidents so far (the controller's database where it keeps one,
//!   else derived from the epochs as `canary incidents` derives them);
//! * `GET /api/events`: server-sent events, one per new epoch report, so the page updates
//!   without reloading.
//!
//! Positions come from the same layout as `canary draw` (`draw::layout`).

mod fabric_view;

use crate::incidents::{Incident, TrackConfig, Tracker};
use crate::report::EpochReport;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use canary_core::topo::Topology;
use fabric_view::FabricView;
use futures::Stream;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::broadcast;

const INDEX: &str = include_str!("page/index.html");
/// The page's style and scripts, by the name the page asks for them.
const ASSETS: [(&str, &str, &str); 7] = [
    ("page.css", "text/css", include_str!("page/page.css")),
    ("common.js", JS, include_str!("page/common.js")),
    ("drawing.js", JS, include_str!("page/drawing.js")),
    ("overview.js", JS, include_str!("page/overview.js")),
    ("incidents.js", JS, include_str!("page/incidents.js")),
    ("link.js", JS, include_str!("page/link.js")),
    ("main.js", JS, include_str!("page/main.js")),
];
const JS: &str = "text/javascript";

/// The incidents the page lists: followed by its own tracker, or handed over by the controller
/// that keeps them in a database (so the page shows the ids the alerts carry).
struct IncidentBook {
    tracker: Option<Tracker>,
    by_id: BTreeMap<u64, Incident>,
}

/// The page's state: the fabric, the epochs so far, the incidents, and the subscribers to new
/// epochs.
#[derive(Clone)]
pub struct Page {
    fabric: Arc<String>,
    epochs: Arc<RwLock<Vec<Arc<String>>>>,
    incidents: Arc<Mutex<IncidentBook>>,
    tx: broadcast::Sender<Arc<String>>,
}

impl Page {
    pub fn new(topo: &Topology) -> Self {
        let view = FabricView::of(topo);
        let (tx, _) = broadcast::channel(256);
        Page {
            fabric: Arc::new(serde_json::to_string(&view).expect("plain data")),
            epochs: Arc::default(),
            incidents: Arc::new(Mutex::new(IncidentBook {
                tracker: Some(Tracker::new(TrackConfig::default())),
                by_id: BTreeMap::new(),
            })),
            tx,
        }
    }

    /// The incidents come from the controller's database from now on: `all` of them now, and
    /// [`Page::incidents_changed`] after each epoch.
    pub fn follow_incidents(&self, all: Vec<Incident>) {
        let mut book = self.incidents.lock().unwrap_or_else(|e| e.into_inner());
        book.tracker = None;
        book.by_id = all.into_iter().map(|i| (i.id, i)).collect();
    }

    /// Incidents an epoch opened or changed, as the controller's database has them.
    pub fn incidents_changed(&self, changed: &[Incident]) {
        let mut book = self.incidents.lock().unwrap_or_else(|e| e.into_inner());
        for i in changed {
            book.by_id.insert(i.id, i.clone());
        }
    }

    /// A new epoch report: kept, its incidents followed, and sent to every open page.
    pub fn push(&self, r: &EpochReport) {
        {
            let mut book = self.incidents.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(t) = book.tracker.as_mut() {
                let changed = t.observe(r, r.at.as_deref());
                for i in changed {
                    book.by_id.insert(i.id, i);
                }
            }
        }
        let line = Arc::new(serde_json::to_string(r).expect("plain data"));
        self.epochs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.clone());
        // No page open: nobody to tell.
        let _ = self.tx.send(line);
    }

    fn incidents_json(&self) -> String {
        let book = self.incidents.lock().unwrap_or_else(|e| e.into_inner());
        let all: Vec<&Incident> = book.by_id.values().collect();
        serde_json::to_string(&all).expect("plain data")
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
    let (p1, p2, p3, p4) = (page.clone(), page.clone(), page.clone(), page);
    let app = axum::Router::new()
        .route("/", get(|| async { Html(INDEX) }))
        .route(
            "/page/{name}",
            get(
                |axum::extract::Path(name): axum::extract::Path<String>| async move {
                    match ASSETS.iter().find(|(n, _, _)| *n == name) {
                        Some(&(_, kind, body)) => {
                            ([(axum::http::header::CONTENT_TYPE, kind)], body).into_response()
                        }
                        None => axum::http::StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .route(
            "/api/incidents",
            get(move || {
                let p = p4.clone();
                async move { json(p.incidents_json()) }
            }),
        )
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
