"use strict";
// The whole fabric drawn at natural size: small fabrics (a lab, k ≤ 8).

function drawFabric() {
  const f = state.fabric, svg = document.getElementById("fabric");
  // Drawn at its natural size (names stay readable on big fabrics); the frame scrolls.
  svg.setAttribute("viewBox", `0 0 ${f.width} ${f.height}`);
  svg.setAttribute("width", f.width);
  svg.setAttribute("height", f.height);
  svg.innerHTML = "";
  const pos = new Map(f.switches.map(s => [s.name, s]));
  const links = el("g", {id: "links"}, svg);
  for (const [a, b] of f.links) {
    const p = pos.get(a), q = pos.get(b);
    const dx = q.x - p.x, dy = q.y - p.y, len = Math.max(1, Math.hypot(dx, dy));
    const nx = -dy / len * 5, ny = dx / len * 5;
    const line = el("line", {
      x1: p.x + nx, y1: p.y + ny, x2: q.x + nx, y2: q.y + ny,
      stroke: "#ccc", "stroke-width": 2, class: "link",
      id: "link-" + a + "-" + b, "data-from": a, "data-to": b, "data-blamed": "0",
    }, links);
    const title = el("title", {}, line);
    title.textContent = key(a, b);
    line.addEventListener("click", () => select(a, b));
  }
  el("g", {id: "labels"}, svg);
  for (const s of f.switches) {
    const g = el("g", {}, svg);
    el("rect", {x: s.x - 38, y: s.y - 13, width: 76, height: 26, rx: 5,
      fill: s.monitor ? "#243447" : "#fff", stroke: "#243447"}, g);
    const t = el("text", {x: s.x, y: s.y + 4, "text-anchor": "middle", "font-size": 12,
      fill: s.monitor ? "#fff" : "#243447"}, g);
    t.textContent = s.name;
  }
}

function midpoint(line) {
  return [(Number(line.getAttribute("x1")) + Number(line.getAttribute("x2"))) / 2,
    (Number(line.getAttribute("y1")) + Number(line.getAttribute("y2"))) / 2];
}

function paintLinks() {
  const r = current(), blamed = blamedIn(r), evidence = evidenceIn(r);
  // Candidates of a loss the counts cannot place yet: marked, none blamed.
  const undecided = new Set(((r || {}).undecided || []).flat().map(l => key(l[0], l[1])));
  const labels = document.getElementById("labels");
  labels.innerHTML = "";
  for (const line of document.querySelectorAll(".link")) {
    const k = key(line.dataset.from, line.dataset.to), b = blamed.get(k);
    line.setAttribute("stroke", color(b && b.loss));
    line.setAttribute("stroke-width", b ? 4 : 2);
    line.dataset.blamed = b ? "1" : "0";
    const open = !b && undecided.has(k);
    line.dataset.undecided = open ? "1" : "0";
    if (open) line.setAttribute("stroke", "#d98c00");
    const ev = evidence.get(k);
    const weak = !!ev && ev.min_loss >= WEAK;
    line.dataset.weak = weak ? "1" : "0";
    if (weak) line.setAttribute("stroke-dasharray", "4 3"); else line.removeAttribute("stroke-dasharray");
    line.setAttribute("stroke-opacity", weak && !b ? 0.5 : 1);
    if (open) {
      const [x, y] = midpoint(line);
      el("text", {x: x + 6, y: y, "font-size": 12, fill: "#d98c00", "font-weight": "bold",
        class: "undecided-label"}, labels).textContent = "?";
    }
    if (b) {
      const [x, y] = midpoint(line);
      const t = el("text", {x: x + 6, y: y, "font-size": 12, fill: color(b.loss),
        "font-weight": "bold", class: "blame-label"}, labels);
      t.textContent = pct(b.loss) + (b.stage !== undefined ? " (stage " + b.stage + ")" : "")
        + (b.held ? " held" : "");
      line.dataset.held = b.held ? "1" : "0";
    }
  }
}
