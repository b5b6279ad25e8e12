"use strict";
// What every part of the page shares: the state, the colours, and the epoch shown.
const SVGNS = "http://www.w3.org/2000/svg";
// A fabric with more switches than this opens on the overview instead of the full drawing.
const DRAW_AT_MOST = 80;
const state = {
  fabric: null, epochs: [], incidents: [], selected: null,
  // The epoch shown: null follows the live end; a number replays that index.
  at: null,
  // Where the overview is: the whole fabric, a group (pod), or one switch.
  view: {level: "fabric", group: null, sw: null},
  query: "", sort: {col: "id", desc: true},
};
// Counts page loads in this tab: a live update must not reload the page.
sessionStorage.canaryLoads = String(Number(sessionStorage.canaryLoads || 0) + 1);

function el(name, attrs, parent) {
  const e = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
function pct(x) {
  if (x >= 0.1) return (x * 100).toFixed(0) + " %";
  if (x >= 0.01) return (x * 100).toFixed(1) + " %";
  return (x * 100).toFixed(2) + " %";
}
function color(loss) {
  if (loss === undefined) return "#ccc";
  if (loss >= 0.05) return "#b80000";
  if (loss >= 0.01) return "#e8590c";
  return "#f5a623";
}
function key(a, b) { return a + "→" + b; }
function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function last() { return state.epochs[state.epochs.length - 1]; }
// The epoch shown, and the epochs up to it.
function current() { return state.at === null ? last() : state.epochs[state.at]; }
function shownEpochs() { return state.at === null ? state.epochs : state.epochs.slice(0, state.at + 1); }
function blamedIn(r) {
  const m = new Map();
  for (const b of (r ? r.blamed : [])) m.set(key(b.link[0], b.link[1]), b);
  return m;
}
// A link whose evidence could not show a loss this small (or that nobody watches) is weak.
const WEAK = 0.01;
function evidenceIn(r) {
  const m = new Map(), e = r && r.evidence_map;
  if (!e) return m;
  for (const x of e.links) m.set(key(x.link[0], x.link[1]), x);
  for (const l of e.unwatched || []) m.set(key(l[0], l[1]), {link: l, min_loss: 1, packets: 0, unwatched: true});
  return m;
}
function row(k, v, warn) {
  return `<tr><td class="k">${esc(k)}</td><td${warn ? ' class="warn"' : ""}>${v}</td></tr>`;
}

// The epoch panel. A long list (a mass onset on a large fabric) is cut, the rest counted.
const LIST_AT_MOST = 40;
function listed(items, show) {
  const head = items.slice(0, LIST_AT_MOST).map(show).join("<br>");
  return items.length > LIST_AT_MOST ? head + `<br>… and ${items.length - LIST_AT_MOST} more` : head;
}
function showEpoch() {
  const r = current();
  if (!r) return;
  document.getElementById("epoch-no").textContent = r.epoch;
  document.getElementById("epoch-title").textContent = state.at === null ? "Last epoch" : `Epoch ${r.epoch} (replay)`;
  let html = "<table>";
  if (r.at) html += row("at", esc(r.at));
  if (r.incomplete) html += row("incomplete", esc(r.incomplete), true);
  html += row("packets", `${r.packets_counted} counted, ${r.packets_lost} lost`);
  html += row("flows", `${r.flows_counted} counted (${r.flows_counted_v6} IPv6), ${r.flows_monitored} monitored`);
  html += row("segments", `${r.segments_observed}/${r.segments_total} observed`);
  html += row("blamed", r.blamed.length ? listed(r.blamed, b => esc(key(b.link[0], b.link[1])) + " " + pct(b.loss)
    + (b.since !== undefined ? ` since epoch ${b.since}` : "")
    + (b.held ? " (held: not named this epoch, not cleared)" : "")) : "nothing");
  for (const u of (r.undecided || []).slice(0, LIST_AT_MOST)) {
    html += row("undecided", u.map(l => esc(key(l[0], l[1]))).join(" or ")
      + ": a loss the counts cannot place on one of them yet", true);
  }
  // An all-clear ends a blame on a test; a correction moves it to the link its loss is on.
  for (const c of (r.cleared || []).slice(0, LIST_AT_MOST)) {
    const was = esc(key(c.link[0], c.link[1])) + ` (blamed epochs ${c.since}–${c.last})`;
    html += c.corrected_to
      ? row("corrected", `${was}: its segments' loss is on ${esc(key(c.corrected_to[0], c.corrected_to[1]))}`, true)
      : row("all-clear", was);
  }
  const p = r.phases_ms;
  html += row("phases (ms)", `harvest ${p.harvest.toFixed(1)}, detect ${p.detect.toFixed(2)}, localize ${p.localize.toFixed(2)}, select ${p.select.toFixed(2)}; drain ${r.drain_ms.toFixed(0)}`);
  if (r.watch) html += row("watching", esc(`round ${r.watch.round + 1} of ${r.watch.rounds}, ${r.watch.watched} segments`));
  if (r.unreachable.length) html += row("unreachable", esc(r.unreachable.join(", ")), true);
  for (const d of (r.disturbed || []).slice(0, LIST_AT_MOST)) html += row(d.switch, esc(d.detail), true);
  for (const t of r.tables_full || []) html += row(t.switch, `${esc(t.table)} full (${t.size}), ${t.refused} refused`, true);
  document.getElementById("epoch").innerHTML = html + "</table>" + details(r);
}

// What a healthy run also counts: the measurement's own bookkeeping, not a fault. Out of the
// way, one sentence each.
const COUNTERS = [
  ["segments_short", "segments counted fewer than α packets or β flows this epoch: they wait for more in the window"],
  ["segments_skipped", "segments left out of detection this epoch (a switch on them was down, restarted or late)"],
  ["dirty_dsm_buckets", "downstream meter buckets two flows shared (hash collisions): left out"],
  ["dirty_usm_buckets", "upstream meter buckets two flows shared (hash collisions): left out"],
  ["no_clean_usm", "flows clean downstream but with no clean bucket upstream: left out"],
  ["undecodable", "downstream records whose path filter matches no segment into the switch"],
  ["ambiguous", "downstream records whose path filter matches several segments"],
  ["upstream_missing", "flows whose upstream switch was not read this epoch"],
  ["negative_loss", "flows with more packets downstream than upstream (counted across the epoch flip)"],
  ["torn", "flows whose buckets disagree across rows: read while a packet was being counted; left out"],
  ["late", "packets that reached their downstream switch after the harvest, found by reading it again before judging the epoch"],
];
function details(r) {
  const a = Object.assign({segments_short: r.segments_short, segments_skipped: r.segments_skipped}, r.anomalies || {});
  const shown = COUNTERS.filter(([k]) => a[k] > 0);
  const rows = shown.map(([k, what]) => `<tr><td class="k">${a[k]}</td><td>${esc(what)} (<code>${k}</code>)</td></tr>`);
  return `<details id="details"><summary>details: ${shown.length} counter${shown.length === 1 ? "" : "s"} of the measurement</summary>`
    + (rows.length ? `<table>${rows.join("")}</table>` : "nothing to note") + "</details>";
}

// The time control: the slider replays past epochs; "live" follows the new ones again.
function showTime() {
  const t = document.getElementById("time"), n = state.epochs.length;
  t.max = String(Math.max(0, n - 1));
  t.value = String(state.at === null ? Math.max(0, n - 1) : state.at);
  const r = current();
  document.getElementById("time-label").textContent = !r ? "" : state.at === null
    ? "following the live end" : `replaying epoch ${r.epoch} of ${last().epoch}`;
  document.getElementById("live").disabled = state.at === null;
}
