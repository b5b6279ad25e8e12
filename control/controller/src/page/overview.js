"use strict";
// The overview of a large fabric: groups (pods, top-layer blocks) by layer as a grid coloured
// by their worst blamed link; a click drills into a group's switches, then into one switch's
// links, then into a link's history (the link panel).

const index = {byName: new Map(), linksOf: new Map(), members: [], layers: []};

// Built once from the fabric: each switch by name, its links, each group's switches by layer.
function indexFabric() {
  const f = state.fabric;
  index.members = f.groups.map(() => new Map());
  for (const s of f.switches) {
    index.byName.set(s.name, s);
    index.linksOf.set(s.name, []);
    const m = index.members[s.group];
    if (!m.has(s.layer)) m.set(s.layer, []);
    m.get(s.layer).push(s);
  }
  for (const l of f.links) {
    index.linksOf.get(l[0]).push(l);
    index.linksOf.get(l[1]).push(l);
  }
  const pods = f.switches.filter(s => f.groups[s.group].kind === "pod").map(s => s.layer);
  index.layers = [...new Set(pods)].sort((a, b) => b - a);
}

// Each switch's worst blamed loss and count of blamed links (either end) in epoch `r`.
function worstBySwitch(r) {
  const m = new Map();
  for (const b of (r ? r.blamed : [])) {
    for (const s of b.link) {
      const w = m.get(s) || {loss: 0, n: 0};
      w.loss = Math.max(w.loss, b.loss);
      w.n += 1;
      m.set(s, w);
    }
  }
  return m;
}
function worstOf(switches, worst) {
  let out;
  for (const s of switches) {
    const w = worst.get(s.name);
    if (w) out = {loss: Math.max(out ? out.loss : 0, w.loss), n: (out ? out.n : 0) + w.n};
  }
  return out;
}
function paint(node, w, what) {
  node.style.background = w ? color(w.loss) : "#9db09d";
  node.dataset.worst = w ? String(w.loss) : "0";
  node.title = w ? `${what}: ${w.n} blamed link ends, worst ${pct(w.loss)}` : `${what}: nothing blamed`;
}

function go(level, group, sw) {
  state.view = {level, group, sw};
  renderOverview();
}

function crumbs() {
  const v = state.view, f = state.fabric, parts = [];
  parts.push(v.level === "fabric" ? "fabric" : `<a data-go="fabric">fabric</a>`);
  if (v.group !== null) {
    const name = esc(f.groups[v.group].name);
    parts.push(v.level === "group" ? name : `<a data-go="group">${name}</a>`);
  }
  if (v.sw) parts.push(esc(v.sw));
  const c = document.getElementById("crumbs");
  c.innerHTML = parts.join(" › ");
  for (const a of c.querySelectorAll("a")) {
    a.addEventListener("click", () => go(a.dataset.go, a.dataset.go === "fabric" ? null : v.group, null));
  }
}

function renderOverview() {
  if (!state.big) return;
  crumbs();
  const worst = worstBySwitch(current()), v = state.view;
  const box = document.getElementById("overview");
  box.innerHTML = "";
  if (v.level === "fabric") fabricGrid(box, worst);
  else if (v.level === "group") groupTiles(box, worst);
  else switchLinks(box);
}

function fabricGrid(box, worst) {
  const f = state.fabric;
  const pods = f.groups.map((g, i) => i).filter(i => f.groups[i].kind === "pod");
  const tops = f.groups.map((g, i) => i).filter(i => f.groups[i].kind === "top");
  const table = document.createElement("table");
  table.className = "grid";
  const cell = (tr, g, layer, what) => {
    const td = document.createElement("td");
    td.className = "cell";
    td.id = `cell-${g}-${layer}`;
    td.dataset.group = String(g);
    const w = worstOf(index.members[g].get(layer) || [], worst);
    paint(td, w, what);
    td.textContent = w ? String(w.n) : "";
    td.addEventListener("click", () => go("group", g, null));
    tr.appendChild(td);
  };
  if (tops.length) {
    const tr = table.insertRow();
    tr.insertCell().outerHTML = "<th>top</th>";
    for (const g of tops) {
      const layer = index.members[g].keys().next().value;
      cell(tr, g, layer, f.groups[g].name);
    }
  }
  for (const layer of index.layers) {
    const tr = table.insertRow();
    tr.insertCell().outerHTML = `<th>layer ${layer}</th>`;
    for (const g of pods) cell(tr, g, layer, `${f.groups[g].name}, layer ${layer}`);
  }
  const head = table.insertRow();
  head.insertCell().outerHTML = "<th></th>";
  for (const g of pods) head.insertCell().outerHTML = `<th>${g % 4 === 0 ? esc(f.groups[g].name.replace("pod ", "")) : ""}</th>`;
  box.innerHTML = `<div>${f.switches.length} switches, ${f.links.length} directed links; `
    + `${tops.length} top blocks (row "top"), ${pods.length} pods (columns, numbered below); `
    + `each cell shows how many blamed link ends it holds. Click a cell to open it.</div>`;
  box.appendChild(table);
}

function groupTiles(box, worst) {
  const m = index.members[state.view.group];
  for (const layer of [...m.keys()].sort((a, b) => b - a)) {
    const h = document.createElement("div");
    h.textContent = `layer ${layer}`;
    box.appendChild(h);
    const tiles = document.createElement("div");
    tiles.className = "tiles";
    for (const s of m.get(layer)) {
      const t = document.createElement("div");
      t.className = "switch-tile";
      t.id = "tile-" + s.name;
      const w = worst.get(s.name);
      paint(t, w, s.name);
      t.textContent = s.name + (w ? ` (${w.n})` : "");
      t.addEventListener("click", () => go("switch", s.group, s.name));
      tiles.appendChild(t);
    }
    box.appendChild(tiles);
  }
}

// One switch's links, in and out, with what the epoch shown says of each.
function switchLinks(box) {
  const r = current(), blamed = blamedIn(r), evidence = evidenceIn(r);
  const undecided = new Set(((r || {}).undecided || []).flat().map(l => key(l[0], l[1])));
  const links = index.linksOf.get(state.view.sw) || [];
  let html = `<table id="switch-links"><tr><th>link</th><th>blamed</th><th>evidence</th></tr>`;
  for (const [a, b] of links) {
    const k = key(a, b), x = blamed.get(k), ev = evidence.get(k);
    const what = x ? `<span class="swatch" style="background:${color(x.loss)}"></span>${pct(x.loss)}`
      + (x.held ? " held" : "") + (x.since !== undefined ? ` since ${x.since}` : "")
      : undecided.has(k) ? "undecided" : "";
    const seen = !ev ? "" : ev.unwatched ? "unwatched" : ev.min_loss >= 1 ? "too few packets"
      : `shows ≥ ${pct(ev.min_loss)}` + (ev.age_epochs ? `, ${ev.age_epochs} epochs old` : "");
    html += `<tr class="link-row" id="row-${esc(a)}-${esc(b)}" data-from="${esc(a)}" data-to="${esc(b)}"`
      + ` data-blamed="${x ? 1 : 0}"><td>${esc(k)}</td><td>${what}</td><td>${seen}</td></tr>`;
  }
  box.innerHTML = html + "</table>";
  for (const tr of box.querySelectorAll("tr.link-row")) {
    tr.addEventListener("click", () => select(tr.dataset.from, tr.dataset.to));
  }
}

// Opens the switch a link or device starts at, whatever the view is now.
function reveal(sw) {
  const s = index.byName.get(sw);
  if (s && state.big) go("switch", s.group, s.name);
}
