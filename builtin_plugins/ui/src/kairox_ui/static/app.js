// The dashboard's entry module: picks the page, keeps one EventSource open, shows approvals.
import { api, clear, h, hasToken, notice, setDisabled, streamUrl } from "./dom.js";
import * as status from "./status.js";
import * as marketplace from "./marketplace.js";
import * as skills from "./skills.js";
import * as plugins from "./plugins.js";
import * as tools from "./tools.js";
import * as trace from "./trace.js";

const PAGES = { status, marketplace, skills, plugins, tools, trace };
const name = document.body.dataset.page || "status";
const page = PAGES[name] || status;
const main = document.getElementById("view");

for (const link of document.querySelectorAll("nav a")) {
  if (link.dataset.nav === name) link.setAttribute("aria-current", "page");
}

const context = { status: null };

// Questions of the policy, in one modal dialog: focus moves into it (onto Deny, the answer
// that runs nothing), the page behind is inert, and Escape answers Deny, so a question is never
// dismissed unanswered (fail closed). When the last one is answered the focus goes back.
const approvals = document.getElementById("approvals");
let returnFocus = null;

function pendingCards() {
  return approvals.querySelectorAll("[data-approval]");
}

// A question answered (here or elsewhere) goes; the focus moves to the next one, or back
function removeCard(card) {
  if (!card) return;
  const hadFocus = card.contains(document.activeElement);
  card.remove();
  if (!pendingCards().length) {
    if (approvals.open) approvals.close();
  } else if (hadFocus) {
    approvals.querySelector('[data-approval] [data-answer="deny"]').focus();
  }
}

function denyInFront() {
  const card = document.activeElement?.closest?.("[data-approval]") || approvals.querySelector("[data-approval]");
  card?.querySelector('[data-answer="deny"]')?.click();
}

approvals.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  event.preventDefault();
  denyInFront();
});
approvals.addEventListener("cancel", (event) => {
  event.preventDefault();
  denyInFront();
});
approvals.addEventListener("close", () => {
  // closed by the browser with questions left (a repeated Escape): they are denied
  for (const card of pendingCards()) card.querySelector('[data-answer="deny"]')?.click();
  const back = returnFocus;
  returnFocus = null;
  if (back?.isConnected) back.focus();
});

function showApproval(question) {
  if (approvals.querySelector(`[data-approval="${CSS.escape(question.id)}"]`)) return;
  const answer = async (reply) => {
    const buttons = card.querySelectorAll("button");
    if ([...buttons].some((b) => b.disabled)) return;
    buttons.forEach((b) => (b.disabled = true));
    try {
      await api(`/api/approvals/${encodeURIComponent(question.id)}`, { method: "POST", body: { answer: reply } });
      removeCard(card);
    } catch (error) {
      buttons.forEach((b) => (b.disabled = false));
      // said in the card: the page behind the modal dialog is inert, its notices unheard
      card.querySelector(".answer-error")?.remove();
      card.append(h("p", { class: "error answer-error", role: "alert", text: `could not answer: ${error.message}` }));
    }
  };
  const heading = `approval-${question.id}`;
  const card = h(
    "section",
    { class: "approval", "aria-labelledby": heading, dataset: { approval: question.id } },
    h("h3", { id: heading }, h("code", { text: question.tool })),
    h("p", { class: "reason", text: question.reason }),
    h("pre", { class: "arguments", text: JSON.stringify(question.arguments, null, 2) }),
    h(
      "div",
      { class: "actions" },
      h("button", { dataset: { answer: "allow_once" }, onclick: () => answer("allow_once") }, "Approve once"),
      h("button", { dataset: { answer: "allow_session" }, onclick: () => answer("allow_session") }, "Approve for the session"),
      h("button", { class: "danger", dataset: { answer: "deny" }, onclick: () => answer("deny") }, "Deny"),
    ),
  );
  approvals.append(card);
  if (!approvals.open) {
    returnFocus = document.activeElement;
    approvals.showModal();
    card.querySelector('[data-answer="deny"]').focus();
  }
}

// The backend's state as the page shows it: live, or down (a banner, every control of the
// page disabled, the status pills unknown) until the backend answers again.
const conn = document.getElementById("conn");
let banner = null;

function showDown(why) {
  conn.dataset.connected = "false";
  conn.textContent = "disconnected";
  document.body.dataset.backend = "down";
  if (!banner) {
    banner = h("div", { class: "banner error", role: "alert", dataset: { banner: "disconnected" } });
    main.before(banner);
  }
  banner.textContent = why;
  page.onDisconnect?.(context);
  for (const control of main.querySelectorAll("button, input, select, textarea")) {
    if (!control.disabled) {
      setDisabled(control, true);
      control.dataset.offline = "true";
    }
  }
  document.getElementById("approvals").replaceChildren(); // its questions ended with the backend
}

function showUp() {
  conn.dataset.connected = "true";
  conn.textContent = "live";
  delete document.body.dataset.backend;
  banner?.remove();
  banner = null;
  for (const control of main.querySelectorAll("[data-offline]")) {
    setDisabled(control, false);
    delete control.dataset.offline;
  }
}

const RETRY_MS = 1000;

// One EventSource; when it fails the page is shown as disconnected at once, and the
// backend is asked every RETRY_MS whether it is back (a 403: it runs with another token).
function connect(again = false) {
  const source = new EventSource(streamUrl("/api/stream"));
  const on = (event, fn) =>
    source.addEventListener(event, (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      fn(data);
    });
  source.onopen = () => {
    showUp();
    if (again) page.onReload?.(context); // what the page shows may have changed meanwhile
  };
  source.onerror = () => {
    source.close();
    showDown("The dashboard's backend is not answering (kairox ui stopped?); reconnecting...");
    setTimeout(probe, RETRY_MS);
  };
  on("status", (data) => {
    context.status = data;
    page.onStatus?.(data, context);
  });
  on("trace", (data) => page.onTrace?.(data, context));
  on("install", (data) => page.onInstall?.(data, context));
  on("skills", () => page.onSkills?.(context)); // skill files changed on disk
  on("approval", showApproval);
  on("approval-done", (data) => {
    removeCard(approvals.querySelector(`[data-approval="${CSS.escape(data.id)}"]`));
  });
  on("reload", (data) => {
    notice(`the runtime was reopened (generation ${data.generation})`);
    page.onReload?.(context);
  });
  on("reload-failed", (data) => notice(`the runtime could not be reopened: ${data.error}`, "error"));
}

async function probe() {
  try {
    await api("/api/status");
  } catch (error) {
    if (error.status === 403) {
      showDown("kairox ui runs again, with another access token: open the URL it printed.");
      return;
    }
    setTimeout(probe, RETRY_MS);
    return;
  }
  connect(true);
}

clear(main);
if (hasToken()) {
  connect();
  Promise.resolve(page.mount(main, context)).catch((error) => notice(String(error.message || error), "error"));
} else {
  main.append(
    h(
      "section",
      { class: "no-token", role: "alert", dataset: { noToken: "true" } },
      h("h2", { text: "No access token" }),
      h("p", {}, "Open the URL ", h("code", { text: "kairox ui" }), " printed (it ends with ", h("code", { text: "#token=…" }), ")."),
      h("p", { text: "The token stays in this tab only; a new tab or window needs that URL again." }),
    ),
  );
}
