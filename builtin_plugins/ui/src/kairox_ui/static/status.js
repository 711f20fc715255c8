// Status: a pill per server and per bundle, live; diagnostics of failed servers; trust.
import { add, clear, h, keepFocus, notice, pill, setDisabled, tryApi } from "./dom.js";

let root = null;
const open = new Set();

export function mount(main, context) {
  root = h("div", { class: "status" }, h("p", { class: "muted", text: "waiting for the runtime..." }));
  add(main, root);
  if (context.status) onStatus(context.status);
}

const act = (path, body = {}) => tryApi(path, { method: "POST", body });

function diagnostic(row, id) {
  const d = row.diagnostic;
  const details = h(
    "details",
    {
      class: "diagnostic",
      id,
      open: open.has(row.name),
      ontoggle: () => {
        if (details.open) open.add(row.name);
        else open.delete(row.name);
        details.parentElement?.querySelector(".pill")?.setAttribute("aria-expanded", String(details.open));
      },
    },
    h("summary", {}, "diagnostic"),
    h("p", { class: "error" }, h("strong", {}, "error: "), d.error || "(none)"),
    h("p", {}, h("strong", {}, "exit code: "), d.exit_code === null || d.exit_code === undefined ? "-" : String(d.exit_code)),
    h("pre", { class: "stderr", text: (d.stderr_tail || []).join("\n") || "(no stderr)" }),
  );
  return details;
}

// "1 skill", "2 skills"
const count = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;

const ACTION_LABELS = { restart: "Restart", stop: "Stop" };

// An untrusted item's detail is the kernel's advice for a terminal ("run `kairox trust PATH`"):
// on this page the trust box above does it, so it says that instead
const TRUST_ABOVE = "waits for your trust: see what it would run and Trust this workspace, above";
const shownDetail = (row, offered) => (offered && row.state === "untrusted" ? TRUST_ABOVE : row.detail || "");

function serverRow(row, offered = false) {
  const card = h("div", { class: "server", dataset: { server: row.name, state: row.state, kind: row.kind } });
  const diagnosticId = `diagnostic-${row.kind}-${row.name}`;
  // a failed pill is a real button (Enter and Space work) that opens the diagnostic
  const badge = row.diagnostic
    ? h(
        "button",
        {
          type: "button",
          class: `pill ${row.state}`,
          dataset: { pill: row.state, action: "diagnostic" },
          title: "show the diagnostic",
          "aria-label": `${row.state}: diagnostic of ${row.name}`,
          "aria-expanded": String(open.has(row.name)),
          "aria-controls": diagnosticId,
          onclick: () => {
            const box = card.querySelector("details.diagnostic");
            box.open = !box.open;
            badge.setAttribute("aria-expanded", String(box.open));
          },
        },
        row.state,
      )
    : pill(row.state);
  card.append(
    h(
      "div",
      { class: "line" },
      badge,
      h("span", { class: "name", text: row.name }),
      h("span", { class: "kind", text: row.kind }),
      row.state === "ready" && row.tools !== undefined ? h("span", { class: "muted", text: count(row.tools, "tool") }) : null,
      h("span", { class: "detail", text: shownDetail(row, offered) }),
      h(
        "span",
        { class: "actions" },
        (row.actions || []).map((action) => {
          const label = action === "restart" && row.state === "stopped" ? "Start" : ACTION_LABELS[action] || action;
          // six "Restart" buttons say which server each restarts
          return h(
            "button",
            {
              "aria-label": `${label} ${row.name}`,
              dataset: { action },
              onclick: async () => {
                card.dataset.busy = "true";
                await act(`/api/servers/${encodeURIComponent(row.name)}/${action}`, { kind: row.kind });
                card.dataset.busy = "false";
              },
            },
            label,
          );
        }),
      ),
    ),
  );
  if (row.diagnostic) card.append(diagnostic(row, diagnosticId));
  return card;
}

