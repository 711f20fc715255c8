// Skills: every skill by scope with shadowing; enable/disable per scope; body and arguments form.
import { add, api, clear, focusHeading, h, loadInto, notice, setDisabled, submitForm, tryApi } from "./dom.js";

let root = null;
let panel = null;
let scopeSelect = null;
const GROUPS = ["workspace", "user", "session", "plugin"];

export async function mount(main) {
  scopeSelect = h("select", { name: "scope", "aria-label": "Settings to change" }, h("option", { value: "workspace" }, "workspace settings"), h("option", { value: "user" }, "user settings"));
  root = h("div", { class: "skills" });
  panel = h("div", { class: "skill-detail" });
  add(main, 
    h("p", { class: "muted" }, "Enable or disable in the ", scopeSelect, " (the skill files are not touched)."),
    h("div", { class: "columns" }, root, panel),
  );
  await load();
}

export const onReload = () => load();
export const onSkills = () => load();

const load = () => loadInto(root, "/api/skills", render);

function render(data) {
  clear(root);
  for (const group of GROUPS) {
    const rows = data.skills.filter((s) => s.group === group);
    if (!rows.length) continue;
    add(root, 
      h(
        "section",
        { dataset: { scope: group } },
        h("h2", { text: `${group} skills` }),
        h("table", {}, h("tbody", {}, rows.map(row))),
      ),
    );
  }
  if (!data.skills.length) add(root, h("p", { class: "muted", text: "(no skills)" }));
  add(root, sessionForm());
  for (const e of data.errors) add(root, h("p", { class: "error", text: e }));
  for (const w of data.warnings) add(root, h("p", { class: "note", text: w }));
}

// A skill for the dashboard's session: it shadows workspace and user skills of its name
// and is gone when the session ends (the dashboard stops, or the runtime is reopened).
function sessionForm() {
  const form = submitForm(
    { class: "session-skill" },
    {
      fields: "input, textarea",
      keepBlank: true,
      submit: async (body) => {
        try {
          await api("/api/session/skills", { method: "POST", body });
          form.reset();
          await load();
        } catch (error) {
          notice(error.message, "error");
        }
      },
    },
    h("h2", { text: "Add a session skill" }),
    h("p", { class: "muted", text: "Kept in the dashboard's session only, no file written: it shadows a workspace or user skill of the same name until the session ends (the dashboard stops or reopens its runtime)." }),
    h("label", { class: "field" }, h("span", { text: "name" }), h("input", { name: "name", required: true, maxlength: "64" })),
    h("label", { class: "field" }, h("span", { text: "description" }), h("input", { name: "description", required: true })),
    h("label", { class: "field" }, h("span", { text: "prompt" }), h("textarea", { name: "body", rows: "4" })),
    h("button", { type: "submit", dataset: { action: "add-session-skill" } }, "Add to the session"),
  );
  return form;
}

async function removeSessionSkill(name) {
  try {
    await api(`/api/session/skills/${encodeURIComponent(name)}/remove`, { method: "POST" });
    await load();
  } catch (error) {
    notice(error.message, "error");
  }
}

function row(s) {
  const tr = h("tr", { dataset: { skill: s.name, enabled: String(s.enabled), userOnly: String(Boolean(s.user_only)) } });
  const button = h(
    "button",
    {
      dataset: { action: "toggle" },
      "aria-label": `${s.enabled ? "Disable" : "Enable"} ${s.name}`,
      onclick: async () => {
        setDisabled(button, true);
        try {
          const result = await api(`/api/skills/${encodeURIComponent(s.name)}/enabled`, {
            method: "POST",
            body: { scope: scopeSelect.value, enabled: tr.dataset.enabled !== "true" },
          });
          tr.dataset.enabled = String(result.enabled);
          button.textContent = result.enabled ? "Disable" : "Enable";
          button.setAttribute("aria-label", `${button.textContent} ${s.name}`);
          state.textContent = result.enabled ? "on" : "off";
          if (result.decided_by && result.decided_by !== scopeSelect.value)
            notice(`the ${result.decided_by} settings keep ${s.name} ${result.enabled ? "enabled" : "disabled"}`);
        } catch (error) {
          notice(error.message, "error");
        } finally {
          setDisabled(button, false);
        }
      },
    },
    s.enabled ? "Disable" : "Enable",
  );
  const state = h("span", { class: "state", text: s.enabled ? "on" : "off" });
  tr.append(
    h(
      "td",
      {},
      h("a", { href: "#", class: "name", onclick: (e) => (e.preventDefault(), show(s.name)) }, s.name),
      s.user_only ? h("span", { class: "tag user-only", title: "disable-model-invocation: run by you, never offered to the model", text: "user only" }) : null,
    ),
    h("td", { class: "state-cell" }, state),
    h("td", { class: "description", text: s.description }),
    h("td", { class: "muted enabled-by", text: s.enabled_by ? `by the ${s.enabled_by} settings` : "" }),
    h("td", { class: "shadows" }, s.shadows.length ? `shadows ${s.shadows.map((x) => `${x.scope} ${x.path || x.source}`).join(", ")}` : ""),
    h(
      "td",
      { class: "actions" },
      button,
      s.scope === "session" ? h("button", { dataset: { action: "remove" }, "aria-label": `Remove ${s.name}`, onclick: () => removeSessionSkill(s.name) }, "Remove") : null,
    ),
  );
  return tr;
}

function argumentField(a) {
  const label = `${a.name} (${a.type}${a.required ? ", required" : ""})`;
  let input;
  if (a.choices && a.choices.length) {
    input = h("select", { name: a.name }, a.required ? null : h("option", { value: "" }, "-"), a.choices.map((c) => h("option", { value: String(c), selected: a.default === c }, String(c))));
  } else if (a.type === "boolean") {
    input = h("select", { name: a.name }, h("option", { value: "" }, "-"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    if (a.default !== null && a.default !== undefined) input.value = String(a.default);
  } else {
    input = h("input", { name: a.name, type: a.type === "integer" || a.type === "number" ? "number" : "text", value: a.default ?? "", placeholder: a.description || "" });
  }
  return h("label", { class: "field" }, h("span", { text: label }), input, a.description ? h("small", { class: "muted", text: a.description }) : null);
}

async function show(name) {
  const s = await tryApi(`/api/skills/${encodeURIComponent(name)}`);
  if (s === null) return;
  clear(panel);
  const output = h("pre", { class: "rendered" });
  const form = submitForm(
    { class: "arguments" },
    {
      fields: "input, select",
      submit: async (args) => {
        try {
          const result = await api(`/api/skills/${encodeURIComponent(name)}/render`, { method: "POST", body: { arguments: args } });
          output.dataset.rendered = "true";
          output.textContent = result.text;
        } catch (error) {
          output.dataset.rendered = "false";
          output.textContent = error.message;
        }
      },
    },
    s.arguments.map(argumentField),
    h("button", { type: "submit", dataset: { action: "render" } }, "Render"),
  );
  panel.dataset.skill = name;
  add(panel, 
    h("h2", { text: s.name }),
    h("p", { text: s.description }),
    h("p", { class: "muted", "data-mask": true, text: `${s.scope} scope, source ${s.source}${s.path ? `, ${s.path}` : ""}` }),
    s.tools.length ? h("p", { text: `tools: ${s.tools.join(", ")}` }) : null,
    s.model ? h("p", { text: `model: ${s.model}` }) : null,
    h("h3", { text: "Body" }),
    h("pre", { class: "body", text: s.body ?? s.body_error ?? "" }),
    h("h3", { text: "Arguments" }),
    form,
    output,
  );
  focusHeading(panel);
}
