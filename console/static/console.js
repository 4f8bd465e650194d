// The console's client: keep the key in session storage, fetch each view's HTML fragment with it as a
// bearer header, and move between views without reloading. The key never goes into a URL.
"use strict";

const KEY = "trustgate.console.key";
const content = () => document.getElementById("content");
const loginForm = () => document.getElementById("login");

function fragmentUrl() {
  const path = location.pathname.replace(/^\/ui\/?/, "");
  return "/ui/partials/" + (path === "" ? "overview" : path) + location.search;
}

function showLogin(message) {
  content().replaceChildren();
  loginForm().hidden = false;
  document.getElementById("logout").hidden = true;
  const error = document.getElementById("login-error");
  error.textContent = message || "";
  error.hidden = !message;
  document.getElementById("key").focus();
}

function markCurrentView() {
  const view = location.pathname.startsWith("/ui/records") ? "records"
    : location.pathname.startsWith("/ui/calibration") ? "calibration" : "overview";
  for (const link of document.querySelectorAll("nav a[data-view]")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function errorMessage(response) {
  try {
    return (await response.json()).error.message;
  } catch {
    return "The gateway answered " + response.status + ".";
  }
}

async function render() {
  const key = sessionStorage.getItem(KEY);
  markCurrentView();
  if (!key) return showLogin();
  loginForm().hidden = true;
  document.getElementById("logout").hidden = false;
  const main = document.getElementById("view");
  main.setAttribute("aria-busy", "true");
  try {
    const response = await fetch(fragmentUrl(), {headers: {authorization: "Bearer " + key}});
    if (response.status === 401) {
      sessionStorage.removeItem(KEY);
      return showLogin(await errorMessage(response));
    }
    if (!response.ok || !(response.headers.get("content-type") || "").startsWith("text/html")) {
      const box = document.createElement("p");
      box.className = "card error";
      box.setAttribute("role", "alert");
      box.textContent = await errorMessage(response);
      content().replaceChildren(box);
      return;
    }
    content().innerHTML = await response.text();  // rendered and escaped by the gateway's templates
    const titled = content().querySelector("[data-title]");
    document.title = (titled ? titled.dataset.title + " · " : "") + "TrustGate console";
  } catch (error) {
    content().textContent = "Could not reach the gateway: " + error.message;
  } finally {
    main.setAttribute("aria-busy", "false");
  }
}

function go(url) {
  history.pushState(null, "", url);
  render();
  window.scrollTo(0, 0);
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-nav]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  go(link.getAttribute("href"));
});

// A claim marked in the answer (or named by a component) opens its checks and evidence below, one click (or key)
// away; its link moves no history, which would render the view again and close it.
function openClaim(mark) {
  const detail = document.getElementById("claim-" + mark.dataset.claim);
  if (!detail) return;
  detail.open = true;
  detail.scrollIntoView({block: "nearest"});
  detail.querySelector("summary").focus({preventScroll: true});
}

document.addEventListener("click", (event) => {
  const mark = event.target.closest("[data-claim]");
  if (!mark) return;
  event.preventDefault();
  openClaim(mark);
});

document.addEventListener("keydown", (event) => {
  const mark = event.target.closest && event.target.closest("mark[data-claim]");
  if (mark && (event.key === "Enter" || event.key === " ")) {
    event.preventDefault();
    openClaim(mark);
  }
});

document.addEventListener("submit", (event) => {
  const form = event.target;
  event.preventDefault();
  if (form.id === "login") {
    sessionStorage.setItem(KEY, document.getElementById("key").value.trim());
    form.reset();
    render();
  } else if (form.hasAttribute("data-filter")) {
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (value !== "" && !(name === "score_of" && value === "score") && !(name === "limit" && value === "50")) {
        params.append(name, value);
      }
    }
    const query = params.toString();
    go(form.getAttribute("action") + (query ? "?" + query : ""));
  } else if (form.hasAttribute("data-feedback")) {
    sendFeedback(form);
  }
});

// A label from a record's page goes to the feedback API with the same key; the page is then read again.
async function sendFeedback(form) {
  const data = new FormData(form);
  const body = {correct: data.get("correct") === "true"};
  const score = data.get("score");
  if (score !== "") body.score = Number(score);
  const comment = (data.get("comment") || "").trim();
  if (comment !== "") body.comment = comment;
  const problem = form.querySelector(".feedback-error");
  const response = await fetch(form.getAttribute("action"), {
    method: "POST", body: JSON.stringify(body),
    headers: {authorization: "Bearer " + sessionStorage.getItem(KEY), "content-type": "application/json"},
  });
  if (!response.ok) {
    problem.textContent = await errorMessage(response);
    problem.hidden = false;
    return;
  }
  render();
}

window.addEventListener("popstate", render);
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("logout").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    showLogin("Key forgotten.");
  });
  render();
});
