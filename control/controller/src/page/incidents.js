"use strict";
// The incident list beside the fabric: sortable by any column, searchable by switch or link.
// A click on an incident opens its link (or its switch, for a device).

const ROWS_AT_MOST = 200;

function subjectText(s) {
  if (s.kind === "link") return key(s.link[0], s.link[1]);
  return `${s.switch} (device, ${s.both ? "in and out" : s.inbound ? "in" : "out"})`;
}
function stateText(i) {
  return i.state === "flapping" ? `flapping ×${i.episodes}` : i.state;
}
const COLUMNS = [
  ["id", "#", i => i.id],
  ["subject", "subject", i => subjectText(i.subject)],
  ["state", "state", i => i.state],
  ["first", "since", i => i.first_epoch],
  ["last", "last", i => i.last_epoch],
  ["peak", "peak", i => i.peak.loss],
  ["now", "now", i => (i.blamed_now ? i.current.loss : -1)],
];

async function fetchIncidents() {
  try {
    state.incidents = await (await fetch("/api/incidents")).json();
  } catch (e) {
    return;
  }
  renderIncidents();
}

// What the search names: every word must be in the subject (a switch, a link `a→b`, `a b`);
// a word that is a switch's whole name names that switch (agg1_2, not agg1_20).
function words(q) { return q.split(/[\s,→>]+/).filter(w => w); }
function matches(subject, q) {
  const names = subject.kind === "link" ? subject.link : [subject.switch];
  const text = subjectText(subject);
  return words(q).every(w => index.byName.has(w) ? names.includes(w) : text.includes(w));
}

function renderIncidents() {
  const q = state.query.trim(), r = current();
  // Replaying, the incidents begun after the epoch shown are not shown.
  const upTo = r ? r.epoch : -1;
  let list = state.incidents.filter(i => i.first_epoch <= upTo && (!q || matches(i.subject, q)));
  const [, , val] = COLUMNS.find(c => c[0] === state.sort.col);
  list.sort((a, b) => {
    const x = val(a), y = val(b), c = x < y ? -1 : x > y ? 1 : 0;
    return state.sort.desc ? -c : c;
  });
  const shown = list.slice(0, ROWS_AT_MOST);
  let html = "<tr>" + COLUMNS.map(([col, label]) =>
    `<th data-col="${col}">${label}${state.sort.col === col ? (state.sort.desc ? " ▾" : " ▴") : ""}</th>`).join("") + "</tr>";
  for (const i of shown) {
    const since = i.first_at ? ` title="${esc(i.first_at)}"` : "";
    html += `<tr class="incident" data-id="${i.id}" data-state="${esc(i.state)}">`
      + `<td>${i.id}</td><td>${esc(subjectText(i.subject))}</td><td>${esc(stateText(i))}</td>`
      + `<td${since}>${i.first_epoch}</td><td>${i.last_epoch}</td>`
      + `<td><span class="swatch" style="background:${color(i.peak.loss)}"></span>${pct(i.peak.loss)}</td>`
      + `<td>${i.blamed_now ? pct(i.current.loss) : "–"}</td></tr>`;
  }
  const t = document.getElementById("incidents");
  t.innerHTML = html;
  for (const th of t.querySelectorAll("th")) {
    th.addEventListener("click", () => {
      state.sort = {col: th.dataset.col, desc: state.sort.col === th.dataset.col ? !state.sort.desc : true};
      renderIncidents();
    });
  }
  for (const tr of t.querySelectorAll("tr.incident")) {
    tr.addEventListener("click", () => openIncident(Number(tr.dataset.id)));
  }
  document.getElementById("incidents-more").textContent = list.length > shown.length
    ? `${list.length - shown.length} more; search to narrow` : list.length ? "" : "no incident" + (q ? " matches" : "");
}

function openIncident(id) {
  const i = state.incidents.find(x => x.id === id);
  if (!i) return;
  if (i.subject.kind === "link") {
    reveal(i.subject.link[0]);
    select(i.subject.link[0], i.subject.link[1]);
  } else {
    reveal(i.subject.switch);
  }
}

// Switches and links the search names, to open at once.
function renderSearch() {
  const q = state.query.trim(), box = document.getElementById("search-results");
  box.innerHTML = "";
  if (!q) return;
  const w = words(q), found = [];
  if (w.length === 2 && index.linksOf.has(w[0])
      && index.linksOf.get(w[0]).some(l => l[0] === w[0] && l[1] === w[1])) {
    found.push({text: key(w[0], w[1]), open: () => { reveal(w[0]); select(w[0], w[1]); }});
  }
  // The switch of that exact name first, then those whose name holds the word.
  const named = w.length !== 1 ? [] : state.fabric.switches
    .filter(s => s.name.includes(w[0]))
    .sort((a, b) => (b.name === w[0]) - (a.name === w[0]));
  for (const s of named.slice(0, 12)) found.push({text: s.name, open: () => reveal(s.name)});
  for (const f of found) {
    const a = document.createElement("span");
    a.className = "result";
    a.textContent = f.text;
    a.addEventListener("click", f.open);
    box.appendChild(a);
  }
}
