"use strict";
// The link panel: a link's state in the epoch shown, its history up to it, and the segments
// over it that lost packets.

function select(a, b) {
  state.selected = [a, b];
  showLink();
}

function showLink() {
  if (!state.selected) return;
  const [a, b] = state.selected, k = key(a, b);
  document.getElementById("link-panel").hidden = false;
  document.getElementById("link-name").textContent = k;
  const hist = shownEpochs().map(r => {
    const x = blamedIn(r).get(k);
    return {epoch: r.epoch, loss: x ? x.loss : 0, blamed: !!x, ci: x && x.ci95 ? x.ci95 : null};
  });
  const now = hist[hist.length - 1];
  const times = hist.filter(h => h.blamed).length;
  const band = now && now.ci ? ` (95 %: ${pct(now.ci[0])}–${pct(now.ci[1])})` : "";
  const when = state.at === null ? "now" : `in epoch ${now ? now.epoch : "–"}`;
  document.getElementById("link-now").innerHTML = now && now.blamed
    ? `blamed ${when}: estimated loss <b>${pct(now.loss)}</b>${band}; blamed in ${times} of ${hist.length} epochs`
    : `not blamed ${state.at === null ? "in the last epoch" : when}; blamed in ${times} of ${hist.length} epochs`;
  const ev = evidenceIn(current()).get(k);
  document.getElementById("link-now").innerHTML += !ev ? "" : ev.unwatched
    ? '<br><span class="warn">unwatched: no segment through it has been counted</span>'
    : `<br>evidence: ${ev.packets} packets${ev.age_epochs ? `, ${ev.age_epochs} epochs old` : ""}; `
      + (ev.min_loss >= 1 ? '<span class="warn">too few to show any loss</span>'
        : `shows a loss of ${pct(ev.min_loss)} or more`);
  drawHistory(hist);
  // Segments of the shown epoch's window that lost packets and run over this link.
  const r = current(), segs = [];
  for (const s of (r ? r.lossy_segments : [])) {
    for (let i = 0; i + 1 < s.segment.length; i++) {
      if (s.segment[i] === a && s.segment[i + 1] === b) { segs.push(s); break; }
    }
  }
  document.getElementById("link-segments").innerHTML = segs.length
    ? "<b>segments over it that lost packets</b><table>" + segs.map(s => row(s.segment.join("→"), `${s.lost}/${s.sent} (${pct(s.loss)})${s.used ? "" : ", set aside"}`)).join("") + "</table>"
    : "no lossy segment over it in the window";
}

function drawHistory(hist) {
  const svg = document.getElementById("history");
  svg.innerHTML = "";
  const W = 380, H = 120, L = 40, B = 20;
  const top = Math.max(0.01, ...hist.map(h => h.ci ? h.ci[1] : h.loss)) * 1.15;
  el("line", {x1: L, y1: H - B, x2: W - 5, y2: H - B, stroke: "#999"}, svg);
  el("line", {x1: L, y1: 5, x2: L, y2: H - B, stroke: "#999"}, svg);
  const ty = el("text", {x: 2, y: 14, "font-size": 10}, svg); ty.textContent = pct(top);
  const tx = el("text", {x: W - 60, y: H - 4, "font-size": 10}, svg); tx.textContent = "epoch →";
  const n = Math.max(1, hist.length - 1);
  const pts = hist.map((h, i) => [L + (W - L - 8) * i / n, (H - B) - (H - B - 8) * h.loss / top]);
  const yOf = v => (H - B) - (H - B - 8) * v / top;
  // The 95 % band over the epochs that blamed the link.
  const withCi = hist.map((h, i) => [h, pts[i][0]]).filter(([h]) => h.ci);
  if (withCi.length) {
    const upper = withCi.map(([h, x]) => `${x},${yOf(h.ci[1])}`);
    const lower = withCi.slice().reverse().map(([h, x]) => `${x},${yOf(h.ci[0])}`);
    el("polygon", {points: upper.concat(lower).join(" "), fill: "#b80000", "fill-opacity": 0.15,
      stroke: "none", id: "history-band"}, svg);
  }
  el("polyline", {points: pts.map(p => p.join(",")).join(" "), fill: "none", stroke: "#b80000", "stroke-width": 1.5}, svg);
  hist.forEach((h, i) => {
    if (h.blamed) {
      const c = el("circle", {cx: pts[i][0], cy: pts[i][1], r: 2.5, fill: "#b80000", class: "history-point"}, svg);
      const t = el("title", {}, c); t.textContent = `epoch ${h.epoch}: ${pct(h.loss)}`;
    }
  });
}
