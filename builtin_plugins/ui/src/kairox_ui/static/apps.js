// MCP Apps (io.modelcontextprotocol/ui): a tool's view in a sandboxed frame, and the
// JSON-RPC bridge over postMessage between the view and this page (docs/ui.md).
//
// The frame is sandbox="allow-scripts" (never allow-same-origin) and its document comes
// with its own CSP and `sandbox` (kairox_ui/apps.py), so the view runs in an opaque
// origin: it reaches this page only through the messages handled here, and a tools/call
// goes to the dashboard's API, which checks the tool and runs it through the policy.
import { api, ApiError, h } from "./dom.js";

const PROTOCOL_VERSION = "2026-01-26";
const MIN_HEIGHT = 80;
const MAX_HEIGHT = 2000;

let current = null;

// Close the open view (its listener goes with it).
export function closeApp() {
  if (current) current.close();
  current = null;
}

// Open the view of `tool` in `box` and hand it the call `{ arguments, result }` (the
// dashboard's result shape) once it says it is initialized.
export async function openApp(box, tool, call) {
  closeApp();
  box.replaceChildren(h("p", { class: "muted", text: `opening ${tool.app}...` }));
  let opened;
  try {
    opened = await api("/api/apps/open", { method: "POST", body: { name: tool.id } });
  } catch (error) {
    box.replaceChildren(h("p", { class: "error", dataset: { appError: "true" }, text: error.message }));
    return;
  }
  const frame = h("iframe", {
    class: opened.prefers_border ? "app-frame bordered" : "app-frame",
    sandbox: "allow-scripts",
    referrerpolicy: "no-referrer",
    title: `${tool.id}: ${opened.resource_uri}`,
    dataset: { app: opened.app },
  });
  current = new Bridge(frame, opened, call);
  box.replaceChildren(
    h("p", { class: "muted" }, "app ", h("code", { text: opened.resource_uri }), ` of ${opened.server} (sandboxed; CSP: `, h("code", { class: "csp", text: opened.csp }), ")"),
    frame,
  );
  frame.src = opened.frame; // after the listener is in place: the view may speak at once
}

// JSON-RPC over postMessage with one frame. Its origin is opaque ("null"), so messages
// go to "*" and come from whichever window is `frame.contentWindow`.
class Bridge {
  constructor(frame, opened, call) {
    this.frame = frame;
    this.opened = opened;
    this.call = call;
    this.initialized = false;
    this.listener = (event) => this.receive(event);
    window.addEventListener("message", this.listener);
  }

  close() {
    window.removeEventListener("message", this.listener);
    this.frame.remove();
  }

  send(message) {
    this.frame.contentWindow?.postMessage({ jsonrpc: "2.0", ...message }, "*");
  }

  receive(event) {
    if (event.source !== this.frame.contentWindow || event.source === null) return;
    const message = event.data;
    if (!message || typeof message !== "object" || message.jsonrpc !== "2.0" || typeof message.method !== "string") return;
    const params = message.params && typeof message.params === "object" ? message.params : {};
    if (message.id === undefined) {
      this.notified(message.method, params);
      return;
    }
    this.answer(message.method, params).then(
      (result) => this.send({ id: message.id, result }),
      (error) => this.send({ id: message.id, error: { code: error.code ?? -32000, message: String(error.message || error) } }),
    );
  }

  notified(method, params) {
    if (method === "ui/notifications/initialized" && !this.initialized) {
      // the host sends nothing before this (the spec's rule)
      this.initialized = true;
      if (this.call) {
        this.send({ method: "ui/notifications/tool-input", params: { arguments: this.call.arguments || {} } });
        this.send({ method: "ui/notifications/tool-result", params: mcpResult(this.call.result) });
      }
    } else if (method === "ui/notifications/size-changed" && Number.isFinite(params.height)) {
      this.frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(params.height)))}px`;
    }
  }

  async answer(method, params) {
    if (method === "ui/initialize") {
      return {
        protocolVersion: PROTOCOL_VERSION,
        hostInfo: { name: "kairox-ui", version: "0.1.0" },
        hostCapabilities: { serverTools: {}, logging: {}, sandbox: { csp: this.opened.declared } },
        hostContext: {
          toolInfo: { tool: this.opened.tool },
          theme: "light",
          displayMode: "inline",
          availableDisplayModes: ["inline"],
          platform: "web",
          locale: navigator.language,
        },
      };
    }
    if (method === "ping") return {};
    if (method === "ui/request-display-mode") return { mode: "inline" };
    if (method === "tools/call") {
      if (typeof params.name !== "string") throw rpcError(-32602, "tools/call needs a tool name");
      try {
        const reply = await api(`/api/apps/${encodeURIComponent(this.opened.app)}/call`, {
          method: "POST",
          body: { name: params.name, arguments: params.arguments ?? {} },
        });
        if (reply.result) return mcpResult(reply.result);
        return { content: [{ type: "text", text: `${reply.error}: ${reply.message}` }], isError: true };
      } catch (error) {
        throw rpcError(error instanceof ApiError && error.status === 403 ? -32001 : -32000, error.message);
      }
    }
    throw rpcError(-32601, `method not found: ${method}`);
  }
}

function rpcError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

// A kairox result (ToolResult.to_dict) as an MCP CallToolResult.
export function mcpResult(result) {
  const out = { content: (result.content || []).map(mcpBlock), isError: Boolean(result.is_error) };
  if (result.structured) out.structuredContent = result.structured;
  if (result._meta) out._meta = result._meta;
  return out;
}

function mcpBlock(block) {
  const { mime_type: mimeType, ...rest } = block;
  if (block.type === "resource") {
    const { uri, text, blob, annotations, _meta } = rest;
    const resource = { uri, mimeType, text: text ?? undefined, blob: blob ?? undefined };
    return { type: "resource", resource, annotations: annotations ?? undefined, _meta: _meta ?? undefined };
  }
  return mimeType === undefined ? rest : { ...rest, mimeType };
}
