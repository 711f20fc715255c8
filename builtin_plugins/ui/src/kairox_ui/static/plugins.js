// Plugins: bundles with trust, compatibility, permissions; enable/disable whole or per contribution.
import { add, clear, h, loadInto, pill, tryApi } from "./dom.js";

let root = null;
let scopeSelect = null;

export async function mount(main) {
  scopeSelect = h("select", { name: "scope", "aria-label": "Settings to change" }, h("option", { value: "user" }, "user settings"), h("option", { value: "workspace" }, "workspace settings"));
  root = h("div", { class: "plugins" });
  add(main, h("p", { class: "muted" }, "Changes go to the ", scopeSelect, "; the runtime is reopened after each."), root);
  await load();
}

export const onReload = () => load();

const post = (path, body) => tryApi(path, { method: "POST", body });

const load = () => loadInto(root, "/api/plugins", render);

function render(data) {
  clear(root);
  if (data.trust.pending.length) {
    add(root, 
      h(
        "section",
        { class: "trust" },
        h("p", { text: `This workspace declares ${data.trust.pending.length} item(s) you have not trusted.` }),
        h("button", { dataset: { action: "trust-workspace" }, onclick: () => post("/api/trust", {}) }, "Trust this workspace"),
      ),
    );
  }
  add(root, h("h2", { text: "Bundles" }));
  if (!data.bundles.length) add(root, h("p", { class: "muted", text: "(no plugin bundles found)" }));
  for (const b of data.bundles) add(root, bundle(b));
  add(root, 
    h("h2", { text: "Plugin packages" }),
    h(
      "table",
      { class: "packages" },
      h("tbody", {}, data.packages.map((p) => h("tr", { dataset: { package: p.name } }, h("td", { text: p.name }), h("td", { text: `${p.distribution || ""} ${p.version || ""}` }), h("td", { class: "muted hooks", text: p.hooks.join(", ") })))),
    ),
    data.failures.map((f) => h("p", { class: "error", dataset: { failure: f.plugin } }, `${f.distribution || f.plugin} ${f.version || ""} (${f.stage}): ${f.error}`)),
    data.problems.map((p) => h("p", { class: "note", text: p })),
  );
}

