"""The page ``GET /`` serves: the reverse dictionary (a description in, entries with their definitions and scores
out; filtered by part of speech and letter pattern, synonyms as one result, each word a link to its senses) and, when
an index is served, the search of its texts. The URL holds the query (``/?q=a+baby+pig&pos=noun`` opens with its
results; each search pushes one, so the back button walks them). Plain HTML, a little JavaScript, no build step, nothing
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
  #status.error { color: #b00020; font-weight: 600; }
  .field { display: inline-flex; align-items: center; gap: .35rem; }
  .pos { color: #5a3d8a; font-size: .85rem; font-style: italic; }
  a.word { color: #1d3fa8; text-decoration: underline dotted; }
  #senses { border-left: 3px solid #2b4cb8; padding: .2rem .8rem; margin: .4rem 0 .8rem; background: #f4f6fc; }
  #senses h2 { font-size: 1.05rem; margin: .3rem 0; }
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
  __POS__
  <span class="field"><label for="k">Top</label>
  <select id="k" aria-label="number of results"><option>5</option><option selected>10</option><option>20</option></select></span>
  __KEY__
  <button id="go" type="submit">Search</button>
</form>
<div id="status" role="status" aria-live="polite">Type and press <kbd>Enter</kbd>; <kbd>/</kbd> returns here, <kbd>Esc</kbd> clears. __HINT__</div>
<ol id="results" aria-label="results"></ol>
<section id="senses" aria-live="polite" hidden></section>
</main>
<script>
const CONFIG = __CONFIG__;
const $ = (id) => document.getElementById(id);
const q = $("q"), results = $("results"), status = $("status"), senses = $("senses");
const mode = $("mode"), k = $("k"), key = $("key"), pos = $("pos");
if (key) { key.value = sessionStorage.getItem("defsent-key") || ""; }
function currentMode() { return mode ? mode.value : CONFIG.modes[0]; }
function say(text, isError) { status.className = isError ? "error" : ""; status.textContent = text; }
function personal(code, message) {
  if (code === 401) return key ? "This server needs an API key: enter it in the Key box." : "This server needs an API key.";
  if (code === 413) return "That is too much at once: shorten the description.";
  if (code === 429 || code === 503) return "The server is busy: try again in a moment.";
  if (code >= 500) return "The server failed on this search; try again, or tell whoever runs it.";
  return message ? message.charAt(0).toUpperCase() + message.slice(1) : "The search failed.";
}
async function call(path, options) {
  const headers = Object.assign({"Content-Type": "application/json"}, options.headers || {});
  if (key && key.value) { headers["Authorization"] = "Bearer " + key.value; sessionStorage.setItem("defsent-key", key.value); }
  let response, data = {};
  try { response = await fetch(path, Object.assign({}, options, {headers})); } catch (err) {
    throw new Error("The server cannot be reached: is it still running?");
  }
  try { data = await response.json(); } catch (err) { data = {}; }
  if (!response.ok) { throw new Error(personal(response.status, data.error ? data.error.message : response.statusText)); }
  return data;
}
async function define(word, where) {
  senses.hidden = false; senses.textContent = "Looking up \u201c" + word + "\u201d\u2026";
  try {
    const data = await call("/v1/define?word=" + encodeURIComponent(word), {method: "GET"});
    senses.textContent = "";
    const h = document.createElement("h2"); h.textContent = data.entry; senses.append(h);
    const list = document.createElement("ol");
    for (const sense of data.senses) {
      const li = document.createElement("li");
      if (sense.pos) { const p = document.createElement("span"); p.className = "pos"; p.textContent = sense.pos; li.append(p, " "); }
      li.append(sense.definition); list.append(li);
    }
    senses.append(list);
    if (where) where.after(senses);
  } catch (err) { senses.textContent = ""; say(err.message, true); }
}
function wordLink(word) {
  const a = document.createElement("a");
  a.href = "#"; a.className = "word"; a.textContent = word;
  a.addEventListener("click", (e) => { e.preventDefault(); define(word, a.closest("li")); });
  return a;
}
function show(data, which) {
  results.textContent = ""; senses.hidden = true;
  const hits = data.data[0].results;
  for (const hit of hits) {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "hit";
    if (which === "lookup") {
      (hit.words || [hit.entry]).forEach((w, i) => { if (i) name.append(", "); name.append(wordLink(w)); });
    } else { name.textContent = hit.text; }
    li.append(name);
    if (hit.pos && hit.pos.length) { const p = document.createElement("span"); p.className = "pos"; p.textContent = hit.pos.join(", "); li.append(" ", p); }
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score === null || hit.score === undefined ? hit.senses + " sense" + (hit.senses === 1 ? "" : "s") : data.similarity + " " + hit.score.toFixed(3);
    li.append(score);
    const more = which === "lookup" ? (hit.definitions || []) : ["id " + JSON.stringify(hit.id)];
    more.forEach((text, i) => {  // one line per sense: a word's noun and adjective senses are not run together
      const d = document.createElement("div"); d.className = "defs"; d.textContent = (more.length > 1 ? (i + 1) + ". " : "") + text; li.append(d);
    });
    results.append(li);
  }
  const how = hits.length && hits[0].score === null ? "spelling pattern: most senses first" : data.similarity;
  say(hits.length ? hits.length + " result" + (hits.length === 1 ? "" : "s") + " for \u201c" + data.data[0].query + "\u201d (" + how + ")"
    : "Nothing matches \u201c" + data.data[0].query + "\u201d" + (pos && pos.value ? " as a " + pos.value : "") + ".", false);
}
function stateUrl() {
  const params = new URLSearchParams();
  params.set("q", q.value.trim());
  if (pos && pos.value) params.set("pos", pos.value);
  if (mode && currentMode() !== CONFIG.modes[0]) params.set("mode", currentMode());
  return "?" + params.toString();
}
async function run(event, push = true) {
  if (event) event.preventDefault();
  const text = q.value.trim();
  if (!text) { say("Type something first.", false); return; }
  const which = currentMode();
  if (push && location.search !== stateUrl()) { history.pushState({q: text}, "", stateUrl()); }
  say("Searching\u2026", false);
  const body = {query: text, k: Number(k.value)};
  if (which === "lookup" && pos && pos.value) body.pos = pos.value;
  try {
    show(await call("/v1/" + which, {method: "POST", body: JSON.stringify(body)}), which);
  } catch (err) { results.textContent = ""; senses.hidden = true; say(err.message, true); }
}
function fromUrl() {
  const params = new URLSearchParams(location.search);
  q.value = params.get("q") || "";
  if (pos) pos.value = params.get("pos") || "";
  if (mode && params.get("mode")) mode.value = params.get("mode");
  if (q.value.trim()) { run(null, false); } else { results.textContent = ""; senses.hidden = true; }
}
$("form").addEventListener("submit", run);
window.addEventListener("popstate", fromUrl);
document.addEventListener("keydown", (e) => {
  if (e.key === "/" && document.activeElement !== q) { e.preventDefault(); q.focus(); q.select(); }
  if (e.key === "Escape") { q.value = ""; results.textContent = ""; senses.hidden = true; q.focus(); }
});
fromUrl();
</script>
</body>
</html>
"""


