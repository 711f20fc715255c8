// Tools: every tool with domain, capability and the policy's decision; call one with a form from its schema.
import { add, api, clear, focusHeading, h, loadInto, submitForm } from "./dom.js";
import { closeApp, openApp } from "./apps.js";

let root = null;
let panel = null;

export async function mount(main) {
  root = h("div", { class: "tools" });
  panel = h("div", { class: "tool-detail" });
  add(main, h("div", { class: "columns" }, root, panel));
  await load();
}

export const onReload = () => load();

export function onStatus(data, context) {
  // tools arrive as servers become ready
  if (root && context.lastTools !== data.tools) {
    context.lastTools = data.tools;
    load();
  }
}

const load = () => loadInto(root, "/api/tools", render);

function render(data) {
  clear(root);
  if (!data.tools.length) {
    add(root, h("p", { class: "muted", text: "(no tools yet)" }));
    return;
  }
  add(root, 
    h(
      "table",
      { class: "tool-list" },
      h("thead", {}, h("tr", {}, ["tool", "provider", "domain", "capability", "policy"].map((t) => h("th", { class: t, text: t })))),
      h(
        "tbody",
        {},
        data.tools.map((t) =>
          h(
            "tr",
            { dataset: { tool: t.id, decision: t.decision } },
            h("td", {}, h("a", { href: "#", onclick: (e) => (e.preventDefault(), show(t)) }, t.id), t.app ? h("span", { class: "tag", title: t.app, text: "app" }) : null),
            h("td", { class: "provider", text: t.provider }),
            h("td", { class: "domain", text: t.domain }),
            h("td", { text: t.capability }),
            h("td", { title: t.reason, text: t.decisions && t.decisions.inside.decision !== t.decisions.outside.decision ? `${t.decisions.inside.decision} inside, ${t.decisions.outside.decision} outside` : t.decision }),
          ),
        ),
      ),
    ),
  );
}

function field(name, prop, required) {
  const type = Array.isArray(prop.type) ? prop.type.find((x) => x !== "null") : prop.type || "string";
  const label = h("span", { text: `${name} (${type}${required ? ", required" : ""})` });
  let input;
  if (Array.isArray(prop.enum)) {
    input = h("select", { name }, h("option", { value: "" }, "-"), prop.enum.map((v) => h("option", { value: String(v) }, String(v))));
  } else if (type === "boolean") {
    input = h("select", { name }, h("option", { value: "" }, "-"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
  } else if (type === "object" || type === "array") {
    input = h("textarea", { name, rows: 3, placeholder: type === "array" ? "[...] (JSON)" : "{...} (JSON)" });
  } else {
    input = h("input", { name, type: type === "integer" || type === "number" ? "number" : "text", step: type === "number" ? "any" : null });
  }
  if (prop.default !== undefined) input.value = typeof prop.default === "object" ? JSON.stringify(prop.default) : String(prop.default);
  return h("label", { class: "field" }, label, input, prop.description ? h("small", { class: "muted", text: prop.description }) : null);
}

function show(tool) {
  closeApp();
  clear(panel);
  const schema = tool.schema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const output = h("pre", { class: "result" });
  const appBox = h("div", { class: "app" });
  const form = submitForm(
    {},
    {
      fields: "input, select, textarea",
      keepBlank: true,
      submit: async (values) => {
        output.dataset.outcome = "running";
        output.textContent = "calling...";
        try {
          const result = await api("/api/tools/call", { method: "POST", body: { name: tool.id, form: values } });
          output.dataset.outcome = result.ok ? "ok" : result.error || "error";
          output.textContent = result.result ? JSON.stringify(result.result, null, 2) : `${result.error}: ${result.message}`;
          // an MCP App shows the call's input and result in its view
          if (tool.app && result.result) await openApp(appBox, tool, { arguments: result.arguments, result: result.result });
        } catch (error) {
          output.dataset.outcome = "error";
          output.textContent = error.message;
        }
      },
    },
    Object.entries(props).map(([name, prop]) => field(name, prop || {}, required.has(name))),
    h("button", { type: "submit", class: "primary", dataset: { action: "call" } }, "Call"),
  );
  panel.dataset.tool = tool.id;
  add(panel, 
    h("h2", { text: tool.id }),
    h("p", { class: "muted", text: `${tool.provider} - ${tool.domain}/${tool.capability} - exported as ${tool.exported_name}` }),
    h("p", { text: tool.description }),
    h("p", {}, "policy: ", h("strong", { text: tool.decision }), tool.reason ? ` (${tool.reason})` : ""),
    tool.app ? h("p", {}, "app: ", h("code", { text: tool.app }), " (shown after a call)") : null,
    form,
    output,
    appBox,
  );
  focusHeading(panel);
}
