// The decision page's only script (the Content-Security-Policy allows no inline one): the
// WebAuthn ceremonies. Each asks the server for options, lets the browser's passkey sign
// them, and posts the answer back with the session's CSRF token.
"use strict";

function csrf() {
  return document.querySelector("meta[name=csrf-token]").content;
}

function say(text, refused) {
  const status = document.querySelector(".status");
  if (status) {
    status.textContent = text;
    status.className = refused ? "status refusal" : "status";
    // Below the buttons, out of a phone's sight: bring it in.
    status.scrollIntoView({ block: "nearest" });
  }
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) {
    const error = new Error(answer.message || "refused");
    error.code = answer.error;
    throw error;
  }
  return answer;
}

async function assertion(begin, body) {
  const started = await post(begin, body);
  const options = PublicKeyCredential.parseRequestOptionsFromJSON(JSON.parse(started.options));
  const credential = await navigator.credentials.get({ publicKey: options });
  return { key: started.key, credential: credential.toJSON() };
}

async function register(button) {
  const token = button.dataset.token;
  const started = await post("/auth/register/begin", { token: token });
  const options = PublicKeyCredential.parseCreationOptionsFromJSON(JSON.parse(started.options));
  const credential = await navigator.credentials.create({ publicKey: options });
  return post("/auth/register/finish", {
    key: started.key,
    token: token,
    credential: credential.toJSON(),
  });
}

async function login() {
  const signed = await assertion("/auth/login/begin", {});
  return post("/auth/login/finish", signed);
}

async function decide(form, verdict) {
  const base = "/a/" + encodeURIComponent(form.dataset.task) + "/" +
    encodeURIComponent(form.dataset.approval);
  const note = form.querySelector("textarea[name=note]").value;
  const signed = await assertion(base + "/begin", {
    verdict: verdict,
    note: note,
    digest: form.dataset.digest,
  });
  // Kept for the page's own record of the last answer (and the browser test's replay).
  document.body.dataset.lastAssertion = JSON.stringify(signed);
  return post(base + "/finish", signed);
}

function run(work) {
  say("Waiting for your passkey…", false);
  work().then(
    (answer) => {
      document.body.dataset.outcome = answer.state || "ok";
      say(answer.state ? "Recorded: " + answer.state : "Done", false);
      if (answer.next) {
        window.setTimeout(() => { window.location.assign(answer.next); }, 600);
      }
    },
    (error) => {
      document.body.dataset.outcome = "refused:" + (error.code || error.name);
      say(error.message, true);
    },
  );
}

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("[data-ceremony]")) {
    button.addEventListener("click", () => {
      run(() => (button.dataset.ceremony === "register" ? register(button) : login()));
    });
  }
  const form = document.querySelector("form.decide");
  if (form) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const verdict = event.submitter ? event.submitter.value : "";
      run(() => decide(form, verdict));
    });
  }
});
