// pedrag playground: talk to a session, read each turn's trace, check a theory file.
// Plain script, no build step; it calls the same HTTP API as any client (docs/service.md).
"use strict";

const $ = (id) => document.getElementById(id);
let session = null;
let turnsDone = 0;

function key() { return $("api-key").value.trim(); }
function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}
function headers() {
  return { "Authorization": "Bearer " + key(), "Content-Type": "application/json" };
}
async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) { throw new Error(data.detail || ("HTTP " + response.status)); }
  return data;
}
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) { node.setAttribute(name, value); }
  for (const child of children) { node.append(child); }
  return node;
}

let loadedFor = null;  // the key the theory list was loaded with
let keyRole = null;    // that key's role, asked before anything is created with it
const PLAYGROUND_ROLES = ["instructor", "admin"];

// The page reads each turn's audit and the session's toggles, which need an instructor key:
// a learner key could create a session and then read nothing of it, so it is told why first.
function refusal() {
  if (keyRole === null || PLAYGROUND_ROLES.includes(keyRole)) { return null; }
  return "this key's role is " + keyRole + ": the playground needs an instructor key or " +
    "above (it shows each turn's audit and the instructor toggles)";
}

async function loadTheories() {
  if (key() === loadedFor) { return; }  // a second change event for the same key
  loadedFor = key();
  keyRole = null;
  try {
    keyRole = (await api("GET", "/v1/key")).role;
    if (refusal()) { setStatus(refusal(), true); return; }
    const data = await api("GET", "/v1/theories");
    $("theory").replaceChildren(...data.theories.map((t) => el("option", { value: t.id }, t.name + " (" + t.id + ")")));
    const exercises = [el("option", { value: "" }, "(none)")];
    for (const curriculum of data.curricula) {
      for (const item of curriculum.exercises) {
        exercises.push(el("option", { value: curriculum.id + "/" + item.id }, item.id + ": " + item.prompt));
      }
    }
    $("exercise").replaceChildren(...exercises);
    setStatus(data.theories.length + " theories loaded");
  } catch (error) { loadedFor = null; setStatus(error.message, true); }
}

async function startSession(event) {
  event.preventDefault();
  if (key() !== loadedFor) { await loadTheories(); }  // a key typed since, not yet asked
  if (keyRole === null || refusal()) {  // the key's role is asked before any session exists
    setStatus(refusal() || "enter a valid API key first", true);
    return;
  }
  const [curriculum, exercise] = ($("exercise").value || "/").split("/");
  try {
    session = await api("POST", "/v1/sessions", {
      theory: $("theory").value, curriculum: curriculum || null, exercise: exercise || null,
    });
    turnsDone = session.turns;
    session = await api("GET", "/v1/sessions/" + session.id + "/state");  // metrics, toggles
    $("session-id").textContent = "session " + session.id;
    $("session-id").dataset.sessionId = session.id;
    $("transcript").replaceChildren();
    $("trace").replaceChildren();
    $("message").disabled = false; $("send").disabled = false;
    syncToggles();
    setStatus("session started");
  } catch (error) { setStatus(error.message, true); }
}

function syncToggles() {
  $("toggle-exam").checked = session.metrics.exam_active === true;
  $("toggle-explain").checked = session.metrics.explain_mode === true;
}

async function instructor(change) {
  if (!session) { return; }
  try {
    session = await api("POST", "/v1/sessions/" + session.id + "/instructor", change);
    syncToggles();
    $("transcript").append(el("li", { class: "toggle" }, "[instructor after turn " + turnsDone + ": " +
      Object.entries(change).map(([k, v]) => k + "=" + v).join(", ") + "]"));
    setStatus("instructor change applied");
  } catch (error) { setStatus(error.message, true); syncToggles(); }
}