function bundle(b) {
  const c = b.compatibility || {};
  const perms = b.permissions ? Object.entries(b.permissions).filter(([, v]) => v !== null && v !== undefined) : [];
  const path = h("input", { name: "path", value: b.path_override || "", placeholder: "/absolute/path/to/a/copy" });
  const el = h(
    "section",
    { class: "bundle", dataset: { plugin: b.name, state: b.state, enabled: String(b.enabled) } },
    h("h3", {}, pill(b.state === "loaded" ? "ready" : b.state === "untrusted" ? "untrusted" : b.state === "failed" || b.state === "incompatible" ? "failed" : "stopped", b.state), " ", b.name, b.version ? ` ${b.version}` : ""),
    b.description ? h("p", { text: b.description }) : null,
    h("p", { class: "muted", "data-mask": true, text: `${b.format}, ${b.scope} - ${b.root}` }),
    b.reason ? h("p", { class: "note", text: b.reason }) : null,
    h("p", {}, `trust: ${b.trust} (declared), `, b.trusted ? "trusted here" : "not trusted here"),
    h("p", {}, "compatibility: ", c.compatible === false ? h("span", { class: "error", text: `incompatible: ${(c.problems || []).join("; ")}` }) : "compatible", c.requires && c.requires.length ? ` (requires ${c.requires.join(", ")})` : ""),
    h("p", {}, "permissions: ", perms.length ? perms.map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : v}`).join(", ") : "(none)"),
    h(
      "div",
      { class: "actions" },
      h("button", { dataset: { action: "toggle-plugin" }, "aria-label": `${b.enabled ? "Disable" : "Enable"} plugin ${b.name}`, onclick: () => post(`/api/plugins/${encodeURIComponent(b.name)}/enabled`, { scope: scopeSelect.value, enabled: !b.enabled }) }, b.enabled ? "Disable plugin" : "Enable plugin"),
      b.state === "untrusted" || (!b.trusted && b.scope === "workspace")
        ? h("button", { class: "primary", dataset: { action: "trust-plugin" }, onclick: () => post(`/api/plugins/${encodeURIComponent(b.name)}/trust`, {}) }, "Trust this plugin")
        : null,
    ),
    h(
      "ul",
      { class: "contributions" },
      b.inventory.map((item) =>
        h(
          "li",
          { dataset: { contribution: item.key, enabled: String(item.enabled), loaded: String(item.loaded) } },
          h("span", { class: "state", text: item.enabled ? "on" : "off" }),
          " ",
          h("code", { text: item.key }),
          item.loaded ? h("span", { class: "muted", text: " loaded" }) : null,
          item.detail ? h("span", { class: "muted", text: ` (${item.detail})` }) : null,
          " ",
          h("button", { dataset: { action: "toggle" }, "aria-label": `${item.enabled ? "Disable" : "Enable"} ${item.key}`, onclick: () => post(`/api/plugins/${encodeURIComponent(b.name)}/enabled`, { scope: scopeSelect.value, enabled: !item.enabled, contribution: item.key }) }, item.enabled ? "Disable" : "Enable"),
        ),
      ),
    ),
    h(
      "form",
      { class: "path", onsubmit: (e) => (e.preventDefault(), post(`/api/plugins/${encodeURIComponent(b.name)}/path`, { scope: scopeSelect.value, path: path.value })) },
      h("label", { class: "field inline" }, "load from ", path),
      h("button", { type: "submit", dataset: { action: "override-path" }, "aria-label": `Save path of ${b.name}` }, "Save path"),
    ),
    (b.problems || []).map((p) => h("p", { class: p.severity === "error" ? "error" : "note", text: `${p.severity}: ${p.message}` })),
  );
  if (b.user_config && b.user_config.length) {
    const holder = h("div", { class: "user-config" });
    add(el, holder);
    userConfig(b.name, holder);
  }
  return el;
}

// The plugin's userConfig: one field per option. A sensitive one is a password input that
// starts empty (the API never sends its value back); left empty it keeps what is stored.
async function userConfig(name, holder) {
  const url = `/api/plugins/${encodeURIComponent(name)}/config`;
  const data = await tryApi(url);
  if (data === null) return;
  const inputs = [];
  const field = (o) => {
    let input;
    if (o.type === "boolean") {
      input = h("input", { type: "checkbox", name: o.key });
      input.checked = o.value === null ? o.default === true : o.value === true;
    } else if (o.options && o.options.length) {
      input = h("select", { name: o.key }, o.options.map((c) => h("option", { value: c }, c)));
      input.value = o.value ?? o.default ?? "";
    } else {
      const shown = o.sensitive ? "" : Array.isArray(o.value) ? o.value.join(",") : o.value ?? "";
      input = h("input", {
        name: o.key,
        type: o.sensitive ? "password" : o.type === "number" ? "number" : "text",
        autocomplete: o.sensitive ? "new-password" : "off",
        value: String(shown),
        placeholder: o.sensitive ? (o.set ? `set (${o.source}); leave empty to keep it` : "not set") : o.default === null ? "" : String(o.default),
      });
    }
    inputs.push([o, input]);
    const flags = [o.required ? "required" : "", o.sensitive ? "kept in the system keychain" : ""].filter(Boolean).join(", ");
    return h("label", { class: "field", dataset: { option: o.key } }, `${o.title || o.key}${flags ? ` (${flags})` : ""}`, input, o.description ? h("span", { class: "muted", text: ` ${o.description}` }) : null);
  };
  const submit = (e) => {
    e.preventDefault();
    const values = {};
    for (const [o, input] of inputs) {
      if (o.type === "boolean") values[o.key] = input.checked;
      else if (input.value === "") continue;
      else if (o.multiple) values[o.key] = input.value.split(",").map((v) => v.trim()).filter(Boolean);
      else values[o.key] = input.value;
    }
    post(url, { values });
  };
  add(holder, h("form", { class: "user-config", dataset: { action: "user-config" }, onsubmit: submit }, h("h4", { text: "Settings" }), data.options.map(field), h("button", { type: "submit" }, "Save settings")));
}
