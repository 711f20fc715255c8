// DOM and API helpers. Text from the server is only ever set as text (never as HTML).

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export class ApiError extends Error {
  constructor(message, status, field) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

// The access token: `kairox ui` prints http://HOST:PORT/#token=TOKEN. The fragment never
// reaches a server; the page keeps the token in this tab's sessionStorage, takes it out of
// the address bar, and sends it only to this server: as `Authorization: Bearer` on every
// API call, and in the event stream's URL (EventSource cannot send headers). No cookie.
const TOKEN_KEY = "kairox-ui-token";

function takeToken() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const fromHash = params.get("token");
  if (fromHash) {
    try {
      sessionStorage.setItem(TOKEN_KEY, fromHash);
    } catch {
      // storage refused (a private mode): the token lives as long as this page
    }
    params.delete("token");
    const rest = params.toString();
    history.replaceState(history.state, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
    return fromHash;
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

const token = takeToken();

// The printed URL pasted into a tab that shows this page already only changes the
// fragment (no reload): take the token and start over with it.
window.addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.replace(/^#/, "")).get("token")) {
    takeToken();
    location.reload();
  }
});

export function hasToken() {
  return token !== "";
}

export function streamUrl(path) {
  return `${path}?token=${encodeURIComponent(token)}`;
}

export async function api(path, { method = "GET", body } = {}) {
  const options = { method, credentials: "omit", headers: { authorization: `Bearer ${token}` } };
  if (method !== "GET") {
    options.headers["content-type"] = "application/json";
    options.headers["x-kairox-ui"] = "1";
    options.body = JSON.stringify(body ?? {});
  }
  const response = await fetch(path, options);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: text };
  }
  if (!response.ok) {
    const message = (data && data.error) || `${response.status} ${response.statusText}`;
    throw new ApiError(data && data.field ? `${data.field}: ${message}` : message, response.status, data && data.field);
  }
  return data;
}

// api(), but a failure is shown as an error notice and the result is null (a page's loads and clicks)
export async function tryApi(path, options) {
  try {
    return await api(path, options);
  } catch (error) {
    notice(error.message, "error");
    return null;
  }
}

// A page's list: GET `path` and `render(data)` it into `root` (render replaces what is inside)
// without moving the keyboard focus; a failed request leaves the list as it was (tryApi said why).
export async function loadInto(root, path, render) {
  const data = await tryApi(path);
  if (data === null) return;
  keepFocus(root, () => render(data));
}

// A <form> (attributes `props`) whose submit hands `submit(values)` the value of each field
// matching `fields`, under key(field.name); blank values are left out unless `keepBlank`.
export function submitForm(props, { fields, submit, key = (name) => name, keepBlank = false }, ...children) {
  const form = h(
    "form",
    {
      ...props,
      onsubmit: async (event) => {
        event.preventDefault();
        const values = {};
        for (const field of form.querySelectorAll(fields)) {
          if (keepBlank || field.value !== "") values[key(field.name)] = field.value;
        }
        await submit(values);
      },
    },
    ...children,
  );
  return form;
}

export function notice(message, kind = "info") {
  const box = document.getElementById("notice");
  const item = h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
  box.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 12000 : 5000);
}

export function section(title, ...children) {
  return h("section", {}, h("h2", { text: title }), ...children);
}

export function pill(state, label) {
  return h("span", { class: `pill ${state}`, dataset: { pill: state } }, label ?? state);
}

// An item opened from a list shows its detail beside it, or under the whole list on a phone:
// the focus goes to the detail's heading, which brings it on screen and tells a screen reader.
export function focusHeading(panel) {
  const heading = panel.querySelector("h2");
  if (!heading) return;
  heading.tabIndex = -1;
  heading.focus();
}

// What a page lists is known by these attributes (data-server="git" data-kind="mcp", ...): a live
// re-render finds "the same" control again by them.
const IDENTITY = ["server", "kind", "skill", "plugin", "contribution", "tool", "entry", "package"];

function identity(el) {
  return IDENTITY.filter((k) => el.dataset[k] !== undefined)
    .map((k) => `[data-${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}="${CSS.escape(el.dataset[k])}"]`)
    .join("");
}

const FOCUSABLE = "button:not([disabled]), a[href], input:not([disabled]), select:not([disabled]), textarea, summary, [tabindex]";

// Run `rebuild()` (which replaces what is inside `root`) without moving the keyboard focus: a
// control that had it gets it back, or, if it is gone, the first control of the item it was
// in (WCAG 2.2: a live update must not send the focus to <body>).
export function keepFocus(root, rebuild) {
  let active = document.activeElement;
  // a control disabled while its request runs lost the focus to <body>: it is the one to keep
  if (!active || active === document.body) active = root.querySelector("[data-had-focus]");
  if (!active || !root.contains(active)) return rebuild();
  const own = ["action", "answer"].filter((k) => active.dataset[k] !== undefined).map((k) => `[data-${k}="${CSS.escape(active.dataset[k])}"]`);
  const name = active.getAttribute("name");
  const self = `${active.tagName.toLowerCase()}${identity(active)}${own.join("")}${name ? `[name="${CSS.escape(name)}"]` : ""}`;
  const items = [];
  for (let node = active.parentElement; node && node !== root; node = node.parentElement) {
    const id = identity(node);
    if (id) items.unshift(id);
  }
  const result = rebuild();
  const item = items.length ? root.querySelector(items.join(" ")) : null;
  const again = root.querySelector([...items, self].join(" ")) || item?.querySelector(FOCUSABLE);
  if (again) again.focus({ preventScroll: true });
  else if (!active.isConnected) focusTitle(); // its item is gone (a trust box once trusted): the page's heading, not <body>
  return result;
}

// The page's h1: where the focus goes when what had it is gone.
export function focusTitle() {
  const title = document.getElementById("title");
  if (!title) return;
  title.tabIndex = -1;
  title.focus({ preventScroll: true });
}

// Disable (or enable again) a control. A focused control that is disabled loses the focus to
// <body> (so the next Tab starts at the top of the page): it gets it back when it is enabled
// again, or, re-rendered meanwhile, keepFocus gives it to its new copy.
export function setDisabled(control, disabled) {
  if (disabled) {
    if (document.activeElement === control) control.dataset.hadFocus = "true";
    control.disabled = true;
    return;
  }
  control.disabled = false;
  const had = control.dataset.hadFocus !== undefined;
  delete control.dataset.hadFocus;
  const lost = !document.activeElement || document.activeElement === document.body;
  if (had && lost && control.isConnected) control.focus({ preventScroll: true });
}

// Element.append with nested arrays of children (what h() takes)
export function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}
