"use strict";
// Loads the fabric, the epochs and the incidents, then follows the run live.

function render() {
  if (!state.big) paintLinks();
  renderOverview();
  showEpoch();
  showLink();
  renderIncidents();
  showTime();
}

// `#incident=ID` (what an alert links to) opens that incident's link or switch; `#link=FROM,TO`
// that link's history.
function fromHash() {
  const h = decodeURIComponent(location.hash);
  const m = /^#link=([^,]+),(.+)$/.exec(h);
  if (m) { reveal(m[1]); select(m[1], m[2]); }
  const i = /^#incident=(\d+)$/.exec(h);
  if (i) openIncident(Number(i[1]));
}
window.addEventListener("hashchange", fromHash);

// New epochs arrive one by one; the incidents are fetched again after them, one fetch at a time.
let refetching = false, refetchAgain = false;
async function refetchIncidents() {
  if (refetching) { refetchAgain = true; return; }
  refetching = true;
  do { refetchAgain = false; await fetchIncidents(); } while (refetchAgain);
  refetching = false;
}

async function start() {
  state.fabric = await (await fetch("/api/fabric")).json();
  document.getElementById("fabric-name").textContent = state.fabric.name;
  state.big = state.fabric.switches.length > DRAW_AT_MOST || /[?&]overview\b/.test(location.search);
  indexFabric();
  document.getElementById(state.big ? "overview" : "fabric-wrap").hidden = false;
  if (!state.big) drawFabric();
  const [epochs, incidents] = await Promise.all([
    fetch("/api/epochs").then(r => r.json()), fetch("/api/incidents").then(r => r.json())]);
  state.epochs = epochs;
  state.incidents = incidents;
  render();
  fromHash();
  document.getElementById("time").addEventListener("input", e => {
    const i = Number(e.target.value);
    state.at = i >= state.epochs.length - 1 ? null : i;
    render();
  });
  document.getElementById("live").addEventListener("click", () => { state.at = null; render(); });
  document.getElementById("search").addEventListener("input", e => {
    state.query = e.target.value;
    renderSearch();
    renderIncidents();
  });
  // Interactive: what a test reads (milliseconds from the start of the page's navigation).
  window.canaryInteractiveMs = performance.now();
  document.body.dataset.ready = "1";
  const es = new EventSource("/api/events");
  es.onopen = () => { document.getElementById("status").textContent = "live"; };
  es.onerror = () => { document.getElementById("status").textContent = "not connected (the run may have ended)"; };
  es.onmessage = m => { state.epochs.push(JSON.parse(m.data)); render(); refetchIncidents(); };
  es.addEventListener("reload", async () => {
    state.epochs = await (await fetch("/api/epochs")).json();
    render();
    refetchIncidents();
  });
}
start();