// SSE over POST: EventSource cannot send a body or headers, so read the stream with fetch.
async function sendTurn(event) {
  event.preventDefault();
  const message = $("message").value.trim();
  if (!message || !session) { return; }
  $("message").value = "";
  $("send").disabled = true;
  $("transcript").append(el("li", { class: "student", "data-turn": String(turnsDone + 1) },
    "student (turn " + (turnsDone + 1) + "): " + message));
  const reply = el("li", { class: "tutor", "data-turn": String(turnsDone + 1) });
  $("transcript").append(reply);
  try {
    const response = await fetch("/v1/sessions/" + session.id + "/turns/stream", {
      method: "POST", headers: headers(), body: JSON.stringify({ message, turn: turnsDone + 1 }),
    });
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      throw new Error(problem.detail || ("HTTP " + response.status));
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) { break; }
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = (block.match(/^event: (.*)$/m) || [])[1];
        const data = JSON.parse((block.match(/^data: (.*)$/m) || [])[1] || "null");
        if (name === "piece") { reply.textContent += data.text; }
        else if (name === "end") { turnsDone = data.turn; }
        else if (name === "error") { throw new Error(data.detail); }
      }
    }
    // The stream is the learner view; the trace is the instructor view (the audit).
    const audit = await api("GET", "/v1/sessions/" + session.id + "/audit");
    showTrace(audit.records[turnsDone - 1]);
    setStatus("turn " + turnsDone + " committed");
  } catch (error) {
    reply.classList.add("error");
    reply.textContent += " [" + error.message + "]";
    setStatus(error.message, true);
  } finally { $("send").disabled = false; }
}

function showTrace(turn) {  // one audit record
  const choice = turn.choice || {};
  const contract = turn.contract || {};
  const verdict = turn.detector;
  const judge = turn.judge;
  const rows = [
    ["contract", "ceiling " + contract.ceiling + " (start " + contract.start + ")" +
      (contract.exam_lockdown ? ", exam lockdown" : "") + (contract.judge_required ? ", judge required" : "") +
      (contract.risks && contract.risks.length ? ", risks: " + contract.risks.join(", ") : "")],
    ["ceiling set by", contract.set_by || ""],
    ["step trace", (contract.step_trace || []).map((s) => s.step + ": " + s.before + " -> " + s.after +
      (s.effect ? " (" + s.effect + ")" : "")).join("; ") || "none"],
    ["classified", Object.entries(turn.classified || {}).map(([k, v]) => k + "=" + v).join(", ") || "none"],
    ["grade", turn.grade ? (turn.grade.verdict || JSON.stringify(turn.grade)) : "not graded"],
    ["matched rules", (choice.matched || []).join(", ") || "none"],
    ["eligible rules", (choice.eligible || []).join(", ") || "none"],
    ["action", choice.action + " (" + choice.rung + ")" + (choice.rule ? " by rule " + choice.rule : "")],
    ["why", choice.reason || ""],
    ["detector", verdict.flagged ? "flagged: " + verdict.reason : "clear"],
    ["judge", judge ? judge.verdict + (judge.reason ? ": " + judge.reason : "") : "not required"],
    ["fallback", turn.fallback ? "yes (template)" : "no"],
  ];
  const list = el("dl", {});
  for (const [name, value] of rows) {
    list.append(el("dt", {}, name), el("dd", { "data-field": name }, value));
  }
  const box = el("div", { class: "turn-trace", "data-turn": String(turn.turn) },
    el("h3", {}, "Turn " + turn.turn + " (tutor: " + choice.action + ")"), list);
  $("trace").prepend(box);
}

async function checkTheory() {
  const source = $("theory-source").value;
  $("diagnostics").replaceChildren(el("p", { class: "hint" }, "checking..."));
  try {
    const report = await api("POST", "/v1/theories/check", { source, filename: "playground.yaml" });
    const items = report.diagnostics.map((d) => el("li", { class: "diagnostic " + d.severity },
      d.file + ":" + d.line + ":" + d.column + ": " + d.severity + " [" + d.check + "] " + d.message));
    const s = report.summary;
    $("diagnostics").replaceChildren(
      el("p", { id: "check-summary" }, s.errors + " error(s), " + s.warnings + " warning(s)" +
        (s.coverage === null || s.coverage === undefined ? "" : ", coverage " + (100 * s.coverage).toFixed(1) + "%")),
      el("ul", {}, ...items));
  } catch (error) {
    $("diagnostics").replaceChildren(el("p", { class: "error" }, error.message));
  }
}

// The key lives in this page's memory only (the input field): never in localStorage, where
// any script of this origin could read it long after the tab is closed.
$("api-key").addEventListener("change", loadTheories);
$("session-form").addEventListener("submit", startSession);
$("turn-form").addEventListener("submit", sendTurn);
$("toggle-exam").addEventListener("change", (e) => instructor({ exam_lockdown: e.target.checked }));
$("toggle-explain").addEventListener("change", (e) => instructor({ explain_mode: e.target.checked }));
$("lift-conduct").addEventListener("click", () => instructor({ lift_conduct_restriction: true }));
$("check").addEventListener("click", checkTheory);
if (key()) { loadTheories(); }