function trustBox(trust) {
  if (!trust.pending.length && !trust.problem) return null;
  const what = trust.trusted ? "has changed since you trusted it" : "is not trusted";
  return h(
    "section",
    { class: "trust", dataset: { trusted: String(trust.trusted) } },
    h("h2", { text: `This workspace ${what}` }),
    trust.problem ? h("p", { class: "error", text: trust.problem }) : null,
    h("p", { text: "Trusting it lets these run (and read the variables named):" }),
    h(
      "ul",
      {},
      trust.pending.map((item) =>
        h(
          "li",
          { dataset: { item: item.key } },
          h("strong", { text: `${item.kind} ${item.name}` }),
          h("span", { class: "muted", text: ` (${item.source}) [${item.state}]` }),
          item.runs.map((r) => h("div", { class: "mono", text: `runs: ${r}` })),
          item.contacts.map((u) => h("div", { class: "mono", text: `contacts: ${u}` })),
          item.reads.length ? h("div", { class: "mono", text: `reads: ${item.reads.join(", ")}` }) : null,
          item.notes.map((n) => h("div", { class: "note", text: n })),
        ),
      ),
    ),
    h(
      "button",
      {
        class: "primary",
        dataset: { action: "trust-workspace" },
        onclick: async (event) => {
          setDisabled(event.target, true);
          if (await act("/api/trust")) notice("workspace trusted; reopening the runtime");
          else setDisabled(event.target, false);
        },
      },
      "Trust this workspace",
    ),
  );
}

// The backend is gone: what ran is not known any more, and nothing can be asked of it.
export function onDisconnect(context) {
  if (!context.status) return;
  // (a bundle's pill says its bundle_state: "loaded" would claim what is not known either)
  const unknown = (rows) => rows.map((row) => ({ ...row, state: "unknown", bundle_state: "unknown", actions: [], diagnostic: null, detail: "" }));
  onStatus({ ...context.status, servers: unknown(context.status.servers), bundles: unknown(context.status.bundles) });
}

export function onStatus(data) {
  if (root) keepFocus(root, () => render(data));
}

function render(data) {
  clear(root);
  root.dataset.generation = String(data.generation);
  root.dataset.starting = String(data.starting);
  add(root, 
    h("p", { class: "muted" }, "workspace ", h("code", { text: data.workspace, "data-mask": true }), ` - ${count(data.tools, "tool")}, ${count(data.skills, "skill")}`),
  );
  const trust = trustBox(data.trust);
  if (trust) add(root, trust);
  add(root, 
    h(
      "section",
      { class: "servers" },
      h("h2", { text: "Servers" }),
      data.servers.length ? data.servers.map((row) => serverRow(row, trust !== null)) : h("p", { class: "muted", text: "(no MCP, LSP or DAP servers declared)" }),
    ),
  );
  add(root, 
    h(
      "section",
      { class: "bundles" },
      h("h2", { text: "Bundles" }),
      data.bundles.length
        ? data.bundles.map((b) =>
            h(
              "div",
              { class: "server", dataset: { server: b.name, state: b.state, kind: "bundle", bundleState: b.bundle_state } },
              h(
                "div",
                { class: "line" },
                pill(b.state, b.bundle_state === "available" ? "found" : b.bundle_state),
                h("a", { class: "name", href: "/plugins", text: b.name }),
                h("span", { class: "kind", text: `bundle, ${b.scope}` }),
                h("span", { class: "detail", text: shownDetail(b, trust !== null) }),
              ),
            ),
          )
        : h("p", { class: "muted", text: "(no plugin bundles found)" }),
    ),
  );
  const failed = data.providers.filter((p) => p.state === "failed");
  if (data.plugin_failures.length || failed.length || data.config_errors.length) {
    add(root, 
      h(
        "section",
        { class: "problems" },
        h("h2", { text: "Problems" }),
        h(
          "ul",
          {},
          data.plugin_failures.map((f) =>
            h("li", { class: "error", dataset: { failure: f.plugin } }, `plugin package ${f.distribution || f.plugin} ${f.version || ""} (${f.stage}): ${f.error}`),
          ),
          failed.map((p) => h("li", { class: "error" }, `provider ${p.name} (${p.owner}) failed: ${p.error}`)),
          data.config_errors.map((e) => h("li", { class: "error" }, `config: ${e}`)),
        ),
      ),
    );
  }
}
