// The Node process JavaScript Philont plugins run in (kairox-philont).
//
// `node host.mjs '{"max_line": N}'`: JSON lines (see kairox_philont/protocol.py) over fd 0, a
// socket kairox holds the other end of (both directions). Loads each plugin's `main` (CommonJS
// or ES module), calls its `register(ctx)` (which may be async) and serves its tools and hooks.
// stdout and stderr are diagnostics (kairox keeps a bounded tail); console.log and
// process.stdout.write go to stderr. It exits when its input ends.

import net from "node:net";
import { pathToFileURL } from "node:url";
import { format } from "node:util";

const config = JSON.parse(process.argv[2] || "{}");
const MAX_LINE = Number(config.max_line) || 64 * 1024 * 1024;
const MAX_STACK = 4000;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const HOOKS = new Set(["pre_tool_call", "post_tool_call", "on_session_start", "on_session_end"]);
const DOMAINS = new Set(["local", "network", "system"]);
const CAPABILITIES = new Set(["read", "write", "execute"]);

// -- the protocol channel: fd 0, a socket; only send() writes to it -------------------------
const channel = new net.Socket({ fd: 0, readable: true, writable: true });
const writeOut = (line) => channel.write(line);
const toStderr = (...args) => {
  process.stderr.write(format(...args) + "\n");
};
for (const name of ["log", "info", "debug", "trace", "dir", "dirxml", "table", "group", "groupCollapsed"]) {
  console[name] = toStderr;
}
process.stdout.write = (chunk, encoding, callback) => process.stderr.write(chunk, encoding, callback);

function send(message) {
  let line;
  try {
    line = JSON.stringify(message);
  } catch (err) {
    line = JSON.stringify({ id: message.id, error: `the answer is not JSON: ${err && err.message}` });
  }
  if (line === undefined) line = JSON.stringify({ id: message.id, value: null });
  if (Buffer.byteLength(line, "utf8") > MAX_LINE) {
    const why = `the answer (${Buffer.byteLength(line, "utf8")} bytes) is longer than the limit (${MAX_LINE} bytes)`;
    line = JSON.stringify("result" in message ? { id: message.id, result: { error: why } } : { id: message.id, error: why });
  }
  writeOut(line + "\n");
}

function errorOf(err) {
  if (err instanceof Error) {
    const stack = typeof err.stack === "string" ? err.stack.slice(0, MAX_STACK) : "";
    return { error: `${err.name || "Error"}: ${err.message}`, stack };
  }
  return { error: `thrown: ${typeof err === "string" ? err : format(err)}`.slice(0, MAX_STACK), stack: "" };
}

// -- plugins ---------------------------------------------------------------------------------
const plugins = new Map(); // id -> {tools: Map, hooks: [[event, fn]]}
const running = new Map(); // call id -> AbortController

function schemaOf(value) {
  return value && typeof value === "object" && !Array.isArray(value) ? value : undefined;
}

function makeContext(spec, state) {
  const log = {
    debug: toStderr,
    info: toStderr,
    warn: toStderr,
    error: toStderr,
  };
  const ctx = {
    id: spec.id,
    name: spec.name || spec.id,
    version: spec.version || "",
    pluginDir: spec.root,
    env: { ...(spec.env || {}) },
    log,
    logger: log,
    registerTool(tool, maybe) {
      if (typeof tool === "string") tool = typeof maybe === "function" ? { name: tool, execute: maybe } : { ...(maybe || {}), name: tool };
      if (!tool || typeof tool !== "object") throw new TypeError("registerTool() takes {name, description, inputSchema, execute}");
      const name = tool.name;
      if (typeof name !== "string" || !TOOL_NAME.test(name)) throw new Error(`tool name ${JSON.stringify(name)} must be 1-64 characters of A-Z a-z 0-9 _ -`);
      if (state.tools.has(name)) throw new Error(`tool ${JSON.stringify(name)} is registered twice`);
      const fn = tool.execute || tool.handler || tool.run;
      if (typeof fn !== "function") throw new TypeError(`tool ${JSON.stringify(name)} has no execute (or handler) function`);
      if (tool.domain != null && !DOMAINS.has(tool.domain)) throw new Error(`tool ${JSON.stringify(name)}: domain must be one of local, network, system`);
      if (tool.capability != null && !CAPABILITIES.has(tool.capability)) throw new Error(`tool ${JSON.stringify(name)}: capability must be one of read, write, execute`);
      state.tools.set(name, {
        fn,
        describe: {
          name,
          description: typeof tool.description === "string" ? tool.description : "",
          parameters: schemaOf(tool.inputSchema) || schemaOf(tool.parameters) || schemaOf(tool.input_schema) || null,
          domain: tool.domain ?? null,
          capability: tool.capability ?? null,
        },
      });
    },
    registerHook(event, fn) {
      if (!HOOKS.has(event)) throw new Error(`unknown hook ${JSON.stringify(event)}; expected one of ${[...HOOKS].join(", ")}`);
      if (typeof fn !== "function") throw new TypeError(`the ${event} hook is not a function`);
      state.hooks.push([event, fn]);
    },
  };
  ctx.register_tool = ctx.registerTool;
  ctx.register_hook = ctx.registerHook;
  return ctx;
}