def page_html(bank: bool, index: bool, auth: bool, model: str, definitions: bool = True, pos: bool = False) -> str:
    """The page for a server of a ``bank`` and/or an ``index``; ``definitions``: whether the bank's hits come with
    their definitions (the bank's dictionary found, or ``--dictionary``); without, the page says so and how to get
    them, and promises none. ``pos``: the bank keeps parts of speech (the page offers their selector)."""
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
    key = (
        '<span class="field"><label for="key">Key</label><input id="key" type="password" placeholder="API key"></span>'
    )
    key = key if auth else ""
    selector = ""
    if bank and pos:
        names = "".join(f'<option value="{name}">{name}</option>' for name in ("noun", "verb", "adj", "adv"))
        selector = (
            f'<select id="pos" aria-label="part of speech"><option value="">any part of speech</option>{names}</select>'
        )
    hint = "Patterns: <code>pig*</code>, <code>????let</code>, <code>a baby pig:p*</code>." if bank else ""
    config = json.dumps({"modes": modes or ["lookup"]})
    return (
        PAGE.replace("__TITLE__", html.escape(title))
        .replace("__SUBTITLE__", html.escape(subtitle))
        .replace("__MODEL__", html.escape(model))
        .replace("__PLACEHOLDER__", html.escape(placeholder))
        .replace("__MODE__", mode)
        .replace("__KEY__", key)
        .replace("__POS__", selector)
        .replace("__HINT__", hint)
        .replace("__CONFIG__", config)
    )
