// Trace: the runtime's events, live, filterable by kind and server.
import { add, api, clear, h, notice } from "./dom.js";

const MAX_ROWS = 2000;
let body = null;
let kindSelect = null;
let serverInput = null;
const kinds = new Set();

export async function mount(main) {
  kindSelect = h("select", { name: "kind", "aria-label": "Event kind", onchange: filter }, h("option", { value: "" }, "every kind"));
  serverInput = h("input", { name: "server", type: "search", "aria-label": "Server, provider, plugin or tool", placeholder: "server, provider, plugin or tool", oninput: filter });
  body = h("tbody", {});
  add(main, 
    h("form", { class: "search", role: "search", onsubmit: (e) => e.preventDefault() }, kindSelect, serverInput, h("button", { type: "button", dataset: { action: "clear" }, onclick: () => clear(body) }, "Clear")),
    h("table", { class: "trace" }, h("thead", {}, h("tr", {}, ["time", "kind", "server", "details"].map((t) => h("th", { text: t })))), body),
  );
  try {
    const data = await api("/api/events");
    for (const e of data.events) onTrace(e);
  } catch (error) {
    notice(error.message, "error");
  }
}

function visible(tr) {
  const kind = kindSelect.value;
  const server = serverInput.value.trim().toLowerCase();
  return (!kind || tr.dataset.kind === kind) && (!server || tr.dataset.server.toLowerCase().includes(server));
}

function filter() {
  for (const tr of body.children) tr.hidden = !visible(tr);
}

// A failure (a *Failed event, a call that failed) or a denial stands out, by a word as well as
// by colour (WCAG 1.4.1)
function severity(e) {
  const outcome = e.kind === "ToolCallFinished" ? e.data.outcome : undefined;
  if (outcome === "denied" || (e.kind === "ApprovalAnswered" && e.data.answer === "deny")) return "denied";
  if (outcome === "error" || outcome === "failed" || e.kind.endsWith("Failed")) return "failed";
  return undefined;
}

// A value as the row shows it: a fraction to three significant digits (duration_s=0.177, not
// 0.17684429899964016), text as it is, anything else as JSON.
function shown(v) {
  if (typeof v === "number" && !Number.isInteger(v)) return String(Number(v.toPrecision(3)));
  return typeof v === "string" ? v : JSON.stringify(v);
}

export function onTrace(e) {
  if (!body || body.querySelector(`[data-seq="${e.seq}"]`)) return;
  if (!kinds.has(e.kind)) {
    kinds.add(e.kind);
    kindSelect.append(h("option", { value: e.kind }, e.kind));
  }
  const details = Object.entries(e.data)
    .filter(([k]) => k !== "kind")
    .map(([k, v]) => `${k}=${shown(v)}`)
    .join("  ");
  const marked = severity(e);
  const tr = h(
    "tr",
    { dataset: { kind: e.kind, server: e.server, seq: e.seq, ...(marked ? { severity: marked } : {}), ...(e.call ? { call: "" } : {}) } },
    h("td", { class: "mono time", text: new Date(e.time * 1000).toLocaleTimeString() }),
    h("td", { class: "kind" }, e.kind, marked ? h("span", { class: `tag ${marked}`, text: marked }) : null),
    h("td", { class: "subject", text: e.server }),
    h("td", { class: "mono details" }, e.call ? expandable(details, e.call) : details),
  );
  tr.hidden = !visible(tr);
  body.prepend(tr);
  while (body.children.length > MAX_ROWS) body.lastChild.remove();
}

// A call's row opens (a native <details>: a keyboard control, its state told to screen readers)
// to its arguments and result, masked and cut by the dashboard (kairox_ui.hub.call_shown). Each
// <pre> may scroll, so it takes the keyboard focus (WCAG 2.1.1; axe scrollable-region-focusable).
function expandable(summary, call) {
  const args = Object.entries(call.arguments);
  return h(
    "details",
    { class: "call" },
    h("summary", { text: summary }),
    h("h3", { text: "Arguments" }),
    args.length
      ? h("dl", { class: "arguments" }, args.map(([k, v]) => [h("dt", { text: k }), h("dd", {}, h("pre", { tabindex: 0, dataset: { argument: k }, text: v }))]))
      : h("p", { text: "none" }),
    call.more_arguments ? h("p", { text: `and ${call.more_arguments} more arguments, not shown` }) : null,
    call.result !== undefined
      ? [h("h3", { text: call.is_error ? "Result (an error)" : "Result" }), h("pre", { class: "result", tabindex: 0, dataset: { result: call.is_error ? "error" : "ok" }, text: call.result })]
      : null,
  );
}
