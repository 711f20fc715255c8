// Marketplace: search every catalog source, an entry's requirements, install with live progress.
import { add, api, clear, focusHeading, h, keepFocus, notice, section, setDisabled, submitForm, tryApi } from "./dom.js";

let list = null;
let detail = null;
let currentJob = null;
let timer = null;
// messages of jobs this page has not heard of yet: the stream may deliver a job's first steps
// before the POST that started it has answered
const early = new Map();

export function mount(main) {
  const input = h("input", { name: "q", type: "search", "aria-label": "Search the catalog", placeholder: "search the catalog (name, tags, description)", autocomplete: "off" });
  const kind = h(
    "select",
    { name: "kind", "aria-label": "Kind of entry" },
    h("option", { value: "" }, "every kind"),
    ["mcp-server", "plugin", "skill"].map((k) => h("option", { value: k }, k)),
  );
  const refresh = h("button", { dataset: { action: "refresh" }, onclick: () => search(input.value, kind.value, true) }, "Refresh sources");
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => search(input.value, kind.value), 200);
  });
  kind.addEventListener("change", () => search(input.value, kind.value));
  list = h("div", { class: "entries" });
  detail = h("div", { class: "entry-detail" });
  add(main, 
    h("form", { class: "search", role: "search", onsubmit: (e) => (e.preventDefault(), search(input.value, kind.value)) }, input, kind, refresh),
    h("div", { class: "columns" }, list, detail),
  );
  search("", "");
}

let last = { q: "", kind: "" };

// the runtime was reopened (an install, a trust, a change elsewhere): list again from its catalog
export const onReload = () => search(last.q, last.kind);

async function search(q, kind, refresh = false) {
  last = { q, kind };
  const params = new URLSearchParams({ q, kind, refresh: refresh ? "1" : "" });
  list.dataset.loading = "true";
  let data;
  try {
    data = await api(`/api/marketplace/search?${params}`);
  } catch (error) {
    notice(error.message, "error");
    return;
  } finally {
    list.dataset.loading = "false";
  }
  keepFocus(list, () => render(data));
}

// entry key -> its row as listed: the live status keeps an installed server's state current
const listed = new Map();

export function onStatus(status) {
  if (!list || !status.servers) return;
  const states = new Map(status.servers.filter((s) => s.kind === "mcp").map((s) => [s.name, s.state]));
  for (const e of listed.values()) {
    if (e.kind !== "mcp-server" || !e.installed.length) continue;
    const state = states.get(e.name) ?? null;
    if (state === e.state) continue;
    e.state = state;
    list.querySelector(`[data-key="${CSS.escape(e.key)}"] .installed`)?.replaceWith(installedLine(e));
  }
  refreshWhere();
}

function render(data) {
  clear(list);
  listed.clear();
  for (const e of data.entries) listed.set(e.key, e);
  list.dataset.query = data.query;
  add(list, 
    h("p", { class: "muted", text: `${data.entries.length} ${data.entries.length === 1 ? "entry" : "entries"} from ${data.sources.map((s) => `${s.name} (${s.entries})`).join(", ")}` }),
    data.sources.filter((s) => s.failed).map((s) => h("p", { class: "error", text: `source ${s.name}: ${s.failed}` })),
    data.entries.map((e) =>
      h(
        "button",
        { class: "entry", dataset: { entry: e.name, key: e.key, kind: e.kind, installed: installedData(e) }, onclick: () => show(e.key) },
        h("strong", {}, icon(e), e.title && e.title !== e.name ? `${e.name} - ${e.title}` : e.name),
        h("span", { class: "kind", text: `${e.kind}, ${e.source}` }),
        h("span", { class: "description", text: e.description }),
        e.requirements.length ? h("span", { class: "requires", text: `needs ${e.requirements.join(", ")}` }) : null,
        installedLine(e),
      ),
    ),
  );
  refreshWhere();
}

// An entry's icon: a data: image only (the page's CSP loads no remote image), decoration beside
// its name (alt=""), at a fixed size whatever the image says.
function icon(e) {
  if (!e.icon) return null;
  return h("img", { class: "icon", src: e.icon, alt: "", width: 32, height: 32, referrerpolicy: "no-referrer", decoding: "async" });
}

// "user,workspace" or "no": where the entry is installed (data-installed, for tests and scripts)
function installedData(e) {
  return e.installed.length ? e.installed.map((p) => p.scope).join(",") : "no";
}

