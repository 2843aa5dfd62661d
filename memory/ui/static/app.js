// The memory browser's page: plain DOM, no framework, no build step. Every text from the store
// is set with textContent, never as HTML: a memory may hold anything.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (sel) => document.querySelector(sel);
const list = $("#list"), detail = $("#detail");
let tab = "timeline", selected = null, searchSeq = 0;

async function api(path, body) {
  const init = { headers: { "X-Dualmem-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function notice(text) {
  const n = $("#notice");
  n.textContent = text;
  n.classList.add("shown");
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => n.classList.remove("shown"), 2500);
}

function failed(error) { notice(error.message); }

function row(memory, extra) {
  const item = el("div", { class: "item" + (memory.kind === "session_insight" ? " session" : ""),
                           "data-id": memory.id, onclick: () => showMemory(memory.id) },
    el("div", { class: "meta" }, el("span", { class: "kind " + memory.kind }, memory.kind),
       el("span", {}, memory.created_at.slice(0, 16).replace("T", " ")),
       extra === undefined ? "" : el("span", {}, extra)),
    el("div", { class: "name" }, memory.name),
    el("div", { class: "text" }, memory.text));
  if (memory.id === selected) item.classList.add("selected");
  return item;
}

// What the list shows (a tab's name, or "search:" and the query): tests wait on it.
function fill(view, ...nodes) { list.dataset.view = view; list.replaceChildren(...nodes); }

async function showSearch(query) {
  const seq = ++searchSeq;
  const data = await api("/api/search?q=" + encodeURIComponent(query));
  if (seq !== searchSeq) return;  // a later keystroke's answer wins
  fill("search:" + query, ...(data.hits.length ? data.hits.map((hit) => row(hit, "score " + hit.score))
                            : [el("p", { class: "hint item" }, "No matches.")]));
}

async function showTimeline() {
  const data = await api("/api/timeline");
  const nodes = [];
  let day = "";
  for (const memory of data.items) {
    const d = memory.created_at.slice(0, 10);
    if (d !== day) { nodes.push(el("div", { class: "day" }, d)); day = d; }
    nodes.push(row(memory));
  }
  if (data.total > data.items.length) {
    nodes.push(el("p", { class: "hint item" }, `${data.items.length} newest of ${data.total}; search to find older ones.`));
  }
  fill("timeline", ...(nodes.length ? nodes : [el("p", { class: "hint item" }, "No memories yet.")]));
}

function decisionRow(adr) {
  return el("div", { class: "item", onclick: () => showDecision(adr) },
    el("div", { class: "meta" }, el("span", { class: "kind adr" }, adr.adr_id),
       el("span", {}, adr.status), adr.superseded_by ? el("span", {}, "→ " + adr.superseded_by) : ""),
    el("div", { class: "name" + (adr.in_force ? "" : " retired") }, adr.title),
    el("div", { class: "text" }, adr.decision));
}

async function showDecisions() {
  const data = await api("/api/decisions");
  fill("decisions", el("div", { class: "day" }, `In force (${data.in_force.length})`),
       ...data.in_force.map(decisionRow),
       el("div", { class: "day" }, `Superseded or deprecated (${data.retired.length})`),
       ...data.retired.map(decisionRow));
}

async function showWorkset() {
  const data = await api("/api/workset");
  const nodes = [];
  for (const s of data.sessions) {
    nodes.push(el("div", { class: "day" }, "session " + s.session));
    for (const file of s.files) {
      nodes.push(el("div", { class: "item", onclick: () => { $("#search").value = file; showSearch(file).catch(failed); } },
                    el("div", { class: "name" }, file)));
    }
  }
  fill("workset", ...(nodes.length ? nodes : [el("p", { class: "hint item" }, "No session has recorded a working set (the hooks record one).")]));
}

async function showDuplicates() {
  const data = await api("/api/duplicates");
  const nodes = [];
  for (const set of data.sets) {
    const merge = el("button", { class: "merge", "data-keep": set.keep.id, onclick: () => mergeSet(set).catch(failed) },
                     `Merge ${set.others.length} into the oldest`);
    nodes.push(el("div", { class: "day" }, `${set.others.length + 1} say the same `, merge),
               row(set.keep, "kept"), ...set.others.map((m) => row(m, "merged on request")));
  }
  fill("duplicates", ...(nodes.length ? nodes : [el("p", { class: "hint item" }, "No near-duplicates.")]));
}

async function mergeSet(set) {
  const done = await api(`/api/duplicates/${encodeURIComponent(set.keep.id)}/merge`, {});
  notice(`Merged ${done.merged.length}; their texts are in their histories.`);
  await showDuplicates();
}

async function showStatus() {
  const data = await api("/api/status");
  fill("status", el("pre", { id: "status-text" }, data.text));
}

// A structured memory's body is JSON: shown indented, edited as stored.
function pretty(body) {
  try {
    const value = JSON.parse(body);
    if (value && typeof value === "object") return JSON.stringify(value, null, 2);
  } catch (error) { /* free text */ }
  return body;
}

function field(name, value) {
  return [el("span", {}, name), el("span", {}, value === null || value === undefined ? "" : String(value))];
}

async function showMemory(id) {
  selected = id;
  for (const item of list.querySelectorAll(".item")) item.classList.toggle("selected", item.dataset.id === id);
  const data = await api("/api/memory/" + encodeURIComponent(id));
  const versions = data.history.versions;
  const m = data.memory || versions[versions.length - 1].episode;
  const body = el("pre", { id: "body" }, pretty(m.body));
  const actions = el("div", { class: "actions" });
  const buttons = data.memory ? [["Edit", () => editMemory(m, body, actions), "primary"],
                                 ["Forget", () => forgetMemory(m, actions), "danger"]]
                              : [["Restore", () => restoreMemory(m), "primary"]];
  if (data.memory && m.kind === "adr" && !data.history.superseded_by) {
    buttons.push(["Supersede", () => supersedeDecision(m, actions)]);
  }
  for (const [label, run, kind] of buttons) {
    actions.append(el("button", { class: kind || "", onclick: () => run().catch(failed) }, label));
  }
  const fields = [...field("id", m.id), ...field("kind", m.kind), ...field("group", m.group_id),
                  ...field("created", m.created_at), ...field("source", m.source)];
  if (m.valid_at) fields.push(...field("valid from", m.valid_at));
  if (m.invalid_at) fields.push(...field("invalid from", m.invalid_at));
  if (data.history.superseded_by) fields.push(...field("superseded by", data.history.superseded_by));
  detail.replaceChildren(el("h2", { class: data.memory ? "" : "retired" }, m.name),
                         data.memory ? "" : el("p", { class: "hint", id: "forgotten" }, "Forgotten: restore brings it back."),
                         el("div", { class: "fields" }, ...fields), actions, body,
                         historyList(data.history));
}

function historyList(history) {
  const items = history.versions.map((v) => el("li", {},
    el("strong", {}, `${v.at.slice(0, 16).replace("T", " ")} ${v.change}`),
    v.reason ? ` (${v.reason})` : "", el("pre", { class: "retired" }, pretty(v.episode.body))));
  for (const fact of history.retired_facts) {
    items.push(el("li", { class: "retired" }, `fact retired ${(fact.expired_at || "").slice(0, 10)}: ${fact.fact}`));
  }
  return el("div", { class: "history" }, el("h3", {}, "History"),
            items.length ? el("ul", {}, ...items) : el("p", { class: "hint" }, "No earlier versions."));
}

function form(actions, fields, submit) {
  const inputs = fields.map(([name, value, multi]) => multi
    ? el("textarea", { name }, value) : el("input", { name, value, placeholder: name }));
  const save = el("button", { class: "primary", onclick: () => submit(...inputs.map((i) => i.value)).catch(failed) }, "Save");
  const cancel = el("button", { onclick: () => showMemory(selected).catch(failed) }, "Cancel");
  actions.replaceChildren(...inputs, save, cancel);
  inputs[0].focus();
}

async function editMemory(memory, body, actions) {
  body.remove();
  form(actions, [["body", memory.body, true]], async (text) => {
    await api(`/api/memory/${encodeURIComponent(memory.id)}/edit`, { body: text });
    notice("Saved; the earlier text is in its history.");
    await showMemory(memory.id);
  });
}

async function forgetMemory(memory, actions) {
  form(actions, [["why forget it?", ""]], async (reason) => {
    await api(`/api/memory/${encodeURIComponent(memory.id)}/forget`, { reason });
    notice("Forgotten; restore brings it back.");
    await showMemory(memory.id);
  });
}

async function restoreMemory(memory) {
  await api(`/api/memory/${encodeURIComponent(memory.id)}/restore`, {});
  notice("Restored.");
  await showMemory(memory.id);
}

async function supersedeDecision(memory, actions) {
  form(actions, [["title of the new decision", ""], ["decision", "", true]], async (title, decision) => {
    const made = await api(`/api/decisions/${encodeURIComponent(memory.id)}/supersede`, { title, decision });
    notice(`${made.decision.adr_id} now supersedes it.`);
    await showMemory(memory.id);
  });
}

function showDecision(adr) {
  detail.replaceChildren(el("h2", {}, `${adr.adr_id}: ${adr.title}`),
    el("div", { class: "fields" }, ...field("status", adr.status), ...field("in force", adr.in_force),
       ...field("supersedes", adr.supersedes), ...field("superseded by", adr.superseded_by),
       ...field("decided", adr.decided_at || adr.created_at), ...field("invalid from", adr.invalid_at)),
    el("pre", {}, [adr.decision, adr.context && "Context: " + adr.context,
                   adr.rationale && "Rationale: " + adr.rationale].filter(Boolean).join("\n\n")));
}

// The entity and fact graph around a file, module or task: facts as edges, drawn by
// cytoscape.js; the slider shows the graph as it stood at a time (facts valid then).
let graph = null;

function validAt(fact, at) {
  return (!fact.valid_at || fact.valid_at <= at) && (!fact.invalid_at || fact.invalid_at > at);
}

async function showGraph() {
  const around = (detail.querySelector("#around") || {}).value || "";
  if (!detail.querySelector("#graph-canvas")) {
    detail.replaceChildren($("#graph-template").content.cloneNode(true));
    detail.querySelector("#around").addEventListener("change", () => showGraph().catch(failed));
    detail.querySelector("#asof").addEventListener("input", () => drawAsOf());
  }
  fill("graph", el("p", { class: "hint item" }, around ? "Loading…" : "Name a file, module or task above the graph."));
  if (!around) return;
  const data = await api("/api/graph?around=" + encodeURIComponent(around));
  graph = data;
  fill("graph", ...data.facts.map((f) => el("div", { class: "item fact" },
    el("div", { class: "meta" }, el("span", {}, (f.valid_at || "").slice(0, 10) || "always"),
       el("span", {}, f.invalid_at ? "until " + f.invalid_at.slice(0, 10) : "in force")),
    el("div", { class: "text" + (f.invalid_at ? " retired" : "") }, f.fact))),
    ...(data.facts.length ? [] : [el("p", { class: "hint item" }, data.reason || "No facts found.")]));
  drawAsOf();
}

function drawAsOf() {
  if (!graph) return;
  const times = graph.facts.flatMap((f) => [f.valid_at, f.invalid_at]).filter(Boolean).sort();
  const slider = detail.querySelector("#asof");
  const at = times.length ? times[Math.round((times.length - 1) * slider.value / 100)] : "";
  const now = slider.value === "100";
  detail.querySelector("#asof-label").textContent = now ? "now" : at.slice(0, 10);
  const facts = graph.facts.filter((f) => now ? !f.invalid_at : validAt(f, at));
  const used = new Set(facts.flatMap((f) => [f.source, f.target]));
  const elements = [
    ...graph.entities.filter((e) => used.has(e.id)).map((e) => ({ data: { id: e.id, label: e.name } })),
    ...facts.map((f) => ({ data: { id: f.id, source: f.source, target: f.target, label: f.name } })),
  ];
  cytoscape({
    container: detail.querySelector("#graph-canvas"), elements, maxZoom: 1.4,
    layout: { name: "cose", animate: false },
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "background-color": "#2f6fde",
                                   color: "#1d2330", "text-valign": "bottom", width: 14, height: 14 } },
      { selector: "edge", style: { label: "data(label)", "font-size": 9, color: "#6a7385", width: 1.5,
                                   "curve-style": "bezier", "target-arrow-shape": "triangle",
                                   "line-color": "#b9c3d6", "target-arrow-color": "#b9c3d6" } },
    ],
  });
}

async function show(name) {
  tab = name;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  const views = { timeline: showTimeline, decisions: showDecisions, workset: showWorkset,
                  status: showStatus, graph: showGraph, duplicates: showDuplicates };
  await views[name]();
}

let typing = null;
$("#search").addEventListener("input", (event) => {
  clearTimeout(typing);
  const query = event.target.value.trim();
  typing = setTimeout(() => (query ? showSearch(query) : show(tab)).catch(failed), 120);
});
for (const b of document.querySelectorAll("#tabs button")) {
  b.addEventListener("click", () => { $("#search").value = ""; show(b.dataset.tab).catch(failed); });
}
show("timeline").catch(failed);