function registerOf(mod) {
  if (mod && typeof mod.register === "function") return mod.register;
  const def = mod && mod.default;
  if (def && typeof def.register === "function") return def.register;
  if (typeof def === "function") return def;
  return undefined;
}

async function load(spec) {
  const mod = await import(pathToFileURL(spec.main).href);
  const register = registerOf(mod);
  if (!register) throw new TypeError(`${spec.main} exports no register(ctx) function`);
  const state = { tools: new Map(), hooks: [] };
  await register(makeContext(spec, state));
  plugins.set(spec.id, state);
  return { tools: [...state.tools.values()].map((t) => t.describe), hooks: state.hooks.map(([event]) => event) };
}

function contentOf(blocks) {
  const out = [];
  for (const block of blocks) {
    if (typeof block === "string") out.push({ type: "text", text: block });
    else if (block && typeof block === "object") out.push(block);
  }
  return out;
}

function toWire(value) {
  if (value === undefined || value === null) return {};
  if (typeof value === "string") return { text: value };
  if (typeof value === "object" && Array.isArray(value.content)) {
    const wire = { content: contentOf(value.content), is_error: Boolean(value.isError || value.is_error) };
    if (value.structuredContent && typeof value.structuredContent === "object") wire.structured = value.structuredContent;
    return wire;
  }
  try {
    const json = JSON.parse(JSON.stringify(value));
    return json === undefined ? { text: String(value) } : { json };
  } catch {
    return { text: String(value) };
  }
}

async function handle(message) {
  const id = message.id;
  const plugin = plugins.get(message.plugin);
  switch (message.op) {
    case "load":
      try {
        send({ id, ready: await load(message.plugin) });
      } catch (err) {
        send({ id, fatal: errorOf(err) });
      }
      return;
    case "unload":
      plugins.delete(message.plugin);
      send({ id, value: null });
      return;
    case "tool": {
      const tool = plugin && plugin.tools.get(message.name);
      if (!tool) {
        send({ id, error: `no tool ${JSON.stringify(message.name)} in plugin ${JSON.stringify(message.plugin)}` });
        return;
      }
      const controller = new AbortController();
      running.set(id, controller);
      try {
        const value = await tool.fn(message.arguments || {}, { signal: controller.signal, toolCallId: id });
        if (!controller.signal.aborted) send({ id, result: toWire(value) });
      } catch (err) {
        if (!controller.signal.aborted) send({ id, result: errorOf(err) });
      } finally {
        running.delete(id);
      }
      return;
    }
    case "hook": {
      const hook = plugin && plugin.hooks[message.index];
      if (!hook) {
        send({ id, error: `no hook ${message.index} in plugin ${JSON.stringify(message.plugin)}` });
        return;
      }
      try {
        const value = await hook[1](message.payload || {});
        send({ id, value: value === undefined ? null : value });
      } catch (err) {
        send({ id, ...errorOf(err) });
      }
      return;
    }
    case "cancel": {
      const controller = running.get(id);
      if (controller) controller.abort(new Error("cancelled by kairox"));
      return;
    }
    default:
      send({ id, error: `unknown op ${JSON.stringify(message.op)}` });
  }
}

// -- requests: bounded JSON lines ----------------------------------------------------------------
let pending = [];
let pendingSize = 0;
let skipping = false;

function onLine(buf) {
  let message;
  try {
    message = JSON.parse(buf.toString("utf8"));
  } catch {
    return;
  }
  if (message && typeof message === "object" && !Array.isArray(message)) handle(message);
}

channel.on("data", (chunk) => {
  let start = 0;
  for (;;) {
    const nl = chunk.indexOf(10, start);
    if (nl === -1) {
      if (!skipping) {
        pending.push(chunk.subarray(start));
        pendingSize += chunk.length - start;
        if (pendingSize > MAX_LINE) {
          pending = [];
          pendingSize = 0;
          skipping = true;
        }
      }
      return;
    }
    if (!skipping) {
      pending.push(chunk.subarray(start, nl));
      onLine(Buffer.concat(pending));
    }
    pending = [];
    pendingSize = 0;
    skipping = false;
    start = nl + 1;
  }
});
channel.on("end", () => process.exit(0));
channel.on("error", () => process.exit(0));

send({ type: "hello", pid: process.pid, node: process.version });