// Installed where, enabled or not, and what runs now, in words
function installedLine(e) {
  if (!e.installed.length) return null;
  const where = e.installed.map((p) => `${p.scope}${p.enabled ? "" : " (disabled)"}`).join(" and ");
  return h("span", { class: "installed", dataset: { state: e.state || "" } }, `installed: ${where}${e.state ? `, ${e.state.replace("_", " ")}` : ""}`);
}

// The open entry's "installed: ..." or "not installed" line (data-where), kept current from the list
function whereLine(e) {
  const line = installedLine(e) ?? h("p", { class: "muted", dataset: { installed: "no" }, text: "not installed" });
  line.dataset.where = "";
  return line;
}

// An install, an uninstall or a reopen changed what is installed and runs: the open entry says so too
// (it kept saying "not installed" beside a list that said "installed: workspace, ready")
function refreshWhere() {
  const e = detail?.dataset.key ? listed.get(detail.dataset.key) : null;
  const line = detail?.querySelector("[data-where]");
  if (e && line) line.replaceWith(whereLine(e));
}

function inputsForm(entry) {
  return (entry.inputs || []).map((item) =>
    h(
      "label",
      { class: "field" },
      h("span", { text: `${item.kind === "header" ? "header " : ""}${item.name}${item.required ? " (required)" : ""}${item.secret ? " (secret: not written to the file)" : ""}` }),
      h("input", {
        name: `input:${item.name}`,
        type: item.secret ? "password" : "text",
        value: item.default ?? "",
        placeholder: item.description || "",
        autocomplete: "off",
      }),
    ),
  );
}

async function show(key) {
  const entry = await tryApi(`/api/marketplace/entry?${new URLSearchParams({ key })}`);
  if (entry === null) return;
  clear(detail);
  const scope = h("select", { name: "scope" }, h("option", { value: "workspace" }, "workspace"), h("option", { value: "user" }, "user"));
  const verify = h("input", { type: "checkbox", name: "verify", checked: true });
  const force = h("input", { type: "checkbox", name: "force" });
  const steps = h("ol", { class: "steps" });
  const outcome = h("div", { class: "outcome", "data-mask": true });
  const form = submitForm(
    { class: "install" },
    {
      fields: "input[name^='input:']",
      key: (name) => name.slice("input:".length),
      submit: async (inputs) => {
        clear(steps);
        clear(outcome);
        try {
          const { job } = await api("/api/marketplace/install", {
            method: "POST",
            body: { name: entry.key, scope: scope.value, inputs, verify: verify.checked, force: force.checked },
          });
          currentJob = job;
          steps.dataset.job = job;
          for (const message of early.get(job) || []) onInstall(message);
          early.clear();
        } catch (error) {
          outcome.dataset.outcome = "failed";
          outcome.textContent = error.message;
        }
      },
    },
    inputsForm(entry),
    h("label", { class: "field inline" }, "scope ", scope),
    h("label", { class: "field inline" }, verify, " start it once to verify"),
    h("label", { class: "field inline" }, force, " replace an existing entry"),
    h("button", { class: "primary", type: "submit", dataset: { action: "install" }, disabled: !entry.requirements_met }, "Install"),
    entry.requirements_met ? null : h("p", { class: "note", dataset: { unmet: "true" }, text: "Install what this machine lacks (above) first." }),
    // offered only where there is something to remove
    !entry.installed.length ? null : h(
      "button",
      {
        type: "button",
        dataset: { action: "uninstall" },
        onclick: async () => {
          try {
            const result = await api("/api/marketplace/uninstall", { method: "POST", body: { name: entry.name } });
            outcome.dataset.outcome = "uninstalled";
            outcome.textContent = `removed ${result.removed.join("; ")}`;
          } catch (error) {
            notice(error.message, "error");
          }
        },
      },
      "Uninstall",
    ),
  );
  detail.dataset.entry = entry.name;
  detail.dataset.key = entry.key;
  add(detail, 
    h("h2", {}, icon(entry), entry.title && entry.title !== entry.name ? `${entry.name} - ${entry.title}` : entry.name),
    h("p", { class: "muted", text: `${entry.kind || "mcp-server"} from ${entry.source}${entry.version ? `, version ${entry.version}` : ""}` }),
    entry.description ? h("p", { text: entry.description }) : null,
    whereLine(entry),
    entry.command_line ? h("p", {}, "launch: ", h("code", { text: entry.command_line })) : null,
    entry.from ? h("p", {}, "from: ", h("code", { text: entry.from })) : null,
    entry.install_hint ? h("p", { text: `install: ${entry.install_hint}` }) : null,
    section(
      "Requirements on this machine",
      entry.checks.length
        ? h(
            "ul",
            { class: "checks", dataset: { met: String(entry.requirements_met) } },
            entry.checks.map((c) => h("li", { class: c.ok ? "ok" : "error", dataset: { requirement: c.requirement, ok: String(c.ok) } }, `${c.ok ? "met" : "NOT met"}: ${c.describe}`)),
          )
        : h("p", { class: "muted", text: "(none declared)" }),
    ),
    (entry.notes || []).map((n) => h("p", { class: "note", text: n })),
    section("Install", form, steps, outcome),
  );
  focusHeading(detail);
}

