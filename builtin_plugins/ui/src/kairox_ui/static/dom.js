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

export async function api(path, { method = "GET", body } = {}) {
  const options = { method, credentials: "same-origin", headers: {} };
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

// Element.append with nested arrays of children (what h() takes)
export function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}
