"""The page ``GET /`` serves: the reverse dictionary (a description in, entries with their definitions and scores
out) and, when an index is served, the search of its texts. Plain HTML, a little JavaScript, no build step, nothing
from the network; keyboard-friendly (the box has the focus, Enter searches, "/" comes back to the box, Escape
clears it, the results are a list that screen readers announce)."""

from __future__ import annotations

import html
import json

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>defsent: __TITLE__</title>
<style>
  body { font: 16px/1.45 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
  h1 { font-size: 1.4rem; margin-bottom: .2rem; }
  p.sub { color: #555; margin-top: 0; }
  form { display: flex; gap: .5rem; margin: 1rem 0; flex-wrap: wrap; }
  input[type=search] { flex: 1 1 20rem; font-size: 1.05rem; padding: .5rem .6rem; border: 1px solid #888; border-radius: 6px; }
  input:focus, button:focus, select:focus { outline: 3px solid #4a7dff; outline-offset: 1px; }
  button { font-size: 1rem; padding: .5rem 1rem; border-radius: 6px; border: 1px solid #335; background: #2b4cb8; color: #fff; cursor: pointer; }
  select, input[type=password] { font-size: .95rem; padding: .4rem; }
  ol { padding-left: 1.6rem; }
  li { margin: .55rem 0; }
  .hit { font-weight: 600; font-size: 1.08rem; }
  .score { color: #666; font-variant-numeric: tabular-nums; margin-left: .5rem; font-size: .9rem; }
  .defs { color: #333; margin: .15rem 0 0; }
  #status { color: #555; min-height: 1.4rem; }
  .error { color: #a40000; }
  kbd { border: 1px solid #aaa; border-radius: 3px; padding: 0 .25rem; font-size: .85rem; }
</style>
</head>
<body>
<main>
<h1>__TITLE__</h1>
<p class="sub">__SUBTITLE__ Model: <code>__MODEL__</code>.</p>
<form id="form" role="search">
  <label for="q" class="visually-hidden" hidden>Query</label>
  <input id="q" name="q" type="search" autocomplete="off" autofocus placeholder="__PLACEHOLDER__" aria-label="__PLACEHOLDER__">
  __MODE__
  <label for="k">Top</label>
  <select id="k" aria-label="number of results"><option>5</option><option selected>10</option><option>20</option></select>
  __KEY__
  <button id="go" type="submit">Search</button>
</form>
<div id="status" role="status" aria-live="polite">Type and press <kbd>Enter</kbd>; <kbd>/</kbd> returns here, <kbd>Esc</kbd> clears.</div>
<ol id="results" aria-label="results"></ol>
</main>
<script>
const CONFIG = __CONFIG__;
const q = document.getElementById("q"), results = document.getElementById("results"), status = document.getElementById("status");
const mode = document.getElementById("mode"), k = document.getElementById("k"), key = document.getElementById("key");
if (key) { key.value = sessionStorage.getItem("defsent-key") || ""; }
function currentMode() { return mode ? mode.value : CONFIG.modes[0]; }
function show(data, which) {
  results.textContent = "";
  const hits = data.data[0].results;
  for (const hit of hits) {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "hit";
    name.textContent = which === "lookup" ? hit.entry : hit.text;
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = data.similarity + " " + hit.score.toFixed(3);
    li.append(name, score);
    const more = which === "lookup" ? (hit.definitions || []).join("; ") : "id " + JSON.stringify(hit.id);
    if (more) { const d = document.createElement("div"); d.className = "defs"; d.textContent = more; li.append(d); }
    results.append(li);
  }
  status.className = "";
  status.textContent = hits.length + " result" + (hits.length === 1 ? "" : "s") + " for \u201c" + data.data[0].query + "\u201d (" + data.similarity + ")";
}
async function run(event) {
  if (event) event.preventDefault();
  const text = q.value.trim();
  if (!text) { status.textContent = "Type something first."; return; }
  const which = currentMode();
  const headers = {"Content-Type": "application/json"};
  if (key && key.value) { headers["Authorization"] = "Bearer " + key.value; sessionStorage.setItem("defsent-key", key.value); }
  status.className = ""; status.textContent = "Searching\u2026";
  try {
    const response = await fetch("/v1/" + which, {method: "POST", headers, body: JSON.stringify({query: text, k: Number(k.value)})});
    const data = await response.json();
    if (!response.ok) { throw new Error(data.error ? data.error.message : response.statusText); }
    show(data, which);
  } catch (err) {
    results.textContent = ""; status.className = "error"; status.textContent = "Error: " + err.message;
  }
}
document.getElementById("form").addEventListener("submit", run);
document.addEventListener("keydown", (e) => {
  if (e.key === "/" && document.activeElement !== q) { e.preventDefault(); q.focus(); q.select(); }
  if (e.key === "Escape") { q.value = ""; results.textContent = ""; q.focus(); }
});
</script>
</body>
</html>
"""


def page_html(bank: bool, index: bool, auth: bool, model: str, definitions: bool = True) -> str:
    """The page for a server of a ``bank`` and/or an ``index``; ``definitions``: whether the bank's hits come with
    their definitions (the bank's dictionary found, or ``--dictionary``); without, the page says so and how to get
    them, and promises none."""
    modes = (["lookup"] if bank else []) + (["search"] if index else [])
    if not modes:
        title, subtitle = "defsent", "No bank or index is served: start the server with --bank or --index."
    elif modes[0] == "lookup" and not definitions:
        title = "Reverse dictionary"
        subtitle = (
            "Describe a word; see the entries that match. No definitions are shown: the bank's dictionary was "
            "not found (start the server with --dictionary DICT.jsonl to show them)."
        )
    elif modes[0] == "lookup":
        title, subtitle = "Reverse dictionary", "Describe a word; see the entries that match, with their definitions."
    else:
        title, subtitle = "Search", "Describe what you look for; see the texts that match best."
    placeholder = "a baby pig" if modes[:1] == ["lookup"] else "what are you looking for?"
    mode = ""
    if len(modes) == 2:
        mode = (
            '<select id="mode" aria-label="what to search"><option value="lookup">Reverse dictionary</option>'
            '<option value="search">My texts</option></select>'
        )
    key = '<input id="key" type="password" placeholder="API key" aria-label="API key">' if auth else ""
    config = json.dumps({"modes": modes or ["lookup"]})
    return (
        PAGE.replace("__TITLE__", html.escape(title))
        .replace("__SUBTITLE__", html.escape(subtitle))
        .replace("__MODEL__", html.escape(model))
        .replace("__PLACEHOLDER__", html.escape(placeholder))
        .replace("__MODE__", mode)
        .replace("__KEY__", key)
        .replace("__CONFIG__", config)
    )