export function onInstall(message) {
  if (!detail) return;
  if (message.job !== currentJob) {
    if (!early.has(message.job)) {
      if (early.size >= 20) return;
      early.set(message.job, []);
    }
    early.get(message.job).push(message);
    return;
  }
  const steps = detail.querySelector("ol.steps");
  const outcome = detail.querySelector(".outcome");
  if (message.type === "step") {
    let item = [...steps.children].find((li) => li.dataset.step === message.step);
    if (!item) {
      item = h("li", { dataset: { step: message.step } });
      add(steps, item);
    }
    item.dataset.state = message.state;
    // a detail may begin with the state already ("failed: ..."): said once
    const detail = (message.detail || "").startsWith(`${message.state}: `) ? message.detail.slice(message.state.length + 2) : message.detail;
    item.textContent = `${message.step} - ${message.state}${detail ? `: ${detail}` : ""}`;
  } else if (message.type === "info" || message.type === "warn") {
    add(steps, h("li", { class: message.type, dataset: { message: message.type } }, message.message));
  } else if (message.type === "finished") {
    outcome.dataset.outcome = message.ok ? "ok" : "failed";
    if (message.error) outcome.textContent = `install failed: ${message.error}`;
    else {
      const r = message.report;
      const v = r.verification;
      const written = r.written && Object.keys(r.written).length > 0;
      if (!written && v && v.outcome !== "ready") outcome.textContent = `not installed, nothing was written: it did not start (${v.outcome}: ${v.detail})`;
      else {
        outcome.textContent =
          `installed ${r.name} into ${r.target} (${r.scope})` +
          (v ? (v.outcome === "ready" ? `: it starts and offers ${v.tools} tools` : `; ${v.outcome}: ${v.detail}`) : "");
      }
      add(outcome, needsEnvironment(r), needsTrust(message.trust));
    }
  }
}

// A secret is read from an environment variable this backend's environment lacks: the value
// typed in the form verified the install only, so say which variable to export.
function needsEnvironment(report) {
  const names = report.env_needed || [];
  if (!names.length) return null;
  return h(
    "p",
    { class: "needs", dataset: { needs: "env" } },
    `It reads ${names.join(", ")} from the environment, which kairox ui was not started with (a value typed above only verified the install): `,
    h("code", { text: names.map((n) => `export ${n}=...`).join("; ") }),
    ", then start kairox ui again.",
  );
}

// What was written to the workspace does not run until the workspace is trusted again.
function needsTrust(pending) {
  if (!pending || !pending.length) return null;
  const button = h(
    "button",
    {
      class: "primary",
      type: "button",
      dataset: { action: "trust-install" },
      onclick: async () => {
        setDisabled(button, true);
        try {
          await api("/api/trust", { method: "POST" });
          box.dataset.trusted = "true";
          const done = h("p", { tabindex: "-1", text: "trusted: it starts now (see the Status page)" });
          add(box, done);
          // the button stays disabled (it is done): the focus it had goes to what it did, not <body>
          if (button.dataset.hadFocus !== undefined) done.focus({ preventScroll: true });
        } catch (error) {
          setDisabled(button, false);
          notice(error.message, "error");
        }
      },
    },
    "Trust the workspace as it is now",
  );
  const box = h(
    "div",
    { class: "needs", dataset: { needs: "trust", trusted: "false" } },
    h("p", { text: "It runs once you trust this change to the workspace. Trusting it lets these run:" }),
    h("ul", {}, pending.map((item) => h("li", { dataset: { item: item.key } }, `${item.kind} ${item.name}: `, item.runs.concat(item.contacts).join("; ")))),
    button,
  );
  return box;
}
